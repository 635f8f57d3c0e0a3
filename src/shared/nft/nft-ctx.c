/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libnftables wrapper: one struct nft_ctx with buffered output and error streams.
 *
 * Cost (measured on the CI machine, kernel 6.18, nftables 1.0.6; test-nft prints it as "# bench"):
 * nft_ctx_open() ~0.07 ms (nft_ctx_new() reads a few /etc/iproute2 files and opens the netlink
 * socket). A plugin-sized batch (table + chain + 4 sets + flushed rules + elements) ~0.8 ms wall,
 * flat from 0 to 200 existing elements: nft fills its cache with the table's objects, but
 * concatenated/plain sets need no userspace overlap check, so existing elements are not fetched.
 * Any transaction that removes an element that existed before it costs ~12 ms wall, mostly the
 * kernel waiting for an RCU grace period in the commit, not CPU; so DEL (list + remove) is
 * ~14 ms and an ADD that replaces a stale element of the same address ~12 ms.
 * libnftables 1.0.6 has no switch to skip the cache; we keep it small by never listing the whole
 * ruleset (listings name one table or set).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Must come before nft/nft.h: nft.h defines nft_ctx_free() as a macro onto our own symbol. */
#include <nftables/libnftables.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "nft/nft.h"

struct NftCtx {
	struct nft_ctx *nft;
};

int nft_ctx_open(NftCtx **ret) {
	_cleanup_free_ NftCtx *c = NULL;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nft = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!c->nft)
		return -ENOMEM;
	/* Library code does not print: capture both streams. */
	if (nft_ctx_buffer_output(c->nft) < 0 || nft_ctx_buffer_error(c->nft) < 0) {
		(nft_ctx_free)(c->nft); /* parenthesised: libnftables' function, not our macro */
		return -ENOMEM;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

NftCtx *weft_nft_ctx_free(NftCtx *c) {
	if (!c)
		return NULL;
	if (c->nft)
		(nft_ctx_free)(c->nft);
	return mfree(c);
}

/*
 * libnftables returns -1 for every failure and reports the cause only as text: the kernel's
 * strerror() after "Could not process rule: " (or the netlink error in a listing), or a
 * parser/evaluation diagnostic. Recover the errno from the known strerror texts; anything
 * else was a rejected batch.
 */
static int errno_from_text(const char *text) {
	static const int known[] = {
		ENOENT, EEXIST, EBUSY, EPERM, EACCES, ENOMEM, EOPNOTSUPP, EAFNOSUPPORT, ENOSPC, ENOBUFS, EINTR,
	};

	if (!text)
		return -EINVAL;
	/* Parser/evaluation errors may quote the offending command, which may contain anything. */
	if (strstr(text, "syntax error") || strstr(text, "Error: Could not parse"))
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(known); i++)
		if (strstr(text, strerror(known[i])))
			return known[i] == EACCES ? -EPERM : -known[i];
	return -EINVAL;
}

/* Reading a buffer also rewinds it; call before a command so stale text is dropped. */
static void drain(NftCtx *c) {
	(void) nft_ctx_get_output_buffer(c->nft);
	(void) nft_ctx_get_error_buffer(c->nft);
}

static int run(NftCtx *c, const char *cmd, unsigned flags, char **ret_output, char **ret_error) {
	int k;

	if (!c || !cmd)
		return -EINVAL;
	drain(c);
	nft_ctx_output_set_flags(c->nft, flags);
	k = nft_run_cmd_from_buffer(c->nft, cmd);
	nft_ctx_output_set_flags(c->nft, 0);
	if (k != 0) {
		const char *err = nft_ctx_get_error_buffer(c->nft);
		int r = errno_from_text(err);

		(void) nft_ctx_get_output_buffer(c->nft);
		if (ret_error) {
			char *e = strdup(err && *err ? err : "nft: command failed without a message");
			if (!e)
				return -ENOMEM;
			*ret_error = e;
		}
		return r;
	}
	(void) nft_ctx_get_error_buffer(c->nft); /* warnings */
	if (ret_output) {
		const char *out = nft_ctx_get_output_buffer(c->nft);
		char *o = strdup(out ? out : "");
		if (!o)
			return -ENOMEM;
		*ret_output = o;
	} else
		(void) nft_ctx_get_output_buffer(c->nft);
	return 0;
}

int nft_apply(NftCtx *c, const char *batch, char **ret_error) {
	return run(c, batch, 0, NULL, ret_error);
}

int nft_list_json_full(NftCtx *c, const char *cmd, json_t **ret, char **ret_error) {
	_cleanup_free_ char *out = NULL;
	json_error_t jerr;
	json_t *j;
	int r;

	if (!ret)
		return -EINVAL;
	r = run(c, cmd, NFT_CTX_OUTPUT_JSON, &out, ret_error);
	if (r < 0)
		return r;
	j = json_loads(out, 0, &jerr);
	if (!j || !json_is_object(j) || !json_is_array(json_object_get(j, "nftables"))) {
		json_decref(j);
		if (ret_error)
			*ret_error = strdup_printf("nft: listing output is not nftables JSON: %s",
						   j ? "no \"nftables\" array" : jerr.text);
		return -EBADMSG;
	}
	*ret = j;
	return 0;
}

int nft_list_json(NftCtx *c, const char *cmd, json_t **ret) {
	return nft_list_json_full(c, cmd, ret, NULL);
}
