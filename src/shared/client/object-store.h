/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cluster's objects in etcd, as `weft apply` writes them and weftd reads them (its etcd object
 * source) and writes their status (the LoadBalancer assigner); docs/etcd-mode.md:
 *
 *   <prefix>/objects/<resource>/<namespace>/<name>    namespaced kinds
 *   <prefix>/objects/<resource>/<name>                cluster-scoped kinds
 *
 * value: the object's Kubernetes JSON, compact, with metadata.uid and metadata.creationTimestamp set
 * by the writer (kept across updates) and never a metadata.resourceVersion; readers set that to the
 * key's mod_revision.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "shared/client/etcd-client.h"
#include "shared/kube/kube-objects.h"

#define OBJECT_STORE_PREFIX_DEFAULT "/weft/network"
#define OBJECT_STORE_ENDPOINTS_DEFAULT "http://127.0.0.1:2379"
/* etcd's default --max-txn-ops: a bigger write goes in several transactions. */
#define OBJECT_STORE_MAX_TXN_OPS 128u

/* <prefix>/objects/<resource>/[<ns>/]<name> (trailing slashes of prefix ignored); malloc'ed, NULL on
 * OOM. */
char *object_key(const char *prefix, KubeKind kind, const char *ns, const char *name);
/* The key prefix of every object of a kind ("…/pods/"), or of one namespace ("…/pods/shop/"). */
char *object_key_prefix(const char *prefix, KubeKind kind, const char *ns);

/* One operation of a transaction. */
typedef enum ObjectOpType {
	OBJECT_OP_GET,          /* read key */
	OBJECT_OP_PUT,          /* put value at key */
	OBJECT_OP_DELETE,       /* delete key */
	OBJECT_OP_DELETE_PREFIX /* delete every key under key (a prefix) */
} ObjectOpType;

typedef struct ObjectOp {
	ObjectOpType type;
	const char *key;
	const char *value; /* PUT */
	bool compare;      /* only if the key's mod_revision is still expect_mod (0: absent) */
	int64_t expect_mod;
	/* results */
	EtcdKv kv;       /* GET: the key (kv.key NULL if absent); free with etcd_kv_done() */
	int64_t deleted; /* DELETE / DELETE_PREFIX: how many keys went */
} ObjectOp;

/* A compare on a key that is not written: its create_revision (create) or mod_revision equals
 * revision (0: the key does not exist). A writer fences its writes with the key it holds (the
 * LoadBalancer assigner's leader key): once the key is gone or someone else's, nothing is written. */
typedef struct ObjectGuard {
	const char *key;
	bool create;
	int64_t revision;
} ObjectGuard;

/* The transaction's request body (guards first, then each op's compare); NULL on OOM. */
json_t *object_store_txn_request(const ObjectOp *ops, size_t n, const ObjectGuard *guards, size_t n_guards);
/* Reads a transaction's response into ops (as object_store_txn()). 0 or -EBADMSG/-ENOMEM. */
int object_store_txn_parse(const json_t *resp, ObjectOp *ops, size_t n, bool *ret_succeeded, int64_t *ret_revision);

/*
 * Runs ops as one etcd transaction: if every compare holds, every op happens and *ret_succeeded is
 * true; else nothing happens. *ret_revision (optional): the store's revision after it. Results are
 * written into ops. 0 or a negative errno (etcd_client_last_error() has the text).
 */
int object_store_txn(EtcdClient *c, ObjectOp *ops, size_t n, bool *ret_succeeded, int64_t *ret_revision);
void object_ops_done(ObjectOp *ops, size_t n);

/* A random RFC 4122 version 4 UUID (what the API server puts in metadata.uid). buf: 37 bytes. */
int object_uid_new(char buf[static 37]);
/* Now as RFC 3339 UTC seconds, as metadata.creationTimestamp. buf: 21 bytes. */
void object_timestamp_now(char buf[static 21]);
