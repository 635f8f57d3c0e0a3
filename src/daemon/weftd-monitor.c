/* SPDX-License-Identifier: Apache-2.0 */
/* The rtnetlink monitor: something deleted or changed our routes, neighbours, FDB entries, the
 * VTEP or the underlay, or the node's addresses changed; all of it schedules a reconcile pass. */
#include <errno.h>
#include <sys/epoll.h>

#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/weftd.h"

static int mon_route(uint16_t type, const NlRoute *r, void *userdata) {
	Manager *m = userdata;

	if (type == RTM_DELROUTE && r->protocol == WEFT_RTPROT) {
		log_debug("Route of ours deleted: reconciling");
		manager_schedule_reconcile(m);
	}
	return 0;
}

static int mon_neigh(uint16_t type, const NlNeigh *n, void *userdata) {
	Manager *m = userdata;
	int ifindex = backend_neigh_ifindex(&m->backend);

	if (type == RTM_DELNEIGH && ifindex > 0 && n->ifindex == ifindex) {
		log_debug("%s of ours deleted: reconciling", n->family == AF_BRIDGE ? "FDB entry" : "Neighbour");
		manager_schedule_reconcile(m);
	}
	return 0;
}

static int mon_link(uint16_t type, const NlLink *l, void *userdata) {
	Manager *m = userdata;
	int ifindex = backend_neigh_ifindex(&m->backend);

	if ((type == RTM_DELLINK && ifindex > 0 && l->ifindex == ifindex) ||
	    (l->ifindex == m->backend.underlay_ifindex && l->mtu != m->backend.underlay_mtu)) {
		log_info("Link %s changed or removed: reconciling", l->name);
		manager_schedule_reconcile(m);
	}
	return 0;
}

static int mon_addr(uint16_t type, const NlAddr *a, void *userdata) {
	Manager *m = userdata;

	/* Any address of the node: the underlay's define which nodes are directly connected, every
	 * link's which subnets a remote lease may not cover (and which public IPs are ours); the VTEP
	 * address must stay. */
	(void) type;
	(void) a;
	manager_schedule_reconcile(m);
	return 0;
}

static int on_monitor(EventSource *s, int fd, uint32_t revents, void *userdata) {
	static const NlMonitorCallbacks cbs = {
		.link = mon_link,
		.route = mon_route,
		.neigh = mon_neigh,
		.addr = mon_addr,
	};
	Manager *m = userdata;
	int r;

	r = nl_monitor_process(m->monitor, &cbs, m);
	if (r == -ENOBUFS) {
		log_warning("Netlink monitor overran: full resync");
		manager_schedule_reconcile(m);
	} else if (r < 0)
		log_warning_errno(r, "Netlink monitor: %m");
	return 0;
}

int manager_monitor_open(Manager *m) {
	static const unsigned groups[] = {
		RTNLGRP_LINK,  RTNLGRP_IPV4_ROUTE,  RTNLGRP_IPV6_ROUTE,
		RTNLGRP_NEIGH, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
	};
	int r;

	r = nl_monitor_open(groups, ELEMENTSOF(groups), &m->monitor);
	if (r < 0)
		return log_error_errno(r, "Failed to open the rtnetlink monitor: %m");
	r = event_loop_add_io(m->loop, nl_sock_fd(m->monitor), EPOLLIN, on_monitor, m, &m->monitor_io);
	if (r < 0)
		return log_error_errno(r, "Failed to watch rtnetlink: %m");
	return 0;
}
