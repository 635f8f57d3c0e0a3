/* SPDX-License-Identifier: Apache-2.0 */
/*
 * IPIP (nl-ipip.h, backend-ipip.c) without the ipip module: the create request read back with
 * libmnl, the refusals, and the routes the ipip backend renders for remote leases (Always and
 * CrossSubnet = DirectRouting). The kernel side is test/netns/test-weftd-ipip.sh, which skips
 * where the kernel has no ipip.
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
#include <linux/if_tunnel.h>
#include <linux/rtnetlink.h>

#include "daemon/backend/backend-ipip.h"
#include "daemon/backend/backend.h"
#include "daemon/network-config.h"
#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-ipip.h"

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

static IpAddr A(const char *s) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static void test_build_ipip(void **state) {
	NlIpipConfig c = { .name = "weft.ipip", .local = A("10.99.0.11"), .link = 7, .mtu = 1480 };
	const struct nlattr *li, *data, *t;
	NlMsgBuf buf;

	assert_int_equal(nl_build_ipip(&buf, &c), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWLINK);
	assert_int_equal(buf.hdr.nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL), NLM_F_CREATE | NLM_F_EXCL);
	assert_int_equal(mnl_nlmsg_ok(&buf.hdr, (int) buf.hdr.nlmsg_len), true);
	assert_string_equal(mnl_attr_get_str(attr_get(&buf.hdr, IFLA_IFNAME)), "weft.ipip");
	assert_int_equal(mnl_attr_get_u32(attr_get(&buf.hdr, IFLA_MTU)), 1480);
	li = attr_get(&buf.hdr, IFLA_LINKINFO);
	assert_string_equal(mnl_attr_get_str(nested_get(li, IFLA_INFO_KIND)), "ipip");
	data = nested_get(li, IFLA_INFO_DATA);
	t = nested_get(data, IFLA_IPTUN_LOCAL);
	assert_non_null(t);
	assert_int_equal(mnl_attr_get_payload_len(t), 4);
	assert_memory_equal(mnl_attr_get_payload(t), c.local.bytes, 4);
	assert_int_equal(mnl_attr_get_u32(nested_get(data, IFLA_IPTUN_LINK)), 7);
	assert_int_equal(mnl_attr_get_u8(nested_get(data, IFLA_IPTUN_TTL)), 0);
	assert_int_equal(mnl_attr_get_u8(nested_get(data, IFLA_IPTUN_PMTUDISC)), 1);
	/* no fixed remote: every route names its own outer destination */
	assert_null(nested_get(data, IFLA_IPTUN_REMOTE));
	/* nests close within the message */
	assert_true((const char *) li + li->nla_len <= (const char *) &buf.hdr + buf.hdr.nlmsg_len);

	/* minimal: no local, no link, no MTU */
	NlIpipConfig m = { .name = "tunl9" };
	assert_int_equal(nl_build_ipip(&buf, &m), 0);
	assert_null(attr_get(&buf.hdr, IFLA_MTU));
	data = nested_get(attr_get(&buf.hdr, IFLA_LINKINFO), IFLA_INFO_DATA);
	assert_null(nested_get(data, IFLA_IPTUN_LOCAL));
	assert_null(nested_get(data, IFLA_IPTUN_LINK));
}

static void test_build_ipip_refused(void **state) {
	NlMsgBuf buf;
	NlIpipConfig c = { .name = "weft.ipip", .local = A("2001:db8::1") };

	assert_int_equal(nl_build_ipip(&buf, &c), -EAFNOSUPPORT);
	c = (NlIpipConfig) { .name = "" };
	assert_int_equal(nl_build_ipip(&buf, &c), -EINVAL);
	c = (NlIpipConfig) { .name = "a-name-longer-than-15" };
	assert_int_equal(nl_build_ipip(&buf, &c), -EINVAL);
	assert_int_equal(nl_build_ipip(&buf, NULL), -EINVAL);
}

static NodeLease lease(const char *name, const char *ip, const char *subnet, const char *subnet6) {
	NodeLease l = { .node_name = (char *) name, .public_ip = A(ip) };

	assert_int_equal(ip_prefix_parse(subnet, &l.subnet), 0);
	if (subnet6)
		assert_int_equal(ip_prefix_parse(subnet6, &l.subnet6), 0);
	return l;
}

static void test_render(void **state) {
	const BackendOps *ops = backend_ops_find(NETWORK_BACKEND_IPIP);
	Backend b = {
		.ops = ops,
		.underlay_ifindex = 2,
		.public_ip = A("10.99.0.11"),
		.n_connected = 1,
	};
	IpipBackend *ipip;
	NodeLease near = lease("n2", "10.99.0.12", "10.244.2.0/24", "fd00:10:244:2::/64");
	NodeLease far = lease("n3", "10.98.0.13", "10.244.3.0/24", NULL);
	NodeLease v6 = lease("n4", "2001:db8::4", "10.244.4.0/24", NULL);
	NodeObjects o;
	char buf[IP_PREFIX_STRLEN];

	assert_non_null(ops);
	assert_string_equal(ops->name, "ipip");
	assert_int_equal(backend_init(&b, ops), 0);
	ipip = b.state;
	ipip->tunnel_ifindex = 9;
	assert_int_equal(ip_prefix_parse("10.99.0.0/24", &b.connected[0]), 0);

	/* Always: both encapsulated, via the remote's public IP, onlink, our protocol; no IPv6 route */
	for (int i = 0; i < 2; i++) {
		NodeLease *l = i ? &far : &near;
		assert_int_equal(ops->render(&b, l, &o), 0);
		assert_int_equal(o.n_routes, 1);
		assert_int_equal(o.n_neigh, 0);
		assert_false(o.has_fdb);
		assert_string_equal(ip_prefix_to_string(&o.routes[0].dst, buf), i ? "10.244.3.0/24" : "10.244.2.0/24");
		assert_true(ip_addr_equal(&o.routes[0].gw, &l->public_ip));
		assert_int_equal(o.routes[0].oif, 9);
		assert_true(o.routes[0].onlink);
		assert_int_equal(o.routes[0].protocol, WEFT_RTPROT);
	}
	assert_int_equal(ops->render(&b, &v6, &o), -EINVAL);

	/* CrossSubnet: the near node gets a plain route on the underlay, the far one the tunnel */
	b.config.direct_routing = true;
	assert_int_equal(ops->render(&b, &near, &o), 0);
	assert_int_equal(o.routes[0].oif, 2);
	assert_false(o.routes[0].onlink);
	assert_true(ip_addr_equal(&o.routes[0].gw, &near.public_ip));
	assert_int_equal(ops->render(&b, &far, &o), 0);
	assert_int_equal(o.routes[0].oif, 9);
	assert_true(o.routes[0].onlink);

	/* before the tunnel exists nothing is rendered through it */
	ipip->tunnel_ifindex = 0;
	assert_int_equal(ops->render(&b, &far, &o), -EINVAL);
	backend_done(&b);
}

static void test_config(void **state) {
	NetworkConfig *c = NULL;
	char *err = NULL;

	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"ipip\", "
					      "\"DirectRouting\": true}}",
					      &c, &err),
			 0);
	assert_int_equal(c->backend.type, NETWORK_BACKEND_IPIP);
	assert_true(c->backend.direct_routing);
	assert_string_equal(network_backend_type_to_string(c->backend.type), "ipip");
	network_config_free(c);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_ipip),
		cmocka_unit_test(test_build_ipip_refused),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
