/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "basic/macro.h"
#include "daemon/service/service-conntrack.h"
#include "shared/nl/nf-conntrack.h"
#include "shared/nl/nfnl.h"

/* MNL_SOCKET_BUFFER_SIZE is a sysconf() expression (a VLA); a dump message fits in 16 KiB */
#define CT_BUF_SIZE 16384

typedef struct Dump {
	const ServiceCtFilter *f;
	char **del; /* the matching entries' CTA_TUPLE_ORIG attributes, raw */
	size_t n, cap;
	bool oom;
} Dump;

static bool matches(const ServiceCtFilter *f, const CtTuple *o, const CtTuple *r) {
	if (o->proto != IPPROTO_UDP)
		return false;
	if (f->orig_dst.family != AF_UNSPEC && !ip_addr_equal(&f->orig_dst, &o->dst))
		return false;
	if (f->orig_dport && f->orig_dport != o->dport)
		return false;
	if (f->reply_src.family != AF_UNSPEC && !ip_addr_equal(&f->reply_src, &r->src))
		return false;
	if (f->reply_sport && f->reply_sport != r->sport)
		return false;
	if (f->nat_only && ip_addr_equal(&o->dst, &r->src))
		return false;
	return true;
}

static int on_entry(const struct nlmsghdr *nlh, void *userdata) {
	Dump *d = userdata;
	const struct nlattr *a, *orig = NULL, *reply = NULL;
	CtTuple o, r;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) == CTA_TUPLE_ORIG)
			orig = a;
		else if (mnl_attr_get_type(a) == CTA_TUPLE_REPLY)
			reply = a;
	}
	if (!orig || !reply || ct_tuple_parse(orig, &o) < 0 || ct_tuple_parse(reply, &r) < 0 || !matches(d->f, &o, &r))
		return MNL_CB_OK;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		char **v = reallocarray(d->del, cap, sizeof(char *));

		if (!v) {
			d->oom = true;
			return MNL_CB_OK;
		}
		d->del = v;
		d->cap = cap;
	}
	d->del[d->n] = malloc(orig->nla_len);
	if (!d->del[d->n]) {
		d->oom = true;
		return MNL_CB_OK;
	}
	memcpy(d->del[d->n++], orig, orig->nla_len);
	return MNL_CB_OK;
}

static struct nlmsghdr *ct_msg(char *buf, uint16_t type, uint16_t flags, int family, uint32_t seq) {
	return nfnl_put_header(buf, NFNL_SUBSYS_CTNETLINK, (uint8_t) type, flags, seq, (uint8_t) family, 0);
}

/* Sends nlh and runs the replies through cb until done/ACK. */
static int call(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *userdata) {
	char buf[CT_BUF_SIZE];

	return nfnl_call(nl, nlh, buf, sizeof(buf), cb, userdata);
}

/* conntrack -L -p udp -f FAMILY ; conntrack -D <each matching entry's original tuple> */
int service_conntrack_clear_udp(const ServiceCtFilter *f) {
	char buf[CT_BUF_SIZE];
	struct mnl_socket *nl;
	Dump d = { .f = f };
	uint32_t seq = (uint32_t) time(NULL);
	int r, deleted = 0;

	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = -errno;
		goto out;
	}
	r = call(nl, ct_msg(buf, IPCTNL_MSG_CT_GET, NLM_F_DUMP, f->family, seq), on_entry, &d);
	if (r < 0)
		goto out;
	if (d.oom) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < d.n; i++) {
		struct nlmsghdr *nlh = ct_msg(buf, IPCTNL_MSG_CT_DELETE, NLM_F_ACK, f->family, ++seq);
		const struct nlattr *orig = (const struct nlattr *) d.del[i];
		void *p = mnl_nlmsg_get_payload_tail(nlh);

		memcpy(p, orig, orig->nla_len);
		nlh->nlmsg_len += MNL_ALIGN(orig->nla_len);
		r = call(nl, nlh, NULL, NULL);
		if (r == -ENOENT) /* gone meanwhile */
			r = 0;
		if (r < 0)
			goto out;
		deleted++;
	}
	r = deleted;
out:
	for (size_t i = 0; i < d.n; i++)
		free(d.del[i]);
	free(d.del);
	mnl_socket_close(nl);
	return r;
}
