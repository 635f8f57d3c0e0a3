/* SPDX-License-Identifier: Apache-2.0 */
/* X25519 keys through OpenSSL's EVP API, their text forms and the private key file. */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "basic/base64.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "daemon/wireguard/wg-key.h"

/* A key file holds one base64 key and a newline; anything much longer is not a key file. */
#define WG_KEY_FILE_MAX 128

void wg_key_wipe(WgKey *k) {
	if (k)
		OPENSSL_cleanse(k->b, sizeof(k->b));
}

bool wg_key_is_zero(const WgKey *k) {
	uint8_t acc = 0;

	/* Constant time: the key may be a private one. */
	for (size_t i = 0; i < WG_KEY_LEN; i++)
		acc |= k->b[i];
	return acc == 0;
}

bool wg_key_equal(const WgKey *a, const WgKey *b) {
	return CRYPTO_memcmp(a->b, b->b, WG_KEY_LEN) == 0;
}

static void evp_pkey_freep(EVP_PKEY **p) {
	EVP_PKEY_free(*p);
}

static void evp_pkey_ctx_freep(EVP_PKEY_CTX **p) {
	EVP_PKEY_CTX_free(*p);
}

int wg_key_generate_private(WgKey *ret) {
	_cleanup_(evp_pkey_ctx_freep) EVP_PKEY_CTX *ctx = NULL;
	_cleanup_(evp_pkey_freep) EVP_PKEY *pkey = NULL;
	size_t len = WG_KEY_LEN;
	WgKey k;

	ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, NULL);
	if (!ctx)
		return -ENOMEM;
	if (EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_keygen(ctx, &pkey) <= 0)
		return -EIO;
	if (EVP_PKEY_get_raw_private_key(pkey, k.b, &len) <= 0 || len != WG_KEY_LEN) {
		wg_key_wipe(&k);
		return -EIO;
	}
	*ret = k;
	wg_key_wipe(&k);
	return 0;
}

int wg_key_public_from_private(const WgKey *priv, WgKey *ret) {
	_cleanup_(evp_pkey_freep) EVP_PKEY *pkey = NULL;
	size_t len = WG_KEY_LEN;
	WgKey pub;

	if (wg_key_is_zero(priv))
		return -EINVAL;
	pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv->b, WG_KEY_LEN);
	if (!pkey)
		return -ENOMEM;
	if (EVP_PKEY_get_raw_public_key(pkey, pub.b, &len) <= 0 || len != WG_KEY_LEN)
		return -EIO;
	*ret = pub;
	return 0;
}

int wg_key_generate_preshared(WgKey *ret) {
	WgKey k;

	if (RAND_priv_bytes(k.b, WG_KEY_LEN) != 1)
		return -EIO;
	*ret = k;
	wg_key_wipe(&k);
	return 0;
}

void wg_key_to_base64(const WgKey *k, char buf[static WG_KEY_B64_LEN + 1]) {
	/* EVP_EncodeBlock: no allocation (the key must not linger in a freed heap block) and it
	 * writes the NUL. 32 bytes always give 44 characters. */
	EVP_EncodeBlock((unsigned char *) buf, k->b, WG_KEY_LEN);
	buf[WG_KEY_B64_LEN] = 0;
}

int wg_key_from_base64(const char *s, WgKey *ret) {
	_cleanup_free_ void *data = NULL;
	char again[WG_KEY_B64_LEN + 1];
	bool canonical;
	size_t size = 0;
	WgKey k;
	int r;

	if (!s || strlen(s) != WG_KEY_B64_LEN || s[WG_KEY_B64_LEN - 1] != '=' || s[WG_KEY_B64_LEN - 2] == '=')
		return -EINVAL;
	r = base64_decode(s, WG_KEY_B64_LEN, &data, &size);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	if (size != WG_KEY_LEN) {
		OPENSSL_cleanse(data, size);
		return -EINVAL;
	}
	memcpy(k.b, data, WG_KEY_LEN);
	OPENSSL_cleanse(data, size);
	/* Canonical only: the two bits below the last character's six may not be set, so one key has
	 * one spelling (an annotation compared as a string is then compared as a key). */
	wg_key_to_base64(&k, again);
	canonical = memcmp(again, s, WG_KEY_B64_LEN) == 0;
	OPENSSL_cleanse(again, sizeof(again));
	if (!canonical) {
		wg_key_wipe(&k);
		return -EINVAL;
	}
	*ret = k;
	wg_key_wipe(&k);
	return 0;
}

int wg_key_parse_peer(const char *s, WgKey *ret) {
	WgKey k;
	int r;

	r = wg_key_from_base64(s, &k);
	if (r < 0)
		return r;
	if (wg_key_is_zero(&k))
		return -EINVAL;
	*ret = k;
	return 0;
}

void wg_key_to_hex(const WgKey *k, char buf[static WG_KEY_HEX_LEN + 1]) {
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < WG_KEY_LEN; i++) {
		buf[2 * i] = hex[k->b[i] >> 4];
		buf[2 * i + 1] = hex[k->b[i] & 0xf];
	}
	buf[WG_KEY_HEX_LEN] = 0;
}

static int unhex(char c) {
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int wg_key_from_hex(const char *s, size_t len, WgKey *ret) {
	WgKey k;

	if (len != WG_KEY_HEX_LEN)
		return -EINVAL;
	for (size_t i = 0; i < WG_KEY_LEN; i++) {
		int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			wg_key_wipe(&k);
			return -EINVAL;
		}
		k.b[i] = (uint8_t) (hi << 4 | lo);
	}
	*ret = k;
	wg_key_wipe(&k);
	return 0;
}

int wg_key_load_private(const char *path, WgKey *ret) {
	_cleanup_close_ int fd = -EBADF;
	char buf[WG_KEY_FILE_MAX + 1];
	struct stat st;
	size_t n = 0;
	WgKey k;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EMEDIUMTYPE;
	if (st.st_mode & (S_IRWXG | S_IRWXO))
		return -EPERM;
	while (n < sizeof(buf)) {
		ssize_t k_ = read(fd, buf + n, sizeof(buf) - n);
		if (k_ < 0) {
			if (errno == EINTR)
				continue;
			r = negative_errno();
			OPENSSL_cleanse(buf, sizeof(buf));
			return r;
		}
		if (k_ == 0)
			break;
		n += (size_t) k_;
	}
	/* One key, optionally followed by one newline (wg genkey's form). */
	if (n > WG_KEY_FILE_MAX || (n != WG_KEY_B64_LEN && !(n == WG_KEY_B64_LEN + 1 && buf[WG_KEY_B64_LEN] == '\n'))) {
		OPENSSL_cleanse(buf, sizeof(buf));
		return -EINVAL;
	}
	buf[WG_KEY_B64_LEN] = 0;
	r = wg_key_from_base64(buf, &k);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (r < 0)
		return r;
	if (wg_key_is_zero(&k))
		return -EINVAL;
	*ret = k;
	wg_key_wipe(&k);
	return 0;
}

int wg_key_store_private(const char *path, const WgKey *k) {
	char buf[WG_KEY_B64_LEN + 1];
	int r;

	if (wg_key_is_zero(k))
		return -EINVAL;
	wg_key_to_base64(k, buf);
	buf[WG_KEY_B64_LEN] = '\n';
	r = write_file_atomic(path, buf, sizeof(buf), 0600);
	OPENSSL_cleanse(buf, sizeof(buf));
	return r;
}

int wg_key_load_or_create(const char *path, WgKey *ret) {
	WgKey k;
	int r;

	r = wg_key_load_private(path, ret);
	if (r != -ENOENT)
		return r;
	r = wg_key_generate_private(&k);
	if (r >= 0)
		r = wg_key_store_private(path, &k);
	if (r >= 0)
		*ret = k;
	wg_key_wipe(&k);
	return r < 0 ? r : 1;
}
