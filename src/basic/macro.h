/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Small macros used everywhere: cleanup attributes (systemd style), ownership transfer,
 * array size. Destructors used with _cleanup_ must accept NULL / -EBADF.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _noreturn_ __attribute__((noreturn))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Take ownership of a pointer / fd out of a cleanup variable. */
#define TAKE_PTR(p)                                                                                                    \
	({                                                                                                             \
		__typeof__(p) _tp_ = (p);                                                                              \
		(p) = NULL;                                                                                            \
		_tp_;                                                                                                  \
	})
#define TAKE_FD(fd)                                                                                                    \
	({                                                                                                             \
		int _tf_ = (fd);                                                                                       \
		(fd) = -EBADF;                                                                                         \
		_tf_;                                                                                                  \
	})

static inline void *mfree(void *p) {
	free(p);
	return NULL;
}

static inline void freep(void *p) {
	free(*(void **) p);
}

static inline int safe_close(int fd) {
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -EBADF;
}

static inline void closep(int *fd) {
	safe_close(*fd);
}
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Defines `name##p(type *p)` calling `func(*p)` when non-NULL, for use with _cleanup_(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                                        \
	static inline void func##p(type *p) {                                                                          \
		if (*p)                                                                                                \
			func(*p);                                                                                      \
	}

/* Negative errno from a libc call that returned -1 and set errno. */
static inline int negative_errno(void) {
	return errno > 0 ? -errno : -EIO;
}

/* Accumulate the first error of a best-effort sequence (DEL): `RET_GATHER(r, k)`. */
#define RET_GATHER(r, k)                                                                                               \
	({                                                                                                             \
		int _k_ = (k);                                                                                         \
		if (_k_ < 0 && (r) >= 0)                                                                               \
			(r) = _k_;                                                                                     \
		_k_;                                                                                                   \
	})

/* qsort() with a NULL base is undefined even for 0 elements (UBSan's nonnull check fires on an
 * empty array that was never allocated): sort only when there is something to sort. */
static inline void qsort_safe(void *base, size_t nmemb, size_t size, int (*cmp)(const void *, const void *)) {
	if (nmemb > 1)
		qsort(base, nmemb, size, cmp);
}

/* The same for bsearch(): an empty, never allocated array has nothing to find. */
static inline void *bsearch_safe(const void *key, const void *base, size_t nmemb, size_t size,
				 int (*cmp)(const void *, const void *)) {
	return nmemb > 0 ? bsearch(key, base, nmemb, size, cmp) : NULL;
}
