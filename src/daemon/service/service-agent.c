/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-agent-internal.h"

/* how often the node's addresses (links, leases) are compared with those the policy last used */
#define RECHECK_USEC (10 * 1000 * 1000)

/* Index of key in units, or where it would go (*found false). */
size_t service_agent_unit_find(ServiceAgent *a, const char *key, bool *found) {
	size_t lo = 0, hi = a->n_units;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(key, a->units[mid]->key);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

/* Puts u (may be NULL: removes) in place of key's unit; frees the old one. */
int service_agent_unit_replace(ServiceAgent *a, const char *key, ServiceUnit *u) {
	bool found;
	size_t i = service_agent_unit_find(a, key, &found);

	if (found) {
		service_unit_free(a->units[i]);
		if (u)
			a->units[i] = u;
		else {
			memmove(a->units + i, a->units + i + 1, (a->n_units - i - 1) * sizeof(ServiceUnit *));
			a->n_units--;
		}
		return 0;
	}
	if (!u)
		return 0;
	if (a->n_units == a->cap_units) {
		size_t cap = a->cap_units ? a->cap_units * 2 : 64;
		ServiceUnit **v = reallocarray(a->units, cap, sizeof(ServiceUnit *));

		if (!v)
			return -ENOMEM;
		a->units = v;
		a->cap_units = cap;
	}
	memmove(a->units + i + 1, a->units + i, (a->n_units - i) * sizeof(ServiceUnit *));
	a->units[i] = u;
	a->n_units++;
	return 0;
}

void service_agent_clear_dirty(ServiceAgent *a) {
	for (size_t i = 0; i < a->n_dirty; i++)
		free(a->dirty[i]);
	a->n_dirty = 0;
	a->dirty_oom = false;
}

typedef struct HealthCollect {
	ServiceAgent *a;
	ServiceHealthEntry *v;
	size_t n;
	bool oom;
} HealthCollect;

static int count_local(const KubeObject *o, void *userdata) {
	const KubeEndpointSlice *sl = KUBE_ENDPOINT_SLICE(o);
	HealthCollect *c = userdata;

	for (size_t i = 0; sl && i < sl->n_endpoints; i++)
		if (sl->endpoints[i].ready && !sl->endpoints[i].terminating && sl->endpoints[i].node_name &&
		    streq(sl->endpoints[i].node_name, c->a->cfg.node))
			c->v[c->n].local_endpoints++;
	return 0;
}

/* A healthCheckNodePort listens on every address of the node: the same policy and claims as a
 * nodePort (reported by the Service's build). */
static bool health_admitted(ServiceAgent *a, const KubeService *svc) {
	_cleanup_free_ char *key = strdup_printf("%s/%s", svc->meta.namespace, svc->meta.name);
	_cleanup_free_ char *ckey = service_claim_key_node_port(KUBE_PROTO_TCP, svc->health_check_node_port);

	return key && ckey &&
	       service_admission_check_node_port(&a->policy, KUBE_PROTO_TCP, svc->health_check_node_port) ==
			       SERVICE_ADMIT &&
	       service_claims_wins(a->claims, key, ckey);
}

static int collect_health(const KubeObject *o, void *userdata) {
	const KubeService *svc = KUBE_SERVICE(o);
	HealthCollect *c = userdata;
	ServiceHealthEntry *nv;

	if (!svc || svc->type != KUBE_SERVICE_LOAD_BALANCER || !svc->external_traffic_local ||
	    !svc->health_check_node_port || !health_admitted(c->a, svc))
		return 0;
	nv = reallocarray(c->v, c->n + 1, sizeof(ServiceHealthEntry));
	if (!nv) {
		c->oom = true;
		return -ENOMEM;
	}
	c->v = nv;
	c->v[c->n] = (ServiceHealthEntry) { .port = svc->health_check_node_port,
					    .namespace = o->namespace,
					    .name = o->name };
	object_cache_foreach_slice_of_service(c->a->cache, o->namespace, o->name, count_local, c);
	c->n++;
	return 0;
}

static void update_health(ServiceAgent *a) {
	HealthCollect c = { .a = a };

	object_cache_foreach(a->cache, KUBE_KIND_SERVICE, collect_health, &c);
	if (!c.oom)
		(void) service_health_update(a->health, c.v, c.n);
	free(c.v);
}

/* NftSyncOps.prepare: -EAGAIN until the node's addresses are known; a changed policy (or a dirty
 * set that could not be remembered) makes the pass full. */
static int sync_prepare(NftSync *s, void *userdata) {
	ServiceAgent *a = userdata;
	int r = service_build_policy_refresh(a);

	if (r == -EAGAIN) /* again once the leases are listed; not a failure */
		return r;
	if (r > 0 || a->dirty_oom) /* a node address or the pod network changed: judge everything again */
		nft_sync_request_full(s);
	return 0;
}

static int sync_render(NftSync *s, bool full, NftBatch *b, void *userdata) {
	ServiceAgent *a = userdata;

	return full ? service_sync_full_render(a, b) : service_sync_dirty(a);
}

static int sync_refused(NftSync *s, bool full, NftBatch *b, int r, const char *error, void *userdata) {
	ServiceAgent *a = userdata;

	if (!full) /* a partial pass applies its parts itself: its batch stays empty */
		return r;
	return service_sync_full_refused(a, error);
}

static void sync_applied(NftSync *s, bool full, const NftBatch *b, void *userdata) {
	ServiceAgent *a = userdata;
	NftSyncStats st;

	if (full)
		service_sync_full_applied(a, b->len);
	update_health(a);
	nft_sync_stats(s, &st);
	log_debug("Services: %s sync of %zu services in %.2f ms (batch %zu bytes)", full ? "full" : "partial",
		  a->n_units, st.last_ms, a->last_batch_bytes);
}

static bool sync_ready(void *userdata) {
	ServiceAgent *a = userdata;

	return object_cache_all_synced(a->cache);
}

static const NftSyncOps service_sync_ops = {
	.name = "Services",
	.metrics_prefix = "weft_service",
	.syncs_help = "Service programs of this node (full and partial batches, no-ops).",
	.debounce_usec = SERVICE_AGENT_DEBOUNCE_USEC,
	.retry_usec = SERVICE_AGENT_RETRY_USEC,
	.retry_max_usec = SERVICE_AGENT_RETRY_MAX_USEC,
	.ready = sync_ready,
	.prepare = sync_prepare,
	.render = sync_render,
	.refused = sync_refused,
	.applied = sync_applied,
};

static void mark_dirty(ServiceAgent *a, const char *ns, const char *name);

static void schedule(ServiceAgent *a) {
	nft_sync_schedule(a->sync);
}

/* Quarantined Services tried again (the kernel may take them now: the conflicting element is gone). */
static int on_retry(EventSource *s, void *userdata) {
	ServiceAgent *a = userdata;

	for (size_t i = 0; a->quarantined && a->quarantined[i]; i++) {
		_cleanup_free_ char *ns = strdup(a->quarantined[i]);
		char *slash = ns ? strchr(ns, '/') : NULL;

		if (!slash)
			continue;
		*slash = '\0';
		mark_dirty(a, ns, slash + 1);
	}
	schedule(a);
	if (a->quarantined && a->quarantined[0])
		(void) event_source_arm(a->retry_timer, QUARANTINE_RETRY_USEC, 0);
	return 0;
}

/* A lease came or went, an address moved: Services holding such an address are judged again. */
static int on_recheck(EventSource *s, void *userdata) {
	ServiceAgent *a = userdata;
	NftSyncStats st;

	nft_sync_stats(a->sync, &st);
	if (st.next_full ||
	    service_build_policy_refresh(a) <= 0) /* not programmed yet, or after a failure: a full pass comes */
		return 0;
	a->dirty_oom = true; /* "sync everything" */
	schedule(a);
	return 0;
}

void service_agent_mark_dirty_key(ServiceAgent *a, const char *key) {
	char *k;

	if (a->n_dirty == a->cap_dirty) {
		size_t cap = a->cap_dirty ? a->cap_dirty * 2 : 16;
		char **v = reallocarray(a->dirty, cap, sizeof(char *));

		if (!v) {
			a->dirty_oom = true;
			return;
		}
		a->dirty = v;
		a->cap_dirty = cap;
	}
	k = strdup(key);
	if (!k) {
		a->dirty_oom = true;
		return;
	}
	a->dirty[a->n_dirty++] = k;
}

static void mark_dirty(ServiceAgent *a, const char *ns, const char *name) {
	_cleanup_free_ char *k = NULL;

	if (!ns || !name)
		return;
	k = strdup_printf("%s/%s", ns, name);
	if (!k) {
		a->dirty_oom = true;
		return;
	}
	service_agent_mark_dirty_key(a, k);
}

static void on_object(ServiceAgent *a, const KubeObject *o) {
	if (o->kind == KUBE_KIND_SERVICE)
		mark_dirty(a, o->namespace, o->name);
	else if (o->kind == KUBE_KIND_ENDPOINT_SLICE)
		mark_dirty(a, o->namespace, KUBE_ENDPOINT_SLICE(o)->service_name);
	else
		return;
	schedule(a);
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	on_object(userdata, o);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	on_object(userdata, old);
	on_object(userdata, o);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	on_object(userdata, old);
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	schedule(userdata);
}

const ObjectCacheHandlers service_agent_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
};

int service_agent_new(ObjectCache *cache, EventLoop *loop, const ServiceAgentConfig *cfg, ServiceAgent **ret) {
	ServiceAgent *a = calloc(1, sizeof(ServiceAgent));
	int r;

	if (!a)
		return -ENOMEM;
	*a = (ServiceAgent) { .cache = cache, .loop = loop, .cfg = *cfg };
	r = nft_sync_new(loop, &service_sync_ops, a, &a->sync);
	if (r >= 0)
		r = svc_slot_pool_new(&a->slots);
	if (r >= 0)
		r = svc_refs_new(&a->refs);
	if (r >= 0)
		r = service_health_new(loop, &a->health);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_retry, a, &a->retry_timer);
	if (r >= 0)
		r = service_claims_new(&a->claims);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_recheck, a, &a->recheck);
	if (r >= 0)
		r = event_source_arm(a->recheck, RECHECK_USEC, RECHECK_USEC);
	if (r >= 0)
		(void) service_build_policy_refresh(a);
	if (r < 0) {
		service_agent_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

ServiceAgent *service_agent_free(ServiceAgent *a) {
	if (!a)
		return NULL;
	nft_sync_free(a->sync);
	event_source_free(a->retry_timer);
	strv_free(a->quarantined);
	event_source_free(a->recheck);
	service_claims_free(a->claims);
	for (size_t i = 0; i < a->n_reports; i++)
		free(a->reports[i].line);
	free(a->reports);
	free(a->node_addrs);
	free(a->lb_pools);
	service_health_free(a->health);
	svc_slot_pool_free(a->slots);
	svc_refs_free(a->refs);
	service_sync_full_done(a);
	for (size_t i = 0; i < a->n_units; i++)
		service_unit_free(a->units[i]);
	free(a->units);
	service_agent_clear_dirty(a);
	free(a->dirty);
	free(a);
	return NULL;
}

int service_agent_render_metrics(ServiceAgent *a, FILE *f) {
	nft_sync_render_metrics(a->sync, f);
	service_counters_render(a->units, a->n_units, f);
	fprintf(f,
		"# HELP weft_service_conntrack_deleted_total Stale UDP conntrack entries deleted.\n"
		"# TYPE weft_service_conntrack_deleted_total counter\nweft_service_conntrack_deleted_total %" PRIu64
		"\n"
		"# HELP weft_services Services programmed (headless and ExternalName ones hold no objects).\n"
		"# TYPE weft_services gauge\nweft_services %zu\n"
		"# HELP weft_service_quarantined Services whose objects nftables refused, not programmed in that "
		"version.\n"
		"# TYPE weft_service_quarantined gauge\nweft_service_quarantined %zu\n",
		a->conntrack_deleted, a->n_units, strv_length(a->quarantined));
	fprintf(f, "# HELP weft_service_rejected_total Service addresses, ports and endpoints refused by the address "
		   "policy or lost in a conflict (docs/service-address-policy.md), each counted when first seen; "
		   "reason nftables: Services whose objects the kernel refused (quarantined).\n"
		   "# TYPE weft_service_rejected_total counter\n");
	for (int i = SERVICE_ADMIT + 1; i < _SERVICE_REJECT_MAX; i++)
		fprintf(f, "weft_service_rejected_total{reason=\"%s\"} %" PRIu64 "\n",
			service_reject_reason_to_string(i), a->rejected[i]);
	fprintf(f, "weft_service_rejected_total{reason=\"nftables\"} %" PRIu64 "\n", a->rejected_nftables);
	fprintf(f,
		"# HELP weft_service_claims Service address and node-port keys claimed (conflicts count once).\n"
		"# TYPE weft_service_claims gauge\nweft_service_claims %zu\n",
		service_claims_size(a->claims));
	return 0;
}
