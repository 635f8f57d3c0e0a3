/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Whole-store exclusion with flock(2) on a lock file. This is the same lock the reference
 * plugins take (go-filemutex: open(O_CREAT|O_RDONLY) + flock(LOCK_EX) on "<dir>/lock"), so a
 * weft process and a reference process working on the same store directory exclude each other.
 * The lock belongs to the open file description: closing the returned fd releases it, and so
 * does the process dying.
 */

#include <stdbool.h>

/*
 * Opens (creating, mode 0644) `name` relative to dir_fd and takes an exclusive flock on it,
 * waiting as long as needed (EINTR is retried). Returns 0 and the locked fd in *ret_fd (caller
 * closes it to unlock), or negative errno.
 */
int store_lock_acquire(int dir_fd, const char *name, int *ret_fd);

/* Same without waiting: -EWOULDBLOCK if another process holds it. */
int store_lock_try_acquire(int dir_fd, const char *name, int *ret_fd);
