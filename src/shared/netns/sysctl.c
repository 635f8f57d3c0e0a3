/* SPDX-License-Identifier: Apache-2.0 */
/* sysctls through /proc/sys (net.* entries are per network namespace: the one of the thread that
 * opens the file). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/netns/netns.h"

/* "net.ipv4.ip_forward" → "/proc/sys/net/ipv4/ip_forward". A key that already contains '/' is
 * used as is, so interface names with dots can be written "net/ipv4/conf/eth0.100/forwarding". */
static int sysctl_path(const char *key, char **ret) {
	_cleanup_free_ char *p = NULL;

	if (isempty(key) || key[0] == '/' || key[0] == '.')
		return -EINVAL;
	p = strdup_printf("/proc/sys/%s", key);
	if (!p)
		return -ENOMEM;
	if (!strchr(key, '/'))
		for (char *c = p + strlen("/proc/sys/"); *c; c++)
			if (*c == '.')
				*c = '/';
	if (strstr(p, "/../") || endswith(p, "/..") || strstr(p, "/./") || strstr(p, "//"))
		return -EINVAL;
	*ret = TAKE_PTR(p);
	return 0;
}

int sysctl_write(const char *key, const char *value) {
	_cleanup_free_ char *p = NULL;
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (!value)
		return -EINVAL;
	r = sysctl_path(key, &p);
	if (r < 0)
		return r;
	fd = open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	/* One write(): proc handlers parse what they get in a single call. */
	ssize_t n = write(fd, value, strlen(value));
	if (n < 0)
		return negative_errno();
	if ((size_t) n != strlen(value))
		return -EIO;
	return 0;
}

int sysctl_read(const char *key, char **ret) {
	_cleanup_free_ char *p = NULL, *v = NULL;
	size_t l;
	int r;

	if (!ret)
		return -EINVAL;
	r = sysctl_path(key, &p);
	if (r < 0)
		return r;
	r = read_full_file(p, &v, &l);
	if (r < 0)
		return r;
	while (l > 0 && (v[l - 1] == '\n' || v[l - 1] == ' '))
		v[--l] = 0;
	*ret = TAKE_PTR(v);
	return 0;
}

int sysctl_write_netns(int netns_fd, const char *key, const char *value) {
	int saved, r;

	if (netns_fd < 0)
		return sysctl_write(key, value);
	r = netns_enter(netns_fd, &saved);
	if (r < 0)
		return r;
	r = sysctl_write(key, value);
	netns_leave(saved);
	return r;
}
