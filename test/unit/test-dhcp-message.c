/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DHCPv4 messages: client messages built and parsed back, server replies crafted byte by byte
 * (options, option 121/33 routes, RFC 3396 concatenation, option overload), the lease derived
 * from an ACK, IPv4/UDP framing with checksums, and every malformed or truncated input rejected.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shared/dhcp/dhcp-message.h"
#include "shared/dhcp/dhcp-proto.h"

static const uint8_t MAC[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

static struct in_addr A(const char *s) {
	struct in_addr a;
	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a;
}

/* A server reply: fixed part, option 53, `opts` verbatim, END. Returns its length. */
static size_t
mkreply(uint8_t *buf, uint8_t type, uint32_t xid, const char *yiaddr, const uint8_t *opts, size_t optlen) {
	struct in_addr y = A(yiaddr);
	size_t n = 240;

	memset(buf, 0, 600);
	buf[0] = BOOTREPLY;
	buf[1] = 1;
	buf[2] = 6;
	buf[4] = xid >> 24, buf[5] = xid >> 16, buf[6] = xid >> 8, buf[7] = xid;
	memcpy(buf + 16, &y, 4);
	memcpy(buf + 28, MAC, 6);
	buf[236] = 0x63, buf[237] = 0x82, buf[238] = 0x53, buf[239] = 0x63;
	buf[n++] = 53, buf[n++] = 1, buf[n++] = type;
	memcpy(buf + n, opts, optlen);
	n += optlen;
	buf[n++] = 255;
	return n;
}

static void test_build_parse_discover(void **state) {
	uint8_t buf[DHCP_MSG_MAX], prl[] = { 1, 3, 121 };
	DhcpRawOption opts[2] = { { .code = 61, .len = 4, .data = { 0, 'a', '/', 'b' } },
				  { .code = 12, .len = 5, .data = "pod-a" } };
	DhcpBuild b = { .type = DHCP_DISCOVER,
			.xid = 0xdeadbeef,
			.secs = 3,
			.prl = prl,
			.n_prl = 3,
			.opts = opts,
			.n_opts = 2,
			.requested_ip = A("10.0.0.9") };
	static DhcpMessage m;
	const uint8_t *v;
	size_t len;
	int n;

	memcpy(b.mac, MAC, 6);
	n = dhcp_message_build(buf, sizeof(buf), &b);
	assert_true(n >= 300); /* BOOTP minimum */
	assert_int_equal(dhcp_message_parse(buf, (size_t) n, &m), 0);
	assert_int_equal(m.op, BOOTREQUEST);
	assert_int_equal(m.type, DHCP_DISCOVER);
	assert_int_equal(m.xid, 0xdeadbeef);
	assert_memory_equal(m.chaddr, MAC, 6);
	v = dhcp_message_option(&m, DHCP_OPT_PARAM_REQUEST_LIST, &len);
	assert_non_null(v);
	assert_int_equal(len, 3);
	assert_memory_equal(v, prl, 3);
	v = dhcp_message_option(&m, DHCP_OPT_CLIENT_ID, &len);
	assert_int_equal(len, 4);
	assert_memory_equal(v, "\0a/b", 4);
	v = dhcp_message_option(&m, DHCP_OPT_HOST_NAME, &len);
	assert_int_equal(len, 5);
	assert_memory_equal(v, "pod-a", 5);
	struct in_addr req;
	assert_int_equal(dhcp_message_option_addr(&m, DHCP_OPT_REQUESTED_IP, &req), 0);
	assert_int_equal(req.s_addr, A("10.0.0.9").s_addr);
	assert_null(dhcp_message_option(&m, DHCP_OPT_SERVER_ID, NULL));
	/* Secs and flags in the fixed part. */
	assert_int_equal(buf[8] << 8 | buf[9], 3);
	assert_int_equal(m.flags, 0);

	/* Broadcast flag; a RELEASE carries neither PRL nor hostname, but the client id. */
	b.broadcast = true;
	b.type = DHCP_RELEASE;
	b.ciaddr = A("10.0.0.9");
	b.server_id = A("10.0.0.1");
	b.requested_ip.s_addr = 0;
	n = dhcp_message_build(buf, sizeof(buf), &b);
	assert_true(n > 0);
	assert_int_equal(dhcp_message_parse(buf, (size_t) n, &m), 0);
	assert_int_equal(m.type, DHCP_RELEASE);
	assert_int_equal(m.flags, 0x8000);
	assert_int_equal(m.ciaddr.s_addr, A("10.0.0.9").s_addr);
	assert_null(dhcp_message_option(&m, DHCP_OPT_PARAM_REQUEST_LIST, NULL));
	assert_null(dhcp_message_option(&m, DHCP_OPT_HOST_NAME, NULL));
	assert_non_null(dhcp_message_option(&m, DHCP_OPT_CLIENT_ID, NULL));
	assert_int_equal(dhcp_message_option_addr(&m, DHCP_OPT_SERVER_ID, &req), 0);

	/* Bad type, buffer too small, options that do not fit, reserved codes. */
	b.type = 0;
	assert_int_equal(dhcp_message_build(buf, sizeof(buf), &b), -EINVAL);
	b.type = DHCP_DISCOVER;
	assert_int_equal(dhcp_message_build(buf, 100, &b), -EMSGSIZE);
	DhcpRawOption big[6];
	for (int i = 0; i < 6; i++)
		big[i] = (DhcpRawOption) { .code = (uint8_t) (200 + i), .len = 255 };
	b.opts = big;
	b.n_opts = 6;
	assert_int_equal(dhcp_message_build(buf, sizeof(buf), &b), -EMSGSIZE);
	DhcpRawOption bad = { .code = 53, .len = 1 };
	b.opts = &bad;
	b.n_opts = 1;
	assert_int_equal(dhcp_message_build(buf, sizeof(buf), &b), -EINVAL);
}

static void test_parse_reply_and_lease(void **state) {
	static const uint8_t opts[] = {
		1,   4,  255, 255, 255, 0,                  /* mask /24 */
		3,   8,  10,  77,  0,   1,   10, 77, 0,  2, /* routers: first one counts */
		51,  4,  0,   0,   0,   120,                /* lease 120 s */
		54,  4,  10,  77,  0,   1,                  /* server id */
		58,  4,  0,   0,   0,   10,                 /* T1 */
		59,  4,  0,   0,   0,   20,                 /* T2 */
		121, 20,                                    /* 10.99/16 via .1, default via .1, 192.168.1/24 on-link */
		16,  10, 99,  10,  77,  0,   1,  0,  10, 77, 0, 1,  24, 192, 168,
		1,   0,  0,   0,   0,   33,  8,  10, 0,  0,  0, 10, 77, 0,   9, /* ignored: 121 present */
	};
	uint8_t buf[600];
	static DhcpMessage m;
	DhcpLease l;
	size_t n = mkreply(buf, DHCP_ACK, 42, "10.77.0.55", opts, sizeof(opts));

	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(m.type, DHCP_ACK);
	assert_int_equal(m.xid, 42);
	assert_int_equal(dhcp_lease_from_message(&m, (struct in_addr) {}, &l), 0);
	assert_int_equal(l.address.s_addr, A("10.77.0.55").s_addr);
	assert_true(l.has_mask);
	assert_int_equal(l.prefixlen, 24);
	assert_int_equal(l.router.s_addr, A("10.77.0.1").s_addr);
	assert_int_equal(l.server_id.s_addr, A("10.77.0.1").s_addr);
	assert_int_equal(l.lease_time, 120);
	assert_int_equal(l.t1, 10);
	assert_int_equal(l.t2, 20);
	assert_true(l.classless);
	assert_int_equal(l.n_routes, 3);
	assert_int_equal(l.routes[0].dst.s_addr, A("10.99.0.0").s_addr);
	assert_int_equal(l.routes[0].len, 16);
	assert_int_equal(l.routes[0].gw.s_addr, A("10.77.0.1").s_addr);
	assert_int_equal(l.routes[1].dst.s_addr, 0);
	assert_int_equal(l.routes[1].len, 0);
	assert_int_equal(l.routes[2].dst.s_addr, A("192.168.1.0").s_addr);
	assert_int_equal(l.routes[2].gw.s_addr, 0);

	/* Malformed 121 (width 33): ignored as a whole, option 33 used instead (classful /8). */
	static const uint8_t opts2[] = {
		51, 4, 0,  0,  14, 16, /* 3600 s, no T1/T2: defaults */
		54, 4, 10, 77, 0,  1,  121, 5, 33, 10, 0, 0, 1, 33, 8, 10, 1, 2, 3, 10, 77, 0, 9,
	};
	n = mkreply(buf, DHCP_ACK, 42, "10.77.0.55", opts2, sizeof(opts2));
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_lease_from_message(&m, (struct in_addr) {}, &l), 0);
	assert_false(l.has_mask);
	assert_false(l.classless);
	assert_int_equal(l.router.s_addr, 0);
	assert_int_equal(l.n_routes, 1);
	assert_int_equal(l.routes[0].dst.s_addr, A("10.0.0.0").s_addr);
	assert_int_equal(l.routes[0].len, 8);
	assert_int_equal(l.routes[0].gw.s_addr, A("10.77.0.9").s_addr);
	assert_int_equal(l.t1, 1800);
	assert_int_equal(l.t2, 3150);

	/* Server id from the IP source when option 54 is missing; none at all is an error. */
	static const uint8_t opts3[] = { 51, 4, 0xff, 0xff, 0xff, 0xff, 1, 4, 255, 0, 255, 0 };
	n = mkreply(buf, DHCP_OFFER, 1, "10.77.0.55", opts3, 6);
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_lease_from_message(&m, A("10.77.0.3"), &l), 0);
	assert_int_equal(l.server_id.s_addr, A("10.77.0.3").s_addr);
	assert_int_equal(l.t1, UINT32_MAX); /* infinite lease: no renewal */
	assert_int_equal(dhcp_lease_from_message(&m, (struct in_addr) {}, &l), -EBADMSG);
	/* Non-contiguous netmask. */
	n = mkreply(buf, DHCP_OFFER, 1, "10.77.0.55", opts3, sizeof(opts3));
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_lease_from_message(&m, A("10.77.0.3"), &l), -EBADMSG);
	/* No lease time; yiaddr 0. */
	n = mkreply(buf, DHCP_OFFER, 1, "10.77.0.55", opts2 + 6, 6);
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_lease_from_message(&m, (struct in_addr) {}, &l), -EBADMSG);
	n = mkreply(buf, DHCP_OFFER, 1, "0.0.0.0", opts2, sizeof(opts2));
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_lease_from_message(&m, (struct in_addr) {}, &l), -EBADMSG);
	/* T1 > T2 from the server: T1 falls back to 50%. */
	static const uint8_t opts4[] = {
		51, 4, 0, 0, 0, 100, 54, 4, 1, 2, 3, 4, 58, 4, 0, 0, 0, 90, 59, 4, 0, 0, 0, 80
	};
	n = mkreply(buf, DHCP_ACK, 1, "10.77.0.55", opts4, sizeof(opts4));
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_lease_from_message(&m, (struct in_addr) {}, &l), 0);
	assert_int_equal(l.t2, 80);
	assert_int_equal(l.t1, 50);
}

static void test_routes(void **state) {
	DhcpRoute r[4];
	static const uint8_t hostbits[] = { 12, 10, 0xff, 1, 1, 1, 1 }; /* 10.255/12 -> 10.240.0.0/12 */
	static const uint8_t trunc[] = { 24, 192, 168, 1, 10, 0, 0 };   /* router cut short */
	static const uint8_t trunc2[] = { 24, 192 };
	static const uint8_t wide[] = { 33, 1, 2, 3, 4, 5, 1, 1, 1, 1 };
	static const uint8_t host[] = { 32, 1, 2, 3, 4, 9, 9, 9, 9 };
	static const uint8_t s33[] = { 0, 0, 0, 0, 1, 1, 1, 1, 172, 16, 5, 5, 2, 2, 2, 2, 200, 1, 1, 1, 3, 3, 3, 3 };

	assert_int_equal(dhcp_parse_classless_routes(hostbits, sizeof(hostbits), r, 4), 1);
	assert_int_equal(r[0].dst.s_addr, A("10.240.0.0").s_addr);
	assert_int_equal(r[0].len, 12);
	assert_int_equal(dhcp_parse_classless_routes(trunc, sizeof(trunc), r, 4), -EBADMSG);
	assert_int_equal(dhcp_parse_classless_routes(trunc2, sizeof(trunc2), r, 4), -EBADMSG);
	assert_int_equal(dhcp_parse_classless_routes(wide, sizeof(wide), r, 4), -EBADMSG);
	assert_int_equal(dhcp_parse_classless_routes(host, sizeof(host), r, 4), 1);
	assert_int_equal(r[0].len, 32);
	assert_int_equal(dhcp_parse_classless_routes(host, 0, r, 4), 0);
	/* More routes than room: the rest is dropped, not overflowed. */
	uint8_t many[5 * 20];
	for (int i = 0; i < 20; i++)
		memcpy(many + 5 * i, (uint8_t[]) { 0, 1, 1, 1, (uint8_t) i }, 5);
	assert_int_equal(dhcp_parse_classless_routes(many, sizeof(many), r, 4), 4);

	/* Option 33: default destination skipped, classful masks. */
	assert_int_equal(dhcp_parse_static_routes(s33, sizeof(s33), r, 4), 2);
	assert_int_equal(r[0].dst.s_addr, A("172.16.0.0").s_addr);
	assert_int_equal(r[0].len, 16);
	assert_int_equal(r[1].dst.s_addr, A("200.1.1.0").s_addr);
	assert_int_equal(r[1].len, 24);
	assert_int_equal(dhcp_parse_static_routes(s33, 7, r, 4), -EBADMSG);

	assert_int_equal(dhcp_netmask_to_prefixlen(A("255.255.255.0")), 24);
	assert_int_equal(dhcp_netmask_to_prefixlen(A("0.0.0.0")), 0);
	assert_int_equal(dhcp_netmask_to_prefixlen(A("255.255.255.255")), 32);
	assert_int_equal(dhcp_netmask_to_prefixlen(A("255.0.255.0")), -EINVAL);
}

static void test_parse_malformed(void **state) {
	static const uint8_t lt[] = { 51, 4, 0, 0, 0, 100 };
	uint8_t buf[600];
	static DhcpMessage m;
	size_t n = mkreply(buf, DHCP_OFFER, 7, "10.0.0.5", lt, sizeof(lt));

	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	/* Every truncation of the fixed part. */
	for (size_t k = 0; k < 240; k++)
		assert_int_equal(dhcp_message_parse(buf, k, &m), -EBADMSG);
	/* Cut inside an option (after 53's code, length or value). */
	assert_int_equal(dhcp_message_parse(buf, 241, &m), -EBADMSG);
	assert_int_equal(dhcp_message_parse(buf, 242, &m), -EBADMSG);
	assert_int_equal(dhcp_message_parse(buf, 246, &m), -EBADMSG);
	/* Without END but ending on an option boundary: accepted (servers do this). */
	assert_int_equal(dhcp_message_parse(buf, n - 1, &m), 0);
	assert_int_equal(dhcp_message_parse(NULL, 0, &m), -EBADMSG);
	/* Bad cookie, bad op, bad hlen. */
	buf[236] ^= 1;
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	buf[236] ^= 1;
	buf[0] = 3;
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	buf[0] = BOOTREPLY;
	buf[2] = 17;
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	buf[2] = 6;
	/* Missing or invalid message type. */
	buf[240] = 0; /* 53 becomes PAD: then "1 5" is an option 1 of length 5 ... which runs over 51 */
	buf[241] = 0;
	buf[242] = 0;
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	n = mkreply(buf, 9, 7, "10.0.0.5", lt, sizeof(lt));
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	/* An option length past the end. */
	static const uint8_t over[] = { 12, 200, 'x' };
	n = mkreply(buf, DHCP_OFFER, 7, "10.0.0.5", over, sizeof(over));
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);

	/* RFC 3396: a long option split in two is concatenated. */
	static const uint8_t split[] = { 121, 3, 16, 10, 99, 121, 4, 10, 77, 0, 1 };
	const uint8_t *v;
	size_t len;
	n = mkreply(buf, DHCP_ACK, 7, "10.0.0.5", split, sizeof(split));
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	v = dhcp_message_option(&m, DHCP_OPT_CLASSLESS_ROUTES, &len);
	assert_int_equal(len, 7);
	assert_memory_equal(v, ((uint8_t[]) { 16, 10, 99, 10, 77, 0, 1 }), 7);

	/* Option overload: options continue in `file` (which must end with END). */
	static const uint8_t ov[] = { 52, 1, 1 };
	n = mkreply(buf, DHCP_ACK, 7, "10.0.0.5", ov, sizeof(ov));
	memcpy(buf + 108, (uint8_t[]) { 51, 4, 0, 0, 1, 0, 255 }, 7);
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	uint32_t t;
	assert_int_equal(dhcp_message_option_u32(&m, DHCP_OPT_LEASE_TIME, &t), 0);
	assert_int_equal(t, 256);
	buf[108 + 6] = 0; /* no END in file */
	memset(buf + 108 + 6, 1, 128 - 6);
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	static const uint8_t ovbad[] = { 52, 1, 4 };
	n = mkreply(buf, DHCP_ACK, 7, "10.0.0.5", ovbad, sizeof(ovbad));
	assert_int_equal(dhcp_message_parse(buf, n, &m), -EBADMSG);
	/* Fixed-size readers. */
	static const uint8_t shortlt[] = { 51, 2, 0, 1, 54, 3, 1, 2, 3 };
	struct in_addr a;
	n = mkreply(buf, DHCP_ACK, 7, "10.0.0.5", shortlt, sizeof(shortlt));
	assert_int_equal(dhcp_message_parse(buf, n, &m), 0);
	assert_int_equal(dhcp_message_option_u32(&m, DHCP_OPT_LEASE_TIME, &t), -EBADMSG);
	assert_int_equal(dhcp_message_option_addr(&m, DHCP_OPT_SERVER_ID, &a), -EBADMSG);
	assert_int_equal(dhcp_message_option_u32(&m, DHCP_OPT_RENEWAL_TIME, &t), -ENODATA);
}

static void test_frame(void **state) {
	static const uint8_t payload[] = "a dhcp payload of odd length";
	uint8_t buf[200];
	const uint8_t *p;
	size_t len;
	struct in_addr src;
	int n = dhcp_frame_build(buf, sizeof(buf), A("10.0.0.5"), A("255.255.255.255"), payload, sizeof(payload));

	assert_int_equal(n, 20 + 8 + (int) sizeof(payload));
	/* Our own frames are addressed to the server port; rewrite the destination port to 68 to
	 * parse one back as a reply, fixing the UDP checksum by recomputing the frame. */
	buf[22] = 0, buf[23] = 68;
	buf[26] = buf[27] = 0; /* no UDP checksum */
	assert_int_equal(dhcp_frame_parse(buf, (size_t) n, true, &p, &len, &src), 0);
	assert_int_equal(len, sizeof(payload));
	assert_memory_equal(p, payload, len);
	assert_int_equal(src.s_addr, A("10.0.0.5").s_addr);

	/* A real UDP checksum: compute one over the port-68 frame and check both ways. */
	uint8_t pseudo[12];
	memcpy(pseudo, buf + 12, 8);
	pseudo[8] = 0, pseudo[9] = 17, pseudo[10] = 0, pseudo[11] = (uint8_t) (n - 20);
	uint16_t c = (uint16_t) ~dhcp_csum_fold(dhcp_csum_add(dhcp_csum_add(0, pseudo, 12), buf + 20, (size_t) n - 20));
	buf[26] = c >> 8, buf[27] = c & 0xff;
	assert_int_equal(dhcp_frame_parse(buf, (size_t) n, true, &p, &len, &src), 0);
	buf[40] ^= 0x55;
	assert_int_equal(dhcp_frame_parse(buf, (size_t) n, true, &p, &len, &src), -EBADMSG);
	/* ... unless offload left it unchecked. */
	assert_int_equal(dhcp_frame_parse(buf, (size_t) n, false, &p, &len, &src), 0);
	buf[40] ^= 0x55;

	/* IP header checksum, version, fragment, protocol, port, lengths. */
	uint8_t copy[200];
	memcpy(copy, buf, (size_t) n);
	copy[8] = 1; /* TTL change breaks the header checksum */
	assert_int_equal(dhcp_frame_parse(copy, (size_t) n, true, &p, &len, &src), -EBADMSG);
	memcpy(copy, buf, (size_t) n);
	copy[0] = 0x65;
	assert_int_equal(dhcp_frame_parse(copy, (size_t) n, true, &p, &len, &src), -EBADMSG);
	for (size_t k = 0; k < 28; k++)
		assert_int_equal(dhcp_frame_parse(buf, k, true, &p, &len, &src), -EBADMSG);
	assert_int_equal(dhcp_frame_parse(buf, (size_t) n - 1, true, &p, &len, &src), -EBADMSG); /* IP total > data */

	/* Build rejects what does not fit. */
	assert_int_equal(dhcp_frame_build(buf, 30, A("0.0.0.0"), A("1.2.3.4"), payload, sizeof(payload)), -EMSGSIZE);
	/* Our frames go to port 67: the parser (client side) refuses them. */
	n = dhcp_frame_build(buf, sizeof(buf), A("0.0.0.0"), A("255.255.255.255"), payload, sizeof(payload));
	assert_int_equal(dhcp_frame_parse(buf, (size_t) n, true, &p, &len, &src), -EBADMSG);
	/* Our own checksums verify (as the server would): IP header sums to 0xffff. */
	assert_int_equal(dhcp_csum_fold(dhcp_csum_add(0, buf, 20)), 0xffff);
}

static void test_names(void **state) {
	char *id;

	assert_int_equal(dhcp_option_from_name("host-name"), 12);
	assert_int_equal(dhcp_option_from_name("routers"), 3);
	assert_int_equal(dhcp_option_from_name("dhcp-client-identifier"), 61);
	assert_int_equal(dhcp_option_from_name("121"), 121);
	assert_int_equal(dhcp_option_from_name("256"), -EINVAL);
	assert_int_equal(dhcp_option_from_name("-1"), -EINVAL);
	assert_int_equal(dhcp_option_from_name("hostname"), -EINVAL);
	assert_int_equal(dhcp_option_from_name(""), -EINVAL);

	id = dhcp_client_id("c1", "net", "eth0");
	assert_string_equal(id, "c1/net/eth0");
	free(id);
	char longid[400];
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = 0;
	id = dhcp_client_id(longid, "net", "eth0");
	assert_int_equal(strlen(id), 254);
	free(id);
	assert_string_equal(dhcp_message_type_to_string(DHCP_ACK), "DHCPACK");
	assert_string_equal(dhcp_message_type_to_string(99), "unknown");
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_parse_discover),
		cmocka_unit_test(test_parse_reply_and_lease),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_frame),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
