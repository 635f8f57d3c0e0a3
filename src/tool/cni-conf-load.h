/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Network configuration lists, loaded from a config directory the way libcni does it
 * (libcni/conf.go LoadConfList): *.conflist files in sorted order, then *.conf / *.json single
 * plugin configs wrapped into a one-plugin list; the first whose "name" matches wins.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "shared/cni/cni-types.h"

typedef struct CniNetConfList {
	json_t *root; /* the list object (owned) */
	char *bytes;  /* the list as text: the file's bytes, or the wrapped single config */
	size_t n_bytes;
	char *path;              /* file it came from, NULL when built from bytes */
	const char *name;        /* borrowed from root */
	const char *version_str; /* "cniVersion" as written ("" when absent), injected into each plugin */
	CniVersion version;
	bool disable_check;
	bool disable_gc;
	json_t *plugins; /* borrowed: non-empty array of objects, each with a string "type" */
} CniNetConfList;

CniNetConfList *cni_conf_list_free(CniNetConfList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(CniNetConfList *, cni_conf_list_free);

/* Parses and validates a conflist. Takes ownership of `bytes` (malloc'ed, NUL-terminated) even on
 * failure. 0, or -EINVAL/-ENOMEM with err set (code CNI_ERR_DECODE / CNI_ERR_INVALID_NETCONF). */
int cni_conf_list_from_bytes(char *bytes, size_t len, CniNetConfList **ret, CniError *err);

/* Parses a single plugin config (.conf/.json) and wraps it as a one-plugin list, as libcni's
 * ConfListFromConf does. Takes ownership of `bytes`. */
int cni_conf_list_from_conf_bytes(char *bytes, size_t len, CniNetConfList **ret, CniError *err);

/*
 * Finds network `name` in `dir`. Files that cannot be read or parsed are skipped, so one broken
 * file does not take every other network down; if `name` is then not found, the error lists
 * them. A file that does carry `name` but is invalid is reported at once (it is the one meant).
 * Returns 0, -ENOENT (not found; err set, code CNI_ERR_INVALID_NETCONF) or another -errno.
 */
int cni_conf_list_load(const char *dir, const char *name, CniNetConfList **ret, CniError *err);
