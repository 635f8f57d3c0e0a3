/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel driver's messages (src/daemon/wireguard/wg-genl.c) without the kernel (this machine
 * has no wireguard module): WG_CMD_SET_DEVICE requests compared byte for byte with messages an
 * independent encoder below lays out from <linux/wireguard.h>; a desired state larger than one
 * message split as wireguard-tools splits it and reassembled; CTRL_CMD_GETFAMILY; the
 * WG_CMD_GET_DEVICE reply parser on hand-built replies (a peer continued across two messages,
 * unknown attributes) and on malformed ones.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/time_types.h>
#include <linux/wireguard.h>

#include "basic/macro.h"
#include "daemon/wireguard/wg-genl.h"
#include "shared/nl/nl-internal.h"
#include "test-wg-util.h"

#define FAMILY 0x1d

/* ---- an independent encoder: raw nlmsghdr / nlattr layout, 4-byte padding ---- */

typedef struct Msg {
	uint8_t b[16384];
	size_t len;
} Msg;

static void raw(Msg *m, const void *d, size_t n) {
	assert_true(m->len + n + 4 <= sizeof(m->b));
	memcpy(m->b + m->len, d, n);
	m->len += n;
	while (m->len % 4)
		m->b[m->len++] = 0;
}

/* famhdr 4: a genlmsghdr of cmd and version WG_GENL_VERSION (1, as CTRL's); else that many zeros */
static void msg_start(Msg *m, uint16_t type, uint16_t flags, uint8_t cmd, size_t famhdr) {
	struct nlmsghdr h = { .nlmsg_type = type, .nlmsg_flags = flags };
	uint8_t hdr[16] = { cmd, famhdr == 4 ? WG_GENL_VERSION : 0 };

	memset(m, 0, sizeof(*m));
	raw(m, &h, sizeof(h));
	raw(m, hdr, famhdr);
}

static void msg_end(Msg *m) {
	uint32_t len = (uint32_t) m->len;
	memcpy(m->b, &len, sizeof(len));
}

static void attr(Msg *m, uint16_t type, const void *d, size_t n) {
	struct nlattr a = { .nla_len = (uint16_t) (sizeof(a) + n), .nla_type = type };
	size_t start = m->len;

	raw(m, &a, sizeof(a));
	m->len = start + sizeof(a);
	raw(m, d, n);
}
static void attr_u8(Msg *m, uint16_t type, uint8_t v) {
	attr(m, type, &v, 1);
}
static void attr_u16(Msg *m, uint16_t type, uint16_t v) {
	attr(m, type, &v, 2);
}
static void attr_u32(Msg *m, uint16_t type, uint32_t v) {
	attr(m, type, &v, 4);
}
static void attr_u64(Msg *m, uint16_t type, uint64_t v) {
	attr(m, type, &v, 8);
}
static void attr_str(Msg *m, uint16_t type, const char *s) {
	attr(m, type, s, strlen(s) + 1);
}
static size_t nest(Msg *m, uint16_t type) {
	struct nlattr a = { .nla_type = type | NLA_F_NESTED };
	size_t at = m->len;

	raw(m, &a, sizeof(a));
	return at;
}
static void nest_end(Msg *m, size_t at) {
	uint16_t len = (uint16_t) (m->len - at);
	memcpy(m->b + at, &len, sizeof(len));
}

static void allowed(Msg *m, int family, const char *addr, uint8_t cidr) {
	uint8_t a[16];
	size_t n = nest(m, 0);

	assert_int_equal(inet_pton(family, addr, a), 1);
	attr_u16(m, WGALLOWEDIP_A_FAMILY, (uint16_t) family);
	attr(m, WGALLOWEDIP_A_IPADDR, a, family == AF_INET ? 4 : 16);
	attr_u8(m, WGALLOWEDIP_A_CIDR_MASK, cidr);
	nest_end(m, n);
}

static void assert_same(const void *got, int got_len, const Msg *want) {
	assert_int_equal(got_len, (int) want->len);
	for (size_t i = 0; i < want->len; i++)
		if (((const uint8_t *) got)[i] != want->b[i])
			fail_msg("byte %zu: got 0x%02x, want 0x%02x", i, ((const uint8_t *) got)[i], want->b[i]);
}

/* The start every expected SET request shares. */
static void want_start(Msg *m, const char *ifname) {
	msg_start(m, FAMILY, NLM_F_REQUEST | NLM_F_ACK, WG_CMD_SET_DEVICE, 4);
	attr_str(m, WGDEVICE_A_IFNAME, ifname);
}

/* Opens WGDEVICE_A_PEERS and the first peer, with its public key. */
static void want_peer(Msg *m, const WgKey *k, size_t *ret_peers, size_t *ret_peer) {
	*ret_peers = nest(m, WGDEVICE_A_PEERS);
	*ret_peer = nest(m, 0);
	attr(m, WGPEER_A_PUBLIC_KEY, k->b, 32);
}

/* Builds dev's request, which must fit one message, and compares it with want. */
static void build_is(const WgDevice *d, unsigned flags, const Msg *want) {
	uint8_t buf[WG_GENL_MSG_SIZE];
	WgGenlCursor cur = {};
	int n = wg_genl_build_set(buf, sizeof(buf), FAMILY, d, flags, &cur);

	assert_same(buf, n, want);
	assert_true(cur.done);
}

/* ---- the desired state ---- */

/* wg set weft-wg private-key K listen-port 51820 fwmark 0x1234 peer P preshared-key S
 *   endpoint 192.0.2.7:51820 persistent-keepalive 25 allowed-ips 10.244.1.0/24,fd00:10:244:1::/64
 * with every other peer removed. */
static void test_set_full(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = sample_device();
	WgKey k1 = key_of(0x11), k2 = key_of(0x22), k3 = key_of(0x33);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(51820) };
	Msg want;
	size_t peers, peer, aips;

	inet_pton(AF_INET, "192.0.2.7", &sin.sin_addr);
	want_start(&want, "weft-wg");
	attr(&want, WGDEVICE_A_PRIVATE_KEY, k1.b, 32);
	attr_u16(&want, WGDEVICE_A_LISTEN_PORT, 51820);
	attr_u32(&want, WGDEVICE_A_FWMARK, 0x1234);
	attr_u32(&want, WGDEVICE_A_FLAGS, WGDEVICE_F_REPLACE_PEERS);
	want_peer(&want, &k2, &peers, &peer);
	attr(&want, WGPEER_A_PRESHARED_KEY, k3.b, 32);
	attr(&want, WGPEER_A_ENDPOINT, &sin, sizeof(sin));
	attr_u16(&want, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, 25);
	attr_u32(&want, WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
	aips = nest(&want, WGPEER_A_ALLOWEDIPS);
	allowed(&want, AF_INET, "10.244.1.0", 24);
	allowed(&want, AF_INET6, "fd00:10:244:1::", 64);
	nest_end(&want, aips);
	nest_end(&want, peer);
	nest_end(&want, peers);
	msg_end(&want);

	build_is(d, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS, &want);
}

/* wg set weft-wg peer P endpoint [2001:db8::7]:51821 persistent-keepalive 0 preshared-key /dev/null
 * (one peer changed: no device attributes, no REPLACE_PEERS; no allowed IP left) */
static void test_update_one_peer(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	WgKey k2 = key_of(0x22), zero = {};
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(51821) };
	WgPeer *p;
	Msg want;
	size_t peers, peer;

	assert_int_equal(wg_device_new("weft-wg-v6", &d), 0);
	d->has_private_key = true; /* not sent without WG_SET_DEVICE_ATTRS */
	d->private_key = key_of(0x11);
	assert_int_equal(wg_device_add_peer(d, &k2, &p), 0);
	assert_int_equal(ip_addr_parse("2001:db8::7", &p->endpoint.addr), 0);
	p->endpoint.port = 51821;
	inet_pton(AF_INET6, "2001:db8::7", &sin6.sin6_addr);

	want_start(&want, "weft-wg-v6");
	want_peer(&want, &k2, &peers, &peer);
	attr(&want, WGPEER_A_PRESHARED_KEY, zero.b, 32);
	attr(&want, WGPEER_A_ENDPOINT, &sin6, sizeof(sin6));
	attr_u16(&want, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, 0);
	attr_u32(&want, WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS);
	nest_end(&want, peer);
	nest_end(&want, peers);
	msg_end(&want);

	build_is(d, 0, &want);
}

/* wg set weft-wg peer P remove */
static void test_remove_peer(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = sample_device();
	WgKey k2 = key_of(0x22);
	Msg want;
	size_t peers, peer;

	want_start(&want, "weft-wg");
	want_peer(&want, &k2, &peers, &peer);
	attr_u32(&want, WGPEER_A_FLAGS, WGPEER_F_REMOVE_ME);
	nest_end(&want, peer);
	nest_end(&want, peers);
	msg_end(&want);

	build_is(d, WG_SET_REMOVE_PEERS, &want);
}

/* A device without peers: one message, an empty peer list replacing every peer. */
static void test_set_no_peers(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	Msg want;

	assert_int_equal(wg_device_new("weft-wg", &d), 0);
	want_start(&want, "weft-wg");
	attr_u16(&want, WGDEVICE_A_LISTEN_PORT, 0);
	attr_u32(&want, WGDEVICE_A_FWMARK, 0);
	attr_u32(&want, WGDEVICE_A_FLAGS, WGDEVICE_F_REPLACE_PEERS);
	msg_end(&want);
	build_is(d, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS, &want);
}

/* Per peer of a message: does it carry WGPEER_A_FLAGS with REPLACE_ALLOWEDIPS, and its first
 * allowed IP's index in the original list (computed by the caller). */
typedef struct MsgPeer {
	WgKey key;
	bool replace_allowedips;
	size_t n_allowed;
} MsgPeer;

static size_t list_peers(const struct nlmsghdr *nlh, MsgPeer *out, size_t max, bool *ret_replace_peers,
			 bool *ret_private) {
	const struct nlattr *a, *p, *pa;
	size_t n = 0;

	*ret_replace_peers = *ret_private = false;
	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(a) == WGDEVICE_A_FLAGS)
			*ret_replace_peers = mnl_attr_get_u32(a) & WGDEVICE_F_REPLACE_PEERS;
		if (mnl_attr_get_type(a) == WGDEVICE_A_PRIVATE_KEY)
			*ret_private = true;
		if (mnl_attr_get_type(a) != WGDEVICE_A_PEERS)
			continue;
		mnl_attr_for_each_nested(p, a) {
			assert_true(n < max);
			out[n] = (MsgPeer) {};
			mnl_attr_for_each_nested(pa, p) {
				const struct nlattr *ip;
				if (mnl_attr_get_type(pa) == WGPEER_A_PUBLIC_KEY)
					memcpy(out[n].key.b, mnl_attr_get_payload(pa), 32);
				if (mnl_attr_get_type(pa) == WGPEER_A_FLAGS)
					out[n].replace_allowedips = mnl_attr_get_u32(pa) & WGPEER_F_REPLACE_ALLOWEDIPS;
				if (mnl_attr_get_type(pa) == WGPEER_A_ALLOWEDIPS)
					mnl_attr_for_each_nested(ip, pa)
						out[n].n_allowed++;
			}
			n++;
		}
	}
	return n;
}

/* Builds every message of dev's full set with `size`-byte buffers, checks each against the rules
 * (device attributes and REPLACE_PEERS in the first only; a continued peer without
 * REPLACE_ALLOWEDIPS; size respected), and reassembles them with the GET parser (same layout). */
static size_t split_and_check(const WgDevice *dev, size_t size) {
	_cleanup_(wg_device_freep) WgDevice *back = NULL;
	static MsgPeer mp[4096];
	WgGenlCursor cur = {};
	uint8_t buf[WG_GENL_MSG_SIZE];
	size_t messages = 0;
	WgKey last = {};
	bool have_last = false;

	while (!cur.done) {
		bool replace_peers, priv;
		size_t n;
		int len = wg_genl_build_set(buf, size, FAMILY, dev, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS, &cur);

		assert_true(len > 0);
		assert_true((size_t) len <= size);
		assert_int_equal(((struct nlmsghdr *) buf)->nlmsg_len, len);
		n = list_peers((struct nlmsghdr *) buf, mp, ELEMENTSOF(mp), &replace_peers, &priv);
		assert_int_equal(replace_peers, messages == 0);
		assert_int_equal(priv, messages == 0);
		for (size_t i = 0; i < n; i++) {
			bool continued = i == 0 && have_last && wg_key_equal(&mp[i].key, &last);
			/* a continued peer must not replace (drop) what the previous message added */
			assert_int_equal(mp[i].replace_allowedips, !continued);
			if (continued)
				assert_true(mp[i].n_allowed > 0);
		}
		if (n > 0) {
			last = mp[n - 1].key;
			have_last = true;
		}
		/* the GET layout is the SET layout: reassemble with the reply parser */
		((struct genlmsghdr *) mnl_nlmsg_get_payload((struct nlmsghdr *) buf))->cmd = WG_CMD_GET_DEVICE;
		assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) buf, FAMILY, &back), 0);
		messages++;
		assert_true(messages < 100000);
	}
	assert_non_null(back);
	assert_string_equal(back->name, dev->name);
	assert_int_equal(back->n_peers, dev->n_peers);
	assert_true(wg_key_equal(&back->private_key, &dev->private_key));
	for (size_t i = 0; i < dev->n_peers; i++) {
		const WgPeer *a = &dev->peers[i], *b = &back->peers[i];
		assert_true(wg_key_equal(&a->public_key, &b->public_key));
		assert_int_equal(a->persistent_keepalive, b->persistent_keepalive);
		assert_true(ip_addr_equal(&a->endpoint.addr, &b->endpoint.addr));
		assert_int_equal(a->endpoint.port, b->endpoint.port);
		assert_int_equal(a->n_allowed_ips, b->n_allowed_ips);
		for (size_t j = 0; j < a->n_allowed_ips; j++)
			assert_true(ip_prefix_equal(&a->allowed_ips[j], &b->allowed_ips[j]));
	}
	return messages;
}

static WgDevice *big_device(size_t n_peers, size_t n_ips, size_t huge_peer_ips) {
	WgDevice *d;

	assert_int_equal(wg_device_new("weft-wg", &d), 0);
	d->has_private_key = true;
	d->private_key = key_of(0x11);
	d->listen_port = 51820;
	for (size_t i = 0; i < n_peers; i++) {
		WgKey k = {};
		WgPeer *p;
		size_t ips = i == n_peers / 2 ? huge_peer_ips : n_ips;

		k.b[0] = (uint8_t) (i >> 8);
		k.b[1] = (uint8_t) i;
		k.b[31] = 0x77;
		assert_int_equal(wg_device_add_peer(d, &k, &p), 0);
		p->endpoint.addr.family = AF_INET;
		p->endpoint.addr.in.s_addr = htonl(0xc0000200 + (uint32_t) i);
		p->endpoint.port = 51820;
		p->persistent_keepalive = (uint16_t) i;
		for (size_t j = 0; j < ips; j++) {
			IpPrefix a = { .addr.family = AF_INET, .len = 32 };
			a.addr.in.s_addr = htonl(0x0a000000 + (uint32_t) (i << 12) + (uint32_t) j);
			assert_int_equal(wg_peer_add_allowed_ip(p, &a), 0);
		}
	}
	return d;
}

static void test_split(void **state) {
	_cleanup_(wg_device_freep) WgDevice *many = big_device(300, 3, 3);
	_cleanup_(wg_device_freep) WgDevice *huge = big_device(5, 2, 1500);
	size_t n;

	/* 300 peers of ~200 bytes: several messages, each ending on a whole peer */
	n = split_and_check(many, WG_GENL_MSG_SIZE);
	assert_true(n >= 10 && n <= 30);
	/* one peer with 1500 allowed IPs (~36 KB): continued over ~9 messages */
	n = split_and_check(huge, WG_GENL_MSG_SIZE);
	assert_true(n >= 9);
	/* tiny messages: every peer split, still exact */
	split_and_check(many, 256);
	split_and_check(huge, 180);
}

static void test_split_no_progress(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = sample_device();
	uint8_t buf[WG_GENL_MSG_SIZE];
	WgGenlCursor cur = {};

	/* the device attributes fit, the peer head does not: first message, then no progress */
	assert_true(wg_genl_build_set(buf, 100, FAMILY, d, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS, &cur) > 0);
	assert_false(cur.done);
	assert_int_equal(wg_genl_build_set(buf, 100, FAMILY, d, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS, &cur),
			 -EMSGSIZE);
	cur = (WgGenlCursor) {};
	assert_int_equal(wg_genl_build_set(buf, 10, FAMILY, d, 0, &cur), -EMSGSIZE);
}

static void test_set_invalid(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = sample_device();
	uint8_t buf[WG_GENL_MSG_SIZE];
	WgGenlCursor cur = {};
	NlMsgBuf nb;

	d->peers[0].allowed_ips[0].addr.family = AF_UNSPEC;
	assert_int_equal(wg_genl_build_set(buf, sizeof(buf), FAMILY, d, 0, &cur), -EINVAL);
	d->peers[0].allowed_ips[0].addr.family = AF_INET;
	d->peers[0].allowed_ips[0].len = 33;
	assert_int_equal(wg_genl_build_set(buf, sizeof(buf), FAMILY, d, 0, &cur), -EINVAL);
	d->peers[0].allowed_ips[0].len = 24;
	d->peers[0].endpoint.addr.family = AF_PACKET;
	assert_int_equal(wg_genl_build_set(buf, sizeof(buf), FAMILY, d, 0, &cur), -EINVAL);
	assert_int_equal(wg_genl_build_get(buf, sizeof(buf), FAMILY, "a/b"), -EINVAL);
	assert_int_equal(wg_genl_build_get(buf, sizeof(buf), FAMILY, "0123456789abcdef"), -EINVAL);
	assert_int_equal(wg_genl_build_link(&nb, ""), -EINVAL);
	assert_int_equal(wg_device_new("0123456789abcdef", &(WgDevice *) { NULL }), -EINVAL);
}

/* ip link add weft-wg type wireguard */
static void test_build_link(void **state) {
	NlMsgBuf nb;
	Msg want;
	size_t li;

	msg_start(&want, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0, sizeof(struct ifinfomsg));
	attr_str(&want, IFLA_IFNAME, "weft-wg");
	li = nest(&want, IFLA_LINKINFO);
	attr_str(&want, IFLA_INFO_KIND, "wireguard");
	nest_end(&want, li);
	msg_end(&want);
	assert_int_equal(wg_genl_build_link(&nb, "weft-wg"), 0);
	assert_same(&nb, (int) nb.hdr.nlmsg_len, &want);
}

static void test_family(void **state) {
	uint8_t buf[256];
	Msg want, reply;
	uint16_t id = 0;

	msg_start(&want, GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, CTRL_CMD_GETFAMILY, 4);
	attr_str(&want, CTRL_ATTR_FAMILY_NAME, "wireguard");
	msg_end(&want);
	assert_same(buf, wg_genl_build_getfamily(buf, sizeof(buf)), &want);

	/* the kernel's CTRL_CMD_NEWFAMILY, with the attributes we do not read */
	msg_start(&reply, GENL_ID_CTRL, 0, CTRL_CMD_NEWFAMILY, 4);
	attr_str(&reply, CTRL_ATTR_FAMILY_NAME, "wireguard");
	attr_u16(&reply, CTRL_ATTR_FAMILY_ID, 0x22);
	attr_u32(&reply, CTRL_ATTR_VERSION, 1);
	attr_u32(&reply, CTRL_ATTR_MAXATTR, 8);
	nest_end(&reply, nest(&reply, CTRL_ATTR_OPS));
	msg_end(&reply);
	assert_int_equal(wg_genl_parse_family((struct nlmsghdr *) reply.b, &id), 0);
	assert_int_equal(id, 0x22);

	msg_start(&reply, GENL_ID_CTRL, 0, CTRL_CMD_NEWFAMILY, 4);
	attr_str(&reply, CTRL_ATTR_FAMILY_NAME, "nl80211");
	attr_u16(&reply, CTRL_ATTR_FAMILY_ID, 0x23);
	msg_end(&reply);
	assert_int_equal(wg_genl_parse_family((struct nlmsghdr *) reply.b, &id), -ENOENT);
	msg_start(&reply, GENL_ID_CTRL, 0, CTRL_CMD_NEWFAMILY, 4);
	attr_str(&reply, CTRL_ATTR_FAMILY_NAME, "wireguard");
	attr_u32(&reply, CTRL_ATTR_FAMILY_ID, 0x22); /* wrong size */
	msg_end(&reply);
	assert_int_equal(wg_genl_parse_family((struct nlmsghdr *) reply.b, &id), -EBADMSG);

	msg_start(&want, FAMILY, NLM_F_REQUEST | NLM_F_DUMP, WG_CMD_GET_DEVICE, 4);
	attr_str(&want, WGDEVICE_A_IFNAME, "weft-wg");
	msg_end(&want);
	assert_same(buf, wg_genl_build_get(buf, sizeof(buf), FAMILY, "weft-wg"), &want);
}

/* ---- GET replies ---- */

static void reply_device_head(Msg *m, uint16_t flags) {
	WgKey priv = key_of(0x11), pub = key_of(0x12);

	msg_start(m, FAMILY, flags, WG_CMD_GET_DEVICE, 4);
	attr_u32(m, WGDEVICE_A_IFINDEX, 7);
	attr_str(m, WGDEVICE_A_IFNAME, "weft-wg");
	attr(m, WGDEVICE_A_PRIVATE_KEY, priv.b, 32);
	attr(m, WGDEVICE_A_PUBLIC_KEY, pub.b, 32);
	attr_u16(m, WGDEVICE_A_LISTEN_PORT, 51820);
	attr_u32(m, WGDEVICE_A_FWMARK, 0);
	attr_u32(m, 99, 0xdeadbeef); /* from a newer kernel: skipped */
}

static void test_parse_get(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	WgKey k1 = key_of(0x11), k1pub = key_of(0x12), k2 = key_of(0x22), k3 = key_of(0x33), k4 = key_of(0x44),
	      zero = {};
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(51820) };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(51821) };
	struct __kernel_timespec ts = { .tv_sec = 1700000000, .tv_nsec = 123456789 }, never = {};
	Msg m1, m2;
	size_t peers, peer, aips;

	inet_pton(AF_INET, "192.0.2.7", &sin.sin_addr);
	inet_pton(AF_INET6, "2001:db8::9", &sin6.sin6_addr);

	/* message 1: device, peer k2 with its first allowed IPs */
	reply_device_head(&m1, NLM_F_MULTI);
	peers = nest(&m1, WGDEVICE_A_PEERS);
	peer = nest(&m1, 0);
	attr(&m1, WGPEER_A_PUBLIC_KEY, k2.b, 32);
	attr(&m1, WGPEER_A_PRESHARED_KEY, k3.b, 32);
	attr(&m1, WGPEER_A_ENDPOINT, &sin, sizeof(sin));
	attr_u16(&m1, WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, 25);
	attr(&m1, WGPEER_A_LAST_HANDSHAKE_TIME, &ts, sizeof(ts));
	attr_u64(&m1, WGPEER_A_RX_BYTES, 1234567);
	attr_u64(&m1, WGPEER_A_TX_BYTES, 7654321);
	attr_u32(&m1, WGPEER_A_PROTOCOL_VERSION, 1);
	attr_u32(&m1, 42, 1); /* unknown peer attribute */
	aips = nest(&m1, WGPEER_A_ALLOWEDIPS);
	allowed(&m1, AF_INET, "10.244.1.0", 24);
	nest_end(&m1, aips);
	nest_end(&m1, peer);
	nest_end(&m1, peers);
	msg_end(&m1);

	/* message 2: k2 continued (key + the rest of its IPs), then k4 */
	msg_start(&m2, FAMILY, NLM_F_MULTI, WG_CMD_GET_DEVICE, 4);
	attr_u32(&m2, WGDEVICE_A_IFINDEX, 7);
	attr_str(&m2, WGDEVICE_A_IFNAME, "weft-wg");
	peers = nest(&m2, WGDEVICE_A_PEERS);
	peer = nest(&m2, 0);
	attr(&m2, WGPEER_A_PUBLIC_KEY, k2.b, 32);
	aips = nest(&m2, WGPEER_A_ALLOWEDIPS);
	allowed(&m2, AF_INET6, "fd00:10:244:1::", 64);
	allowed(&m2, AF_INET, "10.0.0.5", 32);
	nest_end(&m2, aips);
	nest_end(&m2, peer);
	peer = nest(&m2, 0);
	attr(&m2, WGPEER_A_PUBLIC_KEY, k4.b, 32);
	attr(&m2, WGPEER_A_PRESHARED_KEY, zero.b, 32);
	attr(&m2, WGPEER_A_ENDPOINT, &sin6, sizeof(sin6));
	attr(&m2, WGPEER_A_LAST_HANDSHAKE_TIME, &never, sizeof(never));
	attr_u64(&m2, WGPEER_A_RX_BYTES, 0);
	attr_u64(&m2, WGPEER_A_TX_BYTES, 148);
	nest_end(&m2, peer);
	nest_end(&m2, peers);
	msg_end(&m2);

	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m1.b, FAMILY, &d), 0);
	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m2.b, FAMILY, &d), 0);
	assert_string_equal(d->name, "weft-wg");
	assert_int_equal(d->ifindex, 7);
	assert_true(d->has_private_key);
	assert_true(wg_key_equal(&d->private_key, &k1));
	assert_true(d->has_public_key);
	assert_true(wg_key_equal(&d->public_key, &k1pub));
	assert_int_equal(d->listen_port, 51820);
	assert_int_equal(d->n_peers, 2);

	WgPeer *p = &d->peers[0];
	assert_true(wg_key_equal(&p->public_key, &k2));
	assert_true(p->has_preshared_key);
	assert_true(wg_key_equal(&p->preshared_key, &k3));
	assert_int_equal(p->endpoint.addr.family, AF_INET);
	assert_int_equal(p->endpoint.addr.in.s_addr, sin.sin_addr.s_addr);
	assert_int_equal(p->endpoint.port, 51820);
	assert_int_equal(p->persistent_keepalive, 25);
	assert_int_equal(p->last_handshake.tv_sec, 1700000000);
	assert_int_equal(p->last_handshake.tv_nsec, 123456789);
	assert_int_equal(p->rx_bytes, 1234567);
	assert_int_equal(p->tx_bytes, 7654321);
	assert_int_equal(p->n_allowed_ips, 3);
	assert_true(ip_prefix_equal(&p->allowed_ips[0], PFX("10.244.1.0/24")));
	assert_true(ip_prefix_equal(&p->allowed_ips[1], PFX("fd00:10:244:1::/64")));
	assert_true(ip_prefix_equal(&p->allowed_ips[2], PFX("10.0.0.5/32")));

	p = &d->peers[1];
	assert_true(wg_key_equal(&p->public_key, &k4));
	assert_false(p->has_preshared_key);
	assert_int_equal(p->endpoint.addr.family, AF_INET6);
	assert_int_equal(p->endpoint.port, 51821);
	assert_int_equal(p->last_handshake.tv_sec, 0);
	assert_int_equal(p->tx_bytes, 148);
	assert_int_equal(p->n_allowed_ips, 0);

	assert_int_equal(wg_device_check_unique_peers(d), 0);
	/* m2 again: its k2 continues k4 no more, and k4 comes twice: duplicates, caught at the end */
	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m2.b, FAMILY, &d), 0);
	assert_int_equal(wg_device_check_unique_peers(d), -EEXIST);
}

/* One message whose only peer gets the attribute `type` with `len` bytes of `fill`. */
static int parse_one_bad(uint16_t type, size_t len, uint8_t fill, bool with_key) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	WgKey k2 = key_of(0x22);
	uint8_t data[64];
	Msg m;
	size_t peers, peer;

	memset(data, fill, sizeof(data));
	reply_device_head(&m, 0);
	peers = nest(&m, WGDEVICE_A_PEERS);
	peer = nest(&m, 0);
	if (with_key)
		attr(&m, WGPEER_A_PUBLIC_KEY, k2.b, 32);
	attr(&m, type, data, len);
	nest_end(&m, peer);
	nest_end(&m, peers);
	msg_end(&m);
	return wg_genl_parse_get((struct nlmsghdr *) m.b, FAMILY, &d);
}

static int parse_one_allowed(int family, size_t addr_len, uint8_t cidr) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	WgKey k2 = key_of(0x22);
	uint8_t a[16] = { 10 };
	Msg m;
	size_t peers, peer, aips, ip;

	reply_device_head(&m, 0);
	peers = nest(&m, WGDEVICE_A_PEERS);
	peer = nest(&m, 0);
	attr(&m, WGPEER_A_PUBLIC_KEY, k2.b, 32);
	aips = nest(&m, WGPEER_A_ALLOWEDIPS);
	ip = nest(&m, 0);
	attr_u16(&m, WGALLOWEDIP_A_FAMILY, (uint16_t) family);
	attr(&m, WGALLOWEDIP_A_IPADDR, a, addr_len);
	attr_u8(&m, WGALLOWEDIP_A_CIDR_MASK, cidr);
	nest_end(&m, ip);
	nest_end(&m, aips);
	nest_end(&m, peer);
	nest_end(&m, peers);
	msg_end(&m);
	return wg_genl_parse_get((struct nlmsghdr *) m.b, FAMILY, &d);
}

static void test_parse_get_malformed(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	Msg m;

	assert_int_equal(parse_one_bad(WGPEER_A_TX_BYTES, 8, 0, true), 0); /* the control: well formed */
	assert_int_equal(parse_one_bad(WGPEER_A_PUBLIC_KEY, 32, 0x22, false), 0);
	assert_int_equal(parse_one_bad(WGPEER_A_PUBLIC_KEY, 31, 0x22, false), -EBADMSG);
	assert_int_equal(parse_one_bad(WGPEER_A_TX_BYTES, 8, 0, false), -EBADMSG); /* no public key */
	assert_int_equal(parse_one_bad(WGPEER_A_PRESHARED_KEY, 33, 0, true), -EBADMSG);
	assert_int_equal(parse_one_bad(WGPEER_A_TX_BYTES, 4, 0, true), -EBADMSG);
	assert_int_equal(parse_one_bad(WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL, 4, 0, true), -EBADMSG);
	assert_int_equal(parse_one_bad(WGPEER_A_LAST_HANDSHAKE_TIME, 8, 0, true), -EBADMSG);
	assert_int_equal(parse_one_bad(WGPEER_A_LAST_HANDSHAKE_TIME, 16, 0xff, true), -EBADMSG); /* negative */
	assert_int_equal(parse_one_bad(WGPEER_A_ENDPOINT, 16, 0, true), -EBADMSG);               /* AF_UNSPEC */
	assert_int_equal(parse_one_bad(WGPEER_A_ENDPOINT, 1, 0, true), -EBADMSG);
	assert_int_equal(parse_one_bad(WGPEER_A_ENDPOINT, 16, 2, true), -EBADMSG); /* family 0x0202 */
	assert_int_equal(parse_one_allowed(AF_INET, 4, 24), 0);
	assert_int_equal(parse_one_allowed(AF_INET, 4, 33), -EBADMSG);
	assert_int_equal(parse_one_allowed(AF_INET, 16, 24), -EBADMSG);
	assert_int_equal(parse_one_allowed(AF_INET6, 4, 24), -EBADMSG);
	assert_int_equal(parse_one_allowed(AF_INET6, 16, 129), -EBADMSG);
	assert_int_equal(parse_one_allowed(AF_PACKET, 4, 24), -EBADMSG);

	/* wrong command, wrong family, an attribute running past the message */
	reply_device_head(&m, 0);
	msg_end(&m);
	m.b[sizeof(struct nlmsghdr)] = WG_CMD_SET_DEVICE;
	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m.b, FAMILY, &d), -EBADMSG);
	m.b[sizeof(struct nlmsghdr)] = WG_CMD_GET_DEVICE;
	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m.b, FAMILY + 1, &d), -EBADMSG);
	assert_null(d);
	reply_device_head(&m, 0);
	attr_u32(&m, WGDEVICE_A_FWMARK, 1);
	msg_end(&m);
	m.b[m.len - 8] = 200; /* nla_len beyond the end */
	m.b[m.len - 7] = 0;
	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m.b, FAMILY, &d), -EBADMSG);
	assert_null(d);
	/* a first message without the name */
	msg_start(&m, FAMILY, 0, WG_CMD_GET_DEVICE, 4);
	attr_u32(&m, WGDEVICE_A_IFINDEX, 7);
	msg_end(&m);
	assert_int_equal(wg_genl_parse_get((struct nlmsghdr *) m.b, FAMILY, &d), -EBADMSG);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_full),
		cmocka_unit_test(test_update_one_peer),
		cmocka_unit_test(test_remove_peer),
		cmocka_unit_test(test_set_no_peers),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_no_progress),
		cmocka_unit_test(test_set_invalid),
		cmocka_unit_test(test_build_link),
		cmocka_unit_test(test_family),
		cmocka_unit_test(test_parse_get),
		cmocka_unit_test(test_parse_get_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
