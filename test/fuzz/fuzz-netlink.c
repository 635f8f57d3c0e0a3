/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the parsers of kernel replies: the input is a datagram as recv() on a NETLINK_ROUTE
 * socket returns it, a stream of nlmsghdr. Every message goes to every object parser (link,
 * link kind details, VRF, address, route, neighbour/FDB, rule, qdisc) and to the NLMSG_ERROR /
 * extended-ACK parser, whatever its type says: a parser must reject what is not its own. Then
 * the same datagram is read by the multicast listener (nl_monitor_process) through a socketpair,
 * which is the path weftd takes for every rtnetlink event.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-kinds.h"
#include "shared/nl/nl-rule.h"
#include "shared/nl/nl-tc.h"
#include "shared/nl/nl-vrf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The kernel's largest dump skb is 32 KiB unless one object is bigger. */
#define MAX_INPUT (64 * 1024)

static void check_str(const char *s, size_t size) {
	if (strnlen(s, size) >= size)
		abort();
}

static void check_prefix(const IpPrefix *p) {
	if (p->addr.family != AF_UNSPEC && p->len > ip_family_bits(p->addr.family))
		abort();
}

static void parse_all(const struct nlmsghdr *nlh) {
	union {
		NlLink link;
		NlLinkInfo info;
		NlVrf vrf;
		NlAddr addr;
		NlRoute route;
		NlNeigh neigh;
		NlRule rule;
		NlQdisc qdisc;
	} u;

	if (nl_parse_link(nlh, &u.link) >= 0) {
		check_str(u.link.name, sizeof(u.link.name));
		check_str(u.link.kind, sizeof(u.link.kind));
	}
	if (nl_parse_link_info(nlh, &u.info) >= 0) {
		check_str(u.info.kind, sizeof(u.info.kind));
		check_str(u.info.alias, sizeof(u.info.alias));
	}
	(void) nl_parse_vrf(nlh, &u.vrf);
	if (nl_parse_addr(nlh, &u.addr) >= 0)
		check_prefix(&u.addr.prefix);
	if (nl_parse_route(nlh, &u.route) >= 0)
		check_prefix(&u.route.dst);
	(void) nl_parse_neigh(nlh, &u.neigh);
	if (nl_parse_rule(nlh, &u.rule) >= 0)
		check_prefix(&u.rule.src);
	if (nl_parse_qdisc(nlh, &u.qdisc) >= 0)
		check_str(u.qdisc.kind, sizeof(u.qdisc.kind));
}

static int on_link(uint16_t type, const NlLink *l, void *userdata) {
	check_str(l->name, sizeof(l->name));
	return 0;
}
static int on_route(uint16_t type, const NlRoute *r, void *userdata) {
	check_prefix(&r->dst);
	return 0;
}
static int on_neigh(uint16_t type, const NlNeigh *n, void *userdata) {
	return 0;
}
static int on_addr(uint16_t type, const NlAddr *a, void *userdata) {
	check_prefix(&a->prefix);
	return 0;
}

/* One socketpair for the whole run: the listener's end is non-blocking like nl_monitor_open's. */
static int pair[2] = { -1, -1 };

static void monitor(const void *buf, size_t size) {
	static const NlMonitorCallbacks cb = { on_link, on_route, on_neigh, on_addr };
	NlSock s = { .fd = -1 };
	int r;

	if (pair[0] < 0 && socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
		return;
	if (send(pair[1], buf, size, 0) != (ssize_t) size)
		return;
	s.fd = pair[0];
	/* Small on purpose: the peek-and-grow path runs for most inputs. */
	s.rbuf_size = 256;
	s.rbuf = malloc(s.rbuf_size);
	if (!s.rbuf)
		abort();
	r = nl_monitor_process(&s, &cb, NULL);
	if (r < 0)
		abort(); /* callbacks never fail and the socket cannot overrun */
	free(s.rbuf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	NlSock s = {};
	void *buf;
	int len;

	if (size > MAX_INPUT)
		return 0;
	/* recv() fills an aligned buffer; so do we. */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);

	len = (int) size;
	for (const struct nlmsghdr *m = buf; nl_msg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
		parse_all(m);
		if (nl_handle_error(&s, m) > 0)
			abort(); /* 0 or -errno only */
		check_str(s.extack, sizeof(s.extack));
	}
	monitor(buf, size);
	free(buf);
	return 0;
}
