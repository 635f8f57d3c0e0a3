/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-agent.h"
#include "daemon/loadbalancer/lb-condition.h"
#include "daemon/loadbalancer/lb-election.h"
#include "daemon/loadbalancer/lb-ipam.h"
#include "shared/client/object-store.h"

#define PASS_DEBOUNCE_USEC (50 * 1000)

/* One status write: the Service, the ingress and the condition it must have. */
typedef struct WriteJob {
	char *ns, *name;
	char *rv; /* Kubernetes: the Service's resourceVersion in the cache (the PUT's precondition) */
	IpAddr ips[2];
	size_t n_ips;
	LbCondition cond;
} WriteJob;

/* What was last said about one Service, so each distinct refusal is logged once. */
typedef struct Report {
	char *key; /* "ns/name" */
	LbState state;
	bool seen; /* in the current pass */
	char reason[192];
} Report;

struct LbAgent {
	ObjectCache *cache;
	EventLoop *loop;
	EventSource *tick, *pass_timer;
	LbAgentConfig cfg;
	char *leader_key;
	LbElection *election;
	bool pass_scheduled;

	WriteJob *queue;
	size_t n_queue;
	EtcdRequest *write_inflight;
	KubeRequest *kube_inflight;
	char *write_key;   /* the head job's Service key */
	ObjectOp write_op; /* the GET of the head job */

	Report *reports;
	size_t n_reports;

	uint64_t passes, writes, write_failures, fenced;
	uint64_t fenced_local; /* queued writes not sent: leadership lost, or the Lease past its deadline */
	uint64_t by_state[_LB_STATE_MAX];
	uint64_t *pool_used; /* per config pool, last pass (allocated with the config) */
	bool said_unsupported;
};

static void schedule_pass(LbAgent *a);

/* The pools, once the network config is there and has them. */
static const LbConfig *lb_config(const LbAgent *a) {
	return *a->cfg.network ? (*a->cfg.network)->load_balancer : NULL;
}
static void write_next(LbAgent *a);

static void job_done(WriteJob *j) {
	free(j->ns);
	free(j->name);
	free(j->rv);
}

static void queue_clear(LbAgent *a) {
	etcd_request_cancel(a->write_inflight);
	a->write_inflight = NULL;
	kube_request_cancel(a->kube_inflight);
	a->kube_inflight = NULL;
	etcd_kv_done(&a->write_op.kv);
	a->write_key = mfree(a->write_key);
	for (size_t i = 0; i < a->n_queue; i++)
		job_done(&a->queue[i]);
	a->n_queue = 0;
}

/* The queued writes of a leader that may no longer write: counted and said, never sent. */
static void queue_drop(LbAgent *a, const char *why) {
	if (a->n_queue > 0) {
		a->fenced_local += a->n_queue;
		log_warning("LoadBalancer: %zu status write%s not sent: %s", a->n_queue, a->n_queue == 1 ? "" : "s",
			    why);
	}
	queue_clear(a);
}

static void queue_pop(LbAgent *a) {
	if (a->n_queue == 0)
		return;
	job_done(&a->queue[0]);
	memmove(a->queue, a->queue + 1, (a->n_queue - 1) * sizeof(WriteJob));
	a->n_queue--;
}

static int queue_push(LbAgent *a, const KubeService *s, const LbAssignment *out, const LbCondition *cond) {
	WriteJob *v = reallocarray(a->queue, a->n_queue + 1, sizeof(WriteJob));

	if (!v)
		return -ENOMEM;
	a->queue = v;
	v[a->n_queue] = (WriteJob) { .ns = strdup(s->meta.namespace),
				     .name = strdup(s->meta.name),
				     .rv = s->resource_version ? strdup(s->resource_version) : NULL,
				     .cond = *cond };
	if (!v[a->n_queue].ns || !v[a->n_queue].name || (s->resource_version && !v[a->n_queue].rv)) {
		job_done(&v[a->n_queue]);
		return -ENOMEM;
	}
	for (size_t i = 0; out && i < out->n_ips; i++)
		v[a->n_queue].ips[v[a->n_queue].n_ips++] = out->ips[i];
	a->n_queue++;
	return 0;
}

/* ---- the pass: who gets what ---- */

typedef struct Collect {
	const KubeService **v;
	size_t n, cap;
	bool oom;
} Collect;

static bool ours(const KubeService *s) {
	return s->type == KUBE_SERVICE_LOAD_BALANCER && (!s->lb_class || streq(s->lb_class, KUBE_LB_CLASS_WEFT));
}

static int collect(const KubeObject *o, void *userdata) {
	Collect *c = userdata;
	const KubeService *s = KUBE_SERVICE(o);

	if (!ours(s))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		const KubeService **v = reallocarray(c->v, cap, sizeof(*v));

		if (!v) {
			c->oom = true;
			return -ENOMEM;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = s;
	return 0;
}

/* The families a Service's addresses come in: spec.ipFamilies, else its ClusterIPs', else IPv4. */
static void request_families(const KubeService *s, LbRequest *r) {
	if (s->n_ip_families > 0)
		for (size_t i = 0; i < s->n_ip_families && i < 2; i++)
			r->families[r->n_families++] = s->ip_families[i];
	else if (s->n_cluster_ips > 0)
		for (size_t i = 0; i < s->n_cluster_ips && i < 2; i++)
			r->families[r->n_families++] = s->cluster_ips[i].family;
	else
		r->families[r->n_families++] = AF_INET;
}

/* One request per Service whose request is well-formed (idx[k]: the Service of reqs[k]); a
 * malformed one takes no part, so it holds no address while it is refused. *ret_n: how many. */
static int build_requests(const Collect *c, LbRequest *reqs, size_t *idx, size_t *ret_n, char **keys, LbPort **ports) {
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++) {
		const KubeService *s = c->v[i];
		LbRequest *r;

		keys[i] = strdup_printf("%s/%s", s->meta.namespace, s->meta.name);
		if (!keys[i])
			return -ENOMEM;
		if (s->lb_request_bad)
			continue;
		idx[n] = i;
		r = &reqs[n++];

		ports[i] = s->n_ports ? calloc(s->n_ports, sizeof(LbPort)) : NULL;
		if (s->n_ports && !ports[i])
			return -ENOMEM;
		for (size_t k = 0; k < s->n_ports; k++)
			ports[i][k] = (LbPort) { .protocol = s->ports[k].protocol, .port = s->ports[k].port };
		*r = (LbRequest) {
			.key = keys[i],
			.created = s->created,
			.labels = kube_object_labels(&s->meta),
			.sharing_key = s->lb_sharing_key,
			.ports = ports[i],
			.n_ports = s->n_ports,
		};
		request_families(s, r);
		for (size_t k = 0; k < s->n_lb_requested; k++)
			r->requested[r->n_requested++] = s->lb_requested[k];
		for (size_t k = 0; k < s->n_lb_ips && r->n_current < 2; k++)
			r->current[r->n_current++] = s->lb_ips[k];
	}
	*ret_n = n;
	return 0;
}

static Report *report_find(LbAgent *a, const char *key) {
	for (size_t i = 0; i < a->n_reports; i++)
		if (streq(a->reports[i].key, key))
			return &a->reports[i];
	return NULL;
}

/* Forgets the Services no longer there (a Service that comes back is reported anew). */
static void reports_prune(LbAgent *a) {
	size_t n = 0;

	for (size_t i = 0; i < a->n_reports; i++) {
		if (!a->reports[i].seen) {
			free(a->reports[i].key);
			continue;
		}
		a->reports[i].seen = false;
		a->reports[n++] = a->reports[i];
	}
	a->n_reports = n;
}

/* Logs a Service's outcome when it differs from what was last said about it. */
static void report(LbAgent *a, const char *key, const LbAssignment *out) {
	Report *r = report_find(a, key);
	char buf[2][IP_ADDR_STRLEN];

	if (r)
		r->seen = true;
	if (r && r->state == out->state && streq(r->reason, out->reason))
		return;
	if (!r) {
		Report *v = reallocarray(a->reports, a->n_reports + 1, sizeof(Report));
		char *k = strdup(key);

		if (!v || !k) {
			free(k);
			if (v)
				a->reports = v;
			return;
		}
		a->reports = v;
		r = &v[a->n_reports++];
		*r = (Report) { .key = k, .seen = true };
	}
	r->state = out->state;
	snprintf(r->reason, sizeof(r->reason), "%s", out->reason);
	switch (out->state) {
	case LB_ASSIGNED:
		log_info("LoadBalancer: Service %s: %s%s%s (pool %s)", key, ip_addr_to_string(&out->ips[0], buf[0]),
			 out->n_ips > 1 ? ", " : "", out->n_ips > 1 ? ip_addr_to_string(&out->ips[1], buf[1]) : "",
			 out->pools[0]);
		break;
	case LB_PENDING: log_warning("LoadBalancer: Service %s pending: %s", key, out->reason); break;
	default: log_warning("LoadBalancer: Service %s refused: %s", key, out->reason); break;
	}
}

static bool ingress_equal(const KubeService *s, const LbAssignment *out) {
	if (s->n_lb_ips != out->n_ips || s->n_lb_proxy_ips != 0)
		return false;
	for (size_t i = 0; i < out->n_ips; i++)
		if (!ip_addr_equal(&s->lb_ips[i], &out->ips[i]))
			return false;
	return true;
}

static void count_pools(LbAgent *a, const LbConfig *lc, const LbAssignment *out, size_t n) {
	for (size_t p = 0; p < lc->n_pools; p++)
		a->pool_used[p] = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < out[i].n_ips; k++) {
			bool seen = false;

			/* a shared address counts once */
			for (size_t j = 0; j < i && !seen; j++)
				for (size_t m = 0; m < out[j].n_ips; m++)
					seen = seen || ip_addr_equal(&out[j].ips[m], &out[i].ips[k]);
			for (size_t p = 0; p < lc->n_pools && !seen; p++)
				if (out[i].pools[k] == lc->pools[p].name)
					a->pool_used[p]++;
		}
}

static int run_pass(LbAgent *a, const LbConfig *lc) {
	Collect c = {};
	LbRequest *reqs = NULL;
	LbAssignment *out = NULL, *got = NULL;
	char **keys = NULL;
	LbPort **ports = NULL;
	size_t *idx = NULL, n_reqs = 0;
	int r;

	object_cache_foreach(a->cache, KUBE_KIND_SERVICE, collect, &c);
	r = c.oom ? -ENOMEM : 0;
	if (r >= 0 && c.n > 0) {
		reqs = calloc(c.n, sizeof(LbRequest));
		out = calloc(c.n, sizeof(LbAssignment));
		got = calloc(c.n, sizeof(LbAssignment));
		keys = calloc(c.n, sizeof(char *));
		ports = calloc(c.n, sizeof(LbPort *));
		idx = calloc(c.n, sizeof(size_t));
		r = reqs && out && got && keys && ports && idx ? build_requests(&c, reqs, idx, &n_reqs, keys, ports)
							       : -ENOMEM;
	}
	if (r >= 0 && n_reqs > 0)
		r = lb_ipam_assign(lc->pools, lc->n_pools, reqs, n_reqs, got);
	for (size_t k = 0; r >= 0 && k < n_reqs; k++)
		out[idx[k]] = got[k];
	if (r >= 0) {
		a->passes++;
		memset(a->by_state, 0, sizeof(a->by_state));
		queue_clear(a);
		for (size_t i = 0; i < c.n; i++) {
			const KubeService *s = c.v[i];
			LbCondition cond;

			if (s->lb_request_bad) { /* the decoder's reason names the key and value */
				out[i] = (LbAssignment) { .state = LB_REFUSED, .cause = LB_CAUSE_BAD_REQUEST };
				snprintf(out[i].reason, sizeof(out[i].reason), "%s", s->lb_request_error);
			}
			a->by_state[out[i].state < _LB_STATE_MAX ? out[i].state : LB_REFUSED]++;
			report(a, keys[i], &out[i]);
			lb_condition_from(&out[i], s->lb_request_key, s->generation, &cond);
			/* what is already right is not written again (else every pass would write) */
			if ((!ingress_equal(s, &out[i]) || !lb_condition_held(&s->lb_condition, &cond)) &&
			    queue_push(a, s, &out[i], &cond) < 0)
				r = -ENOMEM;
		}
		count_pools(a, lc, out, c.n);
		reports_prune(a);
	}
	for (size_t i = 0; i < c.n; i++) {
		free(keys ? keys[i] : NULL);
		free(ports ? ports[i] : NULL);
	}
	free(keys);
	free(ports);
	free(reqs);
	free(out);
	free(got);
	free(idx);
	free(c.v);
	if (r >= 0)
		write_next(a);
	return r;
}

/* ---- writing status ---- */

/* {"ingress": [{"ip": ..., "ipMode": "VIP"}, ...]}: status.loadBalancer for the job; {} without
 * addresses (as the API server shows a Service nobody serves). */
static json_t *render_lb_status(const WriteJob *j) {
	_cleanup_(json_decrefp) json_t *ingress = json_array();

	if (!ingress)
		return NULL;
	if (j->n_ips == 0)
		return json_object();
	for (size_t i = 0; i < j->n_ips; i++) {
		char buf[IP_ADDR_STRLEN];

		if (json_array_append_new(ingress, json_pack("{s:s, s:s}", "ip", ip_addr_to_string(&j->ips[i], buf),
							     "ipMode", "VIP")) < 0)
			return NULL;
	}
	return json_pack("{s:O}", "ingress", ingress);
}

/* A copy of the Service's status (obj's; {} if it has none) with status.loadBalancer.ingress
 * replaced by the job's addresses (VIP) and our condition put in; the rest of it as it was. */
static json_t *render_status(const json_t *obj, const WriteJob *j) {
	const json_t *old = json_object_get(obj, "status");
	_cleanup_(json_decrefp) json_t *status = json_is_object(old) ? json_deep_copy(old) : json_object();
	json_t *lb = render_lb_status(j);

	if (!status || !lb || json_object_set_new(status, "loadBalancer", lb) < 0 ||
	    lb_condition_put(status, &j->cond, time(NULL)) < 0)
		return NULL;
	return TAKE_PTR(status);
}

/* etcd: the stored Service with its status rendered. */
static char *render_etcd_value(const EtcdKv *kv, const WriteJob *j) {
	_cleanup_(json_decrefp) json_t *obj = json_loadb(kv->value, kv->value_size, 0, NULL);
	json_t *status = json_is_object(obj) ? render_status(obj, j) : NULL;

	if (!status || json_object_set_new(obj, "status", status) < 0)
		return NULL;
	return json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

static void write_finished(LbAgent *a, bool retry) {
	etcd_kv_done(&a->write_op.kv);
	a->write_key = mfree(a->write_key);
	queue_pop(a);
	if (retry)
		schedule_pass(a); /* from the cache as it is then */
	write_next(a);
}

static void on_put(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbAgent *a = userdata;
	bool ok = false;

	a->write_inflight = NULL;
	if (error < 0 || object_store_txn_parse(resp, NULL, 0, &ok, NULL) < 0) {
		a->write_failures++;
		log_warning_errno(error, "LoadBalancer: writing the status of Service %s/%s failed: %s", a->queue[0].ns,
				  a->queue[0].name, etcd_client_last_error(c));
		write_finished(a, true);
		return;
	}
	if (!ok) {
		/* the Service changed meanwhile, or the leader key is no longer ours */
		a->fenced++;
		write_finished(a, true);
		return;
	}
	a->writes++;
	write_finished(a, false);
}

static void on_get(EtcdClient *c, int error, json_t *resp, void *userdata) {
	LbAgent *a = userdata;
	_cleanup_free_ char *value = NULL;
	_cleanup_(json_decrefp) json_t *req = NULL;
	ObjectGuard guard;
	ObjectOp put;
	bool ok = false;
	int r;

	a->write_inflight = NULL;
	if (error < 0 || object_store_txn_parse(resp, &a->write_op, 1, &ok, NULL) < 0 || !ok) {
		a->write_failures++;
		write_finished(a, true);
		return;
	}
	if (!a->write_op.kv.key || !lb_election_is_leader(a->election)) { /* deleted meanwhile, or deposed */
		write_finished(a, false);
		return;
	}
	value = render_etcd_value(&a->write_op.kv, &a->queue[0]);
	if (!value) {
		write_finished(a, false);
		return;
	}
	put = (ObjectOp) { .type = OBJECT_OP_PUT,
			   .key = a->write_op.key,
			   .value = value,
			   .compare = true,
			   .expect_mod = a->write_op.kv.mod_revision };
	guard = (ObjectGuard) { .key = a->leader_key, .create = true, .revision = lb_election_fence(a->election) };
	req = object_store_txn_request(&put, 1, &guard, 1);
	r = req ? etcd_client_call_async(a->cfg.etcd, "/v3/kv/txn", req, on_put, a, &a->write_inflight) : -ENOMEM;
	if (r < 0) {
		a->write_failures++;
		write_finished(a, true);
	}
}

/* Kubernetes: 409 (the Service changed since the cache's version) and errors are retried by
 * the next pass; 404 (gone) is not. */
static void on_kube_put(KubeClient *c, int error, json_t *resp, void *userdata) {
	LbAgent *a = userdata;

	a->kube_inflight = NULL;
	if (error == -EEXIST) {
		a->fenced++;
		write_finished(a, true);
		return;
	}
	if (error < 0 && error != -ENOENT) {
		a->write_failures++;
		log_warning_errno(error, "LoadBalancer: writing the status of Service %s/%s failed: %s", a->queue[0].ns,
				  a->queue[0].name, kube_client_last_error(c));
		write_finished(a, true);
		return;
	}
	if (error >= 0)
		a->writes++;
	write_finished(a, false);
}

/* PUT .../services/NAME/status: only status is taken from the body, and all of it (the API server
 * replaces the whole status), so it is the Service's status as read, with ingress and our
 * condition put in; metadata.resourceVersion, the cache's, is the precondition: if what was read is
 * newer than what the pass saw, the PUT fails with 409 and the next pass retries. */
static int kube_put(LbAgent *a, const WriteJob *j, const json_t *current) {
	_cleanup_(json_decrefp) json_t *obj = NULL;
	_cleanup_free_ char *body = NULL, *path = NULL;
	json_t *status = render_status(current, j);

	if (!status)
		return -ENOMEM;
	obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o}", "apiVersion", "v1", "kind", "Service", "metadata",
			"namespace", j->ns, "name", j->name, "resourceVersion", j->rv ?: "", "status", status);
	body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	path = strdup_printf("/api/v1/namespaces/%s/services/%s/status", j->ns, j->name);
	if (!body || !path)
		return -ENOMEM;
	return kube_client_call_async(a->cfg.kube, "PUT", path, NULL, body, on_kube_put, a, &a->kube_inflight);
}

/* The Service as it is (for the status it holds), then the PUT. */
static void on_kube_get(KubeClient *c, int error, json_t *resp, void *userdata) {
	LbAgent *a = userdata;
	int r;

	a->kube_inflight = NULL;
	if (error == -ENOENT) { /* gone */
		write_finished(a, false);
		return;
	}
	if (error < 0) {
		a->write_failures++;
		log_warning_errno(error, "LoadBalancer: reading Service %s/%s failed: %s", a->queue[0].ns,
				  a->queue[0].name, kube_client_last_error(c));
		write_finished(a, true);
		return;
	}
	if (!lb_election_is_leader(a->election) || !lb_election_may_write(a->election)) {
		/* stopped while the GET was out, say: as write_next() */
		queue_drop(a, lb_election_is_leader(a->election) ? "the Lease is past its renewal deadline"
								 : "no longer the assigner");
		return;
	}
	r = kube_put(a, &a->queue[0], resp);
	if (r < 0) {
		a->write_failures++;
		write_finished(a, false);
	}
}

static int kube_write(LbAgent *a, const WriteJob *j) {
	_cleanup_free_ char *path = strdup_printf("/api/v1/namespaces/%s/services/%s", j->ns, j->name);

	if (!path)
		return -ENOMEM;
	return kube_client_call_async(a->cfg.kube, "GET", path, NULL, NULL, on_kube_get, a, &a->kube_inflight);
}

static void write_next(LbAgent *a) {
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (a->write_inflight || a->kube_inflight || a->n_queue == 0 || !lb_election_is_leader(a->election))
		return;
	if (!lb_election_may_write(a->election)) {
		/* leading by our last word, but past the Lease's deadline by our clock: whatever we
		 * believe, another node may have taken over while we were not looking */
		queue_drop(a, "the Lease is past its renewal deadline");
		return;
	}
	if (a->cfg.kube) {
		r = kube_write(a, &a->queue[0]);
		if (r < 0) {
			a->write_failures++;
			queue_pop(a);
		}
		return;
	}
	free(a->write_key);
	a->write_key = object_key(a->cfg.prefix, KUBE_KIND_SERVICE, a->queue[0].ns, a->queue[0].name);
	a->write_op = (ObjectOp) { .type = OBJECT_OP_GET, .key = a->write_key };
	req = a->write_key ? object_store_txn_request(&a->write_op, 1, NULL, 0) : NULL;
	r = req ? etcd_client_call_async(a->cfg.etcd, "/v3/kv/txn", req, on_get, a, &a->write_inflight) : -ENOMEM;
	if (r < 0) {
		a->write_failures++;
		queue_pop(a);
	}
}

/* ---- scheduling ---- */

static int on_pass(EventSource *s, void *userdata) {
	LbAgent *a = userdata;
	int r;

	a->pass_scheduled = false;
	if (!lb_election_is_leader(a->election) || !object_cache_all_synced(a->cache) || !lb_config(a))
		return 0;
	r = run_pass(a, lb_config(a));
	if (r < 0)
		log_warning_errno(r, "LoadBalancer: assignment pass failed: %m");
	return 0;
}

static void schedule_pass(LbAgent *a) {
	if (a->pass_scheduled || !lb_election_is_leader(a->election))
		return;
	if (event_source_arm_once(a->pass_timer, PASS_DEBOUNCE_USEC) >= 0)
		a->pass_scheduled = true;
}

static int on_tick(EventSource *s, void *userdata) {
	LbAgent *a = userdata;
	const LbConfig *lc = lb_config(a);

	if (!lc)
		return 0;
	if (!a->election) {
		if (!a->said_unsupported)
			log_warning("LoadBalancer: the network config has pools, but assigning addresses needs "
				    "an objects datastore; Services keep what status says");
		a->said_unsupported = true;
		return 0;
	}
	if (!a->pool_used) {
		a->pool_used = calloc(MAX(lc->n_pools, (size_t) 1), sizeof(uint64_t));
		if (!a->pool_used)
			return 0;
	}
	lb_election_tick(a->election);
	schedule_pass(a); /* also retries what did not hold */
	return 0;
}

static void on_leader(LbElection *e, bool leader, void *userdata) {
	LbAgent *a = userdata;

	if (leader)
		schedule_pass(a);
	else
		queue_drop(a, "no longer the assigner");
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	if (o->kind == KUBE_KIND_SERVICE)
		schedule_pass(userdata);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	if (o->kind == KUBE_KIND_SERVICE)
		schedule_pass(userdata);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	if (old->kind == KUBE_KIND_SERVICE)
		schedule_pass(userdata);
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	schedule_pass(userdata);
}

const ObjectCacheHandlers lb_agent_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
};

char *lb_leader_key(const char *prefix) {
	size_t n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	return strdup_printf("%.*s/loadbalancer/leader", (int) MIN(n, (size_t) 4096), prefix);
}

int lb_agent_new(ObjectCache *cache, EventLoop *loop, const LbAgentConfig *cfg, LbAgent **ret) {
	LbAgent *a = calloc(1, sizeof(*a));
	uint64_t period;
	int r;

	if (!a)
		return -ENOMEM;
	*a = (LbAgent) { .cache = cache, .loop = loop, .cfg = *cfg };
	if (!a->cfg.leader_ttl)
		a->cfg.leader_ttl = LB_AGENT_LEADER_TTL;
	period = (uint64_t) a->cfg.leader_ttl * 1000000 / 3;
	a->leader_key = cfg->prefix ? lb_leader_key(cfg->prefix) : strdup("");
	r = a->leader_key ? 0 : -ENOMEM;
	if (r >= 0 && (cfg->etcd || cfg->kube))
		r = lb_election_new(cfg->etcd ? &lb_election_etcd_ops : &lb_election_kube_ops,
				    &(LbElectionConfig) { .identity = cfg->node,
							  .ttl = a->cfg.leader_ttl,
							  .etcd = cfg->etcd,
							  .key = cfg->etcd ? a->leader_key : NULL,
							  .kube = cfg->etcd ? NULL : cfg->kube,
							  .namespace = cfg->namespace ?: "kube-system",
							  .name = LB_AGENT_LEASE_NAME,
							  .changed = on_leader,
							  .userdata = a },
				    &a->election);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_pass, a, &a->pass_timer);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_tick, a, &a->tick);
	if (r >= 0)
		r = event_source_arm(a->tick, 1000, period);
	if (r < 0) {
		lb_agent_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

LbAgent *lb_agent_free(LbAgent *a) {
	if (!a)
		return NULL;
	queue_clear(a);
	free(a->queue);
	event_source_free(a->tick);
	event_source_free(a->pass_timer);
	lb_election_free(a->election);
	for (size_t i = 0; i < a->n_reports; i++)
		free(a->reports[i].key);
	free(a->reports);
	free(a->pool_used);
	free(a->leader_key);
	free(a);
	return NULL;
}

int lb_agent_render_metrics(LbAgent *a, FILE *f) {
	const LbConfig *lc = a ? lb_config(a) : NULL;

	if (!lc || !a->pool_used)
		return 0;
	fprintf(f,
		"# HELP weft_loadbalancer_leader 1 if this node assigns LoadBalancer addresses.\n"
		"# TYPE weft_loadbalancer_leader gauge\n"
		"weft_loadbalancer_leader %d\n"
		"# HELP weft_loadbalancer_leader_transitions_total Times this node became or stopped being the assigner.\n"
		"# TYPE weft_loadbalancer_leader_transitions_total counter\n"
		"weft_loadbalancer_leader_transitions_total %" PRIu64 "\n",
		lb_election_is_leader(a->election), lb_election_transitions(a->election));
	fprintf(f, "# HELP weft_loadbalancer_services LoadBalancer Services by assignment state (last pass, "
		   "leader only).\n# TYPE weft_loadbalancer_services gauge\n");
	for (int s = 0; s < _LB_STATE_MAX; s++)
		fprintf(f, "weft_loadbalancer_services{state=\"%s\"} %" PRIu64 "\n", lb_state_to_string((LbState) s),
			a->by_state[s]);
	fprintf(f, "# HELP weft_loadbalancer_pool_addresses Addresses per pool: used, and free for automatic "
		   "assignment (leader only).\n# TYPE weft_loadbalancer_pool_addresses gauge\n");
	for (size_t p = 0; p < lc->n_pools; p++) {
		uint64_t size = lb_pool_size(&lc->pools[p]);

		fprintf(f, "weft_loadbalancer_pool_addresses{pool=\"%s\",state=\"used\"} %" PRIu64 "\n",
			lc->pools[p].name, a->pool_used[p]);
		fprintf(f, "weft_loadbalancer_pool_addresses{pool=\"%s\",state=\"free\"} %" PRIu64 "\n",
			lc->pools[p].name, size > a->pool_used[p] ? size - a->pool_used[p] : 0);
	}
	fprintf(f,
		"# HELP weft_loadbalancer_status_writes_total Service status writes, by result.\n"
		"# TYPE weft_loadbalancer_status_writes_total counter\n"
		"weft_loadbalancer_status_writes_total{result=\"ok\"} %" PRIu64 "\n"
		"weft_loadbalancer_status_writes_total{result=\"conflict\"} %" PRIu64 "\n"
		"weft_loadbalancer_status_writes_total{result=\"error\"} %" PRIu64 "\n"
		"weft_loadbalancer_status_writes_total{result=\"fenced\"} %" PRIu64 "\n",
		a->writes, a->fenced, a->write_failures, a->fenced_local);
	return 0;
}
