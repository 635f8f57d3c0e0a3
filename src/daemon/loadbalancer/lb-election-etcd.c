/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd kind of lb-election.h: a leader key attached to a lease, fenced by its create_revision. */
#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-election-internal.h"

typedef struct EtcdElection {
	int64_t lease;         /* 0: none granted (or it expired) */
	EtcdRequest *inflight; /* the tick's current step */
} EtcdElection;

static void failed(LbElection *e, const char *step, int error) {
	lb_election_failed(e, step, error, etcd_client_last_error(e->cfg.etcd));
}

static void on_txn(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	EtcdElection *s = e->state;
	EtcdKv existing = {};
	bool succeeded;
	int r;

	s->inflight = NULL;
	if (error < 0) {
		failed(e, "transaction", error);
		return; /* keep our belief until the lease says otherwise: writes are fenced anyway */
	}
	r = etcd_txn_parse(resp, &succeeded, &existing);
	if (r < 0) {
		failed(e, "transaction", r);
		return;
	}
	lb_election_ok(e);
	if (succeeded) {
		/* we hold it: a fresh put's create_revision is the transaction's revision */
		lb_election_set_holder(e, e->cfg.identity);
		lb_election_set_leader(e, e->fence ?: etcd_json_int64(json_object_get(resp, "header"), "revision"));
	} else {
		lb_election_set_holder(e, existing.value);
		lb_election_set_leader(e, 0);
	}
	etcd_kv_done(&existing);
}

/* Leader: "is the key still the one I created?"; candidate: "if nobody holds it, put it". */
static void start_txn(LbElection *e) {
	EtcdElection *s = e->state;
	const char *key = e->cfg.key;
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (e->fence)
		req = json_pack("{s:[{s:o, s:s, s:s, s:o}], s:[], s:[{s:{s:o}}]}", "compare", "key",
				etcd_json_bytes(key, strlen(key)), "target", "CREATE", "result", "EQUAL",
				"create_revision", etcd_json_int64_new(e->fence), "success", "failure", "request_range",
				"key", etcd_json_bytes(key, strlen(key)));
	else
		req = etcd_txn_put_if_request(key, "CREATE", 0, e->cfg.identity, s->lease);
	if (!req) {
		failed(e, "transaction", -ENOMEM);
		return;
	}
	r = etcd_client_call_async(e->cfg.etcd, "/v3/kv/txn", req, on_txn, e, &s->inflight);
	if (r < 0)
		failed(e, "transaction", r);
}

static void on_keepalive(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	EtcdElection *s = e->state;
	int64_t ttl = 0;
	int r;

	s->inflight = NULL;
	if (error < 0) {
		failed(e, "keepalive", error);
		return;
	}
	r = etcd_lease_keepalive_parse(resp, &ttl);
	if (r < 0 || ttl <= 0) {
		/* the lease is gone, and with it our key */
		s->lease = 0;
		lb_election_set_holder(e, "");
		lb_election_set_leader(e, 0);
		return;
	}
	start_txn(e);
}

static void on_grant(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	EtcdElection *s = e->state;

	s->inflight = NULL;
	if (error < 0 || etcd_json_int64(resp, "ID") == 0) {
		failed(e, "lease grant", error < 0 ? error : -EIO);
		return;
	}
	s->lease = etcd_json_int64(resp, "ID");
	start_txn(e);
}

static void etcd_tick(LbElection *e) {
	EtcdElection *s = e->state;
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (s->inflight)
		return;
	if (s->lease) {
		req = json_pack("{s:o}", "ID", etcd_json_int64_new(s->lease));
		r = req ? etcd_client_call_async(e->cfg.etcd, "/v3/lease/keepalive", req, on_keepalive, e, &s->inflight)
			: -ENOMEM;
	} else {
		req = json_pack("{s:o}", "TTL", etcd_json_int64_new(e->cfg.ttl));
		r = req ? etcd_client_call_async(e->cfg.etcd, "/v3/lease/grant", req, on_grant, e, &s->inflight)
			: -ENOMEM;
	}
	if (r < 0)
		failed(e, s->lease ? "keepalive" : "lease grant", r);
}

static void etcd_done(LbElection *e) {
	EtcdElection *s = e->state;

	etcd_request_cancel(s->inflight);
	/* hand over now rather than after the TTL (best effort: etcd may be gone) */
	if (s->lease && e->fence)
		(void) etcd_lease_revoke(e->cfg.etcd, s->lease);
}

const LbElectionOps lb_election_etcd_ops = {
	.name = "leader key", .state_size = sizeof(EtcdElection), .tick = etcd_tick, .done = etcd_done,
	/* no may_write: the fence is on the server, in every write's guard */
};
