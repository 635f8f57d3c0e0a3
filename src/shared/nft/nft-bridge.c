/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bridge plugin's nftables objects (ipMasq, macspoofchk), see nft-bridge.h.
 *
 * Every batch starts with the same idempotent prelude (add table/chain/set, flush chain, add the
 * fixed rules), so whichever of many concurrent plugin processes commits last, the table holds
 * exactly one copy of the rules and all sets exist. Per-attachment data are set elements.
 *
 * That prelude is expensive (~10-20 ms at socket close, see nft-batch.h), so ADD first tries
 * `create element` lines alone and runs the full batch only when that fails; the element idioms
 * (replace, idempotent remove) and DEL/GC matching are nft-elem.c's.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/nft/nft-bridge.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-elem.h"
#include "shared/nft/nft-raw.h"
#include "shared/nft/nft-names.h"

/* ---- table layout ---- */

static void prelude_inet(NftBatch *b) {
	static const char *const T = NFT_TABLE_INET, *const C = NFT_BR_CHAIN_POSTROUTING;

	nft_batch_add(b, "add table %s", T);
	nft_batch_add(b, "add chain %s %s { type nat hook postrouting priority %s; policy accept; }", T, C,
		      NFT_BR_PRIO_POSTROUTING);
	nft_batch_add(b, "add set %s %s { type ipv4_addr . ipv4_addr; flags interval; }", T, NFT_BR_SET_LOCAL4);
	nft_batch_add(b, "add set %s %s { type ipv6_addr . ipv6_addr; flags interval; }", T, NFT_BR_SET_LOCAL6);
	nft_batch_add(b, "add set %s %s { type ipv4_addr; }", T, NFT_BR_SET_MASQ4);
	nft_batch_add(b, "add set %s %s { type ipv6_addr; }", T, NFT_BR_SET_MASQ6);
	nft_batch_add(b, "flush chain %s %s", T, C);
	/* The reference's per-container chain: `-d <subnet> ACCEPT; ! -d 224.0.0.0/4 MASQUERADE`. */
	nft_batch_add(b, "add rule %s %s ip daddr 224.0.0.0/4 return", T, C);
	nft_batch_add(b, "add rule %s %s ip6 daddr ff00::/8 return", T, C);
	nft_batch_add(b, "add rule %s %s ip saddr . ip daddr @%s return", T, C, NFT_BR_SET_LOCAL4);
	nft_batch_add(b, "add rule %s %s ip6 saddr . ip6 daddr @%s return", T, C, NFT_BR_SET_LOCAL6);
	nft_batch_add(b, "add rule %s %s ip saddr @%s masquerade", T, C, NFT_BR_SET_MASQ4);
	nft_batch_add(b, "add rule %s %s ip6 saddr @%s masquerade", T, C, NFT_BR_SET_MASQ6);
}

static void prelude_bridge(NftBatch *b) {
	static const char *const T = NFT_TABLE_BRIDGE, *const C = NFT_BR_CHAIN_MACSPOOF;

	nft_batch_add(b, "add table %s", T);
	nft_batch_add(b, "add chain %s %s { type filter hook prerouting priority %s; policy accept; }", T, C,
		      NFT_BR_PRIO_MACSPOOF);
	nft_batch_add(b, "add set %s %s { type ifname; }", T, NFT_BR_SET_MAC_PORTS);
	nft_batch_add(b, "add set %s %s { type ifname . ether_addr; }", T, NFT_BR_SET_MAC_ALLOW);
	nft_batch_add(b, "flush chain %s %s", T, C);
	nft_batch_add(b, "add rule %s %s iifname . ether saddr @%s return", T, C, NFT_BR_SET_MAC_ALLOW);
	nft_batch_add(b, "add rule %s %s iifname @%s drop", T, C, NFT_BR_SET_MAC_PORTS);
}

/* ---- the sets ---- */

enum {
	LOCAL4,
	LOCAL6,
	MASQ4,
	MASQ6,
	MAC_PORTS,
	MAC_ALLOW,
	N_SETS
};

/* masq first, then macspoof: GC's one batch writes the inet prelude before the bridge one. */
static const NftElemObj all_sets[N_SETS] = {
	[LOCAL4] = { NFT_TABLE_INET, NFT_BR_SET_LOCAL4, false, prelude_inet },
	[LOCAL6] = { NFT_TABLE_INET, NFT_BR_SET_LOCAL6, false, prelude_inet },
	[MASQ4] = { NFT_TABLE_INET, NFT_BR_SET_MASQ4, false, prelude_inet },
	[MASQ6] = { NFT_TABLE_INET, NFT_BR_SET_MASQ6, false, prelude_inet },
	[MAC_PORTS] = { NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS, false, prelude_bridge },
	[MAC_ALLOW] = { NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW, false, prelude_bridge },
};

/* A host-side interface name that is safe inside nft double quotes. */
static bool ifname_valid(const char *s) {
	return nft_attachment_component_valid(s) && strlen(s) < 16;
}

/* ---- masq ---- */

int nft_bridge_masq_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const IpPrefix *pod_addr) {
	char id[NFT_COMMENT_MAX + 1], ip[IP_ADDR_STRLEN], subnet[IP_PREFIX_STRLEN];
	char key[IP_ADDR_STRLEN + IP_PREFIX_STRLEN + 4];
	const NftElemObj *local, *masq;
	IpPrefix n;
	NftBatch b;
	int r;

	if (!c || !pod_addr)
		return -EINVAL;
	if (pod_addr->addr.family == AF_INET) {
		local = &all_sets[LOCAL4];
		masq = &all_sets[MASQ4];
	} else if (pod_addr->addr.family == AF_INET6) {
		local = &all_sets[LOCAL6];
		masq = &all_sets[MASQ6];
	} else
		return -EAFNOSUPPORT;
	if (pod_addr->len > ip_family_bits(pod_addr->addr.family))
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	n = ip_prefix_mask(pod_addr);
	ip_addr_to_string(&pod_addr->addr, ip);
	ip_prefix_to_string(&n, subnet);

	snprintf(key, sizeof(key), "%s . %s", ip, subnet);

	/* Fast path: both elements new and the sets there (see the top of this file). */
	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	nft_elem_add_create(&b, local, key, NULL, id);
	nft_elem_add_create(&b, masq, ip, NULL, id);
	r = nft_elem_apply_creates(c, &b);
	if (r != -EAGAIN)
		return r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	prelude_inet(&b);
	/* Replace rather than add: an element left by a dead attachment with the same address must
	 * take this attachment's comment, or that attachment's DEL/GC would remove our masquerade. */
	nft_elem_add_replace(&b, local, key, NULL, NULL, id);
	nft_elem_add_replace(&b, masq, ip, NULL, NULL, id);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
	return r;
}

int nft_bridge_masq_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	return nft_elem_remove_attachment(c, &all_sets[LOCAL4], MAC_PORTS - LOCAL4, net, cid, ifname);
}

int nft_bridge_masq_gc(NftCtx *c, const char *net, NftAttachmentValidFn is_valid, void *userdata) {
	return nft_elem_gc(c, all_sets, N_SETS, net, is_valid, userdata);
}

/* ---- macspoof ---- */

typedef struct SameVeth {
	const char *host_veth;
	const char *id;
	NftBatch *batch;
} SameVeth;

static int collect_same_veth(const NftElem *e, void *userdata) {
	SameVeth *s = userdata;
	json_t *first = json_array_get(json_object_get(e->raw_key, "concat"), 0);

	if (streq(e->comment, s->id) || (json_is_string(first) && streq(json_string_value(first), s->host_veth)))
		nft_elem_add_remove(s->batch, e->obj, e->key, NULL);
	return 0;
}

int nft_bridge_macspoof_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const char *host_veth,
			    const uint8_t mac[6]) {
	char id[NFT_COMMENT_MAX + 1], macs[18], port[24], key[48];
	NftBatch b;
	int r;

	if (!c || !mac || !ifname_valid(host_veth))
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	ether_addr_format(mac, macs);
	snprintf(port, sizeof(port), "\"%s\"", host_veth);
	snprintf(key, sizeof(key), "%s . %s", port, macs);

	/* Fast path: a port not guarded yet (the common case: a fresh veth name). */
	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	nft_elem_add_create(&b, &all_sets[MAC_PORTS], port, NULL, id);
	nft_elem_add_create(&b, &all_sets[MAC_ALLOW], key, NULL, id);
	r = nft_elem_apply_creates(c, &b);
	if (r != -EAGAIN)
		return r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	prelude_bridge(&b);
	/* The allowed pair is keyed by veth AND mac, so a re-ADD with another MAC (or a veth name
	 * reused by a new pod) must drop the old pairs of this veth/attachment explicitly. */
	r = nft_elem_foreach(c, &all_sets[MAC_ALLOW], collect_same_veth,
			     &(SameVeth) { .host_veth = host_veth, .id = id, .batch = &b });
	if (r < 0)
		goto out;
	nft_elem_add_replace(&b, &all_sets[MAC_PORTS], port, NULL, NULL, id);
	nft_elem_add_replace(&b, &all_sets[MAC_ALLOW], key, NULL, NULL, id);
	r = nft_batch_apply(c, &b, NULL);
out:
	nft_batch_done(&b);
	return r;
}

int nft_bridge_macspoof_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	return nft_elem_remove_attachment(c, &all_sets[MAC_PORTS], N_SETS - MAC_PORTS, net, cid, ifname);
}

int nft_bridge_present(const char *net, const char *cid, const char *ifname) {
	return nft_raw_has_attachment(all_sets, N_SETS, net, cid, ifname);
}

/* ---- flush ---- */

/* Deletes the br-* chains (first: their rules reference the sets) and sets of one table, then
 * the table itself if nothing else (weftd's node-* objects) lives in it. */
static int flush_table(NftCtx *c, const char *family_table) {
	_cleanup_free_ char *cmd = NULL;
	json_t *j = NULL, *arr, *item;
	bool others = false;
	NftBatch b;
	size_t i;
	int r;

	cmd = strdup_printf("list table %s", family_table);
	if (!cmd)
		return -ENOMEM;
	r = nft_list_json(c, cmd, &j);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = nft_batch_begin(&b);
	if (r < 0)
		goto out;
	arr = json_object_get(j, "nftables");
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(arr, i, item) {
			const char *kind = pass == 0 ? "chain" : "set";
			json_t *o = json_object_get(item, kind);
			const char *name;

			if (!o && pass == 0 &&
			    (json_object_get(item, "map") || json_object_get(item, "flowtable") ||
			     json_object_get(item, "counter") || json_object_get(item, "quota") ||
			     json_object_get(item, "ct helper") || json_object_get(item, "limit")))
				others = true; /* a non-br object of another kind: keep the table */
			if (!o)
				continue;
			name = json_string_value(json_object_get(o, "name"));
			if (!name)
				continue;
			if (!startswith(name, NFT_PREFIX_BRIDGE)) {
				others = true;
				continue;
			}
			nft_batch_add(&b, "delete %s %s %s", kind, family_table, name);
		}
	if (!others)
		nft_batch_add(&b, "delete table %s", family_table);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
out:
	json_decref(j);
	return r;
}

int nft_bridge_flush_all(NftCtx *c) {
	int r = 0;

	if (!c)
		return -EINVAL;
	RET_GATHER(r, flush_table(c, NFT_TABLE_INET));
	RET_GATHER(r, flush_table(c, NFT_TABLE_BRIDGE));
	return r;
}
