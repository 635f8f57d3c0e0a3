/* SPDX-License-Identifier: Apache-2.0 */
/* Link details beyond NlLink (kind data, alias) and moving a link to another namespace renamed. */

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
#include "shared/nl/nl-kinds.h"

const char *nl_macvlan_mode_to_string(uint32_t mode) {
	switch (mode) {
	case MACVLAN_MODE_BRIDGE: return "bridge";
	case MACVLAN_MODE_PRIVATE: return "private";
	case MACVLAN_MODE_VEPA: return "vepa";
	case MACVLAN_MODE_PASSTHRU: return "passthru";
	default: return "unknown";
	}
}

static const NlPolicy info_link_policy[IFLA_MAX + 1] = {
	[IFLA_IFALIAS] = { MNL_TYPE_STRING },
	[IFLA_LINKINFO] = { MNL_TYPE_NESTED },
};
static const NlPolicy info_linkinfo_policy[IFLA_INFO_MAX + 1] = {
	[IFLA_INFO_KIND] = { MNL_TYPE_STRING },
	[IFLA_INFO_DATA] = { MNL_TYPE_NESTED },
};
static const NlPolicy info_macvlan_policy[IFLA_MACVLAN_MAX + 1] = {
	[IFLA_MACVLAN_MODE] = { MNL_TYPE_U32 },
};
static const NlPolicy info_ipvlan_policy[IFLA_IPVLAN_MAX + 1] = {
	[IFLA_IPVLAN_MODE] = { MNL_TYPE_U16 },
};
static const NlPolicy info_vlan_policy[IFLA_VLAN_MAX + 1] = {
	[IFLA_VLAN_ID] = { MNL_TYPE_U16 },
};

/* Strings declared NLA_STRING may lack the NUL: copy by length. */
static void copy_str_attr(const struct nlattr *a, char *buf, size_t size) {
	size_t n = MIN((size_t) mnl_attr_get_payload_len(a), size - 1);

	memcpy(buf, mnl_attr_get_payload(a), n);
	buf[n] = 0;
}

static void parse_info_data(const struct nlattr *data, NlLinkInfo *l) {
	if (streq(l->kind, "macvlan") || streq(l->kind, "macvtap")) {
		const struct nlattr *t[IFLA_MACVLAN_MAX + 1];
		if (nl_parse_nested(data, info_macvlan_policy, IFLA_MACVLAN_MAX, t) >= 0 && t[IFLA_MACVLAN_MODE]) {
			l->has_mode = true;
			l->mode = mnl_attr_get_u32(t[IFLA_MACVLAN_MODE]);
		}
	} else if (streq(l->kind, "ipvlan") || streq(l->kind, "ipvtap")) {
		const struct nlattr *t[IFLA_IPVLAN_MAX + 1];
		if (nl_parse_nested(data, info_ipvlan_policy, IFLA_IPVLAN_MAX, t) >= 0 && t[IFLA_IPVLAN_MODE]) {
			l->has_mode = true;
			l->mode = mnl_attr_get_u16(t[IFLA_IPVLAN_MODE]);
		}
	} else if (streq(l->kind, "vlan")) {
		const struct nlattr *t[IFLA_VLAN_MAX + 1];
		if (nl_parse_nested(data, info_vlan_policy, IFLA_VLAN_MAX, t) >= 0 && t[IFLA_VLAN_ID]) {
			l->has_vlan_id = true;
			l->vlan_id = mnl_attr_get_u16(t[IFLA_VLAN_ID]);
		}
	}
}

int nl_parse_link_info(const struct nlmsghdr *nlh, NlLinkInfo *ret) {
	const struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
	NlLinkInfo l = {};
	int r;

	if (nlh->nlmsg_type != RTM_NEWLINK || mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ifinfomsg))
		return -EBADMSG;
	r = nl_parse_attrs(nlh, sizeof(struct ifinfomsg), info_link_policy, IFLA_MAX, tb);
	if (r < 0)
		return r;
	if (tb[IFLA_IFALIAS])
		copy_str_attr(tb[IFLA_IFALIAS], l.alias, sizeof(l.alias));
	if (tb[IFLA_LINKINFO] && nl_parse_nested(tb[IFLA_LINKINFO], info_linkinfo_policy, IFLA_INFO_MAX, li) >= 0 &&
	    li[IFLA_INFO_KIND]) {
		copy_str_attr(li[IFLA_INFO_KIND], l.kind, sizeof(l.kind));
		if (li[IFLA_INFO_DATA])
			parse_info_data(li[IFLA_INFO_DATA], &l);
	}
	*ret = l;
	return 0;
}

static int link_info_cb(const struct nlmsghdr *nlh, void *userdata) {
	return nl_parse_link_info(nlh, userdata);
}

int nl_link_get_info(NlSock *s, const char *name, int ifindex, NlLinkInfo *ret) {
	NlLinkInfo l = {};
	NlMsgBuf buf;
	int r;

	r = nl_build_link_get(&buf, name, ifindex);
	if (r < 0)
		return r;
	r = nl_sock_call(s, &buf.hdr, link_info_cb, &l);
	if (r < 0)
		return r;
	*ret = l;
	return 0;
}

/* ip link set dev IFINDEX alias ALIAS */
int nl_build_link_alias(NlMsgBuf *buf, int ifindex, const char *alias) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;

	if (ifindex <= 0 || !alias || strlen(alias) >= NL_IFALIAS_MAX)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	/* An empty IFLA_IFALIAS removes the alias. */
	NL_PUT(nlh, IFLA_IFALIAS, strlen(alias), alias);
	return 0;
}

int nl_link_set_alias(NlSock *s, int ifindex, const char *alias) {
	NlMsgBuf buf;
	int r = nl_build_link_alias(&buf, ifindex, alias);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

/* ip link set dev IFINDEX netns NETNS_FD
 * (No IFLA_IFNAME: the kernel would use it as the name in the target only when the current name
 * is taken there, and otherwise rename after the move, so a failed rename leaves the link moved.
 * Callers rename before and after, each step with its own undo.) */
int nl_build_link_move(NlMsgBuf *buf, int ifindex, int netns_fd) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;

	if (ifindex <= 0 || netns_fd < 0)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	NL_PUT_U32(nlh, IFLA_NET_NS_FD, (uint32_t) netns_fd);
	return 0;
}

int nl_link_move(NlSock *s, int ifindex, int netns_fd) {
	NlMsgBuf buf;
	int r = nl_build_link_move(&buf, ifindex, netns_fd);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
