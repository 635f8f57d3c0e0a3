/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The round-robin allocator as a pure function: a fake "store" is a list of taken addresses,
 * and every test checks the exact visiting order against what the reference's RangeIter does.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "shared/ipam/ipam-alloc.h"

typedef struct Fake {
	IpAddr taken[512];
	size_t n_taken;
	char visited[64][IP_ADDR_STRLEN];
	size_t n_visited;
	bool claim;  /* mark returned free addresses taken (like the store's reserve) */
	int fail_at; /* return -EIO on this visit (1-based), 0 = never */
} Fake;

static IpAddr A(const char *s) {
	IpAddr a;

	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static void take(Fake *f, const char *s) {
	f->taken[f->n_taken++] = A(s);
}

static int fake_is_taken(const IpAddr *a, size_t range_idx, void *userdata) {
	Fake *f = userdata;

	if (f->n_visited < 64)
		ip_addr_to_string(a, f->visited[f->n_visited]);
	f->n_visited++;
	if (f->fail_at && (int) f->n_visited == f->fail_at)
		return -EIO;
	for (size_t i = 0; i < f->n_taken; i++)
		if (ip_addr_equal(&f->taken[i], a))
			return 1;
	if (f->claim)
		f->taken[f->n_taken++] = *a;
	return 0;
}

/* One range from strings (NULL = default), canonicalized. */
static IpamRange R(const char *subnet, const char *start, const char *end, const char *gw) {
	IpamRange r = {};
	IpamError err = {};

	assert_int_equal(ip_prefix_parse(subnet, &r.subnet), 0);
	if (start)
		r.start = A(start);
	if (end)
		r.end = A(end);
	if (gw)
		r.gateway = A(gw);
	if (ipam_range_canonicalize(&r, "t", &err) < 0)
		fail_msg("%s", err.msg);
	return r;
}

static const char *alloc(const IpamRangeSet *s, const char *last, Fake *f, size_t *ret_idx) {
	static char buf[IP_ADDR_STRLEN];
	IpAddr l = {}, got;
	int r;

	if (last)
		l = A(last);
	r = ipam_alloc_next(s, last ? &l : NULL, fake_is_taken, f, &got, ret_idx);
	if (r == -ENOSPC)
		return "ENOSPC";
	if (r < 0)
		return "ERROR";
	return ip_addr_to_string(&got, buf);
}

static void test_first_and_round_robin(void **state) {
	IpamRange rg[] = { R("10.1.0.0/29", NULL, NULL, NULL) }; /* .1 (gw) .. .6 */
	IpamRangeSet s = { rg, 1, NULL, false };
	Fake f = { .claim = true };

	/* No last reserved: start at rangeStart, skipping the gateway. */
	assert_string_equal(alloc(&s, NULL, &f, NULL), "10.1.0.2");
	assert_string_equal(f.visited[0], "10.1.0.2"); /* .1 is the gateway: never asked */
	/* Round robin from last+1. */
	assert_string_equal(alloc(&s, "10.1.0.2", &f, NULL), "10.1.0.3");
	assert_string_equal(alloc(&s, "10.1.0.3", &f, NULL), "10.1.0.4");
	/* last reserved freed meanwhile: still continues after it, not at it. */
	f.n_taken = 0;
	assert_string_equal(alloc(&s, "10.1.0.4", &f, NULL), "10.1.0.5");
	/* Wrap after the end back to the start, skipping the gateway. */
	f = (Fake) { .claim = true };
	assert_string_equal(alloc(&s, "10.1.0.6", &f, NULL), "10.1.0.2");
	/* A last reserved outside the set (range changed) restarts at the start. */
	f = (Fake) { .claim = true };
	assert_string_equal(alloc(&s, "10.9.0.9", &f, NULL), "10.1.0.2");
	f = (Fake) { .claim = true };
	assert_string_equal(alloc(&s, "fd00::5", &f, NULL), "10.1.0.2");
}

static void test_visit_order_and_exhaustion(void **state) {
	IpamRange rg[] = { R("10.1.0.0/29", NULL, NULL, NULL) };
	IpamRangeSet s = { rg, 1, NULL, false };
	Fake f = {};
	static const char *const order[] = { "10.1.0.5", "10.1.0.6", "10.1.0.2", "10.1.0.3", "10.1.0.4" };

	take(&f, "10.1.0.2"), take(&f, "10.1.0.3"), take(&f, "10.1.0.4"), take(&f, "10.1.0.5"), take(&f, "10.1.0.6");
	assert_string_equal(alloc(&s, "10.1.0.4", &f, NULL), "ENOSPC");
	/* Every candidate once, last reserved last, gateway never. */
	assert_int_equal(f.n_visited, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(f.visited[i], order[i]);

	/* Only the last reserved itself is free: found at the very end. */
	f = (Fake) {};
	take(&f, "10.1.0.2"), take(&f, "10.1.0.3"), take(&f, "10.1.0.5"), take(&f, "10.1.0.6");
	assert_string_equal(alloc(&s, "10.1.0.4", &f, NULL), "10.1.0.4");
	assert_int_equal(f.n_visited, 5);
}

static void test_gateway_inside_range(void **state) {
	/* Explicit gateway in the middle of the range is skipped; start == gateway too. */
	IpamRange rg[] = { R("10.1.0.0/24", "10.1.0.10", "10.1.0.12", "10.1.0.11") };
	IpamRangeSet s = { rg, 1, NULL, false };
	Fake f = { .claim = true };

	assert_string_equal(alloc(&s, NULL, &f, NULL), "10.1.0.10");
	assert_string_equal(alloc(&s, "10.1.0.10", &f, NULL), "10.1.0.12");
	assert_string_equal(alloc(&s, "10.1.0.12", &f, NULL), "ENOSPC");
	for (size_t i = 0; i < f.n_visited && i < 64; i++)
		assert_string_not_equal(f.visited[i], "10.1.0.11");

	IpamRange only_gw[] = { R("10.2.0.0/24", "10.2.0.1", "10.2.0.1", NULL) };
	IpamRangeSet s2 = { only_gw, 1, NULL, false };
	f = (Fake) {};
	assert_string_equal(alloc(&s2, NULL, &f, NULL), "ENOSPC");
	assert_int_equal(f.n_visited, 0);
}

static void test_multiple_ranges(void **state) {
	IpamRange rg[] = {
		R("10.1.0.0/24", "10.1.0.10", "10.1.0.11", NULL),
		R("10.2.0.0/24", "10.2.0.20", "10.2.0.21", NULL),
	};
	IpamRangeSet s = { rg, 2, NULL, false };
	Fake f = { .claim = true };
	size_t idx = 99;

	assert_string_equal(alloc(&s, NULL, &f, &idx), "10.1.0.10");
	assert_int_equal(idx, 0);
	assert_string_equal(alloc(&s, "10.1.0.10", &f, &idx), "10.1.0.11");
	/* End of range 0 continues at the start of range 1. */
	assert_string_equal(alloc(&s, "10.1.0.11", &f, &idx), "10.2.0.20");
	assert_int_equal(idx, 1);
	assert_string_equal(alloc(&s, "10.2.0.20", &f, &idx), "10.2.0.21");
	/* End of the last range wraps to the first; all taken -> ENOSPC after 4 visits. */
	f.n_visited = 0;
	assert_string_equal(alloc(&s, "10.2.0.21", &f, &idx), "ENOSPC");
	assert_int_equal(f.n_visited, 4);
	assert_string_equal(f.visited[0], "10.1.0.10");
	assert_string_equal(f.visited[3], "10.2.0.21");
}

static void test_ipv6_and_errors(void **state) {
	IpamRange rg[] = { R("fd00::/120", NULL, NULL, NULL) };
	IpamRangeSet s = { rg, 1, NULL, false }, empty = {};
	Fake f = { .claim = true };

	/* IPv6 ends at the last address (no broadcast). */
	assert_string_equal(alloc(&s, NULL, &f, NULL), "fd00::2");
	assert_string_equal(alloc(&s, "fd00::fe", &f, NULL), "fd00::ff");
	assert_string_equal(alloc(&s, "fd00::ff", &f, NULL), "fd00::3");

	/* Callback errors abort the walk. */
	f = (Fake) { .fail_at = 2 };
	take(&f, "fd00::2");
	assert_string_equal(alloc(&s, NULL, &f, NULL), "ERROR");
	assert_int_equal(f.n_visited, 2);
	assert_int_equal(ipam_alloc_next(&empty, NULL, fake_is_taken, &f, NULL, NULL), -EINVAL);
	assert_int_equal(ipam_alloc_next(&s, NULL, NULL, &f, NULL, NULL), -EINVAL);
}

static void test_fill_whole_set(void **state) {
	/* /24 with claiming: 253 distinct addresses (.2-.254), then exhaustion. */
	IpamRange rg[] = { R("10.3.0.0/24", NULL, NULL, NULL) };
	IpamRangeSet s = { rg, 1, NULL, false };
	static Fake f;
	IpAddr last = {}, got;
	size_t n = 0;

	f = (Fake) { .claim = true };
	while (ipam_alloc_next(&s, &last, fake_is_taken, &f, &got, NULL) == 0) {
		for (size_t i = 0; i + 1 < f.n_taken; i++)
			assert_false(ip_addr_equal(&f.taken[i], &got));
		last = got;
		n++;
		assert_true(n < 300);
	}
	assert_int_equal(n, 253);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_and_round_robin), cmocka_unit_test(test_visit_order_and_exhaustion),
		cmocka_unit_test(test_gateway_inside_range),  cmocka_unit_test(test_multiple_ranges),
		cmocka_unit_test(test_ipv6_and_errors),       cmocka_unit_test(test_fill_whole_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
