/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The one nftables sync runner of weftd (kube-proxy's BoundedFrequencyRunner, shared by all its
 * modes). NetworkPolicy, Services and the node-* chains (masquerade) each give it callbacks; it
 * owns what every one of them needs the same way:
 *
 *   - the nft context (one per runner, in the namespace nft_sync_new() runs in);
 *   - the debounce: nft_sync_schedule() arms one pass `debounce_usec` after the first request of
 *     a burst; requests while one is pending join it;
 *   - the retry: a failed pass is retried after `retry_usec`, doubled after each further failure
 *     up to `retry_max_usec` (reset by a pass that succeeds);
 *   - full versus partial: the first pass, a pass after a failure and one asked for with
 *     nft_sync_request_full() are full (the user renders everything, from what the kernel holds);
 *     the others partial (the user renders what changed);
 *   - the apply: the batch a pass renders goes in as ONE transaction; libnftables' cache is dropped
 *     after every batch (nft_ctx_drop_cache(): it holds the batch's objects until the next one);
 *   - the metrics <prefix>_syncs_total, _full_syncs_total, _sync_failures_total,
 *     _last_sync_seconds, _last_full_sync_seconds, _max_sync_seconds, in one format.
 *
 * A pass: ops->prepare (optional: -EAGAIN postpones it by retry_usec without counting a failure),
 * ops->render(full, batch), the batch applied (an empty one is a no-op), then ops->applied(full).
 * A refused batch goes to ops->refused when the user has one: it may narrow the batch to the
 * objects that cause the refusal (nft_sync_check() of parts, then nft_sync_apply() of the good
 * ones: Services' bisection and quarantine) and return 0, so the pass counts as done. Without the
 * hook, or when it returns < 0, the pass failed. render may also apply parts itself through
 * nft_sync_apply() (Services' partial sync goes in batches of bounded size, each narrowed apart)
 * and leave the batch empty: the pass is not a no-op then.
 *
 * Without an event loop (loop NULL) there is no timer: passes run only through nft_sync_run(),
 * and a failure is not retried (the node-* chains are repaired by weftd's periodic check).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "shared/event/event-loop.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft.h"

typedef struct NftSync NftSync;

typedef struct NftSyncOps {
	const char *name;           /* in log lines: "Policy", "Services" */
	const char *metrics_prefix; /* "weft_policy": <prefix>_syncs_total ...; NULL renders none */
	const char *syncs_help;     /* HELP text of <prefix>_syncs_total */
	uint64_t debounce_usec;     /* nft_sync_schedule() to the pass */
	uint64_t retry_usec;        /* after a failed pass, doubled per failure up to retry_max_usec */
	uint64_t retry_max_usec;    /* 0: retry_usec, no backoff */

	/* Optional: may a pass be scheduled now (e.g. the object cache synced)? NULL: yes. */
	bool (*ready)(void *userdata);
	/* Optional, before each pass: < 0 fails the pass, -EAGAIN postpones it (retry_usec, not a
	 * failure); may call nft_sync_request_full() for this pass. */
	int (*prepare)(NftSync *s, void *userdata);
	/* Renders the pass into b (empty: nothing to change). 0 or a negative errno (a failure). */
	int (*render)(NftSync *s, bool full, NftBatch *b, void *userdata);
	/* Optional: b was refused with r (nftables' text: error). 0: handled (narrowed, the good part
	 * applied through nft_sync_apply()), the pass is done; < 0: the pass failed. */
	int (*refused)(NftSync *s, bool full, NftBatch *b, int r, const char *error, void *userdata);
	/* Optional: the pass is done (b applied, or empty; after refused: b as rendered). */
	void (*applied)(NftSync *s, bool full, const NftBatch *b, void *userdata);
	/* Optional, for tests: applies (check: only checks, nft_check()) the text instead of the
	 * runner's nft context; then the runner opens none. */
	int (*apply)(const char *text, bool check, char **ret_error, void *userdata);
} NftSyncOps;

/* ops and userdata are borrowed and must outlive the runner. loop may be NULL (no timers, see
 * above). 0, -ENOMEM or nft_ctx_open()'s error. */
int nft_sync_new(EventLoop *loop, const NftSyncOps *ops, void *userdata, NftSync **ret);
NftSync *nft_sync_free(NftSync *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(NftSync *, nft_sync_free);

/* The runner's context (NULL with ops->apply): listings the renderers need. */
NftCtx *nft_sync_ctx(NftSync *s);

/* A pass debounce_usec from now, unless one is already pending (or ops->ready says no). */
void nft_sync_schedule(NftSync *s);
/* The next pass is full. */
void nft_sync_request_full(NftSync *s);
/* Runs a pass now (a pending one is dropped): 0, or the pass's error (logged by the user). */
int nft_sync_run(NftSync *s);

/* Applies text as one transaction through the runner, counted in the pass, cache dropped after.
 * For render (parts of a pass) and refused (the good part). See nft_apply(). */
int nft_sync_apply(NftSync *s, const char *text, char **ret_error);
/* The same checked by the kernel and aborted (nft_check()): narrowing without changing anything. */
int nft_sync_check(NftSync *s, const char *text, char **ret_error);

/* What the runner knows. */
typedef struct NftSyncStats {
	uint64_t syncs, full_syncs, failures, noops;
	double last_ms, last_full_ms, max_ms;
	uint64_t retry_usec; /* the delay of the retry armed after the last failure (0: none) */
	bool pending;        /* a pass is armed (debounce or retry) */
	bool next_full;
} NftSyncStats;
void nft_sync_stats(const NftSync *s, NftSyncStats *ret);

/* The sync metrics, with the ops' prefix (nothing without one). */
void nft_sync_render_metrics(const NftSync *s, FILE *f);
