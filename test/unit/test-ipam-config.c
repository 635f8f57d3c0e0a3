/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host-local configuration: defaults and canonicalization like the reference's LoadIPAMConfig,
 * every config error (each message must name the key and the value), resolv.conf parsing and
 * the assignment of requested addresses to range sets.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/ipam/ipam-alloc.h"
#include "shared/ipam/ipam-config.h"

static json_t *J(const char *s) {
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);

	if (!j)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	return j;
}

/* Parses {"ipam": ...}-less ipam JSON and optional runtime ranges; returns r, fills *ret/err. */
static int parse(const char *ipam, const char *rc, CniVersion v, IpamConfig **ret, IpamError *err) {
	json_t *i = ipam ? J(ipam) : NULL, *r = rc ? J(rc) : NULL;
	int k;

	*err = (IpamError) {};
	k = ipam_config_parse(i, r, "net1", v, ret, err);
	json_decref(i);
	json_decref(r);
	return k;
}

static void assert_range(const IpamRange *r, const char *subnet, const char *start, const char *end, const char *gw) {
	char a[IP_PREFIX_STRLEN];

	assert_string_equal(ip_prefix_to_string(&r->subnet, a), subnet);
	assert_string_equal(ip_addr_to_string(&r->start, a), start);
	assert_string_equal(ip_addr_to_string(&r->end, a), end);
	assert_string_equal(ip_addr_to_string(&r->gateway, a), gw);
}

static void test_defaults(void **state) {
	IpamConfig *c = NULL;
	IpamError err;

	assert_int_equal(parse("{\"type\":\"host-local\",\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"}],"
			       "[{\"subnet\":\"fd00::/64\"}]]}",
			       NULL, CNI_VERSION_1_0_0, &c, &err),
			 0);
	assert_string_equal(c->name, "net1");
	assert_string_equal(c->data_dir, "/var/lib/cni/networks");
	assert_null(c->resolv_conf);
	assert_int_equal(c->n_range_sets, 2);
	assert_int_equal(c->n_routes, 0);
	/* IPv4 ends before the broadcast, IPv6 at the last address. */
	assert_range(&c->range_sets[0].ranges[0], "10.1.0.0/24", "10.1.0.1", "10.1.0.254", "10.1.0.1");
	assert_range(&c->range_sets[1].ranges[0], "fd00::/64", "fd00::1", "fd00::ffff:ffff:ffff:ffff", "fd00::1");
	assert_string_equal(c->range_sets[1].key, "ipam.ranges[1]");
	ipam_config_free(c);

	/* Smallest allocatable networks. */
	assert_int_equal(parse("{\"ranges\":[[{\"subnet\":\"10.1.0.0/30\"}],[{\"subnet\":\"fd00::/126\"}]]}", NULL,
			       CNI_VERSION_1_0_0, &c, &err),
			 0);
	assert_range(&c->range_sets[0].ranges[0], "10.1.0.0/30", "10.1.0.1", "10.1.0.2", "10.1.0.1");
	assert_range(&c->range_sets[1].ranges[0], "fd00::/126", "fd00::1", "fd00::3", "fd00::1");
	ipam_config_free(c);
}

static void test_explicit_values_and_keys(void **state) {
	IpamConfig *c = NULL;
	IpamError err;
	char buf[256];

	/* Keys match case-insensitively (Go encoding/json), v4-mapped addresses are IPv4. */
	assert_int_equal(
			parse("{\"DataDir\":\"/tmp/x\",\"resolvConf\":\"/etc/r\",\"ranges\":[[{\"Subnet\":\"10.1.0.0/24\","
			      "\"RANGESTART\":\"10.1.0.10\",\"rangeEnd\":\"::ffff:10.1.0.20\",\"gateway\":\"10.1.0.254\"},"
			      "{\"subnet\":\"10.2.0.0/24\"}]],"
			      "\"routes\":[{\"dst\":\"0.0.0.0/0\"},{\"dst\":\"10.9.1.0/24\",\"gw\":\"10.1.0.254\",\"mtu\":1400},"
			      "{\"dst\":\"fd00::/8\"}]}",
			      NULL, CNI_VERSION_1_1_0, &c, &err),
			0);
	assert_string_equal(c->data_dir, "/tmp/x");
	assert_string_equal(c->resolv_conf, "/etc/r");
	assert_int_equal(c->n_range_sets, 1);
	assert_int_equal(c->range_sets[0].n_ranges, 2);
	assert_range(&c->range_sets[0].ranges[0], "10.1.0.0/24", "10.1.0.10", "10.1.0.20", "10.1.0.254");
	assert_string_equal(ipam_range_set_to_string(&c->range_sets[0], buf, sizeof(buf)),
			    "10.1.0.10-10.1.0.20,10.2.0.1-10.2.0.254");
	assert_int_equal(c->n_routes, 3);
	assert_string_equal(ip_prefix_to_string(&c->routes[1].dst, buf), "10.9.1.0/24");
	assert_string_equal(ip_addr_to_string(&c->routes[1].gw, buf), "10.1.0.254");
	assert_int_equal(c->routes[1].mtu, 1400);
	assert_false(ip_addr_is_set(&c->routes[0].gw));
	ipam_config_free(c);
}

static void test_set_order(void **state) {
	IpamConfig *c = NULL;
	IpamError err;

	/* runtimeConfig.ipRanges first, then the legacy flat range, then ipam.ranges (reference order). */
	assert_int_equal(
			parse("{\"subnet\":\"10.2.0.0/24\",\"gateway\":\"10.2.0.9\",\"ranges\":[[{\"subnet\":\"10.3.0.0/24\"}]]}",
			      "[[{\"subnet\":\"10.1.0.0/24\"}]]", CNI_VERSION_1_0_0, &c, &err),
			0);
	assert_int_equal(c->n_range_sets, 3);
	assert_range(&c->range_sets[0].ranges[0], "10.1.0.0/24", "10.1.0.1", "10.1.0.254", "10.1.0.1");
	assert_range(&c->range_sets[1].ranges[0], "10.2.0.0/24", "10.2.0.1", "10.2.0.254", "10.2.0.9");
	assert_range(&c->range_sets[2].ranges[0], "10.3.0.0/24", "10.3.0.1", "10.3.0.254", "10.3.0.1");
	assert_string_equal(c->range_sets[0].key, "runtimeConfig.ipRanges[0]");
	assert_string_equal(c->range_sets[1].key, "ipam");
	ipam_config_free(c);

	/* Empty runtime ranges are "not given". */
	assert_int_equal(parse("{\"subnet\":\"10.2.0.0/24\"}", "[]", CNI_VERSION_1_0_0, &c, &err), 0);
	assert_int_equal(c->n_range_sets, 1);
	ipam_config_free(c);
	/* Runtime ranges alone are enough. */
	assert_int_equal(parse("{\"type\":\"host-local\"}", "[[{\"subnet\":\"10.5.0.0/16\"}]]", CNI_VERSION_1_0_0, &c,
			       &err),
			 0);
	assert_int_equal(c->n_range_sets, 1);
	ipam_config_free(c);
}

static void test_errors(void **state) {
	static const struct {
		const char *ipam, *rc;
		CniVersion v;
		const char *msg; /* substring the error must contain */
	} t[] = {
		{ NULL, NULL, CNI_VERSION_1_0_0, "missing 'ipam'" },
		{ "[]", NULL, CNI_VERSION_1_0_0, "missing 'ipam'" },
		{ "{}", NULL, CNI_VERSION_1_0_0, "no IP ranges specified" },
		{ "{\"ranges\":[]}", NULL, CNI_VERSION_1_0_0, "no IP ranges specified" },
		{ "{\"ranges\":{}}", NULL, CNI_VERSION_1_0_0, "ipam.ranges: expected an array" },
		{ "{\"ranges\":[{}]}", NULL, CNI_VERSION_1_0_0, "ipam.ranges[0]: expected an array of ranges" },
		{ "{\"ranges\":[[]]}", NULL, CNI_VERSION_1_0_0, "ipam.ranges[0]: empty range set" },
		{ "{\"ranges\":[[\"10.1.0.0/24\"]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0]: expected a range object" },
		{ "{\"ranges\":[[{}]]}", NULL, CNI_VERSION_1_0_0, "ipam.ranges[0][0].subnet: missing" },
		{ "{\"ranges\":[[{\"subnet\":24}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].subnet: expected a string" },
		{ "{\"ranges\":[[{\"subnet\":\"foo\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].subnet: invalid CIDR address \"foo\"" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "invalid CIDR address \"10.1.0.0\"" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.5/24\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].subnet: 10.1.0.5/24 has host bits set; for a prefix length of 24 the network address is 10.1.0.0" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/31\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "network 10.1.0.0/31 too small" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.1/32\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "network 10.1.0.1/32 too small" },
		{ "{\"ranges\":[[{\"subnet\":\"fd00::/127\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "network fd00::/127 too small" },
		{ "{\"ranges\":[[{\"subnet\":\"fd00::/128\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "network fd00::/128 too small" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"rangeStart\":\"10.1.1.1\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].rangeStart: 10.1.1.1 not in network 10.1.0.0/24" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"rangeEnd\":\"10.1.1.1\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].rangeEnd: 10.1.1.1 not in network 10.1.0.0/24" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"rangeEnd\":\"fd00::1\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].rangeEnd: fd00::1 not in network 10.1.0.0/24" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"gateway\":\"10.2.0.1\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].gateway: 10.2.0.1 not in network 10.1.0.0/24" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"gateway\":\"x\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][0].gateway: invalid IP address \"x\"" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"rangeStart\":\"10.1.0.300\"}]]}", NULL,
		  CNI_VERSION_1_0_0, "ipam.ranges[0][0].rangeStart: invalid IP address \"10.1.0.300\"" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\",\"rangeStart\":\"10.1.0.9\",\"rangeEnd\":\"10.1.0.8\"}]]}",
		  NULL, CNI_VERSION_1_0_0, "ipam.ranges[0][0].rangeStart: 10.1.0.9 is after rangeEnd 10.1.0.8" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"},{\"subnet\":\"fd00::/64\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0][1].subnet: mixed address families" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"},{\"subnet\":\"10.1.0.0/25\"}]]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.ranges[0]: ranges 10.1.0.1-10.1.0.254 and 10.1.0.1-10.1.0.126 overlap" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"}],[{\"subnet\":\"10.1.0.0/16\"}]]}", NULL,
		  CNI_VERSION_1_0_0,
		  "ipam.ranges[0] (10.1.0.1-10.1.0.254) overlaps with ipam.ranges[1] (10.1.0.1-10.1.255.254)" },
		{ "{\"subnet\":\"10.1.0.0/24\"}", "[[{\"subnet\":\"10.1.0.0/24\"}]]", CNI_VERSION_1_0_0,
		  "runtimeConfig.ipRanges[0] (10.1.0.1-10.1.0.254) overlaps with ipam (10.1.0.1-10.1.0.254)" },
		{ "{\"subnet\":\"10.1.0.0/33\"}", NULL, CNI_VERSION_1_0_0,
		  "ipam.subnet: invalid CIDR address \"10.1.0.0/33\"" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"rangeStart\":\"10.9.0.1\"}", NULL, CNI_VERSION_1_0_0,
		  "ipam.rangeStart: 10.9.0.1 not in network 10.1.0.0/24" },
		{ "{\"type\":\"host-local\"}", "[[{\"subnet\":\"bad\"}]]", CNI_VERSION_1_0_0,
		  "runtimeConfig.ipRanges[0][0].subnet: invalid CIDR address \"bad\"" },
		{ "{\"type\":\"host-local\"}", "{}", CNI_VERSION_1_0_0, "runtimeConfig.ipRanges: expected an array" },
		{ "{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"}],[{\"subnet\":\"10.2.0.0/24\"}]]}", NULL,
		  CNI_VERSION_0_2_0, "cniVersion: versions before 0.3.0 support only one address per family" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"routes\":{}}", NULL, CNI_VERSION_1_0_0,
		  "ipam.routes: expected an array" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"routes\":[{\"gw\":\"10.1.0.1\"}]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.routes[0].dst: missing" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"routes\":[{\"dst\":\"x/8\"}]}", NULL, CNI_VERSION_1_0_0,
		  "ipam.routes[0].dst: invalid CIDR address \"x/8\"" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"fd00::1\"}]}", NULL,
		  CNI_VERSION_1_0_0, "ipam.routes[0].gw: address family differs" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"routes\":[{\"dst\":\"0.0.0.0/0\",\"mtu\":\"x\"}]}", NULL,
		  CNI_VERSION_1_0_0, "ipam.routes[0].mtu: expected a non-negative integer" },
		{ "{\"subnet\":\"10.1.0.0/24\",\"dataDir\":5}", NULL, CNI_VERSION_1_0_0,
		  "ipam.dataDir: expected a string" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		IpamConfig *c = NULL;
		IpamError err;
		int r = parse(t[i].ipam, t[i].rc, t[i].v, &c, &err);

		if (r != -EINVAL || !strstr(err.msg, t[i].msg))
			fail_msg("case %zu (%s): r=%d msg '%s', expected '%s'", i, t[i].ipam ?: "NULL", r, err.msg,
				 t[i].msg);
		assert_null(c);
	}

	/* 0.2.0 with one set per family is fine. */
	IpamConfig *c = NULL;
	IpamError err;
	assert_int_equal(parse("{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"}],[{\"subnet\":\"fd00::/64\"}]]}", NULL,
			       CNI_VERSION_0_2_0, &c, &err),
			 0);
	ipam_config_free(c);

	/* A network name must be usable as a directory name. */
	json_t *j = J("{\"subnet\":\"10.1.0.0/24\"}");
	c = NULL;
	err = (IpamError) {};
	assert_int_equal(ipam_config_parse(j, NULL, "../etc", CNI_VERSION_1_0_0, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"../etc\""));
	err = (IpamError) {};
	assert_int_equal(ipam_config_parse(j, NULL, "", CNI_VERSION_1_0_0, &c, &err), -EINVAL);
	json_decref(j);
}

/* Subnets too large to be a pod network, and the unspecified/loopback/multicast ranges, are
 * refused naming the key and the value; the largest sane ones and link-local are accepted. */
static void test_subnet_bounds(void **state) {
	static const struct {
		const char *subnet;
		const char *msg; /* NULL: accepted */
	} t[] = {
		{ "0.0.0.0/0",
		  "ipam.ranges[0][0].subnet: \"0.0.0.0/0\" is too large: prefix length /0 is shorter than /8" },
		{ "10.0.0.0/7", "\"10.0.0.0/7\" is too large: prefix length /7 is shorter than /8" },
		{ "10.0.0.0/8", NULL },
		{ "172.16.0.0/12", NULL },
		{ "10.244.0.0/16", NULL },
		{ "0.0.0.0/24",
		  "\"0.0.0.0/24\" is invalid: it overlaps the unspecified (\"this network\") range 0.0.0.0/8" },
		{ "0.0.0.0/8", "overlaps the unspecified" },
		{ "127.0.0.0/8", "\"127.0.0.0/8\" is invalid: it overlaps the loopback range 127.0.0.0/8" },
		{ "127.1.2.0/24", "overlaps the loopback range" },
		{ "224.0.0.0/24", "\"224.0.0.0/24\" is invalid: it overlaps the multicast range 224.0.0.0/4" },
		{ "239.255.0.0/16", "overlaps the multicast range 224.0.0.0/4" },
		{ "169.254.0.0/16", NULL }, /* link-local: allowed */
		{ "240.0.0.0/8", NULL },    /* class E: used for pods */
		{ "::/0", "\"::/0\" is too large: prefix length /0 is shorter than /8" },
		{ "2000::/3", "\"2000::/3\" is too large" },
		{ "fd00::/8", NULL },
		{ "fd00:10:244::/56", NULL },
		{ "2001:db8::/64", NULL },
		{ "fe80::/64", NULL }, /* link-local: allowed */
		{ "::/64", "\"::/64\" is invalid: it overlaps the unspecified address ::" },
		{ "::/120", "overlaps the unspecified address ::" },
		{ "ff02::/64", "\"ff02::/64\" is invalid: it overlaps the multicast range ff00::/8" },
		{ "::ffff:0.0.0.0/96", "\"0.0.0.0/0\" is too large" }, /* IPv4-mapped: the IPv4 prefix */
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		_cleanup_free_ char *ipam = strdup_printf("{\"ranges\":[[{\"subnet\":\"%s\"}]]}", t[i].subnet);
		IpamConfig *c = NULL;
		IpamError err;
		int r = parse(ipam, NULL, CNI_VERSION_1_0_0, &c, &err);

		/* Parsing alone accepts them (DEL and GC need that); the check refuses. */
		assert_int_equal(r, 0);
		r = ipam_config_check_subnets(c, &err);
		if (!t[i].msg) {
			if (r < 0)
				fail_msg("%s: refused: %s", t[i].subnet, err.msg);
			ipam_config_free(c);
			continue;
		}
		if (r != -EINVAL || !strstr(err.msg, t[i].msg))
			fail_msg("%s: r=%d msg '%s', expected '%s'", t[i].subnet, r, err.msg, t[i].msg);
		ipam_config_free(c);
	}
	/* The legacy flat form and runtime ranges name their own keys; the first bad set wins. */
	IpamConfig *c = NULL;
	IpamError err;
	assert_int_equal(parse("{\"subnet\":\"0.0.0.0/0\"}", NULL, CNI_VERSION_1_0_0, &c, &err), 0);
	assert_int_equal(ipam_config_check_subnets(c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ipam.subnet: \"0.0.0.0/0\" is too large"));
	c = ipam_config_free(c);
	assert_int_equal(parse("{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"},{\"subnet\":\"127.0.0.0/24\"}]]}",
			       "[[{\"subnet\":\"10.9.0.0/24\"}]]", CNI_VERSION_1_0_0, &c, &err),
			 0);
	assert_int_equal(ipam_config_check_subnets(c, &err), -EINVAL);
	assert_non_null(strstr(
			err.msg,
			"ipam.ranges[0][1].subnet: \"127.0.0.0/24\" is invalid: it overlaps the loopback range"));
	ipam_config_free(c);
}

static void test_resolv_conf(void **state) {
	char path[] = "/tmp/test-ipam-resolv.XXXXXX";
	int fd = mkstemp(path);
	const char *text = "# comment\n; other comment\nnameserver 10.0.0.53\n  nameserver   fd00::53  \n"
			   "domain example.com\nsearch a.example b.example\nsearch c.example\n"
			   "options ndots:5 timeout:1\nbogus line here\nnameserver\n";
	CniDns dns = {};

	assert_true(fd >= 0);
	assert_int_equal(loop_write(fd, text, strlen(text)), 0);
	close(fd);
	assert_int_equal(ipam_resolv_conf_parse(path, &dns), 0);
	assert_int_equal(strv_length(dns.nameservers), 2);
	assert_string_equal(dns.nameservers[0], "10.0.0.53");
	assert_string_equal(dns.nameservers[1], "fd00::53");
	assert_string_equal(dns.domain, "example.com");
	assert_int_equal(strv_length(dns.search), 3);
	assert_string_equal(dns.search[2], "c.example");
	assert_int_equal(strv_length(dns.options), 2);
	assert_string_equal(dns.options[0], "ndots:5");
	ipam_dns_done(&dns);
	unlink(path);
	assert_int_equal(ipam_resolv_conf_parse(path, &dns), -ENOENT);
}

static void test_requested(void **state) {
	IpamConfig *c = NULL;
	IpamError err;
	ssize_t want[3];
	IpAddr ips[4];

	assert_int_equal(
			parse("{\"ranges\":[[{\"subnet\":\"10.1.0.0/24\"},{\"subnet\":\"10.2.0.0/24\"}],"
			      "[{\"subnet\":\"fd00::/64\"}],[{\"subnet\":\"10.3.0.0/24\",\"rangeEnd\":\"10.3.0.100\"}]]}",
			      NULL, CNI_VERSION_1_0_0, &c, &err),
			0);

	/* One per set, any order; an address repeated is fine. */
	ip_addr_parse("fd00::9", &ips[0]);
	ip_addr_parse("10.2.0.7", &ips[1]);
	ip_addr_parse("10.2.0.7", &ips[2]);
	assert_int_equal(ipam_alloc_assign_requested(c->range_sets, c->n_range_sets, ips, 3, want, &err), 0);
	assert_int_equal(want[0], 2);
	assert_int_equal(want[1], 0);
	assert_int_equal(want[2], -1);

	static const struct {
		const char *a, *b, *msg;
	} bad[] = {
		{ "10.9.0.1", NULL, "10.9.0.1 is not in any configured range" },
		{ "10.3.0.101", NULL, "10.3.0.101 is not in any configured range" }, /* in subnet, after rangeEnd */
		{ "10.1.0.255", NULL, "10.1.0.255 is not in any configured range" }, /* broadcast */
		{ "10.1.0.1", NULL, "requested ip 10.1.0.1 is subnet's gateway" },
		{ "10.1.0.5", "10.2.0.5", "10.1.0.5 and 10.2.0.5 are both in range set 0" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = 1;

		err = (IpamError) {};
		ip_addr_parse(bad[i].a, &ips[0]);
		if (bad[i].b) {
			ip_addr_parse(bad[i].b, &ips[1]);
			n = 2;
		}
		assert_int_equal(ipam_alloc_assign_requested(c->range_sets, c->n_range_sets, ips, n, want, &err),
				 -EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].msg);
	}
	ipam_config_free(c);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),      cmocka_unit_test(test_explicit_values_and_keys),
		cmocka_unit_test(test_set_order),     cmocka_unit_test(test_errors),
		cmocka_unit_test(test_subnet_bounds), cmocka_unit_test(test_resolv_conf),
		cmocka_unit_test(test_requested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
