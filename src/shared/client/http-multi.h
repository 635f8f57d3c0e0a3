/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libcurl's multi interface behind ONE pollable fd, shared by the datastore clients (etcd-client.c,
 * kube-client.c). The fd is an inner epoll set over curl's sockets plus a timerfd armed to the
 * earlier of curl's timeout and the owner's wakeup (http_multi_set_wakeup). The owner polls
 * http_multi_get_fd() for EPOLLIN and calls http_multi_dispatch(), which never blocks.
 *
 * An HttpTransfer is one curl easy handle plus its response buffer. The caller configures the
 * request on http_transfer_easy() (URL, method, headers, TLS...) and either runs it blocking
 * (http_transfer_perform) or hands it to a multi (http_multi_add), which then owns it.
 * Streaming responses (etcd's watch, Kubernetes' ?watch=1) deliver every complete line of a 2xx
 * body to the line callback as it arrives; a partial line stays buffered until its newline.
 * Non-2xx bodies are collected whole (they are error objects) and read with http_transfer_body().
 */

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

typedef struct HttpMulti HttpMulti;
typedef struct HttpTransfer HttpTransfer;

/* One line (without its '\n') of a streamed 2xx body; return < 0 to abort the transfer with it. */
typedef int (*HttpLineFn)(HttpTransfer *t, const char *line, size_t len, void *userdata);
/* A finished transfer (not called when cancelled). The multi frees t after this returns. */
typedef void (*HttpDoneFn)(HttpTransfer *t, CURLcode code, void *userdata);

uint64_t http_now_usec(void); /* CLOCK_MONOTONIC */

int http_multi_new(HttpMulti **ret);
/* Frees every transfer still on it, without calling their callbacks. */
HttpMulti *http_multi_free(HttpMulti *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpMulti *, http_multi_free);

int http_multi_get_fd(HttpMulti *m);
/* Runs curl for whatever is ready and completes finished transfers (calling `done`). Never blocks. */
int http_multi_dispatch(HttpMulti *m);
/* Milliseconds until dispatch() has timer work (curl's or the owner's wakeup); -1 = none. */
int http_multi_next_timeout_ms(HttpMulti *m);
/* The owner's own timer: the fd becomes readable at this CLOCK_MONOTONIC time (usec; 0 = none). */
void http_multi_set_wakeup(HttpMulti *m, uint64_t deadline_usec);

/*
 * SO_MARK for the sockets of every transfer created after this call (0: none, the default). weftd
 * marks its datastore and API server connections so that its own Service rules leave them alone
 * (service-compile.h, SVC_SELF_MARK). Needs CAP_NET_ADMIN; without it the socket stays unmarked.
 */
void http_set_socket_mark(uint32_t mark);

/* A new transfer with its write callback, error buffer and NOSIGNAL set. Responses larger than
 * max_response bytes (0 = 64 MiB) fail it. */
int http_transfer_new(size_t max_response, HttpTransfer **ret);
/* Detaches it from its multi if it is on one. NULL-safe. Not from inside its own callbacks. */
HttpTransfer *http_transfer_free(HttpTransfer *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(HttpTransfer *, http_transfer_free);

CURL *http_transfer_easy(HttpTransfer *t);
/* Makes it a stream: complete lines of a 2xx body go to on_line instead of the buffer. */
void http_transfer_set_line_fn(HttpTransfer *t, HttpLineFn on_line);
/* Blocking: runs the transfer with curl_easy_perform (userdata for on_line). */
CURLcode http_transfer_perform(HttpTransfer *t, void *userdata);
/* Starts it on m. On success m owns t (freed after `done`, or by cancel / http_multi_free). */
int http_multi_add(HttpMulti *m, HttpTransfer *t, HttpDoneFn done, void *userdata);
/* Stops a transfer that is on a multi without calling its callbacks; t is gone afterwards (freed
 * now, or by the next dispatch when called from inside curl's callbacks). NULL is fine. */
void http_transfer_cancel(HttpTransfer *t);

long http_transfer_status(HttpTransfer *t); /* HTTP status, 0 if none yet */
/* The buffered body (NUL-terminated; for streams whatever has not been handed out as lines). */
const char *http_transfer_body(HttpTransfer *t, size_t *ret_len);
/* < 0 if the line callback or the buffer limit aborted the transfer. */
int http_transfer_abort_error(HttpTransfer *t);
/* curl's error text for a failed transfer (or curl_easy_strerror(code) if curl left none). */
const char *http_transfer_error_text(HttpTransfer *t, CURLcode code);

/* libcurl result -> negative errno (CURLE_COULDNT_CONNECT -> -ECONNREFUSED, ...). */
int http_curl_code_to_errno(CURLcode code);
