/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/kube/string-pool.h"

typedef struct PoolString {
	uint32_t refs;
	uint32_t hash;
	char s[];
} PoolString;

typedef struct PoolLabels {
	uint32_t refs;
	uint32_t hash;
	size_t n;
	const char *pairs[];
} PoolLabels;

struct StringPool {
	PtrTable table;  /* of PoolString */
	PtrTable labels; /* of PoolLabels */
};

typedef struct LabelsKey {
	const char **pairs;
	size_t n;
} LabelsKey;

static bool labels_eq(const void *item, const void *key) {
	const PoolLabels *e = item;
	const LabelsKey *k = key;

	return e->n == k->n && memcmp(e->pairs, k->pairs, k->n * sizeof(char *)) == 0;
}

static uint32_t labels_hash(const void *item) {
	return ((const PoolLabels *) item)->hash;
}

typedef struct PoolKey {
	const char *s;
	size_t n;
} PoolKey;

static PoolString *entry(const char *s) {
	return (PoolString *) (s - offsetof(PoolString, s));
}

static bool pool_eq(const void *item, const void *key) {
	const PoolString *e = item;
	const PoolKey *k = key;

	return strncmp(e->s, k->s, k->n) == 0 && e->s[k->n] == '\0';
}

static uint32_t pool_hash(const void *item) {
	return ((const PoolString *) item)->hash;
}

int string_pool_new(StringPool **ret) {
	StringPool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	*ret = p;
	return 0;
}

StringPool *string_pool_free(StringPool *p) {
	PoolString *e;

	if (!p)
		return NULL;
	PoolLabels *l;

	for (size_t i = 0; (l = ptr_table_iterate(&p->labels, &i));)
		free(l);
	ptr_table_done(&p->labels);
	for (size_t i = 0; (e = ptr_table_iterate(&p->table, &i));)
		free(e);
	ptr_table_done(&p->table);
	free(p);
	return NULL;
}

const char *string_pool_intern_n(StringPool *p, const char *s, size_t n) {
	PoolKey k = { s, n };
	uint32_t h = cache_hash_bytes(s, n, 0);
	PoolString *e = ptr_table_find(&p->table, h, pool_eq, &k);

	if (e) {
		e->refs++;
		return e->s;
	}
	e = malloc(sizeof(PoolString) + n + 1);
	if (!e)
		return NULL;
	e->refs = 1;
	e->hash = h;
	memcpy(e->s, s, n);
	e->s[n] = '\0';
	if (ptr_table_insert(&p->table, h, e, pool_hash) < 0) {
		free(e);
		return NULL;
	}
	return e->s;
}

const char *string_pool_intern(StringPool *p, const char *s) {
	return s ? string_pool_intern_n(p, s, strlen(s)) : NULL;
}

const char *string_pool_intern_pair(StringPool *p, const char *key, const char *value) {
	size_t kl = strlen(key), vl = strlen(value);
	char buf[512], *b = buf;
	const char *r;

	if (kl + vl + 2 > sizeof(buf)) {
		b = malloc(kl + vl + 2);
		if (!b)
			return NULL;
	}
	memcpy(b, key, kl);
	b[kl] = '=';
	memcpy(b + kl + 1, value, vl);
	r = string_pool_intern_n(p, b, kl + vl + 1);
	if (b != buf)
		free(b);
	return r;
}

const char *string_pool_lookup(const StringPool *p, const char *s) {
	PoolKey k = { s, strlen(s) };
	PoolString *e = ptr_table_find(&p->table, cache_hash_bytes(s, k.n, 0), pool_eq, &k);

	return e ? e->s : NULL;
}

const char *string_pool_ref(const char *s) {
	if (s)
		entry(s)->refs++;
	return s;
}

const char *string_pool_unref(StringPool *p, const char *s) {
	PoolString *e;

	if (!s)
		return NULL;
	e = entry(s);
	if (--e->refs == 0) {
		ptr_table_remove(&p->table, e->hash, e);
		free(e);
	}
	return NULL;
}

size_t string_pool_size(const StringPool *p) {
	return p->table.n;
}

const char **string_pool_intern_labels(StringPool *p, const char **pairs, size_t n) {
	LabelsKey k = { pairs, n };
	uint32_t h = cache_hash_bytes(pairs, n * sizeof(char *), 0x1abe1u);
	PoolLabels *e = n > 0 ? ptr_table_find(&p->labels, h, labels_eq, &k) : NULL;

	if (e) {
		/* The set holds its own references to its pairs: the caller's go. */
		for (size_t i = 0; i < n; i++)
			string_pool_unref(p, pairs[i]);
		e->refs++;
		return e->pairs;
	}
	if (n > 0)
		e = malloc(sizeof(PoolLabels) + n * sizeof(char *));
	if (!e || ptr_table_insert(&p->labels, h, e, labels_hash) < 0) {
		free(e);
		for (size_t i = 0; i < n; i++)
			string_pool_unref(p, pairs[i]);
		return NULL;
	}
	e->refs = 1;
	e->hash = h;
	e->n = n;
	memcpy(e->pairs, pairs, n * sizeof(char *));
	return e->pairs;
}

const char **string_pool_unref_labels(StringPool *p, const char **labels) {
	PoolLabels *e;

	if (!labels)
		return NULL;
	e = (PoolLabels *) ((char *) labels - offsetof(PoolLabels, pairs));
	if (--e->refs == 0) {
		ptr_table_remove(&p->labels, e->hash, e);
		for (size_t i = 0; i < e->n; i++)
			string_pool_unref(p, e->pairs[i]);
		free(e);
	}
	return NULL;
}
