/* SPDX-License-Identifier: Apache-2.0 */
/* The DHCPv4 client state machine: pure, clock-free, socket-free (see dhcp-client.h). */

#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "shared/dhcp/dhcp-client.h"

#define FAST_TRIES 4
#define FAST_DELAY (2 * DHCP_USEC_PER_SEC)
#define SLOW_DELAY0 (4 * DHCP_USEC_PER_SEC)
#define JITTER (1 * DHCP_USEC_PER_SEC)
#define RENEW_MIN (4 * DHCP_USEC_PER_SEC)

const char *dhcp_state_to_string(DhcpState s) {
	static const char *const names[_DHCP_STATE_MAX] = {
		[DHCP_STATE_INIT] = "init",
		[DHCP_STATE_SELECTING] = "selecting",
		[DHCP_STATE_REQUESTING] = "requesting",
		[DHCP_STATE_BOUND] = "bound",
		[DHCP_STATE_RENEWING] = "renewing",
		[DHCP_STATE_REBINDING] = "rebinding",
		[DHCP_STATE_STOPPED] = "stopped",
	};
	return (unsigned) s < _DHCP_STATE_MAX ? names[s] : "unknown";
}

static uint32_t rng_next(DhcpClient *c) {
	uint32_t x = c->rng;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return c->rng = x;
}

void dhcp_client_init(DhcpClient *c, const uint8_t mac[6], uint32_t seed, uint64_t resend_max_usec) {
	*c = (DhcpClient) {
		.state = DHCP_STATE_INIT,
		.rng = seed ? seed : 0x9e3779b9u,
		.resend_max = resend_max_usec ? resend_max_usec : 62 * DHCP_USEC_PER_SEC,
		.next_timeout = DHCP_NEVER,
	};
	memcpy(c->mac, mac, 6);
}

uint64_t dhcp_backoff_usec(unsigned n, uint64_t resend_max) {
	uint64_t d = SLOW_DELAY0;

	if (n <= FAST_TRIES)
		return FAST_DELAY;
	for (unsigned i = FAST_TRIES + 1; i < n && d < resend_max; i++)
		d *= 2;
	return MIN(d, MAX(resend_max, SLOW_DELAY0));
}

static uint64_t jittered(DhcpClient *c, uint64_t d) {
	/* Uniform in [d - 1 s, d + 1 s). */
	uint64_t j = (uint64_t) rng_next(c) % (2 * JITTER);
	return d + j > JITTER ? d + j - JITTER : 1;
}

/* Half of what is left until `until`, at least RENEW_MIN, never past `until`. */
static uint64_t renew_next(uint64_t now, uint64_t until) {
	uint64_t left = until > now ? until - now : 0;
	return now + MIN(left, MAX(left / 2, RENEW_MIN));
}

static void new_exchange(DhcpClient *c, uint64_t now) {
	c->xid = rng_next(c);
	c->exchange_start = now;
}

static void start_selecting(DhcpClient *c, uint64_t now, DhcpActions *a) {
	c->state = DHCP_STATE_SELECTING;
	c->offered.s_addr = c->offer_server.s_addr = 0;
	c->req_tries = 0;
	new_exchange(c, now);
	c->attempt++;
	a->send = DHCP_SEND_DISCOVER;
	c->next_timeout = now + jittered(c, dhcp_backoff_usec(c->attempt, c->resend_max));
}

static void lose_lease(DhcpClient *c, DhcpActions *a) {
	if (c->has_lease)
		c->prev_address = c->lease.address;
	c->has_lease = false;
	a->lost = true;
}

static void bind_lease(DhcpClient *c, const DhcpLease *l, uint64_t now, DhcpActions *a) {
	c->lease = *l;
	c->has_lease = true;
	c->state = DHCP_STATE_BOUND;
	c->attempt = 0;
	c->req_tries = 0;
	if (l->lease_time == UINT32_MAX) {
		c->t1_at = c->t2_at = c->expire_at = DHCP_NEVER;
	} else {
		c->t1_at = now + (uint64_t) l->t1 * DHCP_USEC_PER_SEC;
		c->t2_at = now + (uint64_t) l->t2 * DHCP_USEC_PER_SEC;
		c->expire_at = now + (uint64_t) l->lease_time * DHCP_USEC_PER_SEC;
	}
	c->next_timeout = c->t1_at;
	a->bound = true;
}

static void on_timeout(DhcpClient *c, uint64_t now, DhcpActions *a) {
	switch (c->state) {
	case DHCP_STATE_SELECTING:
		c->attempt++;
		a->send = DHCP_SEND_DISCOVER;
		c->next_timeout = now + jittered(c, dhcp_backoff_usec(c->attempt, c->resend_max));
		break;
	case DHCP_STATE_REQUESTING:
		if (c->req_tries >= DHCP_REQUEST_TRIES) {
			a->note = "no DHCPACK for our DHCPREQUEST, starting over";
			start_selecting(c, now, a);
			break;
		}
		c->req_tries++;
		a->send = DHCP_SEND_REQUEST;
		c->next_timeout = now + jittered(c, FAST_DELAY);
		break;
	case DHCP_STATE_BOUND:
		if (now < c->t1_at) {
			c->next_timeout = c->t1_at;
			break;
		}
		c->state = DHCP_STATE_RENEWING;
		new_exchange(c, now);
		a->send = DHCP_SEND_RENEW;
		a->unicast = true;
		c->next_timeout = renew_next(now, c->t2_at);
		break;
	case DHCP_STATE_RENEWING:
		if (now >= c->t2_at) {
			c->state = DHCP_STATE_REBINDING;
			new_exchange(c, now);
			a->send = DHCP_SEND_REBIND;
			a->note = "no answer from the leasing server, rebinding";
			c->next_timeout = renew_next(now, c->expire_at);
			break;
		}
		a->send = DHCP_SEND_RENEW;
		a->unicast = true;
		c->next_timeout = renew_next(now, c->t2_at);
		break;
	case DHCP_STATE_REBINDING:
		if (now >= c->expire_at) {
			a->note = "lease expired, acquiring a new one";
			lose_lease(c, a);
			c->attempt = 0;
			start_selecting(c, now, a);
			break;
		}
		a->send = DHCP_SEND_REBIND;
		c->next_timeout = renew_next(now, c->expire_at);
		break;
	default: c->next_timeout = DHCP_NEVER; break;
	}
}

static void on_packet(DhcpClient *c, const DhcpMessage *m, struct in_addr src, uint64_t now, DhcpActions *a) {
	DhcpLease l;
	int r;

	if (c->state == DHCP_STATE_INIT || c->state == DHCP_STATE_STOPPED || c->state == DHCP_STATE_BOUND) {
		a->note = "not waiting for a reply";
		return;
	}
	if (m->op != BOOTREPLY || m->xid != c->xid || memcmp(m->chaddr, c->mac, 6) != 0) {
		a->note = "not for this client (op, xid or chaddr)";
		return;
	}

	switch (c->state) {
	case DHCP_STATE_SELECTING:
		if (m->type != DHCP_OFFER) {
			a->note = "expected DHCPOFFER";
			return;
		}
		/* Validate as a lease now: an offer we could not use is not worth a REQUEST. */
		r = dhcp_lease_from_message(m, src, &l);
		if (r < 0) {
			a->note = "DHCPOFFER without a usable address, lease time or server identifier";
			return;
		}
		c->offered = l.address;
		c->offer_server = l.server_id;
		c->state = DHCP_STATE_REQUESTING;
		c->req_tries = 1;
		a->send = DHCP_SEND_REQUEST;
		c->next_timeout = now + jittered(c, FAST_DELAY);
		break;

	case DHCP_STATE_REQUESTING:
	case DHCP_STATE_RENEWING:
	case DHCP_STATE_REBINDING: {
		struct in_addr want_server = c->state == DHCP_STATE_REQUESTING ? c->offer_server : c->lease.server_id;
		struct in_addr sid;

		if (m->type != DHCP_ACK && m->type != DHCP_NAK) {
			a->note = "expected DHCPACK or DHCPNAK";
			return;
		}
		/* In REQUESTING and RENEWING only the chosen server may answer; in REBINDING any. */
		if (c->state != DHCP_STATE_REBINDING && dhcp_message_option_addr(m, DHCP_OPT_SERVER_ID, &sid) == 0 &&
		    sid.s_addr != want_server.s_addr) {
			a->note = "reply from another server";
			return;
		}
		if (m->type == DHCP_NAK) {
			a->note = "DHCPNAK";
			if (c->state != DHCP_STATE_REQUESTING)
				lose_lease(c, a);
			start_selecting(c, now, a);
			break;
		}
		r = dhcp_lease_from_message(m, src, &l);
		if (r < 0) {
			a->note = "DHCPACK without a usable address, lease time or server identifier";
			return;
		}
		if (c->state == DHCP_STATE_REQUESTING && l.address.s_addr != c->offered.s_addr) {
			a->note = "DHCPACK for an address we did not request";
			return;
		}
		if (c->has_lease && l.address.s_addr != c->lease.address.s_addr) {
			a->note = "server changed our address";
			lose_lease(c, a);
		}
		bind_lease(c, &l, now, a);
		break;
	}
	default: break;
	}
}

int dhcp_client_handle(DhcpClient *c, const DhcpEvent *ev, uint64_t now, DhcpActions *ret) {
	DhcpActions a = {};

	switch (ev->type) {
	case DHCP_EVENT_START:
		if (c->state != DHCP_STATE_INIT && c->state != DHCP_STATE_STOPPED) {
			a.note = "already started";
			break;
		}
		c->attempt = 0;
		start_selecting(c, now, &a);
		break;
	case DHCP_EVENT_TIMEOUT: on_timeout(c, now, &a); break;
	case DHCP_EVENT_PACKET:
		if (!ev->msg)
			return -EINVAL;
		on_packet(c, ev->msg, ev->src, now, &a);
		break;
	case DHCP_EVENT_STOP:
		if (c->has_lease) {
			a.send = DHCP_SEND_RELEASE;
			a.unicast = true;
		}
		c->state = DHCP_STATE_STOPPED;
		c->next_timeout = DHCP_NEVER;
		break;
	default: return -EINVAL;
	}
	a.need_socket = c->state == DHCP_STATE_SELECTING || c->state == DHCP_STATE_REQUESTING ||
			c->state == DHCP_STATE_RENEWING || c->state == DHCP_STATE_REBINDING;
	*ret = a;
	return 0;
}

void dhcp_client_fill_build(const DhcpClient *c, DhcpSend what, uint64_t now, DhcpBuild *b) {
	uint64_t secs = now > c->exchange_start ? (now - c->exchange_start) / DHCP_USEC_PER_SEC : 0;

	b->xid = c->xid;
	b->secs = (uint16_t) MIN(secs, 0xffffu);
	memcpy(b->mac, c->mac, 6);
	b->ciaddr.s_addr = b->requested_ip.s_addr = b->server_id.s_addr = 0;
	switch (what) {
	case DHCP_SEND_DISCOVER:
		b->type = DHCP_DISCOVER;
		/* Ask for the address we had (after expiry/NAK): servers usually give it back. */
		b->requested_ip = c->prev_address;
		break;
	case DHCP_SEND_REQUEST:
		b->type = DHCP_REQUEST;
		b->requested_ip = c->offered;
		b->server_id = c->offer_server;
		break;
	case DHCP_SEND_RENEW:
	case DHCP_SEND_REBIND:
		b->type = DHCP_REQUEST;
		b->ciaddr = c->lease.address;
		break;
	case DHCP_SEND_RELEASE:
		b->type = DHCP_RELEASE;
		b->ciaddr = c->lease.address;
		b->server_id = c->lease.server_id;
		b->secs = 0;
		break;
	default: b->type = 0; break;
	}
}
