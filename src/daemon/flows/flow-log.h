/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The flow log's kernel side and ring (weftd --flow-log, docs/flows.md): a NETLINK_NETFILTER socket
 * of weftd's namespace subscribed to ctnetlink's NFNLGRP_CONNTRACK_NEW and _DESTROY groups. Each
 * event is parsed (flow_event_parse()), asked whether it is pod or Service traffic
 * (FlowLogOps.wanted, cheap: prefix checks), passed through a token bucket (`rate` records a
 * second, burst as much), described by the owner (FlowLogOps.describe: pods, Service, verdict)
 * and kept as one JSON line in a ring of FLOW_LOG_RING, served at /flows like /policy/drops.
 *
 * It never blocks the datapath: the kernel queues events on the socket (FLOW_LOG_RCVBUF) and
 * drops what does not fit, which the next recv() reports as ENOBUFS (counted: lost, kernel);
 * events over the rate are counted (lost, rate), and so are records the ring overwrote before
 * any reader fetched them (lost, ring). The first queued event arms a timer: FLOW_LOG_COALESCE_USEC
 * later one turn reads what queued meanwhile, at most FLOW_LOG_BATCH events, so weftd wakes at
 * most 100 times a second for the log and a flood cannot starve its loop.
 */

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "basic/macro.h"
#include "shared/event/event-loop.h"
#include "shared/nl/nf-conntrack.h"

#define FLOW_LOG_RING 4096
#define FLOW_LOG_RATE_DEFAULT 1000 /* records a second */
#define FLOW_LOG_RCVBUF (4 * 1024 * 1024)
#define FLOW_LOG_BATCH 1024                /* events read per turn at most */
#define FLOW_LOG_COALESCE_USEC (10 * 1000) /* the first event's wake-up reads the batch this much later */

typedef enum FlowEventType {
	FLOW_EVENT_NEW,
	FLOW_EVENT_DESTROY,
} FlowEventType;

typedef struct FlowEvent {
	FlowEventType type;
	uint32_t id; /* CTA_ID (0: absent) */
	uint32_t status;
	CtTuple orig, reply;
	bool has_counters;             /* CTA_COUNTERS_*: net.netfilter.nf_conntrack_acct */
	uint64_t packets[2], bytes[2]; /* [0] original direction, [1] reply */
	uint64_t start_ns, stop_ns;    /* CTA_TIMESTAMP (nf_conntrack_timestamp), 0: absent */
} FlowEvent;

typedef struct FlowLogOps {
	/* Pod or Service traffic? Called for every event, before the rate limit: keep it cheap. */
	bool (*wanted)(const FlowEvent *ev, void *userdata);
	/* Adds what the owner knows to the record (from, to, service, endpoint, verdict, why). */
	void (*describe)(const FlowEvent *ev, json_t *line, void *userdata);
} FlowLogOps;

typedef struct FlowLogStats {
	uint64_t seq;         /* records kept so far (the last one's number) */
	uint64_t lost_kernel; /* ENOBUFS: the socket overflowed (at least one event each) */
	uint64_t lost_ring;   /* overwritten in the ring before a reader fetched them */
	uint64_t lost_rate;   /* over the rate limit */
	uint64_t first;       /* the oldest record still in the ring */
} FlowLogStats;

typedef struct FlowLog FlowLog;

/* Opens and subscribes the socket in the current namespace and watches it in `loop`; ops and
 * userdata are borrowed. 0, -ENOMEM or the kernel's error (-EPROTONOSUPPORT: no ctnetlink). */
int flow_log_new(EventLoop *loop, const FlowLogOps *ops, void *userdata, unsigned rate, FlowLog **ret);
FlowLog *flow_log_free(FlowLog *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(FlowLog *, flow_log_free);

/* A record made elsewhere (a policy drop): rate limited, numbered, stamped and kept like the
 * rest. `line` is borrowed. 0, 1 (over the rate: counted, not kept) or -ENOMEM. */
int flow_log_add(FlowLog *l, json_t *line);
/* The records above `since`, oldest first, as JSON lines, then one summary line:
 * {"event":"summary","seq":LAST,"first":OLDEST,"lost":{"kernel":N,"ring":N,"rate":N}}. */
int flow_log_render(FlowLog *l, uint64_t since, char **ret);
void flow_log_stats(const FlowLog *l, FlowLogStats *ret);
/* The ctnetlink socket (tests shrink its buffer to make the kernel overrun it). */
int flow_log_fd(const FlowLog *l);

/* One ctnetlink event message: 0, -ENOENT (not a conntrack NEW/DESTROY message) or -EBADMSG. */
int flow_event_parse(const void *nlmsg, size_t len, FlowEvent *ret);
/* The record's own fields (event, proto, addresses and ports, counters); no seq or time. */
json_t *flow_event_to_json(const FlowEvent *ev);
