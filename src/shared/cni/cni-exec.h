/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Running other plugins: delegated IPAM from inside a plugin, and the chain runner of the
 * runtime tool. Both find the executable in a CNI_PATH-style search path, pass the given
 * environment, write the config to stdin, pass the child's stderr through, and parse stdout.
 */

#include <jansson.h>

#include "shared/cni/cni-plugin.h"
#include "shared/cni/cni-types.h"

/* Finds `type` in the colon-separated `path`. The type must be a plain file name (no '/',
 * not "." or ".."). Returns a malloc'ed path, or -ENOENT / -EINVAL. */
int cni_find_plugin(const char *type, const char *path, char **ret);

/*
 * Executes plugin `exe` with `envp` and `stdin_data`. On exit 0, *ret_out (if non-NULL) gets the
 * parsed stdout JSON (NULL if stdout was empty). On failure, returns negative errno and fills
 * *err from the plugin's JSON error (or a synthesized one naming the plugin, code 999).
 */
int cni_exec(const char *exe, char *const envp[], const char *stdin_data, size_t stdin_len, json_t **ret_out,
	     CniError *err);

/*
 * Delegates req->ipam "type" with CNI_COMMAND=cmd and the rest of this process's environment,
 * the full original config on stdin. For ADD, *ret gets the IPAM result (converted to the
 * canonical model). Errors from the delegate are copied into req->error unchanged.
 */
int cni_ipam_exec(CniRequest *req, CniCommand cmd, CniResult **ret);
