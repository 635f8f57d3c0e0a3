/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the manifest reader of `weft apply/delete -f` (yaml_json_parse: YAML with anchors, merge
 * keys and tags, or a JSON stream; a user's file, or stdin from anywhere). What parses must be
 * JSON that prints and parses back equal, documents numbered in order, never null; a refusal
 * must say why.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "tool/yaml-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	_cleanup_free_ char *perr = NULL;
	YamlDoc *docs = NULL;
	size_t n = 0;
	int r;

	if (size > MAX_INPUT)
		return 0;
	r = yaml_json_parse((const char *) data, size, &docs, &n, &perr);
	if (r == -EINVAL) {
		if (!perr || !*perr)
			abort();
		return 0;
	}
	if (r < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		json_t *back;
		char *s;

		if (!docs[i].json || json_is_null(docs[i].json) || docs[i].index != i + 1 || docs[i].line == 0)
			abort();
		s = json_dumps(docs[i].json, JSON_ENCODE_ANY | JSON_COMPACT);
		if (!s)
			abort();
		back = json_loads(s, JSON_DECODE_ANY, NULL);
		if (!back || !json_equal(back, docs[i].json))
			abort();
		json_decref(back);
		free(s);
	}
	yaml_docs_free(docs, n);
	return 0;
}
