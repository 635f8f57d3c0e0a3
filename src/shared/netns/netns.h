/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Network namespaces by path (CNI_NETNS), and per-namespace sysctls through /proc/sys.
 */

#include <stdbool.h>

/* Opens a namespace file (O_RDONLY|O_CLOEXEC) and verifies it is a network namespace
 * (NS_GET_NSTYPE / statfs nsfs). Returns fd, -ENOENT if missing, -EINVAL if not a netns. */
int netns_open(const char *path);
/* Opens this thread's current netns. */
int netns_open_current(void);
/* Switches the calling thread into `fd`; *ret_saved gets an fd to the previous one. */
int netns_enter(int fd, int *ret_saved);
/* Switches back to `saved` and closes it. Aborts if switching back fails (we would otherwise
 * keep running in the pod's namespace). */
void netns_leave(int saved);
/* True if the two fds refer to the same namespace. */
bool netns_same(int a, int b);

/* Writes a value to /proc/sys/<key> in the current namespace (key uses '/' or '.'); 0 or -errno. */
int sysctl_write(const char *key, const char *value);
int sysctl_read(const char *key, char **ret);
/* Same, inside namespace fd (enters and leaves around the write). */
int sysctl_write_netns(int netns_fd, const char *key, const char *value);
