/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/policy/policy-compile.h"
#include "shared/nft/nft-names.h"

#define T NFT_TABLE_INET
#define new0(t, n) ((t *) calloc((n), sizeof(t)))
#define SWAP_TWO(a, b)                                                                                                 \
	do {                                                                                                           \
		typeof(a) _swap_tmp = (a);                                                                             \
		(a) = (b);                                                                                             \
		(b) = _swap_tmp;                                                                                       \
	} while (0)

/* ---- growable string vector ---- */

typedef struct StrVec {
	char **v;
	size_t n, cap;
	bool oom;
} StrVec;

static void sv_add(StrVec *s, const char *fmt, ...) _printf_(2, 3);
static void sv_add(StrVec *s, const char *fmt, ...) {
	va_list ap;
	char *x;

	if (s->oom)
		return;
	va_start(ap, fmt);
	if (vasprintf(&x, fmt, ap) < 0)
		x = NULL;
	va_end(ap);
	if (!x) {
		s->oom = true;
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		char **v = reallocarray(s->v, cap, sizeof(char *));

		if (!v) {
			free(x);
			s->oom = true;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
}

static void sv_done(StrVec *s) {
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (StrVec) {};
}

static int cmp_str(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void sv_sort_unique(StrVec *s) {
	size_t j = 0;

	if (s->n == 0)
		return;
	qsort_safe(s->v, s->n, sizeof(char *), cmp_str);
	for (size_t i = 1; i < s->n; i++) {
		if (streq(s->v[i], s->v[j]))
			free(s->v[i]);
		else
			s->v[++j] = s->v[i];
	}
	s->n = j + 1;
}

/* ---- names ---- */

static uint64_t fnv64(const char *a, const char *b) {
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *p = a; p && *p; p++)
		h = (h ^ (uint8_t) *p) * 0x100000001b3ULL;
	h = (h ^ '/') * 0x100000001b3ULL;
	for (const char *p = b; p && *p; p++)
		h = (h ^ (uint8_t) *p) * 0x100000001b3ULL;
	return h;
}

/* 12 hex digits: 48 bits, no collision to expect below millions of policies. */
static void policy_tag(const KubeNetworkPolicy *p, char buf[static 13]) {
	snprintf(buf, 13, "%012llx", (unsigned long long) (fnv64(p->meta.namespace, p->meta.name) >> 16));
}

/* ---- the ruleset being built ---- */

/* A set shared by every rule that needs the same one (see shared_set()). */
typedef struct SharedSet {
	uint64_t h;
	char *key;  /* what its elements are a function of */
	char *name; /* its object's name */
} SharedSet;

typedef struct Builder {
	PolicyObject *objs;
	size_t n, cap;
	bool oom;
	SharedSet *shared; /* open addressing on h; n_shared < cap_shared / 2 */
	size_t n_shared, cap_shared;
	unsigned hash_bits; /* of a shared set's name (PolicyInput.set_hash_bits) */
} Builder;

static void b_shared_free(Builder *b) {
	for (size_t i = 0; i < b->cap_shared; i++) {
		free(b->shared[i].key);
		free(b->shared[i].name);
	}
	free(b->shared);
	b->shared = NULL;
	b->n_shared = b->cap_shared = 0;
}

/* Takes the items of `items` (sorted+unique for sets/maps, as given for chains). */
static void b_add(Builder *b, PolicyObjectKind kind, StrVec *items, const char *decl, const char *fmt, ...)
		_printf_(5, 6);
static void b_add(Builder *b, PolicyObjectKind kind, StrVec *items, const char *decl, const char *fmt, ...) {
	PolicyObject o = { .kind = kind };
	va_list ap;

	if (items->oom)
		b->oom = true;
	if (b->oom) {
		sv_done(items);
		return;
	}
	if (kind == POLICY_OBJ_SET || kind == POLICY_OBJ_MAP)
		sv_sort_unique(items);
	va_start(ap, fmt);
	if (vasprintf(&o.name, fmt, ap) < 0)
		o.name = NULL;
	va_end(ap);
	o.decl = strdup(decl);
	if (!o.name || !o.decl ||
	    (b->n == b->cap &&
	     !(b->objs = reallocarray(b->objs, b->cap = b->cap ? b->cap * 2 : 16, sizeof(PolicyObject))))) {
		free(o.name);
		free(o.decl);
		sv_done(items);
		b->oom = true;
		return;
	}
	o.items = items->v;
	o.n_items = items->n;
	*items = (StrVec) {};
	b->objs[b->n++] = o;
}

/* A named counter: `items` the policies ("ns/name") whose packets it counts; rule -1 a class's
 * default deny. */
static void b_add_counter(Builder *b, StrVec *items, bool ingress, int rule, const char *comment, const char *fmt, ...)
		_printf_(6, 7);
static void b_add_counter(Builder *b, StrVec *items, bool ingress, int rule, const char *comment, const char *fmt,
			  ...) {
	_cleanup_free_ char *name = NULL, *decl = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&name, fmt, ap);
	va_end(ap);
	if (r < 0 || asprintf(&decl, "{ comment \"%s\"; }", comment) < 0) {
		name = decl = NULL;
		sv_done(items);
		b->oom = true;
		return;
	}
	b_add(b, POLICY_OBJ_COUNTER, items, decl, "%s", name);
	if (!b->oom) {
		b->objs[b->n - 1].ingress = ingress;
		b->objs[b->n - 1].rule = rule;
	}
}

/* ---- shared sets ---- */

/*
 * A rule's peer, port and named-port sets are named by what their elements are a function of
 * (the set's *key*), not by the (policy, direction, rule) that needs them: every rule, of any
 * policy and either direction, that needs the same set refers to one object,
 * <prefix><16 hex digits of a 64-bit hash of the key><suffix>. 1,000 policies with 70 distinct
 * peers then cost 70 sets, not 1,000 copies.
 *
 * The key is the selector (the peers as written: namespace or namespaceSelector, podSelector,
 * ipBlock; the family), not the elements: naming by the elements would make any change of
 * membership (one pod relabelled, created or gone) a different set, so the diff would re-create
 * the whole set and rewrite every chain that uses it. Named by selector, a membership change stays
 * an element add/delete, and only a policy edit that changes a rule's selector moves its rules to
 * another set (the chain is rewritten, the old set deleted once no rule uses it). Equal keys give
 * equal elements because the elements are a pure function of the key and the cluster; the key
 * encoding is injective (selector keys and values, namespaces, port names and CIDRs cannot hold
 * the separators " ,;()!=").
 *
 * Two different keys never share a name: on a hash collision (same hash, other key) the set gets
 * the name of the rule that first needed it appended (`fallback`: <tag>-<dir><rule>), which is
 * unique in the ruleset. Which key keeps the short name depends on the order policies are
 * compiled in, so across compilations a name can in that (2^-64) case change key: its elements
 * are then diffed like any other and only the set's comment is stale (the kernel ignores a
 * comment when a set is added again).
 *
 * Returns 1 with *ret_name if the set was added already (the caller adds nothing), 0 with
 * *ret_name if the caller must add it under that name now, -ENOMEM (b->oom set; also for a NULL
 * key, which is how the key builders report ENOMEM). *ret_name is the builder's.
 */
static uint64_t set_hash(const char *key, unsigned bits) {
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t) *p) * 0x100000001b3ULL;
	return bits > 0 && bits < 64 ? h & ((UINT64_C(1) << bits) - 1) : h;
}

static size_t shared_slot(uint64_t h, size_t cap) {
	return (size_t) ((h ^ (h >> 31)) * 0x9e3779b97f4a7c15ULL >> 17) & (cap - 1);
}

static int shared_set(Builder *b, const char *prefix, const char *suffix, const char *key, const char *fallback,
		      const char **ret_name) {
	bool collided = false;
	char *name = NULL;
	uint64_t h;
	size_t i;
	int r;

	if (!key)
		b->oom = true;
	if (b->oom)
		return -ENOMEM;
	h = set_hash(key, b->hash_bits);
	if ((b->n_shared + 1) * 2 > b->cap_shared) {
		size_t cap = b->cap_shared ? b->cap_shared * 2 : 64;
		SharedSet *v = calloc(cap, sizeof(SharedSet));

		if (!v) {
			b->oom = true;
			return -ENOMEM;
		}
		for (size_t k = 0; k < b->cap_shared; k++) {
			if (!b->shared[k].name)
				continue;
			for (i = shared_slot(b->shared[k].h, cap); v[i].name; i = (i + 1) & (cap - 1))
				;
			v[i] = b->shared[k];
		}
		free(b->shared);
		b->shared = v;
		b->cap_shared = cap;
	}
	for (i = shared_slot(h, b->cap_shared); b->shared[i].name; i = (i + 1) & (b->cap_shared - 1)) {
		if (b->shared[i].h != h)
			continue;
		if (streq(b->shared[i].key, key)) {
			*ret_name = b->shared[i].name;
			return 1;
		}
		collided = true;
	}
	if (collided)
		r = asprintf(&name, "%s%016llx-%s%s%s", prefix, (unsigned long long) h, fallback, *suffix ? "-" : "",
			     suffix);
	else
		r = asprintf(&name, "%s%016llx%s", prefix, (unsigned long long) h, suffix);
	if (r < 0 || !(b->shared[i].key = strdup(key))) {
		free(r < 0 ? NULL : name);
		b->oom = true;
		return -ENOMEM;
	}
	b->shared[i].h = h;
	b->shared[i].name = name;
	b->n_shared++;
	*ret_name = name;
	return 0;
}

/* A set's comment: its key, cut to what nftables takes. */
static void key_comment(const char *key, char buf[static NFT_COMMENT_MAX + 1]) {
	size_t n = strlen(key);

	if (n > NFT_COMMENT_MAX)
		snprintf(buf, NFT_COMMENT_MAX + 1, "%.*s ...", NFT_COMMENT_MAX - 4, key);
	else
		memcpy(buf, key, n + 1);
	for (char *p = buf; *p; p++)
		if (*p == '"' || *p == '\\')
			*p = '?';
}

/* "*" for a selector that matches every pod (podSelector absent or {}), else its requirements. */
static void put_selector(NftBatch *f, const LabelSelector *s) {
	if (!s || label_selector_is_everything(s)) {
		nft_batch_put(f, "*");
		return;
	}
	for (size_t i = 0; i < s->n; i++) {
		const LabelRequirement *q = &s->reqs[i];

		if (i > 0)
			nft_batch_put(f, ",");
		if (q->op == LABEL_OP_EXISTS)
			nft_batch_put(f, "%s", q->key);
		else if (q->op == LABEL_OP_DOES_NOT_EXIST)
			nft_batch_put(f, "!%s", q->key);
		else {
			nft_batch_put(f, "%s %s (", q->key, q->op == LABEL_OP_IN ? "in" : "notin");
			for (size_t k = 0; k < q->n_values; k++)
				nft_batch_put(f, "%s%s", k ? "," : "", q->values[k]);
			nft_batch_put(f, ")");
		}
	}
}

/* Joins the (sorted, unique) items with sep after head; NULL on ENOMEM. */
static char *join_key(const char *head, StrVec *parts, const char *sep) {
	NftBatch f;

	if (parts->oom)
		return NULL;
	sv_sort_unique(parts);
	if (nft_batch_begin(&f) < 0)
		return NULL;
	nft_batch_put(&f, "%s", head);
	for (size_t i = 0; i < parts->n; i++)
		nft_batch_put(&f, "%s%s", i ? sep : "", parts->v[i]);
	return nft_batch_steal(&f);
}

/* What a rule's peer set for `family` holds: "peers4: P; P; ..." with P one of
 *   pods ns=<policy namespace> sel=<podSelector>     (no namespaceSelector)
 *   pods nss=<namespaceSelector> sel=<podSelector>
 *   block <cidr> [except <cidr>,...]                   (only blocks and excepts of the family)
 * sorted: the set is their union. */
static char *peers_key(const KubeNetworkPolicy *pol, const KubePolicyRule *rule, int family) {
	StrVec parts = {};
	char *key;

	for (size_t k = 0; k < rule->n_peers; k++) {
		const KubePolicyPeer *peer = &rule->peers[k];
		_cleanup_free_ char *buf = NULL;
		NftBatch part, *f = &part;

		if (peer->has_ip_block && peer->cidr.addr.family != family)
			continue; /* adds nothing to this family's set */
		if (nft_batch_begin(f) < 0) {
			parts.oom = true;
			break;
		}
		if (peer->has_ip_block) {
			StrVec ex = {};
			char a[IP_PREFIX_STRLEN];

			nft_batch_put(f, "block %s", ip_prefix_to_string(&peer->cidr, a));
			for (size_t e = 0; e < peer->n_except; e++)
				if (peer->except[e].addr.family == family)
					sv_add(&ex, "%s", ip_prefix_to_string(&peer->except[e], a));
			sv_sort_unique(&ex);
			for (size_t e = 0; e < ex.n; e++)
				nft_batch_put(f, "%s%s", e ? "," : " except ", ex.v[e]);
			parts.oom |= ex.oom;
			sv_done(&ex);
		} else {
			if (peer->namespace_selector) {
				nft_batch_put(f, "%s", "pods nss=");
				put_selector(f, peer->namespace_selector);
			} else
				nft_batch_put(f, "pods ns=%s", pol->meta.namespace);
			nft_batch_put(f, "%s", " sel=");
			put_selector(f, peer->pod_selector);
		}
		buf = nft_batch_steal(f);
		if (!buf) {
			parts.oom = true;
			break;
		}
		sv_add(&parts, "%s", buf);
	}
	key = join_key(family == AF_INET6 ? "peers6: " : "peers4: ", &parts, "; ");
	sv_done(&parts);
	return key;
}

/* ---- model helpers ---- */

bool policy_pod_active(const KubePod *p) {
	return p && !p->host_network && p->n_ips > 0 && p->phase != KUBE_POD_SUCCEEDED && p->phase != KUBE_POD_FAILED;
}

static int cmp_ns_key(const void *key, const void *elem) {
	return strcmp(key, (*(const KubeNamespace *const *) elem)->meta.name);
}

static int cmp_ns(const void *a, const void *b) {
	return strcmp((*(const KubeNamespace *const *) a)->meta.name, (*(const KubeNamespace *const *) b)->meta.name);
}

LabelSet policy_ns_labels(const PolicyInput *in, const char *ns) {
	if (in->namespaces_sorted) {
		const KubeNamespace *const *n =
				bsearch_safe(ns, in->namespaces, in->n_namespaces, sizeof(*n), cmp_ns_key);

		return n ? kube_object_labels(&(*n)->meta) : (LabelSet) {};
	}
	for (size_t i = 0; i < in->n_namespaces; i++)
		if (streq(in->namespaces[i]->meta.name, ns))
			return kube_object_labels(&in->namespaces[i]->meta);
	return (LabelSet) {};
}

bool policy_selects(const KubeNetworkPolicy *pol, const KubePod *p) {
	LabelSet l = kube_object_labels(&p->meta);

	return streq(pol->meta.namespace, p->meta.namespace) && label_selector_matches(pol->pod_selector, &l);
}

/* A pod peer (not ipBlock) of a policy in pol_ns matches pod p. */
bool policy_peer_matches_pod(const PolicyInput *in, const char *pol_ns, const KubePolicyPeer *peer, const KubePod *p) {
	LabelSet pl = kube_object_labels(&p->meta);

	if (peer->has_ip_block)
		return false;
	if (peer->namespace_selector) {
		LabelSet nl = policy_ns_labels(in, p->meta.namespace);

		if (!label_selector_matches(peer->namespace_selector, &nl))
			return false;
	} else if (!streq(pol_ns, p->meta.namespace))
		return false;
	if (!peer->pod_selector)
		return true; /* namespaceSelector alone: every pod of those namespaces */
	return label_selector_matches(peer->pod_selector, &pl);
}

/* ---- address ranges ---- */

typedef struct Range {
	IpAddr lo, hi;
} Range;

typedef struct RangeVec {
	Range *v;
	size_t n, cap;
	bool oom;
} RangeVec;

static void rv_add(RangeVec *r, const IpAddr *lo, const IpAddr *hi) {
	if (r->oom)
		return;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		Range *v = reallocarray(r->v, cap, sizeof(Range));

		if (!v) {
			r->oom = true;
			return;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (Range) { *lo, *hi };
}

static void prefix_range(const IpPrefix *p, IpAddr *lo, IpAddr *hi) {
	unsigned bytes = ip_addr_size(p->addr.family);

	*lo = *hi = p->addr;
	for (unsigned bit = p->len; bit < bytes * 8; bit++) {
		lo->bytes[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
		hi->bytes[bit / 8] |= (uint8_t) (0x80u >> (bit % 8));
	}
}

static int cmp_range(const void *a, const void *b) {
	const Range *x = a, *y = b;

	return ip_addr_cmp(&x->lo, &y->lo);
}

/* cidr minus every except, appended to r. */
static void rv_add_block(RangeVec *r, const KubePolicyPeer *peer, int family) {
	RangeVec cur = {}, next = {};
	IpAddr lo, hi;

	if (peer->cidr.addr.family != family)
		return;
	prefix_range(&peer->cidr, &lo, &hi);
	rv_add(&cur, &lo, &hi);
	for (size_t e = 0; e < peer->n_except; e++) {
		IpAddr elo, ehi, t;

		if (peer->except[e].addr.family != family)
			continue;
		prefix_range(&peer->except[e], &elo, &ehi);
		next.n = 0;
		for (size_t i = 0; i < cur.n; i++) {
			Range x = cur.v[i];

			if (ip_addr_cmp(&ehi, &x.lo) < 0 || ip_addr_cmp(&elo, &x.hi) > 0) {
				rv_add(&next, &x.lo, &x.hi);
				continue;
			}
			if (ip_addr_cmp(&elo, &x.lo) > 0 && ip_addr_prev(&elo, &t))
				rv_add(&next, &x.lo, &t);
			if (ip_addr_cmp(&ehi, &x.hi) < 0 && ip_addr_next(&ehi, &t))
				rv_add(&next, &t, &x.hi);
		}
		SWAP_TWO(cur, next);
	}
	for (size_t i = 0; i < cur.n; i++)
		rv_add(r, &cur.v[i].lo, &cur.v[i].hi);
	r->oom |= cur.oom || next.oom;
	free(cur.v);
	free(next.v);
}

/* Sorted, overlapping ranges merged (an interval set refuses overlaps), as set elements. */
static void rv_render(RangeVec *r, StrVec *out) {
	size_t j = 0;

	if (r->oom)
		out->oom = true;
	if (r->n == 0)
		return;
	qsort_safe(r->v, r->n, sizeof(Range), cmp_range);
	for (size_t i = 1; i < r->n; i++) {
		if (ip_addr_cmp(&r->v[i].lo, &r->v[j].hi) <= 0) {
			if (ip_addr_cmp(&r->v[i].hi, &r->v[j].hi) > 0)
				r->v[j].hi = r->v[i].hi;
		} else
			r->v[++j] = r->v[i];
	}
	r->n = j + 1;
	for (size_t i = 0; i < r->n; i++) {
		char a[IP_ADDR_STRLEN], z[IP_ADDR_STRLEN];

		ip_addr_to_string(&r->v[i].lo, a);
		if (ip_addr_equal(&r->v[i].lo, &r->v[i].hi))
			sv_add(out, "%s", a);
		else
			sv_add(out, "%s-%s", a, ip_addr_to_string(&r->v[i].hi, z));
	}
}

/* ---- ports ---- */

static const char *proto_nft(uint8_t p) {
	return p == KUBE_PROTO_UDP ? "udp" : p == KUBE_PROTO_SCTP ? "sctp" : "tcp";
}

/* Numbered ports of a rule as proto . port(-range) elements, merged per protocol. */
static void render_ports(const KubePolicyRule *rule, StrVec *out) {
	for (uint8_t proto = KUBE_PROTO_TCP; proto <= KUBE_PROTO_SCTP; proto++) {
		struct {
			unsigned lo, hi;
		} v[64];
		size_t n = 0;

		for (size_t i = 0; i < rule->n_ports; i++) {
			const KubePolicyPort *pp = &rule->ports[i];
			unsigned lo, hi;

			if (pp->protocol != proto || pp->port.name)
				continue;
			lo = pp->port.number ? pp->port.number : 0;
			hi = pp->port.number ? (pp->end_port > lo ? pp->end_port : lo) : 65535;
			if (n == ELEMENTSOF(v)) { /* more than 64 ports of one protocol in one rule: all of them */
				n = 1;
				v[0].lo = 0;
				v[0].hi = 65535;
				break;
			}
			v[n].lo = lo;
			v[n].hi = hi;
			n++;
		}
		/* insertion sort + merge: n is small */
		for (size_t i = 1; i < n; i++)
			for (size_t k = i; k > 0 && v[k].lo < v[k - 1].lo; k--)
				SWAP_TWO(v[k], v[k - 1]);
		for (size_t i = 0; i < n;) {
			unsigned lo = v[i].lo, hi = v[i].hi;

			for (i++; i < n && v[i].lo <= hi; i++)
				if (v[i].hi > hi)
					hi = v[i].hi;
			if (lo == hi)
				sv_add(out, "%s . %u", proto_nft(proto), lo);
			else
				sv_add(out, "%s . %u-%u", proto_nft(proto), lo, hi);
		}
	}
}

static bool rule_has_numbered(const KubePolicyRule *r) {
	for (size_t i = 0; i < r->n_ports; i++)
		if (!r->ports[i].port.name)
			return true;
	return false;
}

static bool rule_has_named(const KubePolicyRule *r) {
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i].port.name)
			return true;
	return false;
}

/* pod IP . proto . port for each named port of the rule that pod p declares. */
static void render_named(const KubePolicyRule *rule, const KubePod *p, int family, StrVec *out) {
	for (size_t i = 0; i < rule->n_ports; i++) {
		const KubePolicyPort *pp = &rule->ports[i];

		if (!pp->port.name)
			continue;
		for (size_t c = 0; c < p->n_ports; c++) {
			if (!p->ports[c].name || !streq(p->ports[c].name, pp->port.name) ||
			    p->ports[c].protocol != pp->protocol)
				continue;
			for (size_t k = 0; k < p->n_ips; k++) {
				char a[IP_ADDR_STRLEN];

				if (p->ips[k].family != family)
					continue;
				sv_add(out, "%s . %s . %u", ip_addr_to_string(&p->ips[k], a), proto_nft(pp->protocol),
				       p->ports[c].port);
			}
		}
	}
}

/* ---- per policy and direction ---- */

static const int families[2] = { AF_INET, AF_INET6 };
static const char *const fam_kw[2] = { "ip", "ip6" };
static const char *const fam_type[2] = { "ipv4_addr", "ipv6_addr" };

/* What a rule's named-port set for `family` holds: the named ports (protocol/name) resolved
 * against the destination pods, which are the pods the policy selects on this node for ingress
 * and every pod for egress: "named4 in ns=<ns> sel=<podSelector>: tcp/http,udp/dns" or
 * "named4 out: ...". */
static char *named_key(const KubeNetworkPolicy *pol, const KubePolicyRule *rule, bool ingress, int family) {
	_cleanup_free_ char *head = NULL;
	StrVec parts = {};
	NftBatch hb, *f = &hb;
	char *key;

	for (size_t i = 0; i < rule->n_ports; i++)
		if (rule->ports[i].port.name)
			sv_add(&parts, "%s/%s", proto_nft(rule->ports[i].protocol), rule->ports[i].port.name);
	if (nft_batch_begin(f) < 0) {
		sv_done(&parts);
		return NULL;
	}
	nft_batch_put(f, "named%c %s", family == AF_INET6 ? '6' : '4', ingress ? "in" : "out");
	if (ingress) {
		nft_batch_put(f, " ns=%s sel=", pol->meta.namespace);
		put_selector(f, pol->pod_selector);
	}
	nft_batch_put(f, "%s", ": ");
	head = nft_batch_steal(f);
	if (!head) {
		sv_done(&parts);
		return NULL;
	}
	key = join_key(head, &parts, ",");
	sv_done(&parts);
	return key;
}

static void compile_policy_dir(Builder *b, const PolicyInput *in, const KubeNetworkPolicy *pol, bool ingress) {
	const KubePolicyRule *rules = ingress ? pol->ingress_rules : pol->egress_rules;
	size_t n_rules = ingress ? pol->n_ingress : pol->n_egress;
	const char *d = ingress ? "in" : "out", *dirname = ingress ? "ingress" : "egress";
	const char *peer_kw = ingress ? "saddr" : "daddr";
	StrVec chain = {};
	char tag[13];

	policy_tag(pol, tag);
	for (size_t r = 0; r < n_rules && !b->oom; r++) {
		const KubePolicyRule *rule = &rules[r];
		bool numbered = rule_has_numbered(rule), named = rule_has_named(rule);
		const char *ports_set = NULL;
		char cmt[NFT_COMMENT_MAX + 1], fallback[64];

		snprintf(cmt, sizeof(cmt), "%s/%s %s rule %zu", pol->meta.namespace, pol->meta.name, dirname, r);
		snprintf(fallback, sizeof(fallback), "%s-%s%zu", tag, d, r);
		{
			StrVec who = {};

			sv_add(&who, "%s/%s", pol->meta.namespace, pol->meta.name);
			b_add_counter(b, &who, ingress, (int) r, cmt, POLICY_COUNTER_PREFIX "%s-%s%zu", tag, d, r);
		}
		if (numbered) {
			_cleanup_free_ char *key = NULL;
			StrVec ports = {};

			/* the elements are the spec's ports: they are the key */
			render_ports(rule, &ports);
			key = join_key("ports: ", &ports, ",");
			if (shared_set(b, "np-pt-", "", key, fallback, &ports_set) == 0) {
				char decl[256], kc[NFT_COMMENT_MAX + 1];

				key_comment(key, kc);
				snprintf(decl, sizeof(decl),
					 "{ type inet_proto . inet_service; flags interval; comment \"%s\"; }", kc);
				b_add(b, POLICY_OBJ_SET, &ports, decl, "%s", ports_set);
			}
			sv_done(&ports);
			if (!ports_set)
				break;
		}
		for (size_t f = 0; f < 2; f++) {
			char peer[192] = "";

			if (rule->n_peers > 0) {
				_cleanup_free_ char *key = peers_key(pol, rule, families[f]);
				const char *set = NULL;
				int k;

				k = shared_set(b, "np-p-", f ? "6" : "4", key, fallback, &set);
				if (k < 0)
					break;
				if (k == 0) { /* first user: its elements */
					RangeVec ranges = {};
					StrVec els = {};
					char decl[256], kc[NFT_COMMENT_MAX + 1];

					for (size_t j = 0; j < rule->n_peers; j++)
						if (rule->peers[j].has_ip_block)
							rv_add_block(&ranges, &rule->peers[j], families[f]);
					for (size_t i = 0; i < in->n_pods; i++) {
						const KubePod *p = in->pods[i];

						if (!policy_pod_active(p))
							continue;
						for (size_t j = 0; j < rule->n_peers; j++)
							if (policy_peer_matches_pod(in, pol->meta.namespace,
										    &rule->peers[j], p)) {
								for (size_t a = 0; a < p->n_ips; a++)
									if (p->ips[a].family == families[f])
										rv_add(&ranges, &p->ips[a], &p->ips[a]);
								break;
							}
					}
					rv_render(&ranges, &els);
					free(ranges.v);
					key_comment(key, kc);
					snprintf(decl, sizeof(decl), "{ type %s; flags interval; comment \"%s\"; }",
						 fam_type[f], kc);
					b_add(b, POLICY_OBJ_SET, &els, decl, "%s", set);
				}
				snprintf(peer, sizeof(peer), "%s %s @%s ", fam_kw[f], peer_kw, set);
			}
			/* Without peers, the rules that do not name an address serve both families at once. */
			if (rule->n_ports == 0 && (rule->n_peers > 0 || f == 0))
				sv_add(&chain,
				       "%scounter name \"" POLICY_COUNTER_PREFIX "%s-%s%zu\" accept comment \"%s\"",
				       peer, tag, d, r, cmt);
			if (numbered && (rule->n_peers > 0 || f == 0))
				sv_add(&chain,
				       "%smeta l4proto . th dport @%s counter name \"" POLICY_COUNTER_PREFIX
				       "%s-%s%zu\" accept comment \"%s\"",
				       peer, ports_set, tag, d, r, cmt);
			if (named) {
				_cleanup_free_ char *key = named_key(pol, rule, ingress, families[f]);
				const char *set = NULL;
				int k;

				k = shared_set(b, "np-n-", f ? "6" : "4", key, fallback, &set);
				if (k < 0)
					break;
				if (k == 0) {
					StrVec els = {};
					char decl[256], kc[NFT_COMMENT_MAX + 1];

					/* resolved against the destination pod: the selected local pod for
					 * ingress, any pod of the cluster for egress (the peer set narrows it) */
					for (size_t i = 0; i < in->n_pods; i++) {
						const KubePod *p = in->pods[i];

						if (!policy_pod_active(p))
							continue;
						if (ingress &&
						    (!streq_ptr(p->node_name, in->node) || !policy_selects(pol, p)))
							continue;
						render_named(rule, p, families[f], &els);
					}
					key_comment(key, kc);
					snprintf(decl, sizeof(decl),
						 "{ type %s . inet_proto . inet_service; comment \"%s\"; }",
						 fam_type[f], kc);
					b_add(b, POLICY_OBJ_SET, &els, decl, "%s", set);
				}
				sv_add(&chain,
				       "%s%s daddr . meta l4proto . th dport @%s counter name "
				       "\"" POLICY_COUNTER_PREFIX "%s-%s%zu\" accept comment \"%s\"",
				       peer, fam_kw[f], set, tag, d, r, cmt);
			}
		}
	}
	{
		char decl[256];

		snprintf(decl, sizeof(decl), "{ comment \"%s/%s %s\"; }", pol->meta.namespace, pol->meta.name, dirname);
		b_add(b, POLICY_OBJ_CHAIN, &chain, decl, "np-%s-%s", tag, d);
	}
}

/* ---- classes: the distinct lists of policies selecting a local pod ---- */

typedef struct Class {
	char *key; /* tags of the policies, in input order */
	StrVec jumps;
	StrVec pols; /* "ns/name" of the policies isolating its pods */
	char names[NFT_COMMENT_MAX + 1];
	const char *ns; /* of its pods (a policy selects pods of its own namespace) */
} Class;

static int cmp_policy(const void *a, const void *b) {
	const KubeNetworkPolicy *x = *(const KubeNetworkPolicy *const *) a, *y = *(const KubeNetworkPolicy *const *) b;
	int c = strcmp(x->meta.namespace, y->meta.namespace);

	return c ? c : strcmp(x->meta.name, y->meta.name);
}

static void compile_direction(Builder *b, const PolicyInput *in, const KubeNetworkPolicy **pols, bool ingress) {
	const char *d = ingress ? "in" : "out";
	StrVec vmap[2] = {}, base = {};
	bool *used = calloc(in->n_policies + 1, sizeof(bool));
	char *key = malloc(in->n_policies * 13 + 1);
	Class *classes = NULL;
	size_t n_classes = 0;

	if (!used || !key) {
		b->oom = true;
		goto out;
	}
	for (size_t i = 0; i < in->n_pods; i++) {
		const KubePod *p = in->pods[i];
		char names[NFT_COMMENT_MAX + 1] = "";
		size_t klen = 0, c;

		if (!policy_pod_active(p) || !streq_ptr(p->node_name, in->node))
			continue;
		for (size_t k = 0; k < in->n_policies; k++) {
			const KubeNetworkPolicy *pol = pols[k];

			if (!(ingress ? pol->ingress : pol->egress) || !policy_selects(pol, p))
				continue;
			used[k] = true;
			policy_tag(pol, key + klen);
			klen += 12;
			/* the longest comment that carries the names is "ingress deny, isolated by NAMES"
			 * (26 + names): keep names + " ..." within what nftables accepts */
			if (strlen(names) + strlen(pol->meta.name) + 2 < sizeof(names) - 30) {
				if (names[0])
					strcat(names, " ");
				strcat(names, pol->meta.name);
			} else if (!strstr(names, "..."))
				strcat(names, " ...");
		}
		key[klen] = 0;
		if (klen == 0)
			continue; /* not isolated in this direction */
		for (c = 0; c < n_classes; c++)
			if (streq(classes[c].key, key))
				break;
		if (c == n_classes) {
			Class *v = reallocarray(classes, n_classes + 1, sizeof(Class));

			if (!v) {
				b->oom = true;
				goto out;
			}
			classes = v;
			classes[c] = (Class) { .key = strdup(key) };
			if (!classes[c].key)
				b->oom = true;
			n_classes++;
			snprintf(classes[c].names, sizeof(classes[c].names), "%s", names);
			classes[c].ns = p->meta.namespace;
			for (size_t k = 0; k < in->n_policies; k++) {
				char tag[13];

				if (!(ingress ? pols[k]->ingress : pols[k]->egress) || !policy_selects(pols[k], p))
					continue;
				policy_tag(pols[k], tag);
				sv_add(&classes[c].jumps, "jump np-%s-%s comment \"%s/%s\"", tag, d,
				       pols[k]->meta.namespace, pols[k]->meta.name);
				sv_add(&classes[c].pols, "%s/%s", pols[k]->meta.namespace, pols[k]->meta.name);
			}
		}
		for (size_t a = 0; a < p->n_ips; a++) {
			char ip[IP_ADDR_STRLEN];
			int f = p->ips[a].family == AF_INET6;

			sv_add(&vmap[f], "%s comment \"%s/%s\" : jump np-cls-%012llx-%s",
			       ip_addr_to_string(&p->ips[a], ip), p->meta.namespace, p->meta.name,
			       (unsigned long long) (fnv64(classes[c].key, d) >> 16), d);
		}
	}
	for (size_t c = 0; c < n_classes; c++) {
		char decl[256], cmt[NFT_COMMENT_MAX + 1];
		unsigned long long h = fnv64(classes[c].key, d) >> 16;

		/* rate limited so a flood costs nothing more than the drop */
		if (in->log_drops && in->log_nflog)
			/* nfnetlink_log: weftd reads the group; the prefix ends in "#<class>-<dir>", which
			 * weftd maps back to the class's policies (policy-drops.h); at most 124 characters */
			sv_add(&classes[c].jumps,
			       "limit rate 50/second burst 20 packets log prefix \"weft-np %.20s %s deny by %.60s: "
			       "#%012llx-%s\" group %u",
			       classes[c].ns, ingress ? "ingress" : "egress", classes[c].names, h, d,
			       (unsigned) in->log_group);
		else if (in->log_drops)
			/* kernel log (nf_log): "weft-np x ingress deny by a-from-y deny: IN=... SRC=..." */
			sv_add(&classes[c].jumps,
			       "limit rate 50/second burst 20 packets log prefix \"weft-np %.20s %s deny by %.60s: \"",
			       classes[c].ns, ingress ? "ingress" : "egress", classes[c].names);
		sv_add(&classes[c].jumps,
		       "counter name \"" POLICY_DENY_COUNTER_PREFIX
		       "%012llx-%s\" drop comment \"%s deny, isolated by %s\"",
		       h, d, ingress ? "ingress" : "egress", classes[c].names);
		snprintf(cmt, sizeof(cmt), "%s deny, isolated by %s", ingress ? "ingress" : "egress", classes[c].names);
		b_add_counter(b, &classes[c].pols, ingress, -1, cmt, POLICY_DENY_COUNTER_PREFIX "%012llx-%s", h, d);
		snprintf(decl, sizeof(decl), "{ comment \"isolated %s by %s\"; }", ingress ? "ingress" : "egress",
			 classes[c].names);
		b_add(b, POLICY_OBJ_CHAIN, &classes[c].jumps, decl, "np-cls-%012llx-%s", h, d);
	}
	for (size_t k = 0; k < in->n_policies; k++)
		if (used[k])
			compile_policy_dir(b, in, pols[k], ingress);
	if (n_classes > 0 || true) {
		const char *kw = ingress ? "daddr" : "saddr";

		b_add(b, POLICY_OBJ_MAP, &vmap[0], "{ type ipv4_addr : verdict; }", "np-%s4",
		      ingress ? "ingress" : "egress");
		b_add(b, POLICY_OBJ_MAP, &vmap[1], "{ type ipv6_addr : verdict; }", "np-%s6",
		      ingress ? "ingress" : "egress");
		sv_add(&base, "ct state established,related accept");
		sv_add(&base, "ip %s vmap @np-%s4", kw, ingress ? "ingress" : "egress");
		sv_add(&base, "ip6 %s vmap @np-%s6", kw, ingress ? "ingress" : "egress");
		b_add(b, POLICY_OBJ_CHAIN, &base,
		      ingress ? "{ type filter hook forward priority filter - 10; policy accept; }"
			      : "{ type filter hook forward priority filter - 20; policy accept; }",
		      "%s", ingress ? POLICY_CHAIN_INGRESS : POLICY_CHAIN_EGRESS);
	}
out:
	for (size_t c = 0; c < n_classes; c++) {
		free(classes[c].key);
		sv_done(&classes[c].jumps);
		sv_done(&classes[c].pols);
	}
	free(classes);
	sv_done(&vmap[0]);
	sv_done(&vmap[1]);
	sv_done(&base);
	free(used);
	free(key);
}

static int cmp_obj(const void *a, const void *b) {
	return strcmp(((const PolicyObject *) a)->name, ((const PolicyObject *) b)->name);
}

int policy_compile(const PolicyInput *in, PolicyRuleset **ret) {
	_cleanup_free_ const KubeNetworkPolicy **pols = NULL;
	_cleanup_free_ const KubeNamespace **nss = NULL;
	PolicyInput sorted;
	PolicyRuleset *rs;
	Builder b = {};

	rs = new0(PolicyRuleset, 1);
	if (!rs)
		return -ENOMEM;
	if (in->n_policies == 0) { /* no policy: nothing of ours in the kernel, the datapath as without */
		*ret = rs;
		return 0;
	}
	pols = new0(const KubeNetworkPolicy *, in->n_policies);
	if (!pols) {
		free(rs);
		return -ENOMEM;
	}
	if (in->n_policies > 0) /* memcpy's source may not be NULL, even for 0 bytes */
		memcpy(pols, in->policies, in->n_policies * sizeof(*pols));
	qsort_safe(pols, in->n_policies, sizeof(*pols), cmp_policy);
	/* namespaceSelector peers look a namespace up per (peer, pod): sorted, that is a bsearch */
	nss = new0(const KubeNamespace *, in->n_namespaces + 1);
	if (!nss) {
		free(rs);
		return -ENOMEM;
	}
	if (in->n_namespaces > 0)
		memcpy(nss, in->namespaces, in->n_namespaces * sizeof(*nss));
	qsort_safe(nss, in->n_namespaces, sizeof(*nss), cmp_ns);
	sorted = *in;
	sorted.namespaces = nss;
	sorted.namespaces_sorted = true;
	b.hash_bits = in->set_hash_bits;
	compile_direction(&b, &sorted, pols, true);
	compile_direction(&b, &sorted, pols, false);
	b_shared_free(&b);
	rs->objs = b.objs;
	rs->n = b.n;
	if (b.oom) {
		policy_ruleset_free(rs);
		return -ENOMEM;
	}
	qsort_safe(rs->objs, rs->n, sizeof(PolicyObject), cmp_obj);
	*ret = rs;
	return 0;
}

PolicyRuleset *policy_ruleset_free(PolicyRuleset *r) {
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->n; i++) {
		free(r->objs[i].name);
		free(r->objs[i].decl);
		for (size_t k = 0; k < r->objs[i].n_items; k++)
			free(r->objs[i].items[k]);
		free(r->objs[i].items);
	}
	free(r->objs);
	free(r);
	return NULL;
}

const PolicyObject *policy_ruleset_find(const PolicyRuleset *r, const char *name) {
	PolicyObject key = { .name = (char *) name };

	if (!r || r->n == 0)
		return NULL;
	return bsearch_safe(&key, r->objs, r->n, sizeof(PolicyObject), cmp_obj);
}

size_t policy_ruleset_size(const PolicyRuleset *r, size_t *ret_rules, size_t *ret_elements) {
	size_t rules = 0, els = 0;

	for (size_t i = 0; r && i < r->n; i++) {
		if (r->objs[i].kind == POLICY_OBJ_CHAIN)
			rules += r->objs[i].n_items;
		else if (r->objs[i].kind != POLICY_OBJ_COUNTER)
			els += r->objs[i].n_items;
	}
	if (ret_rules)
		*ret_rules = rules;
	if (ret_elements)
		*ret_elements = els;
	return rules + els;
}

/* ---- rendering ---- */

static const char *kind_kw(PolicyObjectKind k) {
	return k == POLICY_OBJ_SET       ? "set"
	       : k == POLICY_OBJ_MAP     ? "map"
	       : k == POLICY_OBJ_COUNTER ? "counter"
					 : "chain";
}

/* The key of a set/map element: up to " comment " or " : ". */
static void put_key(NftBatch *b, const char *item) {
	const char *c = strstr(item, " comment \""), *m = strstr(item, " : ");
	const char *end = c && (!m || c < m) ? c : m;

	nft_batch_put(b, "%.*s", end ? (int) (end - item) : (int) strlen(item), item);
}

static bool has_item(const PolicyObject *o, const char *item) {
	return o && bsearch_safe(&item, o->items, o->n_items, sizeof(char *), cmp_str);
}

static bool same_items(const PolicyObject *a, const PolicyObject *b) {
	if (a->n_items != b->n_items)
		return false;
	for (size_t i = 0; i < a->n_items; i++)
		if (!streq(a->items[i], b->items[i]))
			return false;
	return true;
}

static bool in_strv(char *const *l, const char *s) {
	for (; l && *l; l++)
		if (streq(*l, s))
			return true;
	return false;
}

static bool is_map_name(const char *s) {
	return streq(s, POLICY_MAP_INGRESS4) || streq(s, POLICY_MAP_INGRESS6) || streq(s, POLICY_MAP_EGRESS4) ||
	       streq(s, POLICY_MAP_EGRESS6);
}

static bool is_counter_name(const char *s) {
	return startswith(s, POLICY_COUNTER_PREFIX) || startswith(s, POLICY_DENY_COUNTER_PREFIX);
}

/* Counters: added when new (a stale one keeps its value: `add` of an existing counter is a no-op). */
static bool emit_counters(NftBatch *b, const PolicyRuleset *old, const PolicyRuleset *new) {
	bool any = false;

	for (size_t i = 0; new &&i < new->n; i++) {
		const PolicyObject *n = &new->objs[i];

		if (n->kind != POLICY_OBJ_COUNTER || policy_ruleset_find(old, n->name))
			continue;
		nft_batch_put(b, "add counter " T " %s %s\n", n->name, n->decl);
		any = true;
	}
	return any;
}

/* Sets or maps: new ones whole, known ones by element. Deletes before adds: a map key whose
 * verdict changes is deleted and added again. */
static bool emit_elements(NftBatch *b, const PolicyRuleset *old, const PolicyRuleset *new, PolicyObjectKind kind,
			  char *const *stale_sets) {
	bool any = false;

	for (size_t i = 0; new &&i < new->n; i++) {
		const PolicyObject *n = &new->objs[i], *o = policy_ruleset_find(old, n->name);
		bool stale = in_strv(stale_sets, n->name);

		if (n->kind != kind)
			continue;
		if (!o) {
			nft_batch_put(b, "add %s " T " %s %s\n", kind_kw(n->kind), n->name, n->decl);
			if (stale)
				nft_batch_put(b, "flush %s " T " %s\n", kind_kw(n->kind), n->name);
			any = true;
		} else if (!same_items(o, n)) {
			bool first = true;

			for (size_t k = 0; k < o->n_items; k++) {
				if (has_item(n, o->items[k]))
					continue;
				if (first)
					nft_batch_put(b, "delete element " T " %s { ", n->name);
				else
					nft_batch_put(b, ", ");
				put_key(b, o->items[k]);
				first = false;
			}
			if (!first)
				nft_batch_put(b, " }\n");
		} else
			continue;
		if (n->n_items > 0) {
			bool first = true;

			for (size_t k = 0; k < n->n_items; k++) {
				if (o && has_item(o, n->items[k]))
					continue;
				if (first)
					nft_batch_put(b, "add element " T " %s { %s", n->name, n->items[k]);
				else
					nft_batch_put(b, ", %s", n->items[k]);
				first = false;
			}
			if (!first) {
				nft_batch_put(b, " }\n");
				any = true;
			}
		}
		any = true;
	}
	return any;
}

int policy_ruleset_render_diff(const PolicyRuleset *old, const PolicyRuleset *new, char *const *stale_chains,
			       char *const *stale_sets, NftBatch *out) {
	_cleanup_(nft_batch_done) NftBatch body = {};
	NftBatch *b = &body;
	bool any = false;
	int r;

	r = nft_batch_begin(b);
	if (r < 0)
		return r;

	/* 1. Stale chains of a previous run: emptied first, so nothing refers to what goes. */
	for (char *const *s = stale_chains; s && *s; s++) {
		nft_batch_put(b, "flush chain " T " %s\n", *s);
		any = true;
	}
	/* 2. Chains that change or vanish are emptied first, for the same reason. */
	for (size_t i = 0; old && i < old->n; i++) {
		const PolicyObject *o = &old->objs[i], *n = policy_ruleset_find(new, o->name);

		if (o->kind == POLICY_OBJ_CHAIN && (!n || !same_items(o, n) || !streq(o->decl, n->decl))) {
			nft_batch_put(b, "flush chain " T " %s\n", o->name);
			any = true;
		}
	}
	/* 3. Counters and sets (rules refer to them). */
	any |= emit_counters(b, old, new);
	any |= emit_elements(b, old, new, POLICY_OBJ_SET, stale_sets);
	/* 4. Chains: declared (all of them first, since jumps refer to each other), then filled. */
	for (size_t i = 0; new &&i < new->n; i++) {
		const PolicyObject *n = &new->objs[i], *o = policy_ruleset_find(old, n->name);

		if (n->kind != POLICY_OBJ_CHAIN || (o && same_items(o, n) && streq(o->decl, n->decl)))
			continue;
		if (!o && !in_strv(stale_chains, n->name) && !strstr(n->decl, "hook"))
			nft_batch_put(b, "add chain " T " %s %s\n", n->name, n->decl);
		else if (!o && strstr(n->decl, "hook"))
			nft_batch_put(b, "add chain " T " %s %s\nflush chain " T " %s\n", n->name, n->decl, n->name);
		any = true;
	}
	/* 5. Verdict maps: their elements jump to the chains just declared. */
	any |= emit_elements(b, old, new, POLICY_OBJ_MAP, stale_sets);
	for (size_t i = 0; new &&i < new->n; i++) {
		const PolicyObject *n = &new->objs[i], *o = policy_ruleset_find(old, n->name);

		if (n->kind != POLICY_OBJ_CHAIN || (o && same_items(o, n) && streq(o->decl, n->decl)))
			continue;
		for (size_t k = 0; k < n->n_items; k++)
			nft_batch_put(b, "add rule " T " %s %s\n", n->name, n->items[k]);
	}
	/* 6. What vanished: verdict maps first (their elements jump to chains), then the chains (now
	 * empty and unreferenced), then the sets and counters their rules used. */
	for (PolicyObjectKind pass = POLICY_OBJ_MAP;; pass = pass == POLICY_OBJ_MAP     ? POLICY_OBJ_CHAIN
							     : pass == POLICY_OBJ_CHAIN ? POLICY_OBJ_SET
											: POLICY_OBJ_COUNTER) {
		for (size_t i = 0; old && i < old->n; i++) {
			const PolicyObject *o = &old->objs[i];

			if (o->kind != pass || policy_ruleset_find(new, o->name))
				continue;
			nft_batch_put(b, "delete %s " T " %s\n", kind_kw(o->kind), o->name);
			any = true;
		}
		for (char *const *s = pass == POLICY_OBJ_CHAIN ? stale_chains : stale_sets; s && *s; s++) {
			PolicyObjectKind k = pass == POLICY_OBJ_CHAIN ? POLICY_OBJ_CHAIN
					     : is_map_name(*s)        ? POLICY_OBJ_MAP
					     : is_counter_name(*s)    ? POLICY_OBJ_COUNTER
								      : POLICY_OBJ_SET;

			if (k != pass || policy_ruleset_find(new, *s) || policy_ruleset_find(old, *s))
				continue;
			nft_batch_put(b, "delete %s " T " %s\n", kind_kw(k), *s);
			any = true;
		}
		if (pass == POLICY_OBJ_COUNTER)
			break;
	}
	r = nft_batch_finish(b);
	if (r < 0)
		return r;
	if (any && body.len > 0) {
		nft_batch_add(out, "add table " T); /* the table first: a fresh node has none */
		nft_batch_append(out, body.buf, body.len);
	}
	return 0;
}

int policy_render_uninstall(const PolicyRuleset *cur, NftBatch *b) {
	_cleanup_(policy_ruleset_freep) PolicyRuleset *empty = new0(PolicyRuleset, 1);

	if (!empty)
		return -ENOMEM;
	return policy_ruleset_render_diff(cur, empty, NULL, NULL, b);
}
