/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The nftables sync runner (daemon/nft-sync.h) without a kernel: its apply is the test's (which
 * records the batches and refuses what it is told to), its timers a real event loop with short
 * delays. Checked: first pass full, then partial; a failure counted, retried with a doubling
 * backoff up to the bound, the retry full; the backoff reset by a success; a burst of requests
 * debounced into one pass; no-ops; -EAGAIN from prepare postpones without a failure; the refused
 * hook narrows a batch through nft_sync_check()/nft_sync_apply(); the metrics' names and format.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/nft-sync.h"
#include "shared/event/event-loop.h"

typedef struct Fake {
	EventLoop *loop;
	unsigned renders, applied, applies, checks;
	bool last_full;
	int fail_render;        /* render returns this (0: renders `text`) */
	int eagain;             /* prepare returns -EAGAIN this many times */
	unsigned refuse_next;   /* the next N applies are refused */
	const char *refuse_sub; /* applies and checks of text holding this are refused */
	const char *text;       /* what render puts in the batch ("": nothing) */
	char applied_text[256]; /* what the last apply got */
	bool exit_on_applied;
	bool narrow; /* the refused hook narrows line by line */
} Fake;

static int fake_apply(const char *text, bool check, char **ret_error, void *userdata) {
	Fake *f = userdata;

	if (check)
		f->checks++;
	else
		f->applies++;
	if ((!check && f->refuse_next > 0 && f->refuse_next--) || (f->refuse_sub && strstr(text, f->refuse_sub))) {
		if (ret_error)
			*ret_error = strdup("Error: Could not process rule: File exists");
		return -EEXIST;
	}
	if (!check)
		snprintf(f->applied_text, sizeof(f->applied_text), "%s", text);
	return 0;
}

static int fake_prepare(NftSync *s, void *userdata) {
	Fake *f = userdata;

	if (f->eagain > 0) {
		f->eagain--;
		return -EAGAIN;
	}
	return 0;
}

static int fake_render(NftSync *s, bool full, NftBatch *b, void *userdata) {
	Fake *f = userdata;

	f->renders++;
	f->last_full = full;
	if (f->fail_render < 0)
		return f->fail_render;
	if (f->text[0])
		nft_batch_add(b, "%s", f->text);
	return 0;
}

/* Line by line: the kernel's check of each, then the good ones for real. */
static int fake_refused(NftSync *s, bool full, NftBatch *b, int r, const char *error, void *userdata) {
	Fake *f = userdata;
	_cleanup_(nft_batch_done) NftBatch good = {};
	char line[64];

	if (!f->narrow)
		return r;
	assert_string_equal(error, "Error: Could not process rule: File exists");
	assert_int_equal(nft_batch_begin(&good), 0);
	for (const char *p = b->buf; *p;) {
		size_t n = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s\n", (int) n, p);
		if (nft_sync_check(s, line, NULL) >= 0)
			nft_batch_put(&good, "%s", line);
		p += n + (p[n] ? 1 : 0);
	}
	assert_int_equal(nft_batch_finish(&good), 0);
	return nft_sync_apply(s, good.buf, NULL);
}

static void fake_applied(NftSync *s, bool full, const NftBatch *b, void *userdata) {
	Fake *f = userdata;

	f->applied++;
	if (f->exit_on_applied)
		event_loop_exit(f->loop, 0);
}

static const NftSyncOps fake_ops = {
	.name = "Test",
	.metrics_prefix = "weft_test",
	.syncs_help = "Test programs.",
	.debounce_usec = 2000,
	.retry_usec = 10000,
	.retry_max_usec = 40000,
	.prepare = fake_prepare,
	.render = fake_render,
	.refused = fake_refused,
	.applied = fake_applied,
	.apply = fake_apply,
};

static int on_deadline(EventSource *s, void *userdata) {
	event_loop_exit(userdata, -ETIMEDOUT);
	return 0;
}

/* Runs the loop until applied (0) or 2 s (-ETIMEDOUT). Once per loop: event_loop_exit() sticks. */
static int run_until_applied(Fake *f) {
	EventSource *deadline;
	int r;

	assert_int_equal(event_loop_add_timer(f->loop, on_deadline, f->loop, &deadline), 0);
	assert_int_equal(event_source_arm(deadline, 2 * USEC_PER_SEC, 0), 0);
	f->exit_on_applied = true;
	r = event_loop_run(f->loop);
	f->exit_on_applied = false;
	event_source_free(deadline);
	return r;
}

static NftSync *setup(Fake *f, bool loop) {
	NftSync *s;

	*f = (Fake) { .text = "add table inet weft" };
	if (loop)
		assert_int_equal(event_loop_new(&f->loop), 0);
	assert_int_equal(nft_sync_new(f->loop, &fake_ops, f, &s), 0);
	assert_null(nft_sync_ctx(s)); /* the test's apply: no nft context opened */
	return s;
}

static void teardown(Fake *f, NftSync *s) {
	nft_sync_free(s);
	event_loop_free(f->loop);
}

static void test_full_then_partial(void **state) {
	Fake f;
	NftSync *s = setup(&f, false);
	NftSyncStats st;

	assert_int_equal(nft_sync_run(s), 0);
	assert_true(f.last_full);
	assert_int_equal(nft_sync_run(s), 0);
	assert_false(f.last_full);
	assert_int_equal(f.applies, 2);
	assert_string_equal(f.applied_text, "add table inet weft\n");
	nft_sync_request_full(s);
	assert_int_equal(nft_sync_run(s), 0);
	assert_true(f.last_full);
	nft_sync_stats(s, &st);
	assert_int_equal(st.syncs, 3);
	assert_int_equal(st.full_syncs, 2);
	assert_int_equal(st.failures, 0);
	assert_int_equal(f.applied, 3);
	assert_false(st.pending);
	teardown(&f, s);
}

static void test_failure_backoff(void **state) {
	static const uint64_t want[] = { 10000, 20000, 40000, 40000 };
	Fake f;
	NftSync *s = setup(&f, true);
	NftSyncStats st;

	assert_int_equal(nft_sync_run(s), 0);
	/* refused (no narrowing): counted, retried with a doubling delay up to the bound, full */
	f.refuse_next = ELEMENTSOF(want);
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		assert_int_equal(nft_sync_run(s), -EEXIST);
		assert_int_equal(f.last_full, i > 0); /* the first failure was a partial pass */
		nft_sync_stats(s, &st);
		assert_int_equal(st.failures, i + 1);
		assert_true(st.pending);
		assert_true(st.next_full);
		assert_int_equal(st.retry_usec, want[i]);
	}
	assert_int_equal(f.applied, 1);
	/* the armed retry runs by itself, full, and resets the backoff */
	assert_int_equal(run_until_applied(&f), 0);
	assert_true(f.last_full);
	nft_sync_stats(s, &st);
	assert_false(st.pending);
	assert_false(st.next_full);
	assert_int_equal(st.syncs, 2);
	assert_int_equal(st.full_syncs, 2);
	f.refuse_next = 1;
	assert_int_equal(nft_sync_run(s), -EEXIST);
	nft_sync_stats(s, &st);
	assert_int_equal(st.retry_usec, want[0]);
	/* a render that fails is a failure too */
	f.fail_render = -ENOMEM;
	assert_int_equal(nft_sync_run(s), -ENOMEM);
	nft_sync_stats(s, &st);
	assert_int_equal(st.failures, ELEMENTSOF(want) + 2);
	assert_int_equal(st.retry_usec, want[1]);
	teardown(&f, s);
}

static void test_debounce(void **state) {
	Fake f;
	NftSync *s = setup(&f, true);
	NftSyncStats st;

	for (int i = 0; i < 5; i++)
		nft_sync_schedule(s);
	nft_sync_stats(s, &st);
	assert_true(st.pending);
	assert_int_equal(f.renders, 0);
	assert_int_equal(run_until_applied(&f), 0);
	assert_int_equal(f.renders, 1);
	nft_sync_stats(s, &st);
	assert_false(st.pending);
	/* a request after the pass arms a new one (the loop runs once: event_loop_exit() sticks) */
	nft_sync_schedule(s);
	nft_sync_stats(s, &st);
	assert_true(st.pending);
	assert_false(st.next_full);
	teardown(&f, s);
}

static void test_noop_and_eagain(void **state) {
	Fake f;
	NftSync *s = setup(&f, true);
	NftSyncStats st;

	f.text = "";
	assert_int_equal(nft_sync_run(s), 0);
	nft_sync_stats(s, &st);
	assert_int_equal(st.noops, 1);
	assert_int_equal(st.syncs, 1);
	assert_int_equal(f.applies, 0);
	/* not yet: postponed by retry_usec, not a failure, nothing rendered */
	f.eagain = 1;
	f.text = "add table inet weft";
	assert_int_equal(nft_sync_run(s), 0);
	nft_sync_stats(s, &st);
	assert_int_equal(st.failures, 0);
	assert_true(st.pending);
	assert_int_equal(f.renders, 1);
	assert_int_equal(run_until_applied(&f), 0);
	assert_int_equal(f.renders, 2);
	assert_int_equal(f.applies, 1);
	teardown(&f, s);
}

static void test_refused_narrowed(void **state) {
	Fake f;
	NftSync *s = setup(&f, false);
	NftSyncStats st;

	f.text = "add element inet weft s { 1 }\nadd element inet weft s { bad }\nadd element inet weft s { 3 }";
	f.refuse_sub = "bad";
	f.narrow = true;
	assert_int_equal(nft_sync_run(s), 0);
	assert_int_equal(f.checks, 3);
	assert_string_equal(f.applied_text, "add element inet weft s { 1 }\nadd element inet weft s { 3 }\n");
	nft_sync_stats(s, &st);
	assert_int_equal(st.failures, 0);
	assert_int_equal(st.syncs, 1);
	assert_int_equal(f.applied, 1);
	/* the hook gives up: the pass failed */
	f.narrow = false;
	assert_int_equal(nft_sync_run(s), -EEXIST);
	nft_sync_stats(s, &st);
	assert_int_equal(st.failures, 1);
	teardown(&f, s);
}

static void test_metrics(void **state) {
	static const char *const want[] = {
		"# HELP weft_test_syncs_total Test programs.\n# TYPE weft_test_syncs_total counter\n"
		"weft_test_syncs_total 2\n",
		"# TYPE weft_test_full_syncs_total counter\nweft_test_full_syncs_total 2\n",
		"# TYPE weft_test_sync_failures_total counter\nweft_test_sync_failures_total 1\n",
		"# TYPE weft_test_last_sync_seconds gauge\nweft_test_last_sync_seconds ",
		"# TYPE weft_test_last_full_sync_seconds gauge\nweft_test_last_full_sync_seconds ",
		"# TYPE weft_test_max_sync_seconds gauge\nweft_test_max_sync_seconds ",
		"# HELP weft_test_full_syncs_total ",
		"# HELP weft_test_sync_failures_total ",
		"# HELP weft_test_last_sync_seconds ",
		"# HELP weft_test_last_full_sync_seconds ",
		"# HELP weft_test_max_sync_seconds ",
	};
	Fake f;
	NftSync *s = setup(&f, false);
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	assert_int_equal(nft_sync_run(s), 0);
	f.refuse_next = 1;
	assert_int_equal(nft_sync_run(s), -EEXIST);
	assert_int_equal(nft_sync_run(s), 0);
	m = open_memstream(&buf, &len);
	assert_non_null(m);
	nft_sync_render_metrics(s, m);
	assert_int_equal(fclose(m), 0);
	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		if (!strstr(buf, want[i]))
			fail_msg("missing \"%s\" in:\n%s", want[i], buf);
	free(buf);
	teardown(&f, s);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_then_partial), cmocka_unit_test(test_failure_backoff),
		cmocka_unit_test(test_debounce),          cmocka_unit_test(test_noop_and_eagain),
		cmocka_unit_test(test_refused_narrowed),  cmocka_unit_test(test_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
