/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's LoadBalancer address assigner (MetalLB's controller, Cilium's LB-IPAM): a consumer of
 * the object cache that, on the one node elected (lb-election.h), gives each LoadBalancer Service
 * its addresses from the network config's pools (lb-ipam.h) and writes them to the Service's
 * status.loadBalancer.ingress (ipMode VIP). Every node's Service agent then programs them like any
 * LoadBalancer ingress IP.
 *
 * Which Services: type LoadBalancer with no spec.loadBalancerClass or weft's own
 * (KUBE_LB_CLASS_WEFT); the rest belong to another implementation and are left alone.
 *
 * A Service refused what it asks for (an address outside the pools, one another Service holds, a
 * malformed annotation) or left pending (pool exhausted) gets one log line per distinct reason,
 * the counter weft_loadbalancer_services{state="refused|pending"} and an empty ingress: it is
 * never programmed. Every Service of ours carries the condition of lb-condition.h in
 * status.conditions (False with the reason, or True once assigned); status is written only when
 * its ingress or that condition is not already right.
 *
 * Writes, etcd: read the Service's key, replace status.loadBalancer.ingress and our condition,
 * write it back in one transaction that holds only if the Service did not change in between and
 * the leader key is still ours (the fence). Kubernetes: read the Service, then a PUT of its status
 * subresource (the whole status as read, with ingress and our condition put in, so other writers'
 * conditions stay) carrying the resourceVersion the cache holds (409 if the Service changed
 * since), sent only while the Lease is ours by our own clock with a margin (lb-election.h). Either
 * way a write that does not hold is retried by the next pass, from the cache as it is then.
 */

#include <stdint.h>
#include <stdio.h>

#include "daemon/cache/object-cache.h"
#include "daemon/loadbalancer/lb-config.h"
#include "daemon/network-config.h"
#include "shared/client/etcd-client.h"
#include "shared/client/kube-client.h"
#include "shared/event/event-loop.h"

/* How long a leader's key outlives it (seconds): a killed leader is replaced within about this. */
#define LB_AGENT_LEADER_TTL 6u

typedef struct LbAgent LbAgent;

typedef struct LbAgentConfig {
	const char *node; /* borrowed: the leader key's value */
	/* borrowed: weftd's network config, which may arrive after the agent starts; the agent stays
	 * idle (no election, no writes) until it is there and has a LoadBalancer section */
	NetworkConfig *const *network;
	EtcdClient *etcd;      /* borrowed: the objects' client (driven by weftd's loop); NULL in
				* Kubernetes mode */
	const char *prefix;    /* --etcd-prefix */
	KubeClient *kube;      /* borrowed: the objects' client in Kubernetes mode (else NULL); with
				* neither client the agent only says it cannot assign */
	const char *namespace; /* Kubernetes: the Lease's namespace (weftd's own) */
	uint32_t leader_ttl;   /* 0: LB_AGENT_LEADER_TTL */
} LbAgentConfig;

/* The Lease in Kubernetes mode: <namespace>/LB_AGENT_LEASE_NAME. */
#define LB_AGENT_LEASE_NAME "weft-loadbalancer"

/* "<prefix>/loadbalancer/leader" (trailing slashes of prefix ignored); NULL on OOM. */
char *lb_leader_key(const char *prefix);

int lb_agent_new(ObjectCache *cache, EventLoop *loop, const LbAgentConfig *cfg, LbAgent **ret);
LbAgent *lb_agent_free(LbAgent *a);
/* What to register with the cache (userdata: the agent). */
extern const ObjectCacheHandlers lb_agent_handlers;
/* weft_loadbalancer_* lines for /metrics. */
int lb_agent_render_metrics(LbAgent *a, FILE *f);
