/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tc over rtnetlink: TBF and ingress qdiscs, a u32 match-all filter with a mirred redirect,
 * qdisc dumps, and the ifb link kind (the redirect target; it lives here rather than in its own
 * nl-ifb.c because tc is its only user). See nl-tc.h.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-tc.h"

#define TIME_UNITS_PER_SEC 1000000.0
/* The reference's fixed queueing latency for the TBF limit. */
#define TBF_LATENCY_USEC 25000.0

double nl_tc_ticks_per_usec(void) {
	static double cached = 0;
	_cleanup_free_ char *s = NULL;
	unsigned t2us, us2t, clock_res, hz;

	if (cached > 0)
		return cached;
	cached = 15.625; /* 1000/64 with a 1 GHz clock: every current kernel */
	if (read_full_file("/proc/net/psched", &s, NULL) >= 0 &&
	    sscanf(s, "%x %x %x %x", &t2us, &us2t, &clock_res, &hz) == 4 && us2t > 0) {
		/* iproute2 tc_core_init(); "compatibility" branch for clock_res == 1e9. */
		if (clock_res == 1000000000)
			t2us = us2t;
		cached = (double) t2us / us2t * ((double) clock_res / TIME_UNITS_PER_SEC);
	}
	return cached;
}

int nl_tc_tbf_from_bits(uint64_t rate_bits, uint64_t burst_bits, NlTbf *ret) {
	uint64_t rate = rate_bits / 8, burst = burst_bits / 8;
	double usec;

	if (rate == 0 || burst == 0 || burst > UINT32_MAX)
		return -EINVAL;
	/* Same float arithmetic (and truncations) as the reference, so CHECK compares equal to
	 * what either implementation installed. */
	usec = (double) (uint32_t) ((double) burst * TIME_UNITS_PER_SEC / (double) rate);
	*ret = (NlTbf) {
		.rate = rate,
		.buffer = (uint32_t) (usec * nl_tc_ticks_per_usec()),
		.limit = (uint32_t) ((double) rate * TBF_LATENCY_USEC / TIME_UNITS_PER_SEC) + (uint32_t) burst,
	};
	return 0;
}

static struct nlmsghdr *tc_msg_new(NlMsgBuf *buf, uint16_t type, uint16_t flags, int ifindex, uint32_t handle,
				   uint32_t parent, uint32_t info) {
	struct nlmsghdr *nlh = nl_msg_new(buf, type, flags, sizeof(struct tcmsg));
	struct tcmsg *t = mnl_nlmsg_get_payload(nlh);

	t->tcm_family = AF_UNSPEC;
	t->tcm_ifindex = ifindex;
	t->tcm_handle = handle;
	t->tcm_parent = parent;
	t->tcm_info = info;
	return nlh;
}

/* tc qdisc {add|replace} dev IDX root handle 1: tbf rate R burst B limit L */
int nl_build_tc_tbf(NlMsgBuf *buf, int ifindex, const NlTbf *tbf, bool replace) {
	struct tc_tbf_qopt q = {};
	struct nlmsghdr *nlh;
	struct nlattr *opts;

	if (ifindex <= 0 || !tbf || tbf->rate == 0)
		return -EINVAL;
	nlh = tc_msg_new(buf, RTM_NEWQDISC, NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL), ifindex,
			 NL_TC_HANDLE(1, 0), NL_TC_ROOT, 0);
	q.rate.rate = tbf->rate > UINT32_MAX ? UINT32_MAX : (uint32_t) tbf->rate;
	/* Ethernet link layer: the kernel computes transmit times itself, no rate table needed. */
	q.rate.linklayer = TC_LINKLAYER_ETHERNET;
	q.limit = tbf->limit;
	q.buffer = tbf->buffer;
	NL_PUT_STRZ(nlh, TCA_KIND, "tbf");
	NL_NEST_START(nlh, opts, TCA_OPTIONS);
	NL_PUT(nlh, TCA_TBF_PARMS, sizeof(q), &q);
	if (tbf->rate > UINT32_MAX) {
		uint64_t r64 = tbf->rate;
		NL_PUT(nlh, TCA_TBF_RATE64, sizeof(r64), &r64);
	}
	mnl_attr_nest_end(nlh, opts);
	return 0;
}

/* tc qdisc add dev IDX handle ffff: ingress */
int nl_build_tc_ingress(NlMsgBuf *buf, int ifindex) {
	struct nlmsghdr *nlh;

	if (ifindex <= 0)
		return -EINVAL;
	nlh = tc_msg_new(buf, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex, NL_TC_HANDLE(0xffff, 0), NL_TC_INGRESS,
			 0);
	NL_PUT_STRZ(nlh, TCA_KIND, "ingress");
	return 0;
}

/* tc qdisc del dev IDX {root|ingress} */
int nl_build_tc_qdisc_del(NlMsgBuf *buf, int ifindex, uint32_t parent) {
	if (ifindex <= 0 || (parent != NL_TC_ROOT && parent != NL_TC_INGRESS))
		return -EINVAL;
	tc_msg_new(buf, RTM_DELQDISC, 0, ifindex, parent == NL_TC_INGRESS ? NL_TC_HANDLE(0xffff, 0) : 0, parent, 0);
	return 0;
}

/* tc filter add dev IDX parent ffff: protocol all prio 1 u32 match u32 0 0 classid 1:1
 *     action mirred egress redirect dev TARGET */
int nl_build_tc_mirred_redirect(NlMsgBuf *buf, int ifindex, int target_ifindex) {
	/* tc_u32_sel ends in a flexible array of keys: one zero key (mask 0) matches everything. */
	uint8_t sel[sizeof(struct tc_u32_sel) + sizeof(struct tc_u32_key)] = {};
	struct tc_u32_sel *s = (struct tc_u32_sel *) sel;
	struct tc_mirred m = {
		.action = TC_ACT_STOLEN,
		.eaction = TCA_EGRESS_REDIR,
		.ifindex = (uint32_t) target_ifindex,
	};
	struct nlattr *opts, *acts, *act, *aopts;
	struct nlmsghdr *nlh;

	if (ifindex <= 0 || target_ifindex <= 0)
		return -EINVAL;
	nlh = tc_msg_new(buf, RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL, ifindex, 0, NL_TC_HANDLE(0xffff, 0),
			 NL_TC_HANDLE(1, htons(ETH_P_ALL)));
	s->flags = TC_U32_TERMINAL;
	s->nkeys = 1;
	NL_PUT_STRZ(nlh, TCA_KIND, "u32");
	NL_NEST_START(nlh, opts, TCA_OPTIONS);
	NL_PUT_U32(nlh, TCA_U32_CLASSID, NL_TC_HANDLE(1, 1));
	NL_PUT(nlh, TCA_U32_SEL, sizeof(sel), sel);
	NL_NEST_START(nlh, acts, TCA_U32_ACT);
	NL_NEST_START(nlh, act, 1); /* action order 1 */
	NL_PUT_STRZ(nlh, TCA_ACT_KIND, "mirred");
	NL_NEST_START(nlh, aopts, TCA_ACT_OPTIONS);
	NL_PUT(nlh, TCA_MIRRED_PARMS, sizeof(m), &m);
	mnl_attr_nest_end(nlh, aopts);
	mnl_attr_nest_end(nlh, act);
	mnl_attr_nest_end(nlh, acts);
	mnl_attr_nest_end(nlh, opts);
	return 0;
}

/* ip link add NAME [mtu MTU] up type ifb */
int nl_build_ifb(NlMsgBuf *buf, const char *name, unsigned mtu) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *li;

	if (!nl_ifname_valid(name))
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, name);
	if (mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, mtu);
	NL_NEST_START(nlh, li, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "ifb");
	mnl_attr_nest_end(nlh, li);
	return 0;
}

static const NlPolicy qdisc_policy[TCA_MAX + 1] = {
	[TCA_KIND] = { MNL_TYPE_NUL_STRING },
	[TCA_OPTIONS] = { MNL_TYPE_NESTED },
};

static const NlPolicy tbf_policy[TCA_TBF_MAX + 1] = {
	[TCA_TBF_PARMS] = { MNL_TYPE_BINARY, sizeof(struct tc_tbf_qopt) },
	[TCA_TBF_RATE64] = { MNL_TYPE_U64 },
};

int nl_parse_qdisc(const struct nlmsghdr *nlh, NlQdisc *ret) {
	const struct nlattr *tb[TCA_MAX + 1];
	const struct tcmsg *t;
	NlQdisc q = {};
	int r;

	if (nlh->nlmsg_type != RTM_NEWQDISC && nlh->nlmsg_type != RTM_DELQDISC)
		return -EBADMSG;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(struct tcmsg))
		return -EBADMSG;
	t = mnl_nlmsg_get_payload(nlh);
	r = nl_parse_attrs(nlh, sizeof(struct tcmsg), qdisc_policy, TCA_MAX, tb);
	if (r < 0)
		return r;
	q.ifindex = t->tcm_ifindex;
	q.handle = t->tcm_handle;
	q.parent = t->tcm_parent;
	if (tb[TCA_KIND])
		snprintf(q.kind, sizeof(q.kind), "%s", mnl_attr_get_str(tb[TCA_KIND]));
	if (streq(q.kind, "tbf") && tb[TCA_OPTIONS]) {
		const struct nlattr *ob[TCA_TBF_MAX + 1];
		struct tc_tbf_qopt qo;

		r = nl_parse_nested(tb[TCA_OPTIONS], tbf_policy, TCA_TBF_MAX, ob);
		if (r < 0)
			return r;
		if (ob[TCA_TBF_PARMS]) {
			memcpy(&qo, mnl_attr_get_payload(ob[TCA_TBF_PARMS]), sizeof(qo));
			q.has_tbf = true;
			q.tbf.rate = qo.rate.rate;
			q.tbf.buffer = qo.buffer;
			q.tbf.limit = qo.limit;
			if (ob[TCA_TBF_RATE64])
				q.tbf.rate = mnl_attr_get_u64(ob[TCA_TBF_RATE64]);
		}
	}
	*ret = q;
	return 0;
}

/* ---- calls ---- */

int nl_tc_tbf_set(NlSock *s, int ifindex, const NlTbf *tbf, bool replace) {
	NlMsgBuf buf;
	int r = nl_build_tc_tbf(&buf, ifindex, tbf, replace);

	return r < 0 ? r : nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_tc_ingress_add(NlSock *s, int ifindex) {
	NlMsgBuf buf;
	int r = nl_build_tc_ingress(&buf, ifindex);

	if (r < 0)
		return r;
	r = nl_sock_call(s, &buf.hdr, NULL, NULL);
	return r == -EEXIST ? 0 : r;
}

int nl_tc_qdisc_del(NlSock *s, int ifindex, uint32_t parent) {
	NlMsgBuf buf;
	int r = nl_build_tc_qdisc_del(&buf, ifindex, parent);

	return r < 0 ? r : nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_tc_mirred_redirect_add(NlSock *s, int ifindex, int target_ifindex) {
	NlMsgBuf buf;
	int r = nl_build_tc_mirred_redirect(&buf, ifindex, target_ifindex);

	return r < 0 ? r : nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_ifb_create(NlSock *s, const char *name, unsigned mtu) {
	NlMsgBuf buf;
	int r = nl_build_ifb(&buf, name, mtu);

	return r < 0 ? r : nl_sock_call(s, &buf.hdr, NULL, NULL);
}

typedef struct QdiscDump {
	int ifindex;
	int (*cb)(const NlQdisc *q, void *userdata);
	void *userdata;
} QdiscDump;

static int qdisc_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	QdiscDump *d = userdata;
	NlQdisc q;

	if (nl_parse_qdisc(nlh, &q) < 0)
		return 0; /* skip what we cannot read */
	if (d->ifindex > 0 && q.ifindex != d->ifindex)
		return 0;
	return d->cb(&q, d->userdata);
}

int nl_tc_qdisc_dump(NlSock *s, int ifindex, int (*cb)(const NlQdisc *q, void *userdata), void *userdata) {
	QdiscDump d = { .ifindex = ifindex, .cb = cb, .userdata = userdata };
	NlMsgBuf buf;

	if (!cb)
		return -EINVAL;
	/* Kernels filter the dump by tcm_ifindex; older ones ignore it, so filter again above. */
	tc_msg_new(&buf, RTM_GETQDISC, 0, ifindex, 0, 0, 0);
	return nl_sock_dump(s, &buf.hdr, qdisc_dump_cb, &d);
}
