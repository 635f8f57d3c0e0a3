/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/string-util.h"
#include "shared/ip/ip-addr.h"

unsigned ip_addr_size(int family) {
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

unsigned ip_family_bits(int family) {
	return ip_addr_size(family) * 8;
}

int ip_addr_parse(const char *s, IpAddr *ret) {
	IpAddr a = {};

	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, &a.in) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, s, &a.in6) == 1)
		a.family = AF_INET6;
	else
		return -EINVAL;
	*ret = a;
	return 0;
}

int ip_prefix_parse(const char *s, IpPrefix *ret) {
	char buf[IP_PREFIX_STRLEN];
	const char *slash;
	IpPrefix p = {};
	unsigned len;
	int r;

	if (!s)
		return -EINVAL;
	slash = strchr(s, '/');
	if (!slash || (size_t) (slash - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t) (slash - s));
	buf[slash - s] = 0;
	r = ip_addr_parse(buf, &p.addr);
	if (r < 0)
		return r;
	r = safe_atou32(slash + 1, &len);
	if (r < 0 || len > ip_family_bits(p.addr.family) || strlen(slash + 1) > 3)
		return -EINVAL;
	p.len = (uint8_t) len;
	*ret = p;
	return 0;
}

int ip_prefix_parse_network(const char *s, IpPrefix *ret) {
	IpPrefix p, m;
	int r = ip_prefix_parse(s, &p);

	if (r < 0)
		return r;
	m = ip_prefix_mask(&p);
	if (!ip_addr_equal(&m.addr, &p.addr))
		return -EINVAL;
	*ret = p;
	return 0;
}

const char *ip_addr_to_string(const IpAddr *a, char buf[static IP_ADDR_STRLEN]) {
	if (!a || !inet_ntop(a->family, a->bytes, buf, IP_ADDR_STRLEN))
		snprintf(buf, IP_ADDR_STRLEN, "<none>");
	return buf;
}

const char *ip_prefix_to_string(const IpPrefix *p, char buf[static IP_PREFIX_STRLEN]) {
	char a[IP_ADDR_STRLEN];

	snprintf(buf, IP_PREFIX_STRLEN, "%s/%u", ip_addr_to_string(&p->addr, a), p->len);
	return buf;
}

bool ip_addr_is_set(const IpAddr *a) {
	return a && (a->family == AF_INET || a->family == AF_INET6);
}

bool ip_addr_equal(const IpAddr *a, const IpAddr *b) {
	return a->family == b->family && memcmp(a->bytes, b->bytes, ip_addr_size(a->family)) == 0;
}

int ip_addr_cmp(const IpAddr *a, const IpAddr *b) {
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->bytes, b->bytes, ip_addr_size(a->family));
}

bool ip_prefix_equal(const IpPrefix *a, const IpPrefix *b) {
	return a->len == b->len && ip_addr_equal(&a->addr, &b->addr);
}

IpPrefix ip_prefix_mask(const IpPrefix *p) {
	IpPrefix m = *p;
	unsigned n = ip_addr_size(p->addr.family);

	for (unsigned i = 0; i < n; i++) {
		int bits = (int) p->len - (int) (i * 8);
		uint8_t mask = bits >= 8 ? 0xff : bits <= 0 ? 0 : (uint8_t) (0xff << (8 - bits));
		m.addr.bytes[i] &= mask;
	}
	return m;
}

bool ip_prefix_contains(const IpPrefix *p, const IpAddr *a) {
	IpPrefix q = { .addr = *a, .len = p->len }, pm, qm;

	if (p->addr.family != a->family)
		return false;
	pm = ip_prefix_mask(p);
	qm = ip_prefix_mask(&q);
	return ip_addr_equal(&pm.addr, &qm.addr);
}

bool ip_prefix_overlaps(const IpPrefix *a, const IpPrefix *b) {
	if (a->addr.family != b->addr.family)
		return false;
	return a->len <= b->len ? ip_prefix_contains(a, &b->addr) : ip_prefix_contains(b, &a->addr);
}

IpAddr ip_prefix_first(const IpPrefix *p) {
	return ip_prefix_mask(p).addr;
}

IpAddr ip_prefix_last(const IpPrefix *p) {
	IpAddr a = ip_prefix_mask(p).addr;
	unsigned n = ip_addr_size(p->addr.family);

	for (unsigned i = 0; i < n; i++) {
		int bits = (int) p->len - (int) (i * 8);
		uint8_t host = bits >= 8 ? 0 : bits <= 0 ? 0xff : (uint8_t) (0xff >> bits);
		a.bytes[i] |= host;
	}
	return a;
}

IpAddr ip_prefix_netmask(const IpPrefix *p) {
	IpAddr a = { .family = p->addr.family };
	unsigned n = ip_addr_size(p->addr.family);

	for (unsigned i = 0; i < n; i++) {
		int bits = (int) p->len - (int) (i * 8);
		a.bytes[i] = bits >= 8 ? 0xff : bits <= 0 ? 0 : (uint8_t) (0xff << (8 - bits));
	}
	return a;
}

bool ip_addr_add(const IpAddr *a, int64_t delta, IpAddr *ret) {
	IpAddr r = *a;
	unsigned n = ip_addr_size(a->family);
	uint64_t mag = delta < 0 ? (uint64_t) (-(delta + 1)) + 1 : (uint64_t) delta;
	unsigned carry = 0;

	if (n == 0)
		return false;
	if (delta >= 0) {
		for (int i = (int) n - 1; i >= 0; i--) {
			unsigned v = r.bytes[i] + (unsigned) (mag & 0xff) + carry;
			r.bytes[i] = (uint8_t) v;
			carry = v >> 8;
			mag >>= 8;
		}
	} else {
		for (int i = (int) n - 1; i >= 0; i--) {
			int v = (int) r.bytes[i] - (int) (mag & 0xff) - (int) carry;
			carry = v < 0;
			r.bytes[i] = (uint8_t) (v + (carry ? 256 : 0));
			mag >>= 8;
		}
	}
	if (carry || mag)
		return false;
	*ret = r;
	return true;
}

bool ip_addr_next(const IpAddr *a, IpAddr *ret) {
	return ip_addr_add(a, 1, ret);
}

bool ip_addr_prev(const IpAddr *a, IpAddr *ret) {
	return ip_addr_add(a, -1, ret);
}

int64_t ip_addr_distance(const IpAddr *a, const IpAddr *b) {
	unsigned n = ip_addr_size(a->family);
	bool neg = ip_addr_cmp(b, a) < 0;
	const IpAddr *lo = neg ? b : a, *hi = neg ? a : b;
	uint8_t d[16];
	int borrow = 0;
	uint64_t v = 0;

	for (int i = (int) n - 1; i >= 0; i--) {
		int x = (int) hi->bytes[i] - (int) lo->bytes[i] - borrow;
		borrow = x < 0;
		d[i] = (uint8_t) (x + (borrow ? 256 : 0));
	}
	for (unsigned i = 0; i < n; i++) {
		if (v >> 55)
			return neg ? INT64_MIN : INT64_MAX;
		v = (v << 8) | d[i];
	}
	if (v > INT64_MAX)
		return neg ? INT64_MIN : INT64_MAX;
	return neg ? -(int64_t) v : (int64_t) v;
}

const char *ip_proto_name(uint8_t p, char buf[static 8]) {
	switch (p) {
	case IPPROTO_TCP: return "TCP";
	case IPPROTO_UDP: return "UDP";
	case IPPROTO_SCTP: return "SCTP";
	case IPPROTO_ICMP: return "ICMP";
	case IPPROTO_ICMPV6: return "ICMPv6";
	default: snprintf(buf, 8, "%u", p); return buf;
	}
}
