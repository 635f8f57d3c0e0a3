/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "daemon/datastore/lease-filter.h"
#include "daemon/metrics.h"

const double metrics_reconcile_buckets[METRICS_N_BUCKETS] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2 };

static const char *const op_names[_METRICS_OP_MAX] = {
	[METRICS_OP_ROUTE_ADD] = "route_add", [METRICS_OP_ROUTE_DEL] = "route_del",
	[METRICS_OP_NEIGH_ADD] = "neigh_add", [METRICS_OP_NEIGH_DEL] = "neigh_del",
	[METRICS_OP_FDB_ADD] = "fdb_add",     [METRICS_OP_FDB_DEL] = "fdb_del",
	[METRICS_OP_DUMP] = "dump",           [METRICS_OP_NFT] = "nft",
	[METRICS_OP_DATASTORE] = "datastore", [METRICS_OP_LEASE_FILE] = "lease_file",
	[METRICS_OP_CNI_CONF] = "cni_conf",   [METRICS_OP_VTEP] = "vtep",
};

const char *metrics_op_to_string(MetricsOp op) {
	return op >= 0 && op < _METRICS_OP_MAX ? op_names[op] : NULL;
}

void metrics_observe_reconcile(Metrics *m, double seconds) {
	size_t i;

	m->reconcile_total++;
	m->reconcile_sum += seconds;
	for (i = 0; i < METRICS_N_BUCKETS; i++)
		if (seconds <= metrics_reconcile_buckets[i]) {
			m->reconcile_bucket[i]++;
			return;
		}
	m->reconcile_inf++;
}

int metrics_render(const Metrics *m, char **ret) {
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f;
	uint64_t cum = 0;
	char a[IP_PREFIX_STRLEN];

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;

	fputs("# HELP weft_lease_info The pod subnet leased to this node.\n# TYPE weft_lease_info gauge\n", f);
	if (ip_addr_is_set(&m->lease_subnet.addr))
		fprintf(f, "weft_lease_info{subnet=\"%s\"} 1\n", ip_prefix_to_string(&m->lease_subnet, a));
	if (ip_addr_is_set(&m->lease_subnet6.addr))
		fprintf(f, "weft_lease_info{subnet=\"%s\"} 1\n", ip_prefix_to_string(&m->lease_subnet6, a));

	fprintf(f,
		"# HELP weft_ready 1 once lease file, firewall and CNI config are in place.\n"
		"# TYPE weft_ready gauge\nweft_ready %d\n",
		m->ready);
	fprintf(f,
		"# HELP weft_nodes Remote node leases known from the datastore.\n"
		"# TYPE weft_nodes gauge\nweft_nodes %u\n",
		m->nodes);
	fprintf(f,
		"# HELP weft_routes_programmed Routes of ours in the kernel.\n"
		"# TYPE weft_routes_programmed gauge\nweft_routes_programmed %u\n",
		m->routes);
	fprintf(f,
		"# HELP weft_neighbours_programmed Permanent neighbours on the VTEP.\n"
		"# TYPE weft_neighbours_programmed gauge\nweft_neighbours_programmed %u\n",
		m->neighbours);
	fprintf(f,
		"# HELP weft_fdb_programmed FDB entries on the VTEP.\n"
		"# TYPE weft_fdb_programmed gauge\nweft_fdb_programmed %u\n",
		m->fdb);

	fputs("# HELP weft_reconcile_duration_seconds Time one reconcile pass took.\n"
	      "# TYPE weft_reconcile_duration_seconds histogram\n",
	      f);
	for (size_t i = 0; i < METRICS_N_BUCKETS; i++) {
		cum += m->reconcile_bucket[i];
		fprintf(f, "weft_reconcile_duration_seconds_bucket{le=\"%g\"} %llu\n", metrics_reconcile_buckets[i],
			(unsigned long long) cum);
	}
	cum += m->reconcile_inf;
	fprintf(f, "weft_reconcile_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long) cum);
	fprintf(f, "weft_reconcile_duration_seconds_sum %.6f\n", m->reconcile_sum);
	fprintf(f, "weft_reconcile_duration_seconds_count %llu\n", (unsigned long long) cum);

	fprintf(f,
		"# HELP weft_reconcile_total Reconcile passes run.\n"
		"# TYPE weft_reconcile_total counter\nweft_reconcile_total %llu\n",
		(unsigned long long) m->reconcile_total);

	fputs("# HELP weft_errors_total Failed operations by kind.\n# TYPE weft_errors_total counter\n", f);
	for (size_t i = 0; i < _METRICS_OP_MAX; i++)
		fprintf(f, "weft_errors_total{op=\"%s\"} %llu\n", op_names[i], (unsigned long long) m->errors[i]);

	fprintf(f,
		"# HELP weft_hostgw_unreachable_total Remote nodes refused: public IP not directly connected.\n"
		"# TYPE weft_hostgw_unreachable_total counter\nweft_hostgw_unreachable_total %llu\n",
		(unsigned long long) m->hostgw_unreachable);
	fputs("# HELP weft_leases_rejected_total Remote leases refused by the import filter, by reason "
	      "(counted when a lease becomes refused).\n# TYPE weft_leases_rejected_total counter\n",
	      f);
	for (size_t i = LEASE_ACCEPTED + 1; i < _LEASE_REJECT_MAX; i++)
		fprintf(f, "weft_leases_rejected_total{reason=\"%s\"} %llu\n", lease_reject_to_string((LeaseReject) i),
			(unsigned long long) m->leases_rejected[i]);
	fprintf(f,
		"# HELP weft_lease_recreated_total Times this node's lease vanished from the datastore and was "
		"put back.\n# TYPE weft_lease_recreated_total counter\nweft_lease_recreated_total %llu\n",
		(unsigned long long) m->lease_recreated);
	fprintf(f,
		"# HELP weft_lease_lost 1 when another node holds this node's subnet (weftd is unhealthy).\n"
		"# TYPE weft_lease_lost gauge\nweft_lease_lost %d\n",
		m->lease_lost);
	fprintf(f,
		"# HELP weft_datastore_connected 1 while the datastore is reachable.\n"
		"# TYPE weft_datastore_connected gauge\nweft_datastore_connected %d\n",
		m->datastore_connected);

	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}
