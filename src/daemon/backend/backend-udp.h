/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The udp backend's pure parts, unit-tested without a kernel: the peer table (pod subnet ->
 * node public IP) the forwarding path looks every packet up in, and the checks every packet
 * received from the underlay passes before it is written to the TUN.
 */

#include <stddef.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"

#define UDP_BACKEND_DEFAULT_PORT 8285
#define UDP_BACKEND_TUN_NAME "weft0"

typedef struct UdpPeer {
	IpPrefix subnet; /* masked */
	IpAddr public_ip;
} UdpPeer;

typedef struct UdpPeerTable {
	UdpPeer *peers; /* sorted by subnet address; subnets never overlap (import filter) */
	size_t n, alloc;
} UdpPeerTable;

void udp_peer_table_done(UdpPeerTable *t);
/* Appends (unsorted); udp_peer_table_sort() before lookups. 0 or -ENOMEM. */
int udp_peer_table_add(UdpPeerTable *t, const IpPrefix *subnet, const IpAddr *public_ip);
void udp_peer_table_sort(UdpPeerTable *t);
/* The peer whose subnet holds `dst`, or NULL. O(log n). */
const UdpPeer *udp_peer_table_lookup(const UdpPeerTable *t, const IpAddr *dst);

/* Source and destination of a bare IPv4/IPv6 packet. 0, or -EBADMSG if it is not one. */
int udp_packet_addrs(const void *pkt, size_t len, IpAddr *ret_src, IpAddr *ret_dst);

typedef enum UdpInboundVerdict {
	UDP_INBOUND_OK,
	UDP_INBOUND_MALFORMED,  /* not an IP packet */
	UDP_INBOUND_NOT_FOR_US, /* inner destination outside this node's subnets */
	UDP_INBOUND_SPOOFED,    /* sender is not the node that holds the inner source's subnet */
	_UDP_INBOUND_MAX,
} UdpInboundVerdict;

const char *udp_inbound_verdict_to_string(UdpInboundVerdict v);

/*
 * Judges a packet received from `sender` over the underlay: written to the TUN only if it is
 * for one of our subnets (self4/self6; AF_UNSPEC = none) and comes from the node whose (accepted)
 * lease holds its source address. Without the first check any host that can reach our port could
 * make the node route arbitrary packets; without the second, a node could inject packets with
 * another node's pod addresses.
 */
UdpInboundVerdict udp_inbound_check(const UdpPeerTable *t, const IpPrefix *self4, const IpPrefix *self6,
				    const IpAddr *sender, const void *pkt, size_t len);
