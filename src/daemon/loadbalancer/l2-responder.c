/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/loadbalancer/l2-responder.h"
#include "shared/dhcp/dhcp-message.h"

#define ETH_HLEN_ 14
#define IP6_HLEN 40
#define ND_HLEN 24 /* type, code, checksum, flags/reserved, target */
#define ND_NS 135
#define ND_NA 136
#define ND_OPT_SLLA 1
#define ND_OPT_TLLA 2
#define ND_FLAG_SOLICITED 0x40
#define ND_FLAG_OVERRIDE 0x20

/* Frames read per wakeup before the loop gets a turn (epoll is level-triggered: the rest wake us
 * again at once). */
#define RECV_BURST 64

static const uint8_t mac_broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t mac_zero[6] = {};
static const uint8_t mac_all_nodes[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };
static const struct in6_addr ip6_all_nodes = { .s6_addr = { 0xff, 0x02, [15] = 0x01 } };

typedef struct Entry {
	IpAddr addr;
	unsigned announce_left; /* announcement rounds still to send */
	uint64_t announce_next; /* CLOCK_MONOTONIC usec of the next one */
} Entry;

struct L2Responder {
	EventLoop *loop;
	int ifindex;
	char ifname[IF_NAMESIZE];
	uint8_t mac[6];
	int arp_fd, nd_fd;
	EventSource *arp_src, *nd_src, *timer;
	Entry *entries; /* sorted by ip_addr_cmp, no duplicates */
	size_t n_entries;
	L2ResponderStats stats;
};

static uint16_t get16(const uint8_t *p) {
	return (uint16_t) (p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v) {
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static bool mac_is_multicast(const uint8_t mac[6]) {
	return mac[0] & 1;
}

/* ---- packet layer ---- */

int l2_parse_arp(const uint8_t *f, size_t len, L2Request *ret) {
	const uint8_t *a = f + ETH_HLEN_;
	uint16_t op;

	/* Ethernet pads short frames to 60 bytes: more than 42 is fine, less is truncated. */
	if (len < L2_ARP_FRAME_LEN || get16(f + 12) != ETH_P_ARP)
		return -EBADMSG;
	if (get16(a) != ARPHRD_ETHER || get16(a + 2) != ETH_P_IP || a[4] != 6 || a[5] != 4)
		return -EBADMSG;
	op = get16(a + 6);
	if (op == ARPOP_REPLY)
		return 0;
	if (op != ARPOP_REQUEST)
		return -EBADMSG;
	/* A multicast source or sender hardware address is never a station's (RFC 1812 3.3.2). */
	if (mac_is_multicast(f + 6) || mac_is_multicast(a + 8))
		return -EBADMSG;
	*ret = (L2Request) { .family = AF_INET, .sender.family = AF_INET, .target.family = AF_INET };
	memcpy(ret->eth_src, f + 6, 6);
	memcpy(ret->sender_mac, a + 8, 6);
	memcpy(&ret->sender.in, a + 14, 4);
	memcpy(&ret->target.in, a + 24, 4);
	return 1;
}

/* The ICMPv6 checksum of an IPv6 packet at ip (header included) whose payload is plen bytes:
 * folded, not inverted; 0xffff over a message whose checksum field is right. */
static uint16_t icmp6_sum(const uint8_t *ip, size_t plen) {
	uint8_t pseudo[8] = { 0, 0, plen >> 8, plen & 0xff, 0, 0, 0, IPPROTO_ICMPV6 };
	uint32_t sum = 0;

	sum = dhcp_csum_add(sum, ip + 8, 32); /* source and destination */
	sum = dhcp_csum_add(sum, pseudo, sizeof(pseudo));
	sum = dhcp_csum_add(sum, ip + IP6_HLEN, plen);
	return dhcp_csum_fold(sum);
}

static bool is_solicited_node(const struct in6_addr *a) {
	static const uint8_t prefix[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	return memcmp(a->s6_addr, prefix, sizeof(prefix)) == 0;
}

int l2_parse_ns(const uint8_t *f, size_t len, L2Request *ret) {
	const uint8_t *ip = f + ETH_HLEN_, *icmp = ip + IP6_HLEN, *slla = NULL;
	struct in6_addr src, dst, target;
	size_t plen, off;

	if (len < ETH_HLEN_ + IP6_HLEN || get16(f + 12) != ETH_P_IPV6 || (ip[0] >> 4) != 6)
		return -EBADMSG;
	plen = get16(ip + 4);
	/* Trailing bytes beyond the payload length are link padding; fewer are a truncated packet. */
	if (plen > len - ETH_HLEN_ - IP6_HLEN)
		return -EBADMSG;
	/* Extension headers before ICMPv6 are not followed: a valid NS carries none in practice,
	 * and the socket's filter does not let such a packet through anyway. */
	if (ip[6] != IPPROTO_ICMPV6 || plen < 1 || icmp[0] != ND_NS)
		return 0;
	/* RFC 4861 7.1.1 */
	if (ip[7] != 255 || plen < ND_HLEN || icmp[1] != 0 || icmp6_sum(ip, plen) != 0xffff)
		return -EBADMSG;
	memcpy(&src, ip + 8, 16);
	memcpy(&dst, ip + 24, 16);
	memcpy(&target, icmp + 8, 16);
	/* The reply goes to the frame's source when there is no source link-layer option. */
	if (IN6_IS_ADDR_MULTICAST(&target) || IN6_IS_ADDR_MULTICAST(&src) || mac_is_multicast(f + 6))
		return -EBADMSG;
	for (off = ND_HLEN; off < plen;) {
		size_t olen;

		if (plen - off < 2)
			return -EBADMSG;
		olen = icmp[off + 1] * 8u;
		if (olen == 0 || olen > plen - off)
			return -EBADMSG;
		if (icmp[off] == ND_OPT_SLLA) {
			/* Ethernet: one 8-byte unit, type, length and the 6-byte MAC. */
			if (olen != 8 || mac_is_multicast(icmp + off + 2))
				return -EBADMSG;
			slla = icmp + off + 2;
		}
		off += olen;
	}
	/* DAD (source unspecified): to the solicited-node group, without a source link-layer address. */
	if (IN6_IS_ADDR_UNSPECIFIED(&src) && (!is_solicited_node(&dst) || slla))
		return -EBADMSG;

	*ret = (L2Request) { .family = AF_INET6, .sender.family = AF_INET6, .target.family = AF_INET6 };
	memcpy(ret->eth_src, f + 6, 6);
	memcpy(ret->sender_mac, slla ?: f + 6, 6);
	ret->sender.in6 = src;
	ret->target.in6 = target;
	return 1;
}

static void put_eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type) {
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
}

size_t l2_build_arp(uint8_t buf[static L2_ARP_FRAME_LEN], uint16_t op, const uint8_t mac[6], const struct in_addr *ip,
		    const uint8_t dst_mac[6], const struct in_addr *dst_ip) {
	uint8_t *a = buf + ETH_HLEN_;

	put_eth(buf, dst_mac, mac, ETH_P_ARP);
	put16(a, ARPHRD_ETHER);
	put16(a + 2, ETH_P_IP);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, mac, 6);
	memcpy(a + 14, ip, 4);
	/* A request's target hardware address is unknown: zero (RFC 5227 2.3 for announcements). */
	memcpy(a + 18, op == ARPOP_REQUEST ? mac_zero : dst_mac, 6);
	memcpy(a + 24, dst_ip, 4);
	return L2_ARP_FRAME_LEN;
}

size_t l2_build_na(uint8_t buf[static L2_NA_FRAME_LEN], const uint8_t mac[6], const struct in6_addr *target,
		   const uint8_t dst_mac[6], const struct in6_addr *dst, bool solicited) {
	uint8_t *ip = buf + ETH_HLEN_, *icmp = ip + IP6_HLEN;
	const size_t plen = ND_HLEN + 8;

	memset(buf, 0, L2_NA_FRAME_LEN);
	put_eth(buf, dst_mac, mac, ETH_P_IPV6);
	ip[0] = 0x60;
	put16(ip + 4, plen);
	ip[6] = IPPROTO_ICMPV6;
	ip[7] = 255;
	/* From the target itself, as the kernel's own NAs are (ndisc_send_na). */
	memcpy(ip + 8, target, 16);
	memcpy(ip + 24, dst, 16);
	icmp[0] = ND_NA;
	icmp[4] = ND_FLAG_OVERRIDE | (solicited ? ND_FLAG_SOLICITED : 0);
	memcpy(icmp + 8, target, 16);
	icmp[ND_HLEN] = ND_OPT_TLLA;
	icmp[ND_HLEN + 1] = 1;
	memcpy(icmp + ND_HLEN + 2, mac, 6);
	put16(icmp + 2, (uint16_t) ~icmp6_sum(ip, plen));
	return L2_NA_FRAME_LEN;
}

/* ---- the responder ---- */

static const Entry *find(const L2Responder *r, const IpAddr *a) {
	size_t lo = 0, hi = r->n_entries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = ip_addr_cmp(a, &r->entries[mid].addr);
		if (c == 0)
			return &r->entries[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int send_frame(L2Responder *r, int fd, const uint8_t *f, size_t len) {
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = r->ifindex, .sll_halen = 6 };

	sll.sll_protocol = htons(get16(f + 12));
	memcpy(sll.sll_addr, f, 6);
	if (sendto(fd, f, len, 0, (struct sockaddr *) &sll, sizeof(sll)) < 0)
		return negative_errno();
	return 0;
}

static void answer(L2Responder *r, const L2Request *q) {
	char a[IP_ADDR_STRLEN], s[IP_ADDR_STRLEN];
	uint8_t f[L2_FRAME_MAX];
	size_t len;
	int k;

	if (!find(r, &q->target))
		return;
	/* Someone else claims one of our addresses (its gratuitous ARP, or a request from it): a
	 * conflict, never answered. */
	if (find(r, &q->sender)) {
		log_debug("%s: request for %s from %s, one of our own addresses: not answered", r->ifname,
			  ip_addr_to_string(&q->target, a), ip_addr_to_string(&q->sender, s));
		return;
	}
	if (q->family == AF_INET) {
		len = l2_build_arp(f, ARPOP_REPLY, r->mac, &q->target.in, q->sender_mac, &q->sender.in);
		k = send_frame(r, r->arp_fd, f, len);
		if (k >= 0)
			r->stats.arp_replies++;
	} else {
		/* DAD for our address: defend it to all nodes, unsolicited (RFC 4861 7.2.4). */
		bool dad = IN6_IS_ADDR_UNSPECIFIED(&q->sender.in6);
		len = l2_build_na(f, r->mac, &q->target.in6, dad ? mac_all_nodes : q->sender_mac,
				  dad ? &ip6_all_nodes : &q->sender.in6, !dad);
		k = send_frame(r, r->nd_fd, f, len);
		if (k >= 0)
			r->stats.na_replies++;
	}
	if (k < 0)
		log_warning_errno(k, "%s: failed to answer for %s: %m", r->ifname, ip_addr_to_string(&q->target, a));
}

static int on_packet(EventSource *s, int fd, uint32_t revents, void *userdata) {
	L2Responder *r = userdata;

	for (unsigned i = 0; i < RECV_BURST; i++) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		uint8_t buf[2048];
		L2Request q;
		ssize_t n;
		int k;

		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *) &from, &fl);
		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warning_errno(-errno, "%s: failed to read from packet socket: %m", r->ifname);
			break;
		}
		/* Our own frames, looped back to packet sockets; and frames to another station's MAC
		 * (seen on a segment that floods unicast, or in promiscuous mode): not asked of us. */
		if (from.sll_pkttype == PACKET_OUTGOING || from.sll_pkttype == PACKET_OTHERHOST)
			continue;
		if ((size_t) n > sizeof(buf))
			k = -EBADMSG;
		else if (fd == r->arp_fd)
			k = l2_parse_arp(buf, n, &q);
		else
			k = l2_parse_ns(buf, n, &q);
		if (k < 0)
			r->stats.bad_packets++;
		else if (k > 0)
			answer(r, &q);
	}
	return 0;
}

static void announce(L2Responder *r, Entry *e) {
	char a[IP_ADDR_STRLEN];
	uint8_t f[L2_FRAME_MAX];
	size_t len;
	int k;

	if (e->addr.family == AF_INET) {
		/* Both forms, as MetalLB sends them: some devices heed only requests, others only replies. */
		len = l2_build_arp(f, ARPOP_REQUEST, r->mac, &e->addr.in, mac_broadcast, &e->addr.in);
		k = send_frame(r, r->arp_fd, f, len);
		if (k >= 0) {
			r->stats.garp_sent++;
			len = l2_build_arp(f, ARPOP_REPLY, r->mac, &e->addr.in, mac_broadcast, &e->addr.in);
			k = send_frame(r, r->arp_fd, f, len);
			if (k >= 0)
				r->stats.garp_sent++;
		}
	} else {
		len = l2_build_na(f, r->mac, &e->addr.in6, mac_all_nodes, &ip6_all_nodes, false);
		k = send_frame(r, r->nd_fd, f, len);
		if (k >= 0)
			r->stats.unsol_na_sent++;
	}
	if (k < 0)
		log_warning_errno(k, "%s: failed to announce %s: %m", r->ifname, ip_addr_to_string(&e->addr, a));
	e->announce_left--;
	e->announce_next = now_usec() + L2_ANNOUNCE_INTERVAL_USEC;
}

static void arm_timer(L2Responder *r) {
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < r->n_entries; i++)
		if (r->entries[i].announce_left > 0)
			next = MIN(next, r->entries[i].announce_next);
	if (next == UINT64_MAX)
		(void) event_source_disarm(r->timer);
	else
		(void) event_source_arm_at(r->timer, next);
}

static int on_timer(EventSource *s, void *userdata) {
	L2Responder *r = userdata;
	uint64_t now = now_usec();

	for (size_t i = 0; i < r->n_entries; i++) {
		Entry *e = &r->entries[i];
		if (e->announce_left > 0 && e->announce_next <= now)
			announce(r, e);
	}
	arm_timer(r);
	return 0;
}

/* The interface's name and Ethernet address. */
static int read_link(L2Responder *r) {
	struct ifreq ifr = { .ifr_ifindex = r->ifindex };

	if (ioctl(r->arp_fd, SIOCGIFNAME, &ifr) < 0)
		return negative_errno();
	if (ioctl(r->arp_fd, SIOCGIFHWADDR, &ifr) < 0)
		return negative_errno();
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER)
		return -EAFNOSUPPORT;
	memcpy(r->ifname, ifr.ifr_name, IF_NAMESIZE);
	r->ifname[IF_NAMESIZE - 1] = '\0';
	memcpy(r->mac, ifr.ifr_hwaddr.sa_data, 6);
	return 0;
}

/*
 * SOCK_RAW packet sockets run the filter on the whole frame, Ethernet header included.
 * ARP: requests only. NDP: ICMPv6 right after the IPv6 header, type 135 (Neighbor Solicitation).
 * Everything else is validated in full in userspace, where a malformed frame is counted. (A frame
 * too short to hold the fields the filter loads is dropped by it uncounted: Ethernet frames are
 * at least 60 bytes, so only a local packet socket can send one.)
 */
static int attach_filter(int fd, bool arp) {
	static struct sock_filter arp_code[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                   /* A = ethertype */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_ARP, 0, 3),     /* ARP? else drop */
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, ETH_HLEN_ + 6),        /* A = ARP opcode */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARPOP_REQUEST, 0, 1), /* request? accept : drop */
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	static struct sock_filter nd_code[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),                    /* A = ethertype */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 5),     /* IPv6? else drop */
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_HLEN_ + 6),         /* A = next header */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMPV6, 0, 3), /* ICMPv6? else drop */
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_HLEN_ + IP6_HLEN),  /* A = ICMPv6 type */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ND_NS, 0, 1),          /* NS? accept : drop */
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = arp ? (struct sock_fprog) { .len = ELEMENTSOF(arp_code), .filter = arp_code }
				     : (struct sock_fprog) { .len = ELEMENTSOF(nd_code), .filter = nd_code };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? negative_errno() : 0;
}

static int open_socket(L2Responder *r, uint16_t proto, int *ret_fd, EventSource **ret_src) {
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = r->ifindex };
	_cleanup_close_ int fd = -EBADF;
	int k;

	/* Protocol 0 until bound: nothing from another interface is queued before the filter and
	 * the bind are in place. */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	k = attach_filter(fd, proto == ETH_P_ARP);
	if (k < 0)
		return k;
	if (bind(fd, (struct sockaddr *) &sll, sizeof(sll)) < 0)
		return negative_errno();
	k = event_loop_add_io(r->loop, fd, EPOLLIN, on_packet, r, ret_src);
	if (k < 0)
		return k;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int l2_responder_new(EventLoop *loop, int ifindex, L2Responder **ret) {
	_cleanup_(l2_responder_freep) L2Responder *r = NULL;
	int k;

	if (!loop || ifindex <= 0 || !ret)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (L2Responder) { .loop = loop, .ifindex = ifindex, .arp_fd = -EBADF, .nd_fd = -EBADF };
	k = open_socket(r, ETH_P_ARP, &r->arp_fd, &r->arp_src);
	if (k < 0)
		return k;
	k = read_link(r);
	if (k < 0)
		return k;
	k = open_socket(r, ETH_P_IPV6, &r->nd_fd, &r->nd_src);
	if (k < 0)
		return k;
	k = event_loop_add_timer(loop, on_timer, r, &r->timer);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(r);
	return 0;
}

L2Responder *l2_responder_free(L2Responder *r) {
	if (!r)
		return NULL;
	/* Closing the NDP socket leaves its multicast groups. */
	event_source_free(r->arp_src);
	event_source_free(r->nd_src);
	event_source_free(r->timer);
	safe_close(r->arp_fd);
	safe_close(r->nd_fd);
	free(r->entries);
	free(r);
	return NULL;
}

/* Joins or leaves the solicited-node group of an IPv6 address (33:33:ff + its last 24 bits).
 * The kernel counts memberships per socket: two addresses with the same group join it twice. */
static int membership(L2Responder *r, const IpAddr *a, bool join) {
	struct packet_mreq mr = { .mr_ifindex = r->ifindex, .mr_type = PACKET_MR_MULTICAST, .mr_alen = 6 };

	mr.mr_address[0] = mr.mr_address[1] = 0x33;
	mr.mr_address[2] = 0xff;
	memcpy(mr.mr_address + 3, a->in6.s6_addr + 13, 3);
	if (setsockopt(r->nd_fd, SOL_PACKET, join ? PACKET_ADD_MEMBERSHIP : PACKET_DROP_MEMBERSHIP, &mr, sizeof(mr)) <
	    0)
		return negative_errno();
	return 0;
}

static int entry_cmp(const void *a, const void *b) {
	return ip_addr_cmp(&((const Entry *) a)->addr, &((const Entry *) b)->addr);
}

int l2_responder_set(L2Responder *r, const IpAddr *addrs, size_t n) {
	_cleanup_free_ Entry *next = NULL;
	size_t m = 0, joined = 0;
	int k = 0;

	if (!r || (n > 0 && !addrs))
		return -EINVAL;
	if (n > 0) {
		next = calloc(n, sizeof(Entry));
		if (!next)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (addrs[i].family == AF_INET || addrs[i].family == AF_INET6)
			next[m++] = (Entry) { .addr = addrs[i] };
	qsort_safe(next, m, sizeof(Entry), entry_cmp);
	if (m > 0) {
		size_t w = 1;
		for (size_t i = 1; i < m; i++)
			if (ip_addr_cmp(&next[i].addr, &next[w - 1].addr) != 0)
				next[w++] = next[i];
		m = w;
	}

	/* New IPv6 addresses join their groups first, so a failure leaves the old set whole. */
	for (size_t i = 0; i < m; i++) {
		const Entry *old = find(r, &next[i].addr);
		if (old) {
			next[i].announce_left = old->announce_left;
			next[i].announce_next = old->announce_next;
			continue;
		}
		next[i].announce_left = L2_ANNOUNCE_ROUNDS;
		if (next[i].addr.family == AF_INET6) {
			k = membership(r, &next[i].addr, true);
			if (k < 0)
				break;
			joined = i + 1;
		}
	}
	if (k < 0) {
		for (size_t i = 0; i < joined; i++)
			if (next[i].addr.family == AF_INET6 && !find(r, &next[i].addr))
				(void) membership(r, &next[i].addr, false);
		return k;
	}
	for (size_t i = 0; i < r->n_entries; i++) {
		const IpAddr *a = &r->entries[i].addr;
		if (a->family == AF_INET6 && !bsearch_safe(&r->entries[i], next, m, sizeof(Entry), entry_cmp))
			(void) membership(r, a, false);
	}

	/* A MAC changed since the last set is followed from now on (on failure the old one stays). */
	(void) read_link(r);

	free(r->entries);
	r->entries = m > 0 ? TAKE_PTR(next) : NULL;
	r->n_entries = m;
	for (size_t i = 0; i < m; i++)
		if (r->entries[i].announce_left == L2_ANNOUNCE_ROUNDS && r->entries[i].announce_next == 0)
			announce(r, &r->entries[i]);
	arm_timer(r);
	return 0;
}

void l2_responder_stats(const L2Responder *r, L2ResponderStats *ret) {
	*ret = r->stats;
}
