/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/string-util.h"
#include "daemon/config-keys.h"

int cfg_error(char **ret_error, const char *fmt, ...) {
	va_list ap;

	if (ret_error) {
		char *s = NULL;

		va_start(ap, fmt);
		if (vasprintf(&s, fmt, ap) < 0)
			s = NULL;
		va_end(ap);
		free(*ret_error);
		*ret_error = s;
	}
	return -EINVAL;
}

const char *cfg_json_kind(const json_t *v) {
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* Matches every member of obj to a KeySpec; rejects unknown and doubly spelled keys. */
int cfg_collect_keys(json_t *obj, const char *where, KeySpec *specs, size_t n, char **ret_error) {
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		KeySpec *k = NULL;

		for (size_t i = 0; i < n; i++)
			if (streq(key, specs[i].name) || streq(key, specs[i].alt)) {
				k = &specs[i];
				break;
			}
		if (!k)
			return cfg_error(ret_error, "%s%sunknown key \"%s\"", where, *where ? ": " : "", key);
		if (k->value)
			return cfg_error(ret_error, "%s%skey \"%s\" given twice (as \"%s\" and \"%s\")", where,
					 *where ? ": " : "", k->name, k->seen_as, key);
		k->value = v;
		k->seen_as = key;
	}
	return 0;
}

int cfg_get_string(const KeySpec *k, const char *path, const char **ret, char **ret_error) {
	if (!json_is_string(k->value))
		return cfg_error(ret_error, "%s: expected a string, got %s", path, cfg_json_kind(k->value));
	*ret = json_string_value(k->value);
	return 0;
}

int cfg_get_bool(const KeySpec *k, const char *path, bool *ret, char **ret_error) {
	if (!json_is_boolean(k->value))
		return cfg_error(ret_error, "%s: expected true or false, got %s", path, cfg_json_kind(k->value));
	*ret = json_is_true(k->value);
	return 0;
}

int cfg_get_int(const KeySpec *k, const char *path, long long min, long long max, long long *ret, char **ret_error) {
	long long v;

	if (!json_is_integer(k->value))
		return cfg_error(ret_error, "%s: expected an integer, got %s", path, cfg_json_kind(k->value));
	v = json_integer_value(k->value);
	if (v < min || v > max)
		return cfg_error(ret_error, "%s %lld: out of range (%lld..%lld)", path, v, min, max);
	*ret = v;
	return 0;
}
