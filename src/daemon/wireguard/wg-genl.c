/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel driver: WireGuard devices through the "wireguard" generic netlink family, links
 * through rtnetlink (kind "wireguard"). Message layout and splitting follow wireguard-tools'
 * ipc-linux.h, so the kernel sees what it sees from wg(8).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/time_types.h>
#include <linux/wireguard.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/wireguard/wg-genl.h"
#include "shared/nl/nl-internal.h"

/* A dump the kernel marked inconsistent (the peer list changed under it) is read again. */
#define WG_GENL_DUMP_RETRIES 8

static struct nlmsghdr *genl_msg_new(void *buf, uint16_t type, uint16_t flags, uint8_t cmd, uint8_t version) {
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

/* The peer's fixed part: pre-shared key (zero clears), endpoint, keepalive, REPLACE_ALLOWEDIPS. */
static bool put_peer_head(struct nlmsghdr *nlh, size_t size, const WgPeer *p) {
	static const WgKey zero;

	if (!mnl_attr_put_check(nlh, size, WGPEER_A_PRESHARED_KEY, WG_KEY_LEN,
				p->has_preshared_key ? p->preshared_key.b : zero.b))
		return false;
	if (p->endpoint.addr.family != AF_UNSPEC) {
		/* The kernel takes a sockaddr_in or sockaddr_in6, told apart by its length. */
		union {
			struct sockaddr_in in;
			struct sockaddr_in6 in6;
		} sa = {};
		size_t len;

		if (p->endpoint.addr.family == AF_INET) {
			sa.in = (struct sockaddr_in) { .sin_family = AF_INET, .sin_addr = p->endpoint.addr.in };
			sa.in.sin_port = htons(p->endpoint.port);
			len = sizeof(sa.in);
		} else {
			sa.in6 = (struct sockaddr_in6) { .sin6_family = AF_INET6, .sin6_addr = p->endpoint.addr.in6 };
			sa.in6.sin6_port = htons(p->endpoint.port);
			len = sizeof(sa.in6);
		}
		if (!mnl_attr_put_check(nlh, size, WGPEER_A_ENDPOINT, len, &sa))
			return false;
	}
	return mnl_attr_put_u16_check(nlh, size, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, p->persistent_keepalive) &&
	       mnl_attr_put_u32_check(nlh, size, WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
}

static bool put_allowed_ip(struct nlmsghdr *nlh, size_t size, const IpPrefix *a) {
	struct nlattr *nest = mnl_attr_nest_start_check(nlh, size, 0);

	if (!nest)
		return false;
	if (!mnl_attr_put_u16_check(nlh, size, WGALLOWEDIP_A_FAMILY, (uint16_t) a->addr.family) ||
	    !mnl_attr_put_check(nlh, size, WGALLOWEDIP_A_IPADDR, ip_addr_size(a->addr.family), a->addr.bytes) ||
	    !mnl_attr_put_u8_check(nlh, size, WGALLOWEDIP_A_CIDR_MASK, a->len)) {
		mnl_attr_nest_cancel(nlh, nest);
		return false;
	}
	mnl_attr_nest_end(nlh, nest);
	return true;
}

/* wg set IFNAME [private-key K listen-port P fwmark M] [peer PUB [remove] | preshared-key ... endpoint ...
 * persistent-keepalive N allowed-ips A,B ...]... (one message of it; see wg-genl.h) */
int wg_genl_build_set(void *buf, size_t size, uint16_t family_id, const WgDevice *dev, unsigned flags,
		      WgGenlCursor *cur) {
	struct nlattr *peers, *peer = NULL, *aips = NULL;
	struct nlmsghdr *nlh;
	bool remove = flags & WG_SET_REMOVE_PEERS, progress = false;
	int r;

	r = wg_device_validate(dev);
	if (r < 0)
		return r;
	size = MIN(size, (size_t) WG_GENL_MSG_SIZE);
	if (size < MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct genlmsghdr)))
		return -EMSGSIZE;
	/* libmnl (1.0.4) does not zero attribute padding: without this, whatever the buffer held (a
	 * previous message's private key) would travel in the gaps. */
	memset(buf, 0, size);
	nlh = genl_msg_new(buf, family_id, NLM_F_REQUEST | NLM_F_ACK, WG_CMD_SET_DEVICE, WG_GENL_VERSION);
	if (!mnl_attr_put_strz_check(nlh, size, WGDEVICE_A_IFNAME, dev->name))
		return -EMSGSIZE;
	if (!cur->started) {
		if (flags & WG_SET_DEVICE_ATTRS) {
			if (dev->has_private_key &&
			    !mnl_attr_put_check(nlh, size, WGDEVICE_A_PRIVATE_KEY, WG_KEY_LEN, dev->private_key.b))
				return -EMSGSIZE;
			if (!mnl_attr_put_u16_check(nlh, size, WGDEVICE_A_LISTEN_PORT, dev->listen_port) ||
			    !mnl_attr_put_u32_check(nlh, size, WGDEVICE_A_FWMARK, dev->fwmark))
				return -EMSGSIZE;
		}
		if ((flags & WG_SET_REPLACE_PEERS) &&
		    !mnl_attr_put_u32_check(nlh, size, WGDEVICE_A_FLAGS, WGDEVICE_F_REPLACE_PEERS))
			return -EMSGSIZE;
		cur->started = true;
		progress = true;
	}
	if (cur->peer >= dev->n_peers) {
		cur->done = true;
		return (int) nlh->nlmsg_len;
	}

	peers = mnl_attr_nest_start_check(nlh, size, WGDEVICE_A_PEERS);
	if (!peers)
		goto full;
	for (; cur->peer < dev->n_peers; cur->peer++, cur->allowed_ip = 0, cur->peer_started = false) {
		const WgPeer *p = &dev->peers[cur->peer];
		bool head = !cur->peer_started;
		size_t first_ip = cur->allowed_ip;

		peer = mnl_attr_nest_start_check(nlh, size, 0);
		if (!peer || !mnl_attr_put_check(nlh, size, WGPEER_A_PUBLIC_KEY, WG_KEY_LEN, p->public_key.b))
			goto full_peer;
		if (remove) {
			if (!mnl_attr_put_u32_check(nlh, size, WGPEER_A_FLAGS, WGPEER_F_REMOVE_ME))
				goto full_peer;
		} else if (head && !put_peer_head(nlh, size, p))
			goto full_peer;
		if (!remove && cur->allowed_ip < p->n_allowed_ips) {
			aips = mnl_attr_nest_start_check(nlh, size, WGPEER_A_ALLOWEDIPS);
			for (; aips && cur->allowed_ip < p->n_allowed_ips; cur->allowed_ip++)
				if (!put_allowed_ip(nlh, size, &p->allowed_ips[cur->allowed_ip]))
					break;
			if (cur->allowed_ip < p->n_allowed_ips) {
				/* Full inside this peer: close it after the last IP that fit (or after its head,
				 * which cleared its allowed IPs); the next message continues it with its key and
				 * the rest, without REPLACE_ALLOWEDIPS (that would drop what this one added). */
				if (cur->allowed_ip == first_ip) {
					if (aips)
						mnl_attr_nest_cancel(nlh, aips);
					if (!head)
						goto full_peer;
				} else
					mnl_attr_nest_end(nlh, aips);
				mnl_attr_nest_end(nlh, peer);
				cur->peer_started = true;
				progress = true;
				goto full_peers;
			}
			mnl_attr_nest_end(nlh, aips);
		}
		mnl_attr_nest_end(nlh, peer);
		progress = true;
	}
	mnl_attr_nest_end(nlh, peers);
	cur->done = true;
	return (int) nlh->nlmsg_len;

full_peer:
	if (peer)
		mnl_attr_nest_cancel(nlh, peer);
full_peers:
	/* No peer in it at all (the device attributes filled the message): leave the nest out. */
	if ((uint8_t *) mnl_nlmsg_get_payload_tail(nlh) == (uint8_t *) peers + MNL_ATTR_HDRLEN)
		mnl_attr_nest_cancel(nlh, peers);
	else
		mnl_attr_nest_end(nlh, peers);
full:
	if (!progress)
		return -EMSGSIZE;
	return (int) nlh->nlmsg_len;
}

/* genl-ctrl-list: CTRL_CMD_GETFAMILY name wireguard */
int wg_genl_build_getfamily(void *buf, size_t size) {
	struct nlmsghdr *nlh;

	if (size < 64)
		return -EMSGSIZE;
	memset(buf, 0, size);
	nlh = genl_msg_new(buf, GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, CTRL_CMD_GETFAMILY, 1);
	if (!mnl_attr_put_strz_check(nlh, size, CTRL_ATTR_FAMILY_NAME, WG_GENL_NAME))
		return -EMSGSIZE;
	return (int) nlh->nlmsg_len;
}

static const NlPolicy ctrl_policy[CTRL_ATTR_MAX + 1] = {
	[CTRL_ATTR_FAMILY_ID] = { MNL_TYPE_U16 },
	[CTRL_ATTR_FAMILY_NAME] = { MNL_TYPE_NUL_STRING },
};

int wg_genl_parse_family(const struct nlmsghdr *nlh, uint16_t *ret) {
	const struct nlattr *tb[CTRL_ATTR_MAX + 1];
	int r;

	if (nlh->nlmsg_type != GENL_ID_CTRL || mnl_nlmsg_get_payload_len(nlh) < sizeof(struct genlmsghdr))
		return -EBADMSG;
	r = nl_parse_attrs(nlh, sizeof(struct genlmsghdr), ctrl_policy, CTRL_ATTR_MAX, tb);
	if (r < 0)
		return r;
	if (!tb[CTRL_ATTR_FAMILY_ID] || !tb[CTRL_ATTR_FAMILY_NAME])
		return -EBADMSG;
	if (!streq(mnl_attr_get_str(tb[CTRL_ATTR_FAMILY_NAME]), WG_GENL_NAME))
		return -ENOENT;
	*ret = mnl_attr_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	return 0;
}

/* wg show IFNAME dump */
int wg_genl_build_get(void *buf, size_t size, uint16_t family_id, const char *ifname) {
	struct nlmsghdr *nlh;

	if (!ifname || !nl_ifname_valid(ifname))
		return -EINVAL;
	if (size < 64)
		return -EMSGSIZE;
	memset(buf, 0, size);
	nlh = genl_msg_new(buf, family_id, NLM_F_REQUEST | NLM_F_DUMP, WG_CMD_GET_DEVICE, WG_GENL_VERSION);
	if (!mnl_attr_put_strz_check(nlh, size, WGDEVICE_A_IFNAME, ifname))
		return -EMSGSIZE;
	return (int) nlh->nlmsg_len;
}

/* Lengths are checked exactly below (MNL_TYPE_BINARY only checks a minimum). */
static const NlPolicy device_policy[WGDEVICE_A_MAX + 1] = {
	[WGDEVICE_A_IFINDEX] = { MNL_TYPE_U32 },        [WGDEVICE_A_IFNAME] = { MNL_TYPE_NUL_STRING },
	[WGDEVICE_A_PRIVATE_KEY] = { MNL_TYPE_UNSPEC }, [WGDEVICE_A_PUBLIC_KEY] = { MNL_TYPE_UNSPEC },
	[WGDEVICE_A_FLAGS] = { MNL_TYPE_U32 },          [WGDEVICE_A_LISTEN_PORT] = { MNL_TYPE_U16 },
	[WGDEVICE_A_FWMARK] = { MNL_TYPE_U32 },         [WGDEVICE_A_PEERS] = { MNL_TYPE_NESTED },
};
static const NlPolicy peer_policy[WGPEER_A_MAX + 1] = {
	[WGPEER_A_PUBLIC_KEY] = { MNL_TYPE_UNSPEC },
	[WGPEER_A_PRESHARED_KEY] = { MNL_TYPE_UNSPEC },
	[WGPEER_A_FLAGS] = { MNL_TYPE_U32 },
	[WGPEER_A_ENDPOINT] = { MNL_TYPE_UNSPEC },
	[WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL] = { MNL_TYPE_U16 },
	[WGPEER_A_LAST_HANDSHAKE_TIME] = { MNL_TYPE_UNSPEC },
	[WGPEER_A_RX_BYTES] = { MNL_TYPE_U64 },
	[WGPEER_A_TX_BYTES] = { MNL_TYPE_U64 },
	[WGPEER_A_ALLOWEDIPS] = { MNL_TYPE_NESTED },
	[WGPEER_A_PROTOCOL_VERSION] = { MNL_TYPE_U32 },
};
static const NlPolicy allowedip_policy[WGALLOWEDIP_A_MAX + 1] = {
	[WGALLOWEDIP_A_FAMILY] = { MNL_TYPE_U16 },
	[WGALLOWEDIP_A_IPADDR] = { MNL_TYPE_UNSPEC },
	[WGALLOWEDIP_A_CIDR_MASK] = { MNL_TYPE_U8 },
};

/* nl_parse_attrs() and libmnl's nested walks stop quietly at an attribute that runs past its
 * container, dropping it and everything after it. The kernel never sends one: refuse the reply. */
static bool attrs_exact(const void *start, size_t len) {
	const struct nlattr *a = start;
	int left = (int) len;

	while (mnl_attr_ok(a, left)) {
		left -= (int) MNL_ALIGN(a->nla_len);
		a = mnl_attr_next(a);
	}
	return left <= 0;
}

static bool nest_exact(const struct nlattr *nest) {
	return attrs_exact(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest));
}

static int parse_nested_exact(const struct nlattr *nest, const NlPolicy *policy, unsigned max,
			      const struct nlattr **tb) {
	if (!nest_exact(nest))
		return -EBADMSG;
	return nl_parse_nested(nest, policy, max, tb);
}

static int get_key(const struct nlattr *a, WgKey *ret) {
	if (mnl_attr_get_payload_len(a) != WG_KEY_LEN)
		return -EBADMSG;
	memcpy(ret->b, mnl_attr_get_payload(a), WG_KEY_LEN);
	return 0;
}

/* An optional key attribute: absent leaves *k and *has alone; all zero means "none". */
static int get_key_opt(const struct nlattr *a, WgKey *k, bool *has) {
	int r;

	if (!a)
		return 0;
	r = get_key(a, k);
	if (r < 0)
		return r;
	*has = !wg_key_is_zero(k);
	return 0;
}

static int parse_allowed_ips(const struct nlattr *nest, WgPeer *p) {
	const struct nlattr *a;
	int r;

	if (!nest_exact(nest))
		return -EBADMSG;
	mnl_attr_for_each_nested(a, nest) {
		const struct nlattr *tb[WGALLOWEDIP_A_MAX + 1];
		IpPrefix pfx = {};
		uint16_t family;

		r = parse_nested_exact(a, allowedip_policy, WGALLOWEDIP_A_MAX, tb);
		if (r < 0)
			return r;
		if (!tb[WGALLOWEDIP_A_FAMILY] || !tb[WGALLOWEDIP_A_IPADDR] || !tb[WGALLOWEDIP_A_CIDR_MASK])
			return -EBADMSG;
		family = mnl_attr_get_u16(tb[WGALLOWEDIP_A_FAMILY]);
		if ((family != AF_INET && family != AF_INET6) ||
		    mnl_attr_get_payload_len(tb[WGALLOWEDIP_A_IPADDR]) != ip_addr_size(family))
			return -EBADMSG;
		pfx.addr.family = family;
		memcpy(pfx.addr.bytes, mnl_attr_get_payload(tb[WGALLOWEDIP_A_IPADDR]), ip_addr_size(family));
		pfx.len = mnl_attr_get_u8(tb[WGALLOWEDIP_A_CIDR_MASK]);
		if (pfx.len > ip_family_bits(family))
			return -EBADMSG;
		r = wg_peer_add_allowed_ip(p, &pfx);
		if (r < 0)
			return r == -E2BIG ? -EBADMSG : r;
	}
	return 0;
}

static int parse_endpoint(const struct nlattr *a, WgEndpoint *ret) {
	const void *d = mnl_attr_get_payload(a);
	size_t len = mnl_attr_get_payload_len(a);
	sa_family_t family;

	if (len < sizeof(family))
		return -EBADMSG;
	memcpy(&family, d, sizeof(family));
	if (family == AF_INET && len == sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin;
		memcpy(&sin, d, sizeof(sin));
		*ret = (WgEndpoint) { .addr.family = AF_INET, .addr.in = sin.sin_addr, .port = ntohs(sin.sin_port) };
	} else if (family == AF_INET6 && len == sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 sin6;
		memcpy(&sin6, d, sizeof(sin6));
		*ret = (WgEndpoint) { .addr.family = AF_INET6,
				      .addr.in6 = sin6.sin6_addr,
				      .port = ntohs(sin6.sin6_port) };
	} else
		return -EBADMSG; /* the kernel sends an endpoint only when the peer has one */
	return 0;
}

static int parse_peer(const struct nlattr *nest, WgDevice *d, bool first) {
	const struct nlattr *tb[WGPEER_A_MAX + 1];
	WgPeer *p;
	WgKey key;
	int r;

	r = parse_nested_exact(nest, peer_policy, WGPEER_A_MAX, tb);
	if (r < 0)
		return r;
	if (!tb[WGPEER_A_PUBLIC_KEY] || get_key(tb[WGPEER_A_PUBLIC_KEY], &key) < 0)
		return -EBADMSG;
	/* The continuation of the previous message's last peer (its allowed IPs did not fit). */
	if (first && d->n_peers > 0 && wg_key_equal(&d->peers[d->n_peers - 1].public_key, &key))
		p = &d->peers[d->n_peers - 1];
	else {
		r = wg_device_append_peer(d, &key, &p); /* duplicates: wg_device_check_unique_peers() */
		if (r < 0)
			return r == -E2BIG ? -EBADMSG : r;
	}
	r = get_key_opt(tb[WGPEER_A_PRESHARED_KEY], &p->preshared_key, &p->has_preshared_key);
	if (r < 0)
		return r;
	if (tb[WGPEER_A_ENDPOINT]) {
		r = parse_endpoint(tb[WGPEER_A_ENDPOINT], &p->endpoint);
		if (r < 0)
			return r;
	}
	if (tb[WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL])
		p->persistent_keepalive = mnl_attr_get_u16(tb[WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL]);
	if (tb[WGPEER_A_LAST_HANDSHAKE_TIME]) {
		struct __kernel_timespec ts;
		if (mnl_attr_get_payload_len(tb[WGPEER_A_LAST_HANDSHAKE_TIME]) != sizeof(ts))
			return -EBADMSG;
		memcpy(&ts, mnl_attr_get_payload(tb[WGPEER_A_LAST_HANDSHAKE_TIME]), sizeof(ts));
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
			return -EBADMSG;
		p->last_handshake = (struct timespec) { .tv_sec = (time_t) ts.tv_sec, .tv_nsec = (long) ts.tv_nsec };
	}
	if (tb[WGPEER_A_RX_BYTES])
		p->rx_bytes = mnl_attr_get_u64(tb[WGPEER_A_RX_BYTES]);
	if (tb[WGPEER_A_TX_BYTES])
		p->tx_bytes = mnl_attr_get_u64(tb[WGPEER_A_TX_BYTES]);
	if (tb[WGPEER_A_ALLOWEDIPS])
		return parse_allowed_ips(tb[WGPEER_A_ALLOWEDIPS], p);
	return 0;
}

int wg_genl_parse_get(const struct nlmsghdr *nlh, uint16_t family_id, WgDevice **dev) {
	const struct nlattr *tb[WGDEVICE_A_MAX + 1], *a;
	const struct genlmsghdr *g;
	_cleanup_(wg_device_freep) WgDevice *created = NULL;
	WgDevice *d = *dev;
	bool first = true;
	int r;

	if (nlh->nlmsg_type != family_id || mnl_nlmsg_get_payload_len(nlh) < sizeof(*g))
		return -EBADMSG;
	g = mnl_nlmsg_get_payload(nlh);
	if (g->cmd != WG_CMD_GET_DEVICE)
		return -EBADMSG;
	if (!attrs_exact(mnl_nlmsg_get_payload_offset(nlh, sizeof(*g)),
			 nlh->nlmsg_len - MNL_NLMSG_HDRLEN - MNL_ALIGN(sizeof(*g))))
		return -EBADMSG;
	r = nl_parse_attrs(nlh, sizeof(*g), device_policy, WGDEVICE_A_MAX, tb);
	if (r < 0)
		return r;
	if (tb[WGDEVICE_A_PEERS] && !nest_exact(tb[WGDEVICE_A_PEERS]))
		return -EBADMSG;
	if (!d) {
		if (!tb[WGDEVICE_A_IFNAME])
			return -EBADMSG;
		r = wg_device_new(mnl_attr_get_str(tb[WGDEVICE_A_IFNAME]), &created);
		if (r < 0)
			return r == -EINVAL ? -EBADMSG : r;
		d = created;
	} else if (tb[WGDEVICE_A_IFNAME] && !streq(mnl_attr_get_str(tb[WGDEVICE_A_IFNAME]), d->name))
		return -EBADMSG;
	if (tb[WGDEVICE_A_IFINDEX])
		d->ifindex = (int) mnl_attr_get_u32(tb[WGDEVICE_A_IFINDEX]);
	r = get_key_opt(tb[WGDEVICE_A_PRIVATE_KEY], &d->private_key, &d->has_private_key);
	if (r >= 0)
		r = get_key_opt(tb[WGDEVICE_A_PUBLIC_KEY], &d->public_key, &d->has_public_key);
	if (r < 0)
		return r;
	if (tb[WGDEVICE_A_LISTEN_PORT])
		d->listen_port = mnl_attr_get_u16(tb[WGDEVICE_A_LISTEN_PORT]);
	if (tb[WGDEVICE_A_FWMARK])
		d->fwmark = mnl_attr_get_u32(tb[WGDEVICE_A_FWMARK]);
	if (tb[WGDEVICE_A_PEERS])
		mnl_attr_for_each_nested(a, tb[WGDEVICE_A_PEERS]) {
			r = parse_peer(a, d, first);
			if (r < 0)
				return r;
			first = false;
		}
	if (created)
		*dev = TAKE_PTR(created);
	return 0;
}

/* ---- transport ---- */

static void mnl_socket_closep(struct mnl_socket **nl) {
	if (*nl)
		mnl_socket_close(*nl);
}

static int genl_open(struct mnl_socket **ret) {
	struct mnl_socket *nl;
	int one = 1;

	nl = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!nl)
		return negative_errno();
	(void) mnl_socket_setsockopt(nl, NETLINK_EXT_ACK, &one, sizeof(one));
	(void) mnl_socket_setsockopt(nl, NETLINK_CAP_ACK, &one, sizeof(one));
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int r = negative_errno();
		mnl_socket_close(nl);
		return r;
	}
	*ret = nl;
	return 0;
}

/* Sends one request and reads until its ACK (or, for a dump, NLMSG_DONE), handing every other
 * message to cb. *ret_intr is set when a dump message carried NLM_F_DUMP_INTR. */
static int genl_call(struct mnl_socket *nl, struct nlmsghdr *nlh, int (*cb)(const struct nlmsghdr *, void *),
		     void *userdata, bool *ret_intr) {
	_cleanup_free_ uint8_t *rbuf = NULL;
	size_t rsize = 0;
	uint32_t portid = mnl_socket_get_portid(nl), seq = (uint32_t) random();
	int fd = mnl_socket_get_fd(nl), r;

	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return negative_errno();
	for (;;) {
		ssize_t n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
		const struct nlmsghdr *m;
		int len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if ((size_t) n > rsize) {
			uint8_t *b = realloc(rbuf, (size_t) n);
			if (!b)
				return -ENOMEM;
			rbuf = b;
			rsize = (size_t) n;
		}
		n = recv(fd, rbuf, rsize, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		len = (int) n;
		for (m = (const struct nlmsghdr *) rbuf; nl_msg_ok(m, len); m = mnl_nlmsg_next(m, &len)) {
			if (m->nlmsg_pid != portid || m->nlmsg_seq != seq)
				continue;
			if (m->nlmsg_flags & NLM_F_DUMP_INTR)
				*ret_intr = true;
			if (m->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(m);
				if (mnl_nlmsg_get_payload_len(m) < sizeof(*e))
					return -EBADMSG;
				return e->error <= 0 ? e->error : -e->error;
			}
			if (m->nlmsg_type == NLMSG_DONE) {
				int err = 0;
				if (mnl_nlmsg_get_payload_len(m) >= sizeof(err))
					memcpy(&err, mnl_nlmsg_get_payload(m), sizeof(err));
				return err < 0 ? err : 0;
			}
			if (m->nlmsg_type < NLMSG_MIN_TYPE)
				continue;
			if (cb) {
				r = cb(m, userdata);
				if (r < 0)
					return r;
			}
		}
	}
}

static int family_cb(const struct nlmsghdr *nlh, void *userdata) {
	return wg_genl_parse_family(nlh, userdata);
}

static int resolve_on(struct mnl_socket *nl, uint16_t *ret) {
	union {
		struct nlmsghdr hdr;
		uint8_t data[256];
	} buf;
	uint16_t id = 0;
	bool intr = false;
	int r;

	r = wg_genl_build_getfamily(&buf, sizeof(buf));
	if (r < 0)
		return r;
	r = genl_call(nl, &buf.hdr, family_cb, &id, &intr);
	if (r < 0)
		return r; /* -ENOENT: no such family (module not loaded) */
	if (id == 0)
		return -ENOENT;
	*ret = id;
	return 0;
}

int wg_genl_resolve_family(uint16_t *ret) {
	_cleanup_(mnl_socket_closep) struct mnl_socket *nl = NULL;
	int r;

	r = genl_open(&nl);
	if (r < 0)
		return r;
	return resolve_on(nl, ret);
}

/* A socket and the family id, for a device operation: no family means no such device (-ENODEV). */
static int genl_open_resolved(struct mnl_socket **ret, uint16_t *ret_id) {
	_cleanup_(mnl_socket_closep) struct mnl_socket *nl = NULL;
	int r;

	r = genl_open(&nl);
	if (r < 0)
		return r;
	r = resolve_on(nl, ret_id);
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	*ret = TAKE_PTR(nl);
	return 0;
}

typedef struct GetState {
	uint16_t family_id;
	WgDevice *dev;
} GetState;

static int get_cb(const struct nlmsghdr *nlh, void *userdata) {
	GetState *st = userdata;
	return wg_genl_parse_get(nlh, st->family_id, &st->dev);
}

static int genl_get(const char *ifname, WgDevice **ret) {
	_cleanup_(mnl_socket_closep) struct mnl_socket *nl = NULL;
	union {
		struct nlmsghdr hdr;
		uint8_t data[256];
	} buf;
	uint16_t id;
	int r;

	r = genl_open_resolved(&nl, &id);
	if (r < 0)
		return r;
	for (unsigned attempt = 0; attempt < WG_GENL_DUMP_RETRIES; attempt++) {
		GetState st = { .family_id = id };
		bool intr = false;

		r = wg_genl_build_get(&buf, sizeof(buf), id, ifname);
		if (r < 0)
			return r;
		r = genl_call(nl, &buf.hdr, get_cb, &st, &intr);
		if (r >= 0 && intr)
			r = -EAGAIN;
		if (r >= 0 && !st.dev)
			r = -ENODEV;
		if (r >= 0 && wg_device_check_unique_peers(st.dev) < 0)
			r = -EBADMSG; /* a peer twice that is no continuation */
		if (r >= 0) {
			*ret = st.dev;
			return 0;
		}
		wg_device_free(st.dev);
		if (r != -EAGAIN)
			return r;
	}
	return -EAGAIN;
}

/* Sends a (possibly split) set request and waits for each message's ACK. */
static int genl_set(const WgDevice *dev, unsigned flags) {
	_cleanup_(mnl_socket_closep) struct mnl_socket *nl = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	WgGenlCursor cur = {};
	uint16_t id;
	int r;

	r = genl_open_resolved(&nl, &id);
	if (r < 0)
		return r;
	/* Heap, not stack: the message may carry the private key, and it is wiped before it is freed. */
	buf = calloc(1, WG_GENL_MSG_SIZE);
	if (!buf)
		return -ENOMEM;
	while (!cur.done) {
		bool intr = false;

		r = wg_genl_build_set(buf, WG_GENL_MSG_SIZE, id, dev, flags, &cur);
		if (r >= 0)
			r = genl_call(nl, (struct nlmsghdr *) buf, NULL, NULL, &intr);
		explicit_bzero(buf, WG_GENL_MSG_SIZE);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ip link add IFNAME type wireguard */
int wg_genl_build_link(NlMsgBuf *buf, const char *ifname) {
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *linkinfo;

	if (!ifname || !nl_ifname_valid(ifname))
		return -EINVAL;
	nlh = nl_msg_new(buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(struct ifinfomsg));
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_family = AF_UNSPEC;
	NL_PUT_STRZ(nlh, IFLA_IFNAME, ifname);
	NL_NEST_START(nlh, linkinfo, IFLA_LINKINFO);
	NL_PUT_STRZ(nlh, IFLA_INFO_KIND, "wireguard");
	mnl_attr_nest_end(nlh, linkinfo);
	return 0;
}

static int genl_ensure(const char *ifname) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	NlMsgBuf buf;
	NlLink l;
	int r;

	r = nl_sock_open(&s);
	if (r < 0)
		return r;
	r = nl_link_get(s, ifname, 0, &l);
	if (r >= 0)
		return streq(l.kind, "wireguard") ? 0 : -EEXIST;
	if (r != -ENODEV)
		return r;
	r = nl_link_create_built(s, &buf, wg_genl_build_link(&buf, ifname));
	return r < 0 ? r : 1;
}

static int genl_set_device(const WgDevice *dev) {
	return genl_set(dev, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS);
}

static int genl_update_peer(const char *ifname, const WgPeer *peer) {
	return wg_driver_update_peer(genl_set, ifname, peer);
}

static int genl_remove_peer(const char *ifname, const WgKey *public_key) {
	return wg_driver_remove_peer(genl_set, ifname, public_key);
}

static int genl_destroy(const char *ifname) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	NlLink l;
	int r;

	r = nl_sock_open(&s);
	if (r < 0)
		return r;
	r = nl_link_get(s, ifname, 0, &l);
	if (r == -ENODEV)
		return 0;
	if (r < 0)
		return r;
	if (!streq(l.kind, "wireguard"))
		return -EMEDIUMTYPE; /* not ours to delete */
	r = nl_link_del(s, l.ifindex);
	return r == -ENODEV ? 0 : r;
}

const WgDriverOps wg_genl_driver = {
	.name = "kernel",
	.ensure = genl_ensure,
	.set = genl_set_device,
	.update_peer = genl_update_peer,
	.remove_peer = genl_remove_peer,
	.get = genl_get,
	.destroy = genl_destroy,
};
