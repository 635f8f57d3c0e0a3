/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/policy/policy-compile.h"
#include "daemon/policy/policy-explain.h"
#include "shared/netns/netns.h"
#include "shared/nft/nft.h"

#define RETRY_USEC (1000 * 1000)

struct PolicyAgent {
	ObjectCache *cache;
	EventLoop *loop;
	EventSource *timer;
	NftCtx *nft;
	const char *node;
	bool log_drops;
	bool scheduled;
	bool programmed_once; /* else: list the kernel's np-* objects as stale first */
	bool bridge_nf_set;
	PolicyRuleset *cur;
	uint64_t syncs, failures, noops;
	double last_sync_ms, max_sync_ms;
	size_t last_objects, last_rules, last_elements;
};

typedef struct Collect {
	const KubeObject **v;
	size_t n, cap;
	bool oom;
} Collect;

static int collect(const KubeObject *o, void *userdata) {
	Collect *c = userdata;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		const KubeObject **v = reallocarray(c->v, cap, sizeof(*v));

		if (!v) {
			c->oom = true;
			return -ENOMEM;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = o;
	return 0;
}

static double now_ms(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* np-* chains and sets/maps of table inet weft (start-up after a restart, or after a failure). */
static int list_stale(NftCtx *nft, const char *what, char ***ret) {
	json_t *j = NULL, *it;
	char **l = NULL, cmd[64];
	size_t i, n = 0;
	int r;

	snprintf(cmd, sizeof(cmd), "list %s inet", what);
	r = nft_list_json(nft, cmd, &j);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		json_t *o = json_object_get(it, streq(what, "chains") ? "chain" : streq(what, "sets") ? "set" : "map");
		const char *table = json_string_value(json_object_get(o, "table"));
		const char *name = json_string_value(json_object_get(o, "name"));
		char **nl;

		if (!o || !streq_ptr(table, "weft") || !name || !startswith(name, POLICY_PREFIX))
			continue;
		nl = reallocarray(l, n + 2, sizeof(char *));
		if (!nl || !(nl[n] = strdup(name))) {
			l = nl ?: l;
			r = -ENOMEM;
			break;
		}
		l = nl;
		l[++n] = NULL;
	}
	json_decref(j);
	if (r < 0) {
		strv_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

/* Every np-* chain (*ret_chains) and set and map (*ret_sets: the renderer tells maps by name). */
static int list_all_stale(NftCtx *nft, char ***ret_chains, char ***ret_sets) {
	_cleanup_strv_free_ char **chains = NULL, **sets = NULL, **maps = NULL;
	int r;

	r = list_stale(nft, "chains", &chains);
	if (r >= 0)
		r = list_stale(nft, "sets", &sets);
	if (r >= 0)
		r = list_stale(nft, "maps", &maps);
	if (r < 0)
		return r;
	for (size_t i = 0; maps && maps[i]; i++) {
		size_t n = strv_length(sets);
		char **l = reallocarray(sets, n + 2, sizeof(char *));

		if (!l)
			return -ENOMEM;
		l[n] = TAKE_PTR(maps[i]);
		l[n + 1] = NULL;
		sets = l;
	}
	*ret_chains = TAKE_PTR(chains);
	*ret_sets = TAKE_PTR(sets);
	return 0;
}

int policy_uninstall(NftCtx *nft, size_t *ret_n, char **ret_error) {
	_cleanup_strv_free_ char **chains = NULL, **sets = NULL;
	_cleanup_free_ char *batch = NULL;
	int r;

	r = list_all_stale(nft, &chains, &sets);
	if (r < 0)
		return r;
	*ret_n = strv_length(chains) + strv_length(sets);
	r = policy_ruleset_render_diff(NULL, NULL, chains, sets, &batch);
	if (r < 0)
		return r;
	return batch[0] ? nft_apply(nft, batch, ret_error) : 0;
}

static void set_bridge_nf(PolicyAgent *a) {
	int r;

	if (a->bridge_nf_set)
		return;
	r = sysctl_write("net/bridge/bridge-nf-call-iptables", "1");
	if (r >= 0)
		r = sysctl_write("net/bridge/bridge-nf-call-ip6tables", "1");
	if (r < 0)
		log_warning_errno(r,
				  "Policy: cannot set net.bridge.bridge-nf-call-iptables (br_netfilter not loaded?): "
				  "traffic between pods of this node is NOT policed: %m");
	a->bridge_nf_set = true; /* warn once */
}

static int agent_sync(PolicyAgent *a) {
	Collect pods = {}, nss = {}, pols = {};
	_cleanup_(policy_ruleset_freep) PolicyRuleset *next = NULL;
	_cleanup_strv_free_ char **stale_chains = NULL, **stale_sets = NULL;
	_cleanup_free_ char *batch = NULL, *err = NULL;
	double t0 = now_ms();
	int r;

	object_cache_foreach(a->cache, KUBE_KIND_POD, collect, &pods);
	object_cache_foreach(a->cache, KUBE_KIND_NAMESPACE, collect, &nss);
	object_cache_foreach(a->cache, KUBE_KIND_NETWORK_POLICY, collect, &pols);
	if (pods.oom || nss.oom || pols.oom) {
		r = -ENOMEM;
		goto out;
	}
	r = policy_compile(&(PolicyInput) { .node = a->node,
					    .pods = (const KubePod *const *) pods.v,
					    .n_pods = pods.n,
					    .namespaces = (const KubeNamespace *const *) nss.v,
					    .n_namespaces = nss.n,
					    .policies = (const KubeNetworkPolicy *const *) pols.v,
					    .n_policies = pols.n,
					    .log_drops = a->log_drops },
			   &next);
	if (r < 0)
		goto out;
	if (!a->programmed_once) {
		r = list_all_stale(a->nft, &stale_chains, &stale_sets);
		if (r < 0)
			goto out;
	}
	r = policy_ruleset_render_diff(a->programmed_once ? a->cur : NULL, next, stale_chains, stale_sets, &batch);
	if (r < 0)
		goto out;
	if (next->n > 0)
		set_bridge_nf(a);
	if (batch[0]) {
		r = nft_apply(a->nft, batch, &err);
		if (r < 0) {
			log_error_errno(r, "Policy: nftables refused the batch: %s", err ?: "");
			log_debug("Policy batch:\n%s", batch);
			goto out;
		}
	} else
		a->noops++;
	policy_ruleset_free(a->cur);
	a->cur = TAKE_PTR(next);
	a->programmed_once = true;
	a->syncs++;
	a->last_sync_ms = now_ms() - t0;
	if (a->last_sync_ms > a->max_sync_ms)
		a->max_sync_ms = a->last_sync_ms;
	a->last_objects = a->cur->n;
	policy_ruleset_size(a->cur, &a->last_rules, &a->last_elements);
	log_debug("Policy: programmed %zu pods, %zu policies: %zu objects, %zu rules, %zu elements in %.2f ms "
		  "(batch %zu bytes)",
		  pods.n, pols.n, a->cur->n, a->last_rules, a->last_elements, a->last_sync_ms, strlen(batch));
out:
	free(pods.v);
	free(nss.v);
	free(pols.v);
	if (r < 0) {
		a->failures++;
		a->programmed_once = false; /* next time: from what the kernel holds */
		(void) event_source_arm_once(a->timer, RETRY_USEC);
		a->scheduled = true;
	}
	return r;
}

static int on_timer(EventSource *s, void *userdata) {
	PolicyAgent *a = userdata;

	a->scheduled = false;
	(void) agent_sync(a);
	return 0;
}

static void schedule(PolicyAgent *a) {
	if (a->scheduled || !object_cache_all_synced(a->cache))
		return;
	if (event_source_arm_once(a->timer, POLICY_AGENT_DEBOUNCE_USEC) >= 0)
		a->scheduled = true;
}

static bool relevant(const KubeObject *o) {
	return o->kind == KUBE_KIND_POD || o->kind == KUBE_KIND_NAMESPACE || o->kind == KUBE_KIND_NETWORK_POLICY;
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	if (relevant(o))
		schedule(userdata);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	if (relevant(o))
		schedule(userdata);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	if (relevant(old))
		schedule(userdata);
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	schedule(userdata);
}

const ObjectCacheHandlers policy_agent_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
};

int policy_agent_new(ObjectCache *cache, EventLoop *loop, const char *node, bool log_drops, PolicyAgent **ret) {
	PolicyAgent *a = calloc(1, sizeof(PolicyAgent));
	int r;

	if (!a)
		return -ENOMEM;
	*a = (PolicyAgent) { .cache = cache, .loop = loop, .node = node, .log_drops = log_drops };
	r = nft_ctx_open(&a->nft);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_timer, a, &a->timer);
	if (r < 0) {
		policy_agent_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

PolicyAgent *policy_agent_free(PolicyAgent *a) {
	if (!a)
		return NULL;
	event_source_free(a->timer);
	nft_ctx_free(a->nft);
	policy_ruleset_free(a->cur);
	free(a);
	return NULL;
}

/* Per-policy accepted packets: the counters of the rules of np-<tag>-{in,out}, named by the rule
 * comment "ns/name direction rule N". */
static void render_counters(PolicyAgent *a, FILE *f) {
	for (size_t i = 0; a->cur && i < a->cur->n; i++) {
		const PolicyObject *o = &a->cur->objs[i];
		json_t *j = NULL, *it;
		char cmd[300];
		size_t k;

		if (o->kind != POLICY_OBJ_CHAIN || o->n_items == 0)
			continue;
		snprintf(cmd, sizeof(cmd), "list chain inet weft %s", o->name);
		if (nft_list_json(a->nft, cmd, &j) < 0)
			continue;
		json_array_foreach(json_object_get(j, "nftables"), k, it) {
			json_t *rule = json_object_get(it, "rule"), *e;
			const char *comment = json_string_value(json_object_get(rule, "comment"));
			uint64_t packets = 0;
			bool counted = false;
			size_t x;
			char ns[256], name[256], dir[16], verdict[16];
			int rule_no = -1;

			if (!rule || !comment)
				continue;
			json_array_foreach(json_object_get(rule, "expr"), x, e) {
				json_t *ctr = json_object_get(e, "counter");

				if (ctr) {
					packets = (uint64_t) json_integer_value(json_object_get(ctr, "packets"));
					counted = true;
				}
			}
			if (!counted)
				continue;
			if (sscanf(comment, "%255[^/]/%255s %15s rule %d", ns, name, dir, &rule_no) == 4)
				snprintf(verdict, sizeof(verdict), "allow");
			else if (sscanf(comment, "%15s deny", dir) == 1 && startswith(comment, dir)) {
				/* a class's default deny: every policy isolating the pod shares it */
				fprintf(f,
					"weft_policy_denied_packets_total{chain=\"%s\",direction=\"%s\",policies=\"%s\"} %" PRIu64
					"\n",
					o->name, dir,
					strstr(comment, "isolated by ") ? strstr(comment, "isolated by ") + 12 : "",
					packets);
				continue;
			} else
				continue;
			fprintf(f,
				"weft_policy_allowed_packets_total{namespace=\"%s\",policy=\"%s\",direction=\"%s\",rule=\"%d\"} %" PRIu64
				"\n",
				ns, name, dir, rule_no, packets);
		}
		json_decref(j);
	}
}

static char *query_get(const char *query, const char *key) {
	size_t n = strlen(key);

	for (const char *p = query; p && *p;) {
		const char *end = strchrnul(p, '&');

		if (strncmp(p, key, n) == 0 && p[n] == '=') {
			char *v = strndup(p + n + 1, (size_t) (end - p - n - 1)), *o = v;

			/* %XX and + decoding: enough for ns/pod and IPv6 addresses */
			for (char *i = v; v && *i; i++, o++) {
				unsigned x;

				if (*i == '%' && sscanf(i + 1, "%2x", &x) == 1) {
					*o = (char) x;
					i += 2;
				} else
					*o = *i == '+' ? ' ' : *i;
			}
			if (v)
				*o = 0;
			return v;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

int policy_agent_explain(PolicyAgent *a, const char *query, int *ret_status, char **ret_body) {
	_cleanup_free_ char *from = query_get(query, "from"), *to = query_get(query, "to"),
			    *port_s = query_get(query, "port"), *proto_s = query_get(query, "proto");
	Collect pods = {}, nss = {}, pols = {};
	KubeProtocol proto;
	unsigned port;
	bool allowed;
	int r;

	if (!from || !to || !port_s || sscanf(port_s, "%u", &port) != 1 || port == 0 || port > 65535) {
		*ret_status = 400;
		*ret_body = strdup(
				"usage: /debug/policy/explain?from=NS/POD|IP&to=NS/POD|IP&port=N&proto=TCP|UDP|SCTP\n");
		return *ret_body ? 0 : -ENOMEM;
	}
	if (!proto_s || (strcasecmp(proto_s, "tcp") == 0))
		proto = KUBE_PROTO_TCP;
	else if ((strcasecmp(proto_s, "udp") == 0))
		proto = KUBE_PROTO_UDP;
	else if ((strcasecmp(proto_s, "sctp") == 0))
		proto = KUBE_PROTO_SCTP;
	else {
		*ret_status = 400;
		*ret_body = strdup("proto: TCP, UDP or SCTP\n");
		return *ret_body ? 0 : -ENOMEM;
	}
	object_cache_foreach(a->cache, KUBE_KIND_POD, collect, &pods);
	object_cache_foreach(a->cache, KUBE_KIND_NAMESPACE, collect, &nss);
	object_cache_foreach(a->cache, KUBE_KIND_NETWORK_POLICY, collect, &pols);
	if (pods.oom || nss.oom || pols.oom)
		r = -ENOMEM;
	else
		r = policy_explain(&(PolicyInput) { .node = a->node,
						    .pods = (const KubePod *const *) pods.v,
						    .n_pods = pods.n,
						    .namespaces = (const KubeNamespace *const *) nss.v,
						    .n_namespaces = nss.n,
						    .policies = (const KubeNetworkPolicy *const *) pols.v,
						    .n_policies = pols.n },
				   from, to, (uint16_t) port, proto, ret_body, &allowed);
	free(pods.v);
	free(nss.v);
	free(pols.v);
	if (r == -ENOMEM)
		return r;
	*ret_status = r < 0 ? 404 : 200;
	return 0;
}

int policy_agent_render_metrics(PolicyAgent *a, FILE *f) {
	fprintf(f,
		"# HELP weft_policy_syncs_total NetworkPolicy programs of this node (batches, or no-ops).\n"
		"# TYPE weft_policy_syncs_total counter\nweft_policy_syncs_total %" PRIu64 "\n",
		a->syncs);
	fprintf(f, "# TYPE weft_policy_sync_failures_total counter\nweft_policy_sync_failures_total %" PRIu64 "\n",
		a->failures);
	fprintf(f, "# TYPE weft_policy_last_sync_seconds gauge\nweft_policy_last_sync_seconds %.6f\n",
		a->last_sync_ms / 1e3);
	fprintf(f, "# TYPE weft_policy_max_sync_seconds gauge\nweft_policy_max_sync_seconds %.6f\n",
		a->max_sync_ms / 1e3);
	fprintf(f,
		"# HELP weft_policy_nft_objects Sets, maps and chains; rules; elements weft holds for policies.\n"
		"# TYPE weft_policy_nft_objects gauge\n"
		"weft_policy_nft_objects{what=\"objects\"} %zu\nweft_policy_nft_objects{what=\"rules\"} %zu\n"
		"weft_policy_nft_objects{what=\"elements\"} %zu\n",
		a->last_objects, a->last_rules, a->last_elements);
	fputs("# HELP weft_policy_allowed_packets_total Packets a NetworkPolicy rule allowed (new connections).\n"
	      "# TYPE weft_policy_allowed_packets_total counter\n"
	      "# HELP weft_policy_denied_packets_total Packets dropped as a pod's default deny, by the policies isolating it.\n"
	      "# TYPE weft_policy_denied_packets_total counter\n",
	      f);
	render_counters(a, f);
	return 0;
}
