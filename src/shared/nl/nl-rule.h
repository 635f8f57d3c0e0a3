/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Policy routing rules (`ip rule`) over rtnetlink: add, delete, dump. Same conventions as nl.h
 * (0 or -errno, extack kept in the socket). Only the selectors weft needs: source prefix, table,
 * priority; the action is always "lookup TABLE" (FR_ACT_TO_TBL).
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/nl/nl.h"

typedef union NlMsgBuf NlMsgBuf;

typedef struct NlRule {
	int family;        /* AF_INET / AF_INET6 (from src when set) */
	IpPrefix src;      /* AF_UNSPEC = from all */
	uint32_t table;    /* lookup table (required on add) */
	uint32_t priority; /* "pref"; 0 with has_priority false = kernel picks (as `ip rule add`) */
	bool has_priority;
	uint8_t protocol; /* FRA_PROTOCOL; 0 = unspec (dump: as reported) */
	uint8_t action;   /* dump: FR_ACT_* as reported */
} NlRule;

/* ip rule add [pref P] from SRC lookup TABLE [protocol PROTO] */
int nl_rule_add(NlSock *s, const NlRule *r);
/* ip rule del [pref P] from SRC lookup TABLE: unset fields are wildcards. -ENOENT if no match. */
int nl_rule_del(NlSock *s, const NlRule *r);
/* family AF_UNSPEC = both. cb returning < 0 stops the dump and is returned. */
int nl_rule_dump(NlSock *s, int family, int (*cb)(const NlRule *r, void *userdata), void *userdata);

/* Builder / parser (test/netns/unit/test-nl-tc.c). */
int nl_build_rule(NlMsgBuf *buf, bool add, const NlRule *r);
struct nlmsghdr;
int nl_parse_rule(const struct nlmsghdr *nlh, NlRule *ret);
