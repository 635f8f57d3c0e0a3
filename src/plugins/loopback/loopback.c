/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loopback: brings `lo` up inside the container's namespace. Drop-in for the reference
 * plugin: CNI_IFNAME is ignored (the interface is always "lo", as the reference does), the
 * result reports lo's IPv4 and IPv6 loopback addresses, DEL is a no-op once the netns is gone.
 */
#include <net/if.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"

typedef struct LoAddrs {
	IpPrefix v4, v6;
} LoAddrs;

static int collect_addr(const NlAddr *a, void *userdata) {
	LoAddrs *l = userdata;

	if (a->prefix.addr.family == AF_INET && !ip_addr_is_set(&l->v4.addr))
		l->v4 = a->prefix;
	else if (a->prefix.addr.family == AF_INET6 && !ip_addr_is_set(&l->v6.addr))
		l->v6 = a->prefix;
	return 0;
}

static int open_lo(CniRequest *req, NlSock **ret_sock, NlLink *ret_link) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int fd = -EBADF;
	int r;

	fd = cni_request_open_netns(req);
	if (fd < 0)
		return fd;
	r = pod_open_cont_sock(req, fd, &s);
	if (r < 0)
		return r;
	r = nl_link_get(s, "lo", 0, ret_link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find lo in %s", req->netns);
	*ret_sock = TAKE_PTR(s);
	return 0;
}

static int loopback_add(CniRequest *req, void *conf, CniResult **ret) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	LoAddrs addrs = {};
	NlLink lo;
	int r;

	r = open_lo(req, &s, &lo);
	if (r < 0)
		return r;
	/* ip -n <netns> link set lo up */
	r = nl_link_set_up(s, lo.ifindex, true);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(s), "failed to set lo up in %s",
				      req->netns);
	/* The kernel assigns 127.0.0.1/8 and ::1/128 when lo goes up; report what is really
	 * there (no IPv6 when it is disabled in the namespace). */
	r = nl_addr_dump(s, AF_UNSPEC, lo.ifindex, collect_addr, &addrs);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list addresses of lo in %s",
				      req->netns);

	res = cni_result_new(req->version);
	if (!res || cni_result_add_interface(res, "lo", "00:00:00:00:00:00", req->netns) < 0 ||
	    (ip_addr_is_set(&addrs.v4.addr) && cni_result_add_ip(res, &addrs.v4, NULL, 0) < 0) ||
	    (ip_addr_is_set(&addrs.v6.addr) && cni_result_add_ip(res, &addrs.v6, NULL, 0) < 0))
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	*ret = TAKE_PTR(res);
	return 0;
}

static int loopback_del(CniRequest *req, void *conf) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	NlLink lo;
	int r;

	/* Nothing to undo when the runtime already removed the namespace (SPEC: DEL must succeed). */
	if (isempty(req->netns))
		return 0;
	r = open_lo(req, &s, &lo);
	if (r == -ENOENT || r == -ENODEV) {
		cni_error_clear(&req->error);
		return 0;
	}
	if (r < 0)
		return r;
	/* ip -n <netns> link set lo down */
	r = nl_link_set_up(s, lo.ifindex, false);
	if (r < 0 && r != -ENODEV)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to set lo down in %s", req->netns);
	return 0;
}

static int loopback_check(CniRequest *req, void *conf) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	NlLink lo;
	int r;

	r = open_lo(req, &s, &lo);
	if (r < 0)
		return r;
	if (!(lo.flags & IFF_UP))
		return cni_fail(req, -ENETDOWN, CNI_ERR_INTERNAL, "loopback interface is down in %s", req->netns);
	return 0;
}

static int loopback_noop(CniRequest *req, void *conf) {
	return 0;
}

static const PluginOps loopback_ops = {
	.name = "loopback",
	.about = "CNI loopback plugin (weft)",
	.add = loopback_add,
	.del = loopback_del,
	.check = loopback_check,
	.gc = loopback_noop,
	.status = loopback_noop,
};

int main(int argc, char *argv[]) {
	return plugin_main(&loopback_ops, argc, argv);
}
