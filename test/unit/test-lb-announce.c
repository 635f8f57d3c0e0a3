/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LoadBalancer announcement's pure parts (lb-announce.h): the rendezvous choice of the one L2
 * announcer (deterministic, spread, and moving only the addresses of a node that leaves) and
 * which addresses a node announces in each mode, with externalTrafficPolicy Cluster and Local.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-announce.h"
#include "test-ip-helpers.h"

static const char *const nodes5[] = { "node-a", "node-b", "node-c", "node-d", "node-e" };

static IpAddr nth(unsigned i) {
	char buf[32];

	snprintf(buf, sizeof(buf), "192.0.%u.%u", 2 + i / 250, 1 + i % 250);
	return A(buf);
}

static void test_pick(void **state) {
	unsigned count[5] = {};
	const char *const rev[] = { "node-e", "node-d", "node-c", "node-b", "node-a" };
	IpAddr six = A("2001:db8::5");

	assert_null(lb_rendezvous_pick(nodes5, 0, &six));
	assert_string_equal(lb_rendezvous_pick(nodes5, 1, &six), "node-a");
	assert_non_null(lb_rendezvous_pick(nodes5, 5, &six));
	for (unsigned i = 0; i < 1000; i++) {
		IpAddr a = nth(i);
		const char *w = lb_rendezvous_pick(nodes5, 5, &a);

		/* the order of the list does not matter */
		assert_string_equal(w, lb_rendezvous_pick(rev, 5, &a));
		for (unsigned k = 0; k < 5; k++)
			count[k] += streq(w, nodes5[k]);
	}
	/* spread: each of 5 nodes gets 200 +- 60 of 1000 addresses */
	for (unsigned k = 0; k < 5; k++) {
		print_message("%s: %u\n", nodes5[k], count[k]);
		assert_in_range(count[k], 140, 260);
	}
	/* the score is the same for the same pair, different across nodes */
	assert_true(lb_rendezvous_score("node-a", &six) == lb_rendezvous_score("node-a", &six));
	assert_true(lb_rendezvous_score("node-a", &six) != lb_rendezvous_score("node-b", &six));
}

/* node-c leaves: its addresses move, nobody else's do */
static void test_pick_leave(void **state) {
	const char *const four[] = { "node-a", "node-b", "node-d", "node-e" };
	unsigned moved = 0;

	for (unsigned i = 0; i < 500; i++) {
		IpAddr a = nth(i);
		const char *before = lb_rendezvous_pick(nodes5, 5, &a), *after = lb_rendezvous_pick(four, 4, &a);

		if (streq(before, "node-c"))
			moved++;
		else
			assert_string_equal(before, after);
	}
	assert_true(moved > 0);
}

static void test_decide(void **state) {
	const char *const local_nodes[] = { "node-b", "node-d" };
	const char *const gone[] = { "node-x" };
	LbAnnounceAddr in[3] = {
		{ .addr = A("192.0.2.1"), .cluster = true },
		{ .addr = A("192.0.2.2"), .nodes = local_nodes, .n_nodes = 2 },
		{ .addr = A("192.0.2.3"), .nodes = gone, .n_nodes = 1 },
	};
	IpAddr out[3];
	const char *owner[3];
	size_t n;

	/* bgp, Cluster: everyone; Local: the nodes with endpoints only */
	lb_announce_decide(LB_ANNOUNCE_BGP, "node-a", NULL, 0, in, 3, out, &n, NULL);
	assert_int_equal(n, 1);
	assert_true(ip_addr_equal(&out[0], &in[0].addr));
	lb_announce_decide(LB_ANNOUNCE_BGP, "node-d", NULL, 0, in, 3, out, &n, NULL);
	assert_int_equal(n, 2);
	assert_true(ip_addr_equal(&out[1], &in[1].addr));

	/* l2 without a view of the members: nobody */
	lb_announce_decide(LB_ANNOUNCE_L2, "node-a", NULL, 0, in, 3, out, &n, owner);
	assert_int_equal(n, 0);

	/* l2: exactly one owner per address, among the live eligible nodes; the Local address whose
	 * only endpoint node is not live has none */
	{
		unsigned total = 0;

		for (unsigned k = 0; k < 5; k++) {
			lb_announce_decide(LB_ANNOUNCE_L2, nodes5[k], nodes5, 5, in, 3, out, &n, owner);
			total += n;
			for (size_t i = 0; i < n; i++) {
				int idx = ip_addr_equal(&out[i], &in[0].addr) ? 0 : 1;

				assert_string_equal(owner[idx], nodes5[k]);
			}
		}
		assert_int_equal(total, 2);
		assert_string_equal(owner[0], lb_rendezvous_pick(nodes5, 5, &in[0].addr));
		assert_string_equal(owner[1], lb_rendezvous_pick(local_nodes, 2, &in[1].addr));
		assert_null(owner[2]);
	}
}

/* more live members than one chunk of candidates: the same winner as a single pick */
static void test_decide_many(void **state) {
	static char names[600][16];
	const char *v[600];
	LbAnnounceAddr in = { .addr = A("198.51.100.9"), .cluster = true };
	IpAddr out[1];
	const char *owner[1];
	size_t n;

	for (unsigned i = 0; i < 600; i++) {
		snprintf(names[i], sizeof(names[i]), "n%03u", i);
		v[i] = names[i];
	}
	lb_announce_decide(LB_ANNOUNCE_L2, "n000", v, 600, &in, 1, out, &n, owner);
	assert_string_equal(owner[0], lb_rendezvous_pick(v, 600, &in.addr));
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_pick_leave),
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_decide_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
