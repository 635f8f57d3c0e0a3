/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-members.h"

struct LbMembers {
	const LbMembersOps *ops;
	void *state;
	EventLoop *loop;
	LbMembersConfig cfg;
	LbMembersChangedFn changed;
	void *userdata;

	char **names; /* sorted, unique */
	size_t n_names;
	bool synced;
	uint64_t failures;
};

/* ---- the generic part ---- */

static int name_cmp(const void *x, const void *y) {
	return strcmp(*(const char *const *) x, *(const char *const *) y);
}

static void names_free(char **v, size_t n) {
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int lb_members_set(LbMembers *m, const char *const *names, size_t n) {
	char **v = n ? calloc(n, sizeof(char *)) : NULL;
	size_t w = 0;
	bool same;

	if (n && !v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = strdup(names[i]);
		if (!v[i]) {
			names_free(v, n);
			return -ENOMEM;
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(char *), name_cmp);
	for (size_t i = 0; i < n; i++)
		if (w > 0 && streq(v[w - 1], v[i]))
			free(v[i]);
		else
			v[w++] = v[i];
	same = m->synced && w == m->n_names;
	for (size_t i = 0; same && i < w; i++)
		same = streq(v[i], m->names[i]);
	if (same) {
		names_free(v, w);
		return 0;
	}
	names_free(m->names, m->n_names);
	m->names = v;
	m->n_names = w;
	m->synced = true;
	if (m->changed)
		m->changed(m, m->userdata);
	return 0;
}

void lb_members_failed(LbMembers *m) {
	m->failures++;
}

bool lb_members_synced(const LbMembers *m) {
	return m && m->synced;
}

const char *const *lb_members_list(const LbMembers *m, size_t *ret_n) {
	*ret_n = m ? m->n_names : 0;
	return m ? (const char *const *) m->names : NULL;
}

bool lb_members_is_live(const LbMembers *m, const char *node) {
	if (!m || !node)
		return false;
	return bsearch(&node, m->names, m->n_names, sizeof(char *), name_cmp) != NULL;
}

uint64_t lb_members_failures(const LbMembers *m) {
	return m ? m->failures : 0;
}

void *lb_members_state(LbMembers *m) {
	return m->state;
}

const LbMembersConfig *lb_members_config(const LbMembers *m) {
	return &m->cfg;
}

EventLoop *lb_members_loop(const LbMembers *m) {
	return m->loop;
}

char *lb_members_key_prefix(const char *prefix) {
	size_t n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	return strdup_printf("%.*s/loadbalancer/members/", (int) MIN(n, (size_t) 4096), prefix);
}

int lb_members_add_timers(LbMembers *m, EventTimerFn tick, EventTimerFn poll, void *userdata, EventSource **ret_tick,
			  EventSource **ret_poll) {
	int r = event_loop_add_timer(m->loop, tick, userdata, ret_tick);

	if (r >= 0)
		r = event_source_arm(*ret_tick, 1000, (uint64_t) m->cfg.ttl * 1000000 / 3);
	if (r >= 0)
		r = event_loop_add_timer(m->loop, poll, userdata, ret_poll);
	if (r >= 0)
		r = event_source_arm(*ret_poll, 1000, m->cfg.poll_usec);
	return r;
}

int lb_members_new(const LbMembersOps *ops, EventLoop *loop, const LbMembersConfig *cfg, LbMembersChangedFn fn,
		   void *userdata, LbMembers **ret) {
	LbMembers *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	*m = (LbMembers) { .ops = ops, .loop = loop, .cfg = *cfg, .changed = fn, .userdata = userdata };
	if (!m->cfg.ttl)
		m->cfg.ttl = LB_MEMBERS_TTL;
	if (!m->cfg.poll_usec)
		m->cfg.poll_usec = LB_MEMBERS_POLL_USEC;
	if (ops->object_size) {
		m->state = calloc(1, ops->object_size);
		if (!m->state) {
			free(m);
			return -ENOMEM;
		}
	}
	r = ops->start ? ops->start(m) : 0;
	if (r < 0) {
		lb_members_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

LbMembers *lb_members_free(LbMembers *m) {
	if (!m)
		return NULL;
	if (m->ops->stop)
		m->ops->stop(m);
	free(m->state);
	names_free(m->names, m->n_names);
	free(m);
	return NULL;
}

/* ---- etcd: a key per node with a lease ---- */

typedef struct EtcdMembers {
	LbMembers *m;
	char *prefix, *range_end, *key;
	EventSource *tick, *poll;
	EtcdRequest *lease_req, *list_req;
	int64_t lease;
	bool key_put; /* the key was put with the current lease */
	bool warned;
} EtcdMembers;

static void etcd_failed(EtcdMembers *s, const char *step, int error) {
	const char *why = etcd_client_last_error(s->m->cfg.etcd);

	if (!s->warned)
		log_warning_errno(error, "LoadBalancer: member key %s: %s failed: %s", s->key, step,
				  !isempty(why) ? why : strerror(-error));
	s->warned = true;
}

static void on_put(EtcdClient *c, int error, json_t *resp, void *userdata) {
	EtcdMembers *s = userdata;

	s->lease_req = NULL;
	if (error < 0) {
		etcd_failed(s, "put", error);
		return;
	}
	if (s->warned)
		log_info("LoadBalancer: member key %s held again", s->key);
	s->warned = false;
	s->key_put = true;
}

/* put <key> = <node> with our lease */
static void put_key(EtcdMembers *s) {
	const char *node = s->m->cfg.node;
	_cleanup_(json_decrefp) json_t *req =
			json_pack("{s:o, s:o, s:o}", "key", etcd_json_bytes(s->key, strlen(s->key)), "value",
				  etcd_json_bytes(node, strlen(node)), "lease", etcd_json_int64_new(s->lease));
	int r = req ? etcd_client_call_async(s->m->cfg.etcd, "/v3/kv/put", req, on_put, s, &s->lease_req) : -ENOMEM;

	if (r < 0)
		etcd_failed(s, "put", r);
}

static void on_grant(EtcdClient *c, int error, json_t *resp, void *userdata) {
	EtcdMembers *s = userdata;

	s->lease_req = NULL;
	if (error < 0 || etcd_json_int64(resp, "ID") == 0) {
		etcd_failed(s, "lease grant", error < 0 ? error : -EIO);
		return;
	}
	s->lease = etcd_json_int64(resp, "ID");
	s->key_put = false;
	put_key(s);
}

static void grant(EtcdMembers *s) {
	_cleanup_(json_decrefp) json_t *req = json_pack("{s:o}", "TTL", etcd_json_int64_new(s->m->cfg.ttl));
	int r = req ? etcd_client_call_async(s->m->cfg.etcd, "/v3/lease/grant", req, on_grant, s, &s->lease_req)
		    : -ENOMEM;

	if (r < 0)
		etcd_failed(s, "lease grant", r);
}

static void on_keepalive(EtcdClient *c, int error, json_t *resp, void *userdata) {
	EtcdMembers *s = userdata;
	int64_t ttl = 0;

	s->lease_req = NULL;
	if (error < 0) {
		etcd_failed(s, "keepalive", error);
		return;
	}
	if (etcd_lease_keepalive_parse(resp, &ttl) < 0 || ttl <= 0) {
		/* expired (a long pause, etcd restored): a new lease and the key again, now */
		s->lease = 0;
		s->key_put = false;
		grant(s);
		return;
	}
	if (!s->key_put) /* the put failed earlier */
		put_key(s);
}

static int on_tick(EventSource *src, void *userdata) {
	EtcdMembers *s = userdata;
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (s->lease_req)
		return 0;
	if (!s->lease) {
		grant(s);
		return 0;
	}
	req = json_pack("{s:o}", "ID", etcd_json_int64_new(s->lease));
	r = req ? etcd_client_call_async(s->m->cfg.etcd, "/v3/lease/keepalive", req, on_keepalive, s, &s->lease_req)
		: -ENOMEM;
	if (r < 0)
		etcd_failed(s, "keepalive", r);
	return 0;
}

static void on_list(EtcdClient *c, int error, json_t *resp, void *userdata) {
	EtcdMembers *s = userdata;
	_cleanup_free_ const char **names = NULL;
	EtcdKv *kvs = NULL;
	size_t n = 0, w = 0, plen = strlen(s->prefix);
	bool self = false;

	s->list_req = NULL;
	if (error < 0 || etcd_range_parse(resp, &kvs, &n, NULL) < 0) {
		lb_members_failed(s->m);
		return;
	}
	names = n ? calloc(n, sizeof(char *)) : NULL;
	if (n && !names) {
		etcd_kvs_free(kvs, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = kvs[i].key + MIN(strlen(kvs[i].key), plen);

		/* a node name is a DNS subdomain: nothing else counts as a member */
		if (isempty(name) || strchr(name, '/') || strlen(name) > 253)
			continue;
		self = self || streq(name, s->m->cfg.node);
		names[w++] = name;
	}
	/* our key gone while we hold the lease (deleted by hand): put it back */
	if (!self && s->lease && s->key_put && !s->lease_req) {
		s->key_put = false;
		put_key(s);
	}
	(void) lb_members_set(s->m, names, w);
	etcd_kvs_free(kvs, n);
}

static int on_poll(EventSource *src, void *userdata) {
	EtcdMembers *s = userdata;
	_cleanup_(json_decrefp) json_t *req = NULL;
	int r;

	if (s->list_req)
		return 0;
	req = etcd_range_request(s->prefix, s->range_end);
	r = req ? etcd_client_call_async(s->m->cfg.etcd, "/v3/kv/range", req, on_list, s, &s->list_req) : -ENOMEM;
	if (r < 0)
		lb_members_failed(s->m);
	return 0;
}

static int etcd_start(LbMembers *m) {
	EtcdMembers *s = lb_members_state(m);
	const LbMembersConfig *cfg = lb_members_config(m);

	s->m = m;
	if (!cfg->etcd || !cfg->prefix || isempty(cfg->node))
		return -EINVAL;
	s->prefix = lb_members_key_prefix(cfg->prefix);
	s->range_end = s->prefix ? etcd_prefix_range_end(s->prefix) : NULL;
	s->key = s->prefix ? strdup_printf("%s%s", s->prefix, cfg->node) : NULL;
	if (!s->range_end || !s->key)
		return -ENOMEM;
	return lb_members_add_timers(m, on_tick, on_poll, s, &s->tick, &s->poll);
}

static void etcd_stop(LbMembers *m) {
	EtcdMembers *s = lb_members_state(m);

	if (!s->m)
		return;
	event_source_free(s->tick);
	event_source_free(s->poll);
	etcd_request_cancel(s->lease_req);
	etcd_request_cancel(s->list_req);
	/* the others re-choose at once rather than after the TTL (best effort: etcd may be gone) */
	if (s->lease)
		(void) etcd_lease_revoke(lb_members_config(m)->etcd, s->lease);
	free(s->prefix);
	free(s->range_end);
	free(s->key);
}

const LbMembersOps lb_members_etcd_ops = {
	.name = "etcd",
	.object_size = sizeof(EtcdMembers),
	.start = etcd_start,
	.stop = etcd_stop,
};
