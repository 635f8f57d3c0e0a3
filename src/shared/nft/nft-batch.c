/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "shared/nft/nft-batch.h"

int nft_batch_begin(NftBatch *b) {
	*b = (NftBatch) {};
	b->f = open_memstream(&b->buf, &b->len);
	return b->f ? 0 : -ENOMEM;
}

void nft_batch_done(NftBatch *b) {
	if (b->f)
		fclose(b->f);
	free(b->buf);
	*b = (NftBatch) {};
}

void nft_batch_add(NftBatch *b, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	vfprintf(b->f, fmt, ap);
	va_end(ap);
	fputc('\n', b->f);
}

int nft_batch_finish(NftBatch *b) {
	int r = ferror(b->f) ? -ENOMEM : 0;

	if (fclose(b->f) != 0 && r == 0)
		r = -ENOMEM;
	b->f = NULL;
	return r;
}

int nft_batch_apply(NftCtx *c, NftBatch *b, char **ret_error) {
	int r = nft_batch_finish(b);

	if (r < 0)
		return r;
	return nft_apply(c, b->buf, ret_error);
}
