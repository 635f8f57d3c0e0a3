/* SPDX-License-Identifier: Apache-2.0 */
/* Neighbours (ARP/NDP) and bridge/vxlan forwarding database entries. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"

static const NlPolicy neigh_policy[NDA_MAX + 1] = {
	[NDA_DST] = { MNL_TYPE_BINARY, 4 },
	[NDA_LLADDR] = { MNL_TYPE_BINARY, 0 },
};

/* ip neigh {replace|add|del} IP lladdr MAC dev IFINDEX nud STATE */
int nl_build_neigh(NlMsgBuf *buf, bool add, int ifindex, const IpAddr *ip, const uint8_t *mac, uint16_t state,
		   bool replace) {
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;
	unsigned size;

	if (ifindex <= 0 || !ip)
		return -EINVAL;
	size = ip_addr_size(ip->family);
	if (size == 0)
		return -EAFNOSUPPORT;
	if (add && !mac)
		return -EINVAL;
	nlh = nl_msg_new(buf, add ? RTM_NEWNEIGH : RTM_DELNEIGH,
			 add ? NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL) : 0, sizeof(struct ndmsg));
	ndm = mnl_nlmsg_get_payload(nlh);
	ndm->ndm_family = ip->family;
	ndm->ndm_ifindex = ifindex;
	ndm->ndm_state = add ? (state ? state : NUD_PERMANENT) : 0;
	NL_PUT(nlh, NDA_DST, size, ip->bytes);
	if (add)
		NL_PUT(nlh, NDA_LLADDR, 6, mac);
	return 0;
}

int nl_neigh_add(NlSock *s, int ifindex, const IpAddr *ip, const uint8_t mac[6], uint16_t state, bool replace) {
	NlMsgBuf buf;
	int r = nl_build_neigh(&buf, true, ifindex, ip, mac, state, replace);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_neigh_del(NlSock *s, int ifindex, const IpAddr *ip) {
	NlMsgBuf buf;
	int r = nl_build_neigh(&buf, false, ifindex, ip, NULL, 0, false);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

/* bridge fdb {append|replace|del} MAC dev IFINDEX [dst DST] self permanent */
int nl_build_fdb(NlMsgBuf *buf, bool add, int ifindex, const uint8_t mac[6], const IpAddr *dst, bool replace) {
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;
	uint16_t flags = 0;

	if (ifindex <= 0 || !mac)
		return -EINVAL;
	if (dst && dst->family != AF_UNSPEC && ip_addr_size(dst->family) == 0)
		return -EAFNOSUPPORT;
	if (add)
		flags = NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_APPEND);
	nlh = nl_msg_new(buf, add ? RTM_NEWNEIGH : RTM_DELNEIGH, flags, sizeof(struct ndmsg));
	ndm = mnl_nlmsg_get_payload(nlh);
	ndm->ndm_family = AF_BRIDGE;
	ndm->ndm_ifindex = ifindex;
	ndm->ndm_flags = NTF_SELF;
	ndm->ndm_state = NUD_PERMANENT;
	NL_PUT(nlh, NDA_LLADDR, 6, mac);
	if (dst && dst->family != AF_UNSPEC)
		NL_PUT(nlh, NDA_DST, ip_addr_size(dst->family), dst->bytes);
	return 0;
}

int nl_fdb_add(NlSock *s, int ifindex, const uint8_t mac[6], const IpAddr *dst, bool replace) {
	NlMsgBuf buf;
	int r = nl_build_fdb(&buf, true, ifindex, mac, dst, replace);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_fdb_del(NlSock *s, int ifindex, const uint8_t mac[6], const IpAddr *dst) {
	NlMsgBuf buf;
	int r = nl_build_fdb(&buf, false, ifindex, mac, dst, false);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_parse_neigh(const struct nlmsghdr *nlh, NlNeigh *ret) {
	const struct nlattr *tb[NDA_MAX + 1];
	const struct ndmsg *ndm;
	NlNeigh out = {};
	int r;

	if (nlh->nlmsg_type != RTM_NEWNEIGH && nlh->nlmsg_type != RTM_DELNEIGH)
		return -EBADMSG;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ndm))
		return -EBADMSG;
	ndm = mnl_nlmsg_get_payload(nlh);
	if (ndm->ndm_family != AF_INET && ndm->ndm_family != AF_INET6 && ndm->ndm_family != AF_BRIDGE)
		return -EAFNOSUPPORT;
	r = nl_parse_attrs(nlh, sizeof(*ndm), neigh_policy, NDA_MAX, tb);
	if (r < 0)
		return r;
	out.ifindex = ndm->ndm_ifindex;
	out.family = ndm->ndm_family;
	out.state = ndm->ndm_state;
	out.flags = ndm->ndm_flags;
	if (tb[NDA_DST]) {
		/* The address family of NDA_DST follows its length (FDB entries carry either). */
		uint16_t len = mnl_attr_get_payload_len(tb[NDA_DST]);
		if (len == 4)
			out.dst.family = AF_INET;
		else if (len == 16)
			out.dst.family = AF_INET6;
		else
			return -EBADMSG;
		memcpy(out.dst.bytes, mnl_attr_get_payload(tb[NDA_DST]), len);
	}
	if (tb[NDA_LLADDR] && mnl_attr_get_payload_len(tb[NDA_LLADDR]) == 6)
		memcpy(out.mac, mnl_attr_get_payload(tb[NDA_LLADDR]), 6);
	*ret = out;
	return 0;
}

typedef struct NeighDumpCtx {
	int family, ifindex;
	int (*cb)(const NlNeigh *n, void *userdata);
	void *userdata;
} NeighDumpCtx;

static int neigh_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	NeighDumpCtx *c = userdata;
	NlNeigh n;

	if (nl_parse_neigh(nlh, &n) < 0)
		return 0;
	if (c->family != AF_UNSPEC && n.family != c->family)
		return 0;
	if (c->ifindex > 0 && n.ifindex != c->ifindex)
		return 0;
	return c->cb(&n, c->userdata);
}

/* ip neigh show [dev IFINDEX] / bridge fdb show [dev IFINDEX] (family AF_BRIDGE) */
int nl_neigh_dump(NlSock *s, int family, int ifindex, int (*cb)(const NlNeigh *n, void *userdata), void *userdata) {
	NeighDumpCtx c = { family, ifindex, cb, userdata };
	NlMsgBuf buf;
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;

	if (!cb || (family != AF_UNSPEC && family != AF_INET && family != AF_INET6 && family != AF_BRIDGE))
		return -EINVAL;
	nlh = nl_msg_new(&buf, RTM_GETNEIGH, 0, sizeof(struct ndmsg));
	ndm = mnl_nlmsg_get_payload(nlh);
	ndm->ndm_family = family;
	return nl_sock_dump(s, nlh, neigh_dump_cb, &c);
}
