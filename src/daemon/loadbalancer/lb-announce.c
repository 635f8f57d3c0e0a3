/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/l2-responder.h"
#include "daemon/loadbalancer/lb-announce.h"
#include "daemon/loadbalancer/lb-ipam.h"

/* ---- pure parts ---- */

uint64_t lb_rendezvous_score(const char *node, const IpAddr *addr) {
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
	unsigned size = ip_addr_size(addr->family);

	for (const char *p = node; *p; p++)
		h = (h ^ (uint8_t) *p) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull; /* no name is a prefix of name + address */
	h = (h ^ (uint8_t) size) * 0x100000001b3ull;
	for (unsigned i = 0; i < size; i++)
		h = (h ^ addr->bytes[i]) * 0x100000001b3ull;
	/* splitmix64's finaliser: FNV's low bits alone spread similar names poorly */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

const char *lb_rendezvous_pick(const char *const *nodes, size_t n, const IpAddr *addr) {
	const char *best = NULL;
	uint64_t best_score = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t s = lb_rendezvous_score(nodes[i], addr);

		if (!best || s > best_score || (s == best_score && strcmp(nodes[i], best) < 0)) {
			best = nodes[i];
			best_score = s;
		}
	}
	return best;
}

static bool eligible(const LbAnnounceAddr *a, const char *node) {
	if (a->cluster)
		return true;
	for (size_t i = 0; i < a->n_nodes; i++)
		if (streq(a->nodes[i], node))
			return true;
	return false;
}

static int addr_cmp(const void *x, const void *y) {
	return ip_addr_cmp(x, y);
}

void lb_announce_decide(LbAnnounce mode, const char *self, const char *const *members, size_t n_members,
			const LbAnnounceAddr *addrs, size_t n_addrs, IpAddr *ret, size_t *ret_n,
			const char **ret_owner) {
	const char *cand[256];
	size_t n = 0;

	for (size_t i = 0; i < n_addrs; i++) {
		const LbAnnounceAddr *a = &addrs[i];
		const char *owner = NULL;

		if (mode == LB_ANNOUNCE_BGP) {
			if (eligible(a, self))
				ret[n++] = a->addr;
			continue;
		}
		/* l2: the winner among the live eligible nodes, in chunks of 256 (the best of each
		 * chunk's best is the best overall, ties included: the pick is a total order) */
		for (size_t k = 0; members && k < n_members;) {
			size_t c = 0;

			if (owner)
				cand[c++] = owner;
			for (; k < n_members && c < ELEMENTSOF(cand); k++)
				if (eligible(a, members[k]))
					cand[c++] = members[k];
			owner = lb_rendezvous_pick(cand, c, &a->addr);
		}
		if (ret_owner)
			ret_owner[i] = owner;
		if (owner && streq(owner, self))
			ret[n++] = a->addr;
	}
	if (n > 1)
		qsort(ret, n, sizeof(IpAddr), addr_cmp);
	{
		size_t w = 0;

		for (size_t i = 0; i < n; i++)
			if (w == 0 || !ip_addr_equal(&ret[w - 1], &ret[i]))
				ret[w++] = ret[i];
		n = w;
	}
	*ret_n = n;
}

/* ---- the announcer ---- */

/* Who announced an address in the last pass (l2), to tell a takeover from a first announcement. */
typedef struct Owner {
	IpAddr addr;
	char *node; /* NULL: nobody */
} Owner;

struct LbAnnouncer {
	ObjectCache *cache;
	EventLoop *loop;
	LbAnnounceConfig cfg;
	EventSource *pass_timer, *tick;
	bool retrying; /* pass_timer holds a retry, not a debounce */
	LbMembers *members;
	bool said_no_members, said_no_bgp;

	L2Responder *l2;
	int l2_ifindex;

	/* what is in force, per mode (sorted) */
	IpAddr *bgp, *l2_addrs;
	size_t n_bgp, n_l2;
	bool bgp_applied; /* bgp[] is what BIRD has */

	Owner *owners;
	size_t n_owners;
	uint64_t failovers, passes;
	double last_failover; /* unix seconds; 0 = never */
};

static const LbConfig *lb_config(const LbAnnouncer *a) {
	return *a->cfg.network ? (*a->cfg.network)->load_balancer : NULL;
}

static void schedule_pass(LbAnnouncer *a, uint64_t usec) {
	/* a change does not wait for a pending retry */
	if (a->retrying)
		(void) event_source_arm(a->pass_timer, usec, 0);
	else
		(void) event_source_arm_once(a->pass_timer, usec);
	a->retrying = false;
}

/* ---- collecting the addresses ---- */

typedef struct Entry {
	IpAddr addr;
	bool cluster;
	const char **nodes; /* interned in the cache's pool: valid during the pass */
	size_t n_nodes;
} Entry;

typedef struct Collect {
	LbAnnouncer *a;
	const LbConfig *lc;
	Entry *v;
	size_t n;
	size_t cur[KUBE_SERVICE_MAX_LB_INGRESS]; /* the current Service's entries (indexes into v) */
	size_t n_cur;
	bool oom;
} Collect;

static int entry_get(Collect *c, const IpAddr *ip, size_t *ret) {
	Entry *v;

	for (size_t i = 0; i < c->n; i++)
		if (ip_addr_equal(&c->v[i].addr, ip)) {
			*ret = i;
			return 0;
		}
	v = reallocarray(c->v, c->n + 1, sizeof(Entry));
	if (!v)
		return -ENOMEM;
	c->v = v;
	v[c->n] = (Entry) { .addr = *ip };
	*ret = c->n++;
	return 0;
}

static int entry_add_node(Entry *e, const char *node) {
	const char **v;

	for (size_t i = 0; i < e->n_nodes; i++)
		if (streq(e->nodes[i], node))
			return 0;
	v = reallocarray(e->nodes, e->n_nodes + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	e->nodes = v;
	v[e->n_nodes++] = node;
	return 0;
}

/* The nodes with a ready, non-terminating endpoint: where healthCheckNodePort answers 200
 * (service-agent.c counts local endpoints by the same rule). */
static int collect_nodes(const KubeObject *o, void *userdata) {
	const KubeEndpointSlice *sl = KUBE_ENDPOINT_SLICE(o);
	Collect *c = userdata;

	for (size_t i = 0; sl && i < sl->n_endpoints; i++) {
		const KubeEndpoint *ep = &sl->endpoints[i];

		if (!ep->ready || ep->terminating || !ep->node_name || ep->n_addresses == 0)
			continue;
		for (size_t k = 0; k < c->n_cur; k++)
			if (entry_add_node(&c->v[c->cur[k]], ep->node_name) < 0) {
				c->oom = true;
				return -ENOMEM;
			}
	}
	return 0;
}

/* The assigner's rule (lb-agent.c): type LoadBalancer, no class or weft's. */
static bool ours(const KubeService *s) {
	return s->type == KUBE_SERVICE_LOAD_BALANCER && (!s->lb_class || streq(s->lb_class, KUBE_LB_CLASS_WEFT));
}

static int collect_service(const KubeObject *o, void *userdata) {
	const KubeService *s = KUBE_SERVICE(o);
	Collect *c = userdata;

	if (!s || !ours(s))
		return 0;
	c->n_cur = 0;
	for (size_t i = 0; i < s->n_lb_ips && c->n_cur < ELEMENTSOF(c->cur); i++) {
		if (!lb_pool_of(c->lc->pools, c->lc->n_pools, &s->lb_ips[i]))
			continue; /* someone else's address */
		if (entry_get(c, &s->lb_ips[i], &c->cur[c->n_cur]) < 0) {
			c->oom = true;
			return -ENOMEM;
		}
		c->n_cur++;
	}
	if (c->n_cur == 0)
		return 0;
	if (!s->external_traffic_local) {
		for (size_t k = 0; k < c->n_cur; k++)
			c->v[c->cur[k]].cluster = true;
		return 0;
	}
	return object_cache_foreach_slice_of_service(c->a->cache, o->namespace, o->name, collect_nodes, c);
}

static void collect_done(Collect *c) {
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].nodes);
	free(c->v);
}

/* ---- applying ---- */

static bool addrs_equal(const IpAddr *a, size_t na, const IpAddr *b, size_t nb) {
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!ip_addr_equal(&a[i], &b[i]))
			return false;
	return true;
}

static int addrs_copy(IpAddr **dst, size_t *n_dst, const IpAddr *src, size_t n) {
	IpAddr *v = NULL;

	if (n) {
		v = malloc(n * sizeof(IpAddr));
		if (!v)
			return -ENOMEM;
		memcpy(v, src, n * sizeof(IpAddr));
	}
	free(*dst);
	*dst = v;
	*n_dst = n;
	return 0;
}

static void log_change(const char *mode, const IpAddr *old, size_t n_old, const IpAddr *now, size_t n_now) {
	char buf[IP_ADDR_STRLEN];

	for (size_t i = 0; i < n_now; i++) {
		bool had = false;

		for (size_t k = 0; k < n_old && !had; k++)
			had = ip_addr_equal(&old[k], &now[i]);
		if (!had)
			log_info("LoadBalancer: announcing %s (%s)", ip_addr_to_string(&now[i], buf), mode);
	}
	for (size_t k = 0; k < n_old; k++) {
		bool has = false;

		for (size_t i = 0; i < n_now && !has; i++)
			has = ip_addr_equal(&old[k], &now[i]);
		if (!has)
			log_info("LoadBalancer: withdrawing %s (%s)", ip_addr_to_string(&old[k], buf), mode);
	}
}

/* 0, or < 0 to retry */
static int apply_bgp(LbAnnouncer *a, const IpAddr *v, size_t n) {
	int r;

	if (a->bgp_applied && addrs_equal(a->bgp, a->n_bgp, v, n))
		return 0;
	if (!a->cfg.bgp_set)
		return 0;
	r = a->cfg.bgp_set(a->cfg.userdata, v, n);
	if (r == -EOPNOTSUPP) {
		if (n > 0 && !a->said_no_bgp)
			log_warning("LoadBalancer: Announce is bgp, but this node's backend speaks no BGP: "
				    "nothing is announced (use the bgp backend, or \"Announce\": \"l2\")");
		a->said_no_bgp = n > 0;
		return 0;
	}
	if (r < 0)
		return r;
	log_change("bgp", a->bgp, a->bgp_applied ? a->n_bgp : 0, v, n);
	a->bgp_applied = true;
	return addrs_copy(&a->bgp, &a->n_bgp, v, n);
}

static int apply_l2(LbAnnouncer *a, const IpAddr *v, size_t n) {
	int ifindex = a->cfg.underlay_ifindex ? a->cfg.underlay_ifindex(a->cfg.userdata) : 0;
	int r;

	if (a->l2 && (n == 0 || ifindex != a->l2_ifindex)) {
		/* the underlay moved, or nothing to answer for: no socket at all */
		a->l2 = l2_responder_free(a->l2);
		log_change("l2", a->l2_addrs, a->n_l2, NULL, 0);
		a->n_l2 = 0;
	}
	if (n == 0)
		return 0;
	if (ifindex <= 0)
		return -ENODEV;
	if (!a->l2) {
		r = l2_responder_new(a->loop, ifindex, &a->l2);
		if (r < 0)
			return log_warning_errno(r, "LoadBalancer: cannot answer ARP/NDP on interface %d: %m", ifindex);
		a->l2_ifindex = ifindex;
	} else if (addrs_equal(a->l2_addrs, a->n_l2, v, n))
		return 0;
	r = l2_responder_set(a->l2, v, n);
	if (r < 0)
		return log_warning_errno(r, "LoadBalancer: cannot update the ARP/NDP responder: %m");
	log_change("l2", a->l2_addrs, a->n_l2, v, n);
	return addrs_copy(&a->l2_addrs, &a->n_l2, v, n);
}

/* Takeovers (l2): an address now ours that another node announced in the last pass. Then the
 * owners are remembered for the next. */
static void note_owners(LbAnnouncer *a, const Entry *v, size_t n, const char **owner) {
	Owner *next = n ? calloc(n, sizeof(Owner)) : NULL;
	bool took = false;

	if (n && !next)
		return;
	for (size_t i = 0; i < n; i++) {
		next[i] = (Owner) { .addr = v[i].addr, .node = owner[i] ? strdup(owner[i]) : NULL };
		if (!owner[i] || !streq(owner[i], a->cfg.node))
			continue;
		for (size_t k = 0; k < a->n_owners; k++)
			if (ip_addr_equal(&a->owners[k].addr, &v[i].addr) && a->owners[k].node &&
			    !streq(a->owners[k].node, a->cfg.node)) {
				char buf[IP_ADDR_STRLEN];

				log_info("LoadBalancer: %s taken over from %s", ip_addr_to_string(&v[i].addr, buf),
					 a->owners[k].node);
				a->failovers++;
				took = true;
			}
	}
	if (took) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		a->last_failover = (double) ts.tv_sec + ts.tv_nsec / 1e9;
	}
	for (size_t k = 0; k < a->n_owners; k++)
		free(a->owners[k].node);
	free(a->owners);
	a->owners = next;
	a->n_owners = n;
}

static void on_members(LbMembers *m, void *userdata);

static void ensure_members(LbAnnouncer *a) {
	int r;

	if (a->members)
		return;
	if (!a->cfg.members_ops) {
		if (!a->said_no_members)
			log_warning("LoadBalancer: Announce is l2, but this node has no view of the live nodes "
				    "(member keys need --objects-datastore etcd for now): nothing is announced");
		a->said_no_members = true;
		return;
	}
	r = lb_members_new(a->cfg.members_ops, a->loop, &a->cfg.members, on_members, a, &a->members);
	if (r < 0) {
		log_warning_errno(r, "LoadBalancer: cannot hold the member key: %m");
		a->members = NULL;
	}
}

static int run_pass(LbAnnouncer *a) {
	const LbConfig *lc = lb_config(a);
	LbAnnounce mode = lc ? lc->announce : LB_ANNOUNCE_DEFAULT;
	Collect c = { .a = a, .lc = lc };
	_cleanup_free_ LbAnnounceAddr *in = NULL;
	_cleanup_free_ IpAddr *want = NULL;
	_cleanup_free_ const char **owner = NULL;
	const char *const *members = NULL;
	size_t n_want = 0, n_members = 0;
	int r = 0, k;

	if (lc)
		object_cache_foreach(a->cache, KUBE_KIND_SERVICE, collect_service, &c);
	if (c.oom) {
		collect_done(&c);
		return -ENOMEM;
	}
	if (mode == LB_ANNOUNCE_L2) {
		ensure_members(a);
		if (a->members && lb_members_synced(a->members))
			members = lb_members_list(a->members, &n_members);
	}
	in = calloc(MAX(c.n, (size_t) 1), sizeof(LbAnnounceAddr));
	want = calloc(MAX(c.n, (size_t) 1), sizeof(IpAddr));
	owner = calloc(MAX(c.n, (size_t) 1), sizeof(char *));
	if (!in || !want || !owner) {
		collect_done(&c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c.n; i++)
		in[i] = (LbAnnounceAddr) {
			.addr = c.v[i].addr, .cluster = c.v[i].cluster, .nodes = c.v[i].nodes, .n_nodes = c.v[i].n_nodes
		};
	if (mode == LB_ANNOUNCE_BGP || mode == LB_ANNOUNCE_L2)
		lb_announce_decide(mode, a->cfg.node, members, n_members, in, c.n, want, &n_want, owner);
	if (mode == LB_ANNOUNCE_L2 && members)
		note_owners(a, c.v, c.n, owner);
	collect_done(&c);
	a->passes++;

	/* each mode gets its set, the other none (the config may have changed modes) */
	k = apply_bgp(a, want, mode == LB_ANNOUNCE_BGP ? n_want : 0);
	if (k < 0)
		r = k;
	k = apply_l2(a, want, mode == LB_ANNOUNCE_L2 ? n_want : 0);
	if (k < 0 && r >= 0)
		r = k;
	return r;
}

static int on_pass(EventSource *s, void *userdata) {
	LbAnnouncer *a = userdata;
	int r;

	if (!object_cache_all_synced(a->cache))
		return 0;
	r = run_pass(a);
	if (r < 0 && event_source_arm(a->pass_timer, LB_ANNOUNCE_RETRY_USEC, 0) >= 0)
		a->retrying = true; /* BIRD down, the underlay not found yet: again soon */
	return 0;
}

static void on_members(LbMembers *m, void *userdata) {
	schedule_pass(userdata, 0);
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	if (o->kind == KUBE_KIND_SERVICE || o->kind == KUBE_KIND_ENDPOINT_SLICE)
		schedule_pass(userdata, LB_ANNOUNCE_DEBOUNCE_USEC);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	on_added(c, o, userdata);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	on_added(c, old, userdata);
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	schedule_pass(userdata, LB_ANNOUNCE_DEBOUNCE_USEC);
}

const ObjectCacheHandlers lb_announce_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
};

static int on_tick(EventSource *s, void *userdata) {
	LbAnnouncer *a = userdata;

	/* level-triggered: the config may have arrived or changed, the underlay moved */
	schedule_pass(a, 0);
	return 0;
}

int lb_announce_new(ObjectCache *cache, EventLoop *loop, const LbAnnounceConfig *cfg, LbAnnouncer **ret) {
	LbAnnouncer *a = calloc(1, sizeof(*a));
	EventSource *tick = NULL;
	int r;

	if (!a)
		return -ENOMEM;
	*a = (LbAnnouncer) { .cache = cache, .loop = loop, .cfg = *cfg };
	r = event_loop_add_timer(loop, on_pass, a, &a->pass_timer);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_tick, a, &tick);
	if (r >= 0)
		r = event_source_arm(tick, 1000 * 1000, 5 * 1000 * 1000);
	if (r < 0) {
		lb_announce_free(a);
		return r;
	}
	a->tick = tick;
	*ret = a;
	return 0;
}

LbAnnouncer *lb_announce_free(LbAnnouncer *a) {
	if (!a)
		return NULL;
	event_source_free(a->pass_timer);
	event_source_free(a->tick);
	/* withdraw now rather than leave the routers a node that is going away */
	if (a->bgp_applied && a->n_bgp > 0)
		(void) apply_bgp(a, NULL, 0);
	l2_responder_free(a->l2);
	lb_members_free(a->members);
	free(a->bgp);
	free(a->l2_addrs);
	for (size_t k = 0; k < a->n_owners; k++)
		free(a->owners[k].node);
	free(a->owners);
	free(a);
	return NULL;
}

int lb_announce_render_metrics(LbAnnouncer *a, FILE *f) {
	L2ResponderStats st = {};

	if (!a || !lb_config(a))
		return 0;
	if (a->l2)
		l2_responder_stats(a->l2, &st);
	fprintf(f,
		"# HELP weft_loadbalancer_announcements LoadBalancer addresses this node announces, by mode.\n"
		"# TYPE weft_loadbalancer_announcements gauge\n"
		"weft_loadbalancer_announcements{mode=\"bgp\"} %zu\n"
		"weft_loadbalancer_announcements{mode=\"l2\"} %zu\n"
		"# HELP weft_loadbalancer_failovers_total Addresses this node took over from another node (l2).\n"
		"# TYPE weft_loadbalancer_failovers_total counter\n"
		"weft_loadbalancer_failovers_total %" PRIu64 "\n"
		"# HELP weft_loadbalancer_last_failover_timestamp_seconds When this node last took over an address "
		"(unix seconds; 0: never).\n"
		"# TYPE weft_loadbalancer_last_failover_timestamp_seconds gauge\n"
		"weft_loadbalancer_last_failover_timestamp_seconds %.3f\n"
		"# HELP weft_loadbalancer_l2_packets_total ARP and NDP packets of the L2 responder, by type.\n"
		"# TYPE weft_loadbalancer_l2_packets_total counter\n"
		"weft_loadbalancer_l2_packets_total{type=\"arp_reply\"} %" PRIu64 "\n"
		"weft_loadbalancer_l2_packets_total{type=\"na_reply\"} %" PRIu64 "\n"
		"weft_loadbalancer_l2_packets_total{type=\"gratuitous_arp\"} %" PRIu64 "\n"
		"weft_loadbalancer_l2_packets_total{type=\"unsolicited_na\"} %" PRIu64 "\n"
		"weft_loadbalancer_l2_packets_total{type=\"bad\"} %" PRIu64 "\n",
		a->bgp_applied ? a->n_bgp : 0, a->l2 ? a->n_l2 : 0, a->failovers, a->last_failover, st.arp_replies,
		st.na_replies, st.garp_sent, st.unsol_na_sent, st.bad_packets);
	return 0;
}
