/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bridge plugin's nftables objects (ipMasq, macspoofchk), see nft-bridge.h.
 *
 * Every batch starts with the same idempotent prelude (add table/chain/set, flush chain, add the
 * fixed rules), so whichever of many concurrent plugin processes commits last, the table holds
 * exactly one copy of the rules and all sets exist. Per-attachment data are set elements.
 *
 * That prelude is expensive: re-adding an existing base chain or flushing one makes the kernel
 * defer destruction work that the closing of our nftables socket then waits for (~10-20 ms on
 * kernel 6.18, where an add-only transaction costs < 1 ms). ADD therefore first tries a batch of
 * `create element` lines alone (fails with ENOENT before first use, EEXIST when a stale element of
 * a dead attachment holds the key) and runs the full batch only when that fails. The fixed rules
 * reference the sets, so sets that exist imply rules that exist; if someone deletes a chain by
 * hand, the next full batch (any DEL, GC, or a replacing ADD) restores it.
 *
 * nftables 1.0.6 has no `destroy element` (delete-if-present). Two idioms replace it:
 *   add E; delete E; add E comment "id"   replace E (whatever comment it had) in one transaction
 *   add E; delete E                       remove E, success whether or not it existed, so a
 *                                         concurrent DEL/GC between our listing and our commit
 *                                         cannot fail the batch with ENOENT.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "nft/nft-bridge.h"
#include "nft/nft-batch.h"
#include "nft/nft-table.h"

/* ---- table layout ---- */

static void prelude_inet(NftBatch *b) {
	static const char *const T = NFT_TABLE_INET, *const C = NFT_BR_CHAIN_POSTROUTING;

	nft_batch_add(b, "add table %s", T);
	nft_batch_add(b, "add chain %s %s { type nat hook postrouting priority %s; policy accept; }", T, C,
		  NFT_BR_PRIO_POSTROUTING);
	nft_batch_add(b, "add set %s %s { type ipv4_addr . ipv4_addr; flags interval; }", T, NFT_BR_SET_LOCAL4);
	nft_batch_add(b, "add set %s %s { type ipv6_addr . ipv6_addr; flags interval; }", T, NFT_BR_SET_LOCAL6);
	nft_batch_add(b, "add set %s %s { type ipv4_addr; }", T, NFT_BR_SET_MASQ4);
	nft_batch_add(b, "add set %s %s { type ipv6_addr; }", T, NFT_BR_SET_MASQ6);
	nft_batch_add(b, "flush chain %s %s", T, C);
	/* The reference's per-container chain: `-d <subnet> ACCEPT; ! -d 224.0.0.0/4 MASQUERADE`. */
	nft_batch_add(b, "add rule %s %s ip daddr 224.0.0.0/4 return", T, C);
	nft_batch_add(b, "add rule %s %s ip6 daddr ff00::/8 return", T, C);
	nft_batch_add(b, "add rule %s %s ip saddr . ip daddr @%s return", T, C, NFT_BR_SET_LOCAL4);
	nft_batch_add(b, "add rule %s %s ip6 saddr . ip6 daddr @%s return", T, C, NFT_BR_SET_LOCAL6);
	nft_batch_add(b, "add rule %s %s ip saddr @%s masquerade", T, C, NFT_BR_SET_MASQ4);
	nft_batch_add(b, "add rule %s %s ip6 saddr @%s masquerade", T, C, NFT_BR_SET_MASQ6);
}

static void prelude_bridge(NftBatch *b) {
	static const char *const T = NFT_TABLE_BRIDGE, *const C = NFT_BR_CHAIN_MACSPOOF;

	nft_batch_add(b, "add table %s", T);
	nft_batch_add(b, "add chain %s %s { type filter hook prerouting priority %s; policy accept; }", T, C,
		  NFT_BR_PRIO_MACSPOOF);
	nft_batch_add(b, "add set %s %s { type ifname; }", T, NFT_BR_SET_MAC_PORTS);
	nft_batch_add(b, "add set %s %s { type ifname . ether_addr; }", T, NFT_BR_SET_MAC_ALLOW);
	nft_batch_add(b, "flush chain %s %s", T, C);
	nft_batch_add(b, "add rule %s %s iifname . ether saddr @%s return", T, C, NFT_BR_SET_MAC_ALLOW);
	nft_batch_add(b, "add rule %s %s iifname @%s drop", T, C, NFT_BR_SET_MAC_PORTS);
}

/* ---- attachment ids ---- */

static bool id_component_valid(const char *s) {
	if (isempty(s))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == '"' || *s == '\\' || (unsigned char) *s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A host-side interface name that is safe inside nft double quotes. */
static bool ifname_valid(const char *s) {
	return id_component_valid(s) && strlen(s) < 16;
}

static void net_hash(const char *net, char buf[static 18]) {
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */

	for (const char *p = net; *p; p++)
		h = (h ^ (unsigned char) *p) * 0x100000001b3ULL;
	snprintf(buf, 18, "~%016llx", (unsigned long long) h);
}

int nft_bridge_attachment_id(const char *net, const char *cid, const char *ifname,
			     char buf[static NFT_COMMENT_MAX + 1]) {
	char h[18];
	int n;

	if (!id_component_valid(net) || !id_component_valid(cid) || !id_component_valid(ifname))
		return -EINVAL;
	n = snprintf(buf, NFT_COMMENT_MAX + 1, "%s/%s/%s", net, cid, ifname);
	if (n >= 0 && n <= NFT_COMMENT_MAX)
		return 0;
	net_hash(net, h);
	n = snprintf(buf, NFT_COMMENT_MAX + 1, "%s/%s/%s", h, cid, ifname);
	if (n < 0 || n > NFT_COMMENT_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Does a comment's <net> field denote `net` (plain or hashed form)? */
static bool net_field_matches(const char *field, size_t len, const char *net) {
	char h[18];

	if (strlen(net) == len && strncmp(field, net, len) == 0)
		return true;
	net_hash(net, h);
	return len == 17 && strncmp(field, h, len) == 0;
}

/* ---- listing set elements ---- */

/* Renders one element key from nft JSON back into nft syntax. `types` is the set's "type"
 * (string or array); components of type ifname are quoted. */
static int render_value(FILE *f, json_t *v, json_t *types, size_t idx) {
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		json_t *t = json_is_array(types) ? json_array_get(types, idx) : types;
		bool quote = json_is_string(t) && streq(json_string_value(t), "ifname");

		/* Only values we wrote ourselves get here (comment matched), but never let a
		 * strange one change the meaning of the batch. */
		if (strpbrk(s, "\"\\;{}\n#"))
			return -EINVAL;
		fprintf(f, quote ? "\"%s\"" : "%s", s);
		return 0;
	}
	if (json_is_integer(v)) {
		fprintf(f, "%lld", (long long) json_integer_value(v));
		return 0;
	}
	if (json_is_object(v)) {
		json_t *x;

		if ((x = json_object_get(v, "prefix"))) {
			json_t *a = json_object_get(x, "addr"), *l = json_object_get(x, "len");
			if (!json_is_string(a) || !json_is_integer(l))
				return -EBADMSG;
			if (strpbrk(json_string_value(a), "\"\\;{}\n#"))
				return -EINVAL;
			fprintf(f, "%s/%lld", json_string_value(a), (long long) json_integer_value(l));
			return 0;
		}
		if ((x = json_object_get(v, "range"))) {
			int r;
			if (!json_is_array(x) || json_array_size(x) != 2)
				return -EBADMSG;
			r = render_value(f, json_array_get(x, 0), types, idx);
			if (r < 0)
				return r;
			fputc('-', f);
			return render_value(f, json_array_get(x, 1), types, idx);
		}
		if ((x = json_object_get(v, "concat"))) {
			size_t i;
			json_t *e;
			if (!json_is_array(x))
				return -EBADMSG;
			json_array_foreach(x, i, e) {
				int r;
				if (i > 0)
					fputs(" . ", f);
				r = render_value(f, e, types, i);
				if (r < 0)
					return r;
			}
			return 0;
		}
	}
	return -EBADMSG;
}

/* Called for each commented element; key = rendered key text. Return <0 to abort. */
typedef int (*ElemFn)(const char *family_table, const char *set, const char *key, json_t *val,
		      const char *comment, void *userdata);

/* Lists one set and calls fn for each element carrying a comment. Missing table/set = 0. */
static int set_foreach(NftCtx *c, const char *family_table, const char *set, ElemFn fn, void *userdata) {
	_cleanup_free_ char *cmd = NULL;
	json_t *j = NULL, *arr, *item;
	size_t i;
	int r;

	cmd = strdup_printf("list set %s %s", family_table, set);
	if (!cmd)
		return -ENOMEM;
	r = nft_list_json(c, cmd, &j);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	arr = json_object_get(j, "nftables");
	json_array_foreach(arr, i, item) {
		json_t *s = json_object_get(item, "set"), *elems, *types, *e;
		size_t k;

		if (!s)
			continue;
		types = json_object_get(s, "type");
		elems = json_object_get(s, "elem"); /* absent when the set is empty */
		json_array_foreach(elems, k, e) {
			json_t *inner = json_object_get(e, "elem"), *val;
			const char *comment;
			char *key = NULL;
			size_t keylen = 0;
			FILE *f;

			if (!inner)
				continue; /* no comment: not ours to judge */
			comment = json_string_value(json_object_get(inner, "comment"));
			val = json_object_get(inner, "val");
			if (!comment || !val)
				continue;
			f = open_memstream(&key, &keylen);
			if (!f) {
				r = -ENOMEM;
				goto out;
			}
			r = render_value(f, val, types, 0);
			if (fclose(f) != 0 && r >= 0)
				r = -ENOMEM;
			if (r >= 0)
				r = fn(family_table, set, key, val, comment, userdata);
			free(key);
			if (r == -EINVAL || r == -EBADMSG)
				r = 0; /* an element we cannot render is skipped, not fatal */
			if (r < 0)
				goto out;
		}
	}
	r = 0;
out:
	json_decref(j);
	return r;
}

/*
 * The ADD fast path: one transaction of `create element S { K comment "id" }` for each (set, key).
 * 0 on success, -EAGAIN when the caller must run its full batch instead (a set missing, a key
 * taken — the kernel's ENOENT/EEXIST), -ENOMEM.
 */
static int nft_bridge_apply_creates(NftCtx *c, const char *family_table, const char *const *sets,
				    const char *const *keys, const char *id) {
	NftBatch b;
	int r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	for (size_t i = 0; sets[i]; i++)
		nft_batch_add(&b, "create element %s %s { %s comment \"%s\" }", family_table, sets[i], keys[i], id);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
	return r == -ENOMEM ? r : r < 0 ? -EAGAIN : 0;
}

/* Adds "add E; delete E" for an element to remove it idempotently. */
static void batch_remove_elem(NftBatch *b, const char *family_table, const char *set, const char *key) {
	nft_batch_add(b, "add element %s %s { %s }", family_table, set, key);
	nft_batch_add(b, "delete element %s %s { %s }", family_table, set, key);
}

/* ---- masq ---- */

int nft_bridge_masq_add(NftCtx *c, const char *net, const char *cid, const char *ifname,
			const IpPrefix *pod_addr) {
	char id[NFT_COMMENT_MAX + 1], ip[IP_ADDR_STRLEN], subnet[IP_PREFIX_STRLEN];
	char key[IP_ADDR_STRLEN + IP_PREFIX_STRLEN + 4];
	const char *local, *masq;
	IpPrefix n;
	NftBatch b;
	int r;

	if (!c || !pod_addr)
		return -EINVAL;
	if (pod_addr->addr.family == AF_INET) {
		local = NFT_BR_SET_LOCAL4;
		masq = NFT_BR_SET_MASQ4;
	} else if (pod_addr->addr.family == AF_INET6) {
		local = NFT_BR_SET_LOCAL6;
		masq = NFT_BR_SET_MASQ6;
	} else
		return -EAFNOSUPPORT;
	if (pod_addr->len > ip_family_bits(pod_addr->addr.family))
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	n = ip_prefix_mask(pod_addr);
	ip_addr_to_string(&pod_addr->addr, ip);
	ip_prefix_to_string(&n, subnet);

	snprintf(key, sizeof(key), "%s . %s", ip, subnet);

	/* Fast path: both elements new and the sets there (see the top of this file). */
	r = nft_bridge_apply_creates(c, NFT_TABLE_INET, (const char *const[]) { local, masq, NULL },
				     (const char *const[]) { key, ip, NULL }, id);
	if (r != -EAGAIN)
		return r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	prelude_inet(&b);
	/* Replace rather than add: an element left by a dead attachment with the same address must
	 * take this attachment's comment, or that attachment's DEL/GC would remove our masquerade. */
	batch_remove_elem(&b, NFT_TABLE_INET, local, key);
	nft_batch_add(&b, "add element %s %s { %s comment \"%s\" }", NFT_TABLE_INET, local, key, id);
	batch_remove_elem(&b, NFT_TABLE_INET, masq, ip);
	nft_batch_add(&b, "add element %s %s { %s comment \"%s\" }", NFT_TABLE_INET, masq, ip, id);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
	return r;
}

/* Which attachments' elements to remove: one id (DEL), or a network + validity callback (GC). */
typedef struct Match {
	const char *id;
	const char *net;
	bool (*is_valid)(const char *cid, const char *ifname, void *userdata);
	void *userdata;
	NftBatch *batch;
	unsigned n_removed;
} Match;

static bool match_comment(const Match *m, const char *comment) {
	const char *s1, *s2;
	char cid[NFT_COMMENT_MAX + 1];

	if (m->id)
		return streq(comment, m->id);
	/* "<net>/<cid>/<ifname>": components never contain '/' */
	s1 = strchr(comment, '/');
	s2 = strrchr(comment, '/');
	if (!s1 || s2 == s1 || s2 - s1 - 1 <= 0 || (size_t) (s2 - s1 - 1) >= sizeof(cid) || !s2[1])
		return false;
	if (!net_field_matches(comment, (size_t) (s1 - comment), m->net))
		return false;
	memcpy(cid, s1 + 1, (size_t) (s2 - s1 - 1));
	cid[s2 - s1 - 1] = 0;
	if (strchr(cid, '/'))
		return false;
	return !m->is_valid(cid, s2 + 1, m->userdata);
}

static int collect_elem(const char *family_table, const char *set, const char *key, json_t *val,
			const char *comment, void *userdata) {
	Match *m = userdata;

	if (!match_comment(m, comment))
		return 0;
	batch_remove_elem(m->batch, family_table, set, key);
	m->n_removed++;
	return 0;
}

static const struct {
	const char *table;
	const char *set;
	bool macspoof;
} all_sets[] = {
	{ NFT_TABLE_INET, NFT_BR_SET_LOCAL4, false },
	{ NFT_TABLE_INET, NFT_BR_SET_LOCAL6, false },
	{ NFT_TABLE_INET, NFT_BR_SET_MASQ4, false },
	{ NFT_TABLE_INET, NFT_BR_SET_MASQ6, false },
	{ NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS, true },
	{ NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW, true },
};

/*
 * Lists the selected sets, then removes every matching element in one batch. The listing and the
 * batch are two steps; a concurrent DEL of the same element in between is harmless (add+delete).
 * Returns the number of elements removed.
 */
static int remove_matching(NftCtx *c, Match *m, bool masq, bool macspoof) {
	bool have_inet = false, have_bridge = false;
	NftBatch b;
	int r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	m->batch = &b;
	m->n_removed = 0;
	for (size_t i = 0; i < ELEMENTSOF(all_sets); i++) {
		unsigned before = m->n_removed;

		if (all_sets[i].macspoof ? !macspoof : !masq)
			continue;
		/* The elements are only rendered into the batch; the prelude (which keeps the sets
		 * existing even if someone flushed them meanwhile) is prepended below. */
		r = set_foreach(c, all_sets[i].table, all_sets[i].set, collect_elem, m);
		if (r < 0)
			goto out;
		if (m->n_removed > before) {
			if (all_sets[i].macspoof)
				have_bridge = true;
			else
				have_inet = true;
		}
	}
	if (m->n_removed == 0) {
		r = 0;
		goto out;
	}
	r = nft_batch_finish(&b);
	if (r < 0)
		goto out;
	{
		_cleanup_free_ char *body = TAKE_PTR(b.buf);
		NftBatch full;

		r = nft_batch_begin(&full);
		if (r < 0)
			goto out;
		if (have_inet)
			prelude_inet(&full);
		if (have_bridge)
			prelude_bridge(&full);
		fputs(body, full.f);
		r = nft_batch_apply(c, &full, NULL);
		nft_batch_done(&full);
	}
	if (r >= 0)
		r = (int) m->n_removed;
out:
	nft_batch_done(&b);
	return r;
}

int nft_bridge_masq_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	char id[NFT_COMMENT_MAX + 1];
	Match m = { .id = id };
	int r;

	if (!c)
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	r = remove_matching(c, &m, true, false);
	return r < 0 ? r : 0;
}

int nft_bridge_masq_gc(NftCtx *c, const char *net,
		       bool (*is_valid)(const char *cid, const char *ifname, void *userdata),
		       void *userdata) {
	Match m = { .net = net, .is_valid = is_valid, .userdata = userdata };

	if (!c || !is_valid || !id_component_valid(net))
		return -EINVAL;
	return remove_matching(c, &m, true, true);
}

/* ---- macspoof ---- */

typedef struct SameVeth {
	const char *host_veth;
	const char *id;
	NftBatch *batch;
} SameVeth;

static int collect_same_veth(const char *family_table, const char *set, const char *key, json_t *val,
			     const char *comment, void *userdata) {
	SameVeth *s = userdata;
	json_t *first = json_array_get(json_object_get(val, "concat"), 0);

	if (streq(comment, s->id) || (json_is_string(first) && streq(json_string_value(first), s->host_veth)))
		batch_remove_elem(s->batch, family_table, set, key);
	return 0;
}

int nft_bridge_macspoof_add(NftCtx *c, const char *net, const char *cid, const char *ifname,
			    const char *host_veth, const uint8_t mac[6]) {
	char id[NFT_COMMENT_MAX + 1], macs[18], port[24], key[48];
	NftBatch b;
	int r;

	if (!c || !mac || !ifname_valid(host_veth))
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	ether_addr_format(mac, macs);
	snprintf(port, sizeof(port), "\"%s\"", host_veth);
	snprintf(key, sizeof(key), "%s . %s", port, macs);

	/* Fast path: a port not guarded yet (the common case: a fresh veth name). */
	r = nft_bridge_apply_creates(c, NFT_TABLE_BRIDGE,
				     (const char *const[]) { NFT_BR_SET_MAC_PORTS, NFT_BR_SET_MAC_ALLOW, NULL },
				     (const char *const[]) { port, key, NULL }, id);
	if (r != -EAGAIN)
		return r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	prelude_bridge(&b);
	/* The allowed pair is keyed by veth AND mac, so a re-ADD with another MAC (or a veth name
	 * reused by a new pod) must drop the old pairs of this veth/attachment explicitly. */
	{
		SameVeth s = { .host_veth = host_veth, .id = id, .batch = &b };
		r = set_foreach(c, NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW, collect_same_veth, &s);
		if (r < 0)
			goto out;
	}
	batch_remove_elem(&b, NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS, port);
	nft_batch_add(&b, "add element %s %s { %s comment \"%s\" }", NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS, port, id);
	batch_remove_elem(&b, NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW, key);
	nft_batch_add(&b, "add element %s %s { %s comment \"%s\" }", NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW, key, id);
	r = nft_batch_apply(c, &b, NULL);
out:
	nft_batch_done(&b);
	return r;
}

int nft_bridge_macspoof_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	char id[NFT_COMMENT_MAX + 1];
	Match m = { .id = id };
	int r;

	if (!c)
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	r = remove_matching(c, &m, false, true);
	return r < 0 ? r : 0;
}

/* ---- flush ---- */

/* Deletes the br-* chains (first: their rules reference the sets) and sets of one table, then
 * the table itself if nothing else (weftd's node-* objects) lives in it. */
static int flush_table(NftCtx *c, const char *family_table) {
	_cleanup_free_ char *cmd = NULL;
	json_t *j = NULL, *arr, *item;
	bool others = false;
	NftBatch b;
	size_t i;
	int r;

	cmd = strdup_printf("list table %s", family_table);
	if (!cmd)
		return -ENOMEM;
	r = nft_list_json(c, cmd, &j);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = nft_batch_begin(&b);
	if (r < 0)
		goto out;
	arr = json_object_get(j, "nftables");
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(arr, i, item) {
			const char *kind = pass == 0 ? "chain" : "set";
			json_t *o = json_object_get(item, kind);
			const char *name;

			if (!o && pass == 0 && (json_object_get(item, "map") || json_object_get(item, "flowtable") ||
						json_object_get(item, "counter") || json_object_get(item, "quota") ||
						json_object_get(item, "ct helper") || json_object_get(item, "limit")))
				others = true; /* a non-br object of another kind: keep the table */
			if (!o)
				continue;
			name = json_string_value(json_object_get(o, "name"));
			if (!name)
				continue;
			if (!startswith(name, NFT_PREFIX_BRIDGE)) {
				others = true;
				continue;
			}
			nft_batch_add(&b, "delete %s %s %s", kind, family_table, name);
		}
	if (!others)
		nft_batch_add(&b, "delete table %s", family_table);
	r = nft_batch_apply(c, &b, NULL);
	nft_batch_done(&b);
out:
	json_decref(j);
	return r;
}

int nft_bridge_flush_all(NftCtx *c) {
	int r = 0;

	if (!c)
		return -EINVAL;
	RET_GATHER(r, flush_table(c, NFT_TABLE_INET));
	RET_GATHER(r, flush_table(c, NFT_TABLE_BRIDGE));
	return r;
}
