/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "daemon/masquerade.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-names.h"

#define T NFT_TABLE_INET
#define FWD NFT_NODE_CHAIN_FORWARD
#define POST NFT_NODE_CHAIN_POSTROUTING
#define FWD_SPEC "{ type filter hook forward priority filter; policy accept; }"
#define POST_SPEC "{ type nat hook postrouting priority srcnat + 10; policy accept; }"

static void render_delete_chain(NftBatch *b, const char *chain, const char *spec) {
	nft_batch_add(b, "add chain " T " %s %s", chain, spec);
	nft_batch_add(b, "flush chain " T " %s", chain);
	nft_batch_add(b, "delete chain " T " %s", chain);
}

int masquerade_render(const MasqueradeParams *p, NftBatch *b) {
	/* per family: the match keyword, the network, multicast (never masqueraded) */
	const struct {
		const char *kw, *mcast;
		const IpPrefix *net;
	} fam[2] = { { "ip", "224.0.0.0/4", &p->network }, { "ip6", "ff00::/8", &p->network6 } };
	bool any = false;

	for (size_t i = 0; i < ELEMENTSOF(fam); i++)
		any |= ip_addr_is_set(&fam[i].net->addr);
	if (!any)
		return -EINVAL;

	nft_batch_add(b, "add table " T);
	nft_batch_add(b, "add chain " T " " FWD " " FWD_SPEC);
	nft_batch_add(b, "flush chain " T " " FWD);
	for (size_t i = 0; i < ELEMENTSOF(fam); i++) {
		char n[IP_PREFIX_STRLEN];

		if (!ip_addr_is_set(&fam[i].net->addr))
			continue;
		ip_prefix_to_string(fam[i].net, n);
		nft_batch_add(b, "add rule " T " " FWD " %s saddr %s accept comment \"weftd: from pods\"", fam[i].kw,
			      n);
		nft_batch_add(b, "add rule " T " " FWD " %s daddr %s accept comment \"weftd: to pods\"", fam[i].kw, n);
	}
	if (!p->masquerade) {
		render_delete_chain(b, POST, POST_SPEC);
		return 0;
	}
	nft_batch_add(b, "add chain " T " " POST " " POST_SPEC);
	nft_batch_add(b, "flush chain " T " " POST);
	for (size_t i = 0; i < ELEMENTSOF(fam); i++) {
		const char *kw = fam[i].kw;
		char n[IP_PREFIX_STRLEN];

		if (!ip_addr_is_set(&fam[i].net->addr))
			continue;
		ip_prefix_to_string(fam[i].net, n);
		nft_batch_add(b, "add rule " T " " POST " %s saddr %s %s daddr %s return", kw, n, kw, n);
		nft_batch_add(b, "add rule " T " " POST " %s saddr %s %s daddr %s return", kw, n, kw, fam[i].mcast);
		nft_batch_add(b,
			      "add rule " T " " POST " %s saddr %s masquerade fully-random "
			      "comment \"weftd: pods to outside the cluster network\"",
			      kw, n);
	}
	return 0;
}

void masquerade_render_uninstall(NftBatch *b) {
	nft_batch_add(b, "add table " T);
	render_delete_chain(b, FWD, FWD_SPEC);
	render_delete_chain(b, POST, POST_SPEC);
}

static int sync_render(NftSync *s, bool full, NftBatch *b, void *userdata) {
	return masquerade_render(userdata, b);
}

/* No debounce and no retry of its own (no event loop): weftd applies the chains when the network
 * config is known and repairs them from its periodic resync (manager_ensure_masquerade()). */
static const NftSyncOps masquerade_sync_ops = {
	.name = "Masquerade",
	.render = sync_render,
};

int masquerade_sync_new(const MasqueradeParams *p, NftSync **ret) {
	return nft_sync_new(NULL, &masquerade_sync_ops, (void *) p, ret);
}

int masquerade_uninstall(NftCtx *ctx, char **ret_error) {
	_cleanup_(nft_batch_done) NftBatch b = {};
	int r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	masquerade_render_uninstall(&b);
	return nft_batch_apply(ctx, &b, ret_error);
}

/* Number of rules in one of our chains, -ENOENT if the chain is missing. */
static int chain_rules(NftCtx *ctx, const char *chain) {
	char cmd[128];
	json_t *j = NULL, *items, *it;
	size_t i;
	int r, n = 0;

	snprintf(cmd, sizeof(cmd), "list chain " T " %s", chain);
	r = nft_list_json(ctx, cmd, &j);
	if (r < 0)
		return r;
	items = json_object_get(j, "nftables");
	json_array_foreach(items, i, it)
		if (json_object_get(it, "rule"))
			n++;
	json_decref(j);
	return n;
}

int masquerade_check(NftCtx *ctx, const MasqueradeParams *p) {
	int families = ip_addr_is_set(&p->network.addr) + ip_addr_is_set(&p->network6.addr);
	int r;

	/* Rule counts catch a hand-flushed chain as well as a deleted one. */
	r = chain_rules(ctx, FWD);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (r != 2 * families)
		return 0;
	if (!p->masquerade)
		return 1;
	r = chain_rules(ctx, POST);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	return r == 3 * families;
}
