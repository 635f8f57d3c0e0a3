/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/list.h"
#include "basic/string-util.h"
#include "shared/client/http-multi.h"
#include "shared/client/kube-client.h"

struct KubeRequest {
	KubeClient *client;
	KubeRequest *prev, *next; /* client->requests, while on the multi */
	HttpTransfer *t;
	struct curl_slist *headers;
	char *body;
	char *what; /* "GET /api/v1/nodes" for messages */
	bool stream;
	bool in_done;
	KubeWatchFn on_event;
	KubeDoneFn done;
	void *userdata;
};

struct KubeClient {
	KubeConfig *cfg;
	long connect_ms, total_ms;
	char last_error[768];
	HttpMulti *multi;
	KubeRequest *requests;
};

static void set_error(KubeClient *c, const char *fmt, ...) _printf_(2, 3);
static void set_error(KubeClient *c, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
	va_end(ap);
}

const char *kube_client_last_error(const KubeClient *c) {
	return c ? c->last_error : "";
}

const KubeConfig *kube_client_config(const KubeClient *c) {
	return c->cfg;
}

void kube_client_set_timeouts(KubeClient *c, long connect_ms, long total_ms) {
	if (connect_ms > 0)
		c->connect_ms = connect_ms;
	if (total_ms > 0)
		c->total_ms = total_ms;
}

int kube_client_new(KubeConfig **cfg, KubeClient **ret) {
	_cleanup_(kube_client_freep) KubeClient *c = NULL;
	int r;

	if (!cfg || !*cfg || isempty((*cfg)->server))
		return -EINVAL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c) {
		curl_global_cleanup();
		return -ENOMEM;
	}
	c->connect_ms = 2000;
	c->total_ms = 10000;
	r = http_multi_new(&c->multi);
	if (r < 0)
		return r;
	c->cfg = TAKE_PTR(*cfg);
	*ret = TAKE_PTR(c);
	return 0;
}

static KubeRequest *request_free(KubeRequest *req) {
	if (!req)
		return NULL;
	if (req->client)
		LIST_REMOVE(req->client->requests, req);
	http_transfer_cancel(req->t);
	curl_slist_free_all(req->headers);
	free(req->body);
	free(req->what);
	free(req);
	return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeRequest *, request_free);

KubeClient *kube_client_free(KubeClient *c) {
	if (!c)
		return NULL;
	while (c->requests)
		request_free(c->requests);
	http_multi_free(c->multi);
	kubeconfig_free(c->cfg);
	free(c);
	curl_global_cleanup();
	return NULL;
}

static int stream_line(HttpTransfer *t, const char *line, size_t n, void *userdata) {
	KubeRequest *req = userdata;
	KubeClient *c = req->client;
	json_error_t jerr;
	json_t *ev, *type, *obj;
	int r = 0;

	ev = json_loadb(line, n, 0, &jerr);
	type = json_object_get(ev, "type");
	obj = json_object_get(ev, "object");
	if (!json_is_string(type) || !json_is_object(obj)) {
		set_error(c, "%s: %s: malformed watch event: %s", c->cfg->server, req->what,
			  ev ? "no type/object" : jerr.text);
		json_decref(ev);
		return -EBADMSG;
	}
	/* on_event may cancel req: do not touch it afterwards. */
	if (req->on_event)
		r = req->on_event(c, json_string_value(type), obj, req->userdata);
	json_decref(ev);
	return r;
}

static int http_status_to_errno(long http) {
	switch (http) {
	case 400:
	case 422: return -EINVAL;
	case 401: return -EACCES;
	case 403: return -EPERM;
	case 404: return -ENOENT;
	case 409: return -EEXIST;
	case 410: return -ESTALE;
	case 429: return -EAGAIN;
	default: return http >= 500 ? -EAGAIN : -EIO;
	}
}

/* For messages: which credentials we presented, so a 401/403 says what to fix. */
static const char *credentials(const KubeClient *c, char *buf, size_t n) {
	const KubeConfig *k = c->cfg;
	const char *what = k->token ? "bearer token" : k->token_file ? "bearer token from " : NULL;

	if (what)
		snprintf(buf, n, "%s%s%s%s%s", what, k->token_file ?: "", k->user_name ? " of user \"" : "",
			 k->user_name ?: "", k->user_name ? "\"" : "");
	else if (k->cert_file || k->cert_data)
		snprintf(buf, n, "client certificate%s%s%s", k->user_name ? " of user \"" : "", k->user_name ?: "",
			 k->user_name ? "\"" : "");
	else
		snprintf(buf, n, "no credentials");
	snprintf(buf + strlen(buf), n - strlen(buf), " in %s", k->source);
	return buf;
}

static int request_setup(KubeClient *c, KubeRequest *req, const char *method, const char *path,
			 const char *content_type, const char *body, bool stream) {
	const KubeConfig *k = c->cfg;
	_cleanup_free_ char *url = NULL, *token = NULL, *auth = NULL, *ct = NULL;
	CURL *e;
	int r;

	req->client = c;
	req->stream = stream;
	req->what = strdup_printf("%s %s", method, path);
	url = strdup_printf("%s%s", k->server, path);
	if (!req->what || !url)
		return -ENOMEM;
	r = kubeconfig_get_token(k, &token);
	if (r < 0) {
		set_error(c, "cannot read the token file %s: %s", k->token_file, strerror(-r));
		return r;
	}
	if (token) {
		auth = strdup_printf("Authorization: Bearer %s", token);
		explicit_bzero(token, strlen(token));
		if (!auth)
			return -ENOMEM;
	}
	if (body) {
		req->body = strdup(body);
		ct = strdup_printf("Content-Type: %s", content_type ?: "application/json");
		if (!req->body || !ct)
			return -ENOMEM;
	}
	{
		struct curl_slist *h = NULL;
		const char *hdrs[] = { "Accept: application/json", "User-Agent: weftd", auth, ct };

		for (size_t i = 0; i < ELEMENTSOF(hdrs); i++) {
			struct curl_slist *n;

			if (!hdrs[i])
				continue;
			n = curl_slist_append(h, hdrs[i]);
			if (!n) {
				curl_slist_free_all(h);
				return -ENOMEM;
			}
			h = n;
		}
		req->headers = h;
	}
	if (auth)
		explicit_bzero(auth, strlen(auth));

	r = http_transfer_new(0, &req->t);
	if (r < 0)
		return r;
	if (stream)
		http_transfer_set_line_fn(req->t, stream_line);
	e = http_transfer_easy(req->t);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (req->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long) strlen(req->body));
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, req->headers);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	/* Watches run until the server ends them (timeoutSeconds); a dead peer is found by keepalive. */
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, stream ? 0L : c->total_ms);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 5L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 2L);
	/* Like the etcd client: the API server is reached directly, never through an env proxy. */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");

	if (k->insecure_skip_tls_verify) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (k->ca_data) {
		struct curl_blob b = { .data = k->ca_data, .len = k->ca_size, .flags = CURL_BLOB_COPY };
		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
	} else if (k->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, k->ca_file);
	if (k->cert_data) {
		struct curl_blob b = { .data = k->cert_data, .len = k->cert_size, .flags = CURL_BLOB_COPY };
		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
	} else if (k->cert_file)
		curl_easy_setopt(e, CURLOPT_SSLCERT, k->cert_file);
	if (k->key_data) {
		struct curl_blob b = { .data = k->key_data, .len = k->key_size, .flags = CURL_BLOB_COPY };
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	} else if (k->key_file)
		curl_easy_setopt(e, CURLOPT_SSLKEY, k->key_file);
	return 0;
}

/* A finished transfer -> errno + parsed body; a Status object's message goes into last_error. */
static int request_result(KubeRequest *req, CURLcode code, json_t **ret) {
	KubeClient *c = req->client;
	const char *server = c->cfg->server, *body;
	json_error_t jerr;
	size_t len;
	long http;
	json_t *j;
	int r;

	if (ret)
		*ret = NULL;
	if (http_transfer_abort_error(req->t) < 0)
		return http_transfer_abort_error(req->t);
	if (code != CURLE_OK) {
		r = http_curl_code_to_errno(code);
		set_error(c, "%s: %s: %s", server, req->what, http_transfer_error_text(req->t, code));
		return r;
	}
	http = http_transfer_status(req->t);
	body = http_transfer_body(req->t, &len);

	if (req->stream && http >= 200 && http < 300) {
		set_error(c, "%s: %s: watch ended by the server", server, req->what);
		return 0;
	}

	j = len > 0 ? json_loadb(body, len, 0, &jerr) : NULL;
	if (http < 200 || http >= 300) {
		json_t *m = json_object_get(j, "message"), *reason = json_object_get(j, "reason");
		char cred[384] = "";

		r = http_status_to_errno(http);
		if (http == 401 || http == 403)
			(void) credentials(c, cred, sizeof(cred));
		set_error(c, "%s: %s: HTTP %ld %s: %s%s%s%s", server, req->what, http,
			  json_is_string(reason) ? json_string_value(reason)
			  : http == 401          ? "Unauthorized"
			  : http == 403          ? "Forbidden"
						 : "",
			  json_is_string(m) ? json_string_value(m)
			  : len > 0         ? body
					    : "(no body)",
			  cred[0] ? " (" : "", cred, cred[0] ? ")" : "");
		json_decref(j);
		return r;
	}
	if (!json_is_object(j)) {
		set_error(c, "%s: %s: malformed response: %s", server, req->what, j ? "not an object" : jerr.text);
		json_decref(j);
		return -EBADMSG;
	}
	if (ret)
		*ret = j;
	else
		json_decref(j);
	return 0;
}

int kube_client_call(KubeClient *c, const char *method, const char *path, const char *content_type, const char *body,
		     json_t **ret) {
	_cleanup_(request_freep) KubeRequest *req = calloc(1, sizeof(KubeRequest));
	CURLcode code;
	int r;

	if (!req)
		return -ENOMEM;
	r = request_setup(c, req, method, path, content_type, body, false);
	if (r < 0)
		return r;
	code = http_transfer_perform(req->t, req);
	return request_result(req, code, ret);
}

/* ---- non-blocking ---- */

static void request_done(HttpTransfer *t, CURLcode code, void *userdata) {
	KubeRequest *req = userdata;
	KubeClient *c = req->client;
	json_t *resp = NULL;
	int r;

	r = request_result(req, code, &resp);
	req->t = NULL; /* the multi frees the transfer after we return */
	req->in_done = true;
	if (req->done)
		req->done(c, r, r < 0 ? NULL : resp, req->userdata);
	json_decref(resp);
	request_free(req);
}

static int start_async(KubeClient *c, const char *method, const char *path, const char *content_type, const char *body,
		       bool stream, KubeWatchFn on_event, KubeDoneFn done, void *userdata, KubeRequest **ret) {
	_cleanup_(request_freep) KubeRequest *req = NULL;
	int r;

	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	r = request_setup(c, req, method, path, content_type, body, stream);
	if (r < 0)
		return r;
	req->on_event = on_event;
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

int kube_client_call_async(KubeClient *c, const char *method, const char *path, const char *content_type,
			   const char *body, KubeDoneFn done, void *userdata, KubeRequest **ret) {
	return start_async(c, method, path, content_type, body, false, NULL, done, userdata, ret);
}

int kube_client_watch(KubeClient *c, const char *path, KubeWatchFn on_event, KubeDoneFn done, void *userdata,
		      KubeRequest **ret) {
	return start_async(c, "GET", path, NULL, NULL, true, on_event, done, userdata, ret);
}

void kube_request_cancel(KubeRequest *req) {
	if (!req)
		return;
	req->on_event = NULL;
	req->done = NULL;
	if (!req->in_done)
		request_free(req);
}

int kube_client_get_fd(KubeClient *c) {
	return http_multi_get_fd(c->multi);
}

int kube_client_dispatch(KubeClient *c) {
	return http_multi_dispatch(c->multi);
}

int kube_client_next_timeout_ms(KubeClient *c) {
	return http_multi_next_timeout_ms(c->multi);
}

void kube_client_set_wakeup(KubeClient *c, uint64_t deadline_usec) {
	http_multi_set_wakeup(c->multi, deadline_usec);
}
