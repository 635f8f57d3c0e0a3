/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The import filter for remote leases (BIRD's import filters are the model): every lease read
 * from the datastore passes here before anything is rendered or installed. Pure functions, no I/O:
 *
 *   lease_filter_check()    one lease on its own: node name, subnet inside Network/Network6 with
 *                           exactly SubnetLen/SubnetLen6, not overlapping our own subnet, not
 *                           covering an address of a network directly connected to this node,
 *                           public IP usable and not ours, VTEP MAC unicast and not ours,
 *                           WireGuard public key not all zero and not ours
 *   lease_filter_resolve()  conflicts between leases that passed: equal subnets, a node name, a
 *                           VTEP MAC or a WireGuard public key claimed twice. The older lease
 *                           wins (NodeLease.created: etcd create_revision, Kubernetes
 *                           creationTimestamp), ties by key, so every node picks the same winner
 *                           from the same store.
 *
 * The reconciler logs and counts every verdict once, when it changes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/datastore/datastore.h"
#include "shared/ip/ip-addr.h"

typedef struct LeaseFilter {
	IpPrefix network;  /* AF_UNSPEC = no IPv4 network: IPv4 subnets are refused */
	IpPrefix network6; /* AF_UNSPEC = no IPv6 network */
	unsigned subnet_len, subnet_len6;
	IpPrefix self_subnet, self_subnet6; /* our lease; AF_UNSPEC = none */
	const char *self_name;              /* NULL = not checked */
	const uint8_t *self_mac;            /* our VTEP MAC; NULL = none */
	const uint8_t *self_key;            /* our WireGuard public key (32 bytes); NULL = none */
	const IpPrefix *local;              /* this node's addresses with their prefix length, every link */
	size_t n_local;
} LeaseFilter;

/* "outside_network", ...; the label values of weft_leases_rejected_total. NULL if out of range. */
const char *lease_reject_to_string(LeaseReject r);

/*
 * Checks one lease on its own. Returns LEASE_ACCEPTED or why not; unless NULL, *ret_detail is set
 * to a malloc'ed sentence for the log naming the field and value ("subnet 10.250.100.0/24 is
 * outside the Network 10.250.128.0/17"), NULL when accepted or out of memory.
 */
LeaseReject lease_filter_check(const LeaseFilter *f, const NodeLease *l, char **ret_detail);

typedef struct LeaseCandidate {
	const NodeLease *lease;
	const char *key;     /* datastore key (ties between equal `created` go by key) */
	LeaseReject verdict; /* in: lease_filter_check(); out: a conflict reason for losers */
	size_t winner;       /* out, for losers: index of the candidate that won */
} LeaseCandidate;

/*
 * Among the candidates whose verdict is LEASE_ACCEPTED, finds conflicts (same IPv4 subnet, same
 * IPv6 subnet, same node name, same VTEP MAC, same public key; lease_filter_check() made every subnet of a family
 * the same length, so overlapping means equal) and marks each loser with LEASE_REJECT_OVERLAP,
 * _DUPLICATE_NAME, _DUPLICATE_MAC or _DUPLICATE_KEY and the index of the winner. Greedy in age order: a lease is
 * accepted unless an older accepted one conflicts with it. 0 or -ENOMEM.
 */
int lease_filter_resolve(LeaseCandidate *c, size_t n);
