/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/string-util.h"

bool endswith(const char *s, const char *suffix) {
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

char *strdup_printf(const char *fmt, ...) {
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

char **strv_free(char **l) {
	if (!l)
		return NULL;
	for (char **i = l; *i; i++)
		free(*i);
	free(l);
	return NULL;
}

size_t strv_length(char *const *l) {
	size_t n = 0;
	if (l)
		while (l[n])
			n++;
	return n;
}

bool strv_contains(char *const *l, const char *s) {
	if (l)
		for (char *const *i = l; *i; i++)
			if (streq(*i, s))
				return true;
	return false;
}

int strv_consume(char ***l, char *s) {
	size_t n = strv_length(*l);
	char **c;

	if (!s)
		return -ENOMEM;
	c = reallocarray(*l, n + 2, sizeof(char *));
	if (!c) {
		free(s);
		return -ENOMEM;
	}
	c[n] = s;
	c[n + 1] = NULL;
	*l = c;
	return 0;
}

int strv_extend(char ***l, const char *s) {
	return strv_consume(l, strdup(s));
}

int strv_split(const char *s, const char *sep, char ***ret) {
	_cleanup_strv_free_ char **l = NULL;
	const char *p = s;
	int r;

	/* An empty input still yields an (empty) vector, never NULL. */
	l = calloc(1, sizeof(char *));
	if (!l)
		return -ENOMEM;
	while (*p) {
		size_t n = strcspn(p, sep);
		if (n > 0) {
			r = strv_consume(&l, strndup(p, n));
			if (r < 0)
				return r;
		}
		p += n;
		if (*p)
			p++;
	}
	*ret = TAKE_PTR(l);
	return 0;
}

int safe_atou64(const char *s, unsigned long long *ret) {
	unsigned long long v;
	char *end;

	if (isempty(s) || !isdigit((unsigned char) s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int safe_atou32(const char *s, unsigned *ret) {
	unsigned long long v;
	int r = safe_atou64(s, &v);

	if (r < 0)
		return r;
	if (v > UINT_MAX)
		return -ERANGE;
	*ret = (unsigned) v;
	return 0;
}

int safe_atoi(const char *s, int *ret) {
	long v;
	char *end;

	if (isempty(s) || isspace((unsigned char) s[0]))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*ret = (int) v;
	return 0;
}

int ether_addr_parse(const char *s, unsigned char ret[6]) {
	unsigned char mac[6];

	for (int i = 0; i < 6; i++) {
		int hi, lo;

		if (!isxdigit((unsigned char) s[0]) || !isxdigit((unsigned char) s[1]))
			return -EINVAL;
		hi = isdigit((unsigned char) s[0]) ? s[0] - '0' : (tolower((unsigned char) s[0]) - 'a' + 10);
		lo = isdigit((unsigned char) s[1]) ? s[1] - '0' : (tolower((unsigned char) s[1]) - 'a' + 10);
		mac[i] = (unsigned char) (hi << 4 | lo);
		s += 2;
		if (i < 5) {
			if (*s != ':' && *s != '-')
				return -EINVAL;
			s++;
		}
	}
	if (*s)
		return -EINVAL;
	memcpy(ret, mac, 6);
	return 0;
}

char *ether_addr_format(const unsigned char mac[6], char buf[18]) {
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	return buf;
}
