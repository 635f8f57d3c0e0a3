/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>

#include "basic/macro.h"
#include "shared/store/store-lock.h"

static int lock_open(int dir_fd, const char *name, bool wait, int *ret_fd) {
	_cleanup_close_ int fd = -EBADF;

	/* O_RDONLY like go-filemutex: flock does not need write access, and it lets an
	 * unprivileged reader share a root-owned store's lock. */
	/* O_NONBLOCK: a FIFO planted as the lock file must not hang us in open() (flock() itself
	 * ignores the flag; LOCK_NB is what makes it non-blocking). */
	fd = openat(dir_fd, name, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
	if (fd < 0)
		return negative_errno();
	while (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		if (errno != EINTR)
			return negative_errno();
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int store_lock_acquire(int dir_fd, const char *name, int *ret_fd) {
	return lock_open(dir_fd, name, true, ret_fd);
}

int store_lock_try_acquire(int dir_fd, const char *name, int *ret_fd) {
	return lock_open(dir_fd, name, false, ret_fd);
}
