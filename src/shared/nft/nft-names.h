/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Every nftables name weft owns, in one place: the tables, and the prefix of each owner's chains,
 * sets and maps (the plugins', weftd's node-*, NetworkPolicy's np-*, Services' svc-*). Exactly two
 * tables, both named "weft":
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

#define NFT_TABLE_NAME "weft"
#define NFT_TABLE_INET "inet weft" /* use as "add chain " NFT_TABLE_INET " br-x" */
#define NFT_TABLE_BRIDGE "bridge weft"

#define NFT_PREFIX_BRIDGE "br-"
#define NFT_PREFIX_NODE "node-"
#define NFT_PREFIX_POLICY "np-"   /* weftd's NetworkPolicy (daemon/policy/policy-compile.h) */
#define NFT_PREFIX_SERVICE "svc-" /* weftd's Services (daemon/service/service-compile.h) */

/* ---- bridge plugin objects, table inet weft ---- */
/* nat postrouting base chain (priority srcnat = 100): ipMasq for pods. Its `return`s only end
 * this chain: node-postrouting (srcnat + 10) still sees packets br-postrouting did not NAT. */
#define NFT_BR_CHAIN_POSTROUTING "br-postrouting"
/* pod_ip . pod_subnet (flags interval): destinations inside the pod's own subnet are not masqueraded */
#define NFT_BR_SET_LOCAL4 "br-local4"
#define NFT_BR_SET_LOCAL6 "br-local6"
/* pod_ip: source addresses to masquerade */
#define NFT_BR_SET_MASQ4 "br-masq4"
#define NFT_BR_SET_MASQ6 "br-masq6"
#define NFT_BR_PRIO_POSTROUTING "srcnat"

/* ---- bridge plugin objects, table bridge weft ---- */
/* filter prerouting base chain (priority -300, before anything else on the bridge): macspoofchk. */
#define NFT_BR_CHAIN_MACSPOOF "br-macspoof"
/* host-side veth names whose ingress frames are checked */
#define NFT_BR_SET_MAC_PORTS "br-mac-ports"
/* host_veth . allowed source MAC */
#define NFT_BR_SET_MAC_ALLOW "br-mac-allow"
#define NFT_BR_PRIO_MACSPOOF "-300"

/* ---- weftd objects (table inet weft), reserved names; weftd defines the contents ---- */
#define NFT_NODE_CHAIN_POSTROUTING "node-postrouting" /* nat, srcnat + 10: after br-postrouting */
#define NFT_NODE_CHAIN_FORWARD "node-forward"         /* filter forward */

/* ---- weftd's NetworkPolicy objects, table inet weft (policy-compile.h describes the layout) ---- */
#define POLICY_PREFIX NFT_PREFIX_POLICY
#define POLICY_CHAIN_INGRESS "np-ingress"
#define POLICY_CHAIN_EGRESS "np-egress"
#define POLICY_MAP_INGRESS4 "np-ingress4"
#define POLICY_MAP_INGRESS6 "np-ingress6"
#define POLICY_MAP_EGRESS4 "np-egress4"
#define POLICY_MAP_EGRESS6 "np-egress6"
#define POLICY_COUNTER_PREFIX "np-c-"       /* + <policy tag>-{in,out}<rule> */
#define POLICY_DENY_COUNTER_PREFIX "np-cc-" /* + <class hash>-{in,out} */

/* ---- weftd's Service objects, table inet weft (service-compile.h describes the layout) ---- */
#define SVC_PREFIX NFT_PREFIX_SERVICE
#define SVC_HAIRPIN4 "svc-hairpin4"
#define SVC_HAIRPIN6 "svc-hairpin6"
#define SVC_CLUSTER_IPS4 "svc-cluster-ips4"
#define SVC_CLUSTER_IPS6 "svc-cluster-ips6"
#define SVC_FW_IPS4 "svc-fw-ips4"
#define SVC_FW_IPS6 "svc-fw-ips6"
#define SVC_FW_ALLOW4 "svc-fw-allow4"
#define SVC_FW_ALLOW6 "svc-fw-allow6"

/* ---- portmap plugin objects, table inet weft (nft-portmap.h) ---- */
#define NFT_PREFIX_PORTMAP "pm-"
/* nat prerouting / output base chains (priority dstnat): hostPort DNAT by map lookup */
#define NFT_PM_CHAIN_PREROUTING "pm-prerouting"
#define NFT_PM_CHAIN_OUTPUT "pm-output"
/* nat postrouting base chain (srcnat - 10, before br-postrouting): snat of hairpin/localhost */
#define NFT_PM_CHAIN_POSTROUTING "pm-postrouting"
/* l4proto . hostPort : podIP . containerPort (mappings without hostIP, local addresses only) */
#define NFT_PM_MAP_DNAT4 "pm-dnat4"
#define NFT_PM_MAP_DNAT6 "pm-dnat6"
/* hostIP . l4proto . hostPort : podIP . containerPort */
#define NFT_PM_MAP_HOSTIP4 "pm-hostip4"
#define NFT_PM_MAP_HOSTIP6 "pm-hostip6"
/* podIP . source prefix (interval): DNATed connections to podIP from there are masqueraded */
#define NFT_PM_SET_MASQ4 "pm-masq4"
#define NFT_PM_SET_MASQ6 "pm-masq6"
#define NFT_PM_PRIO_DNAT "dstnat"
#define NFT_PM_PRIO_DNAT_OUTPUT "-100" /* = dstnat; nft takes the name only on prerouting */
#define NFT_PM_PRIO_POSTROUTING "srcnat - 10"

/* ---- firewall plugin objects, table inet weft (nft-firewall.h) ---- */
#define NFT_PREFIX_FIREWALL "fw-"
/* filter forward base chain (priority filter = 0): accept to/from pod IPs, same-bridge isolation */
#define NFT_FW_CHAIN_FORWARD "fw-forward"
/* pod IPs: forwarding from them is accepted, to them when ct state established,related */
#define NFT_FW_SET_PODS4 "fw-pods4"
#define NFT_FW_SET_PODS6 "fw-pods6"
/* ingressPolicy same-bridge: bridge name : jump fw-iso-<bridge> (drops from it to other isolated bridges) */
#define NFT_FW_MAP_ISOLATION "fw-isolation"
#define NFT_FW_SET_ISOLATED "fw-isolated"
#define NFT_FW_CHAIN_ISO_PREFIX "fw-iso-"
#define NFT_FW_PRIO_FORWARD "filter"

/* Element comments identify the owner: "<net>/<cid>/<ifname>" for plugin attachments.
 * nftables (1.0.6) accepts at most 128 characters in a comment (buffers: NFT_COMMENT_MAX + 1). */
#define NFT_COMMENT_MAX 128
