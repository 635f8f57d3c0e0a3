/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Label selectors: matchLabels, each matchExpressions operator, combinations, null vs empty, and
 * the API server's validation (operators, values, key and value syntax). The matching cases are a
 * truth table checked against a small independent model of the Kubernetes semantics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "shared/kube/label-selector.h"

static LabelSelector *parse_ok(const char *text) {
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
	LabelSelector *s = (LabelSelector *) 0x1;
	DecodeError err = {};

	assert_non_null(j);
	if (label_selector_parse(j, "sel", &s, &err) < 0)
		fail_msg("%s: %s", text, err.text);
	json_decref(j);
	return s;
}

static void parse_bad(const char *text, const char *want) {
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
	LabelSelector *s = NULL;
	DecodeError err = {};

	assert_non_null(j);
	assert_int_equal(label_selector_parse(j, "spec.podSelector", &s, &err), -EINVAL);
	assert_null(s);
	if (!strstr(err.text, want))
		fail_msg("%s: error \"%s\" does not mention \"%s\"", text, err.text, want);
	json_decref(j);
}

/* A label set from "k=v" strings (sorted here, as the cache stores them). */
typedef struct Labels {
	const char *pairs[8];
	LabelSet set;
} Labels;

static void labels(Labels *l, ...) {
	va_list ap;
	const char *p;
	size_t n = 0;

	va_start(ap, l);
	while ((p = va_arg(ap, const char *)))
		l->pairs[n++] = p;
	va_end(ap);
	label_pairs_sort(l->pairs, n);
	l->set = (LabelSet) { l->pairs, n };
}

static void test_label_set_get(void **state) {
	Labels l;

	labels(&l, "tier=backend", "app=web", "app.kubernetes.io/name=shop", "a=", "ab=x", NULL);
	assert_string_equal(label_set_get(&l.set, "app"), "web");
	assert_string_equal(label_set_get(&l.set, "tier"), "backend");
	assert_string_equal(label_set_get(&l.set, "app.kubernetes.io/name"), "shop");
	assert_string_equal(label_set_get(&l.set, "a"), "");
	assert_string_equal(label_set_get(&l.set, "ab"), "x");
	assert_null(label_set_get(&l.set, "ap"));
	assert_null(label_set_get(&l.set, "tiers"));
	assert_null(label_set_get(&(LabelSet) {}, "app"));
}

static void test_null_and_empty(void **state) {
	Labels none, some;
	LabelSelector *s;

	labels(&none, NULL);
	labels(&some, "app=web", NULL);
	/* null selects nothing, {} everything (also an object without labels). */
	s = parse_ok("null");
	assert_null(s);
	assert_false(label_selector_matches(s, &some.set));
	s = parse_ok("{}");
	assert_true(label_selector_is_everything(s));
	assert_true(label_selector_matches(s, &none.set));
	assert_true(label_selector_matches(s, &some.set));
	label_selector_free(s);
	s = parse_ok("{\"matchLabels\": null, \"matchExpressions\": []}");
	assert_true(label_selector_is_everything(s));
	label_selector_free(s);
}

/* ---- truth table: selectors x label sets, against an independent model ---- */

typedef struct ModelReq {
	const char *key;
	const char *op; /* "In", "NotIn", "Exists", "DoesNotExist" */
	const char *values[3];
} ModelReq;

typedef struct ModelSel {
	const char *json;
	ModelReq reqs[4]; /* matchLabels entries appear as In with one value */
} ModelSel;

static const char *model_get(const char *const *set, const char *key) {
	for (size_t i = 0; set[i]; i++) {
		size_t kl = strlen(key);
		if (strncmp(set[i], key, kl) == 0 && set[i][kl] == '=')
			return set[i] + kl + 1;
	}
	return NULL;
}

static bool model_in(const ModelReq *r, const char *v) {
	for (size_t i = 0; i < 3 && r->values[i]; i++)
		if (streq(r->values[i], v))
			return true;
	return false;
}

static bool model_matches(const ModelSel *s, const char *const *set) {
	for (size_t i = 0; i < 4 && s->reqs[i].key; i++) {
		const ModelReq *r = &s->reqs[i];
		const char *v = model_get(set, r->key);

		if (streq(r->op, "In") && !(v && model_in(r, v)))
			return false;
		if (streq(r->op, "NotIn") && v && model_in(r, v))
			return false;
		if (streq(r->op, "Exists") && !v)
			return false;
		if (streq(r->op, "DoesNotExist") && v)
			return false;
	}
	return true;
}

static void test_truth_table(void **state) {
	static const ModelSel sels[] = {
		{ "{\"matchLabels\": {\"app\": \"web\"}}", { { "app", "In", { "web" } } } },
		{ "{\"matchLabels\": {\"app\": \"web\", \"tier\": \"front\"}}",
		  { { "app", "In", { "web" } }, { "tier", "In", { "front" } } } },
		{ "{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"web\", \"db\"]}]}",
		  { { "app", "In", { "web", "db" } } } },
		{ "{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}",
		  { { "app", "NotIn", { "web" } } } },
		{ "{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"Exists\"}]}",
		  { { "tier", "Exists", { NULL } } } },
		{ "{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"DoesNotExist\", \"values\": []}]}",
		  { { "tier", "DoesNotExist", { NULL } } } },
		{ "{\"matchLabels\": {\"app\": \"web\"}, \"matchExpressions\": ["
		  "{\"key\": \"env\", \"operator\": \"NotIn\", \"values\": [\"prod\", \"staging\"]},"
		  "{\"key\": \"tier\", \"operator\": \"Exists\"}]}",
		  { { "app", "In", { "web" } },
		    { "env", "NotIn", { "prod", "staging" } },
		    { "tier", "Exists", { NULL } } } },
		{ "{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\", \"values\": [\"web\"]},"
		  "{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}",
		  { { "app", "In", { "web" } }, { "app", "NotIn", { "web" } } } }, /* contradiction: nothing */
		{ "{\"matchLabels\": {\"app.kubernetes.io/name\": \"\"}}",
		  { { "app.kubernetes.io/name", "In", { "" } } } },
		{ "{}", { { NULL, NULL, { NULL } } } },
	};
	static const char *const sets[][5] = {
		{ NULL },
		{ "app=web", NULL },
		{ "app=db", NULL },
		{ "app=web", "tier=front", NULL },
		{ "app=web", "tier=back", "env=prod", NULL },
		{ "app=web", "tier=back", "env=dev", NULL },
		{ "tier=front", NULL },
		{ "app=webx", "tier=front", NULL },
		{ "app.kubernetes.io/name=", NULL },
		{ "app.kubernetes.io/name=x", "app=db", "env=staging", NULL },
	};
	unsigned cells = 0, wrong = 0, hits = 0;

	for (size_t i = 0; i < ELEMENTSOF(sels); i++) {
		LabelSelector *s = parse_ok(sels[i].json);

		for (size_t k = 0; k < ELEMENTSOF(sets); k++) {
			Labels l = {};
			size_t n = 0;
			bool want, got;

			while (sets[k][n])
				l.pairs[n] = sets[k][n], n++;
			label_pairs_sort(l.pairs, n);
			l.set = (LabelSet) { l.pairs, n };
			want = model_matches(&sels[i], sets[k]);
			got = label_selector_matches(s, &l.set);
			cells++;
			hits += got;
			if (want != got) {
				wrong++;
				print_error("selector %zu %s, labels %zu: want %d got %d\n", i, sels[i].json, k, want,
					    got);
			}
		}
		label_selector_free(s);
	}
	print_message("label selector truth table: %u cells, %u matches, %u wrong\n", cells, hits, wrong);
	assert_int_equal(wrong, 0);
	/* The table must exercise both outcomes substantially, or it proves little. */
	assert_true(hits > 10 && hits < cells - 10);
}

static void test_equal_is_order_insensitive(void **state) {
	LabelSelector *a = parse_ok("{\"matchLabels\": {\"b\": \"2\", \"a\": \"1\"}, \"matchExpressions\": ["
				    "{\"key\": \"c\", \"operator\": \"In\", \"values\": [\"y\", \"x\", \"y\"]}]}");
	LabelSelector *b = parse_ok(
			"{\"matchExpressions\": [{\"key\": \"c\", \"operator\": \"In\", \"values\": [\"x\", \"y\"]}],"
			"\"matchLabels\": {\"a\": \"1\", \"b\": \"2\"}}");
	LabelSelector *c = parse_ok("{\"matchLabels\": {\"a\": \"1\", \"b\": \"3\"}, \"matchExpressions\": ["
				    "{\"key\": \"c\", \"operator\": \"In\", \"values\": [\"x\", \"y\"]}]}");

	assert_true(label_selector_equal(a, b));
	assert_false(label_selector_equal(a, c));
	assert_false(label_selector_equal(a, NULL));
	assert_true(label_selector_equal(NULL, NULL));
	assert_int_equal(a->reqs[2].n_values, 2); /* duplicates dropped */
	label_selector_free(a);
	label_selector_free(b);
	label_selector_free(c);
}

static void test_validation(void **state) {
	parse_bad("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\"}]}", "must be non-empty for In");
	parse_bad("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\", \"values\": []}]}",
		  "must be non-empty for NotIn");
	parse_bad("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\", \"values\": [\"x\"]}]}",
		  "must be empty for Exists");
	parse_bad("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"DoesNotExist\", \"values\": [\"x\"]}]}",
		  "must be empty for DoesNotExist");
	parse_bad("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"in\", \"values\": [\"x\"]}]}",
		  "is not In, NotIn, Exists or DoesNotExist");
	parse_bad("{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Gt\", \"values\": [\"1\"]}]}",
		  "\"Gt\" is not In");
	parse_bad("{\"matchExpressions\": [{\"key\": \"-app\", \"operator\": \"Exists\"}]}", "key: invalid label key");
	parse_bad("{\"matchExpressions\": [{\"operator\": \"Exists\"}]}", "[0].key");
	parse_bad("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": [\"bad value\"]}]}",
		  "values[0]: invalid label value");
	parse_bad("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": [7]}]}",
		  "values[0]: invalid label value");
	parse_bad("{\"matchExpressions\": {\"key\": \"a\"}}", "matchExpressions: not an array");
	parse_bad("{\"matchLabels\": {\"app\": 1}}", "matchLabels[app]: invalid label value");
	parse_bad("{\"matchLabels\": {\"Bad_Prefix/app\": \"x\"}}", "invalid label key");
	parse_bad("{\"matchLabels\": {\"app\": \"-x\"}}", "invalid label value");
	parse_bad("{\"matchLabels\": [\"app\"]}", "matchLabels: not an object");
	parse_bad("[]", "spec.podSelector: not an object");
}

static void test_name_rules(void **state) {
	char long63[64], long64[65], sub254[255];

	memset(long63, 'a', 63), long63[63] = 0;
	memset(long64, 'a', 64), long64[64] = 0;
	memset(sub254, 'a', 254), sub254[254] = 0;
	for (size_t i = 50; i < 254; i += 51)
		sub254[i] = '.';

	assert_true(label_key_valid("app"));
	assert_true(label_key_valid("app.kubernetes.io/name"));
	assert_true(label_key_valid("A_b.c-D"));
	assert_true(label_key_valid(long63));
	assert_false(label_key_valid(long64));
	assert_false(label_key_valid(""));
	assert_false(label_key_valid("/name"));
	assert_false(label_key_valid("example.com/"));
	assert_false(label_key_valid("Example.com/name")); /* prefix is a lowercase DNS subdomain */
	assert_false(label_key_valid("a/b/c"));
	assert_false(label_key_valid("app="));
	assert_true(label_value_valid(""));
	assert_true(label_value_valid("v1.2_3-x"));
	assert_true(label_value_valid(long63));
	assert_false(label_value_valid(long64));
	assert_false(label_value_valid("_x"));
	assert_false(label_value_valid("a b"));
	assert_false(label_value_valid("a=b"));

	assert_true(dns_label_valid("kube-system"));
	assert_false(dns_label_valid("Kube"));
	assert_false(dns_label_valid("a.b"));
	assert_false(dns_label_valid(long64));
	assert_true(dns_subdomain_valid("node-1.example.com"));
	assert_false(dns_subdomain_valid("node..x"));
	assert_false(dns_subdomain_valid(sub254));
	sub254[253] = 0;
	assert_true(dns_subdomain_valid(sub254));
	assert_true(dns1035_label_valid("web"));
	assert_false(dns1035_label_valid("1web"));
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_set_get), cmocka_unit_test(test_null_and_empty),
		cmocka_unit_test(test_truth_table),   cmocka_unit_test(test_equal_is_order_insensitive),
		cmocka_unit_test(test_validation),    cmocka_unit_test(test_name_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
