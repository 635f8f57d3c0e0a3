/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Family-generic IP addresses and prefixes, and the arithmetic IPAM and routing need.
 * All functions are pure (no I/O) and never allocate.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#define IP_ADDR_STRLEN INET6_ADDRSTRLEN         /* 46, includes NUL */
#define IP_PREFIX_STRLEN (INET6_ADDRSTRLEN + 4) /* "addr/128" */

typedef struct IpAddr {
	int family; /* AF_INET, AF_INET6, or AF_UNSPEC for "none" */
	union {
		struct in_addr in;
		struct in6_addr in6;
		uint8_t bytes[16];
	};
} IpAddr;

/* An address with a prefix length. Host bits are kept ("10.1.0.5/24" is a pod address);
 * use ip_prefix_mask() to get the network. */
typedef struct IpPrefix {
	IpAddr addr;
	uint8_t len;
} IpPrefix;

/* Bytes of the address for its family: 4 or 16 (0 for AF_UNSPEC). */
unsigned ip_addr_size(int family);
/* Max prefix length: 32 or 128. */
unsigned ip_family_bits(int family);

/* Parses a literal IPv4 or IPv6 address (no zone, no brackets). 0 or -EINVAL. */
int ip_addr_parse(const char *s, IpAddr *ret);
/* Parses "addr/len". Host bits kept. 0 or -EINVAL. */
int ip_prefix_parse(const char *s, IpPrefix *ret);
/* Same, but requires host bits to be zero (a network, e.g. a range subnet). -EINVAL otherwise. */
int ip_prefix_parse_network(const char *s, IpPrefix *ret);

const char *ip_addr_to_string(const IpAddr *a, char buf[static IP_ADDR_STRLEN]);
const char *ip_prefix_to_string(const IpPrefix *p, char buf[static IP_PREFIX_STRLEN]);

bool ip_addr_is_set(const IpAddr *a);
bool ip_addr_equal(const IpAddr *a, const IpAddr *b);
/* Orders by family then numerically; <0, 0, >0. */
int ip_addr_cmp(const IpAddr *a, const IpAddr *b);
bool ip_prefix_equal(const IpPrefix *a, const IpPrefix *b);

/* Network of p (host bits cleared). */
IpPrefix ip_prefix_mask(const IpPrefix *p);
/* True if a lies within p's network. Families must match. */
bool ip_prefix_contains(const IpPrefix *p, const IpAddr *a);
/* True if the two networks share any address. */
bool ip_prefix_overlaps(const IpPrefix *a, const IpPrefix *b);
/* First and last address of the network (network and broadcast for IPv4). */
IpAddr ip_prefix_first(const IpPrefix *p);
IpAddr ip_prefix_last(const IpPrefix *p);
/* Netmask as an address (255.255.255.0) for 0.2.0-era consumers. */
IpAddr ip_prefix_netmask(const IpPrefix *p);

/* a + delta (signed, may wrap only within the family). Returns false on overflow/underflow. */
bool ip_addr_add(const IpAddr *a, int64_t delta, IpAddr *ret);
/* Increment / decrement by one; false on wrap. */
bool ip_addr_next(const IpAddr *a, IpAddr *ret);
bool ip_addr_prev(const IpAddr *a, IpAddr *ret);
/* b - a for addresses of the same family, saturated to INT64 range. */
int64_t ip_addr_distance(const IpAddr *a, const IpAddr *b);

/* "TCP", "UDP", "SCTP", "ICMP", "ICMPv6", else the number written into buf. */
const char *ip_proto_name(uint8_t proto, char buf[static 8]);
