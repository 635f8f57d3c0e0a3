/* SPDX-License-Identifier: Apache-2.0 */
/* weftd's desired-vs-observed diff (reconcile_plan), the desired lease table, and the backends'
 * rendering of a remote lease into kernel objects. Pure: no netlink, no privileges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "daemon/backend/backend-vxlan.h"
#include "daemon/backend/backend.h"
#include "daemon/reconcile.h"

static IpPrefix P(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static IpAddr A(const char *s) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

#define VTEP 7
#define UNDERLAY 2

static Backend test_backend(const BackendOps *ops, bool direct_routing) {
	Backend b = {
		.ops = ops,
		.config = { .type = ops == &backend_vxlan_ops ? NETWORK_BACKEND_VXLAN : NETWORK_BACKEND_HOST_GW,
			    .vni = 1,
			    .port = 4789,
			    .direct_routing = direct_routing },
		.underlay_ifindex = UNDERLAY,
		.underlay_mtu = 1500,
		.public_ip = A("10.99.0.11"),
		.n_connected = 1,
	};
	b.connected[0] = P("10.99.0.0/24");
	b.node_name = "node1";
	assert_int_equal(backend_init(&b, ops), 0);
	if (ops == &backend_vxlan_ops)
		((VxlanBackend *) b.state)->vtep_ifindex = VTEP;
	return b;
}

static NodeLease lease(const char *name, const char *subnet, const char *pub, uint8_t mac_last) {
	NodeLease l = { .subnet = P(subnet),
			.public_ip = A(pub),
			.has_vtep_mac = true,
			.vtep_mac = { 0x02, 0, 0, 0, 0, mac_last } };
	l.node_name = (char *) name; /* a view: the reconciler copies it */
	snprintf(l.backend, sizeof(l.backend), "vxlan");
	return l;
}

static void test_vxlan_render(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, false);
	NodeLease l = lease("node2", "10.244.2.0/24", "10.99.0.12", 2);
	NodeObjects o;
	char buf[IP_PREFIX_STRLEN];

	assert_int_equal(b.ops->render(&b, &l, &o), 0);
	assert_int_equal(o.n_neigh, 1);
	assert_int_equal(o.neigh[0].ifindex, VTEP);
	assert_string_equal(ip_addr_to_string(&o.neigh[0].dst, buf), "10.244.2.0");
	assert_memory_equal(o.neigh[0].mac, l.vtep_mac, 6);
	assert_true(o.has_fdb);
	assert_string_equal(ip_addr_to_string(&o.fdb.dst, buf), "10.99.0.12");
	assert_memory_equal(o.fdb.mac, l.vtep_mac, 6);
	assert_int_equal(o.n_routes, 1);
	assert_string_equal(ip_prefix_to_string(&o.routes[0].dst, buf), "10.244.2.0/24");
	assert_string_equal(ip_addr_to_string(&o.routes[0].gw, buf), "10.244.2.0");
	assert_true(o.routes[0].onlink);
	assert_int_equal(o.routes[0].oif, VTEP);
	assert_int_equal(o.routes[0].protocol, WEFT_RTPROT);

	/* no VTEP MAC published: unusable */
	l.has_vtep_mac = false;
	assert_int_equal(b.ops->render(&b, &l, &o), -EINVAL);
	backend_done(&b);
}

static void test_vxlan_direct_routing(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, true);
	NodeLease near = lease("node2", "10.244.2.0/24", "10.99.0.12", 2);
	NodeLease far = lease("node3", "10.244.3.0/24", "192.0.2.3", 3);
	NodeObjects o;
	char buf[IP_PREFIX_STRLEN];

	assert_int_equal(b.ops->render(&b, &near, &o), 0);
	assert_int_equal(o.n_neigh, 0);
	assert_false(o.has_fdb);
	assert_int_equal(o.n_routes, 1);
	assert_string_equal(ip_addr_to_string(&o.routes[0].gw, buf), "10.99.0.12");
	assert_int_equal(o.routes[0].oif, UNDERLAY);
	assert_false(o.routes[0].onlink);

	assert_int_equal(b.ops->render(&b, &far, &o), 0);
	assert_int_equal(o.n_neigh, 1);
	assert_true(o.has_fdb);
	backend_done(&b);
}

static void test_hostgw_render(void **state) {
	Backend b = test_backend(&backend_hostgw_ops, false);
	NodeLease near = lease("node2", "10.244.2.0/24", "10.99.0.12", 2);
	NodeLease far = lease("node3", "10.244.3.0/24", "192.0.2.3", 3);
	NodeObjects o;
	char buf[IP_PREFIX_STRLEN];

	assert_int_equal(b.ops->render(&b, &near, &o), 0);
	assert_int_equal(o.n_routes, 1);
	assert_string_equal(ip_prefix_to_string(&o.routes[0].dst, buf), "10.244.2.0/24");
	assert_string_equal(ip_addr_to_string(&o.routes[0].gw, buf), "10.99.0.12");
	assert_int_equal(b.ops->render(&b, &far, &o), -ENETUNREACH);
	backend_done(&b);
}

static void test_vtep_mac(void **state) {
	uint8_t a[6], b[6], c[6];

	backend_vtep_mac("node1", 1, a);
	backend_vtep_mac("node1", 1, b);
	backend_vtep_mac("node2", 1, c);
	assert_memory_equal(a, b, 6);
	assert_memory_not_equal(a, c, 6);
	assert_int_equal(a[0] & 0x01, 0); /* unicast */
	assert_int_equal(a[0] & 0x02, 2); /* locally administered */
}

/* Renders a set of leases with the vxlan test backend. */
static NodeObjects *render(Backend *b, const NodeLease *l, size_t n) {
	NodeObjects *o = calloc(n + 1, sizeof(NodeObjects));
	assert_non_null(o);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(b->ops->render(b, &l[i], &o[i]), 0);
	return o;
}

/* Builds "observed" as the kernel would report a perfect programming of `o`. */
static void observe_all(const NodeObjects *o, size_t n, ReconcileObserved *obs) {
	*obs = (ReconcileObserved) {
		.routes = calloc(2 * n + 4, sizeof(NlRoute)),
		.neigh = calloc(2 * n + 4, sizeof(NlNeigh)),
		.fdb = calloc(n + 4, sizeof(NlNeigh)),
	};
	assert_non_null(obs->routes);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < o[i].n_routes; j++) {
			NlRoute r = o[i].routes[j];
			r.table = 0;
			if (r.dst.addr.family == AF_INET6)
				r.priority = 1024; /* as the kernel reports it */
			obs->routes[obs->n_routes++] = r;
		}
		for (size_t j = 0; j < o[i].n_neigh; j++)
			obs->neigh[obs->n_neigh++] = o[i].neigh[j];
		if (o[i].has_fdb)
			obs->fdb[obs->n_fdb++] = o[i].fdb;
	}
}

static void test_plan_empty_kernel(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, false);
	NodeLease l[2] = { lease("node2", "10.244.2.0/24", "10.99.0.12", 2),
			   lease("node3", "10.244.3.0/24", "10.99.0.13", 3) };
	_cleanup_free_ NodeObjects *o = render(&b, l, 2);
	ReconcileObserved obs = {};
	ReconcilePlan p;

	assert_int_equal(reconcile_plan(o, 2, &obs, &p), 0);
	assert_int_equal(p.n_add, 6);
	assert_int_equal(p.n_present, 0);
	assert_int_equal(p.n_del_routes + p.n_del_neigh + p.n_del_fdb, 0);
	assert_false(o[0].route_present[0]);
	assert_false(o[0].route_replace[0]);
	reconcile_plan_done(&p);
	backend_done(&b);
}

static void test_plan_in_sync(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, false);
	NodeLease l[2] = { lease("node2", "10.244.2.0/24", "10.99.0.12", 2),
			   lease("node3", "10.244.3.0/24", "10.99.0.13", 3) };
	_cleanup_free_ NodeObjects *o = render(&b, l, 2);
	ReconcileObserved obs;
	ReconcilePlan p;

	l[1].subnet6 = P("fd00:10:244:3::/64");
	free(o);
	o = render(&b, l, 2);
	observe_all(o, 2, &obs);
	assert_int_equal(reconcile_plan(o, 2, &obs, &p), 0);
	assert_int_equal(p.n_add, 0);
	assert_int_equal(p.n_present, 8); /* 2 routes+neigh+fdb, plus the IPv6 route and neighbour */
	assert_int_equal(p.n_del_routes + p.n_del_neigh + p.n_del_fdb, 0);
	reconcile_plan_done(&p);
	reconcile_observed_done(&obs);
	backend_done(&b);
}

static void test_plan_stale_and_changed(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, false);
	NodeLease l[3] = { lease("node2", "10.244.2.0/24", "10.99.0.12", 2),
			   lease("node3", "10.244.3.0/24", "10.99.0.13", 3),
			   lease("node4", "10.244.4.0/24", "10.99.0.14", 4) };
	_cleanup_free_ NodeObjects *all = render(&b, l, 3), *o = NULL;
	ReconcileObserved obs;
	ReconcilePlan p;
	char buf[IP_PREFIX_STRLEN];

	/* The kernel has node2..4 programmed; node4 has left, node3 moved to a new public IP and
	 * new VTEP MAC, and node2's route was replaced by hand with a wrong gateway. */
	observe_all(all, 3, &obs);
	obs.routes[0].gw = A("10.244.9.9");
	l[1].public_ip = A("10.99.0.33");
	l[1].vtep_mac[5] = 0x33;
	o = render(&b, l, 2);

	assert_int_equal(reconcile_plan(o, 2, &obs, &p), 0);
	/* node2: route wrong -> replace; neigh + fdb fine */
	assert_false(o[0].route_present[0]);
	assert_true(o[0].route_replace[0]);
	assert_true(o[0].neigh_present[0]);
	assert_true(o[0].fdb_present);
	/* node3: neighbour MAC changed -> replace; FDB (mac, dst) new -> add; route fine */
	assert_true(o[1].neigh_replace[0]);
	assert_false(o[1].fdb_present);
	assert_true(o[1].route_present[0]);
	assert_int_equal(p.n_add, 3);
	/* stale: node4's route, neighbour and FDB entry, and node3's old FDB entry */
	assert_int_equal(p.n_del_routes, 1);
	assert_string_equal(ip_prefix_to_string(&p.del_routes[0].dst, buf), "10.244.4.0/24");
	assert_int_equal(p.n_del_neigh, 1);
	assert_string_equal(ip_addr_to_string(&p.del_neigh[0].dst, buf), "10.244.4.0");
	assert_int_equal(p.n_del_fdb, 2);
	reconcile_plan_done(&p);
	reconcile_observed_done(&obs);
	backend_done(&b);
}

static void test_plan_foreign_table_is_not_ours(void **state) {
	/* Same destination but in another table: distinct key, so stale (the reconciler only dumps the
	 * main table in practice; this guards the key). */
	Backend b = test_backend(&backend_hostgw_ops, false);
	NodeLease l = lease("node2", "10.244.2.0/24", "10.99.0.12", 2);
	_cleanup_free_ NodeObjects *o = render(&b, &l, 1);
	ReconcileObserved obs;
	ReconcilePlan p;

	observe_all(o, 1, &obs);
	obs.routes[0].table = 100;
	assert_int_equal(reconcile_plan(o, 1, &obs, &p), 0);
	assert_false(o[0].route_present[0]);
	assert_false(o[0].route_replace[0]);
	assert_int_equal(p.n_del_routes, 1);
	reconcile_plan_done(&p);
	reconcile_observed_done(&obs);
	backend_done(&b);
}

/* Issue 7 item 1: a destination held by a route weft did not install (the kernel's connected
 * route, a static one) is a conflict: never replaced, never deleted, not counted as missing. */
static void test_plan_foreign_route(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, false);
	NodeLease l[2] = { lease("node2", "10.244.2.0/24", "10.99.0.12", 2),
			   lease("fake", "10.99.0.0/24", "10.99.0.50", 0x50) };
	_cleanup_free_ NodeObjects *o = render(&b, l, 2);
	ReconcileObserved obs = {};
	ReconcilePlan p;

	obs.foreign = calloc(2, sizeof(NlRoute));
	assert_non_null(obs.foreign);
	obs.foreign[obs.n_foreign++] = (NlRoute) { .dst = P("10.99.0.0/24"),
						   .oif = UNDERLAY,
						   .protocol = RTPROT_KERNEL,
						   .scope = RT_SCOPE_LINK,
						   .type = RTN_UNICAST };
	obs.foreign[obs.n_foreign++] = (NlRoute) {
		.dst = P("0.0.0.0/0"), .gw = A("10.99.0.1"), .protocol = RTPROT_BOOT, .type = RTN_UNICAST
	};
	assert_int_equal(reconcile_plan(o, 2, &obs, &p), 0);
	assert_false(o[0].route_foreign[0]);
	assert_true(o[1].route_foreign[0]);
	assert_false(o[1].route_replace[0]);
	assert_int_equal(p.n_conflict, 1);
	assert_int_equal(p.n_add, 5);        /* node2: 3, fake: neighbour + FDB (not applied: apply_node skips it) */
	assert_int_equal(p.n_del_routes, 0); /* foreign routes are never stale */
	reconcile_plan_done(&p);
	reconcile_observed_done(&obs);
	backend_done(&b);
}

static void test_plan_5000_nodes(void **state) {
	Backend b = test_backend(&backend_vxlan_ops, false);
	const size_t n = 5000;
	_cleanup_free_ NodeLease *l = calloc(n, sizeof(NodeLease));
	_cleanup_free_ char(*names)[32] = calloc(n, 32); /* the leases' names are views into it */
	_cleanup_free_ NodeObjects *o = NULL;
	ReconcileObserved obs;
	ReconcilePlan p;
	struct timespec t0, t1;
	double ms;

	assert_non_null(l);
	assert_non_null(names);
	b.connected[0] = P("10.96.0.0/12");
	for (size_t i = 0; i < n; i++) {
		char *name = names[i], sub[32], pub[32];
		snprintf(name, 32, "node%zu", i);
		snprintf(sub, sizeof(sub), "10.%zu.%zu.0/24", 100 + i / 256, i % 256);
		snprintf(pub, sizeof(pub), "10.%zu.%zu.%zu", 96 + i / 65536, (i / 256) % 256, i % 256);
		l[i] = lease(name, sub, pub, (uint8_t) i);
		l[i].vtep_mac[4] = (uint8_t) (i >> 8);
	}
	o = render(&b, l, n);
	observe_all(o, n, &obs);
	/* every other node is missing from the kernel */
	for (size_t i = 0, w = 0; i < obs.n_routes; i++)
		if (i % 2 == 0)
			obs.routes[w++] = obs.routes[i];
	obs.n_routes = (n + 1) / 2;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(reconcile_plan(o, n, &obs, &p), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("plan for %zu nodes: %.1f ms\n", n, ms);
	assert_true(ms < 500);
	assert_int_equal(p.n_add, n / 2);
	assert_int_equal(p.n_present, 3 * n - n / 2);
	reconcile_plan_done(&p);
	reconcile_observed_done(&obs);
	backend_done(&b);
}

static void test_desired_table(void **state) {
	Reconciler r;
	NodeLease l[4] = { lease("node3", "10.244.3.0/24", "10.99.0.13", 3),
			   lease("node1", "10.244.1.0/24", "10.99.0.11", 1),
			   lease("node2", "10.244.2.0/24", "10.99.0.12", 2),
			   lease("node4", "10.244.4.0/24", "10.99.0.14", 4) };
	Metrics m = {};
	NodeLease moved;

	reconciler_init(&r, NULL, NULL, &m, "node1");
	assert_false(r.synced);
	assert_int_equal(reconciler_set_all(&r, l, 3), 1);
	assert_true(r.synced);
	assert_int_equal(r.n_nodes, 2); /* self excluded */
	assert_string_equal(r.nodes[0].lease.node_name, "node2");
	assert_string_equal(r.nodes[1].lease.node_name, "node3");
	assert_int_equal(m.nodes, 2);
	/* same list again: no change */
	assert_int_equal(reconciler_set_all(&r, l, 3), 0);

	/* renewal (expiration moved) is no change; a new public IP is */
	moved = l[2];
	moved.expiration = 12345;
	assert_int_equal(reconciler_upsert(&r, &moved), 0);
	moved.public_ip = A("10.99.0.22");
	assert_int_equal(reconciler_upsert(&r, &moved), 1);
	assert_int_equal(reconciler_upsert(&r, &l[1]), 0); /* self */
	assert_int_equal(reconciler_upsert(&r, &l[3]), 1);
	assert_int_equal(r.n_nodes, 3);
	assert_string_equal(r.nodes[2].lease.node_name, "node4");
	assert_int_equal(reconciler_remove(&r, &l[0]), 1);
	assert_int_equal(reconciler_remove(&r, &l[0]), 0);
	assert_int_equal(r.n_nodes, 2);
	assert_string_equal(r.nodes[0].lease.node_name, "node2");
	assert_string_equal(r.nodes[1].lease.node_name, "node4");
	assert_int_equal(m.nodes, 2);
	/* a delete carries the key only (Kubernetes keys Nodes by name: no key = the node name) */
	NodeLease by_key = { .key = "node4" };
	assert_int_equal(reconciler_remove(&r, &by_key), 1);
	assert_int_equal(r.n_nodes, 1);
	assert_string_equal(r.nodes[0].lease.node_name, "node2");
	reconciler_done(&r);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vxlan_render),           cmocka_unit_test(test_vxlan_direct_routing),
		cmocka_unit_test(test_hostgw_render),          cmocka_unit_test(test_vtep_mac),
		cmocka_unit_test(test_plan_empty_kernel),      cmocka_unit_test(test_plan_in_sync),
		cmocka_unit_test(test_plan_stale_and_changed), cmocka_unit_test(test_plan_foreign_table_is_not_ours),
		cmocka_unit_test(test_plan_foreign_route),     cmocka_unit_test(test_plan_5000_nodes),
		cmocka_unit_test(test_desired_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
