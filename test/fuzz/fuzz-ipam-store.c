/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes what host-local reads back from its store directory, which the reference plugin (and
 * anyone with write access to /var/lib/cni/networks) also writes: reservation files, our
 * .weft-index cache and last_reserved_ip.N. A real store in a temporary directory, driven through
 * the public API. The first input byte selects what the rest is:
 *   0  the content of the reservation file 10.1.2.3 (read by a scan; then looked up and released
 *      by the ID it names, which must find it)
 *   1  the body of an index ("r ..." / "stamp ..." lines) that we wrap with the magic line, the
 *      directory's real stamp and a correct checksum, so the line parser is reached
 *   2  the whole .weft-index file, verbatim (magic, checksum and stamp checks)
 *   3  the content of last_reserved_ip.0
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/ipam/ipam-store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STORE_INPUT_MAX (16 * 1024)
#define NET "fuzz"
#define ENTRY "10.1.2.3"

static char root[64], dir[128];

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f) {
	return remove(p) < 0 ? 0 : 0;
}

static void cleanup(void) {
	if (root[0])
		(void) nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void) {
	const char *tmp = getenv("TMPDIR") ?: "/tmp";

	snprintf(root, sizeof(root), "%s/weft-fuzz-ipam.XXXXXX", tmp);
	if (!mkdtemp(root))
		abort();
	atexit(cleanup);
	snprintf(dir, sizeof(dir), "%s/%s", root, NET);
}

static void put(const char *name, const void *buf, size_t len) {
	char p[192];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	/* In place (no O_TRUNC of a new inode, no rename): the directory's stamp stays as it is. */
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, 0) < 0 || (len && pwrite(fd, buf, len, 0) != (ssize_t) len))
		abort();
	close(fd);
}

static void drop(const char *name) {
	char p[192];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	(void) unlink(p);
}

/* The same stamp ipam-store.c takes: inode, mtime, number of entries. */
static void stamp(char *buf, size_t size) {
	struct stat st;
	unsigned long long n = 0;
	DIR *d;

	if (stat(dir, &st) < 0 || !(d = opendir(dir)))
		abort();
	for (struct dirent *de; (de = readdir(d));)
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			n++;
	closedir(d);
	snprintf(buf, size, "stamp %llu %lld %ld %llu\n", (unsigned long long) st.st_ino, (long long) st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec, n);
}

static uint64_t fnv64(const char *p, size_t n) {
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char) p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void check_reservations(IpamStore *s) {
	const IpamReservation *r;
	size_t n;

	r = ipam_store_reservations(s, &n);
	for (size_t i = 0; i < n; i++)
		if (!r[i].container_id || (r[i].ip.family != AF_INET && r[i].ip.family != AF_INET6))
			abort();
}

static bool is_trimmed(const char *s) {
	return *s && !strchr(" \t\n\v\f\r", s[0]) && !strchr(" \t\n\v\f\r", s[strlen(s) - 1]);
}

static void entry(const uint8_t *data, size_t size) {
	_cleanup_(ipam_store_freep) IpamStore *s = NULL;
	_cleanup_free_ char *text = strndup((const char *) data, size), *cid = NULL, *ifn = NULL;
	_cleanup_free_ IpAddr *ips = NULL;
	size_t n = 0;
	int r;

	if (!text)
		return;
	drop(IPAM_STORE_INDEX_NAME); /* force a scan */
	put(ENTRY, data, size);
	if (ipam_store_open(root, NET, 0, &s) < 0)
		abort();
	check_reservations(s);
	if (ipam_reservation_parse(text, &cid, &ifn) < 0)
		abort();
	/* What the file names must find it: lookups trim the ID they are given. */
	if (!is_trimmed(cid))
		return;
	r = ipam_store_get_by_id(s, cid, ifn ?: "eth0", true, &ips, &n);
	if (r < 0 || n != 1)
		abort();
	r = ipam_store_release_by_id(s, cid, ifn ?: "eth0");
	if (r != 1 || ipam_store_is_reserved(s, &ips[0]) != 0)
		abort();
}

static void index_body(const uint8_t *data, size_t size, bool raw) {
	_cleanup_(ipam_store_freep) IpamStore *s = NULL;
	_cleanup_free_ char *buf = NULL;
	char st[128], end[32];
	size_t len;

	drop(ENTRY);
	put(IPAM_STORE_INDEX_NAME, "", 0); /* exists before the stamp is taken */
	if (raw)
		put(IPAM_STORE_INDEX_NAME, data, size);
	else {
		stamp(st, sizeof(st));
		buf = malloc(strlen("weft-ipam-index 1\n") + strlen(st) + size + 1 + sizeof(end));
		if (!buf)
			return;
		len = (size_t) sprintf(buf, "weft-ipam-index 1\n%s", st);
		memcpy(buf + len, data, size);
		len += size;
		if (len > 0 && buf[len - 1] != '\n')
			buf[len++] = '\n';
		len += (size_t) snprintf(buf + len, sizeof(end), "end %016" PRIx64 "\n", fnv64(buf, len));
		put(IPAM_STORE_INDEX_NAME, buf, len);
	}
	if (ipam_store_open(root, NET, 0, &s) < 0)
		abort();
	check_reservations(s);
	/* A lookup that misses in the index confirms with a scan (of an empty directory). */
	{
		_cleanup_free_ IpAddr *ips = NULL;
		size_t n;

		if (ipam_store_get_by_id(s, "fuzz", "eth0", true, &ips, &n) < 0)
			abort();
	}
	(void) ipam_store_release_by_id(s, "fuzz", "eth0");
}

static void last_reserved(const uint8_t *data, size_t size) {
	_cleanup_(ipam_store_freep) IpamStore *s = NULL;
	IpAddr ip;

	put("last_reserved_ip.0", data, size);
	if (ipam_store_open(root, NET, 0, &s) < 0)
		abort();
	if (ipam_store_last_reserved(s, 0, &ip) >= 0 && ip.family != AF_INET && ip.family != AF_INET6)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size < 1 || size > STORE_INPUT_MAX)
		return 0;
	if (!root[0]) {
		setup();
		/* Create the store (and its lock file) once, so stamps taken later stay valid. */
		IpamStore *s = NULL;
		if (ipam_store_open(root, NET, 0, &s) < 0)
			abort();
		ipam_store_free(s);
	}
	switch (data[0] % 4) {
	case 0: entry(data + 1, size - 1); break;
	case 1: index_body(data + 1, size - 1, false); break;
	case 2: index_body(data + 1, size - 1, true); break;
	default: last_reserved(data + 1, size - 1); break;
	}
	return 0;
}
