/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LoadBalancer address assignment (lb-ipam.h): the next free address (network and broadcast
 * skipped), older first whatever the input order, held addresses kept, requested addresses
 * (inside a pool, outside every pool, in a pool whose selector refuses the Service, taken), the
 * allow-shared-ip rule (same key and disjoint ports), pool exhaustion, AutoAssign off, dual-stack
 * (one family full: pending, the other kept), two Services claiming one address in status, and /31
 * and /32 pools.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-ipam.h"
#include "test-ip-helpers.h"

static LbRequest req(const char *key, int64_t created) {
	return (LbRequest) { .key = key, .created = created, .families = { AF_INET }, .n_families = 1 };
}

static void assert_ip(const LbAssignment *a, size_t i, const char *want) {
	char buf[IP_ADDR_STRLEN];

	assert_true(i < a->n_ips);
	assert_string_equal(ip_addr_to_string(&a->ips[i], buf), want);
}

static void test_next_free_older_first(void **state) {
	IpPrefix c = P("192.0.2.0/24");
	LbPool pool = { .name = "default", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[3] = { req("ns/new", 300), req("ns/old", 100), req("ns/mid", 200) };
	LbAssignment out[3];

	assert_int_equal(lb_ipam_assign(&pool, 1, r, 3, out), 0);
	assert_int_equal(out[1].state, LB_ASSIGNED);
	assert_ip(&out[1], 0, "192.0.2.1"); /* .0 is the network: skipped */
	assert_ip(&out[2], 0, "192.0.2.2");
	assert_ip(&out[0], 0, "192.0.2.3");
	assert_string_equal(out[0].pools[0], "default");
	assert_string_equal(out[0].reason, "");
	assert_int_equal(lb_pool_size(&pool), 254);
}

static void test_held_address_kept(void **state) {
	IpPrefix c = P("192.0.2.0/24");
	LbPool pool = { .name = "p", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[2] = { req("ns/a", 100), req("ns/b", 200) };
	LbAssignment out[2];

	r[1].current[0] = A("192.0.2.7");
	r[1].n_current = 1;
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[1], 0, "192.0.2.7");
	assert_ip(&out[0], 0, "192.0.2.1");

	/* a held address outside every pool (the pool shrank) is not kept */
	r[1].current[0] = A("198.51.100.7");
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[1], 0, "192.0.2.2");
}

static void test_requested(void **state) {
	IpPrefix c = P("192.0.2.0/24");
	LbPool pool = { .name = "p", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[3] = { req("ns/a", 100), req("ns/b", 200), req("ns/c", 300) };
	LbAssignment out[3];

	r[0].requested[0] = A("192.0.2.50");
	r[0].n_requested = 1;
	r[1].requested[0] = A("198.51.100.1");
	r[1].n_requested = 1;
	r[2].requested[0] = A("192.0.2.50");
	r[2].n_requested = 1;
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 3, out), 0);
	assert_int_equal(out[0].state, LB_ASSIGNED);
	assert_ip(&out[0], 0, "192.0.2.50");
	assert_int_equal(out[1].state, LB_REFUSED);
	assert_int_equal(out[1].n_ips, 0);
	assert_string_equal(out[1].reason, "requested address 198.51.100.1 is outside every LoadBalancer pool");
	assert_int_equal(out[2].state, LB_REFUSED);
	assert_string_equal(out[2].reason, "requested address 192.0.2.50 is held by ns/a");

	/* the network address may be asked for by name */
	r[1].requested[0] = A("192.0.2.0");
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[1], 0, "192.0.2.0");

	/* a requested address of a family the Service does not list */
	r[1].requested[0] = A("2001:db8::1");
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_int_equal(out[1].state, LB_REFUSED);
	assert_non_null(strstr(out[1].reason, "not of the Service's ipFamilies"));
}

/* A newer Service asking for an address an older one holds (in status) does not take it. */
static void test_requested_vs_holder(void **state) {
	IpPrefix c = P("192.0.2.0/24");
	LbPool pool = { .name = "p", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[2] = { req("ns/holder", 500), req("ns/asker", 100) };
	LbAssignment out[2];

	r[0].current[0] = A("192.0.2.9");
	r[0].n_current = 1;
	r[1].requested[0] = A("192.0.2.9");
	r[1].n_requested = 1;
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[0], 0, "192.0.2.9");
	assert_int_equal(out[1].state, LB_REFUSED);
	assert_string_equal(out[1].reason, "requested address 192.0.2.9 is held by ns/holder");
}

static void test_shared(void **state) {
	IpPrefix c = P("192.0.2.0/24");
	LbPool pool = { .name = "p", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbPort p80 = { 0, 80 }, p443 = { 0, 443 }, p53udp = { 1, 80 };
	LbRequest r[4] = { req("ns/web", 100), req("ns/tls", 200), req("ns/clash", 300), req("ns/udp", 400) };
	LbAssignment out[4];

	for (size_t i = 0; i < 4; i++)
		r[i].sharing_key = "front";
	r[0].ports = &p80;
	r[0].n_ports = 1;
	r[1].ports = &p443;
	r[1].n_ports = 1;
	r[2].ports = &p80;
	r[2].n_ports = 1;
	r[3].ports = &p53udp; /* UDP 80: another protocol, so no clash */
	r[3].n_ports = 1;
	r[0].current[0] = A("192.0.2.1"); /* web got it earlier */
	r[0].n_current = 1;
	r[2].requested[0] = A("192.0.2.1");
	r[2].n_requested = 1;
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 4, out), 0);
	assert_ip(&out[0], 0, "192.0.2.1");
	assert_ip(&out[1], 0, "192.0.2.1"); /* auto: joins the address its key already holds */
	assert_ip(&out[3], 0, "192.0.2.1");
	assert_int_equal(out[2].state, LB_REFUSED);
	assert_string_equal(
			out[2].reason,
			"requested address 192.0.2.1 is held by ns/web (same sharing key, but a port is used by both)");

	/* another key, or none, never shares */
	r[1].sharing_key = "other";
	r[3].sharing_key = NULL;
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[1], 0, "192.0.2.2");
	r[1].requested[0] = A("192.0.2.1");
	r[1].n_requested = 1;
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_string_equal(out[1].reason, "requested address 192.0.2.1 is held by ns/web (another sharing key)");
}

static void test_exhaustion(void **state) {
	IpPrefix c = P("192.0.2.0/30");
	LbPool pool = { .name = "small", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[3] = { req("ns/a", 1), req("ns/b", 2), req("ns/c", 3) };
	LbAssignment out[3];

	assert_int_equal(lb_pool_size(&pool), 2);
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 3, out), 0);
	assert_ip(&out[0], 0, "192.0.2.1");
	assert_ip(&out[1], 0, "192.0.2.2");
	assert_int_equal(out[2].state, LB_PENDING);
	assert_int_equal(out[2].n_ips, 0);
	assert_string_equal(out[2].reason, "no free IPv4 address in a pool open to this Service (with AutoAssign)");

	/* b goes: c gets its address on the next pass */
	r[1] = r[2];
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[1], 0, "192.0.2.2");
}

static void test_selector_and_auto_assign(void **state) {
	_cleanup_(label_selector_freep) LabelSelector *gold = NULL;
	json_t *j = json_pack("{s:{s:s}}", "matchLabels", "tier", "gold");
	const char *gold_labels[] = { "tier=gold" };
	IpPrefix c[3] = { P("192.0.2.0/24"), P("198.51.100.0/24"), P("203.0.113.0/24") };
	LbPool pools[3] = {
		{ .name = "gold", .cidrs = &c[0], .n_cidrs = 1, .auto_assign = true },
		{ .name = "manual", .cidrs = &c[1], .n_cidrs = 1, .auto_assign = false },
		{ .name = "rest", .cidrs = &c[2], .n_cidrs = 1, .auto_assign = true },
	};
	LbRequest r[3] = { req("ns/plain", 1), req("ns/shiny", 2), req("ns/pinned", 3) };
	LbAssignment out[3];

	assert_int_equal(label_selector_parse(j, "ServiceSelector", &gold, NULL), 0);
	json_decref(j);
	pools[0].service_selector = gold;
	r[1].labels = (LabelSet) { .pairs = gold_labels, .n = 1 };
	r[2].requested[0] = A("198.51.100.20");
	r[2].n_requested = 1;
	assert_int_equal(lb_ipam_assign(pools, 3, r, 3, out), 0);
	assert_ip(&out[0], 0, "203.0.113.1"); /* not gold; manual is never automatic */
	assert_string_equal(out[0].pools[0], "rest");
	assert_ip(&out[1], 0, "192.0.2.1");
	assert_string_equal(out[1].pools[0], "gold");
	assert_ip(&out[2], 0, "198.51.100.20"); /* AutoAssign off: by name only */
	assert_string_equal(out[2].pools[0], "manual");
	assert_int_equal(lb_pool_size(&pools[1]), 0);

	/* a dedicated pool wins over a catch-all one listed before it */
	{
		LbPool reordered[2] = { pools[2], pools[0] };

		assert_int_equal(lb_ipam_assign(reordered, 2, r, 2, out), 0);
		assert_string_equal(out[1].pools[0], "gold");
		assert_string_equal(out[0].pools[0], "rest");
	}

	/* the gold pool full: a gold Service waits, it does not fall back to the pool open to all */
	{
		IpPrefix one = P("192.0.2.9/32");
		LbPool small[2] = { pools[2], pools[0] };
		LbRequest two[2] = { r[1], r[1] };

		small[1].cidrs = &one;
		two[1].key = "ns/shiny2";
		two[1].created = 9;
		assert_int_equal(lb_ipam_assign(small, 2, two, 2, out), 0);
		assert_ip(&out[0], 0, "192.0.2.9");
		assert_int_equal(out[1].state, LB_PENDING);
	}

	/* a Service the selector does not pick cannot have a gold address, even by name */
	r[0].requested[0] = A("192.0.2.77");
	r[0].n_requested = 1;
	assert_int_equal(lb_ipam_assign(pools, 3, r, 1, out), 0);
	assert_int_equal(out[0].state, LB_REFUSED);
	assert_string_equal(out[0].reason, "requested address 192.0.2.77 is in pool gold, whose ServiceSelector "
					   "does not select this Service");
}

static void test_dual_stack(void **state) {
	IpPrefix c[2] = { P("192.0.2.0/31"), P("2001:db8:1::/126") };
	LbPool pool = { .name = "ds", .cidrs = c, .n_cidrs = 2, .auto_assign = true };
	LbRequest r[3] = { req("ns/a", 1), req("ns/b", 2), req("ns/c", 3) };
	LbAssignment out[3];

	for (size_t i = 0; i < 3; i++) {
		r[i].families[0] = AF_INET6;
		r[i].families[1] = AF_INET;
		r[i].n_families = 2;
	}
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 3, out), 0);
	assert_int_equal(out[0].state, LB_ASSIGNED);
	assert_ip(&out[0], 0, "2001:db8:1::"); /* IPv6 first, as ipFamilies lists it; no broadcast in v6 */
	assert_ip(&out[0], 1, "192.0.2.0");    /* a /31 has no network/broadcast to skip */
	assert_ip(&out[1], 0, "2001:db8:1::1");
	assert_ip(&out[1], 1, "192.0.2.1");
	/* IPv4 is full: c is pending and keeps its IPv6 address */
	assert_int_equal(out[2].state, LB_PENDING);
	assert_int_equal(out[2].n_ips, 1);
	assert_ip(&out[2], 0, "2001:db8:1::2");
	assert_string_equal(out[2].reason, "no free IPv4 address in a pool open to this Service (with AutoAssign)");
}

/* Two Services that both say (status) they hold one address: the older keeps it. */
static void test_two_holders(void **state) {
	IpPrefix c = P("192.0.2.0/24");
	LbPool pool = { .name = "p", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[2] = { req("ns/thief", 900), req("ns/owner", 100) };
	LbAssignment out[2];

	for (size_t i = 0; i < 2; i++) {
		r[i].current[0] = A("192.0.2.5");
		r[i].n_current = 1;
	}
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[1], 0, "192.0.2.5");
	assert_ip(&out[0], 0, "192.0.2.1");
}

/* The answer does not depend on the order requests come in. */
static void test_order_independent(void **state) {
	IpPrefix c = P("10.9.0.0/28");
	LbPool pool = { .name = "p", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	char keys[12][16];
	LbRequest a[12], b[12];
	LbAssignment oa[12], ob[12];

	for (size_t i = 0; i < 12; i++) {
		snprintf(keys[i], sizeof(keys[i]), "ns/s%02zu", i);
		a[i] = req(keys[i], (int64_t) (i % 4)); /* equal ages: the key decides */
		if (i % 5 == 0) {
			a[i].current[0] = A("10.9.0.14");
			a[i].n_current = 1;
		}
	}
	for (size_t i = 0; i < 12; i++)
		b[i] = a[(i * 7) % 12];
	assert_int_equal(lb_ipam_assign(&pool, 1, a, 12, oa), 0);
	assert_int_equal(lb_ipam_assign(&pool, 1, b, 12, ob), 0);
	for (size_t i = 0; i < 12; i++) {
		const LbAssignment *x = &oa[(i * 7) % 12], *y = &ob[i];

		assert_int_equal(x->state, y->state);
		assert_int_equal(x->n_ips, y->n_ips);
		if (x->n_ips)
			assert_true(ip_addr_equal(&x->ips[0], &y->ips[0]));
	}
	/* 14 addresses, 12 Services, no duplicates */
	for (size_t i = 0; i < 12; i++)
		for (size_t k = i + 1; k < 12; k++)
			assert_false(ip_addr_equal(&oa[i].ips[0], &oa[k].ips[0]));
}

static void test_single_address_pool(void **state) {
	IpPrefix c = P("192.0.2.9/32");
	LbPool pool = { .name = "one", .cidrs = &c, .n_cidrs = 1, .auto_assign = true };
	LbRequest r[2] = { req("ns/a", 1), req("ns/b", 2) };
	LbAssignment out[2];

	assert_int_equal(lb_pool_size(&pool), 1);
	assert_int_equal(lb_ipam_assign(&pool, 1, r, 2, out), 0);
	assert_ip(&out[0], 0, "192.0.2.9");
	assert_int_equal(out[1].state, LB_PENDING);
	assert_string_equal(lb_state_to_string(out[1].state), "pending");
	assert_ptr_equal(lb_pool_of(&pool, 1, &out[0].ips[0]), &pool);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_free_older_first),
		cmocka_unit_test(test_held_address_kept),
		cmocka_unit_test(test_requested),
		cmocka_unit_test(test_requested_vs_holder),
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_exhaustion),
		cmocka_unit_test(test_selector_and_auto_assign),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_two_holders),
		cmocka_unit_test(test_order_independent),
		cmocka_unit_test(test_single_address_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
