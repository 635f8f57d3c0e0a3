/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The userspace driver: wireguard-go over the cross-platform UAPI socket, and starting
 * wireguard-go itself when a device is wanted and there is none (weftd execs only wireguard-go:
 * it is the WireGuard implementation, not a configuration tool).
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <net/if.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/wireguard/wg-uapi.h"
#include "shared/nl/nl-internal.h"

extern char **environ;

/* wireguard-go answers at once; a peer that is stuck must not stall weftd for long. */
#define WG_UAPI_TIMEOUT_MS 5000
/* How long wireguard-go's socket may take to appear, and to go away after the link does. */
#define WG_UAPI_START_MS 5000
#define WG_UAPI_STOP_MS 2000

static char *socket_dir_override;
static char *program_override;

int wg_uapi_set_socket_dir(const char *dir) {
	char *d = NULL;

	if (dir && (dir[0] != '/' || strlen(dir) > 64))
		return -EINVAL;
	if (dir && !(d = strdup(dir)))
		return -ENOMEM;
	free(socket_dir_override);
	socket_dir_override = d;
	return 0;
}

const char *wg_uapi_socket_dir(void) {
	const char *e;

	if (socket_dir_override)
		return socket_dir_override;
	e = getenv("WEFT_WG_SOCKET_DIR");
	return e && e[0] == '/' ? e : WG_UAPI_SOCKET_DIR;
}

int wg_uapi_set_program(const char *path) {
	char *p = NULL;

	if (path && !(p = strdup(path)))
		return -ENOMEM;
	free(program_override);
	program_override = p;
	return 0;
}

static const char *program(void) {
	const char *e;

	if (program_override)
		return program_override;
	e = getenv("WEFT_WIREGUARD_GO");
	return e && e[0] ? e : "wireguard-go";
}

bool wg_uapi_program_available(void) {
	const char *prog = program(), *path;
	_cleanup_free_ char *copy = NULL;
	char *save = NULL;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
	path = getenv("PATH");
	copy = strdup(path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	if (!copy)
		return false;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char full[PATH_MAX];
		struct stat st;

		if (snprintf(full, sizeof(full), "%s/%s", dir, prog) >= (int) sizeof(full))
			continue;
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			return true;
	}
	return false;
}

/* ---- the set request ---- */

typedef struct Out {
	char *buf;
	size_t size, len;
	bool overflow;
} Out;

static void out_printf(Out *o, const char *fmt, ...) _printf_(2, 3);
static void out_printf(Out *o, const char *fmt, ...) {
	va_list ap;
	int n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t) n >= o->size - o->len) {
		o->overflow = true;
		return;
	}
	o->len += (size_t) n;
}

static void out_key(Out *o, const char *name, const WgKey *k) {
	char hex[WG_KEY_HEX_LEN + 1];

	wg_key_to_hex(k, hex);
	out_printf(o, "%s=%s\n", name, hex);
	explicit_bzero(hex, sizeof(hex));
}

int wg_uapi_format_set(const WgDevice *dev, unsigned flags, char **ret, size_t *ret_len) {
	static const WgKey zero;
	bool remove = flags & WG_SET_REMOVE_PEERS;
	size_t size = 256;
	Out o = {};

	/* One allocation of the exact bound (no realloc leaving key copies in freed blocks): a peer's
	 * head is < 400 bytes, an allowed IP line < 64. */
	if (wg_device_validate(dev) < 0)
		return -EINVAL;
	for (size_t i = 0; i < dev->n_peers; i++)
		size += 400 + 64 * dev->peers[i].n_allowed_ips;
	o.buf = malloc(size);
	if (!o.buf)
		return -ENOMEM;
	o.size = size;

	out_printf(&o, "set=1\n");
	if (flags & WG_SET_DEVICE_ATTRS) {
		if (dev->has_private_key)
			out_key(&o, "private_key", &dev->private_key);
		out_printf(&o, "listen_port=%u\nfwmark=%u\n", dev->listen_port, dev->fwmark);
	}
	if (flags & WG_SET_REPLACE_PEERS)
		out_printf(&o, "replace_peers=true\n");
	for (size_t i = 0; i < dev->n_peers; i++) {
		const WgPeer *p = &dev->peers[i];
		char a[IP_ADDR_STRLEN], pf[IP_PREFIX_STRLEN];

		out_key(&o, "public_key", &p->public_key);
		if (remove) {
			out_printf(&o, "remove=true\n");
			continue;
		}
		out_key(&o, "preshared_key", p->has_preshared_key ? &p->preshared_key : &zero);
		if (p->endpoint.addr.family == AF_INET)
			out_printf(&o, "endpoint=%s:%u\n", ip_addr_to_string(&p->endpoint.addr, a), p->endpoint.port);
		else if (p->endpoint.addr.family == AF_INET6)
			out_printf(&o, "endpoint=[%s]:%u\n", ip_addr_to_string(&p->endpoint.addr, a), p->endpoint.port);
		out_printf(&o, "persistent_keepalive_interval=%u\nreplace_allowed_ips=true\n", p->persistent_keepalive);
		for (size_t j = 0; j < p->n_allowed_ips; j++) {
			IpPrefix net = ip_prefix_mask(&p->allowed_ips[j]);
			out_printf(&o, "allowed_ip=%s\n", ip_prefix_to_string(&net, pf));
		}
	}
	out_printf(&o, "\n");
	if (o.overflow) {
		/* cannot happen with the bound above; fail safe rather than send half a request */
		explicit_bzero(o.buf, o.size);
		free(o.buf);
		return -ENOBUFS;
	}
	*ret = o.buf;
	*ret_len = o.len;
	return 0;
}

/* ---- the reply parser ---- */

static int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret) {
	uint64_t v = 0;

	if (len == 0 || len > 20)
		return -EBADMSG;
	for (size_t i = 0; i < len; i++) {
		unsigned d;
		if (s[i] < '0' || s[i] > '9')
			return -EBADMSG;
		d = (unsigned) (s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		v = v * 10 + d;
	}
	if (v > max)
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* "a.b.c.d:port" or "[v6]:port"; a zone ("%eth0") is refused: we configure no link-local peer. */
static int parse_endpoint(const char *s, size_t len, WgEndpoint *ret) {
	char host[IP_ADDR_STRLEN];
	const char *colon, *h;
	size_t hlen;
	uint64_t port;
	IpAddr a;

	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close || (size_t) (close - s) + 1 >= len || close[1] != ':')
			return -EBADMSG;
		h = s + 1;
		hlen = (size_t) (close - h);
		colon = close + 1;
	} else {
		colon = memrchr(s, ':', len);
		if (!colon)
			return -EBADMSG;
		h = s;
		hlen = (size_t) (colon - s);
		if (memchr(h, ':', hlen))
			return -EBADMSG; /* an IPv6 address must be bracketed */
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -EBADMSG;
	memcpy(host, h, hlen);
	host[hlen] = 0;
	if (ip_addr_parse(host, &a) < 0 || (s[0] == '[') != (a.family == AF_INET6))
		return -EBADMSG;
	if (parse_u64(colon + 1, len - (size_t) (colon + 1 - s), UINT16_MAX, &port) < 0)
		return -EBADMSG;
	*ret = (WgEndpoint) { .addr = a, .port = (uint16_t) port };
	return 0;
}

static int parse_prefix(const char *s, size_t len, IpPrefix *ret) {
	char buf[IP_PREFIX_STRLEN];

	if (len == 0 || len >= sizeof(buf))
		return -EBADMSG;
	memcpy(buf, s, len);
	buf[len] = 0;
	return ip_prefix_parse_network(buf, ret) < 0 ? -EBADMSG : 0;
}

/* Bits of the keys seen in the current section (no key twice). */
enum {
	SEEN_PRIVATE_KEY = 1 << 0,
	SEEN_LISTEN_PORT = 1 << 1,
	SEEN_FWMARK = 1 << 2,
	SEEN_PSK = 1 << 3,
	SEEN_ENDPOINT = 1 << 4,
	SEEN_HS_SEC = 1 << 5,
	SEEN_HS_NSEC = 1 << 6,
	SEEN_TX = 1 << 7,
	SEEN_RX = 1 << 8,
	SEEN_KEEPALIVE = 1 << 9,
	SEEN_PROTOCOL = 1 << 10,
};

static bool key_chars_ok(const char *k, size_t len) {
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || k[i] == '_'))
			return false;
	return true;
}

static bool key_is(const char *k, size_t klen, const char *name) {
	return strlen(name) == klen && memcmp(k, name, klen) == 0;
}

/* Applies one key=value line to d (peer: the current peer or NULL). */
static int parse_line(WgDevice *d, WgPeer **peer, unsigned *seen, const char *k, size_t klen, const char *v,
		      size_t vlen) {
	WgPeer *p = *peer;
	uint64_t n;
	int r;

#define ONCE(bit)                                                                                                      \
	do {                                                                                                           \
		if (*seen & (bit))                                                                                     \
			return -EBADMSG;                                                                               \
		*seen |= (bit);                                                                                        \
	} while (0)
#define NEED_DEVICE()                                                                                                  \
	do {                                                                                                           \
		if (p)                                                                                                 \
			return -EBADMSG;                                                                               \
	} while (0)
#define NEED_PEER()                                                                                                    \
	do {                                                                                                           \
		if (!p)                                                                                                \
			return -EBADMSG;                                                                               \
	} while (0)

	if (key_is(k, klen, "public_key")) {
		WgKey key;
		if (wg_key_from_hex(v, vlen, &key) < 0 || wg_key_is_zero(&key))
			return -EBADMSG;
		r = wg_device_append_peer(d, &key, peer); /* duplicates: checked once at the end */
		if (r < 0)
			return r == -E2BIG ? -EBADMSG : r;
		*seen = 0;
		return 0;
	}
	if (key_is(k, klen, "private_key")) {
		NEED_DEVICE();
		ONCE(SEEN_PRIVATE_KEY);
		if (wg_key_from_hex(v, vlen, &d->private_key) < 0)
			return -EBADMSG;
		d->has_private_key = !wg_key_is_zero(&d->private_key);
	} else if (key_is(k, klen, "listen_port")) {
		NEED_DEVICE();
		ONCE(SEEN_LISTEN_PORT);
		if (parse_u64(v, vlen, UINT16_MAX, &n) < 0)
			return -EBADMSG;
		d->listen_port = (uint16_t) n;
	} else if (key_is(k, klen, "fwmark")) {
		NEED_DEVICE();
		ONCE(SEEN_FWMARK);
		if (parse_u64(v, vlen, UINT32_MAX, &n) < 0)
			return -EBADMSG;
		d->fwmark = (uint32_t) n;
	} else if (key_is(k, klen, "preshared_key")) {
		NEED_PEER();
		ONCE(SEEN_PSK);
		if (wg_key_from_hex(v, vlen, &p->preshared_key) < 0)
			return -EBADMSG;
		p->has_preshared_key = !wg_key_is_zero(&p->preshared_key);
	} else if (key_is(k, klen, "endpoint")) {
		NEED_PEER();
		ONCE(SEEN_ENDPOINT);
		return parse_endpoint(v, vlen, &p->endpoint);
	} else if (key_is(k, klen, "last_handshake_time_sec")) {
		NEED_PEER();
		ONCE(SEEN_HS_SEC);
		if (parse_u64(v, vlen, INT64_MAX, &n) < 0)
			return -EBADMSG;
		p->last_handshake.tv_sec = (time_t) n;
	} else if (key_is(k, klen, "last_handshake_time_nsec")) {
		NEED_PEER();
		ONCE(SEEN_HS_NSEC);
		if (parse_u64(v, vlen, 999999999, &n) < 0)
			return -EBADMSG;
		p->last_handshake.tv_nsec = (long) n;
	} else if (key_is(k, klen, "tx_bytes")) {
		NEED_PEER();
		ONCE(SEEN_TX);
		return parse_u64(v, vlen, UINT64_MAX, &p->tx_bytes);
	} else if (key_is(k, klen, "rx_bytes")) {
		NEED_PEER();
		ONCE(SEEN_RX);
		return parse_u64(v, vlen, UINT64_MAX, &p->rx_bytes);
	} else if (key_is(k, klen, "persistent_keepalive_interval")) {
		NEED_PEER();
		ONCE(SEEN_KEEPALIVE);
		if (parse_u64(v, vlen, UINT16_MAX, &n) < 0)
			return -EBADMSG;
		p->persistent_keepalive = (uint16_t) n;
	} else if (key_is(k, klen, "protocol_version")) {
		NEED_PEER();
		ONCE(SEEN_PROTOCOL);
		if (parse_u64(v, vlen, 1, &n) < 0 || n != 1)
			return -EBADMSG;
	} else if (key_is(k, klen, "allowed_ip")) {
		IpPrefix pfx;
		NEED_PEER();
		if (parse_prefix(v, vlen, &pfx) < 0)
			return -EBADMSG;
		r = wg_peer_add_allowed_ip(p, &pfx);
		if (r < 0)
			return r == -E2BIG ? -EBADMSG : r;
	} else if (!key_chars_ok(k, klen))
		return -EBADMSG;
	/* else: a key a newer wireguard-go added; skipped */
	return 0;
#undef ONCE
#undef NEED_DEVICE
#undef NEED_PEER
}

/* Walks the reply's lines up to "errno=N" + blank line + end. line_cb NULL: only errno allowed. */
static int parse_reply(const char *text, size_t len, WgDevice *d) {
	WgPeer *peer = NULL;
	unsigned seen = 0;
	size_t pos = 0;
	int r;

	if (len > WG_UAPI_REPLY_MAX || memchr(text, 0, len))
		return -EBADMSG;
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos), *eq;
		size_t llen;

		if (!nl)
			return -EBADMSG; /* truncated */
		llen = (size_t) (nl - line);
		if (llen == 0 || llen > WG_UAPI_LINE_MAX)
			return -EBADMSG; /* a blank line before errno=, or an endless line */
		eq = memchr(line, '=', llen);
		if (!eq)
			return -EBADMSG;
		pos += llen + 1;
		if (key_is(line, (size_t) (eq - line), "errno")) {
			uint64_t e;
			/* The end: exactly one blank line must follow, then nothing. */
			if (pos + 1 != len || text[pos] != '\n')
				return -EBADMSG;
			if (parse_u64(eq + 1, llen - (size_t) (eq - line) - 1, 4095, &e) < 0)
				return -EBADMSG;
			return e == 0 ? 0 : -(int) e;
		}
		if (!d)
			return -EBADMSG;
		r = parse_line(d, &peer, &seen, line, (size_t) (eq - line), eq + 1, llen - (size_t) (eq - line) - 1);
		if (r < 0)
			return r;
	}
	return -EBADMSG; /* no errno= line */
}

int wg_uapi_parse_get(const char *text, size_t len, const char *ifname, WgDevice **ret) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	int r;

	r = wg_device_new(ifname, &d);
	if (r < 0)
		return r;
	r = parse_reply(text, len, d);
	if (r < 0)
		return r;
	r = wg_device_check_unique_peers(d);
	if (r < 0)
		return r == -EEXIST ? -EBADMSG : r;
	*ret = TAKE_PTR(d);
	return 0;
}

int wg_uapi_parse_errno(const char *text, size_t len) {
	return parse_reply(text, len, NULL);
}

/* ---- transport ---- */

static int socket_path(const char *ifname, struct sockaddr_un *ret) {
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (!ifname || !nl_ifname_valid(ifname))
		return -EINVAL;
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", wg_uapi_socket_dir(), ifname) >=
	    (int) sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	*ret = sa;
	return 0;
}

/* Connects to the device's socket: the fd, -ENODEV when nobody listens there. */
static int uapi_connect(const char *ifname) {
	_cleanup_close_ int fd = -EBADF;
	struct timeval tv = { .tv_sec = WG_UAPI_TIMEOUT_MS / 1000 };
	struct sockaddr_un sa;
	int r;

	r = socket_path(ifname, &sa);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	(void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		r = negative_errno();
		return r == -ENOENT || r == -ECONNREFUSED ? -ENODEV : r;
	}
	return TAKE_FD(fd);
}

static int send_all(int fd, const char *p, size_t len) {
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : negative_errno();
		}
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

/* A reply buffer: a get reply holds the private key, so no copy of it is left in freed memory. */
typedef struct Reply {
	char *buf;
	size_t size, len;
} Reply;

static void reply_wipe(Reply *r) {
	if (r->buf)
		explicit_bzero(r->buf, r->size + 1);
	r->buf = mfree(r->buf);
}

static int reply_grow(Reply *r) {
	size_t size;
	char *b;

	if (r->size >= WG_UAPI_REPLY_MAX)
		return -EFBIG;
	size = MIN(MAX(r->size * 2, (size_t) 8192), (size_t) WG_UAPI_REPLY_MAX);
	b = malloc(size + 1);
	if (!b)
		return -ENOMEM;
	if (r->len > 0)
		memcpy(b, r->buf, r->len);
	reply_wipe(r);
	r->buf = b;
	r->size = size;
	return 0;
}

/* Sends a request and reads the reply up to its terminating blank line into *ret (the caller wipes
 * it with reply_wipe()). */
static int uapi_transact(const char *ifname, const char *req, size_t req_len, Reply *ret) {
	_cleanup_close_ int fd = -EBADF;
	_cleanup_(reply_wipe) Reply rp = {};
	size_t start;
	int r;

	fd = uapi_connect(ifname);
	if (fd < 0)
		return fd;
	r = send_all(fd, req, req_len);
	if (r < 0)
		return r;
	for (;;) {
		ssize_t n;

		if (rp.len + 4096 > rp.size) {
			r = reply_grow(&rp);
			if (r < 0)
				return r;
		}
		n = recv(fd, rp.buf + rp.len, rp.size - rp.len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : negative_errno();
		}
		if (n == 0)
			break;
		rp.len += (size_t) n;
		/* Only the terminator has two newlines in a row (no line is empty). */
		start = rp.len - (size_t) n > 0 ? rp.len - (size_t) n - 1 : 0;
		if (memmem(rp.buf + start, rp.len - start, "\n\n", 2))
			break;
	}
	if (!rp.buf)
		return -EBADMSG;
	rp.buf[rp.len] = 0;
	*ret = rp;
	rp = (Reply) {};
	return 0;
}

/* A request that expects only "errno=N". The request is wiped (it may hold the private key). */
static int uapi_set_request(const char *ifname, char *req, size_t req_len) {
	_cleanup_(reply_wipe) Reply reply = {};
	int r;

	r = uapi_transact(ifname, req, req_len, &reply);
	explicit_bzero(req, req_len);
	free(req);
	if (r < 0)
		return r;
	return wg_uapi_parse_errno(reply.buf, reply.len);
}

static int uapi_set_flags(const WgDevice *dev, unsigned flags) {
	char *req;
	size_t len;
	int r;

	r = wg_uapi_format_set(dev, flags, &req, &len);
	if (r < 0)
		return r;
	return uapi_set_request(dev->name, req, len);
}

static int uapi_set(const WgDevice *dev) {
	return uapi_set_flags(dev, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS);
}

static int uapi_update_peer(const char *ifname, const WgPeer *peer) {
	return wg_driver_update_peer(uapi_set_flags, ifname, peer);
}

static int uapi_remove_peer(const char *ifname, const WgKey *public_key) {
	return wg_driver_remove_peer(uapi_set_flags, ifname, public_key);
}

static int uapi_get(const char *ifname, WgDevice **ret) {
	static const char req[] = "get=1\n\n";
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	_cleanup_(reply_wipe) Reply reply = {};
	int r;

	r = uapi_transact(ifname, req, sizeof(req) - 1, &reply);
	if (r < 0)
		return r;
	r = wg_uapi_parse_get(reply.buf, reply.len, ifname, &d);
	if (r < 0)
		return r;
	/* The UAPI has no public key line: derive it, as wg(8) does. */
	if (d->has_private_key && wg_key_public_from_private(&d->private_key, &d->public_key) >= 0)
		d->has_public_key = true;
	d->ifindex = (int) if_nametoindex(ifname);
	*ret = TAKE_PTR(d);
	return 0;
}

static bool socket_alive(const char *ifname) {
	int fd = uapi_connect(ifname);

	if (fd < 0)
		return false;
	safe_close(fd);
	return true;
}

static void sleep_ms(unsigned ms) {
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The environment for wireguard-go, without the variables of its own daemonizing hand-off
 * (WG_TUN_FD, WG_UAPI_FD, WG_PROCESS_FOREGROUND): inherited from whoever started weftd they would
 * make it adopt fds that are not its own. */
static char **child_env(void) {
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 1, sizeof(char *));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!startswith(environ[i], "WG_TUN_FD=") && !startswith(environ[i], "WG_UAPI_FD=") &&
		    !startswith(environ[i], "WG_PROCESS_FOREGROUND="))
			env[k++] = environ[i];
	return env;
}

/* wireguard-go IFNAME: creates the TUN device and the UAPI socket, then daemonizes (the first process
 * exits 0 once both exist). */
static int uapi_start(const char *ifname) {
	_cleanup_free_ char **env = NULL;
	char *argv[] = { (char *) program(), (char *) ifname, NULL };
	pid_t pid;
	int status, r;

	env = child_env();
	if (!env)
		return -ENOMEM;
	r = posix_spawnp(&pid, program(), NULL, NULL, argv, env);
	if (r != 0)
		return -r;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return negative_errno();
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	for (unsigned waited = 0; waited < WG_UAPI_START_MS; waited += 50) {
		if (socket_alive(ifname))
			return 0;
		sleep_ms(50);
	}
	return -ETIMEDOUT;
}

static int uapi_ensure(const char *ifname) {
	int r;

	if (!ifname || !nl_ifname_valid(ifname))
		return -EINVAL;
	if (socket_alive(ifname))
		return 0;
	/* A link of that name without a socket is someone else's (or a kernel WireGuard device). */
	if (if_nametoindex(ifname) > 0)
		return -EEXIST;
	r = uapi_start(ifname);
	return r < 0 ? r : 1;
}

/* wireguard-go stops when its TUN device goes away, and when its socket is deleted (it watches it
 * with inotify). The link is deleted first so the device is gone when we return. */
static int uapi_destroy(const char *ifname) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	struct sockaddr_un sa;
	NlLink l;
	int r;

	r = socket_path(ifname, &sa);
	if (r < 0)
		return r;
	if (!socket_alive(ifname)) {
		(void) unlink(sa.sun_path); /* stale */
		return 0;
	}
	r = nl_sock_open(&s);
	if (r < 0)
		return r;
	r = nl_link_get(s, ifname, 0, &l);
	if (r >= 0 && streq(l.kind, "tun"))
		r = nl_link_del(s, l.ifindex);
	if (r < 0 && r != -ENODEV)
		return r;
	for (unsigned waited = 0; waited < WG_UAPI_STOP_MS && socket_alive(ifname); waited += 50)
		sleep_ms(50);
	if (unlink(sa.sun_path) < 0 && errno != ENOENT)
		return negative_errno();
	return 0;
}

const WgDriverOps wg_uapi_driver = {
	.name = "wireguard-go",
	.ensure = uapi_ensure,
	.set = uapi_set,
	.update_peer = uapi_update_peer,
	.remove_peer = uapi_remove_peer,
	.get = uapi_get,
	.destroy = uapi_destroy,
};
