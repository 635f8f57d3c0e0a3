/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "shared/ipam/ipam-range.h"

int ipam_error_set(IpamError *err, int r, const char *fmt, ...) {
	va_list ap;

	if (!err || err->msg[0])
		return r;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return r;
}

static bool addr_in_subnet(const IpPrefix *subnet, const IpAddr *a) {
	return a->family == subnet->addr.family && ip_prefix_contains(subnet, a);
}

/*
 * Subnets no pod network can sensibly be, refused before anything is handed out of them.
 *
 * Size: a prefix shorter than IPAM_SUBNET_MIN_PREFIX (/8) in either family. /8 is the largest
 * block that is still one network in practice (10.0.0.0/8 is a common cluster range, and the
 * reference accepts it, so we must too); anything shorter spans several /8s of the address plan
 * (0.0.0.0/0 would make 0.0.0.x/0 pod addresses, and a bridge gateway of 0.0.0.1/0 on the host
 * with a masquerade exemption for everything). IPv6 uses the same bound: real configs use /64
 * per node and /48../56 per cluster; /8 still admits all of fd00::/8 (ULA), while ::/0 or
 * 2000::/3 (all of global unicast) are refused.
 *
 * Ranges: unspecified and "this network" (0.0.0.0/8, ::), loopback (127.0.0.0/8, ::1) and
 * multicast (224.0.0.0/4, ff00::/8): none of them is a unicast address a pod can own. Link-local
 * (169.254.0.0/16, fe80::/10) stays allowed: it is unicast, works on one link, and is used on
 * purpose for node-local networks (metadata proxies, ptp links); 240.0.0.0/4 too (clusters use
 * it for pods when RFC 1918 space runs out).
 */
#define IPAM_SUBNET_MIN_PREFIX 8u

static const char *subnet_forbidden_reason(const IpPrefix *subnet) {
	static const struct {
		const char *prefix, *what;
	} forbidden[] = {
		{ "0.0.0.0/8", "the unspecified (\"this network\") range 0.0.0.0/8" },
		{ "127.0.0.0/8", "the loopback range 127.0.0.0/8" },
		{ "224.0.0.0/4", "the multicast range 224.0.0.0/4" },
		{ "::/128", "the unspecified address ::" },
		{ "::1/128", "the loopback address ::1" },
		{ "ff00::/8", "the multicast range ff00::/8" },
	};

	for (size_t i = 0; i < ELEMENTSOF(forbidden); i++) {
		IpPrefix p;

		if (ip_prefix_parse(forbidden[i].prefix, &p) < 0 || p.addr.family != subnet->addr.family)
			continue;
		if (ip_prefix_overlaps(&p, subnet))
			return forbidden[i].what;
	}
	return NULL;
}

int ipam_range_canonicalize(IpamRange *r, const char *key, IpamError *err) {
	char s[IP_PREFIX_STRLEN], a[IP_ADDR_STRLEN], b[IP_ADDR_STRLEN];
	int family = r->subnet.addr.family;
	unsigned bits = ip_family_bits(family);
	IpPrefix net;

	if (bits == 0)
		return ipam_error_set(err, -EINVAL, "%s.subnet: missing or not an IP network", key);
	ip_prefix_to_string(&r->subnet, s);
	/* Need at least one address besides network and broadcast. */
	if ((unsigned) r->subnet.len + 2u > bits)
		return ipam_error_set(err, -EINVAL, "%s.subnet: network %s too small to allocate from", key, s);
	net = ip_prefix_mask(&r->subnet);
	if (!ip_addr_equal(&net.addr, &r->subnet.addr))
		return ipam_error_set(
				err, -EINVAL,
				"%s.subnet: %s has host bits set; for a prefix length of %u the network address is %s",
				key, s, r->subnet.len, ip_addr_to_string(&net.addr, a));

	if (!ip_addr_is_set(&r->gateway))
		(void) ip_addr_next(&net.addr, &r->gateway);
	else if (!addr_in_subnet(&r->subnet, &r->gateway))
		return ipam_error_set(err, -EINVAL, "%s.gateway: %s not in network %s", key,
				      ip_addr_to_string(&r->gateway, a), s);

	if (!ip_addr_is_set(&r->start))
		(void) ip_addr_next(&net.addr, &r->start);
	else if (!addr_in_subnet(&r->subnet, &r->start))
		return ipam_error_set(err, -EINVAL, "%s.rangeStart: %s not in network %s", key,
				      ip_addr_to_string(&r->start, a), s);

	if (!ip_addr_is_set(&r->end)) {
		r->end = ip_prefix_last(&net);
		if (family == AF_INET)
			(void) ip_addr_prev(&r->end, &r->end); /* skip broadcast */
	} else if (!addr_in_subnet(&r->subnet, &r->end))
		return ipam_error_set(err, -EINVAL, "%s.rangeEnd: %s not in network %s", key,
				      ip_addr_to_string(&r->end, a), s);

	/* The reference does not check this and then never allocates from such a range; an
	 * explicit error is kinder. */
	if (ip_addr_cmp(&r->start, &r->end) > 0)
		return ipam_error_set(err, -EINVAL, "%s.rangeStart: %s is after rangeEnd %s", key,
				      ip_addr_to_string(&r->start, a), ip_addr_to_string(&r->end, b));
	return 0;
}

bool ipam_range_contains(const IpamRange *r, const IpAddr *a) {
	return addr_in_subnet(&r->subnet, a) && ip_addr_cmp(a, &r->start) >= 0 && ip_addr_cmp(a, &r->end) <= 0;
}

bool ipam_range_overlaps(const IpamRange *a, const IpamRange *b) {
	if (a->start.family != b->start.family)
		return false;
	return ipam_range_contains(a, &b->start) || ipam_range_contains(a, &b->end) ||
	       ipam_range_contains(b, &a->start) || ipam_range_contains(b, &a->end);
}

const char *ipam_range_to_string(const IpamRange *r, char buf[static IPAM_RANGE_STRLEN]) {
	char a[IP_ADDR_STRLEN], b[IP_ADDR_STRLEN];

	snprintf(buf, IPAM_RANGE_STRLEN, "%s-%s", ip_addr_to_string(&r->start, a), ip_addr_to_string(&r->end, b));
	return buf;
}

int64_t ipam_range_size(const IpamRange *r) {
	int64_t d = ip_addr_distance(&r->start, &r->end);

	if (d < 0)
		return 0;
	return d == INT64_MAX ? INT64_MAX : d + 1;
}

int ipam_range_set_canonicalize(IpamRangeSet *s, IpamError *err) {
	const char *key = s->key ?: "range set";
	char k[256], x[IPAM_RANGE_STRLEN], y[IPAM_RANGE_STRLEN];
	int r;

	if (s->n_ranges == 0)
		return ipam_error_set(err, -EINVAL, "%s: empty range set", key);
	for (size_t i = 0; i < s->n_ranges; i++) {
		if (s->flat)
			snprintf(k, sizeof(k), "%s", key);
		else
			snprintf(k, sizeof(k), "%s[%zu]", key, i);
		r = ipam_range_canonicalize(&s->ranges[i], k, err);
		if (r < 0)
			return r;
		if (s->ranges[i].subnet.addr.family != s->ranges[0].subnet.addr.family)
			return ipam_error_set(err, -EINVAL, "%s.subnet: mixed address families in one range set", k);
	}
	for (size_t i = 0; i < s->n_ranges; i++)
		for (size_t j = i + 1; j < s->n_ranges; j++)
			if (ipam_range_overlaps(&s->ranges[i], &s->ranges[j]))
				return ipam_error_set(err, -EINVAL, "%s: ranges %s and %s overlap", key,
						      ipam_range_to_string(&s->ranges[i], x),
						      ipam_range_to_string(&s->ranges[j], y));
	return 0;
}

int ipam_range_set_check_subnets(const IpamRangeSet *s, IpamError *err) {
	const char *key = s->key ?: "range set", *what;
	char sub[IP_PREFIX_STRLEN], k[256];

	for (size_t i = 0; i < s->n_ranges; i++) {
		const IpPrefix *p = &s->ranges[i].subnet;

		if (s->flat)
			snprintf(k, sizeof(k), "%s", key);
		else
			snprintf(k, sizeof(k), "%s[%zu]", key, i);
		ip_prefix_to_string(p, sub);
		if (p->len < IPAM_SUBNET_MIN_PREFIX)
			return ipam_error_set(
					err, -EINVAL,
					"%s.subnet: \"%s\" is too large: prefix length /%u is shorter than /%u, which spans more than one /8 of the address plan and is no sane pod network",
					k, sub, p->len, IPAM_SUBNET_MIN_PREFIX);
		if ((what = subnet_forbidden_reason(p)))
			return ipam_error_set(
					err, -EINVAL,
					"%s.subnet: \"%s\" is invalid: it overlaps %s, which holds no pod addresses", k,
					sub, what);
	}
	return 0;
}

ssize_t ipam_range_set_find(const IpamRangeSet *s, const IpAddr *a) {
	for (size_t i = 0; i < s->n_ranges; i++)
		if (ipam_range_contains(&s->ranges[i], a))
			return (ssize_t) i;
	return -ENOENT;
}

bool ipam_range_set_contains(const IpamRangeSet *s, const IpAddr *a) {
	return ipam_range_set_find(s, a) >= 0;
}

bool ipam_range_set_overlaps(const IpamRangeSet *a, const IpamRangeSet *b) {
	for (size_t i = 0; i < a->n_ranges; i++)
		for (size_t j = 0; j < b->n_ranges; j++)
			if (ipam_range_overlaps(&a->ranges[i], &b->ranges[j]))
				return true;
	return false;
}

int ipam_range_set_family(const IpamRangeSet *s) {
	return s->n_ranges > 0 ? s->ranges[0].subnet.addr.family : AF_UNSPEC;
}

char *ipam_range_set_to_string(const IpamRangeSet *s, char *buf, size_t size) {
	char x[IPAM_RANGE_STRLEN];
	size_t off = 0;

	if (size == 0)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < s->n_ranges && off < size; i++) {
		int n = snprintf(buf + off, size - off, "%s%s", i ? "," : "", ipam_range_to_string(&s->ranges[i], x));
		if (n < 0)
			break;
		off += (size_t) n;
	}
	return buf;
}

void ipam_range_set_done(IpamRangeSet *s) {
	if (!s)
		return;
	s->ranges = mfree(s->ranges);
	s->n_ranges = 0;
	s->key = mfree(s->key);
}
