/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/pod/pod-conf.h"

int pod_conf_invalid(CniRequest *req, const char *key, json_t *v, const char *why) {
	_cleanup_free_ char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;

	return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"%s\": %s (%s)", key, s ?: "?", why);
}

static json_t *conf_get(CniRequest *req, const char *key) {
	json_t *v = cni_json_get(req->config, key);

	return v && !json_is_null(v) ? v : NULL;
}

int pod_conf_value_bool(CniRequest *req, const char *key, json_t *v, bool *ret) {
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return pod_conf_invalid(req, key, v, "must be a boolean");
	*ret = json_is_true(v);
	return 0;
}

int pod_conf_value_int(CniRequest *req, const char *key, json_t *v, json_int_t *ret, bool *ret_set) {
	if (v && json_is_null(v))
		v = NULL;
	if (ret_set)
		*ret_set = !!v;
	if (!v)
		return 0;
	if (!json_is_integer(v))
		return pod_conf_invalid(req, key, v, "must be an integer");
	*ret = json_integer_value(v);
	return 0;
}

int pod_conf_bool(CniRequest *req, const char *key, bool *ret) {
	return pod_conf_value_bool(req, key, conf_get(req, key), ret);
}

int pod_conf_int(CniRequest *req, const char *key, json_int_t *ret, bool *ret_set) {
	return pod_conf_value_int(req, key, conf_get(req, key), ret, ret_set);
}

int pod_conf_string(CniRequest *req, const char *key, const char **ret) {
	json_t *v = conf_get(req, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return pod_conf_invalid(req, key, v, "must be a string");
	*ret = json_string_value(v);
	return 0;
}

int pod_conf_value_mtu(CniRequest *req, json_t *v, unsigned *ret) {
	json_int_t n = 0;
	bool set;
	int r;

	r = pod_conf_value_int(req, "mtu", v, &n, &set);
	if (r < 0)
		return r;
	/* 0 means "kernel default", as in the reference; anything else must be a real MTU. */
	if (set && n != 0 && (n < 68 || n > 65535))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"mtu\": %lld (must be 68..65535)",
				(long long) n);
	*ret = set ? (unsigned) n : 0;
	return 0;
}

int pod_conf_mtu(CniRequest *req, unsigned *ret) {
	return pod_conf_value_mtu(req, conf_get(req, "mtu"), ret);
}

int pod_conf_ifname(CniRequest *req, const char *key, const char **ret) {
	const char *s, *why;
	int r;

	r = pod_conf_string(req, key, &s);
	if (r < 0)
		return r;
	if (!isempty(s) && (why = cni_ifname_invalid_reason(s)))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"%s\": \"%s\" %s", key, s, why);
	*ret = isempty(s) ? NULL : s;
	return 0;
}

bool pod_conf_has_ipam(const CniRequest *req) {
	return !isempty(json_string_value(json_object_get(req->ipam, "type")));
}
