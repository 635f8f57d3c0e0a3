/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `firewall` meta plugin. The reference (1.1.1) has an iptables backend (CNI-FORWARD
 * with CNI-ADMIN first, "-s IP ACCEPT" and "-d IP ctstate RELATED,ESTABLISHED ACCEPT" per pod)
 * and a firewalld one (pod IPs in a zone). weft has one backend, nftables, in table inet weft
 * (nft/nft-firewall.h): backend "iptables" (the reference default) and "nftables" both select
 * it; "firewalld" is refused (code 7). iptablesAdminChainName is accepted and ignored: admin
 * rules go into their own nftables chains, which see every packet ours see.
 * ingressPolicy "same-bridge" isolates the bridge from other same-bridge bridges, as the
 * reference's CNI-ISOLATION-STAGE-1/2.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-attachment.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"
#include "shared/nft/nft-firewall.h"
#include "shared/pod/pod-cni.h"

typedef struct FirewallConf {
	bool same_bridge;
} FirewallConf;

static int firewall_parse(CniRequest *req, void *userdata) {
	FirewallConf *c = userdata;
	json_t *v;
	const char *s;

	v = cni_json_get(req->config, "backend");
	if (v && !json_is_null(v) && !json_is_string(v))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "backend is invalid: expected a string");
	s = json_string_value(v);
	if (streq_ptr(s, "firewalld"))
		return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INVALID_NETCONF,
				"backend \"firewalld\" is not supported by weft: use \"iptables\" or \"nftables\" (both "
				"program nftables table inet weft)");
	if (!isempty(s) && !streq(s, "iptables") && !streq(s, "nftables"))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "unknown firewall backend \"%s\"", s);

	v = cni_json_get(req->config, "iptablesAdminChainName");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"iptablesAdminChainName is invalid: expected a string");
		log_info("iptablesAdminChainName \"%s\" ignored: weft uses nftables; put admin rules in a chain of "
			 "your own at the forward hook",
			 json_string_value(v));
	}

	v = cni_json_get(req->config, "ingressPolicy");
	if (v && !json_is_null(v) && !json_is_string(v))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "ingressPolicy is invalid: expected a string");
	s = json_string_value(v);
	if (streq_ptr(s, "same-bridge"))
		c->same_bridge = true;
	else if (!isempty(s) && !streq(s, "open"))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"unknown ingressPolicy \"%s\": expected \"open\" or \"same-bridge\"", s);
	return 0;
}

/* Pod addresses from prevResult (the reference takes every ip of the result). */
static int pod_ips(CniRequest *req, IpAddr **ret, size_t *ret_n) {
	const CniResult *p = req->prev_result;
	IpAddr *a = calloc(MAX(p->n_ips, 1u), sizeof(IpAddr));

	if (!a)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < p->n_ips; i++)
		a[i] = p->ips[i].address.addr;
	*ret = a;
	*ret_n = p->n_ips;
	return 0;
}

static int firewall_add(CniRequest *req, void *userdata, CniResult **ret) {
	FirewallConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	_cleanup_free_ IpAddr *ips = NULL;
	const char *bridge = NULL;
	size_t n;
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"must be called as chained plugin (prevResult missing)");
	res = cni_result_copy(req->prev_result);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (c->same_bridge) {
		/* The bridge is the first host-side interface, as the bridge plugin reports it. */
		for (size_t i = 0; i < res->n_interfaces && !bridge; i++)
			if (isempty(res->interfaces[i].sandbox) && !isempty(res->interfaces[i].name))
				bridge = res->interfaces[i].name;
		if (!bridge)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ingressPolicy \"same-bridge\": prevResult has no host interface, make sure to chain "
					"firewall after the bridge plugin");
	}
	r = pod_ips(req, &ips, &n);
	if (r < 0)
		return r;
	r = pod_nft_open(req, &nft);
	if (r < 0)
		return r;
	r = nft_firewall_add(nft, req->name, req->container_id, req->ifname, ips, n);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to add pod addresses to nftables %s",
				      "fw-pods");
	if (bridge) {
		r = nft_firewall_isolate_bridge(nft, bridge);
		if (r < 0) {
			int k = nft_firewall_del(nft, req->name, req->container_id, req->ifname);
			if (k < 0)
				log_warning_errno(k, "rollback: failed to remove pod addresses: %m");
			return cni_fail_errno(req, r, r == -EINVAL ? CNI_ERR_INVALID_NETCONF : CNI_ERR_INTERNAL, NULL,
					      "failed to set up ingressPolicy same-bridge for bridge \"%s\"", bridge);
		}
	}
	*ret = TAKE_PTR(res);
	return 0;
}

static int firewall_del(CniRequest *req, void *userdata) {
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r;

	/* By attachment id: works without prevResult and without the netns. */
	r = pod_nft_open(req, &nft);
	if (r < 0)
		return r;
	r = nft_firewall_del(nft, req->name, req->container_id, req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to remove pod addresses from nftables");
	return 0;
}

static int firewall_check(CniRequest *req, void *userdata) {
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	_cleanup_free_ IpAddr *ips = NULL;
	size_t n, missing = 0;
	char as[IP_ADDR_STRLEN];
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"must be called as chained plugin (prevResult missing)");
	r = pod_ips(req, &ips, &n);
	if (r < 0)
		return r;
	r = pod_nft_open(req, &nft);
	if (r < 0)
		return r;
	r = nft_firewall_check(nft, req->name, req->container_id, req->ifname, ips, n, &missing);
	if (r == -ENOENT)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "pod address %s is not in nftables set inet weft fw-pods%c",
				ip_addr_to_string(&ips[missing], as), ips[missing].family == AF_INET ? '4' : '6');
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list nftables sets");
	return 0;
}

static int firewall_gc(CniRequest *req, void *userdata) {
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r;

	r = pod_nft_open(req, &nft);
	if (r < 0)
		return r;
	r = nft_firewall_gc(nft, req->name, cni_attachment_is_valid_cb, req);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to garbage-collect nftables elements");
	if (r > 0)
		log_info("removed %d stale pod addresses", r);
	return 0;
}

static const PluginOps firewall_ops = {
	.name = "firewall",
	.about = "CNI firewall plugin (weft, nftables)",
	.conf_size = sizeof(FirewallConf),
	.parse = firewall_parse,
	.add = firewall_add,
	.del = firewall_del,
	.check = firewall_check,
	.gc = firewall_gc,
};

int main(int argc, char *argv[]) {
	return plugin_main(&firewall_ops, argc, argv);
}
