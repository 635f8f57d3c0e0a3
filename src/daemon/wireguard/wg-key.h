/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * WireGuard keys: Curve25519 (X25519) key pairs through OpenSSL's EVP API (no curve code of our
 * own), their base64 form (the one wg(8), Flannel's annotations and wireguard-tools use), the
 * node's private key file, and the check of a key a peer published.
 *
 * A private key is never logged, never put in an error message, and wiped (wg_key_wipe()) from
 * every buffer we are done with.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WG_KEY_LEN 32
/* base64 of 32 bytes: 43 characters, one '=' */
#define WG_KEY_B64_LEN 44
/* lowercase hex, the UAPI's form */
#define WG_KEY_HEX_LEN 64

typedef struct WgKey {
	uint8_t b[WG_KEY_LEN];
} WgKey;

/* Overwrites the key with zeros in a way the compiler cannot drop. */
void wg_key_wipe(WgKey *k);
bool wg_key_is_zero(const WgKey *k);
bool wg_key_equal(const WgKey *a, const WgKey *b);

/* A fresh private key (OpenSSL's CSPRNG, clamped by X25519 itself). 0, -ENOMEM or -EIO. */
int wg_key_generate_private(WgKey *ret);
/* The public key of a private key (X25519 with the base point). 0, -EINVAL (all-zero private key),
 * -ENOMEM or -EIO. */
int wg_key_public_from_private(const WgKey *priv, WgKey *ret);
/* A 32-byte random pre-shared key (not a curve point). 0 or -EIO. */
int wg_key_generate_preshared(WgKey *ret);

/* base64 (44 characters + NUL into buf). */
void wg_key_to_base64(const WgKey *k, char buf[static WG_KEY_B64_LEN + 1]);
/* Exactly 44 characters of padded base64 decoding to 32 bytes. 0 or -EINVAL. An all-zero key
 * parses (a private key file may hold anything); use wg_key_parse_peer() for a peer's key. */
int wg_key_from_base64(const char *s, WgKey *ret);
/* A peer's public key as published (a node annotation, a lease): 32 bytes of base64 and not all
 * zero (the kernel treats a zero key as "no key"). 0 or -EINVAL. */
int wg_key_parse_peer(const char *s, WgKey *ret);

/* 64 lowercase hex characters + NUL. */
void wg_key_to_hex(const WgKey *k, char buf[static WG_KEY_HEX_LEN + 1]);
/* Exactly 64 hex characters (either case). 0 or -EINVAL. */
int wg_key_from_hex(const char *s, size_t len, WgKey *ret);

/*
 * The private key file: base64 and a newline, as `wg genkey` writes it, mode 0600.
 * wg_key_load_private() refuses a file that is not a regular file or a symlink (-EMEDIUMTYPE /
 * -ELOOP), one readable or writable by group or others (-EPERM: the key may have leaked; the
 * operator decides, we do not chmod it quietly), and one whose content is not one key (-EINVAL).
 * -ENOENT when absent. wg_key_store_private() replaces the file atomically (temp file, fsync,
 * rename) with mode 0600.
 */
int wg_key_load_private(const char *path, WgKey *ret);
int wg_key_store_private(const char *path, const WgKey *k);
/* Loads the key at path, or generates one and stores it when there is none. 0 loaded, 1 created. */
int wg_key_load_or_create(const char *path, WgKey *ret);
