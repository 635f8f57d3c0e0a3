/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * GC's cni.dev/valid-attachments: which (container ID, ifname) pairs the runtime still uses.
 * Everything a plugin stamped with another attachment of its network is garbage.
 */

#include <stdbool.h>

#include "shared/cni/cni-plugin.h"

/* True when (cid, ifname) is one of req's valid attachments (exact, case-sensitive match; cid may
 * be the hashed form, see cni_attachment_hash()). */
bool cni_attachment_is_valid(const CniRequest *req, const char *cid, const char *ifname);

/* The same as a GC callback (NftAttachmentValidFn and the like): userdata is the CniRequest. */
bool cni_attachment_is_valid_cb(const char *cid, const char *ifname, void *userdata);

/*
 * The short stand-in for a name or container ID too long to be written out in full where an
 * attachment is recorded (nftables element comments hold 128 characters; container IDs have no
 * length limit in the spec, and the reference accepts any): "~" + 16 hex digits of the FNV-1a 64
 * hash of s. Never a valid CNI name or container ID (those start with an alphanumeric).
 */
#define CNI_ATTACHMENT_HASH_LEN 17
void cni_attachment_hash(const char *s, char buf[static CNI_ATTACHMENT_HASH_LEN + 1]);

/* True if `recorded` (a container ID as recorded: in full, or cni_attachment_hash() of it) names
 * container `cid`. */
bool cni_attachment_cid_matches(const char *recorded, const char *cid);
