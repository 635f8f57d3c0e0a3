/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The informer: per kind a small state machine (LIST -> WATCH -> ... with BACKOFF between
 * failures) over a source, and the store with its indexes. See object-cache.h for the contract.
 */
#include <assert.h>
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>

#include "basic/string-util.h"
#include "daemon/cache/object-cache.h"

#define DEFAULT_BACKOFF_MIN_MS 100u
#define DEFAULT_BACKOFF_MAX_MS 30000u
#define FLAG_SEEN 0x80 /* relist: the new list holds this object */
#define FLAG_HELD 0x40 /* its newest version was refused: in k->held */

/* A cached object kept at its last good version, and why its newest version was refused. */
typedef struct HeldObject {
	KubeObject *o;
	char *reason;
} HeldObject;

typedef enum KindState {
	KIND_IDLE,
	KIND_LISTING,
	KIND_WATCHING,
	KIND_BACKOFF,
} KindState;

typedef struct CacheKind {
	ObjectCache *cache;
	KubeKind kind;
	const ObjectSourceOps *ops;
	void *source;
	ObjectCacheHandlers handlers;
	void *userdata;

	KindState state;
	ObjectSourceRequest *req;
	uint64_t retry_at; /* BACKOFF: CLOCK_MONOTONIC usec of the next attempt */
	char *rv;
	unsigned failures;
	/* Bumped whenever a request is started: a callback that finds it changed knows a handler
	 * restarted the kind under it and stops touching the state. */
	uint64_t gen;
	bool need_list; /* the next attempt lists (410 seen, relist asked for, a list failed) */
	bool synced;
	ObjectCacheStats stats;

	PtrTable by_name;          /* KubeObject, hash o->hash */
	PostingIndex by_namespace; /* interned namespace -> objects */
	/* Labels are indexed by label set (kube-objects.h interns whole sets): the pods of one
	 * ReplicaSet share one, so a pod costs one posting entry, not one per label, and a selector is
	 * evaluated once per set. */
	PostingIndex by_label_set; /* interned set -> objects */
	PostingIndex pair_sets;    /* interned "k=v" -> the sets holding it */
	PostingIndex by_key;       /* kube_object_index_key() -> objects */
	PtrTable by_ip;            /* multi-valued: a pod once per IP; rebuilt to grow */
	/* Few (each one is a refused write): a vector searched by object. */
	HeldObject *held;
	size_t n_held;
} CacheKind;

struct ObjectCache {
	int timer_fd;    /* fires at the earliest retry_at of any kind */
	EventSource *io; /* object_cache_attach() */
	StringPool *pool;
	ObjectCacheOptions opts;
	CacheKind *kinds[_KUBE_KIND_MAX];
	void (*all_synced)(ObjectCache *c, void *userdata);
	void *all_synced_userdata;
	bool all_synced_fired;
};

static const char *const event_names[_OBJECT_EVENT_MAX] = {
	[OBJECT_EVENT_ADDED] = "ADDED",     [OBJECT_EVENT_MODIFIED] = "MODIFIED",
	[OBJECT_EVENT_DELETED] = "DELETED", [OBJECT_EVENT_BOOKMARK] = "BOOKMARK",
	[OBJECT_EVENT_ERROR] = "ERROR",     [OBJECT_EVENT_REFUSED] = NULL, /* never on the wire: a source's own */
};

int object_event_type_from_string(const char *s, ObjectEventType *ret) {
	for (unsigned i = 0; s && i < _OBJECT_EVENT_MAX; i++)
		if (event_names[i] && streq(s, event_names[i])) {
			*ret = (ObjectEventType) i;
			return 0;
		}
	return -EINVAL;
}

unsigned object_cache_backoff_ms(unsigned failures, unsigned min_ms, unsigned max_ms, uint32_t rnd) {
	uint64_t d = MAX(min_ms, 1u);

	for (unsigned i = 1; i < failures && d < max_ms; i++)
		d *= 2;
	d = MIN(d, (uint64_t) MAX(max_ms, min_ms));
	/* Equal jitter: never less than half the step (keeps backing off), spread over the other half
	 * so that nodes that lost the API server together do not come back together. */
	return (unsigned) (d / 2 + (d - d / 2) * (uint64_t) rnd / UINT32_MAX);
}

/* ---- the store ---- */

typedef struct NameKey {
	const char *ns; /* interned */
	const char *name;
} NameKey;

static bool name_eq(const void *item, const void *key) {
	const KubeObject *o = item;
	const NameKey *k = key;

	return o->namespace == k->ns && streq(o->name, k->name);
}

static uint32_t name_hash(const void *item) {
	return ((const KubeObject *) item)->hash;
}

static KubeObject *store_find(const CacheKind *k, const char *ns_interned, const char *name) {
	NameKey key = { ns_interned, name };

	return ptr_table_find(&k->by_name, cache_hash_string(name, cache_hash_ptr(ns_interned)), name_eq, &key);
}

/* Finds by strings that need not be interned: a namespace nobody uses has no objects. */
static KubeObject *store_find_str(const CacheKind *k, const char *ns, const char *name) {
	const char *nsi = NULL;

	if (ns) {
		nsi = string_pool_lookup(k->cache->pool, ns);
		if (!nsi)
			return NULL;
	}
	return store_find(k, nsi, name);
}

/* The IP index holds one entry per (object, IP): the object pointer with the IP's position in its
 * podIPs in the low bit (pods have at most two IPs; objects are malloc-aligned), so that growing
 * the table can rehash each entry by its own IP. */
static void *ip_entry(const KubeObject *o, size_t i) {
	assert(i < 2);
	return (void *) ((uintptr_t) o | i);
}

static KubeObject *ip_entry_object(const void *e) {
	return (KubeObject *) ((uintptr_t) e & ~(uintptr_t) 1);
}

static const IpAddr *ip_entry_ip(const void *e) {
	const IpAddr *ips;

	(void) kube_object_ips(ip_entry_object(e), &ips);
	return &ips[(uintptr_t) e & 1];
}

static uint32_t ip_hash(const IpAddr *a) {
	return cache_hash_bytes(a->bytes, ip_addr_size(a->family), (uint32_t) a->family);
}

static bool ip_entry_eq(const void *item, const void *key) {
	return ip_addr_equal(ip_entry_ip(item), key);
}

static uint32_t ip_entry_hash(const void *item) {
	return ip_hash(ip_entry_ip(item));
}

static int labels_index(CacheKind *k, KubeObject *o) {
	size_t n, i = 0;
	int r = 0;

	if (!o->labels)
		return 0;
	(void) posting_index_get(&k->by_label_set, o->labels, &n);
	for (; n == 0 && i < o->n_labels; i++)
		if ((r = posting_index_add(&k->pair_sets, o->labels[i], (void *) o->labels)) < 0)
			goto fail;
	r = posting_index_add(&k->by_label_set, o->labels, o);
	if (r >= 0)
		return 0;
fail:
	while (n == 0 && i > 0)
		posting_index_remove(&k->pair_sets, o->labels[--i], o->labels);
	return r;
}

static void labels_unindex(CacheKind *k, KubeObject *o) {
	size_t n;

	if (!o->labels)
		return;
	posting_index_remove(&k->by_label_set, o->labels, o);
	(void) posting_index_get(&k->by_label_set, o->labels, &n);
	for (size_t i = 0; n == 0 && i < o->n_labels; i++)
		posting_index_remove(&k->pair_sets, o->labels[i], o->labels);
}

static void store_unindex(CacheKind *k, KubeObject *o) {
	const IpAddr *ips;
	size_t n = kube_object_ips(o, &ips);
	const char *key = kube_object_index_key(o);

	ptr_table_remove(&k->by_name, o->hash, o);
	if (o->namespace)
		posting_index_remove(&k->by_namespace, o->namespace, o);
	labels_unindex(k, o);
	if (key)
		posting_index_remove(&k->by_key, key, o);
	for (size_t i = 0; i < n; i++)
		ptr_table_remove(&k->by_ip, ip_hash(&ips[i]), ip_entry(o, i));
	k->stats.objects--;
}

/* All or nothing: on failure every index is as before. */
static int store_index(CacheKind *k, KubeObject *o) {
	const IpAddr *ips;
	size_t n = kube_object_ips(o, &ips), n_ips = 0;
	const char *key = kube_object_index_key(o);
	int r;

	r = ptr_table_insert(&k->by_name, o->hash, o, name_hash);
	if (r < 0)
		return r;
	k->stats.objects++;
	if (o->namespace && (r = posting_index_add(&k->by_namespace, o->namespace, o)) < 0)
		goto fail_ns;
	if ((r = labels_index(k, o)) < 0)
		goto fail_labels;
	if (key && (r = posting_index_add(&k->by_key, key, o)) < 0)
		goto fail_key;
	for (; n_ips < n; n_ips++)
		if ((r = ptr_table_insert(&k->by_ip, ip_hash(&ips[n_ips]), ip_entry(o, n_ips), ip_entry_hash)) < 0)
			goto fail_ips;
	return 0;
fail_ips:
	while (n_ips > 0) {
		n_ips--;
		ptr_table_remove(&k->by_ip, ip_hash(&ips[n_ips]), ip_entry(o, n_ips));
	}
	if (key)
		posting_index_remove(&k->by_key, key, o);
fail_key:
	labels_unindex(k, o);
fail_labels:
	if (o->namespace)
		posting_index_remove(&k->by_namespace, o->namespace, o);
fail_ns:
	ptr_table_remove(&k->by_name, o->hash, o);
	k->stats.objects--;
	return r;
}

static HeldObject *held_find(const CacheKind *k, const KubeObject *o) {
	if (!(o->flags & FLAG_HELD))
		return NULL;
	for (size_t i = 0; i < k->n_held; i++)
		if (k->held[i].o == o)
			return &k->held[i];
	return NULL;
}

/* o is current again (a version that decodes arrived) or leaves the cache. */
static void held_drop(CacheKind *k, KubeObject *o) {
	HeldObject *h = held_find(k, o);

	o->flags &= (uint8_t) ~FLAG_HELD;
	if (!h)
		return;
	free(h->reason);
	*h = k->held[--k->n_held];
	k->stats.held = k->n_held;
}

/*
 * Keeps o in force although its newest version was refused. Returns true if that is news (o was
 * not held, or for another reason): the refusal is reported then, not again on every relist that
 * finds the same value.
 */
static bool held_set(CacheKind *k, KubeObject *o, const char *reason) {
	HeldObject *h = held_find(k, o), *v;
	char *copy;

	if (h && streq(h->reason, reason ?: ""))
		return false;
	copy = strdup(reason ?: "");
	if (!copy)
		return true; /* report it; it is held all the same (only the reason is lost) */
	if (h) {
		free(h->reason);
		h->reason = copy;
		return true;
	}
	v = reallocarray(k->held, k->n_held + 1, sizeof(HeldObject));
	if (!v) {
		free(copy);
		return true;
	}
	k->held = v;
	k->held[k->n_held++] = (HeldObject) { .o = o, .reason = copy };
	k->stats.held = k->n_held;
	o->flags |= FLAG_HELD;
	return true;
}

static void store_clear(CacheKind *k) {
	KubeObject *o;

	for (size_t i = 0; i < k->n_held; i++)
		free(k->held[i].reason);
	k->held = mfree(k->held);
	k->n_held = 0;
	k->stats.held = 0;

	for (size_t i = 0; (o = ptr_table_iterate(&k->by_name, &i));)
		kube_object_free(o, k->cache->pool);
	ptr_table_done(&k->by_name);
	ptr_table_done(&k->by_ip);
	posting_index_done(&k->by_namespace);
	posting_index_done(&k->by_label_set);
	posting_index_done(&k->pair_sets);
	posting_index_done(&k->by_key);
	k->stats.objects = 0;
}

/* ---- deltas ---- */

static void emit_added(CacheKind *k, KubeObject *o) {
	k->stats.added++;
	if (k->handlers.added)
		k->handlers.added(k->cache, o, k->userdata);
}

static void emit_deleted(CacheKind *k, KubeObject *o) {
	held_drop(k, o);
	store_unindex(k, o);
	k->stats.deleted++;
	if (k->handlers.deleted)
		k->handlers.deleted(k->cache, o, k->userdata);
	kube_object_free(o, k->cache->pool);
}

static void emit_rejected(CacheKind *k, const json_t *j, const char *reason) {
	const char *ns = NULL, *name = NULL;

	(void) kube_object_json_key(j, &ns, &name);
	if (!ns && !name && k->handlers.rejected) {
		/* kube_object_json_key() wants a name: a source refusal may have only one of them */
		const json_t *md = json_object_get(j, "metadata");

		ns = json_string_value(json_object_get(md, "namespace"));
		name = json_string_value(json_object_get(md, "name"));
	}
	k->stats.rejected++;
	if (k->handlers.rejected)
		k->handlers.rejected(k->cache, k->kind, ns, name, reason, k->userdata);
}

/* Puts `o` (owned) in place of whatever has its name, firing the right delta. */
static int store_upsert(CacheKind *k, KubeObject *o) {
	KubeObject *old = store_find(k, o->namespace, o->name);
	int r;

	/* A version that decodes: whatever it is, the held one is no longer in force for a reason. */
	if (old)
		held_drop(k, old);
	if (old && kube_object_equal(old, o)) {
		kube_object_take_version(old, o);
		old->flags &= (uint8_t) ~FLAG_SEEN;
		k->stats.unchanged++;
		kube_object_free(o, k->cache->pool);
		return 0;
	}
	if (old)
		store_unindex(k, old);
	r = store_index(k, o);
	if (r < 0) {
		/* Out of memory: keep the old version (a relist will repair); if even that cannot be put
		 * back, it is gone for consumers too. */
		kube_object_free(o, k->cache->pool);
		if (old && store_index(k, old) < 0) {
			k->stats.objects++; /* emit_deleted() unindexes (again: a no-op) and counts it out */
			emit_deleted(k, old);
		}
		return r;
	}
	if (old) {
		k->stats.updated++;
		if (k->handlers.updated)
			k->handlers.updated(k->cache, old, o, k->userdata);
		kube_object_free(old, k->cache->pool);
	} else
		emit_added(k, o);
	return 0;
}

/* ---- the state machine ---- */

static void kind_list(CacheKind *k);
static void kind_watch(CacheKind *k);

static void timer_update(ObjectCache *c) {
	uint64_t next = object_cache_next_retry_usec(c);
	struct itimerspec its = {};

	if (next) {
		its.it_value.tv_sec = (time_t) (next / USEC_PER_SEC);
		its.it_value.tv_nsec = (long) (next % USEC_PER_SEC * 1000);
	}
	(void) timerfd_settime(c->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void check_all_synced(ObjectCache *c) {
	if (c->all_synced_fired || !object_cache_all_synced(c))
		return;
	c->all_synced_fired = true;
	if (c->all_synced)
		c->all_synced(c, c->all_synced_userdata);
}

static void kind_failed(CacheKind *k, int error, bool listing) {
	uint32_t rnd = 0;
	uint64_t gen = k->gen;
	unsigned ms;

	k->req = NULL;
	k->failures++;
	k->stats.failures++;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t) random();
	ms = object_cache_backoff_ms(k->failures, k->cache->opts.backoff_min_ms, k->cache->opts.backoff_max_ms, rnd);
	k->state = KIND_BACKOFF;
	if (k->handlers.failed)
		k->handlers.failed(k->cache, k->kind, error, listing, k->userdata);
	/* The handler may have asked for a relist already. */
	if (k->gen == gen) {
		k->retry_at = now_usec() + (uint64_t) ms * USEC_PER_MSEC;
		timer_update(k->cache);
	}
}

static void retry(CacheKind *k) {
	if (k->state != KIND_BACKOFF)
		return;
	/* Never synced, told to list, or no resourceVersion to resume from: list. */
	if (k->need_list || !k->synced || isempty(k->rv))
		kind_list(k);
	else
		kind_watch(k);
}

/*
 * Ends what is running and starts the next attempt from the cache's own fd, not from here: this
 * runs inside the source's event callback (an ERROR event, a handler's relist), where a source
 * may not start requests (curl forbids adding a transfer from inside its own callbacks).
 */
static void restart_soon(CacheKind *k, bool list) {
	if (k->req)
		k->ops->cancel(k->source, TAKE_PTR(k->req));
	k->gen++;
	k->need_list = k->need_list || list;
	k->state = KIND_BACKOFF;
	k->retry_at = now_usec();
	timer_update(k->cache);
}

int object_cache_get_fd(const ObjectCache *c) {
	return c->timer_fd;
}

uint64_t object_cache_next_retry_usec(const ObjectCache *c) {
	uint64_t next = 0;

	for (unsigned i = 0; i < _KUBE_KIND_MAX; i++)
		if (c->kinds[i] && c->kinds[i]->retry_at && (!next || c->kinds[i]->retry_at < next))
			next = c->kinds[i]->retry_at;
	return next;
}

int object_cache_dispatch(ObjectCache *c) {
	uint64_t expirations, now = now_usec();

	(void) !read(c->timer_fd, &expirations, sizeof(expirations));
	for (unsigned i = 0; i < _KUBE_KIND_MAX; i++) {
		CacheKind *k = c->kinds[i];

		if (k && k->retry_at && k->retry_at <= now) {
			k->retry_at = 0;
			retry(k);
		}
	}
	timer_update(c);
	return 0;
}

static int on_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	return object_cache_dispatch(userdata);
}

int object_cache_attach(ObjectCache *c, EventLoop *loop) {
	if (c->io)
		return -EBUSY;
	return event_loop_add_io(loop, c->timer_fd, EPOLLIN, on_io, c, &c->io);
}

static int set_rv(CacheKind *k, const char *rv) {
	char *s;

	if (isempty(rv) || streq_ptr(rv, k->rv))
		return 0;
	s = strdup(rv);
	if (!s)
		return -ENOMEM;
	free(k->rv);
	k->rv = s;
	return 0;
}

static const char *object_rv(const json_t *o) {
	const json_t *v = json_object_get(json_object_get(o, "metadata"), "resourceVersion");

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/*
 * The source's value for `j`'s key was refused (decoder or source): a cached object of that key
 * is held at its last good version; a key never cached is just refused. Returns the held object
 * (for a relist to mark as seen), or NULL.
 */
static KubeObject *refuse(CacheKind *k, const json_t *j, const char *reason) {
	const char *ns, *name;
	KubeObject *o = NULL;

	if (kube_object_json_key(j, &ns, &name) >= 0)
		o = store_find_str(k, ns, name);
	if (!o) {
		emit_rejected(k, j, reason);
		return NULL;
	}
	if (held_set(k, o, reason))
		emit_rejected(k, j, reason);
	return o;
}

static const char *refusal_reason(const json_t *refusal) {
	const char *r = json_string_value(json_object_get(refusal, "reason"));

	return r ?: "refused by the source";
}

json_t *object_source_refusal_new(const char *ns, const char *name, const char *resource_version, const char *reason) {
	json_t *md = json_object(), *o = json_object();

	if (!md || !o || (ns && json_object_set_new(md, "namespace", json_string(ns)) < 0) ||
	    (name && json_object_set_new(md, "name", json_string(name)) < 0) ||
	    (resource_version && json_object_set_new(md, "resourceVersion", json_string(resource_version)) < 0) ||
	    json_object_set_new(o, "reason", json_string(reason ?: "")) < 0 ||
	    json_object_set_new(o, "metadata", md) < 0) {
		json_decref(md);
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A list item the decoder refused, with its reason (the item is borrowed from the list). */
typedef struct ListRefusal {
	const json_t *item;
	char *reason;
} ListRefusal;

static void list_refusals_free(ListRefusal *v, size_t n) {
	for (size_t i = 0; i < n; i++)
		free(v[i].reason);
	free(v);
}

static void on_list_done(int error, const json_t *items, const json_t *refused, const char *rv, void *userdata) {
	CacheKind *k = userdata;
	KubeObject **fresh = NULL, **gone = NULL, **held = NULL, *o;
	ListRefusal *bad = NULL;
	size_t n = 0, n_gone = 0, n_bad = 0, n_held = 0, i;
	const json_t *item;
	uint64_t gen = k->gen;

	k->req = NULL;
	if (error >= 0 && (!json_is_array(items) || isempty(rv) || (refused && !json_is_array(refused))))
		error = -EBADMSG;
	if (error >= 0 && json_array_size(items) > 0 && !(fresh = calloc(json_array_size(items), sizeof(void *))))
		error = -ENOMEM;
	if (error >= 0 && json_array_size(items) + json_array_size(refused) > 0 &&
	    !(bad = calloc(json_array_size(items) + json_array_size(refused), sizeof(ListRefusal))))
		error = -ENOMEM;
	if (error >= 0 && json_array_size(items) + json_array_size(refused) > 0 &&
	    !(held = calloc(json_array_size(items) + json_array_size(refused), sizeof(void *))))
		error = -ENOMEM;
	if (error >= 0)
		error = set_rv(k, rv);
	if (error < 0) {
		free(fresh);
		free(bad);
		free(held);
		return kind_failed(k, error, true);
	}

	/* 1. Decode everything (refusals kept for 3), 2. mark what the new list still holds, 3. hold
	 * what it holds only in a refused version, or report the refusal, 4. delete the rest, 5.
	 * upsert in list order. */
	json_array_foreach(items, i, item) {
		DecodeError err = {};
		int r = kube_object_decode(k->kind, item, k->cache->pool, &fresh[n], &err);

		if (r >= 0) {
			n++;
			continue;
		}
		if (r != -ENOMEM) {
			bad[n_bad].item = item;
			bad[n_bad].reason = strdup(err.text);
			if (bad[n_bad++].reason)
				continue;
		}
		while (n > 0)
			kube_object_free(fresh[--n], k->cache->pool);
		free(fresh);
		list_refusals_free(bad, n_bad);
		free(held);
		return kind_failed(k, -ENOMEM, true);
	}
	json_array_foreach(refused, i, item)
		bad[n_bad++] = (ListRefusal) { .item = item };
	k->need_list = false; /* a handler may set it again */
	for (i = 0; i < n; i++) {
		o = store_find(k, fresh[i]->namespace, fresh[i]->name);
		if (o)
			o->flags |= FLAG_SEEN;
	}
	for (i = 0; i < n_bad; i++) {
		o = refuse(k, bad[i].item, bad[i].reason ?: refusal_reason(bad[i].item));
		if (o && !(o->flags & FLAG_SEEN)) {
			o->flags |= FLAG_SEEN;
			held[n_held++] = o;
		}
	}
	list_refusals_free(bad, n_bad);
	if (k->stats.objects > 0 && !(gone = calloc(k->stats.objects, sizeof(void *)))) {
		for (i = 0; i < n_held; i++)
			held[i]->flags &= (uint8_t) ~FLAG_SEEN;
		free(held);
		while (n > 0)
			kube_object_free(fresh[--n], k->cache->pool);
		free(fresh);
		return kind_failed(k, -ENOMEM, true);
	}
	for (size_t s = 0; (o = ptr_table_iterate(&k->by_name, &s));)
		if (!(o->flags & FLAG_SEEN))
			gone[n_gone++] = o;
	for (i = 0; i < n_held; i++)
		held[i]->flags &= (uint8_t) ~FLAG_SEEN;
	free(held);
	for (i = 0; i < n_gone; i++)
		emit_deleted(k, gone[i]);
	free(gone);
	/* Size the tables for the list at once (an error here only means they grow as they go). */
	{
		size_t ips = 0;

		for (i = 0; i < n; i++) {
			const IpAddr *v;
			ips += kube_object_ips(fresh[i], &v);
		}
		(void) ptr_table_reserve(&k->by_name, n > k->by_name.n ? n - k->by_name.n : 0, name_hash);
		(void) ptr_table_reserve(&k->by_ip, ips > k->by_ip.n ? ips - k->by_ip.n : 0, ip_entry_hash);
	}
	for (i = 0; i < n; i++) {
		o = store_find(k, fresh[i]->namespace, fresh[i]->name);
		if (o)
			o->flags &= (uint8_t) ~FLAG_SEEN;
		(void) store_upsert(k, fresh[i]);
	}
	free(fresh);

	k->stats.lists++;
	k->failures = 0;
	if (k->gen != gen) /* a handler asked for a relist: that one is running */
		return;
	if (!k->synced) {
		k->synced = true;
		if (k->handlers.synced)
			k->handlers.synced(k->cache, k->kind, k->userdata);
		check_all_synced(k->cache);
	}
	if (k->gen == gen)
		kind_watch(k);
}

static int status_code(const json_t *status) {
	const json_t *c = json_object_get(status, "code");

	return json_is_integer(c) ? (int) json_integer_value(c) : 0;
}

static void on_watch_done(int error, void *userdata);

static void on_watch_event(ObjectEventType type, const json_t *object, void *userdata) {
	CacheKind *k = userdata;
	uint64_t gen = k->gen;
	const char *ns, *name;
	KubeObject *o;
	DecodeError err = {};
	int r;

	switch (type) {
	case OBJECT_EVENT_ERROR:
		/* The watch is over: end it here rather than wait for the stream to close. 410: the
		 * resourceVersion is compacted away, list again (at once, it is no failure). */
		if (status_code(object) == 410) {
			k->stats.stale++;
			restart_soon(k, true);
		} else {
			k->ops->cancel(k->source, TAKE_PTR(k->req));
			k->gen++;
			kind_failed(k, -EIO, false);
		}
		return;
	case OBJECT_EVENT_ADDED:
	case OBJECT_EVENT_MODIFIED:
		r = kube_object_decode(k->kind, object, k->cache->pool, &o, &err);
		if (r == -ENOMEM) {
			/* Not a reason to refuse the object: list again once memory allows. */
			k->ops->cancel(k->source, TAKE_PTR(k->req));
			k->gen++;
			k->need_list = true;
			kind_failed(k, r, false);
			return;
		}
		if (r < 0) {
			(void) refuse(k, object, err.text);
			break;
		}
		(void) store_upsert(k, o);
		break;
	case OBJECT_EVENT_REFUSED: (void) refuse(k, object, refusal_reason(object)); break;
	case OBJECT_EVENT_DELETED:
		if (kube_object_json_key(object, &ns, &name) >= 0 && (o = store_find_str(k, ns, name)))
			emit_deleted(k, o);
		break;
	case OBJECT_EVENT_BOOKMARK:
	default: break;
	}
	/* Unless a handler restarted us, the event's resourceVersion is where we are now. */
	if (k->gen == gen) {
		(void) set_rv(k, object_rv(object));
		k->failures = 0;
	}
}

static void on_watch_done(int error, void *userdata) {
	CacheKind *k = userdata;

	k->req = NULL;
	if (error == 0)
		return kind_watch(k);
	if (error == -ESTALE) {
		k->stats.stale++;
		return kind_list(k);
	}
	kind_failed(k, error, false);
}

static void kind_cancel(CacheKind *k) {
	if (k->req)
		k->ops->cancel(k->source, TAKE_PTR(k->req));
	if (k->retry_at) {
		k->retry_at = 0;
		timer_update(k->cache);
	}
}

static void kind_list(CacheKind *k) {
	int r;

	kind_cancel(k);
	k->gen++;
	k->need_list = true;
	k->state = KIND_LISTING;
	r = k->ops->list(k->source, k->kind, on_list_done, k, &k->req);
	if (r < 0)
		kind_failed(k, r, true);
}

static void kind_watch(CacheKind *k) {
	int r;

	kind_cancel(k);
	k->gen++;
	k->state = KIND_WATCHING;
	k->stats.watches++;
	r = k->ops->watch(k->source, k->kind, k->rv, on_watch_event, on_watch_done, k, &k->req);
	if (r < 0)
		kind_failed(k, r, false);
}

/* ---- lifecycle ---- */

int object_cache_new(const ObjectCacheOptions *opts, ObjectCache **ret) {
	ObjectCache *c;
	int r;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->timer_fd < 0) {
		r = negative_errno();
		free(c);
		return r;
	}
	c->opts = opts ? *opts : (ObjectCacheOptions) {};
	if (c->opts.backoff_min_ms == 0)
		c->opts.backoff_min_ms = DEFAULT_BACKOFF_MIN_MS;
	if (c->opts.backoff_max_ms == 0)
		c->opts.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
	r = string_pool_new(&c->pool);
	if (r < 0) {
		safe_close(c->timer_fd);
		free(c);
		return r;
	}
	*ret = c;
	return 0;
}

ObjectCache *object_cache_free(ObjectCache *c) {
	if (!c)
		return NULL;
	for (unsigned i = 0; i < _KUBE_KIND_MAX; i++) {
		CacheKind *k = c->kinds[i];

		if (!k)
			continue;
		if (k->req)
			k->ops->cancel(k->source, TAKE_PTR(k->req));
		store_clear(k);
		free(k->rv);
		free(k);
	}
	string_pool_free(c->pool);
	event_source_free(c->io);
	safe_close(c->timer_fd);
	free(c);
	return NULL;
}

int object_cache_add_kind(ObjectCache *c, KubeKind kind, const ObjectSourceOps *ops, void *source,
			  const ObjectCacheHandlers *handlers, void *userdata) {
	CacheKind *k;

	if (!c || (unsigned) kind >= _KUBE_KIND_MAX || !ops || !ops->list || !ops->watch || !ops->cancel)
		return -EINVAL;
	if (c->kinds[kind])
		return -EEXIST;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = (CacheKind) {
		.cache = c,
		.kind = kind,
		.ops = ops,
		.source = source,
		.handlers = handlers ? *handlers : (ObjectCacheHandlers) {},
		.userdata = userdata,
	};
	c->kinds[kind] = k;
	c->all_synced_fired = false;
	return 0;
}

void object_cache_set_all_synced(ObjectCache *c, void (*fn)(ObjectCache *c, void *userdata), void *userdata) {
	c->all_synced = fn;
	c->all_synced_userdata = userdata;
}

int object_cache_start(ObjectCache *c) {
	int r = 0;

	for (unsigned i = 0; i < _KUBE_KIND_MAX; i++) {
		CacheKind *k = c->kinds[i];

		if (!k || k->state != KIND_IDLE)
			continue;
		kind_list(k);
		if (k->state == KIND_BACKOFF && r == 0)
			r = -EIO;
	}
	return r;
}

int object_cache_relist(ObjectCache *c, KubeKind kind) {
	if ((unsigned) kind >= _KUBE_KIND_MAX || !c->kinds[kind])
		return -ENOENT;
	restart_soon(c->kinds[kind], true);
	return 0;
}

/* ---- queries ---- */

static const CacheKind *get_kind(const ObjectCache *c, KubeKind kind) {
	return c && (unsigned) kind < _KUBE_KIND_MAX ? c->kinds[kind] : NULL;
}

bool object_cache_synced(const ObjectCache *c, KubeKind kind) {
	const CacheKind *k = get_kind(c, kind);

	return k && k->synced;
}

bool object_cache_all_synced(const ObjectCache *c) {
	bool any = false;

	for (unsigned i = 0; i < _KUBE_KIND_MAX; i++) {
		if (!c->kinds[i])
			continue;
		if (!c->kinds[i]->synced)
			return false;
		any = true;
	}
	return any;
}

const char *object_cache_resource_version(const ObjectCache *c, KubeKind kind) {
	const CacheKind *k = get_kind(c, kind);

	return k && k->rv ? k->rv : "";
}

ObjectCacheStats object_cache_stats(const ObjectCache *c, KubeKind kind) {
	const CacheKind *k = get_kind(c, kind);

	return k ? k->stats : (ObjectCacheStats) {};
}

StringPool *object_cache_pool(ObjectCache *c) {
	return c->pool;
}

const char *object_cache_held_reason(const ObjectCache *c, const KubeObject *o) {
	const CacheKind *k = o ? get_kind(c, (KubeKind) o->kind) : NULL;
	const HeldObject *h = k ? held_find(k, o) : NULL;

	return h ? h->reason : NULL;
}

int object_cache_foreach_held(const ObjectCache *c, KubeKind kind, ObjectCacheHeldFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, kind);
	int r;

	for (size_t i = 0; k && i < k->n_held; i++)
		if ((r = fn(k->held[i].o, k->held[i].reason, userdata)) != 0)
			return r;
	return 0;
}

const KubeObject *object_cache_get(const ObjectCache *c, KubeKind kind, const char *ns, const char *name) {
	const CacheKind *k = get_kind(c, kind);

	return k && name ? store_find_str(k, ns, name) : NULL;
}

int object_vec_append(const KubeObject *o, void *userdata) {
	ObjectVec *c = userdata;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		const KubeObject **v = reallocarray(c->v, cap, sizeof(*v));

		if (!v) {
			c->oom = true;
			return -ENOMEM;
		}
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = o;
	return 0;
}

int object_cache_foreach(const ObjectCache *c, KubeKind kind, ObjectCacheVisitFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, kind);
	KubeObject *o;
	int r;

	for (size_t i = 0; k && (o = ptr_table_iterate(&k->by_name, &i));)
		if ((r = fn(o, userdata)) != 0)
			return r;
	return 0;
}

static int visit_posting(const PostingIndex *x, const void *key, const char *ns, const LabelSelector *sel,
			 ObjectCacheVisitFn fn, void *userdata) {
	size_t n;
	void *const *v = key ? posting_index_get(x, key, &n) : NULL;
	int r;

	for (size_t i = 0; v && i < n; i++) {
		const KubeObject *o = v[i];
		LabelSet ls = kube_object_labels(o);

		if (ns && o->namespace != ns)
			continue;
		if (sel && !label_selector_matches(sel, &ls))
			continue;
		if ((r = fn(o, userdata)) != 0)
			return r;
	}
	return 0;
}

int object_cache_foreach_in_namespace(const ObjectCache *c, KubeKind kind, const char *ns, ObjectCacheVisitFn fn,
				      void *userdata) {
	const CacheKind *k = get_kind(c, kind);

	if (!k || !ns)
		return 0;
	return visit_posting(&k->by_namespace, string_pool_lookup(c->pool, ns), NULL, NULL, fn, userdata);
}

static int object_key_cmp(const void *a, const void *b) {
	const KubeObject *x = *(const KubeObject *const *) a, *y = *(const KubeObject *const *) b;
	int c = strcmp(x->namespace ?: "", y->namespace ?: "");

	return c != 0 ? c : strcmp(x->name, y->name);
}

json_t *object_cache_dump(const ObjectCache *c, KubeKind kind, const char *ns) {
	const CacheKind *k = get_kind(c, kind);
	_cleanup_free_ KubeObject **v = NULL;
	json_t *items, *list;
	KubeObject *o;
	size_t n = 0;

	if (!k)
		return NULL;
	if (k->by_name.n > 0 && !(v = calloc(k->by_name.n, sizeof(void *))))
		return NULL;
	for (size_t i = 0; (o = ptr_table_iterate(&k->by_name, &i));)
		if (!ns || streq_ptr(o->namespace, ns))
			v[n++] = o;
	if (n > 1)
		qsort(v, n, sizeof(void *), object_key_cmp);
	items = json_array();
	for (size_t i = 0; items && i < n; i++) {
		json_t *item = kube_object_to_json(v[i]);
		const HeldObject *h = held_find(k, v[i]);

		/* Not a field of the object: a held one says so beside it, for /debug/objects. */
		if (item && h &&
		    json_object_set_new(item, "weftHeld",
					json_pack("{s:b, s:s}", "lastGoodVersion", true, "reason", h->reason)) < 0)
			item = (json_decref(item), NULL);
		if (json_array_append_new(items, item) < 0) {
			json_decref(items);
			return NULL;
		}
	}
	list = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", "v1", "kind", "List", "metadata", "resourceVersion",
			 k->rv ?: "", "items", items);
	return list;
}

/* Visits the objects of every label set under `pair` (selector evaluated once per set). */
static int visit_pair(const CacheKind *k, const char *pair, const char *ns, const LabelSelector *sel,
		      ObjectCacheVisitFn fn, void *userdata) {
	size_t n_sets;
	void *const *sets = pair ? posting_index_get(&k->pair_sets, pair, &n_sets) : NULL;
	int r;

	for (size_t i = 0; sets && i < n_sets; i++) {
		size_t n;
		void *const *objs = posting_index_get(&k->by_label_set, sets[i], &n);
		LabelSet ls;

		if (n == 0)
			continue;
		ls = kube_object_labels(objs[0]);
		if (sel && !label_selector_matches(sel, &ls))
			continue;
		if ((r = visit_posting(&k->by_label_set, sets[i], ns, NULL, fn, userdata)) != 0)
			return r;
	}
	return 0;
}

/* How many objects carry `pair`. */
static size_t pair_count(const CacheKind *k, const char *pair) {
	size_t n_sets, total = 0;
	void *const *sets = posting_index_get(&k->pair_sets, pair, &n_sets);

	for (size_t i = 0; sets && i < n_sets; i++) {
		size_t n;

		(void) posting_index_get(&k->by_label_set, sets[i], &n);
		total += n;
	}
	return total;
}

int object_cache_foreach_with_label(const ObjectCache *c, KubeKind kind, const char *key, const char *value,
				    ObjectCacheVisitFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, kind);
	_cleanup_free_ char *pair = strdup_printf("%s=%s", key, value);

	if (!k)
		return 0;
	if (!pair)
		return -ENOMEM;
	return visit_pair(k, string_pool_lookup(c->pool, pair), NULL, NULL, fn, userdata);
}

typedef struct SelectCtx {
	const LabelSelector *sel;
	ObjectCacheVisitFn fn;
	void *userdata;
} SelectCtx;

static int select_visit(const KubeObject *o, void *userdata) {
	SelectCtx *x = userdata;
	LabelSet ls = kube_object_labels(o);

	return label_selector_matches(x->sel, &ls) ? x->fn(o, x->userdata) : 0;
}

int object_cache_select(const ObjectCache *c, KubeKind kind, const char *ns, const LabelSelector *sel,
			ObjectCacheVisitFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, kind);
	const char *nsi = NULL, *best = NULL;
	size_t best_n = SIZE_MAX;

	if (!k || !sel)
		return 0;
	if (ns && !(nsi = string_pool_lookup(c->pool, ns)))
		return 0; /* no object uses that namespace */

	/* The rarest label among the equality requirements bounds the candidates. */
	for (size_t i = 0; i < sel->n; i++) {
		const LabelRequirement *r = &sel->reqs[i];
		_cleanup_free_ char *pair = NULL;
		const char *p;
		size_t n;

		if (r->op != LABEL_OP_IN || r->n_values != 1)
			continue;
		pair = strdup_printf("%s=%s", r->key, r->values[0]);
		if (!pair)
			return -ENOMEM;
		p = string_pool_lookup(c->pool, pair);
		if (!p)
			return 0; /* no object has that label */
		n = pair_count(k, p);
		if (n < best_n) {
			best = p;
			best_n = n;
		}
	}
	if (best)
		return visit_pair(k, best, nsi, sel, fn, userdata);
	if (nsi)
		return visit_posting(&k->by_namespace, nsi, NULL, sel, fn, userdata);
	return object_cache_foreach(c, kind, select_visit, &(SelectCtx) { sel, fn, userdata });
}

int object_cache_foreach_pod_by_ip(const ObjectCache *c, const IpAddr *ip, ObjectCacheVisitFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, KUBE_KIND_POD);
	size_t cursor = 0;
	void *o;
	int r;

	if (!k || !ip)
		return 0;
	while ((o = ptr_table_find_next(&k->by_ip, ip_hash(ip), ip_entry_eq, ip, &cursor)))
		if ((r = fn(ip_entry_object(o), userdata)) != 0)
			return r;
	return 0;
}

static int pick_owner(const KubeObject *o, void *userdata) {
	const KubePod **best = userdata, *p = KUBE_POD(o);
	bool live = p->phase == KUBE_POD_PENDING || p->phase == KUBE_POD_RUNNING;

	if (!*best || (live && !((*best)->phase == KUBE_POD_PENDING || (*best)->phase == KUBE_POD_RUNNING)))
		*best = p;
	return 0;
}

const KubePod *object_cache_pod_by_ip(const ObjectCache *c, const IpAddr *ip) {
	const KubePod *best = NULL;

	(void) object_cache_foreach_pod_by_ip(c, ip, pick_owner, &best);
	return best;
}

int object_cache_foreach_pod_on_node(const ObjectCache *c, const char *node, ObjectCacheVisitFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, KUBE_KIND_POD);

	if (!k || !node)
		return 0;
	return visit_posting(&k->by_key, string_pool_lookup(c->pool, node), NULL, NULL, fn, userdata);
}

int object_cache_foreach_slice_of_service(const ObjectCache *c, const char *ns, const char *service,
					  ObjectCacheVisitFn fn, void *userdata) {
	const CacheKind *k = get_kind(c, KUBE_KIND_ENDPOINT_SLICE);
	const char *nsi;

	if (!k || !ns || !service || !(nsi = string_pool_lookup(c->pool, ns)))
		return 0;
	return visit_posting(&k->by_key, string_pool_lookup(c->pool, service), nsi, NULL, fn, userdata);
}
