/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's NetworkPolicy enforcement: a consumer of the object cache that, once the cache has
 * synced, compiles the cluster's Pods, Namespaces and NetworkPolicies for this node
 * (policy-compile.h) and programs the result into table inet weft. The first program is one batch
 * (which also removes np-* objects a previous run left behind); after that every change of a pod,
 * namespace or policy schedules a recompile POLICY_AGENT_DEBOUNCE_USEC later, and the difference
 * against what is programmed goes in as one batch. A failed batch is retried from scratch (the
 * kernel's np-* objects listed as stale) after a second, then with a backoff up to 16 s. The
 * debounce, retry and sync metrics are the shared runner's (nft-sync.h).
 *
 * Same-node traffic: pods of one node talk across the node's bridge at layer 2, which the inet
 * forward hook does not see. With any policy programmed, the agent sets
 * net.bridge.bridge-nf-call-iptables and -ip6tables in weftd's namespace, so br_netfilter passes
 * bridged IP frames through the inet hooks (and conntrack) as well: the same chains police
 * same-node and cross-node traffic, without changing how pods are wired. The module must be loaded
 * (weftd loads no modules); without it, a warning says same-node traffic is not policed.
 */

#include <stdint.h>
#include <stdio.h>

#include "daemon/cache/object-cache.h"
#include "shared/event/event-loop.h"
#include "shared/nft/nft.h"

#define POLICY_AGENT_DEBOUNCE_USEC 2000
/* a failed program is retried (full) after 1 s, doubled per failure up to 16 s (nft-sync.h) */
#define POLICY_AGENT_RETRY_USEC (1000 * 1000)
#define POLICY_AGENT_RETRY_MAX_USEC (16 * 1000 * 1000)

typedef struct PolicyAgent PolicyAgent;

/* 0, -ENOMEM or nftables' error (opens its own NftCtx in the current namespace). `node` is
 * borrowed and must outlive the agent. */
int policy_agent_new(ObjectCache *cache, EventLoop *loop, const char *node, bool log_drops, PolicyAgent **ret);
PolicyAgent *policy_agent_free(PolicyAgent *a);
/* `weftd uninstall`: deletes every np-* chain, set and map of table inet weft in one batch (the
 * table's other objects stay). *ret_n: how many there were. 0, -ENOMEM or nftables' error. */
int policy_uninstall(NftCtx *nft, size_t *ret_n, char **ret_error);
/* What to register with the cache (userdata: the agent). */
extern const ObjectCacheHandlers policy_agent_handlers;
/* /debug/policy/explain?from=&to=&port=&proto=: policy_explain() on the cache's objects. 0 with
 * *ret_status (200, 400 bad query, 404 unknown endpoint) and *ret_body (text), or -ENOMEM. */
int policy_agent_explain(PolicyAgent *a, const char *query, int *ret_status, char **ret_body);
/* weft_policy_* lines for /metrics: syncs, failures, objects, last sync duration, and the named
 * counters (policy-compile.h) read with one `list counters`: per policy, direction and rule the
 * packets accepted; per isolation class and per isolating policy the packets denied. */
int policy_agent_render_metrics(PolicyAgent *a, FILE *f);
/* Every counter object of table inet weft, read with one nf_tables netlink dump (no libnftables
 * cache: at 1,000 policies `list counters` fills it with every rule and element first). 0,
 * -ENOENT (no table), -EINTR (the table changed during the dump: start over), other -errno. */
typedef void (*PolicyCounterFn)(const char *name, uint64_t packets, void *userdata);
int policy_counters_dump(PolicyCounterFn fn, void *userdata);
/* GET /policy/drops?since=SEQ: the drops read from nfnetlink_log (--policy-log-drops) after SEQ,
 * as JSON lines (policy-drops.h); 404 when the drop log is off or went to the kernel log. 0 with
 * *ret_status and *ret_body, or -ENOMEM. */
int policy_agent_drops(PolicyAgent *a, const char *query, int *ret_status, char **ret_body);
/* The drop log (--policy-log-drops, or --flow-log, which merges it into its stream), NULL when
 * off or when nfnetlink_log could not be bound. */
struct PolicyDrops *policy_agent_drop_log(PolicyAgent *a);
