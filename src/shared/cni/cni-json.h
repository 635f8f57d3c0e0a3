/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal JSON helpers of the CNI library (not for plugins). */

#include <jansson.h>

/*
 * Object member lookup the way Go's encoding/json matches struct fields, which is what the
 * reference plugins (and so every runtime) rely on: an exact key wins, otherwise the first
 * case-insensitive match. This is why containerd's "HostPort" and podman's "hostPort" both work.
 * Returns a borrowed reference or NULL.
 */
json_t *cni_json_get(json_t *obj, const char *key);

/* Array of strings -> strv (NULL-terminated, never NULL on success). -EINVAL on a wrong type. */
int cni_json_strv(json_t *arr, char ***ret);

/* Appends each string of a strv to a new JSON array; NULL on OOM. */
json_t *cni_json_from_strv(char *const *l);

/* json_string() that never fails on bad UTF-8: messages quote caller input (env, CNI_ARGS),
 * which may be any bytes; invalid sequences become '?'. NULL only on OOM. */
json_t *cni_json_string_lossy(const char *s);
