/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Set element dumps over NETLINK_NETFILTER, see nft-raw.h.
 *
 * Wire format (linux/netfilter/nf_tables.h): NFT_MSG_GETSETELEM with NLM_F_DUMP, nfgenmsg with
 * the table's family, NFTA_SET_ELEM_LIST_TABLE + NFTA_SET_ELEM_LIST_SET. Replies carry
 * NFTA_SET_ELEM_LIST_ELEMENTS > NFTA_LIST_ELEM > NFTA_SET_ELEM_USERDATA: libnftnl's TLVs
 * (u8 type, u8 len, value), the comment being type NFTNL_UDATA_SET_ELEM_COMMENT (0) stored with
 * its terminating NUL — what `nft add element ... { K comment "C" }` writes.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nf_tables.h>

#include "basic/macro.h"
#include "shared/nft/nft-raw.h"
#include "shared/nl/nfnl.h"

#define UDATA_SET_ELEM_COMMENT 0 /* NFTNL_UDATA_SET_ELEM_COMMENT (libnftnl/udata.h) */

typedef struct Query {
	const char *comment;
	size_t len; /* strlen(comment) */
	bool found;
} Query;

/* "inet weft" -> NFPROTO_INET and "weft" */
static int split_family_table(const char *ft, uint8_t *ret_family, const char **ret_table) {
	static const struct {
		const char *name;
		uint8_t family;
	} families[] = {
		{ "inet", NFPROTO_INET },     { "ip", NFPROTO_IPV4 }, { "ip6", NFPROTO_IPV6 },
		{ "bridge", NFPROTO_BRIDGE }, { "arp", NFPROTO_ARP }, { "netdev", NFPROTO_NETDEV },
	};
	const char *sp = strchr(ft, ' ');

	if (!sp || !sp[1])
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(families); i++)
		if (strlen(families[i].name) == (size_t) (sp - ft) &&
		    strncmp(ft, families[i].name, (size_t) (sp - ft)) == 0) {
			*ret_family = families[i].family;
			*ret_table = sp + 1;
			return 0;
		}
	return -EINVAL;
}

static bool udata_has_comment(const uint8_t *p, size_t len, const Query *q) {
	while (len >= 2) {
		uint8_t type = p[0], l = p[1];

		if ((size_t) l + 2 > len)
			return false;
		/* value = comment + NUL (older writers: without it) */
		if (type == UDATA_SET_ELEM_COMMENT && (l == q->len + 1 || l == q->len) &&
		    memcmp(p + 2, q->comment, q->len) == 0 && (l == q->len || p[2 + q->len] == 0))
			return true;
		p += 2 + l;
		len -= 2 + (size_t) l;
	}
	return false;
}

static int elem_cb(const struct nlattr *a, void *data) {
	Query *q = data;
	const struct nlattr *x;

	if (mnl_attr_get_type(a) != NFTA_LIST_ELEM)
		return MNL_CB_OK;
	mnl_attr_for_each_nested(x, a)
		if (mnl_attr_get_type(x) == NFTA_SET_ELEM_USERDATA &&
		    udata_has_comment(mnl_attr_get_payload(x), mnl_attr_get_payload_len(x), q))
			q->found = true;
	return MNL_CB_OK;
}

static int msg_cb(const struct nlmsghdr *nlh, void *data) {
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == NFTA_SET_ELEM_LIST_ELEMENTS && mnl_attr_validate(a, MNL_TYPE_NESTED) >= 0)
			(void) mnl_attr_parse_nested(a, elem_cb, data);
	return MNL_CB_OK;
}

static int dump_set(struct mnl_socket *nl, uint32_t seq, uint8_t family, const char *table, const char *set, Query *q) {
	char buf[32768]; /* a dump message is at most 32 KiB (netlink_dump: NLMSG_GOODSIZE or the 32 KiB allocation) */
	struct nlmsghdr *nlh;
	int r;

	/* nft list set FAMILY TABLE SET (elements only) */
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETSETELEM, NLM_F_DUMP, seq, family, 0);
	if (!mnl_attr_put_strz_check(nlh, sizeof(buf), NFTA_SET_ELEM_LIST_TABLE, table) ||
	    !mnl_attr_put_strz_check(nlh, sizeof(buf), NFTA_SET_ELEM_LIST_SET, set))
		return -ENAMETOOLONG;
	r = nfnl_call(nl, nlh, buf, sizeof(buf), msg_cb, q);
	/* No such table or set: nothing of ours in it. A dump interrupted by a concurrent change
	 * (EINTR) is not an answer: let the caller take the slow path. */
	return r == -ENOENT ? 0 : r;
}

int nft_raw_has_comment(const NftElemObj *objs, size_t n_objs, const char *comment) {
	struct mnl_socket *nl;
	uint32_t seq = (uint32_t) time(NULL);
	Query q = { .comment = comment, .len = comment ? strlen(comment) : 0 };
	int r = 0;

	if (!objs || !comment || q.len > 255)
		return -EINVAL;
	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		r = -errno;
		goto out;
	}
	for (size_t i = 0; i < n_objs && !q.found; i++) {
		uint8_t family;
		const char *table;
		char tname[64];

		r = split_family_table(objs[i].family_table, &family, &table);
		if (r < 0)
			goto out;
		/* NUL-terminated table name (family_table is "family table") */
		if (snprintf(tname, sizeof(tname), "%s", table) >= (int) sizeof(tname)) {
			r = -ENAMETOOLONG;
			goto out;
		}
		r = dump_set(nl, ++seq, family, tname, objs[i].name, &q);
		if (r < 0)
			goto out;
	}
	r = q.found ? 1 : 0;
out:
	mnl_socket_close(nl);
	return r;
}

int nft_raw_has_attachment(const NftElemObj *objs, size_t n_objs, const char *net, const char *cid,
			   const char *ifname) {
	char id[NFT_COMMENT_MAX + 1];
	int r;

	r = nft_attachment_id(net, cid, ifname, id);
	if (r == -EINVAL || r == -ENAMETOOLONG)
		return 0;
	if (r < 0)
		return r;
	return nft_raw_has_comment(objs, n_objs, id);
}
