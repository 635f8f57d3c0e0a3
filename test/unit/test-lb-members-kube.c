/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which member Leases count as live (lb_members_kube_judge(), lb-members.h), client-go's rule on
 * our own clock: a holder is live while its record (resourceVersion) changed less than its
 * leaseDurationSeconds ago as WE saw it, whatever its renewTime says; a record seen for the first
 * time counts as just changed; a renewal (new resourceVersion) restarts the clock; an emptied
 * Lease (clean stop), a Lease named for another node and one no longer listed are not live; the
 * Lease's own duration wins over the default.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-members.h"

#define SEC 1000000ull

typedef struct Rec {
	const char *name, *holder, *rv;
	int duration;
} Rec;

/* Judges recs at now; returns the live holders as "a b c" (sorted as given). */
static char *judge(const Rec *recs, size_t n, LbMemberSeen **seen, size_t *n_seen, uint64_t now) {
	KubeLease leases[8] = {};
	const char *names[8], *live[8];
	char out[256] = "";
	size_t n_live = 99;

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++) {
		json_t *j = json_pack("{s:{s:s, s:s}, s:{s:s, s:i, s:s}}", "metadata", "name", recs[i].name,
				      "resourceVersion", recs[i].rv, "spec", "holderIdentity", recs[i].holder,
				      "leaseDurationSeconds", recs[i].duration, "renewTime",
				      "1999-01-01T00:00:00.000000Z");

		assert_non_null(j);
		assert_int_equal(kube_lease_parse(j, &leases[i]), 0);
		json_decref(j);
		names[i] = recs[i].name;
	}
	assert_int_equal(lb_members_kube_judge(leases, names, n, seen, n_seen, now, 6, live, &n_live), 0);
	assert_int_equal(*n_seen, n);
	for (size_t i = 0; i < n_live; i++) {
		strcat(out, i ? " " : "");
		strcat(out, live[i]);
	}
	for (size_t i = 0; i < n; i++)
		kube_lease_done(&leases[i]);
	return strdup(out);
}

#define ASSERT_LIVE(want, recs, seen, n_seen, now)                                                                     \
	do {                                                                                                           \
		_cleanup_free_ char *got = judge(recs, ELEMENTSOF(recs), seen, n_seen, now);                           \
		assert_string_equal(got, want);                                                                        \
	} while (0)

static void test_first_seen_then_expiry_on_our_clock(void **state) {
	LbMemberSeen *seen = NULL;
	size_t n_seen = 0;
	/* renewTime long past: ignored, first seen counts as just changed */
	const Rec r1[] = { { "weft-member-n1", "n1", "10", 6 }, { "weft-member-n2", "n2", "11", 6 } };
	const Rec r2[] = { { "weft-member-n1", "n1", "12", 6 }, { "weft-member-n2", "n2", "11", 6 } };

	ASSERT_LIVE("n1 n2", r1, &seen, &n_seen, 100 * SEC);
	ASSERT_LIVE("n1 n2", r1, &seen, &n_seen, 105 * SEC);
	/* n1 renewed at 105.5 (new resourceVersion), n2 unchanged since 100: gone at 106 */
	ASSERT_LIVE("n1 n2", r2, &seen, &n_seen, 105 * SEC + SEC / 2);
	ASSERT_LIVE("n1", r2, &seen, &n_seen, 106 * SEC);
	ASSERT_LIVE("n1", r2, &seen, &n_seen, 111 * SEC);
	ASSERT_LIVE("", r2, &seen, &n_seen, 111 * SEC + SEC / 2);
	lb_member_seen_free(seen, n_seen);
}

static void test_renewal_brings_back(void **state) {
	LbMemberSeen *seen = NULL;
	size_t n_seen = 0;
	const Rec r1[] = { { "weft-member-n1", "n1", "10", 6 } };
	const Rec r2[] = { { "weft-member-n1", "n1", "20", 6 } };

	ASSERT_LIVE("n1", r1, &seen, &n_seen, 0);
	ASSERT_LIVE("", r1, &seen, &n_seen, 7 * SEC);
	ASSERT_LIVE("n1", r2, &seen, &n_seen, 8 * SEC);
	lb_member_seen_free(seen, n_seen);
}

static void test_lease_duration_wins(void **state) {
	LbMemberSeen *seen = NULL;
	size_t n_seen = 0;
	const Rec r[] = { { "weft-member-a", "a", "1", 2 }, { "weft-member-b", "b", "2", 0 } };

	ASSERT_LIVE("a b", r, &seen, &n_seen, 50 * SEC);
	ASSERT_LIVE("b", r, &seen, &n_seen, 52 * SEC); /* a's own 2 s */
	ASSERT_LIVE("b", r, &seen, &n_seen, 55 * SEC); /* b has none: the default 6 s */
	ASSERT_LIVE("", r, &seen, &n_seen, 56 * SEC);
	lb_member_seen_free(seen, n_seen);
}

static void test_not_members(void **state) {
	LbMemberSeen *seen = NULL;
	size_t n_seen = 0;
	/* emptied on a clean stop; named for another node; not a member name at all */
	const Rec r[] = { { "weft-member-n1", "", "1", 1 },
			  { "weft-member-n2", "n3", "2", 6 },
			  { "weft-loadbalancer", "weft-loadbalancer", "3", 6 },
			  { "weft-member-n4", "n4", "4", 6 } };
	const Rec gone[] = { { "weft-member-n1", "", "1", 1 } };

	ASSERT_LIVE("n4", r, &seen, &n_seen, 10 * SEC);
	/* n4's Lease no longer listed: forgotten, and seen anew if it comes back */
	ASSERT_LIVE("", gone, &seen, &n_seen, 11 * SEC);
	ASSERT_LIVE("n4", r, &seen, &n_seen, 30 * SEC);
	ASSERT_LIVE("n4", r, &seen, &n_seen, 35 * SEC);
	ASSERT_LIVE("", r, &seen, &n_seen, 36 * SEC);
	lb_member_seen_free(seen, n_seen);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_seen_then_expiry_on_our_clock),
		cmocka_unit_test(test_renewal_brings_back),
		cmocka_unit_test(test_lease_duration_wins),
		cmocka_unit_test(test_not_members),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
