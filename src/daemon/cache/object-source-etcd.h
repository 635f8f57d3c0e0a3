/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The object cache's source for etcd: cluster objects stored in their Kubernetes JSON shape under
 * <prefix>/objects/<resource>/[<namespace>/]<name> (the contract `weft apply` writes against; see
 * README "Cluster objects in etcd"), over an EtcdClient the caller dispatches:
 *
 *   LIST   range <prefix>/objects/<resource>/ in pages of 500, every page after the first pinned
 *          to the first page's header revision (one snapshot); the list's resourceVersion is that
 *          revision
 *   WATCH  /v3/watch from start_revision = rv + 1 with progress notifications, which become
 *          bookmarks (resourceVersion = the response header's revision)
 *
 * Every object gets metadata.resourceVersion = its kv's mod_revision, and metadata.namespace/name
 * from the key when the value has none. A value that is not a JSON object, or whose namespace/name
 * disagree with its key, is handed on as an object the cache refuses (so it is counted and never
 * cached; an older version under that key is dropped). A watch cancelled for compaction is -ESTALE
 * (the cache lists again); a DELETE carries namespace/name from the key.
 *
 * The client is borrowed and must outlive the source; free the cache before the source.
 */

#include "daemon/cache/object-cache.h"
#include "shared/client/etcd-client.h"

typedef struct EtcdObjectSource EtcdObjectSource;

/* prefix: weftd's --etcd-prefix ("/weft/network"). */
int etcd_object_source_new(EtcdClient *client, const char *prefix, EtcdObjectSource **ret);
EtcdObjectSource *etcd_object_source_free(EtcdObjectSource *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdObjectSource *, etcd_object_source_free);

/* The key prefix of a kind's objects: "<prefix>/objects/<resource>/". malloc'ed; NULL on OOM. */
char *etcd_object_source_kind_prefix(const char *prefix, KubeKind kind);

extern const ObjectSourceOps etcd_object_source_ops;
