/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The attachment engine of the plugins whose pod interface is a sub-device of a host link
 * (macvlan, ipvlan, vlan): the device is created on the master directly inside the pod's
 * namespace under a temporary name, renamed to CNI_IFNAME there (as the reference does), then
 * addressed from IPAM (or, for chained ipvlan, from prevResult) through pod_iface_configure().
 * A failed ADD deletes the device and releases the address. Result: one interface, the pod's.
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/cni/cni-plugin.h"
#include "shared/nl/nl-kinds.h"
#include "shared/nl/nl.h"

typedef struct PodSublink PodSublink;
struct PodSublink {
	const char *kind;         /* "macvlan", "ipvlan", "vlan": IFLA_INFO_KIND and messages */
	const char *master;       /* lower device, in the namespace the plugin runs in; NULL or "":
				   * the device of the default route (pod_sublink_default_master()) */
	unsigned mtu;             /* 0 = the master's */
	bool mtu_max_master;      /* an "mtu" above the master's is a config error (macvlan) */
	const uint8_t *mac;       /* NULL = the kernel's choice */
	bool proxy_arp;           /* net.ipv4.conf.<dev>.proxy_arp=1 in the pod (macvlan) */
	bool layer3;              /* run IPAM ("ipam" has a type) */
	const CniResult *chained; /* no IPAM: take the IPs/routes of this prevResult (ipvlan) */
	uint32_t param;           /* for create/check: macvlan or ipvlan mode, VLAN id */
	/* ip link add NAME link PARENT netns NETNS_FD type KIND ...: 0 or the kernel's -errno. */
	int (*create)(NlSock *host, const PodSublink *c, const char *name, int parent, int netns_fd);
	/* CHECK of the kind's own settings (mode, VLAN id); 0 or -errno with req->error set. */
	int (*check)(CniRequest *req, const PodSublink *c, const NlLinkInfo *li);
};

/*
 * The master the reference uses when "master" is not set: the device of the first default route
 * of the main table (IPv4 first). 0 with ret filled, or -ENOENT with req->error set
 * ("no default route interface found").
 */
int pod_sublink_default_master(CniRequest *req, NlSock *host, char ret[IFNAMSIZ]);

/* ADD. 0 with *ret the result, or -errno with req->error set and nothing left behind. */
int pod_sublink_add(CniRequest *req, const PodSublink *c, CniResult **ret);
/* DEL: IPAM DEL when layer3, then the device in the pod (netns or device gone = success). */
int pod_sublink_del(CniRequest *req, bool layer3);
/* CHECK: prevResult's container interface exists in the pod, has the kind, kind settings
 * (c->check), MAC, addresses and routes of prevResult; the master exists; IPAM CHECK. */
int pod_sublink_check(CniRequest *req, const PodSublink *c);
