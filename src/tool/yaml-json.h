/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * YAML or JSON manifests -> JSON documents, the way kubectl reads `-f FILE`: a stream of YAML
 * documents separated by `---`, or a stream of JSON objects (input whose first non-blank byte is
 * '{'). YAML is converted as sigs.k8s.io/yaml (go-yaml v2, YAML 1.1 resolution) does, so a file
 * means here what it means to kubectl:
 *
 *   plain scalars: ~ null Null NULL and empty -> null; y Y yes Yes YES true True TRUE on On ON
 *                  (and the false forms: n no false off) -> booleans; decimal, 0x hex, 0o and
 *                  leading-0 octal, 0b binary, '_' separators -> integers; [-+]digits[.digits][e..]
 *                  -> numbers (integral ones printed as integers, as Go's JSON encoder does);
 *                  anything else (timestamps too) -> strings
 *   quoted and block scalars: always strings ("80" stays a string)
 *   tags: !!str !!int !!float !!bool !!null and "!" are honoured; any other tag is refused
 *   anchors and aliases are resolved (a copy of the anchored node), `<<` merge keys too; an
 *   alias to an anchor not yet closed (a cycle) is refused, and the expansion is capped
 *   (YAML_JSON_MAX_NODES) so a "billion laughs" file fails instead of eating the machine
 *   duplicate mapping keys are refused (newer kubectl does too); non-scalar keys are refused
 *
 * Empty documents (`---` alone, comments only) and documents that are null are skipped.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define YAML_JSON_MAX_NODES 1000000u
#define YAML_JSON_MAX_DEPTH 256u

typedef struct YamlDoc {
	json_t *json;
	unsigned index; /* 1-based position among the stream's non-empty documents */
	unsigned line;  /* 1-based line the document starts on */
} YamlDoc;

/*
 * Parses a whole stream. 0 and *ret (free with yaml_docs_free()), *ret_n may be 0; -EINVAL with
 * *ret_error ("line 7: mapping values are not allowed in this context", malloc'ed) on bad input;
 * -ENOMEM.
 */
int yaml_json_parse(const char *buf, size_t len, YamlDoc **ret, size_t *ret_n, char **ret_error);
void yaml_docs_free(YamlDoc *d, size_t n);

/*
 * One scalar as JSON. `tag` is the explicit tag (NULL if none), `plain` whether it was written
 * unquoted. NULL with *ret_error set (static text) if it cannot be represented (.inf, !!int "x").
 */
json_t *yaml_json_scalar(const char *s, size_t len, const char *tag, bool plain, const char **ret_error);
