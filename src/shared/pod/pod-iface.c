/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <net/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "shared/netns/netns.h"
#include "shared/pod/pod-iface.h"

/* The reference waits up to 10 s for IPv6 DAD (ip.SettleAddresses). */
#define POD_DAD_TIMEOUT_NS (10ULL * 1000 * 1000 * 1000)

static bool ip_for_iface(const CniIpConfig *ip, int iface_index) {
	return ip->interface == iface_index;
}

/* Sysctls of the pod side, written inside the pod namespace in one enter/leave. Best effort
 * except disable_ipv6: without IPv6 enabled the address add below fails anyway, with a worse
 * message. */
static int pod_iface_sysctls(int netns_fd, const char *ifname, bool has_v6, bool enable_dad, CniError *err) {
	char key[128];
	int saved = -EBADF, r;

	r = netns_enter(netns_fd, &saved);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to enter the container netns");

	if (has_v6) {
		const char *names[] = { "lo", ifname };
		for (size_t i = 0; i < ELEMENTSOF(names); i++) {
			_cleanup_free_ char *v = NULL;

			snprintf(key, sizeof(key), "net/ipv6/conf/%s/disable_ipv6", names[i]);
			if (sysctl_read(key, &v) < 0 || v[0] == '0')
				continue;
			r = sysctl_write(key, "0");
			if (r < 0) {
				netns_leave(saved);
				return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL,
							   "failed to enable IPv6 on %s (%s)", names[i], key);
			}
		}
	}
	if (enable_dad) {
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/enhanced_dad", ifname);
		(void) sysctl_write(key, "1");
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", ifname);
		(void) sysctl_write(key, "1");
	} else {
		snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", ifname);
		(void) sysctl_write(key, "0");
	}
	snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", ifname);
	(void) sysctl_write(key, "1");

	netns_leave(saved);
	return 0;
}

typedef struct DadState {
	int ifindex;
	bool tentative;
	bool failed;
	IpPrefix failed_addr;
} DadState;

static int dad_cb(const NlAddr *a, void *userdata) {
	DadState *s = userdata;

	if (a->ifindex != s->ifindex)
		return 0;
	if (a->flags & IFA_F_DADFAILED) {
		s->failed = true;
		s->failed_addr = a->prefix;
	} else if (a->flags & IFA_F_TENTATIVE)
		s->tentative = true;
	return 0;
}

static uint64_t now_ns(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* Waits until no IPv6 address of ifindex is tentative. This polls a condition with a deadline
 * (backing off 10 ms .. 200 ms); it is not a fixed delay: with DAD off it returns at once. */
static int settle_addresses(NlSock *cont, const char *ifname, int ifindex, CniError *err) {
	uint64_t deadline = now_ns() + POD_DAD_TIMEOUT_NS;
	long wait_ms = 10;
	char as[IP_PREFIX_STRLEN];

	for (;;) {
		DadState s = { .ifindex = ifindex };
		int r = nl_addr_dump(cont, AF_INET6, ifindex, dad_cb, &s);

		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to list addresses of %s",
						   ifname);
		if (s.failed)
			return cni_error_set(err, -EADDRINUSE, CNI_ERR_INTERNAL,
					     "link %s has address %s in DADFAILED state", ifname,
					     ip_prefix_to_string(&s.failed_addr, as));
		if (!s.tentative)
			return 0;
		if (now_ns() >= deadline)
			return cni_error_set(err, -ETIMEDOUT, CNI_ERR_INTERNAL,
					     "link %s still has tentative IPv6 addresses after 10s", ifname);
		nanosleep(&(struct timespec) { .tv_nsec = wait_ms * 1000000L }, NULL);
		wait_ms = MIN(wait_ms * 2, 200L);
	}
}

int pod_iface_configure(NlSock *cont, int netns_fd, const char *ifname, const CniResult *r, int iface_index,
			bool enable_dad, CniError *err) {
	NlLink link;
	int k;

	k = nl_link_get(cont, ifname, 0, &link);
	if (k < 0)
		return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to look up %s in the container",
					   ifname);
	return pod_iface_configure_link(cont, netns_fd, &link, r, iface_index, enable_dad, err);
}

int pod_iface_configure_link(NlSock *cont, int netns_fd, const NlLink *l, const CniResult *r, int iface_index,
			     bool enable_dad, CniError *err) {
	IpAddr gw4 = { .family = AF_UNSPEC }, gw6 = { .family = AF_UNSPEC };
	char as[IP_PREFIX_STRLEN], gs[IP_ADDR_STRLEN];
	bool has_v6 = false, has_ip = false;
	const char *ifname = l->name;
	NlLink link = *l;
	int k;

	for (size_t i = 0; i < r->n_ips; i++) {
		if (!ip_for_iface(&r->ips[i], iface_index))
			continue;
		has_ip = true;
		if (r->ips[i].address.addr.family == AF_INET6)
			has_v6 = true;
	}
	if (has_ip) {
		k = pod_iface_sysctls(netns_fd, ifname, has_v6, enable_dad, err);
		if (k < 0)
			return k;
	}

	/* ip link set IFNAME up */
	k = nl_link_set_up(cont, link.ifindex, true);
	if (k < 0)
		return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, nl_sock_extack(cont), "failed to set %s up",
					   ifname);

	for (size_t i = 0; i < r->n_ips; i++) {
		const CniIpConfig *ip = &r->ips[i];
		int fam = ip->address.addr.family;

		if (!ip_for_iface(ip, iface_index))
			continue;
		/* ip addr add ADDR/LEN dev IFNAME [nodad] */
		k = nl_addr_add(cont, link.ifindex, &ip->address, fam == AF_INET6 && !enable_dad ? IFA_F_NODAD : 0);
		if (k < 0)
			return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, nl_sock_extack(cont),
						   "failed to add IP addr %s to %s",
						   ip_prefix_to_string(&ip->address, as), ifname);
		if (ip->gateway.family == AF_INET && gw4.family == AF_UNSPEC)
			gw4 = ip->gateway;
		else if (ip->gateway.family == AF_INET6 && gw6.family == AF_UNSPEC)
			gw6 = ip->gateway;
	}

	if (has_v6 && enable_dad) {
		k = settle_addresses(cont, ifname, link.ifindex, err);
		if (k < 0)
			return k;
	}

	for (size_t i = 0; i < r->n_routes; i++) {
		const CniRoute *rt = &r->routes[i];
		NlRoute nr;

		nl_route_init(&nr);
		nr.dst = ip_prefix_mask(&rt->dst);
		nr.gw = rt->gw;
		if (nr.gw.family == AF_UNSPEC)
			nr.gw = rt->dst.addr.family == AF_INET ? gw4 : gw6;
		nr.oif = link.ifindex;
		nr.table = rt->table > 0 ? (uint32_t) rt->table : 0;
		nr.priority = rt->priority > 0 ? (uint32_t) rt->priority : 0;
		nr.mtu = rt->mtu > 0 ? (uint32_t) rt->mtu : 0;
		nr.advmss = rt->advmss > 0 ? (uint32_t) rt->advmss : 0;
		if (rt->has_scope)
			nr.scope = (uint8_t) rt->scope;
		/* ip route add DST [via GW] dev IFNAME [table T] [metric P] [mtu M] [advmss A] */
		k = nl_route_add(cont, &nr, 0);
		if (k == -EEXIST)
			continue; /* the result listed it twice */
		if (k < 0)
			return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, nl_sock_extack(cont),
						   "failed to add route %s%s%s on %s", ip_prefix_to_string(&nr.dst, as),
						   nr.gw.family != AF_UNSPEC ? " via " : "",
						   nr.gw.family != AF_UNSPEC ? ip_addr_to_string(&nr.gw, gs) : "",
						   ifname);
	}
	return 0;
}

typedef struct AddrFind {
	int ifindex;
	const IpPrefix *want;
	bool found;
} AddrFind;

static int addr_find_cb(const NlAddr *a, void *userdata) {
	AddrFind *f = userdata;

	if (a->ifindex == f->ifindex && ip_prefix_equal(&a->prefix, f->want))
		f->found = true;
	return 0;
}

typedef struct RouteFind {
	const CniRoute *want;
	IpPrefix dst;
	bool found;
} RouteFind;

static int route_find_cb(const NlRoute *r, void *userdata) {
	RouteFind *f = userdata;
	IpPrefix d = ip_prefix_mask(&r->dst);

	if (!ip_prefix_equal(&d, &f->dst))
		return 0;
	if (f->want->gw.family != AF_UNSPEC && !ip_addr_equal(&r->gw, &f->want->gw))
		return 0;
	f->found = true;
	return 0;
}

int pod_iface_check(NlSock *cont, const char *ifname, const CniResult *r, int iface_index, CniError *err) {
	char as[IP_PREFIX_STRLEN], gs[IP_ADDR_STRLEN];
	NlLink link;
	int k;

	k = nl_link_get(cont, ifname, 0, &link);
	if (k == -ENODEV)
		return cni_error_set(err, k, CNI_ERR_INTERNAL, "container interface %s not found", ifname);
	if (k < 0)
		return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to look up %s in the container",
					   ifname);

	for (size_t i = 0; i < r->n_ips; i++) {
		AddrFind f = { .ifindex = link.ifindex, .want = &r->ips[i].address };

		/* Results from 0.2.0 and older carry no interface index: check those too. */
		if (!ip_for_iface(&r->ips[i], iface_index) && r->ips[i].interface >= 0)
			continue;
		k = nl_addr_dump(cont, r->ips[i].address.addr.family, link.ifindex, addr_find_cb, &f);
		if (k < 0)
			return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to list addresses of %s",
						   ifname);
		if (!f.found)
			return cni_error_set(err, -ENOENT, CNI_ERR_INTERNAL,
					     "container interface %s is missing address %s", ifname,
					     ip_prefix_to_string(&r->ips[i].address, as));
	}

	for (size_t i = 0; i < r->n_routes; i++) {
		const CniRoute *rt = &r->routes[i];
		RouteFind f = { .want = rt, .dst = ip_prefix_mask(&rt->dst) };

		k = nl_route_dump(cont, rt->dst.addr.family, rt->table > 0 ? (uint32_t) rt->table : 0, route_find_cb,
				  &f);
		if (k < 0)
			return cni_error_set_errno(err, k, CNI_ERR_INTERNAL, NULL, "failed to list routes");
		if (!f.found)
			return cni_error_set(err, -ENOENT, CNI_ERR_INTERNAL,
					     "route %s%s%s not found in the container's routing table",
					     ip_prefix_to_string(&f.dst, as), rt->gw.family != AF_UNSPEC ? " via " : "",
					     rt->gw.family != AF_UNSPEC ? ip_addr_to_string(&rt->gw, gs) : "");
	}
	return 0;
}
