/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The portmap plugin's nftables objects, see nft-portmap.h.
 *
 * Same idioms as nft-bridge.c: every full batch starts with the idempotent prelude (add table/
 * chains/maps/sets, flush the chains, add the fixed rules); elements are replaced and removed
 * with nft-elem.c's idioms, ADD tries the create-only fast path first. One difference for maps: `add element M { K : V
 * }` fails with EEXIST when K exists with another value. An ADD therefore first tries the batch with its own values
 * (the common case: the key is free, or already ours), and only when the kernel says EEXIST lists the maps and retries
 * with the value that is there (a hostPort taken over from another pod, or a re-ADD with a new pod IP).
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/nft/nft-portmap.h"
#include "shared/nft/nft-raw.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-elem.h"
#include "shared/nft/nft-names.h"

#define T NFT_TABLE_INET

/* ---- table layout ---- */

static void prelude(NftBatch *b) {
	static const char *const dnat_chains[] = { NFT_PM_CHAIN_PREROUTING, NFT_PM_CHAIN_OUTPUT };

	nft_batch_add(b, "add table %s", T);
	nft_batch_add(b, "add map %s %s { type inet_proto . inet_service : ipv4_addr . inet_service; }", T,
		      NFT_PM_MAP_DNAT4);
	nft_batch_add(b, "add map %s %s { type inet_proto . inet_service : ipv6_addr . inet_service; }", T,
		      NFT_PM_MAP_DNAT6);
	nft_batch_add(b, "add map %s %s { type ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service; }", T,
		      NFT_PM_MAP_HOSTIP4);
	nft_batch_add(b, "add map %s %s { type ipv6_addr . inet_proto . inet_service : ipv6_addr . inet_service; }", T,
		      NFT_PM_MAP_HOSTIP6);
	nft_batch_add(b, "add set %s %s { type ipv4_addr . ipv4_addr; flags interval; }", T, NFT_PM_SET_MASQ4);
	nft_batch_add(b, "add set %s %s { type ipv6_addr . ipv6_addr; flags interval; }", T, NFT_PM_SET_MASQ6);

	for (size_t i = 0; i < ELEMENTSOF(dnat_chains); i++) {
		const char *C = dnat_chains[i];

		/* nft accepts the name "dstnat" only on prerouting; output gets its value. */
		nft_batch_add(b, "add chain %s %s { type nat hook %s priority %s; policy accept; }", T, C,
			      i == 0 ? "prerouting" : "output", i == 0 ? NFT_PM_PRIO_DNAT : NFT_PM_PRIO_DNAT_OUTPUT);
		nft_batch_add(b, "flush chain %s %s", T, C);
		/* hostIP entries first, as the reference's hostip_hostports chain: a more specific
		 * mapping wins over a wildcard one for the same port. A missing key ends the rule
		 * (the lookup "breaks"), so each packet costs at most four hash lookups. */
		nft_batch_add(b, "add rule %s %s dnat ip to ip daddr . meta l4proto . th dport map @%s", T, C,
			      NFT_PM_MAP_HOSTIP4);
		nft_batch_add(b, "add rule %s %s dnat ip6 to ip6 daddr . meta l4proto . th dport map @%s", T, C,
			      NFT_PM_MAP_HOSTIP6);
		/* The reference's `-m addrtype --dst-type LOCAL`: any of the node's own addresses
		 * (including 127.0.0.1 from the node itself), never traffic passing through. */
		nft_batch_add(b, "add rule %s %s fib daddr type local dnat ip to meta l4proto . th dport map @%s", T, C,
			      NFT_PM_MAP_DNAT4);
		nft_batch_add(b, "add rule %s %s fib daddr type local dnat ip6 to meta l4proto . th dport map @%s", T,
			      C, NFT_PM_MAP_DNAT6);
	}

	/* Before br-postrouting (srcnat): the first NAT binding of a connection wins. `ct status
	 * dnat` limits it to connections someone DNATed; the set to pods with snat and sources
	 * whose replies would otherwise bypass the node (same subnet, the pod itself, localhost). */
	nft_batch_add(b, "add chain %s %s { type nat hook postrouting priority %s; policy accept; }", T,
		      NFT_PM_CHAIN_POSTROUTING, NFT_PM_PRIO_POSTROUTING);
	nft_batch_add(b, "flush chain %s %s", T, NFT_PM_CHAIN_POSTROUTING);
	nft_batch_add(b, "add rule %s %s ct status dnat ip daddr . ip saddr @%s masquerade", T,
		      NFT_PM_CHAIN_POSTROUTING, NFT_PM_SET_MASQ4);
	nft_batch_add(b, "add rule %s %s ct status dnat ip6 daddr . ip6 saddr @%s masquerade", T,
		      NFT_PM_CHAIN_POSTROUTING, NFT_PM_SET_MASQ6);
}

enum {
	DNAT4,
	DNAT6,
	HOSTIP4,
	HOSTIP6,
	MASQ4,
	MASQ6,
	N_OBJS
};

static const NftElemObj pm_objs[N_OBJS] = {
	[DNAT4] = { T, NFT_PM_MAP_DNAT4, true, prelude },     [DNAT6] = { T, NFT_PM_MAP_DNAT6, true, prelude },
	[HOSTIP4] = { T, NFT_PM_MAP_HOSTIP4, true, prelude }, [HOSTIP6] = { T, NFT_PM_MAP_HOSTIP6, true, prelude },
	[MASQ4] = { T, NFT_PM_SET_MASQ4, false, prelude },    [MASQ6] = { T, NFT_PM_SET_MASQ6, false, prelude },
};

/* ---- element text ---- */

static bool proto_valid(const char *p) {
	return p && (streq(p, "tcp") || streq(p, "udp") || streq(p, "sctp"));
}

/* Key and value of a forward as nft prints them, and the map it lives in. */
static int forward_text(const NftPortmapForward *f, const NftElemObj **ret_map, char *key, size_t keylen, char *val,
			size_t vallen) {
	char h[IP_ADDR_STRLEN], p[IP_ADDR_STRLEN];
	int fam = f->pod.family;

	if ((fam != AF_INET && fam != AF_INET6) || !proto_valid(f->proto) || f->host_port == 0 ||
	    f->container_port == 0)
		return -EINVAL;
	if (f->host_ip.family != AF_UNSPEC && f->host_ip.family != fam)
		return -EINVAL;
	ip_addr_to_string(&f->pod, p);
	snprintf(val, vallen, "%s . %u", p, f->container_port);
	if (f->host_ip.family == AF_UNSPEC) {
		*ret_map = &pm_objs[fam == AF_INET ? DNAT4 : DNAT6];
		snprintf(key, keylen, "%s . %u", f->proto, f->host_port);
	} else {
		*ret_map = &pm_objs[fam == AF_INET ? HOSTIP4 : HOSTIP6];
		snprintf(key, keylen, "%s . %s . %u", ip_addr_to_string(&f->host_ip, h), f->proto, f->host_port);
	}
	return 0;
}

static int masq_text(const NftPortmapMasq *m, const NftElemObj **ret_set, char *key, size_t keylen) {
	char a[IP_ADDR_STRLEN], s[IP_PREFIX_STRLEN];
	int fam = m->pod.family;
	IpPrefix n;

	if ((fam != AF_INET && fam != AF_INET6) || m->from.addr.family != fam || m->from.len > ip_family_bits(fam))
		return -EINVAL;
	n = ip_prefix_mask(&m->from);
	/* nft prints a full-length prefix as a plain address: render it the same way so CHECK
	 * can compare text. */
	if (n.len == ip_family_bits(fam))
		ip_addr_to_string(&n.addr, s);
	else
		ip_prefix_to_string(&n, s);
	*ret_set = &pm_objs[fam == AF_INET ? MASQ4 : MASQ6];
	snprintf(key, keylen, "%s . %s", ip_addr_to_string(&m->pod, a), s);
	return 0;
}

/* ---- add ---- */

/* Current values of keys in maps, for the EEXIST retry: "map\tkey" -> value. */
typedef struct Existing {
	char **names; /* strv of "map\tkey" */
	char **vals;  /* parallel strv */
} Existing;

static void existing_done(Existing *e) {
	strv_free(e->names);
	strv_free(e->vals);
	*e = (Existing) {};
}

static int collect_existing(const NftElem *el, void *userdata) {
	Existing *e = userdata;
	char *n;

	if (!el->obj->is_map)
		return 0;
	n = strdup_printf("%s\t%s", el->obj->name, el->key);
	if (!n)
		return -ENOMEM;
	if (strv_consume(&e->names, n) < 0 || strv_extend(&e->vals, el->data) < 0)
		return -ENOMEM;
	return 0;
}

/* Uncommented elements (not written by us) are not listed by nft_elem_foreach(); the reference never
 * writes any either, so an EEXIST on such a key stays an error. */
static const char *existing_value(const Existing *e, const NftElemObj *o, const char *key) {
	const char *map = o->name;
	size_t ml = strlen(map);

	for (size_t i = 0; e->names && e->names[i]; i++)
		if (strncmp(e->names[i], map, ml) == 0 && e->names[i][ml] == '\t' && streq(e->names[i] + ml + 1, key))
			return e->vals[i];
	return NULL;
}

static int build_add(NftBatch *b, const char *id, const NftPortmapForward *fwd, size_t n_fwd,
		     const NftPortmapMasq *masq, size_t n_masq, const Existing *ex) {
	char key[2 * IP_ADDR_STRLEN + 32], val[IP_ADDR_STRLEN + 16];
	const NftElemObj *obj;
	int r;

	prelude(b);
	for (size_t i = 0; i < n_fwd; i++) {
		const char *old;

		r = forward_text(&fwd[i], &obj, key, sizeof(key), val, sizeof(val));
		if (r < 0)
			return r;
		old = ex ? existing_value(ex, obj, key) : NULL;
		/* Replace, not add: a key another attachment held takes our comment, so its
		 * DEL/GC leaves our mapping alone. */
		nft_elem_add_replace(b, obj, key, old, val, id);
	}
	for (size_t i = 0; i < n_masq; i++) {
		r = masq_text(&masq[i], &obj, key, sizeof(key));
		if (r < 0)
			return r;
		nft_elem_add_replace(b, obj, key, NULL, NULL, id);
	}
	return 0;
}

/* The ADD fast path: `create element` for every forward and masq entry in one transaction.
 * 0, -EAGAIN (a map/set missing or a key taken: run the full batch), or -ENOMEM/-EINVAL. */
static int build_creates(const char *id, const NftPortmapForward *fwd, size_t n_fwd, const NftPortmapMasq *masq,
			 size_t n_masq, NftCtx *c) {
	char key[2 * IP_ADDR_STRLEN + 32], val[IP_ADDR_STRLEN + 16];
	const NftElemObj *obj;
	NftBatch b;
	int r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_fwd && r >= 0; i++) {
		r = forward_text(&fwd[i], &obj, key, sizeof(key), val, sizeof(val));
		if (r >= 0)
			nft_elem_add_create(&b, obj, key, val, id);
	}
	for (size_t i = 0; i < n_masq && r >= 0; i++) {
		r = masq_text(&masq[i], &obj, key, sizeof(key));
		if (r >= 0)
			nft_elem_add_create(&b, obj, key, NULL, id);
	}
	if (r < 0) {
		nft_batch_done(&b);
		return r;
	}
	return nft_elem_apply_creates(c, &b);
}

int nft_portmap_add(NftCtx *c, const char *net, const char *cid, const char *ifname, const NftPortmapForward *fwd,
		    size_t n_fwd, const NftPortmapMasq *masq, size_t n_masq, char **ret_error) {
	char id[NFT_COMMENT_MAX + 1];
	int r;

	if (!c || (n_fwd > 0 && !fwd) || (n_masq > 0 && !masq))
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;

	/* Fast path (see nft-batch.h): every key new and the maps there — one create-only
	 * transaction, no prelude, no deletes. Anything else falls through to the full batch. */
	r = build_creates(id, fwd, n_fwd, masq, n_masq, c);
	if (r != -EAGAIN)
		return r;
	r = 0;

	/* Two tries with the values listed just before: a concurrent ADD taking the same key
	 * in between gives one more EEXIST. */
	for (int attempt = 0; attempt < 3; attempt++) {
		Existing ex = {};
		NftBatch b;

		if (attempt > 0)
			for (size_t i = 0; i < ELEMENTSOF(pm_objs) && r >= 0; i++)
				if (pm_objs[i].is_map)
					r = nft_elem_foreach(c, &pm_objs[i], collect_existing, &ex);
		if (r >= 0)
			r = nft_batch_begin(&b);
		if (r < 0) {
			existing_done(&ex);
			return r;
		}
		r = build_add(&b, id, fwd, n_fwd, masq, n_masq, attempt > 0 ? &ex : NULL);
		if (r >= 0) {
			char **err = ret_error;

			/* The EEXIST of a first try is expected: keep only the final error text. */
			if (err && *err)
				*err = mfree(*err);
			r = nft_batch_apply(c, &b, err);
		}
		nft_batch_done(&b);
		existing_done(&ex);
		if (r != -EEXIST)
			return r;
		r = 0;
	}
	return -EEXIST;
}

/* ---- del / gc ---- */

int nft_portmap_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	return nft_elem_remove_attachment(c, pm_objs, N_OBJS, net, cid, ifname);
}

int nft_portmap_present(const char *net, const char *cid, const char *ifname) {
	return nft_raw_has_attachment(pm_objs, N_OBJS, net, cid, ifname);
}

int nft_portmap_gc(NftCtx *c, const char *net, NftAttachmentValidFn is_valid, void *userdata) {
	return nft_elem_gc(c, pm_objs, N_OBJS, net, is_valid, userdata);
}

/* ---- check ---- */

typedef struct Seen {
	char **keys; /* "obj\tkey" */
	char **vals; /* value or "" for sets */
	char **comments;
} Seen;

static int collect_all(const NftElem *e, void *userdata) {
	Seen *s = userdata;
	char *k = strdup_printf("%s\t%s", e->obj->name, e->key);

	if (!k)
		return -ENOMEM;
	if (strv_consume(&s->keys, k) < 0 || strv_extend(&s->vals, e->data ?: "") < 0 ||
	    strv_extend(&s->comments, e->comment) < 0)
		return -ENOMEM;
	return 0;
}

static int seen_verify(const Seen *s, const NftElemObj *o, const char *key, const char *val, const char *id) {
	const char *obj = o->name;
	size_t ol = strlen(obj);

	for (size_t i = 0; s->keys && s->keys[i]; i++) {
		if (strncmp(s->keys[i], obj, ol) != 0 || s->keys[i][ol] != '\t' || !streq(s->keys[i] + ol + 1, key))
			continue;
		if (!streq(s->comments[i], id))
			return -EEXIST;
		if (val && !streq(s->vals[i], val))
			return -ESTALE;
		return 0;
	}
	return -ENOENT;
}

int nft_portmap_check(NftCtx *c, const char *net, const char *cid, const char *ifname, const NftPortmapForward *fwd,
		      size_t n_fwd, const NftPortmapMasq *masq, size_t n_masq, size_t *ret_missing) {
	char id[NFT_COMMENT_MAX + 1], key[2 * IP_ADDR_STRLEN + 32], val[IP_ADDR_STRLEN + 16];
	Seen s = {};
	const NftElemObj *obj;
	bool want[N_OBJS] = {};
	int r;

	if (!c || (n_fwd > 0 && !fwd) || (n_masq > 0 && !masq))
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	/* List only the maps/sets this attachment should have elements in. */
	for (size_t i = 0; i < n_fwd + n_masq; i++) {
		r = i < n_fwd ? forward_text(&fwd[i], &obj, key, sizeof(key), val, sizeof(val))
			      : masq_text(&masq[i - n_fwd], &obj, key, sizeof(key));
		if (r < 0)
			return r;
		want[obj - pm_objs] = true;
	}
	for (size_t i = 0; i < ELEMENTSOF(pm_objs) && r >= 0; i++)
		if (want[i])
			r = nft_elem_foreach(c, &pm_objs[i], collect_all, &s);
	for (size_t i = 0; r >= 0 && i < n_fwd + n_masq; i++) {
		if (i < n_fwd) {
			(void) forward_text(&fwd[i], &obj, key, sizeof(key), val, sizeof(val));
			r = seen_verify(&s, obj, key, val, id);
		} else {
			(void) masq_text(&masq[i - n_fwd], &obj, key, sizeof(key));
			r = seen_verify(&s, obj, key, NULL, id);
		}
		if (r < 0 && ret_missing)
			*ret_missing = i;
	}
	strv_free(s.keys);
	strv_free(s.vals);
	strv_free(s.comments);
	return r < 0 ? r : 0;
}
