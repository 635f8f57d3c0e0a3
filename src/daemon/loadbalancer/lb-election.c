/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-election.h"

struct LbElection {
	EtcdClient *etcd;
	const char *key, *identity;
	uint32_t ttl;
	LbElectionChangedFn changed;
	void *userdata;

	int64_t lease;         /* 0: none granted (or it expired) */
	int64_t fence;         /* create_revision of our key while leading, else 0 */
	EtcdRequest *inflight; /* the tick's current step */
	char holder[128];
	uint64_t transitions;
	bool warned; /* an etcd failure was logged; the next success says so */
};

static void set_leader(LbElection *e, int64_t fence) {
	bool was = e->fence != 0;

	e->fence = fence;
	if (was == (fence != 0))
		return;
	e->transitions++;
	if (fence)
		log_info("LoadBalancer: this node assigns addresses now (leader key %s, fence %lld)", e->key,
			 (long long) fence);
	else
		log_warning("LoadBalancer: no longer the address assigner (leader key %s: %s)", e->key,
			    e->holder[0] ? e->holder : "gone");
	if (e->changed)
		e->changed(e, fence != 0, e->userdata);
}

static void failed(LbElection *e, const char *step, int error) {
	const char *why = etcd_client_last_error(e->etcd);

	if (!e->warned)
		log_warning_errno(error, "LoadBalancer: election %s failed: %s", step,
				  !isempty(why) ? why : strerror(-error));
	e->warned = true;
}

static void ok(LbElection *e) {
	if (e->warned)
		log_info("LoadBalancer: election reaches etcd again");
	e->warned = false;
}

static void on_txn(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	EtcdKv existing = {};
	bool succeeded;
	int r;

	e->inflight = NULL;
	if (error < 0) {
		failed(e, "transaction", error);
		return; /* keep our belief until the lease says otherwise: writes are fenced anyway */
	}
	r = etcd_txn_parse(resp, &succeeded, &existing);
	if (r < 0) {
		failed(e, "transaction", r);
		return;
	}
	ok(e);
	if (succeeded) {
		/* we hold it: a fresh put's create_revision is the transaction's revision */
		snprintf(e->holder, sizeof(e->holder), "%s", e->identity);
		set_leader(e, e->fence ?: etcd_json_int64(json_object_get(resp, "header"), "revision"));
	} else {
		snprintf(e->holder, sizeof(e->holder), "%s", existing.value ?: "");
		set_leader(e, 0);
	}
	etcd_kv_done(&existing);
}

/* Leader: "is the key still the one I created?"; candidate: "if nobody holds it, put it". */
static void start_txn(LbElection *e) {
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (e->fence) {
		_cleanup_free_ char *end = NULL;

		req = json_pack("{s:[{s:o, s:s, s:s, s:o}], s:[], s:[{s:{s:o}}]}", "compare", "key",
				etcd_json_bytes(e->key, strlen(e->key)), "target", "CREATE", "result", "EQUAL",
				"create_revision", etcd_json_int64_new(e->fence), "success", "failure", "request_range",
				"key", etcd_json_bytes(e->key, strlen(e->key)));
	} else
		req = etcd_txn_put_if_request(e->key, "CREATE", 0, e->identity, e->lease);
	if (!req) {
		failed(e, "transaction", -ENOMEM);
		return;
	}
	r = etcd_client_call_async(e->etcd, "/v3/kv/txn", req, on_txn, e, &e->inflight);
	if (r < 0)
		failed(e, "transaction", r);
}

static void on_keepalive(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;
	int64_t ttl = 0;
	int r;

	e->inflight = NULL;
	if (error < 0) {
		failed(e, "keepalive", error);
		return;
	}
	r = etcd_lease_keepalive_parse(resp, &ttl);
	if (r < 0 || ttl <= 0) {
		/* the lease is gone, and with it our key */
		e->lease = 0;
		e->holder[0] = '\0';
		set_leader(e, 0);
		return;
	}
	start_txn(e);
}

static void on_grant(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbElection *e = userdata;

	e->inflight = NULL;
	if (error < 0 || etcd_json_int64(resp, "ID") == 0) {
		failed(e, "lease grant", error < 0 ? error : -EIO);
		return;
	}
	e->lease = etcd_json_int64(resp, "ID");
	start_txn(e);
}

void lb_election_tick(LbElection *e) {
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (!e || e->inflight)
		return;
	if (e->lease) {
		req = json_pack("{s:o}", "ID", etcd_json_int64_new(e->lease));
		r = req ? etcd_client_call_async(e->etcd, "/v3/lease/keepalive", req, on_keepalive, e, &e->inflight)
			: -ENOMEM;
	} else {
		req = json_pack("{s:o}", "TTL", etcd_json_int64_new(e->ttl));
		r = req ? etcd_client_call_async(e->etcd, "/v3/lease/grant", req, on_grant, e, &e->inflight) : -ENOMEM;
	}
	if (r < 0)
		failed(e, e->lease ? "keepalive" : "lease grant", r);
}

int lb_election_new(EtcdClient *c, const char *key, const char *identity, uint32_t ttl, LbElectionChangedFn fn,
		    void *userdata, LbElection **ret) {
	LbElection *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	*e = (LbElection) {
		.etcd = c, .key = key, .identity = identity, .ttl = MAX(ttl, 2u), .changed = fn, .userdata = userdata
	};
	*ret = e;
	return 0;
}

LbElection *lb_election_free(LbElection *e) {
	if (!e)
		return NULL;
	etcd_request_cancel(e->inflight);
	/* hand over now rather than after the TTL (best effort: etcd may be gone) */
	if (e->lease && e->fence)
		(void) etcd_lease_revoke(e->etcd, e->lease);
	free(e);
	return NULL;
}

bool lb_election_is_leader(const LbElection *e) {
	return e && e->fence != 0;
}

int64_t lb_election_fence(const LbElection *e) {
	return e ? e->fence : 0;
}

const char *lb_election_holder(const LbElection *e) {
	return e ? e->holder : "";
}

uint64_t lb_election_transitions(const LbElection *e) {
	return e ? e->transitions : 0;
}
