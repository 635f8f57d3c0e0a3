/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pod side of an attachment: put the addresses and routes of a CNI result on the pod's
 * interface, and verify them again for CHECK. Works through a netlink socket opened inside the
 * pod namespace; sysctls are written inside it too. The process never stays in the pod netns.
 */

#include <stdbool.h>

#include "shared/cni/cni-types.h"
#include "shared/nl/nl.h"

/*
 * Configures `ifname` in the pod namespace (`cont` socket and `netns_fd` both refer to it) from
 * the result `r`: every ips[] entry whose interface index is `iface_index` is added to it, then
 * every route of r (a route without a gateway uses the first gateway of its family, else it is
 * a device route). Like the reference: disable_ipv6=0 on lo and ifname when there is an IPv6
 * address; arp_notify=1; enable_dad=false → accept_dad=0 and IFA_F_NODAD on IPv6 addresses;
 * enable_dad=true → accept_dad=1/enhanced_dad=1 and we wait (polling, bounded at 10 s) until the
 * addresses leave the tentative state (DAD failure is an error). The interface is brought up.
 * Returns 0 or -errno with *err naming the address/route that failed.
 * On failure the caller deletes the interface (that undoes everything).
 */
int pod_iface_configure(NlSock *cont, int netns_fd, const char *ifname, const CniResult *r, int iface_index,
			bool enable_dad, CniError *err);
/* The same, for a pod interface the caller has just looked up or created (link->ifindex and
 * link->name are used): one netlink round trip less. */
int pod_iface_configure_link(NlSock *cont, int netns_fd, const NlLink *link, const CniResult *r, int iface_index,
			     bool enable_dad, CniError *err);

/*
 * CHECK: verifies that `ifname` exists in the pod, carries every address of r's ips[] entries
 * for `iface_index` or without an index (with the same prefix length) and that every route of r is in its table
 * (destination, and gateway when the result names one). Returns 0, or -ENODEV / -ENOENT with
 * *err naming the first missing interface, address or route.
 */
int pod_iface_check(NlSock *cont, const char *ifname, const CniResult *r, int iface_index, CniError *err);
