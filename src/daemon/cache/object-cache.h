/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The watched object cache: what client-go's informers are, one implementation for every kind.
 *
 * For each kind added, the cache LISTs through the kind's source, then WATCHes from the list's
 * resourceVersion (bookmarks advance it). A watch the source ends normally (timeoutSeconds) is
 * resumed from the last resourceVersion; 410 Gone (-ESTALE, or an ERROR event whose Status has code
 * 410) means LIST again, and the new list is diffed against what the cache holds: adds, updates
 * (old + new) and deletes for what vanished — so a dropped watch loses nothing. Other errors wait a
 * capped exponential backoff with jitter, then watch again from the last resourceVersion (or list,
 * if the kind never synced or a list is what failed). An object that cannot be decoded for lack of
 * memory ends the watch the same way, and the retry lists.
 *
 * Everything runs on the caller's one thread, in the source's callbacks (which the source runs
 * from the caller's loop) and in object_cache_dispatch(), which the caller runs when the cache's
 * one fd (a timerfd for backoff deadlines) is readable — object_cache_attach() hooks it into an
 * EventLoop. Delta callbacks are never called from another thread, and never from inside a cache
 * API call other than object_cache_dispatch() (start() and relist() only start requests).
 *
 * Deltas, per kind:
 *   added(new)          an object appeared (also: every object of the first list)
 *   updated(old, new)   the compact object changed; status churn of fields the cache does not keep
 *                       (heartbeats, conditions, resourceVersion) fires nothing
 *   deleted(old)        gone (a refused new version is no delete: see rejected)
 *   synced(kind)        after the first list has been delivered; object_cache_synced() from then on
 * and once for the cache: all_synced, when every added kind is synced. Consumers act (prune,
 * program) only after synced; before it the cache holds a partial view.
 *
 * During a callback the cache already reflects the delta (a deleted object is out of every index;
 * an updated one is indexed as new), so handlers may look things up. `old`/deleted objects are
 * freed when the callback returns. Handlers must not free the cache.
 *
 * On a relist, deletes come first, then adds/updates in the list's order (an IP or name that moved
 * from a deleted object to a new one is free again by the time the new one is announced).
 *
 * Refused objects (kube-objects.h validation, or the source's own refusals: an etcd value that is
 * no JSON object, a key that names no object) are reported through `rejected` with the reason and
 * counted. A NEW object that never decoded is simply not cached. A refused new version of a cached
 * object fails closed: the last version that decoded stays in force ("held"), with no delta, until
 * a version that decodes (updated, or nothing if it equals the held one) or a real delete (a
 * DELETED event, or the key absent from a relist) arrives. Dropping it instead would let anyone
 * who can write a bad value delete a default-deny policy, a namespace's labels or a pod's. A held
 * object is reported once per reason (a relist that finds the same refused value again is silent),
 * counted in stats.held, and object_cache_held_reason() says why.
 *
 * Indexes: namespace/name (hash), namespace, label ("app=web": by interned label set, so the pods
 * of one ReplicaSet cost one entry each and a selector is evaluated once per set), pod IP
 * (status.podIPs of non-hostNetwork pods; several pods may share one, e.g. a completed pod and its
 * successor), and a per-kind secondary key: the node of a Pod, the Service of an EndpointSlice.
 * A realistic 10k-pod cache takes ~293 bytes per pod, indexes included (test-object-cache).
 *
 * Wiring (weftd): one ObjectCache, object_cache_attach(cache, loop); object_cache_add_kind() for
 * each kind with the source that serves it — object-source-kube.h over weftd's KubeClient; an
 * etcd source would range over <prefix>/<resource>/ at a revision, watch from revision + 1 with
 * progress notifications as bookmarks, and report compaction as -ESTALE — then
 * object_cache_start(). Policy and service reconcilers register handlers and wait for all_synced
 * before their first full sync; a periodic object_cache_relist() is the level-triggered resync.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/event/event-loop.h"
#include "shared/kube/kube-objects.h"

typedef struct ObjectCache ObjectCache;

/* ---- sources ---- */

typedef struct ObjectSourceRequest ObjectSourceRequest; /* the source's own */

typedef enum ObjectEventType {
	OBJECT_EVENT_ADDED,
	OBJECT_EVENT_MODIFIED,
	OBJECT_EVENT_DELETED,
	OBJECT_EVENT_BOOKMARK, /* object carries only metadata.resourceVersion */
	OBJECT_EVENT_ERROR,    /* object is a metav1.Status; code 410 = resourceVersion too old */
	/* The source itself refused what it read (an etcd value that is no object, a key that names
	 * none): object is an ObjectSourceRefusal (object_source_refusal_new()). Only a source
	 * produces it, so no object's content can pose as one. */
	OBJECT_EVENT_REFUSED,
	_OBJECT_EVENT_MAX,
} ObjectEventType;

/* "ADDED" ... "ERROR" -> type; -EINVAL for anything else (a newer server's types are ignored). */
int object_event_type_from_string(const char *s, ObjectEventType *ret);

/*
 * A source-side refusal, as JSON: {"metadata": {"namespace", "name", "resourceVersion"}, "reason"}
 * (namespace/name absent when the source could not tell whose it is). The reason names where the
 * value came from ("etcd key /weft/objects/services/a/b: value is not a Kubernetes object"). New
 * reference; NULL on OOM.
 */
json_t *object_source_refusal_new(const char *ns, const char *name, const char *resource_version, const char *reason);

/* List done: error < 0, or 0 with items (a JSON array of objects, borrowed), the source's own
 * refusals (an array of object_source_refusal_new() entries, borrowed; NULL = none) and the list's
 * resourceVersion. */
typedef void (*ObjectSourceListFn)(int error, const json_t *items, const json_t *refused, const char *resource_version,
				   void *userdata);
/* One watch event; object borrowed (its metadata.resourceVersion advances the cache's). */
typedef void (*ObjectSourceEventFn)(ObjectEventType type, const json_t *object, void *userdata);
/* The watch ended: 0 = normally (resume from the last resourceVersion), -ESTALE = 410 Gone,
 * other < 0 = failed. */
typedef void (*ObjectSourceDoneFn)(int error, void *userdata);

/*
 * What a source implements. Callbacks come later, from the event loop — never from inside list()
 * or watch() — and stop after done/list-done, or after cancel(), which must be safe to call from
 * inside the source's own callbacks. In return the cache never calls list() or watch() from inside
 * on_event (an ERROR event or a handler's relist restarts from the cache's own fd), only from
 * list-done/done or from object_cache_dispatch()/start().
 */
typedef struct ObjectSourceOps {
	const char *name;
	int (*list)(void *source, KubeKind kind, ObjectSourceListFn done, void *userdata, ObjectSourceRequest **ret);
	int (*watch)(void *source, KubeKind kind, const char *resource_version, ObjectSourceEventFn on_event,
		     ObjectSourceDoneFn done, void *userdata, ObjectSourceRequest **ret);
	void (*cancel)(void *source, ObjectSourceRequest *req);
} ObjectSourceOps;

/* ---- consumers ---- */

typedef struct ObjectCacheHandlers {
	void (*added)(ObjectCache *c, const KubeObject *o, void *userdata);
	void (*updated)(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata);
	void (*deleted)(ObjectCache *c, const KubeObject *old, void *userdata);
	void (*synced)(ObjectCache *c, KubeKind kind, void *userdata);
	/* An object refused at the boundary: log once and count (namespace/name may be NULL when even
	 * those could not be read). */
	void (*rejected)(ObjectCache *c, KubeKind kind, const char *ns, const char *name, const char *reason,
			 void *userdata);
	/* A list or watch failed (error < 0) and the cache is backing off; for logs and health. */
	void (*failed)(ObjectCache *c, KubeKind kind, int error, bool listing, void *userdata);
} ObjectCacheHandlers;

typedef struct ObjectCacheOptions {
	unsigned backoff_min_ms; /* default 100 */
	unsigned backoff_max_ms; /* default 30000 */
} ObjectCacheOptions;

typedef struct ObjectCacheStats {
	size_t objects;
	uint64_t lists;    /* LISTs completed (1 = only the first) */
	uint64_t watches;  /* WATCHes started */
	uint64_t stale;    /* 410 Gone seen */
	uint64_t failures; /* list/watch failures (each one backed off) */
	uint64_t rejected; /* objects refused */
	size_t held;       /* cached objects whose newest version was refused: the last good one is in force */
	uint64_t added, updated, deleted, unchanged; /* deltas fired; unchanged = no-op updates dropped */
} ObjectCacheStats;

/* opts may be NULL. 0, -ENOMEM or -errno (timerfd). */
int object_cache_new(const ObjectCacheOptions *opts, ObjectCache **ret);
/* Cancels every request; frees every object. NULL-safe; returns NULL. */
ObjectCache *object_cache_free(ObjectCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(ObjectCache *, object_cache_free);

/* Caches `kind` from `source` (not owned). handlers may be NULL (the cache then only indexes).
 * Before object_cache_start(); -EEXIST if the kind was added already. */
int object_cache_add_kind(ObjectCache *c, KubeKind kind, const ObjectSourceOps *ops, void *source,
			  const ObjectCacheHandlers *handlers, void *userdata);
void object_cache_set_all_synced(ObjectCache *c, void (*fn)(ObjectCache *c, void *userdata), void *userdata);
/* The cache's pollable fd (EPOLLIN when a backoff is over) and its handler, which never blocks. */
int object_cache_get_fd(const ObjectCache *c);
int object_cache_dispatch(ObjectCache *c);
/* CLOCK_MONOTONIC usec of the earliest retry (0 = none), for callers that poll with a timeout. */
uint64_t object_cache_next_retry_usec(const ObjectCache *c);
/* Watches the fd on `loop` and dispatches from there (freed with the cache). 0, -EBUSY or -errno. */
int object_cache_attach(ObjectCache *c, EventLoop *loop);
/* Starts listing every kind. 0, or the first error of a source's list() (that kind backs off). */
int object_cache_start(ObjectCache *c);
/* Lists `kind` again (periodic resync; a consumer that suspects drift): the running request ends
 * now, the list starts from the next object_cache_dispatch(), and is diffed as after a 410. Safe
 * from delta handlers. 0, -ENOENT if the kind is not cached. */
int object_cache_relist(ObjectCache *c, KubeKind kind);

bool object_cache_synced(const ObjectCache *c, KubeKind kind);
bool object_cache_all_synced(const ObjectCache *c);
/* The resourceVersion the next watch starts from ("" before the first list). */
const char *object_cache_resource_version(const ObjectCache *c, KubeKind kind);
ObjectCacheStats object_cache_stats(const ObjectCache *c, KubeKind kind);
StringPool *object_cache_pool(ObjectCache *c);
/* Backoff before retry number `failures` (1 = first): min * 2^(failures-1) capped at max, then
 * "equal jitter": uniformly in [d/2, d] from `rnd`. Exposed for tests. */
unsigned object_cache_backoff_ms(unsigned failures, unsigned min_ms, unsigned max_ms, uint32_t rnd);

/* ---- lookups (valid until the cache next changes; from handlers too) ---- */

/* The cached objects of `kind` (in `ns`, NULL = all) as a Kubernetes List document sorted by
 * namespace/name, each item as kube_object_to_json() prints it: weftd's /debug dump and
 * `weft get`. A held item (see above) carries "weftHeld": {"lastGoodVersion": true, "reason"}
 * beside its fields. NULL on OOM or if the kind is not cached. */
json_t *object_cache_dump(const ObjectCache *c, KubeKind kind, const char *ns);

/* Why a cached object is held at its last good version (the reason its newest version was
 * refused), or NULL if it is the newest. */
const char *object_cache_held_reason(const ObjectCache *c, const KubeObject *o);
/* Visits the held objects of `kind` with their reasons. */
typedef int (*ObjectCacheHeldFn)(const KubeObject *o, const char *reason, void *userdata);
int object_cache_foreach_held(const ObjectCache *c, KubeKind kind, ObjectCacheHeldFn fn, void *userdata);

/* ns NULL for cluster-scoped kinds. */
const KubeObject *object_cache_get(const ObjectCache *c, KubeKind kind, const char *ns, const char *name);

/* Visitors return 0 to go on, anything else to stop (that value is returned). */
typedef int (*ObjectCacheVisitFn)(const KubeObject *o, void *userdata);

int object_cache_foreach(const ObjectCache *c, KubeKind kind, ObjectCacheVisitFn fn, void *userdata);
/* The objects a walk visited, borrowed from the cache (valid until its next delta): the visitor
 * object_vec_append() grows v; oom says an append failed (-ENOMEM stopped the walk). The caller
 * frees v. */
typedef struct ObjectVec {
	const KubeObject **v;
	size_t n, cap;
	bool oom;
} ObjectVec;
int object_vec_append(const KubeObject *o, void *userdata);
int object_cache_foreach_in_namespace(const ObjectCache *c, KubeKind kind, const char *ns, ObjectCacheVisitFn fn,
				      void *userdata);
/* Objects with label key=value. */
int object_cache_foreach_with_label(const ObjectCache *c, KubeKind kind, const char *key, const char *value,
				    ObjectCacheVisitFn fn, void *userdata);
/*
 * Objects of `kind` in `ns` (NULL = every namespace) that `sel` selects (NULL selects nothing).
 * Uses the label index when the selector has an equality requirement (matchLabels), walking the
 * smallest posting list; otherwise the namespace's objects.
 */
int object_cache_select(const ObjectCache *c, KubeKind kind, const char *ns, const LabelSelector *sel,
			ObjectCacheVisitFn fn, void *userdata);
/* Pods holding `ip` in status.podIPs (hostNetwork pods are not indexed). */
int object_cache_foreach_pod_by_ip(const ObjectCache *c, const IpAddr *ip, ObjectCacheVisitFn fn, void *userdata);
/* The pod that owns `ip` now: a Pending/Running one over a Succeeded/Failed one; NULL if none. */
const KubePod *object_cache_pod_by_ip(const ObjectCache *c, const IpAddr *ip);
/* Pods with spec.nodeName == node ("this node's pods"). */
int object_cache_foreach_pod_on_node(const ObjectCache *c, const char *node, ObjectCacheVisitFn fn, void *userdata);
/* EndpointSlices of Service ns/name (label kubernetes.io/service-name). */
int object_cache_foreach_slice_of_service(const ObjectCache *c, const char *ns, const char *service,
					  ObjectCacheVisitFn fn, void *userdata);
