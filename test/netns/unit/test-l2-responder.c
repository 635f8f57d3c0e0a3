/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The L2 responder (src/daemon/loadbalancer/l2-responder.h) against real kernels' ARP and NDP.
 * The process creates two network namespaces and stays in "node" (where the responder runs, on
 * an event loop in a thread of its own); "outside" is a host on the same segment, driven through
 * fds and netlink:
 *
 *        node (both threads)                      outside
 *   +-----------------------------+        +----------------------------------+
 *   | l2n 02:00:00:00:aa:01 ======|==veth==|= l2o 02:00:00:00:bb:02           |
 *   |   (no address: the kernel   |        |   192.0.2.2/24, 2001:db8::2/64   |
 *   |    answers nothing here)    |        |   arp_accept=1                   |
 *   +-----------------------------+        +----------------------------------+
 *
 * The set is {192.0.2.10, 2001:db8::10}. The outside kernel resolves them (a UDP datagram sent
 * to each makes it ARP / solicit) and must end up with the node's MAC; an address outside the set
 * stays unresolved; a removed address is no longer answered; an added one is announced, and the
 * outside's stale entry holding a wrong MAC changes to the node's without the outside sending
 * anything (and each announcement goes out 3 times, no more). Hand-made frames from a packet
 * socket in outside check what the kernel cannot send: malformed requests (counted, not
 * answered), a request from one of our own addresses (not answered), DAD for our address
 * (defended to all nodes). Needs root; exits 77 otherwise.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_packet.h>
#include <linux/neighbour.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/loadbalancer/l2-responder.h"
#include "shared/dhcp/dhcp-message.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"

static const uint8_t node_mac[6] = { 0x02, 0, 0, 0, 0xaa, 0x01 };
static const uint8_t out_mac[6] = { 0x02, 0, 0, 0, 0xbb, 0x02 };
static const uint8_t wrong_mac[6] = { 0x02, 0, 0, 0, 0xee, 0xee };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static int node_fd = -EBADF, out_fd = -EBADF;
static NlSock *sn, *so;
static int node_if, out_if;
static EventLoop *loop;
static L2Responder *resp;
static int raw_out = -EBADF; /* AF_PACKET, ETH_P_ALL, on l2o in outside */

static IpAddr ip(const char *s) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

/* ---- the loop, in a thread of its own ----
 *
 * event_loop_run() runs until event_loop_exit(), once: the loop runs in a second thread for the
 * whole test, and everything that touches the responder runs there too (in_loop()), so the
 * responder is only ever used from one thread, as in weftd. The test thread waits on the kernels
 * (neighbour tables, a packet socket) and asserts. Both threads are in "node"; the test thread
 * enters "outside" only to open sockets there. */

static int call_pipe[2] = { -EBADF, -EBADF };
static pthread_t loop_thread;

typedef struct Call {
	void (*fn)(void *arg);
	void *arg;
	sem_t done;
} Call;

static int on_call(EventSource *s, int fd, uint32_t revents, void *userdata) {
	Call *c;

	if (read(fd, &c, sizeof(c)) == sizeof(c)) {
		c->fn(c->arg);
		sem_post(&c->done);
	}
	return 0;
}

/* Runs fn(arg) in the loop's thread and waits until it has. */
static void in_loop(void (*fn)(void *arg), void *arg) {
	Call c = { .fn = fn, .arg = arg }, *p = &c;

	assert_int_equal(sem_init(&c.done, 0, 0), 0);
	assert_int_equal(write(call_pipe[1], &p, sizeof(p)), (ssize_t) sizeof(p));
	while (sem_wait(&c.done) < 0)
		assert_int_equal(errno, EINTR);
	sem_destroy(&c.done);
}

static void *loop_main(void *arg) {
	(void) event_loop_run(loop);
	return NULL;
}

static void do_exit(void *arg) {
	event_loop_exit(loop, 0);
}

typedef struct NewCall {
	int ifindex;
	L2Responder *r;
	int ret;
} NewCall;

static void do_new(void *arg) {
	NewCall *c = arg;
	c->ret = l2_responder_new(loop, c->ifindex, &c->r);
}

static int responder_new(int ifindex, L2Responder **ret) {
	NewCall c = { .ifindex = ifindex };

	in_loop(do_new, &c);
	*ret = c.r;
	return c.ret;
}

static void do_free(void *arg) {
	L2Responder **r = arg;
	*r = l2_responder_free(*r);
}

static void responder_free(void) {
	in_loop(do_free, &resp);
}

typedef struct SetCall {
	const IpAddr *addrs;
	size_t n;
	int ret;
} SetCall;

static void do_set(void *arg) {
	SetCall *c = arg;
	c->ret = l2_responder_set(resp, c->addrs, c->n);
}

static void do_stats(void *arg) {
	l2_responder_stats(resp, arg);
}

typedef bool (*CondFn)(void *arg);

/* Waits until cond(arg) holds (true) or ms have passed (false). cond NULL: waits ms. */
static bool run_until(CondFn cond, void *arg, unsigned ms) {
	uint64_t deadline = now_usec() + ms * USEC_PER_MSEC;

	for (;;) {
		if (cond && cond(arg))
			return true;
		if (now_usec() >= deadline)
			return false;
		usleep(10 * 1000);
	}
}

/* ---- the outside host ---- */

typedef struct NeighQuery {
	IpAddr ip;
	bool found;
	uint8_t mac[6];
	uint16_t state;
} NeighQuery;

static int neigh_cb(const NlNeigh *n, void *userdata) {
	NeighQuery *q = userdata;

	if (n->ifindex == out_if && ip_addr_equal(&n->dst, &q->ip)) {
		q->found = true;
		memcpy(q->mac, n->mac, 6);
		q->state = n->state;
	}
	return 0;
}

static NeighQuery neigh_get(const IpAddr *a) {
	NeighQuery q = { .ip = *a };

	assert_int_equal(nl_neigh_dump(so, a->family, out_if, neigh_cb, &q), 0);
	return q;
}

/* The outside's entry for a holds the node's MAC in a state that asserts it (not INCOMPLETE/FAILED). */
static bool has_node_mac(void *arg) {
	NeighQuery q = neigh_get(arg);
	return q.found && !(q.state & (NUD_INCOMPLETE | NUD_FAILED | NUD_NONE)) && memcmp(q.mac, node_mac, 6) == 0;
}

/* One UDP datagram from outside to a: the outside kernel resolves a first (ARP or NS). */
static void outside_send_udp(const IpAddr *a) {
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} to = {};
	socklen_t len;
	int saved, fd;

	assert_int_equal(netns_enter(out_fd, &saved), 0);
	fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	netns_leave(saved);
	assert_true(fd >= 0);
	if (a->family == AF_INET) {
		to.in = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr = a->in };
		len = sizeof(to.in);
	} else {
		to.in6 = (struct sockaddr_in6) { .sin6_family = AF_INET6, .sin6_port = htons(9), .sin6_addr = a->in6 };
		len = sizeof(to.in6);
	}
	assert_int_equal(sendto(fd, "x", 1, 0, &to.sa, len), 1);
	close(fd);
}

/* Forgets the outside's entry for a (absent is fine). */
static void outside_forget(const IpAddr *a) {
	int r = nl_neigh_del(so, out_if, a);
	assert_true(r >= 0 || r == -ENOENT);
}

static L2ResponderStats stats(void) {
	L2ResponderStats s;
	in_loop(do_stats, &s);
	return s;
}

static void set_addrs(const char *const *addrs, size_t n) {
	IpAddr a[8];

	assert_true(n <= ELEMENTSOF(a));
	for (size_t i = 0; i < n; i++)
		a[i] = ip(addrs[i]);
	SetCall c = { .addrs = a, .n = n };

	in_loop(do_set, &c);
	assert_int_equal(c.ret, 0);
}

/* Waits until the announcements of a set() just made are over. */
static void wait_announcements(void) {
	(void) run_until(NULL, NULL, (L2_ANNOUNCE_ROUNDS - 1) * L2_ANNOUNCE_INTERVAL_USEC / USEC_PER_MSEC + 300);
}

/* ---- hand-made frames, from a packet socket in outside ---- */

static void raw_send(const uint8_t *f, size_t len) {
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = out_if, .sll_halen = 6 };

	memcpy(sll.sll_addr, f, 6);
	assert_int_equal(sendto(raw_out, f, len, 0, (struct sockaddr *) &sll, sizeof(sll)), (ssize_t) len);
}

/* A frame of ethertype type; for IPv6, a Neighbor Advertisement (the node's kernel sends its own
 * IPv6 traffic: MLD reports, router solicitations, DAD for its link-local address). */
static bool frame_is(const uint8_t *f, size_t n, uint16_t type) {
	if (n < 14 || f[12] != type >> 8 || f[13] != (type & 0xff))
		return false;
	return type != ETH_P_IPV6 || (n >= 55 && f[14 + 6] == 58 && f[54] == 136);
}

/* The next frame outside received (not one it sent) that frame_is(type), within ms. Returns its
 * length, 0 if none. */
static size_t raw_recv(uint16_t type, uint8_t *buf, size_t size, unsigned ms) {
	uint64_t deadline = now_usec() + ms * USEC_PER_MSEC;

	for (;;) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(raw_out, buf, size, MSG_DONTWAIT, (struct sockaddr *) &from, &fl);

		if (n >= 0 && from.sll_pkttype != PACKET_OUTGOING && frame_is(buf, n, type))
			return n;
		if (n < 0) {
			uint64_t now = now_usec();
			assert_int_equal(errno, EAGAIN);
			if (now >= deadline)
				return 0;
			(void) poll(&(struct pollfd) { .fd = raw_out, .events = POLLIN }, 1,
				    (int) ((deadline - now + 999) / 1000));
		}
	}
}

static void raw_drain(void) {
	uint8_t buf[2048];
	while (recv(raw_out, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		;
}

/* Recomputes the ICMPv6 checksum of the IPv6 frame f after an edit. */
static void ns_fix_csum(uint8_t *f) {
	uint8_t *ip6 = f + 14, *icmp = ip6 + 40;
	size_t plen = ip6[4] << 8 | ip6[5];
	uint8_t pseudo[8] = { 0, 0, plen >> 8, plen & 0xff, 0, 0, 0, 58 };
	uint32_t sum = 0;
	uint16_t c;

	icmp[2] = icmp[3] = 0;
	sum = dhcp_csum_add(sum, ip6 + 8, 32);
	sum = dhcp_csum_add(sum, pseudo, sizeof(pseudo));
	sum = dhcp_csum_add(sum, icmp, plen);
	c = ~dhcp_csum_fold(sum);
	icmp[2] = c >> 8;
	icmp[3] = c & 0xff;
}

/* A Neighbor Solicitation for target from (out_mac, src), to the target's solicited-node group;
 * src :: is DAD (then no source link-layer option). Returns the length. */
static size_t build_ns(uint8_t *f, const struct in6_addr *src, const struct in6_addr *target, uint8_t hop_limit) {
	bool dad = IN6_IS_ADDR_UNSPECIFIED(src);
	size_t plen = 24 + (dad ? 0 : 8);
	uint8_t *ip6 = f + 14, *icmp = ip6 + 40;
	uint8_t dst[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	memcpy(dst + 13, target->s6_addr + 13, 3);
	memset(f, 0, 14 + 40 + plen);
	memcpy(f, ((uint8_t[]) { 0x33, 0x33, 0xff, target->s6_addr[13], target->s6_addr[14], target->s6_addr[15] }), 6);
	memcpy(f + 6, out_mac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip6[0] = 0x60;
	ip6[5] = plen;
	ip6[6] = 58;
	ip6[7] = hop_limit;
	memcpy(ip6 + 8, src, 16);
	memcpy(ip6 + 24, dst, 16);
	icmp[0] = 135;
	memcpy(icmp + 8, target, 16);
	if (!dad) {
		icmp[24] = 1;
		icmp[25] = 1;
		memcpy(icmp + 26, out_mac, 6);
	}
	ns_fix_csum(f);
	return 14 + 40 + plen;
}

/* ---- the tests ---- */

static int setup(void **state) {
	assert_int_equal(responder_new(node_if, &resp), 0);
	raw_drain();
	return 0;
}

/* Also forgets what the outside learnt or still asks for, so no retry or reachability probe of
 * the outside's kernel lands in the next test's counts. */
static int teardown(void **state) {
	static const char *const used[] = { "192.0.2.10",   "192.0.2.11",   "192.0.2.20",
					    "192.0.2.21",   "2001:db8::10", "2001:db8::11",
					    "2001:db8::20", "2001:db8::21", "2001:db8::30" };

	responder_free();
	for (size_t i = 0; i < ELEMENTSOF(used); i++) {
		IpAddr a = ip(used[i]);
		outside_forget(&a);
	}
	return 0;
}

static void test_bad_interface(void **state) {
	L2Responder *r = NULL;

	assert_int_equal(responder_new(1 /* lo: not Ethernet */, &r), -EAFNOSUPPORT);
	assert_null(r);
	assert_int_equal(responder_new(9999, &r), -ENODEV);
	assert_null(l2_responder_free(NULL));
}

/* The outside kernel resolves both addresses of the set to the node's MAC; one outside the set
 * gets no answer. */
static void test_resolve(void **state) {
	static const char *const set[] = { "192.0.2.10", "2001:db8::10", "192.0.2.10" /* duplicate */ };
	IpAddr v4 = ip("192.0.2.10"), v6 = ip("2001:db8::10"), other4 = ip("192.0.2.11"), other6 = ip("2001:db8::11");
	L2ResponderStats s;

	set_addrs(set, ELEMENTSOF(set));
	/* Only replies may resolve the addresses here, not the announcements (which would also
	 * mend an entry a wrong reply left): wait until those are over. */
	wait_announcements();
	assert_int_equal(stats().garp_sent, 2 * L2_ANNOUNCE_ROUNDS);
	assert_int_equal(stats().unsol_na_sent, L2_ANNOUNCE_ROUNDS);
	outside_forget(&v4);
	outside_forget(&v6);
	outside_send_udp(&v4);
	outside_send_udp(&v6);
	outside_send_udp(&other4);
	outside_send_udp(&other6);
	assert_true(run_until(has_node_mac, &v4, 3000));
	assert_true(run_until(has_node_mac, &v6, 3000));
	s = stats();
	assert_true(s.arp_replies >= 1);
	assert_true(s.na_replies >= 1);
	/* the other two: asked for (the outside retries once a second), never answered */
	(void) run_until(NULL, NULL, 1200);
	assert_false(has_node_mac(&other4));
	assert_false(has_node_mac(&other6));
	assert_int_equal(stats().bad_packets, 0);
}

static bool dev_mcast_has(const char *hex) {
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/net/dev_mcast", "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "l2n") && strstr(line, hex))
			found = true;
	fclose(f);
	return found;
}

/* Removing an address stops its answers (and leaves its solicited-node group); the one kept is
 * still answered. */
static void test_remove(void **state) {
	static const char *const both[] = { "192.0.2.10", "2001:db8::10", "2001:db8::30" };
	static const char *const after[] = { "2001:db8::30" };
	IpAddr v4 = ip("192.0.2.10"), v6 = ip("2001:db8::10"), kept = ip("2001:db8::30");
	L2ResponderStats before;

	set_addrs(both, ELEMENTSOF(both));
	assert_true(dev_mcast_has("3333ff000010"));
	assert_true(dev_mcast_has("3333ff000030"));
	wait_announcements();
	set_addrs(after, ELEMENTSOF(after));
	assert_false(dev_mcast_has("3333ff000010"));
	assert_true(dev_mcast_has("3333ff000030"));
	before = stats();
	outside_forget(&v4);
	outside_forget(&v6);
	outside_forget(&kept);
	outside_send_udp(&v4);
	outside_send_udp(&v6);
	outside_send_udp(&kept);
	assert_true(run_until(has_node_mac, &kept, 3000));
	(void) run_until(NULL, NULL, 1200);
	assert_false(has_node_mac(&v4));
	assert_false(has_node_mac(&v6));
	assert_int_equal(stats().arp_replies, before.arp_replies);
	assert_true(stats().na_replies >= before.na_replies + 1);
	/* freeing leaves the groups */
	responder_free();
	assert_false(dev_mcast_has("3333ff000030"));
}

/* An address added is announced: the outside's entries, seeded with a wrong MAC, change to the
 * node's while the outside sends nothing; the announcement is repeated 3 times over ~2 s. */
static void test_announce(void **state) {
	static const char *const set[] = { "192.0.2.20", "2001:db8::20" };
	IpAddr v4 = ip("192.0.2.20"), v6 = ip("2001:db8::20");
	NeighQuery q;

	assert_int_equal(nl_neigh_add(so, out_if, &v4, wrong_mac, NUD_STALE, true), 0);
	assert_int_equal(nl_neigh_add(so, out_if, &v6, wrong_mac, NUD_STALE, true), 0);
	q = neigh_get(&v4);
	assert_true(q.found);
	assert_memory_equal(q.mac, wrong_mac, 6);

	set_addrs(set, ELEMENTSOF(set));
	/* the first round went out inside set() */
	assert_int_equal(stats().garp_sent, 2);
	assert_int_equal(stats().unsol_na_sent, 1);
	assert_true(run_until(has_node_mac, &v4, 500));
	assert_true(run_until(has_node_mac, &v6, 500));
	assert_int_equal(stats().arp_replies, 0);
	assert_int_equal(stats().na_replies, 0);

	/* the repeats, and no more; setting the same set again announces nothing new */
	set_addrs(set, ELEMENTSOF(set));
	(void) run_until(NULL, NULL, 2600);
	assert_int_equal(stats().garp_sent, 2 * L2_ANNOUNCE_ROUNDS);
	assert_int_equal(stats().unsol_na_sent, L2_ANNOUNCE_ROUNDS);
	outside_forget(&v6);
	outside_forget(&v4);
}

/* What one gratuitous ARP and one unsolicited NA look like on the wire. */
static void test_announce_frames(void **state) {
	static const char *const set[] = { "192.0.2.21", "2001:db8::21" };
	uint8_t f[2048];
	struct in6_addr t6 = ip("2001:db8::21").in6;
	size_t n;

	set_addrs(set, ELEMENTSOF(set));
	n = raw_recv(ETH_P_ARP, f, sizeof(f), 500);
	assert_true(n >= 42);
	assert_memory_equal(f, bcast, 6);
	assert_memory_equal(f + 6, node_mac, 6);
	assert_memory_equal(f + 14 + 8, node_mac, 6);                         /* sha */
	assert_memory_equal(f + 14 + 14, ((uint8_t[]) { 192, 0, 2, 21 }), 4); /* spa */
	assert_memory_equal(f + 14 + 24, ((uint8_t[]) { 192, 0, 2, 21 }), 4); /* tpa */
	n = raw_recv(ETH_P_IPV6, f, sizeof(f), 500);
	assert_int_equal(n, L2_NA_FRAME_LEN);
	assert_memory_equal(f, ((uint8_t[]) { 0x33, 0x33, 0, 0, 0, 1 }), 6);
	assert_memory_equal(f + 6, node_mac, 6);
	assert_int_equal(f[14 + 7], 255);              /* hop limit */
	assert_int_equal(f[54], 136);                  /* NA */
	assert_int_equal(f[54 + 4], 0x20);             /* override, not solicited */
	assert_memory_equal(f + 54 + 8, &t6, 16);      /* target */
	assert_memory_equal(f + 54 + 26, node_mac, 6); /* target link-layer address */
}

/* Malformed requests are counted and not answered; a request from one of our own addresses is
 * not answered; DAD for our address is defended to all nodes. */
static void test_hostile(void **state) {
	static const char *const set[] = { "192.0.2.10", "2001:db8::10" };
	struct in_addr v4 = ip("192.0.2.10").in, out4 = ip("192.0.2.2").in;
	struct in6_addr v6 = ip("2001:db8::10").in6, out6 = ip("2001:db8::2").in6, unspec = {};
	uint8_t f[128], r[2048];
	L2ResponderStats s0, s1;
	size_t n;

	set_addrs(set, ELEMENTSOF(set));
	wait_announcements();
	raw_drain();
	s0 = stats();

	/* a well-formed request is answered, to the asker, with the node's MAC */
	n = l2_build_arp(f, ARPOP_REQUEST, out_mac, &out4, bcast, &v4);
	raw_send(f, n);
	n = raw_recv(ETH_P_ARP, r, sizeof(r), 1000);
	assert_true(n >= 42);
	assert_memory_equal(r, out_mac, 6);
	assert_memory_equal(r + 6, node_mac, 6);
	assert_int_equal(r[14 + 7], ARPOP_REPLY);
	assert_memory_equal(r + 14 + 8, node_mac, 6);
	assert_memory_equal(r + 14 + 14, &v4, 4);
	assert_memory_equal(r + 14 + 18, out_mac, 6);
	assert_memory_equal(r + 14 + 24, &out4, 4);
	n = build_ns(f, &out6, &v6, 255);
	raw_send(f, n);
	n = raw_recv(ETH_P_IPV6, r, sizeof(r), 1000);
	assert_int_equal(n, L2_NA_FRAME_LEN);
	assert_memory_equal(r, out_mac, 6);
	assert_memory_equal(r + 6, node_mac, 6);
	assert_memory_equal(r + 14 + 24, &out6, 16);   /* to the solicitor */
	assert_int_equal(r[54 + 4], 0x60);             /* solicited, override */
	assert_memory_equal(r + 54 + 26, node_mac, 6); /* target link-layer address */
	s1 = stats();
	assert_int_equal(s1.arp_replies, s0.arp_replies + 1);
	assert_int_equal(s1.na_replies, s0.na_replies + 1);

	/* ARP: wrong hardware length; truncated */
	n = l2_build_arp(f, ARPOP_REQUEST, out_mac, &out4, bcast, &v4);
	f[14 + 4] = 5;
	raw_send(f, n);
	n = l2_build_arp(f, ARPOP_REQUEST, out_mac, &out4, bcast, &v4);
	raw_send(f, 30);
	/* NS: hop limit 64 (off-link); bad checksum; payload length past the frame; zero-length
	 * option; DAD with a source link-layer option (the checksum fixed up after each edit but one) */
	n = build_ns(f, &out6, &v6, 64);
	raw_send(f, n);
	n = build_ns(f, &out6, &v6, 255);
	f[54 + 2] ^= 0x55;
	raw_send(f, n);
	n = build_ns(f, &out6, &v6, 255);
	f[14 + 5] = 200;
	raw_send(f, n);
	n = build_ns(f, &out6, &v6, 255);
	f[54 + 25] = 0;
	ns_fix_csum(f);
	raw_send(f, n);
	n = build_ns(f, &out6, &v6, 255);
	memset(f + 14 + 8, 0, 16);
	memcpy(f + 14 + 24, (uint8_t[]) { 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 0x10 }, 16);
	ns_fix_csum(f);
	raw_send(f, n);
	/* to another station's MAC (the veth delivers it; the frame is not asked of us) */
	n = l2_build_arp(f, ARPOP_REQUEST, out_mac, &out4, bcast, &v4);
	memcpy(f, wrong_mac, 6);
	raw_send(f, n);
	/* the sender is one of our own addresses: someone else announcing it */
	n = l2_build_arp(f, ARPOP_REQUEST, out_mac, &v4, bcast, &v4);
	raw_send(f, n);
	n = build_ns(f, &v6, &v6, 255);
	raw_send(f, n);

	assert_int_equal(raw_recv(ETH_P_ARP, r, sizeof(r), 500), 0);
	assert_int_equal(raw_recv(ETH_P_IPV6, r, sizeof(r), 100), 0);
	s1 = stats();
	assert_int_equal(s1.bad_packets, s0.bad_packets + 7);
	assert_int_equal(s1.arp_replies, s0.arp_replies + 1);
	assert_int_equal(s1.na_replies, s0.na_replies + 1);

	/* DAD for our address: defended to all nodes, not solicited */
	n = build_ns(f, &unspec, &v6, 255);
	raw_send(f, n);
	n = raw_recv(ETH_P_IPV6, r, sizeof(r), 1000);
	assert_int_equal(n, L2_NA_FRAME_LEN);
	assert_memory_equal(r, ((uint8_t[]) { 0x33, 0x33, 0, 0, 0, 1 }), 6);
	assert_int_equal(r[54 + 4], 0x20);
	assert_int_equal(stats().na_replies, s0.na_replies + 2);
}

/* The packet layer alone: a reply built by l2_build_na parses as IPv6 but not as an NS; a built
 * request round-trips through the parser. */
static void test_packets(void **state) {
	struct in_addr a = ip("192.0.2.10").in, b = ip("192.0.2.2").in;
	struct in6_addr t = ip("2001:db8::10").in6, s6 = ip("2001:db8::2").in6;
	uint8_t f[128];
	L2Request q;
	size_t n;

	n = l2_build_arp(f, ARPOP_REQUEST, out_mac, &b, bcast, &a);
	assert_int_equal(l2_parse_arp(f, n, &q), 1);
	assert_int_equal(q.family, AF_INET);
	assert_memory_equal(&q.target.in, &a, 4);
	assert_memory_equal(&q.sender.in, &b, 4);
	assert_memory_equal(q.sender_mac, out_mac, 6);
	n = l2_build_arp(f, ARPOP_REPLY, out_mac, &b, bcast, &a);
	assert_int_equal(l2_parse_arp(f, n, &q), 0);
	assert_int_equal(l2_parse_arp(f, n - 1, &q), -EBADMSG);

	n = build_ns(f, &s6, &t, 255);
	assert_int_equal(l2_parse_ns(f, n, &q), 1);
	assert_memory_equal(&q.target.in6, &t, 16);
	assert_memory_equal(&q.sender.in6, &s6, 16);
	assert_int_equal(l2_parse_ns(f, n - 1, &q), -EBADMSG);
	n = l2_build_na(f, node_mac, &t, out_mac, &s6, true);
	assert_int_equal(l2_parse_ns(f, n, &q), 0);
	assert_int_equal(l2_parse_arp(f, n, &q), -EBADMSG);
}

static void link_up(NlSock *s, const char *name, const uint8_t mac[6], const char *const *addrs, int *ret_if) {
	NlLink l;

	assert_int_equal(nl_link_get(s, name, 0, &l), 0);
	assert_int_equal(nl_link_set_mac(s, l.ifindex, mac), 0);
	for (; addrs && *addrs; addrs++) {
		IpPrefix p;
		assert_int_equal(ip_prefix_parse(*addrs, &p), 0);
		assert_int_equal(nl_addr_add(s, l.ifindex, &p, IFA_F_NODAD), 0);
	}
	assert_int_equal(nl_link_set_up(s, l.ifindex, true), 0);
	*ret_if = l.ifindex;
}

static int group_setup(void **state) {
	static const char *const out_addrs[] = { "192.0.2.2/24", "2001:db8::2/64", NULL };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int saved;

	assert_int_equal(nl_veth_create(sn, "l2n", "l2o", out_fd, 0, NULL), 0);
	assert_int_equal(sysctl_write_netns(out_fd, "net/ipv4/conf/all/arp_accept", "1"), 0);
	assert_int_equal(sysctl_write_netns(out_fd, "net/ipv4/conf/default/arp_accept", "1"), 0);
	assert_int_equal(sysctl_write_netns(out_fd, "net/ipv4/conf/l2o/arp_accept", "1"), 0);
	link_up(sn, "l2n", node_mac, NULL, &node_if);
	link_up(so, "l2o", out_mac, out_addrs, &out_if);
	assert_int_equal(netns_enter(out_fd, &saved), 0);
	raw_out = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	netns_leave(saved);
	assert_true(raw_out >= 0);
	sll.sll_ifindex = out_if;
	assert_int_equal(bind(raw_out, (struct sockaddr *) &sll, sizeof(sll)), 0);
	/* the veth carrier comes up asynchronously: wait until the outside can send */
	for (int i = 0; i < 100; i++) {
		NlLink l;
		assert_int_equal(nl_link_get(so, NULL, out_if, &l), 0);
		if (l.operstate == 6 /* IF_OPER_UP */)
			break;
		usleep(20 * 1000);
	}
	return 0;
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packets),
		cmocka_unit_test(test_bad_interface),
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_announce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_announce_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
	};
	int r;

	if (geteuid() != 0) {
		printf("SKIP: test-l2-responder: needs root\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		printf("SKIP: test-l2-responder: unshare(CLONE_NEWNET): %m\n");
		return 77;
	}
	node_fd = netns_open_current();
	if (unshare(CLONE_NEWNET) < 0)
		return 1;
	out_fd = netns_open_current();
	if (node_fd < 0 || out_fd < 0 || setns(node_fd, CLONE_NEWNET) < 0)
		return 1;
	if (nl_sock_open(&sn) < 0 || nl_sock_open_netns(out_fd, &so) < 0 || event_loop_new(&loop) < 0)
		return 1;
	if (pipe2(call_pipe, O_CLOEXEC) < 0 ||
	    event_loop_add_io(loop, call_pipe[0], EPOLLIN, on_call, NULL, NULL) < 0 ||
	    pthread_create(&loop_thread, NULL, loop_main, NULL) != 0)
		return 1;

	r = cmocka_run_group_tests(tests, group_setup, NULL);
	in_loop(do_exit, NULL);
	pthread_join(loop_thread, NULL);
	safe_close(raw_out);
	event_loop_free(loop);
	safe_close(call_pipe[0]);
	safe_close(call_pipe[1]);
	nl_sock_free(so);
	nl_sock_free(sn);
	/* the namespaces (and the veth) go with their last fd */
	safe_close(out_fd);
	safe_close(node_fd);
	return r;
}
