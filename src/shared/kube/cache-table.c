/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/macro.h"
#include "shared/kube/cache-table.h"

#define TOMB ((void *) 1)
#define LIVE(p) ((p) != NULL && (p) != TOMB)
/* Grow at 3/4 full (tombstones count: they lengthen probe paths as much as items do). */
#define FULL(cap) ((cap) / 4 * 3)

static uint32_t seed;

uint32_t cache_hash_seed(void) {
	if (seed == 0) {
		uint32_t v = 0;

		if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
			v = (uint32_t) random();
		seed = v | 1u;
	}
	return seed;
}

/* FNV-1a with a seeded start and a final avalanche (murmur3's fmix32), so linear probing sees well
 * spread low bits even for keys that differ only at the end ("web-0", "web-1", ...). */
static uint32_t fmix32(uint32_t h) {
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

uint32_t cache_hash_bytes(const void *p, size_t n, uint32_t h) {
	const uint8_t *b = p;

	h ^= cache_hash_seed();
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 16777619u;
	}
	return fmix32(h);
}

uint32_t cache_hash_string(const char *s, uint32_t h) {
	return cache_hash_bytes(s, strlen(s), h);
}

uint32_t cache_hash_ptr(const void *p) {
	uint64_t v = (uint64_t) (uintptr_t) p;

	return fmix32((uint32_t) (v >> 4) ^ (uint32_t) (v >> 32));
}

void ptr_table_done(PtrTable *t) {
	free(t->slots);
	*t = (PtrTable) {};
}

void *ptr_table_find_next(const PtrTable *t, uint32_t hash, PtrTableEqFn eq, const void *key, size_t *cursor) {
	if (!t->slots)
		return NULL;
	for (size_t k = *cursor; k <= t->mask; k++) {
		void *p = t->slots[(hash + k) & t->mask];

		if (!p)
			break;
		if (p != TOMB && eq(p, key)) {
			*cursor = k + 1;
			return p;
		}
	}
	*cursor = t->mask + 1;
	return NULL;
}

void *ptr_table_find(const PtrTable *t, uint32_t hash, PtrTableEqFn eq, const void *key) {
	size_t c = 0;

	return ptr_table_find_next(t, hash, eq, key, &c);
}

static void place(void **slots, size_t mask, uint32_t hash, void *item) {
	size_t i = hash & mask;

	while (LIVE(slots[i]))
		i = (i + 1) & mask;
	slots[i] = item;
}

static size_t capacity_for(size_t n) {
	size_t cap = 8;

	while (FULL(cap) < n + 1)
		cap *= 2;
	return cap;
}

int ptr_table_reset(PtrTable *t, size_t n) {
	size_t cap = capacity_for(n);
	void **s = calloc(cap, sizeof(void *));

	if (!s)
		return -ENOMEM;
	free(t->slots);
	*t = (PtrTable) { .slots = s, .mask = cap - 1 };
	return 0;
}

bool ptr_table_has_room(const PtrTable *t, size_t extra) {
	return t->slots && t->used + extra < FULL(t->mask + 1);
}

static int rebuild(PtrTable *t, size_t n, PtrTableHashFn rehash) {
	size_t cap = capacity_for(n);
	void **s = calloc(cap, sizeof(void *));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; t->slots && i <= t->mask; i++)
		if (LIVE(t->slots[i]))
			place(s, cap - 1, rehash(t->slots[i]), t->slots[i]);
	free(t->slots);
	t->slots = s;
	t->mask = cap - 1;
	t->used = t->n;
	return 0;
}

int ptr_table_reserve(PtrTable *t, size_t extra, PtrTableHashFn rehash) {
	if (ptr_table_has_room(t, extra))
		return 0;
	if (!rehash && t->n > 0)
		return -ENOSPC;
	return rebuild(t, t->n + extra, rehash);
}

int ptr_table_insert(PtrTable *t, uint32_t hash, void *item, PtrTableHashFn rehash) {
	if (!ptr_table_has_room(t, 1)) {
		int r;

		if (!rehash && t->slots)
			return -ENOSPC;
		r = rebuild(t, t->n + 1, rehash);
		if (r < 0)
			return r;
	}
	/* Reuse the first tombstone on the path, else the empty slot that ends it. */
	size_t i = hash & t->mask;
	while (LIVE(t->slots[i]))
		i = (i + 1) & t->mask;
	if (!t->slots[i])
		t->used++;
	t->slots[i] = item;
	t->n++;
	return 0;
}

bool ptr_table_remove(PtrTable *t, uint32_t hash, const void *item) {
	if (!t->slots)
		return false;
	for (size_t k = 0; k <= t->mask; k++) {
		size_t i = (hash + k) & t->mask;

		if (!t->slots[i])
			return false;
		if (t->slots[i] == item) {
			/* A tombstone is needed only if the path continues past this slot. */
			if (!t->slots[(i + 1) & t->mask]) {
				t->slots[i] = NULL;
				t->used--;
			} else
				t->slots[i] = TOMB;
			t->n--;
			return true;
		}
	}
	return false;
}

void *ptr_table_iterate(const PtrTable *t, size_t *i) {
	for (; t->slots && *i <= t->mask; (*i)++)
		if (LIVE(t->slots[*i]))
			return t->slots[(*i)++];
	return NULL;
}

/* ---- PostingIndex ---- */

static bool posting_eq(const void *item, const void *key) {
	return ((const Posting *) item)->key == key;
}

static uint32_t posting_hash(const void *item) {
	return cache_hash_ptr(((const Posting *) item)->key);
}

void posting_index_done(PostingIndex *x) {
	Posting *p;

	for (size_t i = 0; (p = ptr_table_iterate(&x->keys, &i));) {
		free(p->items);
		free(p);
	}
	ptr_table_done(&x->keys);
}

int posting_index_add(PostingIndex *x, const void *key, void *item) {
	uint32_t h = cache_hash_ptr(key);
	Posting *p = ptr_table_find(&x->keys, h, posting_eq, key);
	int r;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->key = key;
		r = ptr_table_insert(&x->keys, h, p, posting_hash);
		if (r < 0) {
			free(p);
			return r;
		}
	}
	if (p->n == p->cap) {
		/* 1.5x: a label shared by thousands of pods wastes a quarter, not half, on average. */
		uint32_t cap = p->cap < 4 ? 4 : p->cap + p->cap / 2;
		void **v = reallocarray(p->items, cap, sizeof(void *));

		if (!v) {
			if (p->n == 0) {
				ptr_table_remove(&x->keys, h, p);
				free(p);
			}
			return -ENOMEM;
		}
		p->items = v;
		p->cap = cap;
	}
	p->items[p->n++] = item;
	return 0;
}

bool posting_index_remove(PostingIndex *x, const void *key, const void *item) {
	uint32_t h = cache_hash_ptr(key);
	Posting *p = ptr_table_find(&x->keys, h, posting_eq, key);

	if (!p)
		return false;
	for (uint32_t i = p->n; i > 0; i--)
		if (p->items[i - 1] == item) {
			p->items[i - 1] = p->items[--p->n];
			if (p->n == 0) {
				ptr_table_remove(&x->keys, h, p);
				free(p->items);
				free(p);
			} else if (p->cap > 16 && p->n < p->cap / 4) {
				void **v = reallocarray(p->items, p->cap / 2, sizeof(void *));
				if (v) {
					p->items = v;
					p->cap /= 2;
				}
			}
			return true;
		}
	return false;
}

void *const *posting_index_get(const PostingIndex *x, const void *key, size_t *ret_n) {
	Posting *p = ptr_table_find(&x->keys, cache_hash_ptr(key), posting_eq, key);

	*ret_n = p ? p->n : 0;
	return p ? p->items : NULL;
}
