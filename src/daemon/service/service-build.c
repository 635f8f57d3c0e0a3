/* SPDX-License-Identifier: Apache-2.0 */
/* One Service's unit under the address policy and the claims (service-admission.h): the policy
 * refreshed from the node, every refusal logged and counted once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-config.h"
#include "daemon/service/service-agent-internal.h"

typedef struct Slices {
	const KubeEndpointSlice **v;
	size_t n, cap;
	bool oom;
} Slices;

static int collect_slice(const KubeObject *o, void *userdata) {
	Slices *s = userdata;

	if (!KUBE_ENDPOINT_SLICE(o))
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4;
		const KubeEndpointSlice **v = reallocarray(s->v, cap, sizeof(*v));

		if (!v) {
			s->oom = true;
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = KUBE_ENDPOINT_SLICE(o);
	return 0;
}

static int ipaddr_cmp(const void *x, const void *y) {
	return ip_addr_cmp(x, y);
}

/* The LoadBalancer pools' networks, once the config has them: their addresses may be LB ingress
 * IPs (the assigner hands them out, lb-agent.h). 1 if they changed, 0 if not, -ENOMEM. */
static int refresh_lb_pools(ServiceAgent *a, const NetworkConfig *cfg) {
	const LbConfig *lc = cfg ? cfg->load_balancer : NULL;
	IpPrefix *v = NULL;
	size_t n = 0;

	for (size_t i = 0; lc && i < lc->n_pools; i++)
		n += lc->pools[i].n_cidrs;
	if (n == a->n_lb_pools)
		return 0; /* the config, once there, does not change */
	v = calloc(n, sizeof(IpPrefix));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < lc->n_pools; i++)
		for (size_t k = 0; k < lc->pools[i].n_cidrs; k++)
			v[n++] = lc->pools[i].cidrs[k];
	free(a->lb_pools);
	a->lb_pools = v;
	a->n_lb_pools = n;
	return 1;
}

/*
 * The policy as of now: the pod networks (the config may arrive late), the backend's tunnel port,
 * the node's addresses, the LoadBalancer pools. 1 if it changed since the last call (every
 * Service must be judged again: a full sync), 0 if not, -EAGAIN while the node addresses cannot
 * be known yet.
 */
int service_build_policy_refresh(ServiceAgent *a) {
	const NetworkConfig *cfg = a->cfg.network ? *a->cfg.network : NULL;
	ServiceAdmissionPolicy *p = &a->policy;
	IpPrefix nets[2] = {};
	ServiceReservedPort res[3] = {};
	size_t n_nets = 0, n_res = 0, n_addrs = 0;
	IpAddr *addrs = NULL;
	bool changed;
	int pools_changed;

	if (cfg && cfg->network.addr.family != AF_UNSPEC)
		nets[n_nets++] = cfg->network;
	if (cfg && cfg->network6.addr.family != AF_UNSPEC)
		nets[n_nets++] = cfg->network6;
	if (a->cfg.listen_port)
		res[n_res++] = (ServiceReservedPort) { KUBE_PROTO_TCP, a->cfg.listen_port };
	if (cfg && (cfg->backend.type == NETWORK_BACKEND_VXLAN || cfg->backend.type == NETWORK_BACKEND_UDP))
		res[n_res++] = (ServiceReservedPort) { KUBE_PROTO_UDP, cfg->backend.port };
	if (cfg && cfg->backend.type == NETWORK_BACKEND_BGP)
		res[n_res++] = (ServiceReservedPort) { KUBE_PROTO_TCP, 179 };
	pools_changed = refresh_lb_pools(a, cfg);
	if (pools_changed > 0) /* judged again at the next call that gets as far as the end */
		a->lb_pools_changed = true;
	if (a->cfg.node_addresses) {
		int r = a->cfg.node_addresses(a->cfg.node_addresses_userdata, &addrs, &n_addrs);

		if (r == -EAGAIN) /* the leases are not listed yet: judging now would admit their addresses */
			return r;
		if (r < 0) /* keep the last known ones rather than admit a node address by not knowing it */
			return 0;
	}
	/* Sticky: a node whose lease went (restarting, or gone for good) keeps its address protected
	 * until weftd restarts, so a Service cannot take it in the meantime and keep it when the node
	 * comes back. */
	for (size_t i = 0; i < a->n_node_addrs; i++) {
		bool found = false;
		IpAddr *nv;

		for (size_t k = 0; k < n_addrs && !found; k++)
			found = ip_addr_equal(&addrs[k], &a->node_addrs[i]);
		if (found)
			continue;
		nv = reallocarray(addrs, n_addrs + 1, sizeof(IpAddr));
		if (!nv) {
			free(addrs);
			return 0;
		}
		addrs = nv;
		addrs[n_addrs++] = a->node_addrs[i];
	}
	qsort_safe(addrs, n_addrs, sizeof(IpAddr), ipaddr_cmp);
	changed = a->lb_pools_changed || n_nets != p->n_pod_networks ||
		  memcmp(nets, a->pod_networks, sizeof(nets)) != 0 || n_res != p->n_reserved ||
		  memcmp(res, a->reserved, sizeof(res)) != 0 || n_addrs != a->n_node_addrs ||
		  (n_addrs > 0 && memcmp(addrs, a->node_addrs, n_addrs * sizeof(IpAddr)) != 0);
	a->lb_pools_changed = false;
	memcpy(a->pod_networks, nets, sizeof(nets));
	memcpy(a->reserved, res, sizeof(res));
	free(a->node_addrs);
	a->node_addrs = addrs;
	a->n_node_addrs = n_addrs;
	*p = (ServiceAdmissionPolicy) {
		.service_ranges = a->cfg.service_ranges,
		.n_service_ranges = a->cfg.n_service_ranges,
		.pod_networks = a->pod_networks,
		.n_pod_networks = n_nets,
		.external_ip_cidrs = a->cfg.external_ip_cidrs,
		.n_external_ip_cidrs = a->cfg.n_external_ip_cidrs,
		.lb_pools = a->lb_pools,
		.n_lb_pools = a->n_lb_pools,
		.infra = a->cfg.infra,
		.n_infra = a->cfg.n_infra,
		.node_addrs = a->node_addrs,
		.n_node_addrs = n_addrs,
		.reserved = a->reserved,
		.n_reserved = n_res,
		.node_port_min = a->cfg.node_port_min ?: SERVICE_NODE_PORT_MIN,
		.node_port_max = a->cfg.node_port_max ?: SERVICE_NODE_PORT_MAX,
		.kube_mode = a->cfg.kube_mode,
	};
	return changed;
}

/* svc's claims from its current spec (NULL: it is gone); the Services that won or lost a key by
 * it are marked dirty too. */
int service_build_claim(ServiceAgent *a, const char *key, const KubeService *svc) {
	_cleanup_strv_free_ char **keys = NULL, **affected = NULL;
	size_t n = 0;
	int r;

	if (svc) {
		r = service_admission_claim_keys(&a->policy, svc, &keys, &n);
		if (r < 0)
			return r;
	}
	r = service_claims_set(a->claims, key, svc ? svc->created : 0, keys, n, &affected);
	if (r < 0)
		return r;
	for (size_t i = 0; affected && affected[i]; i++)
		service_agent_mark_dirty_key(a, affected[i]);
	return 0;
}

typedef struct Admit {
	ServiceAgent *a;
	const KubeService *svc;
	const char *key;
	Report *v;
	size_t n;
	bool oom;
} Admit;

static int report_cmp(const void *x, const void *y) {
	return strcmp(((const Report *) x)->line, ((const Report *) y)->line);
}

static bool is_cluster_ip(const KubeService *svc, const IpAddr *ip) {
	for (size_t i = 0; i < svc->n_cluster_ips; i++)
		if (ip_addr_equal(&svc->cluster_ips[i], ip))
			return true;
	return false;
}

/* ServiceModelInput.admit: the policy, then the conflicts; every refusal is noted for report(). */
static bool admit(void *userdata, ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol, uint16_t port) {
	Admit *ad = userdata;
	ServiceAgent *a = ad->a;
	ServiceRejectReason why;
	_cleanup_free_ char *ckey = NULL;
	const char *holder = NULL;
	char s[IP_ADDR_STRLEN] = "", *line;
	Report *nv;

	if (use == SERVICE_ADDR_ENDPOINT)
		why = service_admission_check_endpoint(&a->policy, ad->svc, ip);
	else if (use == SERVICE_ADDR_NODE_PORT || use == SERVICE_ADDR_HEALTH_CHECK_NODE_PORT)
		why = service_admission_check_node_port(&a->policy, protocol, port);
	else
		why = service_admission_check_addr(&a->policy, ad->svc, use, ip, protocol, port);
	if (why == SERVICE_ADMIT && use == SERVICE_ADDR_ENDPOINT)
		return true;
	/* an externalIP or LB IP equal to the Service's own clusterIP is the same key: not a
	 * conflict, and the clusterIP's entry already serves it */
	if (why == SERVICE_ADMIT && use != SERVICE_ADDR_CLUSTER_IP && ip && is_cluster_ip(ad->svc, ip))
		return false;
	if (why == SERVICE_ADMIT) {
		ckey = ip ? service_claim_key_addr(ip, protocol, port) : service_claim_key_node_port(protocol, port);
		if (!ckey) {
			ad->oom = true;
			return false;
		}
		if (service_claims_wins(a->claims, ad->key, ckey))
			return true;
		why = SERVICE_REJECT_CONFLICT;
		holder = service_claims_winner(a->claims, ckey);
	}
	if (ip)
		ip_addr_to_string(ip, s);
	line = strdup_printf("%s: %s %s%s%s/%u refused: %s%s%s", ad->key, service_addr_use_to_string(use), s,
			     ip ? " " : "", kube_protocol_to_string(protocol), port,
			     service_reject_reason_to_string(why), holder ? ", held by the older " : "", holder ?: "");
	nv = line ? reallocarray(ad->v, ad->n + 1, sizeof(Report)) : NULL;
	if (!nv) {
		free(line);
		ad->oom = true;
		return false;
	}
	ad->v = nv;
	ad->v[ad->n++] = (Report) { .line = line, .reason = (uint8_t) why };
	return false;
}

/* The reports of Service key (sorted lines starting "key: ") are [*ret_lo, return). */
static size_t reports_range(ServiceAgent *a, const char *key, size_t *ret_lo) {
	size_t lo = 0, hi = a->n_reports, kl = strlen(key);

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strncmp(a->reports[mid].line, key, kl);

		if (c == 0)
			c = strncmp(a->reports[mid].line + kl, ": ", 2);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_lo = lo;
	for (hi = lo; hi < a->n_reports && strncmp(a->reports[hi].line, key, kl) == 0 &&
		      strncmp(a->reports[hi].line + kl, ": ", 2) == 0;
	     hi++)
		;
	return hi;
}

/* The refusals of one build replace key's: the new ones are logged and counted (once: a resync
 * that refuses the same again says nothing). Takes ad->v. */
static void reports_commit(ServiceAgent *a, const char *key, Admit *ad) {
	size_t lo, hi = reports_range(a, key, &lo), w = 0;
	Report *nv;

	qsort_safe(ad->v, ad->n, sizeof(Report), report_cmp);
	for (size_t i = 0; i < ad->n; i++)
		if (w > 0 && streq(ad->v[w - 1].line, ad->v[i].line))
			free(ad->v[i].line);
		else
			ad->v[w++] = ad->v[i];
	ad->n = w;
	for (size_t i = 0; i < ad->n; i++) {
		Report *old = bsearch_safe(&ad->v[i], a->reports + lo, hi - lo, sizeof(Report), report_cmp);

		if (old)
			continue;
		a->rejected[ad->v[i].reason]++;
		log_warning("Services: %s", ad->v[i].line);
	}
	if (ad->n > hi - lo) {
		nv = reallocarray(a->reports, a->n_reports - (hi - lo) + ad->n, sizeof(Report));
		if (!nv) { /* forget them: they are logged again next time, not lost */
			for (size_t i = 0; i < ad->n; i++)
				free(ad->v[i].line);
			ad->v = mfree(ad->v);
			ad->n = 0;
			return;
		}
		a->reports = nv;
	}
	for (size_t i = lo; i < hi; i++)
		free(a->reports[i].line);
	if (a->n_reports > hi) /* reports may still be NULL (nothing refused yet): no memmove() from it */
		memmove(a->reports + lo + ad->n, a->reports + hi, (a->n_reports - hi) * sizeof(Report));
	if (ad->n > 0)
		memcpy(a->reports + lo, ad->v, ad->n * sizeof(Report));
	a->n_reports = a->n_reports - (hi - lo) + ad->n;
	ad->v = mfree(ad->v);
	ad->n = 0;
}

/* The unit the cache's Service ns/name should have now (NULL if the Service is gone); old: the
 * unit programmed now, whose chains keep their slots. */
int service_build_unit(ServiceAgent *a, const KubeService *svc, const ServiceUnit *old, ServiceUnit **ret) {
	_cleanup_free_ char *key = strdup_printf("%s/%s", svc->meta.namespace, svc->meta.name);
	Admit ad = { .a = a, .svc = svc, .key = key };
	Slices s = {};
	int r;

	if (!key)
		return -ENOMEM;
	object_cache_foreach_slice_of_service(a->cache, svc->meta.namespace, svc->meta.name, collect_slice, &s);
	if (s.oom) {
		free(s.v);
		return -ENOMEM;
	}
	r = service_unit_build(&(ServiceModelInput) { .node = a->cfg.node,
						      .svc = svc,
						      .slices = (const KubeEndpointSlice *const *) s.v,
						      .n_slices = s.n,
						      .pod_networks = a->policy.pod_networks,
						      .n_pod_networks = a->policy.n_pod_networks,
						      .slots = a->slots,
						      .old = old,
						      .admit = admit,
						      .admit_userdata = &ad },
			       ret);
	free(s.v);
	if (r >= 0 && ad.oom) {
		*ret = service_unit_free(*ret);
		r = -ENOMEM;
	}
	if (r >= 0)
		reports_commit(a, key, &ad);
	for (size_t i = 0; i < ad.n; i++)
		free(ad.v[i].line);
	free(ad.v);
	return r;
}

/*
 * The claims of every dirty Service, before any is built: a Service that won or lost a key by
 * them joins the dirty set (it is appended, and claims nothing new itself).
 */
int service_build_claim_dirty(ServiceAgent *a) {
	int r = 0;

	for (size_t i = 0; i < a->n_dirty && r >= 0; i++) {
		char *slash = strchr(a->dirty[i], '/');
		const KubeService *svc;

		if (!slash)
			continue;
		*slash = '\0';
		svc = KUBE_SERVICE(object_cache_get(a->cache, KUBE_KIND_SERVICE, a->dirty[i], slash + 1));
		*slash = '/';
		r = service_build_claim(a, a->dirty[i], svc);
		if (r >= 0 && !svc) { /* gone: what it was refused may be logged again if it comes back */
			Admit none = { .a = a };

			reports_commit(a, a->dirty[i], &none);
		}
	}
	return r;
}
