/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One LoadBalancer address assigner at a time: leader election, one kind per datastore, each an
 * LbElectionOps (its state private at e->state):
 *
 * etcd (lb-election-etcd.c): a key held with a lease,
 *
 *   <prefix>/loadbalancer/leader = <node name>, attached to a lease of `ttl` seconds
 *
 *   Every tick (the owner calls lb_election_tick() every ttl/3 seconds) a candidate keeps its
 *   lease alive (granting a new one when it is gone) and runs one transaction: "if the key's
 *   create_revision is 0 (nobody holds it), put it with my lease, else read it". The leader runs
 *   "if the key's create_revision is still mine". The create_revision of the key we put is the
 *   fence: every status write of the leader carries the guard "the leader key's create_revision
 *   is still F" (object-store.h ObjectGuard), so a leader that lost the key (lease expired during
 *   a pause, key deleted) writes nothing, whatever it believes. A weftd killed with -9 is
 *   replaced within ttl + ttl/3 seconds; one that stops cleanly revokes its lease and is replaced
 *   at the next tick of another node.
 *
 * Kubernetes (lb-election-kube.c): a coordination.k8s.io/v1 Lease (shared/kube/kube-lease.h),
 *   client-go's leaderelection: every tick GET it (404: create it); renew it if ours, take it if
 *   free or unchanged for leaseDurationSeconds by our own clock, each a PUT carrying the
 *   resourceVersion read (409: somebody else won). The API server has no guard for a Service's
 *   status that names a Lease, so the fence is client-go's: the leader writes only while its
 *   last successful renewal, timed from when the request was SENT, is younger than
 *   ttl - ttl/3 (LB_ELECTION_KUBE_MARGIN_DIV): a leader paused past that writes nothing after it
 *   resumes, and a candidate waits the full ttl from when it last SAW a renewal, which is after
 *   it was sent. A leader that cannot renew within that deadline steps down. Stopping cleanly
 *   releases the Lease (holder "", duration 1 s).
 *
 * Everything is asynchronous on the objects' client: a tick never blocks the event loop, and a
 * tick while the previous one is in flight is skipped.
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/client/etcd-client.h"
#include "shared/client/kube-client.h"

typedef struct LbElection LbElection;

/* Called when leadership is gained (true) or lost (false). */
typedef void (*LbElectionChangedFn)(LbElection *e, bool leader, void *userdata);

typedef struct LbElectionConfig {
	const char *identity; /* borrowed: the holder's name (the node name) */
	uint32_t ttl;         /* seconds: the etcd lease's TTL, the Lease's leaseDurationSeconds */
	EtcdClient *etcd;     /* etcd kind: the client, and the leader key (borrowed) */
	const char *key;
	KubeClient *kube; /* Kubernetes kind: the client, and the Lease's namespace and name (borrowed) */
	const char *namespace, *name;
	LbElectionChangedFn changed;
	void *userdata;
} LbElectionConfig;

typedef struct LbElectionOps {
	const char *name;
	size_t state_size; /* e->state, zeroed */
	void (*tick)(LbElection *e);
	/* May the leader write now? (a fence the kind enforces on our side; the etcd kind's is on the
	 * server: its writes carry lb_election_fence()) */
	bool (*may_write)(const LbElection *e);
	/* Cancels requests, hands over if leading (best effort, blocking and short). */
	void (*done)(LbElection *e);
} LbElectionOps;

extern const LbElectionOps lb_election_etcd_ops;
extern const LbElectionOps lb_election_kube_ops;

/* cfg is copied (its strings stay borrowed). 0 or -ENOMEM. */
int lb_election_new(const LbElectionOps *ops, const LbElectionConfig *cfg, LbElection **ret);
/* Hands over if leading (etcd: revokes the lease; Kubernetes: releases the Lease) and frees. */
LbElection *lb_election_free(LbElection *e);
void lb_election_tick(LbElection *e);
bool lb_election_is_leader(const LbElection *e);
/* Leading, and the kind's own fence lets us write now. */
bool lb_election_may_write(const LbElection *e);
/* etcd: the create_revision of the leader key we put (the fence for writes); 0 when not leading
 * (and for the Kubernetes kind, whose fence is lb_election_may_write()). */
int64_t lb_election_fence(const LbElection *e);
/* Who holds it as last seen ("" if nobody or unknown). */
const char *lb_election_holder(const LbElection *e);
/* Leadership gained, and lost, since start. */
uint64_t lb_election_transitions(const LbElection *e);
