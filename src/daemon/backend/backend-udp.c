/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp: Flannel's first backend, for kernels without vxlan. One TUN device per node, weft0
 * (Flannel's flannel0), and weftd itself carries every packet the kernel routes into it to the
 * right node in a UDP datagram (default port 8285); the payload is the bare IP packet, as on
 * Flannel's wire.
 *
 *   TUN address         <our subnet network address>/32   (10.244.1.0/32), MTU underlay - 28
 *   per remote node     route  10.244.2.0/24 dev weft0 scope link proto 0xfc
 *   weftd               read(weft0) -> peer table -> sendto(<its public IP>:8285)
 *                       recvfrom(:8285) -> udp_inbound_check() -> write(weft0)
 *
 * The forwarding runs in weftd's one epoll loop: both fds are non-blocking, each wake-up moves a
 * bounded batch, and a full socket or TUN queue drops the packet as a NIC would (TCP recovers).
 * A thread would buy parallelism on a second core but would need the peer table locked against
 * the reconciler; this backend exists for kernels without vxlan, not for speed.
 *
 * The TUN is not persistent: it lives as long as weftd's fd, so a stopped weftd takes weft0 and
 * its routes with it (as flanneld does) and a restarted one creates it again; the reconciler then
 * puts the routes back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend-udp.h"
#include "daemon/backend/backend.h"
#include "shared/event/event-loop.h"
#include "shared/nl/nl-tun.h"

#define UDP_BATCH 64 /* packets per wake-up and direction: keeps the loop responsive */
#define UDP_SOCKBUF (4 << 20)

/* ---- pure parts (backend-udp.h) ---- */

void udp_peer_table_done(UdpPeerTable *t) {
	t->peers = mfree(t->peers);
	t->n = t->alloc = 0;
}

int udp_peer_table_add(UdpPeerTable *t, const IpPrefix *subnet, const IpAddr *public_ip) {
	if (t->n == t->alloc) {
		size_t na = t->alloc ? t->alloc * 2 : 16;
		UdpPeer *p = reallocarray(t->peers, na, sizeof(UdpPeer));
		if (!p)
			return -ENOMEM;
		t->peers = p;
		t->alloc = na;
	}
	t->peers[t->n++] = (UdpPeer) { .subnet = ip_prefix_mask(subnet), .public_ip = *public_ip };
	return 0;
}

static int peer_cmp(const void *x, const void *y) {
	const UdpPeer *a = x, *b = y;

	return ip_addr_cmp(&a->subnet.addr, &b->subnet.addr);
}

void udp_peer_table_sort(UdpPeerTable *t) {
	if (t->n > 1)
		qsort(t->peers, t->n, sizeof(UdpPeer), peer_cmp);
}

const UdpPeer *udp_peer_table_lookup(const UdpPeerTable *t, const IpAddr *dst) {
	size_t lo = 0, hi = t->n;

	/* The subnets do not overlap, so the only candidate is the last one starting at or below
	 * dst. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ip_addr_cmp(&t->peers[mid].subnet.addr, dst) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const UdpPeer *p = &t->peers[lo - 1];
	return p->subnet.addr.family == dst->family && ip_prefix_contains(&p->subnet, dst) ? p : NULL;
}

int udp_packet_addrs(const void *pkt, size_t len, IpAddr *ret_src, IpAddr *ret_dst) {
	const uint8_t *p = pkt;

	switch (nl_tun_packet_version(pkt, len)) {
	case 4:
		*ret_src = (IpAddr) { .family = AF_INET };
		*ret_dst = (IpAddr) { .family = AF_INET };
		memcpy(ret_src->bytes, p + 12, 4);
		memcpy(ret_dst->bytes, p + 16, 4);
		return 0;
	case 6:
		*ret_src = (IpAddr) { .family = AF_INET6 };
		*ret_dst = (IpAddr) { .family = AF_INET6 };
		memcpy(ret_src->bytes, p + 8, 16);
		memcpy(ret_dst->bytes, p + 24, 16);
		return 0;
	}
	return -EBADMSG;
}

const char *udp_inbound_verdict_to_string(UdpInboundVerdict v) {
	static const char *const names[_UDP_INBOUND_MAX] = {
		[UDP_INBOUND_OK] = "ok",
		[UDP_INBOUND_MALFORMED] = "malformed",
		[UDP_INBOUND_NOT_FOR_US] = "not_for_us",
		[UDP_INBOUND_SPOOFED] = "spoofed",
	};
	return (unsigned) v < _UDP_INBOUND_MAX ? names[v] : NULL;
}

static bool in_prefix(const IpPrefix *p, const IpAddr *a) {
	return p && p->addr.family == a->family && ip_prefix_contains(p, a);
}

UdpInboundVerdict udp_inbound_check(const UdpPeerTable *t, const IpPrefix *self4, const IpPrefix *self6,
				    const IpAddr *sender, const void *pkt, size_t len) {
	const UdpPeer *peer;
	IpAddr src, dst;

	if (udp_packet_addrs(pkt, len, &src, &dst) < 0)
		return UDP_INBOUND_MALFORMED;
	if (!in_prefix(self4, &dst) && !in_prefix(self6, &dst))
		return UDP_INBOUND_NOT_FOR_US;
	peer = udp_peer_table_lookup(t, &src);
	if (!peer || !ip_addr_equal(&peer->public_ip, sender))
		return UDP_INBOUND_SPOOFED;
	return UDP_INBOUND_OK;
}

/* ---- the device, the socket and the forwarding ---- */

/* The kind's state (BackendOps.object_size). */
typedef struct UdpBackend {
	bool started; /* ensure() has run: /metrics reports the counters from then on */
	int tun_fd, sock_fd;
	int ifindex;
	EventSource *tun_io, *sock_io;
	UdpPeerTable peers, pending; /* pending: filled by render(), swapped in by commit() */
	uint64_t tx, rx, drop_no_peer, drop_send, drop_inbound[_UDP_INBOUND_MAX];
	uint8_t buf[65536];
} UdpBackend;

static UdpBackend *udp(const Backend *b) {
	return b->state;
}

static int udp_init(Backend *b) {
	UdpBackend *u = udp(b);

	u->tun_fd = u->sock_fd = -EBADF;
	return 0;
}

/* Closes the TUN and the socket (the kernel then removes weft0 and its routes). */
static void udp_done(Backend *b) {
	UdpBackend *u = udp(b);

	event_source_free(u->tun_io);
	event_source_free(u->sock_io);
	if (u->tun_fd >= 0)
		close(u->tun_fd);
	if (u->sock_fd >= 0)
		close(u->sock_fd);
	udp_peer_table_done(&u->peers);
	udp_peer_table_done(&u->pending);
}

static socklen_t sockaddr_from(const IpAddr *a, uint16_t port, struct sockaddr_storage *ss) {
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htobe16(port);
		s6->sin6_addr = a->in6;
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *) ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htobe16(port);
	s4->sin_addr = a->in;
	return sizeof(*s4);
}

static IpAddr sockaddr_to(const struct sockaddr_storage *ss) {
	IpAddr a = {};

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *) ss;
		a.family = AF_INET6;
		a.in6 = s6->sin6_addr;
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *) ss;
		a.family = AF_INET;
		a.in = s4->sin_addr;
	}
	return a;
}

/* kernel -> weft0 -> us -> the peer's UDP port */
static int on_tun(EventSource *s, int fd, uint32_t revents, void *userdata) {
	Backend *b = userdata;
	UdpBackend *u = udp(b);
	uint16_t port = b->config.port ?: UDP_BACKEND_DEFAULT_PORT;

	for (int i = 0; i < UDP_BATCH; i++) {
		struct sockaddr_storage ss;
		const UdpPeer *peer;
		IpAddr src, dst;
		ssize_t n;

		n = read(fd, u->buf, sizeof(u->buf));
		if (n < 0)
			break; /* EAGAIN: drained; anything else is retried on the next wake-up */
		if (udp_packet_addrs(u->buf, (size_t) n, &src, &dst) < 0 ||
		    !(peer = udp_peer_table_lookup(&u->peers, &dst))) {
			/* a route to weft0 outlived its peer for a moment (the next pass removes it) */
			u->drop_no_peer++;
			continue;
		}
		socklen_t sl = sockaddr_from(&peer->public_ip, port, &ss);
		if (sendto(u->sock_fd, u->buf, (size_t) n, MSG_DONTWAIT, (struct sockaddr *) &ss, sl) < 0)
			u->drop_send++;
		else
			u->tx++;
	}
	return 0;
}

/* the peer's datagram -> checks -> weft0 -> kernel */
static int on_sock(EventSource *s, int fd, uint32_t revents, void *userdata) {
	Backend *b = userdata;
	UdpBackend *u = udp(b);
	const IpPrefix *self4 = b->have_lease && ip_addr_is_set(&b->self.subnet.addr) ? &b->self.subnet : NULL;
	const IpPrefix *self6 = b->have_lease && ip_addr_is_set(&b->self.subnet6.addr) ? &b->self.subnet6 : NULL;

	for (int i = 0; i < UDP_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		UdpInboundVerdict v;
		IpAddr sender;
		ssize_t n;

		n = recvfrom(fd, u->buf, sizeof(u->buf), MSG_DONTWAIT, (struct sockaddr *) &ss, &sl);
		if (n < 0)
			break;
		sender = sockaddr_to(&ss);
		v = udp_inbound_check(&u->peers, self4, self6, &sender, u->buf, (size_t) n);
		if (v != UDP_INBOUND_OK) {
			if (u->drop_inbound[v]++ == 0)
				log_warning("udp: dropping a packet from %s (%s); counted, logged once per reason",
					    ip_addr_to_string(&sender, (char[IP_ADDR_STRLEN]) {}),
					    udp_inbound_verdict_to_string(v));
			continue;
		}
		if (write(u->tun_fd, u->buf, (size_t) n) < 0)
			u->drop_send++;
		else
			u->rx++;
	}
	return 0;
}

static void sock_set_buf(int fd, int opt_force, int opt, int size) {
	/* FORCE ignores rmem_max/wmem_max (weftd has CAP_NET_ADMIN); the plain one is the fallback. */
	if (setsockopt(fd, SOL_SOCKET, opt_force, &size, sizeof(size)) < 0)
		(void) setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

static int udp_open_socket(Backend *b, UdpBackend *u) {
	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_from(&b->public_ip, b->config.port ?: UDP_BACKEND_DEFAULT_PORT, &ss);
	int fd;

	fd = socket(b->public_ip.family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sock_set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, UDP_SOCKBUF);
	sock_set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, UDP_SOCKBUF);
	/* Bound to the public IP: peers check the sender address against our lease. */
	if (bind(fd, (struct sockaddr *) &ss, sl) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	u->sock_fd = fd;
	return 0;
}

/* Opens weft0 (again: someone may have deleted it behind our back, leaving our fd dead). */
static int udp_open_tun(Backend *b, UdpBackend *u) {
	NlLink l;
	int fd, r;

	u->tun_io = event_source_free(u->tun_io);
	if (u->tun_fd >= 0)
		close(u->tun_fd);
	u->tun_fd = -EBADF;
	u->ifindex = 0;

	fd = nl_tun_open(UDP_BACKEND_TUN_NAME);
	if (fd < 0)
		return fd;
	u->tun_fd = fd;
	r = nl_link_get(b->nl, UDP_BACKEND_TUN_NAME, 0, &l);
	if (r < 0)
		return r;
	u->ifindex = l.ifindex;
	return event_loop_add_io(b->loop, fd, EPOLLIN, on_tun, b, &u->tun_io);
}

static unsigned udp_overhead(const Backend *b) {
	return b->public_ip.family == AF_INET6 ? 48 : 28; /* UDP 8 + outer IP 20 | 40 */
}

static int udp_ensure(Backend *b) {
	UdpBackend *u = udp(b);
	NlLink l;
	int r;

	r = backend_refresh_mtu(b, udp_overhead(b));
	if (r < 0)
		return r;
	if (!b->loop)
		return -EINVAL;

	u->started = true;
	if (u->sock_fd < 0) {
		r = udp_open_socket(b, u);
		if (r < 0)
			return r;
		r = event_loop_add_io(b->loop, u->sock_fd, EPOLLIN, on_sock, b, &u->sock_io);
		if (r < 0)
			return r;
	}

	r = u->tun_fd >= 0 ? nl_link_get(b->nl, UDP_BACKEND_TUN_NAME, 0, &l) : -ENODEV;
	if (r == -ENODEV || (r >= 0 && l.ifindex != u->ifindex)) {
		if (u->tun_fd >= 0)
			log_warning("udp: %s was deleted behind our back; creating it again", UDP_BACKEND_TUN_NAME);
		r = udp_open_tun(b, u);
		if (r < 0)
			return r;
		r = nl_link_get(b->nl, UDP_BACKEND_TUN_NAME, 0, &l);
	}
	if (r < 0)
		return r;
	/* IFA_F_NODAD: a TUN has no link layer to detect duplicates on */
	return backend_device_finish(b, &l, true, IFA_F_NODAD);
}

static int udp_add_route(Backend *b, const NodeLease *remote, const IpPrefix *subnet, NodeObjects *o) {
	IpPrefix net = ip_prefix_mask(subnet);

	/* ip route replace 10.244.2.0/24 dev weft0 scope link proto 0xfc */
	o->routes[o->n_routes++] = (NlRoute) {
		.dst = net,
		.oif = udp(b)->ifindex,
		.protocol = WEFT_RTPROT,
		.scope = RT_SCOPE_LINK,
		.type = RTN_UNICAST,
	};
	return udp_peer_table_add(&udp(b)->pending, &net, &remote->public_ip);
}

static int udp_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	NodeObjects o = { .node_name = remote->node_name };
	int r;

	if (udp(b)->ifindex <= 0)
		return -ENODEV;
	/* one socket, bound to our public IP: a peer of the other family is unreachable */
	if (remote->public_ip.family != b->public_ip.family)
		return -EINVAL;
	if (ip_addr_is_set(&remote->subnet.addr)) {
		r = udp_add_route(b, remote, &remote->subnet, &o);
		if (r < 0)
			return r;
	}
	if (ip_addr_is_set(&remote->subnet6.addr)) {
		r = udp_add_route(b, remote, &remote->subnet6, &o);
		if (r < 0)
			return r;
	}
	*ret = o;
	return 0;
}

static void udp_commit(Backend *b) {
	UdpBackend *u = udp(b);

	udp_peer_table_sort(&u->pending);
	udp_peer_table_done(&u->peers);
	u->peers = u->pending;
	u->pending = (UdpPeerTable) {};
}

/* weft_udp_* lines for /metrics */
static void udp_render_metrics(const Backend *b, FILE *f) {
	const UdpBackend *u = udp(b);

	if (!u->started)
		return;
	fprintf(f,
		"# HELP weft_udp_packets_total Packets the udp backend carried (tx: TUN to peer, rx: peer to TUN).\n"
		"# TYPE weft_udp_packets_total counter\n"
		"weft_udp_packets_total{direction=\"tx\"} %" PRIu64 "\n"
		"weft_udp_packets_total{direction=\"rx\"} %" PRIu64 "\n"
		"# HELP weft_udp_dropped_total Packets the udp backend dropped, by reason.\n"
		"# TYPE weft_udp_dropped_total counter\n"
		"weft_udp_dropped_total{reason=\"no_peer\"} %" PRIu64 "\n"
		"weft_udp_dropped_total{reason=\"queue_full\"} %" PRIu64 "\n",
		u->tx, u->rx, u->drop_no_peer, u->drop_send);
	for (int v = UDP_INBOUND_MALFORMED; v < _UDP_INBOUND_MAX; v++)
		fprintf(f, "weft_udp_dropped_total{reason=\"%s\"} %" PRIu64 "\n", udp_inbound_verdict_to_string(v),
			u->drop_inbound[v]);
}

/* weft0 goes with weftd's fd; this removes one a weftd still running holds (its fd then dies) */
static int udp_uninstall(NlSock *nl) {
	return backend_delete_links(nl, "tun", UDP_BACKEND_TUN_NAME);
}

const BackendOps backend_udp_ops = {
	.name = "udp",
	.object_size = sizeof(UdpBackend),
	.init = udp_init,
	.done = udp_done,
	.ensure = udp_ensure,
	.render = udp_render,
	.commit = udp_commit,
	.render_metrics = udp_render_metrics,
	.uninstall = udp_uninstall,
};
