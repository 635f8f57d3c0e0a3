/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leases for leader election (shared/kube/kube-lease.h), client-go's rules: our own Lease is
 * renewed; another holder's is left alone until its record has not changed for
 * leaseDurationSeconds by OUR clock (whatever its renewTime says), then taken; a released one
 * (holder "") is taken at once; the Lease's own duration wins over ours. Rendering: a new Lease
 * (acquireTime = renewTime, no transition), a renewal (holder and acquireTime kept), a takeover
 * (acquireTime now, leaseTransitions + 1), a release; MicroTime format; resourceVersion kept for
 * the PUT's precondition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "shared/kube/kube-lease.h"

#define SEC 1000000ull

static json_t *lease_json(const char *holder, int duration, const char *rv) {
	json_t *j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:i, s:s, s:s, s:i}}", "apiVersion",
			      "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", "weft-loadbalancer",
			      "namespace", "kube-system", "resourceVersion", rv, "spec", "holderIdentity", holder,
			      "leaseDurationSeconds", duration, "acquireTime", "2020-01-01T00:00:00.000000Z",
			      "renewTime", "2099-01-01T00:00:00.000000Z", "leaseTransitions", 3);

	assert_non_null(j);
	return j;
}

static KubeLeaseAction decide(const char *holder, int duration, uint64_t now, uint64_t observed) {
	_cleanup_(json_decrefp) json_t *j = lease_json(holder, duration, "7");
	KubeLease l = {};
	KubeLeaseAction a;

	assert_int_equal(kube_lease_parse(j, &l), 0);
	a = kube_lease_decide(&l, "node1", now, observed, 6);
	kube_lease_done(&l);
	return a;
}

static void test_decide(void **state) {
	/* ours: renew, however old */
	assert_int_equal(decide("node1", 6, 100 * SEC, 1 * SEC), KUBE_LEASE_RENEW);
	/* another's, seen changing 5 s ago: held (its renewTime in 2099 does not matter) */
	assert_int_equal(decide("node2", 6, 100 * SEC, 95 * SEC), KUBE_LEASE_HELD);
	/* unchanged for 6 s and more by our clock: expired */
	assert_int_equal(decide("node2", 6, 101 * SEC, 95 * SEC), KUBE_LEASE_ACQUIRE);
	/* the Lease's own duration counts, not ours */
	assert_int_equal(decide("node2", 15, 105 * SEC, 95 * SEC), KUBE_LEASE_HELD);
	assert_int_equal(decide("node2", 15, 110 * SEC, 95 * SEC), KUBE_LEASE_ACQUIRE);
	/* released: at once */
	assert_int_equal(decide("", 1, 95 * SEC, 95 * SEC), KUBE_LEASE_ACQUIRE);
}

static void test_parse(void **state) {
	_cleanup_(json_decrefp) json_t *j = lease_json("node2", 6, "42");
	_cleanup_(json_decrefp) json_t *bare = json_pack("{s:{s:s}}", "metadata", "name", "x");
	_cleanup_(json_decrefp) json_t *str = json_string("x");
	KubeLease l = {};

	assert_int_equal(kube_lease_parse(j, &l), 0);
	assert_string_equal(l.holder, "node2");
	assert_string_equal(l.resource_version, "42");
	assert_int_equal(l.duration, 6);
	assert_int_equal(l.transitions, 3);
	kube_lease_done(&l);
	/* no spec: nobody holds it */
	assert_int_equal(kube_lease_parse(bare, &l), 0);
	assert_string_equal(l.holder, "");
	kube_lease_done(&l);
	assert_int_equal(kube_lease_parse(str, &l), -EINVAL);
}

static const char *spec_str(const json_t *o, const char *k) {
	return json_string_value(json_object_get(json_object_get(o, "spec"), k));
}

static long long spec_int(const json_t *o, const char *k) {
	return json_integer_value(json_object_get(json_object_get(o, "spec"), k));
}

static void test_render(void **state) {
	/* 2026-11-28T14:25:50.000123Z */
	const uint64_t t = 1795875950ull * SEC + 123;
	_cleanup_(json_decrefp) json_t *old = lease_json("node2", 6, "42");
	_cleanup_(json_decrefp) json_t *fresh =
			kube_lease_render(NULL, "kube-system", "weft-loadbalancer", "node1", 6, true, t);
	_cleanup_(json_decrefp) json_t *taken = kube_lease_render(old, NULL, NULL, "node1", 6, true, t);
	_cleanup_(json_decrefp) json_t *renewed = kube_lease_render(old, NULL, NULL, "node2", 6, false, t);
	_cleanup_(json_decrefp) json_t *released = kube_lease_render(old, NULL, NULL, "", 6, false, t);
	char buf[40];

	assert_string_equal(kube_micro_time(t, buf, sizeof(buf)), "2026-11-28T14:25:50.000123Z");

	assert_string_equal(json_string_value(json_object_get(json_object_get(fresh, "metadata"), "namespace")),
			    "kube-system");
	assert_string_equal(spec_str(fresh, "holderIdentity"), "node1");
	assert_string_equal(spec_str(fresh, "acquireTime"), "2026-11-28T14:25:50.000123Z");
	assert_string_equal(spec_str(fresh, "renewTime"), "2026-11-28T14:25:50.000123Z");
	assert_int_equal(spec_int(fresh, "leaseTransitions"), 0);
	assert_int_equal(spec_int(fresh, "leaseDurationSeconds"), 6);

	assert_string_equal(spec_str(taken, "holderIdentity"), "node1");
	assert_string_equal(spec_str(taken, "acquireTime"), "2026-11-28T14:25:50.000123Z");
	assert_int_equal(spec_int(taken, "leaseTransitions"), 4);
	assert_string_equal(json_string_value(json_object_get(json_object_get(taken, "metadata"), "resourceVersion")),
			    "42");

	assert_string_equal(spec_str(renewed, "acquireTime"), "2020-01-01T00:00:00.000000Z");
	assert_string_equal(spec_str(renewed, "renewTime"), "2026-11-28T14:25:50.000123Z");
	assert_int_equal(spec_int(renewed, "leaseTransitions"), 3);

	assert_string_equal(spec_str(released, "holderIdentity"), "");
	assert_int_equal(spec_int(released, "leaseDurationSeconds"), 1);
	/* the input is not changed */
	assert_string_equal(spec_str(old, "holderIdentity"), "node2");
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
