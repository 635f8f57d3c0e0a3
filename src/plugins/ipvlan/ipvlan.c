/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `ipvlan` plugin (containernetworking/plugins 1.1.1): an ipvlan device on "master",
 * created directly in the pod's namespace. Keys: master, mode (l2/l3/l3s), mtu, ipam. Chained
 * use: without "master" the single interface of prevResult is the master, and without IPAM the
 * IPs of prevResult are put on the device. The attach steps live in pod-sublink.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <net/if.h>
#include <linux/if_link.h>

#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "shared/nl/nl-kinds.h"
#include "shared/pod/pod-conf.h"
#include "shared/pod/pod-sublink.h"

typedef struct IpvlanConf {
	char master[IFNAMSIZ]; /* "" = from prevResult, else the default route's device */
	uint32_t mode;
	unsigned mtu;
	bool layer3;
} IpvlanConf;

static int ipvlan_parse(CniRequest *req, void *userdata) {
	IpvlanConf *c = userdata;
	const char *master, *mode;
	int r;

	if ((r = pod_conf_ifname(req, "master", &master)) < 0 || (r = pod_conf_string(req, "mode", &mode)) < 0 ||
	    (r = pod_conf_mtu(req, &c->mtu)) < 0)
		return r;
	r = nl_ipvlan_mode_from_string(mode);
	if (r < 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"unknown ipvlan mode: \"%s\" (\"mode\" must be l2, l3 or l3s)", mode);
	c->mode = (uint32_t) r;
	c->layer3 = pod_conf_has_ipam(req);

	/* The reference resolves the master from prevResult for every command but CHECK. */
	if (!master && req->prev_result && req->command != CNI_CMD_CHECK) {
		const CniResult *p = req->prev_result;

		if (p->n_interfaces != 1 || isempty(p->interfaces[0].name))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"chained master failure. PrevResult lacks a single named interface (has %zu)",
					p->n_interfaces);
		master = p->interfaces[0].name;
	}
	snprintf(c->master, sizeof(c->master), "%s", master ?: "");
	return 0;
}

static int ipvlan_create(NlSock *host, const PodSublink *s, const char *name, int parent, int netns_fd) {
	return nl_ipvlan_create(host, &(NlIpvlanConfig) {
						      .name = name,
						      .parent = parent,
						      .mode = (uint16_t) s->param,
						      .netns_fd = netns_fd,
						      .mtu = s->mtu,
				      });
}

static int ipvlan_check_mode(CniRequest *req, const PodSublink *s, const NlLinkInfo *li) {
	if (!li->has_mode || li->mode != s->param)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Container IPVlan mode %s does not match expected value: %s",
				li->has_mode ? nl_ipvlan_mode_to_string((int) li->mode) : "unknown",
				nl_ipvlan_mode_to_string((int) s->param));
	return 0;
}

static void ipvlan_sublink(const IpvlanConf *c, PodSublink *s) {
	*s = (PodSublink) {
		.kind = "ipvlan",
		.master = c->master,
		.mtu = c->mtu,
		.layer3 = c->layer3,
		.param = c->mode,
		.create = ipvlan_create,
		.check = ipvlan_check_mode,
	};
}

static int ipvlan_add(CniRequest *req, void *userdata, CniResult **ret) {
	const IpvlanConf *c = userdata;
	PodSublink s;

	ipvlan_sublink(c, &s);
	if (!c->layer3) {
		/* Chained without IPAM: the previous plugin's addresses go on the device. */
		if (!req->prev_result || req->prev_result->n_ips == 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipvlan needs an IPAM plugin (\"ipam\" has no \"type\") or a prevResult with IPs");
		s.chained = req->prev_result;
	}
	return pod_sublink_add(req, &s, ret);
}

static int ipvlan_del(CniRequest *req, void *userdata) {
	const IpvlanConf *c = userdata;

	/* On chained invocation the IPAM block can be empty. */
	return pod_sublink_del(req, c->layer3);
}

static int ipvlan_check(CniRequest *req, void *userdata) {
	PodSublink s;

	ipvlan_sublink(userdata, &s);
	return pod_sublink_check(req, &s);
}

static int ipvlan_gc(CniRequest *req, void *userdata) {
	const IpvlanConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_GC, NULL) : 0;
}

static int ipvlan_status(CniRequest *req, void *userdata) {
	const IpvlanConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_STATUS, NULL) : 0;
}

const PluginOps ipvlan_ops = {
	.name = "ipvlan",
	.about = "CNI ipvlan plugin (weft)",
	.conf_size = sizeof(IpvlanConf),
	.parse = ipvlan_parse,
	.add = ipvlan_add,
	.del = ipvlan_del,
	.check = ipvlan_check,
	.gc = ipvlan_gc,
	.status = ipvlan_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&ipvlan_ops, argc, argv);
}
