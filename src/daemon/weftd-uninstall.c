/* SPDX-License-Identifier: Apache-2.0 */
/* `weftd uninstall`: removes the node-* and np-* nftables objects, the VTEP, every route of ours, the
 * conflist and the lease file. Best effort: keeps going and returns the first error. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/cni-conf.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/service/service-agent.h"
#include "daemon/weftd.h"

typedef struct RouteList {
	NlRoute *r;
	size_t n, alloc;
} RouteList;

static int collect_ours(const NlRoute *rt, void *userdata) {
	RouteList *l = userdata;

	if (rt->protocol != WEFT_RTPROT)
		return 0;
	if (l->n == l->alloc) {
		size_t na = l->alloc ? l->alloc * 2 : 64;
		NlRoute *p = reallocarray(l->r, na, sizeof(NlRoute));
		if (!p)
			return -ENOMEM;
		l->r = p;
		l->alloc = na;
	}
	l->r[l->n++] = *rt;
	return 0;
}

int manager_uninstall(Manager *m) {
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ NlRoute *routes = NULL;
	RouteList rl = {};
	size_t n_policy = 0;
	int r, ret = 0;

	manager_lease_path_init(m);
	r = nl_sock_open(&m->nl);
	if (r < 0)
		return log_error_errno(r, "Failed to open rtnetlink: %m");
	r = nft_ctx_open(&m->nft);
	if (r < 0)
		return log_error_errno(r, "Failed to open nftables context: %m");

	r = masquerade_uninstall(m->nft, &err);
	if (r < 0)
		RET_GATHER(ret,
			   log_error_errno(r, "Failed to remove nftables chains: %m%s%s", err ? ": " : "", err ?: ""));
	else
		log_info("Removed nftables chains node-*");

	err = mfree(err);
	r = policy_uninstall(m->nft, &n_policy, &err);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove the np-* policy objects: %m%s%s", err ? ": " : "",
						err ?: ""));
	else
		log_info("Removed %zu nftables policy objects np-*", n_policy);

	err = mfree(err);
	r = service_uninstall(m->nft, &n_policy, &err);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove the svc-* Service objects: %m%s%s",
						err ? ": " : "", err ?: ""));
	else
		log_info("Removed %zu nftables Service objects svc-*", n_policy);

	r = backend_uninstall_all(m->nl);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove the VTEP: %m"));

	r = nl_route_dump(m->nl, AF_UNSPEC, NL_ROUTE_TABLE_ALL, collect_ours, &rl);
	routes = rl.r;
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to list routes: %m"));
	for (size_t i = 0; i < rl.n; i++) {
		r = nl_route_del(m->nl, &routes[i]);
		if (r < 0 && r != -ESRCH && r != -ENOENT)
			RET_GATHER(ret, log_error_errno(r, "Failed to delete route: %m"));
	}
	log_info("Removed %zu weft routes", rl.n);

	r = cni_conf_remove(m->args.cni_conf_dir);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove the CNI config: %m"));
	if (unlink(m->lease_path) < 0 && errno != ENOENT)
		RET_GATHER(ret, log_error_errno(errno, "Failed to remove %s: %m", m->lease_path));
	log_info("Removed %s/%s and %s", m->args.cni_conf_dir, CNI_CONF_FILE_NAME, m->lease_path);
	return ret;
}
