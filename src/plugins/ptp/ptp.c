/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `ptp` plugin (containernetworking/plugins 1.1.1): a veth pair per pod, routed (no
 * bridge). The pod gets its IPAM address, but reaches everything, its own subnet included, via
 * the gateway: the kernel's subnet route is replaced by "GW/32 dev IF scope link" and
 * "SUBNET via GW dev IF". The host end carries the gateway address as /32 (/128) and a /32 route
 * to the pod. Keys: ipMasq, mtu, ipam (required), dns.
 *
 *   pod: eth0 10.1.1.5/24 ── veth ── vethXXXXXXXX 10.1.1.1/32 (node) ; 10.1.1.5/32 dev vethXXXXXXXX
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <net/if.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"
#include "shared/pod/pod-conf.h"
#include "shared/pod/pod-gateway.h"
#include "shared/pod/pod-iface.h"
#include "shared/pod/pod-masq.h"
#include "shared/pod/pod-veth.h"

/* Result interface indexes, as the reference orders them. */
enum {
	IFACE_HOST = 0,
	IFACE_CONT = 1
};

typedef struct PtpConf {
	bool ip_masq; /* "ipMasq" */
	unsigned mtu; /* "mtu", 0 = kernel default */
	bool layer3;  /* "ipam" has a "type" (required for ADD) */
} PtpConf;

static int ptp_parse(CniRequest *req, void *userdata) {
	PtpConf *c = userdata;
	int r;

	if ((r = pod_conf_bool(req, "ipMasq", &c->ip_masq)) < 0 || (r = pod_conf_mtu(req, &c->mtu)) < 0)
		return r;
	c->layer3 = pod_conf_has_ipam(req);
	return 0;
}

typedef struct PtpRollback {
	CniRequest *req;
	NlSock *cont;     /* borrowed */
	NftCtx **nft;     /* borrowed */
	int cont_ifindex; /* > 0: delete the pod's veth (takes the host end with it) */
	bool ipam;
	bool masq;
} PtpRollback;

static void ptp_rollback(PtpRollback **p) {
	PtpRollback *rb = *p;
	int r;

	if (!rb)
		return;
	if (rb->masq)
		pod_masq_release(rb->req, rb->nft);
	if (rb->cont_ifindex > 0) {
		r = nl_link_del(rb->cont, rb->cont_ifindex);
		if (r < 0 && r != -ENODEV)
			log_warning_errno(r, "rollback: failed to delete %s in the container: %m", rb->req->ifname);
	}
	if (rb->ipam)
		pod_ipam_release(rb->req);
}

static IpPrefix host_prefix(const IpAddr *a) {
	return (IpPrefix) { .addr = *a, .len = a->family == AF_INET ? 32 : 128 };
}

/* The pod side's routing, per address (reference setupContainerVeth): drop the kernel's subnet
 * route, reach the gateway on the link, and the subnet through the gateway. */
static int ptp_pod_routes(CniRequest *req, NlSock *cont, int ifindex, const CniResult *res) {
	char as[IP_PREFIX_STRLEN];
	int r;

	for (size_t i = 0; i < res->n_ips; i++) {
		const CniIpConfig *ip = &res->ips[i];
		IpPrefix subnet = ip_prefix_mask(&ip->address);
		NlRoute rt;

		/* ip route del SUBNET dev IF (any protocol/scope: the kernel's prefix route) */
		nl_route_init(&rt);
		rt.dst = subnet;
		rt.oif = ifindex;
		r = nl_route_del(cont, &rt);
		/* Gone already: a second address of the same subnet. */
		if (r < 0 && r != -ESRCH && r != -ENOENT)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(cont),
					      "failed to delete route %s on %s", ip_prefix_to_string(&subnet, as),
					      req->ifname);

		/* ip route add GW/32 dev IF scope link */
		nl_route_init(&rt);
		rt.dst = host_prefix(&ip->gateway);
		rt.oif = ifindex;
		rt.scope = RT_SCOPE_LINK;
		r = nl_route_add(cont, &rt, 0);
		if (r < 0 && r != -EEXIST)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(cont),
					      "failed to add route %s on %s", ip_prefix_to_string(&rt.dst, as),
					      req->ifname);

		/* ip route add SUBNET via GW dev IF */
		nl_route_init(&rt);
		rt.dst = subnet;
		rt.gw = ip->gateway;
		rt.oif = ifindex;
		r = nl_route_add(cont, &rt, 0);
		if (r < 0 && r != -EEXIST)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(cont),
					      "failed to add route %s via the gateway on %s",
					      ip_prefix_to_string(&subnet, as), req->ifname);
	}
	return 0;
}

/* The host side (reference setupHostVeth): the gateway as a host address on the veth, a host
 * route to the pod through it. Several attachments share the gateway address, each on its veth. */
static int ptp_host_side(CniRequest *req, NlSock *host, const NlLink *hveth, const CniResult *res) {
	char as[IP_PREFIX_STRLEN];
	int r;

	r = nl_link_set_up(host, hveth->ifindex, true);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host), "failed to set %s up",
				      hveth->name);
	for (size_t i = 0; i < res->n_ips; i++) {
		const CniIpConfig *ip = &res->ips[i];
		IpPrefix gw = host_prefix(&ip->gateway);
		NlRoute rt;

		/* ip addr add GW/32 dev VETH [nodad]: the address is ours by construction (IPAM
		 * reserved it), and a tentative gateway would make the pod's first packets fail. */
		r = nl_addr_add(host, hveth->ifindex, &gw, gw.addr.family == AF_INET6 ? IFA_F_NODAD : 0);
		if (r < 0 && r != -EEXIST)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to add IP addr %s to %s", ip_prefix_to_string(&gw, as),
					      hveth->name);

		/* ip route add POD/32 dev VETH scope link */
		nl_route_init(&rt);
		rt.dst = host_prefix(&ip->address.addr);
		rt.oif = hveth->ifindex;
		r = nl_route_add(host, &rt, 0);
		if (r < 0 && r != -EEXIST)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to add route on host: %s dev %s",
					      ip_prefix_to_string(&rt.dst, as), hveth->name);
	}
	return 0;
}

static int ptp_add(CniRequest *req, void *userdata, CniResult **ret) {
	const PtpConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL, *ipam = NULL;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	PtpRollback rb_data = { .req = req, .nft = &nft };
	_cleanup_(ptp_rollback) PtpRollback *rb = NULL;
	char host_name[IFNAMSIZ], ms[18], as[IP_PREFIX_STRLEN];
	bool fam[2] = {};
	NlLink hveth, cveth;
	int r;

	if (!c->layer3)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"ptp needs an IPAM plugin: \"ipam\" has no \"type\"");

	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;

	r = pod_ipam_add(req, &ipam);
	if (r < 0)
		return r;
	rb_data.ipam = true;
	rb = &rb_data;

	/* Every address needs a gateway: it is the pod's next hop and the host veth's address.
	 * (The reference fails later, with a netlink error.) */
	for (size_t i = 0; i < ipam->n_ips; i++) {
		if (ipam->ips[i].gateway.family != ipam->ips[i].address.addr.family)
			return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
					"IPAM returned no gateway for %s: ptp routes the pod through one",
					ip_prefix_to_string(&ipam->ips[i].address, as));
		fam[ipam->ips[i].address.addr.family == AF_INET6] = true;
	}
	for (int i = 0; i < 2; i++)
		if (fam[i] && (r = pod_forwarding_enable(i ? AF_INET6 : AF_INET, &req->error)) < 0)
			return r;

	r = pod_veth_create(host, cont, netns_fd, req->ifname, c->mtu, NULL, host_name, &hveth, &cveth, &req->error);
	if (r < 0)
		return r;
	rb->cont = cont;
	rb->cont_ifindex = cveth.ifindex;

	res = cni_result_new(req->version);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_result_add_interface(res, host_name, ether_addr_format(hveth.mac, ms), NULL) < 0 ||
	    cni_result_add_interface(res, req->ifname, ether_addr_format(cveth.mac, ms), req->netns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < ipam->n_ips; i++)
		if (cni_result_add_ip(res, &ipam->ips[i].address, &ipam->ips[i].gateway, IFACE_CONT) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < ipam->n_routes; i++)
		if (cni_result_add_route(res, &ipam->routes[i]) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	/* Addresses and IPAM's routes first (the subnet route still makes the gateway reachable),
	 * then the point-to-point routing. The only other party on this link is the host end, so
	 * DAD is pointless. */
	r = pod_iface_configure(cont, netns_fd, req->ifname, res, IFACE_CONT, false, &req->error);
	if (r < 0)
		return r;
	r = ptp_pod_routes(req, cont, cveth.ifindex, res);
	if (r < 0)
		return r;
	r = ptp_host_side(req, host, &hveth, res);
	if (r < 0)
		return r;

	if (c->ip_masq) {
		rb->masq = true; /* armed before: removing what a failed batch never added is a no-op */
		r = pod_masq_add(req, &nft, res);
		if (r < 0)
			return r;
	}

	/* DNS from the config when it says anything, else what IPAM returned. */
	r = cni_dns_merge(&res->dns, pod_dns_set(&req->dns) ? &req->dns : &ipam->dns);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");

	TAKE_PTR(rb);
	*ret = TAKE_PTR(res);
	return 0;
}

static int ptp_del(CniRequest *req, void *userdata) {
	const PtpConf *c = userdata;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r = 0;

	/* IPAM first and always: the address must come back even if the pod is long gone. */
	if (c->layer3)
		RET_GATHER(r, cni_ipam_exec(req, CNI_CMD_DEL, NULL));
	/* The host end, its address and its route to the pod go with the pod's end. */
	RET_GATHER(r, pod_link_del_in_netns(req));
	/* By attachment id: works without the netns, unlike the reference. */
	if (c->ip_masq)
		RET_GATHER(r, pod_masq_del(req, &nft));
	return r;
}

static int ptp_check(CniRequest *req, void *userdata) {
	const PtpConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	const CniResult *p = req->prev_result;
	const CniInterface *ci;
	int ci_index, r;
	bool veth_ok = false;
	CniError first = {};
	char ms[18];
	NlLink cl;

	r = pod_check_prev_iface(req, &ci, &ci_index);
	if (r < 0)
		return r;
	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;
	if (c->layer3 && (r = cni_ipam_exec(req, CNI_CMD_CHECK, NULL)) < 0)
		return r;

	r = nl_link_get(cont, req->ifname, 0, &cl);
	if (r == -ENODEV)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "ptp: Container Interface name in prevResult: %s not found",
				req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up %s", req->ifname);
	if (!streq(cl.kind, "veth"))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Error: Container interface %s not of type veth/p2p",
				req->ifname);
	if (!isempty(ci->mac) && strcasecmp(ci->mac, ether_addr_format(cl.mac, ms)) != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"ptp: Interface %s Mac %s doesn't match container Mac: %s", req->ifname, ci->mac, ms);

	/* The host end: an interface of prevResult outside the sandbox that is the peer. */
	for (size_t i = 0; i < p->n_interfaces && !veth_ok; i++) {
		const CniInterface *f = &p->interfaces[i];
		CniError e = {};

		if (!isempty(f->sandbox) || isempty(f->name))
			continue;
		veth_ok = pod_veth_check_peer(host, f->name, &cl, 0, &e) >= 0;
		if (!first.code && e.code)
			first = e;
		else
			cni_error_clear(&e);
	}
	if (!veth_ok) {
		r = cni_fail(req, -ENOENT, CNI_ERR_INTERNAL, "ptp: host veth of %s was not found%s%s", req->ifname,
			     first.msg ? ": " : "", first.msg ?: "");
		cni_error_clear(&first);
		return r;
	}
	cni_error_clear(&first);

	return pod_iface_check(cont, req->ifname, p, ci_index, &req->error);
}

static int ptp_gc(CniRequest *req, void *userdata) {
	const PtpConf *c = userdata;
	int r = 0;

	RET_GATHER(r, pod_masq_gc(req, c->ip_masq));
	if (c->layer3)
		RET_GATHER(r, cni_ipam_exec(req, CNI_CMD_GC, NULL));
	return r;
}

static int ptp_status(CniRequest *req, void *userdata) {
	const PtpConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_STATUS, NULL) : 0;
}

const PluginOps ptp_ops = {
	.name = "ptp",
	.about = "CNI ptp plugin (weft)",
	.conf_size = sizeof(PtpConf),
	.parse = ptp_parse,
	.add = ptp_add,
	.del = ptp_del,
	.check = ptp_check,
	.gc = ptp_gc,
	.status = ptp_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&ptp_ops, argc, argv);
}
