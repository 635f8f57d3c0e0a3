/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Backends: how this node reaches the pod subnets of the others. A backend fills one BackendOps;
 * the reconciler (reconcile.c) asks it to render the kernel objects one remote lease needs and
 * does the diffing and programming itself, so backends hold no per-node state.
 *
 *   host-gw (backend-hostgw.c)  route <remote subnet> via <remote public IP> dev <underlay>
 *   vxlan   (backend-vxlan.c)   VTEP weft.<VNI>; per remote: neighbour + FDB + onlink route
 *   udp     (backend-udp.c)     TUN weft0, weftd carries each packet in UDP; per remote: a route
 *   ipip    (backend-ipip.c)    tunnel weft.ipip; per remote: route via its public IP, onlink
 *
 * Everything installed is stamped: routes carry protocol WEFT_RTPROT; neighbours and FDB
 * entries live on our own VTEP. backend.c holds what both share: underlay discovery and the
 * "directly connected" test.
 */

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/datastore/datastore.h"
#include "daemon/network-config.h"
#include "shared/nl/nl.h"

#define BACKEND_VTEP_PREFIX "weft."

/* The kernel objects one remote node needs. Routes/neighbours: one per address family. */
typedef struct NodeObjects {
	const char *node_name; /* points into the lease the objects were rendered from */
	size_t n_neigh;
	NlNeigh neigh[2]; /* permanent neighbours on the VTEP (vxlan) */
	bool has_fdb;
	NlNeigh fdb; /* VTEP MAC -> remote public IP (vxlan) */
	size_t n_routes;
	NlRoute routes[2];

	/* Filled by reconcile_plan(): what the kernel already has. */
	bool neigh_present[2], fdb_present, route_present[2];
	/* Present under the same key but different (wrong MAC / gateway): replace, don't add. */
	bool neigh_replace[2], route_replace[2];
	/* A route weft did not install (other protocol) has the destination: leave it, skip the node. */
	bool route_foreign[2];
} NodeObjects;

typedef struct Backend Backend;

typedef struct BackendOps {
	const char *name; /* "host-gw" | "vxlan", as in NodeLease.backend */
	/*
	 * Creates or repairs what the backend needs locally; idempotent and cheap when all is in
	 * place (called before the lease with b->have_lease false, and again on every full resync).
	 * vxlan: the VTEP (stable MAC, MTU), and once the lease is held its address and link up.
	 * Sets b->mtu (the pod MTU). 0 or -errno.
	 */
	int (*ensure)(Backend *b);
	/*
	 * Renders the objects for one remote lease into *ret. -ENETUNREACH: refused (host-gw to a
	 * node that is not directly connected); -EINVAL: the lease lacks what we need (no VTEP MAC).
	 */
	int (*render)(Backend *b, const NodeLease *remote, NodeObjects *ret);
	/*
	 * Optional: called after every render() of a pass, with exactly the leases rendered
	 * successfully in that pass (the accepted ones). A backend that forwards packets itself (udp)
	 * takes its peer table from here; the others have no per-node state.
	 */
	void (*commit)(Backend *b);
} BackendOps;

struct Backend {
	const BackendOps *ops;
	NlSock *nl; /* not owned */
	NetworkBackendConfig config;
	const char *node_name; /* not owned: weftd's --node-name */

	/* underlay */
	int underlay_ifindex;
	char underlay_name[IFNAMSIZ];
	unsigned underlay_mtu;
	IpAddr public_ip;
	IpPrefix connected[16]; /* the underlay link's addresses: directly connected networks */
	size_t n_connected;
	IpPrefix *local; /* every address of this node (all links), with its prefix length */
	size_t n_local;

	/* vxlan */
	char vtep_name[IFNAMSIZ];
	int vtep_ifindex;
	uint8_t vtep_mac[6];

	/* our lease, once held (owned: backend_done() releases it) */
	bool have_lease;
	NodeLease self;

	unsigned mtu; /* pod MTU */

	/* bgp: bird.conf and BIRD's control socket live here (not owned: weftd's --run-dir) */
	const char *run_dir;

	/* ipip: the tunnel (not vtep_ifindex: that one means "publish a VTEP MAC") */
	int tunnel_ifindex;

	/* udp: the loop the TUN and socket are watched in (not owned; set by weftd before ensure()) */
	struct EventLoop *loop;
	struct UdpTunnel *udp; /* owned; backend_done() frees it */
};

extern const BackendOps backend_hostgw_ops;
extern const BackendOps backend_vxlan_ops;
extern const BackendOps backend_udp_ops;
extern const BackendOps backend_ipip_ops;
extern const BackendOps backend_bgp_ops;

/* backend-bgp.c: weft_bird_up and weft_bgp_sessions for /metrics (asks BIRD; bgp backend only). */
void backend_bgp_render_metrics(const Backend *b, FILE *f);
/* bgp: whether BIRD answers (1) or not (0), and how many of its BGP sessions are Established;
 * -EOPNOTSUPP for the other backends. */
int backend_bgp_probe(const Backend *b, unsigned *ret_total, unsigned *ret_established);
/* bgp, after the lease is released on shutdown: rewrites bird.conf without our subnet and has BIRD
 * apply it, so the subnet is withdrawn before weftd exits. A no-op for the other backends. */
void backend_bgp_withdraw(Backend *b);

/* backend-udp.c: closes the TUN and the socket (the kernel then removes weft0 and its routes). */
void backend_udp_done(Backend *b);
/* backend-udp.c: weft_udp_* lines for /metrics (nothing unless the udp backend runs). */
void backend_udp_render_metrics(const Backend *b, FILE *f);

const BackendOps *backend_ops_find(NetworkBackendType type);

/*
 * Finds the underlay: by interface name (iface), else the interface holding `public_ip`, else
 * the interface of the IPv4 default route (then IPv6). Fills underlay_* and public_ip (unless
 * given) and the connected prefixes. -ENODEV / -EADDRNOTAVAIL with nothing written on failure.
 */
int backend_find_underlay(Backend *b, const char *iface, const IpAddr *public_ip);
/* Re-reads the underlay link's addresses and MTU, and every address of the node into local[]
 * (cheap: one dump; every pass). */
int backend_refresh_underlay(Backend *b);
/* Frees what the backend allocated (local[]). */
void backend_done(Backend *b);
/* True if ip lies in a network directly connected to the underlay. */
bool backend_is_direct(const Backend *b, const IpAddr *ip);
/* The host-gw route for a remote (used by host-gw, and by vxlan with DirectRouting). */
int backend_render_direct_routes(Backend *b, const NodeLease *remote, NodeObjects *ret);

/*
 * The tunnel device's own addresses: our subnet's network address as a /32 (and, with with_v6,
 * subnet6's as a /128; v6_flags e.g. IFA_F_NODAD), so the node's own traffic to remote pods leaves
 * with a source the peers route back. Every other address but the kernel's fe80:: is removed.
 * Used by vxlan (weft.1), udp (weft0) and ipip (weft.ipip). 0 or a negative errno.
 */
int backend_sync_device_addresses(Backend *b, int ifindex, bool with_v6, uint32_t v6_flags);

/* A MAC derived from the node name and VNI: locally administered unicast, stable across restarts
 * and reinstalls, so a restarted node need not republish it and peers' FDB stays valid. */
void backend_vtep_mac(const char *node_name, uint32_t vni, uint8_t ret[6]);

/* weftd uninstall: deletes every vxlan and ipip link named weft.* (ENODEV ignored). */
int backend_uninstall_links(NlSock *nl);
