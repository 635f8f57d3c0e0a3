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

void nft_batch_put(NftBatch *b, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	vfprintf(b->f, fmt, ap);
	va_end(ap);
}

void nft_batch_append(NftBatch *b, const char *text, size_t len) {
	if (len > 0)
		fwrite(text, 1, len, b->f);
}

int nft_batch_finish(NftBatch *b) {
	int r;

	if (!b->f)
		return -ENOMEM; /* nft_batch_begin() failed, or finished already */
	r = ferror(b->f) ? -ENOMEM : 0;
	if (fclose(b->f) != 0 && r == 0)
		r = -ENOMEM;
	b->f = NULL;
	if (r == 0 && !b->buf)
		r = -ENOMEM;
	return r;
}

int nft_batch_apply(NftCtx *c, NftBatch *b, char **ret_error) {
	int r = nft_batch_finish(b);

	if (r < 0)
		return r;
	return nft_apply(c, b->buf, ret_error);
}

char *nft_batch_steal(NftBatch *b) {
	char *s = NULL;

	if (!b->f || nft_batch_finish(b) >= 0)
		s = TAKE_PTR(b->buf);
	nft_batch_done(b);
	return s;
}
