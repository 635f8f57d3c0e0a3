/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-election-internal.h"

void lb_election_set_leader(LbElection *e, int64_t fence) {
	bool was = e->fence != 0;

	e->fence = fence;
	if (was == (fence != 0))
		return;
	e->transitions++;
	if (fence)
		log_info("LoadBalancer: this node assigns addresses now (%s %s, fence %lld)", e->ops->name,
			 e->cfg.key ?: e->cfg.name, (long long) fence);
	else
		log_warning("LoadBalancer: no longer the address assigner (%s %s: %s)", e->ops->name,
			    e->cfg.key ?: e->cfg.name, e->holder[0] ? e->holder : "gone");
	if (e->cfg.changed)
		e->cfg.changed(e, fence != 0, e->cfg.userdata);
}

void lb_election_set_holder(LbElection *e, const char *holder) {
	snprintf(e->holder, sizeof(e->holder), "%s", holder ?: "");
}

void lb_election_failed(LbElection *e, const char *step, int error, const char *why) {
	if (!e->warned)
		log_warning_errno(error, "LoadBalancer: election %s failed: %s", step,
				  !isempty(why) ? why : strerror(-error));
	e->warned = true;
}

void lb_election_ok(LbElection *e) {
	if (e->warned)
		log_info("LoadBalancer: election reaches the %s again", e->cfg.kube ? "API server" : "etcd");
	e->warned = false;
}

int lb_election_new(const LbElectionOps *ops, const LbElectionConfig *cfg, LbElection **ret) {
	LbElection *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	*e = (LbElection) { .ops = ops, .cfg = *cfg };
	e->cfg.ttl = MAX(cfg->ttl, 2u);
	e->state = ops->state_size ? calloc(1, ops->state_size) : NULL;
	if (ops->state_size && !e->state) {
		free(e);
		return -ENOMEM;
	}
	*ret = e;
	return 0;
}

LbElection *lb_election_free(LbElection *e) {
	if (!e)
		return NULL;
	if (e->ops->done)
		e->ops->done(e);
	free(e->state);
	free(e);
	return NULL;
}

void lb_election_tick(LbElection *e) {
	if (e)
		e->ops->tick(e);
}

bool lb_election_is_leader(const LbElection *e) {
	return e && e->fence != 0;
}

bool lb_election_may_write(const LbElection *e) {
	return lb_election_is_leader(e) && (!e->ops->may_write || e->ops->may_write(e));
}

int64_t lb_election_fence(const LbElection *e) {
	return e && e->ops == &lb_election_etcd_ops ? e->fence : 0;
}

const char *lb_election_holder(const LbElection *e) {
	return e ? e->holder : "";
}

uint64_t lb_election_transitions(const LbElection *e) {
	return e ? e->transitions : 0;
}
