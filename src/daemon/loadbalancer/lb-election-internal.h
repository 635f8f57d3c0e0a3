/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What lb-election.c shares with the kinds (lb-election-etcd.c, lb-election-kube.c). */

#include "daemon/loadbalancer/lb-election.h"

struct LbElection {
	const LbElectionOps *ops;
	LbElectionConfig cfg;
	void *state; /* the kind's, ops->state_size bytes */

	int64_t fence; /* etcd: create_revision of our key while leading; Kubernetes: 1 while leading */
	char holder[128];
	uint64_t transitions;
	bool warned; /* a failure was logged; the next success says so */
};

/* Leading with this fence (0: not leading); logs and calls cfg.changed on a change. */
void lb_election_set_leader(LbElection *e, int64_t fence);
void lb_election_set_holder(LbElection *e, const char *holder);
/* A failed step: logged once until lb_election_ok(). */
void lb_election_failed(LbElection *e, const char *step, int error, const char *why);
void lb_election_ok(LbElection *e);
