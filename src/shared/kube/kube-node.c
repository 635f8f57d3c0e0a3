/* SPDX-License-Identifier: Apache-2.0 */
/* Node decoder: spec.podCIDRs, InternalIP addresses and the weft.dev/ annotations. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

#define WEFT_ANNOTATION_PREFIX "weft.dev/"

void ko_node_free(KubeNode *n) {
	free(n->pod_cidrs);
	free(n->internal_ips);
	for (size_t i = 0; i < 2u * n->n_annotations; i++)
		free(n->annotations[i]);
	free(n->annotations);
}

static int strp_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

int ko_node_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(ko_meta_done) Meta m = {};
	KubeNode *n = NULL;
	const json_t *spec = ko_jget(j, "spec"), *cidrs, *addrs, *ann, *x;
	const char *key;
	json_t *v;
	size_t i;
	int r;

	r = ko_meta_parse(j, false, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;

	if (ko_jarr(spec, "podCIDRs", &cidrs) < 0) {
		r = decode_error(err, "spec.podCIDRs: not an array");
		goto fail;
	}
	if (ko_jlen(cidrs) == 0 && ko_jget(spec, "podCIDR")) {
		/* Servers before 1.16 have only the singular field. */
		n->pod_cidrs = calloc(1, sizeof(IpPrefix));
		if (!n->pod_cidrs)
			goto oom;
		x = ko_jget(spec, "podCIDR");
		if (!json_is_string(x) || ip_prefix_parse_network(json_string_value(x), &n->pod_cidrs[0]) < 0) {
			r = decode_error(err, "spec.podCIDR: not a network prefix");
			goto fail;
		}
		n->n_pod_cidrs = 1;
	} else if (ko_jlen(cidrs) > 0) {
		if (ko_jlen(cidrs) > 2) {
			r = decode_error(err, "spec.podCIDRs: more than one per family");
			goto fail;
		}
		n->pod_cidrs = calloc(ko_jlen(cidrs), sizeof(IpPrefix));
		if (!n->pod_cidrs)
			goto oom;
		json_array_foreach(cidrs, i, x) {
			if (!json_is_string(x) || ip_prefix_parse_network(json_string_value(x), &n->pod_cidrs[i]) < 0) {
				r = decode_error(err, "spec.podCIDRs[%zu]: \"%.64s\" is not a network prefix", i,
						 json_is_string(x) ? json_string_value(x) : "(not a string)");
				goto fail;
			}
			if (i > 0 && n->pod_cidrs[0].addr.family == n->pod_cidrs[i].addr.family) {
				r = decode_error(err, "spec.podCIDRs: more than one per family");
				goto fail;
			}
			n->n_pod_cidrs++;
		}
	}

	if (ko_jarr(ko_jget(j, "status"), "addresses", &addrs) < 0) {
		r = decode_error(err, "status.addresses: not an array");
		goto fail;
	}
	json_array_foreach(addrs, i, x) {
		const char *type, *addr;
		IpAddr a;
		IpAddr *nv;

		if (ko_jstr(x, "type", &type) < 0 || ko_jstr(x, "address", &addr) < 0) {
			r = decode_error(err, "status.addresses[%zu]: not strings", i);
			goto fail;
		}
		if (!type || !streq(type, "InternalIP"))
			continue;
		if (!addr || ip_addr_parse(addr, &a) < 0) {
			r = decode_error(err, "status.addresses[%zu].address: \"%.64s\" is not an IP address", i,
					 addr ?: "");
			goto fail;
		}
		if (ko_ip_in(n->internal_ips, n->n_internal_ips, &a) || n->n_internal_ips == UINT8_MAX)
			continue;
		nv = reallocarray(n->internal_ips, n->n_internal_ips + 1u, sizeof(IpAddr));
		if (!nv)
			goto oom;
		n->internal_ips = nv;
		nv[n->n_internal_ips++] = a;
	}

	ann = ko_jget(m.j, "annotations");
	if (ann && !json_is_object(ann)) {
		r = decode_error(err, "metadata.annotations: not an object");
		goto fail;
	}
	json_object_foreach((json_t *) ann, key, v) {
		char **nv;

		if (!startswith(key, WEFT_ANNOTATION_PREFIX))
			continue;
		if (!json_is_string(v)) {
			r = decode_error(err, "metadata.annotations[%.64s]: not a string", key);
			goto fail;
		}
		nv = reallocarray(n->annotations, 2u * n->n_annotations + 2, sizeof(char *));
		if (!nv)
			goto oom;
		n->annotations = nv;
		/* Sorted below as (key, value) pairs: a pair is one 2-pointer element. */
		nv[2 * n->n_annotations] = strdup(key);
		nv[2 * n->n_annotations + 1] = strdup(json_string_value(v));
		n->n_annotations++;
		if (!nv[2 * n->n_annotations - 2] || !nv[2 * n->n_annotations - 1])
			goto oom;
	}
	if (n->n_annotations > 1)
		qsort(n->annotations, n->n_annotations, 2 * sizeof(char *), strp_cmp);

	if (ko_meta_move(&m, KUBE_KIND_NODE, &n->meta) < 0)
		goto oom;
	*ret = &n->meta;
	return 0;
oom:
	r = -ENOMEM;
fail:
	ko_node_free(n);
	free(n);
	return r;
}

bool ko_node_equal(const KubeNode *a, const KubeNode *b) {
	if (a->n_pod_cidrs != b->n_pod_cidrs || a->n_internal_ips != b->n_internal_ips ||
	    a->n_annotations != b->n_annotations)
		return false;
	for (size_t i = 0; i < a->n_pod_cidrs; i++)
		if (!ip_prefix_equal(&a->pod_cidrs[i], &b->pod_cidrs[i]))
			return false;
	for (size_t i = 0; i < 2u * a->n_annotations; i++)
		if (!streq(a->annotations[i], b->annotations[i]))
			return false;
	return ko_ip_arrays_equal(a->internal_ips, b->internal_ips, a->n_internal_ips);
}
