/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/nft-sync.h"

struct NftSync {
	const NftSyncOps *ops;
	void *userdata;
	NftCtx *nft;
	EventSource *timer;
	bool scheduled;
	bool full;        /* the next pass is full: at start, after a failure, or asked for */
	unsigned applies; /* batches applied in the running pass */
	uint64_t retry_usec;
	NftSyncStats st;
};

static double now_ms(void) {
	return (double) now_usec() / 1e3;
}

static int do_apply(NftSync *s, const char *text, bool check, char **ret_error) {
	int r;

	if (s->ops->apply)
		return s->ops->apply(text, check, ret_error, s->userdata);
	r = check ? nft_check(s->nft, text, ret_error) : nft_apply(s->nft, text, ret_error);
	(void) nft_ctx_drop_cache(s->nft); /* nft.h: the batch's objects, held until the next one */
	return r;
}

int nft_sync_apply(NftSync *s, const char *text, char **ret_error) {
	s->applies++;
	return do_apply(s, text, false, ret_error);
}

int nft_sync_check(NftSync *s, const char *text, char **ret_error) {
	return do_apply(s, text, true, ret_error);
}

static void arm(NftSync *s, uint64_t usec) {
	if (s->timer && event_source_arm(s->timer, usec, 0) >= 0)
		s->scheduled = true;
}

static void failed(NftSync *s) {
	s->st.failures++;
	s->full = true; /* next time: from what the kernel holds */
	if (!s->timer)
		return;
	s->retry_usec = s->retry_usec ? s->retry_usec * 2 : s->ops->retry_usec;
	if (s->retry_usec > MAX(s->ops->retry_max_usec, s->ops->retry_usec))
		s->retry_usec = MAX(s->ops->retry_max_usec, s->ops->retry_usec);
	arm(s, s->retry_usec);
}

/* One pass: 0, or its error (counted, retried). */
static int pass(NftSync *s) {
	_cleanup_(nft_batch_done) NftBatch b = {};
	_cleanup_free_ char *err = NULL;
	double t0 = now_ms();
	bool full;
	int r;

	s->applies = 0;
	if (s->ops->prepare) {
		r = s->ops->prepare(s, s->userdata);
		if (r == -EAGAIN) { /* again later; not a failure */
			arm(s, s->ops->retry_usec);
			return 0;
		}
		if (r < 0) {
			failed(s);
			return r;
		}
	}
	full = s->full;
	r = nft_batch_begin(&b);
	if (r >= 0)
		r = s->ops->render(s, full, &b, s->userdata);
	if (r >= 0)
		r = nft_batch_finish(&b);
	if (r < 0) {
		failed(s);
		return r;
	}
	if (b.len > 0) {
		r = nft_sync_apply(s, b.buf, &err);
		if (r < 0 && s->ops->refused)
			r = s->ops->refused(s, full, &b, r, err, s->userdata);
		else if (r < 0) {
			log_error_errno(r, "%s: nftables refused the batch: %s", s->ops->name, err ?: "");
			log_debug("%s batch:\n%s", s->ops->name, b.buf);
		}
		if (r < 0) {
			failed(s);
			return r;
		}
	} else if (s->applies == 0)
		s->st.noops++;
	s->full = false;
	s->retry_usec = 0;
	s->st.syncs++;
	if (full)
		s->st.full_syncs++;
	s->st.last_ms = now_ms() - t0;
	if (full)
		s->st.last_full_ms = s->st.last_ms;
	if (s->st.last_ms > s->st.max_ms)
		s->st.max_ms = s->st.last_ms;
	if (s->ops->applied)
		s->ops->applied(s, full, &b, s->userdata);
	return 0;
}

static int on_timer(EventSource *src, void *userdata) {
	NftSync *s = userdata;

	s->scheduled = false;
	(void) pass(s);
	return 0;
}

int nft_sync_new(EventLoop *loop, const NftSyncOps *ops, void *userdata, NftSync **ret) {
	_cleanup_(nft_sync_freep) NftSync *s = calloc(1, sizeof(NftSync));
	int r;

	if (!s)
		return -ENOMEM;
	*s = (NftSync) { .ops = ops, .userdata = userdata, .full = true };
	if (!ops->apply) {
		r = nft_ctx_open(&s->nft);
		if (r < 0)
			return r;
	}
	if (loop) {
		r = event_loop_add_timer(loop, on_timer, s, &s->timer);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

NftSync *nft_sync_free(NftSync *s) {
	if (!s)
		return NULL;
	event_source_free(s->timer);
	nft_ctx_free(s->nft);
	free(s);
	return NULL;
}

NftCtx *nft_sync_ctx(NftSync *s) {
	return s->nft;
}

void nft_sync_schedule(NftSync *s) {
	if (s->scheduled || !s->timer || (s->ops->ready && !s->ops->ready(s->userdata)))
		return;
	if (event_source_arm_once(s->timer, s->ops->debounce_usec) >= 0)
		s->scheduled = true;
}

void nft_sync_request_full(NftSync *s) {
	s->full = true;
}

int nft_sync_run(NftSync *s) {
	if (s->timer && s->scheduled) {
		(void) event_source_disarm(s->timer);
		s->scheduled = false;
	}
	return pass(s);
}

void nft_sync_stats(const NftSync *s, NftSyncStats *ret) {
	*ret = s->st;
	ret->retry_usec = s->scheduled ? s->retry_usec : 0;
	ret->pending = s->scheduled;
	ret->next_full = s->full;
}

void nft_sync_render_metrics(const NftSync *s, FILE *f) {
	const char *p = s->ops->metrics_prefix;

	if (!p)
		return;
	fprintf(f, "# HELP %s_syncs_total %s\n# TYPE %s_syncs_total counter\n%s_syncs_total %" PRIu64 "\n", p,
		s->ops->syncs_help ?: "Programs of this node (batches, or no-ops).", p, p, s->st.syncs);
	fprintf(f,
		"# HELP %s_full_syncs_total Of those, full programs (the first, and the one after a failure).\n"
		"# TYPE %s_full_syncs_total counter\n%s_full_syncs_total %" PRIu64 "\n",
		p, p, p, s->st.full_syncs);
	fprintf(f,
		"# HELP %s_sync_failures_total Programs that failed (not rendered, or refused by nftables).\n"
		"# TYPE %s_sync_failures_total counter\n%s_sync_failures_total %" PRIu64 "\n",
		p, p, p, s->st.failures);
	fprintf(f,
		"# HELP %s_last_sync_seconds Duration of the last program.\n"
		"# TYPE %s_last_sync_seconds gauge\n%s_last_sync_seconds %.6f\n",
		p, p, p, s->st.last_ms / 1e3);
	fprintf(f,
		"# HELP %s_last_full_sync_seconds Duration of the last full program.\n"
		"# TYPE %s_last_full_sync_seconds gauge\n%s_last_full_sync_seconds %.6f\n",
		p, p, p, s->st.last_full_ms / 1e3);
	fprintf(f,
		"# HELP %s_max_sync_seconds Longest program so far.\n"
		"# TYPE %s_max_sync_seconds gauge\n%s_max_sync_seconds %.6f\n",
		p, p, p, s->st.max_ms / 1e3);
}
