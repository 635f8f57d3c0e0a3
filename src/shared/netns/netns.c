/* SPDX-License-Identifier: Apache-2.0 */
/* Network namespaces by path; thread-local enter/leave. */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/nsfs.h>

#include "basic/macro.h"
#include "shared/netns/netns.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

int netns_open(const char *path) {
	_cleanup_close_ int fd = -EBADF;
	struct statfs sfs;
	int t;

	if (!path || !*path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	/* NS_GET_NSTYPE (4.11+) tells the namespace type; a regular file gives ENOTTY. */
	t = ioctl(fd, NS_GET_NSTYPE);
	if (t >= 0)
		return t == CLONE_NEWNET ? TAKE_FD(fd) : -EINVAL;
	if (errno != ENOTTY && errno != EINVAL)
		return negative_errno();
	/* Older kernels: at least require an nsfs file (type unknown, setns() will check). */
	if (fstatfs(fd, &sfs) < 0)
		return negative_errno();
	if ((unsigned long) sfs.f_type != NSFS_MAGIC)
		return -EINVAL;
	/* A nsfs file that refused NS_GET_NSTYPE: the ioctl exists on every nsfs kernel since
	 * 4.11, so this is not a network namespace we can check; refuse. */
	return -EINVAL;
}

int netns_open_current(void) {
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return negative_errno();
	return fd;
}

int netns_enter(int fd, int *ret_saved) {
	_cleanup_close_ int saved = -EBADF;

	if (fd < 0 || !ret_saved)
		return -EBADF;
	saved = netns_open_current();
	if (saved < 0)
		return saved;
	if (setns(fd, CLONE_NEWNET) < 0)
		return negative_errno();
	*ret_saved = TAKE_FD(saved);
	return 0;
}

void netns_leave(int saved) {
	if (saved < 0)
		return;
	/* Continuing in the wrong namespace would configure the wrong network: never do that. */
	if (setns(saved, CLONE_NEWNET) < 0)
		abort();
	safe_close(saved);
}

bool netns_same(int a, int b) {
	struct stat sa, sb;

	if (a < 0 || b < 0)
		return false;
	if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
