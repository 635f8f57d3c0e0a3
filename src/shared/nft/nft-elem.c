/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Set and map elements owned by one attachment, see nft-elem.h.
 */

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/cni/cni-attachment.h"
#include "shared/nft/nft-elem.h"

/* ---- attachment ids ---- */

bool nft_attachment_component_valid(const char *s) {
	if (isempty(s))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == '"' || *s == '\\' || (unsigned char) *s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

int nft_attachment_id(const char *net, const char *cid, const char *ifname, char buf[static NFT_COMMENT_MAX + 1]) {
	char h[CNI_ATTACHMENT_HASH_LEN + 1], hc[CNI_ATTACHMENT_HASH_LEN + 1];
	int n;

	if (!nft_attachment_component_valid(net) || !nft_attachment_component_valid(cid) ||
	    !nft_attachment_component_valid(ifname))
		return -EINVAL;
	n = snprintf(buf, NFT_COMMENT_MAX + 1, "%s/%s/%s", net, cid, ifname);
	if (n >= 0 && n <= NFT_COMMENT_MAX)
		return 0;
	cni_attachment_hash(net, h);
	n = snprintf(buf, NFT_COMMENT_MAX + 1, "%s/%s/%s", h, cid, ifname);
	if (n >= 0 && n <= NFT_COMMENT_MAX)
		return 0;
	/* Container IDs have no length limit (the reference accepts any): hash it too. Ids that fit
	 * before keep their form, so elements written by older versions are still found. */
	cni_attachment_hash(cid, hc);
	n = snprintf(buf, NFT_COMMENT_MAX + 1, "%s/%s/%s", h, hc, ifname);
	if (n < 0 || n > NFT_COMMENT_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- rendering nft JSON back into nft syntax ---- */

/* Renders one key or map value. `types` is the set's "type" (or the map's "map"): a string or,
 * for concatenations, an array; components of type ifname are quoted. Anything but what our own
 * sets hold is -EBADMSG, so no listed text can change the meaning of a batch. */
static int render(FILE *f, json_t *v, json_t *types, size_t idx) {
	json_t *x;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		json_t *t = json_is_array(types) ? json_array_get(types, idx) : types;
		bool quote = json_is_string(t) && streq(json_string_value(t), "ifname");

		/* addresses, protocol and interface names */
		if (isempty(s))
			return -EBADMSG;
		for (const char *p = s; *p; p++)
			if (!isalnum((unsigned char) *p) && !strchr(".:-_", *p))
				return -EBADMSG;
		fprintf(f, quote ? "\"%s\"" : "%s", s);
		return 0;
	}
	if (json_is_integer(v)) {
		json_t *t = json_is_array(types) ? json_array_get(types, idx) : types;
		long long n = json_integer_value(v);

		/* nft names a protocol with getprotobynumber(), i.e. from the host's /etc/protocols: a
		 * plugin run from a root without that file (a static plugin on a minimal node, or the
		 * chroot of test-static-chroot) lists 6 where others list "tcp". Our keys use the names. */
		if (json_is_string(t) && streq(json_string_value(t), "inet_proto") && (n == 6 || n == 17 || n == 132)) {
			fputs(n == 6 ? "tcp" : n == 17 ? "udp" : "sctp", f);
			return 0;
		}
		fprintf(f, "%lld", n);
		return 0;
	}
	if ((x = json_object_get(v, "prefix"))) {
		json_t *len = json_object_get(x, "len");
		int r;

		if (!json_is_string(json_object_get(x, "addr")) || !json_is_integer(len))
			return -EBADMSG;
		r = render(f, json_object_get(x, "addr"), NULL, 0);
		if (r < 0)
			return r;
		fprintf(f, "/%lld", (long long) json_integer_value(len));
		return 0;
	}
	if ((x = json_object_get(v, "range"))) {
		int r;

		if (!json_is_array(x) || json_array_size(x) != 2)
			return -EBADMSG;
		r = render(f, json_array_get(x, 0), types, idx);
		if (r < 0)
			return r;
		fputc('-', f);
		return render(f, json_array_get(x, 1), types, idx);
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
			r = render(f, e, types, i);
			if (r < 0)
				return r;
		}
		return 0;
	}
	return -EBADMSG;
}

static int render_string(json_t *v, json_t *types, char **ret) {
	char *s = NULL;
	size_t l = 0;
	FILE *f = open_memstream(&s, &l);
	int r;

	if (!f)
		return -ENOMEM;
	r = render(f, v, types, 0);
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

int nft_elem_foreach(NftCtx *c, const NftElemObj *o, NftElemFn fn, void *userdata) {
	const char *kind = o->is_map ? "map" : "set";
	_cleanup_free_ char *cmd = NULL;
	json_t *j = NULL, *item;
	size_t i;
	int r;

	cmd = strdup_printf("list %s %s %s", kind, o->family_table, o->name);
	if (!cmd)
		return -ENOMEM;
	r = nft_list_json(c, cmd, &j);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	json_array_foreach(json_object_get(j, "nftables"), i, item) {
		json_t *s = json_object_get(item, kind), *e;
		size_t k;

		if (!s)
			continue;
		/* "elem" is absent when the set is empty */
		json_array_foreach(json_object_get(s, "elem"), k, e) {
			_cleanup_free_ char *key = NULL, *data = NULL;
			json_t *inner = json_object_get(o->is_map ? json_array_get(e, 0) : e, "elem");
			json_t *raw = json_object_get(inner, "val");
			const char *comment = json_string_value(json_object_get(inner, "comment"));

			if (!comment || !raw)
				continue;
			r = render_string(raw, json_object_get(s, "type"), &key);
			if (r >= 0 && o->is_map)
				r = render_string(json_array_get(e, 1), json_object_get(s, "map"), &data);
			if (r == -EBADMSG)
				continue; /* cannot render: not an element we wrote */
			if (r >= 0)
				r = fn(&(NftElem) { .obj = o,
						    .key = key,
						    .data = data,
						    .raw_key = raw,
						    .comment = comment },
				       userdata);
			if (r < 0)
				goto out;
		}
	}
	r = 0;
out:
	json_decref(j);
	return r;
}

/* ---- batch lines ---- */

void nft_elem_add_remove(NftBatch *b, const NftElemObj *o, const char *key, const char *data) {
	if (o->is_map)
		nft_batch_add(b, "add element %s %s { %s : %s }", o->family_table, o->name, key, data);
	else
		nft_batch_add(b, "add element %s %s { %s }", o->family_table, o->name, key);
	nft_batch_add(b, "delete element %s %s { %s }", o->family_table, o->name, key);
}

void nft_elem_add_replace(NftBatch *b, const NftElemObj *o, const char *key, const char *old_data, const char *data,
			  const char *id) {
	nft_elem_add_remove(b, o, key, old_data ?: data);
	if (o->is_map)
		nft_batch_add(b, "add element %s %s { %s comment \"%s\" : %s }", o->family_table, o->name, key, id,
			      data);
	else
		nft_batch_add(b, "add element %s %s { %s comment \"%s\" }", o->family_table, o->name, key, id);
}

void nft_elem_add_create(NftBatch *b, const NftElemObj *o, const char *key, const char *data, const char *id) {
	if (o->is_map)
		nft_batch_add(b, "create element %s %s { %s comment \"%s\" : %s }", o->family_table, o->name, key, id,
			      data);
	else
		nft_batch_add(b, "create element %s %s { %s comment \"%s\" }", o->family_table, o->name, key, id);
}

int nft_elem_apply_creates(NftCtx *c, NftBatch *b) {
	int r = nft_batch_apply(c, b, NULL);

	nft_batch_done(b);
	return r == -ENOMEM ? r : r < 0 ? -EAGAIN : 0;
}

/* ---- DEL and GC ---- */

/* Whose elements to remove: one attachment (DEL: id = its exact comment), or (GC) every
 * attachment of network `net` that is_valid() rejects. */
typedef struct NftElemMatch {
	const char *id;
	const char *net;
	NftAttachmentValidFn is_valid;
	void *userdata;
} NftElemMatch;

static bool elem_match(const NftElemMatch *m, const char *comment) {
	char cid[NFT_COMMENT_MAX + 1], id[NFT_COMMENT_MAX + 1];
	const char *s1, *s2;

	if (m->id)
		return streq(comment, m->id);
	/* "<net>/<cid>/<ifname>": components never contain '/' */
	s1 = strchr(comment, '/');
	s2 = strrchr(comment, '/');
	if (!s1 || s2 == s1 || s2 - s1 - 1 <= 0 || (size_t) (s2 - s1 - 1) >= sizeof(cid) || !s2[1])
		return false;
	memcpy(cid, s1 + 1, (size_t) (s2 - s1 - 1));
	cid[s2 - s1 - 1] = 0;
	/* Same network, plain or hashed: rebuilding the id from the parsed parts gives it back. A
	 * hashed container ID comes only with the hashed network; is_valid() matches it by hash. */
	if (cid[0] == '~') {
		cni_attachment_hash(m->net, id);
		if (!startswith(comment, id) || comment[strlen(id)] != '/' || s1 != comment + strlen(id))
			return false;
	} else if (nft_attachment_id(m->net, cid, s2 + 1, id) < 0 || !streq(id, comment))
		return false;
	return !m->is_valid(cid, s2 + 1, m->userdata);
}

typedef struct Removal {
	const NftElemMatch *match;
	NftBatch *body;
	unsigned n;
} Removal;

static int collect_removal(const NftElem *e, void *userdata) {
	Removal *rm = userdata;

	if (!elem_match(rm->match, e->comment))
		return 0;
	nft_elem_add_remove(rm->body, e->obj, e->key, e->data);
	rm->n++;
	return 0;
}

static int remove_matching(NftCtx *c, const NftElemObj *objs, size_t n_objs, const NftElemMatch *m) {
	NftBatch body, full = {};
	Removal rm = { .match = m, .body = &body };
	uint64_t touched = 0;
	int r;

	if (n_objs > 64)
		return -EINVAL;
	r = nft_batch_begin(&body);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_objs; i++) {
		unsigned before = rm.n;

		r = nft_elem_foreach(c, &objs[i], collect_removal, &rm);
		if (r < 0)
			goto out;
		if (rm.n > before)
			touched |= UINT64_C(1) << i;
	}
	r = 0;
	if (rm.n == 0)
		goto out;
	r = nft_batch_finish(&body);
	if (r >= 0)
		r = nft_batch_begin(&full);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n_objs; i++) {
		bool seen = false;

		if (!(touched & (UINT64_C(1) << i)) || !objs[i].prelude)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = (touched & (UINT64_C(1) << k)) && objs[k].prelude == objs[i].prelude;
		if (!seen)
			objs[i].prelude(&full);
	}
	fputs(body.buf, full.f);
	r = nft_batch_apply(c, &full, NULL);
	if (r >= 0)
		r = (int) rm.n;
out:
	nft_batch_done(&full);
	nft_batch_done(&body);
	return r;
}

int nft_elem_remove_attachment(NftCtx *c, const NftElemObj *objs, size_t n_objs, const char *net, const char *cid,
			       const char *ifname) {
	char id[NFT_COMMENT_MAX + 1];
	int r;

	if (!c)
		return -EINVAL;
	r = nft_attachment_id(net, cid, ifname, id);
	if (r == -EINVAL || r == -ENAMETOOLONG)
		return 0; /* no element can carry this id (ADD refuses it): nothing to delete */
	if (r < 0)
		return r;
	r = remove_matching(c, objs, n_objs, &(NftElemMatch) { .id = id });
	return r < 0 ? r : 0;
}

int nft_elem_gc(NftCtx *c, const NftElemObj *objs, size_t n_objs, const char *net, NftAttachmentValidFn is_valid,
		void *userdata) {
	if (!c || !is_valid || !nft_attachment_component_valid(net))
		return -EINVAL;
	return remove_matching(c, objs, n_objs,
			       &(NftElemMatch) { .net = net, .is_valid = is_valid, .userdata = userdata });
}
