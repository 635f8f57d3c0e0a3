/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Live NetworkPolicy drops (weftd --policy-log-drops): the log rule before each class's default
 * deny sends a rate-limited copy of the dropped packet's headers to nfnetlink_log group
 * POLICY_DROPS_NFLOG_GROUP (policy-compile.h), with a prefix ending in "#<class hash>-<dir>".
 * weftd binds that group on a NETLINK_NETFILTER socket of its own namespace (unlike the kernel
 * log, which a namespace other than the initial one only reaches with the host's
 * nf_log_all_netns), parses the prefix and the IP/L4 header, asks its owner to name the pods and
 * policies, logs the drop at info and keeps the last POLICY_DROPS_RING as JSON lines.
 *
 * Off: no socket, no rule. On: per dropped packet the kernel does at most the rule's rate limit's
 * worth of copies (50/s, burst 20, per class); weftd does one recv and a lookup per copy.
 */

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "basic/macro.h"
#include "shared/event/event-loop.h"
#include "shared/ip/ip-addr.h"

#define POLICY_DROPS_NFLOG_GROUP 30565 /* "we" */
#define POLICY_DROPS_RING 256
#define POLICY_DROPS_COPY_RANGE 128 /* bytes of each packet copied: IPv4/IPv6 + L4 ports */

typedef struct PolicyDrop {
	struct timespec when; /* CLOCK_REALTIME, when weftd read it */
	char tag[24];         /* "<12 hex>-in" or "-out": the class (np-cls-<tag>, np-cc-<tag>) */
	bool ingress;
	IpAddr src, dst;
	uint8_t proto; /* IPPROTO_* (IPv6: the first next header) */
	uint16_t sport, dport;
	bool has_ports;
} PolicyDrop;

/* Adds what the owner knows to the drop's JSON line: "from", "to" (ns/pod), "policies" (array). */
typedef void (*PolicyDropDescribeFn)(const PolicyDrop *d, json_t *line, void *userdata);

typedef struct PolicyDrops PolicyDrops;

/* Sees every drop once it is described (the flow log merges them into its stream); line borrowed. */
typedef void (*PolicyDropObserverFn)(const PolicyDrop *d, json_t *line, void *userdata);

/* Binds nfnetlink_log group `group` in the current namespace (copy-packet mode, no batching) and
 * watches it in `loop`. 0, -ENOMEM, or the kernel's error: the group is another listener's
 * (-EBUSY), nfnetlink_log is not in the kernel (-EINVAL, -EOPNOTSUPP, -EPROTONOSUPPORT)... */
int policy_drops_new(EventLoop *loop, uint16_t group, PolicyDropDescribeFn describe, void *userdata, PolicyDrops **ret);
PolicyDrops *policy_drops_free(PolicyDrops *d);
/* One observer at most; NULL removes it. */
void policy_drops_set_observer(PolicyDrops *d, PolicyDropObserverFn fn, void *userdata);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolicyDrops *, policy_drops_free);

/* The drops kept whose sequence number is above `since`, as JSON lines (oldest first), and the
 * totals: every drop read, and the copies the socket lost (ENOBUFS). 0 or -ENOMEM. */
int policy_drops_render(PolicyDrops *d, uint64_t since, char **ret);
void policy_drops_stats(const PolicyDrops *d, uint64_t *ret_seen, uint64_t *ret_lost);

/* One NFULNL_MSG_PACKET: 0, or -EBADMSG (not a weft prefix, truncated headers). For tests. */
int policy_drop_parse(const void *nlmsg, size_t len, PolicyDrop *ret);
/* "ingress 10.0.0.1:40112 -> 10.0.0.2:80/TCP" (the same text the tool prints), *ret malloc'ed. */
int policy_drop_format_flow(const PolicyDrop *d, char **ret);
