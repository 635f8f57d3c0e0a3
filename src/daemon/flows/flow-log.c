/* SPDX-License-Identifier: Apache-2.0 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/flows/flow-log.h"

#define RBUF_SIZE (64 * 1024) /* one event is well under a page; a datagram holds one */

struct FlowLog {
	struct mnl_socket *nl;
	EventSource *io, *timer;
	const FlowLogOps *ops;
	void *userdata;
	char *rbuf;
	char *ring[FLOW_LOG_RING]; /* JSON lines; record seq sits at seq % FLOW_LOG_RING */
	uint64_t seq;
	uint64_t read_seq; /* the newest record a reader fetched */
	uint64_t lost_kernel, lost_ring, lost_rate;
	/* token bucket: `rate` a second, at most `rate` saved */
	unsigned rate;
	double tokens;
	uint64_t refilled_ns;
};

/* ---- parsing ---- */

static int parse_counters(const struct nlattr *nest, uint64_t *ret_packets, uint64_t *ret_bytes) {
	const struct nlattr *a;

	mnl_attr_for_each_nested(a, nest) {
		switch (mnl_attr_get_type(a)) {
		case CTA_COUNTERS_PACKETS:
		case CTA_COUNTERS_BYTES:
			if (mnl_attr_get_payload_len(a) != 8)
				return -EBADMSG;
			*(mnl_attr_get_type(a) == CTA_COUNTERS_PACKETS ? ret_packets : ret_bytes) =
					be64toh(mnl_attr_get_u64(a));
			break;
		case CTA_COUNTERS32_PACKETS:
		case CTA_COUNTERS32_BYTES:
			if (mnl_attr_get_payload_len(a) != 4)
				return -EBADMSG;
			*(mnl_attr_get_type(a) == CTA_COUNTERS32_PACKETS ? ret_packets : ret_bytes) =
					ntohl(mnl_attr_get_u32(a));
			break;
		default: break;
		}
	}
	return 0;
}

static int parse_timestamp(const struct nlattr *nest, FlowEvent *ev) {
	const struct nlattr *a;

	mnl_attr_for_each_nested(a, nest) {
		uint16_t type = mnl_attr_get_type(a);

		if (type != CTA_TIMESTAMP_START && type != CTA_TIMESTAMP_STOP)
			continue;
		if (mnl_attr_get_payload_len(a) != 8)
			return -EBADMSG;
		*(type == CTA_TIMESTAMP_START ? &ev->start_ns : &ev->stop_ns) = be64toh(mnl_attr_get_u64(a));
	}
	return 0;
}

int flow_event_parse(const void *nlmsg, size_t len, FlowEvent *ret) {
	const struct nlmsghdr *nlh = nlmsg;
	const struct nlattr *a;
	bool orig = false, reply = false;
	FlowEvent ev = {};

	/* not mnl_nlmsg_ok(): it compares nlmsg_len as an int, so 0xffffffff passes */
	if (len < sizeof(*nlh) || nlh->nlmsg_len < sizeof(*nlh) || nlh->nlmsg_len > len)
		return -EBADMSG;
	if (NFNL_SUBSYS_ID(nlh->nlmsg_type) != NFNL_SUBSYS_CTNETLINK)
		return -ENOENT;
	switch (NFNL_MSG_TYPE(nlh->nlmsg_type)) {
	case IPCTNL_MSG_CT_NEW:
		/* the NEW group's events are creations; an update (UPDATE group) has no NLM_F_CREATE */
		if (!(nlh->nlmsg_flags & NLM_F_CREATE))
			return -ENOENT;
		ev.type = FLOW_EVENT_NEW;
		break;
	case IPCTNL_MSG_CT_DELETE: ev.type = FLOW_EVENT_DESTROY; break;
	default: return -ENOENT;
	}
	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct nfgenmsg)))
		return -EBADMSG;
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		switch (mnl_attr_get_type(a)) {
		case CTA_TUPLE_ORIG:
		case CTA_TUPLE_REPLY:
			if (ct_tuple_parse(a, mnl_attr_get_type(a) == CTA_TUPLE_ORIG ? &ev.orig : &ev.reply) < 0)
				return -EBADMSG;
			*(mnl_attr_get_type(a) == CTA_TUPLE_ORIG ? &orig : &reply) = true;
			break;
		case CTA_COUNTERS_ORIG:
		case CTA_COUNTERS_REPLY: {
			int d = mnl_attr_get_type(a) == CTA_COUNTERS_REPLY;

			if (parse_counters(a, &ev.packets[d], &ev.bytes[d]) < 0)
				return -EBADMSG;
			ev.has_counters = true;
			break;
		}
		case CTA_ID:
		case CTA_STATUS:
			if (mnl_attr_get_payload_len(a) != 4)
				return -EBADMSG;
			*(mnl_attr_get_type(a) == CTA_ID ? &ev.id : &ev.status) = ntohl(mnl_attr_get_u32(a));
			break;
		case CTA_TIMESTAMP:
			if (parse_timestamp(a, &ev) < 0)
				return -EBADMSG;
			break;
		default: break; /* a newer kernel's, or one we do not report (mark, zone, labels) */
		}
	}
	/* both tuples, of one family: what every record's addresses come from */
	if (!orig || !reply || ev.orig.src.family == AF_UNSPEC || ev.orig.src.family != ev.orig.dst.family ||
	    ev.reply.src.family != ev.orig.src.family || ev.reply.dst.family != ev.orig.src.family)
		return -EBADMSG;
	*ret = ev;
	return 0;
}

static bool has_ports(uint8_t proto) {
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_SCTP || proto == IPPROTO_UDPLITE ||
	       proto == IPPROTO_DCCP;
}

json_t *flow_event_to_json(const FlowEvent *ev) {
	char s[IP_ADDR_STRLEN], t[IP_ADDR_STRLEN], pb[8];
	json_t *line;

	line = json_pack("{s:s, s:s, s:s, s:s}", "event", ev->type == FLOW_EVENT_NEW ? "new" : "destroy", "proto",
			 ip_proto_name(ev->orig.proto, pb), "src", ip_addr_to_string(&ev->orig.src, s), "dst",
			 ip_addr_to_string(&ev->orig.dst, t));
	if (!line)
		return NULL;
	if (has_ports(ev->orig.proto)) {
		json_object_set_new(line, "sport", json_integer(ev->orig.sport));
		json_object_set_new(line, "dport", json_integer(ev->orig.dport));
	}
	if (ev->id)
		json_object_set_new(line, "ct_id", json_integer(ev->id));
	if (ev->type == FLOW_EVENT_DESTROY && ev->has_counters) {
		json_object_set_new(line, "packets_orig", json_integer((json_int_t) ev->packets[0]));
		json_object_set_new(line, "bytes_orig", json_integer((json_int_t) ev->bytes[0]));
		json_object_set_new(line, "packets_reply", json_integer((json_int_t) ev->packets[1]));
		json_object_set_new(line, "bytes_reply", json_integer((json_int_t) ev->bytes[1]));
	}
	if (ev->type == FLOW_EVENT_DESTROY && ev->start_ns && ev->stop_ns >= ev->start_ns)
		json_object_set_new(line, "duration_ms", json_real((double) (ev->stop_ns - ev->start_ns) / 1e6));
	return line;
}

/* ---- rate limit and ring ---- */

static uint64_t now_ns(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* true: over the rate (counted) */
static bool rate_limited(FlowLog *l) {
	uint64_t now = now_ns();

	l->tokens += (double) (now - l->refilled_ns) * l->rate / 1e9;
	if (l->tokens > l->rate)
		l->tokens = l->rate;
	l->refilled_ns = now;
	if (l->tokens < 1) {
		l->lost_rate++;
		return true;
	}
	l->tokens -= 1;
	return false;
}

static int keep(FlowLog *l, json_t *line) {
	char when[64];
	struct timespec ts;
	struct tm tm;
	size_t slot;
	char *text;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ", ts.tv_nsec / 1000000);
	if (json_object_set_new(line, "seq", json_integer((json_int_t) (l->seq + 1))) < 0 ||
	    json_object_set_new(line, "time", json_string(when)) < 0)
		return -ENOMEM;
	text = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text)
		return -ENOMEM;
	l->seq++;
	slot = l->seq % FLOW_LOG_RING;
	if (l->ring[slot] && l->seq - FLOW_LOG_RING > l->read_seq)
		l->lost_ring++;
	free(l->ring[slot]);
	l->ring[slot] = text;
	return 0;
}

int flow_log_add(FlowLog *l, json_t *line) {
	if (rate_limited(l))
		return 1;
	return keep(l, line);
}

static void handle(FlowLog *l, const FlowEvent *ev) {
	json_t *line;

	if (l->ops->wanted && !l->ops->wanted(ev, l->userdata))
		return;
	if (rate_limited(l))
		return;
	line = flow_event_to_json(ev);
	if (!line)
		return;
	if (l->ops->describe)
		l->ops->describe(ev, line, l->userdata);
	(void) keep(l, line);
	json_decref(line);
}

static int msg_cb(const struct nlmsghdr *nlh, void *data) {
	FlowLog *l = data;
	FlowEvent ev;

	if (flow_event_parse(nlh, nlh->nlmsg_len, &ev) >= 0)
		handle(l, &ev);
	return MNL_CB_OK;
}

/* The timer: read what queued since the first event woke us, then watch the socket again. */
static int on_timer(EventSource *s, void *userdata) {
	FlowLog *l = userdata;
	int fd = mnl_socket_get_fd(l->nl);

	(void) event_source_disarm(l->timer); /* called early by on_io: this read serves the wake-up */
	/* bounded per turn: what stays queued waits for the next one, or is lost to ENOBUFS */
	for (int i = 0; i < FLOW_LOG_BATCH; i++) {
		ssize_t n = recv(fd, l->rbuf, RBUF_SIZE, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				l->lost_kernel++;
				continue;
			}
			if (errno != EAGAIN)
				log_debug_errno(errno, "Flow log: recv: %m");
			break;
		}
		(void) mnl_cb_run(l->rbuf, (size_t) n, 0, 0, msg_cb, l);
	}
	(void) event_source_set_io_events(l->io, EPOLLIN);
	return 0;
}

/*
 * An event is queued: wait FLOW_LOG_COALESCE_USEC and read the whole batch then, rather than wake
 * for every connection (at 1,000 new connections a second, one wake-up per 10 ms instead of 1,000).
 *
 * An overrun (the kernel could not queue an event: ENOBUFS on the socket) is reported as EPOLLERR
 * even while EPOLLIN is off, and keeps being reported until a recv() takes the error. So read at
 * once then: waiting would have this callback called in a loop, and re-arming the timer each time
 * would postpone the read for ever (weftd spinning, the flow log stopped).
 */
static int on_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	FlowLog *l = userdata;

	if (revents & EPOLLERR)
		return on_timer(l->timer, l);
	(void) event_source_set_io_events(l->io, 0);
	if (event_source_arm_once(l->timer, FLOW_LOG_COALESCE_USEC) < 0)
		return on_timer(l->timer, l);
	return 0;
}

int flow_log_fd(const FlowLog *l) {
	return mnl_socket_get_fd(l->nl);
}

int flow_log_new(EventLoop *loop, const FlowLogOps *ops, void *userdata, unsigned rate, FlowLog **ret) {
	_cleanup_(flow_log_freep) FlowLog *l = NULL;
	int size = FLOW_LOG_RCVBUF, fd;

	l = calloc(1, sizeof(FlowLog));
	if (!l)
		return -ENOMEM;
	l->ops = ops;
	l->userdata = userdata;
	l->rate = rate ?: FLOW_LOG_RATE_DEFAULT;
	l->tokens = l->rate;
	l->refilled_ns = now_ns();
	l->rbuf = malloc(RBUF_SIZE);
	if (!l->rbuf)
		return -ENOMEM;
	l->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!l->nl)
		return negative_errno();
	fd = mnl_socket_get_fd(l->nl);
	/* past net.core.rmem_max with CAP_NET_ADMIN; else as much as rmem_max allows */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		(void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (mnl_socket_bind(l->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return negative_errno();
	/* conntrack -E -e NEW,DESTROY (the group membership loads nf_conntrack_netlink if needed) */
	for (int g = NFNLGRP_CONNTRACK_NEW; g <= NFNLGRP_CONNTRACK_DESTROY; g++) {
		if (g == NFNLGRP_CONNTRACK_UPDATE)
			continue;
		if (mnl_socket_setsockopt(l->nl, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) < 0)
			return negative_errno();
	}
	if (event_loop_add_io(loop, fd, EPOLLIN, on_io, l, &l->io) < 0 ||
	    event_loop_add_timer(loop, on_timer, l, &l->timer) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(l);
	return 0;
}

FlowLog *flow_log_free(FlowLog *l) {
	if (!l)
		return NULL;
	event_source_free(l->io);
	event_source_free(l->timer);
	if (l->nl)
		mnl_socket_close(l->nl);
	for (size_t i = 0; i < FLOW_LOG_RING; i++)
		free(l->ring[i]);
	free(l->rbuf);
	free(l);
	return NULL;
}

int flow_log_render(FlowLog *l, uint64_t since, char **ret) {
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FlowLogStats st;
	FILE *f;

	flow_log_stats(l, &st);
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	for (uint64_t s = since + 1 > st.first ? since + 1 : st.first; s <= l->seq; s++)
		fprintf(f, "%s\n", l->ring[s % FLOW_LOG_RING]);
	fprintf(f,
		"{\"event\":\"summary\",\"seq\":%" PRIu64 ",\"first\":%" PRIu64 ",\"lost\":{\"kernel\":%" PRIu64
		",\"ring\":%" PRIu64 ",\"rate\":%" PRIu64 "}}\n",
		st.seq, st.first, st.lost_kernel, st.lost_ring, st.lost_rate);
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	if (l->seq > l->read_seq)
		l->read_seq = l->seq;
	*ret = TAKE_PTR(buf);
	return 0;
}

void flow_log_stats(const FlowLog *l, FlowLogStats *ret) {
	*ret = (FlowLogStats) {
		.seq = l->seq,
		.lost_kernel = l->lost_kernel,
		.lost_ring = l->lost_ring,
		.lost_rate = l->lost_rate,
		.first = l->seq > FLOW_LOG_RING ? l->seq - FLOW_LOG_RING + 1 : 1,
	};
}
