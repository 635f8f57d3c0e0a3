/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Stale UDP conntrack entries of Services, removed over ctnetlink (raw NFNL messages with libmnl).
 * UDP has no connection end: without this, a client that keeps its source port (a DNS resolver)
 * keeps reaching a deleted endpoint, or a Service IP/port that is gone, until the entry times out.
 * The kernel cannot delete by a partial tuple, so entries are dumped (UDP of one family), matched
 * here and deleted one by one by their full original tuple (what `conntrack -D` does).
 */

#include <stdint.h>

#include "shared/ip/ip-addr.h"

typedef struct ServiceCtFilter {
	/* original direction's destination (AF_UNSPEC: any) and port (0: any) */
	IpAddr orig_dst;
	uint16_t orig_dport;
	/* reply direction's source (AF_UNSPEC: any) and port (0: any): the endpoint a Service chose */
	IpAddr reply_src;
	uint16_t reply_sport;
	/* only DNATed entries (original destination != reply source) */
	bool nat_only;
	int family; /* AF_INET or AF_INET6 */
} ServiceCtFilter;

/* Deletes the matching UDP entries in the current network namespace. >= 0 (how many) or -errno. */
int service_conntrack_clear_udp(const ServiceCtFilter *f);
