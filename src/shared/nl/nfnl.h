/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* nfnetlink requests (nf_tables, ctnetlink, nfnetlink_log) built with libmnl. */

#include <endian.h>
#include <errno.h>
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

/* Sends the request nlh on nl and runs the replies (read into buf, size bytes) through cb until the
 * dump's end or the ACK. 0, or the negative errno of the send, the receive or the kernel's error
 * message; -EBADMSG when cb stopped with MNL_CB_ERROR without setting errno (mnl_cb_run() sets it
 * only for its own errors, so errno is cleared first: a stale one must not pass for success). */
static inline int nfnl_call(struct mnl_socket *nl, const struct nlmsghdr *nlh, void *buf, size_t size, mnl_cb_t cb,
			    void *data) {
	uint32_t portid = mnl_socket_get_portid(nl);

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, size);
		int r;

		if (n < 0)
			return -errno;
		errno = 0;
		r = mnl_cb_run(buf, (size_t) n, nlh->nlmsg_seq, portid, cb, data);
		if (r == MNL_CB_STOP)
			return 0;
		if (r < 0)
			return errno > 0 ? -errno : -EBADMSG;
	}
}
