/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-ipam.h"

/* One address in use and who holds it (borrowed requests). Kept sorted by address. */
typedef struct LbUse {
	IpAddr ip;
	const LbRequest **holders;
	size_t n_holders;
} LbUse;

typedef struct LbUsed {
	LbUse *v;
	size_t n, cap;
} LbUsed;

/* The assignment under construction for one request. */
typedef struct Work {
	const LbRequest *req;
	LbAssignment *out;
	bool have[2]; /* per index into req->families */
	bool refused;
} Work;

const char *lb_state_to_string(LbState s) {
	static const char *const names[_LB_STATE_MAX] = {
		[LB_ASSIGNED] = "assigned",
		[LB_PENDING] = "pending",
		[LB_REFUSED] = "refused",
	};

	return s < _LB_STATE_MAX ? names[s] : "?";
}

static bool pool_open(const LbPool *p, const LbRequest *r) {
	return !p->service_selector || label_selector_matches(p->service_selector, &r->labels);
}

const LbPool *lb_pool_of(const LbPool *pools, size_t n_pools, const IpAddr *ip) {
	for (size_t i = 0; i < n_pools; i++)
		for (size_t k = 0; k < pools[i].n_cidrs; k++)
			if (pools[i].cidrs[k].addr.family == ip->family && ip_prefix_contains(&pools[i].cidrs[k], ip))
				return &pools[i];
	return NULL;
}

/* The first pool open to r that holds ip, or NULL. */
static const LbPool *open_pool_of(const LbPool *pools, size_t n_pools, const LbRequest *r, const IpAddr *ip) {
	for (size_t i = 0; i < n_pools; i++)
		for (size_t k = 0; k < pools[i].n_cidrs; k++)
			if (pools[i].cidrs[k].addr.family == ip->family && ip_prefix_contains(&pools[i].cidrs[k], ip) &&
			    pool_open(&pools[i], r))
				return &pools[i];
	return NULL;
}

/* The range automatic assignment uses: an IPv4 CIDR shorter than /31 without its network and
 * broadcast address. False if nothing is left. */
static bool auto_range(const IpPrefix *c, IpAddr *ret_first, IpAddr *ret_last) {
	IpAddr first = ip_prefix_first(c), last = ip_prefix_last(c);

	if (c->addr.family == AF_INET && c->len < 31 && (!ip_addr_next(&first, &first) || !ip_addr_prev(&last, &last)))
		return false;
	*ret_first = first;
	*ret_last = last;
	return ip_addr_cmp(&first, &last) <= 0;
}

uint64_t lb_pool_size(const LbPool *p) {
	uint64_t total = 0;

	for (size_t k = 0; k < p->n_cidrs; k++) {
		IpAddr first, last;
		int64_t d;

		if (!p->auto_assign || !auto_range(&p->cidrs[k], &first, &last))
			continue;
		d = ip_addr_distance(&first, &last);
		if (d == INT64_MAX || total > UINT64_MAX - (uint64_t) d - 1)
			return UINT64_MAX;
		total += (uint64_t) d + 1;
	}
	return total;
}

/* Index of the first use >= ip (n if none). */
static size_t used_lower_bound(const LbUsed *u, const IpAddr *ip) {
	size_t lo = 0, hi = u->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ip_addr_cmp(&u->v[mid].ip, ip) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static LbUse *used_find(const LbUsed *u, const IpAddr *ip) {
	size_t i = used_lower_bound(u, ip);

	return i < u->n && ip_addr_equal(&u->v[i].ip, ip) ? &u->v[i] : NULL;
}

static int used_add(LbUsed *u, const IpAddr *ip, const LbRequest *r) {
	size_t i = used_lower_bound(u, ip);
	const LbRequest **h;
	LbUse *use;

	if (i == u->n || !ip_addr_equal(&u->v[i].ip, ip)) {
		if (u->n == u->cap) {
			size_t cap = u->cap ? u->cap * 2 : 16;
			LbUse *v = reallocarray(u->v, cap, sizeof(LbUse));

			if (!v)
				return -ENOMEM;
			u->v = v;
			u->cap = cap;
		}
		memmove(u->v + i + 1, u->v + i, (u->n - i) * sizeof(LbUse));
		u->v[i] = (LbUse) { .ip = *ip };
		u->n++;
	}
	use = &u->v[i];
	h = reallocarray(use->holders, use->n_holders + 1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	use->holders = h;
	use->holders[use->n_holders++] = r;
	return 0;
}

static void used_remove(LbUsed *u, const IpAddr *ip, const LbRequest *r) {
	LbUse *use = used_find(u, ip);

	if (!use)
		return;
	for (size_t k = 0; k < use->n_holders; k++)
		if (use->holders[k] == r) {
			use->holders[k] = use->holders[--use->n_holders];
			break;
		}
}

static void used_done(LbUsed *u) {
	for (size_t i = 0; i < u->n; i++)
		free(u->v[i].holders);
	free(u->v);
}

static bool ports_disjoint(const LbRequest *a, const LbRequest *b) {
	for (size_t i = 0; i < a->n_ports; i++)
		for (size_t k = 0; k < b->n_ports; k++)
			if (a->ports[i].protocol == b->ports[k].protocol && a->ports[i].port == b->ports[k].port)
				return false;
	return true;
}

/* Whether r may have ip given who holds it now. *ret_holder: one holder in the way, if any. */
static bool ip_free_for(const LbUsed *u, const IpAddr *ip, const LbRequest *r, const LbRequest **ret_holder) {
	const LbUse *use = used_find(u, ip);

	*ret_holder = NULL;
	if (!use)
		return true;
	for (size_t k = 0; k < use->n_holders; k++) {
		const LbRequest *h = use->holders[k];

		if (h == r)
			continue;
		if (isempty(r->sharing_key) || !streq_ptr(h->sharing_key, r->sharing_key) || !ports_disjoint(h, r)) {
			*ret_holder = h;
			return false;
		}
	}
	return true;
}

static int take(LbUsed *u, Work *w, size_t fi, const IpAddr *ip, const LbPool *pool) {
	int r = used_add(u, ip, w->req);

	if (r < 0)
		return r;
	w->have[fi] = true;
	w->out->ips[fi] = *ip;
	w->out->pools[fi] = pool->name;
	return 0;
}

static const IpAddr *find_family(const IpAddr *v, size_t n, int family) {
	for (size_t i = 0; i < n; i++)
		if (v[i].family == family)
			return &v[i];
	return NULL;
}

/* Round 1: keep what status says the Service holds, where it still may. */
static int round_holders(const LbPool *pools, size_t n_pools, LbUsed *u, Work *w) {
	const LbRequest *r = w->req;

	for (size_t fi = 0; fi < r->n_families; fi++) {
		const IpAddr *cur = find_family(r->current, r->n_current, r->families[fi]);
		const IpAddr *want = find_family(r->requested, r->n_requested, r->families[fi]);
		const LbRequest *holder;
		const LbPool *pool;

		if (!cur || (want && !ip_addr_equal(cur, want)))
			continue;
		pool = open_pool_of(pools, n_pools, r, cur);
		if (pool && ip_free_for(u, cur, r, &holder)) {
			int k = take(u, w, fi, cur, pool);

			if (k < 0)
				return k;
		}
	}
	return 0;
}

/* Round 2: what the Service asks for by name. */
static int round_askers(const LbPool *pools, size_t n_pools, LbUsed *u, Work *w) {
	const LbRequest *r = w->req;
	char buf[IP_ADDR_STRLEN];

	for (size_t i = 0; i < r->n_requested; i++) {
		const IpAddr *want = &r->requested[i];
		const LbRequest *holder;
		const LbPool *pool;
		size_t fi;

		for (fi = 0; fi < r->n_families; fi++)
			if (r->families[fi] == want->family)
				break;
		if (fi == r->n_families) {
			snprintf(w->out->reason, sizeof(w->out->reason),
				 "requested address %s is not of the Service's ipFamilies",
				 ip_addr_to_string(want, buf));
			w->out->cause = LB_CAUSE_BAD_REQUEST;
			w->refused = true;
			return 0;
		}
		if (w->have[fi])
			continue;
		pool = open_pool_of(pools, n_pools, r, want);
		if (!pool) {
			const LbPool *any = lb_pool_of(pools, n_pools, want);

			if (any)
				snprintf(w->out->reason, sizeof(w->out->reason),
					 "requested address %s is in pool %s, whose ServiceSelector does not select this "
					 "Service",
					 ip_addr_to_string(want, buf), any->name);
			else
				snprintf(w->out->reason, sizeof(w->out->reason),
					 "requested address %s is outside every LoadBalancer pool",
					 ip_addr_to_string(want, buf));
			w->out->cause = LB_CAUSE_OUTSIDE_POOLS;
			w->refused = true;
			return 0;
		}
		if (!ip_free_for(u, want, r, &holder)) {
			snprintf(w->out->reason, sizeof(w->out->reason), "requested address %s is held by %s%s",
				 ip_addr_to_string(want, buf), holder->key,
				 isempty(r->sharing_key) ? ""
				 : streq_ptr(holder->sharing_key, r->sharing_key)
						 ? " (same sharing key, but a port is used by both)"
						 : " (another sharing key)");
			w->out->cause = LB_CAUSE_IN_USE;
			w->refused = true;
			return 0;
		}
		int k = take(u, w, fi, want, pool);
		if (k < 0)
			return k;
	}
	return 0;
}

/* An address a Service with the same sharing key already holds, in a pool open to r. */
static bool find_shared(const LbPool *pools, size_t n_pools, const LbUsed *u, const LbRequest *r, int family,
			IpAddr *ret, const LbPool **ret_pool) {
	if (isempty(r->sharing_key))
		return false;
	for (size_t i = 0; i < u->n; i++) {
		const LbRequest *holder;
		const LbPool *pool;

		if (u->v[i].ip.family != family || u->v[i].n_holders == 0 ||
		    !streq_ptr(u->v[i].holders[0]->sharing_key, r->sharing_key))
			continue;
		pool = open_pool_of(pools, n_pools, r, &u->v[i].ip);
		if (pool && pool->auto_assign && ip_free_for(u, &u->v[i].ip, r, &holder)) {
			*ret = u->v[i].ip;
			*ret_pool = pool;
			return true;
		}
	}
	return false;
}

/* The lowest address of [first, last] nobody holds (holders that left keep no claim). */
static bool find_unused(const LbUsed *u, const IpAddr *first, const IpAddr *last, IpAddr *ret) {
	IpAddr c = *first;

	for (size_t i = used_lower_bound(u, first); ip_addr_cmp(&c, last) <= 0; i++) {
		if (i == u->n || ip_addr_cmp(&u->v[i].ip, &c) > 0) {
			*ret = c;
			return true;
		}
		if (ip_addr_equal(&u->v[i].ip, &c) && u->v[i].n_holders > 0) {
			if (!ip_addr_next(&c, &c))
				return false;
		} else if (ip_addr_equal(&u->v[i].ip, &c)) {
			*ret = c; /* released this pass: free */
			return true;
		}
	}
	return false;
}

/* Whether a pool with AutoAssign and an address of the family has a selector that picks r. */
static bool has_dedicated_pool(const LbPool *pools, size_t n_pools, const LbRequest *r, int family) {
	for (size_t p = 0; p < n_pools; p++) {
		if (!pools[p].service_selector || !pools[p].auto_assign || !pool_open(&pools[p], r))
			continue;
		for (size_t k = 0; k < pools[p].n_cidrs; k++)
			if (pools[p].cidrs[k].addr.family == family)
				return true;
	}
	return false;
}

/* Round 3: the next free address for every family still without one. */
static int round_auto(const LbPool *pools, size_t n_pools, LbUsed *u, Work *w) {
	const LbRequest *r = w->req;

	for (size_t fi = 0; fi < r->n_families; fi++) {
		const LbPool *pool = NULL;
		bool found, dedicated;
		IpAddr ip;

		if (w->have[fi])
			continue;
		found = find_shared(pools, n_pools, u, r, r->families[fi], &ip, &pool);
		dedicated = has_dedicated_pool(pools, n_pools, r, r->families[fi]);
		for (size_t p = 0; p < n_pools && !found; p++) {
			if ((pools[p].service_selector != NULL) != dedicated || !pools[p].auto_assign ||
			    !pool_open(&pools[p], r))
				continue;
			for (size_t k = 0; k < pools[p].n_cidrs && !found; k++) {
				IpAddr first, last;

				if (pools[p].cidrs[k].addr.family != r->families[fi] ||
				    !auto_range(&pools[p].cidrs[k], &first, &last))
					continue;
				found = find_unused(u, &first, &last, &ip);
				pool = &pools[p];
			}
		}
		if (found) {
			int k = take(u, w, fi, &ip, pool);

			if (k < 0)
				return k;
		} else if (!w->out->reason[0])
			snprintf(w->out->reason, sizeof(w->out->reason),
				 "no free IPv%c address in a pool open to this Service (with AutoAssign)",
				 r->families[fi] == AF_INET6 ? '6' : '4');
	}
	return 0;
}

static int work_cmp(const void *x, const void *y) {
	const LbRequest *a = ((const Work *) x)->req, *b = ((const Work *) y)->req;

	if (a->created != b->created)
		return a->created < b->created ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* Compacts the addresses a Work got into out->ips (family order kept) and sets the state. */
static void finish(LbUsed *u, Work *w) {
	LbAssignment *o = w->out;
	size_t n = 0;

	if (w->refused) {
		for (size_t fi = 0; fi < w->req->n_families; fi++)
			if (w->have[fi])
				used_remove(u, &o->ips[fi], w->req);
		o->state = LB_REFUSED;
		o->n_ips = 0;
		return;
	}
	for (size_t fi = 0; fi < w->req->n_families; fi++)
		if (w->have[fi]) {
			o->ips[n] = o->ips[fi];
			o->pools[n] = o->pools[fi];
			n++;
		}
	o->n_ips = n;
	o->state = n == w->req->n_families && n > 0 ? LB_ASSIGNED : LB_PENDING;
	o->cause = o->state == LB_PENDING ? LB_CAUSE_EXHAUSTED : LB_CAUSE_NONE;
	if (o->state == LB_PENDING && !o->reason[0])
		snprintf(o->reason, sizeof(o->reason), "the Service lists no IP family");
	if (o->state == LB_ASSIGNED)
		o->reason[0] = '\0';
}

int lb_ipam_assign(const LbPool *pools, size_t n_pools, const LbRequest *reqs, size_t n_reqs, LbAssignment *ret) {
	_cleanup_free_ Work *w = calloc(MAX(n_reqs, (size_t) 1), sizeof(Work));
	LbUsed u = {};
	int r = 0;

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < n_reqs; i++) {
		ret[i] = (LbAssignment) {};
		w[i] = (Work) { .req = &reqs[i], .out = &ret[i] };
	}
	qsort(w, n_reqs, sizeof(Work), work_cmp);
	for (size_t i = 0; i < n_reqs && r >= 0; i++)
		r = round_holders(pools, n_pools, &u, &w[i]);
	for (size_t i = 0; i < n_reqs && r >= 0; i++)
		r = round_askers(pools, n_pools, &u, &w[i]);
	/* A Service refused what it asked for keeps nothing, before anyone is given a new address. */
	for (size_t i = 0; i < n_reqs && r >= 0; i++)
		if (w[i].refused)
			finish(&u, &w[i]);
	for (size_t i = 0; i < n_reqs && r >= 0; i++)
		if (!w[i].refused)
			r = round_auto(pools, n_pools, &u, &w[i]);
	for (size_t i = 0; i < n_reqs && r >= 0; i++)
		if (!w[i].refused)
			finish(&u, &w[i]);
	used_done(&u);
	return r;
}
