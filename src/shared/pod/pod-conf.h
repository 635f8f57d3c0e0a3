/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Plugin config keys read the way Go's encoding/json fills the reference plugins' structs: the
 * key matches case-insensitively (an exact match wins), absent or null keeps the default, and a
 * value of the wrong JSON type is an error. Every error is code 7 naming the key and the value:
 *     invalid "mtu": "1500" (must be an integer)
 * Used by the plugins that came after bridge (ptp, macvlan, ipvlan, vlan, host-device).
 *
 * The pod_conf_value_*() forms check a value the caller looked up itself (bridge and portmap
 * match their keys exactly, and vlanTrunk's come from nested objects); v NULL or JSON null =
 * absent, keeps the default; `key` is how the value is named in errors.
 */

#include <jansson.h>
#include <stdbool.h>

#include "shared/cni/cni-plugin.h"

/* Fails with `invalid "<key>": <json value> (<why>)`, code 7. Returns -EINVAL. */
int pod_conf_invalid(CniRequest *req, const char *key, json_t *v, const char *why);

int pod_conf_value_bool(CniRequest *req, const char *key, json_t *v, bool *ret);
int pod_conf_value_int(CniRequest *req, const char *key, json_t *v, json_int_t *ret, bool *ret_set);
int pod_conf_value_mtu(CniRequest *req, json_t *v, unsigned *ret);

/* `key` of req->config. */
int pod_conf_bool(CniRequest *req, const char *key, bool *ret);
int pod_conf_int(CniRequest *req, const char *key, json_int_t *ret, bool *ret_set);
/* *ret points into req->config (NULL when absent or null). */
int pod_conf_string(CniRequest *req, const char *key, const char **ret);
/* "mtu": absent/0 = kernel default (0), else 68..65535. */
int pod_conf_mtu(CniRequest *req, unsigned *ret);
/* A link name key ("master", "device"): a string the kernel would accept as an interface name. */
int pod_conf_ifname(CniRequest *req, const char *key, const char **ret);
/* The plugin has an IPAM plugin to run ("ipam" has a non-empty "type"). */
bool pod_conf_has_ipam(const CniRequest *req);
