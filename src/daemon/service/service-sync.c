/* SPDX-License-Identifier: Apache-2.0 */
/* The Service agent's passes through the sync runner (nft-sync.h): a full batch, or the dirty
 * Services' changes in bounded batches; a refused batch narrowed to the Services that cause it,
 * which are quarantined; stale UDP conntrack entries after a change; `weftd uninstall`. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-agent-internal.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"

int service_uninstall(NftCtx *nft, size_t *ret_n, char **ret_error) {
	_cleanup_strv_free_ char **chains = NULL, **sets = NULL, **maps = NULL, **counters = NULL;
	_cleanup_(nft_batch_done) NftBatch b = {};
	int r;

	*ret_n = 0;
	/* svc-* objects of table inet weft: the per-Service ones hold a '/', the fixed ones do not */
	r = nft_list_names(nft, "chain", SVC_PREFIX, &chains);
	if (r >= 0)
		r = nft_list_names(nft, "set", SVC_PREFIX, &sets);
	if (r >= 0)
		r = nft_list_names(nft, "map", SVC_PREFIX, &maps);
	if (r >= 0)
		r = nft_list_names(nft, "counter", SVC_PREFIX, &counters);
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
	for (size_t i = 0; counters && counters[i]; i++)
		nft_batch_add(&b, "delete counter " NFT_TABLE_INET " %s", counters[i]);
	r = nft_batch_finish(&b);
	if (r < 0)
		return r;
	*ret_n = strv_length(chains) + strv_length(maps) + strv_length(sets) + strv_length(counters);
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
	_cleanup_free_ char *key = strdup_printf("%s/%s", o->namespace, o->name);
	bool found = false;
	size_t at = key ? service_agent_unit_find(f->a, key, &found) : 0;

	if (!key)
		return f->r = -ENOMEM;
	/* built from the one programmed: its chains keep their slots, its map elements their counters */
	f->r = service_build_unit(f->a, KUBE_SERVICE(o), found ? f->a->units[at] : NULL, &u);
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
	f->r = key ? service_build_claim(f->a, key, KUBE_SERVICE(o)) : -ENOMEM;
	return f->r < 0 ? f->r : 0;
}

static int str_ptr_cmp(const void *x, const void *y) {
	return strcmp(*(char *const *) x, *(char *const *) y);
}

static int unit_ptr_cmp(const void *x, const void *y) {
	return strcmp((*(ServiceUnit *const *) x)->key, (*(ServiceUnit *const *) y)->key);
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
	const SvcKernelState *ks = a->kernel_state;
	bool recreate = false;
	int r;

	svc_refs_reset(a->refs);
	/* counted maps without the counter flag (an older weftd's): emptied of rules naming them and
	 * declared again (the kernel refuses to add the flag to a map) */
	for (size_t i = 0; ks && i < ks->n_maps && !recreate; i++)
		recreate = !ks->maps[i].counted;
	if (recreate) {
		for (size_t i = 0; kernel && kernel[i]; i++)
			nft_batch_add(out, "flush chain " NFT_TABLE_INET " %s", kernel[i]);
		for (size_t i = 0; i < ks->n_maps; i++)
			if (!ks->maps[i].counted)
				nft_batch_add(out, "delete map " NFT_TABLE_INET " %s", ks->maps[i].name);
	}
	service_render_base(out, a->cfg.service_ranges, a->cfg.n_service_ranges);
	service_render_flush_maps(out, ks);
	for (size_t i = 0; kernel && kernel[i]; i++)
		if (strchr(kernel[i], '/')) /* per-Service chains; the fixed ones are flushed above */
			nft_batch_add(out, "flush chain " NFT_TABLE_INET " %s", kernel[i]);
	r = service_render_full(out, units, n, a->refs, ks);
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
	/* named counters no Service wants (after the rules naming them) */
	for (size_t i = 0; ks && i < ks->n_counters; i++) {
		bool wanted = false;

		for (size_t k = 0; k < n && !wanted; k++)
			wanted = bsearch_safe(&ks->counters[i], units[k]->counters, units[k]->n_counters,
					      sizeof(char *), str_ptr_cmp) != NULL;
		if (!wanted && strchr(ks->counters[i], '/'))
			nft_batch_add(out, "delete counter " NFT_TABLE_INET " %s", ks->counters[i]);
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

/*
 * A counted map's element the kernel holds is kept by a full pass (with its counter) only if the
 * Service that programmed it (a->units) wants it as it is now: an endpoint-map slot of a Service
 * gone may be another's in this pass. A map none of whose elements is kept is flushed.
 */
static void mark_kept(ServiceAgent *a) {
	SvcKernelState *ks = a->kernel_state;

	for (size_t i = 0; ks && i < a->n_units; i++) {
		const ServiceUnit *old = a->units[i], *const * np;
		ServiceUnit key = { .key = old->key }, *kp = &key;

		np = bsearch_safe(&kp, a->full_v, a->full_n, sizeof(ServiceUnit *), unit_ptr_cmp);
		if (!np)
			continue;
		for (size_t k = 0; k < old->n_elems; k++) {
			const SvcElem *e = &old->elems[k], *ne;
			SvcKernelElem *ke;

			if (!svc_map_counted(e->map))
				continue;
			ke = svc_kernel_elem_mut((SvcKernelMap *) svc_kernel_map(ks, e->map), e->key);
			ne = service_unit_elem(*np, e->map, e->key);
			if (ke && ne && streq(ke->value, e->value) && streq(ne->value, e->value))
				ke->keep = true;
		}
	}
	for (size_t i = 0; ks && i < ks->n_maps; i++) {
		bool any = false;

		for (size_t k = 0; k < ks->maps[i].n_elems && !any; k++)
			any = ks->maps[i].elems[k].keep;
		if (!any)
			ks->maps[i].readable = false;
	}
}

/* Drops what a full pass left (its units when it failed). */
void service_sync_full_done(ServiceAgent *a) {
	for (size_t i = 0; i < a->full_n; i++)
		service_unit_free(a->full_v[i]);
	a->full_v = mfree(a->full_v);
	a->full_n = a->full_cap = 0;
	a->kernel = strv_free(a->kernel);
	a->kernel_sets = strv_free(a->kernel_sets);
	a->kernel_state = svc_kernel_free(a->kernel_state);
}

/*
 * A full pass (NftSyncOps.render, full): every Service built anew, rendered as one batch that also
 * removes what the kernel holds of ours and no Service wants. The units wait in a->full_v for
 * service_sync_full_applied() (or service_sync_full_refused()).
 */
int service_sync_full_render(ServiceAgent *a, NftBatch *b) {
	Full f = { .a = a };
	int r;

	service_sync_full_done(a);
	/* everything is rendered anew: counts from zero, every claim again (the winners are known
	 * before any unit is built); the programmed units' slots kept (collect_unit) */
	svc_slot_pool_reset(a->slots);
	for (size_t i = 0; i < a->n_units; i++)
		svc_slot_pool_reserve(a->slots, a->units[i]);
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
	/* what the counted maps hold: kept and changed element by element (service-counters.h);
	 * unread, they are flushed (their counters start again) */
	r = svc_kernel_read(&a->kernel_state, NULL, 0);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		log_warning_errno(r, "Services: cannot read the endpoint maps, their counters start again: %m");
	qsort_safe(a->full_v, a->full_n, sizeof(ServiceUnit *), unit_ptr_cmp);
	mark_kept(a);
	if (a->full_n == 0 && strv_length(a->kernel) == 0 && strv_length(a->kernel_sets) == 0 &&
	    (!a->kernel_state || (a->kernel_state->n_maps == 0 && a->kernel_state->n_counters == 0)))
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
int service_sync_full_refused(ServiceAgent *a, const char *error) {
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
			malloc_trim(0); /* as service_sync_full_applied() does */
	}
	free(err);
	return r;
}

/* A full pass is programmed: its units are the agent's now. */
void service_sync_full_applied(ServiceAgent *a, size_t batch_bytes) {
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
	/* the slots are the programmed units' (those of Services gone or refused are free again) */
	svc_slot_pool_reset(a->slots);
	for (size_t i = 0; i < a->n_units; i++)
		svc_slot_pool_reserve(a->slots, a->units[i]);
	a->full_n = a->full_cap = 0;
	service_sync_full_done(a);
	service_agent_clear_dirty(a);
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
	size_t at = service_agent_unit_find(a, key, &found), n = 0;
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
int service_sync_dirty(ServiceAgent *a) {
	_cleanup_free_ ServiceUnit **next = NULL;
	_cleanup_free_ size_t *idx = NULL;
	_cleanup_(nft_batch_done) NftBatch prefix = {}, repair = {};
	char *err = NULL;
	size_t n, n_idx = 0, total = 0;
	Segments sg = {};
	int r;

	r = service_build_claim_dirty(a);
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
		at = service_agent_unit_find(a, a->dirty[i], &found);
		if (svc)
			r = service_build_unit(a, svc, found ? a->units[at] : NULL, &next[i]);
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
		at = service_agent_unit_find(a, a->dirty[i], &found);
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
		at = service_agent_unit_find(a, a->dirty[i], &found);
		svc_slot_pool_release(a->slots, found ? a->units[at] : NULL, next[i]);
		if (service_agent_unit_replace(a, a->dirty[i], next[i]) < 0) {
			r = -ENOMEM; /* the next (full) sync repairs it */
			continue;
		}
		next[i] = NULL;
		quarantine_drop(a, a->dirty[i]);
	}
	a->last_batch_bytes = total + prefix.len;
	service_agent_clear_dirty(a);
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
