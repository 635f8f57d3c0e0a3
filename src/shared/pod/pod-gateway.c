/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/if_addr.h>

#include "basic/string-util.h"
#include "shared/netns/netns.h"
#include "shared/pod/pod-gateway.h"

IpAddr pod_gateway_default(const IpPrefix *addr) {
	IpPrefix net = ip_prefix_mask(addr);
	IpAddr gw;

	if (!ip_addr_next(&net.addr, &gw))
		return net.addr;
	return gw;
}

typedef struct AddrList {
	IpPrefix *items;
	size_t n;
} AddrList;

static int collect_addr(const NlAddr *a, void *userdata) {
	AddrList *l = userdata;
	IpPrefix *n = reallocarray(l->items, l->n + 1, sizeof(IpPrefix));

	if (!n)
		return -ENOMEM;
	l->items = n;
	l->items[l->n++] = a->prefix;
	return 0;
}

int pod_gateway_ensure(NlSock *host, const NlLink *link, const IpPrefix *gw, bool force_address, CniError *err) {
	_cleanup_free_ IpPrefix *items = NULL;
	char gws[IP_PREFIX_STRLEN], as[IP_PREFIX_STRLEN];
	AddrList l = {};
	int r;

	ip_prefix_to_string(gw, gws);
	r = nl_addr_dump(host, gw->addr.family, link->ifindex, collect_addr, &l);
	items = l.items;
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "could not get list of IP addresses of %s",
					   link->name);

	for (size_t i = 0; i < l.n; i++) {
		const IpPrefix *a = &l.items[i];

		if (a->addr.family != gw->addr.family)
			continue;
		if (ip_prefix_equal(a, gw))
			return 0;
		/* Several IPv6 gateways may live on one bridge if their subnets do not overlap (and the
		 * fe80:: link-local address never overlaps a pod subnet); IPv4 gets one address. */
		if (gw->addr.family == AF_INET6 && !ip_prefix_overlaps(a, gw))
			continue;
		ip_prefix_to_string(a, as);
		if (!force_address)
			return cni_error_set(err, -EEXIST, CNI_ERR_INTERNAL,
					     "\"%s\" already has an IP address different from %s (%s)", link->name, gws,
					     as);
		/* ip addr del A dev BR */
		r = nl_addr_del(host, link->ifindex, a);
		if (r < 0 && r != -EADDRNOTAVAIL)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL,
						   "could not remove IP address %s from %s", as, link->name);
	}

	/* ip addr add GW dev BR [nodad] — EEXIST: a concurrent ADD was faster, which is fine. */
	r = nl_addr_add(host, link->ifindex, gw, gw->addr.family == AF_INET6 ? IFA_F_NODAD : 0);
	if (r == -EEXIST)
		return 0;
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					   "could not add IP address %s to %s", gws, link->name);
	return 1;
}

int pod_forwarding_enable(int family, CniError *err) {
	const char *key = family == AF_INET ? "net/ipv4/ip_forward" : "net/ipv6/conf/all/forwarding";
	_cleanup_free_ char *v = NULL;
	int r;

	if (sysctl_read(key, &v) >= 0 && v[0] == '1')
		return 0;
	r = sysctl_write(key, "1");
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to enable forwarding (%s)", key);
	return 0;
}
