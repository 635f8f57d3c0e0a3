/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Traffic control over rtnetlink (what the bandwidth plugin needs): a TBF root qdisc, the
 * ingress qdisc, a match-all u32 filter whose action is a mirred egress redirect, qdisc dumps,
 * and ifb devices (the redirect target). Same conventions as nl.h: every call waits for the ACK
 * and returns 0 or -errno with the kernel's extack text in nl_sock_extack().
 *
 * Builders are exposed for test/netns/unit/test-nl-tc.c (build-then-parse, no kernel); they fill a
 * NlMsgBuf (nl-internal.h) and never send.
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/nl/nl.h"

typedef union NlMsgBuf NlMsgBuf;

/* tc handles */
#define NL_TC_HANDLE(maj, min) (((uint32_t) (maj) << 16) | ((uint32_t) (min) &0xffffu))
#define NL_TC_ROOT 0xffffffffu    /* TC_H_ROOT */
#define NL_TC_INGRESS 0xfffffff1u /* TC_H_INGRESS (also TC_H_CLSACT) */

/* TBF parameters as the kernel takes them. */
typedef struct NlTbf {
	uint64_t rate;   /* bytes per second */
	uint32_t buffer; /* psched ticks the bucket takes to fill (the burst as time) */
	uint32_t limit;  /* bytes that may queue */
} NlTbf;

/* A qdisc as dumped. */
typedef struct NlQdisc {
	int ifindex;
	uint32_t handle;
	uint32_t parent;
	char kind[16]; /* "tbf", "ingress", "noqueue", ... */
	bool has_tbf;
	NlTbf tbf; /* when kind is tbf */
} NlQdisc;

/*
 * psched clock: microseconds <-> ticks as the kernel's /proc/net/psched announces (what tc and
 * the reference's netlink library use). Reads the file once; falls back to 1 us = 15.625 ticks
 * (every kernel since 2.6.3x) if it cannot be read.
 */
double nl_tc_ticks_per_usec(void);

/*
 * The reference bandwidth plugin's TBF arithmetic: rate and burst in bits/s and bits;
 * buffer = burst time in ticks, limit = rate * 25 ms latency + burst. Pure; -EINVAL for a zero
 * rate or burst or a burst over 4 GiB.
 */
int nl_tc_tbf_from_bits(uint64_t rate_bits, uint64_t burst_bits, NlTbf *ret);

/* tc qdisc {add|replace} dev IDX root handle 1: tbf rate R burst B limit L */
int nl_tc_tbf_set(NlSock *s, int ifindex, const NlTbf *tbf, bool replace);
/* tc qdisc add dev IDX handle ffff: ingress (0 if one exists already) */
int nl_tc_ingress_add(NlSock *s, int ifindex);
/* tc qdisc del dev IDX {root|ingress}: parent NL_TC_ROOT or NL_TC_INGRESS. -ENOENT/-EINVAL
 * when there is none (the kernel says EINVAL for "no root qdisc to delete"); callers in DEL
 * treat both as done. */
int nl_tc_qdisc_del(NlSock *s, int ifindex, uint32_t parent);
/* tc filter replace dev IDX parent ffff: protocol all prio 1 u32 match u32 0 0 classid 1:1
 *     action mirred egress redirect dev TARGET */
int nl_tc_mirred_redirect_add(NlSock *s, int ifindex, int target_ifindex);
/* Every qdisc of ifindex (0 = all links). cb returning < 0 stops and is returned. */
int nl_tc_qdisc_dump(NlSock *s, int ifindex, int (*cb)(const NlQdisc *q, void *userdata), void *userdata);

/* ip link add NAME mtu MTU up type ifb (mtu 0 = default). -EEXIST if the name is taken. */
int nl_ifb_create(NlSock *s, const char *name, unsigned mtu);

/* Builders / parser (test/netns/unit/test-nl-tc.c). */
int nl_build_tc_tbf(NlMsgBuf *buf, int ifindex, const NlTbf *tbf, bool replace);
int nl_build_tc_ingress(NlMsgBuf *buf, int ifindex);
int nl_build_tc_qdisc_del(NlMsgBuf *buf, int ifindex, uint32_t parent);
int nl_build_tc_mirred_redirect(NlMsgBuf *buf, int ifindex, int target_ifindex);
int nl_build_ifb(NlMsgBuf *buf, const char *name, unsigned mtu);
struct nlmsghdr;
int nl_parse_qdisc(const struct nlmsghdr *nlh, NlQdisc *ret);
