/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"

int loop_write(int fd, const void *buf, size_t len) {
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

int read_full_fd(int fd, char **ret, size_t *ret_size) {
	_cleanup_free_ char *buf = NULL;
	size_t size = 0, alloc = 0;

	for (;;) {
		ssize_t n;

		if (alloc - size < 4096) {
			size_t na = alloc ? alloc * 2 : 4096;
			char *nb;

			if (na > (64u << 20))
				return -EFBIG;
			nb = realloc(buf, na + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			alloc = na;
		}
		n = read(fd, buf + size, alloc - size);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		size += (size_t) n;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[size] = 0;
	*ret = TAKE_PTR(buf);
	if (ret_size)
		*ret_size = size;
	return 0;
}

int read_full_file_at(int dirfd, const char *path, char **ret, size_t *ret_size) {
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return negative_errno();
	return read_full_fd(fd, ret, ret_size);
}

int read_full_file(const char *path, char **ret, size_t *ret_size) {
	return read_full_file_at(AT_FDCWD, path, ret, ret_size);
}

int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode, int flags) {
	_cleanup_close_ int fd = -EBADF, dfd = -EBADF;
	char tmp[PATH_MAX], dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int r;

	if (snprintf(tmp, sizeof(tmp), "%.*s.#%s.%d.%lx", slash ? (int) (slash - path + 1) : 0, path,
		     slash ? slash + 1 : path, (int) getpid(), (unsigned long) random()) >= (int) sizeof(tmp))
		return -ENAMETOOLONG;

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return negative_errno();
	r = loop_write(fd, data, len);
	if (r >= 0 && fchmod(fd, mode) < 0)
		r = negative_errno();
	if (r >= 0 && !(flags & WRITE_ATOMIC_NO_SYNC) && fsync(fd) < 0)
		r = negative_errno();
	if (r >= 0 && renameat(dirfd, tmp, dirfd, path) < 0)
		r = negative_errno();
	if (r < 0) {
		(void) unlinkat(dirfd, tmp, 0);
		return r;
	}
	if (flags & (WRITE_ATOMIC_NO_DIRSYNC | WRITE_ATOMIC_NO_SYNC))
		return 0;

	/* Persist the rename itself. */
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path), path);
		dfd = openat(dirfd, dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else
		dfd = dirfd == AT_FDCWD ? open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
					: fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (dfd >= 0)
		(void) fsync(dfd);
	return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode) {
	return write_file_atomic_at(AT_FDCWD, path, data, len, mode, 0);
}

int mkdir_p(const char *path, mode_t mode) {
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return negative_errno();
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return negative_errno();
	return 0;
}
