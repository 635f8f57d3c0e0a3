/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The datastore behind weftd: where node subnet leases and per-node data live. A module fills
 * DatastoreOps (etcd first, in datastore-etcd.c; Kubernetes Node.spec.podCIDRs next). weftd is
 * one thread with one epoll loop: a datastore exposes exactly one pollable fd (an inner epoll set
 * over its HTTP sockets and timers) and does its work in ->dispatch() when that fd is readable or
 * when ->next_timeout_ms() expires. Nothing here blocks except ->open() and the start-up calls
 * (acquire/get_config), which weftd makes before entering its loop.
 */

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "ip/ip-addr.h"

typedef struct Datastore Datastore;

/* One node's lease as stored: subnet + what other nodes need to reach it. */
typedef struct NodeLease {
	char node_name[64];
	IpPrefix subnet;        /* pod subnet of that node (IPv4; subnet6 for dual-stack) */
	IpPrefix subnet6;       /* AF_UNSPEC = none */
	IpAddr public_ip;       /* underlay address other nodes use */
	char backend[16];       /* "host-gw" | "vxlan" */
	uint8_t vtep_mac[6];    /* vxlan */
	bool has_vtep_mac;
	int64_t expiration;     /* unix seconds when the lease expires if not renewed, 0 = unknown */
} NodeLease;

typedef enum DatastoreEventType {
	DS_EVENT_NODE_UPSERT,   /* a lease appeared or changed */
	DS_EVENT_NODE_DELETE,   /* released or expired */
	DS_EVENT_RESYNC,        /* watch was restarted; `nodes` is the full current set */
	DS_EVENT_CONNECTION,    /* connectivity changed; `connected` says which way */
} DatastoreEventType;

typedef struct DatastoreEvent {
	DatastoreEventType type;
	const NodeLease *node;          /* UPSERT / DELETE */
	const NodeLease *nodes;         /* RESYNC */
	size_t n_nodes;
	bool connected;                 /* CONNECTION */
} DatastoreEvent;

typedef void (*DatastoreEventFn)(const DatastoreEvent *ev, void *userdata);

typedef struct DatastoreConfig {
	const char *kind;               /* "etcd" */
	const char *endpoints;          /* "http://127.0.0.1:2379[,http://...]" */
	const char *prefix;             /* key prefix, default "/weft/network" */
	const char *kubeconfig;         /* kubernetes kind */
	int lease_ttl_sec;              /* default 60 (renewed at ttl/3) */
} DatastoreConfig;

typedef struct DatastoreOps {
	const char *kind;
	int (*open)(const DatastoreConfig *c, Datastore **ret);
	Datastore *(*free)(Datastore *d);

	/* The network config JSON stored under <prefix>/config (NULL/-ENOENT if absent). */
	int (*get_network_config)(Datastore *d, char **ret_json);

	/*
	 * Lease a subnet of `subnet_len` bits from `network` for node self->node_name, publishing
	 * *self (public_ip, backend, vtep_mac). If this node already holds a live lease (restart),
	 * or `prev` (a lease remembered in weftd's state dir) is still free, that subnet is
	 * returned again. Races with other nodes are resolved by the store (compare-and-swap).
	 * On success *ret is the stored lease. -ENOSPC when the network is full.
	 */
	int (*acquire)(Datastore *d, const IpPrefix *network, unsigned subnet_len, const NodeLease *self,
		       const IpPrefix *prev, NodeLease *ret);
	/* Renewals happen inside dispatch() on their own timer; release deletes our lease. */
	int (*release)(Datastore *d);

	/* Start watching all leases; cb gets a RESYNC with the full list first, then deltas. */
	int (*watch)(Datastore *d, DatastoreEventFn cb, void *userdata);

	int (*get_fd)(Datastore *d);                 /* pollable (EPOLLIN) */
	int (*dispatch)(Datastore *d);               /* do pending I/O and timers; never blocks */
	int (*next_timeout_ms)(Datastore *d);        /* -1 = none */

	/* Added by the etcd module (optional entries, NULL if a kind lacks them): */

	/* Restrict acquire() to subnets whose address lies in [min, max] (SubnetMin/SubnetMax of the
	 * network config); NULL or AF_UNSPEC = no bound. Call before acquire(). */
	int (*set_subnet_range)(Datastore *d, const IpAddr *min, const IpAddr *max);
	/* Dual-stack: acquire() also fills the lease's subnet6 with a /subnet_len6 of network6. It is
	 * derived from the IPv4 subnet (the n-th IPv4 subnet of the network gets the n-th IPv6 one), so
	 * the IPv4 compare-and-swap protects both; -ENOSPC if network6 has no n-th subnet. NULL = off.
	 * Call before acquire(). */
	int (*set_network6)(Datastore *d, const IpPrefix *network6, unsigned subnet_len6);
	/* Human-readable text of the last failure (etcd's own message when there is one) for logging;
	 * "" if none. Owned by d, valid until the next call on d. */
	const char *(*last_error)(Datastore *d);
} DatastoreOps;

/*
 * dispatch() errors: transient trouble (etcd unreachable) is handled inside with retries and
 * reported as DS_EVENT_CONNECTION, not as an error. dispatch() returns -EADDRINUSE if our lease
 * expired while etcd was unreachable and another node has taken our subnet in the meantime: the
 * datastore never silently switches subnets, so weftd must decide (typically: exit and restart).
 */

extern const DatastoreOps datastore_etcd_ops;
extern const DatastoreOps datastore_kube_ops;   /* "kubernetes": Node.spec.podCIDRs + annotations */

/* Finds the ops for a kind name ("etcd"); NULL if unknown. */
const DatastoreOps *datastore_ops_find(const char *kind);
