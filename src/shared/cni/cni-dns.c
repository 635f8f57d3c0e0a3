/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-types.h"

void cni_dns_done(CniDns *d) {
	if (!d)
		return;
	d->nameservers = strv_free(d->nameservers);
	d->domain = mfree(d->domain);
	d->search = strv_free(d->search);
	d->options = strv_free(d->options);
}

static int strv_merge_unique(char ***dst, char *const *src) {
	int r;

	for (size_t i = 0; src && src[i]; i++) {
		if (strv_contains(*dst, src[i]))
			continue;
		r = strv_extend(dst, src[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int cni_dns_merge(CniDns *dst, const CniDns *src) {
	int r;

	r = strv_merge_unique(&dst->nameservers, src->nameservers);
	if (r < 0)
		return r;
	r = strv_merge_unique(&dst->search, src->search);
	if (r < 0)
		return r;
	r = strv_merge_unique(&dst->options, src->options);
	if (r < 0)
		return r;
	/* A result has one domain: keep the one already there. */
	if (!dst->domain && src->domain) {
		dst->domain = strdup(src->domain);
		if (!dst->domain)
			return -ENOMEM;
	}
	return 0;
}

int cni_dns_from_json(json_t *j, CniDns *ret) {
	CniDns d = {};
	json_t *v;
	int r;

	if (!json_is_object(j))
		return -EINVAL;

	/* null is what Go prints for an absent slice in some hand-written configs: treat as absent. */
	v = cni_json_get(j, "nameservers");
	if (v && !json_is_null(v) && (r = cni_json_strv(v, &d.nameservers)) < 0)
		goto fail;
	v = cni_json_get(j, "search");
	if (v && !json_is_null(v) && (r = cni_json_strv(v, &d.search)) < 0)
		goto fail;
	v = cni_json_get(j, "options");
	if (v && !json_is_null(v) && (r = cni_json_strv(v, &d.options)) < 0)
		goto fail;
	v = cni_json_get(j, "domain");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v)) {
			r = -EINVAL;
			goto fail;
		}
		if (!isempty(json_string_value(v))) {
			d.domain = strdup(json_string_value(v));
			if (!d.domain) {
				r = -ENOMEM;
				goto fail;
			}
		}
	}
	cni_dns_done(ret);
	*ret = d;
	return 0;
fail:
	cni_dns_done(&d);
	return r;
}

json_t *cni_dns_to_json(const CniDns *d) {
	json_t *j = json_object();

	if (!j)
		return NULL;
	/* Field order and omission as Go's types.DNS prints it (empty lists left out). */
	if (strv_length(d->nameservers) > 0 &&
	    json_object_set_new(j, "nameservers", cni_json_from_strv(d->nameservers)) < 0)
		goto fail;
	if (!isempty(d->domain) && json_object_set_new(j, "domain", json_string(d->domain)) < 0)
		goto fail;
	if (strv_length(d->search) > 0 && json_object_set_new(j, "search", cni_json_from_strv(d->search)) < 0)
		goto fail;
	if (strv_length(d->options) > 0 && json_object_set_new(j, "options", cni_json_from_strv(d->options)) < 0)
		goto fail;
	return j;
fail:
	json_decref(j);
	return NULL;
}
