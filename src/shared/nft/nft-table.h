/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The nftables objects weft owns. Exactly two tables, both named "weft":
 *
 *   table inet weft     NAT and filter (L3). Used by the bridge plugin (br-*) and weftd (node-*).
 *   table bridge weft   L2 checks (macspoofchk): an inet table never sees bridged frames.
 *
 * Naming: objects created by the bridge plugin start with "br-", objects created by weftd start
 * with "node-". Nobody touches the other's prefix, and nobody touches tables that are not ours.
 *
 * Rules for everyone who adds objects (all of it in ONE nft_apply() batch):
 *   - `add table`, `add chain`, `add set`, `add map` are idempotent: always send them.
 *   - Install a chain's rules with `flush chain T C` followed by every `add rule T C ...` in the
 *     same batch: whichever of many concurrent processes commits last, exactly one copy exists.
 *   - Per-pod / per-node data lives in sets and maps (elements carry a comment naming their
 *     owner), never in a chain or rule per pod.
 *   - Base chains get explicit priorities (below) so the order between br-* and node-* is fixed.
 */

#define NFT_TABLE_NAME          "weft"
#define NFT_TABLE_INET          "inet weft"     /* use as "add chain " NFT_TABLE_INET " br-x" */
#define NFT_TABLE_BRIDGE        "bridge weft"

#define NFT_PREFIX_BRIDGE       "br-"
#define NFT_PREFIX_NODE         "node-"

/* ---- bridge plugin objects, table inet weft ---- */
/* nat postrouting base chain (priority srcnat = 100): ipMasq for pods. Its `return`s only end
 * this chain: node-postrouting (srcnat + 10) still sees packets br-postrouting did not NAT. */
#define NFT_BR_CHAIN_POSTROUTING "br-postrouting"
/* pod_ip . pod_subnet (flags interval): destinations inside the pod's own subnet are not masqueraded */
#define NFT_BR_SET_LOCAL4       "br-local4"
#define NFT_BR_SET_LOCAL6       "br-local6"
/* pod_ip: source addresses to masquerade */
#define NFT_BR_SET_MASQ4        "br-masq4"
#define NFT_BR_SET_MASQ6        "br-masq6"
#define NFT_BR_PRIO_POSTROUTING "srcnat"

/* ---- bridge plugin objects, table bridge weft ---- */
/* filter prerouting base chain (priority -300, before anything else on the bridge): macspoofchk. */
#define NFT_BR_CHAIN_MACSPOOF   "br-macspoof"
/* host-side veth names whose ingress frames are checked */
#define NFT_BR_SET_MAC_PORTS    "br-mac-ports"
/* host_veth . allowed source MAC */
#define NFT_BR_SET_MAC_ALLOW    "br-mac-allow"
#define NFT_BR_PRIO_MACSPOOF    "-300"

/* ---- weftd objects (table inet weft), reserved names; weftd defines the contents ---- */
#define NFT_NODE_CHAIN_POSTROUTING "node-postrouting"  /* nat, srcnat + 10: after br-postrouting */
#define NFT_NODE_CHAIN_FORWARD     "node-forward"      /* filter forward */

/* Element comments identify the owner: "<net>/<cid>/<ifname>" for plugin attachments.
 * nftables (1.0.6) accepts at most 128 characters in a comment (buffers: NFT_COMMENT_MAX + 1). */
#define NFT_COMMENT_MAX         128
