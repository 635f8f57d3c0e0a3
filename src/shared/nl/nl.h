/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * rtnetlink over libmnl. One NlSock per network namespace; every request waits for its ACK
 * and returns 0 or -errno, keeping the kernel's extended-ACK message (nl_sock_extack()).
 * One file per object: nl-socket.c, nl-link.c, nl-addr.c, nl-route.c, nl-neigh.c (neighbours and
 * bridge FDB), and one per link kind: nl-veth.c, nl-bridge.c, nl-vxlan.c, nl-macvlan.c ...
 */

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/ip/ip-addr.h"

/* Our route protocol number (rtm_protocol), so the reconciler only touches what is ours.
 * Registered names live in /etc/iproute2/rt_protos; 0xfc is unassigned there. */
#define WEFT_RTPROT 0xfc

typedef struct NlSock NlSock;

/* Opens NETLINK_ROUTE in the current namespace (EXT_ACK, CAP_ACK, CLOEXEC). */
int nl_sock_open(NlSock **ret);
/* Opens the socket inside the namespace `netns_fd` (switches this thread there and back). */
int nl_sock_open_netns(int netns_fd, NlSock **ret);
NlSock *nl_sock_free(NlSock *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(NlSock *, nl_sock_free);
/* Kernel extended-ACK text of the last failed request, or "" */
const char *nl_sock_extack(const NlSock *s);

/* Links */
typedef struct NlLink {
	int ifindex;
	char name[IFNAMSIZ];
	char kind[32]; /* IFLA_INFO_KIND ("veth", "bridge", "vxlan", ...), "" if none */
	uint8_t mac[6];
	bool has_mac;
	unsigned mtu;
	unsigned flags;   /* IFF_* */
	int master;       /* ifindex of master (bridge), 0 = none */
	int link;         /* IFLA_LINK (veth peer index / lower device), 0 = none */
	int link_netnsid; /* IFLA_LINK_NETNSID, -1 = none */
	uint8_t operstate;
	bool promisc;
	/* bridge kind details (when kind == "bridge") */
	bool br_vlan_filtering;
	/* vxlan kind details */
	uint32_t vxlan_id;
	uint16_t vxlan_port;
	IpAddr vxlan_local;
	int vxlan_link;
} NlLink;

/* By name (ifindex 0) or by index (name NULL). -ENODEV when absent. */
int nl_link_get(NlSock *s, const char *name, int ifindex, NlLink *ret);
/* Calls cb for every link; cb returning < 0 stops the dump and is returned. */
int nl_link_dump(NlSock *s, int (*cb)(const NlLink *l, void *userdata), void *userdata);
int nl_link_set_up(NlSock *s, int ifindex, bool up);
int nl_link_set_mtu(NlSock *s, int ifindex, unsigned mtu);
int nl_link_set_mac(NlSock *s, int ifindex, const uint8_t mac[6]);
int nl_link_set_master(NlSock *s, int ifindex, int master_ifindex); /* 0 = nomaster */
int nl_link_set_promisc(NlSock *s, int ifindex, bool on);
int nl_link_set_allmulti(NlSock *s, int ifindex, bool on);
int nl_link_set_name(NlSock *s, int ifindex, const char *name);
int nl_link_set_netns(NlSock *s, int ifindex, int netns_fd);
/* -ENODEV is returned as is; DEL callers treat it as success. */
int nl_link_del(NlSock *s, int ifindex);
int nl_link_del_by_name(NlSock *s, const char *name);

/* veth: `name` stays here; `peer` is created directly in `peer_netns_fd` (-1 = here).
 * mtu 0 = default; peer_mac NULL = kernel random. */
int nl_veth_create(NlSock *s, const char *name, const char *peer, int peer_netns_fd, unsigned mtu,
		   const uint8_t *peer_mac);

/* bridge */
typedef struct NlBridgeConfig {
	const char *name;
	unsigned mtu; /* 0 = default */
	bool vlan_filtering;
	bool has_vlan_default_pvid;
	uint16_t vlan_default_pvid; /* 0 = none */
	const uint8_t *mac;         /* NULL = kernel default */
} NlBridgeConfig;
/* Creates, or returns 0 if a bridge of that name already exists (-EEXIST if a non-bridge does). */
int nl_bridge_create(NlSock *s, const NlBridgeConfig *c);
/* Per-port flags (IFLA_BRPORT_*) on a bridge port: hairpin, isolated, learning... */
int nl_bridge_port_set_hairpin(NlSock *s, int ifindex, bool on);
int nl_bridge_port_set_isolated(NlSock *s, int ifindex, bool on);
/* Bridge VLAN membership (RTM_SETLINK AF_BRIDGE + IFLA_AF_SPEC/IFLA_BRIDGE_VLAN_INFO).
 * self=true programs the bridge device itself. */
int nl_bridge_vlan_add(NlSock *s, int ifindex, uint16_t vid, uint16_t vid_end, bool pvid, bool untagged, bool self);
int nl_bridge_vlan_del(NlSock *s, int ifindex, uint16_t vid, uint16_t vid_end, bool self);

/* vxlan */
typedef struct NlVxlanConfig {
	const char *name;
	uint32_t vni;
	uint16_t port; /* host order; 0 = 4789 */
	IpAddr local;  /* AF_UNSPEC = none */
	int link;      /* underlay ifindex, 0 = none */
	unsigned mtu;
	bool learning; /* false: nolearning (we program FDB ourselves) */
	bool gbp;
	const uint8_t *mac; /* VTEP MAC; NULL = random (persist it yourself) */
} NlVxlanConfig;
int nl_vxlan_create(NlSock *s, const NlVxlanConfig *c);

/* macvlan/ipvlan/vlan creation lives in their kind files; not needed by the core. */

/* macvlan (nl-macvlan.c): created on `parent` (an ifindex in the socket's namespace) directly inside
 * `netns_fd` (-1 = here), like `ip link add NAME link PARENT netns NS type macvlan mode MODE`. */
typedef struct NlMacvlanConfig {
	const char *name;
	int parent;         /* lower device ifindex (required) */
	uint32_t mode;      /* MACVLAN_MODE_* (linux/if_link.h); 0 = bridge */
	int netns_fd;       /* -1 = the socket's namespace (set it explicitly: 0 is a valid fd) */
	unsigned mtu;       /* 0 = parent's */
	const uint8_t *mac; /* NULL = random */
} NlMacvlanConfig;
int nl_macvlan_create(NlSock *s, const NlMacvlanConfig *c);
/* "bridge", "private", "vepa", "passthru" (the CNI macvlan "mode" values) → MACVLAN_MODE_*; -EINVAL. */
int nl_macvlan_mode_from_string(const char *mode);

/* Addresses */
typedef struct NlAddr {
	int ifindex;
	IpPrefix prefix;
	uint8_t scope;
	uint32_t flags; /* IFA_F_* */
} NlAddr;
/* flags: IFA_F_NODAD etc. Adding an existing address returns -EEXIST. */
int nl_addr_add(NlSock *s, int ifindex, const IpPrefix *p, uint32_t flags);
int nl_addr_del(NlSock *s, int ifindex, const IpPrefix *p);
/* family AF_UNSPEC = both; ifindex 0 = all links. */
int nl_addr_dump(NlSock *s, int family, int ifindex, int (*cb)(const NlAddr *a, void *userdata), void *userdata);

/* Routes */
typedef struct NlRoute {
	IpPrefix dst;         /* family from dst.addr.family; 0.0.0.0/0 for default */
	IpAddr gw;            /* AF_UNSPEC = none */
	IpAddr prefsrc;       /* RTA_PREFSRC ("src" in ip route); AF_UNSPEC = none */
	int oif;              /* 0 = none */
	uint32_t table;       /* 0 = main */
	uint32_t priority;    /* metric */
	uint32_t mtu, advmss; /* RTAX_*; 0 = none */
	uint8_t scope;        /* RT_SCOPE_*; add: 0 means "universe", use nl_route_init() defaults */
	uint8_t protocol;     /* RTPROT_*; 0 = RTPROT_BOOT on add */
	uint8_t type;         /* RTN_*; 0 = RTN_UNICAST */
	bool onlink;          /* RTNH_F_ONLINK */
} NlRoute;
#define NL_ROUTE_REPLACE 0x1
int nl_route_add(NlSock *s, const NlRoute *r, int flags);
int nl_route_del(NlSock *s, const NlRoute *r);
/* table 0 = main; family AF_UNSPEC = both. */
int nl_route_dump(NlSock *s, int family, uint32_t table, int (*cb)(const NlRoute *r, void *userdata), void *userdata);
/*
 * Added API (engineer nl):
 *
 * nl_route_init(): zeroes *r (dst/gw AF_UNSPEC, main table, protocol boot, unicast, scope auto).
 *
 * Scope rule on add (scope == 0, i.e. "not set"; RT_SCOPE_UNIVERSE is also 0 so it cannot be asked
 * for explicitly, which is what `ip route add` does too): RTN_LOCAL → RT_SCOPE_HOST; unicast with
 * no gateway → RT_SCOPE_LINK (a device route, "ip route add 10.0.0.0/24 dev eth0"); unicast with a
 * gateway (onlink or not) and every other type → RT_SCOPE_UNIVERSE. Any non-zero scope is sent as is.
 * On delete, scope 0 matches any scope (RT_SCOPE_NOWHERE wildcard, as iproute2 does).
 *
 * Dumps report the table as given on add: the main table (254) as 0, others by number; the scope,
 * protocol, type, RTNH_F_ONLINK, RTA_PRIORITY and RTAX_MTU/ADVMSS as the kernel reports them.
 * Only AF_INET/AF_INET6 routes are reported; IPv6 cache clones are skipped.
 */
void nl_route_init(NlRoute *r);
/* nl_route_dump() table filter meaning "every table". */
#define NL_ROUTE_TABLE_ALL UINT32_MAX
/* `ip route get DST`: the route the kernel would use for dst (oif, gw if any, table, type...).
 * ret->dst is dst/32 or dst/128. A directly connected destination has no gateway.
 * -ENETUNREACH / -EHOSTUNREACH etc. when there is no route. */
int nl_route_get(NlSock *s, const IpAddr *dst, NlRoute *ret);

/* Neighbours (ARP/NDP) and bridge/vxlan FDB */
typedef struct NlNeigh {
	int ifindex;
	int family; /* AF_INET/AF_INET6 for neighbours, AF_BRIDGE for FDB */
	IpAddr dst; /* neighbour IP, or the remote VTEP for vxlan FDB */
	uint8_t mac[6];
	uint16_t state; /* NUD_* */
	uint8_t flags;  /* NTF_* */
} NlNeigh;
int nl_neigh_add(NlSock *s, int ifindex, const IpAddr *ip, const uint8_t mac[6], uint16_t state, bool replace);
int nl_neigh_del(NlSock *s, int ifindex, const IpAddr *ip);
/* FDB: bridge fdb append/replace <mac> dev <ifindex> dst <remote> self permanent */
int nl_fdb_add(NlSock *s, int ifindex, const uint8_t mac[6], const IpAddr *dst, bool replace);
int nl_fdb_del(NlSock *s, int ifindex, const uint8_t mac[6], const IpAddr *dst);
/* family AF_BRIDGE dumps FDB; ifindex 0 = all. */
int nl_neigh_dump(NlSock *s, int family, int ifindex, int (*cb)(const NlNeigh *n, void *userdata), void *userdata);

/*
 * rtnetlink multicast listener (for weftd's epoll loop). Added API (engineer nl).
 *
 * nl_monitor_open(): a NETLINK_ROUTE socket in the current namespace, non-blocking, joined to the
 * given RTNLGRP_* groups (e.g. RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_NEIGH,
 * RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR). Use nl_sock_fd() for epoll (EPOLLIN).
 * Do not send requests on a monitor socket; use a separate NlSock for that.
 *
 * nl_monitor_process(): reads everything pending (never blocks) and calls the matching callback
 * with the parsed object and the message type (RTM_NEWLINK/RTM_DELLINK, RTM_NEWROUTE/RTM_DELROUTE,
 * RTM_NEWNEIGH/RTM_DELNEIGH, RTM_NEWADDR/RTM_DELADDR). NULL callbacks are skipped, as are messages
 * that fail to parse or have a family we don't report (link events are AF_UNSPEC only: bridge-port
 * AF_BRIDGE notifications are skipped; neighbour events include FDB entries, family AF_BRIDGE).
 * Returns the number of messages delivered, a callback's negative return (stops processing; the
 * rest of that datagram is dropped, so resync), or -ENOBUFS when the kernel dropped events because
 * the socket overran: the caller must then do a full resync (the socket remains usable).
 */
typedef struct NlMonitorCallbacks {
	int (*link)(uint16_t type, const NlLink *l, void *userdata);
	int (*route)(uint16_t type, const NlRoute *r, void *userdata);
	int (*neigh)(uint16_t type, const NlNeigh *n, void *userdata);
	int (*addr)(uint16_t type, const NlAddr *a, void *userdata);
} NlMonitorCallbacks;
int nl_monitor_open(const unsigned *groups, size_t n_groups, NlSock **ret);
int nl_monitor_process(NlSock *s, const NlMonitorCallbacks *cb, void *userdata);
/* The socket's file descriptor (owned by the NlSock), for poll/epoll. */
int nl_sock_fd(const NlSock *s);
