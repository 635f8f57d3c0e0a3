/* SPDX-License-Identifier: Apache-2.0 */
/* --service-cluster-ip-range: the node's own route to the Service ranges (service-route.h). */
#include <errno.h>
#include <string.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service-route.h"
#include "shared/lease/lease-file.h"
#include "shared/nl/nl.h"

int service_ranges_parse(const char *s, IpPrefix ret[static 2], size_t *ret_n) {
	_cleanup_free_ char *copy = strdup(s);
	IpPrefix p[2];
	size_t n = 0;
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == ELEMENTSOF(p) || ip_prefix_parse_network(tok, &p[n]) < 0)
			return -EINVAL;
		if (n == 1 && p[0].addr.family == p[1].addr.family)
			return -EINVAL; /* dual-stack is one range per family, as kube-apiserver's flag */
		n++;
	}
	if (n == 0)
		return -EINVAL;
	memcpy(ret, p, n * sizeof(IpPrefix));
	*ret_n = n;
	return 0;
}

typedef struct AddrFind {
	const IpAddr *want;
	bool found;
} AddrFind;

static int addr_find_cb(const NlAddr *a, void *userdata) {
	AddrFind *f = userdata;

	/* the kernel refuses a tentative (or failed) IPv6 address as a preferred source */
	if (ip_addr_equal(&a->prefix.addr, f->want) && !(a->flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED)))
		f->found = true;
	return 0;
}

int service_routes_render(const Backend *b, const IpPrefix *ranges, size_t n_ranges, NodeObjects *ret, size_t max) {
	size_t n = 0;

	for (size_t i = 0; i < n_ranges && n < max; i++) {
		const IpPrefix *subnet = ranges[i].addr.family == AF_INET ? &b->self.subnet : &b->self.subnet6;
		IpPrefix gw;
		AddrFind f;
		int r;

		if (!b->have_lease || !ip_addr_is_set(&subnet->addr) || lease_subnet_gateway(subnet, &gw) < 0)
			continue; /* no pod network of this family: nothing replies could come back to */
		f = (AddrFind) { .want = &gw.addr };
		r = nl_addr_dump(b->nl, gw.addr.family, 0, addr_find_cb, &f);
		if (r < 0)
			return r;
		if (!f.found)
			continue; /* the pod bridge has no gateway address yet (no pod so far) */
		/* ip route replace <range> dev <underlay> src <gateway> proto 0xfc (scope link) */
		ret[n] = (NodeObjects) { .node_name = "(service range)", .n_routes = 1 };
		ret[n].routes[0] = (NlRoute) {
			.dst = ranges[i],
			.prefsrc = gw.addr,
			.oif = b->underlay_ifindex,
			.protocol = WEFT_RTPROT,
			.type = RTN_UNICAST,
		};
		n++;
	}
	return (int) n;
}
