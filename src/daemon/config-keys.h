/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Reading weft's JSON configs (the network config and its sections): keys in Flannel's spelling
 * or lower camel case, unknown and doubly spelled keys refused, and typed getters whose errors
 * name the key path and the value ("Backend.MTU 70000: out of range (68..65535)").
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

typedef struct KeySpec {
	const char *name; /* canonical (Flannel) spelling */
	const char *alt;  /* lower camel case */
	json_t *value;    /* filled by cfg_collect_keys */
	const char *seen_as;
} KeySpec;

/* Replaces *ret_error (if ret_error) with the formatted message; returns -EINVAL. */
int cfg_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
/* "an object", "a string", ... for messages. */
const char *cfg_json_kind(const json_t *v);
/* Matches every member of obj to a KeySpec; rejects unknown and doubly spelled keys. `where`
 * prefixes the messages ("Backend"). 0 or -EINVAL. */
int cfg_collect_keys(json_t *obj, const char *where, KeySpec *specs, size_t n, char **ret_error);
int cfg_get_string(const KeySpec *k, const char *path, const char **ret, char **ret_error);
int cfg_get_bool(const KeySpec *k, const char *path, bool *ret, char **ret_error);
int cfg_get_int(const KeySpec *k, const char *path, long long min, long long max, long long *ret, char **ret_error);
