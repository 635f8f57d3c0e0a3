/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the portmap plugin needs from nftables (table inet weft, objects "pm-*", see nft-names.h):
 *
 *   pm-prerouting, pm-output (nat, dstnat)
 *       dnat ip  to ip  daddr . meta l4proto . th dport map @pm-hostip4        (hostIP mappings)
 *       dnat ip6 to ip6 daddr . meta l4proto . th dport map @pm-hostip6
 *       fib daddr type local dnat ip  to meta l4proto . th dport map @pm-dnat4  (all local addresses)
 *       fib daddr type local dnat ip6 to meta l4proto . th dport map @pm-dnat6
 *   pm-postrouting (nat, srcnat - 10)
 *       ct status dnat ip  daddr . ip  saddr @pm-masq4 masquerade
 *       ct status dnat ip6 daddr . ip6 saddr @pm-masq6 masquerade
 *
 * The rules are fixed; every mapping is one map element and every snat source one set element,
 * commented "<net>/<cid>/<ifname>" (nft_attachment_id()), so DEL and GC work from the
 * comment alone (no prevResult, no netns) and an ADD costs the same with 1 or 1000 pods.
 * Each call is ONE atomic batch that also (re)creates the table, chains, maps and sets and
 * re-installs the fixed rules (flush + add).
 *
 * Known limits:
 *   - A key (hostPort/proto, or hostIP/hostPort/proto) belongs to one attachment: the last ADD
 *     wins (as the reference, whose rules are last-match-wins too); the loser's DEL leaves the
 *     winner's element alone because the comment differs. DEL lists, then deletes by key: an ADD
 *     of another attachment that takes over the same key between the two steps loses its element.
 *   - An ADD does not look for elements an earlier ADD of the same attachment left under other
 *     keys (a re-ADD without DEL); DEL and GC remove them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"
#include "shared/nft/nft-elem.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"

/* One DNAT: [host_ip]:host_port/proto -> pod:container_port. host_ip AF_UNSPEC = every local
 * address of the node; otherwise its family must be pod's. */
typedef struct NftPortmapForward {
	IpAddr host_ip;
	const char *proto; /* "tcp", "udp", "sctp" */
	uint16_t host_port;
	IpAddr pod;
	uint16_t container_port;
} NftPortmapForward;

/* One snat source: DNATed connections to pod from inside `from` are masqueraded. */
typedef struct NftPortmapMasq {
	IpAddr pod;
	IpPrefix from; /* host bits are cleared */
} NftPortmapMasq;

/*
 * Installs (replaces) the elements for one attachment in one batch: an element whose key
 * another attachment owned takes this attachment's comment. Nothing is changed if it fails.
 * -EINVAL for a bad id component, protocol, port 0 or family mismatch; else 0 or -errno, with
 * nft's error text in *ret_error (if non-NULL; caller frees) when nft gave one.
 */
int nft_portmap_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const NftPortmapForward *fwd,
		    size_t n_fwd, const NftPortmapMasq *masq, size_t n_masq, char **ret_error);

/* Removes every pm-* element of this attachment. Missing table/map/element = 0. Cost: one
 * listing per map/set; a batch only if something matched. */
int nft_portmap_del(NftCtx *c, const char *net, const char *cid, const char *ifname);

/* Whether this attachment has any pm-* element, asked over raw netlink without libnftables
 * (nft-raw.h; ~0.1 ms where nft_portmap_del()'s listings cost ~4 ms): 1 yes, 0 no (also when
 * the table does not exist or no element can carry this id), -errno when the kernel could not
 * be asked (then call nft_portmap_del(), which finds out itself). */
int nft_portmap_present(const char *net, const char *cid, const char *ifname);

/*
 * Verifies that each forward and masq exists as an element owned by this attachment with the
 * expected value. 0 if all do; -ENOENT if one is missing (the key is absent), -EEXIST if it is
 * owned by another attachment, -ESTALE if it maps elsewhere: *ret_missing (may be NULL) gets its
 * index, forwards first (0..n_fwd-1), then masqs (n_fwd..). Other errors: -errno.
 */
int nft_portmap_check(NftCtx *c, const char *net, const char *cid, const char *ifname, const NftPortmapForward *fwd,
		      size_t n_fwd, const NftPortmapMasq *masq, size_t n_masq, size_t *ret_missing);

/*
 * GC for network `net`: removes pm-* elements of this network whose attachment is_valid()
 * rejects; other networks' elements and uncommented elements are left alone. Returns the number
 * of elements removed or -errno.
 */
int nft_portmap_gc(NftCtx *c, const char *net, NftAttachmentValidFn is_valid, void *userdata);
