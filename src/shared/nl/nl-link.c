/* SPDX-License-Identifier: Apache-2.0 */
/* Links: get/dump/parse, generic attribute changes, delete. Kind-specific creation is in nl-<kind>.c. */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"

static const NlPolicy link_policy[IFLA_MAX + 1] = {
	[IFLA_IFNAME] = { MNL_TYPE_NUL_STRING }, [IFLA_ADDRESS] = { MNL_TYPE_BINARY, 0 },
	[IFLA_MTU] = { MNL_TYPE_U32 },           [IFLA_MASTER] = { MNL_TYPE_U32 },
	[IFLA_LINK] = { MNL_TYPE_U32 },          [IFLA_LINK_NETNSID] = { MNL_TYPE_U32 },
	[IFLA_OPERSTATE] = { MNL_TYPE_U8 },      [IFLA_LINKINFO] = { MNL_TYPE_NESTED },
};

static const NlPolicy linkinfo_policy[IFLA_INFO_MAX + 1] = {
	[IFLA_INFO_KIND] = { MNL_TYPE_STRING },
	[IFLA_INFO_DATA] = { MNL_TYPE_NESTED },
};

static const NlPolicy br_policy[IFLA_BR_MAX + 1] = {
	[IFLA_BR_VLAN_FILTERING] = { MNL_TYPE_U8 },
};

static const NlPolicy vxlan_policy[IFLA_VXLAN_MAX + 1] = {
	[IFLA_VXLAN_ID] = { MNL_TYPE_U32 },          [IFLA_VXLAN_PORT] = { MNL_TYPE_U16 },
	[IFLA_VXLAN_LOCAL] = { MNL_TYPE_BINARY, 4 }, [IFLA_VXLAN_LOCAL6] = { MNL_TYPE_BINARY, 16 },
	[IFLA_VXLAN_LINK] = { MNL_TYPE_U32 },
};

static void parse_linkinfo(const struct nlattr *li, NlLink *l) {
	const struct nlattr *tb[IFLA_INFO_MAX + 1];

	if (nl_parse_nested(li, linkinfo_policy, IFLA_INFO_MAX, tb) < 0 || !tb[IFLA_INFO_KIND])
		return;
	/* IFLA_INFO_KIND is NUL-terminated in practice but declared NLA_STRING: copy by length. */
	size_t n = MIN((size_t) mnl_attr_get_payload_len(tb[IFLA_INFO_KIND]), sizeof(l->kind) - 1);
	memcpy(l->kind, mnl_attr_get_payload(tb[IFLA_INFO_KIND]), n);
	l->kind[n] = 0;
	if (!tb[IFLA_INFO_DATA])
		return;

	if (streq(l->kind, "bridge")) {
		const struct nlattr *bt[IFLA_BR_MAX + 1];
		if (nl_parse_nested(tb[IFLA_INFO_DATA], br_policy, IFLA_BR_MAX, bt) >= 0 && bt[IFLA_BR_VLAN_FILTERING])
			l->br_vlan_filtering = mnl_attr_get_u8(bt[IFLA_BR_VLAN_FILTERING]);
	} else if (streq(l->kind, "vxlan")) {
		const struct nlattr *vt[IFLA_VXLAN_MAX + 1];
		if (nl_parse_nested(tb[IFLA_INFO_DATA], vxlan_policy, IFLA_VXLAN_MAX, vt) < 0)
			return;
		if (vt[IFLA_VXLAN_ID])
			l->vxlan_id = mnl_attr_get_u32(vt[IFLA_VXLAN_ID]);
		if (vt[IFLA_VXLAN_PORT])
			l->vxlan_port = ntohs(mnl_attr_get_u16(vt[IFLA_VXLAN_PORT]));
		if (vt[IFLA_VXLAN_LINK])
			l->vxlan_link = (int) mnl_attr_get_u32(vt[IFLA_VXLAN_LINK]);
		if (vt[IFLA_VXLAN_LOCAL]) {
			l->vxlan_local.family = AF_INET;
			memcpy(&l->vxlan_local.in, mnl_attr_get_payload(vt[IFLA_VXLAN_LOCAL]), 4);
		} else if (vt[IFLA_VXLAN_LOCAL6]) {
			l->vxlan_local.family = AF_INET6;
			memcpy(&l->vxlan_local.in6, mnl_attr_get_payload(vt[IFLA_VXLAN_LOCAL6]), 16);
		}
	}
}

int nl_parse_link(const struct nlmsghdr *nlh, NlLink *ret) {
	const struct nlattr *tb[IFLA_MAX + 1];
	const struct ifinfomsg *ifi;
	NlLink l = { .link_netnsid = -1 };
	int r;

	if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK)
		return -EBADMSG;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifi))
		return -EBADMSG;
	ifi = mnl_nlmsg_get_payload(nlh);
	r = nl_parse_attrs(nlh, sizeof(*ifi), link_policy, IFLA_MAX, tb);
	if (r < 0)
		return r;
	/* AF_BRIDGE RTM_NEWLINK notifications describe bridge ports; they still name a link. */
	l.ifindex = ifi->ifi_index;
	l.flags = ifi->ifi_flags;
	l.promisc = !!(ifi->ifi_flags & IFF_PROMISC);
	if (tb[IFLA_IFNAME])
		snprintf(l.name, sizeof(l.name), "%s", mnl_attr_get_str(tb[IFLA_IFNAME]));
	if (tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(tb[IFLA_ADDRESS]) == 6) {
		memcpy(l.mac, mnl_attr_get_payload(tb[IFLA_ADDRESS]), 6);
		l.has_mac = true;
	}
	if (tb[IFLA_MTU])
		l.mtu = mnl_attr_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_MASTER])
		l.master = (int) mnl_attr_get_u32(tb[IFLA_MASTER]);
	if (tb[IFLA_LINK])
		l.link = (int) mnl_attr_get_u32(tb[IFLA_LINK]);
	if (tb[IFLA_LINK_NETNSID])
		l.link_netnsid = (int) mnl_attr_get_u32(tb[IFLA_LINK_NETNSID]);
	if (tb[IFLA_OPERSTATE])
		l.operstate = mnl_attr_get_u8(tb[IFLA_OPERSTATE]);
	if (tb[IFLA_LINKINFO])
		parse_linkinfo(tb[IFLA_LINKINFO], &l);
	*ret = l;
	return 0;
}

/* ip link show [dev NAME | index N] */
int nl_build_link_get(NlMsgBuf *buf, const char *name, int ifindex) {
	struct nlmsghdr *nlh = nl_msg_new(buf, RTM_GETLINK, 0, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	ifi->ifi_family = AF_UNSPEC;
	if (ifindex > 0)
		ifi->ifi_index = ifindex;
	else if (nl_ifname_valid(name))
		NL_PUT_STRZ(nlh, IFLA_IFNAME, name);
	else
		return -EINVAL;
	/* Skip the (large) statistics blocks. */
	NL_PUT_U32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return 0;
}

/* ip link del {dev NAME | index N} */
int nl_build_link_del(NlMsgBuf *buf, const char *name, int ifindex) {
	struct nlmsghdr *nlh = nl_msg_new(buf, RTM_DELLINK, 0, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	ifi->ifi_family = AF_UNSPEC;
	if (ifindex > 0)
		ifi->ifi_index = ifindex;
	else if (nl_ifname_valid(name))
		NL_PUT_STRZ(nlh, IFLA_IFNAME, name);
	else
		return -EINVAL;
	return 0;
}

/* ip link set dev IDX [up|down] [promisc on|off] [allmulticast on|off] [mtu N] [address MAC] [master M|nomaster]
 *                     [name NAME] [netns FD] */
int nl_build_link_change(NlMsgBuf *buf, const NlLinkChange *c) {
	struct nlmsghdr *nlh = nl_msg_new(buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	if (c->ifindex <= 0)
		return -EINVAL;
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = c->ifindex;
	if (c->up >= 0) {
		ifi->ifi_change |= IFF_UP;
		if (c->up)
			ifi->ifi_flags |= IFF_UP;
	}
	if (c->promisc >= 0) {
		ifi->ifi_change |= IFF_PROMISC;
		if (c->promisc)
			ifi->ifi_flags |= IFF_PROMISC;
	}
	if (c->allmulti >= 0) {
		ifi->ifi_change |= IFF_ALLMULTI;
		if (c->allmulti)
			ifi->ifi_flags |= IFF_ALLMULTI;
	}
	if (c->mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, c->mtu);
	if (c->mac)
		NL_PUT(nlh, IFLA_ADDRESS, 6, c->mac);
	if (c->master >= 0)
		NL_PUT_U32(nlh, IFLA_MASTER, (uint32_t) c->master);
	if (c->name) {
		if (!nl_ifname_valid(c->name))
			return -EINVAL;
		NL_PUT_STRZ(nlh, IFLA_IFNAME, c->name);
	}
	if (c->netns_fd >= 0)
		NL_PUT_U32(nlh, IFLA_NET_NS_FD, (uint32_t) c->netns_fd);
	return 0;
}

int nl_build_stacked_link_begin(NlMsgBuf *buf, const char *name, int parent, unsigned mtu, const uint8_t *mac,
				int netns_fd, const char *kind, struct nlattr **ret_linkinfo,
				struct nlattr **ret_data) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;

	if (!nl_ifname_valid(name) || parent <= 0)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, name);
	NL_PUT_U32(nlh, IFLA_LINK, (uint32_t) parent);
	if (mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, mtu);
	if (mac)
		NL_PUT(nlh, IFLA_ADDRESS, 6, mac);
	if (netns_fd >= 0)
		NL_PUT_U32(nlh, IFLA_NET_NS_FD, (uint32_t) netns_fd);
	NL_NEST_START(nlh, *ret_linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, kind);
	NL_NEST_START(nlh, *ret_data, IFLA_INFO_DATA);
	return 0;
}

void nl_build_stacked_link_end(NlMsgBuf *buf, struct nlattr *linkinfo, struct nlattr *data) {
	mnl_attr_nest_end(&buf->hdr, data);
	mnl_attr_nest_end(&buf->hdr, linkinfo);
}

int nl_link_create_built(NlSock *s, NlMsgBuf *buf, int build_result) {
	if (build_result < 0)
		return build_result;
	return nl_sock_call(s, &buf->hdr, NULL, NULL);
}

static int link_get_cb(const struct nlmsghdr *nlh, void *userdata) {
	return nl_parse_link(nlh, userdata);
}

int nl_link_get(NlSock *s, const char *name, int ifindex, NlLink *ret) {
	NlMsgBuf buf;
	NlLink l = {};
	int r;

	if (ifindex <= 0 && isempty(name))
		return -EINVAL;
	if (ifindex <= 0 && !nl_ifname_valid(name))
		return -ENODEV; /* no such name can exist */
	r = nl_build_link_get(&buf, name, ifindex);
	if (r < 0)
		return r;
	l.ifindex = 0;
	r = nl_sock_call(s, &buf.hdr, link_get_cb, &l);
	if (r < 0)
		return r;
	if (l.ifindex <= 0)
		return -ENODEV;
	if (ret)
		*ret = l;
	return 0;
}

typedef struct LinkDumpCtx {
	int (*cb)(const NlLink *l, void *userdata);
	void *userdata;
} LinkDumpCtx;

static int link_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	LinkDumpCtx *c = userdata;
	NlLink l;

	if (nl_parse_link(nlh, &l) < 0)
		return 0;
	return c->cb(&l, c->userdata);
}

/* ip link show */
int nl_link_dump(NlSock *s, int (*cb)(const NlLink *l, void *userdata), void *userdata) {
	LinkDumpCtx c = { cb, userdata };
	NlMsgBuf buf;
	struct nlmsghdr *nlh = nl_msg_new(&buf, RTM_GETLINK, 0, sizeof(struct ifinfomsg));

	if (!cb)
		return -EINVAL;
	NL_PUT_U32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return nl_sock_dump(s, nlh, link_dump_cb, &c);
}

static int link_change(NlSock *s, const NlLinkChange *c) {
	NlMsgBuf buf;
	int r = nl_build_link_change(&buf, c);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_link_set_up(NlSock *s, int ifindex, bool up) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	c.up = up;
	return link_change(s, &c);
}

int nl_link_set_mtu(NlSock *s, int ifindex, unsigned mtu) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	if (mtu == 0)
		return -EINVAL;
	c.mtu = mtu;
	return link_change(s, &c);
}

int nl_link_set_mac(NlSock *s, int ifindex, const uint8_t mac[6]) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	if (!mac)
		return -EINVAL;
	c.mac = mac;
	return link_change(s, &c);
}

int nl_link_set_master(NlSock *s, int ifindex, int master_ifindex) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	c.master = master_ifindex > 0 ? master_ifindex : 0;
	return link_change(s, &c);
}

int nl_link_set_promisc(NlSock *s, int ifindex, bool on) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	c.promisc = on;
	return link_change(s, &c);
}

int nl_link_set_allmulti(NlSock *s, int ifindex, bool on) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	c.allmulti = on;
	return link_change(s, &c);
}

int nl_link_set_name(NlSock *s, int ifindex, const char *name) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	if (!name)
		return -EINVAL;
	c.name = name;
	return link_change(s, &c);
}

int nl_link_set_netns(NlSock *s, int ifindex, int netns_fd) {
	NlLinkChange c = NL_LINK_CHANGE_INIT(ifindex);
	if (netns_fd < 0)
		return -EBADF;
	c.netns_fd = netns_fd;
	return link_change(s, &c);
}

int nl_link_del(NlSock *s, int ifindex) {
	NlMsgBuf buf;
	int r;

	if (ifindex <= 0)
		return -EINVAL;
	r = nl_build_link_del(&buf, NULL, ifindex);
	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_link_del_by_name(NlSock *s, const char *name) {
	NlMsgBuf buf;
	int r;

	if (isempty(name))
		return -EINVAL;
	if (!nl_ifname_valid(name))
		return -ENODEV;
	r = nl_build_link_del(&buf, name, 0);
	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
