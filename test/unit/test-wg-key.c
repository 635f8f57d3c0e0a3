/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WireGuard keys (src/daemon/wireguard/wg-key.c): X25519 against RFC 7748's test vectors, the
 * clamping of generated keys, the base64 and hex forms (only canonical spellings parse), a peer's
 * key check, and the private key file (mode 0600, refused when looser, too long, a symlink, ...).
 */

#include <errno.h>
#include <fcntl.h>
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
#include "basic/macro.h"
#include "daemon/wireguard/wg-key.h"

static WgKey hexkey(const char *hex) {
	WgKey k;
	assert_int_equal(wg_key_from_hex(hex, strlen(hex), &k), 0);
	return k;
}

/* RFC 7748 section 6.1 */
static void test_rfc7748(void **state) {
	WgKey alice = hexkey("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
	WgKey bob = hexkey("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
	WgKey alice_pub = hexkey("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
	WgKey bob_pub = hexkey("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
	WgKey pub, zero = {};
	char hex[WG_KEY_HEX_LEN + 1];

	assert_int_equal(wg_key_public_from_private(&alice, &pub), 0);
	assert_true(wg_key_equal(&pub, &alice_pub));
	assert_int_equal(wg_key_public_from_private(&bob, &pub), 0);
	assert_true(wg_key_equal(&pub, &bob_pub));
	wg_key_to_hex(&pub, hex);
	assert_string_equal(hex, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
	assert_int_equal(wg_key_public_from_private(&zero, &pub), -EINVAL);
}

static void test_generate(void **state) {
	WgKey a, b, pa, pb, psk1, psk2;

	assert_int_equal(wg_key_generate_private(&a), 0);
	assert_int_equal(wg_key_generate_private(&b), 0);
	assert_false(wg_key_equal(&a, &b));
	/* Curve25519 clamping, as `wg genkey` does it. */
	assert_int_equal(a.b[0] & 7, 0);
	assert_int_equal(a.b[31] & 0x80, 0);
	assert_int_equal(a.b[31] & 0x40, 0x40);
	assert_int_equal(wg_key_public_from_private(&a, &pa), 0);
	assert_int_equal(wg_key_public_from_private(&b, &pb), 0);
	assert_false(wg_key_equal(&pa, &pb));
	assert_false(wg_key_is_zero(&pa));
	assert_int_equal(wg_key_generate_preshared(&psk1), 0);
	assert_int_equal(wg_key_generate_preshared(&psk2), 0);
	assert_false(wg_key_equal(&psk1, &psk2));
	wg_key_wipe(&a);
	assert_true(wg_key_is_zero(&a));
}

static void test_base64(void **state) {
	/* RFC 7748 Alice's public key as wg(8) prints it */
	WgKey k = hexkey("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"), back;
	char b64[WG_KEY_B64_LEN + 1];

	wg_key_to_base64(&k, b64);
	assert_string_equal(b64, "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=");
	assert_int_equal(wg_key_from_base64(b64, &back), 0);
	assert_true(wg_key_equal(&k, &back));
	assert_int_equal(wg_key_parse_peer(b64, &back), 0);

	static const char *const bad[] = {
		"",
		"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo",   /* no padding */
		"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo==", /* 45 */
		"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTm==",  /* 31 bytes */
		"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmp=",  /* non-canonical: low bits set */
		"hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066Spjqqb!mo=",  /* not base64 */
		"hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo=",  /* URL alphabet */
		" SDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(wg_key_from_base64(bad[i], &back), -EINVAL);
		assert_int_equal(wg_key_parse_peer(bad[i], &back), -EINVAL);
	}
	assert_int_equal(wg_key_from_base64(NULL, &back), -EINVAL);
	/* a zero key is a valid encoding but no peer's key */
	assert_int_equal(wg_key_from_base64("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", &back), 0);
	assert_true(wg_key_is_zero(&back));
	assert_int_equal(wg_key_parse_peer("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", &back), -EINVAL);
}

static void test_hex(void **state) {
	WgKey k;
	char hex[WG_KEY_HEX_LEN + 1];

	assert_int_equal(wg_key_from_hex("8520F0098930A754748B7DDCB43EF75A0DBF3A0D26381AF4EBA4A98EAA9B4E6A", 64, &k),
			 0);
	wg_key_to_hex(&k, hex);
	assert_string_equal(hex, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
	assert_int_equal(wg_key_from_hex(hex, 63, &k), -EINVAL);
	assert_int_equal(wg_key_from_hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6g", 64, &k),
			 -EINVAL);
	assert_int_equal(wg_key_from_hex("+520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", 64, &k),
			 -EINVAL);
}

static char dir[] = "/tmp/test-wg-key.XXXXXX";

static void path_of(char *buf, size_t size, const char *name) {
	snprintf(buf, size, "%s/%s", dir, name);
}

static void write_mode(const char *path, const char *content, size_t len, mode_t mode) {
	_cleanup_close_ int fd = -EBADF;

	(void) unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(loop_write(fd, content, len), 0);
	assert_int_equal(fchmod(fd, mode), 0);
}

static void test_key_file(void **state) {
	char p[256], link[256], sub[256];
	WgKey k, back, again;
	struct stat st;
	_cleanup_free_ char *content = NULL;
	char b64[WG_KEY_B64_LEN + 1];

	path_of(p, sizeof(p), "private.key");
	assert_int_equal(wg_key_load_private(p, &back), -ENOENT);
	assert_int_equal(wg_key_load_or_create(p, &k), 1);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(read_full_file(p, &content, NULL), 0);
	wg_key_to_base64(&k, b64);
	assert_int_equal(strlen(content), WG_KEY_B64_LEN + 1);
	assert_memory_equal(content, b64, WG_KEY_B64_LEN);
	assert_int_equal(content[WG_KEY_B64_LEN], '\n');
	assert_int_equal(wg_key_load_or_create(p, &again), 0);
	assert_true(wg_key_equal(&k, &again));

	/* replace: atomic, still 0600, even under a permissive umask */
	assert_int_equal(wg_key_generate_private(&again), 0);
	mode_t old = umask(0);
	assert_int_equal(wg_key_store_private(p, &again), 0);
	umask(old);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(wg_key_load_private(p, &back), 0);
	assert_true(wg_key_equal(&back, &again));

	/* without the newline (printf %s > file) is fine too */
	write_mode(p, b64, WG_KEY_B64_LEN, 0600);
	assert_int_equal(wg_key_load_private(p, &back), 0);
	assert_true(wg_key_equal(&back, &k));

	/* looser modes are refused, whatever the content */
	static const mode_t loose[] = { 0640, 0604, 0660, 0644, 0601, 0610 };
	for (size_t i = 0; i < ELEMENTSOF(loose); i++) {
		write_mode(p, b64, WG_KEY_B64_LEN, loose[i]);
		assert_int_equal(wg_key_load_private(p, &back), -EPERM);
	}
	/* 0400 is fine */
	write_mode(p, b64, WG_KEY_B64_LEN, 0400);
	assert_int_equal(wg_key_load_private(p, &back), 0);

	/* wrong lengths and contents */
	char body[300];
	snprintf(body, sizeof(body), "%s\n\n", b64);
	write_mode(p, body, strlen(body), 0600);
	assert_int_equal(wg_key_load_private(p, &back), -EINVAL);
	write_mode(p, b64, WG_KEY_B64_LEN - 1, 0600);
	assert_int_equal(wg_key_load_private(p, &back), -EINVAL);
	memset(body, 'A', sizeof(body));
	write_mode(p, body, sizeof(body), 0600);
	assert_int_equal(wg_key_load_private(p, &back), -EINVAL);
	write_mode(p, "", 0, 0600);
	assert_int_equal(wg_key_load_private(p, &back), -EINVAL);
	write_mode(p, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", 45, 0600);
	assert_int_equal(wg_key_load_private(p, &back), -EINVAL);
	/* an invalid key file is not replaced by load_or_create: the operator decides */
	assert_int_equal(wg_key_load_or_create(p, &back), -EINVAL);

	/* a symlink (even to a good key) and a directory are refused */
	write_mode(p, b64, WG_KEY_B64_LEN, 0600);
	path_of(link, sizeof(link), "link.key");
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(wg_key_load_private(link, &back), -ELOOP);
	path_of(sub, sizeof(sub), "dir.key");
	assert_int_equal(mkdir(sub, 0700), 0);
	assert_int_equal(wg_key_load_private(sub, &back), -EMEDIUMTYPE);
	assert_int_equal(wg_key_store_private(p, &(WgKey) {}), -EINVAL);

	(void) unlink(link);
	(void) rmdir(sub);
	(void) unlink(p);
}

static int setup(void **state) {
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
	return rmdir(dir);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7748), cmocka_unit_test(test_generate), cmocka_unit_test(test_base64),
		cmocka_unit_test(test_hex),     cmocka_unit_test(test_key_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
