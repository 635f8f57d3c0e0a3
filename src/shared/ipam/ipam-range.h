/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * IPAM ranges and range sets, with the reference host-local's defaults and validation
 * (Range.Canonicalize / RangeSet.Canonicalize). Pure: no I/O.
 *
 * A range is an inclusive [start, end] slice of a subnet with a gateway. A range set is a list
 * of non-overlapping ranges of one family; one address is allocated per range set.
 */

#include <stddef.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "shared/ip/ip-addr.h"

/* Error text for the caller to wrap into a CNI error (library code does not print). */
typedef struct IpamError {
	char msg[512];
} IpamError;

/* Formats msg unless one is already set (first error wins); returns r. err may be NULL. */
int ipam_error_set(IpamError *err, int r, const char *fmt, ...) _printf_(3, 4);

typedef struct IpamRange {
	IpPrefix subnet; /* network (host bits zero after canonicalize) */
	IpAddr start;    /* AF_UNSPEC before canonicalize = not given */
	IpAddr end;
	IpAddr gateway;
} IpamRange;

typedef struct IpamRangeSet {
	IpamRange *ranges;
	size_t n_ranges;
	char *key; /* where it came from, for messages: "ipam.ranges[1]" (owned, may be NULL) */
	bool flat; /* legacy ipam.subnet form: its one range is named by key itself */
} IpamRangeSet;

/* Longest "start-end" string of a range. */
#define IPAM_RANGE_STRLEN (2 * IP_ADDR_STRLEN)

/*
 * Validates and fills defaults: subnet must be a network (no host bits) with at least two host
 * bits (/31, /32, /127, /128 are too small); gateway defaults to network+1; start defaults to
 * network+1 and end to the last address (IPv4: excluding broadcast); start, end and gateway
 * must lie in the subnet and start <= end. `key` names the range in messages
 * ("ipam.ranges[0][1]"). 0 or -EINVAL with err set.
 */
int ipam_range_canonicalize(IpamRange *r, const char *key, IpamError *err);
/* Whether a is within [start, end] of r (and the subnet). */
bool ipam_range_contains(const IpamRange *r, const IpAddr *a);
/* Whether two canonical ranges share an address (different families never overlap). */
bool ipam_range_overlaps(const IpamRange *a, const IpamRange *b);
/* "start-end", as the reference prints a range. */
const char *ipam_range_to_string(const IpamRange *r, char buf[static IPAM_RANGE_STRLEN]);
/* Number of addresses in [start, end], saturated at INT64_MAX. */
int64_t ipam_range_size(const IpamRange *r);

/*
 * Canonicalizes every range (keys "<set key>[i]"), then requires one family and no overlap
 * within the set. An empty set is an error. 0 or -EINVAL with err set.
 */
int ipam_range_set_canonicalize(IpamRangeSet *s, IpamError *err);
/* Refuses subnets no pod network can be: shorter than /8, or overlapping the unspecified,
 * loopback or multicast ranges (the bound and the reasons are in ipam-range.c). Separate from
 * canonicalization because only ADD, CHECK and STATUS apply it: DEL and GC of attachments made
 * with such a config by an older version must still work. 0 or -EINVAL with err naming the key. */
int ipam_range_set_check_subnets(const IpamRangeSet *s, IpamError *err);
/* Index of the range containing a, or -ENOENT. */
ssize_t ipam_range_set_find(const IpamRangeSet *s, const IpAddr *a);
bool ipam_range_set_contains(const IpamRangeSet *s, const IpAddr *a);
bool ipam_range_set_overlaps(const IpamRangeSet *a, const IpamRangeSet *b);
/* Family of the (canonical, non-empty) set. */
int ipam_range_set_family(const IpamRangeSet *s);
/* "a-b,c-d" into buf (truncated to size). Returns buf. */
char *ipam_range_set_to_string(const IpamRangeSet *s, char *buf, size_t size);
/* Frees the ranges and key (not s itself). */
void ipam_range_set_done(IpamRangeSet *s);
