/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>

#include "basic/string-util.h"
#include "daemon/datastore/datastore.h"

const DatastoreOps *datastore_ops_find(const char *kind) {
	static const DatastoreOps *const table[] = {
		&datastore_etcd_ops,
		&datastore_kube_ops,
	};

	if (!kind)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (streq(table[i]->kind, kind))
			return table[i];
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
