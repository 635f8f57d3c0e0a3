/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what weftd reads from etcd, which every node (and anyone else with access to the prefix)
 * can write: the gateway's JSON responses (range, txn, lease keepalive) and watch stream messages
 * (etcd-client.c: etcd_range_parse, etcd_txn_parse, etcd_lease_keepalive_parse, etcd_kv_decode),
 * and each lease key/value they carry (datastore_etcd_lease_parse). Every lease read goes through
 * the import filter (fuzz-leases.h).
 *
 * Input: the whole input is one JSON document, read as each kind of response and as a watch
 * message ({"result": {"events": [{"type", "kv"}]}}). Independently, its first line is a key and
 * the rest the value of one lease: mutating the value's JSON directly is much easier than
 * mutating it inside base64.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "shared/client/etcd-client.h"
#include "fuzz-leases.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)
#define SUBNETS "/weft/network/subnets/"

typedef struct Leases {
	NodeLease l[FUZZ_LEASES_MAX];
	char *keys[FUZZ_LEASES_MAX];
	size_t n;
} Leases;

static void add_kv(Leases *ls, const char *key, const char *value, int64_t created) {
	NodeLease l = {};

	if (ls->n >= FUZZ_LEASES_MAX || datastore_etcd_lease_parse(SUBNETS, key, value, &l) < 0)
		return;
	fuzz_check_lease_fields(&l);
	l.created = created;
	ls->keys[ls->n] = strdup(key);
	if (!ls->keys[ls->n]) {
		node_lease_done(&l);
		return;
	}
	l.key = ls->keys[ls->n];
	ls->l[ls->n++] = l;
}

static void responses(const json_t *j, Leases *ls) {
	_cleanup_(etcd_kv_done) EtcdKv existing = {};
	const json_t *res, *evs, *ev;
	EtcdKv *kvs = NULL;
	size_t n = 0, i;
	int64_t rev, ttl;
	bool ok;

	if (etcd_range_parse(j, &kvs, &n, &rev) >= 0) {
		for (i = 0; i < n; i++) {
			if (!kvs[i].key || !kvs[i].value || strlen(kvs[i].value) > kvs[i].value_size)
				abort();
			add_kv(ls, kvs[i].key, kvs[i].value, kvs[i].create_revision);
		}
		etcd_kvs_free(kvs, n);
	}
	if (etcd_txn_parse(j, &ok, &existing) >= 0 && existing.key)
		add_kv(ls, existing.key, existing.value, existing.create_revision);
	(void) etcd_lease_keepalive_parse(j, &ttl);

	/* A watch message, walked as datastore-etcd.c's on_watch_message() does. */
	res = json_object_get(j, "result");
	(void) etcd_json_int64(res, "compact_revision");
	evs = json_object_get(res, "events");
	json_array_foreach(evs, i, ev) {
		_cleanup_(etcd_kv_done) EtcdKv kv = {};
		const json_t *type = json_object_get(ev, "type");
		bool del = json_is_string(type) && strcmp(json_string_value(type), "DELETE") == 0;

		if (etcd_kv_decode(json_object_get(ev, "kv"), &kv) < 0)
			continue;
		add_kv(ls, kv.key, del ? NULL : kv.value, kv.create_revision);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	_cleanup_free_ char *text = NULL;
	Leases ls = {};
	json_t *j;
	char *nl;

	if (size > MAX_INPUT)
		return 0;
	text = strndup((const char *) data, size);
	if (!text)
		return 0;

	j = json_loads(text, 0, NULL);
	if (j)
		responses(j, &ls);
	json_decref(j);

	nl = strchr(text, '\n');
	if (nl) {
		*nl = 0;
		add_kv(&ls, text, nl + 1, 0);
		add_kv(&ls, text, NULL, 0); /* a DELETE carries only the key */
	}

	fuzz_check_leases(ls.l, (const char *const *) ls.keys, ls.n);
	for (size_t i = 0; i < ls.n; i++) {
		free(ls.keys[i]);
		node_lease_done(&ls.l[i]);
	}
	return 0;
}
