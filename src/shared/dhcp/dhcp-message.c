/* SPDX-License-Identifier: Apache-2.0 */
/* DHCPv4 message build/parse and IPv4/UDP framing for the packet-socket client. */

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "shared/dhcp/dhcp-message.h"

/* Fixed BOOTP field offsets (RFC 2131 figure 1). */
enum {
	OFF_OP = 0,
	OFF_HTYPE = 1,
	OFF_HLEN = 2,
	OFF_XID = 4,
	OFF_SECS = 8,
	OFF_FLAGS = 10,
	OFF_CIADDR = 12,
	OFF_YIADDR = 16,
	OFF_SIADDR = 20,
	OFF_GIADDR = 24,
	OFF_CHADDR = 28,
	OFF_SNAME = 44,
	OFF_FILE = 108,
	OFF_COOKIE = 236,
};
#define BOOTP_MIN_LEN 300
#define BOOTP_FLAG_BROADCAST 0x8000

const char *dhcp_message_type_to_string(int type) {
	static const char *const names[] = {
		[DHCP_DISCOVER] = "DHCPDISCOVER", [DHCP_OFFER] = "DHCPOFFER",   [DHCP_REQUEST] = "DHCPREQUEST",
		[DHCP_DECLINE] = "DHCPDECLINE",   [DHCP_ACK] = "DHCPACK",       [DHCP_NAK] = "DHCPNAK",
		[DHCP_RELEASE] = "DHCPRELEASE",   [DHCP_INFORM] = "DHCPINFORM",
	};
	if (type <= 0 || (size_t) type >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[type];
}

static void put_be32(uint8_t *p, uint32_t v) {
	p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}
static void put_be16(uint8_t *p, uint16_t v) {
	p[0] = v >> 8, p[1] = v;
}
static uint32_t get_be32(const uint8_t *p) {
	return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}
static uint16_t get_be16(const uint8_t *p) {
	return (uint16_t) (p[0] << 8 | p[1]);
}

typedef struct OptWriter {
	uint8_t *buf;
	size_t size, pos;
} OptWriter;

static int opt_put(OptWriter *w, uint8_t code, const void *data, size_t len) {
	if (len > 255)
		return -EINVAL;
	/* Always leave room for the END option. */
	if (w->pos + 2 + len + 1 > w->size)
		return -EMSGSIZE;
	w->buf[w->pos++] = code;
	w->buf[w->pos++] = (uint8_t) len;
	if (len > 0)
		memcpy(w->buf + w->pos, data, len);
	w->pos += len;
	return 0;
}

static const DhcpRawOption *find_override(const DhcpBuild *b, uint8_t code) {
	for (size_t i = 0; i < b->n_opts; i++)
		if (b->opts[i].code == code)
			return &b->opts[i];
	return NULL;
}

int dhcp_message_build(uint8_t *buf, size_t size, const DhcpBuild *b) {
	OptWriter w = { .buf = buf, .size = size, .pos = DHCP_FIXED_LEN };
	uint8_t t = (uint8_t) b->type, mms[2];
	int r;

	if (b->type < DHCP_DISCOVER || b->type > DHCP_INFORM)
		return -EINVAL;
	if (size < BOOTP_MIN_LEN)
		return -EMSGSIZE;
	memset(buf, 0, DHCP_FIXED_LEN);
	buf[OFF_OP] = BOOTREQUEST;
	buf[OFF_HTYPE] = 1; /* Ethernet */
	buf[OFF_HLEN] = 6;
	put_be32(buf + OFF_XID, b->xid);
	put_be16(buf + OFF_SECS, b->secs);
	put_be16(buf + OFF_FLAGS, b->broadcast ? BOOTP_FLAG_BROADCAST : 0);
	memcpy(buf + OFF_CIADDR, &b->ciaddr, 4);
	memcpy(buf + OFF_CHADDR, b->mac, 6);
	put_be32(buf + OFF_COOKIE, DHCP_MAGIC_COOKIE);

	/* Message type first (RFC 2131 does not require it, but some servers and every capture
	 * tool expect it), then ours, then the caller's extra options. */
	if ((r = opt_put(&w, DHCP_OPT_MESSAGE_TYPE, &t, 1)) < 0)
		return r;
	if (b->requested_ip.s_addr && !find_override(b, DHCP_OPT_REQUESTED_IP) &&
	    (r = opt_put(&w, DHCP_OPT_REQUESTED_IP, &b->requested_ip, 4)) < 0)
		return r;
	if (b->server_id.s_addr && !find_override(b, DHCP_OPT_SERVER_ID) &&
	    (r = opt_put(&w, DHCP_OPT_SERVER_ID, &b->server_id, 4)) < 0)
		return r;
	/* RELEASE and DECLINE carry neither parameter requests nor a size (RFC 2131 table 5). */
	if (b->type != DHCP_RELEASE && b->type != DHCP_DECLINE) {
		put_be16(mms, DHCP_MSG_MAX);
		if (!find_override(b, DHCP_OPT_MAX_MESSAGE_SIZE) &&
		    (r = opt_put(&w, DHCP_OPT_MAX_MESSAGE_SIZE, mms, 2)) < 0)
			return r;
		if (b->n_prl > 0 && !find_override(b, DHCP_OPT_PARAM_REQUEST_LIST) &&
		    (r = opt_put(&w, DHCP_OPT_PARAM_REQUEST_LIST, b->prl, b->n_prl)) < 0)
			return r;
	}
	for (size_t i = 0; i < b->n_opts; i++) {
		const DhcpRawOption *o = &b->opts[i];
		if (o->code == DHCP_OPT_PAD || o->code == DHCP_OPT_END || o->code == DHCP_OPT_MESSAGE_TYPE)
			return -EINVAL;
		/* A RELEASE identifies the client only; "provide" options (hostname...) stay out,
		 * except the client identifier which the server keys the lease by. */
		if (b->type == DHCP_RELEASE && o->code != DHCP_OPT_CLIENT_ID && o->code != DHCP_OPT_SERVER_ID)
			continue;
		if ((r = opt_put(&w, o->code, o->data, o->len)) < 0)
			return r;
	}
	buf[w.pos++] = DHCP_OPT_END;
	if (w.pos < BOOTP_MIN_LEN) {
		memset(buf + w.pos, 0, BOOTP_MIN_LEN - w.pos);
		w.pos = BOOTP_MIN_LEN;
	}
	return (int) w.pos;
}

/* Appends one option occurrence; repeated codes concatenate (RFC 3396). */
static int store_option(DhcpMessage *m, uint8_t code, const uint8_t *data, size_t len) {
	if (m->opt_present[code]) {
		/* Concatenation needs the earlier parts to be the last thing stored. */
		if ((size_t) m->opt_off[code] + m->opt_len[code] != m->store_used) {
			size_t old = m->opt_len[code];
			if (m->store_used + old + len > sizeof(m->store))
				return -EBADMSG;
			memmove(m->store + m->store_used, m->store + m->opt_off[code], old);
			m->opt_off[code] = (uint16_t) m->store_used;
			m->store_used += old;
		}
		if (m->store_used + len > sizeof(m->store))
			return -EBADMSG;
		memcpy(m->store + m->store_used, data, len);
		m->store_used += len;
		m->opt_len[code] = (uint16_t) (m->opt_len[code] + len);
		return 0;
	}
	if (m->store_used + len > sizeof(m->store))
		return -EBADMSG;
	m->opt_present[code] = true;
	m->opt_off[code] = (uint16_t) m->store_used;
	m->opt_len[code] = (uint16_t) len;
	memcpy(m->store + m->store_used, data, len);
	m->store_used += len;
	return 0;
}

/* Walks one option area. `need_end`: END is mandatory (sname/file when overloaded). */
static int parse_options(DhcpMessage *m, const uint8_t *p, size_t len, bool need_end) {
	size_t i = 0;
	int r;

	while (i < len) {
		uint8_t code = p[i++], olen;

		if (code == DHCP_OPT_PAD)
			continue;
		if (code == DHCP_OPT_END)
			return 0;
		if (i >= len)
			return -EBADMSG;
		olen = p[i++];
		if (olen > len - i)
			return -EBADMSG;
		r = store_option(m, code, p + i, olen);
		if (r < 0)
			return r;
		i += olen;
	}
	/* Ran out without END: servers in the wild do this in the main area (trailing bytes are
	 * cut by the UDP length), so only the overloaded fields insist on it. */
	return need_end ? -EBADMSG : 0;
}

int dhcp_message_parse(const uint8_t *buf, size_t len, DhcpMessage *ret) {
	const uint8_t *v;
	size_t vlen;
	int r;

	if (!buf || len < DHCP_FIXED_LEN)
		return -EBADMSG;
	if (get_be32(buf + OFF_COOKIE) != DHCP_MAGIC_COOKIE)
		return -EBADMSG;
	if (buf[OFF_OP] != BOOTREQUEST && buf[OFF_OP] != BOOTREPLY)
		return -EBADMSG;
	if (buf[OFF_HLEN] > 16)
		return -EBADMSG;

	memset(ret, 0, offsetof(DhcpMessage, store));
	ret->store_used = 0;
	ret->op = buf[OFF_OP];
	ret->xid = get_be32(buf + OFF_XID);
	ret->flags = get_be16(buf + OFF_FLAGS);
	memcpy(&ret->ciaddr, buf + OFF_CIADDR, 4);
	memcpy(&ret->yiaddr, buf + OFF_YIADDR, 4);
	memcpy(&ret->siaddr, buf + OFF_SIADDR, 4);
	memcpy(&ret->giaddr, buf + OFF_GIADDR, 4);
	memcpy(ret->chaddr, buf + OFF_CHADDR, 16);

	r = parse_options(ret, buf + DHCP_FIXED_LEN, len - DHCP_FIXED_LEN, false);
	if (r < 0)
		return r;
	/* Option overload (RFC 2132 9.3): file first, then sname. */
	v = dhcp_message_option(ret, DHCP_OPT_OVERLOAD, &vlen);
	if (v) {
		if (vlen != 1 || v[0] < 1 || v[0] > 3)
			return -EBADMSG;
		uint8_t ov = v[0];
		if ((ov & 1) && (r = parse_options(ret, buf + OFF_FILE, 128, true)) < 0)
			return r;
		if ((ov & 2) && (r = parse_options(ret, buf + OFF_SNAME, 64, true)) < 0)
			return r;
	}

	v = dhcp_message_option(ret, DHCP_OPT_MESSAGE_TYPE, &vlen);
	if (!v || vlen != 1 || v[0] < DHCP_DISCOVER || v[0] > DHCP_INFORM)
		return -EBADMSG;
	ret->type = v[0];
	return 0;
}

const uint8_t *dhcp_message_option(const DhcpMessage *m, uint8_t code, size_t *ret_len) {
	if (!m->opt_present[code])
		return NULL;
	if (ret_len)
		*ret_len = m->opt_len[code];
	return m->store + m->opt_off[code];
}

int dhcp_message_option_u32(const DhcpMessage *m, uint8_t code, uint32_t *ret) {
	size_t len;
	const uint8_t *v = dhcp_message_option(m, code, &len);

	if (!v)
		return -ENODATA;
	if (len != 4)
		return -EBADMSG;
	*ret = get_be32(v);
	return 0;
}

int dhcp_message_option_addr(const DhcpMessage *m, uint8_t code, struct in_addr *ret) {
	size_t len;
	const uint8_t *v = dhcp_message_option(m, code, &len);

	if (!v)
		return -ENODATA;
	/* Option 3 and 6 are lists: the first entry is the one we use. */
	if (len < 4 || len % 4 != 0)
		return -EBADMSG;
	memcpy(ret, v, 4);
	return 0;
}

static struct in_addr prefix_mask(uint8_t len) {
	return (struct in_addr) { .s_addr = len == 0 ? 0 : htonl(~0u << (32 - len)) };
}

int dhcp_parse_classless_routes(const uint8_t *data, size_t len, DhcpRoute *ret, size_t max) {
	size_t i = 0, n = 0;

	while (i < len) {
		uint8_t width = data[i++];
		size_t octets = (width + 7) / 8;
		uint8_t dst[4] = {};
		DhcpRoute rt;

		if (width > 32 || len - i < octets + 4)
			return -EBADMSG;
		memcpy(dst, data + i, octets);
		i += octets;
		memcpy(&rt.dst, dst, 4);
		rt.dst.s_addr &= prefix_mask(width).s_addr;
		rt.len = width;
		memcpy(&rt.gw, data + i, 4);
		i += 4;
		if (n < max)
			ret[n++] = rt;
	}
	return (int) n;
}

int dhcp_parse_static_routes(const uint8_t *data, size_t len, DhcpRoute *ret, size_t max) {
	size_t n = 0;

	if (len % 8 != 0)
		return -EBADMSG;
	for (size_t i = 0; i < len; i += 8) {
		DhcpRoute rt;
		uint8_t first = data[i];

		memcpy(&rt.dst, data + i, 4);
		memcpy(&rt.gw, data + i + 4, 4);
		if (rt.dst.s_addr == 0)
			continue;
		/* Classful: A /8, B /16, C /24, anything above (D/E) as a host route. */
		rt.len = first < 128 ? 8 : first < 192 ? 16 : first < 224 ? 24 : 32;
		rt.dst.s_addr &= prefix_mask(rt.len).s_addr;
		if (n < max)
			ret[n++] = rt;
	}
	return (int) n;
}

int dhcp_netmask_to_prefixlen(struct in_addr mask) {
	uint32_t m = ntohl(mask.s_addr);
	int len = 0;

	while (len < 32 && (m & (0x80000000u >> len)))
		len++;
	if (len < 32 && (m << len) != 0)
		return -EINVAL;
	return len;
}

int dhcp_lease_from_message(const DhcpMessage *m, struct in_addr fallback_server, DhcpLease *ret) {
	DhcpLease l = {};
	struct in_addr mask;
	const uint8_t *v;
	size_t vlen;
	uint32_t t;
	int r;

	if (m->yiaddr.s_addr == 0 || m->yiaddr.s_addr == INADDR_BROADCAST)
		return -EBADMSG;
	l.address = m->yiaddr;
	if (dhcp_message_option_u32(m, DHCP_OPT_LEASE_TIME, &l.lease_time) < 0 || l.lease_time == 0)
		return -EBADMSG;
	r = dhcp_message_option_addr(m, DHCP_OPT_SERVER_ID, &l.server_id);
	if (r == -ENODATA)
		l.server_id = fallback_server;
	else if (r < 0)
		return r;
	if (l.server_id.s_addr == 0)
		return -EBADMSG;

	r = dhcp_message_option_addr(m, DHCP_OPT_SUBNET_MASK, &mask);
	if (r == 0) {
		if (dhcp_message_option(m, DHCP_OPT_SUBNET_MASK, &vlen) && vlen != 4)
			return -EBADMSG;
		r = dhcp_netmask_to_prefixlen(mask);
		if (r < 0)
			return -EBADMSG;
		l.prefixlen = (uint8_t) r;
		l.has_mask = true;
	} else if (r != -ENODATA)
		return r;
	if (dhcp_message_option_addr(m, DHCP_OPT_ROUTER, &l.router) < 0)
		l.router.s_addr = 0;

	if (l.lease_time == UINT32_MAX) {
		l.t1 = l.t2 = UINT32_MAX;
	} else {
		/* RFC 2131 4.4.5 defaults; server values only if consistent. */
		uint32_t d1 = l.lease_time / 2, d2 = (uint32_t) ((uint64_t) l.lease_time * 7 / 8);
		l.t2 = dhcp_message_option_u32(m, DHCP_OPT_REBINDING_TIME, &t) == 0 && t <= l.lease_time ? t : d2;
		l.t1 = dhcp_message_option_u32(m, DHCP_OPT_RENEWAL_TIME, &t) == 0 && t <= l.t2 ? t : MIN(d1, l.t2);
	}

	/* RFC 3442: with option 121 present, option 33 (and the router, for routing) are ignored.
	 * A malformed 121 is ignored as a whole, as dhclient and systemd-networkd do. */
	v = dhcp_message_option(m, DHCP_OPT_CLASSLESS_ROUTES, &vlen);
	r = v ? dhcp_parse_classless_routes(v, vlen, l.routes, DHCP_ROUTES_MAX) : -ENODATA;
	if (r >= 0) {
		l.n_routes = (size_t) r;
		l.classless = true;
	} else {
		v = dhcp_message_option(m, DHCP_OPT_STATIC_ROUTES, &vlen);
		r = v ? dhcp_parse_static_routes(v, vlen, l.routes, DHCP_ROUTES_MAX) : 0;
		l.n_routes = r > 0 ? (size_t) r : 0;
	}
	*ret = l;
	return 0;
}

uint32_t dhcp_csum_add(uint32_t sum, const void *buf, size_t len) {
	const uint8_t *p = buf;

	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t) (p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t) p[0] << 8;
	return sum;
}

uint16_t dhcp_csum_fold(uint32_t sum) {
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t) sum;
}

#define IP_HDR_LEN 20
#define UDP_HDR_LEN 8

static uint16_t udp_csum(const uint8_t *ip, const uint8_t *udp, size_t udp_len) {
	uint8_t pseudo[12];
	uint32_t sum;
	uint16_t c;

	memcpy(pseudo, ip + 12, 8); /* src, dst */
	pseudo[8] = 0;
	pseudo[9] = 17;
	put_be16(pseudo + 10, (uint16_t) udp_len);
	sum = dhcp_csum_add(0, pseudo, sizeof(pseudo));
	sum = dhcp_csum_add(sum, udp, udp_len);
	c = (uint16_t) ~dhcp_csum_fold(sum);
	return c;
}

int dhcp_frame_build(uint8_t *buf, size_t size, struct in_addr src, struct in_addr dst, const uint8_t *payload,
		     size_t len) {
	size_t total = IP_HDR_LEN + UDP_HDR_LEN + len;
	uint8_t *ip = buf, *udp = buf + IP_HDR_LEN;
	uint16_t c;

	if (total > size || total > 0xffff)
		return -EMSGSIZE;
	memset(buf, 0, IP_HDR_LEN + UDP_HDR_LEN);
	ip[0] = 0x45;
	ip[1] = 0x10; /* TOS low delay, as ISC dhclient */
	put_be16(ip + 2, (uint16_t) total);
	ip[8] = 64; /* TTL */
	ip[9] = 17; /* UDP */
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	put_be16(ip + 10, (uint16_t) ~dhcp_csum_fold(dhcp_csum_add(0, ip, IP_HDR_LEN)));

	put_be16(udp + 0, DHCP_CLIENT_PORT);
	put_be16(udp + 2, DHCP_SERVER_PORT);
	put_be16(udp + 4, (uint16_t) (UDP_HDR_LEN + len));
	memmove(udp + UDP_HDR_LEN, payload, len);
	c = udp_csum(ip, udp, UDP_HDR_LEN + len);
	put_be16(udp + 6, c ? c : 0xffff); /* 0 means "no checksum" in UDP */
	return (int) total;
}

int dhcp_frame_parse(const uint8_t *buf, size_t len, bool check_udp_csum, const uint8_t **ret_payload, size_t *ret_len,
		     struct in_addr *ret_src) {
	size_t ihl, tot, ulen;
	const uint8_t *udp;

	if (len < IP_HDR_LEN || (buf[0] >> 4) != 4)
		return -EBADMSG;
	ihl = (size_t) (buf[0] & 0xf) * 4;
	if (ihl < IP_HDR_LEN || ihl > len)
		return -EBADMSG;
	tot = get_be16(buf + 2);
	if (tot < ihl + UDP_HDR_LEN || tot > len)
		return -EBADMSG;
	if (dhcp_csum_fold(dhcp_csum_add(0, buf, ihl)) != 0xffff)
		return -EBADMSG;
	if ((get_be16(buf + 6) & 0x3fff) != 0) /* MF or a fragment offset */
		return -EBADMSG;
	if (buf[9] != 17)
		return -EBADMSG;
	udp = buf + ihl;
	if (get_be16(udp + 2) != DHCP_CLIENT_PORT)
		return -EBADMSG;
	ulen = get_be16(udp + 4);
	if (ulen < UDP_HDR_LEN || ulen > tot - ihl)
		return -EBADMSG;
	if (check_udp_csum && get_be16(udp + 6) != 0) {
		uint8_t pseudo[12];
		uint32_t sum;

		memcpy(pseudo, buf + 12, 8);
		pseudo[8] = 0;
		pseudo[9] = 17;
		put_be16(pseudo + 10, (uint16_t) ulen);
		sum = dhcp_csum_add(dhcp_csum_add(0, pseudo, sizeof(pseudo)), udp, ulen);
		if (dhcp_csum_fold(sum) != 0xffff)
			return -EBADMSG;
	}
	*ret_payload = udp + UDP_HDR_LEN;
	*ret_len = ulen - UDP_HDR_LEN;
	memcpy(ret_src, buf + 12, 4);
	return 0;
}
