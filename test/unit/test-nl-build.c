/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Netlink message builders, checked by build-then-parse: every request is built into a buffer
 * (never sent), then taken apart again with libmnl and our own parsers. No privileges, no kernel.
 */

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include "shared/nl/nl-internal.h"

static const uint8_t MAC1[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

static IpAddr addr(const char *s) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static IpPrefix prefix(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

/* Every attribute (recursively for the nests we know) must lie within its parent, and the
 * top-level attributes must end exactly at nlmsg_len: catches unclosed or mis-sized nests. */
static int count_cb(const struct nlattr *a, void *data) {
	(*(int *) data)++;
	return MNL_CB_OK;
}

static void assert_well_formed(const struct nlmsghdr *nlh, size_t hdrlen) {
	int n = 0;
	size_t end = MNL_NLMSG_HDRLEN + MNL_ALIGN(hdrlen);
	const struct nlattr *a;

	assert_true(nlh->nlmsg_len <= NL_MSG_BUF);
	assert_int_equal(mnl_attr_parse(nlh, hdrlen, count_cb, &n), MNL_CB_OK);
	mnl_attr_for_each(a, nlh, hdrlen)
		end += MNL_ALIGN(a->nla_len);
	assert_int_equal(end, nlh->nlmsg_len);
}

/* Finds attribute `type` inside `nest` (NULL if absent). */
static const struct nlattr *nested_get(const struct nlattr *nest, uint16_t type) {
	const struct nlattr *a;
	mnl_attr_for_each_nested(a, nest)
		if (mnl_attr_get_type(a) == type)
			return a;
	return NULL;
}

static const struct nlattr *top_get(const struct nlmsghdr *nlh, size_t hdrlen, uint16_t type) {
	const struct nlattr *a;
	mnl_attr_for_each(a, nlh, hdrlen)
		if (mnl_attr_get_type(a) == type)
			return a;
	return NULL;
}

static void test_route(void **state) {
	NlMsgBuf buf;
	NlRoute r, p;
	const struct rtmsg *rtm;

	/* ip route add 10.1.0.0/16 via 192.168.1.1 dev 7 onlink metric 50 table 100 proto 0xfc mtu 1400 advmss 1360 */
	nl_route_init(&r);
	r.dst = prefix("10.1.2.3/16"); /* host bits must be cleared in RTA_DST */
	r.gw = addr("192.168.1.1");
	r.oif = 7;
	r.onlink = true;
	r.priority = 50;
	r.table = 100;
	r.protocol = WEFT_RTPROT;
	r.mtu = 1400;
	r.advmss = 1360;
	assert_int_equal(nl_build_route(&buf, true, &r, 0), 0);
	assert_well_formed(&buf.hdr, sizeof(struct rtmsg));
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWROUTE);
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_EXCL);
	rtm = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(rtm->rtm_table, 100);
	assert_int_equal(rtm->rtm_scope, RT_SCOPE_UNIVERSE);
	assert_int_equal(rtm->rtm_type, RTN_UNICAST);
	assert_true(rtm->rtm_flags & RTNH_F_ONLINK);
	assert_non_null(top_get(&buf.hdr, sizeof(*rtm), RTA_METRICS));
	assert_int_equal(nl_parse_route(&buf.hdr, &p), 0);
	IpPrefix net = prefix("10.1.0.0/16");
	assert_true(ip_prefix_equal(&p.dst, &net));
	assert_true(ip_addr_equal(&p.gw, &r.gw));
	assert_int_equal(p.oif, 7);
	assert_true(p.onlink);
	assert_int_equal(p.priority, 50);
	assert_int_equal(p.table, 100);
	assert_int_equal(p.protocol, WEFT_RTPROT);
	assert_int_equal(p.mtu, 1400);
	assert_int_equal(p.advmss, 1360);

	/* Replace, table > 255 (rtm_table UNSPEC, RTA_TABLE carries it), device route → scope link. */
	nl_route_init(&r);
	r.dst = prefix("fd00::/64");
	r.oif = 3;
	r.table = 1000;
	assert_int_equal(nl_build_route(&buf, true, &r, NL_ROUTE_REPLACE), 0);
	assert_well_formed(&buf.hdr, sizeof(struct rtmsg));
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_REPLACE);
	rtm = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(rtm->rtm_table, RT_TABLE_UNSPEC);
	assert_int_equal(rtm->rtm_scope, RT_SCOPE_LINK);
	assert_int_equal(rtm->rtm_protocol, RTPROT_BOOT);
	assert_null(top_get(&buf.hdr, sizeof(*rtm), RTA_METRICS));
	assert_null(top_get(&buf.hdr, sizeof(*rtm), RTA_GATEWAY));
	assert_int_equal(nl_parse_route(&buf.hdr, &p), 0);
	assert_int_equal(p.table, 1000);
	assert_int_equal(p.dst.addr.family, AF_INET6);
	assert_int_equal(p.dst.len, 64);

	/* Default route: no RTA_DST for IPv4 /0; main table reported as 0. */
	nl_route_init(&r);
	r.dst = prefix("0.0.0.0/0");
	r.gw = addr("10.0.0.1");
	assert_int_equal(nl_build_route(&buf, true, &r, 0), 0);
	rtm = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(rtm->rtm_table, RT_TABLE_MAIN);
	assert_null(top_get(&buf.hdr, sizeof(*rtm), RTA_DST));
	assert_int_equal(nl_parse_route(&buf.hdr, &p), 0);
	assert_int_equal(p.table, 0);

	/* Delete: scope wildcard. */
	assert_int_equal(nl_build_route(&buf, false, &r, 0), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_DELROUTE);
	rtm = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(rtm->rtm_scope, RT_SCOPE_NOWHERE);

	/* Bad input. */
	nl_route_init(&r);
	assert_int_equal(nl_build_route(&buf, true, &r, 0), -EAFNOSUPPORT);
	r.dst = prefix("10.0.0.0/8");
	r.gw = addr("fe80::1");
	assert_int_equal(nl_build_route(&buf, true, &r, 0), -EINVAL);

	/* route get */
	IpAddr d = addr("10.9.8.7");
	assert_int_equal(nl_build_route_get(&buf, &d), 0);
	rtm = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(rtm->rtm_dst_len, 32);
}

static void test_veth(void **state) {
	NlMsgBuf buf;
	const struct nlattr *li, *kind, *data, *peer, *a;
	const struct nlattr *tb[IFLA_MAX + 1] = {};
	int found_ns = 0;

	/* ip link add veth1234 mtu 1400 type veth peer name eth0 mtu 1400 address MAC1 netns 42 */
	assert_int_equal(nl_build_veth(&buf, "veth1234", "eth0", 42, 1400, MAC1), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_EXCL);
	li = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	assert_non_null(li);
	kind = nested_get(li, IFLA_INFO_KIND);
	assert_non_null(kind);
	assert_string_equal(mnl_attr_get_str(kind), "veth");
	data = nested_get(li, IFLA_INFO_DATA);
	assert_non_null(data);
	peer = nested_get(data, VETH_INFO_PEER);
	assert_non_null(peer);
	/* The peer nest: struct ifinfomsg, then IFLA_* attributes. */
	assert_true(mnl_attr_get_payload_len(peer) > sizeof(struct ifinfomsg));
	const uint8_t *pl = mnl_attr_get_payload(peer);
	size_t plen = mnl_attr_get_payload_len(peer) - MNL_ALIGN(sizeof(struct ifinfomsg));
	for (a = (const struct nlattr *) (pl + MNL_ALIGN(sizeof(struct ifinfomsg))); mnl_attr_ok(a, (int) plen);
	     a = mnl_attr_next(a)) {
		plen -= MNL_ALIGN(a->nla_len);
		if (mnl_attr_get_type(a) <= IFLA_MAX)
			tb[mnl_attr_get_type(a)] = a;
	}
	assert_int_equal(plen, 0);
	assert_non_null(tb[IFLA_IFNAME]);
	assert_string_equal(mnl_attr_get_str(tb[IFLA_IFNAME]), "eth0");
	assert_non_null(tb[IFLA_NET_NS_FD]);
	assert_int_equal(mnl_attr_get_u32(tb[IFLA_NET_NS_FD]), 42);
	found_ns = 1;
	assert_non_null(tb[IFLA_ADDRESS]);
	assert_memory_equal(mnl_attr_get_payload(tb[IFLA_ADDRESS]), MAC1, 6);
	assert_int_equal(mnl_attr_get_u32(tb[IFLA_MTU]), 1400);
	/* The host side must NOT carry the netns fd. */
	assert_null(top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_NET_NS_FD));
	assert_true(found_ns);

	NlLink l;
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_string_equal(l.name, "veth1234");
	assert_string_equal(l.kind, "veth");
	assert_int_equal(l.mtu, 1400);

	/* No netns: no IFLA_NET_NS_FD anywhere in the peer. */
	assert_int_equal(nl_build_veth(&buf, "a", "b", -1, 0, NULL), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
}

static void test_bad_names(void **state) {
	NlMsgBuf buf;
	NlBridgeConfig bc = { .name = "0123456789abcdef" }; /* 16 chars: one too many */
	NlVxlanConfig vc = { .name = "0123456789abcdef", .vni = 1 };
	NlMacvlanConfig mc = { .name = "0123456789abcdef", .parent = 2, .netns_fd = -1 };
	NlLinkChange ch = NL_LINK_CHANGE_INIT(3);

	assert_int_equal(nl_build_veth(&buf, "0123456789abcdef", "eth0", -1, 0, NULL), -EINVAL);
	assert_int_equal(nl_build_veth(&buf, "veth0", "0123456789abcdef", -1, 0, NULL), -EINVAL);
	assert_int_equal(nl_build_veth(&buf, "0123456789abcde", "eth0", -1, 0, NULL), 0); /* 15 is fine */
	assert_int_equal(nl_build_veth(&buf, "", "eth0", -1, 0, NULL), -EINVAL);
	assert_int_equal(nl_build_veth(&buf, NULL, "eth0", -1, 0, NULL), -EINVAL);
	assert_int_equal(nl_build_bridge(&buf, &bc), -EINVAL);
	assert_int_equal(nl_build_vxlan(&buf, &vc), -EINVAL);
	assert_int_equal(nl_build_macvlan(&buf, &mc), -EINVAL);
	assert_int_equal(nl_build_link_get(&buf, "0123456789abcdef", 0), -EINVAL);
	ch.name = "a/b";
	assert_int_equal(nl_build_link_change(&buf, &ch), -EINVAL);

	assert_true(nl_ifname_valid("eth0"));
	assert_true(nl_ifname_valid("vxlan.1"));
	assert_false(nl_ifname_valid("."));
	assert_false(nl_ifname_valid(".."));
	assert_false(nl_ifname_valid("a b"));
	assert_false(nl_ifname_valid("a:b"));
	assert_false(nl_ifname_valid("a/b"));

	/* Nothing sensible to send without a socket either: NULL socket is -EINVAL, not a crash. */
	assert_int_equal(nl_veth_create(NULL, "a", "b", -1, 0, NULL), -EINVAL);
}

static void test_vxlan(void **state) {
	NlMsgBuf buf;
	NlVxlanConfig c = {
		.name = "weft.1",
		.vni = 1,
		.port = 8472,
		.local = addr("192.168.5.10"),
		.link = 2,
		.mtu = 1450,
		.learning = false,
		.mac = MAC1,
	};
	NlLink l;
	const struct nlattr *li, *data, *a;

	/* ip link add weft.1 mtu 1450 address MAC1 type vxlan id 1 dstport 8472 local 192.168.5.10 dev 2 nolearning */
	assert_int_equal(nl_build_vxlan(&buf, &c), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_string_equal(l.name, "weft.1");
	assert_string_equal(l.kind, "vxlan");
	assert_int_equal(l.vxlan_id, 1);
	assert_int_equal(l.vxlan_port, 8472);
	assert_int_equal(l.vxlan_link, 2);
	assert_true(ip_addr_equal(&l.vxlan_local, &c.local));
	assert_true(l.has_mac);
	assert_memory_equal(l.mac, MAC1, 6);
	assert_int_equal(l.mtu, 1450);

	li = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	data = nested_get(li, IFLA_INFO_DATA);
	a = nested_get(data, IFLA_VXLAN_PORT);
	/* network byte order on the wire */
	assert_int_equal(mnl_attr_get_u16(a), htons(8472));
	a = nested_get(data, IFLA_VXLAN_LEARNING);
	assert_non_null(a);
	assert_int_equal(mnl_attr_get_u8(a), 0);
	assert_null(nested_get(data, IFLA_VXLAN_GBP));

	/* IPv6 local, default port, gbp */
	c.local = addr("fd00::1");
	c.port = 0;
	c.gbp = true;
	assert_int_equal(nl_build_vxlan(&buf, &c), 0);
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_int_equal(l.vxlan_port, 4789);
	assert_int_equal(l.vxlan_local.family, AF_INET6);
	li = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	assert_non_null(nested_get(nested_get(li, IFLA_INFO_DATA), IFLA_VXLAN_GBP));

	c.vni = 1u << 24;
	assert_int_equal(nl_build_vxlan(&buf, &c), -EINVAL);
}

static void test_bridge(void **state) {
	NlMsgBuf buf;
	NlBridgeConfig c = { .name = "cni0",
			     .mtu = 1500,
			     .vlan_filtering = true,
			     .has_vlan_default_pvid = true,
			     .vlan_default_pvid = 1 };
	NlLink l;
	const struct nlattr *li, *a;

	assert_int_equal(nl_build_bridge(&buf, &c), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_EXCL);
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_string_equal(l.kind, "bridge");
	assert_true(l.br_vlan_filtering);
	li = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	a = nested_get(nested_get(li, IFLA_INFO_DATA), IFLA_BR_VLAN_DEFAULT_PVID);
	assert_non_null(a);
	assert_int_equal(mnl_attr_get_u16(a), 1);

	/* port flags: IFLA_PROTINFO must be flagged nested */
	assert_int_equal(nl_build_bridge_port(&buf, 5, IFLA_BRPORT_MODE, BRIDGE_MODE_HAIRPIN), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(ifi->ifi_family, AF_BRIDGE);
	assert_int_equal(ifi->ifi_index, 5);
	a = top_get(&buf.hdr, sizeof(*ifi), IFLA_PROTINFO);
	assert_non_null(a);
	assert_true(a->nla_type & NLA_F_NESTED);
	assert_int_equal(mnl_attr_get_u8(nested_get(a, IFLA_BRPORT_MODE)), BRIDGE_MODE_HAIRPIN);
}

static void test_bridge_vlan(void **state) {
	NlMsgBuf buf;
	const struct nlattr *spec, *a;
	const struct bridge_vlan_info *vi[2];
	int n = 0;
	bool self = false;

	/* bridge vlan add dev 4 vid 10-20 untagged self */
	assert_int_equal(nl_build_bridge_vlan(&buf, true, 4, 10, 20, false, true, true), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	assert_int_equal(buf.hdr.nlmsg_type, RTM_SETLINK);
	spec = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_AF_SPEC);
	assert_non_null(spec);
	mnl_attr_for_each_nested(a, spec) {
		if (mnl_attr_get_type(a) == IFLA_BRIDGE_FLAGS) {
			assert_int_equal(mnl_attr_get_u16(a), BRIDGE_FLAGS_SELF);
			self = true;
		} else if (mnl_attr_get_type(a) == IFLA_BRIDGE_VLAN_INFO) {
			assert_true(n < 2);
			assert_int_equal(mnl_attr_get_payload_len(a), sizeof(struct bridge_vlan_info));
			vi[n++] = mnl_attr_get_payload(a);
		}
	}
	assert_true(self);
	assert_int_equal(n, 2);
	assert_int_equal(vi[0]->vid, 10);
	assert_int_equal(vi[0]->flags, BRIDGE_VLAN_INFO_RANGE_BEGIN | BRIDGE_VLAN_INFO_UNTAGGED);
	assert_int_equal(vi[1]->vid, 20);
	assert_int_equal(vi[1]->flags, BRIDGE_VLAN_INFO_RANGE_END | BRIDGE_VLAN_INFO_UNTAGGED);

	/* bridge vlan del dev 4 vid 7 : one entry, no flags, RTM_DELLINK */
	assert_int_equal(nl_build_bridge_vlan(&buf, false, 4, 7, 7, false, false, false), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_DELLINK);
	spec = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_AF_SPEC);
	n = 0;
	mnl_attr_for_each_nested(a, spec) {
		assert_int_equal(mnl_attr_get_type(a), IFLA_BRIDGE_VLAN_INFO);
		vi[0] = mnl_attr_get_payload(a);
		n++;
	}
	assert_int_equal(n, 1);
	assert_int_equal(vi[0]->vid, 7);
	assert_int_equal(vi[0]->flags, 0);

	/* pvid single */
	assert_int_equal(nl_build_bridge_vlan(&buf, true, 4, 100, 0, true, true, false), 0);
	spec = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_AF_SPEC);
	vi[0] = mnl_attr_get_payload(nested_get(spec, IFLA_BRIDGE_VLAN_INFO));
	assert_int_equal(vi[0]->flags, BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED);

	assert_int_equal(nl_build_bridge_vlan(&buf, true, 4, 0, 0, false, false, false), -EINVAL);
	assert_int_equal(nl_build_bridge_vlan(&buf, true, 4, 4095, 0, false, false, false), -EINVAL);
	assert_int_equal(nl_build_bridge_vlan(&buf, true, 4, 20, 10, false, false, false), -EINVAL);
	assert_int_equal(nl_build_bridge_vlan(&buf, true, 4, 10, 20, true, false, false), -EINVAL);
}

static void test_neigh_fdb(void **state) {
	NlMsgBuf buf;
	NlNeigh n;
	IpAddr ip = addr("10.0.0.9"), vtep = addr("192.168.1.2");

	/* ip neigh replace 10.0.0.9 lladdr MAC1 dev 3 nud permanent */
	assert_int_equal(nl_build_neigh(&buf, true, 3, &ip, MAC1, NUD_PERMANENT, true), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ndmsg));
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_REPLACE);
	assert_int_equal(nl_parse_neigh(&buf.hdr, &n), 0);
	assert_int_equal(n.family, AF_INET);
	assert_int_equal(n.ifindex, 3);
	assert_true(ip_addr_equal(&n.dst, &ip));
	assert_memory_equal(n.mac, MAC1, 6);
	assert_int_equal(n.state, NUD_PERMANENT);
	assert_int_equal(nl_build_neigh(&buf, true, 3, &ip, MAC1, NUD_REACHABLE, false), 0);
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_EXCL);

	/* bridge fdb append MAC1 dev 5 dst 192.168.1.2 self permanent */
	assert_int_equal(nl_build_fdb(&buf, true, 5, MAC1, &vtep, false), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ndmsg));
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_APPEND);
	assert_int_equal(nl_parse_neigh(&buf.hdr, &n), 0);
	assert_int_equal(n.family, AF_BRIDGE);
	assert_int_equal(n.flags, NTF_SELF);
	assert_int_equal(n.state, NUD_PERMANENT);
	assert_true(ip_addr_equal(&n.dst, &vtep));
	assert_memory_equal(n.mac, MAC1, 6);
	assert_int_equal(nl_build_fdb(&buf, true, 5, MAC1, &vtep, true), 0);
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_REPLACE);
	/* v6 VTEP, and no VTEP at all */
	vtep = addr("fd00::2");
	assert_int_equal(nl_build_fdb(&buf, false, 5, MAC1, &vtep, false), 0);
	assert_int_equal(nl_parse_neigh(&buf.hdr, &n), 0);
	assert_int_equal(n.dst.family, AF_INET6);
	assert_int_equal(nl_build_fdb(&buf, false, 5, MAC1, NULL, false), 0);
	assert_int_equal(nl_parse_neigh(&buf.hdr, &n), 0);
	assert_int_equal(n.dst.family, AF_UNSPEC);
}

static void test_addr(void **state) {
	NlMsgBuf buf;
	NlAddr a;
	IpPrefix p = prefix("10.1.0.5/24");
	const struct nlattr *brd;

	/* ip addr add 10.1.0.5/24 brd 10.1.0.255 dev 3 nodad */
	assert_int_equal(nl_build_addr(&buf, true, 3, &p, IFA_F_NODAD), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifaddrmsg));
	assert_int_equal(nl_parse_addr(&buf.hdr, &a), 0);
	assert_true(ip_prefix_equal(&a.prefix, &p));
	assert_int_equal(a.ifindex, 3);
	assert_int_equal(a.flags, IFA_F_NODAD);
	assert_non_null(top_get(&buf.hdr, sizeof(struct ifaddrmsg), IFA_ADDRESS));
	brd = top_get(&buf.hdr, sizeof(struct ifaddrmsg), IFA_BROADCAST);
	assert_non_null(brd);
	IpAddr b = { .family = AF_INET };
	memcpy(&b.in, mnl_attr_get_payload(brd), 4);
	IpAddr want = addr("10.1.0.255");
	assert_true(ip_addr_equal(&b, &want));

	p = prefix("fd00::5/64");
	assert_int_equal(nl_build_addr(&buf, false, 3, &p, 0), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_DELADDR);
	assert_int_equal(nl_parse_addr(&buf.hdr, &a), 0);
	assert_true(ip_prefix_equal(&a.prefix, &p));
	assert_null(top_get(&buf.hdr, sizeof(struct ifaddrmsg), IFA_BROADCAST));
}

static void test_macvlan(void **state) {
	NlMsgBuf buf;
	NlMacvlanConfig c = { .name = "eth0", .parent = 2, .mode = MACVLAN_MODE_PRIVATE, .netns_fd = 9 };
	NlLink l;
	const struct nlattr *li;

	assert_int_equal(nl_macvlan_mode_from_string("bridge"), MACVLAN_MODE_BRIDGE);
	assert_int_equal(nl_macvlan_mode_from_string("passthru"), MACVLAN_MODE_PASSTHRU);
	assert_int_equal(nl_macvlan_mode_from_string("nope"), -EINVAL);
	assert_int_equal(nl_build_macvlan(&buf, &c), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_string_equal(l.kind, "macvlan");
	assert_int_equal(l.link, 2);
	assert_int_equal(mnl_attr_get_u32(top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_NET_NS_FD)), 9);
	li = top_get(&buf.hdr, sizeof(struct ifinfomsg), IFLA_LINKINFO);
	assert_int_equal(mnl_attr_get_u32(nested_get(nested_get(li, IFLA_INFO_DATA), IFLA_MACVLAN_MODE)),
			 MACVLAN_MODE_PRIVATE);
	c.mode = 3; /* not a single mode bit */
	assert_int_equal(nl_build_macvlan(&buf, &c), -EINVAL);
}

/* Parsers: malformed known attributes are rejected, unknown ones skipped. */
static void test_parse_robust(void **state) {
	NlMsgBuf buf;
	struct nlmsghdr *nlh;
	NlLink l;

	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	mnl_attr_put_strz(nlh, IFLA_IFNAME, "x0");
	mnl_attr_put_u32(nlh, 0x3fff, 7); /* from the future */
	assert_int_equal(nl_parse_link(nlh, &l), 0);
	assert_string_equal(l.name, "x0");
	assert_int_equal(l.link_netnsid, -1);
	mnl_attr_put_u16(nlh, IFLA_MTU, 1500); /* too short for a u32 */
	assert_int_equal(nl_parse_link(nlh, &l), -EBADMSG);

	/* Truncated family header */
	nlh = nl_msg_new(&buf, RTM_NEWROUTE, 0, 2);
	NlRoute r;
	assert_int_equal(nl_parse_route(nlh, &r), -EBADMSG);
	/* Wrong message type */
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct rtmsg));
	assert_int_equal(nl_parse_route(nlh, &r), -EBADMSG);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route),        cmocka_unit_test(test_veth),   cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_vxlan),        cmocka_unit_test(test_bridge), cmocka_unit_test(test_bridge_vlan),
		cmocka_unit_test(test_neigh_fdb),    cmocka_unit_test(test_addr),   cmocka_unit_test(test_macvlan),
		cmocka_unit_test(test_parse_robust),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
