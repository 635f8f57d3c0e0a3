/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-config.h"
#include "daemon/network-config.h"

static const char *pfx(const IpPrefix *p, char buf[static IP_PREFIX_STRLEN]) {
	if (p->addr.family == AF_UNSPEC)
		return "none";
	return ip_prefix_to_string(p, buf);
}

static const char *addr(const IpAddr *a, char buf[static IP_ADDR_STRLEN]) {
	if (a->family == AF_UNSPEC)
		return "none";
	return ip_addr_to_string(a, buf);
}

/* Everything a config resolves to, as one line, so the table states expectations compactly. */
static char *summary(const NetworkConfig *c) {
	char a[IP_PREFIX_STRLEN], b[IP_PREFIX_STRLEN], m1[IP_ADDR_STRLEN], m2[IP_ADDR_STRLEN];

	return strdup_printf(
			"net=%s net6=%s len=%u len6=%u min=%s max=%s backend=%s vni=%u port=%u dr=%d mtu=%u masq=%d",
			pfx(&c->network, a), pfx(&c->network6, b), c->subnet_len, c->subnet_len6,
			addr(&c->subnet_min, m1), addr(&c->subnet_max, m2),
			network_backend_type_to_string(c->backend.type), c->backend.vni, c->backend.port,
			c->backend.direct_routing, c->backend.mtu, c->masquerade);
}

typedef struct ValidCase {
	const char *json;
	const char *expect;
} ValidCase;

static const ValidCase valid[] = {
	{ "{\"Network\": \"10.244.0.0/16\"}",
	  "net=10.244.0.0/16 net6=none len=24 len6=64 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
	{ "{\"network\": \"10.244.0.0/16\", \"subnetLen\": 26, \"masquerade\": false}",
	  "net=10.244.0.0/16 net6=none len=26 len6=64 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=0" },
	{ "{\"Network\": \"10.0.0.0/8\", \"SubnetLen\": 20, \"SubnetMin\": \"10.10.0.0\", \"SubnetMax\": \"10.99.240.0\","
	  " \"Backend\": {\"Type\": \"vxlan\", \"VNI\": 4096, \"Port\": 8472, \"DirectRouting\": true, \"MTU\": 1400}}",
	  "net=10.0.0.0/8 net6=none len=20 len6=64 min=10.10.0.0 max=10.99.240.0 backend=vxlan vni=4096 port=8472 dr=1 mtu=1400 masq=1" },
	{ "{\"Network\": \"10.244.0.0/16\", \"backend\": {\"type\": \"host-gw\"}}",
	  "net=10.244.0.0/16 net6=none len=24 len6=64 min=none max=none backend=host-gw vni=1 port=4789 dr=0 mtu=0 masq=1" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"type\": \"vxlan\", \"vni\": 0, \"port\": 1, \"directRouting\": false, \"mtu\": 9000}}",
	  "net=10.244.0.0/16 net6=none len=24 len6=64 min=none max=none backend=vxlan vni=0 port=1 dr=0 mtu=9000 masq=1" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"VNI\": 16777215}}",
	  "net=10.244.0.0/16 net6=none len=24 len6=64 min=none max=none backend=vxlan vni=16777215 port=4789 dr=0 mtu=0 masq=1" },
	/* dual stack, and lower camel case for the v6 keys */
	{ "{\"Network\": \"10.244.0.0/16\", \"Network6\": \"fd00:10:244::/48\", \"SubnetLen6\": 80}",
	  "net=10.244.0.0/16 net6=fd00:10:244::/48 len=24 len6=80 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
	{ "{\"network6\": \"fd00::/56\", \"subnetLen6\": 64}",
	  "net=none net6=fd00::/56 len=24 len6=64 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
	/* edges: SubnetLen == network length (one subnet), 30 (v4 max), 126 (v6 max) */
	{ "{\"Network\": \"10.1.2.0/24\", \"SubnetLen\": 24}",
	  "net=10.1.2.0/24 net6=none len=24 len6=64 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
	{ "{\"Network\": \"10.1.2.0/24\", \"SubnetLen\": 30, \"Network6\": \"fd00::/64\", \"SubnetLen6\": 126}",
	  "net=10.1.2.0/24 net6=fd00::/64 len=30 len6=126 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
	/* a network smaller than /24 without SubnetLen gets longer subnets, like Flannel */
	{ "{\"Network\": \"10.1.2.0/26\"}",
	  "net=10.1.2.0/26 net6=none len=30 len6=64 min=none max=none backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
	/* SubnetMin == SubnetMax; "a.b.c.d/len" tolerated */
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMin\": \"10.244.5.0/24\", \"SubnetMax\": \"10.244.5.0\"}",
	  "net=10.244.0.0/16 net6=none len=24 len6=64 min=10.244.5.0 max=10.244.5.0 backend=vxlan vni=1 port=4789 dr=0 mtu=0 masq=1" },
};

static void test_valid(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
		NetworkConfig *cfg = NULL;
		char *err = NULL, *s;
		int r;

		r = network_config_parse(valid[i].json, &cfg, &err);
		if (r < 0)
			fail_msg("case %zu %s: unexpected error %d: %s", i, valid[i].json, r, err);
		assert_null(err);
		s = summary(cfg);
		if (!streq(s, valid[i].expect))
			fail_msg("case %zu %s:\n  got  %s\n  want %s", i, valid[i].json, s, valid[i].expect);
		free(s);
		network_config_free(cfg);
	}
}

typedef struct InvalidCase {
	const char *json;
	const char *error; /* substring the message must contain */
} InvalidCase;

static const InvalidCase invalid[] = {
	{ "", "not valid JSON" },
	{ "[1]", "expected a JSON object" },
	{ "{\"Network\": \"10.244.0.0/16\",}", "not valid JSON" },
	{ "{}", "Network: required" },
	{ "{\"SubnetLen\": 24}", "Network: required" },
	/* CIDRs */
	{ "{\"Network\": \"10.244.0.0\"}", "Network \"10.244.0.0\": invalid CIDR" },
	{ "{\"Network\": \"10.244.0.0/33\"}", "Network \"10.244.0.0/33\": invalid CIDR" },
	{ "{\"Network\": \"banana\"}", "Network \"banana\": invalid CIDR" },
	{ "{\"Network\": 10}", "Network: expected a string, got an integer" },
	{ "{\"Network\": \"10.244.1.0/16\"}",
	  "Network \"10.244.1.0/16\": host bits set (did you mean 10.244.0.0/16?)" },
	{ "{\"Network6\": \"fd00::1/64\"}", "Network6 \"fd00::1/64\": host bits set" },
	/* families */
	{ "{\"Network\": \"fd00::/64\"}", "Network \"fd00::/64\": not an IPv4 network" },
	{ "{\"Network6\": \"10.244.0.0/16\"}", "Network6 \"10.244.0.0/16\": not an IPv6 network" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMin\": \"fd00::\"}", "SubnetMin \"fd00::\": not an IPv4 address" },
	/* overlapping: an IPv4-mapped Network6 aliases Network */
	{ "{\"Network\": \"10.244.0.0/16\", \"Network6\": \"::ffff:10.244.0.0/112\"}",
	  "Network6 \"::ffff:10.244.0.0/112\": overlaps the IPv4-mapped range ::ffff:0:0/96 (and so Network)" },
	/* subnet lengths */
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetLen\": 12}",
	  "SubnetLen 12: subnet length larger than the network 10.244.0.0/16" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetLen\": 31}", "SubnetLen 31: too long (at most 30)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetLen\": \"24\"}", "SubnetLen: expected an integer, got a string" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetLen\": -1}", "SubnetLen -1: out of range" },
	{ "{\"Network6\": \"fd00::/64\", \"SubnetLen6\": 127}", "SubnetLen6 127: too long (at most 126)" },
	{ "{\"Network6\": \"fd00::/64\", \"SubnetLen6\": 48}",
	  "SubnetLen6 48: subnet length larger than the network fd00::/64" },
	{ "{\"Network6\": \"fd00::/64\", \"SubnetLen\": 24}", "SubnetLen: given without Network" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetLen6\": 64}", "SubnetLen6: given without Network6" },
	{ "{\"Network\": \"10.1.2.0/31\"}", "Network 10.1.2.0/31: too small to hold node subnets" },
	/* SubnetMin / SubnetMax */
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMin\": \"10.245.0.0\"}",
	  "SubnetMin \"10.245.0.0\": outside Network 10.244.0.0/16" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMax\": \"192.168.0.0\"}",
	  "SubnetMax \"192.168.0.0\": outside Network 10.244.0.0/16" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMin\": \"10.244.1.5\"}",
	  "SubnetMin \"10.244.1.5\": not the start of a /24 subnet (did you mean 10.244.1.0?)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMin\": \"nope\"}", "SubnetMin \"nope\": invalid IP address" },
	{ "{\"Network\": \"10.244.0.0/16\", \"SubnetMin\": \"10.244.9.0\", \"SubnetMax\": \"10.244.8.0\"}",
	  "SubnetMin 10.244.9.0 is above SubnetMax 10.244.8.0" },
	{ "{\"Network6\": \"fd00::/64\", \"SubnetMin\": \"10.0.0.0\"}", "SubnetMin: given without Network" },
	/* backend */
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"alloc\"}}",
	  "Backend.Type \"alloc\": unknown backend type (expected \"vxlan\", \"host-gw\", \"udp\", \"ipip\", \"bgp\" or "
	  "\"wireguard\")" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {}}", "Backend.Type: required" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": \"vxlan\"}", "Backend: expected an object, got a string" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"VNI\": 16777216}}",
	  "Backend.VNI 16777216: out of range (0..16777215)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"VNI\": -1}}",
	  "Backend.VNI -1: out of range" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"Port\": 0}}",
	  "Backend.Port 0: out of range (1..65535)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"Port\": 65536}}",
	  "Backend.Port 65536: out of range" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"DirectRouting\": 1}}",
	  "Backend.DirectRouting: expected true or false, got an integer" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"MTU\": 67}}",
	  "Backend.MTU 67: out of range (68..65535)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Network6\": \"fd00::/56\", \"Backend\": {\"Type\": \"vxlan\", \"MTU\": 1000}}",
	  "Backend.MTU 1000: out of range (1280..65535)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\", \"GBP\": true}}",
	  "Backend: unknown key \"GBP\"" },
	/* wireguard */
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"ListenPort\": 0}}",
	  "Backend.ListenPort 0: out of range (1..65535)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"ListenPortV6\": 70000}}",
	  "Backend.ListenPortV6 70000: out of range (1..65535)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"ListenPortV6\": 51820}}",
	  "Backend.ListenPortV6 51820: the same as ListenPort (Mode \"separate\" needs two ports)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"Mode\": \"both\"}}",
	  "Backend.Mode \"both\": unknown mode (expected \"separate\", \"auto\", \"ipv4\" or \"ipv6\")" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"Mode\": 4}}",
	  "Backend.Mode: expected a string, got an integer" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"PersistentKeepaliveInterval\": -5}}",
	  "Backend.PersistentKeepaliveInterval -5: out of range (0..65535)" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"PSK\": \"c2VjcmV0\"}}",
	  "Backend.PSK (8 characters, not shown): not 32 bytes of base64" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"PSK\": "
	  "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}}",
	  "Backend.PSK (not shown): all zeros" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"PSK\": 1}}",
	  "Backend.PSK: expected a string, got an integer" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", \"Keepalive\": 25}}",
	  "Backend: unknown key \"Keepalive\"" },
	/* keys */
	{ "{\"Network\": \"10.244.0.0/16\", \"EnableIPv6\": true}", "unknown key \"EnableIPv6\"" },
	{ "{\"Network\": \"10.244.0.0/16\", \"NETWORK\": \"10.0.0.0/8\"}", "unknown key \"NETWORK\"" },
	{ "{\"Network\": \"10.244.0.0/16\", \"network\": \"10.245.0.0/16\"}", "key \"Network\" given twice" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Network\": \"10.245.0.0/16\"}", "not valid JSON" },
	{ "{\"Network\": \"10.244.0.0/16\", \"Masquerade\": \"yes\"}",
	  "Masquerade: expected true or false, got a string" },
};

static void test_invalid(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(invalid); i++) {
		NetworkConfig *cfg = NULL;
		char *err = NULL;
		int r;

		r = network_config_parse(invalid[i].json, &cfg, &err);
		if (r != -EINVAL)
			fail_msg("case %zu %s: expected -EINVAL, got %d", i, invalid[i].json, r);
		assert_null(cfg);
		if (!err || !strstr(err, invalid[i].error))
			fail_msg("case %zu %s:\n  error %s\n  want  ...%s...", i, invalid[i].json, err ?: "(null)",
				 invalid[i].error);
		free(err);
		/* NULL ret_error is allowed */
		assert_int_equal(network_config_parse(invalid[i].json, &cfg, NULL), -EINVAL);
	}
}

static void test_overlap(void **state) {
	NetworkConfig *cfg = NULL;
	char *err = NULL;
	IpPrefix p;

	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Network6\": \"fd00:10:244::/48\"}",
					      &cfg, &err),
			 0);

	assert_int_equal(ip_prefix_parse("10.96.0.0/12", &p), 0);
	assert_int_equal(network_config_check_overlap(cfg, &p, "service CIDR", &err), 0);
	assert_null(err);
	assert_int_equal(ip_prefix_parse("10.0.0.0/8", &p), 0);
	assert_int_equal(network_config_check_overlap(cfg, &p, "service CIDR", &err), -EEXIST);
	assert_string_equal(err, "Network 10.244.0.0/16 overlaps service CIDR 10.0.0.0/8");
	free(err);
	err = NULL;
	/* a host address with its prefix (the node's underlay), masked in the message */
	assert_int_equal(ip_prefix_parse("10.244.7.9/24", &p), 0);
	assert_int_equal(network_config_check_overlap(cfg, &p, "the node network", &err), -EEXIST);
	assert_string_equal(err, "Network 10.244.0.0/16 overlaps the node network 10.244.7.0/24");
	free(err);
	err = NULL;
	assert_int_equal(ip_prefix_parse("fd00:10:244:5::/64", &p), 0);
	assert_int_equal(network_config_check_overlap(cfg, &p, "service CIDR", &err), -EEXIST);
	assert_string_equal(err, "Network6 fd00:10:244::/48 overlaps service CIDR fd00:10:244:5::/64");
	free(err);
	err = NULL;
	assert_int_equal(ip_prefix_parse("fd00:10:245::/48", &p), 0);
	assert_int_equal(network_config_check_overlap(cfg, &p, "service CIDR", &err), 0);
	network_config_free(cfg);

	/* IPv4-only config: an IPv6 CIDR cannot overlap */
	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\"}", &cfg, NULL), 0);
	assert_int_equal(ip_prefix_parse("fd00::/8", &p), 0);
	assert_int_equal(network_config_check_overlap(cfg, &p, "x", &err), 0);
	assert_null(err);
	network_config_free(cfg);
}

static void test_file(void **state) {
	char path[] = "/tmp/test-network-config.XXXXXX";
	const char *json = "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"host-gw\"}}";
	NetworkConfig *cfg = NULL;
	char *err = NULL;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, json, strlen(json)), (ssize_t) strlen(json));
	close(fd);
	assert_int_equal(network_config_load_file(path, &cfg, &err), 0);
	assert_int_equal(cfg->backend.type, NETWORK_BACKEND_HOST_GW);
	network_config_free(cfg);
	unlink(path);

	assert_int_equal(network_config_load_file(path, &cfg, &err), -ENOENT);
	assert_non_null(strstr(err, path));
	free(err);
}

/* Flannel's wireguard keys: defaults, every key in both spellings, and a PSK whose bytes are kept
 * but never echoed in an error. */
static void test_wireguard(void **state) {
	static const uint8_t psk[32] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
					 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
	NetworkConfig *cfg = NULL;
	char *err = NULL;
	WireguardMode m;

	assert_int_equal(
			network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\"}}",
					     &cfg, &err),
			0);
	assert_int_equal(cfg->backend.type, NETWORK_BACKEND_WIREGUARD);
	assert_int_equal(cfg->backend.listen_port, 51820);
	assert_int_equal(cfg->backend.listen_port6, 51821);
	assert_int_equal(cfg->backend.mode, WIREGUARD_MODE_SEPARATE);
	assert_int_equal(cfg->backend.keepalive_sec, 0);
	assert_false(cfg->backend.has_psk);
	cfg = network_config_free(cfg);

	assert_int_equal(
			network_config_parse(
					"{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", "
					"\"PSK\": \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\", \"ListenPort\": 5000, "
					"\"ListenPortV6\": 5001, \"Mode\": \"auto\", \"PersistentKeepaliveInterval\": 25}}",
					&cfg, &err),
			0);
	assert_int_equal(cfg->backend.listen_port, 5000);
	assert_int_equal(cfg->backend.listen_port6, 5001);
	assert_int_equal(cfg->backend.mode, WIREGUARD_MODE_AUTO);
	assert_int_equal(cfg->backend.keepalive_sec, 25);
	assert_true(cfg->backend.has_psk);
	assert_memory_equal(cfg->backend.psk, psk, 32);
	cfg = network_config_free(cfg);

	/* lower camel case; one device in Mode ipv4 may share the port numbers */
	assert_int_equal(network_config_parse("{\"network\": \"10.244.0.0/16\", \"backend\": {\"type\": \"wireguard\", "
					      "\"listenPort\": 7000, \"listenPortV6\": 7000, \"mode\": \"ipv4\", "
					      "\"persistentKeepaliveInterval\": 0, \"psk\": "
					      "\"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"}}",
					      &cfg, &err),
			 0);
	assert_int_equal(cfg->backend.mode, WIREGUARD_MODE_IPV4);
	assert_int_equal(cfg->backend.listen_port, 7000);
	assert_true(cfg->backend.has_psk);
	cfg = network_config_free(cfg);

	/* a PSK one byte short: the error must not contain the (secret) value */
	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"wireguard\", "
					      "\"PSK\": \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHw==\"}}",
					      &cfg, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "Backend.PSK"));
	assert_null(strstr(err, "AQIDBAUG"));
	free(err);

	assert_int_equal(wireguard_mode_from_string("ipv6", &m), 0);
	assert_int_equal(m, WIREGUARD_MODE_IPV6);
	assert_int_equal(wireguard_mode_from_string("IPv6", &m), -EINVAL);
	assert_string_equal(wireguard_mode_to_string(WIREGUARD_MODE_SEPARATE), "separate");
	assert_null(wireguard_mode_to_string((WireguardMode) 99));
}

static void test_backend_names(void **state) {
	NetworkBackendType t;

	assert_int_equal(network_backend_type_from_string("vxlan", &t), 0);
	assert_int_equal(t, NETWORK_BACKEND_VXLAN);
	assert_int_equal(network_backend_type_from_string("host-gw", &t), 0);
	assert_int_equal(t, NETWORK_BACKEND_HOST_GW);
	assert_int_equal(network_backend_type_from_string("VXLAN", &t), -EINVAL);
	assert_int_equal(network_backend_type_from_string(NULL, &t), -EINVAL);
	assert_string_equal(network_backend_type_to_string(NETWORK_BACKEND_HOST_GW), "host-gw");
	assert_int_equal(network_backend_type_from_string("wireguard", &t), 0);
	assert_int_equal(t, NETWORK_BACKEND_WIREGUARD);
	assert_string_equal(network_backend_type_to_string(NETWORK_BACKEND_WIREGUARD), "wireguard");
	assert_null(network_config_free(NULL));
}

/* The LoadBalancer section: pools, selector, AutoAssign, the announcement default from the
 * backend, and every refusal naming its key and value. */
static void test_load_balancer(void **state) {
	static const struct {
		const char *lb, *error;
	} bad[] = {
		{ "[]", "LoadBalancer: expected an object, got an array" },
		{ "{}", "LoadBalancer.Pools: expected an array of 1 to 64 pools" },
		{ "{\"Pools\": [{\"Name\": \"a\"}]}", "LoadBalancer.Pools[0]: Name and CIDRs are required" },
		{ "{\"Pools\": [{\"Name\": \"A_b\", \"CIDRs\": [\"192.0.2.0/28\"]}]}",
		  "LoadBalancer.Pools[0].Name \"A_b\": not a DNS label" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.1/28\"]}]}",
		  "LoadBalancer.Pools[0].CIDRs[0] \"192.0.2.1/28\": host bits set (did you mean 192.0.2.0/28?)" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"nope\"]}]}",
		  "LoadBalancer.Pools[0].CIDRs[0] \"nope\": invalid CIDR" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": []}]}",
		  "LoadBalancer.Pools[0].CIDRs: expected an array of 1 to 32 CIDRs" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.0/28\"], \"Color\": 1}]}",
		  "LoadBalancer.Pools[0]: unknown key \"Color\"" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.0/28\"], \"AutoAssign\": 1}]}",
		  "LoadBalancer.Pools[0].AutoAssign: expected true or false, got an integer" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.0/28\"], \"ServiceSelector\": "
		  "{\"matchExpressions\": [{\"key\": \"x\", \"operator\": \"In\"}]}}]}",
		  "LoadBalancer.Pools[0].ServiceSelector" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.0/28\"]}, {\"Name\": \"a\", "
		  "\"CIDRs\": [\"198.51.100.0/28\"]}]}",
		  "LoadBalancer.Pools[1].Name \"a\": repeats Pools[0]" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.0/24\"]}, {\"Name\": \"b\", "
		  "\"CIDRs\": [\"192.0.2.128/25\"]}]}",
		  "LoadBalancer.Pools[1].CIDRs[0] 192.0.2.128/25: overlaps 192.0.2.0/24 of pool a" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"10.244.7.0/28\"]}]}",
		  "LoadBalancer pool a: 10.244.7.0/28 overlaps Network 10.244.0.0/16" },
		{ "{\"Pools\": [{\"Name\": \"a\", \"CIDRs\": [\"192.0.2.0/28\"]}], \"Announce\": \"arp\"}",
		  "LoadBalancer.Announce \"arp\": expected \"bgp\" or \"l2\"" },
	};
	const char *good = "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"%s\"}, \"loadBalancer\": "
			   "{\"pools\": [{\"Name\": \"public\", \"CIDRs\": [\"192.0.2.0/28\", \"2001:db8:1b::/120\"], "
			   "\"ServiceSelector\": {\"matchLabels\": {\"exposure\": \"public\"}}}, {\"name\": "
			   "\"manual\", \"cidrs\": [\"198.51.100.0/24\"], \"autoAssign\": false}]%s}}";
	const char *backends[] = { "bgp", "vxlan", "vxlan" };
	const char *announce[] = { "", "", ", \"Announce\": \"bgp\"" };
	const LbAnnounce want[] = { LB_ANNOUNCE_BGP, LB_ANNOUNCE_L2, LB_ANNOUNCE_BGP };

	for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
		_cleanup_(network_config_freep) NetworkConfig *cfg = NULL;
		_cleanup_free_ char *json = strdup_printf(good, backends[i], announce[i]), *err = NULL;
		const LbConfig *lb;
		char buf[IP_PREFIX_STRLEN];

		if (network_config_parse(json, &cfg, &err) < 0)
			fail_msg("%s: %s", json, err);
		lb = cfg->load_balancer;
		assert_non_null(lb);
		assert_int_equal(lb->announce, want[i]);
		assert_int_equal(lb->n_pools, 2);
		assert_string_equal(lb->pools[0].name, "public");
		assert_int_equal(lb->pools[0].n_cidrs, 2);
		assert_string_equal(ip_prefix_to_string(&lb->pools[0].cidrs[1], buf), "2001:db8:1b::/120");
		assert_non_null(lb->pools[0].service_selector);
		assert_true(lb->pools[0].auto_assign);
		assert_string_equal(lb->pools[1].name, "manual");
		assert_null(lb->pools[1].service_selector);
		assert_false(lb->pools[1].auto_assign);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		_cleanup_free_ char *json = strdup_printf("{\"Network\": \"10.244.0.0/16\", \"LoadBalancer\": %s}",
							  bad[i].lb),
				    *err = NULL;
		NetworkConfig *cfg = NULL;

		if (network_config_parse(json, &cfg, &err) != -EINVAL)
			fail_msg("case %zu accepted: %s", i, json);
		assert_null(cfg);
		if (!err || !strstr(err, bad[i].error))
			fail_msg("case %zu %s:\n  error %s\n  want  ...%s...", i, json, err ?: "(null)", bad[i].error);
	}
	assert_string_equal(lb_announce_to_string(LB_ANNOUNCE_L2), "l2");
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),         cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_overlap),       cmocka_unit_test(test_file),
		cmocka_unit_test(test_backend_names), cmocka_unit_test(test_load_balancer),
		cmocka_unit_test(test_wireguard),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
