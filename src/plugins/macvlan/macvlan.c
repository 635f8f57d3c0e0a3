/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `macvlan` plugin (containernetworking/plugins 1.1.1): a macvlan device on "master"
 * (default: the device of the default route), created directly in the pod's namespace, with
 * addresses from a delegated IPAM plugin or none (L2 only). Keys: master, mode, mtu, mac (and
 * CNI_ARGS MAC / runtimeConfig.mac, which win), ipam. The attach steps live in pod-sublink.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <net/if.h>
#include <linux/if_link.h>

#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl-kinds.h"
#include "shared/pod/pod-conf.h"
#include "shared/pod/pod-sublink.h"

typedef struct MacvlanConf {
	char master[IFNAMSIZ]; /* "" = default route's device, resolved by ADD/CHECK */
	uint32_t mode;
	unsigned mtu;
	bool has_mac;
	uint8_t mac[6];
	bool layer3;
} MacvlanConf;

static int macvlan_parse(CniRequest *req, void *userdata) {
	MacvlanConf *c = userdata;
	const char *master, *mode, *mac;
	json_int_t mtu = 0;
	bool set;
	int r;

	if ((r = pod_conf_ifname(req, "master", &master)) < 0 || (r = pod_conf_string(req, "mode", &mode)) < 0 ||
	    (r = pod_conf_string(req, "mac", &mac)) < 0 || (r = pod_conf_int(req, "mtu", &mtu, &set)) < 0)
		return r;
	snprintf(c->master, sizeof(c->master), "%s", master ?: "");

	r = nl_macvlan_mode_from_string(mode);
	if (r < 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"unknown macvlan mode: \"%s\" (\"mode\" must be bridge, private, vepa or passthru)",
				mode);
	c->mode = (uint32_t) r;

	/* The upper bound is the master's MTU, checked by ADD once the master is known. */
	if (mtu < 0 || mtu > 65535)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid MTU %lld (\"mtu\" must be [0, master MTU])", (long long) mtu);
	c->mtu = (unsigned) mtu;

	/* Config "mac", overridden by CNI_ARGS MAC and runtimeConfig.mac (the request merged
	 * and validated those). */
	if (!isempty(req->req_mac))
		mac = req->req_mac;
	if (!isempty(mac)) {
		if (ether_addr_parse(mac, c->mac) < 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid \"mac\": \"%s\" is not a MAC address", mac);
		c->has_mac = true;
	}
	c->layer3 = pod_conf_has_ipam(req);
	return 0;
}

static int macvlan_create(NlSock *host, const PodSublink *s, const char *name, int parent, int netns_fd) {
	return nl_macvlan_create(host, &(NlMacvlanConfig) {
						       .name = name,
						       .parent = parent,
						       .mode = s->param,
						       .netns_fd = netns_fd,
						       .mtu = s->mtu,
						       .mac = s->mac,
				       });
}

static int macvlan_check_mode(CniRequest *req, const PodSublink *s, const NlLinkInfo *li) {
	if (!li->has_mode || li->mode != s->param)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Container macvlan mode %s does not match expected value: %s",
				li->has_mode ? nl_macvlan_mode_to_string(li->mode) : "unknown",
				nl_macvlan_mode_to_string(s->param));
	return 0;
}

static void macvlan_sublink(const MacvlanConf *c, PodSublink *s) {
	*s = (PodSublink) {
		.kind = "macvlan",
		.master = c->master,
		.mtu = c->mtu,
		.mtu_max_master = true,
		.mac = c->has_mac ? c->mac : NULL,
		.proxy_arp = true,
		.layer3 = c->layer3,
		.param = c->mode,
		.create = macvlan_create,
		.check = macvlan_check_mode,
	};
}

static int macvlan_add(CniRequest *req, void *userdata, CniResult **ret) {
	PodSublink s;

	macvlan_sublink(userdata, &s);
	return pod_sublink_add(req, &s, ret);
}

static int macvlan_del(CniRequest *req, void *userdata) {
	const MacvlanConf *c = userdata;

	/* Unlike the reference, DEL does not need the master (it may be gone by now). */
	return pod_sublink_del(req, c->layer3);
}

static int macvlan_check(CniRequest *req, void *userdata) {
	PodSublink s;

	macvlan_sublink(userdata, &s);
	return pod_sublink_check(req, &s);
}

static int macvlan_gc(CniRequest *req, void *userdata) {
	const MacvlanConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_GC, NULL) : 0;
}

static int macvlan_status(CniRequest *req, void *userdata) {
	const MacvlanConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_STATUS, NULL) : 0;
}

const PluginOps macvlan_ops = {
	.name = "macvlan",
	.about = "CNI macvlan plugin (weft)",
	.conf_size = sizeof(MacvlanConf),
	.parse = macvlan_parse,
	.add = macvlan_add,
	.del = macvlan_del,
	.check = macvlan_check,
	.gc = macvlan_gc,
	.status = macvlan_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&macvlan_ops, argc, argv);
}
