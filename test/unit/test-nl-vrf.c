/* SPDX-License-Identifier: Apache-2.0 */
/*
 * VRF netlink messages (nl-vrf.h) by build-then-parse: the create request read back with libmnl
 * and with nl_parse_vrf() (which parses the kernel's RTM_NEWLINK of the same layout), plus
 * parser robustness. This is how vrf is verified on kernels without the vrf module.
 */

#include <errno.h>
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
#include "shared/nl/nl-vrf.h"

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

static void test_build_vrf(void **state) {
	NlMsgBuf buf;
	const struct nlattr *li, *data, *t;
	NlVrf v;

	assert_int_equal(nl_build_vrf(&buf, "vrf-blue", 100), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWLINK);
	assert_int_equal(buf.hdr.nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
	assert_string_equal(mnl_attr_get_str(attr_get(&buf.hdr, IFLA_IFNAME)), "vrf-blue");
	li = attr_get(&buf.hdr, IFLA_LINKINFO);
	assert_string_equal(mnl_attr_get_str(nested_get(li, IFLA_INFO_KIND)), "vrf");
	data = nested_get(li, IFLA_INFO_DATA);
	t = nested_get(data, IFLA_VRF_TABLE);
	assert_non_null(t);
	assert_int_equal(mnl_attr_get_payload_len(t), 4);
	assert_int_equal(mnl_attr_get_u32(t), 100);
	/* Nests close within the message. */
	assert_true((const uint8_t *) li + li->nla_len <= (const uint8_t *) &buf.hdr + buf.hdr.nlmsg_len);

	/* The same bytes parse as a kernel reply would. */
	assert_int_equal(nl_parse_vrf(&buf.hdr, &v), 0);
	assert_true(v.is_vrf);
	assert_true(v.has_table);
	assert_int_equal(v.table, 100);
	assert_string_equal(v.name, "vrf-blue");

	/* Bad arguments. */
	assert_int_equal(nl_build_vrf(&buf, "vrf-blue", 0), -EINVAL);
	assert_int_equal(nl_build_vrf(&buf, "a-name-longer-than-15", 1), -EINVAL);
	assert_int_equal(nl_build_vrf(&buf, "", 1), -EINVAL);
	assert_int_equal(nl_build_vrf(&buf, "a/b", 1), -EINVAL);
}

static void test_parse_vrf_robust(void **state) {
	NlMsgBuf buf;
	struct nlmsghdr *nlh;
	struct nlattr *li, *data;
	struct ifinfomsg *ifi;
	NlVrf v;

	/* A bridge: parsed, not a VRF. */
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_index = 7;
	ifi->ifi_flags = IFF_UP;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, "br0");
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "bridge");
	mnl_attr_nest_end(nlh, li);
	assert_int_equal(nl_parse_vrf(nlh, &v), 0);
	assert_false(v.is_vrf);
	assert_int_equal(v.ifindex, 7);
	assert_true(v.flags & IFF_UP);

	/* A VRF whose table attribute is too short: a VRF without a known table, not misread. */
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	mnl_attr_put_strz(nlh, IFLA_IFNAME, "vrf0");
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "vrf");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	mnl_attr_put_u16(nlh, IFLA_VRF_TABLE, 5);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, li);
	assert_int_equal(nl_parse_vrf(nlh, &v), 0);
	assert_true(v.is_vrf);
	assert_false(v.has_table);

	/* Unknown attributes (a newer kernel) are skipped. */
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, sizeof(struct ifinfomsg));
	mnl_attr_put_u32(nlh, IFLA_MAX + 5, 1);
	li = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "vrf");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	mnl_attr_put_u32(nlh, IFLA_VRF_MAX + 3, 9);
	mnl_attr_put_u32(nlh, IFLA_VRF_TABLE, 42);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, li);
	assert_int_equal(nl_parse_vrf(nlh, &v), 0);
	assert_int_equal(v.table, 42);

	/* Wrong message type, truncated header. */
	nlh = nl_msg_new(&buf, RTM_NEWROUTE, 0, sizeof(struct ifinfomsg));
	assert_int_equal(nl_parse_vrf(nlh, &v), -EBADMSG);
	nlh = nl_msg_new(&buf, RTM_NEWLINK, 0, 4);
	assert_int_equal(nl_parse_vrf(nlh, &v), -EBADMSG);
}

/* Enslave / release: the generic link change with IFLA_MASTER (ip link set dev X master VRF / nomaster). */
static void test_enslave_messages(void **state) {
	NlMsgBuf buf;
	NlLinkChange c = NL_LINK_CHANGE_INIT(3);

	c.master = 9;
	assert_int_equal(nl_build_link_change(&buf, &c), 0);
	assert_int_equal(mnl_attr_get_u32(attr_get(&buf.hdr, IFLA_MASTER)), 9);
	c.master = 0;
	assert_int_equal(nl_build_link_change(&buf, &c), 0);
	assert_int_equal(mnl_attr_get_u32(attr_get(&buf.hdr, IFLA_MASTER)), 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_vrf),
		cmocka_unit_test(test_parse_vrf_robust),
		cmocka_unit_test(test_enslave_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
