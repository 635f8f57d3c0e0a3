/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The object cache's source for a Kubernetes API server, over the KubeClient weftd already has
 * (one curl multi handle behind one fd; the caller keeps dispatching it as today):
 *
 *   LIST   <api_path>?limit=500[&continue=TOKEN]   pages collected into one list; every page of a
 *                                                   paginated list is the same snapshot, the first
 *                                                   page's resourceVersion is the list's
 *   WATCH  <api_path>?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=300..599
 *
 * The API paths come from kube_kind_info(). HTTP 410 maps to -ESTALE (kube-client.h), an ERROR
 * event is passed on for the cache to read its Status. Usage:
 *
 *   KubeObjectSource *src;
 *   kube_object_source_new(client, &src);
 *   object_cache_add_kind(cache, KUBE_KIND_POD, &kube_object_source_ops, src, &handlers, userdata);
 *
 * The client is borrowed and must outlive the source; free the cache (which cancels its requests)
 * before the source.
 */

#include "daemon/cache/object-cache.h"
#include "shared/client/kube-client.h"

typedef struct KubeObjectSource KubeObjectSource;

int kube_object_source_new(KubeClient *client, KubeObjectSource **ret);
KubeObjectSource *kube_object_source_free(KubeObjectSource *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeObjectSource *, kube_object_source_free);

extern const ObjectSourceOps kube_object_source_ops;
