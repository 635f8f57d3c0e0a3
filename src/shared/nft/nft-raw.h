/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Raw nf_tables netlink (libmnl, no libnftables) for the one question DEL asks most: does any
 * element of these sets carry this attachment's comment? Usually not (a pod without hostPorts
 * has no portmap element), and answering it through libnftables costs loading the library,
 * filling its cache and one listing per set: ~4 ms of a ~5.5 ms portmap DEL. A set element dump
 * is one netlink round trip per set.
 */

#include <stddef.h>

#include "shared/nft/nft-elem.h"

/*
 * 1 if an element of any of objs[0..n_objs) has the comment `comment` exactly, 0 if none (a
 * table or set that does not exist has none), -errno on a netlink error (callers then take the
 * libnftables path, which answers the same question more slowly).
 */
int nft_raw_has_comment(const NftElemObj *objs, size_t n_objs, const char *comment);

/*
 * nft_raw_has_comment() for the attachment net/cid/ifname (nft_attachment_id()): 1, 0, -errno as
 * above. An id no element can carry (ADD refuses it) answers 0, as nft_elem_remove_attachment()
 * has nothing to delete then.
 */
int nft_raw_has_attachment(const NftElemObj *objs, size_t n_objs, const char *net, const char *cid, const char *ifname);
