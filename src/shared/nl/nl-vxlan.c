/* SPDX-License-Identifier: Apache-2.0 */
/* VXLAN devices (the weftd vxlan backend's VTEP). */

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"

/* ip link add NAME [mtu MTU] [address MAC] type vxlan id VNI dstport PORT [local ADDR] [dev LINK]
 *     [no]learning [gbp] */
int nl_build_vxlan(NlMsgBuf *buf, const NlVxlanConfig *c) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;

	if (!c || !nl_ifname_valid(c->name) || c->vni >= (1u << 24))
		return -EINVAL;
	if (c->local.family != AF_UNSPEC && c->local.family != AF_INET && c->local.family != AF_INET6)
		return -EAFNOSUPPORT;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, c->name);
	if (c->mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, c->mtu);
	if (c->mac)
		NL_PUT(nlh, IFLA_ADDRESS, 6, c->mac);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "vxlan");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	NL_PUT_U32(nlh, IFLA_VXLAN_ID, c->vni);
	/* The only big-endian attribute here. */
	NL_PUT_U16(nlh, IFLA_VXLAN_PORT, htons(c->port ? c->port : 4789));
	if (c->local.family == AF_INET)
		NL_PUT(nlh, IFLA_VXLAN_LOCAL, 4, &c->local.in);
	else if (c->local.family == AF_INET6)
		NL_PUT(nlh, IFLA_VXLAN_LOCAL6, 16, &c->local.in6);
	if (c->link > 0)
		NL_PUT_U32(nlh, IFLA_VXLAN_LINK, (uint32_t) c->link);
	NL_PUT_U8(nlh, IFLA_VXLAN_LEARNING, c->learning);
	if (c->gbp)
		NL_PUT(nlh, IFLA_VXLAN_GBP, 0, NULL);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_vxlan_create(NlSock *s, const NlVxlanConfig *c) {
	NlMsgBuf buf;
	int r = nl_build_vxlan(&buf, c);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
