/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `vlan` plugin (containernetworking/plugins 1.1.1): an 802.1Q device on "master"
 * (required) with "vlanId" (0..4094), created directly in the pod's namespace and addressed
 * by IPAM (required, as in the reference). Keys: master, vlanId, mtu, ipam. 1.1.1 has no
 * linkInContainer. The attach steps live in pod-sublink.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <net/if.h>

#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "shared/nl/nl-kinds.h"
#include "shared/pod/pod-conf.h"
#include "shared/pod/pod-sublink.h"

typedef struct VlanConf {
	char master[IFNAMSIZ];
	uint16_t vlan_id;
	unsigned mtu;
	bool layer3;
} VlanConf;

static int vlan_parse(CniRequest *req, void *userdata) {
	VlanConf *c = userdata;
	const char *master;
	json_int_t id = 0;
	int r;

	if ((r = pod_conf_ifname(req, "master", &master)) < 0 || (r = pod_conf_int(req, "vlanId", &id, NULL)) < 0 ||
	    (r = pod_conf_mtu(req, &c->mtu)) < 0)
		return r;
	if (!master)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"\"master\" field is required. It specifies the host interface name to create the VLAN for");
	if (id < 0 || id > 4094)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid VLAN ID %lld (\"vlanId\" must be between 0 and 4094)", (long long) id);
	snprintf(c->master, sizeof(c->master), "%s", master);
	c->vlan_id = (uint16_t) id;
	c->layer3 = pod_conf_has_ipam(req);
	return 0;
}

static int vlan_create(NlSock *host, const PodSublink *s, const char *name, int parent, int netns_fd) {
	return nl_vlan_create(host, &(NlVlanConfig) {
						    .name = name,
						    .parent = parent,
						    .vlan_id = (uint16_t) s->param,
						    .netns_fd = netns_fd,
						    .mtu = s->mtu,
				    });
}

static int vlan_check_id(CniRequest *req, const PodSublink *s, const NlLinkInfo *li) {
	if (!li->has_vlan_id || li->vlan_id != s->param)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"Error: Container interface %s does not have vlan ID %u", req->ifname, s->param);
	return 0;
}

static PodSublink vlan_sublink(const VlanConf *c) {
	return (PodSublink) {
		.kind = "vlan",
		.master = c->master,
		.mtu = c->mtu,
		.layer3 = c->layer3,
		.param = c->vlan_id,
		.create = vlan_create,
		.check = vlan_check_id,
	};
}

static int vlan_add(CniRequest *req, void *userdata, CniResult **ret) {
	const VlanConf *c = userdata;
	PodSublink s = vlan_sublink(c);

	if (!c->layer3)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"vlan needs an IPAM plugin: \"ipam\" has no \"type\"");
	return pod_sublink_add(req, &s, ret);
}

static int vlan_del(CniRequest *req, void *userdata) {
	const VlanConf *c = userdata;

	return pod_sublink_del(req, c->layer3);
}

static int vlan_check(CniRequest *req, void *userdata) {
	PodSublink s = vlan_sublink(userdata);

	return pod_sublink_check(req, &s);
}

static int vlan_gc(CniRequest *req, void *userdata) {
	const VlanConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_GC, NULL) : 0;
}

static int vlan_status(CniRequest *req, void *userdata) {
	const VlanConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_STATUS, NULL) : 0;
}

const PluginOps vlan_ops = {
	.name = "vlan",
	.about = "CNI vlan plugin (weft)",
	.conf_size = sizeof(VlanConf),
	.parse = vlan_parse,
	.add = vlan_add,
	.del = vlan_del,
	.check = vlan_check,
	.gc = vlan_gc,
	.status = vlan_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&vlan_ops, argc, argv);
}
