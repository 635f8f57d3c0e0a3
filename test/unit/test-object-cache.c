/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object cache against an in-memory source (FakeSource below) that behaves like the API
 * server's list/watch: a global resourceVersion, a history of events that watches replay from a
 * resourceVersion, compaction (a watch from before it gets 410 Gone, as done(-ESTALE) or as an
 * ERROR event), bookmarks, dropped and normally ended watches, failing lists. Deliveries come
 * later, from the test's loop (run_until()), as the Kubernetes client's come from weftd's.
 *
 * The deltas each test sees are recorded as a string ("A shop/a U shop/b D shop/c S") and
 * compared whole; after every disturbance the cache is compared object by object with the
 * source. The last test measures the heap per pod of a 10k-pod cache.
 */
#include <malloc.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/cache/object-cache.h"

/* ---- FakeSource ---- */

typedef struct FakeEvent {
	uint64_t rv;
	ObjectEventType type;
	json_t *obj;
} FakeEvent;

struct ObjectSourceRequest {
	bool is_list;
	uint64_t from; /* watch: deliver events after this */
	ObjectSourceListFn list_done;
	ObjectSourceEventFn on_event;
	ObjectSourceDoneFn done;
	void *userdata;
};

typedef struct FakeSource {
	bool pending; /* something to deliver: run_until() pumps it */
	uint64_t rv;
	json_t *store;   /* array of objects, in creation order */
	json_t *refused; /* keys whose value the source itself refuses (object_source_refusal_new()) */
	FakeEvent *history;
	size_t n_history;
	uint64_t compacted; /* watches from before this get 410 */
	bool stale_as_error_event;
	ObjectSourceRequest *list, *watch;
	int fail_lists; /* that many lists fail ... */
	int fail_error; /* ... with this error */
	int end_watch;  /* pending: end the watch with this (1 = normally, i.e. done(0)) */
	bool bookmark;  /* pending: send a bookmark at the current rv */
	bool in_event;  /* inside on_event: the cache must not start requests from there */
	unsigned n_lists, n_watches;
} FakeSource;

static void fake_schedule(FakeSource *f) {
	f->pending = true;
}

static const char *key_of(const json_t *o, char buf[static 256]) {
	const json_t *md = json_object_get(o, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));

	snprintf(buf, 256, "%s/%s", ns ?: "", json_string_value(json_object_get(md, "name")));
	return buf;
}

static json_t *rv_json(uint64_t rv) {
	char s[32];

	snprintf(s, sizeof(s), "%llu", (unsigned long long) rv);
	return json_string(s);
}

static void record(FakeSource *f, ObjectEventType type, json_t *obj) {
	f->history = reallocarray(f->history, f->n_history + 1, sizeof(FakeEvent));
	assert_non_null(f->history);
	f->history[f->n_history++] = (FakeEvent) { f->rv, type, json_incref(obj) };
	fake_schedule(f);
}

/* Drops key from the store and the refusals without an event (a change the watch never saw). */
static bool fake_forget(FakeSource *f, const char *key) {
	char k[256];
	json_t *v;
	size_t i;

	json_array_foreach(f->store, i, v)
		if (streq(key_of(v, k), key)) {
			json_array_remove(f->store, i);
			return true;
		}
	json_array_foreach(f->refused, i, v)
		if (streq(key_of(v, k), key)) {
			json_array_remove(f->refused, i);
			return true;
		}
	return false;
}

/* The source holds a value for ns/name that it cannot read itself (an etcd value that is no
 * JSON object): a REFUSED event, and the key is among the list's refusals from now on. */
static void fake_refuse(FakeSource *f, const char *ns, const char *name, const char *reason) {
	char key[256], rv[32];
	json_t *r;

	snprintf(key, sizeof(key), "%s/%s", ns ?: "", name);
	snprintf(rv, sizeof(rv), "%llu", (unsigned long long) ++f->rv);
	(void) fake_forget(f, key);
	r = object_source_refusal_new(ns, name, rv, reason);
	assert_non_null(r);
	json_array_append(f->refused, r);
	record(f, OBJECT_EVENT_REFUSED, r);
	json_decref(r);
}

/* Creates or replaces an object (steals the reference). */
static void fake_put(FakeSource *f, json_t *obj) {
	char k1[256], k2[256];
	json_t *v;
	size_t i;

	json_array_foreach(f->refused, i, v)
		if (streq(key_of(v, k1), key_of(obj, k2))) {
			json_array_remove(f->refused, i);
			break;
		}
	json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", rv_json(++f->rv));
	json_array_foreach(f->store, i, v)
		if (streq(key_of(v, k1), key_of(obj, k2))) {
			json_array_set(f->store, i, obj);
			record(f, OBJECT_EVENT_MODIFIED, obj);
			json_decref(obj);
			return;
		}
	json_array_append(f->store, obj);
	record(f, OBJECT_EVENT_ADDED, obj);
	json_decref(obj);
}

static void fake_delete(FakeSource *f, const char *key) {
	char k[256];
	json_t *v;
	size_t i;

	json_array_foreach(f->store, i, v)
		if (streq(key_of(v, k), key)) {
			json_t *gone = json_deep_copy(v);

			json_object_set_new(json_object_get(gone, "metadata"), "resourceVersion", rv_json(++f->rv));
			json_array_remove(f->store, i);
			record(f, OBJECT_EVENT_DELETED, gone);
			json_decref(gone);
			return;
		}
	json_array_foreach(f->refused, i, v)
		if (streq(key_of(v, k), key)) {
			json_t *gone = json_pack("{s:O}", "metadata", json_object_get(v, "metadata"));

			json_object_set_new(json_object_get(gone, "metadata"), "resourceVersion", rv_json(++f->rv));
			json_array_remove(f->refused, i);
			record(f, OBJECT_EVENT_DELETED, gone);
			json_decref(gone);
			return;
		}
	fail_msg("no %s to delete", key);
}

/* Writes to other resources move the global resourceVersion without events for this kind. */
static void fake_bump(FakeSource *f, unsigned n) {
	f->rv += n;
}

static void fake_compact(FakeSource *f) {
	f->compacted = f->rv;
}

static void finish(FakeSource *f, ObjectSourceRequest **slot, int error) {
	ObjectSourceRequest *r = TAKE_PTR(*slot);

	r->done(error, r->userdata);
	free(r);
}

static void fake_pump(FakeSource *f) {
	f->pending = false;
	if (f->list) {
		ObjectSourceRequest *r = TAKE_PTR(f->list);
		json_t *items = json_incref(f->store);
		json_t *rv = rv_json(f->rv);

		f->n_lists++;
		if (f->fail_lists > 0) {
			f->fail_lists--;
			r->list_done(f->fail_error, NULL, NULL, NULL, r->userdata);
		} else
			r->list_done(0, items, json_array_size(f->refused) ? f->refused : NULL, json_string_value(rv),
				     r->userdata);
		json_decref(items);
		json_decref(rv);
		free(r);
	}
	if (f->watch && f->watch->from < f->compacted) {
		if (f->stale_as_error_event) {
			json_t *st = json_pack("{s:s, s:s, s:i, s:s}", "kind", "Status", "status", "Failure", "code",
					       410, "message", "too old resource version");
			ObjectSourceRequest *r = f->watch;

			f->in_event = true;
			r->on_event(OBJECT_EVENT_ERROR, st, r->userdata);
			f->in_event = false;
			json_decref(st);
			/* The cache must have cancelled the watch from inside the callback. */
			assert_true(f->watch != r);
		} else
			finish(f, &f->watch, -ESTALE);
	}
	for (size_t i = 0; f->watch && i < f->n_history; i++) {
		ObjectSourceRequest *r = f->watch;

		if (f->history[i].rv <= r->from)
			continue;
		r->from = f->history[i].rv;
		f->in_event = true;
		r->on_event(f->history[i].type, f->history[i].obj, r->userdata);
		f->in_event = false;
	}
	if (f->watch && f->bookmark) {
		json_t *b = json_pack("{s:{s:o}}", "metadata", "resourceVersion", rv_json(f->rv));

		f->watch->from = f->rv;
		f->in_event = true;
		f->watch->on_event(OBJECT_EVENT_BOOKMARK, b, f->watch->userdata);
		f->in_event = false;
		json_decref(b);
	}
	f->bookmark = false;
	if (f->watch && f->end_watch)
		finish(f, &f->watch, f->end_watch == 1 ? 0 : f->end_watch);
	f->end_watch = 0;
}

/* Ends the running watch now (error, or 1 = normally), before anything written after this. */
static void fake_drop(FakeSource *f, int error) {
	f->end_watch = error;
	fake_pump(f);
}

static int fake_list(void *source, KubeKind kind, ObjectSourceListFn done, void *userdata, ObjectSourceRequest **ret) {
	FakeSource *f = source;
	ObjectSourceRequest *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	assert_false(f->in_event);
	assert_null(f->list);
	assert_null(f->watch); /* one request per kind at a time */
	*r = (ObjectSourceRequest) { .is_list = true, .list_done = done, .userdata = userdata };
	f->list = r;
	fake_schedule(f);
	*ret = r;
	return 0;
}

static int fake_watch(void *source, KubeKind kind, const char *rv, ObjectSourceEventFn on_event,
		      ObjectSourceDoneFn done, void *userdata, ObjectSourceRequest **ret) {
	FakeSource *f = source;
	ObjectSourceRequest *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	assert_false(f->in_event);
	assert_null(f->list);
	assert_null(f->watch);
	*r = (ObjectSourceRequest) {
		.from = strtoull(rv, NULL, 10), .on_event = on_event, .done = done, .userdata = userdata
	};
	f->watch = r;
	f->n_watches++;
	fake_schedule(f);
	*ret = r;
	return 0;
}

static void fake_cancel(void *source, ObjectSourceRequest *req) {
	FakeSource *f = source;

	if (f->list == req)
		f->list = NULL;
	else if (f->watch == req)
		f->watch = NULL;
	else
		fail_msg("cancel of an unknown request");
	free(req);
}

static const ObjectSourceOps fake_ops = {
	.name = "fake",
	.list = fake_list,
	.watch = fake_watch,
	.cancel = fake_cancel,
};

static void fake_init(FakeSource *f) {
	*f = (FakeSource) { .store = json_array(), .refused = json_array() };
}

static void fake_done(FakeSource *f) {
	for (size_t i = 0; i < f->n_history; i++)
		json_decref(f->history[i].obj);
	free(f->history);
	json_decref(f->store);
	json_decref(f->refused);
	free(f->list);
	free(f->watch);
}

/* ---- objects ---- */

static json_t *pod(const char *ns, const char *name, const char *node, const char *ip, const char *labels_json) {
	json_t *labels = json_loads(labels_json ?: "{}", 0, NULL);
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s, s:[{s:s, s:[{s:s, s:i}]}]}, s:{s:s, s:[{s:s}]}}",
			      "apiVersion", "v1", "kind", "Pod", "metadata", "namespace", ns, "name", name, "labels",
			      labels, "spec", "nodeName", node, "containers", "name", "c", "ports", "name", "http",
			      "containerPort", 8080, "status", "phase", "Running", "podIPs", "ip", ip);
	assert_non_null(p);
	return p;
}

static json_t *ns_obj(const char *name, const char *labels_json) {
	json_t *n = json_pack("{s:s, s:{s:s, s:o}}", "kind", "Namespace", "metadata", "name", name, "labels",
			      json_loads(labels_json ?: "{}", 0, NULL));
	assert_non_null(n);
	return n;
}

/* ---- recording consumer ---- */

typedef struct Recorder {
	char log[8192];
	unsigned synced, all_synced, rejected, failed;
	char last_reject[256];
} Recorder;

static void rec(Recorder *r, const char *fmt, ...) _printf_(2, 3);
static void rec(Recorder *r, const char *fmt, ...) {
	size_t l = strlen(r->log);
	va_list ap;

	if (l > 0 && l + 1 < sizeof(r->log))
		r->log[l++] = ' ', r->log[l] = 0;
	va_start(ap, fmt);
	vsnprintf(r->log + l, sizeof(r->log) - l, fmt, ap);
	va_end(ap);
}

static const char *okey(const KubeObject *o, char buf[static 256]) {
	snprintf(buf, 256, "%s%s%s", o->namespace ?: "", o->namespace ? "/" : "", o->name);
	return buf;
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	char k[256];

	/* The cache already holds it. */
	assert_ptr_equal(object_cache_get(c, o->kind, o->namespace, o->name), o);
	rec(userdata, "A %s", okey(o, k));
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	char k[256];

	assert_ptr_equal(object_cache_get(c, o->kind, o->namespace, o->name), o);
	assert_false(kube_object_equal(old, o));
	rec(userdata, "U %s", okey(o, k));
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	char k[256];

	assert_null(object_cache_get(c, old->kind, old->namespace, old->name));
	rec(userdata, "D %s", okey(old, k));
}

static void on_synced(ObjectCache *c, KubeKind kind, void *userdata) {
	Recorder *r = userdata;

	r->synced++;
	rec(r, "S");
}

static void on_rejected(ObjectCache *c, KubeKind kind, const char *ns, const char *name, const char *reason,
			void *userdata) {
	Recorder *r = userdata;

	r->rejected++;
	snprintf(r->last_reject, sizeof(r->last_reject), "%s/%s: %s", ns ?: "", name ?: "", reason);
	rec(r, "R %s/%s", ns ?: "", name ?: "");
}

static void on_failed(ObjectCache *c, KubeKind kind, int error, bool listing, void *userdata) {
	((Recorder *) userdata)->failed++;
}

static void on_all_synced(ObjectCache *c, void *userdata) {
	((Recorder *) userdata)->all_synced++;
}

static const ObjectCacheHandlers handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
	.synced = on_synced,
	.rejected = on_rejected,
	.failed = on_failed,
};

/* ---- running the loop ---- */

typedef struct Env {
	ObjectCache *cache;
	FakeSource pods, namespaces;
	Recorder rec;
} Env;

/*
 * weftd's loop in small: deliver what the sources have pending (as the Kubernetes client would
 * from its fd), and dispatch the cache when its fd is readable. Until pred holds (true) or ms pass.
 */
static bool run_until(Env *e, bool (*pred)(void *), void *arg, unsigned ms) {
	uint64_t deadline = now_usec() + ms * USEC_PER_MSEC;

	while (!(pred && pred(arg))) {
		struct pollfd p = { .fd = object_cache_get_fd(e->cache), .events = POLLIN };

		if (now_usec() >= deadline)
			return false;
		if (e->pods.pending)
			fake_pump(&e->pods);
		else if (e->namespaces.pending)
			fake_pump(&e->namespaces);
		else if (poll(&p, 1, 1) > 0)
			assert_int_equal(object_cache_dispatch(e->cache), 0);
	}
	return true;
}

static bool pods_synced(void *arg) {
	return object_cache_synced(((Env *) arg)->cache, KUBE_KIND_POD);
}

/* The source quiet: nothing pending to deliver, a watch running. */
static bool pods_idle(void *arg) {
	Env *e = arg;

	return e->pods.watch && !e->pods.pending && !e->pods.list;
}

static int env_setup(void **state) {
	Env *e = calloc(1, sizeof(*e));
	ObjectCacheOptions o = { .backoff_min_ms = 1, .backoff_max_ms = 8 };

	fake_init(&e->pods);
	fake_init(&e->namespaces);
	assert_int_equal(object_cache_new(&o, &e->cache), 0);
	assert_int_equal(object_cache_add_kind(e->cache, KUBE_KIND_POD, &fake_ops, &e->pods, &handlers, &e->rec), 0);
	object_cache_set_all_synced(e->cache, on_all_synced, &e->rec);
	*state = e;
	return 0;
}

static int env_teardown(void **state) {
	Env *e = *state;

	object_cache_free(e->cache);
	fake_done(&e->pods);
	fake_done(&e->namespaces);
	free(e);
	return 0;
}

static void expect_log(Env *e, const char *want) {
	if (!streq(e->rec.log, want))
		fail_msg("deltas\n  got:  %s\n  want: %s", e->rec.log, want);
	e->rec.log[0] = 0;
}

static int is_it(const KubeObject *o, void *userdata) {
	return o == userdata ? 1 : 0;
}

static int count(const KubeObject *o, void *userdata) {
	(*(unsigned *) userdata)++;
	return 0;
}

/* The cache holds exactly what the source holds (decoded), and every index agrees. */
static void expect_cache_equals_source(Env *e) {
	StringPool *pool = object_cache_pool(e->cache);
	json_t *v;
	size_t i;

	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).objects, json_array_size(e->pods.store));
	json_array_foreach(e->pods.store, i, v) {
		KubeObject *want = NULL;
		const KubeObject *got;
		const KubePod *p;
		bool found = false;

		assert_int_equal(kube_object_decode(KUBE_KIND_POD, v, pool, &want, NULL), 0);
		got = object_cache_get(e->cache, KUBE_KIND_POD, want->namespace, want->name);
		if (!got || !kube_object_equal(got, want))
			fail_msg("cache differs from source at %s/%s", want->namespace, want->name);
		p = KUBE_POD(got);
		for (size_t k = 0; k < p->n_ips; k++)
			assert_ptr_equal(object_cache_pod_by_ip(e->cache, &p->ips[k]), p);
		if (p->node_name) {
			found = object_cache_foreach_pod_on_node(e->cache, p->node_name, is_it, (void *) got) == 1;
			assert_true(found);
		}
		kube_object_free(want, pool);
	}
}

static void start_and_sync(Env *e) {
	assert_int_equal(object_cache_start(e->cache), 0);
	assert_true(run_until(e, pods_synced, e, 2000));
	assert_true(run_until(e, pods_idle, e, 2000));
}

/* ---- tests ---- */

static void test_backoff(void **state) {
	unsigned prev_max = 0;

	for (unsigned n = 1; n <= 12; n++) {
		unsigned d = MIN(100u << (n - 1), 30000u);
		unsigned lo = object_cache_backoff_ms(n, 100, 30000, 0);
		unsigned hi = object_cache_backoff_ms(n, 100, 30000, UINT32_MAX);
		unsigned mid = object_cache_backoff_ms(n, 100, 30000, UINT32_MAX / 2);

		assert_int_equal(lo, d / 2);
		assert_int_equal(hi, d);
		assert_true(mid > lo && mid < hi);
		assert_true(hi >= prev_max);
		prev_max = hi;
	}
	assert_int_equal(object_cache_backoff_ms(40, 100, 30000, UINT32_MAX), 30000);
}

static void test_initial_sync_and_watch(void **state) {
	Env *e = *state;

	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"web\"}"));
	fake_put(&e->pods, pod("shop", "b", "node-2", "10.244.2.2", "{\"app\": \"db\"}"));
	assert_false(object_cache_synced(e->cache, KUBE_KIND_POD));
	assert_int_equal(object_cache_start(e->cache), 0);
	/* Nothing is delivered from inside start(): only from the loop. */
	expect_log(e, "");
	assert_false(object_cache_synced(e->cache, KUBE_KIND_POD));
	assert_true(run_until(e, pods_synced, e, 2000));
	expect_log(e, "A shop/a A shop/b S");
	assert_int_equal(e->rec.all_synced, 1);
	assert_string_equal(object_cache_resource_version(e->cache, KUBE_KIND_POD), "2");

	/* Watch deltas, in order. */
	assert_true(run_until(e, pods_idle, e, 2000));
	fake_put(&e->pods, pod("shop", "c", "node-1", "10.244.1.3", NULL));
	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"web\", \"v\": \"2\"}"));
	fake_delete(&e->pods, "shop/b");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "A shop/c U shop/a D shop/b");
	assert_string_equal(object_cache_resource_version(e->cache, KUBE_KIND_POD), "5");
	expect_cache_equals_source(e);
	/* The debug dump: a List, sorted, what the cache holds. */
	{
		json_t *d = object_cache_dump(e->cache, KUBE_KIND_POD, "shop"), *items = json_object_get(d, "items");

		assert_int_equal(json_array_size(items), 2);
		assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(items, 0),
										      "metadata"),
								      "name")),
				    "a");
		assert_string_equal(json_string_value(
						    json_object_get(json_object_get(d, "metadata"), "resourceVersion")),
				    "5");
		json_decref(d);
		d = object_cache_dump(e->cache, KUBE_KIND_POD, "other");
		assert_int_equal(json_array_size(json_object_get(d, "items")), 0);
		json_decref(d);
		assert_null(object_cache_dump(e->cache, KUBE_KIND_SERVICE, NULL));
	}
	assert_int_equal(e->rec.synced, 1);
	assert_int_equal(e->pods.n_lists, 1);
}

static void test_noop_update(void **state) {
	Env *e = *state;
	json_t *p = pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"web\"}");

	fake_put(&e->pods, json_incref(p));
	start_and_sync(e);
	expect_log(e, "A shop/a S");
	/* Status churn the cache does not keep: no delta. */
	json_object_set_new(json_object_get(p, "status"), "conditions",
			    json_pack("[{s:s, s:s}]", "type", "Ready", "status", "False"));
	json_object_set_new(json_object_get(p, "metadata"), "annotations", json_pack("{s:s}", "x", "y"));
	fake_put(&e->pods, json_deep_copy(p));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).unchanged, 1);
	/* But the resourceVersion moved on. */
	assert_string_equal(object_cache_resource_version(e->cache, KUBE_KIND_POD), "2");
	json_decref(p);
}

static void test_index_consistency(void **state) {
	Env *e = *state;
	IpAddr old_ip, new_ip;
	const KubeObject *o;
	unsigned n;

	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"web\", \"tier\": \"front\"}"));
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.3", "{\"app\": \"web\"}"));
	start_and_sync(e);
	assert_int_equal(ip_addr_parse("10.244.1.2", &old_ip), 0);
	assert_int_equal(ip_addr_parse("10.244.9.9", &new_ip), 0);
	o = object_cache_get(e->cache, KUBE_KIND_POD, "shop", "a");
	assert_ptr_equal(object_cache_pod_by_ip(e->cache, &old_ip), o);

	/* Labels, IP and node all change at once. */
	fake_put(&e->pods, pod("shop", "a", "node-7", "10.244.9.9", "{\"app\": \"api\"}"));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "A shop/a A shop/b S U shop/a");
	o = object_cache_get(e->cache, KUBE_KIND_POD, "shop", "a");
	assert_null(object_cache_pod_by_ip(e->cache, &old_ip));
	assert_ptr_equal(object_cache_pod_by_ip(e->cache, &new_ip), o);
	n = 0;
	object_cache_foreach_with_label(e->cache, KUBE_KIND_POD, "app", "web", count, &n);
	assert_int_equal(n, 1);
	n = 0;
	object_cache_foreach_with_label(e->cache, KUBE_KIND_POD, "tier", "front", count, &n);
	assert_int_equal(n, 0);
	n = 0;
	object_cache_foreach_with_label(e->cache, KUBE_KIND_POD, "app", "api", count, &n);
	assert_int_equal(n, 1);
	n = 0;
	object_cache_foreach_pod_on_node(e->cache, "node-1", count, &n);
	assert_int_equal(n, 1);
	n = 0;
	object_cache_foreach_pod_on_node(e->cache, "node-7", count, &n);
	assert_int_equal(n, 1);
	n = 0;
	object_cache_foreach_in_namespace(e->cache, KUBE_KIND_POD, "shop", count, &n);
	assert_int_equal(n, 2);

	/* An IP handed from a finished pod to a new one: both indexed, the live one owns it. */
	{
		json_t *done = pod("shop", "b", "node-1", "10.244.1.3", "{\"app\": \"web\"}");
		IpAddr shared;

		json_object_set_new(json_object_get(done, "status"), "phase", json_string("Succeeded"));
		fake_put(&e->pods, done);
		fake_put(&e->pods, pod("shop", "c", "node-1", "10.244.1.3", NULL));
		assert_true(run_until(e, pods_idle, e, 2000));
		assert_int_equal(ip_addr_parse("10.244.1.3", &shared), 0);
		n = 0;
		object_cache_foreach_pod_by_ip(e->cache, &shared, count, &n);
		assert_int_equal(n, 2);
		assert_string_equal(object_cache_pod_by_ip(e->cache, &shared)->meta.name, "c");
		fake_delete(&e->pods, "shop/c");
		assert_true(run_until(e, pods_idle, e, 2000));
		assert_string_equal(object_cache_pod_by_ip(e->cache, &shared)->meta.name, "b");
	}
	/* Deleted: out of every index, and the strings only it used are released. */
	fake_delete(&e->pods, "shop/a");
	assert_true(run_until(e, pods_idle, e, 2000));
	assert_null(object_cache_pod_by_ip(e->cache, &new_ip));
	assert_null(string_pool_lookup(object_cache_pool(e->cache), "node-7"));
	assert_null(string_pool_lookup(object_cache_pool(e->cache), "app=api"));
	expect_cache_equals_source(e);
}

/* A relist after 410 is diffed against the cache: deletes first, then adds and updates in list
 * order, nothing for what did not change. */
static void test_relist_after_gone(void **state, bool as_error_event) {
	Env *e = *state;
	ObjectCacheStats st;

	e->pods.stale_as_error_event = as_error_event;
	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"web\"}"));
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.3", "{\"app\": \"web\"}"));
	fake_put(&e->pods, pod("shop", "c", "node-2", "10.244.2.2", "{\"app\": \"db\"}"));
	start_and_sync(e);
	expect_log(e, "A shop/a A shop/b A shop/c S");

	/* The watch drops; meanwhile the cluster changes and etcd compacts the history. */
	fake_drop(&e->pods, -ECONNRESET);
	{
		json_t *a = pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"web\"}");
		json_object_set_new(json_object_get(a, "status"), "conditions", json_array()); /* status only */
		fake_put(&e->pods, a);
	}
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.3", "{\"app\": \"web\", \"canary\": \"true\"}"));
	fake_delete(&e->pods, "shop/c");
	fake_put(&e->pods, pod("shop", "d", "node-2", "10.244.2.2", "{\"app\": \"db\"}"));
	fake_compact(&e->pods);
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "D shop/c U shop/b A shop/d");
	expect_cache_equals_source(e);
	st = object_cache_stats(e->cache, KUBE_KIND_POD);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.lists, 2);
	assert_int_equal(e->rec.synced, 1); /* synced once, not again after a relist */
	assert_int_equal(e->rec.all_synced, 1);
	assert_string_equal(object_cache_resource_version(e->cache, KUBE_KIND_POD), "7");
}

static void test_relist_after_gone_done(void **state) {
	test_relist_after_gone(state, false);
}

static void test_relist_after_gone_error_event(void **state) {
	test_relist_after_gone(state, true);
}

/* A dropped watch that can resume: the events missed are replayed, no list needed. */
static void test_dropped_watch_resumes(void **state) {
	Env *e = *state;

	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", NULL));
	start_and_sync(e);
	expect_log(e, "A shop/a S");
	fake_drop(&e->pods, -ECONNRESET);
	/* Written while the cache is backing off. */
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.3", NULL));
	fake_delete(&e->pods, "shop/a");
	fake_put(&e->pods, pod("shop", "c", "node-1", "10.244.1.4", NULL));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "A shop/b D shop/a A shop/c");
	expect_cache_equals_source(e);
	assert_int_equal(e->pods.n_lists, 1);
	assert_int_equal(e->rec.failed, 1);
	assert_true(e->pods.n_watches >= 2);

	/* A watch the server ends normally (timeoutSeconds) resumes at once, without a failure. */
	fake_drop(&e->pods, 1);
	fake_put(&e->pods, pod("shop", "d", "node-1", "10.244.1.5", NULL));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "A shop/d");
	assert_int_equal(e->rec.failed, 1);
	assert_int_equal(e->pods.n_lists, 1);
}

/* Bookmarks move the resourceVersion past other kinds' writes, so a watch restarted after a
 * compaction still resumes instead of relisting. */
static void test_bookmarks(void **state) {
	Env *e = *state;

	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", NULL));
	start_and_sync(e);
	fake_bump(&e->pods, 100); /* writes elsewhere */
	e->pods.bookmark = true;
	fake_schedule(&e->pods);
	assert_true(run_until(e, pods_idle, e, 2000));
	assert_string_equal(object_cache_resource_version(e->cache, KUBE_KIND_POD), "101");
	fake_compact(&e->pods);
	fake_drop(&e->pods, -ECONNRESET);
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.3", NULL));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "A shop/a S A shop/b");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).stale, 0);
	assert_int_equal(e->pods.n_lists, 1);

	/* Without the bookmark the same restart needs a relist (and loses nothing either). */
	fake_bump(&e->pods, 100);
	fake_compact(&e->pods);
	fake_drop(&e->pods, -ECONNRESET);
	assert_true(run_until(e, pods_idle, e, 2000));
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).stale, 1);
	assert_int_equal(e->pods.n_lists, 2);
	expect_log(e, "");
	expect_cache_equals_source(e);
}

/* Synced only after the first full list; failed lists back off and retry. */
static void test_synced_after_failures(void **state) {
	Env *e = *state;

	assert_int_equal(object_cache_add_kind(e->cache, KUBE_KIND_NAMESPACE, &fake_ops, &e->namespaces, &handlers,
					       &e->rec),
			 0);
	assert_int_equal(object_cache_add_kind(e->cache, KUBE_KIND_NAMESPACE, &fake_ops, &e->namespaces, NULL, NULL),
			 -EEXIST);
	fake_put(&e->namespaces, ns_obj("shop", "{\"env\": \"prod\"}"));
	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", NULL));
	e->pods.fail_lists = 3;
	e->pods.fail_error = -ECONNREFUSED;
	assert_int_equal(object_cache_start(e->cache), 0);
	assert_true(run_until(e, pods_synced, e, 2000));
	assert_int_equal(e->rec.failed, 3);
	assert_int_equal(e->pods.n_lists, 4);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).failures, 3);
	assert_true(object_cache_synced(e->cache, KUBE_KIND_NAMESPACE));
	/* all_synced fires once, when the slower kind is done. */
	assert_int_equal(e->rec.all_synced, 1);
	assert_true(object_cache_all_synced(e->cache));
	assert_int_equal(e->rec.synced, 2);
	/* The namespace's synced came first (its list did not fail), then the pod's A and S. */
	assert_non_null(strstr(e->rec.log, "A shop S"));
	assert_non_null(strstr(e->rec.log, "A shop/a S"));
}

/* Refused objects are reported, and a refused new version removes the cached one. */
static void test_rejected(void **state) {
	Env *e = *state;
	json_t *bad;

	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", NULL));
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.300", NULL));
	start_and_sync(e);
	/* A list's refusals are reported as it is decoded, before its deltas. */
	expect_log(e, "R shop/b A shop/a S");
	assert_non_null(strstr(e->rec.last_reject, "status.podIPs[0].ip"));
	/* A new object that never decoded is not cached, and deleting it is fine. */
	assert_null(object_cache_get(e->cache, KUBE_KIND_POD, "shop", "b"));
	fake_delete(&e->pods, "shop/b");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 0);
	/* A refused new version of a cached object is no delete: fail closed (held_* below). */
	bad = pod("shop", "a", "node-1", "10.244.1.2", "{\"app\": \"-bad\"}");
	fake_put(&e->pods, bad);
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R shop/a");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).rejected, 2);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).objects, 1);
}

static unsigned n_held_seen;

static int held_visit(const KubeObject *o, const char *reason, void *userdata) {
	n_held_seen++;
	assert_non_null(strstr(reason, userdata));
	return 0;
}

static void expect_held(Env *e, const char *ns, const char *name, const char *reason) {
	const KubeObject *o = object_cache_get(e->cache, KUBE_KIND_POD, ns, name);
	const char *why;

	assert_non_null(o);
	why = object_cache_held_reason(e->cache, o);
	if (!why || !strstr(why, reason))
		fail_msg("%s/%s held for \"%s\", expected \"%s\"", ns, name, why ?: "(not held)", reason);
	n_held_seen = 0;
	assert_int_equal(object_cache_foreach_held(e->cache, KUBE_KIND_POD, held_visit, (void *) reason), 0);
	assert_int_equal(n_held_seen, object_cache_stats(e->cache, KUBE_KIND_POD).held);
}

/*
 * Fail closed: an object whose newest version cannot be decoded stays at its last good version
 * (no delta), through watches and relists, reported once per reason, until a version that decodes
 * or a real delete arrives (a DELETED event, or the key absent from a relist).
 */
static void test_held_last_good_version(void **state) {
	Env *e = *state;
	const KubeObject *o;
	json_t *dump;
	LabelSet ls;

	fake_put(&e->pods, pod("victim", "iso", "node-1", "10.244.1.2", "{\"app\": \"iso\"}"));
	fake_put(&e->pods, pod("victim", "cli", "node-1", "10.244.1.3", "{\"app\": \"cli\"}"));
	start_and_sync(e);
	expect_log(e, "A victim/iso A victim/cli S");

	/* Watch: a version with a bad label key. The old one stays, in every index. */
	fake_put(&e->pods, pod("victim", "iso", "node-1", "10.244.1.2", "{\"-app\": \"iso\"}"));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R victim/iso");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 1);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).objects, 2);
	expect_held(e, "victim", "iso", "not a valid label key");
	o = object_cache_get(e->cache, KUBE_KIND_POD, "victim", "iso");
	ls = kube_object_labels(o);
	assert_string_equal(label_set_get(&ls, "app"), "iso");
	assert_ptr_equal(object_cache_pod_by_ip(e->cache, &KUBE_POD(o)->ips[0]), o);
	assert_null(object_cache_held_reason(e->cache, object_cache_get(e->cache, KUBE_KIND_POD, "victim", "cli")));
	/* /debug/objects says so beside the object */
	dump = object_cache_dump(e->cache, KUBE_KIND_POD, "victim");
	assert_non_null(dump);
	assert_true(json_is_true(
			json_object_get(json_object_get(json_array_get(json_object_get(dump, "items"), 1), "weftHeld"),
					"lastGoodVersion")));
	assert_null(json_object_get(json_array_get(json_object_get(dump, "items"), 0), "weftHeld"));
	json_decref(dump);

	/* Relists find the same refused value: still held, not reported or counted again. */
	assert_int_equal(object_cache_relist(e->cache, KUBE_KIND_POD), 0);
	assert_true(run_until(e, pods_idle, e, 2000));
	assert_int_equal(object_cache_relist(e->cache, KUBE_KIND_POD), 0);
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).rejected, 1);
	expect_held(e, "victim", "iso", "not a valid label key");

	/* Another refused version, for another reason: reported again, still the last good one. */
	fake_refuse(&e->pods, "victim", "iso",
		    "etcd key /weft/objects/pods/victim/iso: value is not a Kubernetes object");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R victim/iso");
	expect_held(e, "victim", "iso", "etcd key /weft/objects/pods/victim/iso: value is not a Kubernetes object");
	assert_non_null(strstr(e->rec.last_reject, "victim/iso: etcd key /weft/objects/pods/victim/iso: value is not"));
	/* ... and the source's refusals come through a relist the same way */
	assert_int_equal(object_cache_relist(e->cache, KUBE_KIND_POD), 0);
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "");
	expect_held(e, "victim", "iso", "value is not a Kubernetes object");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).rejected, 2);

	/* The last good version written again: current, no delta (nothing changed). */
	fake_put(&e->pods, pod("victim", "iso", "node-1", "10.244.1.2", "{\"app\": \"iso\"}"));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 0);
	assert_null(object_cache_held_reason(e->cache, object_cache_get(e->cache, KUBE_KIND_POD, "victim", "iso")));

	/* A new version that decodes replaces a held one as an update. */
	fake_put(&e->pods, pod("victim", "iso", "node-1", "10.244.1.2", "{\"app\": \"-x\"}"));
	fake_put(&e->pods, pod("victim", "iso", "node-1", "10.244.1.2", "{\"app\": \"iso2\"}"));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R victim/iso U victim/iso");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 0);

	/* A DELETED event removes a held object. */
	fake_refuse(&e->pods, "victim", "iso", "etcd key x: value is not a Kubernetes object");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R victim/iso");
	fake_delete(&e->pods, "victim/iso");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "D victim/iso");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 0);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).objects, 1);

	/* So does a relist that no longer finds the key (a delete the watch missed). */
	fake_put(&e->pods, pod("victim", "cli", "node-1", "10.244.1.3", "{\"app\": 7}"));
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R victim/cli");
	expect_held(e, "victim", "cli", "metadata.labels[app]");
	assert_true(fake_forget(&e->pods, "victim/cli"));
	assert_int_equal(object_cache_relist(e->cache, KUBE_KIND_POD), 0);
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "D victim/cli");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 0);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).objects, 0);

	/* A value the source refuses for a key never cached: refused, not held, counted. */
	fake_refuse(&e->pods, "victim", "new", "etcd key y: value is not a Kubernetes object");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R victim/new");
	assert_null(object_cache_get(e->cache, KUBE_KIND_POD, "victim", "new"));
	/* ... also when the source cannot tell whose it is (a key with an extra segment) */
	fake_refuse(&e->pods, NULL, NULL, "etcd key /weft/objects/pods/a/b/extra: names no object");
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "R /");
	assert_non_null(strstr(e->rec.last_reject, "etcd key /weft/objects/pods/a/b/extra: names no object"));
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).held, 0);
}

/* A handler that asks for a relist from inside a delta (a consumer that found something odd): the
 * watch ends, the list comes from the cache's fd, nothing is lost or repeated. */
static int relists_asked;

static void relist_on_update(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	on_updated(c, old, o, userdata);
	if (streq(o->name, "b") && relists_asked++ == 0)
		assert_int_equal(object_cache_relist(c, KUBE_KIND_POD), 0);
}

static void test_relist_from_handler(void **state) {
	Env *e = *state;
	ObjectCacheHandlers h = handlers;

	h.updated = relist_on_update;
	relists_asked = 0;
	object_cache_free(e->cache);
	assert_int_equal(object_cache_new(&(ObjectCacheOptions) { .backoff_min_ms = 1, .backoff_max_ms = 8 },
					  &e->cache),
			 0);
	assert_int_equal(object_cache_add_kind(e->cache, KUBE_KIND_POD, &fake_ops, &e->pods, &h, &e->rec), 0);
	fake_put(&e->pods, pod("shop", "a", "node-1", "10.244.1.2", NULL));
	fake_put(&e->pods, pod("shop", "b", "node-1", "10.244.1.3", NULL));
	start_and_sync(e);
	expect_log(e, "A shop/a A shop/b S");
	/* b's update asks for the relist; c and a's update are still in the stream when it does. */
	fake_put(&e->pods, pod("shop", "b", "node-2", "10.244.1.3", NULL));
	fake_put(&e->pods, pod("shop", "c", "node-1", "10.244.1.4", NULL));
	fake_put(&e->pods, pod("shop", "a", "node-3", "10.244.1.2", NULL));
	assert_true(run_until(e, pods_idle, e, 2000));
	/* The rest came by the relist, in the list's order (the fake asserts no request was started
	 * from inside the event callback). */
	expect_log(e, "U shop/b U shop/a A shop/c");
	assert_int_equal(relists_asked, 1);
	assert_int_equal(e->pods.n_lists, 2);
	expect_cache_equals_source(e);
}

/* A periodic relist with nothing changed fires nothing. */
static void test_relist_quiet(void **state) {
	Env *e = *state;

	for (int i = 0; i < 50; i++) {
		char name[16], ip[32];

		snprintf(name, sizeof(name), "p%d", i);
		snprintf(ip, sizeof(ip), "10.244.0.%d", i + 1);
		fake_put(&e->pods, pod("shop", name, "node-1", ip, "{\"app\": \"web\"}"));
	}
	start_and_sync(e);
	e->rec.log[0] = 0;
	assert_int_equal(object_cache_relist(e->cache, KUBE_KIND_POD), 0);
	assert_true(run_until(e, pods_idle, e, 2000));
	expect_log(e, "");
	assert_int_equal(e->pods.n_lists, 2);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_POD).unchanged, 50);
	assert_int_equal(object_cache_relist(e->cache, KUBE_KIND_SERVICE), -ENOENT);
}

/* Churn with random drops and compactions: the cache ends equal to the source every time. */
static void test_churn(void **state) {
	Env *e = *state;
	unsigned seed = 12345, drops = 0, compactions = 0;
	ObjectCacheStats st;

	start_and_sync(e);
	for (int round = 0; round < 40; round++) {
		/* A drop before the writes: the cache misses them while it backs off. */
		if (rand_r(&seed) % 3 == 0) {
			fake_drop(&e->pods, -ECONNRESET);
			drops++;
		}
		for (int k = 0; k < 30; k++) {
			unsigned r = rand_r(&seed);
			char name[16], ip[32], key[32], labels[64];
			bool exists = false;
			json_t *v;
			size_t i;

			snprintf(name, sizeof(name), "p%u", r % 60);
			snprintf(key, sizeof(key), "shop/%s", name);
			json_array_foreach(e->pods.store, i, v) {
				char kb[256];
				exists |= streq(key_of(v, kb), key);
			}
			snprintf(ip, sizeof(ip), "10.244.%u.%u", (r >> 8) % 4, r % 60 + 1);
			snprintf(labels, sizeof(labels), "{\"app\": \"a%u\", \"gen\": \"%u\"}", (r >> 12) % 3,
				 (r >> 16) % 2);
			if (exists && (r >> 20) % 3 == 0)
				fake_delete(&e->pods, key);
			else
				fake_put(&e->pods, pod("shop", name, (r >> 4) % 2 ? "node-1" : "node-2", ip, labels));
		}
		if (rand_r(&seed) % 4 == 0) {
			fake_compact(&e->pods);
			compactions++;
		}
		assert_true(run_until(e, pods_idle, e, 2000));
		expect_cache_equals_source(e);
	}
	st = object_cache_stats(e->cache, KUBE_KIND_POD);
	print_message("churn: 40 rounds, %u drops, %u compactions, %llu lists, %llu watches, %llu adds, %llu updates, "
		      "%llu deletes, %llu unchanged; cache == source after every round\n",
		      drops, compactions, (unsigned long long) st.lists, (unsigned long long) st.watches,
		      (unsigned long long) st.added, (unsigned long long) st.updated, (unsigned long long) st.deleted,
		      (unsigned long long) st.unchanged);
	assert_true(drops > 0 && st.stale > 0);
}

/* ---- selection against a brute-force model, and the memory figure ---- */

static json_t *realistic_pod(unsigned i) {
	static const char *const tiers[] = { "web", "api", "db", "cache" };
	unsigned deploy = i / 20;
	char ns[16], name[64], app[32], hash[16], node[16], ip4[32], ip6[48], uid[40], ver[8];
	json_t *p;

	snprintf(ns, sizeof(ns), "ns-%u", i / 100);
	snprintf(app, sizeof(app), "service-%u", deploy);
	snprintf(hash, sizeof(hash), "%09x", deploy * 2654435761u);
	snprintf(name, sizeof(name), "%s-%s-%05x", app, hash, i * 40503u & 0xfffff);
	snprintf(node, sizeof(node), "node-%u", i % 100);
	snprintf(ip4, sizeof(ip4), "10.%u.%u.%u", 128 + i / 65536, i / 256 % 256, i % 256);
	snprintf(ip6, sizeof(ip6), "fd00:10:244::%x", i + 1);
	snprintf(uid, sizeof(uid), "%08x-%04x-4%03x-8%03x-%012x", i * 7919u, i & 0xffff, i & 0xfff, (i >> 4) & 0xfff,
		 i * 104729u);
	snprintf(ver, sizeof(ver), "v%u", i % 3);
	p = json_pack("{s:s, s:s,"
		      " s:{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}},"
		      " s:{s:s, s:[{s:s, s:s, s:[{s:s, s:i, s:s}]}]},"
		      " s:{s:s, s:s, s:[{s:s}, {s:s}], s:[{s:s, s:s}]}}",
		      "apiVersion", "v1", "kind", "Pod", "metadata", "namespace", ns, "name", name, "uid", uid,
		      "resourceVersion", "1", "labels", "app", app, "pod-template-hash", hash, "tier",
		      tiers[deploy % 4], "env", deploy % 5 ? "prod" : "staging", "version", ver, "spec", "nodeName",
		      node, "containers", "name", "main", "image", "registry.example/app:1", "ports", "name", "http",
		      "containerPort", 8080, "protocol", "TCP", "status", "phase", "Running", "podIP", ip4, "podIPs",
		      "ip", ip4, "ip", ip6, "conditions", "type", "Ready", "status", "True");
	assert_non_null(p);
	return p;
}

static size_t rss_bytes(void) {
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (size_t) sysconf(_SC_PAGESIZE);
}

/* The model: a linear scan with label_selector_matches(). */
typedef struct Model {
	const char *ns;
	const LabelSelector *sel;
	unsigned n;
} Model;

static int model(const KubeObject *o, void *userdata) {
	Model *m = userdata;
	LabelSet ls = kube_object_labels(o);

	if ((!m->ns || streq(o->namespace, m->ns)) && label_selector_matches(m->sel, &ls))
		m->n++;
	return 0;
}

static void test_select_and_memory(void **state) {
	Env *e = *state;
	const unsigned N = 10000;
	struct mallinfo2 before, after;
	ObjectCacheStats st;
	double bytes_per_pod;
	size_t rss_before, rss_after, rss_trimmed;
	json_t *items = json_array();
	struct timespec t0, t1;
	static const char *const selectors[] = {
		"{\"matchLabels\": {\"app\": \"service-42\"}}",
		"{\"matchLabels\": {\"tier\": \"db\", \"env\": \"staging\"}}",
		"{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\", \"values\": [\"web\", \"api\"]},"
		" {\"key\": \"version\", \"operator\": \"NotIn\", \"values\": [\"v0\"]}]}",
		"{\"matchExpressions\": [{\"key\": \"canary\", \"operator\": \"DoesNotExist\"}]}",
		"{}",
	};
	static const char *const namespaces[] = { NULL, "ns-8", "ns-99", "ns-missing" };
	unsigned cells = 0, nonempty = 0, selected = 0;

	for (unsigned i = 0; i < N; i++)
		json_array_append_new(items, realistic_pod(i));
	/* The source's store is built before measuring: only the cache's own heap is counted. */
	json_decref(e->pods.store);
	e->pods.store = items;
	e->pods.rv = 1;
	malloc_trim(0);
	before = mallinfo2();
	rss_before = rss_bytes();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(object_cache_start(e->cache), 0);
	assert_true(run_until(e, pods_synced, e, 20000));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	after = mallinfo2();
	st = object_cache_stats(e->cache, KUBE_KIND_POD);
	assert_int_equal(st.objects, N);
	/* In use from the heap plus what malloc mmap()ed for large blocks (the index tables). */
	bytes_per_pod = ((double) (after.uordblks + after.hblkhd) - (double) (before.uordblks + before.hblkhd)) / N;
	rss_after = rss_bytes();
	malloc_trim(0); /* what the list's transient buffers and the outgrown index arrays leave behind */
	rss_trimmed = rss_bytes();
	print_message("10k pods (5 labels, 2 IPs, 1 named port each): list decoded and indexed in %.0f ms, %zu distinct "
		      "strings interned\n",
		      (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
		      string_pool_size(object_cache_pool(e->cache)));
	if (after.uordblks == before.uordblks)
		/* malloc is not glibc's (valgrind, a sanitizer's allocator): nothing to measure. */
		print_message("heap per pod not measurable under this allocator: bound not checked\n");
	else {
		print_message("memory per pod: %.0f bytes allocated (objects, indexes, interned strings); RSS grew "
			      "%.0f bytes per pod, %.0f after malloc_trim()\n",
			      bytes_per_pod, ((double) rss_after - (double) rss_before) / N,
			      ((double) rss_trimmed - (double) rss_before) / N);
		assert_true(bytes_per_pod > 100);  /* a plausible measurement at all */
		assert_true(bytes_per_pod <= 300); /* the budget */
	}

	/* object_cache_select == a linear scan with label_selector_matches, for every combination. */
	for (size_t s = 0; s < ELEMENTSOF(selectors); s++)
		for (size_t n = 0; n < ELEMENTSOF(namespaces); n++) {
			json_t *j = json_loads(selectors[s], 0, NULL);
			LabelSelector *sel = NULL;
			unsigned got = 0;
			Model want = { .ns = namespaces[n] };

			assert_int_equal(label_selector_parse(j, "s", &sel, NULL), 0);
			object_cache_select(e->cache, KUBE_KIND_POD, namespaces[n], sel, count, &got);
			want.sel = sel;
			object_cache_foreach(e->cache, KUBE_KIND_POD, model, &want);
			if (got != want.n)
				fail_msg("selector %s in %s: %u selected, model says %u", selectors[s],
					 namespaces[n] ?: "*", got, want.n);
			cells++;
			nonempty += got > 0;
			selected += got;
			label_selector_free(sel);
			json_decref(j);
		}
	print_message("select: %u selector x namespace cells agree with a linear scan (%u non-empty, %u pods selected)\n",
		      cells, nonempty, selected);
	assert_true(nonempty >= cells / 2);
	{
		unsigned n = 0;

		object_cache_foreach_pod_on_node(e->cache, "node-3", count, &n);
		assert_int_equal(n, N / 100);
	}
}

/* ---- the other kinds: memory per object at the bench sizes ---- */

static json_t *realistic_namespace(unsigned i) {
	char name[16], team[16];

	snprintf(name, sizeof(name), "ns-%u", i);
	snprintf(team, sizeof(team), "team-%u", i % 20);
	return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			 "metadata", "name", name, "labels", "kubernetes.io/metadata.name", name, "team", team, "env",
			 i % 3 ? "prod" : "staging", "status", "phase", "Active");
}

static json_t *realistic_policy(unsigned i) {
	char ns[16], name[32], app[32];

	snprintf(ns, sizeof(ns), "ns-%u", i % 100);
	snprintf(name, sizeof(name), "allow-frontend-%u", i);
	snprintf(app, sizeof(app), "service-%u", i % 500);
	return json_pack("{s:s, s:s, s:{s:s, s:s},"
			 " s:{s:{s:{s:s}}, s:[s, s],"
			 "    s:[{s:[{s:{s:{s:s}}, s:{s:{s:s}}}, {s:{s:s, s:[s]}}], s:[{s:s, s:i}, {s:s}]}],"
			 "    s:[{s:[{s:{s:{s:s}}}], s:[{s:s, s:i}]}]}}",
			 "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata", "namespace", ns,
			 "name", name, "spec", "podSelector", "matchLabels", "app", app, "policyTypes", "Ingress",
			 "Egress", "ingress", "from", "podSelector", "matchLabels", "tier", "web", "namespaceSelector",
			 "matchLabels", "team", "team-1", "ipBlock", "cidr", "172.17.0.0/16", "except", "172.17.1.0/24",
			 "ports", "protocol", "TCP", "port", 8080, "port", "metrics", "egress", "to", "podSelector",
			 "matchLabels", "app", "db", "ports", "protocol", "TCP", "port", 5432);
}

static json_t *realistic_service(unsigned i) {
	char ns[16], name[32], ip[32];

	snprintf(ns, sizeof(ns), "ns-%u", i % 100);
	snprintf(name, sizeof(name), "service-%u", i);
	snprintf(ip, sizeof(ip), "10.96.%u.%u", i / 256, i % 256);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}},"
			 " s:{s:s, s:s, s:[s], s:[s], s:[{s:s, s:s, s:i, s:s}, {s:s, s:s, s:i, s:i}], s:{s:s},"
			 "    s:s, s:s}}",
			 "apiVersion", "v1", "kind", "Service", "metadata", "namespace", ns, "name", name, "labels",
			 "app", name, "spec", "type", "ClusterIP", "clusterIP", ip, "clusterIPs", ip, "ipFamilies",
			 "IPv4", "ports", "name", "http", "protocol", "TCP", "port", 80, "targetPort", "http", "name",
			 "metrics", "protocol", "TCP", "port", 9090, "targetPort", 9090, "selector", "app", name,
			 "sessionAffinity", "None", "internalTrafficPolicy", "Cluster");
}

static KubeKind measuring;

static bool kind_synced(void *arg) {
	return object_cache_synced(((Env *) arg)->cache, measuring);
}

static void measure_kind(Env *e, KubeKind kind, unsigned n, json_t *(*make)(unsigned) ) {
	struct mallinfo2 before, after;
	double per;

	json_decref(e->pods.store);
	e->pods.store = json_array();
	for (unsigned i = 0; i < n; i++) {
		json_t *o = make(i);

		assert_non_null(o);
		json_array_append_new(e->pods.store, o);
	}
	object_cache_free(e->cache);
	malloc_trim(0);
	before = mallinfo2();
	assert_int_equal(object_cache_new(&(ObjectCacheOptions) { .backoff_min_ms = 1 }, &e->cache), 0);
	assert_int_equal(object_cache_add_kind(e->cache, kind, &fake_ops, &e->pods, &handlers, &e->rec), 0);
	assert_int_equal(object_cache_start(e->cache), 0);
	measuring = kind;
	assert_true(run_until(e, kind_synced, e, 20000));
	after = mallinfo2();
	e->rec.log[0] = 0;
	assert_int_equal(object_cache_stats(e->cache, kind).objects, n);
	assert_int_equal(object_cache_stats(e->cache, kind).rejected, 0);
	per = ((double) (after.uordblks + after.hblkhd) - (double) (before.uordblks + before.hblkhd)) / n;
	if (after.uordblks != before.uordblks)
		print_message("%u %s: %.0f bytes per object\n", n, kube_kind_info(kind)->resource, per);
}

static void test_memory_other_kinds(void **state) {
	Env *e = *state;

	measure_kind(e, KUBE_KIND_NAMESPACE, 1000, realistic_namespace);
	measure_kind(e, KUBE_KIND_NETWORK_POLICY, 1000, realistic_policy);
	measure_kind(e, KUBE_KIND_SERVICE, 5000, realistic_service);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff),
		cmocka_unit_test_setup_teardown(test_initial_sync_and_watch, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_noop_update, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_index_consistency, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_relist_after_gone_done, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_relist_after_gone_error_event, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_dropped_watch_resumes, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_bookmarks, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_synced_after_failures, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_rejected, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_held_last_good_version, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_relist_quiet, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_relist_from_handler, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_churn, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_select_and_memory, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_memory_other_kinds, env_setup, env_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
