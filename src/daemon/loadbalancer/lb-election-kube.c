/* SPDX-License-Identifier: Apache-2.0 */
/* The Kubernetes kind of lb-election.h: a coordination.k8s.io/v1 Lease, client-go's way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-election-internal.h"
#include "shared/event/event-loop.h"
#include "shared/kube/kube-lease.h"

/* The leader writes for ttl - ttl/LB_ELECTION_KUBE_MARGIN_DIV after a renewal was sent (client-go's
 * RenewDeadline < LeaseDuration): with ticks every ttl/3, one lost renewal is survived. */
#define LB_ELECTION_KUBE_MARGIN_DIV 3

typedef struct KubeElection {
	KubeRequest *inflight;
	char *path, *collection;
	char *observed_rv;      /* the Lease's resourceVersion as last seen */
	uint64_t observed_usec; /* when it last changed (now_usec(), our clock) */
	uint64_t sent_usec;     /* when the write in flight was sent */
	uint64_t valid_until;   /* leading: the fence, as now_usec() */
	json_t *lease;          /* the Lease as we last wrote it (for the release) */
} KubeElection;

static void failed(LbElection *e, const char *step, int error) {
	lb_election_failed(e, step, error, kube_client_last_error(e->cfg.kube));
}

static int observe(LbElection *e, const KubeLease *l) {
	KubeElection *s = e->state;

	if (s->observed_rv && streq(s->observed_rv, l->resource_version))
		return 0;
	free(s->observed_rv);
	s->observed_rv = strdup(l->resource_version);
	s->observed_usec = now_usec();
	return s->observed_rv ? 0 : -ENOMEM;
}

static void on_write(KubeClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	KubeElection *s = e->state;
	KubeLease l = {};

	s->inflight = NULL;
	if (error == -EEXIST) {
		/* 409: the Lease changed since we read it (or was created meanwhile): somebody else won */
		lb_election_ok(e);
		lb_election_set_leader(e, 0);
		return;
	}
	if (error < 0) {
		failed(e, e->fence ? "renewing the Lease" : "taking the Lease", error);
		return; /* still leading until valid_until, if we were */
	}
	if (kube_lease_parse(resp, &l) < 0 || !streq(l.holder, e->cfg.identity)) {
		kube_lease_done(&l);
		failed(e, "writing the Lease", -EPROTO);
		return;
	}
	lb_election_ok(e);
	(void) observe(e, &l);
	kube_lease_done(&l);
	json_decref(s->lease);
	s->lease = json_incref(resp);
	s->valid_until = s->sent_usec + (uint64_t) (e->cfg.ttl - e->cfg.ttl / LB_ELECTION_KUBE_MARGIN_DIV) * 1000000;
	lb_election_set_holder(e, e->cfg.identity);
	lb_election_set_leader(e, 1);
}

static void write_lease(LbElection *e, const json_t *lease, bool acquire) {
	KubeElection *s = e->state;
	_cleanup_(json_decrefp) json_t *o = NULL;
	_cleanup_free_ char *body = NULL;
	int r;

	s->sent_usec = now_usec();
	o = kube_lease_render(lease, e->cfg.namespace, e->cfg.name, e->cfg.identity, e->cfg.ttl, acquire,
			      kube_realtime_usec());
	body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	r = body ? kube_client_call_async(e->cfg.kube, lease ? "PUT" : "POST", lease ? s->path : s->collection, NULL,
					  body, on_write, e, &s->inflight)
		 : -ENOMEM;
	if (r < 0)
		failed(e, "writing the Lease", r);
}

static void on_get(KubeClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	KubeElection *s = e->state;
	KubeLease l = {};
	KubeLeaseAction a;

	s->inflight = NULL;
	if (error == -ENOENT) { /* nobody ever held it: create it, holding it (409 if another was first) */
		lb_election_set_holder(e, "");
		write_lease(e, NULL, true);
		return;
	}
	if (error < 0 || kube_lease_parse(resp, &l) < 0) {
		failed(e, "reading the Lease", error < 0 ? error : -EPROTO);
		return;
	}
	lb_election_ok(e);
	if (observe(e, &l) < 0) {
		kube_lease_done(&l);
		return;
	}
	lb_election_set_holder(e, l.holder);
	a = kube_lease_decide(&l, e->cfg.identity, now_usec(), s->observed_usec, e->cfg.ttl);
	kube_lease_done(&l);
	if (a == KUBE_LEASE_HELD) {
		lb_election_set_leader(e, 0);
		return;
	}
	write_lease(e, resp, a == KUBE_LEASE_ACQUIRE);
}

static bool kube_may_write(const LbElection *e) {
	const KubeElection *s = e->state;

	return now_usec() < s->valid_until;
}

static void kube_tick(LbElection *e) {
	KubeElection *s = e->state;
	int r;

	if (e->fence && !kube_may_write(e)) {
		log_warning("LoadBalancer: Lease %s/%s not renewed in time", e->cfg.namespace, e->cfg.name);
		lb_election_set_leader(e, 0);
	}
	if (s->inflight)
		return;
	if (!s->path) {
		s->path = kube_lease_path(e->cfg.namespace, e->cfg.name);
		s->collection = kube_lease_path(e->cfg.namespace, NULL);
		if (!s->path || !s->collection) {
			s->path = mfree(s->path);
			return;
		}
	}
	r = kube_client_call_async(e->cfg.kube, "GET", s->path, NULL, NULL, on_get, e, &s->inflight);
	if (r < 0)
		failed(e, "reading the Lease", r);
}

static void kube_done(LbElection *e) {
	KubeElection *s = e->state;

	kube_request_cancel(s->inflight);
	/* hand over now rather than after leaseDurationSeconds (best effort, blocking, short) */
	if (e->fence && s->lease && kube_may_write(e)) {
		_cleanup_(json_decrefp) json_t *o =
				kube_lease_render(s->lease, NULL, NULL, "", 1, false, kube_realtime_usec());
		_cleanup_free_ char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;

		if (body)
			(void) kube_client_call(e->cfg.kube, "PUT", s->path, NULL, body, NULL);
	}
	json_decref(s->lease);
	free(s->observed_rv);
	free(s->path);
	free(s->collection);
}

const LbElectionOps lb_election_kube_ops = {
	.name = "Lease",
	.state_size = sizeof(KubeElection),
	.tick = kube_tick,
	.may_write = kube_may_write,
	.done = kube_done,
};
