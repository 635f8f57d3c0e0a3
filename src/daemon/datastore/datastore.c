/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "daemon/datastore/datastore.h"
#include "daemon/wireguard/wg-key.h"

static const char *const datastore_kind_table[_DATASTORE_KIND_MAX] = {
	[DATASTORE_ETCD] = "etcd",
	[DATASTORE_KUBERNETES] = "kubernetes",
};

const char *datastore_kind_to_string(DatastoreKind k) {
	return (unsigned) k < _DATASTORE_KIND_MAX ? datastore_kind_table[k] : NULL;
}

int datastore_kind_from_string(const char *s, DatastoreKind *ret) {
	for (size_t i = 0; i < ELEMENTSOF(datastore_kind_table); i++)
		if (streq_ptr(s, datastore_kind_table[i])) {
			*ret = (DatastoreKind) i;
			return 0;
		}
	return -EINVAL;
}

const DatastoreOps *datastore_ops_find(DatastoreKind kind) {
	switch (kind) {
	case DATASTORE_ETCD: return &datastore_etcd_ops;
	case DATASTORE_KUBERNETES: return &datastore_kube_ops;
	case _DATASTORE_KIND_MAX: break;
	}
	return NULL;
}

/* Kubernetes' IsDNS1123Subdomain: [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*,
 * at most 253 characters. */
bool node_name_valid(const char *name) {
	size_t n = 0;
	char prev = '.';

	if (!name)
		return false;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (n >= NODE_NAME_MAX)
			return false;
		if (c == '.') {
			if (prev == '.' || prev == '-')
				return false; /* empty label, or one ending in '-' */
		} else if (c == '-') {
			if (prev == '.')
				return false; /* a label starting with '-' */
		} else if (!alnum)
			return false;
		prev = c;
	}
	return n > 0 && prev != '.' && prev != '-';
}

int node_lease_set_name(NodeLease *l, const char *name) {
	char *n = NULL;

	if (name) {
		n = strdup(name);
		if (!n)
			return -ENOMEM;
	}
	free(l->node_name);
	l->node_name = n;
	return 0;
}

int node_lease_copy(NodeLease *dst, const NodeLease *src) {
	NodeLease c = *src;

	c.node_name = NULL;
	if (node_lease_set_name(&c, src->node_name) < 0)
		return -ENOMEM;
	*dst = c;
	return 0;
}

bool node_lease_equal(const NodeLease *a, const NodeLease *b) {
	return streq_ptr(a->node_name, b->node_name) && ip_prefix_equal(&a->subnet, &b->subnet) &&
	       ip_prefix_equal(&a->subnet6, &b->subnet6) && ip_addr_equal(&a->public_ip, &b->public_ip) &&
	       ip_addr_equal(&a->public_ip6, &b->public_ip6) && streq(a->backend, b->backend) &&
	       a->has_vtep_mac == b->has_vtep_mac && (!a->has_vtep_mac || memcmp(a->vtep_mac, b->vtep_mac, 6) == 0) &&
	       a->has_public_key == b->has_public_key &&
	       (!a->has_public_key || memcmp(a->public_key, b->public_key, sizeof(a->public_key)) == 0) &&
	       a->created == b->created && a->invalid == b->invalid;
}

int lease_public_key_parse(const char *s, NodeLease *l) {
	WgKey k;

	_Static_assert(sizeof(l->public_key) == WG_KEY_LEN, "public_key holds one WireGuard key");
	if (!s || wg_key_from_base64(s, &k) < 0)
		return -EINVAL;
	memcpy(l->public_key, k.b, WG_KEY_LEN);
	return 0;
}

void node_lease_done(NodeLease *l) {
	if (!l)
		return;
	l->node_name = mfree(l->node_name);
}

void node_leases_free(NodeLease *l, size_t n) {
	if (!l)
		return;
	for (size_t i = 0; i < n; i++)
		node_lease_done(&l[i]);
	free(l);
}
