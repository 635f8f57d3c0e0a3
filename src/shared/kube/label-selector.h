/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Kubernetes label selectors (metav1.LabelSelector) and the name rules objects are validated
 * against. A selector is parsed once, at the boundary, into requirements that match a LabelSet:
 *
 *   matchLabels {k: v}                 -> k In (v)
 *   matchExpressions In / NotIn        -> need at least one value
 *   matchExpressions Exists / DoesNotExist -> must have no values
 *
 * All requirements must hold (AND). The empty selector {} selects everything; a missing (NULL /
 * JSON null) selector selects nothing — what LabelSelectorAsSelector() does, and what a
 * NetworkPolicy peer without podSelector relies on. Where Kubernetes gives a missing selector
 * another meaning (NetworkPolicyPeer: "namespaceSelector absent = the policy's own namespace"),
 * the caller looks at whether the field was there (kube-networkpolicy.c keeps NULL for absent).
 */

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "basic/macro.h"

/* Why an object or selector was refused: the offending field and value, for the caller's log line
 * and its rejection counter. */
typedef struct DecodeError {
	char text[256];
} DecodeError;

static inline int decode_error(DecodeError *e, const char *fmt, ...) _printf_(2, 3);
static inline int decode_error(DecodeError *e, const char *fmt, ...) {
	va_list ap;

	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->text, sizeof(e->text), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A label set: "key=value" strings (interned or not) sorted by key (label_pairs_sort()), keys
 * unique. The value starts after the first '=' (keys cannot hold one). */
typedef struct LabelSet {
	const char *const *pairs;
	size_t n;
} LabelSet;

/* Length of the key of a "key=value" pair. */
size_t label_pair_key_len(const char *pair);
/* Sorts pairs by key (the order LabelSet wants). */
void label_pairs_sort(const char **pairs, size_t n);
/* The value of `key` in the set, NULL if absent. */
const char *label_set_get(const LabelSet *l, const char *key);

/* Kubernetes name rules. */
bool label_key_valid(const char *key);     /* qualified name: [prefix/]name */
bool label_value_valid(const char *value); /* "" or <= 63 of [A-Za-z0-9_.-], alnum at ends */
bool dns_label_valid(const char *s);       /* RFC 1123 label (namespaces) */
bool dns_subdomain_valid(const char *s);   /* RFC 1123 subdomain (most object names) */
bool dns1035_label_valid(const char *s);   /* RFC 1035 label (service names) */

typedef enum LabelOp {
	LABEL_OP_IN,
	LABEL_OP_NOT_IN,
	LABEL_OP_EXISTS,
	LABEL_OP_DOES_NOT_EXIST,
} LabelOp;

typedef struct LabelRequirement {
	char *key;
	LabelOp op;
	size_t n_values;
	char **values; /* sorted, unique */
} LabelRequirement;

typedef struct LabelSelector {
	size_t n;
	LabelRequirement *reqs; /* sorted by key, then op: equal selectors compare equal */
} LabelSelector;

/*
 * Parses a metav1.LabelSelector. `j` NULL or JSON null: *ret = NULL (selects nothing). `path`
 * names the field in error messages ("spec.podSelector"). 0, -EINVAL (err says why) or -ENOMEM.
 */
int label_selector_parse(const json_t *j, const char *path, LabelSelector **ret, DecodeError *err);
LabelSelector *label_selector_free(LabelSelector *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(LabelSelector *, label_selector_free);

/* NULL matches nothing; an empty selector everything. */
bool label_selector_matches(const LabelSelector *s, const LabelSet *labels);
bool label_selector_is_everything(const LabelSelector *s);
bool label_selector_equal(const LabelSelector *a, const LabelSelector *b);
const char *label_op_to_string(LabelOp op);
