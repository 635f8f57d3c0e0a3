/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Backends: how this node reaches the pod subnets of the others. A backend fills one BackendOps
 * and keeps its own state in an object only its file knows (VxlanBackend, UdpBackend, ...); the
 * reconciler (reconcile.c) asks it to render the kernel objects one remote lease needs and does
 * the diffing and programming itself, so the kernel's per-node objects are never a backend's.
 *
 *   host-gw (backend-hostgw.c)  route <remote subnet> via <remote public IP> dev <underlay>
 *   vxlan   (backend-vxlan.c)   VTEP weft.<VNI>; per remote: neighbour + FDB + onlink route
 *   udp     (backend-udp.c)     TUN weft0, weftd carries each packet in UDP; per remote: a route
 *   ipip    (backend-ipip.c)    tunnel weft.ipip; per remote: route via its public IP, onlink
 *   bgp     (backend-bgp.c)     no device; BIRD learns and installs the routes, weftd feeds it
 *   wireguard (backend-wireguard.c) device weft-wg; per remote: a WireGuard peer + a route
 *
 * Everything installed is stamped: routes carry protocol WEFT_RTPROT; neighbours and FDB
 * entries live on our own VTEP. backend.c holds what every kind shares: underlay discovery, the
 * "directly connected" test, the state's life cycle and the NULL-safe calls of the optional ops.
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
#define BACKEND_WIREGUARD_DEVICE "weft-wg"

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

/* A backend's readiness detail for /healthz?verbose: one check line, reported but never part of
 * the verdict (the kubelet restarting weftd cannot fix a routing daemon that runs apart). */
typedef struct BackendProbe {
	const char *check; /* the check's name: "bird" */
	bool ok;           /* "[+]<check>" or "[-]<check>: <why>" */
	const char *why;   /* when !ok: "not answering" */
	char detail[128];  /* a line after the verdict ("bgp sessions: 2 of 3 established"); "" = none */
} BackendProbe;

/*
 * One backend kind, whole (networkd's NetDevVTable, BIRD's struct protocol): its state lives in an
 * object of its own (object_size bytes, zeroed, at b->state) that only its file knows; everything
 * kind-specific the rest of weftd needs goes through this table, by the NULL-safe helpers below.
 * Only name, ensure and render are required.
 */
typedef struct BackendOps {
	const char *name;   /* "host-gw" | "vxlan" | ..., as in NodeLease.backend */
	size_t object_size; /* the kind's state (VxlanBackend, UdpBackend, ...); 0 = none */
	/* Optional: sets up the fresh (zeroed) state; b->config and b->node_name are set, the loop may
	 * not be yet. 0 or -errno. */
	int (*init)(Backend *b);
	/* Optional: releases what the state holds (fds, tables); the state itself is freed for it.
	 * Also called after a failed init. */
	void (*done)(Backend *b);
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
	 * takes its peer table from here, bgp its BIRD config; the others have no per-node state.
	 */
	void (*commit)(Backend *b);
	/* Optional: fills in what the kind publishes with our lease and what no remote lease may claim
	 * (vxlan: the VTEP MAC, once the VTEP exists). Called on a lease holding the common fields. */
	void (*lease_attrs)(const Backend *b, NodeLease *self);
	/* Optional: the link whose permanent neighbours and FDB entries are the reconciler's (vxlan:
	 * the VTEP), and whose removal the monitor repairs; 0 = none. */
	int (*neigh_ifindex)(const Backend *b);
	/* Optional: the kind's lines for /metrics. */
	void (*render_metrics)(const Backend *b, FILE *f);
	/* Optional: readiness detail for /healthz?verbose. 0 with *ret filled, or -errno. */
	int (*probe)(const Backend *b, BackendProbe *ret);
	/* Optional: after our lease is released on shutdown, stops announcing our subnet (bgp). */
	void (*withdraw)(Backend *b);
	/* Optional: makes the LoadBalancer addresses this node announces to the routers exactly
	 * addrs (lb-announce.h; bgp: /32s to the external peers), at once. 0 or -errno. */
	int (*announce)(Backend *b, const IpAddr *addrs, size_t n);
	/* Optional: `weftd uninstall` removes the links the kind creates (vxlan: weft.<VNI>, wireguard:
	 * weft-wg and weft-wg-v6, ...). Called for every kind, with no state and no config (the one
	 * configured may be gone), so it goes by link kind and name. A missing link is no error; 0 or
	 * the first error (the rest is still tried). */
	int (*uninstall)(NlSock *nl);
} BackendOps;

/* What every kind shares. The kind's own fields are in *state (see BackendOps.object_size). */
struct Backend {
	const BackendOps *ops;
	void *state; /* owned: ops->object_size bytes, the kind's (backend_init()) */
	NlSock *nl;  /* not owned */
	NetworkBackendConfig config;
	const char *node_name; /* not owned: weftd's --node-name */

	/* underlay */
	int underlay_ifindex;
	char underlay_name[IFNAMSIZ];
	unsigned underlay_mtu;
	IpAddr public_ip;
	/* With an IPv4 public_ip: the underlay's first global IPv6 address, AF_UNSPEC = none. What the
	 * wireguard backend publishes for weft-wg-v6 (NodeLease.public_ip6). */
	IpAddr public_ip6;
	IpPrefix connected[16]; /* the underlay link's addresses: directly connected networks */
	size_t n_connected;
	IpPrefix *local; /* every address of this node (all links), with its prefix length */
	size_t n_local;

	/* our lease, once held (owned: backend_done() releases it) */
	bool have_lease;
	NodeLease self;

	unsigned mtu; /* pod MTU */
	/* The cluster's families (Network, Network6), set with config: wireguard's Mode separate makes
	 * weft-wg for the one and weft-wg-v6 for the other. */
	bool ipv4, ipv6;

	/* Context a kind may use (not owned; set by weftd before the first ensure()): the loop a kind
	 * that moves packets itself watches its fds in (udp), and the directory for files a routing
	 * daemon reads (bgp: bird.conf and BIRD's control socket). */
	struct EventLoop *loop;
	const char *run_dir;
	const char *state_dir; /* weftd's --state-dir: the wireguard backend's private key */
	bool rotate_key;       /* weftd's --rotate-key: the wireguard backend makes a new key pair */
};

extern const BackendOps backend_hostgw_ops;
extern const BackendOps backend_vxlan_ops;
extern const BackendOps backend_udp_ops;
extern const BackendOps backend_ipip_ops;
extern const BackendOps backend_bgp_ops;
extern const BackendOps backend_wireguard_ops;

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
/* Makes b a backend of kind ops: allocates and initialises its state (a previous kind's is released
 * first). b->config and b->node_name should be set. 0, -ENOMEM or ops->init's error. */
int backend_init(Backend *b, const BackendOps *ops);
/* Releases the kind's state (ops->done), local[] and our lease; b->ops stays. NULL-safe kind. */
void backend_done(Backend *b);

/* The optional ops, NULL-safe (no kind chosen yet, or the kind lacks the op): */
void backend_commit(Backend *b);
void backend_lease_attrs(const Backend *b, NodeLease *self);
int backend_neigh_ifindex(const Backend *b); /* 0 = none */
void backend_render_metrics(const Backend *b, FILE *f);
int backend_probe(const Backend *b, BackendProbe *ret); /* -EOPNOTSUPP: the kind has nothing to report */
void backend_withdraw(Backend *b);
int backend_announce(Backend *b, const IpAddr *addrs, size_t n); /* -EOPNOTSUPP: the kind cannot */
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

/* The start of every tunnel kind's ensure(): re-reads the underlay and sets b->mtu to Backend.MTU or
 * the underlay's less `overhead`. -EINVAL when the underlay leaves less than 68 bytes. */
int backend_refresh_mtu(Backend *b, unsigned overhead);
/* The end of it for the kind's device l: its MTU b->mtu, and once the lease is held its addresses
 * (backend_sync_device_addresses()) and link up. 0 or a negative errno. */
int backend_device_finish(Backend *b, const NlLink *l, bool with_v6, uint32_t v6_flags);
/* The same for a device that carries one family or both (wireguard's weft-wg-v6 has no IPv4
 * address): the addresses of the families asked for only. */
int backend_device_finish_families(Backend *b, const NlLink *l, bool with_v4, bool with_v6, uint32_t v6_flags);

/* A MAC derived from the node name and VNI: locally administered unicast, stable across restarts
 * and reinstalls, so a restarted node need not republish it and peers' FDB stays valid. */
void backend_vtep_mac(const char *node_name, uint32_t vni, uint8_t ret[6]);

/* For the kinds' uninstall(): deletes every link of this kind ("vxlan", "tun", ...) whose name starts
 * with name_prefix (a link gone meanwhile is no error). 0 or the first error. */
int backend_delete_links(NlSock *nl, const char *kind, const char *name_prefix);
/* weftd uninstall: every kind's uninstall() (each removes its own links). 0 or the first error. */
int backend_uninstall_all(NlSock *nl);
