/* SPDX-License-Identifier: Apache-2.0 */
/* 802.1Q VLAN devices, created directly in the pod's namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "nl/nl-internal.h"
#include "nl/nl-kinds.h"

/* ip link add NAME link PARENT [mtu MTU] [netns NETNS_FD] type vlan id ID
 * (protocol 802.1Q is the kernel's default: IFLA_VLAN_PROTOCOL is not sent) */
int nl_build_vlan(NlMsgBuf *buf, const NlVlanConfig *c) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;

	if (!c || !nl_ifname_valid(c->name) || c->parent <= 0 || c->vlan_id > 4094)
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
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "vlan");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	NL_PUT_U16(nlh, IFLA_VLAN_ID, c->vlan_id);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_vlan_create(NlSock *s, const NlVlanConfig *c) {
	NlMsgBuf buf;
	int r = nl_build_vlan(&buf, c);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
