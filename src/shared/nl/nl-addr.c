/* SPDX-License-Identifier: Apache-2.0 */
/* Interface addresses. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"

static const NlPolicy addr_policy[IFA_MAX + 1] = {
	[IFA_ADDRESS] = { MNL_TYPE_BINARY, 4 },
	[IFA_LOCAL] = { MNL_TYPE_BINARY, 4 },
	[IFA_FLAGS] = { MNL_TYPE_U32 },
};

/* ip addr {add|del} ADDR/LEN dev IFINDEX [nodad] ...
 * IFA_LOCAL and IFA_ADDRESS both carry the address (no peer). For IPv4 with a prefix shorter
 * than /31 we also set the broadcast address, as `ip addr add ... brd +` and the Go netlink
 * library used by the reference plugins do, so `ip addr` output matches theirs. */
int nl_build_addr(NlMsgBuf *buf, bool add, int ifindex, const IpPrefix *p, uint32_t flags) {
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	unsigned size;

	if (ifindex <= 0 || !p)
		return -EINVAL;
	size = ip_addr_size(p->addr.family);
	if (size == 0)
		return -EAFNOSUPPORT;
	if (p->len > ip_family_bits(p->addr.family))
		return -EINVAL;
	nlh = nl_msg_new(buf, add ? RTM_NEWADDR : RTM_DELADDR, add ? NLM_F_CREATE | NLM_F_EXCL : 0,
			 sizeof(struct ifaddrmsg));
	ifa = mnl_nlmsg_get_payload(nlh);
	ifa->ifa_family = p->addr.family;
	ifa->ifa_prefixlen = p->len;
	ifa->ifa_index = ifindex;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_flags = flags & 0xff;
	NL_PUT(nlh, IFA_LOCAL, size, p->addr.bytes);
	NL_PUT(nlh, IFA_ADDRESS, size, p->addr.bytes);
	if (add) {
		/* IFA_FLAGS carries all 32 bits and wins over ifa_flags (kernel ≥ 3.14). */
		if (flags != 0)
			NL_PUT_U32(nlh, IFA_FLAGS, flags);
		if (p->addr.family == AF_INET && p->len < 31) {
			IpAddr brd = ip_prefix_last(p);
			NL_PUT(nlh, IFA_BROADCAST, 4, &brd.in);
		}
	}
	return 0;
}

int nl_addr_add(NlSock *s, int ifindex, const IpPrefix *p, uint32_t flags) {
	NlMsgBuf buf;
	int r = nl_build_addr(&buf, true, ifindex, p, flags);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_addr_del(NlSock *s, int ifindex, const IpPrefix *p) {
	NlMsgBuf buf;
	int r = nl_build_addr(&buf, false, ifindex, p, 0);

	if (r < 0)
		return r;
	return nl_sock_call(s, &buf.hdr, NULL, NULL);
}

int nl_parse_addr(const struct nlmsghdr *nlh, NlAddr *ret) {
	const struct nlattr *tb[IFA_MAX + 1];
	const struct ifaddrmsg *ifa;
	const struct nlattr *a;
	NlAddr out = {};
	unsigned size;
	int r;

	if (nlh->nlmsg_type != RTM_NEWADDR && nlh->nlmsg_type != RTM_DELADDR)
		return -EBADMSG;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*ifa))
		return -EBADMSG;
	ifa = mnl_nlmsg_get_payload(nlh);
	size = ip_addr_size(ifa->ifa_family);
	if (size == 0)
		return -EAFNOSUPPORT;
	/* As nl_parse_route() does for rtm_dst_len: every prefix consumer (masks, overlap checks
	 * against leases) assumes len <= the family's bits. */
	if (ifa->ifa_prefixlen > ip_family_bits(ifa->ifa_family))
		return -EBADMSG;
	r = nl_parse_attrs(nlh, sizeof(*ifa), addr_policy, IFA_MAX, tb);
	if (r < 0)
		return r;
	/* IFA_LOCAL is the interface's own address; IFA_ADDRESS is the peer on point-to-point
	 * links. IPv6 usually sends only IFA_ADDRESS. */
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (!a || mnl_attr_get_payload_len(a) < size)
		return -EBADMSG;
	out.ifindex = (int) ifa->ifa_index;
	out.prefix.addr.family = ifa->ifa_family;
	memcpy(out.prefix.addr.bytes, mnl_attr_get_payload(a), size);
	out.prefix.len = ifa->ifa_prefixlen;
	out.scope = ifa->ifa_scope;
	out.flags = tb[IFA_FLAGS] ? mnl_attr_get_u32(tb[IFA_FLAGS]) : ifa->ifa_flags;
	*ret = out;
	return 0;
}

typedef struct AddrDumpCtx {
	int family, ifindex;
	int (*cb)(const NlAddr *a, void *userdata);
	void *userdata;
} AddrDumpCtx;

static int addr_dump_cb(const struct nlmsghdr *nlh, void *userdata) {
	AddrDumpCtx *c = userdata;
	NlAddr a;

	if (nl_parse_addr(nlh, &a) < 0)
		return 0;
	if (c->family != AF_UNSPEC && a.prefix.addr.family != c->family)
		return 0;
	if (c->ifindex > 0 && a.ifindex != c->ifindex)
		return 0;
	return c->cb(&a, c->userdata);
}

/* ip addr show [dev IFINDEX] ; filtered here rather than by the kernel (strict checking is off
 * on our socket, and a userspace filter works on every kernel). */
int nl_addr_dump(NlSock *s, int family, int ifindex, int (*cb)(const NlAddr *a, void *userdata), void *userdata) {
	AddrDumpCtx c = { family, ifindex, cb, userdata };
	NlMsgBuf buf;
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;

	if (!cb || (family != AF_UNSPEC && family != AF_INET && family != AF_INET6))
		return -EINVAL;
	nlh = nl_msg_new(&buf, RTM_GETADDR, 0, sizeof(struct ifaddrmsg));
	ifa = mnl_nlmsg_get_payload(nlh);
	ifa->ifa_family = family;
	return nl_sock_dump(s, nlh, addr_dump_cb, &c);
}
