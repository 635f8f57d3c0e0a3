/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The two containers the object cache is built from, kept small because a 10k-pod cache pays
 * for every byte per entry:
 *
 *  - PtrTable: open addressing (linear probing, tombstones) over bare pointers, one pointer per
 *    slot. The caller gives each operation the hash and (for lookups) an equality test, so one
 *    table type serves namespace/name lookups and the multi-valued IP index (one object appears
 *    once per IP it holds; lookups walk every candidate on the probe path).
 *  - PostingIndex: key (an interned string pointer, compared by identity) -> unordered vector of
 *    items. Used for "objects with label k=v", "objects in namespace ns", "pods on node n".
 *    Removal scans the key's vector (swap-remove): O(items with that key), which is the price of
 *    8 bytes per entry and no per-item bookkeeping.
 *
 * Nothing here logs; allocation failures return -ENOMEM and leave the container unchanged.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hash of a byte string / string, seeded per process (so names a writer picks cannot be chosen to
 * collide on every node alike). */
uint32_t cache_hash_bytes(const void *p, size_t n, uint32_t h);
uint32_t cache_hash_string(const char *s, uint32_t h);
uint32_t cache_hash_seed(void);
uint32_t cache_hash_ptr(const void *p);

typedef struct PtrTable {
	void **slots;
	size_t mask; /* capacity - 1 (capacity a power of two), 0 when slots == NULL */
	size_t n;    /* live items */
	size_t used; /* live items + tombstones */
} PtrTable;

typedef bool (*PtrTableEqFn)(const void *item, const void *key);
/* Hash of an item already in the table, for rehashing on growth. */
typedef uint32_t (*PtrTableHashFn)(const void *item);

/* Frees the slot array (not the items). */
void ptr_table_done(PtrTable *t);
/* First item on hash's probe path for which eq(item, key) holds; NULL if none. */
void *ptr_table_find(const PtrTable *t, uint32_t hash, PtrTableEqFn eq, const void *key);
/* Multi-valued lookups: start with *cursor = 0; returns the next match or NULL. */
void *ptr_table_find_next(const PtrTable *t, uint32_t hash, PtrTableEqFn eq, const void *key, size_t *cursor);
/*
 * Adds item under hash (duplicates allowed: the caller decides). When the table must grow,
 * `rehash` gives each item's hash; with rehash == NULL the table does not grow and returns
 * -ENOSPC instead, and the caller rebuilds it (ptr_table_reset() + inserts): that is how
 * multi-valued tables, whose items have several hashes, are resized.
 */
int ptr_table_insert(PtrTable *t, uint32_t hash, void *item, PtrTableHashFn rehash);
/* Grows the table (rehashing with `rehash`) so that `extra` more items fit: a list of known size
 * is indexed without the table doubling (and leaving its outgrown arrays behind) on the way. */
int ptr_table_reserve(PtrTable *t, size_t extra, PtrTableHashFn rehash);
/* Removes one slot holding exactly `item` on hash's probe path. True if one was found. */
bool ptr_table_remove(PtrTable *t, uint32_t hash, const void *item);
/* Empties the table and sizes it for `n` items. 0 or -ENOMEM (table unchanged). */
int ptr_table_reset(PtrTable *t, size_t n);
/* Whether `extra` more inserts fit without growing. */
bool ptr_table_has_room(const PtrTable *t, size_t extra);
/* Iteration: for (size_t i = 0; (item = ptr_table_iterate(t, &i)); ) */
void *ptr_table_iterate(const PtrTable *t, size_t *i);

typedef struct Posting {
	const void *key;
	uint32_t n, cap;
	void **items;
} Posting;

typedef struct PostingIndex {
	PtrTable keys; /* of Posting */
} PostingIndex;

void posting_index_done(PostingIndex *x);
int posting_index_add(PostingIndex *x, const void *key, void *item);
/* Removes one occurrence of item under key; drops the key when its vector empties. */
bool posting_index_remove(PostingIndex *x, const void *key, const void *item);
/* The items under key (NULL and 0 if none). Valid until the index changes. */
void *const *posting_index_get(const PostingIndex *x, const void *key, size_t *ret_n);
