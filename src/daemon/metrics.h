/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's counters and gauges, rendered in the Prometheus text exposition format (version 0.0.4)
 * for GET /metrics. Plain struct updated in place by the loop (one thread: no atomics).
 */

#include <stdbool.h>
#include <stdint.h>

#include "daemon/datastore/datastore.h"
#include "shared/ip/ip-addr.h"

typedef enum MetricsOp {
	METRICS_OP_ROUTE_ADD,
	METRICS_OP_ROUTE_DEL,
	METRICS_OP_NEIGH_ADD,
	METRICS_OP_NEIGH_DEL,
	METRICS_OP_FDB_ADD,
	METRICS_OP_FDB_DEL,
	METRICS_OP_DUMP,
	METRICS_OP_NFT,
	METRICS_OP_DATASTORE,
	METRICS_OP_LEASE_FILE,
	METRICS_OP_CNI_CONF,
	METRICS_OP_VTEP,
	_METRICS_OP_MAX,
} MetricsOp;

const char *metrics_op_to_string(MetricsOp op);

#define METRICS_N_BUCKETS 8
extern const double metrics_reconcile_buckets[METRICS_N_BUCKETS]; /* upper bounds, seconds */

typedef struct Metrics {
	IpPrefix lease_subnet; /* AF_UNSPEC until a lease is held */
	IpPrefix lease_subnet6;
	unsigned nodes;                   /* remote leases known */
	unsigned routes, neighbours, fdb; /* objects of ours in the kernel after the last reconcile */
	uint64_t reconcile_total;
	double reconcile_sum;
	uint64_t reconcile_bucket[METRICS_N_BUCKETS]; /* non-cumulative counts; rendered cumulative */
	uint64_t reconcile_inf;                       /* observations above the last bound */
	uint64_t errors[_METRICS_OP_MAX];
	uint64_t hostgw_unreachable;
	uint64_t leases_rejected[_LEASE_REJECT_MAX]; /* by LeaseReject: each time a lease becomes refused */
	uint64_t lease_recreated;                    /* our own lease vanished from the store and was put back */
	bool lease_lost;                             /* our subnet is held by another node: unhealthy */
	bool datastore_connected;
	bool ready;
} Metrics;

void metrics_observe_reconcile(Metrics *m, double seconds);
static inline void metrics_error(Metrics *m, MetricsOp op) {
	m->errors[op]++;
}
/* Renders the whole page into *ret (caller frees). 0 or -ENOMEM. */
int metrics_render(const Metrics *m, char **ret);
