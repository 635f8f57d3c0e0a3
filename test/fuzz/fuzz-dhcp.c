/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what the dhcp daemon reads off its packet socket: the IPv4/UDP frame (dhcp_frame_parse),
 * the BOOTP/DHCP message with option concatenation and overload (dhcp_message_parse), the lease
 * an OFFER/ACK grants (dhcp_lease_from_message, routes of options 121 and 33), and the client
 * state machine fed with those replies.
 *
 * Input: the whole input is first tried as a frame and as a bare message. Then it is read as
 * records [ctl][len hi][len lo][len bytes] driving one client from START:
 *   ctl bit 0  the record is an IPv4 frame (else a BOOTP payload)
 *       bit 1  patch op/xid/chaddr to the client's, so the reply is "for us"
 *       bit 2  verify the UDP checksum
 *       bit 3  fire the client's timer before the record
 *       bit 4  STOP after the record
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/dhcp/dhcp-client.h"
#include "shared/dhcp/dhcp-message.h"
#include "shared/dhcp/dhcp-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A jumbo frame is the most a packet socket hands us. */
#define MAX_INPUT (16 * 1024)
#define MAX_RECORDS 32

static const uint8_t MAC[6] = { 0x02, 0x42, 0xac, 0x11, 0x00, 0x02 };

static void check_lease(const DhcpLease *l) {
	if (l->address.s_addr == 0 || l->server_id.s_addr == 0 || l->lease_time == 0)
		abort();
	if (l->has_mask && l->prefixlen > 32)
		abort();
	if (l->lease_time != UINT32_MAX && !(l->t1 <= l->t2 && l->t2 <= l->lease_time))
		abort();
	if (l->n_routes > DHCP_ROUTES_MAX)
		abort();
	for (size_t i = 0; i < l->n_routes; i++) {
		const DhcpRoute *r = &l->routes[i];
		uint32_t mask = r->len == 0 ? 0 : ~0u << (32 - r->len);

		if (r->len > 32 || (ntohl(r->dst.s_addr) & ~mask) != 0)
			abort();
	}
}

/* Everything a successfully parsed message offers a reader must stay inside the message. */
static void check_message(const DhcpMessage *m) {
	struct in_addr a;
	uint32_t u;

	if (m->type < DHCP_DISCOVER || m->type > DHCP_INFORM || m->store_used > sizeof(m->store))
		abort();
	for (unsigned c = 0; c < 256; c++) {
		size_t len;
		const uint8_t *v = dhcp_message_option(m, (uint8_t) c, &len);

		if (v && (size_t) (v - m->store) + len > m->store_used)
			abort();
		(void) dhcp_message_option_u32(m, (uint8_t) c, &u);
		(void) dhcp_message_option_addr(m, (uint8_t) c, &a);
	}
	(void) dhcp_message_type_to_string(m->type);
}

static void parse_one(const uint8_t *buf, size_t len) {
	DhcpMessage m;
	DhcpLease l;
	DhcpRoute routes[4];

	if (dhcp_message_parse(buf, len, &m) < 0)
		return;
	check_message(&m);
	if (dhcp_lease_from_message(&m, (struct in_addr) { .s_addr = htonl(0x0a000001) }, &l) >= 0)
		check_lease(&l);
	if (dhcp_lease_from_message(&m, (struct in_addr) {}, &l) >= 0)
		check_lease(&l);
	/* Route parsers with a cap smaller than the input holds. */
	size_t vlen;
	const uint8_t *v = dhcp_message_option(&m, DHCP_OPT_CLASSLESS_ROUTES, &vlen);
	if (v && dhcp_parse_classless_routes(v, vlen, routes, 4) > 4)
		abort();
	v = dhcp_message_option(&m, DHCP_OPT_STATIC_ROUTES, &vlen);
	if (v && dhcp_parse_static_routes(v, vlen, routes, 4) > 4)
		abort();
}

/* What the client sends next must be a message we can parse back. */
static void check_send(const DhcpClient *c, DhcpSend what, uint64_t now) {
	static const uint8_t prl[] = DHCP_DEFAULT_PRL;
	uint8_t msg[DHCP_MSG_MAX], frame[DHCP_MSG_MAX + 64];
	DhcpBuild b = { .prl = prl, .n_prl = sizeof(prl) };
	DhcpMessage m;
	int n;

	if (what == DHCP_SEND_NONE)
		return;
	dhcp_client_fill_build(c, what, now, &b);
	n = dhcp_message_build(msg, sizeof(msg), &b);
	if (n < 0)
		abort();
	if (dhcp_message_parse(msg, (size_t) n, &m) < 0 || m.type != b.type || m.xid != b.xid)
		abort();
	if (dhcp_frame_build(frame, sizeof(frame), b.ciaddr, (struct in_addr) { .s_addr = INADDR_BROADCAST }, msg,
			     (size_t) n) < 0)
		abort();
}

static void feed(DhcpClient *c, const DhcpEvent *ev, uint64_t *now) {
	DhcpActions a;

	if (dhcp_client_handle(c, ev, *now, &a) < 0)
		abort();
	if (c->state >= _DHCP_STATE_MAX || (a.bound && !c->has_lease))
		abort();
	if (a.bound)
		check_lease(&c->lease);
	check_send(c, a.send, *now);
	(void) dhcp_state_to_string(c->state);
	*now += DHCP_USEC_PER_SEC / 10;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	const uint8_t *payload;
	size_t plen, off = 0;
	struct in_addr src;
	uint64_t now = 1000 * DHCP_USEC_PER_SEC;
	DhcpClient c;
	uint8_t *buf;

	if (size > MAX_INPUT)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;

	/* The whole input as one frame and as one message. */
	memcpy(buf, data, size);
	for (int csum = 0; csum < 2; csum++)
		if (dhcp_frame_parse(buf, size, csum, &payload, &plen, &src) >= 0) {
			if (payload < buf || payload + plen > buf + size)
				abort();
			parse_one(payload, plen);
		}
	parse_one(buf, size);

	/* Records driving one client. */
	dhcp_client_init(&c, MAC, 0x12345678, 16 * DHCP_USEC_PER_SEC);
	feed(&c, &(DhcpEvent) { .type = DHCP_EVENT_START }, &now);
	for (int n = 0; n < MAX_RECORDS && size - off >= 3; n++) {
		uint8_t ctl = data[off];
		size_t len = (size_t) data[off + 1] << 8 | data[off + 2];
		DhcpMessage m;

		off += 3;
		if (len > size - off)
			len = size - off;
		memcpy(buf, data + off, len);
		off += len;

		if ((ctl & 8) && c.next_timeout != DHCP_NEVER) {
			if (c.next_timeout > now)
				now = c.next_timeout;
			feed(&c, &(DhcpEvent) { .type = DHCP_EVENT_TIMEOUT }, &now);
		}
		if (ctl & 1) {
			if (dhcp_frame_parse(buf, len, ctl & 4, &payload, &plen, &src) < 0)
				continue;
		} else {
			payload = buf;
			plen = len;
			src.s_addr = htonl(0xc0a80001);
		}
		if ((ctl & 2) && plen >= DHCP_FIXED_LEN) {
			uint8_t *p = (uint8_t *) payload;
			uint32_t xid = htonl(c.xid);

			p[0] = BOOTREPLY;
			memcpy(p + 4, &xid, 4);
			memcpy(p + 28, MAC, 6);
		}
		if (dhcp_message_parse(payload, plen, &m) < 0)
			continue;
		check_message(&m);
		feed(&c, &(DhcpEvent) { .type = DHCP_EVENT_PACKET, .msg = &m, .src = src }, &now);
		if (ctl & 16)
			feed(&c, &(DhcpEvent) { .type = DHCP_EVENT_STOP }, &now);
	}
	free(buf);
	return 0;
}
