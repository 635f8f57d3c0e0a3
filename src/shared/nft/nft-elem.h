/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Per-attachment elements of our sets and maps, the one implementation behind nft-bridge.c,
 * nft-portmap.c and nft-firewall.c. Every element a plugin writes carries the comment
 * "<net>/<cid>/<ifname>" (nft_attachment_id()), so DEL and GC work from the comment alone.
 *
 * nftables 1.0.6 has no `destroy element` (delete-if-present). Two idioms replace it:
 *   add E; delete E; add E comment "id"   replace E (whatever comment it had) in one transaction
 *   add E; delete E                       remove E, success whether or not it existed, so a
 *                                         concurrent DEL/GC between our listing and our commit
 *                                         cannot fail the batch with ENOENT.
 *
 * ADD fast path (cost model in nft-batch.h): a transaction of `create element` lines alone costs
 * < 1 ms, one with any delete/flush/base-chain re-add ~10-20 ms. ADD therefore first applies only
 * creates (nft_elem_apply_creates(): fails with ENOENT before first use, EEXIST when a stale
 * element holds the key) and runs the full prelude + replace batch only when that fails. The
 * fixed rules reference the sets, so sets that exist imply rules that exist; if someone deletes a
 * chain by hand, the next full batch (any DEL, GC, or a replacing ADD) restores it.
 */

#include <stdbool.h>
#include <stddef.h>

#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"

/* GC's question to the plugin: is attachment (cid, ifname) still alive? */
typedef bool (*NftAttachmentValidFn)(const char *cid, const char *ifname, void *userdata);

/* A component of an attachment id: non-empty, no '/', '"', '\\' or control characters. CNI
 * names and container IDs never have them. */
bool nft_attachment_component_valid(const char *s);

/* Formats the element comment "<net>/<cid>/<ifname>" into buf. When that exceeds
 * NFT_COMMENT_MAX characters, <net> is replaced by "~" + 16 hex digits of a hash of it
 * (cni_attachment_hash()), and if that is still too long, <cid> as well (GC recognises every
 * form; its is_valid() gets the hashed <cid>, which cni_attachment_is_valid() matches). -EINVAL
 * for a bad component, -ENAMETOOLONG if it still does not fit (an ifname of ~90 characters). */
int nft_attachment_id(const char *net, const char *cid, const char *ifname, char buf[static NFT_COMMENT_MAX + 1]);

/* One set or map of ours. `prelude` (may be NULL) writes the idempotent table/chain/set lines
 * and fixed rules that a batch removing elements of it starts with. */
typedef struct NftElemObj {
	const char *family_table; /* NFT_TABLE_INET, NFT_TABLE_BRIDGE */
	const char *name;
	bool is_map;
	void (*prelude)(NftBatch *b);
} NftElemObj;

/* One listed element, everything in nft syntax ready for a batch (see nft_elem_foreach()). */
typedef struct NftElem {
	const NftElemObj *obj;
	const char *key;  /* ifname components quoted */
	const char *data; /* maps: the value; sets: NULL */
	json_t *raw_key;  /* the key as nft's JSON (borrowed) */
	const char *comment;
} NftElem;

typedef int (*NftElemFn)(const NftElem *e, void *userdata);

/*
 * Lists one set or map and calls fn for every element that carries a comment (uncommented ones
 * are not ours to judge). Elements whose key or value cannot be rendered back safely (anything
 * but addresses, prefixes, ranges, numbers, names of [A-Za-z0-9.:_-], concatenations of these)
 * are skipped: only what we wrote ourselves gets into a batch. fn returning <0 ends the walk with
 * that error. Missing table/set = 0.
 */
int nft_elem_foreach(NftCtx *c, const NftElemObj *o, NftElemFn fn, void *userdata);

/* Appends "add E; delete E": removes E whether or not it exists. data: maps only. */
void nft_elem_add_remove(NftBatch *b, const NftElemObj *o, const char *key, const char *data);
/* Appends "add E; delete E; add E comment id": E becomes this attachment's with value `data`.
 * old_data (maps; NULL = data): the value E has now, since `add` of a map key with another value
 * fails with EEXIST. */
void nft_elem_add_replace(NftBatch *b, const NftElemObj *o, const char *key, const char *old_data, const char *data,
			  const char *id);
/* Appends `create element` (the fast path: fails if E exists). */
void nft_elem_add_create(NftBatch *b, const NftElemObj *o, const char *key, const char *data, const char *id);

/*
 * Applies a batch of nft_elem_add_create() lines, the ADD fast path, and frees it (nft_batch_done).
 * 0 on success; -EAGAIN when the caller must run its full batch instead (a set missing, a key
 * taken: the kernel's ENOENT/EEXIST, or any other refusal); -ENOMEM.
 */
int nft_elem_apply_creates(NftCtx *c, NftBatch *b);

/*
 * DEL: removes every element of objs whose comment is the id of (net, cid, ifname), in ONE batch
 * that starts with the preludes of the objects it touches (each once, in objs order), so the
 * add+delete pairs cannot fail on a set someone deleted meanwhile. No batch when nothing matches.
 * Missing table/set/element = 0. 0 or -errno (-EINVAL for a bad id component).
 */
int nft_elem_remove_attachment(NftCtx *c, const NftElemObj *objs, size_t n_objs, const char *net, const char *cid,
			       const char *ifname);

/*
 * GC for network `net`: the same for every element of an attachment of `net` (its id in the plain
 * or the hashed form of nft_attachment_id()) that is_valid() rejects. Elements of other networks
 * and without a parseable comment are left alone. Returns the number of elements removed or -errno.
 */
int nft_elem_gc(NftCtx *c, const NftElemObj *objs, size_t n_objs, const char *net, NftAttachmentValidFn is_valid,
		void *userdata);
