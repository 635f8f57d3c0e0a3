/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The link kinds of nl-kinds.h (ipvlan, vlan, link info/alias/move), checked by build-then-parse:
 * each request is built (never sent) and read back with libmnl and with nl_parse_link() /
 * nl_parse_link_info(), which parse the kernel's RTM_NEWLINK replies of the same layout. This is
 * how ipvlan and vlan are verified on kernels without those modules. No privileges, no kernel.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-kinds.h"

static const struct nlattr *attr_get(const struct nlmsghdr *nlh, uint16_t type) {
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct ifinfomsg))
		if (mnl_attr_get_type(a) == type)
			return a;
	return NULL;
}

static const struct nlattr *nested_get(const struct nlattr *nest, uint16_t type) {
	const struct nlattr *a;

	assert_non_null(nest);
	mnl_attr_for_each_nested(a, nest)
		if (mnl_attr_get_type(a) == type)
			return a;
	return NULL;
}

/* Top-level attributes end exactly at nlmsg_len and every nest lies within its parent. */
static int ok_cb(const struct nlattr *a, void *data) {
	return MNL_CB_OK;
}
static void assert_well_formed(const struct nlmsghdr *nlh) {
	size_t end = MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct ifinfomsg));
	const struct nlattr *a, *li;

	assert_int_equal(mnl_attr_parse(nlh, sizeof(struct ifinfomsg), ok_cb, NULL), MNL_CB_OK);
	mnl_attr_for_each(a, nlh, sizeof(struct ifinfomsg))
		end += MNL_ALIGN(a->nla_len);
	assert_int_equal(end, nlh->nlmsg_len);
	li = attr_get(nlh, IFLA_LINKINFO);
	if (li)
		assert_int_equal(mnl_attr_parse_nested(li, ok_cb, NULL), MNL_CB_OK);
}

static void test_ipvlan(void **state) {
	NlMsgBuf buf;
	NlIpvlanConfig c = { .name = "tmp1234abcd", .parent = 3, .mode = IPVLAN_MODE_L3, .netns_fd = 7, .mtu = 1400 };
	NlLinkInfo info;
	NlLink l;

	assert_int_equal(nl_ipvlan_mode_from_string(""), IPVLAN_MODE_L2);
	assert_int_equal(nl_ipvlan_mode_from_string("l2"), IPVLAN_MODE_L2);
	assert_int_equal(nl_ipvlan_mode_from_string("l3"), IPVLAN_MODE_L3);
	assert_int_equal(nl_ipvlan_mode_from_string("l3s"), IPVLAN_MODE_L3S);
	assert_int_equal(nl_ipvlan_mode_from_string("L3"), -EINVAL);
	assert_string_equal(nl_ipvlan_mode_to_string(IPVLAN_MODE_L3S), "l3s");
	assert_string_equal(nl_ipvlan_mode_to_string(9), "unknown");

	/* ip link add tmp1234abcd link 3 mtu 1400 netns 7 type ipvlan mode l3 */
	assert_int_equal(nl_build_ipvlan(&buf, &c), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWLINK);
	assert_int_equal(buf.hdr.nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
	assert_well_formed(&buf.hdr);
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_string_equal(l.name, "tmp1234abcd");
	assert_string_equal(l.kind, "ipvlan");
	assert_int_equal(l.link, 3);
	assert_int_equal(l.mtu, 1400);
	assert_int_equal(mnl_attr_get_u32(attr_get(&buf.hdr, IFLA_NET_NS_FD)), 7);
	/* IFLA_IPVLAN_MODE is a u16 in the kernel's policy: a u32 would be rejected. */
	assert_int_equal(mnl_attr_get_payload_len(
					 nested_get(nested_get(attr_get(&buf.hdr, IFLA_LINKINFO), IFLA_INFO_DATA),
						    IFLA_IPVLAN_MODE)),
			 2);
	assert_int_equal(nl_parse_link_info(&buf.hdr, &info), 0);
	assert_string_equal(info.kind, "ipvlan");
	assert_true(info.has_mode);
	assert_int_equal(info.mode, IPVLAN_MODE_L3);

	/* Without netns, mtu: neither attribute. */
	c.netns_fd = -1;
	c.mtu = 0;
	assert_int_equal(nl_build_ipvlan(&buf, &c), 0);
	assert_null(attr_get(&buf.hdr, IFLA_NET_NS_FD));
	assert_null(attr_get(&buf.hdr, IFLA_MTU));

	c.mode = IPVLAN_MODE_MAX;
	assert_int_equal(nl_build_ipvlan(&buf, &c), -EINVAL);
	c.mode = IPVLAN_MODE_L2;
	c.parent = 0;
	assert_int_equal(nl_build_ipvlan(&buf, &c), -EINVAL);
	c.parent = 3;
	c.name = "a/b";
	assert_int_equal(nl_build_ipvlan(&buf, &c), -EINVAL);
}

static void test_vlan(void **state) {
	NlMsgBuf buf;
	NlVlanConfig c = { .name = "tmpdeadbeef", .parent = 4, .vlan_id = 4094, .netns_fd = 0 };
	NlLinkInfo info;
	NlLink l;

	/* ip link add tmpdeadbeef link 4 netns 0 type vlan id 4094 (fd 0 is a valid fd) */
	assert_int_equal(nl_build_vlan(&buf, &c), 0);
	assert_well_formed(&buf.hdr);
	assert_int_equal(nl_parse_link(&buf.hdr, &l), 0);
	assert_string_equal(l.kind, "vlan");
	assert_int_equal(l.link, 4);
	assert_non_null(attr_get(&buf.hdr, IFLA_NET_NS_FD));
	assert_int_equal(mnl_attr_get_u32(attr_get(&buf.hdr, IFLA_NET_NS_FD)), 0);
	assert_int_equal(mnl_attr_get_payload_len(
					 nested_get(nested_get(attr_get(&buf.hdr, IFLA_LINKINFO), IFLA_INFO_DATA),
						    IFLA_VLAN_ID)),
			 2);
	/* 802.1Q is the kernel default: no protocol attribute. */
	assert_null(nested_get(nested_get(attr_get(&buf.hdr, IFLA_LINKINFO), IFLA_INFO_DATA), IFLA_VLAN_PROTOCOL));
	assert_int_equal(nl_parse_link_info(&buf.hdr, &info), 0);
	assert_string_equal(info.kind, "vlan");
	assert_true(info.has_vlan_id);
	assert_int_equal(info.vlan_id, 4094);
	assert_false(info.has_mode);

	c.vlan_id = 0;
	assert_int_equal(nl_build_vlan(&buf, &c), 0);
	assert_int_equal(nl_parse_link_info(&buf.hdr, &info), 0);
	assert_int_equal(info.vlan_id, 0);
	c.vlan_id = 4095;
	assert_int_equal(nl_build_vlan(&buf, &c), -EINVAL);
	c.vlan_id = 1;
	c.parent = -1;
	assert_int_equal(nl_build_vlan(&buf, &c), -EINVAL);
}

static void test_macvlan_info(void **state) {
	NlMsgBuf buf;
	NlLinkInfo info;

	assert_int_equal(nl_build_macvlan(&buf, &(NlMacvlanConfig) { .name = "m0",
								     .parent = 2,
								     .mode = MACVLAN_MODE_VEPA,
								     .netns_fd = -1 }),
			 0);
	assert_int_equal(nl_parse_link_info(&buf.hdr, &info), 0);
	assert_string_equal(info.kind, "macvlan");
	assert_true(info.has_mode);
	assert_string_equal(nl_macvlan_mode_to_string(info.mode), "vepa");
	assert_string_equal(nl_macvlan_mode_to_string(MACVLAN_MODE_PASSTHRU), "passthru");
	assert_string_equal(nl_macvlan_mode_to_string(MACVLAN_MODE_SOURCE), "unknown");
}

static void test_alias_move(void **state) {
	NlMsgBuf buf;
	NlLinkInfo info;
	char longer[NL_IFALIAS_MAX + 1];
	const struct ifinfomsg *ifi;

	/* ip link set dev 5 alias hd0 */
	assert_int_equal(nl_build_link_alias(&buf, 5, "hd0"), 0);
	assert_well_formed(&buf.hdr);
	ifi = mnl_nlmsg_get_payload(&buf.hdr);
	assert_int_equal(ifi->ifi_index, 5);
	assert_int_equal(buf.hdr.nlmsg_flags & NLM_F_CREATE, 0);
	assert_int_equal(nl_parse_link_info(&buf.hdr, &info), 0);
	assert_string_equal(info.alias, "hd0");
	assert_string_equal(info.kind, "");
	/* "" removes the alias: an empty attribute. */
	assert_int_equal(nl_build_link_alias(&buf, 5, ""), 0);
	assert_int_equal(mnl_attr_get_payload_len(attr_get(&buf.hdr, IFLA_IFALIAS)), 0);
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	assert_int_equal(nl_build_link_alias(&buf, 5, longer), -EINVAL);
	assert_int_equal(nl_build_link_alias(&buf, 0, "x"), -EINVAL);

	/* ip link set dev 6 netns 8: no IFLA_IFNAME (see nl-link-info.c) */
	assert_int_equal(nl_build_link_move(&buf, 6, 8), 0);
	assert_well_formed(&buf.hdr);
	assert_int_equal(mnl_attr_get_u32(attr_get(&buf.hdr, IFLA_NET_NS_FD)), 8);
	assert_null(attr_get(&buf.hdr, IFLA_IFNAME));
	assert_int_equal(nl_build_link_move(&buf, 6, -1), -EINVAL);
	assert_int_equal(nl_build_link_move(&buf, 0, 3), -EINVAL);
}

static void test_parse_robust(void **state) {
	NlMsgBuf buf;
	NlLinkInfo info;
	struct nlmsghdr *nlh;
	struct nlattr *li, *data;

	/* An alias without NUL, unknown attributes, and a kind we do not know are fine. */
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	mnl_attr_put(nlh, IFLA_IFALIAS, 3, "abc");
	mnl_attr_put_u32(nlh, 0x3ffe, 1);
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "wireguard");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	mnl_attr_put_u32(nlh, 1, 5);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, li);
	assert_int_equal(nl_parse_link_info(nlh, &info), 0);
	assert_string_equal(info.alias, "abc");
	assert_string_equal(info.kind, "wireguard");
	assert_false(info.has_mode);
	assert_false(info.has_vlan_id);

	/* A vlan whose id attribute is too short is reported without an id, not misread. */
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "vlan");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	mnl_attr_put_u8(nlh, IFLA_VLAN_ID, 7);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, li);
	assert_int_equal(nl_parse_link_info(nlh, &info), 0);
	assert_false(info.has_vlan_id);

	/* Wrong type, truncated header. */
	nlh = nl_msg_new(&buf, RTM_NEWROUTE, 0, sizeof(struct ifinfomsg));
	assert_int_equal(nl_parse_link_info(nlh, &info), -EBADMSG);
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, 4);
	assert_int_equal(nl_parse_link_info(nlh, &info), -EBADMSG);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipvlan),       cmocka_unit_test(test_vlan),
		cmocka_unit_test(test_macvlan_info), cmocka_unit_test(test_alias_move),
		cmocka_unit_test(test_parse_robust),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
