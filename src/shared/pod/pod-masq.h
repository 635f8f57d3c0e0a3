/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * ipMasq of one attachment through the set-based masquerade of nft-bridge.h (keyed by
 * "<network>/<container id>/<ifname>", so DEL and GC need neither the netns nor the addresses).
 * The nftables context is opened on first use and kept in *nft (NULL to start with).
 */

#include <stdbool.h>

#include "shared/cni/cni-plugin.h"
#include "shared/nft/nft.h"

/* Masquerades every address of `res` (pod IP with its subnet length). 0 or -errno with
 * req->error naming the address. */
int pod_masq_add(CniRequest *req, NftCtx **nft, const CniResult *res);
/* Removes this attachment's elements; missing = 0. 0 or -errno with req->error set. */
int pod_masq_del(CniRequest *req, NftCtx **nft);
/* Rollback: pod_masq_del() keeping req->error (failures are logged). */
void pod_masq_release(CniRequest *req, NftCtx **nft);
/*
 * GC: removes elements of req->name whose attachment is not in cni.dev/valid-attachments. Runs
 * even when the config no longer asks for ipMasq (older elements are still ours); nftables
 * trouble is an error only when `required`. 0 or -errno with req->error set.
 */
int pod_masq_gc(CniRequest *req, bool required);
