/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/nft-sync.h"
#include "daemon/service/service-admission.h"
#include "daemon/service/service-agent.h"
#include "daemon/service/service-health.h"
#include "daemon/service/service-compile.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"

/*
 * A partial sync goes to the kernel in batches of about this much text. libnftables holds the parse
 * of a whole batch at once, about 20 bytes per byte of text: 2,000 new Services in one etcd
 * transaction made a 3 MB batch and a 62 MB peak (heaptrack), which glibc then kept. Each Service's
 * change stays in one batch, so it is still applied atomically; only the set of Services is split.
 */
#define BATCH_BYTES (256 * 1024)
#define QUARANTINE_RETRY_USEC (30 * 1000 * 1000)

/* how often the node's addresses (links, leases) are compared with those the policy last used */
#define RECHECK_USEC (10 * 1000 * 1000)

/* A refusal already logged and counted: "ns/name: <what> refused: <reason>" (sorted). */
typedef struct Report {
	char *line;
	uint8_t reason; /* ServiceRejectReason */
} Report;

struct ServiceAgent {
	ObjectCache *cache;
	EventLoop *loop;
	NftSync *sync; /* the nft context, debounce, retry and sync metrics (nft-sync.h) */
	ServiceAgentConfig cfg;
	bool base; /* the fixed svc-* objects are in place */
	ServiceHealth *health;
	SvcSlotPool *slots;  /* the endpoint-map ranges of the units' chains */
	SvcRefs *refs;       /* the shared sets' elements, counted over the units */
	ServiceUnit **units; /* sorted by key */
	size_t n_units, cap_units;
	char **dirty; /* "ns/name" */
	size_t n_dirty, cap_dirty;
	bool dirty_oom; /* a key could not be remembered: sync everything */
	/* a full pass: its units and the kernel's svc-* names, from render to applied */
	ServiceUnit **full_v;
	size_t full_n, full_cap;
	char **kernel, **kernel_sets;
	size_t last_batch_bytes;
	uint64_t conntrack_deleted;
	/* Services whose objects nftables refused (quarantine_add): not programmed in their refused
	 * version, retried when they change and every QUARANTINE_RETRY_USEC */
	char **quarantined;
	EventSource *retry_timer;
	uint64_t rejected_nftables;
	/* the address policy and the conflicts (service-admission.h) */
	EventSource *recheck;
	ServiceAdmissionPolicy policy; /* points into cfg and the fields below */
	IpPrefix pod_networks[2];
	ServiceReservedPort reserved[3];
	IpAddr *node_addrs;
	size_t n_node_addrs;
	ServiceClaims *claims;
	Report *reports;
	size_t n_reports;
	uint64_t rejected[_SERVICE_REJECT_MAX];
};

static void mark_dirty_key(ServiceAgent *a, const char *key);

/* Index of key in units, or where it would go (*found false). */
static size_t unit_find(ServiceAgent *a, const char *key, bool *found) {
	size_t lo = 0, hi = a->n_units;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(key, a->units[mid]->key);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

/* Puts u (may be NULL: removes) in place of key's unit; frees the old one. */
static int unit_replace(ServiceAgent *a, const char *key, ServiceUnit *u) {
	bool found;
	size_t i = unit_find(a, key, &found);

	if (found) {
		service_unit_free(a->units[i]);
		if (u)
			a->units[i] = u;
		else {
			memmove(a->units + i, a->units + i + 1, (a->n_units - i - 1) * sizeof(ServiceUnit *));
			a->n_units--;
		}
		return 0;
	}
	if (!u)
		return 0;
	if (a->n_units == a->cap_units) {
		size_t cap = a->cap_units ? a->cap_units * 2 : 64;
		ServiceUnit **v = reallocarray(a->units, cap, sizeof(ServiceUnit *));

		if (!v)
			return -ENOMEM;
		a->units = v;
		a->cap_units = cap;
	}
	memmove(a->units + i + 1, a->units + i, (a->n_units - i) * sizeof(ServiceUnit *));
	a->units[i] = u;
	a->n_units++;
	return 0;
}

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

/*
 * The policy as of now: the pod networks (the config may arrive late), the backend's tunnel port,
 * the node's addresses. 1 if it changed since the last call (every Service must be judged again:
 * a full sync), 0 if not, -EAGAIN while the node addresses cannot be known yet.
 */
static int policy_refresh(ServiceAgent *a) {
	const NetworkConfig *cfg = a->cfg.network ? *a->cfg.network : NULL;
	ServiceAdmissionPolicy *p = &a->policy;
	IpPrefix nets[2] = {};
	ServiceReservedPort res[3] = {};
	size_t n_nets = 0, n_res = 0, n_addrs = 0;
	IpAddr *addrs = NULL;
	bool changed;

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
	changed = n_nets != p->n_pod_networks || memcmp(nets, a->pod_networks, sizeof(nets)) != 0 ||
		  n_res != p->n_reserved || memcmp(res, a->reserved, sizeof(res)) != 0 || n_addrs != a->n_node_addrs ||
		  (n_addrs > 0 && memcmp(addrs, a->node_addrs, n_addrs * sizeof(IpAddr)) != 0);
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
		.lb_pools = a->cfg.lb_pools,
		.n_lb_pools = a->cfg.n_lb_pools,
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
static int claim(ServiceAgent *a, const char *key, const KubeService *svc) {
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
		mark_dirty_key(a, affected[i]);
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
static int build(ServiceAgent *a, const KubeService *svc, const ServiceUnit *old, ServiceUnit **ret) {
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

int service_uninstall(NftCtx *nft, size_t *ret_n, char **ret_error) {
	_cleanup_strv_free_ char **chains = NULL, **sets = NULL, **maps = NULL;
	_cleanup_(nft_batch_done) NftBatch b = {};
	int r;

	*ret_n = 0;
	/* svc-* objects of table inet weft: the per-Service ones hold a '/', the fixed ones do not */
	r = nft_list_names(nft, "chain", SVC_PREFIX, &chains);
	if (r >= 0)
		r = nft_list_names(nft, "set", SVC_PREFIX, &sets);
	if (r >= 0)
		r = nft_list_names(nft, "map", SVC_PREFIX, &maps);
	if (r < 0)
		return r;
	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	/* rules first (they name chains, maps and sets), then the maps (their verdicts name chains),
	 * then the rest */
	for (size_t i = 0; chains && chains[i]; i++)
		nft_batch_add(&b, "flush chain " NFT_TABLE_INET " %s", chains[i]);
	for (size_t i = 0; maps && maps[i]; i++)
		nft_batch_add(&b, "delete map " NFT_TABLE_INET " %s", maps[i]);
	for (size_t i = 0; chains && chains[i]; i++)
		nft_batch_add(&b, "delete chain " NFT_TABLE_INET " %s", chains[i]);
	for (size_t i = 0; sets && sets[i]; i++)
		nft_batch_add(&b, "delete set " NFT_TABLE_INET " %s", sets[i]);
	r = nft_batch_finish(&b);
	if (r < 0)
		return r;
	*ret_n = strv_length(chains) + strv_length(maps) + strv_length(sets);
	return b.len > 0 ? nft_apply(nft, b.buf, ret_error) : 0;
}

typedef struct Full {
	ServiceAgent *a;
	ServiceUnit **v;
	size_t n, cap;
	int r;
} Full;

static int collect_unit(const KubeObject *o, void *userdata) {
	Full *f = userdata;
	ServiceUnit *u = NULL;

	if (!KUBE_SERVICE(o))
		return 0;
	f->r = build(f->a, KUBE_SERVICE(o), NULL, &u);
	if (f->r < 0)
		return f->r;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		ServiceUnit **v = reallocarray(f->v, cap, sizeof(ServiceUnit *));

		if (!v) {
			service_unit_free(u);
			return f->r = -ENOMEM;
		}
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = u;
	return 0;
}

static int claim_one(const KubeObject *o, void *userdata) {
	Full *f = userdata;
	_cleanup_free_ char *key = NULL;

	if (!KUBE_SERVICE(o))
		return 0;
	key = strdup_printf("%s/%s", o->namespace, o->name);
	f->r = key ? claim(f->a, key, KUBE_SERVICE(o)) : -ENOMEM;
	return f->r < 0 ? f->r : 0;
}

/*
 * The claims of every dirty Service, before any is built: a Service that won or lost a key by
 * them joins the dirty set (it is appended, and claims nothing new itself).
 */
static int claim_dirty(ServiceAgent *a) {
	int r = 0;

	for (size_t i = 0; i < a->n_dirty && r >= 0; i++) {
		char *slash = strchr(a->dirty[i], '/');
		const KubeService *svc;

		if (!slash)
			continue;
		*slash = '\0';
		svc = KUBE_SERVICE(object_cache_get(a->cache, KUBE_KIND_SERVICE, a->dirty[i], slash + 1));
		*slash = '/';
		r = claim(a, a->dirty[i], svc);
		if (r >= 0 && !svc) { /* gone: what it was refused may be logged again if it comes back */
			Admit none = { .a = a };

			reports_commit(a, a->dirty[i], &none);
		}
	}
	return r;
}

static int unit_ptr_cmp(const void *x, const void *y) {
	return strcmp((*(ServiceUnit *const *) x)->key, (*(ServiceUnit *const *) y)->key);
}

static void clear_dirty(ServiceAgent *a) {
	for (size_t i = 0; i < a->n_dirty; i++)
		free(a->dirty[i]);
	a->n_dirty = 0;
	a->dirty_oom = false;
}

/* ---- quarantine: a batch nftables refuses is narrowed to the Services that cause it ---- */

static bool is_quarantined(ServiceAgent *a, const char *key) {
	return strv_contains(a->quarantined, key);
}

/* Logged once: a retry refused again stays quiet. */
static void quarantine_add(ServiceAgent *a, const char *key, const char *err) {
	if (is_quarantined(a, key))
		return;
	if (strv_extend(&a->quarantined, key) < 0)
		return; /* retried on its next change all the same */
	a->rejected_nftables++;
	log_error("Services: nftables refused the objects of Service %s, not programmed until it changes: %s", key,
		  err ?: "");
	if (!event_source_armed(a->retry_timer))
		(void) event_source_arm(a->retry_timer, QUARANTINE_RETRY_USEC, 0);
}

static void quarantine_drop(ServiceAgent *a, const char *key) {
	size_t w = 0, n = strv_length(a->quarantined);

	for (size_t i = 0; i < n; i++)
		if (streq(a->quarantined[i], key)) {
			free(a->quarantined[i]);
			log_info("Services: %s programmed again", key);
		} else
			a->quarantined[w++] = a->quarantined[i];
	if (a->quarantined)
		a->quarantined[w] = NULL;
}

typedef struct Segments {
	const char *prefix; /* in every batch (the fixed objects, first Service of a cluster) */
	size_t prefix_len;
	char **text; /* per dirty Service: its part of the batch (NULL: none) */
	size_t *len;
	bool *refused;
	char **error; /* nftables' text for a refused one */
	unsigned batches;
} Segments;

/*
 * Applies the prefix and the segments idx[0..n) as one batch; refused, the set is halved down to
 * single Services, so k bad Services among n cost about 2k log2(n) batches and every good one is
 * applied. Segments touch only their own Service's objects, so applying them in groups keeps each
 * Service's change atomic.
 */
static void apply_bisect(ServiceAgent *a, Segments *sg, const size_t *idx, size_t n) {
	_cleanup_(nft_batch_done) NftBatch b = {};
	char *buf, *err = NULL;
	int r;

	if (n == 0)
		return;
	if (nft_batch_begin(&b) < 0)
		return (void) (sg->refused[idx[0]] = true); /* ENOMEM: not applied; a later sync retries */
	nft_batch_append(&b, sg->prefix, sg->prefix_len);
	for (size_t i = 0; i < n; i++)
		nft_batch_append(&b, sg->text[idx[i]], sg->len[idx[i]]);
	if (nft_batch_finish(&b) < 0) {
		for (size_t i = 0; i < n; i++)
			sg->refused[idx[i]] = true;
		return;
	}
	buf = b.buf;
	sg->batches++;
	r = nft_sync_apply(a->sync, buf, &err);
	if (r < 0 && n == 1) {
		sg->refused[idx[0]] = true;
		sg->error[idx[0]] = TAKE_PTR(err);
		log_debug("Services batch refused:\n%s", buf);
	} else if (r < 0) {
		apply_bisect(a, sg, idx, n / 2);
		apply_bisect(a, sg, idx + n / 2, n - n / 2);
	}
	free(err);
}

/* The full batch of units[0..n) (refs reset and counted anew), appended to out. 0 or -ENOMEM. */
static int render_full(ServiceAgent *a, ServiceUnit *const *units, size_t n, char *const *kernel,
		       char *const *kernel_sets, NftBatch *out) {
	int r;

	svc_refs_reset(a->refs);
	service_render_base(out, a->cfg.service_ranges, a->cfg.n_service_ranges);
	service_render_flush_maps(out);
	for (size_t i = 0; kernel && kernel[i]; i++)
		if (strchr(kernel[i], '/')) /* per-Service chains; the fixed ones are flushed above */
			nft_batch_add(out, "flush chain " NFT_TABLE_INET " %s", kernel[i]);
	r = service_render_full(out, units, n, a->refs);
	for (size_t i = 0; kernel && kernel[i]; i++) {
		bool wanted = false;

		for (size_t k = 0; k < n && !wanted; k++)
			wanted = service_unit_chain(units[k], kernel[i]) != NULL;
		if (!wanted && strchr(kernel[i], '/'))
			nft_batch_add(out, "delete chain " NFT_TABLE_INET " %s", kernel[i]);
	}
	/* affinity sets of Services gone or changed meanwhile (after their chains) */
	for (size_t i = 0; kernel_sets && kernel_sets[i]; i++) {
		bool wanted = false;

		for (size_t k = 0; k < n && !wanted; k++)
			wanted = service_unit_set(units[k], kernel_sets[i]) != NULL;
		if (!wanted && strchr(kernel_sets[i], '/'))
			nft_batch_add(out, "delete set " NFT_TABLE_INET " %s", kernel_sets[i]);
	}
	return r;
}

typedef struct FullBisect {
	ServiceAgent *a;
	char **kernel, **kernel_sets;
	ServiceUnit **good; /* accepted by the kernel's check so far */
	size_t n_good;
	ServiceUnit **cand; /* scratch: good + a range */
	bool *refused;
	char **error;
	unsigned batches;
} FullBisect;

/*
 * A refused full batch: each attempt is a whole full batch of the Services accepted so far plus a
 * range of the rest, checked by the kernel and aborted (nft_check), so what is programmed stays in
 * force while the culprits are searched for; the caller then applies the accepted ones for real.
 */
static void full_bisect(FullBisect *fb, ServiceUnit **v, size_t lo, size_t hi) {
	_cleanup_(nft_batch_done) NftBatch b = {};
	char *err = NULL;
	size_t n = 0;
	int r;

	if (lo >= hi)
		return;
	for (size_t i = 0; i < fb->n_good; i++)
		fb->cand[n++] = fb->good[i];
	for (size_t i = lo; i < hi; i++)
		fb->cand[n++] = v[i];
	r = nft_batch_begin(&b);
	if (r >= 0)
		r = render_full(fb->a, fb->cand, n, fb->kernel, fb->kernel_sets, &b);
	if (r >= 0)
		r = nft_batch_finish(&b);
	if (r >= 0) {
		fb->batches++;
		r = nft_sync_check(fb->a->sync, b.buf, &err);
	}
	if (r >= 0) {
		for (size_t i = lo; i < hi; i++)
			fb->good[fb->n_good++] = v[i];
	} else if (hi - lo == 1) {
		fb->refused[lo] = true;
		fb->error[lo] = TAKE_PTR(err);
	} else {
		full_bisect(fb, v, lo, lo + (hi - lo) / 2);
		full_bisect(fb, v, lo + (hi - lo) / 2, hi);
	}
	free(err);
}

/* Drops what a full pass left (its units when it failed). */
static void full_done(ServiceAgent *a) {
	for (size_t i = 0; i < a->full_n; i++)
		service_unit_free(a->full_v[i]);
	a->full_v = mfree(a->full_v);
	a->full_n = a->full_cap = 0;
	a->kernel = strv_free(a->kernel);
	a->kernel_sets = strv_free(a->kernel_sets);
}

/*
 * A full pass (NftSyncOps.render, full): every Service built anew, rendered as one batch that also
 * removes what the kernel holds of ours and no Service wants. The units wait in a->full_v for
 * full_applied() (or full_refused()).
 */
static int full_render(ServiceAgent *a, NftBatch *b) {
	Full f = { .a = a };
	int r;

	full_done(a);
	/* everything is rendered anew: new slots, counts from zero, every claim again (the winners
	 * are known before any unit is built) */
	svc_slot_pool_reset(a->slots);
	svc_refs_reset(a->refs);
	service_claims_reset(a->claims);
	object_cache_foreach(a->cache, KUBE_KIND_SERVICE, claim_one, &f);
	if (f.r >= 0)
		object_cache_foreach(a->cache, KUBE_KIND_SERVICE, collect_unit, &f);
	a->full_v = f.v;
	a->full_n = f.n;
	a->full_cap = f.cap;
	r = f.r;
	if (r >= 0)
		r = nft_list_names(nft_sync_ctx(a->sync), "chain", SVC_PREFIX, &a->kernel);
	if (r >= 0)
		r = nft_list_names(nft_sync_ctx(a->sync), "set", SVC_PREFIX, &a->kernel_sets);
	if (r < 0)
		return r;
	qsort_safe(a->full_v, a->full_n, sizeof(ServiceUnit *), unit_ptr_cmp);
	if (a->full_n == 0 && strv_length(a->kernel) == 0 && strv_length(a->kernel_sets) == 0)
		/* no Service and nothing of ours: add nothing, so a cluster without Services keeps
		 * exactly the datapath it had */
		return 0;
	return render_full(a, a->full_v, a->full_n, a->kernel, a->kernel_sets, b);
}

/*
 * NftSyncOps.refused of a full pass: each attempt is a whole full batch of the Services accepted so
 * far plus a range of the rest, checked by the kernel and aborted (full_bisect()); the accepted
 * ones then go in for real and the culprits are quarantined. 0, or the error of a batch no Service
 * explains.
 */
static int full_refused(ServiceAgent *a, const char *error) {
	_cleanup_(nft_batch_done) NftBatch b = {};
	FullBisect fb = { .a = a, .kernel = a->kernel, .kernel_sets = a->kernel_sets };
	size_t w = 0, n_all = a->full_n;
	char *err = NULL;
	int r;

	log_warning("Services: nftables refused the full batch, narrowing it: %s", error ?: "");
	fb.good = calloc(n_all + 1, sizeof(ServiceUnit *));
	fb.cand = calloc(n_all + 1, sizeof(ServiceUnit *));
	fb.refused = calloc(n_all + 1, sizeof(bool));
	fb.error = calloc(n_all + 1, sizeof(char *));
	if (fb.good && fb.cand && fb.refused && fb.error) {
		full_bisect(&fb, a->full_v, 0, n_all);
		/* the accepted ones, for real (render_full counts their shared elements anew) */
		r = nft_batch_begin(&b);
		if (r >= 0)
			r = render_full(a, fb.good, fb.n_good, a->kernel, a->kernel_sets, &b);
		if (r >= 0)
			r = nft_batch_finish(&b);
		if (r >= 0)
			r = nft_sync_apply(a->sync, b.buf, &err);
		log_debug("Services: full batch narrowed in %u batches", fb.batches);
		for (size_t i = 0; i < n_all; i++)
			if (fb.refused[i]) {
				quarantine_add(a, a->full_v[i]->key, fb.error[i]);
				svc_slot_pool_release(a->slots, a->full_v[i], NULL);
				service_unit_free(a->full_v[i]);
			} else
				a->full_v[w++] = a->full_v[i];
		a->full_n = w;
	} else
		r = -ENOMEM;
	for (size_t i = 0; fb.error && i < n_all; i++)
		free(fb.error[i]);
	free(fb.good);
	free(fb.cand);
	free(fb.refused);
	free(fb.error);
	if (r < 0) {
		log_error_errno(r, "Services: nftables refused the full batch: %s", err ?: "");
		if (b.len > BATCH_BYTES)
			malloc_trim(0); /* as full_applied() does */
	}
	free(err);
	return r;
}

/* A full pass is programmed: its units are the agent's now. */
static void full_applied(ServiceAgent *a, size_t batch_bytes) {
	for (size_t i = 0; i < a->full_n; i++)
		quarantine_drop(a, a->full_v[i]->key);
	a->last_batch_bytes = batch_bytes;
	for (size_t i = 0; i < a->n_units; i++)
		service_unit_free(a->units[i]);
	free(a->units);
	a->units = TAKE_PTR(a->full_v);
	a->n_units = a->full_n;
	a->cap_units = a->full_cap;
	a->base = a->n_units > 0 || batch_bytes > 0;
	a->full_n = a->full_cap = 0;
	full_done(a);
	clear_dirty(a);
	/*
	 * A full batch stays one batch (the kernel never holds half a program), so libnftables' parse of
	 * it peaks at ~20x its text (62 MB for 2,000 Services) and is freed when nft_apply() returns;
	 * glibc keeps that freed heap unless asked. Give it back: a real free, once per full sync.
	 */
	if (batch_bytes > BATCH_BYTES)
		malloc_trim(0);
}

/* After the batch: UDP entries the change made stale (service-compile.h), so a client keeping its
 * source port is not held on a deleted endpoint until the entry times out. */
static void clear_conntrack(ServiceAgent *a, const char *key, const ServiceUnit *next) {
	_cleanup_free_ ServiceCtFilter *f = NULL;
	bool found;
	size_t at = unit_find(a, key, &found), n = 0;
	int r;

	if (!found || service_unit_stale_udp(a->units[at], next, &f, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		r = service_conntrack_clear_udp(&f[i]);
		if (r < 0)
			log_warning_errno(r, "Services: cannot delete stale UDP conntrack entries of %s: %m", key);
		else if (r > 0) {
			a->conntrack_deleted += (uint64_t) r;
			log_debug("Services: %s: deleted %d stale UDP conntrack entries", key, r);
		}
	}
}

/*
 * A partial pass (NftSyncOps.render, not full): the dirty Services rebuilt, each one's change
 * rendered apart and applied through the runner in batches of about BATCH_BYTES, each narrowed to
 * the Services nftables refuses (apply_bisect()); those are quarantined. Leaves the runner's batch
 * empty.
 */
static int sync_dirty(ServiceAgent *a) {
	_cleanup_free_ ServiceUnit **next = NULL;
	_cleanup_free_ size_t *idx = NULL;
	_cleanup_(nft_batch_done) NftBatch prefix = {}, repair = {};
	char *err = NULL;
	size_t n, n_idx = 0, total = 0;
	Segments sg = {};
	int r;

	r = claim_dirty(a);
	if (r < 0)
		return r; /* the claims are unknown now: the retry is a full sync */
	n = a->n_dirty;
	next = calloc(n + 1, sizeof(ServiceUnit *));
	idx = calloc(n + 1, sizeof(size_t));
	sg.text = calloc(n + 1, sizeof(char *));
	sg.len = calloc(n + 1, sizeof(size_t));
	sg.refused = calloc(n + 1, sizeof(bool));
	sg.error = calloc(n + 1, sizeof(char *));
	if (!next || !idx || !sg.text || !sg.len || !sg.refused || !sg.error) {
		r = -ENOMEM;
		goto out;
	}
	r = nft_batch_begin(&prefix);
	if (r < 0)
		goto out;
	if (!a->base) /* the first Service of a cluster that had none */
		service_render_base(&prefix, a->cfg.service_ranges, a->cfg.n_service_ranges);
	r = nft_batch_finish(&prefix);
	if (r < 0)
		goto out;
	/* each Service's change rendered apart, so a refused batch can be narrowed to it */
	for (size_t i = 0; i < n && r >= 0; i++) {
		char *slash = strchr(a->dirty[i], '/');
		const KubeService *svc;
		bool found, dup = false;
		size_t at;

		for (size_t k = 0; k < i && !dup; k++)
			dup = streq(a->dirty[k], a->dirty[i]);
		if (dup || !slash)
			continue;
		*slash = '\0';
		svc = KUBE_SERVICE(object_cache_get(a->cache, KUBE_KIND_SERVICE, a->dirty[i], slash + 1));
		*slash = '/';
		at = unit_find(a, a->dirty[i], &found);
		if (svc)
			r = build(a, svc, found ? a->units[at] : NULL, &next[i]);
		if (r < 0)
			break;
		if (service_unit_equal(found ? a->units[at] : NULL, next[i]))
			continue;
		{
			NftBatch seg;

			r = nft_batch_begin(&seg);
			if (r < 0)
				break;
			service_render_unit_diff(&seg, found ? a->units[at] : NULL, next[i], false);
			r = svc_refs_update(a->refs, found ? a->units[at] : NULL, next[i], &seg);
			if (nft_batch_finish(&seg) < 0 && r >= 0)
				r = -ENOMEM;
			sg.len[i] = seg.len;
			sg.text[i] = nft_batch_steal(&seg);
		}
		if (sg.len[i] > 0)
			idx[n_idx++] = i;
		total += sg.len[i];
	}
	if (r < 0)
		goto out;
	if (total == 0 && prefix.len == 0)
		goto done; /* a no-op: nothing applied */
	/* the fixed objects alone first: refused, no Service is to blame (retried as a full sync) */
	if (prefix.len > 0) {
		r = nft_sync_apply(a->sync, prefix.buf, &err);
		if (r < 0) {
			log_error_errno(r, "Services: nftables refused the fixed objects: %s", err ?: "");
			goto out;
		}
		a->base = true;
	}
	sg.prefix = "";
	/* in batches of about BATCH_BYTES, each Service's change whole in one of them (service-agent.h) */
	for (size_t k = 0, j; k < n_idx; k = j) {
		size_t bytes = 0;

		for (j = k; j < n_idx && (j == k || bytes + sg.len[idx[j]] <= BATCH_BYTES); j++)
			bytes += sg.len[idx[j]];
		apply_bisect(a, &sg, idx + k, j - k);
	}
	if (sg.batches > 1)
		log_debug("Services: batch narrowed in %u batches", sg.batches);
	/* the refused ones: counts undone, new slots freed, the old version stays in force */
	if (nft_batch_begin(&repair) < 0)
		repair = (NftBatch) {};
	for (size_t k = 0; k < n_idx; k++) {
		size_t i = idx[k];
		bool found;
		size_t at;

		if (!sg.refused[i])
			continue;
		at = unit_find(a, a->dirty[i], &found);
		(void) svc_refs_update(a->refs, next[i], found ? a->units[at] : NULL, NULL);
		svc_slot_pool_release(a->slots, next[i], found ? a->units[at] : NULL);
		if (repair.f)
			svc_refs_render_held(a->refs, next[i], &repair);
		quarantine_add(a, a->dirty[i], sg.error[i]);
		next[i] = service_unit_free(next[i]);
	}
	if (repair.f && nft_batch_finish(&repair) >= 0 && repair.len > 0) {
		free(err);
		err = NULL;
		if (nft_sync_apply(a->sync, repair.buf, &err) < 0)
			log_warning("Services: shared elements of refused Services not restored: %s", err ?: "");
	}
done:
	for (size_t i = 0; i < n; i++) {
		bool dup = false, found;
		size_t at;

		for (size_t k = 0; k < i && !dup; k++)
			dup = streq(a->dirty[k], a->dirty[i]);
		if (dup || sg.refused[i])
			continue;
		clear_conntrack(a, a->dirty[i], next[i]);
		at = unit_find(a, a->dirty[i], &found);
		svc_slot_pool_release(a->slots, found ? a->units[at] : NULL, next[i]);
		if (unit_replace(a, a->dirty[i], next[i]) < 0) {
			r = -ENOMEM; /* the next (full) sync repairs it */
			continue;
		}
		next[i] = NULL;
		quarantine_drop(a, a->dirty[i]);
	}
	a->last_batch_bytes = total + prefix.len;
	clear_dirty(a);
out:
	for (size_t i = 0; i < n; i++) {
		service_unit_free(next ? next[i] : NULL);
		free(sg.text ? sg.text[i] : NULL);
		free(sg.error ? sg.error[i] : NULL);
	}
	free(sg.text);
	free(sg.len);
	free(sg.refused);
	free(sg.error);
	free(err);
	return r;
}

typedef struct HealthCollect {
	ServiceAgent *a;
	ServiceHealthEntry *v;
	size_t n;
	bool oom;
} HealthCollect;

static int count_local(const KubeObject *o, void *userdata) {
	const KubeEndpointSlice *sl = KUBE_ENDPOINT_SLICE(o);
	HealthCollect *c = userdata;

	for (size_t i = 0; sl && i < sl->n_endpoints; i++)
		if (sl->endpoints[i].ready && !sl->endpoints[i].terminating && sl->endpoints[i].node_name &&
		    streq(sl->endpoints[i].node_name, c->a->cfg.node))
			c->v[c->n].local_endpoints++;
	return 0;
}

/* A healthCheckNodePort listens on every address of the node: the same policy and claims as a
 * nodePort (reported by the Service's build). */
static bool health_admitted(ServiceAgent *a, const KubeService *svc) {
	_cleanup_free_ char *key = strdup_printf("%s/%s", svc->meta.namespace, svc->meta.name);
	_cleanup_free_ char *ckey = service_claim_key_node_port(KUBE_PROTO_TCP, svc->health_check_node_port);

	return key && ckey &&
	       service_admission_check_node_port(&a->policy, KUBE_PROTO_TCP, svc->health_check_node_port) ==
			       SERVICE_ADMIT &&
	       service_claims_wins(a->claims, key, ckey);
}

static int collect_health(const KubeObject *o, void *userdata) {
	const KubeService *svc = KUBE_SERVICE(o);
	HealthCollect *c = userdata;
	ServiceHealthEntry *nv;

	if (!svc || svc->type != KUBE_SERVICE_LOAD_BALANCER || !svc->external_traffic_local ||
	    !svc->health_check_node_port || !health_admitted(c->a, svc))
		return 0;
	nv = reallocarray(c->v, c->n + 1, sizeof(ServiceHealthEntry));
	if (!nv) {
		c->oom = true;
		return -ENOMEM;
	}
	c->v = nv;
	c->v[c->n] = (ServiceHealthEntry) { .port = svc->health_check_node_port,
					    .namespace = o->namespace,
					    .name = o->name };
	object_cache_foreach_slice_of_service(c->a->cache, o->namespace, o->name, count_local, c);
	c->n++;
	return 0;
}

static void update_health(ServiceAgent *a) {
	HealthCollect c = { .a = a };

	object_cache_foreach(a->cache, KUBE_KIND_SERVICE, collect_health, &c);
	if (!c.oom)
		(void) service_health_update(a->health, c.v, c.n);
	free(c.v);
}

/* NftSyncOps.prepare: -EAGAIN until the node's addresses are known; a changed policy (or a dirty
 * set that could not be remembered) makes the pass full. */
static int sync_prepare(NftSync *s, void *userdata) {
	ServiceAgent *a = userdata;
	int r = policy_refresh(a);

	if (r == -EAGAIN) /* again once the leases are listed; not a failure */
		return r;
	if (r > 0 || a->dirty_oom) /* a node address or the pod network changed: judge everything again */
		nft_sync_request_full(s);
	return 0;
}

static int sync_render(NftSync *s, bool full, NftBatch *b, void *userdata) {
	ServiceAgent *a = userdata;

	return full ? full_render(a, b) : sync_dirty(a);
}

static int sync_refused(NftSync *s, bool full, NftBatch *b, int r, const char *error, void *userdata) {
	ServiceAgent *a = userdata;

	if (!full) /* a partial pass applies its parts itself: its batch stays empty */
		return r;
	return full_refused(a, error);
}

static void sync_applied(NftSync *s, bool full, const NftBatch *b, void *userdata) {
	ServiceAgent *a = userdata;
	NftSyncStats st;

	if (full)
		full_applied(a, b->len);
	update_health(a);
	nft_sync_stats(s, &st);
	log_debug("Services: %s sync of %zu services in %.2f ms (batch %zu bytes)", full ? "full" : "partial",
		  a->n_units, st.last_ms, a->last_batch_bytes);
}

static bool sync_ready(void *userdata) {
	ServiceAgent *a = userdata;

	return object_cache_all_synced(a->cache);
}

static const NftSyncOps service_sync_ops = {
	.name = "Services",
	.metrics_prefix = "weft_service",
	.syncs_help = "Service programs of this node (full and partial batches, no-ops).",
	.debounce_usec = SERVICE_AGENT_DEBOUNCE_USEC,
	.retry_usec = SERVICE_AGENT_RETRY_USEC,
	.retry_max_usec = SERVICE_AGENT_RETRY_MAX_USEC,
	.ready = sync_ready,
	.prepare = sync_prepare,
	.render = sync_render,
	.refused = sync_refused,
	.applied = sync_applied,
};

static void mark_dirty(ServiceAgent *a, const char *ns, const char *name);

static void schedule(ServiceAgent *a) {
	nft_sync_schedule(a->sync);
}

/* Quarantined Services tried again (the kernel may take them now: the conflicting element is gone). */
static int on_retry(EventSource *s, void *userdata) {
	ServiceAgent *a = userdata;

	for (size_t i = 0; a->quarantined && a->quarantined[i]; i++) {
		_cleanup_free_ char *ns = strdup(a->quarantined[i]);
		char *slash = ns ? strchr(ns, '/') : NULL;

		if (!slash)
			continue;
		*slash = '\0';
		mark_dirty(a, ns, slash + 1);
	}
	schedule(a);
	if (a->quarantined && a->quarantined[0])
		(void) event_source_arm(a->retry_timer, QUARANTINE_RETRY_USEC, 0);
	return 0;
}

/* A lease came or went, an address moved: Services holding such an address are judged again. */
static int on_recheck(EventSource *s, void *userdata) {
	ServiceAgent *a = userdata;
	NftSyncStats st;

	nft_sync_stats(a->sync, &st);
	if (st.next_full || policy_refresh(a) <= 0) /* not programmed yet, or after a failure: a full pass comes */
		return 0;
	a->dirty_oom = true; /* "sync everything" */
	schedule(a);
	return 0;
}

static void mark_dirty_key(ServiceAgent *a, const char *key) {
	char *k;

	if (a->n_dirty == a->cap_dirty) {
		size_t cap = a->cap_dirty ? a->cap_dirty * 2 : 16;
		char **v = reallocarray(a->dirty, cap, sizeof(char *));

		if (!v) {
			a->dirty_oom = true;
			return;
		}
		a->dirty = v;
		a->cap_dirty = cap;
	}
	k = strdup(key);
	if (!k) {
		a->dirty_oom = true;
		return;
	}
	a->dirty[a->n_dirty++] = k;
}

static void mark_dirty(ServiceAgent *a, const char *ns, const char *name) {
	_cleanup_free_ char *k = NULL;

	if (!ns || !name)
		return;
	k = strdup_printf("%s/%s", ns, name);
	if (!k) {
		a->dirty_oom = true;
		return;
	}
	mark_dirty_key(a, k);
}

static void on_object(ServiceAgent *a, const KubeObject *o) {
	if (o->kind == KUBE_KIND_SERVICE)
		mark_dirty(a, o->namespace, o->name);
	else if (o->kind == KUBE_KIND_ENDPOINT_SLICE)
		mark_dirty(a, o->namespace, KUBE_ENDPOINT_SLICE(o)->service_name);
	else
		return;
	schedule(a);
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	on_object(userdata, o);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	on_object(userdata, old);
	on_object(userdata, o);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	on_object(userdata, old);
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	schedule(userdata);
}

const ObjectCacheHandlers service_agent_handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
};

int service_agent_new(ObjectCache *cache, EventLoop *loop, const ServiceAgentConfig *cfg, ServiceAgent **ret) {
	ServiceAgent *a = calloc(1, sizeof(ServiceAgent));
	int r;

	if (!a)
		return -ENOMEM;
	*a = (ServiceAgent) { .cache = cache, .loop = loop, .cfg = *cfg };
	r = nft_sync_new(loop, &service_sync_ops, a, &a->sync);
	if (r >= 0)
		r = svc_slot_pool_new(&a->slots);
	if (r >= 0)
		r = svc_refs_new(&a->refs);
	if (r >= 0)
		r = service_health_new(loop, &a->health);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_retry, a, &a->retry_timer);
	if (r >= 0)
		r = service_claims_new(&a->claims);
	if (r >= 0)
		r = event_loop_add_timer(loop, on_recheck, a, &a->recheck);
	if (r >= 0)
		r = event_source_arm(a->recheck, RECHECK_USEC, RECHECK_USEC);
	if (r >= 0)
		(void) policy_refresh(a);
	if (r < 0) {
		service_agent_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

ServiceAgent *service_agent_free(ServiceAgent *a) {
	if (!a)
		return NULL;
	nft_sync_free(a->sync);
	event_source_free(a->retry_timer);
	strv_free(a->quarantined);
	event_source_free(a->recheck);
	service_claims_free(a->claims);
	for (size_t i = 0; i < a->n_reports; i++)
		free(a->reports[i].line);
	free(a->reports);
	free(a->node_addrs);
	service_health_free(a->health);
	svc_slot_pool_free(a->slots);
	svc_refs_free(a->refs);
	full_done(a);
	for (size_t i = 0; i < a->n_units; i++)
		service_unit_free(a->units[i]);
	free(a->units);
	clear_dirty(a);
	free(a->dirty);
	free(a);
	return NULL;
}

int service_agent_render_metrics(ServiceAgent *a, FILE *f) {
	nft_sync_render_metrics(a->sync, f);
	fprintf(f,
		"# HELP weft_service_conntrack_deleted_total Stale UDP conntrack entries deleted.\n"
		"# TYPE weft_service_conntrack_deleted_total counter\nweft_service_conntrack_deleted_total %" PRIu64
		"\n"
		"# HELP weft_services Services programmed (headless and ExternalName ones hold no objects).\n"
		"# TYPE weft_services gauge\nweft_services %zu\n"
		"# HELP weft_service_quarantined Services whose objects nftables refused, not programmed in that "
		"version.\n"
		"# TYPE weft_service_quarantined gauge\nweft_service_quarantined %zu\n",
		a->conntrack_deleted, a->n_units, strv_length(a->quarantined));
	fprintf(f, "# HELP weft_service_rejected_total Service addresses, ports and endpoints refused by the address "
		   "policy or lost in a conflict (docs/service-address-policy.md), each counted when first seen; "
		   "reason nftables: Services whose objects the kernel refused (quarantined).\n"
		   "# TYPE weft_service_rejected_total counter\n");
	for (int i = SERVICE_ADMIT + 1; i < _SERVICE_REJECT_MAX; i++)
		fprintf(f, "weft_service_rejected_total{reason=\"%s\"} %" PRIu64 "\n",
			service_reject_reason_to_string(i), a->rejected[i]);
	fprintf(f, "weft_service_rejected_total{reason=\"nftables\"} %" PRIu64 "\n", a->rejected_nftables);
	fprintf(f,
		"# HELP weft_service_claims Service address and node-port keys claimed (conflicts count once).\n"
		"# TYPE weft_service_claims gauge\nweft_service_claims %zu\n",
		service_claims_size(a->claims));
	return 0;
}
