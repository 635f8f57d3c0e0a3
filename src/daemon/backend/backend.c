/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend.h"

/* Every kind, for what concerns them all (uninstall). */
static const BackendOps *const all_ops[] = {
	&backend_hostgw_ops, &backend_vxlan_ops, &backend_udp_ops,
	&backend_ipip_ops,   &backend_bgp_ops,   &backend_wireguard_ops,
};

const BackendOps *backend_ops_find(NetworkBackendType type) {
	switch (type) {
	case NETWORK_BACKEND_HOST_GW: return &backend_hostgw_ops;
	case NETWORK_BACKEND_VXLAN: return &backend_vxlan_ops;
	case NETWORK_BACKEND_UDP: return &backend_udp_ops;
	case NETWORK_BACKEND_IPIP: return &backend_ipip_ops;
	case NETWORK_BACKEND_BGP: return &backend_bgp_ops;
	case NETWORK_BACKEND_WIREGUARD: return &backend_wireguard_ops;
	}
	return NULL;
}

typedef struct AddrScan {
	int ifindex; /* 0 = any: looking for `want` */
	const IpAddr *want;
	int found_ifindex;
	IpAddr first4, first6; /* first global address of ifindex, per family */
	IpPrefix connected[16];
	size_t n_connected;
} AddrScan;

static int addr_scan_cb(const NlAddr *a, void *userdata) {
	AddrScan *s = userdata;

	if (s->want) {
		if (ip_addr_equal(&a->prefix.addr, s->want))
			s->found_ifindex = a->ifindex;
		return 0;
	}
	if (a->ifindex != s->ifindex || a->scope != RT_SCOPE_UNIVERSE)
		return 0;
	if (a->prefix.addr.family == AF_INET && !ip_addr_is_set(&s->first4))
		s->first4 = a->prefix.addr;
	if (a->prefix.addr.family == AF_INET6 && !ip_addr_is_set(&s->first6))
		s->first6 = a->prefix.addr;
	if (s->n_connected < ELEMENTSOF(s->connected))
		s->connected[s->n_connected++] = ip_prefix_mask(&a->prefix);
	return 0;
}

typedef struct LocalScan {
	IpPrefix *addrs;
	size_t n, alloc;
} LocalScan;

static int local_scan_cb(const NlAddr *a, void *userdata) {
	LocalScan *s = userdata;

	if (s->n == s->alloc) {
		size_t na = s->alloc ? s->alloc * 2 : 16;
		IpPrefix *p = reallocarray(s->addrs, na, sizeof(IpPrefix));
		if (!p)
			return -ENOMEM;
		s->addrs = p;
		s->alloc = na;
	}
	s->addrs[s->n++] = a->prefix;
	return 0;
}

/* Every address of the node, on every link: what a remote lease may not claim (its public IP) or
 * cover (its subnet). */
static int refresh_local(Backend *b) {
	LocalScan s = {};
	int r;

	r = nl_addr_dump(b->nl, AF_UNSPEC, 0, local_scan_cb, &s);
	if (r < 0) {
		free(s.addrs);
		return r;
	}
	free(b->local);
	b->local = s.addrs;
	b->n_local = s.n;
	return 0;
}

static void backend_state_free(Backend *b) {
	if (b->ops && b->ops->done && b->state)
		b->ops->done(b);
	b->state = mfree(b->state);
}

int backend_init(Backend *b, const BackendOps *ops) {
	int r;

	backend_state_free(b);
	b->ops = ops;
	if (ops->object_size > 0) {
		b->state = calloc(1, ops->object_size);
		if (!b->state)
			return -ENOMEM;
	}
	if (ops->init) {
		r = ops->init(b);
		if (r < 0) {
			backend_state_free(b);
			return r;
		}
	}
	return 0;
}

void backend_done(Backend *b) {
	backend_state_free(b);
	b->local = mfree(b->local);
	b->n_local = 0;
	node_lease_done(&b->self);
}

void backend_commit(Backend *b) {
	if (b->ops && b->ops->commit)
		b->ops->commit(b);
}

void backend_lease_attrs(const Backend *b, NodeLease *self) {
	if (b->ops && b->ops->lease_attrs)
		b->ops->lease_attrs(b, self);
}

int backend_neigh_ifindex(const Backend *b) {
	return b->ops && b->ops->neigh_ifindex ? b->ops->neigh_ifindex(b) : 0;
}

void backend_render_metrics(const Backend *b, FILE *f) {
	if (b->ops && b->ops->render_metrics)
		b->ops->render_metrics(b, f);
}

int backend_probe(const Backend *b, BackendProbe *ret) {
	*ret = (BackendProbe) {};
	if (!b->ops || !b->ops->probe)
		return -EOPNOTSUPP;
	return b->ops->probe(b, ret);
}

void backend_withdraw(Backend *b) {
	if (b->ops && b->ops->withdraw)
		b->ops->withdraw(b);
}

int backend_announce(Backend *b, const IpAddr *addrs, size_t n) {
	if (!b->ops || !b->ops->announce || !b->state)
		return -EOPNOTSUPP;
	return b->ops->announce(b, addrs, n);
}

typedef struct DefaultScan {
	int family;
	int oif;
} DefaultScan;

static int default_route_cb(const NlRoute *r, void *userdata) {
	DefaultScan *s = userdata;

	if (r->dst.addr.family == s->family && r->dst.len == 0 && r->oif > 0 && r->type == RTN_UNICAST && !s->oif)
		s->oif = r->oif;
	return 0;
}

int backend_refresh_underlay(Backend *b) {
	AddrScan s = { .ifindex = b->underlay_ifindex };
	NlLink l;
	int r;

	r = nl_link_get(b->nl, NULL, b->underlay_ifindex, &l);
	if (r < 0)
		return r;
	r = nl_addr_dump(b->nl, AF_UNSPEC, b->underlay_ifindex, addr_scan_cb, &s);
	if (r < 0)
		return r;
	b->underlay_mtu = l.mtu;
	memcpy(b->connected, s.connected, sizeof(s.connected));
	b->n_connected = s.n_connected;
	return refresh_local(b);
}

int backend_find_underlay(Backend *b, const char *iface, const IpAddr *public_ip) {
	bool have_ip = public_ip && ip_addr_is_set(public_ip);
	AddrScan s = {};
	NlLink l;
	int ifindex = 0, r;

	if (!isempty(iface)) {
		r = nl_link_get(b->nl, iface, 0, &l);
		if (r < 0)
			return r;
		ifindex = l.ifindex;
	} else if (have_ip) {
		s.want = public_ip;
		r = nl_addr_dump(b->nl, public_ip->family, 0, addr_scan_cb, &s);
		if (r < 0)
			return r;
		if (s.found_ifindex <= 0)
			return -EADDRNOTAVAIL;
		ifindex = s.found_ifindex;
	} else {
		DefaultScan d = { .family = AF_INET };

		r = nl_route_dump(b->nl, AF_INET, 0, default_route_cb, &d);
		if (r < 0)
			return r;
		if (!d.oif) {
			d.family = AF_INET6;
			r = nl_route_dump(b->nl, AF_INET6, 0, default_route_cb, &d);
			if (r < 0)
				return r;
		}
		if (!d.oif)
			return -ENODEV;
		ifindex = d.oif;
	}

	r = nl_link_get(b->nl, NULL, ifindex, &l);
	if (r < 0)
		return r;
	s = (AddrScan) { .ifindex = ifindex };
	r = nl_addr_dump(b->nl, AF_UNSPEC, ifindex, addr_scan_cb, &s);
	if (r < 0)
		return r;
	if (!have_ip && !ip_addr_is_set(&s.first4) && !ip_addr_is_set(&s.first6))
		return -EADDRNOTAVAIL;

	b->underlay_ifindex = ifindex;
	snprintf(b->underlay_name, sizeof(b->underlay_name), "%s", l.name);
	b->underlay_mtu = l.mtu;
	b->public_ip = have_ip ? *public_ip : ip_addr_is_set(&s.first4) ? s.first4 : s.first6;
	b->public_ip6 = b->public_ip.family == AF_INET ? s.first6 : (IpAddr) {};
	memcpy(b->connected, s.connected, sizeof(s.connected));
	b->n_connected = s.n_connected;
	return refresh_local(b);
}

bool backend_is_direct(const Backend *b, const IpAddr *ip) {
	for (size_t i = 0; i < b->n_connected; i++)
		if (b->connected[i].addr.family == ip->family && ip_prefix_contains(&b->connected[i], ip))
			return true;
	return false;
}

static void route_init(NlRoute *rt, const IpPrefix *dst) {
	*rt = (NlRoute) {
		.dst = ip_prefix_mask(dst),
		.protocol = WEFT_RTPROT,
		.scope = RT_SCOPE_UNIVERSE,
		.type = RTN_UNICAST,
	};
}

int backend_render_direct_routes(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	NodeObjects o = { .node_name = remote->node_name };

	if (!backend_is_direct(b, &remote->public_ip))
		return -ENETUNREACH;

	/* A route needs a gateway of its own family (no RTA_VIA here): the other family's subnet
	 * is reachable only through an overlay. */
	if (remote->subnet.addr.family == remote->public_ip.family) {
		route_init(&o.routes[o.n_routes], &remote->subnet);
		o.routes[o.n_routes].gw = remote->public_ip;
		o.routes[o.n_routes].oif = b->underlay_ifindex;
		o.n_routes++;
	}
	if (remote->subnet6.addr.family == remote->public_ip.family) {
		route_init(&o.routes[o.n_routes], &remote->subnet6);
		o.routes[o.n_routes].gw = remote->public_ip;
		o.routes[o.n_routes].oif = b->underlay_ifindex;
		o.n_routes++;
	}
	*ret = o;
	return 0;
}

static uint64_t fnv1a(uint64_t h, const char *s) {
	for (; *s; s++) {
		h ^= (uint8_t) *s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void backend_vtep_mac(const char *node_name, uint32_t vni, uint8_t ret[6]) {
	/* FNV-1a 64 over "<name>/<vni>", streamed: the whole name counts (a fixed buffer used to cut
	 * it, giving two long names the same MAC); short names hash as they always did. */
	uint64_t h = 0xcbf29ce484222325ULL;
	char v[16];

	snprintf(v, sizeof(v), "/%u", vni);
	h = fnv1a(fnv1a(h, node_name ?: ""), v);
	for (int i = 0; i < 6; i++)
		ret[i] = (uint8_t) (h >> (8 * i));
	ret[0] = (uint8_t) ((ret[0] & 0xfe) | 0x02); /* unicast, locally administered */
}

typedef struct LinkScan {
	const char *kind, *prefix;
	int ifindex[64];
	size_t n;
} LinkScan;

static int link_scan_cb(const NlLink *l, void *userdata) {
	LinkScan *s = userdata;

	if (streq(l->kind, s->kind) && startswith(l->name, s->prefix) && s->n < ELEMENTSOF(s->ifindex))
		s->ifindex[s->n++] = l->ifindex;
	return 0;
}

int backend_delete_links(NlSock *nl, const char *kind, const char *name_prefix) {
	LinkScan s = { .kind = kind, .prefix = name_prefix };
	int r;

	r = nl_link_dump(nl, link_scan_cb, &s);
	if (r < 0)
		return r;
	r = 0;
	for (size_t i = 0; i < s.n; i++) {
		int k = nl_link_del(nl, s.ifindex[i]);
		if (k != -ENODEV)
			RET_GATHER(r, k);
	}
	return r;
}

int backend_uninstall_all(NlSock *nl) {
	int r = 0;

	for (size_t i = 0; i < ELEMENTSOF(all_ops); i++)
		if (all_ops[i]->uninstall)
			RET_GATHER(r, all_ops[i]->uninstall(nl));
	return r;
}

typedef struct DeviceAddrs {
	IpPrefix have[8];
	size_t n;
} DeviceAddrs;

static int device_addr_cb(const NlAddr *a, void *userdata) {
	DeviceAddrs *v = userdata;

	if (a->prefix.addr.family == AF_INET6 && a->scope == RT_SCOPE_LINK)
		return 0; /* the kernel's own fe80:: */
	if (v->n < ELEMENTSOF(v->have))
		v->have[v->n++] = a->prefix;
	return 0;
}

/* ip addr replace 10.244.1.0/32 dev weft.1 (and the /128 of subnet6); stale ones removed */
static int sync_wanted(Backend *b, int ifindex, const IpPrefix *want, size_t n_want, uint32_t v6_flags) {
	DeviceAddrs v = {};
	int r;

	r = nl_addr_dump(b->nl, AF_UNSPEC, ifindex, device_addr_cb, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < v.n; i++) {
		bool keep = false;
		for (size_t j = 0; j < n_want; j++)
			keep = keep || ip_prefix_equal(&v.have[i], &want[j]);
		if (!keep) {
			r = nl_addr_del(b->nl, ifindex, &v.have[i]);
			if (r < 0 && r != -EADDRNOTAVAIL && r != -ENOENT)
				return r;
		}
	}
	for (size_t j = 0; j < n_want; j++) {
		r = nl_addr_add(b->nl, ifindex, &want[j], want[j].addr.family == AF_INET6 ? v6_flags : 0);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

int backend_sync_device_addresses(Backend *b, int ifindex, bool with_v6, uint32_t v6_flags) {
	IpPrefix want[2];
	size_t n_want = 0;

	if (ip_addr_is_set(&b->self.subnet.addr))
		want[n_want++] = (IpPrefix) { .addr = ip_prefix_mask(&b->self.subnet).addr, .len = 32 };
	if (with_v6 && ip_addr_is_set(&b->self.subnet6.addr))
		want[n_want++] = (IpPrefix) { .addr = ip_prefix_mask(&b->self.subnet6).addr, .len = 128 };
	return sync_wanted(b, ifindex, want, n_want, v6_flags);
}

/* The host address of each of our subnets whose family is wanted (an IPv6-only cluster's subnet is
 * IPv6: by family, not by field). */
static int sync_family_addresses(Backend *b, int ifindex, bool with_v4, bool with_v6, uint32_t v6_flags) {
	const IpPrefix *ours[] = { &b->self.subnet, &b->self.subnet6 };
	IpPrefix want[2];
	size_t n_want = 0;

	for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
		int f = ours[i]->addr.family;

		if ((f == AF_INET && with_v4) || (f == AF_INET6 && with_v6))
			want[n_want++] = (IpPrefix) { .addr = ip_prefix_mask(ours[i]).addr, .len = ip_family_bits(f) };
	}
	return sync_wanted(b, ifindex, want, n_want, v6_flags);
}

int backend_refresh_mtu(Backend *b, unsigned overhead) {
	int r;

	r = backend_refresh_underlay(b);
	if (r < 0)
		return r;
	if (b->underlay_mtu <= overhead + 68)
		return -EINVAL;
	b->mtu = b->config.mtu ?: b->underlay_mtu - overhead;
	return 0;
}

/* by_family: sync_family_addresses(), else the tunnel kinds' backend_sync_device_addresses() */
static int device_finish(Backend *b, const NlLink *l, bool by_family, bool with_v4, bool with_v6, uint32_t v6_flags) {
	int r;

	if (l->mtu != b->mtu) {
		r = nl_link_set_mtu(b->nl, l->ifindex, b->mtu);
		if (r < 0)
			return r;
	}
	if (!b->have_lease)
		return 0;
	r = by_family ? sync_family_addresses(b, l->ifindex, with_v4, with_v6, v6_flags)
		      : backend_sync_device_addresses(b, l->ifindex, with_v6, v6_flags);
	if (r < 0)
		return r;
	if (!(l->flags & IFF_UP))
		return nl_link_set_up(b->nl, l->ifindex, true);
	return 0;
}

int backend_device_finish(Backend *b, const NlLink *l, bool with_v6, uint32_t v6_flags) {
	return device_finish(b, l, false, true, with_v6, v6_flags);
}

int backend_device_finish_families(Backend *b, const NlLink *l, bool with_v4, bool with_v6, uint32_t v6_flags) {
	return device_finish(b, l, true, with_v4, with_v6, v6_flags);
}
