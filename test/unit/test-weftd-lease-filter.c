/* SPDX-License-Identifier: Apache-2.0 */
/* weftd's import filter for remote leases (lease-filter.c), the stored-object parsers behind it
 * (etcd key/value, Kubernetes Node) and the desired table keyed by datastore key. Pure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend.h"
#include "daemon/datastore/lease-filter.h"
#include "daemon/reconcile.h"

static IpPrefix P(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static IpAddr A(const char *s) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static NodeLease lease(const char *name, const char *subnet, const char *pub, uint8_t mac_last) {
	NodeLease l = { .subnet = P(subnet),
			.public_ip = A(pub),
			.has_vtep_mac = true,
			.vtep_mac = { 0x02, 0, 0, 0, 0, mac_last } };
	l.node_name = (char *) name; /* a view */
	snprintf(l.backend, sizeof(l.backend), "vxlan");
	return l;
}

/* The cluster: underlay 10.250.100.0/24, Network 10.250.128.0/17, we are node1 with
 * 10.250.129.0/24; a second link holds 10.250.200.1/24 (inside the Network). */
static const uint8_t self_mac[6] = { 0x02, 0xaa, 0, 0, 0, 1 };
static IpPrefix local_addrs[4];

static LeaseFilter filter(void) {
	local_addrs[0] = P("10.250.100.11/24");
	local_addrs[1] = P("127.0.0.1/8");
	local_addrs[2] = P("10.250.200.1/24");
	local_addrs[3] = P("10.250.129.0/32"); /* our VTEP */
	return (LeaseFilter) {
		.network = P("10.250.128.0/17"),
		.network6 = P("fd00:10:250::/56"),
		.subnet_len = 24,
		.subnet_len6 = 64,
		.self_subnet = P("10.250.129.0/24"),
		.self_name = "node1",
		.self_mac = self_mac,
		.local = local_addrs,
		.n_local = ELEMENTSOF(local_addrs),
	};
}

static void test_check_table(void **state) {
	static const struct {
		const char *name, *subnet, *subnet6, *pub, *mac;
		LeaseReject want;
		const char *detail; /* part of the message */
	} t[] = {
		{ "node2", "10.250.130.0/24", NULL, "10.250.100.12", "02:00:00:00:00:02", LEASE_ACCEPTED, NULL },
		{ "node2", "10.250.130.0/24", "fd00:10:250:2::/64", "10.250.100.12", "02:00:00:00:00:02",
		  LEASE_ACCEPTED, NULL },
		/* item 1: the underlay's own network, outside the Network */
		{ "fake", "10.250.100.0/24", NULL, "10.250.100.50", "02:00:00:00:00:50", LEASE_REJECT_OUTSIDE_NETWORK,
		  "subnet 10.250.100.0/24 is outside the Network 10.250.128.0/17" },
		{ "fake", "0.0.0.0/0", NULL, "10.250.100.50", NULL, LEASE_REJECT_OUTSIDE_NETWORK, "outside" },
		{ "fake", "10.250.0.0/16", NULL, "10.250.100.50", NULL, LEASE_REJECT_OUTSIDE_NETWORK, "outside" },
		{ "fake", "10.250.128.0/17", NULL, "10.250.100.50", NULL, LEASE_REJECT_PREFIX_LENGTH, "not a /24" },
		{ "fake", "10.250.130.0/25", NULL, "10.250.100.50", NULL, LEASE_REJECT_PREFIX_LENGTH, "SubnetLen 24" },
		{ "fake", "10.250.130.0/32", NULL, "10.250.100.50", NULL, LEASE_REJECT_PREFIX_LENGTH, "/32" },
		{ "fake", "10.250.130.5/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_PREFIX_LENGTH, "not a /24" },
		{ "fake", "10.250.129.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_OWN_SUBNET, "own subnet" },
		{ "fake", "10.250.200.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_CONNECTED,
		  "covers 10.250.200.0/24, a directly connected network" },
		{ "fake", "10.250.130.0/24", "fd00:99::/64", "10.250.100.50", NULL, LEASE_REJECT_OUTSIDE_NETWORK,
		  "Network6" },
		{ "fake", "10.250.130.0/24", "fd00:10:250:2::/80", "10.250.100.50", NULL, LEASE_REJECT_PREFIX_LENGTH,
		  "SubnetLen6" },
		/* item 5: public IP */
		{ "fake", "10.250.130.0/24", NULL, "0.0.0.0", NULL, LEASE_REJECT_PUBLIC_IP, "unspecified" },
		{ "fake", "10.250.130.0/24", NULL, "127.0.0.5", NULL, LEASE_REJECT_PUBLIC_IP, "loopback" },
		{ "fake", "10.250.130.0/24", NULL, "224.0.0.251", NULL, LEASE_REJECT_PUBLIC_IP, "multicast" },
		{ "fake", "10.250.130.0/24", NULL, "255.255.255.255", NULL, LEASE_REJECT_PUBLIC_IP, "broadcast" },
		{ "fake", "10.250.130.0/24", NULL, "::", NULL, LEASE_REJECT_PUBLIC_IP, "unspecified" },
		{ "fake", "10.250.130.0/24", NULL, "::1", NULL, LEASE_REJECT_PUBLIC_IP, "loopback" },
		{ "fake", "10.250.130.0/24", NULL, "ff02::1", NULL, LEASE_REJECT_PUBLIC_IP, "multicast" },
		{ "fake", "10.250.130.0/24", NULL, "10.250.100.11", NULL, LEASE_REJECT_PUBLIC_IP, "own addresses" },
		{ "fake", "10.250.130.0/24", NULL, "10.250.200.1", NULL, LEASE_REJECT_PUBLIC_IP, "own addresses" },
		/* item 5: VTEP MAC */
		{ "fake", "10.250.130.0/24", NULL, "10.250.100.50", "01:00:5e:00:00:01", LEASE_REJECT_VTEP_MAC,
		  "unicast" },
		{ "fake", "10.250.130.0/24", NULL, "10.250.100.50", "ff:ff:ff:ff:ff:ff", LEASE_REJECT_VTEP_MAC,
		  "unicast" },
		{ "fake", "10.250.130.0/24", NULL, "10.250.100.50", "00:00:00:00:00:00", LEASE_REJECT_VTEP_MAC,
		  "zeros" },
		{ "fake", "10.250.130.0/24", NULL, "10.250.100.50", "02:aa:00:00:00:01", LEASE_REJECT_VTEP_MAC,
		  "own VTEP" },
		/* item 5: node name */
		{ "", "10.250.130.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_NODE_NAME, "not a valid" },
		{ "Node2", "10.250.130.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_NODE_NAME, "not a valid" },
		{ "node 2", "10.250.130.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_NODE_NAME, "not a valid" },
		{ "-node2", "10.250.130.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_NODE_NAME, "not a valid" },
		{ "node1", "10.250.130.0/24", NULL, "10.250.100.50", NULL, LEASE_REJECT_DUPLICATE_NAME, "this node's" },
		/* IPv6-only clusters: the subnet itself is IPv6 */
		{ "six", "fd00:10:250:3::/64", NULL, "10.250.100.50", NULL, LEASE_ACCEPTED, NULL },
		{ "six", "fd00:99:250:3::/64", NULL, "10.250.100.50", NULL, LEASE_REJECT_OUTSIDE_NETWORK, "Network6" },
		{ "six", "fd00:10:250:3::/65", NULL, "10.250.100.50", NULL, LEASE_REJECT_PREFIX_LENGTH,
		  "SubnetLen6 64" },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		LeaseFilter f = filter();
		NodeLease l = lease(t[i].name, t[i].subnet, t[i].pub, 9);
		char *detail = NULL;
		LeaseReject r;

		if (t[i].subnet6)
			l.subnet6 = P(t[i].subnet6);
		l.has_vtep_mac = t[i].mac != NULL;
		if (t[i].mac)
			assert_int_equal(ether_addr_parse(t[i].mac, l.vtep_mac), 0);
		r = lease_filter_check(&f, &l, &detail);
		if (r != t[i].want || (t[i].detail && (!detail || !strstr(detail, t[i].detail))))
			fail_msg("case %zu (%s %s %s): got %s \"%s\", want %s \"%s\"", i, t[i].name, t[i].subnet,
				 t[i].pub, lease_reject_to_string(r), detail ?: "", lease_reject_to_string(t[i].want),
				 t[i].detail ?: "");
		if (r == LEASE_ACCEPTED)
			assert_null(detail);
		free(detail);
	}
}

static void test_check_no_network6(void **state) {
	LeaseFilter f = filter();
	NodeLease l = lease("node2", "10.250.130.0/24", "10.250.100.12", 2);
	char *detail = NULL;

	f.network6 = (IpPrefix) {};
	l.subnet6 = P("fd00:10:250:2::/64");
	assert_int_equal(lease_filter_check(&f, &l, &detail), LEASE_REJECT_OUTSIDE_NETWORK);
	assert_non_null(strstr(detail, "no Network6"));
	free(detail);
	/* a parser's verdict comes through as is */
	l = lease("node2", "10.250.130.0/24", "10.250.100.12", 2);
	l.invalid = LEASE_REJECT_MALFORMED;
	l.invalid_detail = "the value is not a JSON object";
	assert_int_equal(lease_filter_check(&f, &l, &detail), LEASE_REJECT_MALFORMED);
	assert_string_equal(detail, "the value is not a JSON object");
	free(detail);
}

static void test_node_name_valid(void **state) {
	char name[300];

	assert_true(node_name_valid("node1"));
	assert_true(node_name_valid("ip-10-0-0-1.eu-west-1.compute.internal"));
	assert_true(node_name_valid("a"));
	assert_true(node_name_valid("1"));
	assert_false(node_name_valid(""));
	assert_false(node_name_valid(NULL));
	assert_false(node_name_valid("Node1"));
	assert_false(node_name_valid("node_1"));
	assert_false(node_name_valid("node1."));
	assert_false(node_name_valid(".node1"));
	assert_false(node_name_valid("node..1"));
	assert_false(node_name_valid("node-.1"));
	assert_false(node_name_valid("node.-1"));
	assert_false(node_name_valid("node1-"));
	assert_false(node_name_valid("node/1"));
	/* 253 characters: valid, and longer than the 63 weftd used to cut names at */
	memset(name, 'a', 253);
	name[253] = 0;
	for (int i = 60; i < 253; i += 61)
		name[i] = '.';
	assert_true(node_name_valid(name));
	name[253] = 'a';
	name[254] = 0;
	assert_false(node_name_valid(name));
}

static LeaseCandidate cand(const NodeLease *l, const char *key) {
	return (LeaseCandidate) { .lease = l, .key = key, .verdict = LEASE_ACCEPTED };
}

static void test_resolve(void **state) {
	NodeLease l[6] = {
		lease("node2", "10.250.130.0/24", "10.250.100.12", 2),
		lease("node3", "10.250.131.0/24", "10.250.100.13", 3),
		lease("intruder", "10.250.130.0/24", "10.250.100.50", 50), /* node2's subnet, younger */
		lease("node2", "10.250.132.0/24", "10.250.100.51", 51),    /* node2's name, younger */
		lease("copycat", "10.250.133.0/24", "10.250.100.52", 3),   /* node3's MAC */
		lease("node4", "10.250.134.0/24", "10.250.100.14", 4),
	};
	const char *keys[6] = { "k-130", "k-131", "k-130b", "k-132", "k-133", "k-134" };
	LeaseCandidate c[6];

	for (int i = 0; i < 6; i++) {
		l[i].created = 10 + i;
		c[i] = cand(&l[i], keys[i]);
	}
	c[5].verdict = LEASE_REJECT_PUBLIC_IP; /* already refused: takes no part */
	assert_int_equal(lease_filter_resolve(c, 6), 0);
	assert_int_equal(c[0].verdict, LEASE_ACCEPTED);
	assert_int_equal(c[1].verdict, LEASE_ACCEPTED);
	assert_int_equal(c[2].verdict, LEASE_REJECT_OVERLAP);
	assert_int_equal(c[2].winner, 0);
	assert_int_equal(c[3].verdict, LEASE_REJECT_DUPLICATE_NAME);
	assert_int_equal(c[3].winner, 0);
	assert_int_equal(c[4].verdict, LEASE_REJECT_DUPLICATE_MAC);
	assert_int_equal(c[4].winner, 1);
	assert_int_equal(c[5].verdict, LEASE_REJECT_PUBLIC_IP);

	/* the winner is the older one whatever the order of the input (every node decides alike) */
	l[2].created = 5;
	for (int i = 0; i < 6; i++)
		c[5 - i] = cand(&l[i], keys[i]);
	assert_int_equal(lease_filter_resolve(c, 6), 0);
	assert_int_equal(c[5].verdict, LEASE_REJECT_OVERLAP); /* node2 (index 0 of l) lost now */
	assert_int_equal(c[3].verdict, LEASE_ACCEPTED);       /* the intruder is older */
	/* ... and node2's name is free again for the other node2 lease, which now wins it */
	assert_int_equal(c[2].verdict, LEASE_ACCEPTED);

	/* same age: the key decides */
	NodeLease a = lease("a", "10.250.140.0/24", "10.250.100.60", 60),
		  b = lease("b", "10.250.140.0/24", "10.250.100.61", 61);
	LeaseCandidate ab[2] = { cand(&b, "/p/subnets/x2"), cand(&a, "/p/subnets/x1") };
	assert_int_equal(lease_filter_resolve(ab, 2), 0);
	assert_int_equal(ab[0].verdict, LEASE_REJECT_OVERLAP);
	assert_int_equal(ab[1].verdict, LEASE_ACCEPTED);
	/* IPv6 subnet in common */
	a = lease("a", "10.250.140.0/24", "10.250.100.60", 60);
	b = lease("b", "10.250.141.0/24", "10.250.100.61", 61);
	a.subnet6 = b.subnet6 = P("fd00:10:250:7::/64");
	a.created = 2;
	b.created = 1;
	ab[0] = cand(&a, "ka");
	ab[1] = cand(&b, "kb");
	assert_int_equal(lease_filter_resolve(ab, 2), 0);
	assert_int_equal(ab[0].verdict, LEASE_REJECT_OVERLAP);
	assert_int_equal(ab[1].verdict, LEASE_ACCEPTED);
	assert_int_equal(lease_filter_resolve(NULL, 0), 0);
}

static void test_resolve_5000(void **state) {
	const size_t n = 5000;
	NodeLease *l = calloc(n, sizeof(NodeLease));
	LeaseCandidate *c = calloc(n, sizeof(LeaseCandidate));
	char(*keys)[32] = calloc(n, 32), (*names)[32] = calloc(n, 32);

	assert_non_null(l);
	assert_non_null(c);
	assert_non_null(keys);
	assert_non_null(names);
	for (size_t i = 0; i < n; i++) {
		char *name = names[i], sub[32], pub[32];
		snprintf(name, 32, "node%zu", i);
		snprintf(sub, sizeof(sub), "10.%zu.%zu.0/24", 100 + i / 256, i % 256);
		snprintf(pub, sizeof(pub), "10.%zu.%zu.%zu", 96 + i / 65536, (i / 256) % 256, i % 256);
		l[i] = lease(name, sub, pub, (uint8_t) i);
		l[i].vtep_mac[4] = (uint8_t) (i >> 8);
		l[i].created = (int64_t) (n - i);
		snprintf(keys[i], 32, "k%zu", i);
		c[i] = cand(&l[i], keys[i]);
	}
	assert_int_equal(lease_filter_resolve(c, n), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(c[i].verdict, LEASE_ACCEPTED);
	free(l);
	free(c);
	free(keys);
	free(names);
}

/* ---- parsers ---- */

/* datastore_etcd_lease_parse() into *l, releasing what an earlier call left there */
static int etcd_parse(const char *pfx, const char *key, const char *value, NodeLease *l) {
	node_lease_done(l);
	return datastore_etcd_lease_parse(pfx, key, value, l);
}

static void test_etcd_parse(void **state) {
	static const char *const pfx = "/weft/network/subnets/";
	_cleanup_(node_lease_done) NodeLease l = {};
	char name[300], value[512];

	assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24",
				    "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"backend\":\"vxlan\","
				    "\"vtepMAC\":\"02:00:00:00:00:02\",\"subnet6\":\"fd00::/64\"}",
				    &l),
			 0);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_string_equal(l.node_name, "node2");
	assert_true(l.has_vtep_mac);
	assert_int_equal(l.subnet6.len, 64);
	/* key only (a DELETE) */
	assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24", NULL, &l), 0);
	assert_int_equal(l.subnet.len, 24);
	/* not ours at all */
	assert_int_equal(etcd_parse(pfx, "/other/10.250.130.0-24", NULL, &l), -EINVAL);

	static const struct {
		const char *key, *value;
		LeaseReject want;
	} t[] = {
		{ "garbage", "{}", LEASE_REJECT_MALFORMED },
		{ "10.250.130.5-24", "{\"node\":\"n\",\"publicIP\":\"10.0.0.1\"}", LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-33", "{\"node\":\"n\",\"publicIP\":\"10.0.0.1\"}", LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-24", "[1]", LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-24", "{\"node\":\"n\",\"node\":\"m\",\"publicIP\":\"10.0.0.1\"}",
		  LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-24", "{\"publicIP\":\"10.0.0.1\"}", LEASE_REJECT_NODE_NAME },
		{ "10.250.130.0-24", "{\"node\":7,\"publicIP\":\"10.0.0.1\"}", LEASE_REJECT_NODE_NAME },
		{ "10.250.130.0-24", "{\"node\":\"n\\u0000x\",\"publicIP\":\"10.0.0.1\"}", LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-24", "{\"node\":\"n\"}", LEASE_REJECT_PUBLIC_IP },
		{ "10.250.130.0-24", "{\"node\":\"n\",\"publicIP\":\"10.0.0\"}", LEASE_REJECT_PUBLIC_IP },
		{ "10.250.130.0-24", "{\"node\":\"n\",\"publicIP\":\"10.0.0.1\",\"vtepMAC\":\"zz\"}",
		  LEASE_REJECT_VTEP_MAC },
		{ "10.250.130.0-24", "{\"node\":\"n\",\"publicIP\":\"10.0.0.1\",\"subnet6\":\"10.0.0.0/8\"}",
		  LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-24",
		  "{\"node\":\"n\",\"publicIP\":\"10.0.0.1\",\"backend\":\"vxlan-with-a-long-name\"}",
		  LEASE_REJECT_MALFORMED },
		{ "10.250.130.0-24", "{\"node\":\"n\",\"publicIP\":\"10.0.0.1\",\"backend\":\"host-gw\"}",
		  LEASE_ACCEPTED },
	};
	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char key[128];

		snprintf(key, sizeof(key), "%s%s", pfx, t[i].key);
		assert_int_equal(etcd_parse(pfx, key, t[i].value, &l), 0);
		if (l.invalid != t[i].want)
			fail_msg("case %zu (%s %s): got %s, want %s", i, t[i].key, t[i].value,
				 lease_reject_to_string(l.invalid), lease_reject_to_string(t[i].want));
		if (l.invalid != LEASE_ACCEPTED)
			assert_non_null(l.invalid_detail);
	}

	/* 253 characters pass whole; 254 are refused, never cut to a shorter (colliding) name */
	memset(name, 'a', 253);
	name[253] = 0;
	snprintf(value, sizeof(value), "{\"node\":\"%s\",\"publicIP\":\"10.0.0.1\"}", name);
	assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24", value, &l), 0);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_string_equal(l.node_name, name);
	name[253] = 'b';
	name[254] = 0;
	snprintf(value, sizeof(value), "{\"node\":\"%s\",\"publicIP\":\"10.0.0.1\"}", name);
	assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24", value, &l), 0);
	assert_int_equal(l.invalid, LEASE_REJECT_NODE_NAME);
}

static int kube_parse(const char *json, NodeLease *l) {
	json_t *o = json_loads(json, 0, NULL);
	int r;

	assert_non_null(o);
	node_lease_done(l); /* *l is the caller's, from an earlier call or {} */
	r = datastore_kube_node_parse(o, l);
	json_decref(o);
	return r;
}

static void test_kube_parse(void **state) {
	_cleanup_(node_lease_done) NodeLease l = {};
	char name[300], json[1024];

	assert_int_equal(kube_parse("{\"metadata\":{\"name\":\"node2\",\"creationTimestamp\":\"2024-01-02T03:04:05Z\","
				    "\"annotations\":{\"weft.dev/public-ip\":\"10.250.100.12\",\"weft.dev/vtep-mac\":"
				    "\"02:00:00:00:00:02\"}},\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
				    &l),
			 1);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_int_equal(l.created, 1704164645);
	/* not ready: no annotation */
	assert_int_equal(kube_parse("{\"metadata\":{\"name\":\"node2\"},\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
				    &l),
			 0);
	/* an unreadable annotation is a refused lease, not a node that is not ready */
	assert_int_equal(kube_parse("{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip\":\"x\"}},"
				    "\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
				    &l),
			 1);
	assert_int_equal(l.invalid, LEASE_REJECT_PUBLIC_IP);
	assert_int_equal(
			kube_parse("{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip\":\"10.0.0.1\","
				   "\"weft.dev/vtep-mac\":\"nope\"}},\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
				   &l),
			1);
	assert_int_equal(l.invalid, LEASE_REJECT_VTEP_MAC);
	assert_int_equal(
			kube_parse("{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip\":\"10.0.0.1\"}},"
				   "\"spec\":{\"podCIDRs\":[\"bogus\", \"10.250.130.0/24\"]}}",
				   &l),
			1);
	assert_int_equal(l.invalid, LEASE_REJECT_MALFORMED);
	/* a 253-character name is a lease, whole (it used to be skipped silently past 63) */
	memset(name, 'a', 253);
	name[253] = 0;
	snprintf(json, sizeof(json),
		 "{\"metadata\":{\"name\":\"%s\",\"annotations\":{\"weft.dev/public-ip\":\"10.0.0.1\"}},"
		 "\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
		 name);
	assert_int_equal(kube_parse(json, &l), 1);
	assert_string_equal(l.node_name, name);
	assert_int_equal(kube_parse("{\"metadata\":{}}", &l), -EINVAL);
}

/* WireGuard public keys: read from etcd ("publicKey") and Kubernetes (weft.dev/public-key),
 * refused when unreadable, all zero or ours, and unique among accepted leases (the older wins). */
static void test_public_key(void **state) {
	static const char *const pfx = "/weft/network/subnets/";
	static const char *const key1 = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="; /* bytes 1..32 */
	static const uint8_t key1_bytes[32] = { 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
						17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
	_cleanup_(node_lease_done) NodeLease l = {};
	char value[512], *detail = NULL;
	NodeLease a, b, c3;
	LeaseFilter f;

	snprintf(value, sizeof(value),
		 "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"backend\":\"wireguard\",\"publicKey\":\"%s\"}",
		 key1);
	assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24", value, &l), 0);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_true(l.has_public_key);
	assert_memory_equal(l.public_key, key1_bytes, 32);
	f = filter();
	assert_int_equal(lease_filter_check(&f, &l, NULL), LEASE_ACCEPTED);
	/* our own key */
	f.self_key = key1_bytes;
	assert_int_equal(lease_filter_check(&f, &l, &detail), LEASE_REJECT_PUBLIC_KEY);
	assert_non_null(strstr(detail, "this node's own public key"));
	free(detail);

	static const char *const bad[] = {
		"\"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHw==\"", /* 31 bytes */
		"\"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAh\"", /* 33 bytes */
		"\"not base64 at all, not base64 at all, nope!\"",  "\"\"", "42", "null",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		snprintf(value, sizeof(value), "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"publicKey\":%s}",
			 bad[i]);
		assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24", value, &l), 0);
		if (l.invalid != LEASE_REJECT_PUBLIC_KEY)
			fail_msg("case %zu (%s): got %s, want public_key", i, bad[i],
				 lease_reject_to_string(l.invalid));
		assert_false(l.has_public_key);
		f = filter();
		assert_int_equal(lease_filter_check(&f, &l, NULL), LEASE_REJECT_PUBLIC_KEY);
	}
	/* all zero parses (the filter refuses it, counted) */
	assert_int_equal(etcd_parse(pfx, "/weft/network/subnets/10.250.130.0-24",
				    "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"publicKey\":"
				    "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}",
				    &l),
			 0);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	f = filter();
	assert_int_equal(lease_filter_check(&f, &l, &detail), LEASE_REJECT_PUBLIC_KEY);
	assert_non_null(strstr(detail, "all zeros"));
	free(detail);

	/* Kubernetes: the annotation */
	snprintf(value, sizeof(value),
		 "{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip\":\"10.250.100.12\","
		 "\"weft.dev/public-key\":\"%s\"}},\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
		 key1);
	assert_int_equal(kube_parse(value, &l), 1);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_true(l.has_public_key);
	assert_memory_equal(l.public_key, key1_bytes, 32);
	assert_int_equal(kube_parse("{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip\":"
				    "\"10.250.100.12\",\"weft.dev/public-key\":\"garbage\"}},\"spec\":{\"podCIDRs\":"
				    "[\"10.250.130.0/24\"]}}",
				    &l),
			 1);
	assert_int_equal(l.invalid, LEASE_REJECT_PUBLIC_KEY);
	assert_false(l.has_public_key);

	/* a key claimed twice: the older lease keeps it, whatever the order */
	a = lease("node2", "10.250.130.0/24", "10.250.100.12", 2);
	b = lease("node3", "10.250.131.0/24", "10.250.100.13", 3);
	c3 = lease("node4", "10.250.132.0/24", "10.250.100.14", 4);
	a.has_public_key = b.has_public_key = c3.has_public_key = true;
	memcpy(a.public_key, key1_bytes, 32);
	memcpy(b.public_key, key1_bytes, 32);
	memcpy(c3.public_key, key1_bytes, 32);
	c3.public_key[0] ^= 0xff;
	a.created = 20;
	b.created = 10;
	c3.created = 5;
	LeaseCandidate c[3] = { cand(&a, "ka"), cand(&b, "kb"), cand(&c3, "kc") };
	assert_int_equal(lease_filter_resolve(c, 3), 0);
	assert_int_equal(c[0].verdict, LEASE_REJECT_DUPLICATE_KEY);
	assert_int_equal(c[0].winner, 1);
	assert_int_equal(c[1].verdict, LEASE_ACCEPTED);
	assert_int_equal(c[2].verdict, LEASE_ACCEPTED);
	/* a lease without a key takes no part */
	a.has_public_key = b.has_public_key = false;
	c[0] = cand(&a, "ka");
	c[1] = cand(&b, "kb");
	assert_int_equal(lease_filter_resolve(c, 2), 0);
	assert_int_equal(c[0].verdict, LEASE_ACCEPTED);
	assert_int_equal(c[1].verdict, LEASE_ACCEPTED);

	/* a new key is a change the reconciler must see */
	b = a;
	assert_true(node_lease_equal(&a, &b));
	b.has_public_key = true;
	assert_false(node_lease_equal(&a, &b));
	a.has_public_key = true;
	memcpy(a.public_key, key1_bytes, 32);
	memcpy(b.public_key, key1_bytes, 32);
	assert_true(node_lease_equal(&a, &b));
	b.public_key[31] ^= 1;
	assert_false(node_lease_equal(&a, &b));

	assert_string_equal(lease_reject_to_string(LEASE_REJECT_PUBLIC_KEY), "public_key");
	assert_string_equal(lease_reject_to_string(LEASE_REJECT_DUPLICATE_KEY), "duplicate_public_key");
}

/* ---- the desired table, keyed by datastore key ---- */

static NodeLease keyed(NodeLease l, const char *key, int64_t created) {
	l.key = key;
	l.created = created;
	return l;
}

/* publicIPv6, the IPv6 underlay address next to an IPv4 public IP (wireguard's weft-wg-v6): read
 * from etcd ("publicIPv6") and Kubernetes (weft.dev/public-ip6 with weft.dev/public-ip), and
 * checked by the filter as a public IP is. */
static void test_public_ip6(void **state) {
	static const char *const pfx = "/weft/network/subnets/";
	static const char *const key = "/weft/network/subnets/10.250.130.0-24";
	_cleanup_(node_lease_done) NodeLease l = {};
	LeaseFilter f = filter();
	_cleanup_free_ char *detail = NULL;
	IpAddr want = A("fd99::12");

	assert_int_equal(etcd_parse(pfx, key,
				    "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"publicIPv6\":\"fd99::12\"}",
				    &l),
			 0);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_true(ip_addr_equal(&l.public_ip6, &want));
	assert_int_equal(lease_filter_check(&f, &l, &detail), LEASE_ACCEPTED);
	/* without it: none */
	assert_int_equal(etcd_parse(pfx, key, "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\"}", &l), 0);
	assert_false(ip_addr_is_set(&l.public_ip6));
	/* not an IPv6 address */
	assert_int_equal(etcd_parse(pfx, key,
				    "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"publicIPv6\":\"10.0.0.1\"}",
				    &l),
			 0);
	assert_int_equal(l.invalid, LEASE_REJECT_PUBLIC_IP);
	assert_int_equal(etcd_parse(pfx, key, "{\"node\":\"node2\",\"publicIP\":\"10.250.100.12\",\"publicIPv6\":7}",
				    &l),
			 0);
	assert_int_equal(l.invalid, LEASE_REJECT_PUBLIC_IP);
	/* the filter: loopback, multicast and ours refused, as for publicIP */
	static const char *const bad[] = { "::1", "ff02::1", "::" };
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		NodeLease b = lease("node2", "10.250.130.0/24", "10.250.100.12", 2);

		b.public_ip6 = A(bad[i]);
		detail = mfree(detail);
		assert_int_equal(lease_filter_check(&f, &b, &detail), LEASE_REJECT_PUBLIC_IP);
		assert_non_null(strstr(detail, "publicIPv6"));
	}
	local_addrs[1] = P("fd99::11/64"); /* one of ours */
	NodeLease b = lease("node2", "10.250.130.0/24", "10.250.100.12", 2);
	b.public_ip6 = A("fd99::11");
	detail = mfree(detail);
	assert_int_equal(lease_filter_check(&f, &b, &detail), LEASE_REJECT_PUBLIC_IP);
	assert_non_null(strstr(detail, "one of this node's own addresses"));
	/* only next to an IPv4 public IP */
	b = lease("node2", "10.250.130.0/24", "fd99::13", 2);
	b.public_ip6 = A("fd99::12");
	detail = mfree(detail);
	assert_int_equal(lease_filter_check(&f, &b, &detail), LEASE_REJECT_PUBLIC_IP);

	/* Kubernetes: both annotations */
	assert_int_equal(
			kube_parse("{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip\":\"10.250.100.12\","
				   "\"weft.dev/public-ip6\":\"fd99::12\"}},\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
				   &l),
			1);
	assert_int_equal(l.invalid, LEASE_ACCEPTED);
	assert_int_equal(l.public_ip.family, AF_INET);
	assert_true(ip_addr_equal(&l.public_ip6, &want));
	/* public-ip6 alone is still an IPv6 node's public IP */
	assert_int_equal(
			kube_parse("{\"metadata\":{\"name\":\"node2\",\"annotations\":{\"weft.dev/public-ip6\":\"fd99::12\"}},"
				   "\"spec\":{\"podCIDRs\":[\"10.250.130.0/24\"]}}",
				   &l),
			1);
	assert_true(ip_addr_equal(&l.public_ip, &want));
	assert_false(ip_addr_is_set(&l.public_ip6));
}

static void test_keyed_by_datastore_key(void **state) {
	Reconciler r;
	Metrics m = {};
	NetworkConfig cfg = { .network = P("10.250.128.0/17"), .subnet_len = 24, .subnet_len6 = 64 };
	NodeLease l[3] = {
		keyed(lease("node2", "10.250.130.0/24", "10.250.100.12", 2), "/w/subnets/10.250.130.0-24", 10),
		keyed(lease("node3", "10.250.131.0/24", "10.250.100.13", 3), "/w/subnets/10.250.131.0-24", 11),
		/* item 3: another key claiming node2's name */
		keyed(lease("node2", "10.250.140.0/24", "10.250.100.66", 66), "/w/subnets/10.250.140.0-24", 20),
	};

	reconciler_init(&r, NULL, NULL, &m, "node1");
	r.network = &cfg;
	assert_int_equal(reconciler_set_all(&r, l, 2), 1);
	assert_int_equal(reconciler_upsert(&r, &l[2]), 1);
	assert_int_equal(r.n_nodes, 3); /* both "node2" leases are kept: different keys */
	assert_int_equal(reconciler_select(&r), 2);
	assert_int_equal(r.nodes[0].verdict, LEASE_ACCEPTED); /* sorted by key: 130, 131, 140 */
	assert_string_equal(r.nodes[0].lease.public_ip.family == AF_INET ? r.nodes[0].key : "",
			    "/w/subnets/10.250.130.0-24");
	assert_int_equal(r.nodes[2].verdict, LEASE_REJECT_DUPLICATE_NAME);
	assert_int_equal(m.leases_rejected[LEASE_REJECT_DUPLICATE_NAME], 1);
	/* counted once, however many passes */
	assert_int_equal(reconciler_select(&r), 2);
	assert_int_equal(reconciler_set_all(&r, l, 3), 0);
	assert_int_equal(reconciler_select(&r), 2);
	assert_int_equal(m.leases_rejected[LEASE_REJECT_DUPLICATE_NAME], 1);

	/* the impostor's key is deleted: node2's own entry is untouched */
	NodeLease del = { .key = "/w/subnets/10.250.140.0-24" };
	assert_int_equal(reconciler_remove(&r, &del), 1);
	assert_int_equal(r.n_nodes, 2);
	assert_string_equal(r.nodes[0].lease.node_name, "node2");
	assert_int_equal(reconciler_select(&r), 2);
	assert_int_equal(reconciler_remove(&r, &del), 0);

	/* an invalid lease is stored (and counted), never dropped silently */
	NodeLease bad = keyed(lease("fake", "10.250.100.0/24", "10.250.100.50", 0x50), "/w/subnets/10.250.100.0-24",
			      30);
	assert_int_equal(reconciler_upsert(&r, &bad), 1);
	assert_int_equal(reconciler_select(&r), 2);
	assert_int_equal(m.leases_rejected[LEASE_REJECT_OUTSIDE_NETWORK], 1);
	assert_int_equal(m.nodes, 3);
	reconciler_done(&r);
}

static void test_vtep_mac_long_names(void **state) {
	char a[260], b[260];
	uint8_t ma[6], mb[6], old[6];

	/* names that agree on the first 95 characters used to get the same MAC */
	memset(a, 'x', 200);
	memcpy(b, a, 200);
	a[200] = 'a';
	b[200] = 'b';
	a[201] = b[201] = 0;
	backend_vtep_mac(a, 1, ma);
	backend_vtep_mac(b, 1, mb);
	assert_memory_not_equal(ma, mb, 6);
	/* short names keep the MAC they always had (FNV-1a 64 of "node1/1") */
	backend_vtep_mac("node1", 1, old);
	{
		uint64_t h = 0xcbf29ce484222325ULL;
		for (const char *s = "node1/1"; *s; s++) {
			h ^= (uint8_t) *s;
			h *= 0x100000001b3ULL;
		}
		for (int i = 0; i < 6; i++)
			ma[i] = (uint8_t) (h >> (8 * i));
		ma[0] = (uint8_t) ((ma[0] & 0xfe) | 0x02);
	}
	assert_memory_equal(old, ma, 6);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_table),         cmocka_unit_test(test_check_no_network6),
		cmocka_unit_test(test_node_name_valid),     cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_resolve_5000),        cmocka_unit_test(test_etcd_parse),
		cmocka_unit_test(test_kube_parse),          cmocka_unit_test(test_keyed_by_datastore_key),
		cmocka_unit_test(test_vtep_mac_long_names), cmocka_unit_test(test_public_key),
		cmocka_unit_test(test_public_ip6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
