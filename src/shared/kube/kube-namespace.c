/* SPDX-License-Identifier: Apache-2.0 */
/* Namespace decoder: metadata only, with the kubernetes.io/metadata.name label pinned. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

#define LABEL_NAMESPACE_NAME "kubernetes.io/metadata.name"

/*
 * The API server pins kubernetes.io/metadata.name to the Namespace's name whatever was written,
 * and policies select namespaces by it ("namespaceSelector: {matchLabels:
 * {kubernetes.io/metadata.name: victim}}"). A source without an API server (etcd) would let a
 * namespace claim another's name: set it here, for every source alike.
 */
static int namespace_pin_name_label(Meta *m, DecodeError *err) {
	const char *buf[17], **pairs = buf, **set;
	_cleanup_free_ const char **heap = NULL;
	size_t n = 0;

	if (m->n_labels >= UINT16_MAX)
		return decode_error(err, "metadata.labels: too many labels");

	if (m->n_labels + 1 > ELEMENTSOF(buf)) {
		pairs = heap = calloc(m->n_labels + 1, sizeof(char *));
		if (!pairs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_labels; i++)
		if (label_pair_key_len(m->labels[i]) != strlen(LABEL_NAMESPACE_NAME) ||
		    !startswith(m->labels[i], LABEL_NAMESPACE_NAME "="))
			pairs[n++] = string_pool_ref(m->labels[i]);
	pairs[n] = string_pool_intern_pair(m->pool, LABEL_NAMESPACE_NAME, m->name);
	if (!pairs[n]) {
		while (n > 0)
			string_pool_unref(m->pool, pairs[--n]);
		return -ENOMEM;
	}
	n++;
	label_pairs_sort(pairs, n);
	set = string_pool_intern_labels(m->pool, pairs, n); /* takes the pair references */
	if (!set)
		return -ENOMEM;
	if (m->interned)
		string_pool_unref_labels(m->pool, m->labels);
	m->labels = set;
	m->n_labels = n;
	m->interned = true;
	return 0;
}

int ko_namespace_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(ko_meta_done) Meta m = {};
	KubeNamespace *n;
	int r;

	r = ko_meta_parse(j, false, dns_label_valid, pool, &m, err);
	if (r < 0)
		return r;
	r = namespace_pin_name_label(&m, err);
	if (r < 0)
		return r;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (ko_meta_move(&m, KUBE_KIND_NAMESPACE, &n->meta) < 0) {
		free(n);
		return -ENOMEM;
	}
	*ret = &n->meta;
	return 0;
}
