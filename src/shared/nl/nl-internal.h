/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals shared by the nl-*.c files and the builder unit test (test/unit/test-nl-build.c):
 * the socket transport, the attribute-table parser, and every message builder. Builders write
 * one complete request into a caller-provided buffer with checked puts and return 0, -EINVAL
 * (bad argument, e.g. an overlong interface name) or -EMSGSIZE (does not fit). They never send.
 * The transport fills in nlmsg_seq / NLM_F_REQUEST / NLM_F_ACK at send time.
 */

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl.h"

/* Request buffer size; every request we build is far smaller. Not MNL_SOCKET_BUFFER_SIZE:
 * that expands to a sysconf() call, i.e. a VLA. */
#define NL_MSG_BUF 4096

/* Aligned stack buffer for one request. */
typedef union NlMsgBuf {
	struct nlmsghdr hdr;
	uint8_t data[NL_MSG_BUF];
} NlMsgBuf;

struct NlSock {
	struct mnl_socket *mnl;
	int fd;
	uint32_t portid;
	uint32_t seq;
	uint8_t *rbuf; /* receive buffer, grown on demand (MSG_PEEK|MSG_TRUNC) */
	size_t rbuf_size;
	char extack[256];
};

/* mnl_nlmsg_ok() compares (int) nlmsg_len with the bytes left, so a length above INT_MAX passes as
 * negative and mnl_nlmsg_next() jumps gigabytes past the buffer (found by test/fuzz/fuzz-netlink.c).
 * It also accepts a last message whose length is not a multiple of 4 with its padding missing,
 * and libmnl's attribute walk runs to the aligned end: 3 bytes past the datagram (found the same
 * way). The kernel pads every message, so such a message is malformed. Walk datagrams with this. */
static inline bool nl_msg_ok(const struct nlmsghdr *nlh, int len) {
	return len >= (int) sizeof(struct nlmsghdr) && nlh->nlmsg_len >= sizeof(struct nlmsghdr) &&
	       nlh->nlmsg_len <= (unsigned) len && MNL_ALIGN(nlh->nlmsg_len) <= (unsigned) len;
}

/* Called for every reply message (not ACK/DONE). < 0 stops delivery and is returned. */
typedef int (*nl_msg_cb)(const struct nlmsghdr *nlh, void *userdata);

/* Sends `nlh` (adds NLM_F_REQUEST|NLM_F_ACK and a sequence number), delivers replies to `cb`
 * (may be NULL) and waits for the ACK. 0 or -errno; the extack text is kept in the socket. */
int nl_sock_call(NlSock *s, struct nlmsghdr *nlh, nl_msg_cb cb, void *userdata);
/* Dump request (adds NLM_F_REQUEST|NLM_F_DUMP). The whole dump is collected first and only then
 * delivered, so an NLM_F_DUMP_INTR (the table changed under us) restarts it cleanly, at most
 * NL_DUMP_RETRIES times (then -EAGAIN). */
#define NL_DUMP_RETRIES 8
int nl_sock_dump(NlSock *s, struct nlmsghdr *nlh, nl_msg_cb cb, void *userdata);
/* An NLMSG_ERROR reply → 0 (ACK) or its -errno; the extended-ACK text goes into s->extack. -EBADMSG if
 * truncated. Exposed for the fuzzer (test/fuzz/fuzz-netlink.c). */
int nl_handle_error(NlSock *s, const struct nlmsghdr *nlh);

/* Parses attributes (from `offset` of the payload, or nested in `nest`) into tb[0..max],
 * checking each known attribute against `policy` (MNL_TYPE_*; MNL_TYPE_UNSPEC = any length;
 * policy may be NULL). Unknown/too-new types are skipped. -EBADMSG if a known one is malformed. */
typedef struct NlPolicy {
	uint8_t type; /* enum mnl_attr_data_type */
	uint16_t len; /* for MNL_TYPE_BINARY: minimum length */
} NlPolicy;
int nl_parse_attrs(const struct nlmsghdr *nlh, unsigned offset, const NlPolicy *policy, unsigned max,
		   const struct nlattr **tb);
int nl_parse_nested(const struct nlattr *nest, const NlPolicy *policy, unsigned max, const struct nlattr **tb);

/* Interface name as the kernel's dev_valid_name() would accept it. */
bool nl_ifname_valid(const char *name);

/* Starts a message in buf: header type/flags plus a zeroed family header of `hdrlen` bytes. */
struct nlmsghdr *nl_msg_new(NlMsgBuf *buf, uint16_t type, uint16_t flags, size_t hdrlen);
/* Appends `len` zeroed (aligned) bytes at the tail, e.g. the ifinfomsg inside VETH_INFO_PEER.
 * NULL if it does not fit in NL_MSG_BUF. */
void *nl_msg_put_extra(struct nlmsghdr *nlh, size_t len);

/* Parsers (one message → our struct). -EBADMSG / -EAFNOSUPPORT (unknown family, skip it). */
int nl_parse_link(const struct nlmsghdr *nlh, NlLink *ret);
int nl_parse_addr(const struct nlmsghdr *nlh, NlAddr *ret);
int nl_parse_route(const struct nlmsghdr *nlh, NlRoute *ret);
int nl_parse_neigh(const struct nlmsghdr *nlh, NlNeigh *ret);

/* Builders. */
int nl_build_link_get(NlMsgBuf *buf, const char *name, int ifindex);
int nl_build_link_del(NlMsgBuf *buf, const char *name, int ifindex);
/* RTM_NEWLINK on an existing link; set exactly one field by passing a non-default value. */
typedef struct NlLinkChange {
	int ifindex;
	int up;       /* -1 unchanged, 0 down, 1 up */
	int promisc;  /* -1 unchanged */
	int allmulti; /* -1 unchanged */
	unsigned mtu; /* 0 unchanged */
	const uint8_t *mac;
	int master; /* -1 unchanged, 0 nomaster */
	const char *name;
	int netns_fd; /* -1 unchanged */
} NlLinkChange;
#define NL_LINK_CHANGE_INIT(idx)                                                                                       \
	{ .ifindex = (idx), .up = -1, .promisc = -1, .allmulti = -1, .master = -1, .netns_fd = -1 }
int nl_build_link_change(NlMsgBuf *buf, const NlLinkChange *c);
/* A link stacked on a parent (macvlan, ipvlan, vlan):
 *   ip link add NAME link PARENT [mtu MTU] [address MAC] [netns NETNS_FD] type KIND ...
 * Builds everything up to an open IFLA_INFO_DATA nest (*ret_linkinfo, *ret_data); the caller puts the
 * kind's attributes and closes both nests with nl_build_stacked_link_end(). 0 or -EINVAL/-EMSGSIZE. */
int nl_build_stacked_link_begin(NlMsgBuf *buf, const char *name, int parent, unsigned mtu, const uint8_t *mac,
				int netns_fd, const char *kind, struct nlattr **ret_linkinfo, struct nlattr **ret_data);
void nl_build_stacked_link_end(NlMsgBuf *buf, struct nlattr *linkinfo, struct nlattr *data);
/* Sends a built creation request and waits for the ACK. */
int nl_link_create_built(NlSock *s, NlMsgBuf *buf, int build_result);
int nl_build_veth(NlMsgBuf *buf, const char *name, const char *peer, int peer_netns_fd, unsigned mtu,
		  const uint8_t *peer_mac);
int nl_build_bridge(NlMsgBuf *buf, const NlBridgeConfig *c);
int nl_build_bridge_port(NlMsgBuf *buf, int ifindex, uint16_t brport_attr, uint8_t value);
int nl_build_bridge_vlan(NlMsgBuf *buf, bool add, int ifindex, uint16_t vid, uint16_t vid_end, bool pvid, bool untagged,
			 bool self);
int nl_build_vxlan(NlMsgBuf *buf, const NlVxlanConfig *c);
int nl_build_macvlan(NlMsgBuf *buf, const NlMacvlanConfig *c);
int nl_build_addr(NlMsgBuf *buf, bool add, int ifindex, const IpPrefix *p, uint32_t flags);
int nl_build_route(NlMsgBuf *buf, bool add, const NlRoute *r, int flags);
int nl_build_route_get(NlMsgBuf *buf, const IpAddr *dst);
int nl_build_neigh(NlMsgBuf *buf, bool add, int ifindex, const IpAddr *ip, const uint8_t *mac, uint16_t state,
		   bool replace);
int nl_build_fdb(NlMsgBuf *buf, bool add, int ifindex, const uint8_t mac[6], const IpAddr *dst, bool replace);

/* Checked-put helpers: return -EMSGSIZE from the enclosing function when the buffer is full. */
#define NL_PUT(nlh, type, len, data)                                                                                   \
	do {                                                                                                           \
		if (!mnl_attr_put_check((nlh), NL_MSG_BUF, (type), (len), (data)))                                     \
			return -EMSGSIZE;                                                                              \
	} while (0)
#define NL_PUT_U8(nlh, type, v)                                                                                        \
	do {                                                                                                           \
		if (!mnl_attr_put_u8_check((nlh), NL_MSG_BUF, (type), (v)))                                            \
			return -EMSGSIZE;                                                                              \
	} while (0)
#define NL_PUT_U16(nlh, type, v)                                                                                       \
	do {                                                                                                           \
		if (!mnl_attr_put_u16_check((nlh), NL_MSG_BUF, (type), (v)))                                           \
			return -EMSGSIZE;                                                                              \
	} while (0)
#define NL_PUT_U32(nlh, type, v)                                                                                       \
	do {                                                                                                           \
		if (!mnl_attr_put_u32_check((nlh), NL_MSG_BUF, (type), (v)))                                           \
			return -EMSGSIZE;                                                                              \
	} while (0)
#define NL_PUT_STRZ(nlh, type, s)                                                                                      \
	do {                                                                                                           \
		if (!mnl_attr_put_strz_check((nlh), NL_MSG_BUF, (type), (s)))                                          \
			return -EMSGSIZE;                                                                              \
	} while (0)
#define NL_NEST_START(nlh, var, type)                                                                                  \
	do {                                                                                                           \
		(var) = mnl_attr_nest_start_check((nlh), NL_MSG_BUF, (type));                                          \
		if (!(var))                                                                                            \
			return -EMSGSIZE;                                                                              \
	} while (0)
