/* SPDX-License-Identifier: Apache-2.0 */
/* Routes: add/replace/delete, dump, route-get. See nl.h for the scope rule. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"

static const NlPolicy route_policy[RTA_MAX + 1] = {
	[RTA_DST] = { MNL_TYPE_BINARY, 4 },     [RTA_GATEWAY] = { MNL_TYPE_BINARY, 4 },
	[RTA_PREFSRC] = { MNL_TYPE_BINARY, 4 }, [RTA_OIF] = { MNL_TYPE_U32 },
	[RTA_PRIORITY] = { MNL_TYPE_U32 },      [RTA_TABLE] = { MNL_TYPE_U32 },
	[RTA_METRICS] = { MNL_TYPE_NESTED },
};

static const NlPolicy metrics_policy[RTAX_MAX + 1] = {
	[RTAX_MTU] = { MNL_TYPE_U32 },
	[RTAX_ADVMSS] = { MNL_TYPE_U32 },
};

void nl_route_init(NlRoute *r) {
	*r = (NlRoute) {};
}

static uint8_t route_default_scope(const NlRoute *r) {
	uint8_t type = r->type ? r->type : RTN_UNICAST;

	if (r->scope != 0)
		return r->scope;
	if (type == RTN_LOCAL || type == RTN_NAT)
		return RT_SCOPE_HOST;
	if (type == RTN_BROADCAST || type == RTN_MULTICAST || type == RTN_ANYCAST)
		return RT_SCOPE_LINK;
	if (type == RTN_UNICAST && !ip_addr_is_set(&r->gw))
		return RT_SCOPE_LINK;
	return RT_SCOPE_UNIVERSE;
}

/* ip route {add|replace|del} [TYPE] DST/LEN [via GW] [dev OIF] [onlink] [metric PRIO] [table T]
 *     [proto P] [scope S] [mtu M] [advmss A] */
int nl_build_route(NlMsgBuf *buf, bool add, const NlRoute *r, int flags) {
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	uint16_t nlflags = 0;
	int family;
	unsigned size;
	uint32_t table;

	if (!r)
		return -EINVAL;
	family = r->dst.addr.family;
	size = ip_addr_size(family);
	if (size == 0)
		return -EAFNOSUPPORT;
	if (r->dst.len > ip_family_bits(family))
		return -EINVAL;
	if (ip_addr_is_set(&r->gw) && r->gw.family != family)
		return -EINVAL; /* RTA_VIA (v4 over v6 gateway) is not supported */
	if (r->oif < 0)
		return -EINVAL;
	if (add)
		nlflags = NLM_F_CREATE | ((flags & NL_ROUTE_REPLACE) ? NLM_F_REPLACE : NLM_F_EXCL);

	nlh = nl_msg_new(buf, add ? RTM_NEWROUTE : RTM_DELROUTE, nlflags, sizeof(struct rtmsg));
	rtm = mnl_nlmsg_get_payload(nlh);
	table = r->table ? r->table : RT_TABLE_MAIN;
	rtm->rtm_family = family;
	rtm->rtm_dst_len = r->dst.len;
	/* rtm_table is 8 bits; RTA_TABLE carries the full number and always wins. */
	rtm->rtm_table = table < 256 ? table : RT_TABLE_UNSPEC;
	if (add) {
		rtm->rtm_protocol = r->protocol ? r->protocol : RTPROT_BOOT;
		rtm->rtm_scope = route_default_scope(r);
		rtm->rtm_type = r->type ? r->type : RTN_UNICAST;
	} else {
		/* Wildcards unless the caller asked for something specific. */
		rtm->rtm_protocol = r->protocol;
		rtm->rtm_scope = r->scope ? r->scope : RT_SCOPE_NOWHERE;
		rtm->rtm_type = r->type;
	}
	if (r->onlink)
		rtm->rtm_flags |= RTNH_F_ONLINK;

	if (r->dst.len > 0 || family == AF_INET6) {
		/* Send the network, not the host bits: the kernel refuses 10.0.0.5/24 as a route. */
		IpPrefix net = ip_prefix_mask(&r->dst);
		NL_PUT(nlh, RTA_DST, size, net.addr.bytes);
	}
	if (ip_addr_is_set(&r->gw))
		NL_PUT(nlh, RTA_GATEWAY, size, r->gw.bytes);
	if (add && ip_addr_is_set(&r->prefsrc)) {
		if (r->prefsrc.family != family)
			return -EINVAL;
		NL_PUT(nlh, RTA_PREFSRC, size, r->prefsrc.bytes);
	}
	if (r->oif > 0)
		NL_PUT_U32(nlh, RTA_OIF, (uint32_t) r->oif);
	if (r->priority > 0)
		NL_PUT_U32(nlh, RTA_PRIORITY, r->priority);
	NL_PUT_U32(nlh, RTA_TABLE, table);
	if (add && (r->mtu > 0 || r->advmss > 0)) {
		struct nlattr *m;
		NL_NEST_START(nlh, m, RTA_METRICS);
		if (r->mtu > 0)
			NL_PUT_U32(nlh, RTAX_MTU, r->mtu);
		if (r->advmss > 0)
			NL_PUT_U32(nlh, RTAX_ADVMSS, r->advmss);
		mnl_attr_nest_end(nlh, m);
	}
	return 0;
}

int nl_route_add(NlSock *s, const NlRoute *r, int flags) {
	NlMsgBuf buf;
	int k = nl_build_route(&buf, true, r, flags);

	if (k < 0)
		return k;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_route_del(NlSock *s, const NlRoute *r) {
	NlMsgBuf buf;
	int k = nl_build_route(&buf, false, r, 0);

	if (k < 0)
		return k;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_parse_route(const struct nlmsghdr *nlh, NlRoute *ret) {
	const struct nlattr *tb[RTA_MAX + 1];
	const struct rtmsg *rtm;
	NlRoute out = {};
	unsigned size;
	int r;

	if (nlh->nlmsg_type != RTM_NEWROUTE && nlh->nlmsg_type != RTM_DELROUTE)
		return -EBADMSG;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm))
		return -EBADMSG;
	rtm = mnl_nlmsg_get_payload(nlh);
	size = ip_addr_size(rtm->rtm_family);
	if (size == 0)
		return -EAFNOSUPPORT;
	if (rtm->rtm_dst_len > ip_family_bits(rtm->rtm_family))
		return -EBADMSG;
	r = nl_parse_attrs(nlh, sizeof(*rtm), route_policy, RTA_MAX, tb);
	if (r < 0)
		return r;

	out.dst.addr.family = rtm->rtm_family;
	out.dst.len = rtm->rtm_dst_len;
	if (tb[RTA_DST]) {
		if (mnl_attr_get_payload_len(tb[RTA_DST]) < size)
			return -EBADMSG;
		memcpy(out.dst.addr.bytes, mnl_attr_get_payload(tb[RTA_DST]), size);
	}
	if (tb[RTA_GATEWAY]) {
		if (mnl_attr_get_payload_len(tb[RTA_GATEWAY]) < size)
			return -EBADMSG;
		out.gw.family = rtm->rtm_family;
		memcpy(out.gw.bytes, mnl_attr_get_payload(tb[RTA_GATEWAY]), size);
	}
	if (tb[RTA_PREFSRC]) {
		if (mnl_attr_get_payload_len(tb[RTA_PREFSRC]) < size)
			return -EBADMSG;
		out.prefsrc.family = rtm->rtm_family;
		memcpy(out.prefsrc.bytes, mnl_attr_get_payload(tb[RTA_PREFSRC]), size);
	}
	if (tb[RTA_OIF])
		out.oif = (int) mnl_attr_get_u32(tb[RTA_OIF]);
	if (tb[RTA_PRIORITY])
		out.priority = mnl_attr_get_u32(tb[RTA_PRIORITY]);
	out.table = tb[RTA_TABLE] ? mnl_attr_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
	if (out.table == RT_TABLE_MAIN)
		out.table = 0;
	if (tb[RTA_METRICS]) {
		const struct nlattr *mt[RTAX_MAX + 1];
		r = nl_parse_nested(tb[RTA_METRICS], metrics_policy, RTAX_MAX, mt);
		if (r < 0)
			return r;
		if (mt[RTAX_MTU])
			out.mtu = mnl_attr_get_u32(mt[RTAX_MTU]);
		if (mt[RTAX_ADVMSS])
			out.advmss = mnl_attr_get_u32(mt[RTAX_ADVMSS]);
	}
	out.scope = rtm->rtm_scope;
	out.protocol = rtm->rtm_protocol;
	out.type = rtm->rtm_type;
	out.onlink = !!(rtm->rtm_flags & RTNH_F_ONLINK);
	*ret = out;
	return 0;
}

typedef struct RouteDumpCtx {
	int family;
	uint32_t table;
	int (*cb)(const NlRoute *r, void *userdata);
	void *userdata;
} RouteDumpCtx;

static int route_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	RouteDumpCtx *c = userdata;
	const struct rtmsg *rtm;
	NlRoute rt;

	if (nlh->nlmsg_type != RTM_NEWROUTE || mnl_nlmsg_get_payload_len(nlh) < sizeof(*rtm))
		return 0;
	rtm = mnl_nlmsg_get_payload(nlh);
	if (rtm->rtm_flags & RTM_F_CLONED)
		return 0;
	if (nl_parse_route(nlh, &rt) < 0)
		return 0;
	if (c->family != AF_UNSPEC && rt.dst.addr.family != c->family)
		return 0;
	if (c->table != NL_ROUTE_TABLE_ALL && rt.table != c->table)
		return 0;
	return c->cb(&rt, c->userdata);
}

/* ip route show [table T] */
int nl_route_dump(NlSock *s, int family, uint32_t table, int (*cb)(const NlRoute *r, void *userdata), void *userdata) {
	RouteDumpCtx c = { family, table == RT_TABLE_MAIN ? 0 : table, cb, userdata };
	NlMsgBuf buf;
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;

	if (!cb || (family != AF_UNSPEC && family != AF_INET && family != AF_INET6))
		return -EINVAL;
	nlh = nl_msg_new(&buf, RTM_GETROUTE, 0, sizeof(struct rtmsg));
	rtm = mnl_nlmsg_get_payload(nlh);
	rtm->rtm_family = family;
	return nl_sock_dump(s, nlh, route_dump_cb, &c);
}

/* ip route get DST */
int nl_build_route_get(NlMsgBuf *buf, const IpAddr *dst) {
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	unsigned size;

	if (!dst)
		return -EINVAL;
	size = ip_addr_size(dst->family);
	if (size == 0)
		return -EAFNOSUPPORT;
	nlh = nl_msg_new(buf, RTM_GETROUTE, 0, sizeof(struct rtmsg));
	rtm = mnl_nlmsg_get_payload(nlh);
	rtm->rtm_family = dst->family;
	rtm->rtm_dst_len = size * 8;
	NL_PUT(nlh, RTA_DST, size, dst->bytes);
	return 0;
}

static int route_get_cb(const struct nlmsghdr *nlh, void *userdata) {
	return nl_parse_route(nlh, userdata);
}

int nl_route_get(NlSock *s, const IpAddr *dst, NlRoute *ret) {
	NlMsgBuf buf;
	NlRoute rt = {};
	int r;

	r = nl_build_route_get(&buf, dst);
	if (r < 0)
		return r;
	r = nl_sock_call(s, &buf.hdr, route_get_cb, &rt);
	if (r < 0)
		return r;
	if (rt.dst.addr.family == AF_UNSPEC)
		return -ENOENT; /* ACK without a route message: should not happen */
	if (ret)
		*ret = rt;
	return 0;
}
