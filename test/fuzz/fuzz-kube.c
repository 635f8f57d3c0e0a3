/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what weftd reads from the Kubernetes API, where every kubelet writes its own Node: a
 * NodeList (the LIST), watch events ({"type", "object"} per line of the ?watch=1 stream) and the
 * Node objects in them (datastore_kube_node_parse: podCIDRs and the weft.dev annotations).
 * Every ready node goes through the import filter (fuzz-leases.h).
 *
 * Input: one JSON document (a NodeList, an event or a Node), or a watch stream of one event per
 * line.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "fuzz-leases.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

typedef struct Leases {
	NodeLease l[FUZZ_LEASES_MAX];
	size_t n;
} Leases;

static void node(const json_t *obj, Leases *ls) {
	NodeLease l = {};
	int r;

	if (ls->n >= FUZZ_LEASES_MAX)
		return;
	r = datastore_kube_node_parse(obj, &l);
	if (r < 0)
		return;
	fuzz_check_lease_fields(&l);
	if (r > 1)
		abort();
	if (r == 1)
		ls->l[ls->n++] = l;
	else
		node_lease_done(&l);
}

static void document(const json_t *j, Leases *ls) {
	const json_t *items = json_object_get(j, "items"), *obj = json_object_get(j, "object"), *v;
	size_t i;

	if (json_is_array(items))
		json_array_foreach(items, i, v)
			node(v, ls);
	else if (json_is_object(obj))
		node(obj, ls);
	else
		node(j, ls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	_cleanup_free_ char *text = NULL;
	Leases ls = {};
	json_t *j;

	if (size > MAX_INPUT)
		return 0;
	text = strndup((const char *) data, size);
	if (!text)
		return 0;

	j = json_loads(text, 0, NULL);
	if (j)
		document(j, &ls);
	else
		/* A watch stream: one event per line. */
		for (char *line = text, *next; line && *line; line = next) {
			next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			j = json_loads(line, 0, NULL);
			if (j)
				document(j, &ls);
			json_decref(j);
			j = NULL;
		}
	json_decref(j);

	fuzz_check_leases(ls.l, NULL, ls.n);
	for (size_t i = 0; i < ls.n; i++)
		node_lease_done(&ls.l[i]);
	return 0;
}
