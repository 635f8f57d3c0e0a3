/* SPDX-License-Identifier: Apache-2.0 */
/* The object cache's etcd source: see object-source-etcd.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "daemon/cache/object-source-etcd.h"
#include "shared/client/object-store.h"

#define LIST_PAGE_SIZE 500

struct EtcdObjectSource {
	EtcdClient *client;
	char *prefix;
};

struct ObjectSourceRequest {
	EtcdObjectSource *src;
	KubeKind kind;
	char *key_prefix; /* <prefix>/objects/<resource>/ */
	char *range_end;
	EtcdRequest *req;
	ObjectSourceListFn list_done;
	ObjectSourceEventFn on_event;
	ObjectSourceDoneFn done;
	void *userdata;
	json_t *items;   /* list: pages so far */
	json_t *refused; /* list: the kvs refused so far (object_source_refusal_new()) */
	int64_t rev;     /* list: the snapshot's revision (0 before the first page) */
	bool busy;       /* inside on_event: cancel() only marks */
	bool cancelled;
};

int etcd_object_source_new(EtcdClient *client, const char *prefix, EtcdObjectSource **ret) {
	EtcdObjectSource *s;

	if (!client || !prefix || prefix[0] != '/' || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->client = client;
	s->prefix = strdup(prefix);
	if (!s->prefix) {
		free(s);
		return -ENOMEM;
	}
	/* "/weft/network/" and "/weft/network" name the same prefix. */
	for (size_t n = strlen(s->prefix); n > 1 && s->prefix[n - 1] == '/'; n--)
		s->prefix[n - 1] = '\0';
	*ret = s;
	return 0;
}

EtcdObjectSource *etcd_object_source_free(EtcdObjectSource *s) {
	if (s) {
		free(s->prefix);
		free(s);
	}
	return NULL;
}

char *etcd_object_source_kind_prefix(const char *prefix, KubeKind kind) {
	return object_key_prefix(prefix, kind, NULL);
}

static void request_free(ObjectSourceRequest *r) {
	if (!r)
		return;
	json_decref(r->items);
	json_decref(r->refused);
	free(r->key_prefix);
	free(r->range_end);
	free(r);
}

static int request_new(EtcdObjectSource *s, KubeKind kind, ObjectSourceRequest **ret) {
	ObjectSourceRequest *r;

	if (!kube_kind_info(kind))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->src = s;
	r->kind = kind;
	r->key_prefix = etcd_object_source_kind_prefix(s->prefix, kind);
	r->range_end = r->key_prefix ? etcd_prefix_range_end(r->key_prefix) : NULL;
	if (!r->range_end) {
		request_free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

static int map_error(int error) {
	/* etcd's OUT_OF_RANGE: the revision asked for is compacted away, Kubernetes' 410 Gone. */
	return error == -ERANGE ? -ESTALE : error;
}

/* namespace/name from a key under r->key_prefix (malloc'ed; ns NULL for cluster-scoped kinds). */
static int key_split(const ObjectSourceRequest *r, const char *key, char **ret_ns, char **ret_name) {
	const char *rest, *slash;

	*ret_ns = *ret_name = NULL;
	if (!startswith(key, r->key_prefix))
		return -EINVAL;
	rest = key + strlen(r->key_prefix);
	slash = strchr(rest, '/');
	if (kube_kind_info(r->kind)->namespaced) {
		if (!slash || slash == rest || isempty(slash + 1) || strchr(slash + 1, '/'))
			return -EINVAL;
		*ret_ns = strndup(rest, (size_t) (slash - rest));
		*ret_name = strdup(slash + 1);
		if (!*ret_ns || !*ret_name)
			goto oom;
		return 0;
	}
	if (slash || isempty(rest))
		return -EINVAL;
	*ret_name = strdup(rest);
	if (!*ret_name)
		goto oom;
	return 0;
oom:
	free(*ret_ns);
	free(*ret_name);
	*ret_ns = *ret_name = NULL;
	return -ENOMEM;
}

static int set_str(json_t *o, const char *key, const char *v) {
	return v ? json_object_set_new(o, key, json_string(v)) : 0;
}

/* A metadata-only object: what a DELETE carries (only the key matters). */
static json_t *key_object(const char *ns, const char *name, const char *rv) {
	json_t *md = json_object(), *o = json_object();

	if (!md || !o || set_str(md, "namespace", ns) < 0 || set_str(md, "name", name) < 0 ||
	    set_str(md, "resourceVersion", rv) < 0 || json_object_set_new(o, "metadata", md) < 0) {
		json_decref(md);
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The source's own refusal of a kv, naming the key (the cache holds an older version of it, or
 * reports the refusal). *ret_refused set. */
static json_t *refusal(const char *key, const char *ns, const char *name, const char *rv, const char *why,
		       bool *ret_refused) {
	_cleanup_free_ char *reason = strdup_printf("etcd key %s: %s", key, why);

	*ret_refused = true;
	return reason ? object_source_refusal_new(ns, name, rv, reason) : NULL;
}

/*
 * The Kubernetes JSON for one kv: its value with metadata.resourceVersion = rev and
 * namespace/name from the key. `deleted`: only the key matters (metadata alone). A value or key
 * the source must refuse gives an object_source_refusal_new() entry and *ret_refused. New
 * reference; NULL on OOM.
 */
static json_t *object_from_kv(const ObjectSourceRequest *r, const EtcdKv *kv, int64_t rev, bool deleted,
			      bool *ret_refused) {
	_cleanup_free_ char *ns = NULL, *name = NULL;
	char rv[24];
	json_t *o, *md, *v;
	int k;

	*ret_refused = false;
	snprintf(rv, sizeof(rv), "%" PRId64, rev);
	k = key_split(r, kv->key, &ns, &name);
	if (k == -ENOMEM)
		return NULL;
	if (k < 0)
		return refusal(kv->key, NULL, NULL, rv,
			       kube_kind_info(r->kind)->namespaced
					       ? "names no object (expected <prefix>/objects/<resource>/<namespace>/<name>)"
					       : "names no object (expected <prefix>/objects/<resource>/<name>)",
			       ret_refused);
	if (deleted)
		return key_object(ns, name, rv);

	o = json_loadb(kv->value ?: "", kv->value_size, 0, NULL);
	md = json_object_get(o, "metadata");
	if (!json_is_object(o) || (md && !json_is_object(md))) {
		json_decref(o);
		return refusal(kv->key, ns, name, rv, "value is not a Kubernetes object", ret_refused);
	}
	if (!md) {
		md = json_object();
		if (!md || json_object_set_new(o, "metadata", md) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	/* The key is the object's identity: a value naming another object is refused, not moved. */
	v = json_object_get(md, "name");
	if (v && (!json_is_string(v) || !streq(json_string_value(v), name))) {
		json_decref(o);
		return refusal(kv->key, ns, name, rv, "metadata.name differs from the key", ret_refused);
	}
	v = json_object_get(md, "namespace");
	if (ns && v && (!json_is_string(v) || !streq(json_string_value(v), ns))) {
		json_decref(o);
		return refusal(kv->key, ns, name, rv, "metadata.namespace differs from the key", ret_refused);
	}
	/* When the object was created is etcd's word, not the writer's: metadata.creationTimestamp is
	 * whatever was written, so "the older wins" (Service conflicts) goes by the key's
	 * create_revision, which no writer can backdate. */
	if ((!json_object_get(md, "name") && set_str(md, "name", name) < 0) ||
	    (ns && !json_object_get(md, "namespace") && set_str(md, "namespace", ns) < 0) ||
	    set_str(md, "resourceVersion", rv) < 0 ||
	    json_object_set_new(o, KUBE_CREATE_REVISION_FIELD, json_integer(kv->create_revision)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- list ---- */

static int list_page(ObjectSourceRequest *r, const char *start, size_t start_len);

static void list_fail(ObjectSourceRequest *r, int error) {
	ObjectSourceListFn fn = r->list_done;
	void *userdata = r->userdata;

	request_free(r);
	fn(map_error(error), NULL, NULL, NULL, userdata);
}

static void on_range_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	ObjectSourceRequest *r = userdata;
	EtcdKv *kvs = NULL;
	size_t n = 0;
	int64_t rev = 0;
	ObjectSourceListFn fn;
	char rv[24];
	json_t *all, *refused;
	int k;

	r->req = NULL;
	k = error < 0 ? error : etcd_range_parse(resp, &kvs, &n, &rev);
	if (k < 0)
		return list_fail(r, k);
	if (r->rev == 0)
		r->rev = rev;
	for (size_t i = 0; i < n; i++) {
		bool bad;
		json_t *o = object_from_kv(r, &kvs[i], kvs[i].mod_revision, false, &bad);

		if (!o || json_array_append_new(bad ? r->refused : r->items, o) < 0) {
			etcd_kvs_free(kvs, n);
			return list_fail(r, -ENOMEM);
		}
	}
	if (json_is_true(json_object_get(resp, "more")) && n > 0) {
		/* The next page starts right after the last key: the key with a NUL appended. */
		k = list_page(r, kvs[n - 1].key, strlen(kvs[n - 1].key) + 1);
		etcd_kvs_free(kvs, n);
		if (k < 0)
			list_fail(r, k);
		return;
	}
	etcd_kvs_free(kvs, n);
	if (r->rev <= 0)
		return list_fail(r, -EBADMSG);
	/* Done: hand over, and free the request first (the callback may start the next one). */
	snprintf(rv, sizeof(rv), "%" PRId64, r->rev);
	fn = r->list_done;
	userdata = r->userdata;
	all = TAKE_PTR(r->items);
	refused = TAKE_PTR(r->refused);
	request_free(r);
	fn(0, all, refused, rv, userdata);
	json_decref(all);
	json_decref(refused);
}

static int list_page(ObjectSourceRequest *r, const char *start, size_t start_len) {
	json_t *req;
	int k;

	req = json_pack("{s:o, s:o, s:o}", "key", etcd_json_bytes(start, start_len), "range_end",
			etcd_json_bytes(r->range_end, strlen(r->range_end)), "limit",
			etcd_json_int64_new(LIST_PAGE_SIZE));
	if (!req)
		return -ENOMEM;
	/* Every page after the first reads the first one's snapshot. */
	if (r->rev > 0 && json_object_set_new(req, "revision", etcd_json_int64_new(r->rev)) < 0) {
		json_decref(req);
		return -ENOMEM;
	}
	k = etcd_client_call_async(r->src->client, "/v3/kv/range", req, on_range_done, r, &r->req);
	json_decref(req);
	return k;
}

static int src_list(void *source, KubeKind kind, ObjectSourceListFn done, void *userdata, ObjectSourceRequest **ret) {
	ObjectSourceRequest *r;
	int k;

	k = request_new(source, kind, &r);
	if (k < 0)
		return k;
	r->list_done = done;
	r->userdata = userdata;
	r->items = json_array();
	r->refused = json_array();
	if (!r->items || !r->refused) {
		request_free(r);
		return -ENOMEM;
	}
	k = list_page(r, r->key_prefix, strlen(r->key_prefix));
	if (k < 0) {
		request_free(r);
		return k;
	}
	*ret = r;
	return 0;
}

/* ---- watch ---- */

/* Hands one event to the cache; false if the cache cancelled us from inside it (r is freed). */
static bool deliver(ObjectSourceRequest *r, ObjectEventType type, json_t *o) {
	r->busy = true;
	r->on_event(type, o, r->userdata);
	r->busy = false;
	json_decref(o);
	if (r->cancelled) {
		request_free(r);
		return false;
	}
	return true;
}

static int on_watch_message(EtcdClient *c, json_t *msg, void *userdata) {
	ObjectSourceRequest *r = userdata;
	const json_t *res = json_object_get(msg, "result"), *evs, *ev;
	size_t i;

	if (!json_is_object(res))
		return -EIO;
	if (json_is_true(json_object_get(res, "canceled")))
		/* Compacted past our start revision (the 410 case), or cancelled by the server. */
		return etcd_json_int64(res, "compact_revision") > 0 ? -ESTALE : -ECANCELED;
	if (json_is_true(json_object_get(res, "created")))
		return 0;
	evs = json_object_get(res, "events");
	if (json_array_size(evs) == 0) {
		/* A progress notification: everything up to the header's revision has been sent. */
		char rv[24];
		json_t *o;

		snprintf(rv, sizeof(rv), "%" PRId64, etcd_json_int64(json_object_get(res, "header"), "revision"));
		o = json_pack("{s:{s:s}}", "metadata", "resourceVersion", rv);
		if (!o)
			return -ENOMEM;
		deliver(r, OBJECT_EVENT_BOOKMARK, o);
		return 0;
	}
	json_array_foreach(evs, i, ev) {
		const json_t *type = json_object_get(ev, "type");
		bool del = json_is_string(type) && streq(json_string_value(type), "DELETE");
		_cleanup_(etcd_kv_done) EtcdKv kv = {};
		bool refused;
		json_t *o;

		if (etcd_kv_decode(json_object_get(ev, "kv"), &kv) < 0)
			return -EBADMSG;
		o = object_from_kv(r, &kv, kv.mod_revision, del, &refused);
		if (!o)
			return -ENOMEM;
		/* A DELETE of a key that names no object is nothing: it deletes nothing weft holds. */
		if (refused && del) {
			json_decref(o);
			continue;
		}
		if (!deliver(r,
			     refused                                 ? OBJECT_EVENT_REFUSED
			     : del                                   ? OBJECT_EVENT_DELETED
			     : kv.create_revision == kv.mod_revision ? OBJECT_EVENT_ADDED
								     : OBJECT_EVENT_MODIFIED,
			     o))
			return 0; /* cancelled: the transfer is gone too */
	}
	return 0;
}

static void on_watch_done(EtcdClient *c, int error, json_t *resp, void *userdata) {
	ObjectSourceRequest *r = userdata;
	ObjectSourceDoneFn fn = r->done;
	void *ud = r->userdata;

	r->req = NULL;
	request_free(r);
	/* etcd never ends a watch on its own: a closed stream is a lost connection. */
	fn(error < 0 ? map_error(error) : -ECONNRESET, ud);
}

static int src_watch(void *source, KubeKind kind, const char *rv, ObjectSourceEventFn on_event, ObjectSourceDoneFn done,
		     void *userdata, ObjectSourceRequest **ret) {
	ObjectSourceRequest *r;
	int64_t start;
	json_t *req;
	char *end;
	int k;

	if (isempty(rv))
		return -EINVAL;
	errno = 0;
	start = strtoll(rv, &end, 10);
	if (errno != 0 || *end || start < 0)
		return -EINVAL;
	k = request_new(source, kind, &r);
	if (k < 0)
		return k;
	r->on_event = on_event;
	r->done = done;
	r->userdata = userdata;
	req = json_pack("{s:{s:o, s:o, s:o, s:b}}", "create_request", "key",
			etcd_json_bytes(r->key_prefix, strlen(r->key_prefix)), "range_end",
			etcd_json_bytes(r->range_end, strlen(r->range_end)), "start_revision",
			etcd_json_int64_new(start + 1), "progress_notify", 1);
	if (!req) {
		request_free(r);
		return -ENOMEM;
	}
	k = etcd_client_stream(r->src->client, "/v3/watch", req, on_watch_message, on_watch_done, r, &r->req);
	json_decref(req);
	if (k < 0) {
		request_free(r);
		return k;
	}
	*ret = r;
	return 0;
}

static void src_cancel(void *source, ObjectSourceRequest *r) {
	if (!r)
		return;
	etcd_request_cancel(TAKE_PTR(r->req));
	if (r->busy)
		r->cancelled = true; /* freed when on_event returns */
	else
		request_free(r);
}

const ObjectSourceOps etcd_object_source_ops = {
	.name = "etcd",
	.list = src_list,
	.watch = src_watch,
	.cancel = src_cancel,
};
