/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's nftables objects, in the shared `table inet weft` (nft/nft-names.h), all named node-*:
 *
 *   chain node-forward      filter/forward: accept traffic from and to the cluster network
 *                           (counters a DROP forward policy elsewhere, like Flannel's FORWARD rules)
 *   chain node-postrouting  nat/postrouting, srcnat + 10 (after the bridge plugin's br-postrouting),
 *                           only when Masquerade is on:
 *                             pod -> cluster network  return (never masquerade pod <-> pod)
 *                             pod -> multicast        return
 *                             pod -> anything else    masquerade fully-random
 *
 * Each change is ONE batch, applied by the shared sync runner (nft-sync.h): the chains are
 * (re)created and their rules flushed and re-added in the same transaction, so the rules are never
 * half-updated and concurrent writers converge. Turning Masquerade off, and `weftd uninstall`, delete chains with the
 * idempotent "add; flush; delete" sequence (libnftables 1.0.6 has no `destroy`).
 */

#include <stdbool.h>

#include "shared/ip/ip-addr.h"
#include "daemon/nft-sync.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft.h"

typedef struct MasqueradeParams {
	IpPrefix network;  /* AF_UNSPEC = none */
	IpPrefix network6; /* AF_UNSPEC = none */
	bool masquerade;
} MasqueradeParams;

/* Appends the batch that installs p. 0, -EINVAL (no network), -ENOMEM. */
int masquerade_render(const MasqueradeParams *p, NftBatch *b);
/* Appends the batch that removes every node-* chain (idempotent). */
void masquerade_render_uninstall(NftBatch *b);

/* The chains' runner (nft-sync.h): nft_sync_run() applies *p (borrowed: weftd's, read at each
 * run) in one transaction, through the same code path as NetworkPolicy and Services; no event
 * loop, so no debounce or retry of its own. */
int masquerade_sync_new(const MasqueradeParams *p, NftSync **ret);
/* `weftd uninstall`: the uninstall batch applied. On failure *ret_error (if non-NULL) gets nft's text. */
int masquerade_uninstall(NftCtx *ctx, char **ret_error);
/* 1 if our chains (node-forward, and node-postrouting when masquerading) exist, 0 if not, -errno. */
int masquerade_check(NftCtx *ctx, const MasqueradeParams *p);
