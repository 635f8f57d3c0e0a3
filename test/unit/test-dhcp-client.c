/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DHCP client state machine as a pure function of (state, event, time): every transition of
 * RFC 2131 figure 5 we implement, retransmission backoff with jitter bounds, stray replies
 * ignored, RELEASE on stop. No sockets, no clock.
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

#include "shared/dhcp/dhcp-client.h"

#define S DHCP_USEC_PER_SEC

static const uint8_t MAC[6] = { 0x02, 0, 0, 0, 0, 7 };

static struct in_addr A(const char *s) {
	struct in_addr a;
	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a;
}

/* A reply message built the way dhcp_message_parse() would leave it. */
static void
mkmsg(DhcpMessage *m, uint8_t type, uint32_t xid, const char *yiaddr, const char *server, uint32_t lease, uint32_t t1,
      uint32_t t2) {
	uint8_t v[4];

	memset(m, 0, sizeof(*m));
	m->op = BOOTREPLY;
	m->xid = xid;
	m->type = type;
	m->yiaddr = A(yiaddr);
	memcpy(m->chaddr, MAC, 6);
#define PUT(code, data, len)                                                                                           \
	do {                                                                                                           \
		m->opt_present[code] = true;                                                                           \
		m->opt_off[code] = (uint16_t) m->store_used;                                                           \
		m->opt_len[code] = (len);                                                                              \
		memcpy(m->store + m->store_used, (data), (len));                                                       \
		m->store_used += (len);                                                                                \
	} while (0)
	PUT(DHCP_OPT_MESSAGE_TYPE, &type, 1);
	if (server) {
		struct in_addr sid = A(server);
		PUT(DHCP_OPT_SERVER_ID, &sid, 4);
	}
	if (lease) {
		v[0] = lease >> 24, v[1] = lease >> 16, v[2] = lease >> 8, v[3] = lease;
		PUT(DHCP_OPT_LEASE_TIME, v, 4);
	}
	if (t1) {
		v[0] = t1 >> 24, v[1] = t1 >> 16, v[2] = t1 >> 8, v[3] = t1;
		PUT(DHCP_OPT_RENEWAL_TIME, v, 4);
	}
	if (t2) {
		v[0] = t2 >> 24, v[1] = t2 >> 16, v[2] = t2 >> 8, v[3] = t2;
		PUT(DHCP_OPT_REBINDING_TIME, v, 4);
	}
	struct in_addr mask = A("255.255.255.0");
	PUT(DHCP_OPT_SUBNET_MASK, &mask, 4);
#undef PUT
}

static DhcpActions ev(DhcpClient *c, DhcpEventType t, const DhcpMessage *m, uint64_t now) {
	DhcpActions a;
	assert_int_equal(dhcp_client_handle(c, &(DhcpEvent) { .type = t, .msg = m, .src = A("10.0.0.1") }, now, &a), 0);
	return a;
}

/* Drives a fresh client to BOUND at time `now` (lease 100 s, T1 50, T2 80). */
static void to_bound(DhcpClient *c, uint64_t now) {
	static DhcpMessage m;
	DhcpActions a;

	dhcp_client_init(c, MAC, 12345, 62 * S);
	a = ev(c, DHCP_EVENT_START, NULL, now);
	assert_int_equal(a.send, DHCP_SEND_DISCOVER);
	mkmsg(&m, DHCP_OFFER, c->xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	a = ev(c, DHCP_EVENT_PACKET, &m, now);
	assert_int_equal(a.send, DHCP_SEND_REQUEST);
	mkmsg(&m, DHCP_ACK, c->xid, "10.0.0.50", "10.0.0.1", 100, 50, 80);
	a = ev(c, DHCP_EVENT_PACKET, &m, now);
	assert_true(a.bound);
	assert_int_equal(c->state, DHCP_STATE_BOUND);
}

static void test_backoff(void **state) {
	for (unsigned n = 1; n <= 4; n++)
		assert_int_equal(dhcp_backoff_usec(n, 62 * S), 2 * S);
	assert_int_equal(dhcp_backoff_usec(5, 62 * S), 4 * S);
	assert_int_equal(dhcp_backoff_usec(6, 62 * S), 8 * S);
	assert_int_equal(dhcp_backoff_usec(7, 62 * S), 16 * S);
	assert_int_equal(dhcp_backoff_usec(8, 62 * S), 32 * S);
	assert_int_equal(dhcp_backoff_usec(9, 62 * S), 62 * S);
	assert_int_equal(dhcp_backoff_usec(50, 62 * S), 62 * S);
	assert_int_equal(dhcp_backoff_usec(9, 10 * S), 10 * S);
}

static void test_acquire(void **state) {
	static DhcpMessage m;
	DhcpClient c;
	DhcpActions a;
	DhcpBuild b = {};
	uint64_t t = 1000 * S, prev;
	uint32_t xid;

	dhcp_client_init(&c, MAC, 1, 0);
	assert_int_equal(c.state, DHCP_STATE_INIT);
	a = ev(&c, DHCP_EVENT_START, NULL, t);
	assert_int_equal(c.state, DHCP_STATE_SELECTING);
	assert_int_equal(a.send, DHCP_SEND_DISCOVER);
	assert_false(a.unicast);
	assert_true(a.need_socket);
	/* First retransmission 2 s +/- 1 s. */
	assert_true(c.next_timeout >= t + 1 * S && c.next_timeout < t + 3 * S);
	dhcp_client_fill_build(&c, a.send, t, &b);
	assert_int_equal(b.type, DHCP_DISCOVER);
	assert_int_equal(b.xid, c.xid);
	assert_memory_equal(b.mac, MAC, 6);
	assert_int_equal(b.requested_ip.s_addr, 0);
	xid = c.xid;

	/* Retransmissions: 4 fast ones, then growing, all with the same xid; secs counts up. */
	prev = t;
	for (int i = 0; i < 8; i++) {
		uint64_t now = c.next_timeout;
		a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, now);
		assert_int_equal(a.send, DHCP_SEND_DISCOVER);
		assert_int_equal(c.xid, xid);
		uint64_t want = dhcp_backoff_usec(c.attempt, c.resend_max);
		assert_true(c.next_timeout >= now + want - S && c.next_timeout < now + want + S);
		prev = now;
	}
	dhcp_client_fill_build(&c, DHCP_SEND_DISCOVER, prev, &b);
	assert_true(b.secs > 10);

	/* Stray replies: wrong xid, wrong MAC, a request, an ACK while selecting. */
	mkmsg(&m, DHCP_OFFER, xid + 1, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, prev);
	assert_int_equal(a.send, DHCP_SEND_NONE);
	assert_non_null(a.note);
	mkmsg(&m, DHCP_OFFER, xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	m.chaddr[5] ^= 1;
	a = ev(&c, DHCP_EVENT_PACKET, &m, prev);
	assert_int_equal(a.send, DHCP_SEND_NONE);
	mkmsg(&m, DHCP_OFFER, xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	m.op = BOOTREQUEST;
	assert_int_equal(ev(&c, DHCP_EVENT_PACKET, &m, prev).send, DHCP_SEND_NONE);
	mkmsg(&m, DHCP_ACK, xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	assert_int_equal(ev(&c, DHCP_EVENT_PACKET, &m, prev).send, DHCP_SEND_NONE);
	/* An offer without a lease time is not worth a REQUEST. */
	mkmsg(&m, DHCP_OFFER, xid, "10.0.0.50", "10.0.0.1", 0, 0, 0);
	assert_int_equal(ev(&c, DHCP_EVENT_PACKET, &m, prev).send, DHCP_SEND_NONE);
	assert_int_equal(c.state, DHCP_STATE_SELECTING);

	/* OFFER -> REQUESTING with requested IP and server id. */
	mkmsg(&m, DHCP_OFFER, xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, prev);
	assert_int_equal(c.state, DHCP_STATE_REQUESTING);
	assert_int_equal(a.send, DHCP_SEND_REQUEST);
	dhcp_client_fill_build(&c, a.send, prev, &b);
	assert_int_equal(b.type, DHCP_REQUEST);
	assert_int_equal(b.requested_ip.s_addr, A("10.0.0.50").s_addr);
	assert_int_equal(b.server_id.s_addr, A("10.0.0.1").s_addr);
	assert_int_equal(b.ciaddr.s_addr, 0);

	/* An ACK from another server, or for another address, is ignored. */
	mkmsg(&m, DHCP_ACK, xid, "10.0.0.50", "10.0.0.2", 100, 0, 0);
	assert_false(ev(&c, DHCP_EVENT_PACKET, &m, prev).bound);
	mkmsg(&m, DHCP_ACK, xid, "10.0.0.51", "10.0.0.1", 100, 0, 0);
	assert_false(ev(&c, DHCP_EVENT_PACKET, &m, prev).bound);

	/* ACK -> BOUND: socket not needed, next wakeup at T1 (default 50%). */
	mkmsg(&m, DHCP_ACK, xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, prev);
	assert_true(a.bound);
	assert_false(a.need_socket);
	assert_int_equal(c.state, DHCP_STATE_BOUND);
	assert_true(c.has_lease);
	assert_int_equal(c.next_timeout, prev + 50 * S);
	assert_int_equal(c.t2_at, prev + 87 * S); /* 87.5% in whole seconds */
	assert_int_equal(c.expire_at, prev + 100 * S);
	/* A late duplicate in BOUND changes nothing. */
	a = ev(&c, DHCP_EVENT_PACKET, &m, prev + S);
	assert_false(a.bound);
	assert_int_equal(a.send, DHCP_SEND_NONE);
	/* START again is refused. */
	assert_non_null(ev(&c, DHCP_EVENT_START, NULL, prev).note);
}

static void test_requesting_gives_up_and_nak(void **state) {
	static DhcpMessage m;
	DhcpClient c;
	DhcpActions a;
	uint64_t t = 5 * S;

	dhcp_client_init(&c, MAC, 99, 62 * S);
	ev(&c, DHCP_EVENT_START, NULL, t);
	mkmsg(&m, DHCP_OFFER, c.xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	ev(&c, DHCP_EVENT_PACKET, &m, t);
	for (int i = 1; i < DHCP_REQUEST_TRIES; i++) {
		a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, c.next_timeout);
		assert_int_equal(a.send, DHCP_SEND_REQUEST);
	}
	a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, c.next_timeout);
	assert_int_equal(a.send, DHCP_SEND_DISCOVER);
	assert_int_equal(c.state, DHCP_STATE_SELECTING);

	/* NAK in REQUESTING: back to DISCOVER with a new xid, nothing "lost" (nothing held). */
	mkmsg(&m, DHCP_OFFER, c.xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	ev(&c, DHCP_EVENT_PACKET, &m, t);
	uint32_t xid = c.xid;
	mkmsg(&m, DHCP_NAK, c.xid, "0.0.0.0", "10.0.0.1", 0, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, t);
	assert_int_equal(a.send, DHCP_SEND_DISCOVER);
	assert_false(a.lost);
	assert_int_not_equal(c.xid, xid);
}

static void test_renew_rebind_expire(void **state) {
	static DhcpMessage m;
	DhcpClient c;
	DhcpActions a;
	DhcpBuild b = {};
	uint64_t t0 = 100 * S;

	to_bound(&c, t0);
	assert_int_equal(c.next_timeout, t0 + 50 * S);
	/* A spurious early timer just re-arms. */
	a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, t0 + 10 * S);
	assert_int_equal(a.send, DHCP_SEND_NONE);
	assert_int_equal(c.next_timeout, t0 + 50 * S);

	/* T1: RENEWING, unicast with ciaddr, retransmit after half the time to T2 (15 s). */
	a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, t0 + 50 * S);
	assert_int_equal(c.state, DHCP_STATE_RENEWING);
	assert_int_equal(a.send, DHCP_SEND_RENEW);
	assert_true(a.unicast);
	assert_true(a.need_socket);
	assert_int_equal(c.next_timeout, t0 + 65 * S);
	dhcp_client_fill_build(&c, a.send, t0 + 50 * S, &b);
	assert_int_equal(b.type, DHCP_REQUEST);
	assert_int_equal(b.ciaddr.s_addr, A("10.0.0.50").s_addr);
	assert_int_equal(b.requested_ip.s_addr, 0);
	assert_int_equal(b.server_id.s_addr, 0);
	/* Retransmissions shrink, at least 4 s, never past T2. */
	a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, t0 + 65 * S);
	assert_int_equal(a.send, DHCP_SEND_RENEW);
	assert_int_equal(c.next_timeout, t0 + 72 * S + S / 2);
	a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, t0 + 78 * S);
	assert_int_equal(c.next_timeout, t0 + 80 * S);

	/* T2: REBINDING, broadcast. */
	a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, t0 + 80 * S);
	assert_int_equal(c.state, DHCP_STATE_REBINDING);
	assert_int_equal(a.send, DHCP_SEND_REBIND);
	assert_false(a.unicast);
	assert_int_equal(c.next_timeout, t0 + 90 * S);

	/* Any server may answer a rebind: ACK from another one binds again. */
	mkmsg(&m, DHCP_ACK, c.xid, "10.0.0.50", "10.0.0.9", 100, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, t0 + 85 * S);
	assert_true(a.bound);
	assert_false(a.lost);
	assert_int_equal(c.state, DHCP_STATE_BOUND);
	assert_int_equal(c.lease.server_id.s_addr, A("10.0.0.9").s_addr);
	assert_int_equal(c.expire_at, t0 + 185 * S);

	/* No answers at all: renew, rebind, expire -> lost, DISCOVER asking for the old address. */
	uint64_t now = c.next_timeout;
	int guard = 0;
	do {
		a = ev(&c, DHCP_EVENT_TIMEOUT, NULL, now);
		now = c.next_timeout;
		assert_true(++guard < 100);
	} while (!a.lost);
	assert_int_equal(c.state, DHCP_STATE_SELECTING);
	assert_int_equal(a.send, DHCP_SEND_DISCOVER);
	assert_false(c.has_lease);
	dhcp_client_fill_build(&c, a.send, now, &b);
	assert_int_equal(b.requested_ip.s_addr, A("10.0.0.50").s_addr);
}

static void test_renew_nak_and_stop(void **state) {
	static DhcpMessage m;
	DhcpClient c;
	DhcpActions a;
	DhcpBuild b = {};

	to_bound(&c, 0);
	ev(&c, DHCP_EVENT_TIMEOUT, NULL, 50 * S);
	/* In RENEWING only the leasing server counts. */
	mkmsg(&m, DHCP_NAK, c.xid, "0.0.0.0", "10.0.0.7", 0, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, 51 * S);
	assert_false(a.lost);
	mkmsg(&m, DHCP_NAK, c.xid, "0.0.0.0", "10.0.0.1", 0, 0, 0);
	a = ev(&c, DHCP_EVENT_PACKET, &m, 51 * S);
	assert_true(a.lost);
	assert_int_equal(a.send, DHCP_SEND_DISCOVER);

	/* STOP with a lease: RELEASE, unicast, to the server, with ciaddr. */
	to_bound(&c, 0);
	a = ev(&c, DHCP_EVENT_STOP, NULL, 10 * S);
	assert_int_equal(a.send, DHCP_SEND_RELEASE);
	assert_true(a.unicast);
	assert_false(a.need_socket);
	assert_int_equal(c.state, DHCP_STATE_STOPPED);
	assert_int_equal(c.next_timeout, DHCP_NEVER);
	dhcp_client_fill_build(&c, a.send, 10 * S, &b);
	assert_int_equal(b.type, DHCP_RELEASE);
	assert_int_equal(b.ciaddr.s_addr, A("10.0.0.50").s_addr);
	assert_int_equal(b.server_id.s_addr, A("10.0.0.1").s_addr);
	/* Packets after STOP are ignored. */
	mkmsg(&m, DHCP_ACK, c.xid, "10.0.0.50", "10.0.0.1", 100, 0, 0);
	assert_false(ev(&c, DHCP_EVENT_PACKET, &m, 11 * S).bound);

	/* STOP without a lease: nothing to send. */
	dhcp_client_init(&c, MAC, 5, 0);
	ev(&c, DHCP_EVENT_START, NULL, 0);
	a = ev(&c, DHCP_EVENT_STOP, NULL, S);
	assert_int_equal(a.send, DHCP_SEND_NONE);

	/* Infinite lease: never wakes up. */
	dhcp_client_init(&c, MAC, 5, 0);
	ev(&c, DHCP_EVENT_START, NULL, 0);
	mkmsg(&m, DHCP_OFFER, c.xid, "10.0.0.50", "10.0.0.1", UINT32_MAX, 0, 0);
	ev(&c, DHCP_EVENT_PACKET, &m, 0);
	mkmsg(&m, DHCP_ACK, c.xid, "10.0.0.50", "10.0.0.1", UINT32_MAX, 0, 0);
	assert_true(ev(&c, DHCP_EVENT_PACKET, &m, 0).bound);
	assert_int_equal(c.next_timeout, DHCP_NEVER);

	/* Bad events. */
	assert_int_equal(dhcp_client_handle(&c, &(DhcpEvent) { .type = DHCP_EVENT_PACKET }, 0, &a), -EINVAL);
	assert_int_equal(dhcp_client_handle(&c, &(DhcpEvent) { .type = 42 }, 0, &a), -EINVAL);
	assert_string_equal(dhcp_state_to_string(DHCP_STATE_REBINDING), "rebinding");
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_acquire),
		cmocka_unit_test(test_requesting_gives_up_and_nak),
		cmocka_unit_test(test_renew_rebind_expire),
		cmocka_unit_test(test_renew_nak_and_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
