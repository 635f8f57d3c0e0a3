/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Reads a whole file (NUL-terminated, size without NUL in *ret_size if non-NULL). 0 or -errno. */
int read_full_file(const char *path, char **ret, size_t *ret_size);
/* Same at a directory fd. */
int read_full_file_at(int dirfd, const char *path, char **ret, size_t *ret_size);
/* Reads all of fd until EOF. */
int read_full_fd(int fd, char **ret, size_t *ret_size);
/* write(2) loop handling partial writes and EINTR. */
int loop_write(int fd, const void *buf, size_t len);

/*
 * Crash-safe replace: writes to a unique temp file in the same directory, fsync()s it, renames it
 * over `path` and (unless WRITE_ATOMIC_NO_DIRSYNC) fsync()s the directory. Readers see the old or the
 * new content, never a mix. Relative `path` is resolved against dirfd (AT_FDCWD for cwd).
 */
#define WRITE_ATOMIC_NO_DIRSYNC 0x1
/* Atomic (temp + rename) but not durable: no fsync at all. For hints and caches whose loss in a
 * crash is harmless, where two fsyncs would dominate the cost of the operation. */
#define WRITE_ATOMIC_NO_SYNC 0x2
int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t len, mode_t mode, int flags);
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* mkdir -p with mode; existing directories are fine. */
int mkdir_p(const char *path, mode_t mode);
