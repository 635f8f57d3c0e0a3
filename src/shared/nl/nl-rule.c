/* SPDX-License-Identifier: Apache-2.0 */
/* Policy routing rules (ip rule), see nl-rule.h. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-rule.h"

static const NlPolicy rule_policy[FRA_MAX + 1] = {
	[FRA_SRC] = { MNL_TYPE_BINARY, 4 },
	[FRA_TABLE] = { MNL_TYPE_U32 },
	[FRA_PRIORITY] = { MNL_TYPE_U32 },
	[FRA_PROTOCOL] = { MNL_TYPE_U8 },
};

/* ip rule {add|del} [pref P] [from SRC/LEN] lookup TABLE [protocol PROTO] */
int nl_build_rule(NlMsgBuf *buf, bool add, const NlRule *r) {
	struct nlmsghdr *nlh;
	struct fib_rule_hdr *frh;
	int family;

	if (!r)
		return -EINVAL;
	family = r->src.addr.family != AF_UNSPEC ? r->src.addr.family : r->family;
	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	if (r->src.addr.family != AF_UNSPEC && r->src.len > ip_family_bits(family))
		return -EINVAL;
	if (add && r->table == 0)
		return -EINVAL;
	nlh = nl_msg_new(buf, add ? RTM_NEWRULE : RTM_DELRULE, add ? NLM_F_CREATE | NLM_F_EXCL : 0,
			 sizeof(struct fib_rule_hdr));
	frh = mnl_nlmsg_get_payload(nlh);
	frh->family = family;
	frh->action = FR_ACT_TO_TBL;
	/* The 8-bit field only for small tables; FRA_TABLE always carries the full number. */
	frh->table = r->table < 256 ? r->table : RT_TABLE_UNSPEC;
	if (r->src.addr.family != AF_UNSPEC) {
		IpPrefix net = ip_prefix_mask(&r->src);
		frh->src_len = r->src.len;
		NL_PUT(nlh, FRA_SRC, ip_addr_size(family), net.addr.bytes);
	}
	if (r->table > 0)
		NL_PUT_U32(nlh, FRA_TABLE, r->table);
	if (r->has_priority)
		NL_PUT_U32(nlh, FRA_PRIORITY, r->priority);
	if (r->protocol)
		NL_PUT_U8(nlh, FRA_PROTOCOL, r->protocol);
	return 0;
}

int nl_parse_rule(const struct nlmsghdr *nlh, NlRule *ret) {
	const struct nlattr *tb[FRA_MAX + 1];
	const struct fib_rule_hdr *frh;
	NlRule out = {};
	int r;

	if (nlh->nlmsg_type != RTM_NEWRULE && nlh->nlmsg_type != RTM_DELRULE)
		return -EBADMSG;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*frh))
		return -EBADMSG;
	frh = mnl_nlmsg_get_payload(nlh);
	if (frh->family != AF_INET && frh->family != AF_INET6)
		return -EAFNOSUPPORT;
	r = nl_parse_attrs(nlh, sizeof(*frh), rule_policy, FRA_MAX, tb);
	if (r < 0)
		return r;
	out.family = frh->family;
	out.action = frh->action;
	out.table = tb[FRA_TABLE] ? mnl_attr_get_u32(tb[FRA_TABLE]) : frh->table;
	if (tb[FRA_PRIORITY]) {
		out.priority = mnl_attr_get_u32(tb[FRA_PRIORITY]);
		out.has_priority = true;
	}
	if (tb[FRA_PROTOCOL])
		out.protocol = mnl_attr_get_u8(tb[FRA_PROTOCOL]);
	if (tb[FRA_SRC]) {
		unsigned size = ip_addr_size(frh->family);
		if (mnl_attr_get_payload_len(tb[FRA_SRC]) != size || frh->src_len > ip_family_bits(frh->family))
			return -EBADMSG;
		out.src.addr.family = frh->family;
		memcpy(out.src.addr.bytes, mnl_attr_get_payload(tb[FRA_SRC]), size);
		out.src.len = frh->src_len;
	}
	*ret = out;
	return 0;
}

int nl_rule_add(NlSock *s, const NlRule *r) {
	NlMsgBuf buf;
	int k = nl_build_rule(&buf, true, r);

	return k < 0 ? k : nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_rule_del(NlSock *s, const NlRule *r) {
	NlMsgBuf buf;
	int k = nl_build_rule(&buf, false, r);

	return k < 0 ? k : nl_sock_call(s, &buf.hdr, NULL, NULL);
}

typedef struct RuleDump {
	int (*cb)(const NlRule *r, void *userdata);
	void *userdata;
} RuleDump;

static int rule_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	RuleDump *d = userdata;
	NlRule r;

	if (nl_parse_rule(nlh, &r) < 0)
		return 0;
	return d->cb(&r, d->userdata);
}

int nl_rule_dump(NlSock *s, int family, int (*cb)(const NlRule *r, void *userdata), void *userdata) {
	RuleDump d = { .cb = cb, .userdata = userdata };
	struct fib_rule_hdr *frh;
	struct nlmsghdr *nlh;
	NlMsgBuf buf;

	if (!cb)
		return -EINVAL;
	nlh = nl_msg_new(&buf, RTM_GETRULE, 0, sizeof(struct fib_rule_hdr));
	frh = mnl_nlmsg_get_payload(nlh);
	frh->family = family;
	return nl_sock_dump(s, nlh, rule_dump_cb, &d);
}
