/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "basic/macro.h"

static inline bool streq(const char *a, const char *b) {
	return strcmp(a, b) == 0;
}

/* NULL-safe equality. */
static inline bool streq_ptr(const char *a, const char *b) {
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static inline bool isempty(const char *s) {
	return !s || !*s;
}

/* Returns a pointer just past `prefix` if `s` starts with it, else NULL. */
static inline const char *startswith(const char *s, const char *prefix) {
	size_t l = strlen(prefix);
	return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

bool endswith(const char *s, const char *suffix);

/* malloc'ed printf; NULL on OOM. */
char *strdup_printf(const char *fmt, ...) _printf_(1, 2);

/* NULL-terminated string vectors. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);
/* Appends a copy of `s`; returns 0 or -ENOMEM. */
int strv_extend(char ***l, const char *s);
/* Appends `s` taking ownership (freed on failure); returns 0 or -ENOMEM. */
int strv_consume(char ***l, char *s);
/* Splits on any of `sep` characters, dropping empty fields. */
int strv_split(const char *s, const char *sep, char ***ret);

/* Strict decimal parsers: whole string must be a number in range. 0 or -EINVAL/-ERANGE. */
int safe_atou32(const char *s, unsigned *ret);
int safe_atoi(const char *s, int *ret);
int safe_atou64(const char *s, unsigned long long *ret);

/* Hex MAC "aa:bb:cc:dd:ee:ff" (case-insensitive) <-> bytes. */
int ether_addr_parse(const char *s, unsigned char ret[6]);
/* buf must hold 18 bytes; lower-case output, as the kernel and the reference plugins print it. */
char *ether_addr_format(const unsigned char mac[6], char buf[18]);
