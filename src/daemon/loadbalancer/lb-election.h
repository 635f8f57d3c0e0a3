/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One LoadBalancer address assigner at a time: leader election on an etcd key held with a lease.
 *
 *   <prefix>/loadbalancer/leader = <node name>, attached to a lease of `ttl` seconds
 *
 * Every tick (the owner calls lb_election_tick() every ttl/3 seconds) a candidate keeps its lease
 * alive (granting a new one when it is gone) and runs one transaction: "if the key's
 * create_revision is 0 (nobody holds it), put it with my lease, else read it". The leader runs
 * "if the key's create_revision is still mine". The create_revision of the key we put is the
 * fence: every status write of the leader carries the guard "the leader key's create_revision is
 * still F" (object-store.h ObjectGuard), so a leader that lost the key (lease expired during a
 * pause, key deleted) writes nothing, whatever it believes. A weftd killed with -9 is replaced
 * within ttl + ttl/3 seconds; one that stops cleanly revokes its lease and is replaced at the
 * next tick of another node.
 *
 * Everything is asynchronous on the objects' etcd client: a tick never blocks the event loop, and
 * a tick while the previous one is in flight is skipped.
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/client/etcd-client.h"

typedef struct LbElection LbElection;

/* Called when leadership is gained (true) or lost (false). */
typedef void (*LbElectionChangedFn)(LbElection *e, bool leader, void *userdata);

/* key: the leader key; identity: what the key holds (the node name). Both borrowed. 0 or -ENOMEM. */
int lb_election_new(EtcdClient *c, const char *key, const char *identity, uint32_t ttl, LbElectionChangedFn fn,
		    void *userdata, LbElection **ret);
/* Revokes our lease if we hold one (blocking, short: shutdown only when leading) and frees. */
LbElection *lb_election_free(LbElection *e);
void lb_election_tick(LbElection *e);
bool lb_election_is_leader(const LbElection *e);
/* The create_revision of the leader key we put (the fence for writes); 0 when not leading. */
int64_t lb_election_fence(const LbElection *e);
/* Who holds the key as last seen ("" if nobody or unknown). */
const char *lb_election_holder(const LbElection *e);
/* Leadership gained, and lost, since start. */
uint64_t lb_election_transitions(const LbElection *e);
