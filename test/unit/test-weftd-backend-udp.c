/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The udp backend's pure parts (backend-udp.h): the peer table the forwarding path looks every
 * packet up in, the packet parser, and the inbound checks that decide whether a datagram from
 * the underlay may be written to the TUN. Plus the net-conf side: Backend.Type "udp" and its
 * default port. The datapath itself is test/netns/test-weftd-udp.sh.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/backend/backend-udp.h"
#include "daemon/network-config.h"
#include "shared/nl/nl-tun.h"

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

/* A minimal IPv4 header (20 bytes) + 8 bytes of payload; checksums do not matter here. */
static size_t pkt4(uint8_t *buf, const char *src, const char *dst) {
	IpAddr s = A(src), d = A(dst);

	memset(buf, 0, 28);
	buf[0] = 0x45;
	buf[3] = 28;
	buf[8] = 64;
	buf[9] = 17;
	memcpy(buf + 12, s.bytes, 4);
	memcpy(buf + 16, d.bytes, 4);
	return 28;
}

static size_t pkt6(uint8_t *buf, const char *src, const char *dst) {
	IpAddr s = A(src), d = A(dst);

	memset(buf, 0, 48);
	buf[0] = 0x60;
	buf[5] = 8;
	buf[6] = 17;
	buf[7] = 64;
	memcpy(buf + 8, s.bytes, 16);
	memcpy(buf + 24, d.bytes, 16);
	return 48;
}

static void fill(UdpPeerTable *t) {
	/* deliberately unsorted, and with a host bit set (masked on the way in) */
	static const struct {
		const char *subnet, *ip;
	} peers[] = {
		{ "10.244.7.0/24", "192.0.2.7" },     { "10.244.2.5/24", "192.0.2.2" },
		{ "10.244.200.0/24", "192.0.2.200" }, { "fd00:10:244:2::/64", "192.0.2.2" },
		{ "10.244.3.0/24", "192.0.2.3" },
	};
	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		IpPrefix p = P(peers[i].subnet);
		IpAddr a = A(peers[i].ip);
		assert_int_equal(udp_peer_table_add(t, &p, &a), 0);
	}
	udp_peer_table_sort(t);
}

static void test_lookup(void **state) {
	static const struct {
		const char *dst, *want; /* want: public IP, or NULL = no peer */
	} cases[] = {
		{ "10.244.2.0", "192.0.2.2" },
		{ "10.244.2.255", "192.0.2.2" },
		{ "10.244.2.10", "192.0.2.2" },
		{ "10.244.3.1", "192.0.2.3" },
		{ "10.244.7.77", "192.0.2.7" },
		{ "10.244.200.9", "192.0.2.200" },
		{ "10.244.1.10", NULL },
		{ "10.244.4.1", NULL },
		{ "10.244.255.1", NULL },
		{ "10.243.255.255", NULL },
		{ "0.0.0.0", NULL },
		{ "255.255.255.255", NULL },
		{ "fd00:10:244:2::a", "192.0.2.2" },
		{ "fd00:10:244:3::a", NULL },
		{ "::", NULL },
	};
	UdpPeerTable t = {};

	fill(&t);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		IpAddr d = A(cases[i].dst);
		const UdpPeer *p = udp_peer_table_lookup(&t, &d);
		if (!cases[i].want) {
			if (p)
				fail_msg("%s: expected no peer", cases[i].dst);
			continue;
		}
		if (!p)
			fail_msg("%s: expected %s, got no peer", cases[i].dst, cases[i].want);
		IpAddr w = A(cases[i].want);
		assert_true(ip_addr_equal(&p->public_ip, &w));
	}
	udp_peer_table_done(&t);

	/* empty table */
	IpAddr d = A("10.244.2.1");
	assert_null(udp_peer_table_lookup(&t, &d));
}

/* Against a linear scan, over many random subnets: the binary search finds the same peer. */
static void test_lookup_model(void **state) {
	UdpPeerTable t = {};
	uint8_t used[256] = {};

	srand(11);
	for (int i = 0; i < 120; i++) {
		int k = rand() % 256;
		if (used[k])
			continue;
		used[k] = 1;
		IpPrefix p = { .addr = { .family = AF_INET }, .len = 24 };
		p.addr.bytes[0] = 10, p.addr.bytes[1] = 244, p.addr.bytes[2] = (uint8_t) k;
		IpAddr ip = { .family = AF_INET };
		ip.bytes[0] = 192, ip.bytes[3] = (uint8_t) k;
		assert_int_equal(udp_peer_table_add(&t, &p, &ip), 0);
	}
	udp_peer_table_sort(&t);
	for (int k = 0; k < 256; k++)
		for (int h = 0; h < 256; h += 51) {
			IpAddr d = { .family = AF_INET };
			d.bytes[0] = 10, d.bytes[1] = 244, d.bytes[2] = (uint8_t) k, d.bytes[3] = (uint8_t) h;
			const UdpPeer *p = udp_peer_table_lookup(&t, &d);
			if (!used[k])
				assert_null(p);
			else {
				assert_non_null(p);
				assert_int_equal(p->public_ip.bytes[3], k);
			}
		}
	udp_peer_table_done(&t);
}

static void test_packet_addrs(void **state) {
	uint8_t b[64];
	IpAddr s, d, w;
	size_t n;

	n = pkt4(b, "10.244.1.10", "10.244.2.10");
	assert_int_equal(udp_packet_addrs(b, n, &s, &d), 0);
	w = A("10.244.1.10");
	assert_true(ip_addr_equal(&s, &w));
	w = A("10.244.2.10");
	assert_true(ip_addr_equal(&d, &w));
	assert_int_equal(udp_packet_addrs(b, 19, &s, &d), -EBADMSG); /* truncated */
	b[0] = 0x44;                                                 /* IHL 4 */
	assert_int_equal(udp_packet_addrs(b, n, &s, &d), -EBADMSG);
	b[0] = 0x55; /* version 5 */
	assert_int_equal(udp_packet_addrs(b, n, &s, &d), -EBADMSG);
	assert_int_equal(udp_packet_addrs(b, 0, &s, &d), -EBADMSG);

	n = pkt6(b, "fd00:10:244:1::a", "fd00:10:244:2::a");
	assert_int_equal(udp_packet_addrs(b, n, &s, &d), 0);
	w = A("fd00:10:244:2::a");
	assert_true(ip_addr_equal(&d, &w));
	assert_int_equal(udp_packet_addrs(b, 39, &s, &d), -EBADMSG);
	assert_int_equal(nl_tun_packet_version(b, n), 6);
}

static void test_inbound(void **state) {
	/* We are node 1 (10.244.1.0/24, fd00:10:244:1::/64); the table holds the others. */
	static const struct {
		const char *sender, *src, *dst;
		UdpInboundVerdict want;
	} cases[] = {
		{ "192.0.2.2", "10.244.2.10", "10.244.1.10", UDP_INBOUND_OK },
		{ "192.0.2.2", "10.244.2.0", "10.244.1.10", UDP_INBOUND_OK }, /* node 2's own TUN address */
		{ "192.0.2.3", "10.244.3.10", "10.244.1.255", UDP_INBOUND_OK },
		/* another node's pod address, sent by node 2 */
		{ "192.0.2.2", "10.244.3.10", "10.244.1.10", UDP_INBOUND_SPOOFED },
		/* a host outside the cluster */
		{ "198.51.100.9", "10.244.2.10", "10.244.1.10", UDP_INBOUND_SPOOFED },
		/* a source no lease holds */
		{ "192.0.2.2", "10.99.0.200", "10.244.1.10", UDP_INBOUND_SPOOFED },
		/* not for this node: would make us a relay */
		{ "192.0.2.2", "10.244.2.10", "10.244.3.10", UDP_INBOUND_NOT_FOR_US },
		{ "192.0.2.2", "10.244.2.10", "8.8.8.8", UDP_INBOUND_NOT_FOR_US },
		{ "192.0.2.2", "10.244.2.10", "10.244.2.11", UDP_INBOUND_NOT_FOR_US },
	};
	IpPrefix self4 = P("10.244.1.0/24"), self6 = P("fd00:10:244:1::/64");
	UdpPeerTable t = {};
	uint8_t b[64];

	fill(&t);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		IpAddr sender = A(cases[i].sender);
		size_t n = pkt4(b, cases[i].src, cases[i].dst);
		UdpInboundVerdict v = udp_inbound_check(&t, &self4, &self6, &sender, b, n);
		if (v != cases[i].want)
			fail_msg("%s: %s -> %s: expected %s, got %s", cases[i].sender, cases[i].src, cases[i].dst,
				 udp_inbound_verdict_to_string(cases[i].want), udp_inbound_verdict_to_string(v));
	}

	IpAddr s2 = A("192.0.2.2");
	size_t n = pkt6(b, "fd00:10:244:2::a", "fd00:10:244:1::a");
	assert_int_equal(udp_inbound_check(&t, &self4, &self6, &s2, b, n), UDP_INBOUND_OK);
	assert_int_equal(udp_inbound_check(&t, &self4, NULL, &s2, b, n), UDP_INBOUND_NOT_FOR_US);
	assert_int_equal(udp_inbound_check(&t, &self4, &self6, &s2, b, 10), UDP_INBOUND_MALFORMED);
	/* no lease yet: nothing is for us */
	n = pkt4(b, "10.244.2.10", "10.244.1.10");
	assert_int_equal(udp_inbound_check(&t, NULL, NULL, &s2, b, n), UDP_INBOUND_NOT_FOR_US);
	udp_peer_table_done(&t);
}

static void test_config(void **state) {
	NetworkConfig *c = NULL;
	char *err = NULL;

	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"udp\"}}", &c,
					      &err),
			 0);
	assert_int_equal(c->backend.type, NETWORK_BACKEND_UDP);
	assert_int_equal(c->backend.port, 8285);
	assert_string_equal(network_backend_type_to_string(c->backend.type), "udp");
	network_config_free(c);

	assert_int_equal(
			network_config_parse(
					"{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"udp\", \"Port\": 9000}}",
					&c, &err),
			0);
	assert_int_equal(c->backend.port, 9000);
	network_config_free(c);

	/* vxlan keeps its own default */
	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"vxlan\"}}",
					      &c, &err),
			 0);
	assert_int_equal(c->backend.port, 4789);
	network_config_free(c);

	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"udpx\"}}", &c,
					      &err),
			 -EINVAL);
	assert_non_null(strstr(err, "\"udp\""));
	free(err);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),       cmocka_unit_test(test_lookup_model),
		cmocka_unit_test(test_packet_addrs), cmocka_unit_test(test_inbound),
		cmocka_unit_test(test_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
