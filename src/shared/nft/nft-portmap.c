/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The portmap plugin's nftables objects, see nft-portmap.h.
 *
 * Same idioms as nft-bridge.c: every batch starts with the idempotent prelude (add table/chains/
 * maps/sets, flush the chains, add the fixed rules), and nftables 1.0.6 has no `destroy element`:
 *   add E; delete E; add E comment "id"   replace E, whatever comment it had
 *   add E; delete E                       remove E, whether or not it still exists
 * One difference for maps: `add element M { K : V }` fails with EEXIST when K exists with another
 * value. An ADD therefore first tries the batch with its own values (the common case: the key is
 * free, or already ours), and only when the kernel says EEXIST lists the maps and retries with the
 * value that is there (a hostPort taken over from another pod, or a re-ADD with a new pod IP).
 *
 */

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "nft/nft-bridge.h"
#include "nft/nft-portmap.h"
#include "nft/nft-batch.h"
#include "nft/nft-table.h"

#define T NFT_TABLE_INET

/* ---- table layout ---- */

typedef struct PmObj {
	const char *name;
	bool is_map;
	int family;
	bool hostip;            /* key starts with the destination address */
} PmObj;

static const PmObj pm_objs[] = {
	{ NFT_PM_MAP_DNAT4, true, AF_INET, false },   { NFT_PM_MAP_DNAT6, true, AF_INET6, false },
	{ NFT_PM_MAP_HOSTIP4, true, AF_INET, true },  { NFT_PM_MAP_HOSTIP6, true, AF_INET6, true },
	{ NFT_PM_SET_MASQ4, false, AF_INET, false },  { NFT_PM_SET_MASQ6, false, AF_INET6, false },
};

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
		nft_batch_add(b, "add rule %s %s fib daddr type local dnat ip6 to meta l4proto . th dport map @%s", T, C,
			  NFT_PM_MAP_DNAT6);
	}

	/* Before br-postrouting (srcnat): the first NAT binding of a connection wins. `ct status
	 * dnat` limits it to connections someone DNATed; the set to pods with snat and sources
	 * whose replies would otherwise bypass the node (same subnet, the pod itself, localhost). */
	nft_batch_add(b, "add chain %s %s { type nat hook postrouting priority %s; policy accept; }", T,
		  NFT_PM_CHAIN_POSTROUTING, NFT_PM_PRIO_POSTROUTING);
	nft_batch_add(b, "flush chain %s %s", T, NFT_PM_CHAIN_POSTROUTING);
	nft_batch_add(b, "add rule %s %s ct status dnat ip daddr . ip saddr @%s masquerade", T, NFT_PM_CHAIN_POSTROUTING,
		  NFT_PM_SET_MASQ4);
	nft_batch_add(b, "add rule %s %s ct status dnat ip6 daddr . ip6 saddr @%s masquerade", T,
		  NFT_PM_CHAIN_POSTROUTING, NFT_PM_SET_MASQ6);
}

/* ---- element text ---- */

static bool proto_valid(const char *p) {
	return p && (streq(p, "tcp") || streq(p, "udp") || streq(p, "sctp"));
}

/* Key and value of a forward as nft prints them, and the map it lives in. */
static int forward_text(const NftPortmapForward *f, const char **ret_map, char *key, size_t keylen, char *val,
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
		*ret_map = fam == AF_INET ? NFT_PM_MAP_DNAT4 : NFT_PM_MAP_DNAT6;
		snprintf(key, keylen, "%s . %u", f->proto, f->host_port);
	} else {
		*ret_map = fam == AF_INET ? NFT_PM_MAP_HOSTIP4 : NFT_PM_MAP_HOSTIP6;
		snprintf(key, keylen, "%s . %s . %u", ip_addr_to_string(&f->host_ip, h), f->proto, f->host_port);
	}
	return 0;
}

static int masq_text(const NftPortmapMasq *m, const char **ret_set, char *key, size_t keylen) {
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
	*ret_set = fam == AF_INET ? NFT_PM_SET_MASQ4 : NFT_PM_SET_MASQ6;
	snprintf(key, keylen, "%s . %s", ip_addr_to_string(&m->pod, a), s);
	return 0;
}

/* Renders nft JSON (string, number, prefix, range, concat) back into nft syntax. Only what our
 * own maps hold gets here; anything else is -EBADMSG and the element is skipped. */
static int render(FILE *f, json_t *v) {
	json_t *x;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		/* addresses, protocol names: never anything that could change the batch's meaning */
		if (isempty(s))
			return -EBADMSG;
		for (const char *p = s; *p; p++)
			if (!isalnum((unsigned char) *p) && !strchr(".:-_", *p))
				return -EBADMSG;
		fputs(s, f);
		return 0;
	}
	if (json_is_integer(v)) {
		fprintf(f, "%lld", (long long) json_integer_value(v));
		return 0;
	}
	if ((x = json_object_get(v, "prefix"))) {
		int r = render(f, json_object_get(x, "addr"));
		if (r < 0 || !json_is_integer(json_object_get(x, "len")))
			return -EBADMSG;
		fprintf(f, "/%lld", (long long) json_integer_value(json_object_get(x, "len")));
		return 0;
	}
	if ((x = json_object_get(v, "range"))) {
		int r;
		if (!json_is_array(x) || json_array_size(x) != 2)
			return -EBADMSG;
		r = render(f, json_array_get(x, 0));
		if (r < 0)
			return r;
		fputc('-', f);
		return render(f, json_array_get(x, 1));
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
			r = render(f, e);
			if (r < 0)
				return r;
		}
		return 0;
	}
	return -EBADMSG;
}

static int render_string(json_t *v, char **ret) {
	char *s = NULL;
	size_t l = 0;
	FILE *f = open_memstream(&s, &l);
	int r;

	if (!f)
		return -ENOMEM;
	r = render(f, v);
	if (fclose(f) != 0 && r >= 0)
		r = -ENOMEM;
	if (r < 0) {
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* ---- listing ---- */

/* Called per commented element: key and (maps) value in nft syntax. <0 aborts the walk. */
typedef int (*ElemFn)(const PmObj *o, const char *key, const char *val, const char *comment, void *userdata);

/* Lists one map/set and calls fn for every element that carries a comment. Missing = 0. */
static int obj_foreach(NftCtx *c, const PmObj *o, ElemFn fn, void *userdata) {
	_cleanup_free_ char *cmd = NULL;
	json_t *j = NULL, *item;
	size_t i;
	int r;

	cmd = strdup_printf("list %s %s %s", o->is_map ? "map" : "set", T, o->name);
	if (!cmd)
		return -ENOMEM;
	r = nft_list_json(c, cmd, &j);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	json_array_foreach(json_object_get(j, "nftables"), i, item) {
		json_t *s = json_object_get(item, o->is_map ? "map" : "set"), *e;
		size_t k;

		if (!s)
			continue;
		json_array_foreach(json_object_get(s, "elem"), k, e) {
			_cleanup_free_ char *key = NULL, *val = NULL;
			json_t *ke = o->is_map ? json_array_get(e, 0) : e;
			json_t *inner = json_object_get(ke, "elem");
			const char *comment = json_string_value(json_object_get(inner, "comment"));

			if (!comment)
				continue; /* not ours to judge */
			if (render_string(json_object_get(inner, "val"), &key) < 0 ||
			    (o->is_map && render_string(json_array_get(e, 1), &val) < 0))
				continue; /* cannot render: not an element we wrote */
			r = fn(o, key, val, comment, userdata);
			if (r < 0)
				goto out;
		}
	}
	r = 0;
out:
	json_decref(j);
	return r;
}

static void batch_remove(NftBatch *b, const PmObj *o, const char *key, const char *val) {
	if (o->is_map) {
		nft_batch_add(b, "add element %s %s { %s : %s }", T, o->name, key, val);
		nft_batch_add(b, "delete element %s %s { %s }", T, o->name, key);
	} else {
		nft_batch_add(b, "add element %s %s { %s }", T, o->name, key);
		nft_batch_add(b, "delete element %s %s { %s }", T, o->name, key);
	}
}

static const PmObj *obj_by_name(const char *name) {
	for (size_t i = 0; i < ELEMENTSOF(pm_objs); i++)
		if (streq(pm_objs[i].name, name))
			return &pm_objs[i];
	return NULL;
}

/* ---- add ---- */

/* Current values of keys in maps, for the EEXIST retry: "map\tkey" -> value. */
typedef struct Existing {
	char **names;   /* strv of "map\tkey" */
	char **vals;    /* parallel strv */
} Existing;

static void existing_done(Existing *e) {
	strv_free(e->names);
	strv_free(e->vals);
	*e = (Existing) {};
}

static int collect_existing(const PmObj *o, const char *key, const char *val, const char *comment, void *userdata) {
	Existing *e = userdata;
	char *n;

	if (!o->is_map)
		return 0;
	n = strdup_printf("%s\t%s", o->name, key);
	if (!n)
		return -ENOMEM;
	if (strv_consume(&e->names, n) < 0 || strv_extend(&e->vals, val) < 0)
		return -ENOMEM;
	return 0;
}

/* Uncommented elements (not written by us) are not listed by obj_foreach; the reference never
 * writes any either, so an EEXIST on such a key stays an error. */
static const char *existing_value(const Existing *e, const char *map, const char *key) {
	size_t ml = strlen(map);

	for (size_t i = 0; e->names && e->names[i]; i++)
		if (strncmp(e->names[i], map, ml) == 0 && e->names[i][ml] == '\t' && streq(e->names[i] + ml + 1, key))
			return e->vals[i];
	return NULL;
}

static int build_add(NftBatch *b, const char *id, const NftPortmapForward *fwd, size_t n_fwd,
		     const NftPortmapMasq *masq, size_t n_masq, const Existing *ex) {
	char key[2 * IP_ADDR_STRLEN + 32], val[IP_ADDR_STRLEN + 16];
	const char *obj;
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
		nft_batch_add(b, "add element %s %s { %s : %s }", T, obj, key, old ?: val);
		nft_batch_add(b, "delete element %s %s { %s }", T, obj, key);
		nft_batch_add(b, "add element %s %s { %s comment \"%s\" : %s }", T, obj, key, id, val);
	}
	for (size_t i = 0; i < n_masq; i++) {
		r = masq_text(&masq[i], &obj, key, sizeof(key));
		if (r < 0)
			return r;
		nft_batch_add(b, "add element %s %s { %s }", T, obj, key);
		nft_batch_add(b, "delete element %s %s { %s }", T, obj, key);
		nft_batch_add(b, "add element %s %s { %s comment \"%s\" }", T, obj, key, id);
	}
	return 0;
}

/* The ADD fast path: `create element` for every forward and masq entry in one transaction.
 * 0, -EAGAIN (a map/set missing or a key taken: run the full batch), or -ENOMEM/-EINVAL. */
static int build_creates(const char *id, const NftPortmapForward *fwd, size_t n_fwd, const NftPortmapMasq *masq,
			 size_t n_masq, NftCtx *c) {
	char key[2 * IP_ADDR_STRLEN + 32], val[IP_ADDR_STRLEN + 16];
	const char *obj;
	NftBatch b;
	int r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_fwd && r >= 0; i++) {
		r = forward_text(&fwd[i], &obj, key, sizeof(key), val, sizeof(val));
		if (r >= 0)
			nft_batch_add(&b, "create element %s %s { %s comment \"%s\" : %s }", T, obj, key, id, val);
	}
	for (size_t i = 0; i < n_masq && r >= 0; i++) {
		r = masq_text(&masq[i], &obj, key, sizeof(key));
		if (r >= 0)
			nft_batch_add(&b, "create element %s %s { %s comment \"%s\" }", T, obj, key, id);
	}
	if (r >= 0) {
		r = nft_batch_apply(c, &b, NULL);
		if (r < 0 && r != -ENOMEM)
			r = -EAGAIN;
	}
	nft_batch_done(&b);
	return r;
}

int nft_portmap_add(NftCtx *c, const char *net, const char *cid, const char *ifname,
		    const NftPortmapForward *fwd, size_t n_fwd, const NftPortmapMasq *masq, size_t n_masq,
		    char **ret_error) {
	char id[NFT_COMMENT_MAX + 1];
	int r;

	if (!c || (n_fwd > 0 && !fwd) || (n_masq > 0 && !masq))
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
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
					r = obj_foreach(c, &pm_objs[i], collect_existing, &ex);
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

typedef struct Match {
	const char *id;         /* DEL: exactly this comment */
	const char *net;        /* GC: this network and ... */
	bool (*is_valid)(const char *cid, const char *ifname, void *userdata);
	void *userdata;
	NftBatch *batch;
	unsigned n;
} Match;

/* "<net>/<cid>/<ifname>" of network m->net, whose attachment is not valid? The id is rebuilt
 * from the parsed cid/ifname so the hashed form of a long <net> matches too. */
static bool gc_matches(const Match *m, const char *comment) {
	char cid[NFT_COMMENT_MAX + 1], id[NFT_COMMENT_MAX + 1];
	const char *s1 = strchr(comment, '/'), *s2 = strrchr(comment, '/');

	if (!s1 || s2 == s1 || s2 - s1 - 1 <= 0 || (size_t) (s2 - s1 - 1) >= sizeof(cid) || !s2[1])
		return false;
	memcpy(cid, s1 + 1, (size_t) (s2 - s1 - 1));
	cid[s2 - s1 - 1] = 0;
	if (nft_bridge_attachment_id(m->net, cid, s2 + 1, id) < 0 || !streq(id, comment))
		return false;
	return !m->is_valid(cid, s2 + 1, m->userdata);
}

static int collect_remove(const PmObj *o, const char *key, const char *val, const char *comment, void *userdata) {
	Match *m = userdata;

	if (m->id ? !streq(comment, m->id) : !gc_matches(m, comment))
		return 0;
	batch_remove(m->batch, o, key, val);
	m->n++;
	return 0;
}

static int remove_matching(NftCtx *c, Match *m) {
	NftBatch b;
	int r;

	r = nft_batch_begin(&b);
	if (r < 0)
		return r;
	/* The prelude keeps the maps existing even if someone deleted them meanwhile, so the
	 * add+delete pairs cannot fail on a missing map. */
	prelude(&b);
	m->batch = &b;
	m->n = 0;
	for (size_t i = 0; i < ELEMENTSOF(pm_objs); i++) {
		r = obj_foreach(c, &pm_objs[i], collect_remove, m);
		if (r < 0)
			goto out;
	}
	r = m->n > 0 ? nft_batch_apply(c, &b, NULL) : 0;
	if (r >= 0)
		r = (int) m->n;
out:
	nft_batch_done(&b);
	return r;
}

int nft_portmap_del(NftCtx *c, const char *net, const char *cid, const char *ifname) {
	char id[NFT_COMMENT_MAX + 1];
	Match m = { .id = id };
	int r;

	if (!c)
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	r = remove_matching(c, &m);
	return r < 0 ? r : 0;
}

int nft_portmap_gc(NftCtx *c, const char *net,
		   bool (*is_valid)(const char *cid, const char *ifname, void *userdata), void *userdata) {
	char probe[NFT_COMMENT_MAX + 1];
	Match m = { .net = net, .is_valid = is_valid, .userdata = userdata };

	if (!c || !is_valid || nft_bridge_attachment_id(net, "x", "x", probe) < 0)
		return -EINVAL;
	return remove_matching(c, &m);
}

/* ---- check ---- */

typedef struct Seen {
	char **keys;    /* "obj\tkey" */
	char **vals;    /* value or "" for sets */
	char **comments;
} Seen;

static int collect_all(const PmObj *o, const char *key, const char *val, const char *comment, void *userdata) {
	Seen *s = userdata;
	char *k = strdup_printf("%s\t%s", o->name, key);

	if (!k)
		return -ENOMEM;
	if (strv_consume(&s->keys, k) < 0 || strv_extend(&s->vals, val ?: "") < 0 ||
	    strv_extend(&s->comments, comment) < 0)
		return -ENOMEM;
	return 0;
}

static int seen_verify(const Seen *s, const char *obj, const char *key, const char *val, const char *id) {
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

int nft_portmap_check(NftCtx *c, const char *net, const char *cid, const char *ifname,
		      const NftPortmapForward *fwd, size_t n_fwd, const NftPortmapMasq *masq, size_t n_masq,
		      size_t *ret_missing) {
	char id[NFT_COMMENT_MAX + 1], key[2 * IP_ADDR_STRLEN + 32], val[IP_ADDR_STRLEN + 16];
	Seen s = {};
	const char *obj;
	bool want[ELEMENTSOF(pm_objs)] = {};
	int r;

	if (!c || (n_fwd > 0 && !fwd) || (n_masq > 0 && !masq))
		return -EINVAL;
	r = nft_bridge_attachment_id(net, cid, ifname, id);
	if (r < 0)
		return r;
	/* List only the maps/sets this attachment should have elements in. */
	for (size_t i = 0; i < n_fwd + n_masq; i++) {
		r = i < n_fwd ? forward_text(&fwd[i], &obj, key, sizeof(key), val, sizeof(val))
			      : masq_text(&masq[i - n_fwd], &obj, key, sizeof(key));
		if (r < 0)
			return r;
		want[obj_by_name(obj) - pm_objs] = true;
	}
	for (size_t i = 0; i < ELEMENTSOF(pm_objs) && r >= 0; i++)
		if (want[i])
			r = obj_foreach(c, &pm_objs[i], collect_all, &s);
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
