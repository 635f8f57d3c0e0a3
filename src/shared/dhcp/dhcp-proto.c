/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin side of the dhcp daemon protocol (dhcp-proto.h) and the names both sides share. */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/dhcp/dhcp-proto.h"

char *dhcp_client_id(const char *container_id, const char *network, const char *ifname) {
	char *s = strdup_printf("%s/%s/%s", container_id ?: "", network ?: "", ifname ?: "");

	/* RFC 2132: an option is at most 255 bytes and the type byte takes one. */
	if (s && strlen(s) > 254)
		s[254] = '\0';
	return s;
}

int dhcp_option_from_name(const char *name) {
	static const struct {
		const char *name;
		int code;
	} table[] = {
		{ "dhcp-client-identifier", 61 },
		{ "subnet-mask", 1 },
		{ "routers", 3 },
		{ "host-name", 12 },
		{ "user-class", 77 },
		{ "vendor-class-identifier", 60 },
	};
	unsigned v;

	if (isempty(name))
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (streq(name, table[i].name))
			return table[i].code;
	if (safe_atou32(name, &v) < 0 || v > 255)
		return -EINVAL;
	return (int) v;
}

static uint64_t mono_usec(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int wait_fd(int fd, short events, uint64_t deadline) {
	struct pollfd p = { .fd = fd, .events = events };
	int timeout = -1, r;

	if (deadline) {
		uint64_t now = mono_usec();
		if (now >= deadline)
			return -ETIMEDOUT;
		timeout = (int) MIN((deadline - now + 999) / 1000, (uint64_t) INT32_MAX);
	}
	r = poll(&p, 1, timeout);
	if (r < 0)
		return errno == EINTR ? 0 : negative_errno();
	return r == 0 ? -ETIMEDOUT : 0;
}

int dhcp_proto_call(const char *path, json_t *req, uint64_t timeout_usec, json_t **ret) {
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *line = NULL, *buf = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t deadline = timeout_usec ? mono_usec() + timeout_usec : 0;
	size_t len, off = 0, used = 0;
	json_error_t jerr;
	json_t *j;
	int r;

	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return negative_errno();
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
		return negative_errno();

	line = json_dumps(req, JSON_COMPACT);
	if (!line)
		return -ENOMEM;
	len = strlen(line);
	line[len] = '\n'; /* replaces the NUL; json_dumps' buffer has room for it, we send len + 1 */
	while (off < len + 1) {
		ssize_t n = send(fd, line + off, len + 1 - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		off += (size_t) n;
	}
	(void) shutdown(fd, SHUT_WR);

	buf = malloc(DHCP_PROTO_LINE_MAX + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		r = wait_fd(fd, POLLIN, deadline);
		if (r < 0)
			return r;
		n = recv(fd, buf + used, DHCP_PROTO_LINE_MAX - used, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		used += (size_t) n;
		if (memchr(buf + used - n, '\n', (size_t) n) || used == DHCP_PROTO_LINE_MAX)
			break;
	}
	buf[used] = '\0';
	j = json_loads(buf, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!j)
		return -EPROTO;
	if (!json_is_object(j)) {
		json_decref(j);
		return -EPROTO;
	}
	*ret = j;
	return 0;
}
