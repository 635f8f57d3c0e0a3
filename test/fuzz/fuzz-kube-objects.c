/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the object cache's boundary: one JSON document decoded as every kind the cache keeps
 * (kube_object_decode) and as a label selector. Invariants: a refusal says why and leaves nothing
 * interned behind; an accepted object equals itself and a second decode of the same input, and
 * freeing it releases every interned string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/kube/kube-objects.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	StringPool *pool = NULL;
	LabelSelector *sel = NULL;
	DecodeError err = {};
	json_t *j;

	if (size > MAX_INPUT)
		return 0;
	j = json_loadb((const char *) data, size, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	if (string_pool_new(&pool) < 0)
		abort();
	for (unsigned k = 0; k < _KUBE_KIND_MAX; k++) {
		KubeObject *a = NULL, *b = NULL;
		int r = kube_object_decode((KubeKind) k, j, pool, &a, &err);

		if (r == -ENOMEM)
			continue;
		if (r < 0) {
			if (r != -EINVAL || a || err.text[0] == '\0' || string_pool_size(pool) != 0)
				abort();
			continue;
		}
		if (kube_object_decode((KubeKind) k, j, pool, &b, NULL) < 0)
			abort();
		if (!kube_object_equal(a, a) || !kube_object_equal(a, b) || a->kind != k)
			abort();
		/* What the debug dump prints must decode to the same object. */
		{
			json_t *printed = kube_object_to_json(a);
			KubeObject *c = NULL;

			if (!printed)
				abort();
			if (kube_object_decode((KubeKind) k, printed, pool, &c, NULL) < 0 || !kube_object_equal(a, c))
				abort();
			kube_object_free(c, pool);
			json_decref(printed);
		}
		kube_object_free(a, pool);
		kube_object_free(b, pool);
		if (string_pool_size(pool) != 0)
			abort();
	}
	if (label_selector_parse(j, "s", &sel, &err) >= 0) {
		LabelSet none = {};

		if (sel && !label_selector_equal(sel, sel))
			abort();
		(void) label_selector_matches(sel, &none);
		label_selector_free(sel);
	} else if (err.text[0] == '\0')
		abort();
	string_pool_free(pool);
	json_decref(j);
	return 0;
}
