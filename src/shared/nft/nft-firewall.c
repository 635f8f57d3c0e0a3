/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The firewall plugin's nftables objects, see nft-firewall.h. Same idioms as nft-bridge.c:
 * idempotent prelude in every full batch, nft-elem.c's element replace/remove and DEL/GC
 * matching, and ADD's create-only fast path.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-elem.h"
#include "shared/nft/nft-firewall.h"
#include "shared/nft/nft-names.h"

static void fw_prelude(NftBatch *b) {
	static const char *const T = NFT_TABLE_INET, *const C = NFT_FW_CHAIN_FORWARD;

	nft_batch_add(b, "add table %s", T);
	nft_batch_add(b, "add chain %s %s { type filter hook forward priority %s; policy accept; }", T, C,
		      NFT_FW_PRIO_FORWARD);
	nft_batch_add(b, "add set %s %s { type ipv4_addr; }", T, NFT_FW_SET_PODS4);
	nft_batch_add(b, "add set %s %s { type ipv6_addr; }", T, NFT_FW_SET_PODS6);
	nft_batch_add(b, "add set %s %s { type ifname; }", T, NFT_FW_SET_ISOLATED);
	nft_batch_add(b, "add map %s %s { type ifname : verdict; }", T, NFT_FW_MAP_ISOLATION);
	nft_batch_add(b, "flush chain %s %s", T, C);
	/* Isolation first, as the reference inserts CNI-ISOLATION-STAGE-1 at the top of FORWARD. */
	nft_batch_add(b, "add rule %s %s iifname vmap @%s", T, C, NFT_FW_MAP_ISOLATION);
	nft_batch_add(b, "add rule %s %s ip daddr @%s ct state established,related accept", T, C, NFT_FW_SET_PODS4);
	nft_batch_add(b, "add rule %s %s ip6 daddr @%s ct state established,related accept", T, C, NFT_FW_SET_PODS6);
	nft_batch_add(b, "add rule %s %s ip saddr @%s accept", T, C, NFT_FW_SET_PODS4);
	nft_batch_add(b, "add rule %s %s ip6 saddr @%s accept", T, C, NFT_FW_SET_PODS6);
}

static const NftElemObj pods_sets[] = {
	{ NFT_TABLE_INET, NFT_FW_SET_PODS4, false, fw_prelude },
	{ NFT_TABLE_INET, NFT_FW_SET_PODS6, false, fw_prelude },
};

static const NftElemObj *pods_set(int family) {
	return family == AF_INET ? &pods_sets[0] : family == AF_INET6 ? &pods_sets[1] : NULL;
}

int nft_firewall_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const IpAddr *ips, size_t n_ips) {
	char id[NFT_COMMENT_MAX + 1], ip[IP_ADDR_STRLEN];
	NftBatch b;
	int r;

	if (!c || (n_ips > 0 && !ips))
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_ips; i++)
		if (!pods_set(ips[i].family))
			return -EAFNOSUPPORT;

	/* Fast path (see nft-elem.h): every address new and the sets there. Without addresses the
	 * full batch still creates the table, as it always did. */
	if (n_ips > 0) {
		r = nft_batch_begin(&b);
		if (r < 0)
			return r;
		for (size_t i = 0; i < n_ips; i++)
			nft_elem_add_create(&b, pods_set(ips[i].family), ip_addr_to_string(&ips[i], ip), NULL, id);
		r = nft_elem_apply_creates(c, &b);
		if (r != -EAGAIN)
			return r;
	}

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	fw_prelude(&b);
	for (size_t i = 0; i < n_ips; i++)
		nft_elem_add_replace(&b, pods_set(ips[i].family), ip_addr_to_string(&ips[i], ip), NULL, NULL, id);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
	return r;
}

int nft_firewall_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	return nft_elem_remove_attachment(c, pods_sets, ELEMENTSOF(pods_sets), net, cid, ifname);
}

int nft_firewall_gc(NftCtx *c, const char *net, NftAttachmentValidFn is_valid, void *userdata) {
	return nft_elem_gc(c, pods_sets, ELEMENTSOF(pods_sets), net, is_valid, userdata);
}

typedef struct FwSeen {
	const char *id;
	const IpAddr *ips;
	size_t n_ips;
	bool *found;
} FwSeen;

static int fw_seen(const NftElem *e, void *userdata) {
	FwSeen *s = userdata;
	IpAddr a;

	if (!streq(e->comment, s->id) || ip_addr_parse(e->key, &a) < 0)
		return 0;
	for (size_t i = 0; i < s->n_ips; i++)
		if (ip_addr_equal(&a, &s->ips[i]))
			s->found[i] = true;
	return 0;
}

int nft_firewall_check(NftCtx *c, const char *net, const char *cid, const char *ifname, const IpAddr *ips, size_t n_ips,
		       size_t *ret_missing) {
	char id[NFT_COMMENT_MAX + 1];
	_cleanup_free_ bool *found = NULL;
	FwSeen s;
	int r;

	if (!c)
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	found = calloc(MAX(n_ips, 1u), sizeof(bool));
	if (!found)
		return -ENOMEM;
	s = (FwSeen) { .id = id, .ips = ips, .n_ips = n_ips, .found = found };
	for (size_t i = 0; i < ELEMENTSOF(pods_sets) && r >= 0; i++)
		r = nft_elem_foreach(c, &pods_sets[i], fw_seen, &s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_ips; i++)
		if (!found[i]) {
			if (ret_missing)
				*ret_missing = i;
			return -ENOENT;
		}
	return 0;
}

int nft_firewall_isolate_bridge(NftCtx *c, const char *bridge) {
	NftBatch b;
	int r;

	if (!c || isempty(bridge) || strlen(bridge) >= 16 || strpbrk(bridge, "\"\\/ ;{}#\n\t"))
		return -EINVAL;
	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	fw_prelude(&b);
	/* The reference: STAGE-1 "-i BR ! -o BR -j STAGE-2", STAGE-2 "-o ISOLATED_BR -j DROP".
	 * nft cannot compare iifname with oifname, so each bridge gets its own small chain. */
	nft_batch_add(&b, "add chain %s " NFT_FW_CHAIN_ISO_PREFIX "%s", NFT_TABLE_INET, bridge);
	nft_batch_add(&b, "flush chain %s " NFT_FW_CHAIN_ISO_PREFIX "%s", NFT_TABLE_INET, bridge);
	nft_batch_add(&b, "add rule %s " NFT_FW_CHAIN_ISO_PREFIX "%s oifname != \"%s\" oifname @%s drop",
		      NFT_TABLE_INET, bridge, bridge, NFT_FW_SET_ISOLATED);
	nft_batch_add(&b, "add element %s %s { \"%s\" }", NFT_TABLE_INET, NFT_FW_SET_ISOLATED, bridge);
	nft_batch_add(&b, "add element %s %s { \"%s\" : jump " NFT_FW_CHAIN_ISO_PREFIX "%s }", NFT_TABLE_INET,
		      NFT_FW_MAP_ISOLATION, bridge, bridge);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
	return r;
}
