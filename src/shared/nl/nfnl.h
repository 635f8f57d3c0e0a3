/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* nfnetlink requests (nf_tables, ctnetlink, nfnetlink_log) built with libmnl. */

#include <endian.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <stdint.h>

/* The start of a request in buf: the netlink header (type subsys << 8 | msg, NLM_F_REQUEST |
 * flags) and the nfgenmsg (family, version 0, res_id in network order). */
static inline struct nlmsghdr *nfnl_put_header(void *buf, uint8_t subsys, uint8_t msg, uint16_t flags, uint32_t seq,
					       uint8_t family, uint16_t res_id) {
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *g;

	nlh->nlmsg_type = (uint16_t) (subsys << 8 | msg);
	nlh->nlmsg_flags = (uint16_t) (NLM_F_REQUEST | flags);
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htobe16(res_id);
	return nlh;
}
