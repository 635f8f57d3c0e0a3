/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A tiny HTTP/1.0 server inside weftd's loop, for /healthz and /metrics. Non-blocking throughout:
 * one request per connection, answered and closed; requests larger than 4 KiB, more than 32
 * connections at once, or connections idle for more than 5 s are dropped.
 */

#include <sys/socket.h>

#include "basic/macro.h"
#include "event/event-loop.h"

typedef struct HttpServer HttpServer;

typedef struct HttpResponse {
	int status;                     /* 200, 404, 503 ... */
	const char *content_type;       /* static string */
	char *body;                     /* malloc'ed, freed by the server */
} HttpResponse;

/* Fills *resp for one request. Return < 0 to answer 500. */
typedef int (*HttpHandlerFn)(const char *method, const char *path, HttpResponse *resp, void *userdata);

/* "127.0.0.1:9876", "[::1]:9876", ":9876" (all addresses). 0 or -EINVAL. */
int http_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);
/* Splits "GET /metrics HTTP/1.1" into method and path (query string dropped). 0 or -EINVAL. */
int http_parse_request_line(const char *line, char method[static 16], char path[static 256]);

int http_server_new(EventLoop *e, const char *listen, HttpHandlerFn handler, void *userdata, HttpServer **ret);
HttpServer *http_server_free(HttpServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpServer *, http_server_free);
