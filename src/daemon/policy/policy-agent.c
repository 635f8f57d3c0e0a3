/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <arpa/inet.h>
#include <endian.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/nft-sync.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/policy/policy-compile.h"
#include "daemon/policy/policy-drops.h"
#include "daemon/policy/policy-explain.h"
#include "daemon/status-server.h"
#include "shared/netns/netns.h"
#include "shared/nft/nft.h"
#include "shared/nl/nfnl.h"

#define RAW_DUMP_BUF (64 * 1024) /* a dump message is at most 32 KiB */

struct PolicyAgent {
	ObjectCache *cache;
	EventLoop *loop;
	NftSync *sync; /* the nft context, debounce, retry and sync metrics (nft-sync.h) */
	const char *node;
	bool log_drops;
	PolicyDrops *drops; /* log_drops and nfnetlink_log bound: the log rules go to its group */
	bool bridge_nf_set;
	PolicyRuleset *cur;
	PolicyRuleset *next; /* rendered by the running pass, cur once applied */
	size_t n_pods, n_policies;
	size_t last_objects, last_rules, last_elements;
};

static int strv_move_all(char ***to, char **from) {
	for (size_t i = 0; from && from[i]; i++) {
		size_t n = strv_length(*to);
		char **l = reallocarray(*to, n + 2, sizeof(char *));

		if (!l)
			return -ENOMEM;
		l[n] = TAKE_PTR(from[i]);
		l[n + 1] = NULL;
		*to = l;
	}
	return 0;
}

/* Every np-* chain (*ret_chains) and set, map and counter (*ret_sets: the renderer tells maps and
 * counters by name). */
static int list_all_stale(NftCtx *nft, char ***ret_chains, char ***ret_sets) {
	_cleanup_strv_free_ char **chains = NULL, **sets = NULL, **maps = NULL, **counters = NULL;
	int r;

	/* np-* objects of table inet weft (start-up after a restart, or after a failure) */
	r = nft_list_names(nft, "chain", POLICY_PREFIX, &chains);
	if (r >= 0)
		r = nft_list_names(nft, "set", POLICY_PREFIX, &sets);
	if (r >= 0)
		r = nft_list_names(nft, "map", POLICY_PREFIX, &maps);
	if (r >= 0)
		r = nft_list_names(nft, "counter", POLICY_PREFIX, &counters);
	if (r >= 0)
		r = strv_move_all(&sets, maps);
	if (r >= 0)
		r = strv_move_all(&sets, counters);
	if (r < 0)
		return r;
	*ret_chains = TAKE_PTR(chains);
	*ret_sets = TAKE_PTR(sets);
	return 0;
}

int policy_uninstall(NftCtx *nft, size_t *ret_n, char **ret_error) {
	_cleanup_strv_free_ char **chains = NULL, **sets = NULL;
	_cleanup_(nft_batch_done) NftBatch b = {};
	int r;

	r = list_all_stale(nft, &chains, &sets);
	if (r < 0)
		return r;
	*ret_n = strv_length(chains) + strv_length(sets);
	r = nft_batch_begin(&b);
	if (r >= 0)
		r = policy_ruleset_render_diff(NULL, NULL, chains, sets, &b);
	if (r >= 0)
		r = nft_batch_finish(&b);
	if (r < 0)
		return r;
	return b.len > 0 ? nft_apply(nft, b.buf, ret_error) : 0;
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

/* NftSyncOps.render: compiles the cluster and renders the difference to what is programmed (a full
 * pass: to what the kernel holds, its np-* objects listed as stale). */
static int sync_render(NftSync *s, bool full, NftBatch *b, void *userdata) {
	PolicyAgent *a = userdata;
	ObjectVec pods = {}, nss = {}, pols = {};
	_cleanup_strv_free_ char **stale_chains = NULL, **stale_sets = NULL;
	int r;

	a->next = policy_ruleset_free(a->next);
	object_cache_foreach(a->cache, KUBE_KIND_POD, object_vec_append, &pods);
	object_cache_foreach(a->cache, KUBE_KIND_NAMESPACE, object_vec_append, &nss);
	object_cache_foreach(a->cache, KUBE_KIND_NETWORK_POLICY, object_vec_append, &pols);
	if (pods.oom || nss.oom || pols.oom) {
		r = -ENOMEM;
		goto out;
	}
	a->n_pods = pods.n;
	a->n_policies = pols.n;
	r = policy_compile(&(PolicyInput) { .node = a->node,
					    .pods = (const KubePod *const *) pods.v,
					    .n_pods = pods.n,
					    .namespaces = (const KubeNamespace *const *) nss.v,
					    .n_namespaces = nss.n,
					    .policies = (const KubeNetworkPolicy *const *) pols.v,
					    .n_policies = pols.n,
					    .log_drops = a->log_drops,
					    .log_nflog = a->drops != NULL,
					    .log_group = POLICY_DROPS_NFLOG_GROUP },
			   &a->next);
	if (r < 0)
		goto out;
	if (full) {
		r = list_all_stale(nft_sync_ctx(s), &stale_chains, &stale_sets);
		if (r < 0)
			goto out;
	}
	r = policy_ruleset_render_diff(full ? NULL : a->cur, a->next, stale_chains, stale_sets, b);
	if (r < 0)
		goto out;
	if (a->next->n > 0)
		set_bridge_nf(a);
out:
	free(pods.v);
	free(nss.v);
	free(pols.v);
	return r;
}

/* NftSyncOps.applied: what was rendered is programmed now. */
static void sync_applied(NftSync *s, bool full, const NftBatch *b, void *userdata) {
	PolicyAgent *a = userdata;
	NftSyncStats st;

	policy_ruleset_free(a->cur);
	a->cur = TAKE_PTR(a->next);
	a->last_objects = a->cur->n;
	policy_ruleset_size(a->cur, &a->last_rules, &a->last_elements);
	nft_sync_stats(s, &st);
	log_debug("Policy: programmed %zu pods, %zu policies: %zu objects, %zu rules, %zu elements in %.2f ms",
		  a->n_pods, a->n_policies, a->cur->n, a->last_rules, a->last_elements, st.last_ms);
}

static bool sync_ready(void *userdata) {
	PolicyAgent *a = userdata;

	return object_cache_all_synced(a->cache);
}

static const NftSyncOps policy_sync_ops = {
	.name = "Policy",
	.metrics_prefix = "weft_policy",
	.syncs_help = "NetworkPolicy programs of this node (batches, or no-ops).",
	.debounce_usec = POLICY_AGENT_DEBOUNCE_USEC,
	.retry_usec = POLICY_AGENT_RETRY_USEC,
	.retry_max_usec = POLICY_AGENT_RETRY_MAX_USEC,
	.ready = sync_ready,
	.render = sync_render,
	.applied = sync_applied,
};

static void schedule(PolicyAgent *a) {
	nft_sync_schedule(a->sync);
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

/* Names what dropped a packet: the class's policies (its deny counter's items) and the pods. */
static void describe_drop(const PolicyDrop *d, json_t *line, void *userdata) {
	PolicyAgent *a = userdata;
	const PolicyObject *o;
	const KubePod *p;
	char name[64];
	json_t *pols;

	snprintf(name, sizeof(name), POLICY_DENY_COUNTER_PREFIX "%s", d->tag);
	o = policy_ruleset_find(a->cur, name);
	pols = json_array();
	for (size_t i = 0; pols && o && i < o->n_items; i++)
		json_array_append_new(pols, json_string(o->items[i]));
	if (pols)
		json_object_set_new(line, "policies", pols);
	for (int end = 0; end < 2; end++) {
		_cleanup_free_ char *s = NULL;

		p = object_cache_pod_by_ip(a->cache, end ? &d->dst : &d->src);
		if (p && asprintf(&s, "%s/%s", p->meta.namespace, p->meta.name) >= 0)
			json_object_set_new(line, end ? "to" : "from", json_string(s));
		else
			s = NULL;
	}
}

int policy_agent_new(ObjectCache *cache, EventLoop *loop, const char *node, bool log_drops, PolicyAgent **ret) {
	PolicyAgent *a = calloc(1, sizeof(PolicyAgent));
	int r;

	if (!a)
		return -ENOMEM;
	*a = (PolicyAgent) { .cache = cache, .loop = loop, .node = node, .log_drops = log_drops };
	r = nft_sync_new(loop, &policy_sync_ops, a, &a->sync);
	if (r < 0) {
		policy_agent_free(a);
		return r;
	}
	if (log_drops) {
		r = policy_drops_new(loop, POLICY_DROPS_NFLOG_GROUP, describe_drop, a, &a->drops);
		if (r == -ENOMEM) {
			policy_agent_free(a);
			return r;
		}
		if (r < 0)
			log_warning_errno(r,
					  "Policy: cannot bind nfnetlink_log group %u (%m): dropped packets go to the "
					  "kernel log instead, prefix \"weft-np\" (from a network namespace other than "
					  "the host's, only with net.netfilter.nf_log_all_netns)",
					  POLICY_DROPS_NFLOG_GROUP);
		else
			log_info("Policy: dropped packets are read from nfnetlink_log group %u (GET /policy/drops, "
				 "`weft policy drops`)",
				 POLICY_DROPS_NFLOG_GROUP);
	}
	*ret = a;
	return 0;
}

PolicyAgent *policy_agent_free(PolicyAgent *a) {
	if (!a)
		return NULL;
	nft_sync_free(a->sync);
	policy_drops_free(a->drops);
	policy_ruleset_free(a->cur);
	policy_ruleset_free(a->next);
	free(a);
	return NULL;
}

typedef struct PolicyDeny {
	const char *policy; /* "ns/name", borrowed from a->cur */
	bool ingress;
	uint64_t packets;
} PolicyDeny;

static int cmp_deny(const void *x, const void *y) {
	const PolicyDeny *a = x, *b = y;
	int c = strcmp(a->policy, b->policy);

	return c ? c : (int) a->ingress - (int) b->ingress;
}

static void put_ns_name(FILE *f, const char *policy) {
	const char *slash = strchr(policy, '/');

	if (slash)
		fprintf(f, "namespace=\"%.*s\",policy=\"%s\"", (int) (slash - policy), policy, slash + 1);
	else
		fprintf(f, "namespace=\"\",policy=\"%s\"", policy);
}

/*
 * The named counters, read with ONE listing of the table's counters; their labels come from the
 * compiled objects (a counter's items: the policies it counts):
 *   allowed{namespace,policy,direction,rule}   np-c-*: packets a policy's rule accepted
 *   denied{chain,direction,policies}           np-cc-*: packets a class's default deny dropped
 *   denied_by_policy{namespace,policy,direction}: per policy, the sum of the denies of every class
 *     it isolates; a packet dropped for a pod isolated by P1 and P2 counts for both, so these
 *     series overlap and do not add up to the total (that is the sum of the per-class series)
 */
typedef struct CounterRender {
	PolicyAgent *a;
	FILE *fa, *fd; /* the allowed and the denied lines: a metric's lines are one group */
	PolicyDeny *deny;
	size_t n_deny, cap;
	size_t seen;
	bool oom;
} CounterRender;

static void on_counter(const char *name, uint64_t packets, void *userdata) {
	CounterRender *cr = userdata;
	const PolicyObject *o = policy_ruleset_find(cr->a->cur, name);

	if (!o || o->kind != POLICY_OBJ_COUNTER)
		return; /* not ours, or from a program newer than a->cur */
	cr->seen++;
	if (o->rule >= 0) {
		if (o->n_items < 1)
			return;
		fputs("weft_policy_allowed_packets_total{", cr->fa);
		put_ns_name(cr->fa, o->items[0]);
		fprintf(cr->fa, ",direction=\"%s\",rule=\"%d\"} %" PRIu64 "\n", o->ingress ? "ingress" : "egress",
			o->rule, packets);
		return;
	}
	/* the class chain's name: np-cc-<h>-in -> np-cls-<h>-in */
	fprintf(cr->fd, "weft_policy_denied_packets_total{chain=\"np-cls-%s\",direction=\"%s\",policies=\"",
		name + strlen(POLICY_DENY_COUNTER_PREFIX), o->ingress ? "ingress" : "egress");
	for (size_t k = 0; k < o->n_items; k++) {
		const char *slash = strchr(o->items[k], '/');

		fprintf(cr->fd, "%s%s", k ? " " : "", slash ? slash + 1 : o->items[k]);
	}
	fprintf(cr->fd, "\"} %" PRIu64 "\n", packets);
	for (size_t k = 0; k < o->n_items; k++) {
		if (cr->n_deny == cr->cap) {
			size_t cap = cr->cap ? cr->cap * 2 : 32;
			PolicyDeny *v = reallocarray(cr->deny, cap, sizeof(PolicyDeny));

			if (!v) {
				cr->oom = true;
				return;
			}
			cr->deny = v;
			cr->cap = cap;
		}
		cr->deny[cr->n_deny++] = (PolicyDeny) { o->items[k], o->ingress, packets };
	}
}

static int counter_attr_cb(const struct nlattr *attr, void *data) {
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (mnl_attr_type_valid(attr, NFTA_COUNTER_MAX) < 0)
		return MNL_CB_OK;
	if ((type == NFTA_COUNTER_PACKETS || type == NFTA_COUNTER_BYTES) && mnl_attr_validate(attr, MNL_TYPE_U64) < 0)
		return MNL_CB_ERROR;
	tb[type] = attr;
	return MNL_CB_OK;
}

static int obj_attr_cb(const struct nlattr *attr, void *data) {
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (mnl_attr_type_valid(attr, NFTA_OBJ_MAX) < 0)
		return MNL_CB_OK;
	if ((type == NFTA_OBJ_NAME && mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) < 0) ||
	    (type == NFTA_OBJ_DATA && mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0))
		return MNL_CB_ERROR;
	tb[type] = attr;
	return MNL_CB_OK;
}

typedef struct DumpCb {
	PolicyCounterFn fn;
	void *userdata;
} DumpCb;

static int obj_msg_cb(const struct nlmsghdr *nlh, void *data) {
	const struct nlattr *tb[NFTA_OBJ_MAX + 1] = {}, *ctr[NFTA_COUNTER_MAX + 1] = {};
	DumpCb *d = data;

	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), obj_attr_cb, tb) != MNL_CB_OK || !tb[NFTA_OBJ_NAME] ||
	    !tb[NFTA_OBJ_DATA] || mnl_attr_parse_nested(tb[NFTA_OBJ_DATA], counter_attr_cb, ctr) != MNL_CB_OK ||
	    !ctr[NFTA_COUNTER_PACKETS])
		return MNL_CB_OK; /* not a counter as we know it: skip */
	d->fn(mnl_attr_get_str(tb[NFTA_OBJ_NAME]), be64toh(mnl_attr_get_u64(ctr[NFTA_COUNTER_PACKETS])), d->userdata);
	return MNL_CB_OK;
}

/* nft list counters table inet weft, as one nf_tables netlink dump (libmnl) of the table's counter
 * objects: libnftables would fill its cache with the whole table first. */
int policy_counters_dump(PolicyCounterFn fn, void *userdata) {
	DumpCb d = { fn, userdata };
	_cleanup_free_ char *buf = malloc(RAW_DUMP_BUF);
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	uint32_t seq = (uint32_t) time(NULL);
	int r = 0;

	if (!buf)
		return -ENOMEM;
	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return negative_errno();
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = negative_errno();
		goto out;
	}
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETOBJ, NLM_F_DUMP, seq, NFPROTO_INET, 0);
	if (!mnl_attr_put_strz_check(nlh, RAW_DUMP_BUF, NFTA_OBJ_TABLE, "weft") ||
	    !mnl_attr_put_u32_check(nlh, RAW_DUMP_BUF, NFTA_OBJ_TYPE, htonl(NFT_OBJECT_COUNTER))) {
		r = -ENOBUFS;
		goto out;
	}
	r = nfnl_call(nl, nlh, buf, RAW_DUMP_BUF, obj_msg_cb, &d);
out:
	mnl_socket_close(nl);
	return r;
}

/* The same through libnftables: the fallback. */
static int list_counters_nft(NftCtx *nft, CounterRender *cr) {
	json_t *j = NULL, *it;
	size_t i;
	int r;

	r = nft_list_json(nft, "list counters table inet weft", &j);
	if (r < 0)
		return r;
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		json_t *c = json_object_get(it, "counter");
		const char *name = json_string_value(json_object_get(c, "name"));

		if (name)
			on_counter(name, (uint64_t) json_integer_value(json_object_get(c, "packets")), cr);
	}
	json_decref(j);
	return 0;
}

/*
 * The named counters, read with ONE dump of the table's counters; their labels come from the
 * compiled objects (a counter's items: the policies it counts):
 *   allowed{namespace,policy,direction,rule}   np-c-*: packets a policy's rule accepted
 *   denied{chain,direction,policies}           np-cc-*: packets a class's default deny dropped
 *   denied_by_policy{namespace,policy,direction}: per policy, the sum of the denies of every class
 *     it isolates; a packet dropped for a pod isolated by P1 and P2 counts for both, so these
 *     series overlap and do not add up to the total (that is the sum of the per-class series)
 */
static void render_counters(PolicyAgent *a, FILE *f) {
	_cleanup_free_ char *allowed = NULL, *denied = NULL;
	CounterRender cr = { .a = a };
	size_t sa = 0, sd = 0;
	int r = -EINTR;

	fputs("# HELP weft_policy_allowed_packets_total Packets a NetworkPolicy rule allowed (new connections).\n"
	      "# TYPE weft_policy_allowed_packets_total counter\n",
	      f);
	if (!a->cur || a->cur->n == 0)
		return;
	/* a dump the table's change interrupted (EINTR) starts over; a failed one (an old kernel
	 * refusing the filter...) goes through libnftables */
	for (int attempt = 0; attempt < 4 && r < 0 && r != -ENOENT; attempt++) {
		if (cr.fa)
			fclose(TAKE_PTR(cr.fa));
		if (cr.fd)
			fclose(TAKE_PTR(cr.fd));
		allowed = mfree(allowed);
		denied = mfree(denied);
		cr.n_deny = cr.seen = 0;
		cr.fa = open_memstream(&allowed, &sa);
		cr.fd = open_memstream(&denied, &sd);
		if (!cr.fa || !cr.fd)
			goto out;
		if (attempt < 3 && (attempt == 0 || r == -EINTR))
			r = policy_counters_dump(on_counter, &cr);
		else {
			log_debug_errno(r, "Policy: counter dump failed, listing with libnftables: %m");
			r = list_counters_nft(nft_sync_ctx(a->sync), &cr);
		}
	}
	if (fclose(TAKE_PTR(cr.fa)) != 0 || fclose(TAKE_PTR(cr.fd)) != 0 || cr.oom)
		goto out;
	fputs(allowed ?: "", f);
	fputs("# HELP weft_policy_denied_packets_total Packets dropped as a pod's default deny, by the policies "
	      "isolating it.\n"
	      "# TYPE weft_policy_denied_packets_total counter\n",
	      f);
	fputs(denied ?: "", f);
	fputs("# HELP weft_policy_denied_by_policy_packets_total Packets dropped as the default deny of pods a policy "
	      "isolates (a drop counts for each policy isolating the pod).\n"
	      "# TYPE weft_policy_denied_by_policy_packets_total counter\n",
	      f);
	qsort_safe(cr.deny, cr.n_deny, sizeof(PolicyDeny), cmp_deny);
	for (size_t k = 0; k < cr.n_deny;) {
		size_t e = k;
		uint64_t sum = 0;

		for (; e < cr.n_deny && cmp_deny(&cr.deny[k], &cr.deny[e]) == 0; e++)
			sum += cr.deny[e].packets;
		fputs("weft_policy_denied_by_policy_packets_total{", f);
		put_ns_name(f, cr.deny[k].policy);
		fprintf(f, ",direction=\"%s\"} %" PRIu64 "\n", cr.deny[k].ingress ? "ingress" : "egress", sum);
		k = e;
	}
out:
	if (cr.fa)
		fclose(cr.fa);
	if (cr.fd)
		fclose(cr.fd);
	free(cr.deny);
}

static const char *explain_held_reason(const KubeObject *o, void *userdata) {
	return object_cache_held_reason(userdata, o);
}

int policy_agent_explain(PolicyAgent *a, const char *query, int *ret_status, char **ret_body) {
	_cleanup_free_ char *from = status_server_query_get(query, "from"), *to = status_server_query_get(query, "to"),
			    *port_s = status_server_query_get(query, "port"),
			    *proto_s = status_server_query_get(query, "proto");
	ObjectVec pods = {}, nss = {}, pols = {};
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
	object_cache_foreach(a->cache, KUBE_KIND_POD, object_vec_append, &pods);
	object_cache_foreach(a->cache, KUBE_KIND_NAMESPACE, object_vec_append, &nss);
	object_cache_foreach(a->cache, KUBE_KIND_NETWORK_POLICY, object_vec_append, &pols);
	if (pods.oom || nss.oom || pols.oom)
		r = -ENOMEM;
	else
		r = policy_explain(&(PolicyInput) { .node = a->node,
						    .pods = (const KubePod *const *) pods.v,
						    .n_pods = pods.n,
						    .namespaces = (const KubeNamespace *const *) nss.v,
						    .n_namespaces = nss.n,
						    .policies = (const KubeNetworkPolicy *const *) pols.v,
						    .n_policies = pols.n,
						    .held_reason = explain_held_reason,
						    .held_userdata = a->cache },
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
	nft_sync_render_metrics(a->sync, f);
	fprintf(f,
		"# HELP weft_policy_nft_objects Sets, maps and chains; rules; elements weft holds for policies.\n"
		"# TYPE weft_policy_nft_objects gauge\n"
		"weft_policy_nft_objects{what=\"objects\"} %zu\nweft_policy_nft_objects{what=\"rules\"} %zu\n"
		"weft_policy_nft_objects{what=\"elements\"} %zu\n",
		a->last_objects, a->last_rules, a->last_elements);
	render_counters(a, f);
	if (a->drops) {
		uint64_t seen, lost;

		policy_drops_stats(a->drops, &seen, &lost);
		fprintf(f,
			"# HELP weft_policy_drop_log_total Dropped packets read from nfnetlink_log (rate limited), and "
			"copies lost to a full socket.\n"
			"# TYPE weft_policy_drop_log_total counter\n"
			"weft_policy_drop_log_total{what=\"read\"} %" PRIu64
			"\nweft_policy_drop_log_total{what=\"lost\"} %" PRIu64 "\n",
			seen, lost);
	}
	return 0;
}

struct PolicyDrops *policy_agent_drop_log(PolicyAgent *a) {
	return a->drops;
}

int policy_agent_drops(PolicyAgent *a, const char *query, int *ret_status, char **ret_body) {
	_cleanup_free_ char *since_s = status_server_query_get(query, "since");
	unsigned long long since = 0;

	if (!a->drops) {
		*ret_status = 404;
		*ret_body = strdup(
				a->log_drops ? "the drop log goes to the kernel log (nfnetlink_log is not available)\n"
					     : "the drop log is off (weftd --policy-log-drops)\n");
		return *ret_body ? 0 : -ENOMEM;
	}
	if (since_s && sscanf(since_s, "%llu", &since) != 1) {
		*ret_status = 400;
		*ret_body = strdup("usage: /policy/drops[?since=SEQ]\n");
		return *ret_body ? 0 : -ENOMEM;
	}
	*ret_status = 200;
	return policy_drops_render(a->drops, since, ret_body);
}
