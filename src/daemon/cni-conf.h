/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The CNI network configuration list weftd installs for the container runtime:
 * <cni-conf-dir>/10-weft.conflist, written atomically and only once the node is ready (the
 * runtime treats the node's network as ready as soon as a conflist exists).
 *
 *   {"cniVersion":"1.0.0","name":"weft","plugins":[
 *      {"type":"weft","runDir":"/run/weft","hairpinMode":true,"isDefaultGateway":true
 *       [,"dataDir":"<host-local store>"]},
 *      {"type":"portmap","capabilities":{"portMappings":true},"snat":true}]}   <- only if installed
 */

#include <stdbool.h>

#define CNI_CONF_FILE_NAME "10-weft.conflist"
#define CNI_CONF_NETWORK_NAME "weft"

typedef struct CniConfParams {
	const char *run_dir;  /* where the weft plugin finds subnet.env */
	const char *data_dir; /* the weft plugin's address store; NULL = host-local's default */
	bool portmap;         /* add the portmap plugin */
} CniConfParams;

/* Renders the conflist JSON (pretty, trailing newline) into *ret (caller frees). 0 or -ENOMEM. */
int cni_conf_render(const CniConfParams *p, char **ret);
/* True if <bin_dir>/portmap exists and is executable. */
bool cni_conf_have_plugin(const char *bin_dir, const char *type);
/* mkdir -p conf_dir, then atomic write of <conf_dir>/10-weft.conflist. 0 or -errno. */
int cni_conf_write(const char *conf_dir, const CniConfParams *p);
/* Removes it; a missing file is success. */
int cni_conf_remove(const char *conf_dir);
/* True if the file exists (health check). */
bool cni_conf_present(const char *conf_dir);
