/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's nftables objects, in the shared `table inet weft` (nft/nft-table.h), all named node-*:
 *
 *   chain node-forward      filter/forward: accept traffic from and to the cluster network
 *                           (counters a DROP forward policy elsewhere, like Flannel's FORWARD rules)
 *   chain node-postrouting  nat/postrouting, srcnat + 10 (after the bridge plugin's br-postrouting),
 *                           only when Masquerade is on:
 *                             pod -> cluster network  return (never masquerade pod <-> pod)
 *                             pod -> multicast        return
 *                             pod -> anything else    masquerade fully-random
 *
 * Each change is ONE batch (nft_apply): the chains are (re)created and their rules flushed and
 * re-added in the same transaction, so the firewall is never half-updated and concurrent writers
 * converge. Turning Masquerade off, and `weftd uninstall`, delete chains with the idempotent
 * "add; flush; delete" sequence (libnftables 1.0.6 has no `destroy`).
 */

#include <stdbool.h>

#include "ip/ip-addr.h"
#include "nft/nft.h"

typedef struct FirewallParams {
	IpPrefix network;       /* AF_UNSPEC = none */
	IpPrefix network6;      /* AF_UNSPEC = none */
	bool masquerade;
} FirewallParams;

/* The batch text that installs p. 0, -EINVAL (no network), -ENOMEM. */
int firewall_render(const FirewallParams *p, char **ret);
/* The batch text that removes every node-* chain (idempotent). */
int firewall_render_uninstall(char **ret);

/* Applies the render in one transaction. On failure *ret_error (if non-NULL) gets nft's text. */
int firewall_apply(NftCtx *ctx, const FirewallParams *p, char **ret_error);
int firewall_uninstall(NftCtx *ctx, char **ret_error);
/* 1 if our chains (node-forward, and node-postrouting when masquerading) exist, 0 if not, -errno. */
int firewall_check(NftCtx *ctx, const FirewallParams *p);
