/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rtnetlink transport: one socket per namespace, request → replies → ACK, dumps with
 * NLM_F_DUMP_INTR restart, extended-ACK text, the generic attribute-table parser, and the
 * multicast listener used by weftd.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl-internal.h"

/* Kernel dump skbs are at most 32 KiB unless a single object is larger (links with many VFs);
 * we peek at the real size before every read and grow, so this is only the starting point. */
#define NL_RBUF_INITIAL (64 * 1024)

static int nl_sock_new(int flags, NlSock **ret) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	int one = 1;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -EBADF;
	s->mnl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | flags);
	if (!s->mnl)
		return negative_errno();
	s->fd = mnl_socket_get_fd(s->mnl);
	/* Both are optional: old kernels lack them, we then just get less detail. */
	(void) mnl_socket_setsockopt(s->mnl, NETLINK_EXT_ACK, &one, sizeof(one));
	(void) mnl_socket_setsockopt(s->mnl, NETLINK_CAP_ACK, &one, sizeof(one));
	if (mnl_socket_bind(s->mnl, 0, MNL_SOCKET_AUTOPID) < 0)
		return negative_errno();
	s->portid = mnl_socket_get_portid(s->mnl);
	s->rbuf_size = NL_RBUF_INITIAL;
	s->rbuf = malloc(s->rbuf_size);
	if (!s->rbuf)
		return -ENOMEM;
	/* Start from a non-trivial sequence so stale replies from a previous socket user never match. */
	s->seq = (uint32_t) time(NULL);
	*ret = TAKE_PTR(s);
	return 0;
}

int nl_sock_open(NlSock **ret) {
	return nl_sock_new(0, ret);
}

int nl_sock_open_netns(int netns_fd, NlSock **ret) {
	int saved, r;

	if (netns_fd < 0)
		return nl_sock_open(ret);
	r = netns_enter(netns_fd, &saved);
	if (r < 0)
		return r;
	/* The socket is bound to the namespace it was created in, for its whole life. */
	r = nl_sock_open(ret);
	netns_leave(saved);
	return r;
}

NlSock *nl_sock_free(NlSock *s) {
	if (!s)
		return NULL;
	if (s->mnl)
		mnl_socket_close(s->mnl);
	free(s->rbuf);
	free(s);
	return NULL;
}

const char *nl_sock_extack(const NlSock *s) {
	return s ? s->extack : "";
}

int nl_sock_fd(const NlSock *s) {
	return s ? s->fd : -EBADF;
}

/* Reads one datagram into s->rbuf, growing it first if needed. Returns its length or -errno. */
static ssize_t nl_recv(NlSock *s, bool nonblock) {
	int flags = nonblock ? MSG_DONTWAIT : 0;

	for (;;) {
		ssize_t n = recv(s->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | flags);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if ((size_t) n > s->rbuf_size) {
			uint8_t *b = realloc(s->rbuf, n);
			if (!b)
				return -ENOMEM;
			s->rbuf = b;
			s->rbuf_size = n;
		}
		n = recv(s->fd, s->rbuf, s->rbuf_size, flags);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		return n;
	}
}

static int extack_cb(const struct nlattr *a, void *data) {
	NlSock *s = data;

	if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
		snprintf(s->extack, sizeof(s->extack), "%s", mnl_attr_get_str(a));
	return MNL_CB_OK;
}

/* NLMSG_ERROR → 0 (ACK) or -errno, keeping the extack message. */
int nl_handle_error(NlSock *s, const struct nlmsghdr *nlh) {
	const struct nlmsgerr *e;
	size_t plen = mnl_nlmsg_get_payload_len(nlh), off;

	if (plen < sizeof(*e))
		return -EBADMSG;
	e = mnl_nlmsg_get_payload(nlh);
	if (e->error == 0)
		return 0;
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		off = sizeof(*e);
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len >= sizeof(struct nlmsghdr) ? e->msg.nlmsg_len - sizeof(struct nlmsghdr)
									   : 0;
		if (off < plen)
			(void) mnl_attr_parse(nlh, MNL_ALIGN(off), extack_cb, s);
	}
	return e->error < 0 ? e->error : -e->error;
}

static int nl_send(NlSock *s, struct nlmsghdr *nlh) {
	nlh->nlmsg_seq = ++s->seq;
	nlh->nlmsg_pid = 0;
	s->extack[0] = 0;
	for (;;) {
		ssize_t n = sendto(s->fd, nlh, nlh->nlmsg_len, 0,
				   (struct sockaddr *) &(struct sockaddr_nl) { .nl_family = AF_NETLINK },
				   sizeof(struct sockaddr_nl));
		if (n >= 0)
			return 0;
		if (errno != EINTR)
			return negative_errno();
	}
}

/* True if this message answers our current request (multicast and stale replies don't). */
static bool nl_is_ours(const NlSock *s, const struct nlmsghdr *nlh) {
	return nlh->nlmsg_seq == s->seq && nlh->nlmsg_pid == s->portid;
}

int nl_sock_call(NlSock *s, struct nlmsghdr *nlh, nl_msg_cb cb, void *userdata) {
	int r, cb_r = 0;

	if (!s || !nlh)
		return -EINVAL;
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	r = nl_send(s, nlh);
	if (r < 0)
		return r;

	for (;;) {
		ssize_t n = nl_recv(s, false);
		if (n < 0)
			return (int) n;
		int len = (int) n;
		for (const struct nlmsghdr *m = (const struct nlmsghdr *) s->rbuf; nl_msg_ok(m, len);
		     m = mnl_nlmsg_next(m, &len)) {
			if (!nl_is_ours(s, m))
				continue;
			if (m->nlmsg_type == NLMSG_ERROR) {
				r = nl_handle_error(s, m);
				/* A callback error wins over the ACK, but we read up to the ACK first so
				 * the socket is in sync for the next request. */
				return r < 0 ? r : cb_r;
			}
			if (m->nlmsg_type == NLMSG_DONE)
				return cb_r;
			if (m->nlmsg_type < NLMSG_MIN_TYPE)
				continue;
			if (cb && cb_r >= 0) {
				r = cb(m, userdata);
				if (r < 0)
					cb_r = r;
			}
		}
	}
}

int nl_sock_dump(NlSock *s, struct nlmsghdr *nlh, nl_msg_cb cb, void *userdata) {
	_cleanup_free_ uint8_t *acc = NULL;
	size_t acc_size = 0, acc_len;
	int r;

	if (!s || !nlh)
		return -EINVAL;
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_flags &= ~NLM_F_ACK;

	for (unsigned attempt = 0; attempt < NL_DUMP_RETRIES; attempt++) {
		bool intr = false, done = false;

		acc_len = 0;
		r = nl_send(s, nlh);
		if (r < 0)
			return r;
		while (!done) {
			ssize_t n = nl_recv(s, false);
			if (n < 0)
				return (int) n;
			int len = (int) n;
			for (const struct nlmsghdr *m = (const struct nlmsghdr *) s->rbuf; nl_msg_ok(m, len);
			     m = mnl_nlmsg_next(m, &len)) {
				if (!nl_is_ours(s, m))
					continue;
				if (m->nlmsg_flags & NLM_F_DUMP_INTR)
					intr = true;
				if (m->nlmsg_type == NLMSG_ERROR) {
					r = nl_handle_error(s, m);
					if (r < 0)
						return r;
					continue;
				}
				if (m->nlmsg_type == NLMSG_DONE) {
					/* DONE carries the dump's final status (an int) on current kernels. */
					if (mnl_nlmsg_get_payload_len(m) >= sizeof(int)) {
						int e = *(const int *) mnl_nlmsg_get_payload(m);
						if (e < 0)
							return e;
					}
					done = true;
					break;
				}
				if (m->nlmsg_type < NLMSG_MIN_TYPE)
					continue;
				size_t need = acc_len + NLMSG_ALIGN(m->nlmsg_len);
				if (need > acc_size) {
					size_t ns = MAX(need, acc_size * 2);
					uint8_t *b = realloc(acc, ns);
					if (!b)
						return -ENOMEM;
					acc = b;
					acc_size = ns;
				}
				memcpy(acc + acc_len, m, m->nlmsg_len);
				acc_len = need;
			}
		}
		if (intr)
			continue;

		int len = (int) acc_len;
		for (const struct nlmsghdr *m = (const struct nlmsghdr *) acc; acc && nl_msg_ok(m, len);
		     m = mnl_nlmsg_next(m, &len)) {
			r = cb(m, userdata);
			if (r < 0)
				return r;
		}
		return 0;
	}
	return -EAGAIN;
}

typedef struct NlParseCtx {
	const NlPolicy *policy;
	unsigned max;
	const struct nlattr **tb;
	int error;
} NlParseCtx;

static int nl_attr_table_cb(const struct nlattr *a, void *data) {
	NlParseCtx *c = data;
	uint16_t type = mnl_attr_get_type(a);

	if (type > c->max)
		return MNL_CB_OK; /* newer kernel, attribute we do not know */
	if (c->policy && c->policy[type].type != MNL_TYPE_UNSPEC) {
		int r = c->policy[type].type == MNL_TYPE_BINARY
					? (mnl_attr_get_payload_len(a) >= c->policy[type].len ? 0 : -1)
					: mnl_attr_validate(a, c->policy[type].type);
		if (r < 0) {
			c->error = -EBADMSG;
			return MNL_CB_ERROR;
		}
	}
	c->tb[type] = a;
	return MNL_CB_OK;
}

int nl_parse_attrs(const struct nlmsghdr *nlh, unsigned offset, const NlPolicy *policy, unsigned max,
		   const struct nlattr **tb) {
	NlParseCtx c = { .policy = policy, .max = max, .tb = tb };

	memset(tb, 0, sizeof(*tb) * (max + 1));
	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + MNL_ALIGN(offset))
		return -EBADMSG;
	/* Not mnl_attr_parse(): it walks to the aligned end of the message, and a message handed to
	 * a parser need not have its padding; the attributes must lie within nlmsg_len. */
	int len = (int) (nlh->nlmsg_len - MNL_NLMSG_HDRLEN - MNL_ALIGN(offset));
	for (const struct nlattr *a = mnl_nlmsg_get_payload_offset(nlh, offset); mnl_attr_ok(a, len);
	     a = mnl_attr_next(a)) {
		len -= (int) MNL_ALIGN(a->nla_len);
		if (nl_attr_table_cb(a, &c) != MNL_CB_OK)
			return c.error < 0 ? c.error : -EBADMSG;
	}
	return 0;
}

int nl_parse_nested(const struct nlattr *nest, const NlPolicy *policy, unsigned max, const struct nlattr **tb) {
	NlParseCtx c = { .policy = policy, .max = max, .tb = tb };

	memset(tb, 0, sizeof(*tb) * (max + 1));
	if (mnl_attr_parse_nested(nest, nl_attr_table_cb, &c) < 0)
		return c.error < 0 ? c.error : -EBADMSG;
	return 0;
}

bool nl_ifname_valid(const char *name) {
	size_t l;

	if (!name)
		return false;
	l = strlen(name);
	if (l == 0 || l >= IFNAMSIZ || streq(name, ".") || streq(name, ".."))
		return false;
	for (const char *p = name; *p; p++)
		if (*p == '/' || *p == ':' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' ||
		    *p == '\f')
			return false;
	return true;
}

struct nlmsghdr *nl_msg_new(NlMsgBuf *buf, uint16_t type, uint16_t flags, size_t hdrlen) {
	struct nlmsghdr *nlh;

	memset(buf, 0, sizeof(*buf));
	nlh = mnl_nlmsg_put_header(buf->data);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	mnl_nlmsg_put_extra_header(nlh, hdrlen);
	return nlh;
}

void *nl_msg_put_extra(struct nlmsghdr *nlh, size_t len) {
	void *p;

	if (nlh->nlmsg_len + MNL_ALIGN(len) > NL_MSG_BUF)
		return NULL;
	p = mnl_nlmsg_get_payload_tail(nlh);
	memset(p, 0, MNL_ALIGN(len));
	nlh->nlmsg_len += MNL_ALIGN(len);
	return p;
}

/* ---- multicast listener ---- */

int nl_monitor_open(const unsigned *groups, size_t n_groups, NlSock **ret) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	int r;

	r = nl_sock_new(SOCK_NONBLOCK, &s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_groups; i++) {
		unsigned g = groups[i];
		if (mnl_socket_setsockopt(s->mnl, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) < 0)
			return negative_errno();
	}
	*ret = TAKE_PTR(s);
	return 0;
}

static int nl_monitor_dispatch(const struct nlmsghdr *m, const NlMonitorCallbacks *cb, void *userdata) {
	int r;

	switch (m->nlmsg_type) {
	case RTM_NEWLINK:
	case RTM_DELLINK: {
		NlLink l;
		/* AF_BRIDGE link messages are bridge-port state; an AF_BRIDGE RTM_DELLINK means
		 * "left the bridge", not "deleted". Only report the real link events. */
		if (mnl_nlmsg_get_payload_len(m) >= sizeof(struct ifinfomsg) &&
		    ((const struct ifinfomsg *) mnl_nlmsg_get_payload(m))->ifi_family == AF_BRIDGE)
			return 0;
		if (!cb->link || nl_parse_link(m, &l) < 0)
			return 0;
		r = cb->link(m->nlmsg_type, &l, userdata);
		return r < 0 ? r : 1;
	}
	case RTM_NEWROUTE:
	case RTM_DELROUTE: {
		NlRoute rt;
		if (!cb->route || nl_parse_route(m, &rt) < 0)
			return 0;
		r = cb->route(m->nlmsg_type, &rt, userdata);
		return r < 0 ? r : 1;
	}
	case RTM_NEWNEIGH:
	case RTM_DELNEIGH: {
		NlNeigh n;
		if (!cb->neigh || nl_parse_neigh(m, &n) < 0)
			return 0;
		r = cb->neigh(m->nlmsg_type, &n, userdata);
		return r < 0 ? r : 1;
	}
	case RTM_NEWADDR:
	case RTM_DELADDR: {
		NlAddr a;
		if (!cb->addr || nl_parse_addr(m, &a) < 0)
			return 0;
		r = cb->addr(m->nlmsg_type, &a, userdata);
		return r < 0 ? r : 1;
	}
	default: return 0;
	}
}

int nl_monitor_process(NlSock *s, const NlMonitorCallbacks *cb, void *userdata) {
	int count = 0;

	if (!s || !cb)
		return -EINVAL;
	for (;;) {
		ssize_t n = nl_recv(s, true);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return count;
		if (n < 0)
			return (int) n; /* -ENOBUFS: events lost, resync */
		int len = (int) n;
		for (const struct nlmsghdr *m = (const struct nlmsghdr *) s->rbuf; nl_msg_ok(m, len);
		     m = mnl_nlmsg_next(m, &len)) {
			/* No portid filter: a notification caused by another process's request
			 * carries that process's portid. A callback error drops the rest of this
			 * datagram; the caller is expected to resync after an error anyway. */
			int r = nl_monitor_dispatch(m, cb, userdata);
			if (r < 0)
				return r;
			count += r;
		}
	}
}
