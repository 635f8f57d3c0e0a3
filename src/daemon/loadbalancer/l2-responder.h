/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * L2 announcement of LoadBalancer addresses: a userspace ARP and NDP responder on the node's
 * underlay interface, as MetalLB's speaker and Cilium's L2 announcer have. Kernel proxy-neighbour
 * entries are no use here: the kernel answers them only with forwarding on and a route to the
 * address through another device than the one the request came in on, which an underlay does not
 * have.
 *
 * Two AF_PACKET sockets bound to the interface: one for ARP requests, one for ICMPv6 Neighbor
 * Solicitations (a classic BPF filter drops every other frame in the kernel). For each IPv6
 * address we join its solicited-node multicast group (PACKET_ADD_MEMBERSHIP). Every frame the
 * filter lets through is validated in full (lengths, hardware and protocol types, RFC 4861 7.1.1:
 * hop limit 255, ICMPv6 checksum, code 0, options); what fails is counted in bad_packets and never
 * answered. A request is answered only when its target is in the set and its sender is not one of
 * the set's addresses (that is another host announcing it: a conflict, logged and not answered).
 *
 * Replies and announcements carry the interface's MAC, read when the responder is created and
 * again on every l2_responder_set() (a MAC changed in between is followed from the next set).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/event/event-loop.h"
#include "shared/ip/ip-addr.h"

typedef struct L2Responder L2Responder;

typedef struct L2ResponderStats {
	uint64_t arp_replies;   /* ARP replies sent */
	uint64_t na_replies;    /* solicited Neighbor Advertisements sent */
	uint64_t garp_sent;     /* gratuitous ARP frames sent (each announcement round sends a request and a reply) */
	uint64_t unsol_na_sent; /* unsolicited NAs (override) sent */
	uint64_t bad_packets;   /* received frames that failed validation */
} L2ResponderStats;

/* How often and how far apart a new address is announced: at once, then after 1 s and 2 s. */
#define L2_ANNOUNCE_ROUNDS 3
#define L2_ANNOUNCE_INTERVAL_USEC (1000 * 1000ULL)

/* Answers for addresses on the interface ifindex (the node's underlay, in the calling thread's
 * network namespace), with its MAC. Sockets are registered on loop. 0 or negative errno
 * (-EAFNOSUPPORT when the interface is not Ethernet). */
int l2_responder_new(EventLoop *loop, int ifindex, L2Responder **ret);
/* NULL-safe, returns NULL. Leaves the multicast groups and closes the sockets. */
L2Responder *l2_responder_free(L2Responder *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(L2Responder *, l2_responder_free);
/* Replaces the set answered for (IPv4 and IPv6 mixed; duplicates and AF_UNSPEC entries ignored).
 * An address new to the set is announced at once: gratuitous ARP (IPv4) or unsolicited NA with
 * override (IPv6), repeated L2_ANNOUNCE_ROUNDS times L2_ANNOUNCE_INTERVAL_USEC apart in case the
 * first is lost. An address removed is no longer answered. On error the previous set stays.
 * 0 or negative errno. */
int l2_responder_set(L2Responder *r, const IpAddr *addrs, size_t n);
void l2_responder_stats(const L2Responder *r, L2ResponderStats *ret);

/*
 * The packet layer, pure (no I/O), exposed for the fuzzer and the tests. Frames are whole
 * Ethernet frames (destination MAC first), as a SOCK_RAW packet socket reads and writes them.
 */

typedef struct L2Request {
	int family;            /* AF_INET: ARP request; AF_INET6: Neighbor Solicitation */
	uint8_t eth_src[6];    /* the frame's source MAC */
	uint8_t sender_mac[6]; /* ARP sha, or the NS's source link-layer address option (else eth_src) */
	IpAddr sender;         /* ARP spa (0.0.0.0 for a probe), or the NS's IPv6 source (:: for DAD) */
	IpAddr target;         /* the address asked for */
} L2Request;

#define L2_ARP_FRAME_LEN 42 /* 14 Ethernet + 28 ARP */
#define L2_NA_FRAME_LEN 86  /* 14 Ethernet + 40 IPv6 + 24 NA + 8 target link-layer address option */
#define L2_FRAME_MAX L2_NA_FRAME_LEN

/* Parses a frame read from the ARP socket. 1 and *ret filled for an Ethernet/IPv4 ARP request, 0
 * for a well-formed ARP frame that asks nothing (a reply), -EBADMSG for a malformed one. */
int l2_parse_arp(const uint8_t *frame, size_t len, L2Request *ret);
/* Parses a frame read from the NDP socket. 1 and *ret filled for a valid Neighbor Solicitation
 * (RFC 4861 7.1.1), 0 for a valid IPv6 frame that is not one, -EBADMSG for a malformed one. */
int l2_parse_ns(const uint8_t *frame, size_t len, L2Request *ret);

/* An ARP reply from (mac, ip) to (dst_mac, dst_ip), or with op 1 a request. buf gets
 * L2_ARP_FRAME_LEN bytes. Gratuitous: ip == dst_ip, dst_mac broadcast. Returns the length. */
size_t l2_build_arp(uint8_t buf[static L2_ARP_FRAME_LEN], uint16_t op, const uint8_t mac[6], const struct in_addr *ip,
		    const uint8_t dst_mac[6], const struct in_addr *dst_ip);
/* A Neighbor Advertisement for target from mac (the target link-layer address option), sourced
 * from target, to (dst_mac, dst). solicited sets S; O is always set. buf gets L2_NA_FRAME_LEN
 * bytes, checksum filled in. Returns the length. */
size_t l2_build_na(uint8_t buf[static L2_NA_FRAME_LEN], const uint8_t mac[6], const struct in6_addr *target,
		   const uint8_t dst_mac[6], const struct in6_addr *dst, bool solicited);
