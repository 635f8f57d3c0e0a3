/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tc (nl-tc.c) and ip rule (nl-rule.c) messages: built into a buffer and taken apart again (no
 * privileges, no kernel), then, when root, applied for real inside a private network namespace
 * (unshare(CLONE_NEWNET): nothing here can touch the host) and read back with dumps.
 */

#include <arpa/inet.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/tc_act/tc_mirred.h>

#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-rule.h"
#include "shared/nl/nl-tc.h"

static IpPrefix prefix(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static const struct tcmsg *tcm(const struct nlmsghdr *nlh) {
	assert_true(mnl_nlmsg_get_payload_len(nlh) >= sizeof(struct tcmsg));
	return mnl_nlmsg_get_payload(nlh);
}

/* Every attribute must end exactly at nlmsg_len (catches unclosed nests). */
static void assert_well_formed(const struct nlmsghdr *nlh, size_t hdrlen) {
	size_t end = MNL_NLMSG_HDRLEN + MNL_ALIGN(hdrlen);
	const struct nlattr *a;

	assert_true(nlh->nlmsg_len <= NL_MSG_BUF);
	mnl_attr_for_each(a, nlh, hdrlen)
		end += MNL_ALIGN(a->nla_len);
	assert_int_equal(end, nlh->nlmsg_len);
}

static void test_tbf_math(void **state) {
	NlTbf t;
	double tpu = nl_tc_ticks_per_usec();

	assert_true(tpu > 0);
	/* 8 Mbit/s, 160 kbit: 1 MB/s, 20 kB = 20 ms of bucket, limit = 25 ms of rate + burst */
	assert_int_equal(nl_tc_tbf_from_bits(8000000, 160000, &t), 0);
	assert_int_equal(t.rate, 1000000);
	assert_int_equal(t.buffer, (uint32_t) (20000.0 * tpu));
	assert_int_equal(t.limit, 25000 + 20000);
	assert_int_equal(nl_tc_tbf_from_bits(0, 160000, &t), -EINVAL);
	assert_int_equal(nl_tc_tbf_from_bits(8000000, 0, &t), -EINVAL);
	assert_int_equal(nl_tc_tbf_from_bits(8000000, 8ULL * UINT32_MAX + 8, &t), -EINVAL);
	/* above 4 GB/s needs TCA_TBF_RATE64 */
	assert_int_equal(nl_tc_tbf_from_bits(100000000000ULL, 80000000, &t), 0);
	assert_int_equal(t.rate, 12500000000ULL);
}

static void test_build_tbf(void **state) {
	NlMsgBuf buf;
	NlQdisc q;
	NlTbf t = { .rate = 1000000, .buffer = 312500, .limit = 45000 };

	assert_int_equal(nl_build_tc_tbf(&buf, 7, &t, true), 0);
	assert_well_formed(&buf.hdr, sizeof(struct tcmsg));
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWQDISC);
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_REPLACE);
	assert_int_equal(tcm(&buf.hdr)->tcm_handle, 0x10000);
	assert_int_equal(tcm(&buf.hdr)->tcm_parent, TC_H_ROOT);
	assert_int_equal(nl_parse_qdisc(&buf.hdr, &q), 0);
	assert_int_equal(q.ifindex, 7);
	assert_string_equal(q.kind, "tbf");
	assert_true(q.has_tbf);
	assert_int_equal(q.tbf.rate, t.rate);
	assert_int_equal(q.tbf.buffer, t.buffer);
	assert_int_equal(q.tbf.limit, t.limit);

	t.rate = 12500000000ULL;
	assert_int_equal(nl_build_tc_tbf(&buf, 7, &t, false), 0);
	assert_int_equal(buf.hdr.nlmsg_flags, NLM_F_CREATE | NLM_F_EXCL);
	assert_int_equal(nl_parse_qdisc(&buf.hdr, &q), 0);
	assert_int_equal(q.tbf.rate, 12500000000ULL);

	assert_int_equal(nl_build_tc_tbf(&buf, 0, &t, false), -EINVAL);
	t.rate = 0;
	assert_int_equal(nl_build_tc_tbf(&buf, 7, &t, false), -EINVAL);
}

static void test_build_ingress_del(void **state) {
	NlMsgBuf buf;
	NlQdisc q;

	assert_int_equal(nl_build_tc_ingress(&buf, 3), 0);
	assert_well_formed(&buf.hdr, sizeof(struct tcmsg));
	assert_int_equal(nl_parse_qdisc(&buf.hdr, &q), 0);
	assert_string_equal(q.kind, "ingress");
	assert_int_equal(q.handle, 0xffff0000);
	assert_int_equal(q.parent, TC_H_INGRESS);
	assert_false(q.has_tbf);

	assert_int_equal(nl_build_tc_qdisc_del(&buf, 3, NL_TC_ROOT), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_DELQDISC);
	assert_int_equal(tcm(&buf.hdr)->tcm_parent, TC_H_ROOT);
	assert_int_equal(nl_build_tc_qdisc_del(&buf, 3, NL_TC_INGRESS), 0);
	assert_int_equal(tcm(&buf.hdr)->tcm_handle, 0xffff0000);
	assert_int_equal(nl_build_tc_qdisc_del(&buf, 3, 0x10000), -EINVAL);
}

static void test_build_mirred(void **state) {
	const struct nlattr *tb[TCA_MAX + 1], *ob[TCA_U32_MAX + 1], *act[TCA_ACT_MAX + 1], *ao[TCA_MIRRED_MAX + 1],
			*nest;
	const struct tc_u32_sel *sel;
	const struct tc_mirred *m;
	NlMsgBuf buf;

	assert_int_equal(nl_build_tc_mirred_redirect(&buf, 4, 9), 0);
	assert_well_formed(&buf.hdr, sizeof(struct tcmsg));
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWTFILTER);
	assert_int_equal(tcm(&buf.hdr)->tcm_parent, 0xffff0000);
	assert_int_equal(TC_H_MAJ(tcm(&buf.hdr)->tcm_info) >> 16, 1);          /* prio 1 */
	assert_int_equal(TC_H_MIN(tcm(&buf.hdr)->tcm_info), htons(ETH_P_ALL)); /* protocol all */

	assert_int_equal(nl_parse_attrs(&buf.hdr, sizeof(struct tcmsg), NULL, TCA_MAX, tb), 0);
	assert_string_equal(mnl_attr_get_str(tb[TCA_KIND]), "u32");
	assert_int_equal(nl_parse_nested(tb[TCA_OPTIONS], NULL, TCA_U32_MAX, ob), 0);
	assert_int_equal(mnl_attr_get_u32(ob[TCA_U32_CLASSID]), 0x10001);
	assert_int_equal(mnl_attr_get_payload_len(ob[TCA_U32_SEL]),
			 sizeof(struct tc_u32_sel) + sizeof(struct tc_u32_key));
	sel = mnl_attr_get_payload(ob[TCA_U32_SEL]);
	assert_int_equal(sel->nkeys, 1);
	assert_int_equal(sel->flags, TC_U32_TERMINAL);
	assert_int_equal(sel->keys[0].mask, 0);

	/* TCA_U32_ACT { 1 { kind "mirred", options { parms } } } */
	nest = mnl_attr_get_payload(ob[TCA_U32_ACT]);
	assert_int_equal(mnl_attr_get_type(nest), 1);
	assert_int_equal(nl_parse_nested(nest, NULL, TCA_ACT_MAX, act), 0);
	assert_string_equal(mnl_attr_get_str(act[TCA_ACT_KIND]), "mirred");
	assert_int_equal(nl_parse_nested(act[TCA_ACT_OPTIONS], NULL, TCA_MIRRED_MAX, ao), 0);
	m = mnl_attr_get_payload(ao[TCA_MIRRED_PARMS]);
	assert_int_equal(m->eaction, TCA_EGRESS_REDIR);
	assert_int_equal(m->ifindex, 9);
	assert_int_equal(m->action, TC_ACT_STOLEN);

	assert_int_equal(nl_build_tc_mirred_redirect(&buf, 4, 0), -EINVAL);
}

static void test_build_ifb(void **state) {
	const struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
	const struct ifinfomsg *ifi;
	NlMsgBuf buf;

	assert_int_equal(nl_build_ifb(&buf, "bwp0123456789ab", 1400), 0);
	assert_well_formed(&buf.hdr, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(&buf.hdr);
	assert_true(ifi->ifi_flags & IFF_UP);
	assert_int_equal(nl_parse_attrs(&buf.hdr, sizeof(struct ifinfomsg), NULL, IFLA_MAX, tb), 0);
	assert_string_equal(mnl_attr_get_str(tb[IFLA_IFNAME]), "bwp0123456789ab");
	assert_int_equal(mnl_attr_get_u32(tb[IFLA_MTU]), 1400);
	assert_int_equal(nl_parse_nested(tb[IFLA_LINKINFO], NULL, IFLA_INFO_MAX, li), 0);
	assert_string_equal(mnl_attr_get_str(li[IFLA_INFO_KIND]), "ifb");
	assert_int_equal(nl_build_ifb(&buf, "bwp0123456789abc", 0), -EINVAL);
	assert_int_equal(nl_build_ifb(&buf, "a/b", 0), -EINVAL);
}

static void test_build_rule(void **state) {
	NlRule in = { .src = prefix("10.51.0.2/32"), .table = 100, .protocol = WEFT_RTPROT }, out;
	NlMsgBuf buf;

	assert_int_equal(nl_build_rule(&buf, true, &in), 0);
	assert_well_formed(&buf.hdr, sizeof(struct fib_rule_hdr));
	assert_int_equal(buf.hdr.nlmsg_type, RTM_NEWRULE);
	assert_int_equal(nl_parse_rule(&buf.hdr, &out), 0);
	assert_int_equal(out.family, AF_INET);
	assert_true(ip_prefix_equal(&out.src, &in.src));
	assert_int_equal(out.table, 100);
	assert_int_equal(out.protocol, WEFT_RTPROT);
	assert_int_equal(out.action, FR_ACT_TO_TBL);
	assert_false(out.has_priority);

	in = (NlRule) { .src = prefix("fd00::5/128"), .table = 1000, .priority = 50, .has_priority = true };
	assert_int_equal(nl_build_rule(&buf, false, &in), 0);
	assert_int_equal(buf.hdr.nlmsg_type, RTM_DELRULE);
	assert_int_equal(nl_parse_rule(&buf.hdr, &out), 0);
	assert_int_equal(out.family, AF_INET6);
	assert_int_equal(out.table, 1000); /* > 255: only in FRA_TABLE */
	assert_true(out.has_priority);
	assert_int_equal(out.priority, 50);

	assert_int_equal(nl_build_rule(&buf, true, &(NlRule) { .family = AF_INET }), -EINVAL); /* no table */
	assert_int_equal(nl_build_rule(&buf, true, &(NlRule) { .table = 5 }), -EAFNOSUPPORT);
}

/* ---- in a private namespace (root only) ---- */

typedef struct Seen {
	int ifindex;
	NlQdisc root, ingress;
	bool has_root, has_ingress;
} Seen;

static int seen_cb(const NlQdisc *q, void *userdata) {
	Seen *s = userdata;

	assert_int_equal(q->ifindex, s->ifindex);
	if (q->parent == NL_TC_ROOT) {
		s->root = *q;
		s->has_root = true;
	} else if (q->parent == NL_TC_INGRESS) {
		s->ingress = *q;
		s->has_ingress = true;
	}
	return 0;
}

static void test_kernel_tc(void **state) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	NlLink a, ifb;
	NlTbf t;
	Seen seen;

	assert_int_equal(nl_sock_open(&s), 0);
	assert_int_equal(nl_veth_create(s, "tca", "tcb", -1, 0, NULL), 0);
	assert_int_equal(nl_link_get(s, "tca", 0, &a), 0);
	assert_int_equal(nl_ifb_create(s, "bwptest", 1500), 0);
	assert_int_equal(nl_ifb_create(s, "bwptest", 1500), -EEXIST);
	assert_int_equal(nl_link_get(s, "bwptest", 0, &ifb), 0);
	assert_string_equal(ifb.kind, "ifb");

	assert_int_equal(nl_tc_tbf_from_bits(8000000, 160000, &t), 0);
	assert_int_equal(nl_tc_tbf_set(s, a.ifindex, &t, false), 0);
	assert_int_equal(nl_tc_tbf_set(s, a.ifindex, &t, false), -EEXIST);
	assert_int_equal(nl_tc_tbf_set(s, a.ifindex, &t, true), 0);
	assert_int_equal(nl_tc_ingress_add(s, a.ifindex), 0);
	assert_int_equal(nl_tc_ingress_add(s, a.ifindex), 0); /* exists: fine */
	assert_int_equal(nl_tc_mirred_redirect_add(s, a.ifindex, ifb.ifindex), 0);

	seen = (Seen) { .ifindex = a.ifindex };
	assert_int_equal(nl_tc_qdisc_dump(s, a.ifindex, seen_cb, &seen), 0);
	assert_true(seen.has_root && seen.has_ingress);
	assert_string_equal(seen.root.kind, "tbf");
	assert_int_equal(seen.root.tbf.rate, t.rate);
	assert_int_equal(seen.root.tbf.limit, t.limit);
	assert_int_equal(seen.root.tbf.buffer, t.buffer);
	assert_string_equal(seen.ingress.kind, "ingress");

	assert_int_equal(nl_tc_qdisc_del(s, a.ifindex, NL_TC_INGRESS), 0);
	assert_int_equal(nl_tc_qdisc_del(s, a.ifindex, NL_TC_ROOT), 0);
	assert_true(nl_tc_qdisc_del(s, a.ifindex, NL_TC_ROOT) < 0);
	seen = (Seen) { .ifindex = a.ifindex };
	assert_int_equal(nl_tc_qdisc_dump(s, a.ifindex, seen_cb, &seen), 0);
	assert_false(seen.has_ingress);
	assert_false(seen.has_root && streq(seen.root.kind, "tbf"));

	assert_int_equal(nl_link_del(s, ifb.ifindex), 0);
	assert_int_equal(nl_link_del(s, a.ifindex), 0);
}

typedef struct RuleSeen {
	IpPrefix src;
	uint32_t table;
	uint8_t protocol;
	int n;
} RuleSeen;

static int rule_cb(const NlRule *r, void *userdata) {
	RuleSeen *s = userdata;

	if (ip_prefix_equal(&r->src, &s->src)) {
		s->table = r->table;
		s->protocol = r->protocol;
		s->n++;
	}
	return 0;
}

static void test_kernel_rule(void **state) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	NlRule r4 = { .src = prefix("10.51.0.2/32"), .table = 100, .protocol = WEFT_RTPROT };
	NlRule r6 = { .src = prefix("fd00:51::2/128"), .table = 300, .priority = 1000, .has_priority = true };
	RuleSeen seen = { .src = r4.src };

	assert_int_equal(nl_sock_open(&s), 0);
	assert_int_equal(nl_rule_add(s, &r4), 0);
	assert_int_equal(nl_rule_add(s, &r6), 0);
	/* The kernel only calls a rule a duplicate with the same pref; without one (r4) it picks a
	 * new pref each time, exactly like `ip rule add`. */
	assert_int_equal(nl_rule_add(s, &r6), -EEXIST);
	assert_int_equal(nl_rule_dump(s, AF_UNSPEC, rule_cb, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.table, 100);
	assert_int_equal(seen.protocol, WEFT_RTPROT);
	seen = (RuleSeen) { .src = r6.src };
	assert_int_equal(nl_rule_dump(s, AF_INET6, rule_cb, &seen), 0);
	assert_int_equal(seen.table, 300);
	assert_int_equal(nl_rule_del(s, &r4), 0);
	assert_int_equal(nl_rule_del(s, &r4), -ENOENT);
	assert_int_equal(nl_rule_del(s, &r6), 0);
	seen = (RuleSeen) { .src = r4.src };
	assert_int_equal(nl_rule_dump(s, AF_UNSPEC, rule_cb, &seen), 0);
	assert_int_equal(seen.n, 0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tbf_math),          cmocka_unit_test(test_build_tbf),
		cmocka_unit_test(test_build_ingress_del), cmocka_unit_test(test_build_mirred),
		cmocka_unit_test(test_build_ifb),         cmocka_unit_test(test_build_rule),
	};
	const struct CMUnitTest kernel[] = {
		cmocka_unit_test(test_kernel_tc),
		cmocka_unit_test(test_kernel_rule),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	if (r != 0)
		return r;
	if (geteuid() != 0) {
		printf("# kernel tests skipped: not root\n");
		return 0;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		printf("# kernel tests skipped: unshare(CLONE_NEWNET): %m\n");
		return 0;
	}
	return cmocka_run_group_tests_name("kernel", kernel, NULL, NULL);
}
