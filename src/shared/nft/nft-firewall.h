/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The firewall plugin's nftables objects (table inet weft, fw-* names, see nft-names.h), the
 * nftables form of the reference's iptables backend:
 *
 *   chain fw-forward (filter forward, priority filter, policy accept)
 *     iifname vmap @fw-isolation                         ingressPolicy same-bridge
 *     ip daddr @fw-pods4 ct state established,related accept   (-d IP -m conntrack ... ACCEPT)
 *     ip6 daddr @fw-pods6 ct state established,related accept
 *     ip saddr @fw-pods4 accept                         (-s IP -j ACCEPT)
 *     ip6 saddr @fw-pods6 accept
 *   chain fw-iso-<bridge>: oifname != "<bridge>" oifname @fw-isolated drop
 *
 * Pod IPs are set elements with the comment "<net>/<cid>/<ifname>" (nft_attachment_id()),
 * so DEL and GC need no state. Isolation objects are per bridge and, like the reference's
 * CNI-ISOLATION chains, stay when pods go. Every call is one atomic batch; all but ADD's
 * create-only fast path (nft-elem.h) carry the idempotent prelude (add table/chain/set/map,
 * flush chain, fixed rules).
 *
 * Note: an nftables accept only ends OUR chain; a drop in another table at the forward hook
 * (e.g. iptables-nft's FORWARD policy DROP) still applies — the reference's rules live in that
 * FORWARD chain, ours cannot.
 */

#include <stdbool.h>

#include "shared/ip/ip-addr.h"
#include "shared/nft/nft-elem.h"
#include "shared/nft/nft.h"

/* Adds the attachment's pod addresses (replacing elements of the same address). 0 or -errno. */
int nft_firewall_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const IpAddr *ips, size_t n_ips);
/* Removes the attachment's elements. Missing table/set/element = 0. */
int nft_firewall_del(NftCtx *c, const char *net, const char *cid, const char *ifname);
/* 0 if every address is in its set with this attachment's comment, -ENOENT otherwise (with
 * *ret_missing set to the first missing address's index if non-NULL). */
int nft_firewall_check(NftCtx *c, const char *net, const char *cid, const char *ifname, const IpAddr *ips, size_t n_ips,
		       size_t *ret_missing);
/* Removes elements of network `net` whose attachment is_valid() rejects. Returns the number of
 * elements removed or -errno. */
int nft_firewall_gc(NftCtx *c, const char *net, NftAttachmentValidFn is_valid, void *userdata);
/* ingressPolicy same-bridge for `bridge` (idempotent). -EINVAL for a bad name. */
int nft_firewall_isolate_bridge(NftCtx *c, const char *bridge);
