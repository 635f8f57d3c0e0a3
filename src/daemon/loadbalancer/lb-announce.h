/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * LoadBalancer announcement (MetalLB's speaker): on every node, a consumer of the object cache that
 * decides which LoadBalancer addresses this node makes reachable from outside, and hands them to
 * the mode of the network config's LoadBalancer section:
 *
 *   bgp  each address as a /32 to the external BGP peers (the routers), through BIRD
 *        (LbAnnounceConfig.bgp_set: backend-bgp.c's weft_lb static protocol)
 *   l2   for each address one node answers ARP (and NDP) for it on its underlay interface, with
 *        the interface's MAC (l2-responder.h), and says so with gratuitous ARP/unsolicited NA on
 *        takeover
 *
 * Which addresses: the status.loadBalancer.ingress IPs with ipMode VIP (KubeService.lb_ips) of the
 * LoadBalancer Services weft handles (no loadBalancerClass, or weft's: the assigner's rule,
 * lb-agent.h) that lie in a pool of the config. An ipMode Proxy address belongs to a proxying load
 * balancer, an address outside the pools to someone else: neither is ever announced.
 *
 * Which nodes are eligible for an address: with externalTrafficPolicy Cluster every node; with
 * Local only the nodes holding a ready, non-terminating endpoint of the Service (the rule
 * healthCheckNodePort answers 200 by, service-health.h), so the router never sends traffic to a
 * node that would drop it. An address shared by several Services: eligible where any of them is.
 *
 *   bgp: this node announces every address it is eligible for (the router spreads with ECMP).
 *   l2:  among the eligible nodes that are live (lb-members.h), exactly one: the highest
 *        rendezvous score of (node name, address). Every node computes the same winner from the
 *        same view; a node that leaves moves only its own addresses, each to its runner-up.
 *        Without a view of the members (not listed yet, or no members kind) no node announces.
 *
 * Every cache delta of a Service or EndpointSlice, and every change of the members, schedules a
 * pass LB_ANNOUNCE_DEBOUNCE_USEC later; a pass that changes nothing touches nothing. A failed hand-
 * over (BIRD not answering) is retried every LB_ANNOUNCE_RETRY_USEC.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/cache/object-cache.h"
#include "daemon/loadbalancer/lb-config.h"
#include "daemon/loadbalancer/lb-members.h"
#include "daemon/network-config.h"
#include "shared/event/event-loop.h"
#include "shared/ip/ip-addr.h"

#define LB_ANNOUNCE_DEBOUNCE_USEC (20 * 1000)
#define LB_ANNOUNCE_RETRY_USEC (1000 * 1000)

typedef struct LbAnnouncer LbAnnouncer;

typedef struct LbAnnounceConfig {
	const char *node; /* borrowed: this node's name */
	/* borrowed: weftd's network config (may arrive later); nothing is announced without a
	 * LoadBalancer section */
	NetworkConfig *const *network;
	/* the members' source (lb-members.h) and its config; NULL ops: no view of the members (L2 then
	 * announces nothing, and says so once) */
	const LbMembersOps *members_ops;
	LbMembersConfig members;
	/* bgp: makes the node's announced /32s exactly addrs (sorted, unique). 0, or -errno to be
	 * retried (logged by the callee). */
	int (*bgp_set)(void *userdata, const IpAddr *addrs, size_t n);
	/* l2: the underlay interface (the one holding the public IP); 0 = not known yet. */
	int (*underlay_ifindex)(void *userdata);
	void *userdata;
} LbAnnounceConfig;

int lb_announce_new(ObjectCache *cache, EventLoop *loop, const LbAnnounceConfig *cfg, LbAnnouncer **ret);
/* Withdraws what this node announces (bgp: an empty set; l2: the responder goes) and frees. */
LbAnnouncer *lb_announce_free(LbAnnouncer *a);
/* What to register with the cache (userdata: the announcer). */
extern const ObjectCacheHandlers lb_announce_handlers;
/* weft_loadbalancer_announcements and the failover lines for /metrics. */
int lb_announce_render_metrics(LbAnnouncer *a, FILE *f);

/* ---- the pure parts (unit-tested) ---- */

/* One address and who may announce it. */
typedef struct LbAnnounceAddr {
	IpAddr addr;
	bool cluster;             /* a Service on it has externalTrafficPolicy Cluster: every node */
	const char *const *nodes; /* else: the nodes with a ready local endpoint (any order) */
	size_t n_nodes;
} LbAnnounceAddr;

/* The rendezvous score of (node, address): a 64-bit hash, the same on every node. */
uint64_t lb_rendezvous_score(const char *node, const IpAddr *addr);
/* The node among nodes[0..n) with the highest score (ties: the smaller name); NULL if n == 0. */
const char *lb_rendezvous_pick(const char *const *nodes, size_t n, const IpAddr *addr);

/*
 * The addresses `self` announces, into ret[0..*ret_n) (ret has room for n_addrs; sorted, unique).
 * bgp: every address self is eligible for (members unused). l2: those whose rendezvous winner
 * among the live members (sorted, members[0..n_members)) that are eligible is self; members NULL:
 * none. ret_owner (optional, n_addrs entries): for l2, each address's winner (NULL: none).
 */
void lb_announce_decide(LbAnnounce mode, const char *self, const char *const *members, size_t n_members,
			const LbAnnounceAddr *addrs, size_t n_addrs, IpAddr *ret, size_t *ret_n,
			const char **ret_owner);
