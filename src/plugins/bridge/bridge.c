/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `bridge` plugin: pods on a Linux bridge in the host namespace, one veth each,
 * addresses from a delegated IPAM plugin, optionally the bridge as their gateway, ipMasq and
 * macspoofchk in our nftables tables. The pod attach steps live in src/shared/pod so the weft
 * plugin reuses them; this file is the reference plugin's behaviour and rollback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "bridge.h"
#include "shared/cni/cni-exec.h"
#include "shared/netns/netns.h"
#include "shared/nft/nft-bridge.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-bridge.h"
#include "shared/pod/pod-cni.h"
#include "shared/pod/pod-gateway.h"
#include "shared/pod/pod-iface.h"
#include "shared/pod/pod-masq.h"
#include "shared/pod/pod-veth.h"

/* Result interface indexes, as the reference orders them. */
enum {
	IFACE_BRIDGE = 0,
	IFACE_HOST = 1,
	IFACE_CONT = 2
};

/*
 * ADD rollback guard: every step that succeeded arms its undo here; on success the guard is
 * disarmed with TAKE_PTR. Undo failures are logged but never replace the original error.
 */
typedef struct BridgeRollback {
	CniRequest *req;
	const BridgeConf *conf;
	NlSock *cont;     /* borrowed */
	NftCtx **nft;     /* borrowed */
	int cont_ifindex; /* > 0: delete the pod interface (takes the host end with it) */
	bool ipam;
	bool macspoof;
	bool masq;
} BridgeRollback;

static void bridge_rollback(BridgeRollback **p) {
	BridgeRollback *rb = *p;
	CniRequest *req;
	CniError saved;
	int r;

	if (!rb)
		return;
	req = rb->req;
	saved = req->error;
	req->error = (CniError) {};

	if (rb->masq)
		pod_masq_release(req, rb->nft);
	if (rb->macspoof && pod_nft_open(req, rb->nft) >= 0 &&
	    (r = nft_bridge_macspoof_del(*rb->nft, req->name, req->container_id, req->ifname)) < 0)
		log_warning_errno(r, "rollback: failed to remove macspoofchk elements: %m");
	if (rb->cont_ifindex > 0) {
		r = nl_link_del(rb->cont, rb->cont_ifindex);
		if (r < 0 && r != -ENODEV)
			log_warning_errno(r, "rollback: failed to delete %s in the container: %m", req->ifname);
	}
	if (rb->ipam)
		pod_ipam_release(req);

	cni_error_clear(&req->error);
	req->error = saved;
}

static char *mac_str(const uint8_t mac[6], char buf[18]) {
	return ether_addr_format(mac, buf);
}

/* The reference's ensureVlanInterface: with isGateway and "vlan", the gateway address lives on a
 * veth "<bridge>.<vlan>" in the host namespace whose other end is an access port of the bridge. */
static int ensure_vlan_gateway_iface(CniRequest *req, const BridgeConf *c, NlSock *host, const NlLink *br,
				     NlLink *ret) {
	_cleanup_close_ int self = -EBADF;
	char name[IFNAMSIZ + 8], port[IFNAMSIZ];
	CniError err = {};
	NlLink h, g;
	int r;

	if (snprintf(name, sizeof(name), "%s.%u", c->br_name, c->vlan) >= IFNAMSIZ)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"vlan gateway interface name \"%s\" is too long (\"bridge\" \"%s\", \"vlan\" %u)", name,
				c->br_name, c->vlan);
	r = nl_link_get(host, name, 0, ret);
	if (r != -ENODEV) {
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find interface %s", name);
		return 0;
	}

	self = netns_open_current();
	if (self < 0)
		return cni_fail_errno(req, self, CNI_ERR_INTERNAL, NULL, "failed to find host namespace");
	r = pod_veth_create(host, host, self, name, br->mtu, NULL, port, &h, &g, &err);
	if (r == -EEXIST) {
		/* A concurrent ADD created it first. */
		cni_error_clear(&err);
		r = nl_link_get(host, name, 0, ret);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find interface %s", name);
		return 0;
	}
	if (r < 0) {
		req->error = err;
		return r;
	}
	r = pod_bridge_port_attach(host, br->ifindex, h.ifindex, port,
				   &(PodBridgePort) { .vlan = c->vlan,
						      .preserve_default_vlan = c->preserve_default_vlan },
				   &req->error);
	if (r >= 0) {
		r = nl_link_set_up(host, g.ifindex, true);
		if (r < 0)
			cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to up %s", name);
	}
	if (r < 0) {
		(void) nl_link_del(host, g.ifindex);
		return r;
	}
	/* Refetch: it is up now. */
	if (nl_link_get(host, NULL, g.ifindex, ret) < 0)
		*ret = g;
	return 0;
}

static bool has_default_route(const CniResult *res, int family) {
	for (size_t i = 0; i < res->n_routes; i++) {
		const CniRoute *rt = &res->routes[i];
		if (rt->dst.addr.family == family && rt->dst.len == 0 && rt->gw.family != AF_UNSPEC)
			return true;
	}
	return false;
}

/* The bridge, created when missing (an existing one's settings are left alone, as the reference). */
static int bridge_ensure(CniRequest *req, const BridgeConf *c, NlSock *host, NlLink *ret) {
	return pod_bridge_ensure(host,
				 &(PodBridgeConfig) {
						 .name = c->br_name,
						 .mtu = c->mtu,
						 .promisc = c->promisc,
						 .vlan_filtering = c->vlan != 0 || c->has_trunk,
				 },
				 ret, &req->error);
}

/* The veth's host end as a port of the bridge: hairpin, isolation, VLAN/trunk as configured. */
static int bridge_port_attach(CniRequest *req, const BridgeConf *c, NlSock *host, const NlLink *br, const NlLink *hveth,
			      const char *host_name) {
	return pod_bridge_port_attach(host, br->ifindex, hveth->ifindex, host_name,
				      &(PodBridgePort) {
						      .hairpin = c->hairpin,
						      .isolated = c->port_isolation,
						      .vlan = c->vlan,
						      .trunk = c->trunk,
						      .n_trunk = c->n_trunk,
						      .preserve_default_vlan = c->preserve_default_vlan,
				      },
				      &req->error);
}

/* macspoofchk: only the veth's MAC may leave the pod through its port. */
static int bridge_macspoof_add(CniRequest *req, NftCtx **nft, BridgeRollback *rb, const char *host_name,
			       const NlLink *cveth) {
	int r;

	r = pod_nft_open(req, nft);
	if (r < 0)
		return r;
	rb->macspoof = true; /* armed before: a failed batch may still have applied nothing, del is a no-op */
	r = nft_bridge_macspoof_add(*nft, req->name, req->container_id, req->ifname, host_name, cveth->mac);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set up macspoofchk for %s", host_name);
	return 0;
}

/* The result's three interfaces (IFACE_BRIDGE, IFACE_HOST, IFACE_CONT); the MACs of the first
 * two are filled in at the end (bridge_result_set_macs()): they may still change. */
static int bridge_result_new(CniRequest *req, const BridgeConf *c, const char *host_name, const NlLink *cveth,
			     CniResult **ret) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	char ms[18];

	res = cni_result_new(req->version);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_result_add_interface(res, c->br_name, NULL, NULL) < 0 ||
	    cni_result_add_interface(res, host_name, NULL, NULL) < 0 ||
	    cni_result_add_interface(res, req->ifname, mac_str(cveth->mac, ms), req->netns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	*ret = TAKE_PTR(res);
	return 0;
}

/* IPAM's routes and addresses into the result, with the gateways per address (reference
 * calcGateways): IPAM's, else the subnet's first address when isGateway; a default route per
 * family when isDefaultGateway. The gateways the bridge is to carry (isGateway) go to
 * ret_gws/ret_n_gws (caller frees). */
static int bridge_result_add_ipam(CniRequest *req, const BridgeConf *c, const CniResult *ipam, CniResult *res,
				  IpPrefix **ret_gws, size_t *ret_n_gws) {
	_cleanup_free_ IpPrefix *gws = NULL;
	size_t n_gws = 0;

	gws = calloc(ipam->n_ips, sizeof(IpPrefix));
	if (!gws)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < ipam->n_routes; i++)
		if (cni_result_add_route(res, &ipam->routes[i]) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	for (size_t i = 0; i < ipam->n_ips; i++) {
		const CniIpConfig *ip = &ipam->ips[i];
		IpAddr gw = ip->gateway;
		int fam = ip->address.addr.family;

		if (gw.family == AF_UNSPEC && c->is_gw)
			gw = pod_gateway_default(&ip->address);
		if (cni_result_add_ip(res, &ip->address, &gw, IFACE_CONT) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		if (c->is_default_gw && !has_default_route(res, fam)) {
			CniRoute def = { .dst = { .addr = { .family = fam } }, .gw = gw };
			if (cni_result_add_route(res, &def) < 0)
				return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		}
		if (c->is_gw)
			gws[n_gws++] = (IpPrefix) { .addr = gw, .len = ip->address.len };
	}
	*ret_gws = TAKE_PTR(gws);
	*ret_n_gws = n_gws;
	return 0;
}

/* isGateway: the gateway addresses on the bridge (or on its VLAN interface, which joins the
 * result), IPv4 first, then IPv6, as the reference; forwarding on for each family that has one. */
static int bridge_gateways_ensure(CniRequest *req, const BridgeConf *c, NlSock *host, const NlLink *br, CniResult *res,
				  const IpPrefix *gws, size_t n_gws) {
	NlLink gw_link = *br, vlan_link;
	bool fam_done[2] = {};
	int r;

	if (c->vlan != 0) {
		char vms[18];

		r = ensure_vlan_gateway_iface(req, c, host, br, &vlan_link);
		if (r < 0)
			return r;
		gw_link = vlan_link;
		if (cni_result_add_interface(res, vlan_link.name,
					     vlan_link.has_mac ? mac_str(vlan_link.mac, vms) : NULL, NULL) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	}
	for (int pass = 0; pass < 2; pass++) {
		int fam = pass == 0 ? AF_INET : AF_INET6;
		for (size_t i = 0; i < n_gws; i++) {
			if (gws[i].addr.family != fam)
				continue;
			r = pod_gateway_ensure(host, &gw_link, &gws[i], c->force_address, &req->error);
			if (r < 0)
				return r;
			fam_done[pass] = true;
		}
		if (fam_done[pass] && (r = pod_forwarding_enable(fam, &req->error)) < 0)
			return r;
	}
	return 0;
}

/* Layer 3: IPAM's addresses and routes into the result and onto the pod's interface, then the
 * gateways on the bridge (isGateway). */
static int bridge_configure_layer3(CniRequest *req, const BridgeConf *c, NlSock *host, NlSock *cont, int netns_fd,
				   const NlLink *br, const NlLink *cveth, const CniResult *ipam, CniResult *res) {
	_cleanup_free_ IpPrefix *gws = NULL;
	size_t n_gws = 0;
	int r;

	r = bridge_result_add_ipam(req, c, ipam, res, &gws, &n_gws);
	if (r < 0)
		return r;
	r = pod_iface_configure_link(cont, netns_fd, cveth, res, IFACE_CONT, c->enable_dad, &req->error);
	if (r < 0)
		return r;
	if (c->is_gw)
		return bridge_gateways_ensure(req, c, host, br, res, gws, n_gws);
	return 0;
}

/* The MACs as read when the links were set up: pod_bridge_ensure() pinned the bridge's (so a
 * port arriving does not change it) and enslaving a port leaves the port's alone. */
static int bridge_result_set_macs(CniRequest *req, CniResult *res, const NlLink *br, const NlLink *hveth) {
	char ms[18];

	free(res->interfaces[IFACE_BRIDGE].mac);
	free(res->interfaces[IFACE_HOST].mac);
	res->interfaces[IFACE_BRIDGE].mac = strdup(mac_str(br->mac, ms));
	res->interfaces[IFACE_HOST].mac = strdup(mac_str(hveth->mac, ms));
	if (!res->interfaces[IFACE_BRIDGE].mac || !res->interfaces[IFACE_HOST].mac)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return 0;
}

static int bridge_add(CniRequest *req, void *userdata, CniResult **ret) {
	const BridgeConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL, *ipam = NULL;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	BridgeRollback rb_data = { .req = req, .conf = c, .nft = &nft };
	_cleanup_(bridge_rollback) BridgeRollback *rb = NULL;
	char host_name[IFNAMSIZ];
	NlLink br, hveth, cveth;
	int r;

	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;

	r = bridge_ensure(req, c, host, &br);
	if (r < 0)
		return r;

	r = pod_veth_create(host, cont, netns_fd, req->ifname, c->mtu, c->has_mac ? c->mac : NULL, host_name, &hveth,
			    &cveth, &req->error);
	if (r < 0)
		return r;
	rb_data.cont = cont;
	rb_data.cont_ifindex = cveth.ifindex;
	rb = &rb_data;

	r = bridge_port_attach(req, c, host, &br, &hveth, host_name);
	if (r < 0)
		return r;

	if (c->macspoofchk && (r = bridge_macspoof_add(req, &nft, rb, host_name, &cveth)) < 0)
		return r;

	r = bridge_result_new(req, c, host_name, &cveth, &res);
	if (r < 0)
		return r;

	if (c->is_layer3) {
		r = pod_ipam_add(req, &ipam);
		if (r < 0)
			return r;
		rb->ipam = true;

		r = bridge_configure_layer3(req, c, host, cont, netns_fd, &br, &cveth, ipam, res);
		if (r < 0)
			return r;

		if (c->ip_masq) {
			if ((r = pod_nft_open(req, &nft)) < 0)
				return r;
			rb->masq = true;
			r = pod_masq_add(req, &nft, res);
			if (r < 0)
				return r;
		}
	} else if (!c->disable_container_iface) {
		/* L2 only: no addresses, but the interface is up. */
		r = nl_link_set_up(cont, cveth.ifindex, true);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set %s up", req->ifname);
	}

	r = bridge_result_set_macs(req, res, &br, &hveth);
	if (r < 0)
		return r;

	/* DNS from the config when it says anything, else what IPAM returned. */
	r = cni_dns_merge(&res->dns, pod_dns_set(&req->dns) ? &req->dns : ipam ? &ipam->dns : &req->dns);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");

	TAKE_PTR(rb);
	*ret = TAKE_PTR(res);
	return 0;
}

static int bridge_del(CniRequest *req, void *userdata) {
	const BridgeConf *c = userdata;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r = 0, k;

	/* IPAM first and always: the address must come back even if the pod is long gone. */
	if (c->is_layer3)
		RET_GATHER(r, pod_ipam_exec(req, CNI_CMD_DEL, NULL));

	/* The pod's interface; the host end of the veth goes with it. */
	RET_GATHER(r, pod_link_del_in_netns(req));

	/* By attachment id, so it works without the netns and without knowing the addresses. Asked
	 * over raw netlink first: a DEL with nothing to remove opens no nftables context. */
	if (((c->ip_masq && c->is_layer3) || c->macspoofchk) &&
	    nft_bridge_present(req->name, req->container_id, req->ifname) != 0) {
		k = pod_nft_open(req, &nft);
		if (k < 0)
			RET_GATHER(r, k);
		else {
			if (c->ip_masq && c->is_layer3)
				RET_GATHER(r, pod_masq_del(req, &nft));
			if (c->macspoofchk &&
			    (k = nft_bridge_macspoof_del(nft, req->name, req->container_id, req->ifname)) < 0)
				RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL,
							     "failed to remove macspoofchk elements"));
		}
	}
	return r;
}

static int bridge_check(CniRequest *req, void *userdata) {
	const BridgeConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	const CniResult *p = req->prev_result;
	const CniInterface *bri, *ci;
	char ms[18];
	NlLink br, cl;
	int ci_index = -1, r;
	bool veth_ok = false;

	if (!p)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "Required prevResult missing");

	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;
	if (c->is_layer3 && (r = pod_ipam_exec(req, CNI_CMD_CHECK, NULL)) < 0)
		return r;

	/* The bridge. */
	bri = pod_result_find_iface(p, c->br_name, false, NULL, NULL);
	if (!bri)
		return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL, "bridge %s is not in prevResult's interfaces",
				c->br_name);
	r = nl_link_get(host, c->br_name, 0, &br);
	if (r == -ENODEV)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "CNI created bridge %s in host namespace was not found",
				c->br_name);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up bridge %s", c->br_name);
	if (!streq(br.kind, "bridge"))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Interface %s does not have link type of bridge",
				c->br_name);
	if (!isempty(bri->mac) && strcasecmp(bri->mac, mac_str(br.mac, ms)) != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Bridge interface %s Mac doesn't match: %s (now %s)",
				c->br_name, bri->mac, ms);
	if (!!(br.flags & IFF_PROMISC) != c->promisc)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Bridge interface %s configured Promisc Mode %s doesn't match current state: %s",
				c->br_name, c->promisc ? "true" : "false", (br.flags & IFF_PROMISC) ? "true" : "false");

	/* The container interface. */
	ci = pod_result_find_iface(p, req->ifname, true, req->netns, &ci_index);
	if (!ci)
		return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL,
				"interface %s with sandbox %s is not in prevResult's interfaces", req->ifname,
				req->netns);
	r = nl_link_get(cont, req->ifname, 0, &cl);
	if (r == -ENODEV)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "CNI created interface in container %s not found",
				req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up %s", req->ifname);
	if (!streq(cl.kind, "veth"))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Container interface %s not of type veth", req->ifname);
	if (!isempty(ci->mac) && strcasecmp(ci->mac, mac_str(cl.mac, ms)) != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Interface %s Mac %s doesn't match container Mac: %s",
				req->ifname, ci->mac, ms);

	/* The host veth: an interface of the result outside the sandbox, peer of the container's,
	 * port of the bridge. The first candidate's complaint is the useful one. */
	{
		CniError first = {};

		for (size_t i = 0; i < p->n_interfaces && !veth_ok; i++) {
			const CniInterface *f = &p->interfaces[i];
			CniError e = {};

			if (!isempty(f->sandbox) || streq_ptr(f->name, c->br_name) || isempty(f->name))
				continue;
			if (pod_veth_check_peer(host, f->name, &cl, br.ifindex, &e) >= 0) {
				NlLink hl;
				if (!isempty(f->mac) && nl_link_get(host, f->name, 0, &hl) >= 0 &&
				    strcasecmp(f->mac, mac_str(hl.mac, ms)) != 0) {
					cni_error_clear(&e);
					cni_error_set(&e, -EINVAL, CNI_ERR_INTERNAL,
						      "Interface %s Mac doesn't match: %s not found", f->name, f->mac);
				} else
					veth_ok = true;
			}
			if (!first.code && e.code)
				first = e;
			else
				cni_error_clear(&e);
		}
		if (!veth_ok) {
			r = cni_fail(req, -ENOENT, CNI_ERR_INTERNAL, "CNI veth created for bridge %s was not found%s%s",
				     c->br_name, first.msg ? ": " : "", first.msg ?: "");
			cni_error_clear(&first);
			return r;
		}
		cni_error_clear(&first);
	}

	return pod_iface_check(cont, req->ifname, p, ci_index, &req->error);
}

static int bridge_gc(CniRequest *req, void *userdata) {
	const BridgeConf *c = userdata;
	int r = 0;

	/* Collect even when the config no longer asks for ipMasq/macspoofchk: elements from an older
	 * config of this network are still ours (nft_bridge_masq_gc() collects macspoofchk's too).
	 * Without those options, nft trouble is not fatal. */
	RET_GATHER(r, pod_masq_gc(req, c->ip_masq || c->macspoofchk));

	if (c->is_layer3)
		RET_GATHER(r, pod_ipam_exec(req, CNI_CMD_GC, NULL));
	return r;
}

static int bridge_status(CniRequest *req, void *userdata) {
	const BridgeConf *c = userdata;

	return c->is_layer3 ? pod_ipam_exec(req, CNI_CMD_STATUS, NULL) : 0;
}

const PluginOps bridge_ops = {
	.name = "bridge",
	.about = "CNI bridge plugin (weft)",
	.conf_size = sizeof(BridgeConf),
	.parse = bridge_parse_config,
	.conf_done = bridge_conf_done,
	.add = bridge_add,
	.del = bridge_del,
	.check = bridge_check,
	.gc = bridge_gc,
	.status = bridge_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&bridge_ops, argc, argv);
}
