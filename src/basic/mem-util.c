/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "basic/macro.h"
#include "basic/mem-util.h"

typedef struct Mapping {
	unsigned long start, end;
	bool candidate; /* private, not writable, a file */
	bool dirty;     /* any anonymous / swapped / dirty page seen */
} Mapping;

static int flush(const Mapping *m) {
	if (!m->candidate || m->dirty || m->end <= m->start)
		return 0;
	/* Errors (a locked mapping: EINVAL) just leave the mapping as it is. */
	return madvise((void *) m->start, m->end - m->start, MADV_DONTNEED) == 0 ? 1 : 0;
}

int mem_drop_clean_file_pages(void) {
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	Mapping m = {};
	FILE *f;
	int n = 0;

	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long a, b, kb;
		char perms[8], path[2];
		int k;

		/* "7f..-7f.. r--p 00000000 fe:01 1234   /usr/lib/x86_64-linux-gnu/libcrypto.so.3" */
		k = sscanf(line, "%lx-%lx %7s %*x %*x:%*x %*u %1s", &a, &b, perms, path);
		if (k >= 3 && strlen(perms) == 4) {
			n += flush(&m);
			m = (Mapping) {
				.start = a,
				.end = b,
				.candidate = k == 4 && path[0] == '/' && perms[1] != 'w' && perms[3] == 'p',
			};
			continue;
		}
		if ((sscanf(line, "Anonymous: %lu kB", &kb) == 1 || sscanf(line, "Swap: %lu kB", &kb) == 1 ||
		     sscanf(line, "Private_Dirty: %lu kB", &kb) == 1 ||
		     sscanf(line, "Shared_Dirty: %lu kB", &kb) == 1) &&
		    kb > 0)
			m.dirty = true;
	}
	/* The last mapping: smaps lists [vsyscall] last on x86-64, but do not rely on it. */
	n += flush(&m);
	fclose(f);
	return n;
}
