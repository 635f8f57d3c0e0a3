/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-compile.h"
#include "daemon/service/service-counters.h"
#include "shared/nft/nft-names.h"

#define T NFT_TABLE_INET

/* ---- endpoints ---- */

typedef struct Ep {
	IpAddr addr;
	uint16_t port;
	bool local;
	bool nodeless; /* no nodeName: may be on this node */
	uint8_t cls;   /* 0 ready, 1 serving and terminating (fallback only) */
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

static bool admitted(const ServiceModelInput *in, ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol,
		     uint16_t port) {
	return !in->admit || in->admit(in->admit_userdata, use, ip, protocol, port);
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
			if (!admitted(in, SERVICE_ADDR_ENDPOINT, &ep->addresses[0], sp->protocol, port))
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
					.nodeless = !ep->node_name,
					.cls = cls };
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(Ep), ep_cmp);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || ip_addr_cmp(&v[w - 1].addr, &v[i].addr) != 0 || v[w - 1].port != v[i].port)
			v[w++] = v[i];
		else {
			v[w - 1].local |= v[i].local;
			v[w - 1].nodeless |= v[i].nodeless;
		}
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

/* ---- endpoint-map slots ---- */

struct SvcSlotPool {
	uint64_t used[SVC_SLOTS / 64];
	uint32_t cursor;
	size_t n_used;
};

int svc_slot_pool_new(SvcSlotPool **ret) {
	SvcSlotPool *p = calloc(1, sizeof(SvcSlotPool));

	if (!p)
		return -ENOMEM;
	svc_slot_pool_reset(p);
	*ret = p;
	return 0;
}

SvcSlotPool *svc_slot_pool_free(SvcSlotPool *p) {
	free(p);
	return NULL;
}

void svc_slot_pool_reset(SvcSlotPool *p) {
	memset(p->used, 0, sizeof(p->used));
	p->used[0] = 1; /* slot 0 means "none" */
	p->cursor = 1;
	p->n_used = 0;
}

size_t svc_slot_pool_used(const SvcSlotPool *p) {
	return p->n_used;
}

static int slot_alloc(SvcSlotPool *p, uint32_t *ret) {
	for (size_t n = 0; n <= SVC_SLOTS / 64; n++) {
		size_t w = (p->cursor / 64 + n) % (SVC_SLOTS / 64);

		if (p->used[w] == UINT64_MAX)
			continue;
		uint32_t s = (uint32_t) (w * 64 + (size_t) __builtin_ctzll(~p->used[w]));

		p->used[w] |= UINT64_C(1) << (s % 64);
		p->n_used++;
		p->cursor = s;
		*ret = s;
		return 0;
	}
	return -ENOSPC;
}

void svc_slot_pool_reserve(SvcSlotPool *p, const ServiceUnit *u) {
	for (size_t i = 0; u && i < u->n_chains; i++) {
		uint32_t sl = u->chains[i].slot;
		uint64_t bit = UINT64_C(1) << (sl % 64);

		if (sl == 0 || sl >= SVC_SLOTS || (p->used[sl / 64] & bit))
			continue;
		p->used[sl / 64] |= bit;
		p->n_used++;
	}
}

void svc_slot_pool_release(SvcSlotPool *p, const ServiceUnit *old, const ServiceUnit *new) {
	for (size_t i = 0; old && i < old->n_chains; i++) {
		const SvcChain *c = &old->chains[i], *n = service_unit_chain(new, c->name);
		uint64_t bit = UINT64_C(1) << (c->slot % 64);

		if (c->slot == 0 || c->slot >= SVC_SLOTS || (n && n->slot == c->slot))
			continue;
		if (p->used[c->slot / 64] & bit) {
			p->used[c->slot / 64] &= ~bit;
			p->n_used--;
		}
	}
}

/*
 * "svc-eps4-tcp-07": the map of a slot. One per protocol: a map declared `typeof ... th dport`
 * cannot be named by a later rule that matches `meta l4proto tcp` (libnftables 1.0.6 reads the
 * kernel's typeof back and finds the protocols conflicting), while `tcp dport` in a map used by TCP
 * rules only is accepted.
 */
static const char *const eps_protos[] = { "tcp", "udp", "sctp" };

static const char *eps_map(int family, const char *lproto, uint32_t slot) {
	static char names[2][ELEMENTSOF(eps_protos)][SVC_EPS_BUCKETS][24];
	size_t p = 0;
	char *n;

	while (p + 1 < ELEMENTSOF(eps_protos) && !streq(eps_protos[p], lproto))
		p++;
	n = names[family == AF_INET6][p][slot % SVC_EPS_BUCKETS];
	if (!n[0])
		snprintf(n, sizeof(names[0][0][0]), "svc-eps%c-%s-%03u", family == AF_INET6 ? '6' : '4', eps_protos[p],
			 (unsigned) (slot % SVC_EPS_BUCKETS));
	return n;
}

/* ---- counted elements of the shared sets ---- */

typedef struct RefEntry {
	char *key; /* "<set>\n<element>"; NULL: empty; REF_TOMB: deleted */
	size_t count;
	SvcElem elem; /* the element, for rendering (pointing into key) */
} RefEntry;

#define REF_TOMB ((char *) 1)

struct SvcRefs {
	RefEntry *v;
	size_t cap, n, used; /* used: live + tombstones */
};

int svc_refs_new(SvcRefs **ret) {
	SvcRefs *r = calloc(1, sizeof(SvcRefs));

	if (!r)
		return -ENOMEM;
	*ret = r;
	return 0;
}

void svc_refs_reset(SvcRefs *r) {
	for (size_t i = 0; i < r->cap; i++)
		if (r->v[i].key != REF_TOMB)
			free(r->v[i].key);
	free(r->v);
	*r = (SvcRefs) {};
}

SvcRefs *svc_refs_free(SvcRefs *r) {
	if (r)
		svc_refs_reset(r);
	free(r);
	return NULL;
}

size_t svc_refs_size(const SvcRefs *r) {
	return r->n;
}

static size_t ref_hash(const char *s) {
	size_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 1099511628211ULL;
	return h;
}

static int refs_grow(SvcRefs *r) {
	/* mostly tombstones: rehash at the same size */
	size_t cap = r->cap == 0 ? 256 : r->n * 4 < r->cap ? r->cap : r->cap * 2;
	RefEntry *v = calloc(cap, sizeof(RefEntry)), *old = r->v;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->cap; i++) {
		size_t h;

		if (!old[i].key || old[i].key == REF_TOMB)
			continue;
		for (h = ref_hash(old[i].key) & (cap - 1); v[h].key; h = (h + 1) & (cap - 1))
			;
		v[h] = old[i];
	}
	free(old);
	r->v = v;
	r->cap = cap;
	r->used = r->n;
	return 0;
}

/* The entry of key, created with count 0 when create is set (NULL: absent, or -ENOMEM). */
static RefEntry *refs_find(SvcRefs *r, const char *key, bool create) {
	size_t h, tomb = SIZE_MAX;

	if (create && (r->used + 1) * 4 >= r->cap * 3 && refs_grow(r) < 0)
		return NULL;
	if (r->cap == 0)
		return NULL;
	for (h = ref_hash(key) & (r->cap - 1); r->v[h].key; h = (h + 1) & (r->cap - 1)) {
		if (r->v[h].key == REF_TOMB) {
			if (tomb == SIZE_MAX)
				tomb = h;
		} else if (streq(r->v[h].key, key))
			return &r->v[h];
	}
	if (!create)
		return NULL;
	if (tomb != SIZE_MAX)
		h = tomb;
	else
		r->used++;
	r->v[h] = (RefEntry) { .key = strdup(key) };
	if (!r->v[h].key) {
		r->v[h].key = tomb != SIZE_MAX ? REF_TOMB : NULL;
		return NULL;
	}
	r->n++;
	return &r->v[h];
}

/* The fixed sets whose elements several units may hold (rendered from the counts, SvcRefs). */
static bool is_shared_set(const char *map) {
	return startswith(map, "svc-hairpin") || startswith(map, "svc-cluster-ips") || startswith(map, "svc-fw-");
}

int svc_refs_update(SvcRefs *r, const ServiceUnit *old, const ServiceUnit *new, NftBatch *b) {
	/* additions first: an element both units hold never drops to 0 on the way */
	for (size_t i = 0; new &&i < new->n_elems; i++) {
		const SvcElem *e = &new->elems[i];
		_cleanup_free_ char *k = NULL;
		RefEntry *x;

		if (!is_shared_set(e->map))
			continue;
		k = strdup_printf("%s\n%s", e->map, e->key);
		if (!k || !(x = refs_find(r, k, true)))
			return -ENOMEM;
		if (x->count == 0)
			x->elem = (SvcElem) { .map = e->map, .key = strchr(x->key, '\n') + 1, .value = (char *) "" };
		if (x->count++ == 0 && b)
			nft_batch_put(b, "add element " T " %s { %s }\n", e->map, e->key);
	}
	for (size_t i = 0; old && i < old->n_elems; i++) {
		const SvcElem *e = &old->elems[i];
		_cleanup_free_ char *k = NULL;
		RefEntry *x;

		if (!is_shared_set(e->map))
			continue;
		k = strdup_printf("%s\n%s", e->map, e->key);
		if (!k)
			return -ENOMEM;
		x = refs_find(r, k, false);
		if (!x || x->count == 0)
			continue;
		if (--x->count == 0) {
			if (b)
				nft_batch_put(b, "delete element " T " %s { %s }\n", e->map, e->key);
			free(x->key);
			x->key = REF_TOMB;
			r->n--;
		}
	}
	return 0;
}

void svc_refs_render_held(SvcRefs *r, const ServiceUnit *u, NftBatch *b) {
	for (size_t i = 0; u && i < u->n_elems; i++) {
		const SvcElem *e = &u->elems[i];
		_cleanup_free_ char *k = NULL;
		RefEntry *x;

		if (!is_shared_set(e->map))
			continue;
		k = strdup_printf("%s\n%s", e->map, e->key);
		x = k ? refs_find(r, k, false) : NULL;
		if (x && x->count > 0)
			nft_batch_put(b, "add element " T " %s { %s }\n", e->map, e->key);
	}
}

/* ---- unit building ---- */

typedef struct Builder {
	ServiceUnit *u;
	size_t cap_chains, cap_elems, cap_sets, cap_targets, cap_counters, cap_series;
	bool oom;
} Builder;

static void add_counter(Builder *b, char *name) {
	if (!name) {
		b->oom = true;
		return;
	}
	if (b->u->n_counters == b->cap_counters) {
		size_t cap = b->cap_counters ? b->cap_counters * 2 : 8;
		char **v = reallocarray(b->u->counters, cap, sizeof(char *));

		if (!v) {
			free(name);
			b->oom = true;
			return;
		}
		b->u->counters = v;
		b->cap_counters = cap;
	}
	b->u->counters[b->u->n_counters++] = name;
}

static void add_series(Builder *b, const char *map, char *key, char *labels, bool noep) {
	if (!key || !labels) {
		free(key);
		free(labels);
		b->oom = true;
		return;
	}
	if (b->u->n_series == b->cap_series) {
		size_t cap = b->cap_series ? b->cap_series * 2 : 8;
		SvcSeries *v = reallocarray(b->u->series, cap, sizeof(SvcSeries));

		if (!v) {
			free(key);
			free(labels);
			b->oom = true;
			return;
		}
		b->u->series = v;
		b->cap_series = cap;
	}
	b->u->series[b->u->n_series++] = (SvcSeries) { .map = map, .key = key, .labels = labels, .noep = noep };
}

/* A label value: Prometheus' escapes (names are DNS labels; this keeps a bad one from breaking the page). */
static void put_label_value(NftBatch *nb, const char *v) {
	for (; v && *v; v++)
		if (*v == '"' || *v == '\\')
			nft_batch_put(nb, "\\%c", *v);
		else if (*v == '\n')
			nft_batch_put(nb, "\\n");
		else
			nft_batch_put(nb, "%c", *v);
}

/* namespace="..",service="..",port="80",protocol="TCP",<what>="<value>" */
static char *series_labels(const KubeService *svc, const KubeServicePort *sp, const char *what, const char *value) {
	NftBatch nb;

	if (nft_batch_begin(&nb) < 0)
		return NULL;
	nft_batch_put(&nb, "namespace=\"");
	put_label_value(&nb, svc->meta.namespace);
	nft_batch_put(&nb, "\",service=\"");
	put_label_value(&nb, svc->meta.name);
	nft_batch_put(&nb, "\",port=\"%u\",protocol=\"%s\",%s=\"%s\"", sp->port, kube_protocol_to_string(sp->protocol),
		      what, value);
	return nft_batch_steal(&nb);
}

/* the endpoint label: "10.244.1.5:8080", "[fd00::5]:8080" */
static char *endpoint_labels(const KubeService *svc, const KubeServicePort *sp, const IpAddr *addr, uint16_t port) {
	char a[IP_ADDR_STRLEN], ep[IP_ADDR_STRLEN + 16];

	ip_addr_to_string(addr, a);
	snprintf(ep, sizeof(ep), "%s%s%s:%u", addr->family == AF_INET6 ? "[" : "", a,
		 addr->family == AF_INET6 ? "]" : "", port);
	return series_labels(svc, sp, "endpoint", ep);
}

static void add_target(Builder *b, char *t) {
	if (!t) {
		b->oom = true;
		return;
	}
	if (b->u->n_targets == b->cap_targets) {
		size_t cap = b->cap_targets ? b->cap_targets * 2 : 8;
		char **v = reallocarray(b->u->targets, cap, sizeof(char *));

		if (!v) {
			free(t);
			b->oom = true;
			return;
		}
		b->u->targets = v;
		b->cap_targets = cap;
	}
	b->u->targets[b->u->n_targets++] = t;
}

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
	NftBatch nb;

	if (nft_batch_begin(&nb) < 0)
		return NULL;
	/* sessionAffinity: a client seen within the timeout goes back to its endpoint */
	for (size_t i = 0; affinity > 0 && i < k; i++) {
		char a[IP_ADDR_STRLEN];

		addr_ident(&v[idx[i]].addr, a);
		nft_batch_put(&nb, "%s saddr @%s/ep/%s/%u/aff%u goto %s/ep/%s/%u comment \"%s affinity\"\n",
			      v[idx[i]].addr.family == AF_INET ? "ip" : "ip6", base, a, v[idx[i]].port, affinity, base,
			      a, v[idx[i]].port, comment);
	}
	for (size_t i = 0; i < k; i++) {
		char a[IP_ADDR_STRLEN];

		if (i + 1 < k)
			nft_batch_put(&nb, "numgen random mod %zu == 0 ", k - i);
		nft_batch_put(&nb, "goto %s/ep/%s/%u comment \"%s\"\n", base, addr_ident(&v[idx[i]].addr, a),
			      v[idx[i]].port, comment);
	}
	return nft_batch_steal(&nb);
}

/*
 * The rules of choosing chain c over the endpoints idx[0..k): one dnat through the chain's range
 * of an svc-eps map (service-compile.h), or the numgen cascade to endpoint chains (per_ep).
 */
static char *choose_rules(Builder *b, const ServiceModelInput *in, const KubeServicePort *sp, SvcChain *c,
			  const char *base, const Ep *v, const size_t *idx, size_t k, const char *comment,
			  uint32_t affinity, bool per_ep, const char *lproto) {
	int family = v[idx[0]].addr.family;
	const char *ipkw = family == AF_INET ? "ip" : "ip6", *map;
	const SvcChain *o;
	char a[IP_ADDR_STRLEN];
	uint32_t slot, first;

	if (!c)
		return NULL;
	if (per_ep)
		return numgen_rule(base, v, idx, k, comment, affinity);
	if (k == 1) {
		/* counted on a named counter of the chain's and the endpoint's name (service-compile.h):
		 * another endpoint is another counter */
		_cleanup_free_ char *cn =
				strdup_printf("%s/ep/%s/%u", c->name, addr_ident(&v[idx[0]].addr, a), v[idx[0]].port);

		if (!cn)
			return NULL;
		add_counter(b, strdup(cn));
		add_series(b, NULL, strdup(cn), endpoint_labels(in->svc, sp, &v[idx[0]].addr, v[idx[0]].port), false);
		ip_addr_to_string(&v[idx[0]].addr, a);
		return strdup_printf("meta l4proto %s counter name \"%s\" dnat %s to %s%s%s:%u comment \"%s\"\n",
				     lproto, cn, ipkw, family == AF_INET6 ? "[" : "", a, family == AF_INET6 ? "]" : "",
				     v[idx[0]].port, comment);
	}
	o = service_unit_chain(in->old, c->name);
	if (o && o->slot != 0)
		slot = o->slot;
	else if (!in->slots || slot_alloc(in->slots, &slot) < 0)
		return NULL;
	c->slot = slot;
	first = slot << SVC_SLOT_BITS;
	map = eps_map(family, lproto, slot);
	for (size_t i = 0; i < k; i++) {
		ip_addr_to_string(&v[idx[i]].addr, a);
		add_elem(b, map, strdup_printf("%" PRIu32, first + (uint32_t) i),
			 strdup_printf("%s . %u", a, v[idx[i]].port));
		add_series(b, map, strdup_printf("%" PRIu32, first + (uint32_t) i),
			   endpoint_labels(in->svc, sp, &v[idx[i]].addr, v[idx[i]].port), false);
	}
	return strdup_printf("meta l4proto %s dnat %s to numgen random mod %zu offset %" PRIu32
			     " map @%s comment \"%s\"\n",
			     lproto, ipkw, k, first, map, comment);
}

static int ip_comment(char *buf, size_t size, const KubeObject *o, const KubeServicePort *sp, const char *what) {
	return snprintf(buf, size, "%.40s/%.40s %s/%u%s", o->namespace, o->name, kube_protocol_to_string(sp->protocol),
			sp->port, what);
}

static char *endpoint_rules(const KubeService *svc, const KubeServicePort *sp, const Ep *e, const char *lproto,
			    const char *aff_set, const char *counter) {
	const char *ipkw = e->addr.family == AF_INET ? "ip" : "ip6";
	char a[IP_ADDR_STRLEN], comment[NFT_COMMENT_MAX + 1];
	bool v6 = e->addr.family == AF_INET6;

	ip_addr_to_string(&e->addr, a);
	ip_comment(comment, sizeof(comment), &svc->meta, sp, " endpoint");
	/* a pod reaching itself through the Service: masquerade, or it would answer itself directly */
	return strdup_printf("%s saddr %s meta mark set meta mark or " SVC_MASQ_MARK " comment \"%s hairpin\"\n"
			     "%s%s%s%s%s%s%s"
			     "meta l4proto %s counter name \"%s\" dnat %s to %s%s%s:%u comment \"%s\"\n",
			     ipkw, a, comment, aff_set ? "update @" : "", aff_set ?: "", aff_set ? " { " : "",
			     aff_set ? ipkw : "", aff_set ? " saddr } comment \"" : "", aff_set ? comment : "",
			     aff_set ? " affinity\"\n" : "", lproto, counter, ipkw, v6 ? "[" : "", a, v6 ? "]" : "",
			     e->port, comment);
}

/*
 * loadBalancerSourceRanges of one LB IP . proto . port (kube-proxy's firewall-ips): the key in
 * svc-fw-ips, and key . range in svc-fw-allow for each range of the IP's family. None of the family
 * (only IPv6 ranges for an IPv4 LB IP): the key alone, every source dropped; a restriction is never
 * lifted because of how it was written.
 */
static void add_firewall(Builder *b, const KubeService *svc, const IpAddr *ip, const char *lproto, uint16_t port) {
	bool v4 = ip->family == AF_INET;
	char a[IP_ADDR_STRLEN];

	if (svc->n_source_ranges == 0)
		return;
	ip_addr_to_string(ip, a);
	add_elem(b, v4 ? SVC_FW_IPS4 : SVC_FW_IPS6, strdup_printf("%s . %s . %u", a, lproto, port), strdup(""));
	for (size_t i = 0; i < svc->n_source_ranges; i++) {
		char p[IP_PREFIX_STRLEN];

		if (svc->source_ranges[i].addr.family != ip->family)
			continue;
		add_elem(b, v4 ? SVC_FW_ALLOW4 : SVC_FW_ALLOW6,
			 strdup_printf("%s . %s . %u . %s", a, lproto, port,
				       ip_prefix_to_string(&svc->source_ranges[i], p)),
			 strdup(""));
	}
}

static bool in_set(const size_t *idx, size_t k, size_t i) {
	for (size_t j = 0; j < k; j++)
		if (idx[j] == i)
			return true;
	return false;
}

/*
 * One Service port in one family, planned: its endpoints (v), the indexes of those each kind of
 * traffic may choose (all; loc, the node-local ones; cluster, what internal traffic uses), and the
 * names its chains take.
 */
typedef struct PortPlan {
	const ServiceModelInput *in;
	const KubeServicePort *sp;
	int family;
	const char *ipkw;
	const IpAddr *cips; /* the ClusterIP of this family */
	bool itp_local, etp_local;
	bool has_np, has_ext; /* a NodePort; any external traffic (NodePort, externalIPs, LB IPs) */
	bool per_ep;          /* endpoint chains: affinity, or more endpoints than a slot maps */
	uint32_t aff;         /* ClientIP affinity timeout, 0 = none */
	char *lproto, *base, *all_chain;
	Ep *v;
	size_t n;
	size_t *all, *loc, n_all, n_loc;
	const size_t *cluster;
	size_t n_cluster;
} PortPlan;

static void port_plan_done(PortPlan *p) {
	free(p->lproto);
	free(p->base);
	free(p->all_chain);
	free(p->v);
	free(p->all);
	free(p->loc);
}

/* 1: the family is not one of the Service's (nothing to build); 0: planned; -ENOMEM */
static int port_plan_init(PortPlan *p, const ServiceModelInput *in, const KubeServicePort *sp, int family) {
	const KubeService *svc = in->svc;

	*p = (PortPlan) { .in = in, .sp = sp, .family = family, .ipkw = family == AF_INET ? "ip" : "ip6" };
	p->itp_local = svc->internal_traffic_local;
	p->etp_local = svc->external_traffic_local;
	p->has_np = sp->node_port && (svc->type == KUBE_SERVICE_NODE_PORT || svc->type == KUBE_SERVICE_LOAD_BALANCER);
	p->has_ext = p->has_np;
	p->aff = svc->session_affinity_client_ip ? svc->session_affinity_timeout : 0;
	for (size_t i = 0; i < svc->n_cluster_ips && !p->cips; i++)
		if (svc->cluster_ips[i].family == family)
			p->cips = &svc->cluster_ips[i];
	if (!p->cips)
		return 1;
	for (size_t i = 0; i < svc->n_external_ips && !p->has_ext; i++)
		p->has_ext = svc->external_ips[i].family == family;
	for (size_t i = 0; i < svc->n_lb_ips && !p->has_ext; i++)
		p->has_ext = svc->lb_ips[i].family == family && svc->type == KUBE_SERVICE_LOAD_BALANCER;

	p->lproto = strdup(kube_protocol_to_string(sp->protocol));
	if (!p->lproto || gather(in, sp, family, &p->v, &p->n) < 0)
		return -ENOMEM;
	for (char *c = p->lproto; *c; c++)
		*c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	p->all = calloc(p->n + 1, sizeof(size_t));
	p->loc = calloc(p->n + 1, sizeof(size_t));
	p->base = strdup_printf(SVC_PREFIX "%s/%s/%s/%u/%s", svc->meta.namespace, svc->meta.name, p->lproto, sp->port,
				family == AF_INET ? "ip4" : "ip6");
	if (!p->all || !p->loc || !p->base)
		return -ENOMEM;
	/* every endpoint, for external traffic (Cluster) and short-circuited sources (Local) */
	p->all_chain = p->itp_local ? strdup_printf("%s/cluster", p->base) : strdup(p->base);
	if (!p->all_chain)
		return -ENOMEM;
	p->n_all = select_eps(p->v, p->n, false, p->all);
	p->n_loc = select_eps(p->v, p->n, true, p->loc);
	p->cluster = p->itp_local ? p->loc : p->all;
	p->n_cluster = p->itp_local ? p->n_loc : p->n_all;
	p->per_ep = p->aff > 0 || p->n >= (1u << SVC_SLOT_BITS);
	return 0;
}

/* every endpoint some chain may choose: its target, its hairpin element, or its chain */
static void port_endpoints(Builder *b, const PortPlan *p) {
	for (size_t i = 0; i < p->n; i++) {
		char ai[IP_ADDR_STRLEN];

		if (!in_set(p->cluster, p->n_cluster, i) && !(p->has_ext && in_set(p->all, p->n_all, i)) &&
		    !(p->has_ext && p->etp_local && in_set(p->loc, p->n_loc, i)))
			continue;
		ip_addr_to_string(&p->v[i].addr, ai);
		add_target(b, strdup_printf("%s/%s/%u", p->lproto, ai, p->v[i].port));
		if (!p->per_ep) {
			if (p->v[i].local || p->v[i].nodeless)
				add_elem(b, p->family == AF_INET ? SVC_HAIRPIN4 : SVC_HAIRPIN6,
					 strdup_printf("%s . %s", ai, ai), strdup(""));
			continue;
		}
		_cleanup_free_ char *ep =
				strdup_printf("%s/ep/%s/%u", p->base, addr_ident(&p->v[i].addr, ai), p->v[i].port);
		_cleanup_free_ char *set = ep && p->aff > 0 ? strdup_printf("%s/aff%u", ep, p->aff) : NULL;

		if (!ep || (p->aff > 0 && !set)) {
			b->oom = true;
			return;
		}
		chain_rules(b, add_chain(b, strdup(ep)),
			    endpoint_rules(p->in->svc, p->sp, &p->v[i], p->lproto, set, ep));
		add_counter(b, strdup(ep));
		add_series(b, NULL, strdup(ep), endpoint_labels(p->in->svc, p->sp, &p->v[i].addr, p->v[i].port), false);
		if (set)
			add_set(b, strdup(set),
				strdup_printf("{ type %s; flags dynamic,timeout; timeout %us; }",
					      p->family == AF_INET ? "ipv4_addr" : "ipv6_addr", p->aff));
	}
}

/* internal traffic: the ClusterIP */
static void port_internal(Builder *b, const PortPlan *p) {
	const char *m_ips = p->family == AF_INET ? "svc-ips4" : "svc-ips6";
	const char *m_noep = p->family == AF_INET ? "svc-noep4" : "svc-noep6";
	char comment[NFT_COMMENT_MAX + 1], cip[IP_ADDR_STRLEN];
	bool cip_ok;

	ip_comment(comment, sizeof(comment), &p->in->svc->meta, p->sp, "");
	ip_addr_to_string(p->cips, cip);
	cip_ok = admitted(p->in, SERVICE_ADDR_CLUSTER_IP, p->cips, p->sp->protocol, p->sp->port);
	/* an allocated ClusterIP (its undefined ports are rejected): only one the policy admits, so a
	 * refused address (etcd's, a node's, outside the range) never reaches svc-cluster-ips-check */
	if (cip_ok)
		add_elem(b, p->family == AF_INET ? SVC_CLUSTER_IPS4 : SVC_CLUSTER_IPS6, strdup(cip), strdup(""));
	if (p->n_cluster > 0) {
		SvcChain *c = add_chain(b, strdup(p->base));

		chain_rules(b, c,
			    choose_rules(b, p->in, p->sp, c, p->base, p->v, p->cluster, p->n_cluster, comment, p->aff,
					 p->per_ep, p->lproto));
		if (cip_ok)
			add_elem(b, m_ips, strdup_printf("%s . %s . %u", cip, p->lproto, p->sp->port),
				 strdup_printf("goto %s", p->base));
	} else if (cip_ok) {
		/* no endpoints at all: reject; endpoints, but none usable here (Local): drop */
		add_elem(b, m_noep, strdup_printf("%s . %s . %u", cip, p->lproto, p->sp->port),
			 strdup(p->n_all > 0 ? "drop" : "goto svc-reject"));
		add_series(b, m_noep, strdup_printf("%s . %s . %u", cip, p->lproto, p->sp->port),
			   series_labels(p->in->svc, p->sp, "action", p->n_all > 0 ? "drop" : "reject"), true);
	}
}

/* the rules of <base>/ext, where external traffic enters: masquerade and every endpoint (Cluster),
 * or kube-proxy's short-circuit and the local endpoints (Local) */
static char *external_rules(const PortPlan *p, const char *comment) {
	NftBatch nb;

	if (nft_batch_begin(&nb) < 0)
		return NULL;
	if (!p->etp_local)
		nft_batch_put(&nb, "meta mark set meta mark or " SVC_MASQ_MARK " goto %s comment \"%s\"\n",
			      p->all_chain, comment);
	else {
		/* kube-proxy's short-circuit: pods and the node itself reach every endpoint (the
		 * node masqueraded, else the reply would not come back through this node) */
		for (size_t i = 0; i < p->in->n_pod_networks; i++)
			if (p->in->pod_networks[i].addr.family == p->family) {
				char pfx[IP_PREFIX_STRLEN];

				nft_batch_put(&nb, "%s saddr %s goto %s comment \"%s from pods\"\n", p->ipkw,
					      ip_prefix_to_string(&p->in->pod_networks[i], pfx), p->all_chain, comment);
			}
		nft_batch_put(&nb,
			      "fib saddr type local meta mark set meta mark or " SVC_MASQ_MARK
			      " goto %s comment \"%s from this node\"\n",
			      p->all_chain, comment);
		if (p->n_loc > 0)
			nft_batch_put(&nb, "goto %s/local comment \"%s local endpoints\"\n", p->base, comment);
		else /* the client's source is kept, so only a local endpoint can answer it */
			nft_batch_put(&nb, "drop comment \"%s no local endpoint\"\n", comment);
	}
	return nft_batch_steal(&nb);
}

/* external traffic's chains: <base>/ext, and the choice over every endpoint or the local ones
 * where internal traffic does not already build it */
static void port_external_chains(Builder *b, const PortPlan *p) {
	_cleanup_free_ char *ext = strdup_printf("%s/ext", p->base);
	char comment[NFT_COMMENT_MAX + 1];
	char *rules;

	if (p->n_all == 0)
		return;
	ip_comment(comment, sizeof(comment), &p->in->svc->meta, p->sp, " external");
	rules = ext ? external_rules(p, comment) : NULL;
	if (!rules) {
		b->oom = true;
		return;
	}
	chain_rules(b, add_chain(b, TAKE_PTR(ext)), rules);
	if (p->itp_local) {
		SvcChain *c = add_chain(b, strdup(p->all_chain));

		chain_rules(b, c,
			    choose_rules(b, p->in, p->sp, c, p->base, p->v, p->all, p->n_all, comment, p->aff,
					 p->per_ep, p->lproto));
	}
	if (p->etp_local && p->n_loc > 0) {
		SvcChain *c = add_chain(b, strdup_printf("%s/local", p->base));

		chain_rules(b, c,
			    choose_rules(b, p->in, p->sp, c, p->base, p->v, p->loc, p->n_loc, comment, p->aff,
					 p->per_ep, p->lproto));
	}
}

/* external traffic's entries: the NodePort, the externalIPs and the load-balancer IPs (with their
 * loadBalancerSourceRanges), each to <base>/ext, or to svc-reject without endpoints */
static void port_external_entries(Builder *b, const PortPlan *p) {
	const KubeService *svc = p->in->svc;
	const char *m_ips = p->family == AF_INET ? "svc-ips4" : "svc-ips6";
	const char *m_np = p->family == AF_INET ? "svc-nodeports4" : "svc-nodeports6";
	const char *m_noep = p->family == AF_INET ? "svc-noep4" : "svc-noep6";
	const char *m_noep_np = p->family == AF_INET ? "svc-noep-nodeports4" : "svc-noep-nodeports6";
	_cleanup_free_ char *go = p->n_all > 0 ? strdup_printf("goto %s/ext", p->base) : strdup("goto svc-reject");

	if (!go) {
		b->oom = true;
		return;
	}
	if (p->has_np && admitted(p->in, SERVICE_ADDR_NODE_PORT, NULL, p->sp->protocol, p->sp->node_port)) {
		add_elem(b, p->n_all > 0 ? m_np : m_noep_np, strdup_printf("%s . %u", p->lproto, p->sp->node_port),
			 strdup(go));
		if (p->n_all == 0)
			add_series(b, m_noep_np, strdup_printf("%s . %u", p->lproto, p->sp->node_port),
				   series_labels(svc, p->sp, "action", "reject"), true);
	}
	for (size_t i = 0; i < svc->n_external_ips + svc->n_lb_ips; i++) {
		const IpAddr *ip =
				i < svc->n_external_ips ? &svc->external_ips[i] : &svc->lb_ips[i - svc->n_external_ips];
		char a[IP_ADDR_STRLEN];

		if (ip->family != p->family || (i >= svc->n_external_ips && svc->type != KUBE_SERVICE_LOAD_BALANCER) ||
		    !admitted(p->in, i < svc->n_external_ips ? SERVICE_ADDR_EXTERNAL_IP : SERVICE_ADDR_LB_IP, ip,
			      p->sp->protocol, p->sp->port))
			continue;
		ip_addr_to_string(ip, a);
		add_elem(b, p->n_all > 0 ? m_ips : m_noep, strdup_printf("%s . %s . %u", a, p->lproto, p->sp->port),
			 strdup(go));
		if (p->n_all == 0)
			add_series(b, m_noep, strdup_printf("%s . %s . %u", a, p->lproto, p->sp->port),
				   series_labels(svc, p->sp, "action", "reject"), true);
		if (i >= svc->n_external_ips)
			add_firewall(b, svc, ip, p->lproto, p->sp->port);
	}
}

static void build_port(Builder *b, const ServiceModelInput *in, const KubeServicePort *sp, int family) {
	_cleanup_(port_plan_done) PortPlan p = {};
	int r;

	r = port_plan_init(&p, in, sp, family);
	if (r < 0)
		b->oom = true;
	if (r != 0)
		return;
	port_endpoints(b, &p);
	if (b->oom)
		return;
	port_internal(b, &p);
	if (!p.has_ext)
		return;
	port_external_chains(b, &p);
	if (b->oom)
		return;
	port_external_entries(b, &p);
}

static int chain_cmp(const void *a, const void *b) {
	return strcmp(((const SvcChain *) a)->name, ((const SvcChain *) b)->name);
}

static int set_cmp(const void *a, const void *b) {
	return strcmp(((const SvcSet *) a)->name, ((const SvcSet *) b)->name);
}

static int str_ptr_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int elem_cmp(const void *a, const void *b) {
	const SvcElem *x = a, *y = b;
	int c = strcmp(x->map, y->map);

	return c ?: strcmp(x->key, y->key);
}

static int series_key_cmp(const void *a, const void *b) {
	const SvcSeries *x = a, *y = b;
	int c = strcmp(x->map ?: "", y->map ?: "");

	return c ?: strcmp(x->key, y->key);
}

/* by family, then labels (the series several counters add to are adjacent), then counter */
static int series_cmp(const void *a, const void *b) {
	const SvcSeries *x = a, *y = b;

	if (x->noep != y->noep)
		return x->noep ? 1 : -1;
	return strcmp(x->labels, y->labels) ?: series_key_cmp(a, b);
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
	qsort_safe(u->counters, u->n_counters, sizeof(char *), str_ptr_cmp);
	w = 0;
	for (size_t i = 0; i < u->n_counters; i++)
		if (w > 0 && streq(u->counters[w - 1], u->counters[i]))
			free(u->counters[i]);
		else
			u->counters[w++] = u->counters[i];
	u->n_counters = w;
	/* one series entry per counter (two ports sharing protocol and port: the first, as above) */
	qsort_safe(u->series, u->n_series, sizeof(SvcSeries), series_key_cmp);
	w = 0;
	for (size_t i = 0; i < u->n_series; i++)
		if (w > 0 && series_key_cmp(&u->series[w - 1], &u->series[i]) == 0) {
			free(u->series[i].key);
			free(u->series[i].labels);
		} else
			u->series[w++] = u->series[i];
	u->n_series = w;
	qsort_safe(u->series, u->n_series, sizeof(SvcSeries), series_cmp);
	qsort_safe(u->targets, u->n_targets, sizeof(char *), str_ptr_cmp);
	w = 0;
	for (size_t i = 0; i < u->n_targets; i++)
		if (w > 0 && streq(u->targets[w - 1], u->targets[i]))
			free(u->targets[i]);
		else
			u->targets[w++] = u->targets[i];
	u->n_targets = w;
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
	for (size_t i = 0; i < u->n_targets; i++)
		free(u->targets[i]);
	free(u->targets);
	for (size_t i = 0; i < u->n_counters; i++)
		free(u->counters[i]);
	free(u->counters);
	for (size_t i = 0; i < u->n_series; i++) {
		free(u->series[i].key);
		free(u->series[i].labels);
	}
	free(u->series);
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
	if (a->n_chains != b->n_chains || a->n_elems != b->n_elems || a->n_sets != b->n_sets ||
	    a->n_targets != b->n_targets || a->n_counters != b->n_counters || a->n_series != b->n_series)
		return false;
	for (size_t i = 0; i < a->n_counters; i++)
		if (!streq(a->counters[i], b->counters[i]))
			return false;
	for (size_t i = 0; i < a->n_series; i++)
		if (series_cmp(&a->series[i], &b->series[i]) != 0)
			return false;
	for (size_t i = 0; i < a->n_targets; i++)
		if (!streq(a->targets[i], b->targets[i]))
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

const SvcElem *service_unit_elem(const ServiceUnit *u, const char *map, const char *key) {
	SvcElem e = { .map = map, .key = (char *) key };

	return unit_elem(u, &e);
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

void service_render_base(NftBatch *b, const IpPrefix *ranges, size_t n_ranges) {
	nft_batch_put(b, "add table " T "\n");
	/* the counted maps (svc_map_counted()) with element counters (service-compile.h) */
	for (size_t i = 0; i < ELEMENTSOF(svc_maps); i++)
		nft_batch_put(b, "add map " T " %s { type %s;%s }\n", svc_maps[i][0], svc_maps[i][1],
			      svc_map_counted(svc_maps[i][0]) ? " counter;" : "");
	for (size_t p = 0; p < ELEMENTSOF(eps_protos); p++)
		for (uint32_t i = 0; i < SVC_EPS_BUCKETS; i++)
			nft_batch_put(b,
				      "add map " T
				      " %s { typeof numgen random mod 1 : ip daddr . %s dport; counter; }\n"
				      "add map " T
				      " %s { typeof numgen random mod 1 : ip6 daddr . %s dport; counter; }\n",
				      eps_map(AF_INET, eps_protos[p], i), eps_protos[p],
				      eps_map(AF_INET6, eps_protos[p], i), eps_protos[p]);
	nft_batch_put(b, "add set " T " " SVC_HAIRPIN4 " { type ipv4_addr . ipv4_addr; }\n"
			 "add set " T " " SVC_HAIRPIN6 " { type ipv6_addr . ipv6_addr; }\n"
			 "add set " T " " SVC_CLUSTER_IPS4 " { type ipv4_addr; }\n"
			 "add set " T " " SVC_CLUSTER_IPS6 " { type ipv6_addr; }\n"
			 "add set " T " " SVC_FW_IPS4 " { type ipv4_addr . inet_proto . inet_service; }\n"
			 "add set " T " " SVC_FW_IPS6 " { type ipv6_addr . inet_proto . inet_service; }\n"
			 "add set " T " " SVC_FW_ALLOW4
			 " { type ipv4_addr . inet_proto . inet_service . ipv4_addr; flags interval; }\n"
			 "add set " T " " SVC_FW_ALLOW6
			 " { type ipv6_addr . inet_proto . inet_service . ipv6_addr; flags interval; }\n");
	nft_batch_put(b,
		      "add chain " T " svc-reject\nflush chain " T " svc-reject\n"
		      "add rule " T
		      " svc-reject meta l4proto tcp reject with tcp reset comment \"Service without endpoints\"\n"
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
		      "add chain " T
		      " svc-prerouting { type nat hook prerouting priority dstnat + 10; policy accept; }\n"
		      "flush chain " T " svc-prerouting\n"
		      "add rule " T " svc-prerouting jump svc-services\n"
		      "add chain " T " svc-output { type nat hook output priority -90; policy accept; }\n"
		      "flush chain " T " svc-output\n"
		      /* weftd's own datastore and API server connections (SVC_SELF_MARK) */
		      "add rule " T " svc-output meta mark & " SVC_SELF_MARK
		      " != 0 meta nfproto ipv4 ip daddr != @" SVC_CLUSTER_IPS4
		      " return comment \"weftd's own connections\"\n"
		      "add rule " T " svc-output meta mark & " SVC_SELF_MARK
		      " != 0 meta nfproto ipv6 ip6 daddr != @" SVC_CLUSTER_IPS6
		      " return comment \"weftd's own connections\"\n"
		      "add rule " T " svc-output jump svc-services\n"
		      /* loadBalancerSourceRanges: before the DNAT, while the LB IP is the destination */
		      "add chain " T " svc-firewall-check\nflush chain " T " svc-firewall-check\n"
		      "add rule " T " svc-firewall-check ip daddr . meta l4proto . th dport . ip saddr @" SVC_FW_ALLOW4
		      " return\n"
		      "add rule " T
		      " svc-firewall-check ip6 daddr . meta l4proto . th dport . ip6 saddr @" SVC_FW_ALLOW6 " return\n"
		      "add rule " T " svc-firewall-check ip daddr . meta l4proto . th dport @" SVC_FW_IPS4
		      " drop comment \"not in loadBalancerSourceRanges\"\n"
		      "add rule " T " svc-firewall-check ip6 daddr . meta l4proto . th dport @" SVC_FW_IPS6
		      " drop comment \"not in loadBalancerSourceRanges\"\n"
		      "add chain " T
		      " svc-fw-prerouting { type filter hook prerouting priority -110; policy accept; }\n"
		      "flush chain " T " svc-fw-prerouting\n"
		      "add rule " T " svc-fw-prerouting ct state new jump svc-firewall-check\n"
		      "add chain " T " svc-fw-output { type filter hook output priority -110; policy accept; }\n"
		      "flush chain " T " svc-fw-output\n"
		      "add rule " T " svc-fw-output ct state new jump svc-firewall-check\n"
		      /* srcnat - 5: between pm-postrouting (srcnat - 10) and br-postrouting (srcnat) */
		      "add chain " T
		      " svc-postrouting { type nat hook postrouting priority srcnat - 5; policy accept; }\n"
		      "flush chain " T " svc-postrouting\n"
		      "add rule " T " svc-postrouting ct status dnat ip saddr . ip daddr @" SVC_HAIRPIN4
		      " masquerade fully-random comment \"Service hairpin\"\n"
		      "add rule " T " svc-postrouting ct status dnat ip6 saddr . ip6 daddr @" SVC_HAIRPIN6
		      " masquerade fully-random comment \"Service hairpin\"\n"
		      "add rule " T " svc-postrouting meta mark & " SVC_MASQ_MARK " == 0 return\n"
		      "add rule " T " svc-postrouting meta mark set meta mark xor " SVC_MASQ_MARK
		      " masquerade fully-random comment \"Service hairpin and external traffic\"\n");
	/*
	 * The Service range (kube-proxy's nftables cluster-ips-check): what is still addressed to it
	 * after the DNAT had no Service entry. Every packet, not only ct state new: a leak of a
	 * reply-less stream is still a leak.
	 */
	nft_batch_put(b, "add chain " T " svc-cluster-ips-check\nflush chain " T " svc-cluster-ips-check\n");
	for (size_t i = 0; i < n_ranges; i++) {
		bool v4 = ranges[i].addr.family == AF_INET;
		char p[IP_PREFIX_STRLEN];

		if (ranges[i].addr.family != AF_INET && ranges[i].addr.family != AF_INET6)
			continue;
		ip_prefix_to_string(&ranges[i], p);
		/* only inside the range: whatever else the set might hold is no business of this chain */
		nft_batch_put(b,
			      "add rule " T
			      " svc-cluster-ips-check %s daddr %s %s daddr @%s meta l4proto tcp reject with "
			      "tcp reset comment \"ClusterIP: port not defined\"\n"
			      "add rule " T
			      " svc-cluster-ips-check %s daddr %s %s daddr @%s reject comment \"ClusterIP: port not defined\"\n"
			      "add rule " T
			      " svc-cluster-ips-check %s daddr %s drop comment \"no Service holds this address\"\n",
			      v4 ? "ip" : "ip6", p, v4 ? "ip" : "ip6", v4 ? SVC_CLUSTER_IPS4 : SVC_CLUSTER_IPS6,
			      v4 ? "ip" : "ip6", p, v4 ? "ip" : "ip6", v4 ? SVC_CLUSTER_IPS4 : SVC_CLUSTER_IPS6,
			      v4 ? "ip" : "ip6", p);
	}
	/* filter - 5: the no-endpoint reject comes before any filter chain of policy or plugins */
	static const char *const hooks[] = { "input", "forward", "output" };
	for (size_t i = 0; i < ELEMENTSOF(hooks); i++) {
		nft_batch_put(b,
			      "add chain " T
			      " svc-filter-%s { type filter hook %s priority filter - 5; policy accept; }\n"
			      "flush chain " T " svc-filter-%s\n"
			      "add rule " T " svc-filter-%s ct state new jump svc-endpoints-check\n",
			      hooks[i], hooks[i], hooks[i], hooks[i]);
		if (i > 0) /* forwarded pod traffic and node-local clients */
			nft_batch_put(b, "add rule " T " svc-filter-%s jump svc-cluster-ips-check\n", hooks[i]);
	}
}

/* a counted map whose elements ks read: kept, changed element by element */
static bool map_kept(const SvcKernelState *ks, const char *map) {
	const SvcKernelMap *m = svc_map_counted(map) ? svc_kernel_map(ks, map) : NULL;

	return m && m->readable;
}

static void flush_map(NftBatch *b, const SvcKernelState *ks, const char *map) {
	if (!map_kept(ks, map))
		nft_batch_put(b, "flush map " T " %s\n", map);
}

void service_render_flush_maps(NftBatch *b, const SvcKernelState *ks) {
	for (size_t i = 0; i < ELEMENTSOF(svc_maps); i++)
		flush_map(b, ks, svc_maps[i][0]);
	for (size_t p = 0; p < ELEMENTSOF(eps_protos); p++)
		for (uint32_t i = 0; i < SVC_EPS_BUCKETS; i++) {
			flush_map(b, ks, eps_map(AF_INET, eps_protos[p], i));
			flush_map(b, ks, eps_map(AF_INET6, eps_protos[p], i));
		}
	nft_batch_put(b, "flush set " T " " SVC_HAIRPIN4 "\nflush set " T " " SVC_HAIRPIN6 "\n"
			 "flush set " T " " SVC_CLUSTER_IPS4 "\nflush set " T " " SVC_CLUSTER_IPS6 "\n"
			 "flush set " T " " SVC_FW_IPS4 "\nflush set " T " " SVC_FW_IPS6 "\n"
			 "flush set " T " " SVC_FW_ALLOW4 "\nflush set " T " " SVC_FW_ALLOW6 "\n");
}

static bool unit_has_counter(const ServiceUnit *u, const char *name) {
	return u && bsearch_safe(&name, u->counters, u->n_counters, sizeof(char *), str_ptr_cmp);
}

static void render_rules(NftBatch *b, const SvcChain *c) {
	const char *p = c->rules ?: "";

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t) (nl - p) : strlen(p);

		if (len > 0)
			nft_batch_put(b, "add rule " T " %s %.*s\n", c->name, (int) len, p);
		p += len + (nl ? 1 : 0);
	}
}

/* elements: render element adds (else the caller does, all at once); flush: with full, flush every
 * chain of new before its rules (else the caller flushed what the kernel held) */
static void unit_diff(NftBatch *b, const ServiceUnit *old, const ServiceUnit *new, bool full, bool elements,
		      bool flush) {
	/* 1. elements gone or changed */
	for (size_t i = 0; old && i < old->n_elems; i++) {
		const SvcElem *e = &old->elems[i], *n = unit_elem(new, e);

		if (!is_shared_set(e->map) && (!n || !streq(n->value, e->value)))
			nft_batch_put(b, "delete element " T " %s { %s }\n", e->map, e->key);
	}
	/* 2. sets new (affinity), then chains new or changed: declared first, since rules may jump
	 * between them and name the sets */
	for (size_t i = 0; new &&i < new->n_sets; i++)
		if (full || !service_unit_set(old, new->sets[i].name))
			nft_batch_put(b, "add set " T " %s %s\n", new->sets[i].name, new->sets[i].decl);
	/* named counters (idempotent: one the kernel holds keeps its count) */
	for (size_t i = 0; new &&i < new->n_counters; i++)
		if (full || !unit_has_counter(old, new->counters[i]))
			nft_batch_put(b, "add counter " T " %s\n", new->counters[i]);
	for (size_t i = 0; new &&i < new->n_chains; i++) {
		const SvcChain *c = &new->chains[i], *o = service_unit_chain(old, c->name);

		if (!o || full)
			nft_batch_put(b, "add chain " T " %s\n", c->name);
		if ((o && !streq_ptr(o->rules, c->rules)) || (full && flush))
			nft_batch_put(b, "flush chain " T " %s\n", c->name);
	}
	for (size_t i = 0; new &&i < new->n_chains; i++) {
		const SvcChain *c = &new->chains[i], *o = service_unit_chain(old, c->name);

		if (!o || full || !streq_ptr(o->rules, c->rules))
			render_rules(b, c);
	}
	/* 3. elements new or changed (the chains they jump to exist now; an element of an endpoint
	 * map is checked against each rule bound to the map, a rule binding it walks all of its
	 * elements: after the rules is the cheaper order when many come at once) */
	for (size_t i = 0; new &&elements &&i < new->n_elems; i++) {
		const SvcElem *e = &new->elems[i], *o = unit_elem(old, e);

		if (is_shared_set(e->map))
			continue;
		if (!o || !streq(o->value, e->value) || full)
			nft_batch_put(b, "add element " T " %s { %s : %s }\n", e->map, e->key, e->value);
	}
	/* 4. chains gone: emptied first (they may jump to each other), then deleted */
	for (size_t i = 0; old && i < old->n_chains; i++)
		if (!service_unit_chain(new, old->chains[i].name))
			nft_batch_put(b, "flush chain " T " %s\n", old->chains[i].name);
	for (size_t i = 0; old && i < old->n_chains; i++)
		if (!service_unit_chain(new, old->chains[i].name))
			nft_batch_put(b, "delete chain " T " %s\n", old->chains[i].name);
	/* 5. sets and counters gone: no rule names them any more */
	for (size_t i = 0; old && i < old->n_counters; i++)
		if (!unit_has_counter(new, old->counters[i]))
			nft_batch_put(b, "delete counter " T " %s\n", old->counters[i]);
	for (size_t i = 0; old && i < old->n_sets; i++)
		if (!service_unit_set(new, old->sets[i].name))
			nft_batch_put(b, "delete set " T " %s\n", old->sets[i].name);
}

void service_render_unit_diff(NftBatch *b, const ServiceUnit *old, const ServiceUnit *new, bool full) {
	unit_diff(b, old, new, full, true, true);
}

static int elem_ptr_cmp(const void *a, const void *b) {
	return elem_cmp(*(const SvcElem *const *) a, *(const SvcElem *const *) b);
}

/* "add element" of one set or map, its elements in one command */
static void render_elements(NftBatch *b, const char *map, const SvcElem *const *v, size_t n) {
	nft_batch_put(b, "add element " T " %s { ", map);
	for (size_t i = 0; i < n; i++)
		if (v[i]->value[0])
			nft_batch_put(b, "%s%s : %s", i ? ", " : "", v[i]->key, v[i]->value);
		else
			nft_batch_put(b, "%s%s", i ? ", " : "", v[i]->key);
	nft_batch_put(b, " }\n");
}

int service_render_full(NftBatch *b, ServiceUnit *const *units, size_t n, SvcRefs *refs, const SvcKernelState *ks) {
	_cleanup_free_ const SvcElem **v = NULL;
	size_t n_v = 0, total;
	int r;

	for (size_t i = 0; i < n; i++)
		unit_diff(b, NULL, units[i], true, false, false);
	/* elements: one command per map, the shared sets' from the counts */
	for (size_t i = 0; i < n; i++) {
		r = svc_refs_update(refs, NULL, units[i], NULL);
		if (r < 0)
			return r;
	}
	total = refs->n;
	for (size_t i = 0; i < n; i++)
		total += units[i]->n_elems;
	v = calloc(total + 1, sizeof(SvcElem *));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < units[i]->n_elems; k++)
			if (!is_shared_set(units[i]->elems[k].map))
				v[n_v++] = &units[i]->elems[k];
	for (size_t i = 0; i < refs->cap; i++)
		if (refs->v[i].key && refs->v[i].key != REF_TOMB)
			v[n_v++] = &refs->v[i].elem;
	qsort_safe(v, n_v, sizeof(SvcElem *), elem_ptr_cmp);
	/* the counted maps kept: what the kernel holds and no unit wants (as it is) deleted first, and
	 * only what it lacks added; the rest keeps its counters */
	for (size_t i = 0; ks && i < ks->n_maps; i++) {
		const SvcKernelMap *m = &ks->maps[i];

		if (!m->readable)
			continue;
		for (size_t k = 0; k < m->n_elems; k++) {
			SvcElem key = { .map = m->name, .key = m->elems[k].key };
			const SvcElem *kp = &key, *const * w;

			w = bsearch_safe(&kp, v, n_v, sizeof(SvcElem *), elem_ptr_cmp);
			if (!w || !streq((*w)->value, m->elems[k].value) || !m->elems[k].keep)
				nft_batch_put(b, "delete element " T " %s { %s }\n", m->name, m->elems[k].key);
		}
	}
	if (ks) {
		size_t w = 0;

		for (size_t i = 0; i < n_v; i++) {
			const SvcKernelElem *ke =
					map_kept(ks, v[i]->map)
							? svc_kernel_elem(svc_kernel_map(ks, v[i]->map), v[i]->key)
							: NULL;

			if (!ke || !streq(ke->value, v[i]->value) || !ke->keep)
				v[w++] = v[i];
		}
		n_v = w;
	}
	for (size_t i = 0, j; i < n_v; i = j) {
		for (j = i + 1; j < n_v && streq(v[j]->map, v[i]->map); j++)
			;
		render_elements(b, v[i]->map, v + i, j - i);
	}
	return 0;
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
	/* endpoints no longer chosen: entries DNATed to them */
	for (size_t i = 0; old && i < old->n_targets; i++) {
		const char *t = old->targets[i];
		char ip[IP_ADDR_STRLEN + 1];
		unsigned port;
		ServiceCtFilter f = { .nat_only = true };

		if (!startswith(t, "udp/") ||
		    bsearch_safe(&t, new ? new->targets : NULL, new ? new->n_targets : 0, sizeof(char *), str_ptr_cmp))
			continue;
		if (sscanf(t + 4, "%46[^/]/%u", ip, &port) != 2 || ip_addr_parse(ip, &f.reply_src) < 0)
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
