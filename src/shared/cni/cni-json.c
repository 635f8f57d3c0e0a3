/* SPDX-License-Identifier: Apache-2.0 */
#include <strings.h>

#include "basic/string-util.h"
#include "shared/cni/cni-json.h"

json_t *cni_json_get(json_t *obj, const char *key) {
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		return NULL;
	v = json_object_get(obj, key);
	if (v)
		return v;
	json_object_foreach(obj, k, v)
		if (strcasecmp(k, key) == 0)
			return v;
	return NULL;
}

int cni_json_strv(json_t *arr, char ***ret) {
	_cleanup_strv_free_ char **l = NULL;
	size_t i;
	json_t *e;
	int r;

	if (!json_is_array(arr))
		return -EINVAL;
	l = calloc(1, sizeof(char *));
	if (!l)
		return -ENOMEM;
	json_array_foreach(arr, i, e) {
		if (!json_is_string(e))
			return -EINVAL;
		r = strv_extend(&l, json_string_value(e));
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(l);
	return 0;
}

json_t *cni_json_from_strv(char *const *l) {
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (size_t i = 0; l && l[i]; i++)
		if (json_array_append_new(a, json_string(l[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *cni_json_string_lossy(const char *s) {
	_cleanup_free_ char *c = NULL;
	json_t *j = json_string(s);

	if (j || !s)
		return j;
	c = strdup(s);
	if (!c)
		return NULL;
	/* Keep ASCII, replace everything else: simple, and the message stays readable. */
	for (char *p = c; *p; p++)
		if ((unsigned char) *p >= 0x80)
			*p = '?';
	return json_string(c);
}
