/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "daemon/masquerade.h"
#include "shared/nft/nft-table.h"

#define T NFT_TABLE_INET
#define FWD NFT_NODE_CHAIN_FORWARD
#define POST NFT_NODE_CHAIN_POSTROUTING
#define FWD_SPEC "{ type filter hook forward priority filter; policy accept; }"
#define POST_SPEC "{ type nat hook postrouting priority srcnat + 10; policy accept; }"

static void render_delete_chain(FILE *f, const char *chain, const char *spec) {
	fprintf(f, "add chain " T " %s %s\nflush chain " T " %s\ndelete chain " T " %s\n", chain, spec, chain, chain);
}

int masquerade_render(const MasqueradeParams *p, char **ret) {
	_cleanup_free_ char *buf = NULL;
	bool v4 = ip_addr_is_set(&p->network.addr), v6 = ip_addr_is_set(&p->network6.addr);
	char n4[IP_PREFIX_STRLEN], n6[IP_PREFIX_STRLEN];
	size_t size = 0;
	FILE *f;

	if (!v4 && !v6)
		return -EINVAL;
	if (v4)
		ip_prefix_to_string(&p->network, n4);
	if (v6)
		ip_prefix_to_string(&p->network6, n6);

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs("add table " T "\n", f);
	fputs("add chain " T " " FWD " " FWD_SPEC "\nflush chain " T " " FWD "\n", f);
	if (v4)
		fprintf(f,
			"add rule " T " " FWD " ip saddr %s accept comment \"weftd: from pods\"\n"
			"add rule " T " " FWD " ip daddr %s accept comment \"weftd: to pods\"\n",
			n4, n4);
	if (v6)
		fprintf(f,
			"add rule " T " " FWD " ip6 saddr %s accept comment \"weftd: from pods\"\n"
			"add rule " T " " FWD " ip6 daddr %s accept comment \"weftd: to pods\"\n",
			n6, n6);

	if (p->masquerade) {
		fputs("add chain " T " " POST " " POST_SPEC "\nflush chain " T " " POST "\n", f);
		if (v4)
			fprintf(f,
				"add rule " T " " POST " ip saddr %s ip daddr %s return\n"
				"add rule " T " " POST " ip saddr %s ip daddr 224.0.0.0/4 return\n"
				"add rule " T " " POST " ip saddr %s masquerade fully-random "
				"comment \"weftd: pods to outside the cluster network\"\n",
				n4, n4, n4, n4);
		if (v6)
			fprintf(f,
				"add rule " T " " POST " ip6 saddr %s ip6 daddr %s return\n"
				"add rule " T " " POST " ip6 saddr %s ip6 daddr ff00::/8 return\n"
				"add rule " T " " POST " ip6 saddr %s masquerade fully-random "
				"comment \"weftd: pods to outside the cluster network\"\n",
				n6, n6, n6, n6);
	} else
		render_delete_chain(f, POST, POST_SPEC);

	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int masquerade_render_uninstall(char **ret) {
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs("add table " T "\n", f);
	render_delete_chain(f, FWD, FWD_SPEC);
	render_delete_chain(f, POST, POST_SPEC);
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int masquerade_apply(NftCtx *ctx, const MasqueradeParams *p, char **ret_error) {
	_cleanup_free_ char *batch = NULL;
	int r;

	r = masquerade_render(p, &batch);
	if (r < 0)
		return r;
	return nft_apply(ctx, batch, ret_error);
}

int masquerade_uninstall(NftCtx *ctx, char **ret_error) {
	_cleanup_free_ char *batch = NULL;
	int r;

	r = masquerade_render_uninstall(&batch);
	if (r < 0)
		return r;
	return nft_apply(ctx, batch, ret_error);
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
