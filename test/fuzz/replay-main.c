/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replays a fuzz corpus without libFuzzer: `fuzz-X-replay DIR|FILE...` feeds every regular file
 * (recursively) to LLVMFuzzerTestOneInput. Used by `make check` so the corpus is a regression test.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned n_files, n_failed;

static int feed(const char *path, const struct stat *st, int type, struct FTW *ftw) {
	_cleanup_free_ char *data = NULL;
	size_t size;
	int r;

	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	r = read_full_file(path, &data, &size);
	if (r < 0) {
		fprintf(stderr, "%s: cannot read: %d\n", path, r);
		n_failed++;
		return 0;
	}
	/* A crash here (abort, sanitizer) ends the run with the file name as the last line. */
	fprintf(stderr, "%s\n", path);
	LLVMFuzzerTestOneInput((const uint8_t *) data, size);
	n_files++;
	return 0;
}

int main(int argc, char *argv[]) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (nftw(argv[i], feed, 16, FTW_PHYS) < 0) {
			perror(argv[i]);
			return 1;
		}
	printf("%u inputs replayed, %u unreadable\n", n_files, n_failed);
	/* An empty corpus means the test ran nothing: that is a failure, not a pass. */
	return n_failed > 0 || n_files == 0 ? 1 : 0;
}
