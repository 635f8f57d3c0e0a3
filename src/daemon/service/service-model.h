/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Services as nftables objects, kube-proxy's nftables mode in weft's table (inet weft), all names
 * starting with "svc-" (NetworkPolicy owns "np-", the plugins "br-"/"pm-"/"fw-", weftd "node-").
 *
 * Fixed objects (service_render_base):
 *
 *   map svc-ips4/6        daddr . l4proto . dport : goto <service chain>   ClusterIPs, externalIPs, LB IPs
 *   map svc-nodeports4/6  l4proto . dport : goto <external chain>         local addresses except loopback
 *   map svc-noep4/6, svc-noep-nodeports4/6 : goto svc-reject | drop        Services without usable endpoints
 *   chain svc-services    the two lookups (from svc-prerouting, dstnat + 10, and svc-output, -90)
 *   chain svc-endpoints-check   the no-endpoint lookups, from svc-filter-{input,forward,output}
 *                         (filter - 5, ct state new): reject = ICMP port unreachable / TCP reset
 *   chain svc-postrouting srcnat - 5: masquerade what carries mark 0x4000 (hairpin, external
 *                         traffic with externalTrafficPolicy Cluster)
 *
 * Per Service (one ServiceUnit: its chains and map elements), per port and family:
 *
 *   svc-<ns>/<name>/<proto>/<port>/ip4         rule i: numgen random mod (N-i) == 0 goto <endpoint i>
 *   svc-<ns>/<name>/<proto>/<port>/ip4/ext     NodePort / external IP / LB IP entry: mark for
 *                                              masquerade + goto the service chain (Cluster), or
 *                                              local endpoints only (Local; none: drop)
 *   svc-<ns>/<name>/<proto>/<port>/ip4/local   numgen over this node's endpoints (Local)
 *   svc-<ns>/<name>/<proto>/<port>/ip4/ep/<addr>/<port>   hairpin mark + DNAT
 *
 * sessionAffinity ClientIP (kube-proxy's nftables mode): per endpoint a set
 *   svc-<ns>/<name>/<proto>/<port>/ip4/ep/<addr>/<port>/aff<timeout>   dynamic, timeout
 * that the endpoint chain refreshes (update @set { ip saddr }) and that every choosing chain
 * consults before its numgen (ip saddr @set goto <endpoint>). The timeout is in the name: a
 * changed timeoutSeconds makes new sets (the kernel cannot change a set's timeout in place).
 *
 * A unit is a pure function of the Service, its EndpointSlices and the node; diffing two units of
 * one Service renders a batch touching only that Service's objects.
 */

#include <stdbool.h>
#include <stdio.h>

#include "daemon/cache/kube-objects.h"
#include "shared/ip/ip-addr.h"

#define SVC_PREFIX "svc-"
#define SVC_MASQ_MARK "0x4000"

typedef struct SvcChain {
	char *name;
	char *rules; /* "add rule" bodies, one per line, without the "add rule inet weft <chain> " */
} SvcChain;

typedef struct SvcElem {
	const char *map; /* static: "svc-ips4" ... */
	char *key;       /* "10.96.0.10 . tcp . 80" */
	char *value;     /* "goto svc-..." | "goto svc-reject" | "drop" */
} SvcElem;

typedef struct SvcSet {
	char *name;
	char *decl; /* "{ type ipv4_addr; flags dynamic,timeout; timeout 3s; }" */
} SvcSet;

typedef struct ServiceUnit {
	char *key; /* "ns/name" */
	size_t n_chains, n_elems, n_sets;
	SvcChain *chains; /* sorted by name */
	SvcSet *sets;     /* sorted by name */
	SvcElem *elems;   /* sorted by map, key */
} ServiceUnit;

typedef struct ServiceModelInput {
	const char *node; /* this node's name (Local traffic policies) */
	const KubeService *svc;
	const KubeEndpointSlice *const *slices; /* the Service's EndpointSlices */
	size_t n_slices;
	/* the pod networks (optional): pods reaching an externalTrafficPolicy Local entry are sent to
	 * every endpoint, as kube-proxy's "short-circuit" does */
	const IpPrefix *pod_networks;
	size_t n_pod_networks;
} ServiceModelInput;

/* Builds the unit of one Service (empty for headless and ExternalName Services). 0 or -ENOMEM. */
int service_unit_build(const ServiceModelInput *in, ServiceUnit **ret);
ServiceUnit *service_unit_free(ServiceUnit *u);
DEFINE_TRIVIAL_CLEANUP_FUNC(ServiceUnit *, service_unit_free);
bool service_unit_equal(const ServiceUnit *a, const ServiceUnit *b);
const SvcChain *service_unit_chain(const ServiceUnit *u, const char *name);
const SvcSet *service_unit_set(const ServiceUnit *u, const char *name);

/* The fixed objects (idempotent: add, flush, rules). */
void service_render_base(FILE *f);
/* The fixed maps' elements removed (start-up full sync: the units then add theirs again). */
void service_render_flush_maps(FILE *f);
/*
 * old -> new of one Service (either may be NULL): element deletes, chain adds/flushes and rules,
 * element adds, then removed chains flushed and deleted. With `full`, every chain of `new` is
 * flushed before its rules (the kernel may hold it from an earlier run).
 */
void service_render_unit_diff(FILE *f, const ServiceUnit *old, const ServiceUnit *new, bool full);

#include "daemon/service/service-conntrack.h"

/*
 * The UDP conntrack entries old -> new makes stale (kube-proxy's rules): a Service IP . port or a
 * NodePort that is gone or lost its endpoints (entries to it), and an endpoint no longer chosen
 * (DNATed entries whose reply comes from it). *ret (caller frees) holds *ret_n filters. 0 or -ENOMEM.
 */
int service_unit_stale_udp(const ServiceUnit *old, const ServiceUnit *new, ServiceCtFilter **ret, size_t *ret_n);
