/* SPDX-License-Identifier: Apache-2.0 */
/* macvlan devices, created directly in the pod's namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "nl/nl-internal.h"

int nl_macvlan_mode_from_string(const char *mode) {
	if (isempty(mode) || streq(mode, "bridge"))
		return MACVLAN_MODE_BRIDGE;
	if (streq(mode, "private"))
		return MACVLAN_MODE_PRIVATE;
	if (streq(mode, "vepa"))
		return MACVLAN_MODE_VEPA;
	if (streq(mode, "passthru"))
		return MACVLAN_MODE_PASSTHRU;
	return -EINVAL;
}

/* ip link add NAME link PARENT [mtu MTU] [address MAC] [netns NETNS_FD] type macvlan mode MODE */
int nl_build_macvlan(NlMsgBuf *buf, const NlMacvlanConfig *c) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;
	uint32_t mode;

	if (!c || !nl_ifname_valid(c->name) || c->parent <= 0)
		return -EINVAL;
	mode = c->mode ? c->mode : MACVLAN_MODE_BRIDGE;
	if (mode != MACVLAN_MODE_PRIVATE && mode != MACVLAN_MODE_VEPA && mode != MACVLAN_MODE_BRIDGE &&
	    mode != MACVLAN_MODE_PASSTHRU && mode != MACVLAN_MODE_SOURCE)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, c->name);
	NL_PUT_U32(nlh, IFLA_LINK, (uint32_t) c->parent);
	if (c->mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, c->mtu);
	if (c->mac)
		NL_PUT(nlh, IFLA_ADDRESS, 6, c->mac);
	if (c->netns_fd >= 0)
		NL_PUT_U32(nlh, IFLA_NET_NS_FD, (uint32_t) c->netns_fd);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "macvlan");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	NL_PUT_U32(nlh, IFLA_MACVLAN_MODE, mode);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_macvlan_create(NlSock *s, const NlMacvlanConfig *c) {
	NlMsgBuf buf;
	int r = nl_build_macvlan(&buf, c);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
