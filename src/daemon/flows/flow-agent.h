/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The flow log's owner in weftd (--flow-log, docs/flows.md): a consumer of the object cache that
 * names what the kernel's conntrack events (flow-log.h) only number. For each event it says
 * whether it is pod or Service traffic (an end in the cluster network, or the destination in a
 * Service range), the pods at both ends, the Service and the endpoint it chose when the
 * connection was DNATed (the original destination is not the reply's source), and for a NEW
 * event the verdict: a connection conntrack confirms has passed this node's filter hooks, so it
 * is "allowed by <policy> <direction> rule N" or "unpoliced", computed from the policy model for
 * the directions this node enforces (policy_verdict()). Connections that policy denies never get
 * a conntrack entry: they come from the drop log (policy-drops.h), which --flow-log turns on, as
 * records "denied by isolation of <pod> (<direction>)" in the same ring.
 *
 * On: writes net.netfilter.nf_conntrack_acct = 1 in weftd's namespace (so DESTROY carries bytes
 * and packets each way; connections created before have none) and
 * net.bridge.bridge-nf-call-iptables/-ip6tables = 1 (so connections between pods of one node
 * reach conntrack, as with a NetworkPolicy). Off: the agent does not exist.
 */

#include <stdio.h>

#include "daemon/cache/object-cache.h"
#include "daemon/network-config.h"
#include "shared/event/event-loop.h"

struct PolicyAgent;

typedef struct FlowAgentConfig {
	const char *node;              /* this node's name: which directions its hooks enforce */
	NetworkConfig *const *network; /* read at each event: the pod networks; *network may be NULL */
	const IpPrefix *service_ranges;
	size_t n_service_ranges;
	unsigned rate;              /* records a second (0: FLOW_LOG_RATE_DEFAULT) */
	struct PolicyAgent *policy; /* its drop log is merged in; may be NULL */
} FlowAgentConfig;

typedef struct FlowAgent FlowAgent;

/* Opens the conntrack event socket in the current namespace (flow_log_new()) and the sysctls
 * above. cfg is copied, what it points to borrowed. 0, -ENOMEM or the kernel's error. */
int flow_agent_new(ObjectCache *cache, EventLoop *loop, const FlowAgentConfig *cfg, FlowAgent **ret);
FlowAgent *flow_agent_free(FlowAgent *a);
extern const ObjectCacheHandlers flow_agent_handlers;
/* weft_flow_log_records_total, weft_flow_log_lost_total{reason="kernel|ring|rate"}. */
int flow_agent_render_metrics(FlowAgent *a, FILE *f);
/* GET /flows?since=SEQ: flow_log_render(). 0 with *ret_status (200, 400) and *ret_body, or -ENOMEM. */
int flow_agent_serve(FlowAgent *a, const char *query, int *ret_status, char **ret_body);
