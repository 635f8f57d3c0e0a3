/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Shared by the datastore harnesses (fuzz-etcd.c, fuzz-kube.c): whatever a datastore parser made
 * of the input goes through weftd's import filter (lease_filter_check, lease_filter_resolve) for a
 * fixed node, and the filter's promises are checked: an accepted lease is inside the network with
 * the configured length and has a valid node name; after resolving, no two accepted leases share a
 * subnet, a node name or a VTEP MAC, and every loser names an accepted, older winner.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/datastore/datastore.h"
#include "daemon/datastore/lease-filter.h"

#define FUZZ_LEASES_MAX 64

static inline void fuzz_check_lease_fields(const NodeLease *l) {
	if ((l->node_name && strlen(l->node_name) > NODE_NAME_MAX) ||
	    strnlen(l->backend, sizeof(l->backend)) >= sizeof(l->backend))
		abort();
	if (ip_addr_is_set(&l->subnet.addr) && l->subnet.len > ip_family_bits(l->subnet.addr.family))
		abort();
	if (ip_addr_is_set(&l->subnet6.addr) && l->subnet6.len > ip_family_bits(l->subnet6.addr.family))
		abort();
	if ((unsigned) l->invalid >= _LEASE_REJECT_MAX)
		abort();
}

static inline int fuzz_age_cmp(const LeaseCandidate *a, const LeaseCandidate *b) {
	if (a->lease->created != b->lease->created)
		return a->lease->created < b->lease->created ? -1 : 1;
	return strcmp(a->key ?: "", b->key ?: "");
}

static inline void fuzz_check_leases(const NodeLease *ls, const char *const *keys, size_t n) {
	static const uint8_t self_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	IpPrefix local[2];
	LeaseFilter f = { .subnet_len = 24,
			  .subnet_len6 = 64,
			  .self_name = "node1",
			  .self_mac = self_mac,
			  .local = local,
			  .n_local = 2 };
	LeaseCandidate c[FUZZ_LEASES_MAX];
	LeaseReject checked[FUZZ_LEASES_MAX];

	if (ip_prefix_parse("10.244.0.0/16", &f.network) < 0 || ip_prefix_parse("fd00:10:244::/56", &f.network6) < 0 ||
	    ip_prefix_parse("10.244.1.0/24", &f.self_subnet) < 0 || ip_prefix_parse("10.250.100.1/24", &local[0]) < 0 ||
	    ip_prefix_parse("fd00:10:244:ff::1/64", &local[1]) < 0)
		abort();
	if (n > FUZZ_LEASES_MAX)
		n = FUZZ_LEASES_MAX;
	for (size_t i = 0; i < n; i++) {
		const NodeLease *l = &ls[i];
		char *detail = NULL;
		LeaseReject v = lease_filter_check(&f, l, &detail);

		fuzz_check_lease_fields(l);
		if ((unsigned) v >= _LEASE_REJECT_MAX || !lease_reject_to_string(v))
			abort();
		if (v == LEASE_ACCEPTED) {
			const IpPrefix *net = l->subnet.addr.family == AF_INET ? &f.network : &f.network6;
			unsigned len = l->subnet.addr.family == AF_INET ? f.subnet_len : f.subnet_len6;

			if (detail || !node_name_valid(l->node_name) || !ip_prefix_contains(net, &l->subnet.addr) ||
			    l->subnet.len != len)
				abort();
		} else if (!detail)
			abort(); /* a refusal is logged with a reason */
		free(detail);
		c[i] = (LeaseCandidate) { .lease = l, .key = keys ? keys[i] : NULL, .verdict = v };
		checked[i] = v;
	}
	if (lease_filter_resolve(c, n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		/* Only resolve() sets a winner: check() refuses with the same reasons (our own name). */
		if (checked[i] == LEASE_ACCEPTED && c[i].verdict != LEASE_ACCEPTED) {
			size_t w = c[i].winner;

			if (w >= n || w == i || c[w].verdict != LEASE_ACCEPTED || fuzz_age_cmp(&c[w], &c[i]) > 0)
				abort();
		}
		if (c[i].verdict != LEASE_ACCEPTED)
			continue;
		for (size_t j = i + 1; j < n; j++) {
			const NodeLease *a = c[i].lease, *b = c[j].lease;
			IpPrefix pa, pb;

			if (c[j].verdict != LEASE_ACCEPTED)
				continue;
			pa = ip_prefix_mask(&a->subnet);
			pb = ip_prefix_mask(&b->subnet);
			if (ip_prefix_equal(&pa, &pb) || strcmp(a->node_name ?: "", b->node_name ?: "") == 0 ||
			    (a->has_vtep_mac && b->has_vtep_mac && memcmp(a->vtep_mac, b->vtep_mac, 6) == 0))
				abort();
			if (ip_addr_is_set(&a->subnet6.addr) && ip_addr_is_set(&b->subnet6.addr)) {
				pa = ip_prefix_mask(&a->subnet6);
				pb = ip_prefix_mask(&b->subnet6);
				if (ip_prefix_equal(&pa, &pb))
					abort();
			}
		}
	}
}
