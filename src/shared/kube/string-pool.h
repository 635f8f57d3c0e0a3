/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Interned, reference-counted strings. The cache holds the strings that repeat across thousands of
 * objects exactly once: namespaces, node names, label pairs ("app=web" is stored as one string,
 * split at the first '='), port names. Two interned strings of one pool are equal iff their
 * pointers are, which is what the label and node indexes key on.
 */

#include <stddef.h>

#include "basic/macro.h"
#include "shared/kube/cache-table.h"

typedef struct StringPool StringPool;

int string_pool_new(StringPool **ret);
/* Every string must have been released first (the cache does); NULL-safe, returns NULL. */
StringPool *string_pool_free(StringPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(StringPool *, string_pool_free);

/* The pool's copy of s[0..n) with one more reference; NULL on OOM. */
const char *string_pool_intern_n(StringPool *p, const char *s, size_t n);
const char *string_pool_intern(StringPool *p, const char *s);
/* "key=value" as one interned pair (see label_pair_key_len()). */
const char *string_pool_intern_pair(StringPool *p, const char *key, const char *value);
/* The pool's copy if s is interned (no reference taken), else NULL: "does any object use it?" */
const char *string_pool_lookup(const StringPool *p, const char *s);
/* Another reference to an interned string (NULL-safe). */
const char *string_pool_ref(const char *s);
/* Drops a reference; the string is freed at zero. NULL-safe; returns NULL. */
const char *string_pool_unref(StringPool *p, const char *s);
/*
 * Label sets, interned whole: the pods of one ReplicaSet carry the same labels, so they share one
 * sorted array of pair pointers. Takes over the caller's references to the n pairs (on success and
 * on failure alike) and returns the pool's array with one more reference; NULL on OOM. n == 0
 * gives NULL too: check n first.
 */
const char **string_pool_intern_labels(StringPool *p, const char **pairs, size_t n);
/* Drops a reference to an interned label set (NULL-safe); returns NULL. */
const char **string_pool_unref_labels(StringPool *p, const char **labels);
/* Distinct strings held. */
size_t string_pool_size(const StringPool *p);
