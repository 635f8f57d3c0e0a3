/* SPDX-License-Identifier: Apache-2.0 */
/* Table-driven tests for src/shared/ip/ip-addr.c: the IP math every IPAM and route decision uses. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "shared/ip/ip-addr.h"

static IpAddr A(const char *s) {
	IpAddr a;

	if (ip_addr_parse(s, &a) < 0)
		fail_msg("bad test address %s", s);
	return a;
}

static IpPrefix P(const char *s) {
	IpPrefix p;

	if (ip_prefix_parse(s, &p) < 0)
		fail_msg("bad test prefix %s", s);
	return p;
}

static void assert_addr(const IpAddr *a, const char *want) {
	char buf[IP_ADDR_STRLEN];

	assert_string_equal(ip_addr_to_string(a, buf), want);
}

static void test_parse_format(void **state) {
	static const struct {
		const char *in;
		int family;
		const char *out; /* canonical; NULL = must fail */
	} t[] = {
		{ "10.1.2.3", AF_INET, "10.1.2.3" },
		{ "0.0.0.0", AF_INET, "0.0.0.0" },
		{ "255.255.255.255", AF_INET, "255.255.255.255" },
		{ "fd00::1", AF_INET6, "fd00::1" },
		{ "FD00:0:0:0:0:0:0:1", AF_INET6, "fd00::1" },
		{ "::", AF_INET6, "::" },
		{ "::ffff:10.1.2.3", AF_INET6, "::ffff:10.1.2.3" },
		{ "2001:db8:0:0:1:0:0:1", AF_INET6, "2001:db8::1:0:0:1" },
		{ "256.1.1.1", 0, NULL },
		{ "10.1.2", 0, NULL },
		{ "10.1.2.3/24", 0, NULL },
		{ "fe80::1%eth0", 0, NULL },
		{ "[fd00::1]", 0, NULL },
		{ "", 0, NULL },
		{ " 10.1.2.3", 0, NULL },
		{ "1:2:3:4:5:6:7:8:9", 0, NULL },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		IpAddr a;
		int r = ip_addr_parse(t[i].in, &a);

		if (!t[i].out) {
			assert_int_equal(r, -EINVAL);
			continue;
		}
		assert_int_equal(r, 0);
		assert_int_equal(a.family, t[i].family);
		assert_addr(&a, t[i].out);
		assert_int_equal(ip_addr_size(a.family), t[i].family == AF_INET ? 4 : 16);
	}
	assert_int_equal(ip_addr_parse(NULL, &(IpAddr) {}), -EINVAL);
	assert_int_equal(ip_family_bits(AF_INET), 32);
	assert_int_equal(ip_family_bits(AF_INET6), 128);
	assert_int_equal(ip_family_bits(AF_UNSPEC), 0);

	IpAddr none = {};
	char buf[IP_ADDR_STRLEN];
	assert_string_equal(ip_addr_to_string(&none, buf), "<none>");
	assert_false(ip_addr_is_set(&none));
	assert_false(ip_addr_is_set(NULL));
}

static void test_prefix_parse(void **state) {
	static const struct {
		const char *in;
		bool ok, network_ok;
		const char *out;
	} t[] = {
		{ "10.1.0.0/16", true, true, "10.1.0.0/16" },
		{ "10.1.2.3/24", true, false, "10.1.2.3/24" }, /* host bits kept */
		{ "0.0.0.0/0", true, true, "0.0.0.0/0" },
		{ "10.1.2.3/32", true, true, "10.1.2.3/32" },
		{ "10.1.2.3/33", false, false, NULL },
		{ "fd00::/64", true, true, "fd00::/64" },
		{ "fd00::5/64", true, false, "fd00::5/64" },
		{ "fd00::5/128", true, true, "fd00::5/128" },
		{ "fd00::/129", false, false, NULL },
		{ "10.1.0.0", false, false, NULL },
		{ "10.1.0.0/", false, false, NULL },
		{ "10.1.0.0/-1", false, false, NULL },
		{ "10.1.0.0/0024", false, false, NULL },
		{ "10.1.0.0/2x", false, false, NULL },
		{ "/24", false, false, NULL },
		{ "foo/24", false, false, NULL },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		IpPrefix p;
		char buf[IP_PREFIX_STRLEN];

		assert_int_equal(ip_prefix_parse(t[i].in, &p), t[i].ok ? 0 : -EINVAL);
		if (t[i].ok)
			assert_string_equal(ip_prefix_to_string(&p, buf), t[i].out);
		assert_int_equal(ip_prefix_parse_network(t[i].in, &p), t[i].network_ok ? 0 : -EINVAL);
	}
}

static void test_mask_first_last_netmask(void **state) {
	static const struct {
		const char *p, *net, *first, *last, *netmask;
	} t[] = {
		{ "10.1.2.3/24", "10.1.2.0/24", "10.1.2.0", "10.1.2.255", "255.255.255.0" },
		{ "10.1.2.3/23", "10.1.2.0/23", "10.1.2.0", "10.1.3.255", "255.255.254.0" },
		{ "10.1.2.3/20", "10.1.0.0/20", "10.1.0.0", "10.1.15.255", "255.255.240.0" },
		{ "10.1.2.3/0", "0.0.0.0/0", "0.0.0.0", "255.255.255.255", "0.0.0.0" },
		{ "10.1.2.3/32", "10.1.2.3/32", "10.1.2.3", "10.1.2.3", "255.255.255.255" },
		{ "10.1.2.3/31", "10.1.2.2/31", "10.1.2.2", "10.1.2.3", "255.255.255.254" },
		{ "fd00::1:2/112", "fd00::1:0/112", "fd00::1:0", "fd00::1:ffff",
		  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:0" },
		{ "fd00:1:2:3:4::/61", "fd00:1:2::/61", "fd00:1:2::", "fd00:1:2:7:ffff:ffff:ffff:ffff",
		  "ffff:ffff:ffff:fff8::" },
		{ "fd00::1/128", "fd00::1/128", "fd00::1", "fd00::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		IpPrefix p = P(t[i].p), m = ip_prefix_mask(&p);
		IpAddr f = ip_prefix_first(&p), l = ip_prefix_last(&p), nm = ip_prefix_netmask(&p);
		char buf[IP_PREFIX_STRLEN];

		assert_string_equal(ip_prefix_to_string(&m, buf), t[i].net);
		assert_addr(&f, t[i].first);
		assert_addr(&l, t[i].last);
		assert_addr(&nm, t[i].netmask);
	}
}

static void test_contains_overlaps(void **state) {
	static const struct {
		const char *p, *a;
		bool in;
	} c[] = {
		{ "10.1.0.0/16", "10.1.255.255", true },
		{ "10.1.0.0/16", "10.2.0.0", false },
		{ "10.1.0.0/16", "10.0.255.255", false },
		{ "0.0.0.0/0", "1.2.3.4", true },
		{ "10.1.2.3/32", "10.1.2.3", true },
		{ "10.1.2.3/32", "10.1.2.4", false },
		{ "10.1.0.0/16", "fd00::1", false }, /* family mismatch */
		{ "::/0", "10.1.2.3", false },
		{ "fd00::/8", "fdff:ffff::1", true },
		{ "fd00::/8", "fe00::", false },
		{ "10.1.2.77/24", "10.1.2.1", true }, /* host bits of p ignored */
	};
	static const struct {
		const char *a, *b;
		bool overlap;
	} o[] = {
		{ "10.1.0.0/16", "10.1.2.0/24", true },    { "10.1.2.0/24", "10.1.0.0/16", true },
		{ "10.1.0.0/24", "10.1.1.0/24", false },   { "10.1.0.0/23", "10.1.1.0/24", true },
		{ "0.0.0.0/0", "192.168.0.0/16", true },   { "10.0.0.0/8", "fd00::/8", false },
		{ "fd00::/64", "fd00:0:0:1::/64", false }, { "fd00::/63", "fd00:0:0:1::/64", true },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		IpPrefix p = P(c[i].p);
		IpAddr a = A(c[i].a);

		assert_int_equal(ip_prefix_contains(&p, &a), c[i].in);
	}
	for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++) {
		IpPrefix a = P(o[i].a), b = P(o[i].b);

		assert_int_equal(ip_prefix_overlaps(&a, &b), o[i].overlap);
		assert_int_equal(ip_prefix_overlaps(&b, &a), o[i].overlap);
	}
}

static void test_add_next_prev(void **state) {
	static const struct {
		const char *a;
		int64_t delta;
		const char *want; /* NULL = overflow/underflow */
	} t[] = {
		{ "10.1.0.255", 1, "10.1.1.0" },
		{ "10.1.0.0", -1, "10.0.255.255" },
		{ "10.1.0.0", 256, "10.1.1.0" },
		{ "10.1.0.0", 65536 + 258, "10.2.1.2" },
		{ "10.1.0.0", -65536, "10.0.0.0" },
		{ "255.255.255.255", 1, NULL },
		{ "255.255.255.254", 1, "255.255.255.255" },
		{ "0.0.0.0", -1, NULL },
		{ "0.0.0.0", 0, "0.0.0.0" },
		{ "0.0.0.0", 4294967295LL, "255.255.255.255" },
		{ "0.0.0.0", 4294967296LL, NULL },
		{ "0.0.0.1", INT64_MIN, NULL },
		{ "fd00::ffff", 1, "fd00::1:0" },
		{ "fd00::ffff:ffff:ffff:ffff", 1, "fd00:0:0:1::" },
		{ "fd00:0:0:1::", -1, "fd00::ffff:ffff:ffff:ffff" },
		{ "::", INT64_MAX, "::7fff:ffff:ffff:ffff" },
		{ "::", -1, NULL },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 1, NULL },
		{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 1, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
		{ "::1:0:0:0:0", INT64_MIN, "::8000:0:0:0" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		IpAddr a = A(t[i].a), r = A("1.1.1.1"), before = r;
		bool ok = ip_addr_add(&a, t[i].delta, &r);

		assert_int_equal(ok, t[i].want != NULL);
		if (ok)
			assert_addr(&r, t[i].want);
		else
			assert_true(ip_addr_equal(&r, &before)); /* untouched on failure */
	}

	IpAddr a = A("10.0.0.255"), r;
	assert_true(ip_addr_next(&a, &r));
	assert_addr(&r, "10.0.1.0");
	assert_true(ip_addr_prev(&r, &r));
	assert_addr(&r, "10.0.0.255");
	a = A("255.255.255.255");
	assert_false(ip_addr_next(&a, &r));
	a = A("::");
	assert_false(ip_addr_prev(&a, &r));
	IpAddr none = {};
	assert_false(ip_addr_add(&none, 1, &r));
}

static void test_distance_cmp(void **state) {
	static const struct {
		const char *a, *b;
		int64_t d;
	} t[] = {
		{ "10.1.0.0", "10.1.0.0", 0 },
		{ "10.1.0.0", "10.1.1.0", 256 },
		{ "10.1.1.0", "10.1.0.0", -256 },
		{ "0.0.0.0", "255.255.255.255", 4294967295LL },
		{ "255.255.255.255", "0.0.0.0", -4294967295LL },
		{ "fd00::", "fd00::1:0", 65536 },
		{ "fd00::", "fd00::7fff:ffff:ffff:ffff", INT64_MAX },
		{ "fd00::", "fd00::8000:0:0:0", INT64_MAX }, /* saturated */
		{ "fd00::", "fd01::", INT64_MAX },
		{ "fd01::", "fd00::", INT64_MIN },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		IpAddr a = A(t[i].a), b = A(t[i].b);

		assert_true(ip_addr_distance(&a, &b) == t[i].d);
		int c = ip_addr_cmp(&a, &b);
		assert_true(t[i].d == 0 ? c == 0 : t[i].d > 0 ? c < 0 : c > 0);
		assert_int_equal(ip_addr_equal(&a, &b), t[i].d == 0);
	}
	/* Families order before values; equal never across families. */
	IpAddr v4 = A("255.255.255.255"), v6 = A("::");
	assert_true(ip_addr_cmp(&v4, &v6) < 0);
	assert_false(ip_addr_equal(&v4, &v6));
	IpPrefix p1 = P("10.1.0.0/24"), p2 = P("10.1.0.0/25"), p3 = P("10.1.0.0/24");
	assert_false(ip_prefix_equal(&p1, &p2));
	assert_true(ip_prefix_equal(&p1, &p3));
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_prefix_parse),
		cmocka_unit_test(test_mask_first_last_netmask),
		cmocka_unit_test(test_contains_overlaps),
		cmocka_unit_test(test_add_next_prev),
		cmocka_unit_test(test_distance_cmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
