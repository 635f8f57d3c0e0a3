/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/reconcile.h"

/* ---- keys and comparisons (pure) ---- */

static uint32_t route_table(const NlRoute *r) {
	return r->table == 0 ? RT_TABLE_MAIN : r->table;
}

static int addr_cmp(const IpAddr *a, const IpAddr *b) {
	return ip_addr_cmp(a, b);
}

/* Key: table, family, destination network. Not the metric: the kernel turns an IPv6 metric of
 * 0 into 1024, so a route we added would never match itself. */
static int route_key_cmp(const void *x, const void *y) {
	const NlRoute *a = x, *b = y;
	IpPrefix pa = ip_prefix_mask(&a->dst), pb = ip_prefix_mask(&b->dst);
	int c;

	if (route_table(a) != route_table(b))
		return route_table(a) < route_table(b) ? -1 : 1;
	c = addr_cmp(&pa.addr, &pb.addr);
	if (c != 0)
		return c;
	return (int) pa.len - (int) pb.len;
}

static bool route_same(const NlRoute *want, const NlRoute *have) {
	return ip_addr_equal(&want->gw, &have->gw) && (want->oif == 0 || want->oif == have->oif) &&
	       want->onlink == have->onlink && have->type == RTN_UNICAST &&
	       (!ip_addr_is_set(&want->prefsrc) || ip_addr_equal(&want->prefsrc, &have->prefsrc));
}

static int neigh_key_cmp(const void *x, const void *y) {
	const NlNeigh *a = x, *b = y;

	if (a->ifindex != b->ifindex)
		return a->ifindex < b->ifindex ? -1 : 1;
	return addr_cmp(&a->dst, &b->dst);
}

static bool neigh_same(const NlNeigh *want, const NlNeigh *have) {
	return memcmp(want->mac, have->mac, 6) == 0 && (have->state & NUD_PERMANENT);
}

static int fdb_key_cmp(const void *x, const void *y) {
	const NlNeigh *a = x, *b = y;
	int c;

	if (a->ifindex != b->ifindex)
		return a->ifindex < b->ifindex ? -1 : 1;
	c = memcmp(a->mac, b->mac, 6);
	if (c != 0)
		return c;
	return addr_cmp(&a->dst, &b->dst);
}

void reconcile_plan_done(ReconcilePlan *p) {
	free(p->del_routes);
	free(p->del_neigh);
	free(p->del_fdb);
	*p = (ReconcilePlan) {};
}

void reconcile_observed_done(ReconcileObserved *o) {
	free(o->routes);
	free(o->neigh);
	free(o->fdb);
	free(o->foreign);
	*o = (ReconcileObserved) {};
}

/* Finds the first element equal to key in a sorted array. */
static const void *lower_bound(const void *key, const void *base, size_t n, size_t size,
			       int (*cmp)(const void *, const void *)) {
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp((const char *) base + mid * size, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && cmp((const char *) base + lo * size, key) == 0)
		return (const char *) base + lo * size;
	return NULL;
}

/* Copies the elements whose used[] is false. */
static int collect_unused(const void *base, size_t n, size_t size, const bool *used, void **ret, size_t *ret_n) {
	size_t k = 0;
	char *out;

	out = calloc(n ? n : 1, size);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!used[i])
			memcpy(out + (k++) * size, (const char *) base + i * size, size);
	*ret = out;
	*ret_n = k;
	return 0;
}

int reconcile_plan(NodeObjects *desired, size_t n_desired, ReconcileObserved *obs, ReconcilePlan *ret) {
	_cleanup_free_ bool *used_r = NULL, *used_n = NULL, *used_f = NULL;
	ReconcilePlan p = {};
	void *tmp;
	int r;

	used_r = calloc(obs->n_routes + 1, sizeof(bool));
	used_n = calloc(obs->n_neigh + 1, sizeof(bool));
	used_f = calloc(obs->n_fdb + 1, sizeof(bool));
	if (!used_r || !used_n || !used_f)
		return -ENOMEM;

	/* qsort() with a NULL base is undefined even for 0 elements */
	if (obs->n_routes > 0)
		qsort(obs->routes, obs->n_routes, sizeof(NlRoute), route_key_cmp);
	if (obs->n_neigh > 0)
		qsort(obs->neigh, obs->n_neigh, sizeof(NlNeigh), neigh_key_cmp);
	if (obs->n_fdb > 0)
		qsort(obs->fdb, obs->n_fdb, sizeof(NlNeigh), fdb_key_cmp);
	if (obs->n_foreign > 0)
		qsort(obs->foreign, obs->n_foreign, sizeof(NlRoute), route_key_cmp);

	for (size_t i = 0; i < n_desired; i++) {
		NodeObjects *o = &desired[i];

		for (size_t j = 0; j < o->n_neigh; j++) {
			const NlNeigh *h = lower_bound(&o->neigh[j], obs->neigh, obs->n_neigh, sizeof(NlNeigh),
						       neigh_key_cmp);
			o->neigh_present[j] = o->neigh_replace[j] = false;
			if (h) {
				used_n[h - obs->neigh] = true;
				o->neigh_present[j] = neigh_same(&o->neigh[j], h);
				o->neigh_replace[j] = !o->neigh_present[j];
			}
			o->neigh_present[j] ? p.n_present++ : p.n_add++;
		}
		o->fdb_present = false;
		if (o->has_fdb) {
			const NlNeigh *h = lower_bound(&o->fdb, obs->fdb, obs->n_fdb, sizeof(NlNeigh), fdb_key_cmp);
			if (h) {
				used_f[h - obs->fdb] = true;
				o->fdb_present = true;
			}
			o->fdb_present ? p.n_present++ : p.n_add++;
		}
		for (size_t j = 0; j < o->n_routes; j++) {
			const NlRoute *h = lower_bound(&o->routes[j], obs->routes, obs->n_routes, sizeof(NlRoute),
						       route_key_cmp);
			o->route_present[j] = o->route_replace[j] = o->route_foreign[j] = false;
			if (!h &&
			    lower_bound(&o->routes[j], obs->foreign, obs->n_foreign, sizeof(NlRoute), route_key_cmp)) {
				/* someone else's route (the kernel's connected one, a static one): not ours to
				 * replace; reconciler_run() skips the whole node */
				o->route_foreign[j] = true;
				p.n_conflict++;
				continue;
			}
			if (h) {
				/* Duplicates under one key (same dst, other metric) are stale except one. */
				used_r[h - obs->routes] = true;
				o->route_present[j] = route_same(&o->routes[j], h);
				o->route_replace[j] = !o->route_present[j];
			}
			o->route_present[j] ? p.n_present++ : p.n_add++;
		}
	}

	r = collect_unused(obs->routes, obs->n_routes, sizeof(NlRoute), used_r, &tmp, &p.n_del_routes);
	if (r < 0)
		goto fail;
	p.del_routes = tmp;
	r = collect_unused(obs->neigh, obs->n_neigh, sizeof(NlNeigh), used_n, &tmp, &p.n_del_neigh);
	if (r < 0)
		goto fail;
	p.del_neigh = tmp;
	r = collect_unused(obs->fdb, obs->n_fdb, sizeof(NlNeigh), used_f, &tmp, &p.n_del_fdb);
	if (r < 0)
		goto fail;
	p.del_fdb = tmp;
	*ret = p;
	return 0;
fail:
	reconcile_plan_done(&p);
	return r;
}

/* ---- desired leases ---- */

void reconciler_init(Reconciler *r, Backend *b, NlSock *nl, Metrics *m, const char *self_name) {
	*r = (Reconciler) { .backend = b, .nl = nl, .metrics = m, .self_name = self_name };
}

static void desired_entry_done(DesiredNode *d) {
	free(d->key);
	node_lease_done(&d->lease);
}

static void desired_free_keys(DesiredNode *d, size_t n) {
	for (size_t i = 0; i < n; i++)
		desired_entry_done(&d[i]);
}

void reconciler_done(Reconciler *r) {
	desired_free_keys(r->nodes, r->n_nodes);
	free(r->nodes);
	r->nodes = NULL;
	r->n_nodes = r->n_alloc = 0;
}

/* Our own lease, as listed by the store: our name on our subnet. Another key with our name is
 * not us, and goes to the filter (which refuses it). */
static bool is_self(const Reconciler *r, const NodeLease *l) {
	const Backend *b = r->backend;

	if (!streq_ptr(l->node_name, r->self_name))
		return false;
	return !b || !b->have_lease || ip_prefix_equal(&l->subnet, &b->self.subnet);
}

static int desired_key_cmp(const void *x, const void *y) {
	const DesiredNode *a = x, *b = y;
	return strcmp(a->key, b->key);
}

static size_t desired_lower_bound(const Reconciler *r, const char *key) {
	size_t lo = 0, hi = r->n_nodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(r->nodes[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static DesiredNode *desired_find(const Reconciler *r, const char *key) {
	size_t j = desired_lower_bound(r, key);

	return j < r->n_nodes && streq(r->nodes[j].key, key) ? &r->nodes[j] : NULL;
}

static void update_node_metric(Reconciler *r) {
	if (r->metrics)
		r->metrics->nodes = (unsigned) r->n_nodes;
}

static int desired_entry(const NodeLease *l, DesiredNode *ret) {
	char *key = strdup(node_lease_key(l));
	NodeLease copy;

	if (!key)
		return -ENOMEM;
	if (node_lease_copy(&copy, l) < 0) {
		free(key);
		return -ENOMEM;
	}
	/* invalid_detail is static text of the parser: safe to keep */
	*ret = (DesiredNode) { .key = key, .lease = copy };
	ret->lease.key = NULL;
	return 0;
}

int reconciler_set_all(Reconciler *r, const NodeLease *nodes, size_t n) {
	_cleanup_free_ DesiredNode *nn = NULL;
	size_t k = 0;
	bool changed;
	int ret;

	nn = calloc(n ? n : 1, sizeof(DesiredNode));
	if (!nn)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (is_self(r, &nodes[i]))
			continue;
		ret = desired_entry(&nodes[i], &nn[k]);
		if (ret < 0) {
			desired_free_keys(nn, k);
			return ret;
		}
		k++;
	}
	if (k > 0)
		qsort(nn, k, sizeof(DesiredNode), desired_key_cmp);
	/* One entry per key (a store lists each key once; keep the last if not). */
	if (k > 1) {
		size_t w = 1;
		for (size_t i = 1; i < k; i++)
			if (!streq(nn[i].key, nn[w - 1].key))
				nn[w++] = nn[i];
			else {
				desired_entry_done(&nn[w - 1]);
				nn[w - 1] = nn[i];
			}
		k = w;
	}

	changed = !r->synced || k != r->n_nodes;
	for (size_t i = 0; i < k; i++) {
		DesiredNode *old = desired_find(r, nn[i].key);

		if (old && node_lease_equal(&old->lease, &nn[i].lease)) {
			/* unchanged: keep the verdicts, so nothing is logged or counted twice */
			nn[i].judged = old->judged;
			nn[i].verdict = old->verdict;
			nn[i].refused = old->refused;
			nn[i].kernel_conflict = old->kernel_conflict;
		} else
			changed = true;
	}

	reconciler_done(r);
	r->nodes = TAKE_PTR(nn);
	r->n_nodes = r->n_alloc = k;
	if (k == 0)
		r->n_alloc = 1;
	r->synced = true;
	update_node_metric(r);
	return changed;
}

int reconciler_upsert(Reconciler *r, const NodeLease *lease) {
	const char *key = node_lease_key(lease);
	DesiredNode *d;
	size_t j;
	int k;

	if (is_self(r, lease))
		return 0;
	d = desired_find(r, key);
	if (d) {
		bool same = node_lease_equal(&d->lease, lease);
		NodeLease copy;

		if (node_lease_copy(&copy, lease) < 0)
			return -ENOMEM;
		node_lease_done(&d->lease);
		d->lease = copy;
		d->lease.key = NULL;
		if (same)
			return 0;
		d->refused = false;
		return 1;
	}
	if (r->n_nodes == r->n_alloc) {
		size_t na = r->n_alloc ? r->n_alloc * 2 : 64;
		DesiredNode *nd = reallocarray(r->nodes, na, sizeof(DesiredNode));
		if (!nd)
			return -ENOMEM;
		r->nodes = nd;
		r->n_alloc = na;
	}
	j = desired_lower_bound(r, key);
	if (j < r->n_nodes)
		memmove(&r->nodes[j + 1], &r->nodes[j], (r->n_nodes - j) * sizeof(DesiredNode));
	k = desired_entry(lease, &r->nodes[j]);
	if (k < 0) {
		memmove(&r->nodes[j], &r->nodes[j + 1], (r->n_nodes - j) * sizeof(DesiredNode));
		return k;
	}
	r->n_nodes++;
	update_node_metric(r);
	return 1;
}

int reconciler_remove(Reconciler *r, const NodeLease *lease) {
	DesiredNode *d = desired_find(r, node_lease_key(lease));
	size_t j;

	if (!d)
		return 0;
	j = (size_t) (d - r->nodes);
	desired_entry_done(d);
	memmove(&r->nodes[j], &r->nodes[j + 1], (r->n_nodes - j - 1) * sizeof(DesiredNode));
	r->n_nodes--;
	update_node_metric(r);
	return 1;
}

static void count_rejected(Reconciler *r, LeaseReject why) {
	if (r->metrics && why > LEASE_ACCEPTED && why < _LEASE_REJECT_MAX)
		r->metrics->leases_rejected[why]++;
}

/* attrs: storage for what the backend publishes with our lease (f->self_mac and f->self_key point
 * into it). */
static void filter_init(const Reconciler *r, LeaseFilter *f, NodeLease *attrs) {
	const Backend *b = r->backend;

	*f = (LeaseFilter) { .self_name = r->self_name };
	if (r->network) {
		f->network = r->network->network;
		f->network6 = r->network->network6;
		f->subnet_len = r->network->subnet_len;
		f->subnet_len6 = r->network->subnet_len6;
	} else {
		/* No network config (unit tests of the table alone): any /0.. subnet is "inside". */
		f->network = (IpPrefix) { .addr.family = AF_INET, .len = 0 };
		f->network6 = (IpPrefix) { .addr.family = AF_INET6, .len = 0 };
		f->subnet_len = 24;
		f->subnet_len6 = 64;
	}
	if (!b)
		return;
	if (b->have_lease) {
		f->self_subnet = b->self.subnet;
		f->self_subnet6 = b->self.subnet6;
	}
	backend_lease_attrs(b, attrs);
	if (attrs->has_vtep_mac)
		f->self_mac = attrs->vtep_mac;
	if (attrs->has_public_key)
		f->self_key = attrs->public_key;
	f->local = b->local;
	f->n_local = b->n_local;
}

int reconciler_select(Reconciler *r) {
	_cleanup_free_ LeaseCandidate *c = NULL;
	NodeLease self_attrs = {};
	LeaseFilter f;
	size_t accepted = 0;
	int k;

	filter_init(r, &f, &self_attrs);
	c = calloc(r->n_nodes + 1, sizeof(LeaseCandidate));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_nodes; i++)
		c[i] = (LeaseCandidate) {
			.lease = &r->nodes[i].lease,
			.key = r->nodes[i].key,
			.verdict = lease_filter_check(&f, &r->nodes[i].lease, NULL),
		};
	k = lease_filter_resolve(c, r->n_nodes);
	if (k < 0)
		return k;

	for (size_t i = 0; i < r->n_nodes; i++) {
		DesiredNode *d = &r->nodes[i];
		LeaseReject v = c[i].verdict;

		if (v == LEASE_ACCEPTED)
			accepted++;
		if (d->judged && d->verdict == v)
			continue;
		if (v == LEASE_ACCEPTED) {
			if (d->judged)
				log_info("Lease %s of node %s is accepted now", d->key, d->lease.node_name ?: "");
		} else {
			_cleanup_free_ char *detail = NULL;
			const DesiredNode *w = NULL;

			if (v == LEASE_REJECT_OVERLAP || v == LEASE_REJECT_DUPLICATE_NAME ||
			    v == LEASE_REJECT_DUPLICATE_MAC || v == LEASE_REJECT_DUPLICATE_KEY)
				if (lease_filter_check(&f, &d->lease, NULL) == LEASE_ACCEPTED)
					w = &r->nodes[c[i].winner];
			if (w)
				detail = strdup_printf("conflicts with the older lease %s of node %s (%s)", w->key,
						       w->lease.node_name ?: "",
						       v == LEASE_REJECT_OVERLAP          ? "same subnet"
						       : v == LEASE_REJECT_DUPLICATE_NAME ? "same node name"
						       : v == LEASE_REJECT_DUPLICATE_MAC  ? "same VTEP MAC"
											  : "same public key");
			else
				(void) lease_filter_check(&f, &d->lease, &detail);
			log_warning("Refusing lease %s of node \"%s\": %s [%s]", d->key, d->lease.node_name ?: "",
				    detail ?: "rejected", lease_reject_to_string(v));
			count_rejected(r, v);
		}
		d->judged = true;
		d->verdict = v;
	}
	return (int) MIN(accepted, (size_t) INT_MAX);
}

/* ---- observation (netlink dumps) ---- */

#define GROW(arr, n, alloc)                                                                                            \
	({                                                                                                             \
		int _r = 0;                                                                                            \
		if ((n) == (alloc)) {                                                                                  \
			size_t _na = (alloc) ? (alloc) *2 : 256;                                                       \
			void *_p = reallocarray((arr), _na, sizeof(*(arr)));                                           \
			if (!_p)                                                                                       \
				_r = -ENOMEM;                                                                          \
			else {                                                                                         \
				(arr) = _p;                                                                            \
				(alloc) = _na;                                                                         \
			}                                                                                              \
		}                                                                                                      \
		_r;                                                                                                    \
	})

typedef struct ObserveCtx {
	ReconcileObserved *obs;
	size_t a_routes, a_neigh, a_fdb, a_foreign;
	int neigh_ifindex; /* the backend's (vxlan: the VTEP); 0 = none */
} ObserveCtx;

static int observe_route_cb(const NlRoute *rt, void *userdata) {
	ObserveCtx *c = userdata;

	if (route_table(rt) != RT_TABLE_MAIN)
		return 0;
	if (rt->protocol != WEFT_RTPROT) {
		if (GROW(c->obs->foreign, c->obs->n_foreign, c->a_foreign) < 0)
			return -ENOMEM;
		c->obs->foreign[c->obs->n_foreign++] = *rt;
		return 0;
	}
	if (GROW(c->obs->routes, c->obs->n_routes, c->a_routes) < 0)
		return -ENOMEM;
	c->obs->routes[c->obs->n_routes++] = *rt;
	return 0;
}

static int observe_neigh_cb(const NlNeigh *n, void *userdata) {
	ObserveCtx *c = userdata;

	/* Only permanent entries are ours; the kernel's own (incomplete/failed) ones come and go. */
	if (n->ifindex != c->neigh_ifindex || !(n->state & NUD_PERMANENT))
		return 0;
	if (GROW(c->obs->neigh, c->obs->n_neigh, c->a_neigh) < 0)
		return -ENOMEM;
	c->obs->neigh[c->obs->n_neigh++] = *n;
	return 0;
}

static int observe_fdb_cb(const NlNeigh *n, void *userdata) {
	ObserveCtx *c = userdata;

	if (n->ifindex != c->neigh_ifindex || !ip_addr_is_set(&n->dst))
		return 0;
	if (GROW(c->obs->fdb, c->obs->n_fdb, c->a_fdb) < 0)
		return -ENOMEM;
	c->obs->fdb[c->obs->n_fdb++] = *n;
	return 0;
}

static int reconciler_observe(Reconciler *r, ReconcileObserved *ret) {
	ReconcileObserved obs = {};
	ObserveCtx c = { .obs = &obs, .neigh_ifindex = backend_neigh_ifindex(r->backend) };
	int k;

	k = nl_route_dump(r->nl, AF_UNSPEC, 0, observe_route_cb, &c);
	if (k >= 0 && c.neigh_ifindex > 0)
		k = nl_neigh_dump(r->nl, AF_INET, c.neigh_ifindex, observe_neigh_cb, &c);
	if (k >= 0 && c.neigh_ifindex > 0)
		k = nl_neigh_dump(r->nl, AF_INET6, c.neigh_ifindex, observe_neigh_cb, &c);
	if (k >= 0 && c.neigh_ifindex > 0)
		k = nl_neigh_dump(r->nl, AF_BRIDGE, c.neigh_ifindex, observe_fdb_cb, &c);
	if (k < 0) {
		reconcile_observed_done(&obs);
		return k;
	}
	*ret = obs;
	return 0;
}

/* ---- apply ---- */

static const char *route_str(const NlRoute *rt, char buf[static 2 * IP_PREFIX_STRLEN + 8]) {
	char a[IP_PREFIX_STRLEN], g[IP_ADDR_STRLEN];

	snprintf(buf, 2 * IP_PREFIX_STRLEN + 8, "%s via %s", ip_prefix_to_string(&rt->dst, a),
		 ip_addr_is_set(&rt->gw) ? ip_addr_to_string(&rt->gw, g) : "-");
	return buf;
}

static int fail_op(Reconciler *r, MetricsOp op, int k, const char *node, const char *what) {
	if (r->metrics)
		metrics_error(r->metrics, op);
	return log_warning_errno(k, "Failed to %s %s%s%s: %m%s%s", metrics_op_to_string(op), what,
				 node ? " for node " : "", node ?: "", *nl_sock_extack(r->nl) ? " - " : "",
				 nl_sock_extack(r->nl));
}

static bool gone(int k) {
	return k == -ENOENT || k == -ESRCH || k == -ENODEV || k == -EADDRNOTAVAIL;
}

static int apply_deletes(Reconciler *r, const ReconcilePlan *p) {
	char buf[2 * IP_PREFIX_STRLEN + 8], a[IP_ADDR_STRLEN], m[18];
	int ret = 0, k;

	for (size_t i = 0; i < p->n_del_routes; i++) {
		log_info("Removing stale route %s", route_str(&p->del_routes[i], buf));
		k = nl_route_del(r->nl, &p->del_routes[i]);
		if (k < 0 && !gone(k))
			RET_GATHER(ret, fail_op(r, METRICS_OP_ROUTE_DEL, k, NULL, buf));
	}
	for (size_t i = 0; i < p->n_del_fdb; i++) {
		const NlNeigh *n = &p->del_fdb[i];
		log_info("Removing stale FDB entry %s dst %s", ether_addr_format(n->mac, m),
			 ip_addr_to_string(&n->dst, a));
		k = nl_fdb_del(r->nl, n->ifindex, n->mac, &n->dst);
		if (k < 0 && !gone(k))
			RET_GATHER(ret, fail_op(r, METRICS_OP_FDB_DEL, k, NULL, m));
	}
	for (size_t i = 0; i < p->n_del_neigh; i++) {
		const NlNeigh *n = &p->del_neigh[i];
		log_info("Removing stale neighbour %s", ip_addr_to_string(&n->dst, a));
		k = nl_neigh_del(r->nl, n->ifindex, &n->dst);
		if (k < 0 && !gone(k))
			RET_GATHER(ret, fail_op(r, METRICS_OP_NEIGH_DEL, k, NULL, a));
	}
	return ret;
}

typedef struct ApplyCounts {
	unsigned routes, neigh, fdb; /* in place after the pass */
	unsigned added;
} ApplyCounts;

/* Neighbour -> FDB -> route; on failure, undo what this call added (replacements stay). */
/* Logs and counts once that a route weft did not install holds one of the node's destinations. */
static void kernel_conflict(Reconciler *r, DesiredNode *d, const NlRoute *rt) {
	char buf[2 * IP_PREFIX_STRLEN + 8];

	if (!d) { /* a local route (render_local) */
		bool *seen = &r->local_conflict[rt->dst.addr.family == AF_INET6];

		if (!*seen)
			log_warning("The kernel has a route to %s that weft did not install: leaving it alone, "
				    "not adding ours",
				    route_str(rt, buf));
		*seen = true;
		return;
	}
	if (d->kernel_conflict)
		return;
	log_warning("Refusing lease %s of node \"%s\": the kernel has a route to %s that weft did not install; "
		    "leaving it alone [%s]",
		    d->key, d->lease.node_name ?: "", route_str(rt, buf),
		    lease_reject_to_string(LEASE_REJECT_KERNEL_CONFLICT));
	count_rejected(r, LEASE_REJECT_KERNEL_CONFLICT);
	d->kernel_conflict = true;
}

static int apply_node(Reconciler *r, const NodeObjects *o, DesiredNode *d, ApplyCounts *cnt) {
	bool added_neigh[2] = {}, added_fdb = false, added_route[2] = {}, conflict = false;
	char buf[2 * IP_PREFIX_STRLEN + 8], a[IP_ADDR_STRLEN], m[18];
	size_t j;
	int k = 0;

	for (j = 0; j < o->n_routes; j++)
		if (o->route_foreign[j]) {
			/* Checked before touching anything: no neighbour or FDB entry for a node whose
			 * route cannot go in. */
			kernel_conflict(r, d, &o->routes[j]);
			return 0;
		}

	for (j = 0; j < o->n_neigh; j++) {
		if (o->neigh_present[j])
			continue;
		/* ip neigh replace <vtep ip> lladdr <mac> dev weft.N nud permanent */
		k = nl_neigh_add(r->nl, o->neigh[j].ifindex, &o->neigh[j].dst, o->neigh[j].mac, NUD_PERMANENT, true);
		if (k < 0) {
			fail_op(r, METRICS_OP_NEIGH_ADD, k, o->node_name, ip_addr_to_string(&o->neigh[j].dst, a));
			goto rollback;
		}
		added_neigh[j] = !o->neigh_replace[j];
		cnt->added++;
	}
	if (o->has_fdb && !o->fdb_present) {
		/* bridge fdb append <mac> dev weft.N dst <public ip> self permanent */
		k = nl_fdb_add(r->nl, o->fdb.ifindex, o->fdb.mac, &o->fdb.dst, false);
		if (k == -EEXIST)
			k = 0;
		if (k < 0) {
			fail_op(r, METRICS_OP_FDB_ADD, k, o->node_name, ether_addr_format(o->fdb.mac, m));
			goto rollback;
		}
		added_fdb = true;
		cnt->added++;
	}
	for (j = 0; j < o->n_routes; j++) {
		if (o->route_present[j])
			continue;
		/* ip route replace <subnet> via <gw> dev <oif> [onlink] proto 0xfc   (one of ours is there)
		 * ip route add <subnet> via <gw> dev <oif> [onlink] proto 0xfc       (otherwise)
		 * "add" is NLM_F_EXCL: a route weft did not install under the same key (the kernel's
		 * connected route, a static route) makes it fail with EEXIST instead of being replaced. */
		k = nl_route_add(r->nl, &o->routes[j], o->route_replace[j] ? NL_ROUTE_REPLACE : 0);
		if (k == -EEXIST) {
			/* appeared since the dump */
			kernel_conflict(r, d, &o->routes[j]);
			conflict = true;
			goto rollback;
		}
		if (k < 0) {
			fail_op(r, METRICS_OP_ROUTE_ADD, k, o->node_name, route_str(&o->routes[j], buf));
			goto rollback;
		}
		added_route[j] = !o->route_replace[j];
		cnt->added++;
	}
	cnt->neigh += (unsigned) o->n_neigh;
	cnt->fdb += o->has_fdb;
	cnt->routes += (unsigned) o->n_routes;
	if (d && d->kernel_conflict) {
		log_info("Lease %s of node %s: the conflicting route is gone, installed now", d->key,
			 d->lease.node_name ?: "");
		d->kernel_conflict = false;
	} else if (!d && o->n_routes > 0 && r->local_conflict[o->routes[0].dst.addr.family == AF_INET6]) {
		log_info("The conflicting route is gone: %s installed now", route_str(&o->routes[0], buf));
		r->local_conflict[o->routes[0].dst.addr.family == AF_INET6] = false;
	}
	return 0;

rollback:
	/* Reverse order. What we replaced cannot be restored and stays; the next pass retries. */
	for (size_t i = 0; i < o->n_routes; i++)
		if (added_route[i])
			(void) nl_route_del(r->nl, &o->routes[i]);
	if (added_fdb)
		(void) nl_fdb_del(r->nl, o->fdb.ifindex, o->fdb.mac, &o->fdb.dst);
	for (size_t i = 0; i < o->n_neigh; i++)
		if (added_neigh[i])
			(void) nl_neigh_del(r->nl, o->neigh[i].ifindex, &o->neigh[i].dst);
	return conflict ? 0 : k; /* a conflict is logged and counted above, not an error of ours */
}

static double now_sec(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Renders the accepted leases; (*ret_from)[i] is the DesiredNode objs[i] came from. */
static int render_all(Reconciler *r, NodeObjects **ret, DesiredNode ***ret_from, size_t *ret_n) {
	_cleanup_free_ NodeObjects *objs = NULL;
	_cleanup_free_ DesiredNode **from = NULL;
	char a[IP_ADDR_STRLEN];
	size_t n = 0;

	objs = calloc(r->n_nodes + RECONCILE_MAX_LOCAL, sizeof(NodeObjects));
	from = calloc(r->n_nodes + RECONCILE_MAX_LOCAL, sizeof(DesiredNode *));
	if (!objs || !from)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_nodes; i++) {
		DesiredNode *d = &r->nodes[i];
		int k;

		if (d->verdict != LEASE_ACCEPTED)
			continue;
		k = r->backend->ops->render(r->backend, &d->lease, &objs[n]);
		if (k == -ENETUNREACH) {
			if (!d->refused) {
				log_warning("host-gw: node %s has public IP %s, which is not on a directly connected "
					    "network of %s: not adding a route for it",
					    d->lease.node_name ?: "", ip_addr_to_string(&d->lease.public_ip, a),
					    r->backend->underlay_name);
				if (r->metrics)
					r->metrics->hostgw_unreachable++;
			}
			d->refused = true;
			continue;
		}
		if (k < 0) {
			if (!d->refused)
				log_warning_errno(k,
						  "Node %s: lease unusable with backend %s (public IP %s%s): skipping",
						  d->lease.node_name ?: "", r->backend->ops->name,
						  ip_addr_to_string(&d->lease.public_ip, a),
						  d->lease.has_vtep_mac ? "" : ", no VTEP MAC");
			d->refused = true;
			continue;
		}
		d->refused = false;
		from[n++] = d;
	}
	backend_commit(r->backend);
	if (r->render_local) {
		/* from[] stays NULL for them: not leases. Failing here fails the pass: planning
		 * without them would remove them. */
		int k = r->render_local(r->local_userdata, &objs[n], RECONCILE_MAX_LOCAL);
		if (k < 0)
			return k;
		n += (size_t) MIN(k, RECONCILE_MAX_LOCAL);
	}
	*ret = TAKE_PTR(objs);
	*ret_from = TAKE_PTR(from);
	*ret_n = n;
	return 0;
}

int reconciler_run(Reconciler *r) {
	_cleanup_free_ NodeObjects *objs = NULL;
	_cleanup_free_ DesiredNode **from = NULL;
	ReconcileObserved obs = {};
	ReconcilePlan plan = {};
	ApplyCounts cnt = {};
	double start = now_sec();
	size_t n_objs = 0;
	int ret = 0, k;

	if (!r->synced)
		return 0;

	k = reconciler_select(r);
	if (k < 0)
		return log_error_errno(k, "Failed to filter the leases: %m");
	k = render_all(r, &objs, &from, &n_objs);
	if (k < 0)
		return log_error_errno(k, "Failed to render desired state: %m");
	k = reconciler_observe(r, &obs);
	if (k < 0) {
		if (r->metrics)
			metrics_error(r->metrics, METRICS_OP_DUMP);
		return log_warning_errno(k, "Failed to dump kernel state: %m");
	}
	k = reconcile_plan(objs, n_objs, &obs, &plan);
	reconcile_observed_done(&obs);
	if (k < 0)
		return log_error_errno(k, "Failed to plan: %m");

	RET_GATHER(ret, apply_deletes(r, &plan));
	if (plan.n_add > 0 || plan.n_conflict > 0)
		for (size_t i = 0; i < n_objs; i++)
			RET_GATHER(ret, apply_node(r, &objs[i], from[i], &cnt));
	else
		for (size_t i = 0; i < n_objs; i++) {
			cnt.neigh += (unsigned) objs[i].n_neigh;
			cnt.fdb += objs[i].has_fdb;
			cnt.routes += (unsigned) objs[i].n_routes;
		}

	if (r->metrics) {
		r->metrics->routes = cnt.routes;
		r->metrics->neighbours = cnt.neigh;
		r->metrics->fdb = cnt.fdb;
		metrics_observe_reconcile(r->metrics, now_sec() - start);
	}
	if (cnt.added > 0 || plan.n_del_routes + plan.n_del_neigh + plan.n_del_fdb > 0)
		log_info("Reconciled %zu remote nodes: %u objects added or replaced, %zu routes, %zu FDB entries, "
			 "%zu neighbours removed, in %.1f ms",
			 n_objs, cnt.added, plan.n_del_routes, plan.n_del_fdb, plan.n_del_neigh,
			 (now_sec() - start) * 1000);
	else
		log_debug("Reconciled %zu remote nodes: nothing to do (%.1f ms)", n_objs, (now_sec() - start) * 1000);
	reconcile_plan_done(&plan);
	return ret;
}
