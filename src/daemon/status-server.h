/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A tiny HTTP/1.0 server inside weftd's loop, for /healthz, /metrics and /debug. Non-blocking throughout:
 * one request per connection, answered and closed; requests larger than 4 KiB, more than 32
 * connections at once, or connections idle for more than 5 s are dropped.
 */

#include <sys/socket.h>

#include "basic/macro.h"
#include "shared/event/event-loop.h"

typedef struct StatusServer StatusServer;

typedef struct StatusResponse {
	int status;               /* 200, 404, 503 ... */
	const char *content_type; /* static string */
	char *body;               /* malloc'ed, freed by the server */
} StatusResponse;

/* Fills *resp for one request; query is what followed '?' ("" if nothing). Return < 0 to answer 500. */
typedef int (*StatusHandlerFn)(const char *method, const char *path, const char *query, StatusResponse *resp,
			       void *userdata);

/* "127.0.0.1:9876", "[::1]:9876", ":9876" (all addresses). 0 or -EINVAL. */
int status_server_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);
/* Splits "GET /metrics HTTP/1.1" into method and path (query string dropped). 0 or -EINVAL. */
int status_server_parse_request_line(const char *line, char method[static 16], char path[static 256]);
/* The query string of a request line ("kind=pods&namespace=x"; "" if none, or longer than 255). */
void status_server_parse_query(const char *line, char query[static 256]);
/* The value of `key` in a query string ("kind=pods&namespace=x"), %XX and '+' decoded (enough for
 * namespace/pod names and IPv6 addresses); NULL if absent or out of memory. The caller frees it. */
char *status_server_query_get(const char *query, const char *key);

/*
 * Answers some requests apart from the loop (weftd's /healthz while a long sync holds the loop):
 * a thread with its own small loop takes over the listening socket and reads each request; the
 * front handler answers it there, or returns STATUS_DEFER and the connection is handed to the
 * main loop, whose handler answers it as before. The front handler runs in that thread: it may
 * read only what is safe to read from another thread (atomics). 0, -EBUSY (started already) or -errno.
 */
#define STATUS_DEFER 1
int status_server_start_front(StatusServer *s, StatusHandlerFn front_handler, void *userdata);

int status_server_new(EventLoop *e, const char *listen, StatusHandlerFn handler, void *userdata, StatusServer **ret);
StatusServer *status_server_free(StatusServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(StatusServer *, status_server_free);
