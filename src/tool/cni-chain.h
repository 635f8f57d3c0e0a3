/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Running a network configuration list against one attachment: libcni's AddNetworkList /
 * CheckNetworkList / DelNetworkList / GCNetworkList / GetStatusNetworkList. Plugin failures are
 * logged here with the plugin's type (this is the tool's boundary) and returned in *err exactly
 * as the plugin printed them.
 */

#include <jansson.h>
#include <stddef.h>

#include "shared/cni/cni-plugin.h"
#include "shared/cni/cni-types.h"
#include "tool/cni-conf-load.h"

typedef struct CniRuntime {
	const char *container_id;
	const char *netns; /* "" when there is none (DEL of a gone sandbox, GC, STATUS) */
	const char *ifname;
	json_t *cni_args;     /* [[key, value], ...] or NULL: CNI_ARGS for the plugins, cached */
	json_t *cap_args;     /* capability args object or NULL: filtered into runtimeConfig */
	const char *cni_path; /* colon separated plugin search path */
	const char *cache_dir;
} CniRuntime;

/*
 * ADD: runs the plugins in order, each with the previous result as prevResult (converted to the
 * list's cniVersion). If a plugin fails, the plugins already added are DELeted in reverse order
 * before the error is returned. On success the attachment is cached and *ret_result is the last
 * plugin's result (new reference).
 */
int cni_chain_add(const CniNetConfList *l, const CniRuntime *rt, json_t **ret_result, CniError *err);

/* DEL: reverse order, best effort (every plugin is called; first error returned), with the cached
 * result as prevResult from 0.4.0 on. The cache entry is removed once every plugin succeeded. */
int cni_chain_del(const CniNetConfList *l, const CniRuntime *rt, CniError *err);

/* CHECK (0.4.0+): in order, with the cached result; an error if nothing is cached. A no-op for
 * lists with disableCheck. */
int cni_chain_check(const CniNetConfList *l, const CniRuntime *rt, CniError *err);

/*
 * GC: DELs every cached attachment of the network not in `valid` (with the config and args it was
 * added with, so this works after the network's config changed), then, for 1.1.0+ lists, sends
 * GC with "cni.dev/valid-attachments" to every plugin. Only rt->cni_path and rt->cache_dir are
 * used. A no-op for lists with disableGC. Best effort; first error returned.
 */
int cni_chain_gc(const CniNetConfList *l, const CniRuntime *rt, const CniAttachment *valid, size_t n_valid,
		 CniError *err);

/* STATUS (1.1.0+; older lists succeed): every plugin in order, first error returned. */
int cni_chain_status(const CniNetConfList *l, const CniRuntime *rt, CniError *err);

/* VERSION of plugin `type`; *ret gets its JSON answer (new reference). */
int cni_plugin_version(const char *type, const char *cni_path, json_t **ret, CniError *err);
