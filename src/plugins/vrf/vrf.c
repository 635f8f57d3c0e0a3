/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `vrf` chained plugin (containernetworking/plugins 1.1.1 plugins/meta/vrf). Keys:
 * vrfname (required), table (optional; default: the lowest table no VRF in the pod uses,
 * from 1 up, as the reference's findFreeRoutingTableID).
 *   ADD    creates the VRF in the pod namespace if missing (and sets it up), enslaves
 *          CNI_IFNAME, restores the IPv6 addresses enslaving flushed (the link is cycled) and
 *          re-adds the interface's main-table routes into the VRF's table; prints prevResult.
 *   DEL    un-enslaves CNI_IFNAME and deletes the VRF once no interface is left in it.
 *   CHECK  the VRF exists and CNI_IFNAME is one of its ports.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <net/if.h>
#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl-vrf.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"

typedef struct VrfConf {
	char name[IFNAMSIZ];
	uint32_t table; /* 0 = pick a free one */
} VrfConf;

static int vrf_parse(CniRequest *req, void *userdata) {
	VrfConf *c = userdata;
	json_t *n = cni_json_get(req->config, "vrfname"), *t = cni_json_get(req->config, "table");
	const char *why;

	if (!json_is_string(n) || isempty(json_string_value(n)))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"configuration is expected to have a valid vrf name");
	why = cni_ifname_invalid_reason(json_string_value(n));
	if (why)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"vrfname\" \"%s\": %s",
				json_string_value(n), why);
	snprintf(c->name, sizeof(c->name), "%s", json_string_value(n));
	if (t && !json_is_null(t)) {
		if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > UINT32_MAX)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"invalid \"table\": expected 0..4294967295");
		c->table = (uint32_t) json_integer_value(t);
	}
	return 0;
}

typedef struct TableSet {
	uint32_t *t;
	size_t n;
} TableSet;

static int collect_table(const NlVrf *v, void *userdata) {
	TableSet *s = userdata;
	uint32_t *n;

	if (!v->has_table)
		return 0;
	n = reallocarray(s->t, s->n + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->t = n;
	s->t[s->n++] = v->table;
	return 0;
}

/* The reference's findFreeRoutingTableID: the lowest id from 1 that no VRF uses. */
static int free_table(NlSock *s, uint32_t *ret) {
	TableSet set = {};
	int r = nl_vrf_dump(s, collect_table, &set);

	if (r >= 0) {
		for (uint32_t id = 1; id != 0; id++) {
			bool used = false;
			for (size_t i = 0; i < set.n && !used; i++)
				used = set.t[i] == id;
			if (!used) {
				*ret = id;
				break;
			}
		}
	}
	free(set.t);
	return r;
}

typedef struct Collect {
	int ifindex;
	NlAddr *addrs;
	size_t n_addrs;
	NlRoute *routes;
	size_t n_routes;
	int n_ports;
	int master;
} Collect;

static int collect_addr(const NlAddr *a, void *userdata) {
	Collect *c = userdata;
	NlAddr *n;

	if (a->ifindex != c->ifindex)
		return 0;
	n = reallocarray(c->addrs, c->n_addrs + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->addrs = n;
	c->addrs[c->n_addrs++] = *a;
	return 0;
}

static int collect_route(const NlRoute *rt, void *userdata) {
	Collect *c = userdata;
	NlRoute *n;

	/* Connected (proto kernel) and local routes follow the device into the VRF by
	 * themselves; the ones a plugin added (gateway, CNI result routes) do not. */
	if (rt->oif != c->ifindex || rt->protocol == RTPROT_KERNEL || (rt->type != 0 && rt->type != RTN_UNICAST))
		return 0;
	n = reallocarray(c->routes, c->n_routes + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->routes = n;
	c->routes[c->n_routes++] = *rt;
	return 0;
}

static int count_ports(const NlLink *l, void *userdata) {
	Collect *c = userdata;

	if (l->master == c->master)
		c->n_ports++;
	return 0;
}

static bool addr_in(const NlAddr *a, const NlAddr *list, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (ip_prefix_equal(&a->prefix, &list[i].prefix))
			return true;
	return false;
}

static int vrf_add(CniRequest *req, void *userdata, CniResult **ret) {
	VrfConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *nl = NULL;
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_close_ int netns = -EBADF;
	Collect before = {}, after = {};
	char as[IP_PREFIX_STRLEN];
	bool created = false;
	NlLink link;
	NlVrf vrf;
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "missing prevResult from earlier plugin");
	netns = cni_request_open_netns(req);
	if (netns < 0)
		return netns;
	r = pod_open_cont_sock(req, netns, &nl);
	if (r < 0)
		return r;

	r = nl_vrf_get(nl, c->name, &vrf);
	if (r == -EMEDIUMTYPE)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "\"vrfname\" %s exists and is not a VRF", c->name);
	if (r == -ENODEV) {
		uint32_t table = c->table;
		if (table == 0 && (r = free_table(nl, &table)) < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find a free routing table");
		r = nl_vrf_create(nl, c->name, table);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(nl),
					      "could not add VRF %s (table %u)", c->name, table);
		created = true;
		r = nl_vrf_get(nl, c->name, &vrf);
		if (r >= 0)
			r = nl_link_set_up(nl, vrf.ifindex, true);
		if (r < 0) {
			cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "could not set VRF %s up", c->name);
			goto undo;
		}
	} else if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up VRF %s", c->name);
	else if (c->table != 0 && vrf.has_table && vrf.table != c->table)
		return cni_fail(req, -EEXIST, CNI_ERR_INVALID_NETCONF,
				"VRF %s already exists with table %u, \"table\" asks for %u", c->name, vrf.table,
				c->table);

	r = nl_link_get(nl, req->ifname, 0, &link);
	if (r < 0) {
		cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed getting interface %s", req->ifname);
		goto undo;
	}
	if (link.master == vrf.ifindex)
		goto done; /* already a port: ADD retried */

	before.ifindex = after.ifindex = link.ifindex;
	r = nl_addr_dump(nl, AF_INET6, link.ifindex, collect_addr, &before);
	if (r >= 0)
		r = nl_route_dump(nl, AF_UNSPEC, 0, collect_route, &before);
	if (r < 0) {
		cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to read %s's addresses and routes", req->ifname);
		goto undo;
	}
	r = nl_link_set_master(nl, link.ifindex, vrf.ifindex);
	if (r < 0) {
		cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "could not add %s to VRF %s", req->ifname, c->name);
		goto undo;
	}

	/* Enslaving cycles the link, which drops IPv6 addresses unless keep_addr_on_down is set
	 * (the reference restores them the same way). Link-local ones come back by themselves. */
	r = nl_addr_dump(nl, AF_INET6, link.ifindex, collect_addr, &after);
	for (size_t i = 0; r >= 0 && i < before.n_addrs; i++) {
		const NlAddr *a = &before.addrs[i];
		if (a->scope == RT_SCOPE_LINK || addr_in(a, after.addrs, after.n_addrs))
			continue;
		r = nl_addr_add(nl, link.ifindex, &a->prefix, IFA_F_NODAD);
		if (r == -EEXIST)
			r = 0;
		if (r < 0)
			cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "could not restore address %s on %s",
				       ip_prefix_to_string(&a->prefix, as), req->ifname);
	}
	for (size_t i = 0; r >= 0 && i < before.n_routes; i++) {
		NlRoute rt = before.routes[i];
		rt.table = vrf.table;
		r = nl_route_add(nl, &rt, NL_ROUTE_REPLACE);
		if (r < 0)
			cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(nl),
				       "could not add route %s to VRF table %u", ip_prefix_to_string(&rt.dst, as),
				       vrf.table);
	}
	if (r < 0) {
		(void) nl_link_set_master(nl, link.ifindex, 0);
		goto undo;
	}

done:
	free(before.addrs);
	free(before.routes);
	free(after.addrs);
	res = cni_result_copy(req->prev_result);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	res->version = req->version;
	*ret = TAKE_PTR(res);
	return 0;

undo:
	free(before.addrs);
	free(before.routes);
	free(after.addrs);
	if (created && nl_vrf_get(nl, c->name, &vrf) >= 0)
		(void) nl_link_del(nl, vrf.ifindex);
	return r < 0 ? r : -EIO;
}

static int vrf_del(CniRequest *req, void *userdata) {
	VrfConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *nl = NULL;
	_cleanup_close_ int netns = -EBADF;
	Collect ports = {};
	NlLink link;
	NlVrf vrf;
	int r, k;

	/* DEL without a namespace (the pod is gone): nothing left to undo. */
	if (isempty(req->netns))
		return 0;
	netns = netns_open(req->netns);
	if (netns == -ENOENT)
		return 0;
	if (netns < 0)
		return cni_fail_errno(req, netns, CNI_ERR_INVALID_ENV, NULL, "failed to open netns \"%s\"", req->netns);
	r = pod_open_cont_sock(req, netns, &nl);
	if (r < 0)
		return r;
	r = nl_vrf_get(nl, c->name, &vrf);
	if (r == -ENODEV || r == -EMEDIUMTYPE)
		return 0;
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to look up VRF %s", c->name);

	r = 0;
	k = nl_link_get(nl, req->ifname, 0, &link);
	if (k >= 0 && link.master == vrf.ifindex) {
		k = nl_link_set_master(nl, link.ifindex, 0);
		if (k < 0 && k != -ENODEV)
			RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to remove %s from VRF %s",
						     req->ifname, c->name));
	}
	ports.master = vrf.ifindex;
	k = nl_link_dump(nl, count_ports, &ports);
	if (k < 0)
		return RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to list VRF %s ports",
						    c->name));
	if (ports.n_ports == 0) {
		k = nl_link_del(nl, vrf.ifindex);
		if (k < 0 && k != -ENODEV)
			RET_GATHER(r,
				   cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to delete VRF %s", c->name));
	}
	return r;
}

static int vrf_check(CniRequest *req, void *userdata) {
	VrfConf *c = userdata;
	_cleanup_(nl_sock_freep) NlSock *nl = NULL;
	_cleanup_close_ int netns = -EBADF;
	NlLink link;
	NlVrf vrf;
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "missing prevResult from earlier plugin");
	netns = cni_request_open_netns(req);
	if (netns < 0)
		return netns;
	r = pod_open_cont_sock(req, netns, &nl);
	if (r < 0)
		return r;
	r = nl_vrf_get(nl, c->name, &vrf);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find VRF %s", c->name);
	if (c->table != 0 && vrf.table != c->table)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "VRF %s has table %u, expected %u", c->name, vrf.table,
				c->table);
	r = nl_link_get(nl, req->ifname, 0, &link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed getting interface %s", req->ifname);
	if (link.master != vrf.ifindex)
		return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "failed to find %s associated to vrf %s", req->ifname,
				c->name);
	return 0;
}

static const PluginOps vrf_ops = {
	.name = "vrf",
	.about = "CNI vrf plugin (weft)",
	.conf_size = sizeof(VrfConf),
	.parse = vrf_parse,
	.add = vrf_add,
	.del = vrf_del,
	.check = vrf_check,
};

int main(int argc, char *argv[]) {
	return plugin_main(&vrf_ops, argc, argv);
}
