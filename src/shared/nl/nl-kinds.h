/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Link kinds and link attributes the core (nl.h) does not need, for the L2 plugins:
 *   nl-ipvlan.c     ipvlan devices, created directly inside the pod namespace
 *   nl-vlan.c       802.1Q devices, likewise
 *   nl-link-info.c  kind-specific details of an existing link (macvlan/ipvlan mode, VLAN id),
 *                   its alias (IFLA_IFALIAS), and moving a link to another namespace (host-device)
 * Builders are exposed for test/unit/test-nl-kinds.c (build-then-parse); they never send.
 */

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "shared/nl/nl.h"

union NlMsgBuf;
struct nlmsghdr;

/* IFALIASZ of <linux/if.h>, which does not mix with <net/if.h>. */
#define NL_IFALIAS_MAX 256

/* ipvlan (kernel module "ipvlan"). */
typedef struct NlIpvlanConfig {
	const char *name;
	int parent;    /* lower device ifindex (required) */
	uint16_t mode; /* IPVLAN_MODE_L2 (0), IPVLAN_MODE_L3, IPVLAN_MODE_L3S */
	int netns_fd;  /* -1 = the socket's namespace */
	unsigned mtu;  /* 0 = parent's */
} NlIpvlanConfig;
/* ip link add NAME link PARENT [mtu MTU] [netns NS] type ipvlan mode MODE. 0 or -errno. */
int nl_ipvlan_create(NlSock *s, const NlIpvlanConfig *c);
/* "" / "l2", "l3", "l3s" (the CNI ipvlan "mode" values) → IPVLAN_MODE_*; -EINVAL otherwise. */
int nl_ipvlan_mode_from_string(const char *mode);
/* IPVLAN_MODE_* → "l2" ...; "unknown" for anything else. */
const char *nl_ipvlan_mode_to_string(int mode);
int nl_build_ipvlan(union NlMsgBuf *buf, const NlIpvlanConfig *c);

/* 802.1Q VLAN (kernel module "8021q"). */
typedef struct NlVlanConfig {
	const char *name;
	int parent;       /* lower device ifindex (required) */
	uint16_t vlan_id; /* 0..4094 */
	int netns_fd;     /* -1 = the socket's namespace */
	unsigned mtu;     /* 0 = parent's */
} NlVlanConfig;
/* ip link add NAME link PARENT [mtu MTU] [netns NS] type vlan id ID. 0 or -errno. */
int nl_vlan_create(NlSock *s, const NlVlanConfig *c);
int nl_build_vlan(union NlMsgBuf *buf, const NlVlanConfig *c);

/* macvlan mode value → the CNI "mode" string ("bridge" ...); "unknown" for anything else. */
const char *nl_macvlan_mode_to_string(uint32_t mode);

/* What NlLink does not carry. */
typedef struct NlLinkInfo {
	char kind[32];              /* IFLA_INFO_KIND, "" if none */
	char alias[NL_IFALIAS_MAX]; /* IFLA_IFALIAS, "" if none */
	bool has_mode;
	uint32_t mode; /* IFLA_MACVLAN_MODE or IFLA_IPVLAN_MODE (when has_mode) */
	bool has_vlan_id;
	uint16_t vlan_id; /* IFLA_VLAN_ID (when has_vlan_id) */
} NlLinkInfo;
/* By name (ifindex 0) or index. 0, -ENODEV when absent, or -errno. */
int nl_link_get_info(NlSock *s, const char *name, int ifindex, NlLinkInfo *ret);
/* One RTM_NEWLINK message → NlLinkInfo (unknown attributes skipped). 0 or -EBADMSG. */
int nl_parse_link_info(const struct nlmsghdr *nlh, NlLinkInfo *ret);

/* ip link set dev IFINDEX alias ALIAS ("" removes it). 0 or -errno. */
int nl_link_set_alias(NlSock *s, int ifindex, const char *alias);
/* ip link set dev IFINDEX netns NETNS_FD: the link keeps its name (-EEXIST when that name is
 * taken in the target; rename it to a free name first) and may get another ifindex there.
 * 0 or -errno. */
int nl_link_move(NlSock *s, int ifindex, int netns_fd);
int nl_build_link_alias(union NlMsgBuf *buf, int ifindex, const char *alias);
int nl_build_link_move(union NlMsgBuf *buf, int ifindex, int netns_fd);
