/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-model.h"
#include "shared/nft/nft-table.h"

#define T NFT_TABLE_INET

/* ---- endpoints ---- */

typedef struct Ep {
	IpAddr addr;
	uint16_t port;
	bool local;
	uint8_t cls; /* 0 ready, 1 serving and terminating (fallback only) */
} Ep;

static int ep_cmp(const void *a, const void *b) {
	const Ep *x = a, *y = b;
	int c = ip_addr_cmp(&x->addr, &y->addr);

	if (c)
		return c;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	return (int) x->cls - (int) y->cls;
}

/* The endpoints of service port `sp` in `family`, sorted, one per address . port (the better
 * condition wins when two slices list the same one). *ret NULL when none. */
static int gather(const ServiceModelInput *in, const KubeServicePort *sp, int family, Ep **ret, size_t *ret_n) {
	uint8_t at = family == AF_INET ? KUBE_ADDRESS_IPV4 : KUBE_ADDRESS_IPV6;
	Ep *v = NULL;
	size_t n = 0, cap = 0, w = 0;

	for (size_t s = 0; s < in->n_slices; s++) {
		const KubeEndpointSlice *sl = in->slices[s];
		uint16_t port = 0;

		if (sl->address_type != at)
			continue;
		/* the slice's port of the same name and protocol: the EndpointSlice controller resolved
		 * a named targetPort per pod into it */
		for (size_t p = 0; p < sl->n_ports; p++)
			if (sl->ports[p].protocol == sp->protocol && streq_ptr(sl->ports[p].name, sp->name)) {
				port = sl->ports[p].port;
				break;
			}
		if (port == 0)
			continue;
		for (size_t e = 0; e < sl->n_endpoints; e++) {
			const KubeEndpoint *ep = &sl->endpoints[e];
			uint8_t cls;

			if (ep->ready && !ep->terminating)
				cls = 0;
			else if (ep->serving && ep->terminating)
				cls = 1;
			else
				continue;
			/* consumers use the first address (the API's own rule) */
			if (ep->n_addresses == 0 || ep->addresses[0].family != family)
				continue;
			if (n == cap) {
				Ep *nv;

				cap = cap ? cap * 2 : 8;
				nv = reallocarray(v, cap, sizeof(Ep));
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
			}
			v[n++] = (Ep) { .addr = ep->addresses[0],
					.port = port,
					.local = ep->node_name && in->node && streq(ep->node_name, in->node),
					.cls = cls };
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(Ep), ep_cmp);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || ip_addr_cmp(&v[w - 1].addr, &v[i].addr) != 0 || v[w - 1].port != v[i].port)
			v[w++] = v[i];
		else if (v[i].local)
			v[w - 1].local = true;
	*ret = v;
	*ret_n = w;
	return 0;
}

/* Ready endpoints (of this node only, if local_only); the serving-terminating ones only when no
 * ready one exists. Writes indexes into idx. */
static size_t select_eps(const Ep *v, size_t n, bool local_only, size_t *idx) {
	size_t k = 0;

	for (uint8_t cls = 0; cls <= 1 && k == 0; cls++)
		for (size_t i = 0; i < n; i++)
			if (v[i].cls == cls && (!local_only || v[i].local))
				idx[k++] = i;
	return k;
}

/* ---- unit building ---- */

typedef struct Builder {
	ServiceUnit *u;
	size_t cap_chains, cap_elems, cap_sets;
	bool oom;
} Builder;

static void add_set(Builder *b, char *name, char *decl) {
	if (!name || !decl) {
		free(name);
		free(decl);
		b->oom = true;
		return;
	}
	if (b->u->n_sets == b->cap_sets) {
		size_t cap = b->cap_sets ? b->cap_sets * 2 : 8;
		SvcSet *v = reallocarray(b->u->sets, cap, sizeof(SvcSet));

		if (!v) {
			free(name);
			free(decl);
			b->oom = true;
			return;
		}
		b->u->sets = v;
		b->cap_sets = cap;
	}
	b->u->sets[b->u->n_sets++] = (SvcSet) { .name = name, .decl = decl };
}

static SvcChain *add_chain(Builder *b, char *name) {
	if (!name) {
		b->oom = true;
		return NULL;
	}
	if (b->u->n_chains == b->cap_chains) {
		size_t cap = b->cap_chains ? b->cap_chains * 2 : 8;
		SvcChain *v = reallocarray(b->u->chains, cap, sizeof(SvcChain));

		if (!v) {
			free(name);
			b->oom = true;
			return NULL;
		}
		b->u->chains = v;
		b->cap_chains = cap;
	}
	b->u->chains[b->u->n_chains] = (SvcChain) { .name = name };
	return &b->u->chains[b->u->n_chains++];
}

static void chain_rules(Builder *b, SvcChain *c, char *rules) {
	if (!c) {
		free(rules);
		return;
	}
	if (!rules)
		b->oom = true;
	c->rules = rules;
}

static void add_elem(Builder *b, const char *map, char *key, char *value) {
	if (!key || !value) {
		free(key);
		free(value);
		b->oom = true;
		return;
	}
	if (b->u->n_elems == b->cap_elems) {
		size_t cap = b->cap_elems ? b->cap_elems * 2 : 8;
		SvcElem *v = reallocarray(b->u->elems, cap, sizeof(SvcElem));

		if (!v) {
			free(key);
			free(value);
			b->oom = true;
			return;
		}
		b->u->elems = v;
		b->cap_elems = cap;
	}
	b->u->elems[b->u->n_elems++] = (SvcElem) { .map = map, .key = key, .value = value };
}

/* An address as a chain-name component (':' is not allowed in nft identifiers). */
static const char *addr_ident(const IpAddr *a, char buf[static IP_ADDR_STRLEN]) {
	ip_addr_to_string(a, buf);
	for (char *p = buf; *p; p++)
		if (*p == ':')
			*p = '_';
	return buf;
}

/*
 * Endpoint choice: rule i of k goes to endpoint i with probability 1/(k-i) (`numgen random mod
 * (k-i) == 0`), the last one always: uniform, as kube-proxy's iptables statistic cascade. Not an
 * inline `numgen random mod k vmap { ... }`: each inline map is an anonymous set, and the kernel
 * names a new one by scanning every set of the table (nf_tables_set_alloc_name), which made a
 * 10k-Service batch quadratic (57 s; this way: see bench/services.sh).
 */
static char *numgen_rule(const char *base, const Ep *v, const size_t *idx, size_t k, const char *comment,
			 uint32_t affinity) {
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	/* sessionAffinity: a client seen within the timeout goes back to its endpoint */
	for (size_t i = 0; affinity > 0 && i < k; i++) {
		char a[IP_ADDR_STRLEN];

		addr_ident(&v[idx[i]].addr, a);
		fprintf(f, "%s saddr @%s/ep/%s/%u/aff%u goto %s/ep/%s/%u comment \"%s affinity\"\n",
			v[idx[i]].addr.family == AF_INET ? "ip" : "ip6", base, a, v[idx[i]].port, affinity, base, a,
			v[idx[i]].port, comment);
	}
	for (size_t i = 0; i < k; i++) {
		char a[IP_ADDR_STRLEN];

		if (i + 1 < k)
			fprintf(f, "numgen random mod %zu == 0 ", k - i);
		fprintf(f, "goto %s/ep/%s/%u comment \"%s\"\n", base, addr_ident(&v[idx[i]].addr, a), v[idx[i]].port,
			comment);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int ip_comment(char *buf, size_t size, const KubeObject *o, const KubeServicePort *sp, const char *what) {
	return snprintf(buf, size, "%.40s/%.40s %s/%u%s", o->namespace, o->name, kube_protocol_to_string(sp->protocol),
			sp->port, what);
}

static char *endpoint_rules(const KubeService *svc, const KubeServicePort *sp, const Ep *e, const char *lproto,
			    const char *aff_set) {
	const char *ipkw = e->addr.family == AF_INET ? "ip" : "ip6";
	char a[IP_ADDR_STRLEN], comment[NFT_COMMENT_MAX + 1];
	bool v6 = e->addr.family == AF_INET6;

	ip_addr_to_string(&e->addr, a);
	ip_comment(comment, sizeof(comment), &svc->meta, sp, " endpoint");
	/* a pod reaching itself through the Service: masquerade, or it would answer itself directly */
	return strdup_printf("%s saddr %s meta mark set meta mark or " SVC_MASQ_MARK " comment \"%s hairpin\"\n"
			     "%s%s%s%s%s%s%s"
			     "meta l4proto %s dnat %s to %s%s%s:%u comment \"%s\"\n",
			     ipkw, a, comment, aff_set ? "update @" : "", aff_set ?: "", aff_set ? " { " : "",
			     aff_set ? ipkw : "", aff_set ? " saddr } comment \"" : "", aff_set ? comment : "",
			     aff_set ? " affinity\"\n" : "", lproto, ipkw, v6 ? "[" : "", a, v6 ? "]" : "", e->port,
			     comment);
}

static bool in_set(const size_t *idx, size_t k, size_t i) {
	for (size_t j = 0; j < k; j++)
		if (idx[j] == i)
			return true;
	return false;
}

static void build_port(Builder *b, const ServiceModelInput *in, const KubeServicePort *sp, int family) {
	const KubeService *svc = in->svc;
	const char *fam = family == AF_INET ? "ip4" : "ip6", *ipkw = family == AF_INET ? "ip" : "ip6";
	const char *m_ips = family == AF_INET ? "svc-ips4" : "svc-ips6";
	const char *m_np = family == AF_INET ? "svc-nodeports4" : "svc-nodeports6";
	const char *m_noep = family == AF_INET ? "svc-noep4" : "svc-noep6";
	const char *m_noep_np = family == AF_INET ? "svc-noep-nodeports4" : "svc-noep-nodeports6";
	bool itp_local = svc->internal_traffic_local, etp_local = svc->external_traffic_local;
	bool has_np = sp->node_port && (svc->type == KUBE_SERVICE_NODE_PORT || svc->type == KUBE_SERVICE_LOAD_BALANCER);
	bool has_ext = has_np;
	_cleanup_free_ char *base = NULL, *lproto = NULL, *all_chain = NULL;
	_cleanup_free_ Ep *v = NULL;
	_cleanup_free_ size_t *all = NULL, *loc = NULL;
	size_t n = 0, n_all, n_loc, n_cluster;
	const size_t *cluster;
	uint32_t aff = svc->session_affinity_client_ip ? svc->session_affinity_timeout : 0;
	char comment[NFT_COMMENT_MAX + 1], cip[IP_ADDR_STRLEN];
	const IpAddr *cips = NULL;

	for (size_t i = 0; i < svc->n_cluster_ips && !cips; i++)
		if (svc->cluster_ips[i].family == family)
			cips = &svc->cluster_ips[i];
	if (!cips) /* this family is not one of the Service's */
		return;
	for (size_t i = 0; i < svc->n_external_ips && !has_ext; i++)
		has_ext = svc->external_ips[i].family == family;
	for (size_t i = 0; i < svc->n_lb_ips && !has_ext; i++)
		has_ext = svc->lb_ips[i].family == family && svc->type == KUBE_SERVICE_LOAD_BALANCER;

	lproto = strdup(kube_protocol_to_string(sp->protocol));
	if (!lproto || gather(in, sp, family, &v, &n) < 0) {
		b->oom = true;
		return;
	}
	for (char *p = lproto; *p; p++)
		*p = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	all = calloc(n + 1, sizeof(size_t));
	loc = calloc(n + 1, sizeof(size_t));
	base = strdup_printf(SVC_PREFIX "%s/%s/%s/%u/%s", svc->meta.namespace, svc->meta.name, lproto, sp->port, fam);
	/* every endpoint, for external traffic (Cluster) and short-circuited sources (Local) */
	all_chain = itp_local ? strdup_printf("%s/cluster", base) : strdup(base);
	if (!all || !loc || !base || !all_chain) {
		b->oom = true;
		return;
	}
	n_all = select_eps(v, n, false, all);
	n_loc = select_eps(v, n, true, loc);
	cluster = itp_local ? loc : all;
	n_cluster = itp_local ? n_loc : n_all;

	/* endpoint chains: every endpoint some chain may choose */
	for (size_t i = 0; i < n; i++) {
		char ai[IP_ADDR_STRLEN];

		if (!in_set(cluster, n_cluster, i) && !(has_ext && in_set(all, n_all, i)) &&
		    !(has_ext && etp_local && in_set(loc, n_loc, i)))
			continue;
		_cleanup_free_ char *ep = strdup_printf("%s/ep/%s/%u", base, addr_ident(&v[i].addr, ai), v[i].port);
		_cleanup_free_ char *set = ep && aff > 0 ? strdup_printf("%s/aff%u", ep, aff) : NULL;

		if (!ep || (aff > 0 && !set)) {
			b->oom = true;
			return;
		}
		chain_rules(b, add_chain(b, strdup(ep)), endpoint_rules(svc, sp, &v[i], lproto, set));
		if (set)
			add_set(b, strdup(set),
				strdup_printf("{ type %s; flags dynamic,timeout; timeout %us; }",
					      family == AF_INET ? "ipv4_addr" : "ipv6_addr", aff));
	}

	/* internal traffic: the ClusterIP */
	ip_comment(comment, sizeof(comment), &svc->meta, sp, "");
	ip_addr_to_string(cips, cip);
	if (n_cluster > 0) {
		chain_rules(b, add_chain(b, strdup(base)), numgen_rule(base, v, cluster, n_cluster, comment, aff));
		add_elem(b, m_ips, strdup_printf("%s . %s . %u", cip, lproto, sp->port),
			 strdup_printf("goto %s", base));
	} else /* no endpoints at all: reject; endpoints, but none usable here (Local): drop */
		add_elem(b, m_noep, strdup_printf("%s . %s . %u", cip, lproto, sp->port),
			 strdup(n_all > 0 ? "drop" : "goto svc-reject"));

	if (!has_ext)
		return;
	/* external traffic: NodePort, externalIPs, load-balancer IPs */
	if (n_all > 0) {
		_cleanup_free_ char *ext = strdup_printf("%s/ext", base);
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		if (!ext || !(f = open_memstream(&buf, &len))) {
			b->oom = true;
			return;
		}
		ip_comment(comment, sizeof(comment), &svc->meta, sp, " external");
		if (!etp_local)
			fprintf(f, "meta mark set meta mark or " SVC_MASQ_MARK " goto %s comment \"%s\"\n", all_chain,
				comment);
		else {
			/* kube-proxy's short-circuit: pods and the node itself reach every endpoint (the
			 * node masqueraded, else the reply would not come back through this node) */
			for (size_t i = 0; i < in->n_pod_networks; i++)
				if (in->pod_networks[i].addr.family == family) {
					char p[IP_PREFIX_STRLEN];

					fprintf(f, "%s saddr %s goto %s comment \"%s from pods\"\n", ipkw,
						ip_prefix_to_string(&in->pod_networks[i], p), all_chain, comment);
				}
			fprintf(f,
				"fib saddr type local meta mark set meta mark or " SVC_MASQ_MARK
				" goto %s comment \"%s from this node\"\n",
				all_chain, comment);
			if (n_loc > 0)
				fprintf(f, "goto %s/local comment \"%s local endpoints\"\n", base, comment);
			else /* the client's source is kept, so only a local endpoint can answer it */
				fprintf(f, "drop comment \"%s no local endpoint\"\n", comment);
		}
		if (fclose(f) != 0) {
			free(buf);
			b->oom = true;
			return;
		}
		chain_rules(b, add_chain(b, TAKE_PTR(ext)), buf);
		if (itp_local)
			chain_rules(b, add_chain(b, strdup(all_chain)), numgen_rule(base, v, all, n_all, comment, aff));
		if (etp_local && n_loc > 0)
			chain_rules(b, add_chain(b, strdup_printf("%s/local", base)),
				    numgen_rule(base, v, loc, n_loc, comment, aff));
	}
	{
		_cleanup_free_ char *go = n_all > 0 ? strdup_printf("goto %s/ext", base) : strdup("goto svc-reject");

		if (!go) {
			b->oom = true;
			return;
		}
		if (has_np)
			add_elem(b, n_all > 0 ? m_np : m_noep_np, strdup_printf("%s . %u", lproto, sp->node_port),
				 strdup(go));
		for (size_t i = 0; i < svc->n_external_ips + svc->n_lb_ips; i++) {
			const IpAddr *ip = i < svc->n_external_ips ? &svc->external_ips[i]
								   : &svc->lb_ips[i - svc->n_external_ips];
			char a[IP_ADDR_STRLEN];

			if (ip->family != family ||
			    (i >= svc->n_external_ips && svc->type != KUBE_SERVICE_LOAD_BALANCER))
				continue;
			ip_addr_to_string(ip, a);
			add_elem(b, n_all > 0 ? m_ips : m_noep, strdup_printf("%s . %s . %u", a, lproto, sp->port),
				 strdup(go));
		}
	}
}

static int chain_cmp(const void *a, const void *b) {
	return strcmp(((const SvcChain *) a)->name, ((const SvcChain *) b)->name);
}

static int set_cmp(const void *a, const void *b) {
	return strcmp(((const SvcSet *) a)->name, ((const SvcSet *) b)->name);
}

static int elem_cmp(const void *a, const void *b) {
	const SvcElem *x = a, *y = b;
	int c = strcmp(x->map, y->map);

	return c ?: strcmp(x->key, y->key);
}

int service_unit_build(const ServiceModelInput *in, ServiceUnit **ret) {
	const KubeService *svc = in->svc;
	_cleanup_(service_unit_freep) ServiceUnit *u = calloc(1, sizeof(ServiceUnit));
	Builder b = { .u = u };
	size_t w;

	if (!u)
		return -ENOMEM;
	u->key = strdup_printf("%s/%s", svc->meta.namespace, svc->meta.name);
	if (!u->key)
		return -ENOMEM;
	if (svc->type != KUBE_SERVICE_EXTERNAL_NAME && !svc->headless)
		for (size_t p = 0; p < svc->n_ports && !b.oom; p++)
			for (int fam = 0; fam < 2 && !b.oom; fam++)
				build_port(&b, in, &svc->ports[p], fam == 0 ? AF_INET : AF_INET6);
	if (b.oom)
		return -ENOMEM;
	qsort_safe(u->chains, u->n_chains, sizeof(SvcChain), chain_cmp);
	qsort_safe(u->elems, u->n_elems, sizeof(SvcElem), elem_cmp);
	qsort_safe(u->sets, u->n_sets, sizeof(SvcSet), set_cmp);
	w = 0;
	for (size_t i = 0; i < u->n_sets; i++)
		if (w > 0 && set_cmp(&u->sets[w - 1], &u->sets[i]) == 0) {
			free(u->sets[i].name);
			free(u->sets[i].decl);
		} else
			u->sets[w++] = u->sets[i];
	u->n_sets = w;
	/* two ports may not share protocol and port (the API server refuses it); keep the first */
	w = 0;
	for (size_t i = 0; i < u->n_elems; i++)
		if (w > 0 && elem_cmp(&u->elems[w - 1], &u->elems[i]) == 0) {
			free(u->elems[i].key);
			free(u->elems[i].value);
		} else
			u->elems[w++] = u->elems[i];
	u->n_elems = w;
	w = 0;
	for (size_t i = 0; i < u->n_chains; i++)
		if (w > 0 && chain_cmp(&u->chains[w - 1], &u->chains[i]) == 0) {
			free(u->chains[i].name);
			free(u->chains[i].rules);
		} else
			u->chains[w++] = u->chains[i];
	u->n_chains = w;
	*ret = TAKE_PTR(u);
	return 0;
}

ServiceUnit *service_unit_free(ServiceUnit *u) {
	if (!u)
		return NULL;
	for (size_t i = 0; i < u->n_chains; i++) {
		free(u->chains[i].name);
		free(u->chains[i].rules);
	}
	for (size_t i = 0; i < u->n_elems; i++) {
		free(u->elems[i].key);
		free(u->elems[i].value);
	}
	for (size_t i = 0; i < u->n_sets; i++) {
		free(u->sets[i].name);
		free(u->sets[i].decl);
	}
	free(u->sets);
	free(u->chains);
	free(u->elems);
	free(u->key);
	free(u);
	return NULL;
}

bool service_unit_equal(const ServiceUnit *a, const ServiceUnit *b) {
	if (!a || !b)
		return a == b;
	if (a->n_chains != b->n_chains || a->n_elems != b->n_elems || a->n_sets != b->n_sets)
		return false;
	for (size_t i = 0; i < a->n_sets; i++)
		if (!streq(a->sets[i].name, b->sets[i].name) || !streq(a->sets[i].decl, b->sets[i].decl))
			return false;
	for (size_t i = 0; i < a->n_chains; i++)
		if (!streq(a->chains[i].name, b->chains[i].name) || !streq_ptr(a->chains[i].rules, b->chains[i].rules))
			return false;
	for (size_t i = 0; i < a->n_elems; i++)
		if (elem_cmp(&a->elems[i], &b->elems[i]) != 0 || !streq(a->elems[i].value, b->elems[i].value))
			return false;
	return true;
}

const SvcChain *service_unit_chain(const ServiceUnit *u, const char *name) {
	SvcChain key = { .name = (char *) name };

	return u ? bsearch_safe(&key, u->chains, u->n_chains, sizeof(SvcChain), chain_cmp) : NULL;
}

const SvcSet *service_unit_set(const ServiceUnit *u, const char *name) {
	SvcSet key = { .name = (char *) name };

	return u ? bsearch_safe(&key, u->sets, u->n_sets, sizeof(SvcSet), set_cmp) : NULL;
}

static const SvcElem *unit_elem(const ServiceUnit *u, const SvcElem *e) {
	return u ? bsearch_safe(e, u->elems, u->n_elems, sizeof(SvcElem), elem_cmp) : NULL;
}

/* ---- rendering ---- */

static const char *const svc_maps[][2] = {
	{ "svc-ips4", "ipv4_addr . inet_proto . inet_service : verdict" },
	{ "svc-ips6", "ipv6_addr . inet_proto . inet_service : verdict" },
	{ "svc-nodeports4", "inet_proto . inet_service : verdict" },
	{ "svc-nodeports6", "inet_proto . inet_service : verdict" },
	{ "svc-noep4", "ipv4_addr . inet_proto . inet_service : verdict" },
	{ "svc-noep6", "ipv6_addr . inet_proto . inet_service : verdict" },
	{ "svc-noep-nodeports4", "inet_proto . inet_service : verdict" },
	{ "svc-noep-nodeports6", "inet_proto . inet_service : verdict" },
};

void service_render_base(FILE *f) {
	fputs("add table " T "\n", f);
	for (size_t i = 0; i < ELEMENTSOF(svc_maps); i++)
		fprintf(f, "add map " T " %s { type %s; }\n", svc_maps[i][0], svc_maps[i][1]);
	fputs("add chain " T " svc-reject\nflush chain " T " svc-reject\n"
	      "add rule " T " svc-reject meta l4proto tcp reject with tcp reset comment \"Service without endpoints\"\n"
	      "add rule " T " svc-reject reject comment \"Service without endpoints\"\n"
	      "add chain " T " svc-services\nflush chain " T " svc-services\n"
	      "add rule " T " svc-services ip daddr . meta l4proto . th dport vmap @svc-ips4\n"
	      "add rule " T " svc-services ip6 daddr . meta l4proto . th dport vmap @svc-ips6\n"
	      /* NodePorts on every local address but loopback (kube-proxy's default) */
	      "add rule " T " svc-services fib daddr type local ip daddr != 127.0.0.0/8 "
	      "meta l4proto . th dport vmap @svc-nodeports4\n"
	      "add rule " T " svc-services fib daddr type local ip6 daddr != ::1 "
	      "meta l4proto . th dport vmap @svc-nodeports6\n"
	      "add chain " T " svc-endpoints-check\nflush chain " T " svc-endpoints-check\n"
	      "add rule " T " svc-endpoints-check ip daddr . meta l4proto . th dport vmap @svc-noep4\n"
	      "add rule " T " svc-endpoints-check ip6 daddr . meta l4proto . th dport vmap @svc-noep6\n"
	      "add rule " T " svc-endpoints-check fib daddr type local ip daddr != 127.0.0.0/8 "
	      "meta l4proto . th dport vmap @svc-noep-nodeports4\n"
	      "add rule " T " svc-endpoints-check fib daddr type local ip6 daddr != ::1 "
	      "meta l4proto . th dport vmap @svc-noep-nodeports6\n"
	      /* dstnat + 10: after the portmap plugin's hostPort DNAT (dstnat), which then wins */
	      "add chain " T " svc-prerouting { type nat hook prerouting priority dstnat + 10; policy accept; }\n"
	      "flush chain " T " svc-prerouting\n"
	      "add rule " T " svc-prerouting jump svc-services\n"
	      "add chain " T " svc-output { type nat hook output priority -90; policy accept; }\n"
	      "flush chain " T " svc-output\n"
	      "add rule " T " svc-output jump svc-services\n"
	      /* srcnat - 5: between pm-postrouting (srcnat - 10) and br-postrouting (srcnat) */
	      "add chain " T " svc-postrouting { type nat hook postrouting priority srcnat - 5; policy accept; }\n"
	      "flush chain " T " svc-postrouting\n"
	      "add rule " T " svc-postrouting meta mark & " SVC_MASQ_MARK " == 0 return\n"
	      "add rule " T " svc-postrouting meta mark set meta mark xor " SVC_MASQ_MARK
	      " masquerade fully-random comment \"Service hairpin and external traffic\"\n",
	      f);
	/* filter - 5: the no-endpoint reject comes before any filter chain of policy or plugins */
	static const char *const hooks[] = { "input", "forward", "output" };
	for (size_t i = 0; i < ELEMENTSOF(hooks); i++)
		fprintf(f,
			"add chain " T " svc-filter-%s { type filter hook %s priority filter - 5; policy accept; }\n"
			"flush chain " T " svc-filter-%s\n"
			"add rule " T " svc-filter-%s ct state new jump svc-endpoints-check\n",
			hooks[i], hooks[i], hooks[i], hooks[i]);
}

void service_render_flush_maps(FILE *f) {
	for (size_t i = 0; i < ELEMENTSOF(svc_maps); i++)
		fprintf(f, "flush map " T " %s\n", svc_maps[i][0]);
}

static void render_rules(FILE *f, const SvcChain *c) {
	const char *p = c->rules ?: "";

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t) (nl - p) : strlen(p);

		if (len > 0)
			fprintf(f, "add rule " T " %s %.*s\n", c->name, (int) len, p);
		p += len + (nl ? 1 : 0);
	}
}

void service_render_unit_diff(FILE *f, const ServiceUnit *old, const ServiceUnit *new, bool full) {
	/* 1. elements gone or changed */
	for (size_t i = 0; old && i < old->n_elems; i++) {
		const SvcElem *e = &old->elems[i], *n = unit_elem(new, e);

		if (!n || !streq(n->value, e->value))
			fprintf(f, "delete element " T " %s { %s }\n", e->map, e->key);
	}
	/* 2. sets new (affinity), then chains new or changed: declared first, since rules may jump
	 * between them and name the sets */
	for (size_t i = 0; new &&i < new->n_sets; i++)
		if (full || !service_unit_set(old, new->sets[i].name))
			fprintf(f, "add set " T " %s %s\n", new->sets[i].name, new->sets[i].decl);
	for (size_t i = 0; new &&i < new->n_chains; i++) {
		const SvcChain *c = &new->chains[i], *o = service_unit_chain(old, c->name);

		if (!o || full)
			fprintf(f, "add chain " T " %s\n", c->name);
		if ((o && !streq_ptr(o->rules, c->rules)) || full)
			fprintf(f, "flush chain " T " %s\n", c->name);
	}
	for (size_t i = 0; new &&i < new->n_chains; i++) {
		const SvcChain *c = &new->chains[i], *o = service_unit_chain(old, c->name);

		if (!o || full || !streq_ptr(o->rules, c->rules))
			render_rules(f, c);
	}
	/* 3. elements new or changed */
	for (size_t i = 0; new &&i < new->n_elems; i++) {
		const SvcElem *e = &new->elems[i], *o = unit_elem(old, e);

		if (!o || !streq(o->value, e->value) || full)
			fprintf(f, "add element " T " %s { %s : %s }\n", e->map, e->key, e->value);
	}
	/* 4. chains gone: emptied first (they may jump to each other), then deleted */
	for (size_t i = 0; old && i < old->n_chains; i++)
		if (!service_unit_chain(new, old->chains[i].name))
			fprintf(f, "flush chain " T " %s\n", old->chains[i].name);
	for (size_t i = 0; old && i < old->n_chains; i++)
		if (!service_unit_chain(new, old->chains[i].name))
			fprintf(f, "delete chain " T " %s\n", old->chains[i].name);
	/* 5. sets gone: no rule names them any more */
	for (size_t i = 0; old && i < old->n_sets; i++)
		if (!service_unit_set(new, old->sets[i].name))
			fprintf(f, "delete set " T " %s\n", old->sets[i].name);
}

static int push_filter(ServiceCtFilter **v, size_t *n, const ServiceCtFilter *f) {
	ServiceCtFilter *nv = reallocarray(*v, *n + 1, sizeof(ServiceCtFilter));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = *f;
	*v = nv;
	return 0;
}

int service_unit_stale_udp(const ServiceUnit *old, const ServiceUnit *new, ServiceCtFilter **ret, size_t *ret_n) {
	_cleanup_free_ ServiceCtFilter *v = NULL;
	size_t n = 0;

	for (size_t i = 0; old && i < old->n_elems; i++) {
		const SvcElem *e = &old->elems[i], *ne = unit_elem(new, e);
		char ip[IP_ADDR_STRLEN + 1];
		unsigned port;
		ServiceCtFilter f = { .nat_only = true };

		if (ne && streq(ne->value, e->value))
			continue;
		if (!startswith(e->value, "goto " SVC_PREFIX) || streq(e->value, "goto svc-reject"))
			continue; /* entries to a rejecting/dropping key: none were DNATed */
		if (sscanf(e->key, "%46s . udp . %u", ip, &port) == 2 && ip_addr_parse(ip, &f.orig_dst) >= 0)
			f.family = f.orig_dst.family;
		else if (sscanf(e->key, "udp . %u", &port) == 1)
			f.family = endswith(e->map, "6") ? AF_INET6 : AF_INET;
		else
			continue;
		f.orig_dport = (uint16_t) port;
		if (push_filter(&v, &n, &f) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; old && i < old->n_chains; i++) {
		const char *name = old->chains[i].name, *ep = strstr(name, "/ep/");
		char ip[IP_ADDR_STRLEN + 1];
		unsigned port;
		ServiceCtFilter f = { .nat_only = true };

		if (!ep || !strstr(name, "/udp/") || service_unit_chain(new, name))
			continue;
		if (sscanf(ep + 4, "%46[^/]/%u", ip, &port) != 2)
			continue;
		for (char *p = ip; *p; p++)
			if (*p == '_')
				*p = ':';
		if (ip_addr_parse(ip, &f.reply_src) < 0)
			continue;
		f.family = f.reply_src.family;
		f.reply_sport = (uint16_t) port;
		if (push_filter(&v, &n, &f) < 0)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}
