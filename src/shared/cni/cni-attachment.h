/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * GC's cni.dev/valid-attachments: which (container ID, ifname) pairs the runtime still uses.
 * Everything a plugin stamped with another attachment of its network is garbage.
 */

#include <stdbool.h>

#include "cni/cni-plugin.h"

/* True when (cid, ifname) is one of req's valid attachments (exact, case-sensitive match). */
bool cni_attachment_is_valid(const CniRequest *req, const char *cid, const char *ifname);

/* The same as a GC callback (NftAttachmentValidFn and the like): userdata is the CniRequest. */
bool cni_attachment_is_valid_cb(const char *cid, const char *ifname, void *userdata);
