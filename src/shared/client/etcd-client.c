/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/list.h"
#include "basic/string-util.h"
#include "shared/client/etcd-client.h"
#include "shared/client/http-multi.h"

/* One etcd call on top of an HttpTransfer (the curl-multi/epoll glue lives in http-multi.c). */
struct EtcdRequest {
	EtcdClient *client;
	EtcdRequest *prev, *next; /* client->requests, while on the multi */
	HttpTransfer *t;
	char *body;
	size_t endpoint; /* index the transfer went to, for fail-over */
	bool stream;
	bool in_done;
	EtcdMessageFn on_message;
	EtcdDoneFn done;
	void *userdata;
};

struct EtcdClient {
	char **endpoints;
	size_t n_endpoints;
	size_t current;
	long connect_ms, total_ms;
	char last_error[512];
	struct curl_slist *headers;

	HttpMulti *multi;
	EtcdRequest *requests;
};

uint64_t etcd_now_usec(void) {
	return http_now_usec();
}

static void set_error(EtcdClient *c, const char *fmt, ...) _printf_(2, 3);
static void set_error(EtcdClient *c, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
}

const char *etcd_client_last_error(const EtcdClient *c) {
	return c ? c->last_error : "";
}

const char *etcd_client_current_endpoint(const EtcdClient *c) {
	return c->endpoints[c->current];
}

void etcd_client_set_timeouts(EtcdClient *c, long connect_ms, long total_ms) {
	if (connect_ms > 0)
		c->connect_ms = connect_ms;
	if (total_ms > 0)
		c->total_ms = total_ms;
}

/* gRPC status codes as the gateway reports them in {"code": N}. */
static int grpc_code_to_errno(long code) {
	switch (code) {
	case 1: return -ECANCELED;
	case 3: return -EINVAL;
	case 4: return -ETIMEDOUT;
	case 5: return -ENOENT;
	case 6: return -EEXIST;
	case 7: return -EACCES;
	case 8: return -ENOBUFS;
	case 9: return -ESTALE;
	case 10: return -ECONNABORTED;
	case 11: return -ERANGE;
	case 12: return -EOPNOTSUPP;
	case 14: return -EAGAIN;
	case 16: return -EACCES;
	default: return -EIO;
	}
}

/* Errors after which another endpoint may do better. */
static bool error_is_transport(int r) {
	return r == -ECONNREFUSED || r == -ETIMEDOUT || r == -EHOSTUNREACH || r == -ECONNRESET || r == -EAGAIN;
}

static void advance_endpoint(EtcdClient *c, size_t failed) {
	if (c->n_endpoints > 1 && c->current == failed)
		c->current = (failed + 1) % c->n_endpoints;
}

int etcd_client_new(const char *endpoints, EtcdClient **ret) {
	_cleanup_(etcd_client_freep) EtcdClient *c = NULL;
	_cleanup_strv_free_ char **l = NULL;
	int r;

	if (isempty(endpoints))
		return -EINVAL;
	r = strv_split(endpoints, ", \t\n", &l);
	if (r < 0)
		return r;
	if (strv_length(l) == 0)
		return -EINVAL;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c) {
		curl_global_cleanup();
		return -ENOMEM;
	}
	c->connect_ms = 1000;
	c->total_ms = 5000;

	c->endpoints = calloc(strv_length(l) + 1, sizeof(char *));
	if (!c->endpoints)
		return -ENOMEM;
	for (char **e = l; *e; e++) {
		size_t n = strlen(*e);
		char *u;

		while (n > 0 && (*e)[n - 1] == '/')
			n--;
		u = strstr(*e, "://") ? strndup(*e, n) : strdup_printf("http://%.*s", (int) n, *e);
		if (!u)
			return -ENOMEM;
		c->endpoints[c->n_endpoints++] = u;
	}

	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!c->headers)
		return -ENOMEM;
	r = http_multi_new(&c->multi);
	if (r < 0)
		return r;

	*ret = TAKE_PTR(c);
	return 0;
}

static EtcdRequest *request_free(EtcdRequest *req) {
	if (!req)
		return NULL;
	if (req->client)
		LIST_REMOVE(req->client->requests, req);
	/* On the multi: cancel (freed now, or by the next dispatch from inside curl). Blocking: free. */
	http_transfer_cancel(req->t);
	free(req->body);
	free(req);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdRequest *, request_free);

EtcdClient *etcd_client_free(EtcdClient *c) {
	if (!c)
		return NULL;
	while (c->requests)
		request_free(c->requests);
	http_multi_free(c->multi);
	curl_slist_free_all(c->headers);
	for (size_t i = 0; i < c->n_endpoints; i++)
		free(c->endpoints[i]);
	free(c->endpoints);
	free(c);
	curl_global_cleanup();
	return NULL;
}

/* Streams: every complete line of a 200 response is one JSON message. Error bodies are
 * collected whole by the transfer and parsed at the end. */
static int stream_line(HttpTransfer *t, const char *line, size_t n, void *userdata) {
	EtcdRequest *req = userdata;
	EtcdClient *c = req->client;
	json_error_t jerr;
	json_t *msg;
	int r;

	msg = json_loadb(line, n, 0, &jerr);
	if (!msg) {
		set_error(c, "malformed stream message from %s: %s", c->endpoints[req->endpoint], jerr.text);
		return -EBADMSG;
	}
	/* on_message may cancel req: do not touch it afterwards. */
	r = req->on_message ? req->on_message(c, msg, req->userdata) : 0;
	json_decref(msg);
	return r;
}

static int request_setup(EtcdClient *c, EtcdRequest *req, const char *path, json_t *body_json, bool stream) {
	_cleanup_free_ char *url = NULL;
	CURL *easy;
	int r;

	req->client = c;
	req->stream = stream;
	req->endpoint = c->current;
	req->body = json_dumps(body_json, JSON_COMPACT);
	url = strdup_printf("%s%s", c->endpoints[req->endpoint], path);
	if (!req->body || !url)
		return -ENOMEM;
	r = http_transfer_new(0, &req->t);
	if (r < 0)
		return r;
	if (stream)
		http_transfer_set_line_fn(req->t, stream_line);
	easy = http_transfer_easy(req->t);

	curl_easy_setopt(easy, CURLOPT_URL, url);
	curl_easy_setopt(easy, CURLOPT_POST, 1L);
	curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req->body);
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	/* Streams have no end; a dead peer is found by TCP keepalive instead. */
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, stream ? 0L : c->total_ms);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 2L);
	/* No proxies from the environment: etcd is on the cluster network. */
	curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	return 0;
}

/* Turns a finished transfer into an errno and a parsed body. */
static int request_result(EtcdRequest *req, CURLcode code, json_t **ret) {
	EtcdClient *c = req->client;
	const char *ep = c->endpoints[req->endpoint];
	json_error_t jerr;
	const char *body;
	size_t len;
	long http;
	json_t *j;
	int r;

	if (http_transfer_abort_error(req->t) < 0)
		return http_transfer_abort_error(req->t);
	if (code != CURLE_OK) {
		r = http_curl_code_to_errno(code);
		set_error(c, "%s: %s", ep, http_transfer_error_text(req->t, code));
		return r;
	}
	http = http_transfer_status(req->t);
	body = http_transfer_body(req->t, &len);

	if (req->stream && http == 200) {
		if (ret)
			*ret = NULL;
		set_error(c, "%s: stream ended", ep);
		return 0;
	}

	j = len > 0 ? json_loadb(body, len, 0, &jerr) : NULL;
	if (http != 200) {
		json_t *m = j ? json_object_get(j, "message") : NULL;

		if (!m && j)
			m = json_object_get(j, "error");
		r = j && json_is_integer(json_object_get(j, "code"))
				    ? grpc_code_to_errno((long) json_integer_value(json_object_get(j, "code")))
		    : http == 404 ? -ENOENT
		    : http >= 500 ? -EAGAIN
				  : -EIO;
		set_error(c, "%s: HTTP %ld: %s", ep, http,
			  json_is_string(m) ? json_string_value(m)
			  : len > 0         ? body
					    : "(no body)");
		json_decref(j);
		return r;
	}
	if (!json_is_object(j)) {
		set_error(c, "%s: malformed response: %s", ep, j ? "not an object" : jerr.text);
		json_decref(j);
		return -EBADMSG;
	}
	*ret = j;
	return 0;
}

int etcd_client_call(EtcdClient *c, const char *path, json_t *req_json, json_t **ret) {
	int r = -EIO;

	for (size_t i = 0; i < c->n_endpoints; i++) {
		_cleanup_(request_freep) EtcdRequest *req = calloc(1, sizeof(EtcdRequest));
		CURLcode code;

		if (!req)
			return -ENOMEM;
		r = request_setup(c, req, path, req_json, false);
		if (r < 0)
			return r;
		code = http_transfer_perform(req->t, req);
		r = request_result(req, code, ret);
		if (r >= 0 || !error_is_transport(r))
			return r;
		advance_endpoint(c, req->endpoint);
	}
	return r;
}

/* ---- non-blocking ---- */

static void request_done(HttpTransfer *t, CURLcode code, void *userdata) {
	EtcdRequest *req = userdata;
	EtcdClient *c = req->client;
	json_t *resp = NULL;
	int r;

	r = request_result(req, code, &resp);
	if (r < 0 && error_is_transport(r))
		advance_endpoint(c, req->endpoint);
	/* The multi frees the transfer after we return. */
	req->t = NULL;
	req->in_done = true;
	if (req->done)
		req->done(c, r, r < 0 ? NULL : resp, req->userdata);
	json_decref(resp);
	request_free(req);
}

static int start_async(EtcdClient *c, const char *path, json_t *body, bool stream, EtcdMessageFn on_message,
		       EtcdDoneFn done, void *userdata, EtcdRequest **ret) {
	_cleanup_(request_freep) EtcdRequest *req = NULL;
	int r;

	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	r = request_setup(c, req, path, body, stream);
	if (r < 0)
		return r;
	req->on_message = on_message;
	req->done = done;
	req->userdata = userdata;

	r = http_multi_add(c->multi, req->t, request_done, req);
	if (r < 0)
		return r;
	LIST_PREPEND(c->requests, req);
	if (ret)
		*ret = req;
	TAKE_PTR(req);
	return 0;
}

int etcd_client_call_async(EtcdClient *c, const char *path, json_t *req, EtcdDoneFn done, void *userdata,
			   EtcdRequest **ret) {
	return start_async(c, path, req, false, NULL, done, userdata, ret);
}

int etcd_client_stream(EtcdClient *c, const char *path, json_t *req, EtcdMessageFn on_message, EtcdDoneFn done,
		       void *userdata, EtcdRequest **ret) {
	return start_async(c, path, req, true, on_message, done, userdata, ret);
}

void etcd_request_cancel(EtcdRequest *req) {
	if (!req)
		return;
	req->on_message = NULL;
	req->done = NULL;
	/* From inside its own done callback, request_done frees it on return. */
	if (!req->in_done)
		request_free(req);
}

int etcd_client_get_fd(EtcdClient *c) {
	return http_multi_get_fd(c->multi);
}

void etcd_client_set_wakeup(EtcdClient *c, uint64_t deadline_usec) {
	http_multi_set_wakeup(c->multi, deadline_usec);
}

int etcd_client_next_timeout_ms(EtcdClient *c) {
	return http_multi_next_timeout_ms(c->multi);
}

int etcd_client_dispatch(EtcdClient *c) {
	return http_multi_dispatch(c->multi);
}

/* ---- v3 helpers ---- */

void etcd_kv_done(EtcdKv *kv) {
	if (!kv)
		return;
	kv->key = mfree(kv->key);
	kv->value = mfree(kv->value);
}

void etcd_kvs_free(EtcdKv *kvs, size_t n) {
	for (size_t i = 0; kvs && i < n; i++)
		etcd_kv_done(&kvs[i]);
	free(kvs);
}

int64_t etcd_json_int64(const json_t *obj, const char *key) {
	const json_t *v = json_object_get(obj, key);
	long long x;

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_string(v) && sscanf(json_string_value(v), "%lld", &x) == 1)
		return x;
	return 0;
}

json_t *etcd_json_bytes(const void *data, size_t len) {
	_cleanup_free_ char *s = NULL;

	if (base64_encode(data, len, &s) < 0)
		return NULL;
	return json_string(s);
}

json_t *etcd_json_int64_new(int64_t v) {
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return json_string(buf);
}

static int decode_bytes(const json_t *v, char **ret, size_t *ret_size) {
	void *p = NULL;
	size_t n = 0;
	int r;

	if (!v) {
		/* proto3 omits empty bytes */
		p = strdup("");
		if (!p)
			return -ENOMEM;
	} else {
		if (!json_is_string(v))
			return -EBADMSG;
		r = base64_decode(json_string_value(v), json_string_length(v), &p, &n);
		if (r < 0)
			return r == -ENOMEM ? r : -EBADMSG;
	}
	*ret = p;
	if (ret_size)
		*ret_size = n;
	return 0;
}

int etcd_kv_decode(const json_t *kv, EtcdKv *ret) {
	EtcdKv k = {};
	int r;

	if (!json_is_object(kv))
		return -EBADMSG;
	r = decode_bytes(json_object_get(kv, "key"), &k.key, NULL);
	if (r < 0)
		return r;
	r = decode_bytes(json_object_get(kv, "value"), &k.value, &k.value_size);
	if (r < 0) {
		etcd_kv_done(&k);
		return r;
	}
	k.create_revision = etcd_json_int64(kv, "create_revision");
	k.mod_revision = etcd_json_int64(kv, "mod_revision");
	k.lease = etcd_json_int64(kv, "lease");
	*ret = k;
	return 0;
}

char *etcd_prefix_range_end(const char *prefix) {
	size_t n = strlen(prefix);
	char *e = strdup(prefix);

	if (!e)
		return NULL;
	/* Increment the last byte that is not 0xff, drop what follows (etcd's clientv3.GetPrefixRangeEnd). */
	while (n > 0) {
		if ((unsigned char) e[n - 1] < 0xff) {
			e[n - 1]++;
			e[n] = 0;
			return e;
		}
		n--;
	}
	/* All 0xff: "\0" means "to the end" (encoded as an empty string, never reached for our prefixes). */
	e[0] = 0;
	return e;
}

static int json_set_bytes(json_t *o, const char *k, const char *s) {
	return json_object_set_new(o, k, etcd_json_bytes(s, strlen(s)));
}

json_t *etcd_range_request(const char *key, const char *range_end) {
	json_t *o = json_object();

	if (!o || json_set_bytes(o, "key", key) < 0 || (range_end && json_set_bytes(o, "range_end", range_end) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *etcd_txn_put_if_request(const char *key, const char *target, int64_t rev, const char *value, int64_t lease) {
	json_t *cmp, *put, *get, *o;
	bool create = streq(target, "CREATE");

	cmp = json_pack("{s:o, s:s, s:s, s:o}", "key", etcd_json_bytes(key, strlen(key)), "target", target, "result",
			"EQUAL", create ? "create_revision" : "mod_revision", etcd_json_int64_new(rev));
	put = json_pack("{s:o, s:o}", "key", etcd_json_bytes(key, strlen(key)), "value",
			etcd_json_bytes(value, strlen(value)));
	if (put && lease)
		json_object_set_new(put, "lease", etcd_json_int64_new(lease));
	/* On failure read the key back, so the caller can see who holds it. */
	get = etcd_range_request(key, NULL);
	if (!cmp || !put || !get) {
		json_decref(cmp);
		json_decref(put);
		json_decref(get);
		return NULL;
	}
	o = json_pack("{s:[o], s:[{s:o}], s:[{s:o}]}", "compare", cmp, "success", "request_put", put, "failure",
		      "request_range", get);
	return o;
}

int etcd_txn_parse(const json_t *resp, bool *ret_succeeded, EtcdKv *ret_existing) {
	bool ok = json_is_true(json_object_get(resp, "succeeded"));

	if (ret_existing) {
		/* failure branch: responses[0].response_range.kvs[0] */
		const json_t *rr = json_object_get(json_array_get(json_object_get(resp, "responses"), 0),
						   "response_range");
		const json_t *kv = json_array_get(json_object_get(rr, "kvs"), 0);

		*ret_existing = (EtcdKv) {};
		if (!ok && kv) {
			int r = etcd_kv_decode(kv, ret_existing);
			if (r < 0)
				return r;
		}
	}
	if (ret_succeeded)
		*ret_succeeded = ok;
	return 0;
}

int etcd_range_parse(const json_t *resp, EtcdKv **ret_kvs, size_t *ret_n, int64_t *ret_revision) {
	const json_t *kvs = json_object_get(resp, "kvs");
	EtcdKv *l = NULL;
	size_t n = 0;
	int r;

	if (kvs && !json_is_array(kvs))
		return -EBADMSG;
	if (kvs && json_array_size(kvs) > 0) {
		l = calloc(json_array_size(kvs), sizeof(EtcdKv));
		if (!l)
			return -ENOMEM;
		for (; n < json_array_size(kvs); n++) {
			r = etcd_kv_decode(json_array_get(kvs, n), &l[n]);
			if (r < 0) {
				etcd_kvs_free(l, n);
				return r;
			}
		}
	}
	if (ret_revision)
		*ret_revision = etcd_json_int64(json_object_get(resp, "header"), "revision");
	if (ret_kvs)
		*ret_kvs = l;
	else
		etcd_kvs_free(l, n);
	if (ret_n)
		*ret_n = n;
	return 0;
}

int etcd_range(EtcdClient *c, const char *key, const char *range_end, EtcdKv **ret_kvs, size_t *ret_n,
	       int64_t *ret_revision) {
	json_t *req = etcd_range_request(key, range_end), *resp = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/kv/range", req, &resp);
	json_decref(req);
	if (r < 0)
		return r;
	r = etcd_range_parse(resp, ret_kvs, ret_n, ret_revision);
	json_decref(resp);
	return r;
}

int etcd_put(EtcdClient *c, const char *key, const char *value, int64_t lease) {
	json_t *req, *resp = NULL;
	int r;

	req = json_pack("{s:o, s:o}", "key", etcd_json_bytes(key, strlen(key)), "value",
			etcd_json_bytes(value, strlen(value)));
	if (!req)
		return -ENOMEM;
	if (lease)
		json_object_set_new(req, "lease", etcd_json_int64_new(lease));
	r = etcd_client_call(c, "/v3/kv/put", req, &resp);
	json_decref(req);
	json_decref(resp);
	return r;
}

int etcd_delete(EtcdClient *c, const char *key, const char *range_end) {
	json_t *req = etcd_range_request(key, range_end), *resp = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/kv/deleterange", req, &resp);
	json_decref(req);
	json_decref(resp);
	return r;
}

int etcd_txn_put_if(EtcdClient *c, const char *key, const char *target, int64_t rev, const char *value, int64_t lease,
		    bool *ret_succeeded, EtcdKv *ret_existing) {
	json_t *req = etcd_txn_put_if_request(key, target, rev, value, lease), *resp = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/kv/txn", req, &resp);
	json_decref(req);
	if (r < 0)
		return r;
	r = etcd_txn_parse(resp, ret_succeeded, ret_existing);
	json_decref(resp);
	return r;
}

int etcd_lease_grant(EtcdClient *c, int64_t ttl, int64_t *ret_id, int64_t *ret_ttl) {
	json_t *req = json_pack("{s:o}", "TTL", etcd_json_int64_new(ttl)), *resp = NULL;
	int64_t id;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/lease/grant", req, &resp);
	json_decref(req);
	if (r < 0)
		return r;
	id = etcd_json_int64(resp, "ID");
	if (id == 0) {
		const json_t *e = json_object_get(resp, "error");

		set_error(c, "lease grant failed: %s", json_is_string(e) ? json_string_value(e) : "no lease ID");
		json_decref(resp);
		return -EIO;
	}
	*ret_id = id;
	if (ret_ttl)
		*ret_ttl = etcd_json_int64(resp, "TTL");
	json_decref(resp);
	return 0;
}

int etcd_lease_keepalive_parse(const json_t *resp, int64_t *ret_ttl) {
	const json_t *res = json_object_get(resp, "result");

	if (!json_is_object(res))
		return json_object_get(resp, "error") ? -EIO : -EBADMSG;
	*ret_ttl = etcd_json_int64(res, "TTL");
	return 0;
}

int etcd_lease_keepalive(EtcdClient *c, int64_t id, int64_t *ret_ttl) {
	json_t *req = json_pack("{s:o}", "ID", etcd_json_int64_new(id)), *resp = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/lease/keepalive", req, &resp);
	json_decref(req);
	if (r < 0)
		return r;
	r = etcd_lease_keepalive_parse(resp, ret_ttl);
	if (r < 0)
		set_error(c, "malformed keepalive response");
	json_decref(resp);
	return r;
}

int etcd_lease_revoke(EtcdClient *c, int64_t id) {
	json_t *req = json_pack("{s:o}", "ID", etcd_json_int64_new(id)), *resp = NULL;
	int r;

	if (!req)
		return -ENOMEM;
	r = etcd_client_call(c, "/v3/lease/revoke", req, &resp);
	json_decref(req);
	json_decref(resp);
	return r;
}
