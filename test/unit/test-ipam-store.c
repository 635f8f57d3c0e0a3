/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host-local store on a throwaway directory: the reference's file layout and bytes,
 * the lock, the index (used without scanning, rebuilt after external changes and when torn),
 * legacy content, DEL's scan fallback, GC, and crash leftovers. No privileges needed.
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/ipam/ipam-store.h"
#include "shared/store/store-lock.h"

static char base[64];
static char dir[128];

static IpAddr A(const char *s) {
	IpAddr a;

	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
	return remove(p);
}

static int setup(void **state) {
	snprintf(base, sizeof(base), "/tmp/test-ipam-store.XXXXXX");
	if (!mkdtemp(base))
		return -1;
	snprintf(dir, sizeof(dir), "%s/net1", base);
	return 0;
}

static int teardown(void **state) {
	nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static char *file(const char *name) {
	char p[256];
	char *data = NULL;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (read_full_file(p, &data, NULL) < 0)
		return NULL;
	return data;
}

static void put(const char *name, const char *content) {
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(mkdir_p(dir, 0755), 0);
	assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static bool exists(const char *name) {
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static IpamStore *open_store(void) {
	IpamStore *s = NULL;

	assert_int_equal(ipam_store_open(base, "net1", 0, &s), 0);
	return s;
}

static size_t n_by_id(IpamStore *s, const char *cid, const char *ifname, bool scan, const char *first) {
	IpAddr *ips = NULL;
	size_t n = 0;
	char buf[IP_ADDR_STRLEN];

	assert_int_equal(ipam_store_get_by_id(s, cid, ifname, scan, &ips, &n), 0);
	if (first && n > 0)
		assert_string_equal(ip_addr_to_string(&ips[0], buf), first);
	free(ips);
	return n;
}

static void test_layout_and_reserve(void **state) {
	IpamStore *s = NULL;
	IpAddr ip = A("10.1.0.2"), last;
	char *d;

	assert_int_equal(ipam_store_open(base, "net1", IPAM_STORE_NO_CREATE, &s), -ENOENT);
	s = open_store();
	assert_true(exists("lock"));
	assert_int_equal(ipam_store_last_reserved(s, 0, &last), -ENOENT);
	assert_int_equal(ipam_store_is_reserved(s, &ip), 0);
	assert_int_equal(ipam_store_reserve(s, &ip, "  c1 \n", "eth0", 0), 0);
	assert_int_equal(ipam_store_is_reserved(s, &ip), 1);
	/* The reference's exact bytes: trimmed ID, CRLF, ifname, no newline. */
	d = file("10.1.0.2");
	assert_string_equal(d, "c1\r\neth0");
	free(d);
	d = file("last_reserved_ip.0");
	assert_string_equal(d, "10.1.0.2");
	free(d);
	assert_int_equal(ipam_store_last_reserved(s, 0, &last), 0);
	assert_true(ip_addr_equal(&last, &ip));
	/* Taken: EEXIST, content untouched. */
	assert_int_equal(ipam_store_reserve(s, &ip, "c2", "eth0", 0), -EEXIST);
	d = file("10.1.0.2");
	assert_string_equal(d, "c1\r\neth0");
	free(d);
	ip = A("fd00::2");
	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 1), 0);
	assert_true(exists("fd00::2"));
	assert_false(exists(".weft-tmp-fd00::2"));
	assert_int_equal(n_by_id(s, "c1", "eth0", false, NULL), 2);
	assert_int_equal(n_by_id(s, "c1", "eth1", false, NULL), 0);
	ipam_store_free(s);

	/* The index is there, starts with its magic (never equal to an ID for the reference). */
	d = file(".weft-index");
	assert_non_null(d);
	assert_non_null(startswith(d, "weft-ipam-index 1\n"));
	assert_non_null(strstr(d, "\nend "));
	free(d);

	/* The lock excludes other holders while a store is open (flock is per open file). */
	s = open_store();
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), lfd = -1;
	assert_int_equal(store_lock_try_acquire(dfd, "lock", &lfd), -EWOULDBLOCK);
	ipam_store_free(s);
	assert_int_equal(store_lock_try_acquire(dfd, "lock", &lfd), 0);
	close(lfd);
	close(dfd);
}

static void test_index_used_without_scan(void **state) {
	IpamStore *s = open_store();
	IpAddr ip = A("10.1.0.3");

	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	assert_int_equal(ipam_store_scan_count(s), 1); /* first use: no index yet */
	ipam_store_free(s);

	s = open_store();
	assert_int_equal(n_by_id(s, "c1", "eth0", false, "10.1.0.3"), 1);
	ip = A("10.1.0.4");
	assert_int_equal(ipam_store_reserve(s, &ip, "c2", "eth0", 0), 0);
	assert_int_equal(ipam_store_release_by_id(s, "c1", "eth0"), 1);
	assert_false(exists("10.1.0.3"));
	assert_int_equal(ipam_store_scan_count(s), 0);
	ipam_store_free(s);

	s = open_store();
	assert_int_equal(n_by_id(s, "c2", "eth0", false, "10.1.0.4"), 1);
	assert_int_equal(n_by_id(s, "c1", "eth0", false, NULL), 0);
	assert_int_equal(ipam_store_scan_count(s), 0);
	ipam_store_free(s);
}

static void test_external_change_rebuilds(void **state) {
	IpamStore *s = open_store();
	IpAddr ip = A("10.1.0.5");

	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	ipam_store_free(s);

	/* Another implementation adds and removes files behind our back. */
	put("10.1.0.6", "ref1\r\neth0");
	s = open_store();
	assert_int_equal(n_by_id(s, "ref1", "eth0", false, "10.1.0.6"), 1);
	assert_int_equal(ipam_store_scan_count(s), 1);
	ipam_store_free(s);

	char p[256];
	snprintf(p, sizeof(p), "%s/10.1.0.5", dir);
	assert_int_equal(unlink(p), 0);
	s = open_store();
	assert_int_equal(n_by_id(s, "c1", "eth0", false, NULL), 0);
	assert_int_equal(ipam_store_scan_count(s), 1);
	ipam_store_free(s);
}

static void test_torn_index(void **state) {
	IpamStore *s = open_store();
	IpAddr ip = A("10.1.0.7");
	char p[256], *d;
	int fd;

	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	ip = A("10.1.0.8");
	assert_int_equal(ipam_store_reserve(s, &ip, "c2", "eth0", 0), 0);
	ipam_store_free(s);

	/* Flip a byte in place (the directory is unchanged, so the stamp still matches):
	 * the checksum catches it. */
	d = file(".weft-index");
	snprintf(p, sizeof(p), "%s/.weft-index", dir);
	fd = open(p, O_WRONLY);
	char *x = strstr(d, "=c2");
	assert_non_null(x);
	assert_int_equal(pwrite(fd, "=c3", 3, x - d), 3);
	close(fd);
	s = open_store();
	assert_int_equal(n_by_id(s, "c2", "eth0", false, "10.1.0.8"), 1);
	assert_int_equal(n_by_id(s, "c3", "eth0", false, NULL), 0);
	assert_int_equal(ipam_store_scan_count(s), 1);
	ipam_store_free(s);

	/* Truncated mid-write. */
	assert_int_equal(truncate(p, (off_t) strlen(d) / 2), 0);
	free(d);
	s = open_store();
	assert_int_equal(n_by_id(s, "c1", "eth0", false, "10.1.0.7"), 1);
	assert_int_equal(ipam_store_scan_count(s), 1);
	ipam_store_free(s);

	/* Empty. */
	assert_int_equal(truncate(p, 0), 0);
	s = open_store();
	assert_int_equal(n_by_id(s, "c2", "eth0", false, "10.1.0.8"), 1);
	assert_int_equal(ipam_store_scan_count(s), 1);
	ipam_store_free(s);
}

static void test_legacy_content(void **state) {
	IpamStore *s;
	IpAddr ip = A("10.1.0.10");

	put("10.1.0.9", "old1\n"); /* legacy: only the container ID */
	s = open_store();
	assert_int_equal(n_by_id(s, "old1", "eth0", false, "10.1.0.9"), 1);
	/* A full match wins: the legacy file stays when (id, ifname) matched something. */
	assert_int_equal(ipam_store_reserve(s, &ip, "old1", "eth1", 0), 0);
	assert_int_equal(ipam_store_release_by_id(s, "old1", "eth1"), 1);
	assert_true(exists("10.1.0.9"));
	assert_false(exists("10.1.0.10"));
	/* No full match: the legacy file is released. */
	assert_int_equal(ipam_store_release_by_id(s, "old1", "eth0"), 1);
	assert_false(exists("10.1.0.9"));
	assert_int_equal(ipam_store_release_by_id(s, "old1", "eth0"), 0); /* idempotent */
	ipam_store_free(s);
}

static void test_del_fallback_and_verify(void **state) {
	IpamStore *s = open_store();
	IpAddr ip = A("10.1.0.11");
	char p[256];
	int fd;

	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	ipam_store_free(s);

	/* Rewrite the reservation in place (directory stamp unchanged): the index still says c1. */
	snprintf(p, sizeof(p), "%s/10.1.0.11", dir);
	fd = open(p, O_WRONLY | O_TRUNC);
	assert_int_equal(loop_write(fd, "c5\r\neth0", 8), 0);
	close(fd);

	/* DEL of c5: the index has no c5 -> fallback scan finds it. */
	s = open_store();
	assert_int_equal(ipam_store_release_by_id(s, "c5", "eth0"), 1);
	assert_false(exists("10.1.0.11"));
	assert_int_equal(ipam_store_scan_count(s), 1);
	ipam_store_free(s);

	/* Same trick the other way: the index says c1 owns .12, the file now says c6. */
	s = open_store();
	ip = A("10.1.0.12");
	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	ipam_store_free(s);
	snprintf(p, sizeof(p), "%s/10.1.0.12", dir);
	fd = open(p, O_WRONLY | O_TRUNC);
	assert_int_equal(loop_write(fd, "c6\r\neth0", 8), 0);
	close(fd);
	s = open_store();
	/* DEL of c1 must not remove c6's file although the index points there. */
	assert_int_equal(ipam_store_release_by_id(s, "c1", "eth0"), 0);
	assert_true(exists("10.1.0.12"));
	assert_int_equal(ipam_store_scan_count(s), 1);
	assert_int_equal(n_by_id(s, "c6", "eth0", false, "10.1.0.12"), 1);
	ipam_store_free(s);
}

static bool keep_c1(const IpamReservation *r, void *userdata) {
	return streq(r->container_id, "c1") && streq_ptr(r->ifname, "eth0");
}

static void test_gc_and_leftovers(void **state) {
	IpamStore *s = open_store();
	IpAddr ip;
	size_t n;

	ip = A("10.1.0.20");
	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	ip = A("10.1.0.21");
	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth1", 0), 0);
	ip = A("10.1.0.22");
	assert_int_equal(ipam_store_reserve(s, &ip, "dead", "eth0", 0), 0);
	ipam_store_free(s);
	/* Crash leftovers: a temp reservation and an atomic-write temp; a non-IP stray file. */
	put(".weft-tmp-10.1.0.23", "c9\r\neth0");
	put(".#last_reserved_ip.0.123.abc", "10.1.0.23");
	put("not-an-ip", "c9\r\neth0");

	s = open_store();
	assert_int_equal(ipam_store_gc(s, keep_c1, NULL), 2);
	assert_true(exists("10.1.0.20"));
	assert_false(exists("10.1.0.21"));
	assert_false(exists("10.1.0.22"));
	assert_false(exists(".weft-tmp-10.1.0.23"));
	assert_false(exists(".#last_reserved_ip.0.123.abc"));
	assert_true(exists("not-an-ip")); /* not ours to judge */
	assert_true(exists("last_reserved_ip.0"));
	const IpamReservation *r = ipam_store_reservations(s, &n);
	assert_int_equal(n, 1);
	assert_string_equal(r[0].container_id, "c1");
	ipam_store_free(s);

	/* Release of a single address (rollback) is idempotent. */
	s = open_store();
	ip = A("10.1.0.20");
	assert_int_equal(ipam_store_release(s, &ip), 0);
	assert_int_equal(ipam_store_release(s, &ip), 0);
	assert_false(exists("10.1.0.20"));
	assert_int_equal(n_by_id(s, "c1", "eth0", true, NULL), 0);
	ipam_store_free(s);
}

static bool keep_none(const IpamReservation *r, void *userdata) {
	return false;
}

static void mkfifo_in(const char *d, const char *name) {
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", d, name);
	assert_int_equal(mkfifo(p, 0644), 0);
}

static bool skipped_has(IpamStore *s, const char *name, const char *why) {
	char want[300];

	snprintf(want, sizeof(want), "%s/%s (%s)", dir, name, why);
	for (char *const *l = ipam_store_skipped(s); l && *l; l++)
		if (streq(*l, want))
			return true;
	return false;
}

/* Entries named like addresses that are no reservation files: a FIFO used to hang every scan
 * (and so every ADD and DEL, under the lock), a symlink to /dev/zero to fail it. They are skipped
 * and reported, never read, never released; the real reservations around them still work. */
static void test_hostile_entries(void **state) {
	IpamStore *s = open_store();
	IpAddr ip = A("10.1.0.29"), got;
	char p[256], q[256];
	size_t n;

	assert_int_equal(ipam_store_reserve(s, &ip, "c1", "eth0", 0), 0);
	ipam_store_free(s);
	/* Fails the test instead of hanging it when a FIFO is opened for reading. */
	alarm(20);
	mkfifo_in(dir, "10.1.0.30");
	snprintf(p, sizeof(p), "%s/10.1.0.31", dir);
	assert_int_equal(symlink("/dev/zero", p), 0);
	snprintf(p, sizeof(p), "%s/10.1.0.32", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/10.1.0.33", dir);
	snprintf(q, sizeof(q), "%s/10.1.0.29", dir);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/last_reserved_ip.0", dir);
	assert_int_equal(unlink(p), 0);
	mkfifo_in(dir, "last_reserved_ip.0");

	s = open_store();
	assert_int_equal(ipam_store_scan(s), 0);
	const IpamReservation *r = ipam_store_reservations(s, &n);
	assert_int_equal(n, 1);
	assert_string_equal(r[0].container_id, "c1");
	assert_true(skipped_has(s, "10.1.0.30", "not a regular file"));
	assert_true(skipped_has(s, "10.1.0.31", "a symlink"));
	assert_true(skipped_has(s, "10.1.0.32", "not a regular file"));
	assert_true(skipped_has(s, "10.1.0.33", "a symlink"));
	assert_int_equal(strv_length(ipam_store_skipped(s)), 4);
	/* The round-robin hint is garbage, not a hang. */
	assert_int_equal(ipam_store_last_reserved(s, 0, &got), -EINVAL);
	/* Their addresses stay unusable. */
	ip = A("10.1.0.30");
	assert_int_equal(ipam_store_is_reserved(s, &ip), 1);
	assert_int_equal(ipam_store_reserve(s, &ip, "c2", "eth0", 0), -EEXIST);
	assert_int_equal(n_by_id(s, "c1", "eth0", true, "10.1.0.29"), 1);
	assert_int_equal(ipam_store_release_by_id(s, "nobody", "eth0"), 0);
	assert_int_equal(ipam_store_gc(s, keep_none, NULL), 1); /* c1 only */
	assert_true(exists("10.1.0.30"));
	assert_true(exists("10.1.0.31"));
	assert_true(exists("10.1.0.32"));
	ipam_store_free(s);

	/* A FIFO as the lock file: open() must not wait for a writer. */
	snprintf(p, sizeof(p), "%s/net2", base);
	assert_int_equal(mkdir(p, 0755), 0);
	mkfifo_in(p, "lock");
	s = NULL;
	assert_int_equal(ipam_store_open(base, "net2", 0, &s), 0);
	ipam_store_free(s);
	alarm(0);
}

static void test_reservation_parse(void **state) {
	static const struct {
		const char *in, *cid, *ifname;
	} t[] = {
		{ "c1\r\neth0", "c1", "eth0" },
		{ "  c1\r\neth0\n", "c1", "eth0" },
		{ "c1", "c1", NULL },
		{ "c1\n", "c1", NULL },
		{ "c1\neth0", "c1\neth0", NULL }, /* no CRLF: the reference sees a legacy ID too */
		{ "", "", NULL },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *cid = NULL, *ifn = NULL;

		assert_int_equal(ipam_reservation_parse(t[i].in, &cid, &ifn), 0);
		assert_string_equal(cid, t[i].cid);
		if (t[i].ifname)
			assert_string_equal(ifn, t[i].ifname);
		else
			assert_null(ifn);
		free(cid);
		free(ifn);
	}
}

static void test_odd_ids_roundtrip_index(void **state) {
	/* IDs with spaces/percent/UTF-8 survive the index (escaped) without a rescan. */
	IpamStore *s = open_store();
	IpAddr ip = A("10.1.0.30");

	assert_int_equal(ipam_store_reserve(s, &ip, "a b%c\xc3\xa9", "e 0", 0), 0);
	ipam_store_free(s);
	s = open_store();
	assert_int_equal(n_by_id(s, "a b%c\xc3\xa9", "e 0", false, "10.1.0.30"), 1);
	assert_int_equal(ipam_store_scan_count(s), 0);
	ipam_store_free(s);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layout_and_reserve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_index_used_without_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_external_change_rebuilds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_content, setup, teardown),
		cmocka_unit_test_setup_teardown(test_del_fallback_and_verify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gc_and_leftovers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_entries, setup, teardown),
		cmocka_unit_test(test_reservation_parse),
		cmocka_unit_test_setup_teardown(test_odd_ids_roundtrip_index, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
