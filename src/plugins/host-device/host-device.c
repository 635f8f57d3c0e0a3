/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `host-device` plugin (containernetworking/plugins 1.1.1): moves an existing device
 * of the node ("device", "hwaddr", "kernelpath" or "pciBusID"; runtimeConfig.deviceID as a PCI
 * address) into the pod, renamed to CNI_IFNAME; its original name is kept in the device's alias
 * (IFLA_IFALIAS) so DEL can move it back under that name. IPAM is optional.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

#include <net/if.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"
#include "shared/cni/cni-json.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl-kinds.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"
#include "shared/pod/pod-conf.h"
#include "shared/pod/pod-iface.h"

#define SYS_BUS_PCI "/sys/bus/pci/devices"

typedef struct HostDeviceConf {
	const char *device; /* "device" (borrowed from the config) */
	bool has_hwaddr;
	uint8_t hwaddr[6];      /* "hwaddr" */
	const char *kernelpath; /* "kernelpath" */
	const char *pci_addr;   /* "pciBusID", or runtimeConfig.deviceID when that is a PCI address */
	bool layer3;
} HostDeviceConf;

/* 0000:00:1f.6 */
static bool pci_address_valid(const char *s) {
	return fnmatch("[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]:[0-9a-fA-F][0-9a-fA-F]:[0-1][0-9a-fA-F].[0-7]", s,
		       0) == 0;
}

static int host_device_parse(CniRequest *req, void *userdata) {
	HostDeviceConf *c = userdata;
	const char *hwaddr;
	json_t *rc, *id;
	int r;

	if ((r = pod_conf_ifname(req, "device", &c->device)) < 0 || (r = pod_conf_string(req, "hwaddr", &hwaddr)) < 0 ||
	    (r = pod_conf_string(req, "kernelpath", &c->kernelpath)) < 0 ||
	    (r = pod_conf_string(req, "pciBusID", &c->pci_addr)) < 0)
		return r;
	if (!isempty(hwaddr)) {
		if (ether_addr_parse(hwaddr, c->hwaddr) < 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid \"hwaddr\": failed to parse MAC address \"%s\"", hwaddr);
		c->has_hwaddr = true;
	}
	if (!isempty(c->kernelpath) &&
	    (c->kernelpath[0] != '/' || !startswith(c->kernelpath, "/sys/devices/") || strstr(c->kernelpath, "/../")))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid \"kernelpath\": kernel device path \"%s\" must be absolute and begin with /sys/devices/",
				c->kernelpath);
	if (!isempty(c->pci_addr) && !pci_address_valid(c->pci_addr))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"invalid \"pciBusID\": \"%s\" is not a PCI address (like 0000:00:1f.6)", c->pci_addr);

	/* The standardized device id of the runtime overrides the PCI address. Auxiliary bus
	 * devices (also accepted by later reference versions) are not supported. */
	rc = cni_json_get(req->config, "runtimeConfig");
	id = rc ? cni_json_get(rc, "deviceID") : NULL;
	if (id && !json_is_null(id)) {
		if (!json_is_string(id))
			return pod_conf_invalid(req, "runtimeConfig.deviceID", id, "must be a string");
		if (!isempty(json_string_value(id))) {
			if (!pci_address_valid(json_string_value(id)))
				return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
						"runtime config DeviceID %s not found or unsupported",
						json_string_value(id));
			c->pci_addr = json_string_value(id);
		}
	}

	if (isempty(c->device) && !c->has_hwaddr && isempty(c->kernelpath) && isempty(c->pci_addr))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\"");
	c->layer3 = pod_conf_has_ipam(req);
	return 0;
}

typedef struct MacFind {
	const uint8_t *mac;
	NlLink found;
} MacFind;

static int mac_find_cb(const NlLink *l, void *userdata) {
	MacFind *f = userdata;

	if (f->found.ifindex == 0 && l->has_mac && memcmp(l->mac, f->mac, 6) == 0)
		f->found = *l;
	return 0;
}

/* The first (by name) entry of a sysfs "net" directory that is a link here. */
static int link_from_net_dir(NlSock *host, const char *dir, NlLink *ret) {
	struct dirent **names = NULL;
	int n, r = -ENODEV;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		if (r < 0 && names[i]->d_name[0] != '.' && nl_link_get(host, names[i]->d_name, 0, ret) >= 0)
			r = 0;
		free(names[i]);
	}
	free(names);
	return r;
}

/* The reference's getLink(): device name, else MAC, else kernel path, else PCI address. */
static int find_host_device(CniRequest *req, const HostDeviceConf *c, NlSock *host, NlLink *ret) {
	char path[PATH_MAX], ms[18];
	int r;

	if (!isempty(c->device)) {
		r = nl_link_get(host, c->device, 0, ret);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL,
					      "failed to find host device: \"device\" %s", c->device);
		return 0;
	}
	if (c->has_hwaddr) {
		MacFind f = { .mac = c->hwaddr };

		r = nl_link_dump(host, mac_find_cb, &f);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list node links");
		if (f.found.ifindex == 0)
			return cni_fail(req, -ENODEV, CNI_ERR_INTERNAL,
					"failed to find host device: no link with \"hwaddr\" %s",
					ether_addr_format(c->hwaddr, ms));
		*ret = f.found;
		return 0;
	}
	if (!isempty(c->kernelpath)) {
		snprintf(path, sizeof(path), "%s/net", c->kernelpath);
		r = link_from_net_dir(host, path, ret);
		if (r < 0)
			return cni_fail(req, r, CNI_ERR_INTERNAL,
					"failed to find host device: no network device at \"kernelpath\" %s (%s)", path,
					strerror(-r));
		return 0;
	}

	snprintf(path, sizeof(path), SYS_BUS_PCI "/%s/net", c->pci_addr);
	if (access(path, F_OK) < 0) {
		/* virtio devices: the net directory is one level down. */
		glob_t g = {};
		char pat[PATH_MAX];

		snprintf(pat, sizeof(pat), SYS_BUS_PCI "/%s/virtio*/net", c->pci_addr);
		r = glob(pat, 0, NULL, &g);
		if (r != 0 || g.gl_pathc == 0) {
			globfree(&g);
			return cni_fail(req, -ENODEV, CNI_ERR_INTERNAL,
					"failed to find host device: no net directory under pci device %s",
					c->pci_addr);
		}
		snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	r = link_from_net_dir(host, path, ret);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL,
				"failed to find host device: no device name for pci address %s (%s)", c->pci_addr,
				strerror(-r));
	return 0;
}

/*
 * Moves the (down) link `ifindex`, named `name`, from one namespace to another as `newname`:
 * renamed to a temporary name first (so neither its name nor `newname` being taken in the target
 * gets in the way of the move), moved, then renamed. On failure each step done is undone, so the
 * link is back in `from` as `name`. 0 with *ret_ifindex (its index in `to`, which may change), or
 * -errno with *ret_step naming what failed.
 */
static int link_move_renamed(NlSock *from, int from_fd, int ifindex, const char *name, NlSock *to, int to_fd,
			     const char *newname, int *ret_ifindex, const char **ret_step) {
	char tmp[IFNAMSIZ];
	uint32_t v;
	NlLink l;
	int r;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		return *ret_step = "generate a temporary name", negative_errno();
	snprintf(tmp, sizeof(tmp), "tmp%08x", v);

	r = nl_link_set_name(from, ifindex, tmp);
	if (r < 0)
		return *ret_step = "rename it to a temporary name", r;
	r = nl_link_move(from, ifindex, to_fd);
	if (r < 0) {
		(void) nl_link_set_name(from, ifindex, name);
		return *ret_step = "move it", r;
	}
	r = nl_link_get(to, tmp, 0, &l);
	if (r < 0)
		return *ret_step = "find it after the move", r;
	r = nl_link_set_name(to, l.ifindex, newname);
	if (r < 0) {
		int k = nl_link_move(to, l.ifindex, from_fd);
		if (k >= 0 && (k = nl_link_get(from, tmp, 0, &l)) >= 0)
			k = nl_link_set_name(from, l.ifindex, name);
		if (k < 0)
			log_warning_errno(k, "failed to bring %s back as %s: %m", tmp, name);
		return *ret_step = "rename it", r;
	}
	*ret_ifindex = l.ifindex;
	return 0;
}

/* ADD rollback: the device goes back where and as it was. */
typedef struct HostDeviceRollback {
	CniRequest *req;
	NlSock *host, *cont;              /* borrowed */
	int host_netns_fd, cont_netns_fd; /* borrowed */
	int host_ifindex;                 /* the device in the host (before the move) */
	int cont_ifindex;                 /* > 0: moved; the device in the pod */
	char name[IFNAMSIZ];              /* original name */
	char alias[NL_IFALIAS_MAX];       /* original alias */
	bool was_up;
	bool ipam;
} HostDeviceRollback;

static void host_device_rollback(HostDeviceRollback **p) {
	HostDeviceRollback *rb = *p;
	const char *step = NULL;
	int r, idx = rb ? rb->host_ifindex : 0;

	if (!rb)
		return;
	if (rb->ipam)
		pod_ipam_release(rb->req);
	if (rb->cont_ifindex > 0) {
		(void) nl_link_set_up(rb->cont, rb->cont_ifindex, false);
		r = link_move_renamed(rb->cont, rb->cont_netns_fd, rb->cont_ifindex, rb->req->ifname, rb->host,
				      rb->host_netns_fd, rb->name, &idx, &step);
		if (r < 0) {
			log_warning_errno(r, "rollback: failed to %s, moving %s back to the host as %s: %m", step,
					  rb->req->ifname, rb->name);
			return;
		}
	}
	(void) nl_link_set_alias(rb->host, idx, rb->alias);
	if (rb->was_up)
		(void) nl_link_set_up(rb->host, idx, true);
}

static int host_device_add(CniRequest *req, void *userdata, CniResult **ret) {
	const HostDeviceConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL, *ipam = NULL;
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF, self = -EBADF;
	HostDeviceRollback rb_data = { .req = req };
	_cleanup_(host_device_rollback) HostDeviceRollback *rb = NULL;
	const char *step = NULL;
	NlLinkInfo info;
	NlLink dev, cdev;
	char ms[18];
	int cidx = 0, r;

	r = pod_open_netns_socks(req, &netns_fd, &host, &cont);
	if (r < 0)
		return r;
	self = netns_open_current();
	if (self < 0)
		return cni_fail_errno(req, self, CNI_ERR_INTERNAL, NULL, "failed to open the host namespace");
	if (netns_same(self, netns_fd))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_NETNS \"%s\" is the host namespace",
				req->netns);

	r = find_host_device(req, c, host, &dev);
	if (r < 0)
		return r;
	if (dev.flags & IFF_LOOPBACK)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "host device %s is the loopback device",
				dev.name);
	r = nl_link_get_info(host, NULL, dev.ifindex, &info);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up %s", dev.name);

	rb_data = (HostDeviceRollback) {
		.req = req,
		.host = host,
		.cont = cont,
		.host_netns_fd = self,
		.cont_netns_fd = netns_fd,
		.host_ifindex = dev.ifindex,
		.was_up = dev.flags & IFF_UP,
	};
	snprintf(rb_data.name, sizeof(rb_data.name), "%s", dev.name);
	snprintf(rb_data.alias, sizeof(rb_data.alias), "%s", info.alias);
	rb = &rb_data;

	/* Devices can be renamed only when down. */
	r = nl_link_set_up(host, dev.ifindex, false);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set \"%s\" down", dev.name);
	/* The original name travels with the device, for DEL. */
	r = nl_link_set_alias(host, dev.ifindex, dev.name);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set alias to \"%s\"", dev.name);
	/* ip link set DEV netns POD; ip -n POD link set DEV name IFNAME */
	r = link_move_renamed(host, self, dev.ifindex, dev.name, cont, netns_fd, req->ifname, &cidx, &step);
	if (r == -EEXIST && streq(step, "rename it"))
		return cni_fail(req, r, CNI_ERR_INTERNAL,
				"failed to move %s to the container as %s: %s already exists there", dev.name,
				req->ifname, req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to move %s to the container as %s (%s)",
				      dev.name, req->ifname, step);
	r = nl_link_get(cont, NULL, cidx, &cdev);
	if (r < 0) {
		rb->cont_ifindex = cidx;
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s in the container",
				      req->ifname);
	}
	rb->cont_ifindex = cdev.ifindex;

	res = cni_result_new(req->version);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_result_add_interface(res, req->ifname, ether_addr_format(cdev.mac, ms), req->netns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	if (c->layer3) {
		r = pod_ipam_add(req, &ipam);
		if (r < 0)
			return r;
		rb->ipam = true;
		for (size_t i = 0; i < ipam->n_ips; i++)
			if (cni_result_add_ip(res, &ipam->ips[i].address, &ipam->ips[i].gateway, 0) < 0)
				return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		for (size_t i = 0; i < ipam->n_routes; i++)
			if (cni_result_add_route(res, &ipam->routes[i]) < 0)
				return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		/* Brings it up too. DAD on: the device is on a real segment. */
		r = pod_iface_configure(cont, netns_fd, req->ifname, res, 0, true, &req->error);
		if (r < 0)
			return r;
		r = cni_dns_merge(&res->dns, &req->dns);
		if (r < 0)
			return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
	} else {
		r = nl_link_set_up(cont, cdev.ifindex, true);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set \"%s\" up", req->ifname);
	}

	TAKE_PTR(rb);
	*ret = TAKE_PTR(res);
	return 0;
}

/* Moves CNI_IFNAME back to the host under the name in its alias. Gone = 0. */
static int move_link_out(CniRequest *req) {
	_cleanup_(nl_sock_freep) NlSock *cont = NULL, *host = NULL;
	_cleanup_close_ int fd = -EBADF, self = -EBADF;
	const char *step = NULL;
	NlLinkInfo info;
	NlLink dev;
	int idx, r;

	if (isempty(req->netns))
		return 0;
	fd = netns_open(req->netns);
	/* Gone: a virtual device went with it, a physical one went back to the initial namespace. */
	if (fd == -ENOENT || fd == -EINVAL)
		return 0;
	if (fd < 0)
		return cni_fail_errno(req, fd, CNI_ERR_INTERNAL, NULL, "failed to open netns \"%s\"", req->netns);
	self = netns_open_current();
	if (self < 0)
		return cni_fail_errno(req, self, CNI_ERR_INTERNAL, NULL, "failed to open the host namespace");
	r = pod_open_cont_sock(req, fd, &cont);
	if (r < 0)
		return r;
	r = nl_sock_open(&host);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to open netlink socket");

	r = nl_link_get(cont, req->ifname, 0, &dev);
	if (r == -ENODEV)
		return 0; /* DEL again */
	if (r >= 0)
		r = nl_link_get_info(cont, NULL, dev.ifindex, &info);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find \"%s\"", req->ifname);
	if (isempty(info.alias))
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
				"%s in netns \"%s\" has no alias: its original name is unknown (not moved in by host-device?)",
				req->ifname, req->netns);

	/* Devices can be renamed only when down. */
	r = nl_link_set_up(cont, dev.ifindex, false);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set \"%s\" down", req->ifname);
	/* ip -n POD link set IFNAME netns HOST; ip link set IFNAME name ALIAS */
	r = link_move_renamed(cont, fd, dev.ifindex, req->ifname, host, self, info.alias, &idx, &step);
	if (r < 0) {
		/* Left in place, as it was, so DEL can be retried. */
		if (dev.flags & IFF_UP)
			(void) nl_link_set_up(cont, dev.ifindex, true);
		return cni_fail(req, r, CNI_ERR_INTERNAL,
				"failed to restore \"%s\" to original name \"%s\" in the host (%s): %s", req->ifname,
				info.alias, step, r == -EEXIST ? "a link of that name exists" : strerror(-r));
	}
	return 0;
}

static int host_device_del(CniRequest *req, void *userdata) {
	const HostDeviceConf *c = userdata;
	int r = 0;

	RET_GATHER(r, move_link_out(req));
	if (c->layer3)
		RET_GATHER(r, cni_ipam_exec(req, CNI_CMD_DEL, NULL));
	return r;
}

static int host_device_check(CniRequest *req, void *userdata) {
	const HostDeviceConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *cont = NULL;
	_cleanup_close_ int netns_fd = -EBADF;
	const CniInterface *ci;
	int ci_index, r;
	char ms[18];
	NlLink dev;

	r = pod_check_prev_iface(req, &ci, &ci_index);
	if (r < 0)
		return r;
	netns_fd = cni_request_open_netns(req);
	if (netns_fd < 0)
		return netns_fd;
	if (c->layer3 && (r = cni_ipam_exec(req, CNI_CMD_CHECK, NULL)) < 0)
		return r;
	r = pod_open_cont_sock(req, netns_fd, &cont);
	if (r < 0)
		return r;
	r = nl_link_get(cont, req->ifname, 0, &dev);
	if (r == -ENODEV)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "Container Interface name in prevResult: %s not found",
				req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up %s", req->ifname);
	if (!isempty(ci->mac) && strcasecmp(ci->mac, ether_addr_format(dev.mac, ms)) != 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "Interface %s Mac %s doesn't match container Mac: %s",
				req->ifname, ci->mac, ms);
	return pod_iface_check(cont, req->ifname, req->prev_result, ci_index, &req->error);
}

static int host_device_gc(CniRequest *req, void *userdata) {
	const HostDeviceConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_GC, NULL) : 0;
}

static int host_device_status(CniRequest *req, void *userdata) {
	const HostDeviceConf *c = userdata;

	return c->layer3 ? cni_ipam_exec(req, CNI_CMD_STATUS, NULL) : 0;
}

const PluginOps host_device_ops = {
	.name = "host-device",
	.about = "CNI host-device plugin (weft)",
	.conf_size = sizeof(HostDeviceConf),
	.parse = host_device_parse,
	.add = host_device_add,
	.del = host_device_del,
	.check = host_device_check,
	.gc = host_device_gc,
	.status = host_device_status,
};

int main(int argc, char *argv[]) {
	return plugin_main(&host_device_ops, argc, argv);
}
