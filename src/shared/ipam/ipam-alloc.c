/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "shared/ipam/ipam-alloc.h"

/* Moves the cursor one address on: within the range, or to the next range's start after its
 * end (wrapping to the first range). */
static void cursor_advance(const IpamRangeSet *s, size_t *idx, IpAddr *cur) {
	if (ip_addr_equal(cur, &s->ranges[*idx].end) || !ip_addr_next(cur, cur)) {
		*idx = (*idx + 1) % s->n_ranges;
		*cur = s->ranges[*idx].start;
	}
}

/* Same visiting order as the reference's RangeIter, so both implementations hand out the same
 * address sequence from the same store. */
int ipam_alloc_next(const IpamRangeSet *s, const IpAddr *last_reserved, IpamIsTakenFn is_taken, void *userdata,
		    IpAddr *ret_addr, size_t *ret_range_idx) {
	size_t idx = 0, first_idx;
	IpAddr cur, first;
	ssize_t k = -ENOENT;

	if (!s || s->n_ranges == 0 || !is_taken)
		return -EINVAL;

	if (last_reserved && ip_addr_is_set(last_reserved))
		k = ipam_range_set_find(s, last_reserved);
	if (k >= 0) {
		idx = (size_t) k;
		cur = *last_reserved;
		cursor_advance(s, &idx, &cur);
	} else
		cur = s->ranges[0].start;
	first = cur;
	first_idx = idx;

	do {
		if (!ip_addr_equal(&cur, &s->ranges[idx].gateway)) {
			int t = is_taken(&cur, idx, userdata);

			if (t < 0)
				return t;
			if (t == 0) {
				if (ret_addr)
					*ret_addr = cur;
				if (ret_range_idx)
					*ret_range_idx = idx;
				return 0;
			}
		}
		cursor_advance(s, &idx, &cur);
	} while (idx != first_idx || !ip_addr_equal(&cur, &first));

	return -ENOSPC;
}

int ipam_alloc_assign_requested(const IpamRangeSet *sets, size_t n_sets, const IpAddr *ips, size_t n_ips,
				ssize_t *ret_want, IpamError *err) {
	char a[IP_ADDR_STRLEN], b[IP_ADDR_STRLEN];

	for (size_t i = 0; i < n_sets; i++)
		ret_want[i] = -1;
	for (size_t k = 0; k < n_ips; k++) {
		ssize_t ri = -ENOENT;
		size_t i;

		for (i = 0; i < n_sets; i++) {
			ri = ipam_range_set_find(&sets[i], &ips[k]);
			if (ri >= 0)
				break;
		}
		if (i == n_sets)
			return ipam_error_set(err, -EINVAL,
					      "failed to allocate all requested IPs: %s is not in any configured range",
					      ip_addr_to_string(&ips[k], a));
		if (ip_addr_equal(&ips[k], &sets[i].ranges[ri].gateway))
			return ipam_error_set(err, -EINVAL,
					      "failed to allocate for range %zu: requested ip %s is subnet's gateway",
					      i, ip_addr_to_string(&ips[k], a));
		if (ret_want[i] >= 0 && !ip_addr_equal(&ips[ret_want[i]], &ips[k]))
			return ipam_error_set(
					err, -EINVAL,
					"failed to allocate all requested IPs: %s and %s are both in range set %zu, which yields one address",
					ip_addr_to_string(&ips[ret_want[i]], a), ip_addr_to_string(&ips[k], b), i);
		ret_want[i] = (ssize_t) k;
	}
	return 0;
}
