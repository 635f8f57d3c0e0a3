/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * VRF devices (kernel module "vrf"): creation with a routing table, reading a VRF's table back,
 * listing the VRFs of a namespace. Enslaving uses nl_link_set_master() of nl.h. Builders and the
 * parser are exposed for test/unit/test-nl-vrf.c (build-then-parse); they never send.
 */

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "shared/nl/nl.h"

union NlMsgBuf;
struct nlmsghdr;

typedef struct NlVrf {
	int ifindex;
	char name[IFNAMSIZ];
	bool is_vrf; /* IFLA_INFO_KIND == "vrf" */
	bool has_table;
	uint32_t table; /* IFLA_VRF_TABLE */
	unsigned flags; /* IFF_* */
} NlVrf;

/* ip link add NAME type vrf table TABLE (table > 0). 0 or -errno (-EEXIST if NAME exists). */
int nl_vrf_create(NlSock *s, const char *name, uint32_t table);
int nl_build_vrf(union NlMsgBuf *buf, const char *name, uint32_t table);

/* One RTM_NEWLINK message → NlVrf (non-VRF links come back with is_vrf false). 0 or -EBADMSG. */
int nl_parse_vrf(const struct nlmsghdr *nlh, NlVrf *ret);

/* By name. 0, -ENODEV when absent, -EMEDIUMTYPE when NAME exists but is not a VRF. */
int nl_vrf_get(NlSock *s, const char *name, NlVrf *ret);

/* Calls cb for every VRF of the namespace. cb < 0 stops and is returned. */
int nl_vrf_dump(NlSock *s, int (*cb)(const NlVrf *v, void *userdata), void *userdata);
