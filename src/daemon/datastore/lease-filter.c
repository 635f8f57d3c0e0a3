/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/datastore/lease-filter.h"

static const char *const reject_names[_LEASE_REJECT_MAX] = {
	[LEASE_ACCEPTED] = "accepted",
	[LEASE_REJECT_MALFORMED] = "malformed",
	[LEASE_REJECT_NODE_NAME] = "node_name",
	[LEASE_REJECT_OUTSIDE_NETWORK] = "outside_network",
	[LEASE_REJECT_PREFIX_LENGTH] = "prefix_length",
	[LEASE_REJECT_OWN_SUBNET] = "own_subnet",
	[LEASE_REJECT_CONNECTED] = "connected_network",
	[LEASE_REJECT_PUBLIC_IP] = "public_ip",
	[LEASE_REJECT_VTEP_MAC] = "vtep_mac",
	[LEASE_REJECT_OVERLAP] = "overlap",
	[LEASE_REJECT_DUPLICATE_NAME] = "duplicate_node_name",
	[LEASE_REJECT_DUPLICATE_MAC] = "duplicate_vtep_mac",
	[LEASE_REJECT_KERNEL_CONFLICT] = "route_conflict",
	[LEASE_REJECT_PUBLIC_KEY] = "public_key",
	[LEASE_REJECT_DUPLICATE_KEY] = "duplicate_public_key",
};

const char *lease_reject_to_string(LeaseReject r) {
	return r >= 0 && r < _LEASE_REJECT_MAX ? reject_names[r] : NULL;
}

static bool addr_is_zero(const IpAddr *a) {
	for (unsigned i = 0; i < ip_addr_size(a->family); i++)
		if (a->bytes[i])
			return false;
	return true;
}

/* Why `ip` cannot be a peer's underlay address; NULL if it can. */
static const char *public_ip_problem(const LeaseFilter *f, const IpAddr *ip) {
	if (!ip_addr_is_set(ip) || addr_is_zero(ip))
		return "unspecified";
	if (ip->family == AF_INET) {
		if (ip->bytes[0] == 127)
			return "loopback";
		if ((ip->bytes[0] & 0xf0) == 0xe0)
			return "multicast";
		if (ip->bytes[0] == 255 && ip->bytes[1] == 255 && ip->bytes[2] == 255 && ip->bytes[3] == 255)
			return "broadcast";
	} else {
		static const uint8_t loopback6[16] = { [15] = 1 };
		if (memcmp(ip->bytes, loopback6, 16) == 0)
			return "loopback";
		if (ip->bytes[0] == 0xff)
			return "multicast";
	}
	for (size_t i = 0; i < f->n_local; i++)
		if (ip_addr_equal(&f->local[i].addr, ip))
			return "one of this node's own addresses";
	return NULL;
}

static bool same_family_overlap(const IpPrefix *a, const IpPrefix *b) {
	return ip_addr_is_set(&a->addr) && a->addr.family == b->addr.family && ip_prefix_overlaps(a, b);
}

/* The subnet checks for one prefix of the lease (IPv4 subnet, or the IPv6 one). */
static LeaseReject check_subnet(const LeaseFilter *f, const char *what, const IpPrefix *p, char **ret_detail) {
	char a[IP_PREFIX_STRLEN], b[IP_PREFIX_STRLEN];
	const IpPrefix *net = p->addr.family == AF_INET ? &f->network : &f->network6;
	unsigned len = p->addr.family == AF_INET ? f->subnet_len : f->subnet_len6;
	IpPrefix masked = ip_prefix_mask(p);

	if (!ip_addr_is_set(&net->addr) || !ip_prefix_contains(net, &p->addr) || p->len < net->len) {
		if (ret_detail)
			*ret_detail = ip_addr_is_set(&net->addr)
						      ? strdup_printf("%s %s is outside the %s %s", what,
								      ip_prefix_to_string(p, a),
								      p->addr.family == AF_INET ? "Network"
												: "Network6",
								      ip_prefix_to_string(net, b))
						      : strdup_printf("%s %s: the network config has no %s", what,
								      ip_prefix_to_string(p, a),
								      p->addr.family == AF_INET ? "Network"
												: "Network6");
		return LEASE_REJECT_OUTSIDE_NETWORK;
	}
	if (p->len != len || !ip_prefix_equal(&masked, p)) {
		if (ret_detail)
			*ret_detail = strdup_printf("%s %s is not a /%u subnet (%s %u)", what,
						    ip_prefix_to_string(p, a), len,
						    p->addr.family == AF_INET ? "SubnetLen" : "SubnetLen6", len);
		return LEASE_REJECT_PREFIX_LENGTH;
	}
	if (same_family_overlap(&f->self_subnet, p) || same_family_overlap(&f->self_subnet6, p)) {
		if (ret_detail)
			*ret_detail = strdup_printf("%s %s overlaps this node's own subnet", what,
						    ip_prefix_to_string(p, a));
		return LEASE_REJECT_OWN_SUBNET;
	}
	for (size_t i = 0; i < f->n_local; i++) {
		IpPrefix c = ip_prefix_mask(&f->local[i]);

		if (same_family_overlap(&c, p)) {
			if (ret_detail)
				*ret_detail = strdup_printf(
						"%s %s covers %s, a directly connected network of this node", what,
						ip_prefix_to_string(p, a), ip_prefix_to_string(&c, b));
			return LEASE_REJECT_CONNECTED;
		}
	}
	return LEASE_ACCEPTED;
}

LeaseReject lease_filter_check(const LeaseFilter *f, const NodeLease *l, char **ret_detail) {
	char a[IP_ADDR_STRLEN], m[18];
	const char *why;
	LeaseReject r;

	if (ret_detail)
		*ret_detail = NULL;
	if (l->invalid != LEASE_ACCEPTED) {
		if (ret_detail)
			*ret_detail = strdup(l->invalid_detail ?: "unreadable lease");
		return l->invalid;
	}
	if (!node_name_valid(l->node_name)) {
		if (ret_detail)
			*ret_detail = strdup_printf("node name \"%s\" is not a valid Kubernetes node name "
						    "(lowercase DNS subdomain, at most %d characters)",
						    l->node_name ?: "", NODE_NAME_MAX);
		return LEASE_REJECT_NODE_NAME;
	}
	if (!ip_addr_is_set(&l->subnet.addr)) {
		if (ret_detail)
			*ret_detail = strdup("no subnet");
		return LEASE_REJECT_MALFORMED;
	}
	r = check_subnet(f, "subnet", &l->subnet, ret_detail);
	if (r != LEASE_ACCEPTED)
		return r;
	if (ip_addr_is_set(&l->subnet6.addr)) {
		if (l->subnet6.addr.family != AF_INET6 || l->subnet.addr.family != AF_INET) {
			if (ret_detail)
				*ret_detail = strdup("subnet6 must be IPv6, next to an IPv4 subnet");
			return LEASE_REJECT_MALFORMED;
		}
		r = check_subnet(f, "subnet6", &l->subnet6, ret_detail);
		if (r != LEASE_ACCEPTED)
			return r;
	}
	why = public_ip_problem(f, &l->public_ip);
	if (why) {
		if (ret_detail)
			*ret_detail = ip_addr_is_set(&l->public_ip)
						      ? strdup_printf("publicIP %s is %s",
								      ip_addr_to_string(&l->public_ip, a), why)
						      : strdup("no publicIP");
		return LEASE_REJECT_PUBLIC_IP;
	}
	if (ip_addr_is_set(&l->public_ip6)) {
		why = l->public_ip.family != AF_INET ? "only allowed next to an IPv4 publicIP"
						     : public_ip_problem(f, &l->public_ip6);
		if (why) {
			if (ret_detail)
				*ret_detail = strdup_printf("publicIPv6 %s is %s", ip_addr_to_string(&l->public_ip6, a),
							    why);
			return LEASE_REJECT_PUBLIC_IP;
		}
	}
	if (l->has_vtep_mac) {
		static const uint8_t zero[6];

		why = (l->vtep_mac[0] & 0x01)                                   ? "not a unicast address"
		      : memcmp(l->vtep_mac, zero, 6) == 0                       ? "all zeros"
		      : f->self_mac && memcmp(l->vtep_mac, f->self_mac, 6) == 0 ? "this node's own VTEP MAC"
										: NULL;
		if (why) {
			if (ret_detail)
				*ret_detail = strdup_printf("vtepMAC %s is %s", ether_addr_format(l->vtep_mac, m), why);
			return LEASE_REJECT_VTEP_MAC;
		}
	}
	if (l->has_public_key) {
		static const uint8_t zero[sizeof(l->public_key)];

		why = memcmp(l->public_key, zero, sizeof(zero)) == 0 ? "all zeros"
		      : f->self_key && memcmp(l->public_key, f->self_key, sizeof(zero)) == 0
				      ? "this node's own public key"
				      : NULL;
		if (why) {
			/* the key is public, but there is no need to repeat it: the lease names the node */
			if (ret_detail)
				*ret_detail = strdup_printf("publicKey is %s", why);
			return LEASE_REJECT_PUBLIC_KEY;
		}
	}
	if (f->self_name && streq_ptr(l->node_name, f->self_name)) {
		/* Our own lease never comes here (the reconciler takes it out by name and subnet): this
		 * is another key claiming to be us. */
		if (ret_detail)
			*ret_detail = strdup_printf("node name \"%s\" is this node's", l->node_name);
		return LEASE_REJECT_DUPLICATE_NAME;
	}
	return LEASE_ACCEPTED;
}

/* ---- conflicts ---- */

typedef int (*CandCmp)(const LeaseCandidate *a, const LeaseCandidate *b);

static int cmp_subnet(const LeaseCandidate *a, const LeaseCandidate *b) {
	IpPrefix pa = ip_prefix_mask(&a->lease->subnet), pb = ip_prefix_mask(&b->lease->subnet);
	int c = ip_addr_cmp(&pa.addr, &pb.addr);
	return c ?: (int) pa.len - (int) pb.len;
}

static int cmp_subnet6(const LeaseCandidate *a, const LeaseCandidate *b) {
	IpPrefix pa = ip_prefix_mask(&a->lease->subnet6), pb = ip_prefix_mask(&b->lease->subnet6);
	int c = ip_addr_cmp(&pa.addr, &pb.addr);
	return c ?: (int) pa.len - (int) pb.len;
}

static int cmp_name(const LeaseCandidate *a, const LeaseCandidate *b) {
	return strcmp(a->lease->node_name ?: "", b->lease->node_name ?: "");
}

static int cmp_mac(const LeaseCandidate *a, const LeaseCandidate *b) {
	return memcmp(a->lease->vtep_mac, b->lease->vtep_mac, 6);
}

static int cmp_key(const LeaseCandidate *a, const LeaseCandidate *b) {
	return memcmp(a->lease->public_key, b->lease->public_key, sizeof(a->lease->public_key));
}

static int cmp_age(const LeaseCandidate *a, const LeaseCandidate *b) {
	if (a->lease->created != b->lease->created)
		return a->lease->created < b->lease->created ? -1 : 1;
	return strcmp(a->key ?: "", b->key ?: "");
}

typedef struct SortCtx {
	const LeaseCandidate *c;
	CandCmp cmp;
} SortCtx;

static int idx_cmp(const void *x, const void *y, void *userdata) {
	const SortCtx *s = userdata;
	size_t i = *(const size_t *) x, j = *(const size_t *) y;
	int r = s->cmp(&s->c[i], &s->c[j]);

	return r ?: (i < j ? -1 : i > j ? 1 : 0);
}

/* ret_gid[i] = the same number for candidates equal under cmp (SIZE_MAX: not taking part). */
static void group_ids(const LeaseCandidate *c, size_t n, CandCmp cmp, bool (*takes_part)(const LeaseCandidate *),
		      size_t *idx, size_t *ret_gid) {
	SortCtx s = { .c = c, .cmp = cmp };
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		ret_gid[i] = SIZE_MAX;
		if (c[i].verdict == LEASE_ACCEPTED && takes_part(&c[i]))
			idx[k++] = i;
	}
	qsort_r(idx, k, sizeof(size_t), idx_cmp, &s);
	for (size_t i = 0; i < k; i++)
		ret_gid[idx[i]] = i > 0 && cmp(&c[idx[i - 1]], &c[idx[i]]) == 0 ? ret_gid[idx[i - 1]] : i;
}

static bool has_subnet(const LeaseCandidate *c) {
	return ip_addr_is_set(&c->lease->subnet.addr);
}
static bool has_subnet6(const LeaseCandidate *c) {
	return ip_addr_is_set(&c->lease->subnet6.addr);
}
static bool has_mac(const LeaseCandidate *c) {
	return c->lease->has_vtep_mac;
}
static bool has_key(const LeaseCandidate *c) {
	return c->lease->has_public_key;
}
static bool always(const LeaseCandidate *c) {
	return true;
}

int lease_filter_resolve(LeaseCandidate *c, size_t n) {
	static const struct {
		CandCmp cmp;
		bool (*takes_part)(const LeaseCandidate *);
		LeaseReject reason;
	} kinds[] = {
		{ cmp_subnet, has_subnet, LEASE_REJECT_OVERLAP },  { cmp_subnet6, has_subnet6, LEASE_REJECT_OVERLAP },
		{ cmp_name, always, LEASE_REJECT_DUPLICATE_NAME }, { cmp_mac, has_mac, LEASE_REJECT_DUPLICATE_MAC },
		{ cmp_key, has_key, LEASE_REJECT_DUPLICATE_KEY },
	};
	enum {
		K = ELEMENTSOF(kinds)
	};
	_cleanup_free_ size_t *idx = NULL, *gid = NULL, *owner = NULL;
	SortCtx s = { .c = c, .cmp = cmp_age };
	size_t k = 0;

	if (n == 0)
		return 0;
	idx = calloc(n, sizeof(size_t));
	gid = calloc(n * K, sizeof(size_t));
	owner = calloc(n * K, sizeof(size_t)); /* per kind and group: the accepted holder + 1, 0 = free */
	if (!idx || !gid || !owner)
		return -ENOMEM;
	for (size_t t = 0; t < K; t++)
		group_ids(c, n, kinds[t].cmp, kinds[t].takes_part, idx, gid + t * n);

	for (size_t i = 0; i < n; i++)
		if (c[i].verdict == LEASE_ACCEPTED)
			idx[k++] = i;
	qsort_r(idx, k, sizeof(size_t), idx_cmp, &s);
	for (size_t a = 0; a < k; a++) {
		size_t i = idx[a];
		bool lost = false;

		for (size_t t = 0; t < K && !lost; t++) {
			size_t g = gid[t * n + i];
			if (g != SIZE_MAX && owner[t * n + g] != 0) {
				c[i].verdict = kinds[t].reason;
				c[i].winner = owner[t * n + g] - 1;
				lost = true;
			}
		}
		if (lost)
			continue;
		for (size_t t = 0; t < K; t++) {
			size_t g = gid[t * n + i];
			if (g != SIZE_MAX)
				owner[t * n + g] = i + 1;
		}
	}
	return 0;
}
