/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Desired vs observed. Desired = the remote leases from the datastore, kept here keyed by what the
 * datastore keys on (etcd: the subnet key; Kubernetes: the Node name), never by the node name a
 * lease claims. Each pass runs them through the import filter (lease-filter.h: validation, then
 * the older of two conflicting leases wins); only accepted leases are rendered by the backend into
 * NodeObjects. Observed = one netlink dump per object type
 * per pass: routes with protocol WEFT_RTPROT in the main table, permanent neighbours and FDB
 * entries on our VTEP. Nothing else is ever looked at or touched.
 *
 * A pass: delete what is ours and not wanted (routes, then FDB, then neighbours), then per
 * remote node add what is missing in the order neighbour -> FDB -> route, rolling back that
 * node's additions if one step fails (no half-programmed peer). Matching is sort + binary search
 * over the dumps: O(n log n), no per-node dumps or kernel queries.
 *
 * Ownership: a route is added with NLM_F_EXCL unless one of ours (protocol WEFT_RTPROT) holds its
 * destination, so a route weft did not install (the kernel's connected route, a static one) is
 * never replaced; deletes name our protocol, so the kernel never removes another route in its
 * place. Neighbours and FDB entries are only ever read and written on our own VTEP (weft.<VNI>, a
 * device we create, with learning off), which is what makes them ours.
 *
 * reconcile_plan() is the pure part (unit-tested); reconciler_run() does the I/O.
 */

#include <stdbool.h>
#include <stddef.h>

#include "daemon/backend/backend.h"
#include "daemon/datastore/datastore.h"
#include "daemon/datastore/lease-filter.h"
#include "daemon/metrics.h"
#include "shared/nl/nl.h"

typedef struct ReconcileObserved {
	NlRoute *routes; /* ours only (protocol WEFT_RTPROT) */
	size_t n_routes;
	NlNeigh *neigh; /* permanent neighbours on the VTEP */
	size_t n_neigh;
	NlNeigh *fdb; /* FDB entries on the VTEP with a remote dst */
	size_t n_fdb;
	NlRoute *foreign; /* main-table routes weft did not install: never replaced, never deleted */
	size_t n_foreign;
} ReconcileObserved;

typedef struct ReconcilePlan {
	NlRoute *del_routes;
	size_t n_del_routes;
	NlNeigh *del_neigh;
	size_t n_del_neigh;
	NlNeigh *del_fdb;
	size_t n_del_fdb;
	size_t n_add;      /* objects missing or to be replaced */
	size_t n_present;  /* objects already right */
	size_t n_conflict; /* routes held by a route weft did not install */
} ReconcilePlan;

void reconcile_plan_done(ReconcilePlan *p);
void reconcile_observed_done(ReconcileObserved *o);

/*
 * Compares `desired` against `obs` (whose arrays it sorts in place). Marks the *_present and
 * *_replace flags of every desired object, and route_foreign where a route weft did not install
 * holds the destination (that node is then not programmed at all) and fills *ret with the stale objects to delete
 * (copies; release with reconcile_plan_done()). 0 or -ENOMEM.
 */
int reconcile_plan(NodeObjects *desired, size_t n_desired, ReconcileObserved *obs, ReconcilePlan *ret);

typedef struct DesiredNode {
	char *key;            /* datastore key (owned) */
	NodeLease lease;      /* lease.key is NULL here: use `key` */
	bool judged;          /* verdict is from a pass (a new lease has none yet) */
	LeaseReject verdict;  /* import filter: logged and counted when it changes */
	bool refused;         /* render() refused it: logged and counted once, until it changes */
	bool kernel_conflict; /* a foreign route holds its destination: logged and counted once */
} DesiredNode;

#define RECONCILE_MAX_LOCAL 2

typedef struct Reconciler {
	Backend *backend;             /* not owned */
	NlSock *nl;                   /* not owned */
	Metrics *metrics;             /* not owned */
	const NetworkConfig *network; /* not owned; NULL = no network checks (unit tests) */
	const char *self_name;        /* not owned: outlives the reconciler (weftd's --node-name) */
	DesiredNode *nodes;           /* sorted by key; never contains our own lease */
	size_t n_nodes, n_alloc;
	bool synced; /* a full lease list has arrived: pruning is safe from now on */
	/* Routes this node needs for itself rather than for a remote node (service-route.c: the
	 * Service ranges): rendered on every pass (NULL = none) into at most RECONCILE_MAX_LOCAL
	 * NodeObjects, each reconciled as one more node (so a foreign route holding one keeps out
	 * only that one), owned, repaired and pruned like the others. Returns how many, or -errno
	 * (the pass then fails rather than removing them). */
	int (*render_local)(void *userdata, NodeObjects *ret, size_t max);
	void *local_userdata;
	bool local_conflict[2]; /* a foreign route holds a local route's destination (IPv4, IPv6): logged once */
} Reconciler;

void reconciler_init(Reconciler *r, Backend *b, NlSock *nl, Metrics *m, const char *self_name);
void reconciler_done(Reconciler *r);

/*
 * Datastore input, by key (node_lease_key()). Our own lease (our name and our subnet) is left out.
 * Each returns 1 if the desired state changed, 0 if not, or -ENOMEM.
 */
int reconciler_set_all(Reconciler *r, const NodeLease *nodes, size_t n);
int reconciler_upsert(Reconciler *r, const NodeLease *lease);
int reconciler_remove(Reconciler *r, const NodeLease *lease);

/*
 * Runs the import filter over the desired leases and stores each verdict; a verdict that changed
 * is logged (with the reason and the winner of a conflict) and a new rejection counted in
 * r->metrics. Part of reconciler_run(); exposed for tests. Returns the number accepted or -ENOMEM.
 */
int reconciler_select(Reconciler *r);

/*
 * One full pass (dumps, plan, apply). Does nothing until the first full list has arrived (a
 * restarted weftd must not prune the routes of nodes it has not heard about yet). Returns 0 if
 * everything is in place, or the first error (the rest of the pass still runs; errors are
 * logged and counted in metrics).
 */
int reconciler_run(Reconciler *r);
