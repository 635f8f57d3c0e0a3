/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A small etcd v3 client over etcd's JSON gateway (POST /v3/kv/range etc., keys and values base64,
 * int64s as JSON strings), on libcurl.
 *
 * Two ways to talk:
 *  - blocking (etcd_client_call and the etcd_* helpers): an easy handle with short timeouts, for
 *    start-up. Tries each endpoint in turn, starting with the last one that worked.
 *  - non-blocking (etcd_client_call_async, etcd_client_stream): transfers on one curl multi handle
 *    driven through ONE pollable fd: an inner epoll set over curl's sockets plus a timerfd armed to
 *    the earlier of curl's timeout and the owner's wakeup (etcd_client_set_wakeup). The owner polls
 *    etcd_client_get_fd() for EPOLLIN and calls etcd_client_dispatch(), which never blocks.
 *
 * Errors: -ECONNREFUSED / -ETIMEDOUT / -EHOSTUNREACH when no endpoint answers, etcd's gRPC status
 * mapped to errno otherwise (NOT_FOUND -> -ENOENT, OUT_OF_RANGE (compacted) -> -ERANGE, ...);
 * etcd_client_last_error() has the text.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

typedef struct EtcdClient EtcdClient;
typedef struct EtcdRequest EtcdRequest;

/* endpoints: "http://127.0.0.1:2379[,http://...]" (a missing scheme means http://). */
int etcd_client_new(const char *endpoints, EtcdClient **ret);
EtcdClient *etcd_client_free(EtcdClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdClient *, etcd_client_free);

/* Timeouts for the blocking calls and the non-streaming async ones; defaults 1000 and 5000 ms. */
void etcd_client_set_timeouts(EtcdClient *c, long connect_ms, long total_ms);
/* Text of the last failure ("" if none). Owned by c. */
const char *etcd_client_last_error(const EtcdClient *c);
/* The endpoint the next request goes to first. */
const char *etcd_client_current_endpoint(const EtcdClient *c);

/* Blocking POST of `req` (not consumed) to `path` ("/v3/kv/range"); *ret is the response object. */
int etcd_client_call(EtcdClient *c, const char *path, json_t *req, json_t **ret);

/* ---- non-blocking ---- */

int etcd_client_get_fd(EtcdClient *c);
/* Runs curl for whatever is ready, completes finished transfers (calling their callbacks). Never blocks. */
int etcd_client_dispatch(EtcdClient *c);
/* Milliseconds until dispatch() has timer work (curl or the owner's wakeup); -1 = none. */
int etcd_client_next_timeout_ms(EtcdClient *c);
/* Owner's own timer: the fd becomes readable at this CLOCK_MONOTONIC time (usec; 0 = none). */
void etcd_client_set_wakeup(EtcdClient *c, uint64_t deadline_usec);
uint64_t etcd_now_usec(void);

/*
 * Completion of an async call or the end of a stream: error < 0 with resp NULL, or 0 with the
 * response (borrowed; NULL for streams). The request is freed after the callback returns.
 */
typedef void (*EtcdDoneFn)(EtcdClient *c, int error, json_t *resp, void *userdata);
/* A streamed message (one line of the response); return < 0 to end the stream with that error. */
typedef int (*EtcdMessageFn)(EtcdClient *c, json_t *msg, void *userdata);

/* *ret (optional) is a borrowed handle for etcd_request_cancel(), valid until `done` runs. */
int etcd_client_call_async(EtcdClient *c, const char *path, json_t *req, EtcdDoneFn done, void *userdata,
			   EtcdRequest **ret);
/* A long-lived streaming POST (/v3/watch): on_message per JSON line, then done(error). No total timeout. */
int etcd_client_stream(EtcdClient *c, const char *path, json_t *req, EtcdMessageFn on_message, EtcdDoneFn done,
		       void *userdata, EtcdRequest **ret);
/* Stops a transfer without calling its callbacks. Safe from inside callbacks. NULL is fine. */
void etcd_request_cancel(EtcdRequest *r);

/* ---- v3 helpers ---- */

typedef struct EtcdKv {
	char *key;
	char *value; /* NUL-terminated, value_size without the NUL */
	size_t value_size;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t lease;
} EtcdKv;

void etcd_kv_done(EtcdKv *kv);
void etcd_kvs_free(EtcdKv *kvs, size_t n);

/* int64 member of a gateway object: a JSON string or number; absent = 0 (proto3 omits zeros). */
int64_t etcd_json_int64(const json_t *obj, const char *key);
/* A base64 JSON string for a key/value. NULL on OOM. */
json_t *etcd_json_bytes(const void *data, size_t len);
json_t *etcd_json_int64_new(int64_t v);
/* Decodes one "kv" object. */
int etcd_kv_decode(const json_t *kv, EtcdKv *ret);
/* The range_end that selects every key starting with prefix. malloc'ed. */
char *etcd_prefix_range_end(const char *prefix);

/* Request bodies (new references; NULL on OOM). */
json_t *etcd_range_request(const char *key, const char *range_end);
/* Txn: if the key's `target` ("CREATE"|"MOD") revision equals rev, put value with lease. */
json_t *etcd_txn_put_if_request(const char *key, const char *target, int64_t rev, const char *value, int64_t lease);

/* Parses a range response: kvs (free with etcd_kvs_free) and the store revision. */
int etcd_range_parse(const json_t *resp, EtcdKv **ret_kvs, size_t *ret_n, int64_t *ret_revision);

/* Blocking wrappers. */
int etcd_range(EtcdClient *c, const char *key, const char *range_end, EtcdKv **ret_kvs, size_t *ret_n,
	       int64_t *ret_revision);
int etcd_put(EtcdClient *c, const char *key, const char *value, int64_t lease);
int etcd_delete(EtcdClient *c, const char *key, const char *range_end);
/* *ret_succeeded tells whether the comparison held (and the put happened); if it did not,
 * *ret_existing (optional; key NULL if the key does not exist) is the key as it is now. */
int etcd_txn_put_if(EtcdClient *c, const char *key, const char *target, int64_t rev, const char *value, int64_t lease,
		    bool *ret_succeeded, EtcdKv *ret_existing);
int etcd_txn_parse(const json_t *resp, bool *ret_succeeded, EtcdKv *ret_existing);
int etcd_lease_grant(EtcdClient *c, int64_t ttl, int64_t *ret_id, int64_t *ret_ttl);
/* *ret_ttl = remaining TTL after the refresh; 0 means the lease no longer exists. */
int etcd_lease_keepalive(EtcdClient *c, int64_t id, int64_t *ret_ttl);
/* Keepalive responses come wrapped as a stream message: {"result": {"ID", "TTL"}}. */
int etcd_lease_keepalive_parse(const json_t *resp, int64_t *ret_ttl);
/* -ENOENT if the lease is already gone. */
int etcd_lease_revoke(EtcdClient *c, int64_t id);
