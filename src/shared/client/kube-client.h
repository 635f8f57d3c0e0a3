/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A minimal Kubernetes API client on libcurl: JSON requests with bearer-token or client-certificate
 * auth over https (CA from the kubeconfig), and list/watch streams (?watch=1: one JSON event per
 * line, {"type": "ADDED|MODIFIED|DELETED|BOOKMARK|ERROR", "object": {...}}).
 *
 * Two ways to talk, like etcd-client.h:
 *  - blocking (kube_client_call): for start-up and shutdown (acquire/release);
 *  - non-blocking (kube_client_call_async, kube_client_watch): transfers on one curl multi handle
 *    behind ONE pollable fd (http-multi.h). The owner polls kube_client_get_fd() for EPOLLIN and
 *    calls kube_client_dispatch(), which never blocks.
 *
 * Errors: transport -> -ECONNREFUSED / -ETIMEDOUT / -EHOSTUNREACH / -ECONNRESET / -EPROTO (TLS);
 * HTTP status -> 401 -EACCES, 403 -EPERM, 404 -ENOENT, 409 -EEXIST, 410 -ESTALE (resourceVersion
 * too old), 422/400 -EINVAL, 429 and 5xx -EAGAIN, other -EIO. kube_client_last_error() has the text,
 * with the server's Status message.
 */

#include <jansson.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/client/kubeconfig.h"

typedef struct KubeClient KubeClient;
typedef struct KubeRequest KubeRequest;

/* Takes ownership of *cfg on success (sets it to NULL). */
int kube_client_new(KubeConfig **cfg, KubeClient **ret);
KubeClient *kube_client_free(KubeClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeClient *, kube_client_free);

const KubeConfig *kube_client_config(const KubeClient *c);
/* Timeouts for blocking and non-streaming async calls; defaults 2000 and 10000 ms. */
void kube_client_set_timeouts(KubeClient *c, long connect_ms, long total_ms);
/* Text of the last failure ("" if none). Owned by c. */
const char *kube_client_last_error(const KubeClient *c);

/*
 * Blocking request. path is absolute ("/api/v1/nodes/n1"); body (may be NULL) is sent with
 * content_type (NULL = application/json). *ret (optional) is the parsed 2xx response object.
 */
int kube_client_call(KubeClient *c, const char *method, const char *path, const char *content_type, const char *body,
		     json_t **ret);

/* ---- non-blocking ---- */

int kube_client_get_fd(KubeClient *c);
int kube_client_dispatch(KubeClient *c);
int kube_client_next_timeout_ms(KubeClient *c);
/* Owner's own timer: the fd becomes readable at this CLOCK_MONOTONIC time (usec; 0 = none). */
void kube_client_set_wakeup(KubeClient *c, uint64_t deadline_usec);

/* Completion: error < 0 with resp NULL, or 0 with the response object (borrowed; NULL for a watch
 * that the server ended normally, e.g. at timeoutSeconds). The request is gone afterwards. */
typedef void (*KubeDoneFn)(KubeClient *c, int error, json_t *resp, void *userdata);
/* One watch event; object is borrowed. Return < 0 to end the watch with that error. */
typedef int (*KubeWatchFn)(KubeClient *c, const char *type, json_t *object, void *userdata);

int kube_client_call_async(KubeClient *c, const char *method, const char *path, const char *content_type,
			   const char *body, KubeDoneFn done, void *userdata, KubeRequest **ret);
/* A watch (path carries the query, "...?watch=1&resourceVersion=N"): no total timeout; a dead
 * server is found by TCP keepalive. */
int kube_client_watch(KubeClient *c, const char *path, KubeWatchFn on_event, KubeDoneFn done, void *userdata,
		      KubeRequest **ret);
/* Stops a request without calling its callbacks. Safe from inside callbacks. NULL is fine. */
void kube_request_cancel(KubeRequest *r);
