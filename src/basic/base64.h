/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Standard base64 (RFC 4648 §4, '+' '/', '=' padding) — the encoding Go's encoding/json uses for
 * []byte, so files other Go tools write (libcni's result cache) round-trip.
 */

#include <stddef.h>

/* Encodes len bytes; *ret is a malloc'ed NUL-terminated string. 0 or -ENOMEM. */
int base64_encode(const void *data, size_t len, char **ret);
/* Decodes a padded string (no whitespace). *ret is malloc'ed and NUL-terminated (not counted in
 * *ret_size). 0, -EINVAL on bad input, -ENOMEM. */
int base64_decode(const char *s, size_t len, void **ret, size_t *ret_size);
