/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A text batch of nft commands, applied as one transaction (nft_apply). Writers append lines
 * with nft_batch_add(); the first allocation failure sticks and is reported by apply.
 *
 * Cost model (measured on kernel 6.18, see the nft-bridge.c header): any transaction that deletes
 * something — an element (even one added earlier in the same batch), a rule (`flush chain`), or
 * that re-adds an existing base chain — makes the closing of the nftables socket wait ~10 ms for
 * the kernel's deferred destruction. A transaction of new elements only costs well under 1 ms. Hot
 * paths therefore try a create-only batch first (nft_elem_apply_creates) and fall back to the full,
 * idempotent batch only when that fails.
 */

#include <stddef.h>
#include <stdio.h>

#include "basic/macro.h"
#include "shared/nft/nft.h"

typedef struct NftBatch {
	FILE *f;
	char *buf;
	size_t len;
} NftBatch;

/* 0 or -ENOMEM. */
int nft_batch_begin(NftBatch *b);
void nft_batch_done(NftBatch *b);
/* One line (the newline is added). */
void nft_batch_add(NftBatch *b, const char *fmt, ...) _printf_(2, 3);
/* Part of a line (no newline added): for commands built piece by piece ("{ a, b, c }"). */
void nft_batch_put(NftBatch *b, const char *fmt, ...) _printf_(2, 3);
/* Text rendered elsewhere (another batch's finished buf), as is. */
void nft_batch_append(NftBatch *b, const char *text, size_t len);
/* Closes the stream; b->buf then holds the text. 0 or -ENOMEM. */
int nft_batch_finish(NftBatch *b);
/* The text (caller frees; finished first if need be), NULL on -ENOMEM; the batch is done after. */
char *nft_batch_steal(NftBatch *b);
/* Finishes and applies the batch as one transaction; see nft_apply(). */
int nft_batch_apply(NftCtx *c, NftBatch *b, char **ret_error);
