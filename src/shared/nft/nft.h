/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * libnftables wrapper. weft never execs `nft`: every change is one text batch handed to
 * nft_run_cmd_from_buffer(), which the kernel commits as ONE transaction (all commands or none),
 * so the firewall is never half-updated. Table layout and names: nft/nft-names.h.
 *
 * A context is not thread-safe; one per thread/process. Contexts are cheap (~0.07 ms; see
 * nft-ctx.c for measured costs); a plugin opens one per invocation, weftd keeps one.
 */

#include <jansson.h>

#include "basic/macro.h"

typedef struct NftCtx NftCtx;

/* Creates a context for the CURRENT network namespace: libnftables opens its netlink socket in
 * nft_ctx_new(), so the context keeps acting on that namespace even if the thread setns()es
 * elsewhere later (verified on 1.0.6). Open one context per namespace. libnftables is linked
 * into the static host suite; only a dynamic one dlopen()s libnftables.so.1 on the first call
 * (see nft-ctx.c). 0, -ENOMEM, or (dynamic only) -ELIBACC / -ELIBBAD when the library cannot be
 * loaded or lacks a function. */
int nft_ctx_open(NftCtx **ret);

/*
 * Frees a context (NULL-safe), returns NULL.
 * libnftables itself exports `void nft_ctx_free(struct nft_ctx *)`, so our symbol is
 * weft_nft_ctx_free(); `nft_ctx_free(c)` is a function-like macro onto it. Consequence: do not
 * include <nftables/libnftables.h> after this header (only nft-ctx.c uses libnftables).
 */
NftCtx *weft_nft_ctx_free(NftCtx *c);
#define nft_ctx_free(c) weft_nft_ctx_free(c)
static inline void nft_ctx_freep(NftCtx **c) {
	if (*c)
		weft_nft_ctx_free(*c);
}
#define _cleanup_nft_ctx_ _cleanup_(nft_ctx_freep)

/*
 * Drops what libnftables keeps between commands: its cache of the kernel's objects, which after a
 * large batch holds every chain, rule and element of it (tens of MiB at 10k Services or 1k
 * policies) until the next command replaces it. The next command fills it again, as it would
 * anyway after our own commit changed the ruleset's generation. 0 or -ENOMEM (c unchanged).
 * The listings (nft_list_json*, nft_list_names) drop it themselves once their output is copied.
 */
int nft_ctx_drop_cache(NftCtx *c);

/*
 * Runs `batch` (one or more nft commands, newline/semicolon separated) as ONE transaction.
 * Returns 0, or a negative errno: -EINVAL for a batch nft rejected (syntax/semantic error) and
 * for kernel errors we cannot classify; -ENOENT, -EEXIST, -EBUSY, -EPERM, -ENOMEM, -EOPNOTSUPP,
 * -EAFNOSUPPORT, -ENOSPC, -ENOBUFS, -EINTR when the kernel said so (libnftables reports errors
 * only as text; we map its strerror() wording back). On failure, if ret_error is non-NULL,
 * *ret_error gets nft's malloc'ed error text (caller frees); untouched on success.
 */
int nft_apply(NftCtx *c, const char *batch, char **ret_error);

/*
 * As nft_apply(), but the kernel checks the batch and aborts it (libnftables' dry run, `nft -c`):
 * the same errors ("File exists" included), nothing changed. For narrowing a refused batch without
 * touching what is programmed.
 */
int nft_check(NftCtx *c, const char *batch, char **ret_error);

/*
 * Runs one listing command (e.g. "list set inet weft br-masq4") with JSON output and returns
 * the parsed document ({"nftables": [...]}) in *ret (caller owns, json_decref()).
 * Same error convention as nft_apply(); a missing table/set is -ENOENT.
 */
int nft_list_json(NftCtx *c, const char *cmd, json_t **ret);
/* Same, with nft's error text on failure (caller frees). */
int nft_list_json_full(NftCtx *c, const char *cmd, json_t **ret, char **ret_error);

/*
 * The names of table inet weft's objects of one kind ("chain", "set", "map", "counter") that start
 * with prefix, as a NULL-terminated strv in *ret (caller frees; NULL when there are none, also when
 * the table does not exist). 0 or a negative errno.
 */
int nft_list_names(NftCtx *c, const char *kind, const char *prefix, char ***ret);
