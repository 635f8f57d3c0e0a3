/* SPDX-License-Identifier: Apache-2.0 */
/* Linux bridge: creation (idempotent), port flags, VLAN membership. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"

/* ip link add NAME [mtu MTU] [address MAC] type bridge [vlan_filtering 0|1] [vlan_default_pvid N] */
int nl_build_bridge(NlMsgBuf *buf, const NlBridgeConfig *c) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;

	if (!c || !nl_ifname_valid(c->name))
		return -EINVAL;
	if (c->has_vlan_default_pvid && c->vlan_default_pvid >= 4095)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, c->name);
	if (c->mtu > 0)
		NL_PUT_U32(nlh, IFLA_MTU, c->mtu);
	if (c->mac)
		NL_PUT(nlh, IFLA_ADDRESS, 6, c->mac);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "bridge");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	if (c->vlan_filtering)
		NL_PUT_U8(nlh, IFLA_BR_VLAN_FILTERING, 1);
	if (c->has_vlan_default_pvid)
		NL_PUT_U16(nlh, IFLA_BR_VLAN_DEFAULT_PVID, c->vlan_default_pvid);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_bridge_create(NlSock *s, const NlBridgeConfig *c) {
	NlMsgBuf buf;
	NlLink l;
	int r;

	r = nl_build_bridge(&buf, c);
	if (r < 0)
		return r;
	r = nl_sock_call(s, &buf.hdr, NULL, NULL);
	if (r != -EEXIST)
		return r;
	/* Concurrent ADDs race to create the same bridge: whoever loses sees EEXIST, which is fine
	 * as long as what exists is a bridge. The existing bridge's settings are left alone. */
	r = nl_link_get(s, c->name, 0, &l);
	if (r == -ENODEV)
		return -EEXIST; /* existed a moment ago, was deleted since: report the original error */
	if (r < 0)
		return r;
	return streq(l.kind, "bridge") ? 0 : -EEXIST;
}

/* bridge link set dev IFINDEX {hairpin|isolated|...} {on|off}
 * (RTM_SETLINK AF_BRIDGE + IFLA_PROTINFO nest; the port must already be enslaved). */
int nl_build_bridge_port(NlMsgBuf *buf, int ifindex, uint16_t brport_attr, uint8_t value) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *protinfo;

	if (ifindex <= 0)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_SETLINK, 0, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_BRIDGE;
	ifi->ifi_index = ifindex;
	NL_NEST_START(nlh, protinfo, IFLA_PROTINFO | NLA_F_NESTED);
	NL_PUT_U8(nlh, brport_attr, value);
	mnl_attr_nest_end(nlh, protinfo);
	return 0;
}

static int bridge_port_set(NlSock *s, int ifindex, uint16_t attr, uint8_t value) {
	NlMsgBuf buf;
	int r = nl_build_bridge_port(&buf, ifindex, attr, value);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

/* bridge link set dev IFINDEX hairpin on|off */
int nl_bridge_port_set_hairpin(NlSock *s, int ifindex, bool on) {
	return bridge_port_set(s, ifindex, IFLA_BRPORT_MODE, on ? BRIDGE_MODE_HAIRPIN : BRIDGE_MODE_VEB);
}

/* bridge link set dev IFINDEX isolated on|off */
int nl_bridge_port_set_isolated(NlSock *s, int ifindex, bool on) {
	return bridge_port_set(s, ifindex, IFLA_BRPORT_ISOLATED, on);
}

/* bridge vlan {add|del} dev IFINDEX vid VID[-VID_END] [pvid] [untagged] [self] */
int nl_build_bridge_vlan(NlMsgBuf *buf, bool add, int ifindex, uint16_t vid, uint16_t vid_end, bool pvid, bool untagged,
			 bool self) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *spec;
	struct bridge_vlan_info vi = {};

	if (ifindex <= 0 || vid < 1 || vid > 4094)
		return -EINVAL;
	if (vid_end == vid)
		vid_end = 0;
	if (vid_end != 0 && (vid_end < vid || vid_end > 4094))
		return -EINVAL;
	/* The kernel refuses a PVID on a range: only one VLAN can be the port's PVID. */
	if (vid_end != 0 && pvid)
		return -EINVAL;

	nlh = nl_msg_new(buf, add ? RTM_SETLINK : RTM_DELLINK, 0, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_BRIDGE;
	ifi->ifi_index = ifindex;
	NL_NEST_START(nlh, spec, IFLA_AF_SPEC);
	if (self)
		NL_PUT_U16(nlh, IFLA_BRIDGE_FLAGS, BRIDGE_FLAGS_SELF);
	if (add) {
		if (pvid)
			vi.flags |= BRIDGE_VLAN_INFO_PVID;
		if (untagged)
			vi.flags |= BRIDGE_VLAN_INFO_UNTAGGED;
	}
	vi.vid = vid;
	if (vid_end == 0) {
		NL_PUT(nlh, IFLA_BRIDGE_VLAN_INFO, sizeof(vi), &vi);
	} else {
		struct bridge_vlan_info end = vi;
		vi.flags |= BRIDGE_VLAN_INFO_RANGE_BEGIN;
		end.flags |= BRIDGE_VLAN_INFO_RANGE_END;
		end.vid = vid_end;
		NL_PUT(nlh, IFLA_BRIDGE_VLAN_INFO, sizeof(vi), &vi);
		NL_PUT(nlh, IFLA_BRIDGE_VLAN_INFO, sizeof(end), &end);
	}
	mnl_attr_nest_end(nlh, spec);
	return 0;
}

int nl_bridge_vlan_add(NlSock *s, int ifindex, uint16_t vid, uint16_t vid_end, bool pvid, bool untagged, bool self) {
	NlMsgBuf buf;
	int r = nl_build_bridge_vlan(&buf, true, ifindex, vid, vid_end, pvid, untagged, self);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_bridge_vlan_del(NlSock *s, int ifindex, uint16_t vid, uint16_t vid_end, bool self) {
	NlMsgBuf buf;
	int r = nl_build_bridge_vlan(&buf, false, ifindex, vid, vid_end, false, false, self);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}
