/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <net/if.h>
#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "shared/netns/netns.h"
#include "shared/pod/pod-cni.h"
#include "shared/pod/pod-iface.h"
#include "shared/pod/pod-sublink.h"

typedef struct DefaultRoute {
	int oif;
} DefaultRoute;

static int default_route_cb(const NlRoute *r, void *userdata) {
	DefaultRoute *d = userdata;

	if (d->oif == 0 && r->dst.len == 0 && r->oif > 0 && (r->type == 0 || r->type == RTN_UNICAST))
		d->oif = r->oif;
	return 0;
}

int pod_sublink_default_master(CniRequest *req, NlSock *host, char ret[IFNAMSIZ]) {
	NlLink l;
	int r;

	for (int pass = 0; pass < 2; pass++) {
		DefaultRoute d = {};

		r = nl_route_dump(host, pass == 0 ? AF_INET : AF_INET6, 0, default_route_cb, &d);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list routes");
		if (d.oif > 0 && nl_link_get(host, NULL, d.oif, &l) >= 0) {
			snprintf(ret, IFNAMSIZ, "%s", l.name);
			return 0;
		}
	}
	return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL,
			"no default route interface found (set \"master\" to the host interface to attach to)");
}

/* c->master, or the default route's device when it is not set. */
static int sublink_master(CniRequest *req, const PodSublink *c, NlSock *host, NlLink *ret) {
	char name[IFNAMSIZ];
	int r;

	if (isempty(c->master)) {
		r = pod_sublink_default_master(req, host, name);
		if (r < 0)
			return r;
	} else
		snprintf(name, sizeof(name), "%s", c->master);
	r = nl_link_get(host, name, 0, ret);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to lookup master \"%s\"", name);
	return 0;
}

/* The reference's "temporary name" (the final name may exist in the namespace the device is
 * created from: old kernels checked the name there). */
static int temp_name(char buf[IFNAMSIZ]) {
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		return negative_errno();
	snprintf(buf, IFNAMSIZ, "tmp%08x", v);
	return 0;
}

typedef struct SublinkRollback {
	CniRequest *req;
	NlSock *cont; /* borrowed */
	int ifindex;  /* > 0: delete the device in the pod */
	bool ipam;
} SublinkRollback;

static void sublink_rollback(SublinkRollback **p) {
	SublinkRollback *rb = *p;
	int r;

	if (!rb)
		return;
	if (rb->ifindex > 0) {
		r = nl_link_del(rb->cont, rb->ifindex);
		if (r < 0 && r != -ENODEV)
			log_warning_errno(r, "rollback: failed to delete %s in the container: %m", rb->req->ifname);
	}
	if (rb->ipam)
		pod_ipam_release(rb->req);
}

/* The addresses and routes to put on the device, all pointing at interface 0. */
static int sublink_addressing(CniRequest *req, const PodSublink *c, CniResult *res, SublinkRollback *rb) {
	_cleanup_(cni_result_freep) CniResult *ipam = NULL;
	const CniResult *src = c->chained;
	int r;

	if (c->layer3) {
		r = pod_ipam_add(req, &ipam);
		if (r < 0)
			return r;
		rb->ipam = true;
		src = ipam;
	}
	for (size_t i = 0; i < src->n_ips; i++)
		if (cni_result_add_ip(res, &src->ips[i].address, &src->ips[i].gateway, 0) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < src->n_routes; i++)
		if (cni_result_add_route(res, &src->routes[i]) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return 0;
}

int pod_sublink_add(CniRequest *req, const PodSublink *c, CniResult **ret) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	SublinkRollback rb_data = { .req = req };
	_cleanup_(sublink_rollback) SublinkRollback *rb = NULL;
	char tmp[IFNAMSIZ], key[64], ms[18];
	NlLink master, link;
	int r;

	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;

	r = sublink_master(req, c, host, &master);
	if (r < 0)
		return r;
	if (c->mtu_max_master && c->mtu > master.mtu)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid MTU %u, must be [0, master MTU(%u)]",
				c->mtu, master.mtu);

	r = temp_name(tmp);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to generate a temporary name");
	r = c->create(host, c, tmp, master.ifindex, netns_fd);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host), "failed to create %s on \"%s\"",
				      c->kind, master.name);
	r = nl_link_get(cont, tmp, 0, &link);
	if (r < 0) {
		/* Should not happen; the device is in the pod under that name. */
		(void) nl_link_del_by_name(cont, tmp);
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find the new %s %s in the container",
				      c->kind, tmp);
	}
	rb_data.cont = cont;
	rb_data.ifindex = link.ifindex;
	rb = &rb_data;

	if (c->proxy_arp) {
		snprintf(key, sizeof(key), "net/ipv4/conf/%s/proxy_arp", tmp);
		r = sysctl_write_netns(netns_fd, key, "1");
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL,
					      "failed to set proxy_arp on newly added interface %s", tmp);
	}

	/* ip -n POD link set TMP name IFNAME */
	r = nl_link_set_name(cont, link.ifindex, req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(cont), "failed to rename %s to \"%s\"",
				      c->kind, req->ifname);
	r = nl_link_get(cont, NULL, link.ifindex, &link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up %s", req->ifname);

	res = cni_result_new(req->version);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_result_add_interface(res, req->ifname, ether_addr_format(link.mac, ms), req->netns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	if (c->layer3 || c->chained) {
		r = sublink_addressing(req, c, res, rb);
		if (r < 0)
			return r;
		/* DAD on: the device shares a real L2 segment with other hosts (the reference waits
		 * for it too, ip.SettleAddresses). */
		r = pod_iface_configure(cont, netns_fd, req->ifname, res, 0, true, &req->error);
		if (r < 0)
			return r;
	} else {
		/* L2 only: no addresses, but the interface is up. */
		r = nl_link_set_up(cont, link.ifindex, true);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set %s up", req->ifname);
	}

	/* The reference prints the config's DNS only (IPAM's is dropped). */
	r = cni_dns_merge(&res->dns, &req->dns);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");

	TAKE_PTR(rb);
	*ret = TAKE_PTR(res);
	return 0;
}

int pod_sublink_del(CniRequest *req, bool layer3) {
	int r = 0;

	/* IPAM first and always: the address must come back even if the pod is long gone. */
	if (layer3)
		RET_GATHER(r, cni_ipam_exec(req, CNI_CMD_DEL, NULL));
	RET_GATHER(r, pod_link_del_in_netns(req));
	return r;
}

int pod_sublink_check(CniRequest *req, const PodSublink *c) {
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	const CniInterface *ci;
	char ms[18];
	NlLinkInfo li;
	NlLink master, link;
	int ci_index, r;

	r = pod_check_prev_iface(req, &ci, &ci_index);
	if (r < 0)
		return r;
	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;
	if (c->layer3 && (r = cni_ipam_exec(req, CNI_CMD_CHECK, NULL)) < 0)
		return r;

	r = sublink_master(req, c, host, &master);
	if (r < 0)
		return r;

	r = nl_link_get(cont, req->ifname, 0, &link);
	if (r >= 0)
		r = nl_link_get_info(cont, NULL, link.ifindex, &li);
	if (r == -ENODEV)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "Container Interface name in prevResult: %s not found",
				req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up %s", req->ifname);
	if (!streq(li.kind, c->kind))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Error: Container interface %s not of type %s (is \"%s\")", req->ifname, c->kind,
				li.kind);
	if (c->check && (r = c->check(req, c, &li)) < 0)
		return r;
	if (!isempty(ci->mac) && strcasecmp(ci->mac, ether_addr_format(link.mac, ms)) != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Interface %s Mac %s doesn't match container Mac: %s",
				req->ifname, ci->mac, ms);

	return pod_iface_check(cont, req->ifname, req->prev_result, ci_index, &req->error);
}
