/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * SHA-512 (FIPS 180-4), one-shot. Used where we must reproduce an identifier another tool derives
 * from a hash (cnitool's container ID is "cnitool-" + hex of the first 10 bytes of SHA-512 of the
 * netns path). Not for anything security-sensitive beyond that; pure, no allocation.
 */

#include <stddef.h>
#include <stdint.h>

#define SHA512_DIGEST_SIZE 64

void sha512(const void *data, size_t len, uint8_t ret[static SHA512_DIGEST_SIZE]);
