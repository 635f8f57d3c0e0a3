/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/kube/label-selector.h"

size_t label_pair_key_len(const char *pair) {
	const char *eq = strchr(pair, '=');

	return eq ? (size_t) (eq - pair) : strlen(pair);
}

/* Compares the key of a pair with key[0..kl). */
static int key_cmp(const char *pair, const char *key, size_t kl) {
	size_t pl = label_pair_key_len(pair);
	int c = memcmp(pair, key, MIN(pl, kl));

	if (c != 0)
		return c;
	return pl < kl ? -1 : pl > kl ? 1 : 0;
}

static int pair_cmp(const void *a, const void *b) {
	const char *pa = *(const char *const *) a, *pb = *(const char *const *) b;

	return key_cmp(pa, pb, label_pair_key_len(pb));
}

void label_pairs_sort(const char **pairs, size_t n) {
	if (n > 1)
		qsort(pairs, n, sizeof(char *), pair_cmp);
}

const char *label_set_get(const LabelSet *l, const char *key) {
	size_t lo = 0, hi = l ? l->n : 0, kl = strlen(key);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(l->pairs[mid], key, kl);

		if (c == 0)
			return l->pairs[mid] + kl + 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- name rules (k8s.io/apimachinery/pkg/util/validation) ---- */

static bool is_alnum(char c) {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c) {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most max (0 length allowed if allow_empty). */
static bool name_part_valid(const char *s, size_t n, size_t max, bool allow_empty) {
	if (n == 0)
		return allow_empty;
	if (n > max || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

static bool dns_label_valid_n(const char *s, size_t n) {
	if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool dns_label_valid(const char *s) {
	return s && dns_label_valid_n(s, strlen(s));
}

static bool dns_subdomain_valid_n(const char *s, size_t n) {
	size_t start = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++)
		if (i == n || s[i] == '.') {
			if (!dns_label_valid_n(s + start, i - start))
				return false;
			start = i + 1;
		}
	return true;
}

bool dns_subdomain_valid(const char *s) {
	return s && dns_subdomain_valid_n(s, strlen(s));
}

bool dns1035_label_valid(const char *s) {
	return dns_label_valid(s) && s[0] >= 'a' && s[0] <= 'z';
}

bool label_key_valid(const char *key) {
	const char *slash;

	if (!key)
		return false;
	slash = strchr(key, '/');
	if (!slash)
		return name_part_valid(key, strlen(key), 63, false);
	return dns_subdomain_valid_n(key, (size_t) (slash - key)) &&
	       name_part_valid(slash + 1, strlen(slash + 1), 63, false);
}

bool label_value_valid(const char *value) {
	return value && name_part_valid(value, strlen(value), 63, true);
}

/* ---- selectors ---- */

const char *label_op_to_string(LabelOp op) {
	switch (op) {
	case LABEL_OP_IN: return "In";
	case LABEL_OP_NOT_IN: return "NotIn";
	case LABEL_OP_EXISTS: return "Exists";
	case LABEL_OP_DOES_NOT_EXIST: return "DoesNotExist";
	}
	return "?";
}

static void requirement_done(LabelRequirement *r) {
	free(r->key);
	for (size_t i = 0; i < r->n_values; i++)
		free(r->values[i]);
	free(r->values);
}

LabelSelector *label_selector_free(LabelSelector *s) {
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		requirement_done(&s->reqs[i]);
	free(s->reqs);
	free(s);
	return NULL;
}

static int strp_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int req_cmp(const void *a, const void *b) {
	const LabelRequirement *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->n_values != y->n_values)
		return x->n_values < y->n_values ? -1 : 1;
	for (size_t i = 0; i < x->n_values; i++) {
		c = strcmp(x->values[i], y->values[i]);
		if (c != 0)
			return c;
	}
	return 0;
}

static LabelRequirement *add_req(LabelSelector *s, const char *key, LabelOp op) {
	LabelRequirement *v = reallocarray(s->reqs, s->n + 1, sizeof(LabelRequirement));

	if (!v)
		return NULL;
	s->reqs = v;
	v = &s->reqs[s->n];
	*v = (LabelRequirement) { .op = op, .key = strdup(key) };
	if (!v->key)
		return NULL;
	s->n++;
	return v;
}

static int add_value(LabelRequirement *r, const char *value) {
	char **v = reallocarray(r->values, r->n_values + 1, sizeof(char *));

	if (!v)
		return -ENOMEM;
	r->values = v;
	v[r->n_values] = strdup(value);
	if (!v[r->n_values])
		return -ENOMEM;
	r->n_values++;
	return 0;
}

static int parse_op(const char *s, LabelOp *ret) {
	static const char *const names[] = { "In", "NotIn", "Exists", "DoesNotExist" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(s, names[i])) {
			*ret = (LabelOp) i;
			return 0;
		}
	return -EINVAL;
}

int label_selector_parse(const json_t *j, const char *path, LabelSelector **ret, DecodeError *err) {
	_cleanup_(label_selector_freep) LabelSelector *s = NULL;
	const json_t *ml, *me, *v;
	const char *key;
	size_t i;

	if (!j || json_is_null(j)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_object(j))
		return decode_error(err, "%s: not an object", path);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;

	ml = json_object_get(j, "matchLabels");
	if (ml && !json_is_null(ml)) {
		if (!json_is_object(ml))
			return decode_error(err, "%s.matchLabels: not an object", path);
		json_object_foreach((json_t *) ml, key, v) {
			LabelRequirement *r;

			if (!label_key_valid(key))
				return decode_error(err, "%s.matchLabels: invalid label key \"%.64s\"", path, key);
			if (!json_is_string(v) || !label_value_valid(json_string_value(v)))
				return decode_error(err, "%s.matchLabels[%.64s]: invalid label value", path, key);
			r = add_req(s, key, LABEL_OP_IN);
			if (!r || add_value(r, json_string_value(v)) < 0)
				return -ENOMEM;
		}
	}

	me = json_object_get(j, "matchExpressions");
	if (me && !json_is_null(me)) {
		if (!json_is_array(me))
			return decode_error(err, "%s.matchExpressions: not an array", path);
		json_array_foreach(me, i, v) {
			const json_t *k = json_object_get(v, "key"), *o = json_object_get(v, "operator"),
				     *vals = json_object_get(v, "values"), *x;
			LabelRequirement *r;
			LabelOp op;
			size_t n, m;

			if (!json_is_string(k) || !label_key_valid(json_string_value(k)))
				return decode_error(err, "%s.matchExpressions[%zu].key: invalid label key", path, i);
			if (!json_is_string(o) || parse_op(json_string_value(o), &op) < 0)
				return decode_error(
						err,
						"%s.matchExpressions[%zu].operator: \"%.32s\" is not In, NotIn, Exists or DoesNotExist",
						path, i, json_is_string(o) ? json_string_value(o) : "");
			if (vals && !json_is_null(vals) && !json_is_array(vals))
				return decode_error(err, "%s.matchExpressions[%zu].values: not an array", path, i);
			n = json_is_array(vals) ? json_array_size(vals) : 0;
			if ((op == LABEL_OP_IN || op == LABEL_OP_NOT_IN) && n == 0)
				return decode_error(err, "%s.matchExpressions[%zu].values: must be non-empty for %s",
						    path, i, label_op_to_string(op));
			if ((op == LABEL_OP_EXISTS || op == LABEL_OP_DOES_NOT_EXIST) && n > 0)
				return decode_error(err, "%s.matchExpressions[%zu].values: must be empty for %s", path,
						    i, label_op_to_string(op));
			r = add_req(s, json_string_value(k), op);
			if (!r)
				return -ENOMEM;
			json_array_foreach(vals, m, x) {
				if (!json_is_string(x) || !label_value_valid(json_string_value(x)))
					return decode_error(err,
							    "%s.matchExpressions[%zu].values[%zu]: invalid label value",
							    path, i, m);
				if (add_value(r, json_string_value(x)) < 0)
					return -ENOMEM;
			}
			/* Values form a set: sort and drop duplicates so equal selectors compare equal. */
			if (r->n_values > 1) {
				size_t w = 1;

				qsort(r->values, r->n_values, sizeof(char *), strp_cmp);
				for (size_t q = 1; q < r->n_values; q++) {
					if (streq(r->values[q], r->values[w - 1]))
						free(r->values[q]);
					else
						r->values[w++] = r->values[q];
				}
				r->n_values = w;
			}
		}
	}
	if (s->n > 1)
		qsort(s->reqs, s->n, sizeof(LabelRequirement), req_cmp);
	*ret = TAKE_PTR(s);
	return 0;
}

static bool value_in(const LabelRequirement *r, const char *v) {
	size_t lo = 0, hi = r->n_values;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->values[mid], v);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool label_selector_matches(const LabelSelector *s, const LabelSet *labels) {
	if (!s)
		return false;
	for (size_t i = 0; i < s->n; i++) {
		const LabelRequirement *r = &s->reqs[i];
		const char *v = label_set_get(labels, r->key);

		switch (r->op) {
		case LABEL_OP_IN:
			if (!v || !value_in(r, v))
				return false;
			break;
		case LABEL_OP_NOT_IN:
			if (v && value_in(r, v))
				return false;
			break;
		case LABEL_OP_EXISTS:
			if (!v)
				return false;
			break;
		case LABEL_OP_DOES_NOT_EXIST:
			if (v)
				return false;
			break;
		}
	}
	return true;
}

bool label_selector_is_everything(const LabelSelector *s) {
	return s && s->n == 0;
}

bool label_selector_equal(const LabelSelector *a, const LabelSelector *b) {
	if (!a || !b)
		return a == b;
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (req_cmp(&a->reqs[i], &b->reqs[i]) != 0)
			return false;
	return true;
}
