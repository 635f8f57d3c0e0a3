/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipip: Calico's ipipMode. One IPIP tunnel per node, weft.ipip (Calico's tunl0), with our public
 * IP as the outer source and no fixed remote: each route names the remote node as its gateway,
 * so the kernel encapsulates to that address. 20 bytes of overhead instead of vxlan's 50, no MAC
 * learning, no FDB, no neighbours.
 *
 *   tunnel address      <our subnet network address>/32   (10.244.1.0/32), MTU underlay - 20
 *   per remote node     route  10.244.2.0/24 via <its public IP> dev weft.ipip onlink proto 0xfc
 *
 * DirectRouting (Calico's ipipMode CrossSubnet): a remote on our own L2 segment gets a plain
 * host-gw route; only the others are encapsulated. IPv4 only: IPv6 pod subnets would need sit
 * or ip6tnl, so a lease's subnet6 is not routed by this backend.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend-ipip.h"
#include "daemon/backend/backend.h"
#include "shared/nl/nl-ipip.h"

#define IPIP_OVERHEAD 20
#define IPIP_DEVICE BACKEND_VTEP_PREFIX "ipip"

static IpipBackend *ipip(const Backend *b) {
	return b->state;
}

static int ipip_ensure(Backend *b) {
	NlLink l;
	int r;

	r = backend_refresh_mtu(b, IPIP_OVERHEAD);
	if (r < 0)
		return r;
	if (b->public_ip.family != AF_INET)
		return -EAFNOSUPPORT;
	r = nl_link_get(b->nl, IPIP_DEVICE, 0, &l);
	if (r >= 0 && !streq(l.kind, "ipip")) {
		/* Not ours (or not an ipip device any more): start over. */
		r = nl_link_del(b->nl, l.ifindex);
		if (r < 0 && r != -ENODEV)
			return r;
		r = -ENODEV;
	}
	if (r == -ENODEV) {
		/* ip link add weft.ipip mtu <underlay - 20> type ipip local <public ip> dev <underlay>
		 *    ttl inherit pmtudisc */
		NlIpipConfig c = {
			.name = IPIP_DEVICE,
			.local = b->public_ip,
			.link = b->underlay_ifindex,
			.mtu = b->mtu,
		};

		r = nl_ipip_create(b->nl, &c);
		if (r < 0 && r != -EEXIST)
			return r;
		r = nl_link_get(b->nl, IPIP_DEVICE, 0, &l);
	}
	if (r < 0)
		return r;
	ipip(b)->tunnel_ifindex = l.ifindex;
	return backend_device_finish(b, &l, false, 0); /* IPv4 only */
}

static int ipip_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	NodeObjects o = { .node_name = remote->node_name };

	if (b->config.direct_routing && backend_is_direct(b, &remote->public_ip))
		return backend_render_direct_routes(b, remote, ret);
	if (remote->public_ip.family != AF_INET || ipip(b)->tunnel_ifindex <= 0)
		return -EINVAL;

	/* ip route replace 10.244.2.0/24 via <public ip> dev weft.ipip onlink proto 0xfc */
	if (ip_addr_is_set(&remote->subnet.addr))
		o.routes[o.n_routes++] = (NlRoute) {
			.dst = ip_prefix_mask(&remote->subnet),
			.gw = remote->public_ip,
			.oif = ipip(b)->tunnel_ifindex,
			.protocol = WEFT_RTPROT,
			.scope = RT_SCOPE_UNIVERSE,
			.type = RTN_UNICAST,
			.onlink = true,
		};
	*ret = o;
	return 0;
}

static int ipip_uninstall(NlSock *nl) {
	return backend_delete_links(nl, "ipip", BACKEND_VTEP_PREFIX);
}

const BackendOps backend_ipip_ops = {
	.name = "ipip",
	.object_size = sizeof(IpipBackend),
	.ensure = ipip_ensure,
	.render = ipip_render,
	.uninstall = ipip_uninstall,
};
