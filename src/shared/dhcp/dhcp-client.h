/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The DHCPv4 client state machine (RFC 2131 figure 5), as a pure function of
 * (state, event, now): it never reads a clock, never touches a socket and never sleeps. The
 * caller (the dhcp daemon) feeds it START/TIMEOUT/PACKET/STOP events, transmits what the
 * returned actions ask for (dhcp_client_fill_build() says what goes in the message), opens or
 * closes the packet socket as need_socket says, and arms its timer at c->next_timeout.
 *
 *   INIT --START--> SELECTING --OFFER--> REQUESTING --ACK--> BOUND --T1--> RENEWING --T2--> REBINDING
 *                      ^   ^                 | NAK / 4 tries     ^  <--ACK--'            |
 *                      |   '-----------------'                   '---------ACK-----------'
 *                      '---------------- NAK or lease expiry ("lost") ------------------'
 *   any --STOP--> STOPPED (sends RELEASE when a lease is held)
 *
 * Retransmission (SELECTING/REQUESTING): like the reference plugin, four fast retries ~2 s apart,
 * then 4 s doubling up to resend_max, each randomised by +/- 1 s (RFC 2131 4.1). RENEWING and
 * REBINDING retransmit after half the time left until T2 / expiry, but at least every 4 s
 * (RFC 2131 says 60 s; test and lab servers hand out leases shorter than that).
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/dhcp/dhcp-message.h"

#define DHCP_USEC_PER_SEC 1000000ULL
#define DHCP_NEVER UINT64_MAX
/* REQUESTs sent in REQUESTING before starting over with a DISCOVER. */
#define DHCP_REQUEST_TRIES 4

typedef enum DhcpState {
	DHCP_STATE_INIT,
	DHCP_STATE_SELECTING,
	DHCP_STATE_REQUESTING,
	DHCP_STATE_BOUND,
	DHCP_STATE_RENEWING,
	DHCP_STATE_REBINDING,
	DHCP_STATE_STOPPED,
	_DHCP_STATE_MAX,
} DhcpState;

const char *dhcp_state_to_string(DhcpState s);

typedef enum DhcpEventType {
	DHCP_EVENT_START,
	DHCP_EVENT_TIMEOUT, /* the caller's timer reached c->next_timeout */
	DHCP_EVENT_PACKET,  /* a parsed reply from the packet socket */
	DHCP_EVENT_STOP,    /* DEL/GC: release and stop */
} DhcpEventType;

typedef struct DhcpEvent {
	DhcpEventType type;
	const DhcpMessage *msg; /* PACKET */
	struct in_addr src;     /* PACKET: IP source of the reply (server id fallback) */
} DhcpEvent;

/* What to transmit now. */
typedef enum DhcpSend {
	DHCP_SEND_NONE,
	DHCP_SEND_DISCOVER,
	DHCP_SEND_REQUEST, /* SELECTING: broadcast, requested IP + server id */
	DHCP_SEND_RENEW,   /* RENEWING: unicast to the server, ciaddr set */
	DHCP_SEND_REBIND,  /* REBINDING: broadcast, ciaddr set */
	DHCP_SEND_RELEASE, /* unicast to the server, ciaddr set */
} DhcpSend;

typedef struct DhcpActions {
	DhcpSend send;
	bool unicast;     /* send to c->lease.server_id (and the server's MAC), else broadcast */
	bool bound;       /* a lease was acquired or extended: c->lease is current */
	bool lost;        /* the lease held so far is gone (NAK or expiry) */
	bool need_socket; /* the new state waits for replies */
	const char *note; /* what happened to an ignored packet, or a notable transition */
} DhcpActions;

typedef struct DhcpClient {
	DhcpState state;
	uint8_t mac[6];
	uint32_t xid;
	uint32_t rng;            /* xorshift32 state: xids and jitter */
	uint64_t resend_max;     /* usec */
	unsigned attempt;        /* transmissions of the current DISCOVER/REQUEST cycle */
	unsigned req_tries;      /* REQUESTs sent in REQUESTING */
	uint64_t exchange_start; /* for the secs field */
	uint64_t next_timeout;   /* absolute usec, DHCP_NEVER = none */
	struct in_addr offered, offer_server, prev_address;
	bool has_lease;
	DhcpLease lease;
	uint64_t t1_at, t2_at, expire_at;
} DhcpClient;

/* Sets up a client in INIT. seed must be non-zero for a useful RNG (0 is replaced). */
void dhcp_client_init(DhcpClient *c, const uint8_t mac[6], uint32_t seed, uint64_t resend_max_usec);

/* Feeds one event. Always returns 0 today and fills *ret; -EINVAL for an unknown event. */
int dhcp_client_handle(DhcpClient *c, const DhcpEvent *ev, uint64_t now, DhcpActions *ret);

/* Fills the per-message fields (type, xid, secs, mac, ciaddr, requested IP, server id) of the
 * message `what`; the caller adds the parameter request list, options and broadcast flag. */
void dhcp_client_fill_build(const DhcpClient *c, DhcpSend what, uint64_t now, DhcpBuild *b);

/* Retransmission delay before attempt n+1 after n transmissions (n >= 1), before jitter. */
uint64_t dhcp_backoff_usec(unsigned n, uint64_t resend_max);
