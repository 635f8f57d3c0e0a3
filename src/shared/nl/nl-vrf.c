/* SPDX-License-Identifier: Apache-2.0 */
/* VRF devices: create with a table, read the table back, list. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-vrf.h"

/* ip link add NAME type vrf table TABLE */
int nl_build_vrf(NlMsgBuf *buf, const char *name, uint32_t table) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo, *data;

	/* Table 0 is "unspecified" to the kernel, which refuses a VRF without a table. */
	if (!nl_ifname_valid(name) || table == 0)
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, name);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "vrf");
	NL_NEST_START(nlh, data, IFLA_INFO_DATA);
	NL_PUT_U32(nlh, IFLA_VRF_TABLE, table);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

int nl_vrf_create(NlSock *s, const char *name, uint32_t table) {
	NlMsgBuf buf;
	int r = nl_build_vrf(&buf, name, table);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

static const NlPolicy vrf_link_policy[IFLA_MAX + 1] = {
	[IFLA_IFNAME] = { MNL_TYPE_NUL_STRING },
	[IFLA_LINKINFO] = { MNL_TYPE_NESTED },
};
static const NlPolicy vrf_linkinfo_policy[IFLA_INFO_MAX + 1] = {
	[IFLA_INFO_KIND] = { MNL_TYPE_NUL_STRING },
	[IFLA_INFO_DATA] = { MNL_TYPE_NESTED },
};
/* A short table attribute is skipped rather than misread: has_table stays false. */
static const NlPolicy vrf_data_policy[IFLA_VRF_MAX + 1] = {
	[IFLA_VRF_TABLE] = { MNL_TYPE_UNSPEC },
};

int nl_parse_vrf(const struct nlmsghdr *nlh, NlVrf *ret) {
	const struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1], *vd[IFLA_VRF_MAX + 1];
	const struct ifinfomsg *ifi;
	NlVrf v = {};
	int r;

	if (nlh->nlmsg_type != RTM_NEWLINK || mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ifinfomsg))
		return -EBADMSG;
	ifi = mnl_nlmsg_get_payload(nlh);
	r = nl_parse_attrs(nlh, sizeof(struct ifinfomsg), vrf_link_policy, IFLA_MAX, tb);
	if (r < 0)
		return r;
	v.ifindex = ifi->ifi_index;
	v.flags = ifi->ifi_flags;
	if (tb[IFLA_IFNAME])
		snprintf(v.name, sizeof(v.name), "%s", mnl_attr_get_str(tb[IFLA_IFNAME]));
	if (tb[IFLA_LINKINFO] && nl_parse_nested(tb[IFLA_LINKINFO], vrf_linkinfo_policy, IFLA_INFO_MAX, li) >= 0 &&
	    li[IFLA_INFO_KIND] && streq(mnl_attr_get_str(li[IFLA_INFO_KIND]), "vrf")) {
		v.is_vrf = true;
		if (li[IFLA_INFO_DATA] && nl_parse_nested(li[IFLA_INFO_DATA], vrf_data_policy, IFLA_VRF_MAX, vd) >= 0 &&
		    vd[IFLA_VRF_TABLE] && mnl_attr_get_payload_len(vd[IFLA_VRF_TABLE]) == sizeof(uint32_t)) {
			v.table = mnl_attr_get_u32(vd[IFLA_VRF_TABLE]);
			v.has_table = true;
		}
	}
	*ret = v;
	return 0;
}

static int vrf_get_cb(const struct nlmsghdr *nlh, void *userdata) {
	return nl_parse_vrf(nlh, userdata);
}

int nl_vrf_get(NlSock *s, const char *name, NlVrf *ret) {
	NlMsgBuf buf;
	NlVrf v = {};
	int r;

	if (!nl_ifname_valid(name))
		return -ENODEV;
	r = nl_build_link_get(&buf, name, 0);
	if (r < 0)
		return r;
	r = nl_sock_call(s, &buf.hdr, vrf_get_cb, &v);
	if (r < 0)
		return r;
	if (v.ifindex <= 0)
		return -ENODEV;
	if (!v.is_vrf)
		return -EMEDIUMTYPE;
	*ret = v;
	return 0;
}

typedef struct VrfDumpCtx {
	int (*cb)(const NlVrf *v, void *userdata);
	void *userdata;
} VrfDumpCtx;

static int vrf_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	VrfDumpCtx *c = userdata;
	NlVrf v;

	if (nl_parse_vrf(nlh, &v) < 0 || !v.is_vrf)
		return 0;
	return c->cb(&v, c->userdata);
}

/* ip -d link show type vrf */
int nl_vrf_dump(NlSock *s, int (*cb)(const NlVrf *v, void *userdata), void *userdata) {
	VrfDumpCtx c = { cb, userdata };
	NlMsgBuf buf;
	struct nlmsghdr *nlh = nl_msg_new(&buf, RTM_GETLINK, 0, sizeof(struct ifinfomsg));

	if (!cb)
		return -EINVAL;
	NL_PUT_U32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	return nl_sock_dump(s, nlh, vrf_dump_cb, &c);
}
