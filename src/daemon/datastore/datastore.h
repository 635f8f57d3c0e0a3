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
#include "shared/ip/ip-addr.h"

typedef struct Datastore Datastore;

/* Where the leases live (weftd's --datastore); names as on the command line: "etcd", "kubernetes". */
typedef enum DatastoreKind {
	DATASTORE_ETCD,
	DATASTORE_KUBERNETES,
	_DATASTORE_KIND_MAX,
} DatastoreKind;

const char *datastore_kind_to_string(DatastoreKind k);
/* 0, or -EINVAL for a name that is no kind. */
int datastore_kind_from_string(const char *s, DatastoreKind *ret);

/* Kubernetes node names are DNS subdomains (RFC 1123): at most 253 characters. NodeLease holds
 * every valid name whole (on the heap); parsers refuse longer ones (LEASE_REJECT_NODE_NAME) and
 * never cut them, so two long names can never collide into one. */
#define NODE_NAME_MAX 253

/*
 * Why a remote lease is not installed. Parsers set NodeLease.invalid for what they could not read;
 * lease-filter.c decides the rest. The names (lease_reject_to_string) are the `reason` label of
 * weft_leases_rejected_total.
 */
typedef enum LeaseReject {
	LEASE_ACCEPTED = 0,
	LEASE_REJECT_MALFORMED,       /* value is not a lease object (bad JSON, bad key) */
	LEASE_REJECT_NODE_NAME,       /* not a valid Kubernetes node name */
	LEASE_REJECT_OUTSIDE_NETWORK, /* subnet not inside Network / Network6 */
	LEASE_REJECT_PREFIX_LENGTH,   /* subnet length is not SubnetLen / SubnetLen6 */
	LEASE_REJECT_OWN_SUBNET,      /* overlaps this node's own subnet */
	LEASE_REJECT_CONNECTED,       /* covers an address of a network directly connected to this node */
	LEASE_REJECT_PUBLIC_IP,       /* unspecified, loopback, multicast, broadcast or one of ours */
	LEASE_REJECT_VTEP_MAC,        /* not unicast, or this node's own */
	LEASE_REJECT_OVERLAP,         /* overlaps an older lease (that one wins) */
	LEASE_REJECT_DUPLICATE_NAME,  /* node name already claimed by an older lease (or by us) */
	LEASE_REJECT_DUPLICATE_MAC,   /* VTEP MAC already claimed by an older lease */
	LEASE_REJECT_KERNEL_CONFLICT, /* a route weft did not install holds the destination */
	LEASE_REJECT_PUBLIC_KEY,      /* WireGuard key not 32 bytes of base64, all zero, or this node's */
	LEASE_REJECT_DUPLICATE_KEY,   /* WireGuard public key already claimed by an older lease */
	_LEASE_REJECT_MAX,
} LeaseReject;

/* One node's lease as stored: subnet + what other nodes need to reach it. It owns node_name:
 * copy a lease with node_lease_copy() and release it with node_lease_done(); a plain struct copy
 * is a borrowed view, valid while the original is. */
typedef struct NodeLease {
	char *node_name;     /* malloc'ed; NULL = not known (a DELETE by key, an unreadable value) */
	IpPrefix subnet;     /* pod subnet of that node (IPv4; subnet6 for dual-stack) */
	IpPrefix subnet6;    /* AF_UNSPEC = none */
	IpAddr public_ip;    /* underlay address other nodes use (public_ip6 too: compared with it) */
	IpAddr public_ip6;   /* next to an IPv4 public_ip, the IPv6 one ("publicIPv6"; wireguard) */
	char backend[16];    /* "host-gw" | "vxlan" */
	uint8_t vtep_mac[6]; /* vxlan */
	bool has_vtep_mac;
	uint8_t public_key[32]; /* wireguard: the node's public key (etcd "publicKey", weft.dev/public-key) */
	bool has_public_key;
	int64_t expiration; /* unix seconds when the lease expires if not renewed, 0 = unknown */
	/* Creation order in the datastore, for deciding between conflicting leases (the older wins):
	 * etcd create_revision, Kubernetes creationTimestamp (unix seconds); 0 = unknown (sorts first,
	 * ties are broken by the key). */
	int64_t created;
	/* The datastore key the lease was read from (etcd: the full key; NULL = node_name, which is
	 * what Kubernetes keys Nodes on). Valid only during the event callback: copy it to keep it. */
	const char *key;
	/* Set by the parser when a field could not be read (first problem wins); `invalid_detail`
	 * names the field (static string). */
	LeaseReject invalid;
	const char *invalid_detail;
} NodeLease;

/* The key a lease is stored under (see NodeLease.key). */
static inline const char *node_lease_key(const NodeLease *l) {
	return l->key ?: l->node_name ?: "";
}

/* Replaces l->node_name with a copy of name (NULL = none). 0 or -ENOMEM (l unchanged). */
int node_lease_set_name(NodeLease *l, const char *name);
/* *dst = *src with its own copy of node_name (key stays borrowed). dst is overwritten, not
 * released. 0 or -ENOMEM (dst untouched). */
int node_lease_copy(NodeLease *dst, const NodeLease *src);
/* Everything that changes what a node programs or how a conflict is decided: name, subnets, public
 * IP, backend, VTEP MAC, WireGuard public key, creation order and the parser's verdict. Not the expiration (it moves on
 * every renewal), the borrowed key or invalid_detail. */
bool node_lease_equal(const NodeLease *a, const NodeLease *b);
/* Reads a published WireGuard public key (44 characters of padded base64, 32 bytes) into
 * l->public_key (has_public_key is the caller's). An all-zero key parses: the filter refuses it,
 * with the reason counted. 0 or -EINVAL (l unchanged). */
int lease_public_key_parse(const char *s, NodeLease *l);
/* Frees what l owns; l stays usable (node_name NULL). */
void node_lease_done(NodeLease *l);
/* node_lease_done() on each of n leases, then free(l). NULL-safe. */
void node_leases_free(NodeLease *l, size_t n);

typedef enum DatastoreEventType {
	DS_EVENT_NODE_UPSERT,    /* a lease appeared or changed */
	DS_EVENT_NODE_DELETE,    /* released or expired */
	DS_EVENT_RESYNC,         /* watch was restarted; `nodes` is the full current set */
	DS_EVENT_CONNECTION,     /* connectivity changed; `connected` says which way */
	DS_EVENT_SELF_RECREATED, /* our own lease had vanished from the store and was put back */
} DatastoreEventType;

typedef struct DatastoreEvent {
	DatastoreEventType type;
	const NodeLease *node;  /* UPSERT / DELETE */
	const NodeLease *nodes; /* RESYNC */
	size_t n_nodes;
	bool connected; /* CONNECTION */
} DatastoreEvent;

typedef void (*DatastoreEventFn)(const DatastoreEvent *ev, void *userdata);

typedef struct DatastoreConfig {
	DatastoreKind kind;
	const char *endpoints;  /* "http://127.0.0.1:2379[,http://...]" */
	const char *prefix;     /* key prefix, default "/weft/network" */
	const char *kubeconfig; /* kubernetes kind */
	int lease_ttl_sec;      /* default 60 (renewed at ttl/3) */
} DatastoreConfig;

typedef struct DatastoreOps {
	DatastoreKind kind;
	/* Validates c, loads what it names (the kubeconfig) and connects. -EINVAL: c can never work
	 * (etcd: no endpoints, a prefix not starting with '/'; kubernetes: the kubeconfig or the
	 * in-cluster credentials cannot be loaded; logged by the module): weftd exits with its
	 * configuration status. Any other error is transient and open() is retried. */
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

	int (*get_fd)(Datastore *d);          /* pollable (EPOLLIN) */
	int (*dispatch)(Datastore *d);        /* do pending I/O and timers; never blocks */
	int (*next_timeout_ms)(Datastore *d); /* -1 = none */

	/* Added by the etcd module (optional entries, NULL if a kind lacks them): */

	/* Restrict acquire() to subnets whose address lies in [min, max] (SubnetMin/SubnetMax of the
	 * network config); NULL or AF_UNSPEC = no bound. Call before acquire(). */
	int (*set_subnet_range)(Datastore *d, const IpAddr *min, const IpAddr *max);
	/* Dual-stack: acquire() also fills the lease's subnet6 with a /subnet_len6 of network6. It is
	 * derived from the IPv4 subnet (the n-th IPv4 subnet of the network gets the n-th IPv6 one), so
	 * the IPv4 compare-and-swap protects both; -ENOSPC if network6 has no n-th subnet. NULL = off.
	 * Call before acquire(). */
	int (*set_network6)(Datastore *d, const IpPrefix *network6, unsigned subnet_len6);
	/* Lists everything again (a RESYNC follows) even though the watch is healthy, so that state
	 * missed by the watch (or an event that never came) is repaired. NULL = not supported. */
	int (*relist)(Datastore *d);
	/* Human-readable text of the last failure (etcd's own message when there is one) for logging;
	 * "" if none. Owned by d, valid until the next call on d. */
	const char *(*last_error)(Datastore *d);
	/* The credentials the kubernetes datastore loaded in open() (borrowed, valid while d is), so
	 * that weftd's object cache talks to the same API server without loading the kubeconfig a
	 * second time. NULL for other kinds. */
	const struct KubeConfig *(*kube_config)(Datastore *d);
} DatastoreOps;

/*
 * dispatch() errors: transient trouble (etcd unreachable) is handled inside with retries and
 * reported as DS_EVENT_CONNECTION, not as an error. dispatch() returns -EADDRINUSE if our lease
 * expired while etcd was unreachable and another node has taken our subnet in the meantime: the
 * datastore never silently switches subnets, so weftd must decide (it stays up, keeps what is
 * programmed and reports itself unhealthy). The same happens when our key is deleted or overwritten
 * under a running node and another node holds the subnet by the time we put it back.
 *
 * A RESYNC is a full list the datastore vouches for: etcd sends none while the store lacks our own
 * lease (wiped or restored from an old snapshot) and for a settling time after putting it back, so
 * weftd never prunes against a store that other nodes have not refilled yet.
 */

extern const DatastoreOps datastore_etcd_ops;
extern const DatastoreOps datastore_kube_ops; /* Node.spec.podCIDRs + annotations */

/*
 * Pure parsers of one stored object into a NodeLease (also what the fuzzers drive). Field problems
 * do not fail the parse: they set ret->invalid so the lease is counted and refused, not silently
 * dropped. etcd: `key` must lie under `subnets_prefix` ("<prefix>/subnets/") and be
 * <network address>-<length>; value NULL/"" = only the key (a DELETE). Kubernetes: a Node object.
 * 0, or -EINVAL when not even a key/name can be read (nothing to refer to the object by).
 * datastore_kube_node_parse() returns 1 if the Node is a lease (podCIDRs and public IP annotation
 * present), 0 if it is not ready yet.
 */
int datastore_etcd_lease_parse(const char *subnets_prefix, const char *key, const char *value, NodeLease *ret);
struct json_t;
int datastore_kube_node_parse(const struct json_t *node, NodeLease *ret);

/* True for a valid Kubernetes node name: a DNS subdomain (RFC 1123), lowercase, at most 253. */
bool node_name_valid(const char *name);

/* The ops of a kind; NULL if it is not compiled in. */
const DatastoreOps *datastore_ops_find(DatastoreKind kind);
