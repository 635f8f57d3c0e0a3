/* SPDX-License-Identifier: Apache-2.0 */
/* The Kubernetes kind of lb-members.h: a coordination.k8s.io/v1 Lease per node, listed by label. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-members.h"

/* ---- the judgement (pure) ---- */

void lb_member_seen_free(LbMemberSeen *v, size_t n) {
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].resource_version);
	}
	free(v);
}

static const LbMemberSeen *seen_find(const LbMemberSeen *v, size_t n, const char *name) {
	for (size_t i = 0; i < n; i++)
		if (streq(v[i].name, name))
			return &v[i];
	return NULL;
}

static bool named_for(const char *lease_name, const char *holder) {
	size_t p = strlen(LB_MEMBERS_KUBE_PREFIX);

	return !isempty(holder) && strncmp(lease_name, LB_MEMBERS_KUBE_PREFIX, p) == 0 && streq(lease_name + p, holder);
}

int lb_members_kube_judge(const KubeLease *leases, const char *const *names, size_t n, LbMemberSeen **seen,
			  size_t *n_seen, uint64_t now_usec, uint32_t default_ttl, const char **live,
			  size_t *ret_n_live) {
	LbMemberSeen *v = n ? calloc(n, sizeof(*v)) : NULL;
	size_t n_live = 0;

	if (n && !v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const LbMemberSeen *old = seen_find(*seen, *n_seen, names[i]);
		bool same = old && streq(old->resource_version, leases[i].resource_version);

		v[i].name = strdup(names[i]);
		v[i].resource_version = strdup(leases[i].resource_version);
		if (!v[i].name || !v[i].resource_version) {
			lb_member_seen_free(v, n);
			return -ENOMEM;
		}
		/* first seen or changed: now, on our clock (renewTime is the holder's) */
		v[i].observed_usec = same ? old->observed_usec : now_usec;
		if (named_for(names[i], leases[i].holder) &&
		    kube_lease_decide(&leases[i], "", now_usec, v[i].observed_usec, default_ttl) == KUBE_LEASE_HELD)
			live[n_live++] = leases[i].holder;
	}
	lb_member_seen_free(*seen, *n_seen);
	*seen = v;
	*n_seen = n;
	*ret_n_live = n_live;
	return 0;
}

/* ---- the kind ---- */

typedef struct KubeMembers {
	LbMembers *m;
	char *path, *collection, *list_path, *name;
	EventSource *tick, *poll;
	KubeRequest *write_req, *list_req;
	json_t *lease; /* ours as last written (the next PUT's base); NULL: read it first */
	LbMemberSeen *seen;
	size_t n_seen;
	bool warned;
} KubeMembers;

static void kube_failed(KubeMembers *s, const char *step, int error) {
	const char *why = kube_client_last_error(s->m ? lb_members_config(s->m)->kube : NULL);

	if (!s->warned)
		log_warning_errno(error, "LoadBalancer: member Lease %s/%s: %s failed: %s",
				  lb_members_config(s->m)->namespace, s->name, step,
				  !isempty(why) ? why : strerror(-error));
	s->warned = true;
}

/* Our Lease held by us for ttl as of now, based on `base` (NULL: a new one), labelled. */
static char *render(KubeMembers *s, const json_t *base, const char *identity) {
	const LbMembersConfig *cfg = lb_members_config(s->m);
	bool acquire = !base ||
		       !streq(json_string_value(json_object_get(json_object_get(base, "spec"), "holderIdentity")) ?: "",
			      identity);
	_cleanup_(json_decrefp) json_t *o =
			kube_lease_render(base, cfg->namespace, s->name, identity, isempty(identity) ? 1 : cfg->ttl,
					  acquire, kube_realtime_usec());
	json_t *md = o ? json_object_get(o, "metadata") : NULL, *labels = json_object_get(md, "labels");

	if (!md)
		return NULL;
	if (!json_is_object(labels)) {
		labels = json_object();
		if (!labels || json_object_set_new(md, "labels", labels) < 0)
			return NULL;
	}
	if (json_object_set_new(labels, LB_MEMBERS_KUBE_LABEL, json_string("true")) < 0)
		return NULL;
	return json_dumps(o, JSON_COMPACT);
}

static void on_write(KubeClient *c, int error, json_t *resp, void *userdata) {
	KubeMembers *s = userdata;

	s->write_req = NULL;
	if (error == -EEXIST) { /* changed since we wrote it (or created meanwhile): read it again */
		json_decref(s->lease);
		s->lease = NULL;
		return;
	}
	if (error < 0) {
		kube_failed(s, "renewal", error);
		return;
	}
	if (s->warned)
		log_info("LoadBalancer: member Lease %s held again", s->name);
	s->warned = false;
	json_decref(s->lease);
	s->lease = json_incref(resp);
}

static void write_lease(KubeMembers *s, const json_t *base) {
	const LbMembersConfig *cfg = lb_members_config(s->m);
	_cleanup_free_ char *body = render(s, base, cfg->node);
	int r = body ? kube_client_call_async(cfg->kube, base ? "PUT" : "POST", base ? s->path : s->collection, NULL,
					      body, on_write, s, &s->write_req)
		     : -ENOMEM;

	if (r < 0)
		kube_failed(s, "renewal", r);
}

static void on_get(KubeClient *c, int error, json_t *resp, void *userdata) {
	KubeMembers *s = userdata;

	s->write_req = NULL;
	if (error == -ENOENT) {
		write_lease(s, NULL);
		return;
	}
	if (error < 0) {
		kube_failed(s, "read", error);
		return;
	}
	write_lease(s, resp);
}

static int on_tick(EventSource *src, void *userdata) {
	KubeMembers *s = userdata;
	int r;

	if (s->write_req)
		return 0;
	if (s->lease) {
		write_lease(s, s->lease);
		return 0;
	}
	r = kube_client_call_async(lb_members_config(s->m)->kube, "GET", s->path, NULL, NULL, on_get, s, &s->write_req);
	if (r < 0)
		kube_failed(s, "read", r);
	return 0;
}

static void on_list(KubeClient *c, int error, json_t *resp, void *userdata) {
	KubeMembers *s = userdata;
	const json_t *items = json_object_get(resp, "items");
	size_t n = json_array_size(items), k = 0, n_live = 0;
	_cleanup_free_ KubeLease *leases = NULL;
	_cleanup_free_ const char **names = NULL, **live = NULL;

	s->list_req = NULL;
	if (error < 0 || !json_is_array(items)) {
		lb_members_failed(s->m);
		return;
	}
	leases = n ? calloc(n, sizeof(*leases)) : NULL;
	names = n ? calloc(n, sizeof(char *)) : NULL;
	live = n ? calloc(n, sizeof(char *)) : NULL;
	if (n && (!leases || !names || !live))
		return;
	for (size_t i = 0; i < n; i++) {
		const json_t *it = json_array_get(items, i);
		const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));

		if (!name || kube_lease_parse(it, &leases[k]) < 0)
			continue;
		names[k++] = name;
	}
	if (lb_members_kube_judge(leases, names, k, &s->seen, &s->n_seen, now_usec(), lb_members_config(s->m)->ttl,
				  live, &n_live) >= 0)
		(void) lb_members_set(s->m, live, n_live);
	for (size_t i = 0; i < k; i++)
		kube_lease_done(&leases[i]);
}

static int on_poll(EventSource *src, void *userdata) {
	KubeMembers *s = userdata;
	int r;

	if (s->list_req)
		return 0;
	r = kube_client_call_async(lb_members_config(s->m)->kube, "GET", s->list_path, NULL, NULL, on_list, s,
				   &s->list_req);
	if (r < 0)
		lb_members_failed(s->m);
	return 0;
}

static int kube_start(LbMembers *m) {
	KubeMembers *s = lb_members_state(m);
	const LbMembersConfig *cfg = lb_members_config(m);

	s->m = m;
	if (!cfg->kube || isempty(cfg->namespace) || isempty(cfg->node))
		return -EINVAL;
	s->name = strdup_printf("%s%s", LB_MEMBERS_KUBE_PREFIX, cfg->node);
	s->path = s->name ? kube_lease_path(cfg->namespace, s->name) : NULL;
	s->collection = kube_lease_path(cfg->namespace, NULL);
	s->list_path = s->collection ? strdup_printf("%s?labelSelector=%s", s->collection,
						     "weft.dev%2Flb-member%3Dtrue")
				     : NULL;
	if (!s->path || !s->list_path)
		return -ENOMEM;
	return lb_members_add_timers(m, on_tick, on_poll, s, &s->tick, &s->poll);
}

static void kube_stop(LbMembers *m) {
	KubeMembers *s = lb_members_state(m);
	KubeClient *kube = lb_members_config(m)->kube;

	if (!s->m)
		return;
	event_source_free(s->tick);
	event_source_free(s->poll);
	kube_request_cancel(s->write_req);
	kube_request_cancel(s->list_req);
	/* the others drop us at their next list rather than after the TTL (best effort, blocking, short);
	 * emptied rather than deleted: the Role needs no delete */
	if (s->lease) {
		_cleanup_free_ char *body = render(s, s->lease, "");
		_cleanup_(json_decrefp) json_t *cur = NULL;

		if (body && kube_client_call(kube, "PUT", s->path, NULL, body, NULL) == -EEXIST &&
		    kube_client_call(kube, "GET", s->path, NULL, NULL, &cur) >= 0) {
			free(body);
			body = render(s, cur, "");
			if (body)
				(void) kube_client_call(kube, "PUT", s->path, NULL, body, NULL);
		}
	}
	json_decref(s->lease);
	lb_member_seen_free(s->seen, s->n_seen);
	free(s->name);
	free(s->path);
	free(s->collection);
	free(s->list_path);
}

const LbMembersOps lb_members_kube_ops = {
	.name = "Lease",
	.object_size = sizeof(KubeMembers),
	.start = kube_start,
	.stop = kube_stop,
};
