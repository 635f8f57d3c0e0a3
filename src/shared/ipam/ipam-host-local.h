/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * host-local IPAM as a PluginOps, so the host-local binary and other plugins (running it
 * in-process) share one implementation.
 *
 * In-process use: allocate host_local_ops.conf_size zeroed bytes as conf, call
 * host_local_ops.parse(req, conf), then .add/.del/.check/.gc/.status, then
 * host_local_ops.conf_done(conf) (always, also after a failed parse). On failure the ops return
 * negative errno with req->error set (via cni_fail). The minimum CniRequest fields:
 *   - all commands: name (network name = store directory), ipam (the "ipam" object, may be
 *     NULL -> code 7), version (result format and the 0.2.0 one-address-per-family rule),
 *     rc_ip_ranges (NULL if none);
 *   - ADD/DEL/CHECK: container_id, ifname; ADD also req_ips/n_req_ips (requested addresses);
 *   - GC: valid_attachments/n_valid_attachments.
 * ADD returns a result with ips (address + gateway, no interface), routes and dns only.
 */

#include "shared/cni/cni-plugin.h"
#include "shared/ipam/ipam-config.h"

typedef struct HostLocalConf {
	IpamConfig *ipam;
} HostLocalConf;

extern const PluginOps host_local_ops;

/*
 * DEL and GC need only the store, not the ranges: these run them against <data_dir>/<req->name>
 * without a parsed config (a plugin whose range config is gone — e.g. weft after weftd was
 * uninstalled — can still release). DEL needs container_id/ifname, GC valid_attachments.
 * 0, or negative errno with req->error set.
 */
int host_local_release_store(CniRequest *req, const char *data_dir);
int host_local_gc_store(CniRequest *req, const char *data_dir);
