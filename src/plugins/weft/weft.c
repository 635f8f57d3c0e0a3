/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `weft` CNI plugin: turns this node's lease (written by weftd to <runDir>/subnet.env) into a
 * pod attachment — a veth on the node bridge, an address from the node's subnet, the bridge as
 * gateway, a route to the cluster network and a default route, the lease's MTU, hairpin on.
 *
 * It is what flannel's CNI plugin does by generating a bridge + host-local config and exec'ing
 * them; here both are linked in: the attach steps are src/shared/pod (shared with `bridge`) and
 * IPAM is host-local's PluginOps run in-process against the same on-disk store, so an operator
 * can still inspect or migrate it with the reference host-local. Masquerading is weftd's job.
 *
 * Config (10-weft.conflist, written by weftd):
 *   {"type": "weft", "runDir": "/run/weft", "bridge": "cni0", "dataDir": "/var/lib/cni/networks",
 *    "mtu": 0 (= from the lease), "hairpinMode": true, "isDefaultGateway": true}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"
#include "shared/ipam/ipam-host-local.h"
#include "shared/lease/lease-file.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-bridge.h"
#include "shared/pod/pod-cni.h"
#include "shared/pod/pod-gateway.h"
#include "shared/pod/pod-iface.h"
#include "shared/pod/pod-veth.h"

#define WEFT_DEFAULT_RUN_DIR "/run/weft"
#define WEFT_DEFAULT_BRIDGE "cni0"

/* Result interface indexes, ordered as the bridge plugin orders them. */
enum {
	IFACE_BRIDGE = 0,
	IFACE_HOST = 1,
	IFACE_CONT = 2
};

typedef struct WeftConf {
	char *run_dir;
	char *bridge;
	char *data_dir; /* NULL = host-local's default */
	unsigned mtu;   /* 0 = from the lease */
	bool hairpin;
	bool default_gw;

	int lease_r; /* 0 when `lease` is valid, else why not (-ENOENT: not written yet) */
	LeaseFile lease;
	json_t *ipam;      /* host-local config synthesized from the lease */
	HostLocalConf *hl; /* parsed host-local config (in-process IPAM) */
} WeftConf;

static void weft_conf_done(void *userdata) {
	WeftConf *c = userdata;

	if (c->hl) {
		host_local_ops.conf_done(c->hl);
		free(c->hl);
	}
	json_decref(c->ipam);
	free(c->run_dir);
	free(c->bridge);
	free(c->data_dir);
}

static const char *weft_data_dir(const WeftConf *c) {
	return c->data_dir ?: IPAM_DEFAULT_DATA_DIR;
}

static int get_string(CniRequest *req, const char *key, const char *def, char **ret) {
	json_t *v = json_object_get(req->config, key);

	if (v && !json_is_string(v))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"%s\": must be a string", key);
	if (v && isempty(json_string_value(v)))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"%s\": must not be empty", key);
	if (!v && !def) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(v ? json_string_value(v) : def);
	return *ret ? 0 : cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
}

static int get_bool(CniRequest *req, const char *key, bool def, bool *ret) {
	json_t *v = json_object_get(req->config, key);

	if (v && !json_is_boolean(v))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"%s\": must be true or false", key);
	*ret = v ? json_is_true(v) : def;
	return 0;
}

/* host-local's "ranges"/"routes" for this node, from the lease: one range set per family with
 * the subnet and its gateway, a route to the cluster network (and a default route). */
static int synthesize_ipam(CniRequest *req, WeftConf *c) {
	const struct {
		const IpPrefix *network, *subnet;
		const char *def;
	} fam[] = {
		{ &c->lease.network, &c->lease.subnet, "0.0.0.0/0" },
		{ &c->lease.network6, &c->lease.subnet6, "::/0" },
	};
	json_t *ranges = json_array(), *routes = json_array();
	json_t *ipam = json_pack("{s:s, s:o, s:o}", "type", "host-local", "ranges", ranges, "routes", routes);

	if (!ipam)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	c->ipam = ipam;
	for (size_t i = 0; i < ELEMENTSOF(fam); i++) {
		char net[IP_PREFIX_STRLEN], sub[IP_PREFIX_STRLEN], gw[IP_ADDR_STRLEN];
		IpPrefix subnet;

		if (fam[i].subnet->addr.family == AF_UNSPEC)
			continue;
		subnet = ip_prefix_mask(fam[i].subnet);
		if (json_array_append_new(ranges, json_pack("[{s:s, s:s}]", "subnet", ip_prefix_to_string(&subnet, sub),
							    "gateway", ip_addr_to_string(&fam[i].subnet->addr, gw))) <
				    0 ||
		    json_array_append_new(routes, json_pack("{s:s}", "dst", ip_prefix_to_string(fam[i].network, net))) <
				    0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		if (c->default_gw && json_array_append_new(routes, json_pack("{s:s}", "dst", fam[i].def)) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	}
	if (c->data_dir && json_object_set_new(ipam, "dataDir", json_string(c->data_dir)) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return 0;
}

static int weft_parse(CniRequest *req, void *userdata) {
	WeftConf *c = userdata;
	_cleanup_free_ char *path = NULL;
	json_t *mtu;
	int r;

	if ((r = get_string(req, "runDir", WEFT_DEFAULT_RUN_DIR, &c->run_dir)) < 0 ||
	    (r = get_string(req, "bridge", WEFT_DEFAULT_BRIDGE, &c->bridge)) < 0 ||
	    (r = get_string(req, "dataDir", NULL, &c->data_dir)) < 0 ||
	    (r = get_bool(req, "hairpinMode", true, &c->hairpin)) < 0 ||
	    (r = get_bool(req, "isDefaultGateway", true, &c->default_gw)) < 0)
		return r;
	if (strlen(c->bridge) >= IFNAMSIZ || strpbrk(c->bridge, "/: \t\n"))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid \"bridge\": \"%s\" is not a valid interface name", c->bridge);
	mtu = json_object_get(req->config, "mtu");
	if (mtu && (!json_is_integer(mtu) || json_integer_value(mtu) < 0 || json_integer_value(mtu) > 65535))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"mtu\": must be an integer 0..65535");
	c->mtu = mtu ? (unsigned) json_integer_value(mtu) : 0;

	/* The lease is read for every command, but only ADD, CHECK and STATUS need it: DEL and GC
	 * must work after weftd is gone (they release by container ID in the store). */
	path = strdup_printf("%s/%s", c->run_dir, LEASE_FILE_NAME);
	if (!path)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	c->lease_r = lease_file_read(path, &c->lease);
	if (c->lease_r == -ENOENT) {
		if (req->command == CNI_CMD_ADD || req->command == CNI_CMD_CHECK)
			return cni_fail(req, -EAGAIN, CNI_ERR_TRY_AGAIN_LATER,
					"no node lease yet: %s does not exist (weftd has not leased a subnet for this node; is it running?)",
					path);
		return 0;
	}
	if (c->lease_r < 0)
		return cni_fail_errno(req, c->lease_r, CNI_ERR_INVALID_NETCONF, NULL, "invalid lease file %s", path);

	r = synthesize_ipam(req, c);
	if (r < 0)
		return r;
	c->hl = calloc(1, host_local_ops.conf_size);
	if (!c->hl)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	req->ipam = c->ipam;
	return host_local_ops.parse(req, c->hl);
}

/* Rollback of a half-done ADD: the pod interface (its veth peer goes with it) and the IP. */
typedef struct WeftRollback {
	CniRequest *req;
	WeftConf *conf;
	NlSock *cont;
	int cont_ifindex;
	bool ipam;
} WeftRollback;

static void weft_rollback(WeftRollback **p) {
	WeftRollback *rb = *p;
	CniError saved;
	int r;

	if (!rb)
		return;
	saved = rb->req->error;
	rb->req->error = (CniError) {};
	if (rb->cont_ifindex > 0 && (r = nl_link_del(rb->cont, rb->cont_ifindex)) < 0 && r != -ENODEV)
		log_warning_errno(r, "rollback: failed to delete %s in the pod: %m", rb->req->ifname);
	if (rb->ipam && host_local_ops.del(rb->req, rb->conf->hl) < 0)
		log_warning("rollback: failed to release the pod's address: %s", rb->req->error.msg ?: "unknown error");
	cni_error_clear(&rb->req->error);
	rb->req->error = saved;
}

static int weft_add(CniRequest *req, void *userdata, CniResult **ret) {
	WeftConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL, *ipam = NULL;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	WeftRollback rb_data = { .req = req, .conf = c };
	_cleanup_(weft_rollback) WeftRollback *rb = NULL;
	unsigned mtu = c->mtu ?: c->lease.mtu;
	char host_name[IFNAMSIZ], ms[18];
	NlLink br, hveth, cveth;
	int r;

	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;

	r = pod_bridge_ensure(host, &(PodBridgeConfig) { .name = c->bridge, .mtu = mtu }, &br, &req->error);
	if (r < 0)
		return r;
	/* The gateway addresses go on the bridge before any pod uses them; concurrent ADDs racing
	 * here all succeed. */
	for (int i = 0; i < 2; i++) {
		const IpPrefix *gw = i == 0 ? &c->lease.subnet : &c->lease.subnet6;

		if (gw->addr.family == AF_UNSPEC)
			continue;
		if ((r = pod_gateway_ensure(host, &br, gw, false, &req->error)) < 0 ||
		    (r = pod_forwarding_enable(gw->addr.family, &req->error)) < 0)
			return r;
	}

	r = pod_veth_create(host, cont, netns_fd, req->ifname, mtu, NULL, host_name, &hveth, &cveth, &req->error);
	if (r < 0)
		return r;
	rb_data.cont = cont;
	rb_data.cont_ifindex = cveth.ifindex;
	rb = &rb_data;
	r = pod_bridge_port_attach(host, br.ifindex, hveth.ifindex, host_name,
				   &(PodBridgePort) { .hairpin = c->hairpin }, &req->error);
	if (r < 0)
		return r;

	r = host_local_ops.add(req, c->hl, &ipam);
	if (r < 0)
		return r;
	rb->ipam = true;
	if (!ipam || ipam->n_ips == 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "IPAM returned no address for subnet %s",
				ip_prefix_to_string(&c->lease.subnet, (char[IP_PREFIX_STRLEN]) {}));

	res = cni_result_new(req->version);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_result_add_interface(res, c->bridge, NULL, NULL) < 0 ||
	    cni_result_add_interface(res, host_name, NULL, NULL) < 0 ||
	    cni_result_add_interface(res, req->ifname, ether_addr_format(cveth.mac, ms), req->netns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < ipam->n_ips; i++)
		if (cni_result_add_ip(res, &ipam->ips[i].address, &ipam->ips[i].gateway, IFACE_CONT) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < ipam->n_routes; i++)
		if (cni_result_add_route(res, &ipam->routes[i]) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_dns_merge(&res->dns, &req->dns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	r = pod_iface_configure_link(cont, netns_fd, &cveth, res, IFACE_CONT, false, &req->error);
	if (r < 0)
		return r;

	/* The MACs as read at set-up: the bridge's is pinned (pod_bridge_ensure), enslaving leaves the port's. */
	res->interfaces[IFACE_BRIDGE].mac = strdup(ether_addr_format(br.mac, ms));
	res->interfaces[IFACE_HOST].mac = strdup(ether_addr_format(hveth.mac, ms));
	if (!res->interfaces[IFACE_BRIDGE].mac || !res->interfaces[IFACE_HOST].mac)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	TAKE_PTR(rb);
	*ret = TAKE_PTR(res);
	return 0;
}

static int weft_del(CniRequest *req, void *userdata) {
	WeftConf *c = userdata;
	int r = 0, k;

	/* The address first and always, even with the pod or weftd (and so the lease) gone. */
	RET_GATHER(r, c->hl ? host_local_ops.del(req, c->hl) : host_local_release_store(req, weft_data_dir(c)));

	/* The pod end (the host end goes with it). Only a netns that is gone (ENOENT, or a path that
	 * is no longer a netns: its bind mount went away) means nothing is left; any other failure
	 * to open it (EACCES, EMFILE, ...) is reported, or the veth would leak while DEL says done. */
	k = pod_link_del_in_netns(req);
	RET_GATHER(r, k);
	return r;
}

static int weft_check(CniRequest *req, void *userdata) {
	WeftConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	const CniResult *p = req->prev_result;
	NlLink br, cl;
	int r, cont_idx = -1;

	if (!p)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "CHECK needs \"prevResult\" (the ADD result)");
	for (size_t i = 0; i < p->n_interfaces; i++)
		if (streq_ptr(p->interfaces[i].name, req->ifname) && !isempty(p->interfaces[i].sandbox))
			cont_idx = (int) i;
	if (cont_idx < 0 || p->n_interfaces < 2)
		return cni_fail(req, -ENOENT, CNI_ERR_INVALID_NETCONF, "prevResult has no interface %s in a sandbox",
				req->ifname);

	netns_fd = cni_request_open_netns(req);
	if (netns_fd < 0)
		return netns_fd;
	r = nl_sock_open(&host);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to open netlink socket");
	r = pod_open_cont_sock(req, netns_fd, &cont);
	if (r < 0)
		return r;

	r = nl_link_get(host, c->bridge, 0, &br);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "bridge %s", c->bridge);
	r = nl_link_get(cont, req->ifname, 0, &cl);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "interface %s in netns \"%s\"", req->ifname,
				      req->netns);
	r = pod_veth_check_peer(host, p->interfaces[IFACE_HOST].name, &cl, br.ifindex, &req->error);
	if (r < 0)
		return r;
	r = pod_iface_check(cont, req->ifname, p, cont_idx, &req->error);
	if (r < 0)
		return r;
	return host_local_ops.check(req, c->hl);
}

static int weft_gc(CniRequest *req, void *userdata) {
	WeftConf *c = userdata;

	return c->hl ? host_local_ops.gc(req, c->hl) : host_local_gc_store(req, weft_data_dir(c));
}

static int weft_status(CniRequest *req, void *userdata) {
	WeftConf *c = userdata;

	if (c->lease_r == -ENOENT)
		return cni_fail(req, -EAGAIN, CNI_ERR_PLUGIN_NOT_AVAILABLE,
				"no node lease yet: %s/%s does not exist (weftd has not leased a subnet for this node)",
				c->run_dir, LEASE_FILE_NAME);
	return host_local_ops.status(req, c->hl);
}

static const PluginOps weft_ops = {
	.name = "weft",
	.about = "weft: attaches pods to this node's leased subnet (bridge + host-local, from weftd's lease file)",
	.conf_size = sizeof(WeftConf),
	.parse = weft_parse,
	.conf_done = weft_conf_done,
	.add = weft_add,
	.del = weft_del,
	.check = weft_check,
	.gc = weft_gc,
	.status = weft_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&weft_ops, argc, argv);
}
