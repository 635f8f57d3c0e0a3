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
 *   set svc-cluster-ips4/6   every ClusterIP (counted over the units, as svc-hairpin4/6)
 *   chain svc-cluster-ips-check   from svc-filter-{forward,output}, only for a family whose
 *                         --service-cluster-ip-range is known: a ClusterIP on a port it does not
 *                         define is rejected (TCP reset / ICMP port unreachable), any other
 *                         address of the range dropped, so nothing follows the range's route out
 *   sets svc-fw-ips4/6 (LB IP . proto . port with loadBalancerSourceRanges) and svc-fw-allow4/6
 *                         (LB IP . proto . port . source prefix, interval): chain svc-firewall-check,
 *                         from svc-fw-prerouting / svc-fw-output (filter, -110: before dstnat, the LB IP is
 *                         still the destination), drops new connections from other sources
 *   svc-output returns before any DNAT for packets carrying SVC_SELF_MARK (weftd's own datastore
 *                         and API server sockets), unless their destination is a ClusterIP
 *
 * Per Service (one ServiceUnit: its chains and map elements), per port and family:
 *
 *   svc-<ns>/<name>/<proto>/<port>/ip4         the endpoint choice (below)
 *   svc-<ns>/<name>/<proto>/<port>/ip4/ext     NodePort / external IP / LB IP entry: mark for
 *                                              masquerade + goto the service chain (Cluster), or
 *                                              local endpoints only (Local; none: drop)
 *   svc-<ns>/<name>/<proto>/<port>/ip4/local   the choice among this node's endpoints (Local)
 *
 * Endpoint choice: one rule, `dnat ip to numgen random mod N offset B map @svc-eps4-tcp-<bucket>`,
 * and N elements B+i : <addr> . <port> in that shared map (one per family, protocol and bucket). Each choosing chain
 * owns a slot (B = slot << SVC_SLOT_BITS, from an SvcSlotPool, kept across rebuilds of the Service so a change touches
 * only its own elements); the map is one of SVC_EPS_BUCKETS by slot, because the kernel checks each new element of a
 * map against every rule bound to it. One endpoint: a plain dnat. No chain per endpoint: every chain is one more entry
 * in the dump libnftables reads before each batch, which the kernel serves in time quadratic in the number of chains.
 *
 * loadBalancerSourceRanges (kube-proxy's firewall-ips): per LB IP . proto . port of the Service an
 * element of svc-fw-ips4/6 and one of svc-fw-allow4/6 per source range of the family (none of the
 * family: every source of that family is dropped: fail closed). Sets, not a chain per Service: the
 * check is two lookups whatever the number of Services and ranges.
 *
 * Hairpin (a pod reaching itself through its Service): svc-postrouting masquerades DNATed
 * packets whose saddr . daddr is in svc-hairpin4/6, which holds A . A for every endpoint A on
 * this node (or of no node). Several Services share an endpoint, so these elements are counted
 * over all units (SvcRefs) rather than rendered by the unit diff.
 *
 * sessionAffinity ClientIP (kube-proxy's nftables mode), and more endpoints than a slot holds:
 * the endpoint chains instead,
 *   svc-<ns>/<name>/<proto>/<port>/ip4/ep/<addr>/<port>   hairpin mark + DNAT
 * chosen by `numgen random mod (N-i) == 0 goto <endpoint i>` rules; with affinity, per endpoint
 * a set
 *   svc-<ns>/<name>/<proto>/<port>/ip4/ep/<addr>/<port>/aff<timeout>   dynamic, timeout
 * that the endpoint chain refreshes (update @set { ip saddr }) and that every choosing chain
 * consults before its numgen (ip saddr @set goto <endpoint>). The timeout is in the name: a
 * changed timeoutSeconds makes new sets (the kernel cannot change a set's timeout in place).
 *
 * Counters (docs/metrics.md): the endpoint maps and the svc-noep* maps are declared with the counter
 * flag, so the lookup that picks an element counts one packet on it (NAT chains see a connection's
 * first packet only, the no-endpoint check runs for ct state new: each is one new connection); a
 * DNAT rule outside the maps (one endpoint, an endpoint chain) counts on a named counter,
 * <chain>/ep/<addr>/<port> or the endpoint chain's name, which outlives the chain's flushes and is
 * another counter for another endpoint. The unit lists them (SvcSeries); docs/service-datapath.md.
 *
 * A unit is a pure function of the Service, its EndpointSlices and the node; diffing two units of
 * one Service renders a batch touching only that Service's objects.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/service/service-admission.h"
#include "shared/ip/ip-addr.h"
#include "shared/kube/kube-objects.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-names.h" /* the svc-* names */

#define SVC_MASQ_MARK "0x4000"
/*
 * weftd's own sockets (etcd, the API server: http-multi.c sets SO_MARK): svc-output does not DNAT
 * them except to a ClusterIP (an in-cluster weftd reaches the API server through the `kubernetes`
 * Service), so no externalIP, LB IP or NodePort can take weftd's datastore traffic. Bit 12: kube-proxy
 * uses 14 (masquerade) and 15 (drop), the portmap plugin 13, Calico the upper 16 bits, Cilium 8-11.
 */
#define SVC_SELF_MARK_VALUE 0x1000u
#define SVC_SELF_MARK "0x1000"

#define SVC_SLOT_BITS 14 /* endpoints one choosing chain can map: 16384 */
#define SVC_SLOTS (1u << (32 - SVC_SLOT_BITS))
#define SVC_EPS_BUCKETS 128 /* endpoint maps per family and protocol */

typedef struct SvcChain {
	char *name;
	char *rules;   /* "add rule" bodies, one per line, without the "add rule inet weft <chain> " */
	uint32_t slot; /* its range in an svc-eps map (0: none) */
} SvcChain;

typedef struct SvcElem {
	const char *map; /* static: "svc-ips4" ... */
	char *key;       /* "10.96.0.10 . tcp . 80" */
	char *value;     /* "goto svc-..." | "goto svc-reject" | "drop" | "10.244.1.5 . 8080" | "" (a set) */
} SvcElem;

typedef struct SvcSet {
	char *name;
	char *decl; /* "{ type ipv4_addr; flags dynamic,timeout; timeout 3s; }" */
} SvcSet;

/*
 * A counter of the Service's datapath and the series it adds to (service-counters.h reads them):
 * an element of a counted map (svc-eps*: new connections DNATed to one endpoint; svc-noep*: new
 * connections refused for want of endpoints), or a named counter on a DNAT rule (one endpoint, the
 * endpoint chains). Several counters may add to one series (ClusterIP and NodePort, the choosing
 * chains of internal and external traffic).
 */
typedef struct SvcSeries {
	const char *map; /* static: a counted map; NULL: the named counter `key` */
	char *key;       /* the element's key, or the counter's name */
	char *labels;    /* namespace="..",service="..",port="80",protocol="TCP",endpoint="10.244.1.5:8080" |
			    action="reject" */
	bool noep;       /* weft_service_no_endpoint_total, else weft_service_new_connections_total */
} SvcSeries;

typedef struct ServiceUnit {
	char *key; /* "ns/name" */
	size_t n_chains, n_elems, n_sets;
	SvcChain *chains; /* sorted by name */
	SvcSet *sets;     /* sorted by name */
	SvcElem *elems;   /* sorted by map, key */
	char **targets;   /* "<proto>/<addr>/<port>" of every endpoint some chain may choose, sorted */
	size_t n_targets;
	char **counters; /* named counters (of the DNAT rules outside the maps), sorted */
	size_t n_counters;
	SvcSeries *series; /* sorted by (noep, labels) */
	size_t n_series;
} ServiceUnit;

/* Slots of the endpoint maps (a bitmap: 32 KiB). */
typedef struct SvcSlotPool SvcSlotPool;
int svc_slot_pool_new(SvcSlotPool **ret);
SvcSlotPool *svc_slot_pool_free(SvcSlotPool *p);
void svc_slot_pool_reset(SvcSlotPool *p);
size_t svc_slot_pool_used(const SvcSlotPool *p);
/* u's slots marked taken (a full sync builds the units again keeping their slots, so the elements of
 * the endpoint maps, and their counters, stay). */
void svc_slot_pool_reserve(SvcSlotPool *p, const ServiceUnit *u);
/* After old -> new is programmed: old's slots that new does not keep are free again. */
void svc_slot_pool_release(SvcSlotPool *p, const ServiceUnit *old, const ServiceUnit *new);

typedef struct ServiceModelInput {
	const char *node; /* this node's name (Local traffic policies) */
	const KubeService *svc;
	const KubeEndpointSlice *const *slices; /* the Service's EndpointSlices */
	size_t n_slices;
	/* the pod networks (optional): pods reaching an externalTrafficPolicy Local entry are sent to
	 * every endpoint, as kube-proxy's "short-circuit" does */
	const IpPrefix *pod_networks;
	size_t n_pod_networks;
	SvcSlotPool *slots;     /* where new choosing chains take their slot */
	const ServiceUnit *old; /* optional: its chains keep their slots */
	/* optional (NULL admits all): may the Service program `ip` (NULL for node ports) as `use`
	 * for protocol . port? Refused and losing addresses, ports and endpoints are never rendered
	 * (service-admission.h); the rest of the Service is. */
	bool (*admit)(void *userdata, ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol, uint16_t port);
	void *admit_userdata;
} ServiceModelInput;

/* Builds the unit of one Service (empty for headless and ExternalName Services). 0 or -ENOMEM. */
int service_unit_build(const ServiceModelInput *in, ServiceUnit **ret);
ServiceUnit *service_unit_free(ServiceUnit *u);
DEFINE_TRIVIAL_CLEANUP_FUNC(ServiceUnit *, service_unit_free);
bool service_unit_equal(const ServiceUnit *a, const ServiceUnit *b);
const SvcChain *service_unit_chain(const ServiceUnit *u, const char *name);
const SvcSet *service_unit_set(const ServiceUnit *u, const char *name);
const SvcElem *service_unit_elem(const ServiceUnit *u, const char *map, const char *key);

/*
 * Elements of the shared sets (svc-hairpin4/6), counted over every unit. svc_refs_update() counts
 * old -> new of one Service and renders the elements that appear (0 -> 1) or vanish (1 -> 0) into b
 * (NULL: count only). -ENOMEM leaves the counts unknown: reset and render all (a full sync).
 */
typedef struct SvcRefs SvcRefs;
int svc_refs_new(SvcRefs **ret);
SvcRefs *svc_refs_free(SvcRefs *r);
void svc_refs_reset(SvcRefs *r);
int svc_refs_update(SvcRefs *r, const ServiceUnit *old, const ServiceUnit *new, NftBatch *b);
size_t svc_refs_size(const SvcRefs *r);
/* "add element" (idempotent) of u's shared elements that other units still hold: after a batch with
 * u's diff was refused and u's counts were undone, an element only u's part of the batch added. */
void svc_refs_render_held(SvcRefs *r, const ServiceUnit *u, NftBatch *b);

/* The fixed objects (idempotent: add, flush, rules). ranges: --service-cluster-ip-range (at most one
 * per family; none: no svc-cluster-ips-check rule for that family). */
void service_render_base(NftBatch *b, const IpPrefix *ranges, size_t n_ranges);
/* The fixed maps' and sets' elements removed (a full sync: the units then add theirs again), but for
 * the counted maps ks read (service-counters.h) and understood: those keep their elements, and
 * service_render_full() changes only what differs, so the elements keep their counters. */
typedef struct SvcKernelState SvcKernelState;
void service_render_flush_maps(NftBatch *b, const SvcKernelState *ks);
/*
 * Every unit anew (a full sync, after service_render_base(), service_render_flush_maps() and a
 * flush of every per-Service chain the kernel holds): all chains and rules, then each map's
 * elements in one command; counts the shared sets' elements in refs (reset it first). 0 or -ENOMEM.
 */
int service_render_full(NftBatch *b, ServiceUnit *const *units, size_t n, SvcRefs *refs, const SvcKernelState *ks);
/*
 * old -> new of one Service (either may be NULL): element deletes, chain adds/flushes and rules,
 * element adds, then removed chains flushed and deleted. With
 * `full`, every chain of `new` is flushed before its rules (the kernel may hold it from an earlier
 * run). The shared sets' elements are not rendered here (SvcRefs).
 */
void service_render_unit_diff(NftBatch *b, const ServiceUnit *old, const ServiceUnit *new, bool full);

#include "daemon/service/service-conntrack.h"

/*
 * The UDP conntrack entries old -> new makes stale (kube-proxy's rules): a Service IP . port or a
 * NodePort that is gone or lost its endpoints (entries to it), and an endpoint no longer chosen
 * (DNATed entries whose reply comes from it). *ret (caller frees) holds *ret_n filters. 0 or -ENOMEM.
 */
int service_unit_stale_udp(const ServiceUnit *old, const ServiceUnit *new, ServiceCtFilter **ret, size_t *ret_n);
