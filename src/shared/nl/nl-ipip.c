/* SPDX-License-Identifier: Apache-2.0 */
/* IPIP tunnel devices (the weftd ipip backend). */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/if_tunnel.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-ipip.h"

/* ip link add NAME [mtu MTU] type ipip local LOCAL [dev LINK] ttl inherit pmtudisc */
int nl_build_ipip(NlMsgBuf *buf, const NlIpipConfig *c) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;

	if (!c || !nl_ifname_valid(c->name))
		return -EINVAL;
	/* IPv4 in IPv4 only: an IPv6 underlay needs ip6tnl, IPv6 pods over IPv4 sit. */
	if (c->local.family != AF_UNSPEC && c->local.family != AF_INET)
		return -EAFNOSUPPORT;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, c->name);
	if (c->mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, c->mtu);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "ipip");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	if (c->local.family == AF_INET)
		NL_PUT(nlh, IFLA_IPTUN_LOCAL, 4, &c->local.in);
	if (c->link > 0)
		NL_PUT_U32(nlh, IFLA_IPTUN_LINK, (uint32_t) c->link);
	/* TTL 0 = inherit the inner packet's; path MTU discovery on, so DF is set on the outer
	 * header and an underlay with a smaller MTU is reported instead of fragmenting. */
	NL_PUT_U8(nlh, IFLA_IPTUN_TTL, 0);
	NL_PUT_U8(nlh, IFLA_IPTUN_PMTUDISC, 1);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_ipip_create(NlSock *s, const NlIpipConfig *c) {
	NlMsgBuf buf;

	return nl_link_create_built(s, &buf, nl_build_ipip(&buf, c));
}
