/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the bridge plugin needs from nftables: ipMasq (table inet weft) and macspoofchk
 * (table bridge weft). Every call is ONE atomic batch that also (re)creates the table, chains
 * and sets and re-installs the fixed rules (flush + add), so it is safe with many plugin
 * processes running at once and needs no prior setup. Per-attachment data lives in set
 * elements whose comment is "<net>/<cid>/<ifname>" (nft_attachment_id()), so DEL and GC need no state of their own.
 *
 * Attachment identifiers must be non-empty and must not contain '/', '"', '\\' or control
 * characters (-EINVAL otherwise); CNI names and container IDs never do.
 *
 * Known limit: elements are keyed by address (masq) or host veth (macspoof). If two live
 * attachments share an address (overlapping subnets on two networks), the last ADD owns the
 * element.
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"
#include "shared/nft/nft-elem.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"

/*
 * ipMasq for one attachment: masquerade traffic whose source is pod_addr's address, unless the
 * destination is inside pod_addr's subnet or multicast (224.0.0.0/4, ff00::/8) — the reference
 * plugin's per-container chain, as set elements. pod_addr = pod IP with its subnet length
 * ("10.88.0.2/24"). Re-adding replaces an element of the same address (its comment changes to
 * this attachment). 0 or -errno.
 */
int nft_bridge_masq_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const IpPrefix *pod_addr);

/* Removes this attachment's masq elements (v4 and v6). Missing table/set/element = 0.
 * Cost: lists the 4 sets, then one batch; ~14 ms wall, nearly all of it the kernel's RCU grace
 * period for removing elements (see nft-ctx.c). */
int nft_bridge_masq_del(NftCtx *c, const char *net, const char *cid, const char *ifname);

/*
 * GC for network `net`: removes masq AND macspoof elements of this network whose attachment
 * is_valid() rejects. Elements of other networks and elements without a parseable comment are
 * left alone. One listing per set, then one batch. Returns the number of set elements removed
 * (>= 0; an IPv4 masq attachment has 2, a macspoof attachment 2) or -errno.
 */
int nft_bridge_masq_gc(NftCtx *c, const char *net, NftAttachmentValidFn is_valid, void *userdata);

/*
 * macspoofchk: frames entering the bridge from host_veth whose source MAC is not `mac` are
 * dropped (table bridge weft, chain br-macspoof). Re-adding replaces the allowed MAC. 0 or -errno.
 */
int nft_bridge_macspoof_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const char *host_veth,
			    const uint8_t mac[6]);
/* Removes this attachment's macspoof elements. Missing table/set/element = 0. */
int nft_bridge_macspoof_del(NftCtx *c, const char *net, const char *cid, const char *ifname);

/*
 * Whether any masq or macspoof element carries this attachment's comment: 1 yes, 0 no (also when
 * the tables or sets do not exist), -errno on a netlink error (callers then take the libnftables
 * path). A raw set-element dump per set (nft-raw.h), no nftables context: DEL asks it first, so a
 * DEL with nothing to remove (a repeated DEL, one after a failed ADD) never sets up libnftables.
 */
int nft_bridge_present(const char *net, const char *cid, const char *ifname);

/* Removes every br-* chain and set in both weft tables (and the tables if they end up empty).
 * For tests and uninstall. Missing = 0. */
int nft_bridge_flush_all(NftCtx *c);
