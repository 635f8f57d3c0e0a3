/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cache/string-pool.h"

typedef struct PoolString {
	uint32_t refs;
	uint32_t hash;
	char s[];
} PoolString;

struct StringPool {
	PtrTable table; /* of PoolString */
};

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
