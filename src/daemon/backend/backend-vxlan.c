/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vxlan: one VTEP per node, `weft.<VNI>`, without learning: we program the kernel's view of
 * every peer ourselves, as Flannel does.
 *
 *   VTEP address        <our subnet network address>/32   (10.244.1.0/32)
 *   per remote node     neigh  10.244.2.0 lladdr <its VTEP MAC> dev weft.1 nud permanent
 *                       fdb    <its VTEP MAC> dev weft.1 dst <its public IP> self permanent
 *                       route  10.244.2.0/24 via 10.244.2.0 dev weft.1 onlink proto 0xfc
 * (order and rollback are the reconciler's: reconcile.c). With DirectRouting, a remote on the
 * same L2 gets a host-gw route instead: no encapsulation where none is needed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend-vxlan.h"
#include "daemon/backend/backend.h"

/* VXLAN header 8 + UDP 8 + outer IP (20 | 40) + inner Ethernet 14 */
static unsigned vxlan_overhead(const Backend *b) {
	return b->public_ip.family == AF_INET6 ? 70 : 50;
}

static VxlanBackend *vxlan(const Backend *b) {
	return b->state;
}

static bool vtep_matches(const Backend *b, const NlLink *l) {
	return streq(l->kind, "vxlan") && l->vxlan_id == b->config.vni && l->vxlan_port == (b->config.port ?: 4789) &&
	       ip_addr_equal(&l->vxlan_local, &b->public_ip) &&
	       (l->vxlan_link == 0 || l->vxlan_link == b->underlay_ifindex);
}

static int vxlan_ensure(Backend *b) {
	VxlanBackend *v = vxlan(b);
	NlLink l;
	int r;

	r = backend_refresh_mtu(b, vxlan_overhead(b));
	if (r < 0)
		return r;
	snprintf(v->vtep_name, sizeof(v->vtep_name), BACKEND_VTEP_PREFIX "%u", b->config.vni);
	backend_vtep_mac(b->node_name, b->config.vni, v->vtep_mac);

	r = nl_link_get(b->nl, v->vtep_name, 0, &l);
	if (r >= 0 && !vtep_matches(b, &l)) {
		/* Left over with other parameters (VNI/port/underlay changed): its neighbours, FDB
		 * and routes are wrong too, so start over. */
		r = nl_link_del(b->nl, l.ifindex);
		if (r < 0 && r != -ENODEV)
			return r;
		r = -ENODEV;
	}
	if (r == -ENODEV) {
		/* ip link add weft.1 type vxlan id 1 local <public ip> dev <underlay> dstport 4789
		 *    nolearning address <derived mac> mtu <underlay - 50> */
		NlVxlanConfig c = {
			.name = v->vtep_name,
			.vni = b->config.vni,
			.port = b->config.port ?: 4789,
			.local = b->public_ip,
			.link = b->underlay_ifindex,
			.mtu = b->mtu,
			.learning = false,
			.mac = v->vtep_mac,
		};

		r = nl_vxlan_create(b->nl, &c);
		if (r < 0 && r != -EEXIST)
			return r;
		r = nl_link_get(b->nl, v->vtep_name, 0, &l);
	}
	if (r < 0)
		return r;
	v->vtep_ifindex = l.ifindex;

	if (!l.has_mac || memcmp(l.mac, v->vtep_mac, 6) != 0) {
		r = nl_link_set_mac(b->nl, l.ifindex, v->vtep_mac);
		if (r < 0)
			return r;
	}
	return backend_device_finish(b, &l, true, 0);
}

static void vxlan_add_family(Backend *b, const NodeLease *remote, const IpPrefix *subnet, NodeObjects *o) {
	IpPrefix net = ip_prefix_mask(subnet);

	/* ip neigh replace 10.244.2.0 lladdr <mac> dev weft.1 nud permanent */
	o->neigh[o->n_neigh] = (NlNeigh) {
		.ifindex = vxlan(b)->vtep_ifindex,
		.family = net.addr.family,
		.dst = net.addr,
		.state = NUD_PERMANENT,
	};
	memcpy(o->neigh[o->n_neigh].mac, remote->vtep_mac, 6);
	o->n_neigh++;

	/* ip route replace 10.244.2.0/24 via 10.244.2.0 dev weft.1 onlink proto 0xfc */
	o->routes[o->n_routes] = (NlRoute) {
		.dst = net,
		.gw = net.addr,
		.oif = vxlan(b)->vtep_ifindex,
		.protocol = WEFT_RTPROT,
		.scope = RT_SCOPE_UNIVERSE,
		.type = RTN_UNICAST,
		.onlink = true,
	};
	o->n_routes++;
}

static int vxlan_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	NodeObjects o = { .node_name = remote->node_name };

	if (b->config.direct_routing && backend_is_direct(b, &remote->public_ip))
		return backend_render_direct_routes(b, remote, ret);

	if (!remote->has_vtep_mac || remote->public_ip.family != b->public_ip.family)
		return -EINVAL;

	if (ip_addr_is_set(&remote->subnet.addr))
		vxlan_add_family(b, remote, &remote->subnet, &o);
	if (ip_addr_is_set(&remote->subnet6.addr))
		vxlan_add_family(b, remote, &remote->subnet6, &o);

	/* bridge fdb append <mac> dev weft.1 dst <public ip> self permanent */
	o.has_fdb = true;
	o.fdb = (NlNeigh) {
		.ifindex = vxlan(b)->vtep_ifindex,
		.family = AF_BRIDGE,
		.dst = remote->public_ip,
		.state = NUD_PERMANENT,
		.flags = NTF_SELF,
	};
	memcpy(o.fdb.mac, remote->vtep_mac, 6);
	*ret = o;
	return 0;
}

/* Our VTEP MAC, published with the lease (peers need it for their FDB) once the VTEP exists. */
static void vxlan_lease_attrs(const Backend *b, NodeLease *self) {
	const VxlanBackend *v = vxlan(b);

	if (v->vtep_ifindex <= 0)
		return;
	memcpy(self->vtep_mac, v->vtep_mac, 6);
	self->has_vtep_mac = true;
}

/* The neighbours and FDB entries on the VTEP are ours. */
static int vxlan_neigh_ifindex(const Backend *b) {
	return vxlan(b)->vtep_ifindex;
}

/* every VTEP weft.<VNI> (any VNI: the configured one may have changed) */
static int vxlan_uninstall(NlSock *nl) {
	return backend_delete_links(nl, "vxlan", BACKEND_VTEP_PREFIX);
}

const BackendOps backend_vxlan_ops = {
	.name = "vxlan",
	.object_size = sizeof(VxlanBackend),
	.ensure = vxlan_ensure,
	.render = vxlan_render,
	.lease_attrs = vxlan_lease_attrs,
	.neigh_ifindex = vxlan_neigh_ifindex,
	.uninstall = vxlan_uninstall,
};
