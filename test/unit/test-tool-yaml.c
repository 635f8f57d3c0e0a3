/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML -> JSON as kubectl reads manifests (sigs.k8s.io/yaml on go-yaml v2, YAML 1.1 resolution):
 * a table of scalars with the JSON each must become, then documents (multi-doc, empty docs, block
 * scalars, anchors and merge keys, refusals with their line), then the JSON stream path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "tool/yaml-json.h"

/* `value: <text>` parsed; the JSON text of the value. */
static char *value_json(const char *text) {
	_cleanup_free_ char *doc = strdup_printf("value: %s\n", text), *perr = NULL;
	YamlDoc *d = NULL;
	size_t n = 0;
	char *out;

	if (yaml_json_parse(doc, strlen(doc), &d, &n, &perr) < 0)
		fail_msg("%s: %s", text, perr);
	assert_int_equal(n, 1);
	out = json_dumps(json_object_get(d[0].json, "value"), JSON_ENCODE_ANY | JSON_COMPACT);
	yaml_docs_free(d, n);
	return out;
}

static void test_scalars(void **state) {
	static const struct {
		const char *yaml, *json;
	} t[] = {
		/* integers, as ports must be */
		{ "80", "80" },
		{ "-1", "-1" },
		{ "+7", "7" },
		{ "0x1F", "31" },
		{ "0o17", "15" },
		{ "017", "15" },
		{ "0b101", "5" },
		{ "1_000", "1000" },
		{ "9223372036854775807", "9223372036854775807" },
		/* quoted stays a string */
		{ "\"80\"", "\"80\"" },
		{ "'80'", "\"80\"" },
		{ "!!str 80", "\"80\"" },
		{ "!!int \"80\"", "80" },
		/* numbers: integral ones as integers (Go's encoder), others as reals */
		{ "80.0", "80" },
		{ "1.5", "1.5" },
		{ ".5", "0.5" },
		{ "1e3", "1000" },
		{ "08", "8" }, /* not octal: go-yaml falls back to a float */
		/* YAML 1.1 booleans and nulls */
		{ "true", "true" },
		{ "True", "true" },
		{ "yes", "true" },
		{ "on", "true" },
		{ "y", "true" },
		{ "No", "false" },
		{ "off", "false" },
		{ "FALSE", "false" },
		{ "\"yes\"", "\"yes\"" },
		{ "null", "null" },
		{ "~", "null" },
		{ "", "null" },
		{ "!!null ''", "null" },
		/* strings */
		{ "web", "\"web\"" },
		{ "10.244.1.10", "\"10.244.1.10\"" },
		{ "10.0.0.0/8", "\"10.0.0.0/8\"" },
		{ "2001-12-14", "\"2001-12-14\"" }, /* timestamps stay strings for untyped targets */
		{ "1.2.3", "\"1.2.3\"" },
		{ "0x", "\"0x\"" },
		{ "-x", "\"-x\"" },
		{ "nginx:1.27", "\"nginx:1.27\"" },
		{ "yesno", "\"yesno\"" },
		/* collections */
		{ "[80, \"80\", on]", "[80,\"80\",true]" },
		{ "{a: 1, 2: b, true: c}", "{\"a\":1,\"2\":\"b\",\"true\":\"c\"}" },
		{ "[]", "[]" },
		{ "{}", "{}" },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		_cleanup_free_ char *got = value_json(t[i].yaml);

		if (!streq(got, t[i].json))
			fail_msg("%s: got %s, want %s", t[i].yaml, got, t[i].json);
	}
}

/* Parses text that must fail; returns the error text (malloc'ed). */
static char *parse_error(const char *text) {
	YamlDoc *d = NULL;
	size_t n = 0;
	char *perr = NULL;

	assert_int_equal(yaml_json_parse(text, strlen(text), &d, &n, &perr), -EINVAL);
	assert_non_null(perr);
	assert_null(d);
	return perr;
}

static void test_refused(void **state) {
	static const struct {
		const char *yaml, *error;
	} t[] = {
		{ "a: .inf\n", "line 1: \".inf\": infinity and NaN cannot be represented in JSON" },
		{ "a: !!int x\n", "line 1: \"x\": value does not match its tag" },
		{ "a: !Ref x\n", "line 1: \"x\": unsupported tag (only !!str, !!int, !!float, !!bool and !!null)" },
		{ "a: 1\nb: 2\na: 3\n", "line 3: key \"a\" already set in this mapping" },
		{ "a: *nope\n", "line 1: unknown anchor *nope" },
		{ "a: &x [1, *x]\n", "line 1: alias *x refers to a node that contains it" },
		{ "? [1, 2]\n: x\n", "line 1: a mapping key must be a scalar" },
		{ "a: b\n c: d\n", "line 2: mapping values are not allowed in this context" },
		{ "a: [1, 2\n", "line 2: did not find expected ',' or ']' while parsing a flow sequence" },
		{ "---\nok: 1\n---\n\tbad: tab\n",
		  "line 4: found character that cannot start any token while scanning for the next token" },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		_cleanup_free_ char *e = parse_error(t[i].yaml);

		if (!streq(e, t[i].error))
			fail_msg("%s: got \"%s\", want \"%s\"", t[i].yaml, e, t[i].error);
	}
}

static void test_billion_laughs(void **state) {
	_cleanup_free_ char *text = NULL, *e = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	fputs("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n", f);
	for (int i = 1; i < 10; i++)
		fprintf(f, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i - 1,
			i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	fclose(f);
	e = parse_error(text);
	assert_non_null(strstr(e, "aliases expand to more than 1000000 nodes"));
}

static void test_documents(void **state) {
	static const char text[] = "# leading comment\n"
				   "apiVersion: v1\n"
				   "kind: Namespace\n"
				   "metadata: {name: a}\n"
				   "---\n"
				   "---\n"
				   "# only a comment\n"
				   "---\n"
				   "base: &base\n"
				   "  app: web\n"
				   "  tier: front\n"
				   "labels:\n"
				   "  <<: *base\n"
				   "  tier: back\n"
				   "list: [*base]\n"
				   "text: |\n"
				   "  line 1\n"
				   "  80\n"
				   "folded: >-\n"
				   "  a\n"
				   "  b\n"
				   "--- ~\n"
				   "--- [1]\n"
				   "...\n";
	_cleanup_free_ char *perr = NULL, *s1 = NULL, *s2 = NULL, *s3 = NULL;
	YamlDoc *d = NULL;
	size_t n = 0;

	assert_int_equal(yaml_json_parse(text, sizeof(text) - 1, &d, &n, &perr), 0);
	assert_int_equal(n, 3);
	s1 = json_dumps(d[0].json, JSON_COMPACT);
	assert_string_equal(s1, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\"}}");
	assert_int_equal(d[0].index, 1);
	assert_int_equal(d[0].line, 2);
	s2 = json_dumps(d[1].json, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
			s2,
			"{\"base\":{\"app\":\"web\",\"tier\":\"front\"},\"folded\":\"a b\","
			"\"labels\":{\"app\":\"web\",\"tier\":\"back\"},\"list\":[{\"app\":\"web\",\"tier\":\"front\"}],"
			"\"text\":\"line 1\\n80\\n\"}");
	assert_int_equal(d[1].index, 2);
	assert_int_equal(d[1].line, 8);
	s3 = json_dumps(d[2].json, JSON_COMPACT);
	assert_string_equal(s3, "[1]");
	yaml_docs_free(d, n);

	/* nothing at all */
	assert_int_equal(yaml_json_parse("", 0, &d, &n, &perr), 0);
	assert_int_equal(n, 0);
	yaml_docs_free(d, n);
}

static void test_json_stream(void **state) {
	static const char text[] = "\n {\"kind\":\"A\",\"n\":80}\n{\"kind\":\"B\",\"s\":\"80\"} null\n";
	_cleanup_free_ char *perr = NULL, *e = NULL;
	YamlDoc *d = NULL;
	size_t n = 0;

	if (yaml_json_parse(text, sizeof(text) - 1, &d, &n, &perr) < 0)
		fail_msg("%s", perr);
	assert_int_equal(n, 2);
	assert_true(json_is_integer(json_object_get(d[0].json, "n")));
	assert_true(json_is_string(json_object_get(d[1].json, "s")));
	assert_int_equal(d[0].line, 2);
	assert_int_equal(d[1].line, 3);
	yaml_docs_free(d, n);

	e = parse_error("{\"a\": 1, \"a\": 2}");
	assert_non_null(strstr(e, "duplicate object key"));
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),        cmocka_unit_test(test_refused),
		cmocka_unit_test(test_billion_laughs), cmocka_unit_test(test_documents),
		cmocka_unit_test(test_json_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
