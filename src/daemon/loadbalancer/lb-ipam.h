/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * LoadBalancer address assignment (LB-IPAM): which address of which pool each LoadBalancer
 * Service gets. Pure and deterministic: the same pools and requests give the same answer on
 * every node, whatever order they arrive in, so a newly elected assigner agrees with the old one.
 *
 * A request is a Service as the assigner sees it: its families (spec.ipFamilies order), the
 * addresses it asks for (spec.loadBalancerIP or the weft.dev/loadbalancer-ips annotation), the
 * addresses it holds now (status.loadBalancer.ingress), its sharing key and ports, and its age.
 * Requests are served in three rounds, each older first (then namespace/name):
 *
 *   1. holders: an address held now stays where it is, if it is still one the Service may have
 *      (inside a pool open to it, and what it asks for when it asks);
 *   2. askers: a requested address, if it lies in a pool open to the Service and is free;
 *   3. the rest: an address its sharing key already holds, if the ports allow; else the lowest
 *      free address of the first pool (config order) with AutoAssign and an address of the
 *      family. Where a pool's ServiceSelector selects the Service, only such dedicated pools are
 *      tried: a Service meant for an internal pool never lands on a public address because the
 *      internal one is full. Otherwise the pools without a selector are.
 *
 * An address is free for a Service if nobody holds it, or if every holder shares the Service's
 * non-empty sharing key and no port (protocol + number) is used twice: MetalLB's allow-shared-ip
 * rule. A dual-stack Service that gets one family only is pending for the other and keeps what it
 * got (so it does not lose a held address while a pool of the other family is full). A Service
 * refused anything it asks for by name gets nothing at all. Automatic assignment skips an IPv4 pool CIDR's first
 * and last address (network and broadcast) when the CIDR is shorter than /31; a Service may still
 * ask for them by name.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"
#include "shared/kube/label-selector.h"

typedef struct LbPool {
	const char *name;
	const IpPrefix *cidrs; /* networks (host bits clear) */
	size_t n_cidrs;
	const LabelSelector *service_selector; /* NULL: open to every Service */
	bool auto_assign;                      /* false: only addresses asked for by name */
} LbPool;

typedef struct LbPort {
	uint8_t protocol; /* KubeProtocol */
	uint16_t port;
} LbPort;

typedef struct LbRequest {
	const char *key; /* "namespace/name" */
	int64_t created; /* KubeService.created: older first */
	LabelSet labels; /* for the pools' ServiceSelector */
	int families[2]; /* AF_INET / AF_INET6, spec.ipFamilies order */
	size_t n_families;
	IpAddr requested[2]; /* at most one per family */
	size_t n_requested;
	IpAddr current[2]; /* what status says it holds */
	size_t n_current;
	const char *sharing_key; /* NULL or "": shares with nobody */
	const LbPort *ports;
	size_t n_ports;
} LbRequest;

typedef enum LbState {
	LB_ASSIGNED,
	LB_PENDING, /* nothing free (pool exhausted, or no pool open to it has the family) */
	LB_REFUSED, /* what it asks for is outside every pool open to it, malformed, or taken */
	_LB_STATE_MAX,
} LbState;

/* Why a Service is pending or refused (the assigner's condition reason, lb-condition.h). */
typedef enum LbCause {
	LB_CAUSE_NONE,
	LB_CAUSE_BAD_REQUEST,   /* malformed, or an address not of the Service's ipFamilies */
	LB_CAUSE_OUTSIDE_POOLS, /* a requested address outside every pool open to the Service */
	LB_CAUSE_IN_USE,        /* a requested address another Service holds */
	LB_CAUSE_EXHAUSTED,     /* pending: nothing free */
} LbCause;

typedef struct LbAssignment {
	LbState state;
	LbCause cause;
	IpAddr ips[2]; /* in the request's family order */
	size_t n_ips;
	const char *pools[2]; /* the pool each address came from (LbPool.name) */
	char reason[192];     /* why pending or refused, naming the address and pool */
} LbAssignment;

/*
 * Assigns reqs[0..n_reqs) from pools[0..n_pools) into ret[0..n_reqs) (same index). 0 or -ENOMEM.
 * Requests must have distinct keys.
 */
int lb_ipam_assign(const LbPool *pools, size_t n_pools, const LbRequest *reqs, size_t n_reqs, LbAssignment *ret);

/* "assigned", "pending", "refused". */
const char *lb_state_to_string(LbState s);
/* The pool an address belongs to (first in config order), or NULL. */
const LbPool *lb_pool_of(const LbPool *pools, size_t n_pools, const IpAddr *ip);
/* How many addresses the pool can hand out automatically, saturated at UINT64_MAX (IPv6). */
uint64_t lb_pool_size(const LbPool *p);
