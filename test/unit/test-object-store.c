/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster's objects in etcd (object-store.h): the key layout, one store whether the prefix ends
 * in a slash or not (the tool and weftd's object source used to disagree on "/weft/network/"), and
 * the transaction body: guards (a compare on a key that is not written) before each op's own
 * compare, and the response read back into the ops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/base64.h"
#include "basic/string-util.h"
#include "shared/client/object-store.h"

static void test_keys(void **state) {
	const char *prefixes[] = { "/weft/network", "/weft/network/", "/weft/network//" };

	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
		_cleanup_free_ char *svc = object_key(prefixes[i], KUBE_KIND_SERVICE, "shop", "web");
		_cleanup_free_ char *node = object_key(prefixes[i], KUBE_KIND_NAMESPACE, NULL, "shop");
		_cleanup_free_ char *all = object_key_prefix(prefixes[i], KUBE_KIND_POD, NULL);
		_cleanup_free_ char *ns = object_key_prefix(prefixes[i], KUBE_KIND_POD, "shop");

		assert_string_equal(svc, "/weft/network/objects/services/shop/web");
		assert_string_equal(node, "/weft/network/objects/namespaces/shop");
		assert_string_equal(all, "/weft/network/objects/pods/");
		assert_string_equal(ns, "/weft/network/objects/pods/shop/");
	}
}

static const char *b64(const json_t *v) {
	static char buf[4][256];
	static unsigned n;
	char *out = buf[n++ % 4];
	_cleanup_free_ void *raw = NULL;
	size_t len = 0;

	assert_true(json_is_string(v));
	assert_int_equal(base64_decode(json_string_value(v), strlen(json_string_value(v)), &raw, &len), 0);
	assert_true(len < 256);
	memcpy(out, raw, len);
	out[len] = '\0';
	return out;
}

static void test_txn_request_and_parse(void **state) {
	ObjectOp ops[2] = {
		{ .type = OBJECT_OP_GET, .key = "/p/objects/services/a/b" },
		{ .type = OBJECT_OP_PUT,
		  .key = "/p/objects/services/a/c",
		  .value = "{}",
		  .compare = true,
		  .expect_mod = 41 },
	};
	ObjectGuard guard = { .key = "/p/loadbalancer/leader", .create = true, .revision = 7 };
	json_t *req = object_store_txn_request(ops, 2, &guard, 1), *cmp, *resp;
	json_error_t jerr;
	bool ok;
	int64_t rev;

	assert_non_null(req);
	cmp = json_object_get(req, "compare");
	assert_int_equal(json_array_size(cmp), 2);
	assert_string_equal(b64(json_object_get(json_array_get(cmp, 0), "key")), "/p/loadbalancer/leader");
	assert_string_equal(json_string_value(json_object_get(json_array_get(cmp, 0), "target")), "CREATE");
	assert_string_equal(json_string_value(json_object_get(json_array_get(cmp, 0), "create_revision")), "7");
	assert_string_equal(b64(json_object_get(json_array_get(cmp, 1), "key")), "/p/objects/services/a/c");
	assert_string_equal(json_string_value(json_object_get(json_array_get(cmp, 1), "target")), "MOD");
	assert_string_equal(json_string_value(json_object_get(json_array_get(cmp, 1), "mod_revision")), "41");
	assert_int_equal(json_array_size(json_object_get(req, "success")), 2);
	json_decref(req);

	/* the gateway's answer: the GET's key read back, the store revision */
	resp = json_loads("{\"header\": {\"revision\": \"99\"}, \"succeeded\": true, \"responses\": ["
			  "{\"response_range\": {\"kvs\": [{\"key\": \"L3AvYQ==\", \"value\": \"e30=\", "
			  "\"mod_revision\": \"12\", \"create_revision\": \"3\"}]}}, {\"response_put\": {}}]}",
			  0, &jerr);
	assert_non_null(resp);
	assert_int_equal(object_store_txn_parse(resp, ops, 2, &ok, &rev), 0);
	assert_true(ok);
	assert_int_equal(rev, 99);
	assert_string_equal(ops[0].kv.key, "/p/a");
	assert_string_equal(ops[0].kv.value, "{}");
	assert_int_equal(ops[0].kv.mod_revision, 12);
	json_decref(resp);

	/* a failed compare: nothing to read */
	resp = json_loads("{\"header\": {\"revision\": \"100\"}}", 0, &jerr);
	assert_int_equal(object_store_txn_parse(resp, ops, 2, &ok, NULL), 0);
	assert_false(ok);
	json_decref(resp);
	object_ops_done(ops, 2);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_txn_request_and_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
