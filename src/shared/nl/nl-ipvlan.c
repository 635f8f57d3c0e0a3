/* SPDX-License-Identifier: Apache-2.0 */
/* ipvlan devices, created directly in the pod's namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "nl/nl-internal.h"
#include "nl/nl-kinds.h"

int nl_ipvlan_mode_from_string(const char *mode) {
	if (isempty(mode) || streq(mode, "l2"))
		return IPVLAN_MODE_L2;
	if (streq(mode, "l3"))
		return IPVLAN_MODE_L3;
	if (streq(mode, "l3s"))
		return IPVLAN_MODE_L3S;
	return -EINVAL;
}

const char *nl_ipvlan_mode_to_string(int mode) {
	switch (mode) {
	case IPVLAN_MODE_L2:
		return "l2";
	case IPVLAN_MODE_L3:
		return "l3";
	case IPVLAN_MODE_L3S:
		return "l3s";
	default:
		return "unknown";
	}
}

/* ip link add NAME link PARENT [mtu MTU] [netns NETNS_FD] type ipvlan mode MODE */
int nl_build_ipvlan(NlMsgBuf *buf, const NlIpvlanConfig *c) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;

	if (!c || !nl_ifname_valid(c->name) || c->parent <= 0 || c->mode >= IPVLAN_MODE_MAX)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, c->name);
	NL_PUT_U32(nlh, IFLA_LINK, (uint32_t) c->parent);
	if (c->mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, c->mtu);
	if (c->netns_fd >= 0)
		NL_PUT_U32(nlh, IFLA_NET_NS_FD, (uint32_t) c->netns_fd);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "ipvlan");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	NL_PUT_U16(nlh, IFLA_IPVLAN_MODE, c->mode);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_ipvlan_create(NlSock *s, const NlIpvlanConfig *c) {
	NlMsgBuf buf;
	int r = nl_build_ipvlan(&buf, c);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
