/* SPDX-License-Identifier: Apache-2.0 */
/* --service-cluster-ip-range parsing (service-route.h); the route itself is covered by
 * test/netns/test-weftd-services-ipv6.sh. No privileges. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/service-route.h"

static void test_parse(void **state) {
	IpPrefix r[2];
	size_t n = 9;
	char a[IP_PREFIX_STRLEN];

	assert_int_equal(service_ranges_parse("10.96.0.0/12", r, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ip_prefix_to_string(&r[0], a), "10.96.0.0/12");

	assert_int_equal(service_ranges_parse("10.96.0.0/16,fd00:10:96::/112", r, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(ip_prefix_to_string(&r[0], a), "10.96.0.0/16");
	assert_string_equal(ip_prefix_to_string(&r[1], a), "fd00:10:96::/112");

	/* IPv6 first is fine too (kube-apiserver takes either order) */
	assert_int_equal(service_ranges_parse("fd00:10:96::/112,10.96.0.0/16", r, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(r[0].addr.family, AF_INET6);
}

static void test_parse_invalid(void **state) {
	static const char *const bad[] = {
		"",
		",",
		"10.96.0.0",                                  /* no length */
		"10.96.0.1/12",                               /* host bits */
		"10.96.0.0/33",                               /* length */
		"10.96.0.0/12,10.100.0.0/16",                 /* two of one family */
		"fd00::/112,fd01::/112",                      /* likewise */
		"10.96.0.0/12,fd00:10:96::/112,10.97.0.0/16", /* three */
		"10.96.0.0/12;fd00::/112",                    /* separator */
		"kubernetes",
	};
	IpPrefix r[2] = {};
	size_t n = 7;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(service_ranges_parse(bad[i], r, &n), -EINVAL);
		assert_int_equal(n, 7); /* nothing written on failure */
	}
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_invalid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
