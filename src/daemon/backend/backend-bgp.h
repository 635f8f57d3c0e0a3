/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The bgp backend's pure parts, unit-tested without BIRD: the bird.conf weftd renders from the
 * accepted leases, and the parsing of BIRD's control-socket replies (birdc's protocol: lines
 * "DDDD-text" continue a reply, "DDDD text" ends it, " text" continues the previous line).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"

#define BGP_DEFAULT_ASN 64512
#define BIRD_CONF_NAME "bird.conf"
#define BIRD_SOCKET_NAME "bird.ctl"

typedef struct BgpPeer {
	IpAddr ip;           /* its public IP: the session's neighbour and the next hop we accept */
	IpPrefix subnets[2]; /* the only prefixes accepted from it: its leased subnet(s) */
	size_t n_subnets;
	bool multihop;  /* not on a directly connected network (a router between us) */
	bool reflector; /* a route reflector: it also gives us other nodes' subnets (in->reflected) */
	bool rr_client; /* we are a route reflector and it is our client: we reflect to it */
} BgpPeer;

/* A node's subnet with the node as next hop: what a route reflector may pass on. */
typedef struct BgpRoute {
	IpPrefix net;
	IpAddr next_hop;
} BgpRoute;

/* An external peer (a top-of-rack router): eBGP, routes with it as next hop. */
typedef struct BgpExternalPeer {
	IpAddr ip;
	uint32_t asn;
} BgpExternalPeer;

typedef struct BirdConfInput {
	IpAddr router_id; /* IPv4 (BIRD's router id is a 32-bit value) */
	IpAddr local_ip;
	/* the underlay's global IPv6 address, AF_UNSPEC = none: the next hop of the IPv6 LoadBalancer
	 * addresses (weft_lb6), over an ipv6 channel of each external session */
	IpAddr local_ip6;
	uint32_t asn;
	IpPrefix self[2]; /* our subnet(s): announced, never accepted */
	size_t n_self;
	const BgpPeer *peers;
	size_t n_peers;
	const BgpExternalPeer *external;
	size_t n_external;
	const IpPrefix *external_accept; /* the only prefixes accepted from external peers */
	size_t n_external_accept;
	bool reflector;            /* we are a route reflector: export what node peers gave us */
	const BgpRoute *reflected; /* every accepted remote subnet with its node as next hop: the */
	size_t n_reflected;        /* only routes accepted from a reflector besides its own subnet */
	const IpAddr *announce;    /* LoadBalancer addresses this node announces (lb-announce.h): */
	size_t n_announce;         /* /32s and /128s (only with local_ip6) to the external peers only */
} BirdConfInput;

/*
 * Renders bird.conf: the kernel protocol exporting only BGP-learned routes (so BIRD never touches
 * a route it did not learn), our subnets as static blackholes announced to every peer, and one
 * iBGP session per peer (full mesh) whose import filter accepts exactly that peer's leased
 * subnet(s) with that peer as next hop, with graceful restart. What the import filters refuse (a
 * prefix outside the cluster network, a prefix overlapping another node's subnet, our own subnet)
 * is never installed. External peers (routers) get our subnet and the LoadBalancer addresses we
 * announce (the static protocol weft_lb, blackholes BIRD never installs), and may give us exactly the
 * subnets in external_accept (the accepted leases of nodes beyond our segment); "allow local as"
 * because those come back with our own AS in their path. With local_ip6, the IPv6 LoadBalancer
 * addresses too: a static protocol weft_lb6 of /128 blackholes and, on each external session, an
 * ipv6 channel (MP-BGP over the IPv4 session) exporting only those, next hop local_ip6; without it
 * the config is IPv4-only (byte for byte what it was). *ret is malloc'ed. 0, -EINVAL (no IPv4 router id) or -ENOMEM.
 */
int bird_conf_render(const BirdConfInput *in, char **ret);

/* conf (rendered by bird_conf_render()) with the weft_lb protocol's routes replaced by the IPv4
 * addresses of addrs, and weft_lb6's (if conf has it) by the IPv6 ones: what a
 * change of the announced LoadBalancer addresses alone needs. *ret is malloc'ed. 0, -EINVAL (no
 * weft_lb protocol in conf) or -ENOMEM. */
int bird_conf_set_announced(const char *conf, const IpAddr *addrs, size_t n, char **ret);

/* in's config without our own subnets (a node that released its lease stops announcing it):
 * the "route ... blackhole;" lines of the weft_self protocol removed. *ret is malloc'ed. 0 or -ENOMEM. */
int bird_conf_strip_self(const char *conf, char **ret);

/* One reply line: its code (0 for a " text" continuation), whether it ends the reply, and its text.
 * 0, or -EBADMSG. */
int bird_reply_line(const char *line, int *ret_code, bool *ret_last, const char **ret_text);

/* From a "show protocols" reply: how many BGP protocols there are, and how many are Established. */
void bird_count_bgp(const char *reply, unsigned *ret_total, unsigned *ret_established);
