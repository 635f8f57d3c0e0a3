/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the Service agent's files share (service-agent.h is the agent's interface):
 *   service-agent.c  the agent: its state, the object cache's deltas (dirty Services), the sync
 *                    runner's callbacks (nft-sync.h), healthCheckNodePorts, timers, metrics
 *   service-build.c  one Service's unit under the address policy and the claims (the policy
 *                    refreshed from the node, refusals reported once)
 *   service-sync.c   the passes: full and partial batches, the narrowing of a refused one and the
 *                    quarantine of the Services that cause it, stale UDP conntrack, uninstall
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/nft-sync.h"
#include "daemon/service/service-admission.h"
#include "daemon/service/service-agent.h"
#include "daemon/service/service-compile.h"
#include "daemon/service/service-counters.h"
#include "daemon/service/service-health.h"
#include "shared/nft/nft-batch.h"

/*
 * A partial sync goes to the kernel in batches of about this much text. libnftables holds the parse
 * of a whole batch at once, about 20 bytes per byte of text: 2,000 new Services in one etcd
 * transaction made a 3 MB batch and a 62 MB peak (heaptrack), which glibc then kept. Each Service's
 * change stays in one batch, so it is still applied atomically; only the set of Services is split.
 */
#define BATCH_BYTES (256 * 1024)
#define QUARANTINE_RETRY_USEC (30 * 1000 * 1000)

/* A refusal already logged and counted: "ns/name: <what> refused: <reason>" (sorted). */
typedef struct Report {
	char *line;
	uint8_t reason; /* ServiceRejectReason */
} Report;

struct ServiceAgent {
	ObjectCache *cache;
	EventLoop *loop;
	NftSync *sync; /* the nft context, debounce, retry and sync metrics (nft-sync.h) */
	ServiceAgentConfig cfg;
	bool base; /* the fixed svc-* objects are in place */
	ServiceHealth *health;
	SvcSlotPool *slots;  /* the endpoint-map ranges of the units' chains */
	SvcRefs *refs;       /* the shared sets' elements, counted over the units */
	ServiceUnit **units; /* sorted by key */
	size_t n_units, cap_units;
	char **dirty; /* "ns/name" */
	size_t n_dirty, cap_dirty;
	bool dirty_oom; /* a key could not be remembered: sync everything */
	/* a full pass: its units and the kernel's svc-* names, from render to applied */
	ServiceUnit **full_v;
	size_t full_n, full_cap;
	char **kernel, **kernel_sets;
	SvcKernelState *kernel_state; /* the counted maps and named counters (service-counters.h) */
	size_t last_batch_bytes;
	uint64_t conntrack_deleted;
	/* Services whose objects nftables refused (quarantine_add): not programmed in their refused
	 * version, retried when they change and every QUARANTINE_RETRY_USEC */
	char **quarantined;
	EventSource *retry_timer;
	uint64_t rejected_nftables;
	/* the address policy and the conflicts (service-admission.h) */
	EventSource *recheck;
	ServiceAdmissionPolicy policy; /* points into cfg and the fields below */
	IpPrefix pod_networks[2];
	ServiceReservedPort reserved[3];
	IpAddr *node_addrs;
	size_t n_node_addrs;
	IpPrefix *lb_pools; /* the LoadBalancer pools' networks, from the network config */
	size_t n_lb_pools;
	bool lb_pools_changed; /* since the last complete policy refresh */
	ServiceClaims *claims;
	Report *reports;
	size_t n_reports;
	uint64_t rejected[_SERVICE_REJECT_MAX];
};

/* service-agent.c: the units (sorted by key) and the dirty set */
/* Index of key in units, or where it would go (*found false). */
size_t service_agent_unit_find(ServiceAgent *a, const char *key, bool *found);
/* Puts u (may be NULL: removes) in place of key's unit; frees the old one. */
int service_agent_unit_replace(ServiceAgent *a, const char *key, ServiceUnit *u);
void service_agent_mark_dirty_key(ServiceAgent *a, const char *key);
void service_agent_clear_dirty(ServiceAgent *a);

/* service-build.c */
/* The policy as of now; 1 if it changed since the last call, 0 if not, -EAGAIN while the node
 * addresses cannot be known yet. */
int service_build_policy_refresh(ServiceAgent *a);
/* svc's claims from its current spec (NULL: it is gone); who won or lost a key by it is marked dirty. */
int service_build_claim(ServiceAgent *a, const char *key, const KubeService *svc);
/* The unit Service svc should have now; old: the one programmed now (its chains keep their slots). */
int service_build_unit(ServiceAgent *a, const KubeService *svc, const ServiceUnit *old, ServiceUnit **ret);
/* The claims of every dirty Service, before any is built. */
int service_build_claim_dirty(ServiceAgent *a);

/* service-sync.c: the runner's passes (service-agent.c's callbacks call them) */
void service_sync_full_done(ServiceAgent *a);
int service_sync_full_render(ServiceAgent *a, NftBatch *b);
int service_sync_full_refused(ServiceAgent *a, const char *error);
void service_sync_full_applied(ServiceAgent *a, size_t batch_bytes);
int service_sync_dirty(ServiceAgent *a);
