/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The runtime's result cache, in libcni's on-disk format so attachments are interchangeable with
 * cnitool / containerd / CRI-O:
 *   <cacheDir>/results/<net>-<containerID>-<ifname>
 *   {"kind":"cniCacheV1","containerId","config"(base64 of the list bytes),"ifName","networkName",
 *    "netns","cniArgs":[[k,v]...],"capabilityArgs":{...},"result":{...}}
 * (empty cniArgs/capabilityArgs/result/netns are omitted, as Go's omitempty does).
 */

#include <jansson.h>
#include <stddef.h>

#include "basic/macro.h"

#define CNI_CACHE_DIR_DEFAULT "/var/lib/cni"
#define CNI_CACHE_KIND_V1 "cniCacheV1"

typedef struct CniCacheEntry {
	json_t *root; /* owned when read; NULL in an entry built for writing */
	/* Views: borrowed from root when read, from the caller when writing. */
	const char *network_name;
	const char *container_id;
	const char *ifname;
	const char *netns;       /* NULL if not recorded (libcni < 1.2 does not write it) */
	json_t *cni_args;        /* array of [key, value] or NULL */
	json_t *capability_args; /* object or NULL */
	json_t *result;          /* object or NULL */
	/* The network config list bytes (decoded from base64 when read). Owned when read. */
	char *config;
	size_t config_len;
} CniCacheEntry;

CniCacheEntry *cni_cache_entry_free(CniCacheEntry *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(CniCacheEntry *, cni_cache_entry_free);

/* "<dir>/results/<net>-<cid>-<ifname>", malloc'ed; NULL on OOM. */
char *cni_cache_path(const char *cache_dir, const char *net, const char *cid, const char *ifname);

/* Writes the entry crash-safely (temp file + fsync + rename), creating the directory (0700) if
 * needed; file mode 0600. 0 or -errno. */
int cni_cache_write(const char *cache_dir, const CniCacheEntry *e);

/* Reads one attachment. -ENOENT if absent, -EINVAL if unparseable. A pre-cniCacheV1 file (the
 * bare result) comes back with only ->result set. */
int cni_cache_read(const char *cache_dir, const char *net, const char *cid, const char *ifname, CniCacheEntry **ret);

/* Removes it; absent is fine. */
int cni_cache_remove(const char *cache_dir, const char *net, const char *cid, const char *ifname);

/* Every cniCacheV1 attachment of network `net` (files that do not parse are skipped, as libcni's
 * GetCachedAttachments does), in file-name order. *ret is a NULL-terminated array. */
int cni_cache_list(const char *cache_dir, const char *net, CniCacheEntry ***ret, size_t *ret_n);
void cni_cache_entries_free(CniCacheEntry **l);
