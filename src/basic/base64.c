/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "basic/base64.h"

static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_encode(const void *data, size_t len, char **ret) {
	const uint8_t *p = data;
	char *out, *o;
	size_t i;

	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return -ENOMEM;
	o = out;
	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
		*o++ = table[v >> 18];
		*o++ = table[(v >> 12) & 63];
		*o++ = table[(v >> 6) & 63];
		*o++ = table[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t) p[i] << 16 | (i + 1 < len ? (uint32_t) p[i + 1] << 8 : 0);
		*o++ = table[v >> 18];
		*o++ = table[(v >> 12) & 63];
		*o++ = i + 1 < len ? table[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = 0;
	*ret = out;
	return 0;
}

static int decode_char(char c) {
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(const char *s, size_t len, void **ret, size_t *ret_size) {
	uint8_t *out;
	size_t n = 0;

	if (len % 4 != 0)
		return -EINVAL;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		int c[4];
		unsigned pad = 0;

		for (unsigned j = 0; j < 4; j++) {
			if (s[i + j] == '=' && i + 4 == len && j >= 2) {
				c[j] = 0;
				pad++;
				continue;
			}
			c[j] = decode_char(s[i + j]);
			if (c[j] < 0 || pad > 0)
				goto bad;
		}
		uint32_t v = (uint32_t) c[0] << 18 | (uint32_t) c[1] << 12 | (uint32_t) c[2] << 6 | (uint32_t) c[3];
		out[n++] = (uint8_t) (v >> 16);
		if (pad < 2)
			out[n++] = (uint8_t) (v >> 8);
		if (pad < 1)
			out[n++] = (uint8_t) v;
	}
	out[n] = 0;
	*ret = out;
	if (ret_size)
		*ret_size = n;
	return 0;
bad:
	free(out);
	return -EINVAL;
}
