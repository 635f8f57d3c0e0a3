/* SPDX-License-Identifier: Apache-2.0 */
#include <stddef.h>

#include "basic/string-util.h"
#include "daemon/datastore.h"

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
