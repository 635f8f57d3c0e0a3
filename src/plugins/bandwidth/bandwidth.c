/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `bandwidth` meta plugin (reference 1.1.1). Rates in bits/s, bursts in bits, from
 * the config's ingressRate/ingressBurst/egressRate/egressBurst or, when the config has none of
 * them, runtimeConfig.bandwidth (the reference's precedence).
 *
 *   ingress (into the pod):  tbf as root qdisc of the host-side veth
 *   egress (out of the pod): ingress qdisc on the host veth, u32 match-all + mirred redirect to
 *                            an ifb "bwp<sha512(net+cid)>"[:15], tbf as the ifb's root qdisc
 *
 * The host veth is the container interface's peer (IFLA_LINK), as the reference finds it. All
 * of it over rtnetlink (nl/nl-tc.h); a failed ADD removes what it installed. DEL removes the ifb
 * and, when the host veth still exists, the qdiscs (the reference leaves those to the veth's
 * deletion). Without any limit the plugin passes prevResult through.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/sha512.h"
#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl-tc.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"

#define IFB_PREFIX "bwp"

typedef struct BandwidthConf {
	CniBandwidth bw;
	char ifb[IFNAMSIZ];
} BandwidthConf;

static int u64_key(CniRequest *req, json_t *cfg, const char *key, uint64_t *ret, bool *found) {
	json_t *v = cni_json_get(cfg, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%s is invalid: expected a non-negative integer",
				key);
	*ret = (uint64_t) json_integer_value(v);
	*found = true;
	return 0;
}

static int validate_rate_burst(CniRequest *req, const char *what, uint64_t rate, uint64_t burst) {
	if (burst == 0 && rate != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"%sRate %llu: if rate is set, burst must also be set (%sBurst)", what,
				(unsigned long long) rate, what);
	if (rate == 0 && burst != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"%sBurst %llu: if burst is set, rate must also be set (%sRate)", what,
				(unsigned long long) burst, what);
	if (burst / 8 >= UINT32_MAX)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%sBurst %llu: burst cannot be more than 4GB",
				what, (unsigned long long) burst);
	if (rate != 0 && rate < 8)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%sRate %llu: rate must be at least 8 bits/s",
				what, (unsigned long long) rate);
	if (burst != 0 && burst < 8)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "%sBurst %llu: burst must be at least 8 bits",
				what, (unsigned long long) burst);
	return 0;
}

static int bandwidth_parse(CniRequest *req, void *userdata) {
	BandwidthConf *c = userdata;
	uint8_t h[SHA512_DIGEST_SIZE];
	_cleanup_free_ char *seed = NULL;
	bool in_config = false;
	int r;

	if ((r = u64_key(req, req->config, "ingressRate", &c->bw.ingress_rate, &in_config)) < 0 ||
	    (r = u64_key(req, req->config, "ingressBurst", &c->bw.ingress_burst, &in_config)) < 0 ||
	    (r = u64_key(req, req->config, "egressRate", &c->bw.egress_rate, &in_config)) < 0 ||
	    (r = u64_key(req, req->config, "egressBurst", &c->bw.egress_burst, &in_config)) < 0)
		return r;
	if (!in_config && req->has_bandwidth)
		c->bw = req->bandwidth;
	if ((r = validate_rate_burst(req, "ingress", c->bw.ingress_rate, c->bw.ingress_burst)) < 0 ||
	    (r = validate_rate_burst(req, "egress", c->bw.egress_rate, c->bw.egress_burst)) < 0)
		return r;

	/* utils.MustFormatHashWithPrefix(15, "bwp", name+containerID) */
	seed = strdup_printf("%s%s", req->name ?: "", req->container_id ?: "");
	if (!seed)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	sha512(seed, strlen(seed), h);
	snprintf(c->ifb, sizeof(c->ifb), IFB_PREFIX "%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4], h[5]);
	return 0;
}

/* The host end of the pod's veth: the container interface's peer. */
static int find_host_veth(CniRequest *req, NlSock *host, NlLink *ret) {
	_cleanup_(nl_sock_freep) NlSock *cont = NULL;
	_cleanup_close_ int fd = -EBADF;
	NlLink cl;
	int r;

	fd = cni_request_open_netns(req);
	if (fd < 0)
		return fd;
	r = pod_open_cont_sock(req, fd, &cont);
	if (r < 0)
		return r;
	r = nl_link_get(cont, req->ifname, 0, &cl);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s in netns \"%s\"", req->ifname,
				      req->netns);
	if (!streq(cl.kind, "veth") || cl.link <= 0)
		return cni_fail(req, -ENODEV, CNI_ERR_INTERNAL, "container interface %s has no veth peer", req->ifname);
	r = nl_link_get(host, NULL, cl.link, ret);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "veth peer with index %d is not in host ns", cl.link);
	return 0;
}

typedef struct Installed {
	NlSock *host;
	int veth; /* host veth ifindex */
	bool tbf, ingress, ifb;
	const char *ifb_name;
} Installed;

static void installed_undo(Installed **p) {
	Installed *i = *p;
	int r;

	if (!i)
		return;
	if (i->ifb && (r = nl_link_del_by_name(i->host, i->ifb_name)) < 0 && r != -ENODEV)
		log_warning_errno(r, "rollback: failed to delete %s: %m", i->ifb_name);
	if (i->ingress && (r = nl_tc_qdisc_del(i->host, i->veth, NL_TC_INGRESS)) < 0 && r != -ENOENT && r != -EINVAL)
		log_warning_errno(r, "rollback: failed to delete the ingress qdisc: %m");
	if (i->tbf && (r = nl_tc_qdisc_del(i->host, i->veth, NL_TC_ROOT)) < 0 && r != -ENOENT && r != -EINVAL)
		log_warning_errno(r, "rollback: failed to delete the tbf qdisc: %m");
}

static int bandwidth_add(CniRequest *req, void *userdata, CniResult **ret) {
	BandwidthConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_(nl_sock_freep) NlSock *host = NULL;
	Installed inst_data = {};
	_cleanup_(installed_undo) Installed *inst = NULL;
	NlLink veth, ifb;
	NlTbf tbf;
	char ms[18];
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"must be called as chained plugin (prevResult missing)");
	res = cni_result_copy(req->prev_result);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (c->bw.ingress_rate == 0 && c->bw.egress_rate == 0) {
		*ret = TAKE_PTR(res);
		return 0;
	}

	r = nl_sock_open(&host);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to open netlink socket");
	r = find_host_veth(req, host, &veth);
	if (r < 0)
		return r;
	inst_data = (Installed) { .host = host, .veth = veth.ifindex, .ifb_name = c->ifb };
	inst = &inst_data;

	if (c->bw.ingress_rate > 0) {
		(void) nl_tc_tbf_from_bits(c->bw.ingress_rate, c->bw.ingress_burst, &tbf);
		inst->tbf = true;
		r = nl_tc_tbf_set(host, veth.ifindex, &tbf, true);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to add tbf qdisc on %s (ingressRate %llu)", veth.name,
					      (unsigned long long) c->bw.ingress_rate);
	}

	if (c->bw.egress_rate > 0) {
		r = nl_ifb_create(host, c->ifb, veth.mtu);
		if (r == -EEXIST) {
			/* A repeated ADD: reuse our own ifb, never somebody else's device. */
			r = nl_link_get(host, c->ifb, 0, &ifb);
			if (r >= 0 && !streq(ifb.kind, "ifb"))
				return cni_fail(req, -EEXIST, CNI_ERR_INTERNAL, "%s exists and is not an ifb device",
						c->ifb);
		} else if (r >= 0) {
			inst->ifb = true;
			r = nl_link_get(host, c->ifb, 0, &ifb);
		}
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to create ifb device %s", c->ifb);
		if (cni_result_add_interface(res, c->ifb, ether_addr_format(ifb.mac, ms), NULL) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

		/* Start from a clean ingress qdisc so a repeated ADD does not stack filters. */
		r = nl_tc_qdisc_del(host, veth.ifindex, NL_TC_INGRESS);
		if (r < 0 && r != -ENOENT && r != -EINVAL)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to reset the ingress qdisc of %s",
					      veth.name);
		inst->ingress = true;
		r = nl_tc_ingress_add(host, veth.ifindex);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to add ingress qdisc on %s", veth.name);
		r = nl_tc_mirred_redirect_add(host, veth.ifindex, ifb.ifindex);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to redirect %s to %s", veth.name, c->ifb);
		(void) nl_tc_tbf_from_bits(c->bw.egress_rate, c->bw.egress_burst, &tbf);
		r = nl_tc_tbf_set(host, ifb.ifindex, &tbf, true);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					      "failed to add tbf qdisc on %s (egressRate %llu)", c->ifb,
					      (unsigned long long) c->bw.egress_rate);
	}

	TAKE_PTR(inst);
	*ret = TAKE_PTR(res);
	return 0;
}

/* The host veth for DEL: prevResult's interfaces without sandbox that are veths, else the peer. */
static int del_host_veth(CniRequest *req, NlSock *host, NlLink *ret) {
	CniError saved = req->error;
	int r;

	req->error = (CniError) {};
	r = isempty(req->netns) ? -ENOENT : find_host_veth(req, host, ret);
	cni_error_clear(&req->error);
	req->error = saved;
	return r;
}

static int bandwidth_del(CniRequest *req, void *userdata) {
	BandwidthConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *host = NULL;
	NlLink veth;
	int r = 0, k;

	k = nl_sock_open(&host);
	if (k < 0)
		return cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to open netlink socket");
	/* ip link del bwp...: takes its tbf with it */
	k = nl_link_del_by_name(host, c->ifb);
	if (k < 0 && k != -ENODEV)
		RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to delete %s", c->ifb));

	/* The veth's qdiscs, if the pod's veth is still there (chains DEL us before the bridge). Only
	 * what we install: a tbf root and the ingress qdisc. */
	if (del_host_veth(req, host, &veth) >= 0) {
		if (c->bw.ingress_rate > 0) {
			k = nl_tc_qdisc_del(host, veth.ifindex, NL_TC_ROOT);
			if (k < 0 && k != -ENOENT && k != -EINVAL && k != -ENODEV)
				RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL,
							     "failed to delete tbf of %s", veth.name));
		}
		if (c->bw.egress_rate > 0) {
			k = nl_tc_qdisc_del(host, veth.ifindex, NL_TC_INGRESS);
			if (k < 0 && k != -ENOENT && k != -EINVAL && k != -ENODEV)
				RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL,
							     "failed to delete ingress qdisc of %s", veth.name));
		}
	}
	return r;
}

typedef struct FindTbf {
	bool root_seen;
	NlQdisc q;
} FindTbf;

static int find_root_cb(const NlQdisc *q, void *userdata) {
	FindTbf *f = userdata;

	if (q->parent == NL_TC_ROOT) {
		f->root_seen = true;
		f->q = *q;
	}
	return 0;
}

static int check_tbf(CniRequest *req, NlSock *host, const NlLink *l, uint64_t rate, uint64_t burst, const char *what) {
	FindTbf f = {};
	NlTbf want;
	int r;

	(void) nl_tc_tbf_from_bits(rate, burst, &want);
	r = nl_tc_qdisc_dump(host, l->ifindex, find_root_cb, &f);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list qdiscs of %s", l->name);
	if (!f.root_seen || !f.q.has_tbf)
		return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL, "Failed to find qdisc: %s has no tbf root qdisc (%s)",
				l->name, what);
	if (f.q.tbf.rate != want.rate)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Rate doesn't match on %s (%s): %llu bytes/s, want %llu", l->name, what,
				(unsigned long long) f.q.tbf.rate, (unsigned long long) want.rate);
	if (f.q.tbf.limit != want.limit)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Limit doesn't match on %s (%s): %u, want %u", l->name,
				what, f.q.tbf.limit, want.limit);
	if (f.q.tbf.buffer != want.buffer)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Buffer doesn't match on %s (%s): %u, want %u", l->name,
				what, f.q.tbf.buffer, want.buffer);
	return 0;
}

static int bandwidth_check(CniRequest *req, void *userdata) {
	BandwidthConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *host = NULL;
	NlLink veth, ifb;
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"must be called as chained plugin (prevResult missing)");
	if (c->bw.ingress_rate == 0 && c->bw.egress_rate == 0)
		return 0;
	r = nl_sock_open(&host);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to open netlink socket");
	r = find_host_veth(req, host, &veth);
	if (r < 0)
		return r;
	if (c->bw.ingress_rate > 0 &&
	    (r = check_tbf(req, host, &veth, c->bw.ingress_rate, c->bw.ingress_burst, "ingressRate")) < 0)
		return r;
	if (c->bw.egress_rate > 0) {
		r = nl_link_get(host, c->ifb, 0, &ifb);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "ifb device %s not found", c->ifb);
		r = check_tbf(req, host, &ifb, c->bw.egress_rate, c->bw.egress_burst, "egressRate");
		if (r < 0)
			return r;
	}
	return 0;
}

static const PluginOps bandwidth_ops = {
	.name = "bandwidth",
	.about = "CNI bandwidth plugin (weft)",
	.conf_size = sizeof(BandwidthConf),
	.parse = bandwidth_parse,
	.add = bandwidth_add,
	.del = bandwidth_del,
	.check = bandwidth_check,
};

int main(int argc, char *argv[]) {
	return plugin_main(&bandwidth_ops, argc, argv);
}
