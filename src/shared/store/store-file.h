/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Crash-safe file primitives for on-disk stores whose entries are one small file each.
 */

#include <stddef.h>
#include <sys/types.h>

/*
 * Creates `name` in dir_fd with exactly `data` as content, failing with -EEXIST if it already
 * exists. Content is written to `tmp_name` (truncated if a stale one exists), fsync()ed, then
 * link()ed to `name` — link is atomic and refuses to replace, so a reader sees either no file
 * or the complete content, and two creators cannot both win. The temp file is then unlinked and
 * the directory fsync()ed. The caller must make `tmp_name` unique among concurrent writers (the
 * stores using this hold a lock). Returns 0, -EEXIST, or negative errno.
 */
int store_file_create_exclusive_at(int dir_fd, const char *name, const char *tmp_name, const void *data, size_t len,
				   mode_t mode);

/* fsync() the directory dir_fd refers to. 0 or negative errno. */
int store_fsync_dir(int dir_fd);

/*
 * Reads the store entry `name` in dir_fd, but only if it is a regular file. Whoever can write the
 * store directory can plant anything there, and the reader holds the store's lock: a FIFO would
 * block it (and every ADD and DEL after it) for ever, a symlink to /dev/zero would feed it
 * without end, a device node could have side effects on open. So the entry is lstat()ed first
 * (nothing but a regular file is opened), opened with O_NOFOLLOW|O_NONBLOCK (a swap between the
 * two cannot block or follow), and fstat()ed again. Returns 0 with the NUL-terminated content in
 * *ret (malloc'ed; the size in *ret_size if non-NULL), -ENOENT, -ELOOP for a symlink,
 * -EMEDIUMTYPE for anything else that is not a regular file, -EFBIG when larger than `max`
 * bytes, or negative errno.
 */
int store_file_read_at(int dir_fd, const char *name, size_t max, char **ret, size_t *ret_size);
