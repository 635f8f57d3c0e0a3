/* SPDX-License-Identifier: Apache-2.0 */
/* veth pairs, with the peer created directly in the target namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "shared/nl/nl-internal.h"

/* ip link add NAME [mtu MTU] type veth peer name PEER [mtu MTU] [address PEER_MAC] [netns PEER_NETNS_FD] */
int nl_build_veth(NlMsgBuf *buf, const char *name, const char *peer, int peer_netns_fd, unsigned mtu,
		  const uint8_t *peer_mac) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data, *peer_nest;

	if (!nl_ifname_valid(name) || !nl_ifname_valid(peer))
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, name);
	if (mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, mtu);

	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "veth");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	NL_NEST_START(nlh, peer_nest, VETH_INFO_PEER);
	/* The peer nest starts with its own struct ifinfomsg, then IFLA_* attributes. */
	struct ifinfomsg *peer_ifi = nl_msg_put_extra(nlh, sizeof(struct ifinfomsg));
	if (!peer_ifi)
		return -EMSGSIZE;
	peer_ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, peer);
	if (mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, mtu);
	if (peer_mac)
		NL_PUT(nlh, IFLA_ADDRESS, 6, peer_mac);
	if (peer_netns_fd >= 0)
		NL_PUT_U32(nlh, IFLA_NET_NS_FD, (uint32_t) peer_netns_fd);
	mnl_attr_nest_end(nlh, peer_nest);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_veth_create(NlSock *s, const char *name, const char *peer, int peer_netns_fd, unsigned mtu,
		   const uint8_t *peer_mac) {
	NlMsgBuf buf;
	int r = nl_build_veth(&buf, name, peer, peer_netns_fd, mtu, peer_mac);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
