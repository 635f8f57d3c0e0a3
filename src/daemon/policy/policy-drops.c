/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/policy/policy-drops.h"
#include "shared/nl/nfnl.h"

#define RBUF_SIZE (64 * 1024) /* the kernel's nflog skbs are at most NLMSG_GOODSIZE by default */

struct PolicyDrops {
	struct mnl_socket *nl;
	unsigned portid;
	EventSource *io;
	uint16_t group;
	PolicyDropDescribeFn describe;
	void *userdata;
	PolicyDropObserverFn observer;
	void *observer_userdata;
	char *rbuf;
	char *ring[POLICY_DROPS_RING]; /* JSON lines; drop number seq sits at seq % POLICY_DROPS_RING */
	uint64_t seq;                  /* drops read so far (the last one's number) */
	uint64_t lost;                 /* ENOBUFS: the socket overflowed */
};

int policy_drop_format_flow(const PolicyDrop *d, char **ret) {
	char s[IP_ADDR_STRLEN], t[IP_ADDR_STRLEN], pb[8];
	bool v6 = d->src.family == AF_INET6;
	int r;

	ip_addr_to_string(&d->src, s);
	ip_addr_to_string(&d->dst, t);
	if (d->has_ports)
		r = asprintf(ret, "%s %s%s%s:%u -> %s%s%s:%u/%s", d->ingress ? "ingress" : "egress", v6 ? "[" : "", s,
			     v6 ? "]" : "", d->sport, v6 ? "[" : "", t, v6 ? "]" : "", d->dport,
			     ip_proto_name(d->proto, pb));
	else
		r = asprintf(ret, "%s %s -> %s/%s", d->ingress ? "ingress" : "egress", s, t,
			     ip_proto_name(d->proto, pb));
	if (r < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- parsing ---- */

static int attr_cb(const struct nlattr *a, void *data) {
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, NFULA_MAX) < 0)
		return MNL_CB_OK; /* a newer kernel's: skip */
	switch (type) {
	case NFULA_PACKET_HDR:
		if (mnl_attr_validate2(a, MNL_TYPE_UNSPEC, sizeof(struct nfulnl_msg_packet_hdr)) < 0)
			return MNL_CB_ERROR;
		break;
	case NFULA_PREFIX:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
			return MNL_CB_ERROR;
		break;
	default: break;
	}
	tb[type] = a;
	return MNL_CB_OK;
}

/* "... #0123456789ab-in" */
static int parse_prefix(const char *prefix, PolicyDrop *d) {
	const char *h = strrchr(prefix, '#');
	size_t n;

	if (!startswith(prefix, "weft-np ") || !h)
		return -EBADMSG;
	h++;
	n = strspn(h, "0123456789abcdef");
	if (n != 12 || (!streq(h + 12, "-in") && !streq(h + 12, "-out")))
		return -EBADMSG;
	snprintf(d->tag, sizeof(d->tag), "%s", h);
	d->ingress = streq(h + 12, "-in");
	return 0;
}

static int parse_headers(const uint8_t *p, size_t len, PolicyDrop *d) {
	size_t l4;

	if (len < 1)
		return -EBADMSG;
	if (p[0] >> 4 == 4) {
		size_t ihl = (size_t) (p[0] & 0x0f) * 4;

		if (len < 20 || ihl < 20)
			return -EBADMSG;
		d->src.family = d->dst.family = AF_INET;
		memcpy(&d->src.in, p + 12, 4);
		memcpy(&d->dst.in, p + 16, 4);
		d->proto = p[9];
		/* a fragment after the first carries no ports */
		l4 = (((p[6] & 0x1f) << 8) | p[7]) == 0 ? ihl : SIZE_MAX;
	} else if (p[0] >> 4 == 6) {
		if (len < 40)
			return -EBADMSG;
		d->src.family = d->dst.family = AF_INET6;
		memcpy(&d->src.in6, p + 8, 16);
		memcpy(&d->dst.in6, p + 24, 16);
		d->proto = p[6]; /* extension headers are not followed */
		l4 = 40;
	} else
		return -EBADMSG;
	if ((d->proto == IPPROTO_TCP || d->proto == IPPROTO_UDP || d->proto == IPPROTO_SCTP) && l4 != SIZE_MAX &&
	    len >= l4 + 4) {
		d->sport = (uint16_t) (p[l4] << 8 | p[l4 + 1]);
		d->dport = (uint16_t) (p[l4 + 2] << 8 | p[l4 + 3]);
		d->has_ports = true;
	}
	return 0;
}

int policy_drop_parse(const void *nlmsg, size_t len, PolicyDrop *ret) {
	const struct nlmsghdr *nlh = nlmsg;
	const struct nlattr *tb[NFULA_MAX + 1] = {};
	PolicyDrop d = {};
	int r;

	if (len < sizeof(*nlh) || !mnl_nlmsg_ok(nlh, (int) len) ||
	    nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET) ||
	    nlh->nlmsg_len < MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct nfgenmsg)))
		return -EBADMSG;
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), attr_cb, tb) != MNL_CB_OK)
		return -EBADMSG;
	if (!tb[NFULA_PREFIX] || !tb[NFULA_PAYLOAD])
		return -EBADMSG;
	r = parse_prefix(mnl_attr_get_str(tb[NFULA_PREFIX]), &d);
	if (r < 0)
		return r;
	r = parse_headers(mnl_attr_get_payload(tb[NFULA_PAYLOAD]), mnl_attr_get_payload_len(tb[NFULA_PAYLOAD]), &d);
	if (r < 0)
		return r;
	clock_gettime(CLOCK_REALTIME, &d.when);
	*ret = d;
	return 0;
}

/* ---- the ring ---- */

static int record(PolicyDrops *p, const PolicyDrop *d) {
	_cleanup_free_ char *flow = NULL, *policies = NULL;
	char s[IP_ADDR_STRLEN], t[IP_ADDR_STRLEN], pb[8], when[64];
	json_t *line, *pols;
	struct tm tm;
	char *text;
	size_t slot;

	gmtime_r(&d->when.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ldZ", d->when.tv_nsec / 1000000);
	line = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s}", "seq", (json_int_t) (p->seq + 1), "time", when,
			 "direction", d->ingress ? "ingress" : "egress", "proto", ip_proto_name(d->proto, pb), "src",
			 ip_addr_to_string(&d->src, s), "dst", ip_addr_to_string(&d->dst, t), "class", d->tag);
	if (!line)
		return -ENOMEM;
	if (d->has_ports) {
		json_object_set_new(line, "sport", json_integer(d->sport));
		json_object_set_new(line, "dport", json_integer(d->dport));
	}
	if (p->describe)
		p->describe(d, line, p->userdata);
	if (p->observer)
		p->observer(d, line, p->observer_userdata);
	text = json_dumps(line, JSON_COMPACT);
	/* the log line: the flow, who, and why */
	pols = json_object_get(line, "policies");
	if (json_is_array(pols)) {
		size_t i, size = 0;
		json_t *v;
		FILE *f = open_memstream(&policies, &size);

		if (f) {
			json_array_foreach(pols, i, v)
				fprintf(f, "%s%s", i ? " " : "", json_string_value(v) ?: "");
			fclose(f);
		}
	}
	if (policy_drop_format_flow(d, &flow) >= 0)
		log_info("Policy drop: %s (%s -> %s) isolated by %s", flow,
			 json_string_value(json_object_get(line, "from")) ?: "?",
			 json_string_value(json_object_get(line, "to")) ?: "?", policies ?: "?");
	json_decref(line);
	if (!text)
		return -ENOMEM;
	p->seq++;
	slot = p->seq % POLICY_DROPS_RING;
	free(p->ring[slot]);
	p->ring[slot] = text;
	return 0;
}

static int msg_cb(const struct nlmsghdr *nlh, void *data) {
	PolicyDrops *p = data;
	PolicyDrop d;

	if (policy_drop_parse(nlh, nlh->nlmsg_len, &d) < 0)
		return MNL_CB_OK; /* not ours (another prefix in our group), or truncated: skip it */
	(void) record(p, &d);
	return MNL_CB_OK;
}

static int on_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	PolicyDrops *p = userdata;

	/* bounded per wake-up, so a flood cannot starve the loop (the rule's rate limit bounds it too) */
	for (int i = 0; i < 64; i++) {
		ssize_t n = recv(fd, p->rbuf, RBUF_SIZE, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				p->lost++;
				continue;
			}
			if (errno != EAGAIN)
				log_debug_errno(errno, "Policy drops: recv: %m");
			return 0;
		}
		(void) mnl_cb_run(p->rbuf, (size_t) n, 0, 0, msg_cb, p);
	}
	return 0;
}

/*
 * nfnetlink_log: bind `group`, copy POLICY_DROPS_COPY_RANGE bytes of each packet, send each one at
 * once (queue threshold 1); waits for the ACK.
 *   (libnetfilter_log: nflog_bind_group(h, group); nflog_set_mode(gh, NFULNL_COPY_PACKET, range);
 *    nflog_set_qthresh(gh, 1))
 */
static int nflog_bind(PolicyDrops *p) {
	_cleanup_free_ char *buf = malloc(MNL_SOCKET_BUFFER_SIZE);
	struct nlmsghdr *nlh;
	struct nfulnl_msg_config_mode mode = { .copy_range = htonl(POLICY_DROPS_COPY_RANGE),
					       .copy_mode = NFULNL_COPY_PACKET };
	uint32_t seq = (uint32_t) time(NULL);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_ULOG, NFULNL_MSG_CONFIG, NLM_F_ACK, seq, AF_UNSPEC, p->group);
	if (!mnl_attr_put_check(nlh, MNL_SOCKET_BUFFER_SIZE, NFULA_CFG_CMD, sizeof(struct nfulnl_msg_config_cmd),
				&(struct nfulnl_msg_config_cmd) { .command = NFULNL_CFG_CMD_BIND }) ||
	    !mnl_attr_put_check(nlh, MNL_SOCKET_BUFFER_SIZE, NFULA_CFG_MODE, sizeof(mode), &mode) ||
	    !mnl_attr_put_u32_check(nlh, MNL_SOCKET_BUFFER_SIZE, NFULA_CFG_QTHRESH, htonl(1)))
		return -ENOBUFS;
	if (mnl_socket_sendto(p->nl, nlh, nlh->nlmsg_len) < 0)
		return negative_errno();
	do
		n = mnl_socket_recvfrom(p->nl, buf, MNL_SOCKET_BUFFER_SIZE);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negative_errno();
	/* the ACK or the error (packets of the group cannot come before it is bound) */
	if (mnl_cb_run(buf, (size_t) n, seq, p->portid, NULL, NULL) < 0)
		return negative_errno();
	return 0;
}

int policy_drops_new(EventLoop *loop, uint16_t group, PolicyDropDescribeFn describe, void *userdata,
		     PolicyDrops **ret) {
	_cleanup_(policy_drops_freep) PolicyDrops *p = NULL;
	int r;

	p = calloc(1, sizeof(PolicyDrops));
	if (!p)
		return -ENOMEM;
	p->group = group;
	p->describe = describe;
	p->userdata = userdata;
	p->rbuf = malloc(RBUF_SIZE);
	if (!p->rbuf)
		return -ENOMEM;
	p->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!p->nl)
		return negative_errno();
	if (mnl_socket_bind(p->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return negative_errno();
	p->portid = mnl_socket_get_portid(p->nl);
	r = nflog_bind(p);
	if (r < 0)
		return r;
	r = event_loop_add_io(loop, mnl_socket_get_fd(p->nl), EPOLLIN, on_io, p, &p->io);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

PolicyDrops *policy_drops_free(PolicyDrops *p) {
	if (!p)
		return NULL;
	event_source_free(p->io);
	if (p->nl)
		mnl_socket_close(p->nl); /* the kernel unbinds the group when its socket goes */
	for (size_t i = 0; i < POLICY_DROPS_RING; i++)
		free(p->ring[i]);
	free(p->rbuf);
	free(p);
	return NULL;
}

void policy_drops_set_observer(PolicyDrops *p, PolicyDropObserverFn fn, void *userdata) {
	p->observer = fn;
	p->observer_userdata = userdata;
}

int policy_drops_render(PolicyDrops *p, uint64_t since, char **ret) {
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	uint64_t first = p->seq > POLICY_DROPS_RING ? p->seq - POLICY_DROPS_RING + 1 : 1;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	for (uint64_t s = since + 1 > first ? since + 1 : first; s <= p->seq; s++)
		fprintf(f, "%s\n", p->ring[s % POLICY_DROPS_RING]);
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

void policy_drops_stats(const PolicyDrops *p, uint64_t *ret_seen, uint64_t *ret_lost) {
	*ret_seen = p ? p->seq : 0;
	*ret_lost = p ? p->lost : 0;
}
