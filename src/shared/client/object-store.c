/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/client/object-store.h"

/* The prefix without its trailing slashes ("/weft/network/" and "/weft/network" are one store). */
static int prefix_len(const char *prefix) {
	size_t n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == '/')
		n--;
	return (int) MIN(n, (size_t) INT32_MAX);
}

char *object_key(const char *prefix, KubeKind kind, const char *ns, const char *name) {
	const KubeKindInfo *ki = kube_kind_info(kind);

	if (!ki)
		return NULL;
	if (ki->namespaced)
		return strdup_printf("%.*s/objects/%s/%s/%s", prefix_len(prefix), prefix, ki->resource, ns, name);
	return strdup_printf("%.*s/objects/%s/%s", prefix_len(prefix), prefix, ki->resource, name);
}

char *object_key_prefix(const char *prefix, KubeKind kind, const char *ns) {
	const KubeKindInfo *ki = kube_kind_info(kind);

	if (!ki)
		return NULL;
	if (ki->namespaced && ns)
		return strdup_printf("%.*s/objects/%s/%s/", prefix_len(prefix), prefix, ki->resource, ns);
	return strdup_printf("%.*s/objects/%s/", prefix_len(prefix), prefix, ki->resource);
}

static json_t *bytes(const char *s) {
	return etcd_json_bytes(s, strlen(s));
}

static json_t *op_request(const ObjectOp *op) {
	_cleanup_free_ char *end = NULL;

	switch (op->type) {
	case OBJECT_OP_GET: return json_pack("{s:{s:o}}", "request_range", "key", bytes(op->key));
	case OBJECT_OP_PUT:
		return json_pack("{s:{s:o, s:o}}", "request_put", "key", bytes(op->key), "value", bytes(op->value));
	case OBJECT_OP_DELETE: return json_pack("{s:{s:o}}", "request_delete_range", "key", bytes(op->key));
	case OBJECT_OP_DELETE_PREFIX:
		end = etcd_prefix_range_end(op->key);
		if (!end)
			return NULL;
		return json_pack("{s:{s:o, s:o}}", "request_delete_range", "key", bytes(op->key), "range_end",
				 bytes(end));
	}
	return NULL;
}

json_t *object_store_txn_request(const ObjectOp *ops, size_t n, const ObjectGuard *guards, size_t n_guards) {
	json_t *req, *cmp, *success;

	req = json_pack("{s:[], s:[], s:[]}", "compare", "success", "failure");
	if (!req)
		return NULL;
	cmp = json_object_get(req, "compare");
	success = json_object_get(req, "success");
	for (size_t i = 0; i < n_guards; i++)
		if (json_array_append_new(cmp, json_pack("{s:o, s:s, s:s, s:o}", "key", bytes(guards[i].key), "target",
							 guards[i].create ? "CREATE" : "MOD", "result", "EQUAL",
							 guards[i].create ? "create_revision" : "mod_revision",
							 etcd_json_int64_new(guards[i].revision))) < 0)
			goto oom;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].compare &&
		    json_array_append_new(cmp, json_pack("{s:o, s:s, s:s, s:o}", "key", bytes(ops[i].key), "target",
							 "MOD", "result", "EQUAL", "mod_revision",
							 etcd_json_int64_new(ops[i].expect_mod))) < 0)
			goto oom;
		if (json_array_append_new(success, op_request(&ops[i])) < 0)
			goto oom;
	}
	return req;
oom:
	json_decref(req);
	return NULL;
}

int object_store_txn_parse(const json_t *resp, ObjectOp *ops, size_t n, bool *ret_succeeded, int64_t *ret_revision) {
	const json_t *responses = json_object_get(resp, "responses");
	int r;

	*ret_succeeded = json_is_true(json_object_get(resp, "succeeded"));
	if (ret_revision)
		*ret_revision = etcd_json_int64(json_object_get(resp, "header"), "revision");
	for (size_t i = 0; *ret_succeeded && i < n; i++) {
		const json_t *x = json_array_get(responses, i), *kv;

		if (!json_is_object(x))
			return -EBADMSG;
		if (ops[i].type == OBJECT_OP_GET) {
			etcd_kv_done(&ops[i].kv);
			kv = json_array_get(json_object_get(json_object_get(x, "response_range"), "kvs"), 0);
			if (kv && (r = etcd_kv_decode(kv, &ops[i].kv)) < 0)
				return r;
		} else if (ops[i].type != OBJECT_OP_PUT)
			ops[i].deleted = etcd_json_int64(json_object_get(x, "response_delete_range"), "deleted");
	}
	return 0;
}

int object_store_txn(EtcdClient *c, ObjectOp *ops, size_t n, bool *ret_succeeded, int64_t *ret_revision) {
	_cleanup_(json_decrefp) json_t *req = object_store_txn_request(ops, n, NULL, 0);
	_cleanup_(json_decrefp) json_t *resp = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/kv/txn", req, &resp);
	if (r < 0)
		return r;
	return object_store_txn_parse(resp, ops, n, ret_succeeded, ret_revision);
}

void object_ops_done(ObjectOp *ops, size_t n) {
	for (size_t i = 0; i < n; i++)
		etcd_kv_done(&ops[i].kv);
}

int object_uid_new(char buf[static 37]) {
	uint8_t u[16];

	if (getrandom(u, sizeof(u), 0) != (ssize_t) sizeof(u))
		return -EIO;
	u[6] = (uint8_t) ((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t) ((u[8] & 0x3f) | 0x80);
	snprintf(buf, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	return 0;
}

void object_timestamp_now(char buf[static 21]) {
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
