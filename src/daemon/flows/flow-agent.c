/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/flows/flow-agent.h"
#include "daemon/flows/flow-log.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/policy/policy-drops.h"
#include "daemon/policy/policy-explain.h"
#include "shared/netns/netns.h"

enum {
	OBJ_POD,
	OBJ_NAMESPACE,
	OBJ_POLICY,
	OBJ_SERVICE,
	_OBJ_MAX
};
static const KubeKind obj_kinds[_OBJ_MAX] = { KUBE_KIND_POD, KUBE_KIND_NAMESPACE, KUBE_KIND_NETWORK_POLICY,
					      KUBE_KIND_SERVICE };

struct FlowAgent {
	ObjectCache *cache;
	FlowAgentConfig cfg;
	FlowLog *log;
	PolicyDrops *drops; /* the policy agent's, observed */
	/* the model the verdicts and Service names are read from, collected again after any delta
	 * (the pointers are the cache's: a delta may free them) */
	ObjectVec objs[_OBJ_MAX];
	bool stale;
};

/* false: out of memory (nothing is described from a partial model) */
static bool refresh(FlowAgent *a) {
	if (!a->stale)
		return true;
	for (size_t k = 0; k < _OBJ_MAX; k++) {
		a->objs[k].n = 0;
		a->objs[k].oom = false;
		object_cache_foreach(a->cache, obj_kinds[k], object_vec_append, &a->objs[k]);
		if (a->objs[k].oom)
			return false;
	}
	a->stale = false;
	return true;
}

static bool in_cluster(FlowAgent *a, const IpAddr *ip) {
	const NetworkConfig *n = a->cfg.network ? *a->cfg.network : NULL;

	return n && ((n->network.addr.family == ip->family && ip_prefix_contains(&n->network, ip)) ||
		     (n->network6.addr.family == ip->family && ip_prefix_contains(&n->network6, ip)));
}

static bool in_service_range(FlowAgent *a, const IpAddr *ip) {
	for (size_t i = 0; i < a->cfg.n_service_ranges; i++)
		if (a->cfg.service_ranges[i].addr.family == ip->family &&
		    ip_prefix_contains(&a->cfg.service_ranges[i], ip))
			return true;
	return false;
}

static bool dnated(const FlowEvent *ev) {
	return !ip_addr_equal(&ev->orig.dst, &ev->reply.src) || ev->orig.dport != ev->reply.sport;
}

static bool wanted(const FlowEvent *ev, void *userdata) {
	FlowAgent *a = userdata;

	return in_cluster(a, &ev->orig.src) || in_cluster(a, &ev->orig.dst) || in_cluster(a, &ev->reply.src) ||
	       in_service_range(a, &ev->orig.dst);
}

static bool kube_protocol_from_ip(uint8_t proto, KubeProtocol *ret) {
	switch (proto) {
	case IPPROTO_TCP: *ret = KUBE_PROTO_TCP; return true;
	case IPPROTO_UDP: *ret = KUBE_PROTO_UDP; return true;
	case IPPROTO_SCTP: *ret = KUBE_PROTO_SCTP; return true;
	default: return false;
	}
}

static bool ip_in(const IpAddr *ip, const IpAddr *v, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (ip_addr_equal(&v[i], ip))
			return true;
	return false;
}

/* The Service that owns dst:port/proto (ClusterIP, externalIP or LB IP; a nodePort on an address
 * outside the pod network), and the port's name. NULL if none. */
static const KubeService *service_lookup(FlowAgent *a, const IpAddr *dst, uint16_t port, KubeProtocol proto,
					 const KubeServicePort **ret_port) {
	const ObjectVec *svcs = &a->objs[OBJ_SERVICE];

	for (size_t i = 0; i < svcs->n; i++) {
		const KubeService *s = (const KubeService *) svcs->v[i];
		bool by_ip = ip_in(dst, s->cluster_ips, s->n_cluster_ips) ||
			     ip_in(dst, s->external_ips, s->n_external_ips) || ip_in(dst, s->lb_ips, s->n_lb_ips);

		for (size_t p = 0; p < s->n_ports; p++) {
			const KubeServicePort *sp = &s->ports[p];

			if (sp->protocol != proto)
				continue;
			if ((by_ip && sp->port == port) || (!by_ip && sp->node_port == port && !in_cluster(a, dst))) {
				*ret_port = sp;
				return s;
			}
		}
	}
	return NULL;
}

static void set_pod(FlowAgent *a, json_t *line, const char *key, const IpAddr *ip) {
	const KubePod *p = object_cache_pod_by_ip(a->cache, ip);
	_cleanup_free_ char *s = NULL;

	if (p && asprintf(&s, "%s/%s", p->meta.namespace, p->meta.name) >= 0)
		json_object_set_new(line, key, json_string(s));
	else
		s = NULL;
}

static bool enforced_here(FlowAgent *a, const PolicyDirVerdict *v) {
	return v->pod && v->pod->node_name && a->cfg.node && streq(v->pod->node_name, a->cfg.node);
}

/* "allowed by ns/pol ingress rule 0", "unpoliced", ...: the directions this node's hooks enforce. */
static void set_verdict(FlowAgent *a, const FlowEvent *ev, json_t *line) {
	_cleanup_free_ char *why = NULL;
	PolicyDirVerdict v[2];
	KubeProtocol proto;
	size_t size = 0;
	bool here = false, said = false;
	FILE *f;

	json_object_set_new(line, "verdict", json_string("allowed"));
	if (ev->type != FLOW_EVENT_NEW)
		return;
	if (!kube_protocol_from_ip(ev->orig.proto, &proto)) {
		json_object_set_new(line, "why",
				    json_string("unpoliced (NetworkPolicy has no ports for this protocol)"));
		return;
	}
	/* policy sees the connection after DNAT: the endpoint is the reply's source */
	if (policy_verdict(&(PolicyInput) { .node = a->cfg.node,
					    .pods = (const KubePod *const *) a->objs[OBJ_POD].v,
					    .n_pods = a->objs[OBJ_POD].n,
					    .namespaces = (const KubeNamespace *const *) a->objs[OBJ_NAMESPACE].v,
					    .n_namespaces = a->objs[OBJ_NAMESPACE].n,
					    .policies = (const KubeNetworkPolicy *const *) a->objs[OBJ_POLICY].v,
					    .n_policies = a->objs[OBJ_POLICY].n },
			   &ev->orig.src, &ev->reply.src, ev->reply.sport, proto, &v[0], &v[1]) < 0)
		return;
	f = open_memstream(&why, &size);
	if (!f)
		return;
	for (int d = 0; d < 2; d++) {
		if (!enforced_here(a, &v[d]))
			continue;
		here = true;
		if (!v[d].isolated)
			continue;
		if (v[d].allowed)
			fprintf(f, "%sallowed by %s/%s %s rule %zu", said ? ", " : "", v[d].policy->meta.namespace,
				v[d].policy->meta.name, d ? "ingress" : "egress", v[d].rule);
		else
			/* confirmed although the model denies: the policy changed after the connection began */
			fprintf(f, "%sthe model now denies %s (a policy changed since?)", said ? ", " : "",
				d ? "ingress" : "egress");
		said = true;
	}
	if (!said)
		fputs(here ? "unpoliced" : "unpoliced here (no end is a pod of this node)", f);
	if (fclose(f) == 0 && why)
		json_object_set_new(line, "why", json_string(why));
}

static void describe(const FlowEvent *ev, json_t *line, void *userdata) {
	FlowAgent *a = userdata;
	char s[IP_ADDR_STRLEN + 8];

	if (!refresh(a))
		return;
	if (a->cfg.node)
		json_object_set_new(line, "node", json_string(a->cfg.node));
	set_pod(a, line, "from", &ev->orig.src);
	set_pod(a, line, "to", &ev->orig.dst);
	if (dnated(ev)) {
		const KubeServicePort *sp = NULL;
		const KubeService *svc;
		KubeProtocol proto;
		char e[IP_ADDR_STRLEN];

		ip_addr_to_string(&ev->reply.src, e);
		snprintf(s, sizeof(s), "%s%s%s:%u", ev->reply.src.family == AF_INET6 ? "[" : "", e,
			 ev->reply.src.family == AF_INET6 ? "]" : "", ev->reply.sport);
		json_object_set_new(line, "endpoint", json_string(s));
		set_pod(a, line, "endpoint_pod", &ev->reply.src);
		if (kube_protocol_from_ip(ev->orig.proto, &proto) &&
		    (svc = service_lookup(a, &ev->orig.dst, ev->orig.dport, proto, &sp))) {
			_cleanup_free_ char *name = NULL;

			if (asprintf(&name, "%s/%s%s%s", svc->meta.namespace, svc->meta.name, sp->name ? ":" : "",
				     sp->name ?: "") >= 0)
				json_object_set_new(line, "service", json_string(name));
			else
				name = NULL;
		}
	}
	if (!ip_addr_equal(&ev->orig.src, &ev->reply.dst))
		json_object_set_new(line, "snat", json_string(ip_addr_to_string(&ev->reply.dst, s)));
	set_verdict(a, ev, line);
}

static const FlowLogOps flow_ops = {
	.wanted = wanted,
	.describe = describe,
};

/* A NetworkPolicy drop (described by the policy agent) as a flow record. */
static void on_drop(const PolicyDrop *d, json_t *drop, void *userdata) {
	FlowAgent *a = userdata;
	const char *dir = d->ingress ? "ingress" : "egress";
	const char *isolated = json_string_value(json_object_get(drop, d->ingress ? "to" : "from"));
	_cleanup_free_ char *why = NULL;
	char s[IP_ADDR_STRLEN], t[IP_ADDR_STRLEN], pb[8];
	json_t *line, *v;

	line = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "event", "drop", "proto", ip_proto_name(d->proto, pb), "src",
			 ip_addr_to_string(&d->src, s), "dst", ip_addr_to_string(&d->dst, t), "verdict", "denied",
			 "direction", dir);
	if (!line)
		return;
	if (d->has_ports) {
		json_object_set_new(line, "sport", json_integer(d->sport));
		json_object_set_new(line, "dport", json_integer(d->dport));
	}
	if (a->cfg.node)
		json_object_set_new(line, "node", json_string(a->cfg.node));
	if ((v = json_object_get(drop, "from")))
		json_object_set(line, "from", v);
	if ((v = json_object_get(drop, "to")))
		json_object_set(line, "to", v);
	if ((v = json_object_get(drop, "policies")))
		json_object_set(line, "policies", v);
	if (asprintf(&why, "denied by isolation of %s (%s)", isolated ?: "?", dir) >= 0)
		json_object_set_new(line, "why", json_string(why));
	else
		why = NULL;
	(void) flow_log_add(a->log, line);
	json_decref(line);
}

static void set_sysctl(const char *key) {
	int r = sysctl_write(key, "1");

	if (r < 0)
		log_warning_errno(r, "Flow log: cannot set %s: %m", key);
}

int flow_agent_new(ObjectCache *cache, EventLoop *loop, const FlowAgentConfig *cfg, FlowAgent **ret) {
	FlowAgent *a = calloc(1, sizeof(FlowAgent));
	int r;

	if (!a)
		return -ENOMEM;
	*a = (FlowAgent) { .cache = cache, .cfg = *cfg, .stale = true };
	r = flow_log_new(loop, &flow_ops, a, cfg->rate, &a->log);
	if (r < 0) {
		flow_agent_free(a);
		return r;
	}
	/* counters for DESTROY; pods of one node through conntrack (as with a policy) */
	set_sysctl("net/netfilter/nf_conntrack_acct");
	r = sysctl_write("net/bridge/bridge-nf-call-iptables", "1");
	if (r >= 0)
		r = sysctl_write("net/bridge/bridge-nf-call-ip6tables", "1");
	if (r < 0)
		log_warning_errno(r,
				  "Flow log: cannot set net.bridge.bridge-nf-call-iptables (br_netfilter not loaded?): "
				  "connections between pods of this node are not logged: %m");
	a->drops = cfg->policy ? policy_agent_drop_log(cfg->policy) : NULL;
	if (a->drops)
		policy_drops_set_observer(a->drops, on_drop, a);
	else
		log_warning("Flow log: no NetworkPolicy drop log (nfnetlink_log): denied connections are not logged");
	log_info("Flow log: conntrack NEW and DESTROY events, at most %u records/s (GET /flows, `weft flows`)",
		 cfg->rate ?: FLOW_LOG_RATE_DEFAULT);
	*ret = a;
	return 0;
}

FlowAgent *flow_agent_free(FlowAgent *a) {
	if (!a)
		return NULL;
	if (a->drops)
		policy_drops_set_observer(a->drops, NULL, NULL);
	flow_log_free(a->log);
	for (size_t k = 0; k < _OBJ_MAX; k++)
		free(a->objs[k].v);
	free(a);
	return NULL;
}

static void mark_stale(FlowAgent *a, const KubeObject *o) {
	for (size_t k = 0; k < _OBJ_MAX; k++)
		if (o->kind == obj_kinds[k])
			a->stale = true;
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	mark_stale(userdata, o);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	mark_stale(userdata, o);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	mark_stale(userdata, old);
}

const ObjectCacheHandlers flow_agent_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
};

int flow_agent_render_metrics(FlowAgent *a, FILE *f) {
	FlowLogStats st;

	flow_log_stats(a->log, &st);
	fprintf(f,
		"# HELP weft_flow_log_records_total Connections (conntrack NEW and DESTROY, policy drops) kept in "
		"the flow log.\n"
		"# TYPE weft_flow_log_records_total counter\n"
		"weft_flow_log_records_total %" PRIu64 "\n"
		"# HELP weft_flow_log_lost_total Flow records lost: the kernel's socket overflowed (kernel), "
		"overwritten before a reader fetched them (ring), over the rate limit (rate).\n"
		"# TYPE weft_flow_log_lost_total counter\n"
		"weft_flow_log_lost_total{reason=\"kernel\"} %" PRIu64 "\n"
		"weft_flow_log_lost_total{reason=\"ring\"} %" PRIu64 "\n"
		"weft_flow_log_lost_total{reason=\"rate\"} %" PRIu64 "\n",
		st.seq, st.lost_kernel, st.lost_ring, st.lost_rate);
	return 0;
}

int flow_agent_serve(FlowAgent *a, const char *query, int *ret_status, char **ret_body) {
	unsigned long long since = 0;
	const char *p = query ? strstr(query, "since=") : NULL;

	if (p && (p == query || p[-1] == '&') && sscanf(p + strlen("since="), "%llu", &since) != 1) {
		*ret_status = 400;
		*ret_body = strdup("usage: /flows[?since=SEQ]\n");
		return *ret_body ? 0 : -ENOMEM;
	}
	*ret_status = 200;
	return flow_log_render(a->log, since, ret_body);
}
