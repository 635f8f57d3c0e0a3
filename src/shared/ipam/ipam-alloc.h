/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host-local allocation strategy as a pure function: round robin through a range set
 * starting after the last reserved address, so a crash-looping pod does not get the same IP
 * again until the whole set has been used.
 */

#include "shared/ipam/ipam-range.h"

/*
 * Asked for each candidate in order. Returns > 0 if the address is taken (try the next one),
 * 0 if it is free, negative errno to abort. An implementation may claim the address as a side
 * effect when it returns 0 (the store reserves it right there, exactly like the reference's
 * Reserve-in-the-loop, so there is no window between "free" and "mine").
 */
typedef int (*IpamIsTakenFn)(const IpAddr *a, size_t range_idx, void *userdata);

/*
 * Finds the next free address of set `s` (canonical). Candidates, each visited at most once:
 * last_reserved+1 .. end of its range, then the following ranges (wrapping to the first) from
 * their start, ending with last_reserved itself. If last_reserved is NULL, unset or outside the
 * set, the walk starts at the first range's start. Gateways are never candidates.
 * Returns 0 with *ret_addr / *ret_range_idx (either may be NULL), -ENOSPC if every candidate is
 * taken, or the callback's error.
 */
int ipam_alloc_next(const IpamRangeSet *s, const IpAddr *last_reserved, IpamIsTakenFn is_taken, void *userdata,
		    IpAddr *ret_addr, size_t *ret_range_idx);

/*
 * Assigns requested addresses to range sets: each must lie in a range of exactly one set (the
 * sets do not overlap), a set takes at most one, and a range's gateway cannot be requested.
 * ret_want[i] (n_sets entries) is the index into ips for set i, or -1. Duplicates of the same
 * address are fine. 0, or -EINVAL with err naming the address.
 */
int ipam_alloc_assign_requested(const IpamRangeSet *sets, size_t n_sets, const IpAddr *ips, size_t n_ips,
				ssize_t *ret_want, IpamError *err);
