/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "daemon/cache/object-source-kube.h"

#define LIST_PAGE_SIZE 500
/* Like client-go: the server ends each watch after 5-10 minutes so a silently stuck stream cannot
 * last forever; the cache resumes from its resourceVersion without a list. */
#define WATCH_TIMEOUT_MIN_SEC 300u

struct KubeObjectSource {
	KubeClient *client;
};

struct ObjectSourceRequest {
	KubeObjectSource *src;
	KubeKind kind;
	KubeRequest *req;
	ObjectSourceListFn list_done;
	ObjectSourceEventFn on_event;
	ObjectSourceDoneFn done;
	void *userdata;
	json_t *items; /* list: pages so far */
	char *rv;      /* list: the first page's resourceVersion */
};

int kube_object_source_new(KubeClient *client, KubeObjectSource **ret) {
	KubeObjectSource *s;

	if (!client || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->client = client;
	*ret = s;
	return 0;
}

KubeObjectSource *kube_object_source_free(KubeObjectSource *s) {
	free(s);
	return NULL;
}

static void request_free(ObjectSourceRequest *r) {
	if (!r)
		return;
	json_decref(r->items);
	free(r->rv);
	free(r);
}

static const char *json_str(const json_t *o, const char *a, const char *b) {
	const json_t *v = json_object_get(json_object_get(o, a), b);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int list_page(ObjectSourceRequest *r, const char *cont);

static void list_fail(ObjectSourceRequest *r, int error) {
	ObjectSourceListFn fn = r->list_done;
	void *userdata = r->userdata;

	request_free(r);
	fn(error, NULL, NULL, NULL, userdata);
}

static void on_list_page(KubeClient *c, int error, json_t *resp, void *userdata) {
	ObjectSourceRequest *r = userdata;
	const json_t *items = json_object_get(resp, "items");
	const char *rv = json_str(resp, "metadata", "resourceVersion"), *cont = json_str(resp, "metadata", "continue");
	ObjectSourceListFn fn;
	json_t *all;
	char *list_rv;
	int k;

	r->req = NULL;
	if (error < 0)
		return list_fail(r, error);
	if (!json_is_array(items) || (!r->rv && isempty(rv)))
		return list_fail(r, -EBADMSG);
	if (!r->rv && !(r->rv = strdup(rv)))
		return list_fail(r, -ENOMEM);
	/* Only a source may say when an object was created (kube-objects.h): the API server drops
	 * unknown fields of its own kinds, but a proxy or a fixture need not. */
	for (size_t i = 0; i < json_array_size(items); i++)
		(void) json_object_del(json_array_get(items, i), KUBE_CREATE_REVISION_FIELD);
	if (json_array_extend(r->items, (json_t *) items) < 0)
		return list_fail(r, -ENOMEM);
	if (!isempty(cont)) {
		k = list_page(r, cont);
		if (k < 0)
			list_fail(r, k);
		return;
	}
	/* Done: hand over, and free the request first (the callback may start the next one). */
	fn = r->list_done;
	userdata = r->userdata;
	all = TAKE_PTR(r->items);
	list_rv = TAKE_PTR(r->rv);
	request_free(r);
	fn(0, all, NULL, list_rv, userdata);
	json_decref(all);
	free(list_rv);
}

static int list_page(ObjectSourceRequest *r, const char *cont) {
	_cleanup_free_ char *path = NULL, *esc = NULL;
	const char *base = kube_kind_info(r->kind)->api_path;

	if (cont) {
		/* The continue token is opaque base64: escape it for the query. */
		esc = malloc(strlen(cont) * 3 + 1);
		if (!esc)
			return -ENOMEM;
		char *p = esc;
		for (const char *s = cont; *s; s++) {
			if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
			    *s == '-' || *s == '_' || *s == '.' || *s == '~')
				*p++ = *s;
			else
				p += sprintf(p, "%%%02X", (unsigned char) *s);
		}
		*p = '\0';
		path = strdup_printf("%s?limit=%u&continue=%s", base, LIST_PAGE_SIZE, esc);
	} else
		path = strdup_printf("%s?limit=%u", base, LIST_PAGE_SIZE);
	if (!path)
		return -ENOMEM;
	return kube_client_call_async(r->src->client, "GET", path, NULL, NULL, on_list_page, r, &r->req);
}

static int src_list(void *source, KubeKind kind, ObjectSourceListFn done, void *userdata, ObjectSourceRequest **ret) {
	KubeObjectSource *s = source;
	ObjectSourceRequest *r;
	int k;

	if (!kube_kind_info(kind))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (ObjectSourceRequest) {
		.src = s,
		.kind = kind,
		.list_done = done,
		.userdata = userdata,
		.items = json_array(),
	};
	if (!r->items) {
		free(r);
		return -ENOMEM;
	}
	k = list_page(r, NULL);
	if (k < 0) {
		request_free(r);
		return k;
	}
	*ret = r;
	return 0;
}

static int on_watch_event(KubeClient *c, const char *type, json_t *object, void *userdata) {
	ObjectSourceRequest *r = userdata;
	ObjectEventType t;

	/* Types a newer server may add are skipped. The cache may cancel r from inside on_event:
	 * nothing of r is touched afterwards. */
	if (object_event_type_from_string(type, &t) < 0)
		return 0;
	(void) json_object_del(object, KUBE_CREATE_REVISION_FIELD);
	r->on_event(t, object, r->userdata);
	return 0;
}

static void on_watch_done(KubeClient *c, int error, json_t *resp, void *userdata) {
	ObjectSourceRequest *r = userdata;
	ObjectSourceDoneFn fn = r->done;
	void *ud = r->userdata;

	r->req = NULL;
	request_free(r);
	fn(error, ud);
}

static int src_watch(void *source, KubeKind kind, const char *rv, ObjectSourceEventFn on_event, ObjectSourceDoneFn done,
		     void *userdata, ObjectSourceRequest **ret) {
	KubeObjectSource *s = source;
	_cleanup_free_ char *path = NULL;
	ObjectSourceRequest *r;
	int k;

	if (!kube_kind_info(kind) || isempty(rv))
		return -EINVAL;
	/* resourceVersions are opaque but printable digits in practice; refuse anything that would
	 * need escaping rather than send a different query. */
	for (const char *p = rv; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return -EINVAL;
	path = strdup_printf("%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%u",
			     kube_kind_info(kind)->api_path, rv,
			     WATCH_TIMEOUT_MIN_SEC + (unsigned) (random() % WATCH_TIMEOUT_MIN_SEC));
	if (!path)
		return -ENOMEM;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (ObjectSourceRequest) {
		.src = s,
		.kind = kind,
		.on_event = on_event,
		.done = done,
		.userdata = userdata,
	};
	k = kube_client_watch(s->client, path, on_watch_event, on_watch_done, r, &r->req);
	if (k < 0) {
		free(r);
		return k;
	}
	*ret = r;
	return 0;
}

static void src_cancel(void *source, ObjectSourceRequest *r) {
	if (!r)
		return;
	kube_request_cancel(TAKE_PTR(r->req));
	request_free(r);
}

const ObjectSourceOps kube_object_source_ops = {
	.name = "kubernetes",
	.list = src_list,
	.watch = src_watch,
	.cancel = src_cancel,
};
