/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON -> compact objects. Each decoder reads only the fields weft uses, checks each as the API
 * server would (names, label syntax, IPs, port ranges, enum values) and builds the object only
 * once everything has passed, so a refused object leaves nothing behind but its reason.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects.h"

#define OBJECT_FLAG_BLOCK 0x01 /* one allocation: arrays and name live inside the object */

static const KubeKindInfo kind_info[_KUBE_KIND_MAX] = {
	[KUBE_KIND_NODE] = { "nodes", "Node", "/api/v1/nodes", false, "v1" },
	[KUBE_KIND_NAMESPACE] = { "namespaces", "Namespace", "/api/v1/namespaces", false, "v1" },
	[KUBE_KIND_POD] = { "pods", "Pod", "/api/v1/pods", true, "v1" },
	[KUBE_KIND_NETWORK_POLICY] = { "networkpolicies", "NetworkPolicy", "/apis/networking.k8s.io/v1/networkpolicies",
				       true, "networking.k8s.io/v1" },
	[KUBE_KIND_SERVICE] = { "services", "Service", "/api/v1/services", true, "v1" },
	[KUBE_KIND_ENDPOINT_SLICE] = { "endpointslices", "EndpointSlice", "/apis/discovery.k8s.io/v1/endpointslices",
				       true, "discovery.k8s.io/v1" },
};

const KubeKindInfo *kube_kind_info(KubeKind k) {
	return (unsigned) k < _KUBE_KIND_MAX ? &kind_info[k] : NULL;
}

int kube_kind_from_string(const char *s, KubeKind *ret) {
	for (unsigned k = 0; s && k < _KUBE_KIND_MAX; k++)
		if (strcasecmp(s, kind_info[k].resource) == 0 || strcasecmp(s, kind_info[k].kind) == 0) {
			*ret = (KubeKind) k;
			return 0;
		}
	return -EINVAL;
}

const char *kube_protocol_to_string(KubeProtocol p) {
	switch (p) {
	case KUBE_PROTO_TCP: return "TCP";
	case KUBE_PROTO_UDP: return "UDP";
	case KUBE_PROTO_SCTP: return "SCTP";
	}
	return "?";
}

/* ---- JSON helpers ---- */

/* Field paths for error messages; a cut path is still a useful message. */
static void pathf(char *buf, size_t n, const char *fmt, ...) _printf_(3, 4);
static void pathf(char *buf, size_t n, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	(void) vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

static const json_t *jget(const json_t *j, const char *key) {
	const json_t *v = json_is_object(j) ? json_object_get(j, key) : NULL;

	return v && !json_is_null(v) ? v : NULL;
}

/* Optional string: absent/null -> *ret NULL. Wrong type -> -EINVAL. */
static int jstr(const json_t *j, const char *key, const char **ret) {
	const json_t *v = jget(j, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	*ret = json_string_value(v);
	return 0;
}

/* Optional array: absent/null -> empty. */
static int jarr(const json_t *j, const char *key, const json_t **ret) {
	const json_t *v = jget(j, key);

	*ret = v;
	return !v || json_is_array(v) ? 0 : -EINVAL;
}

static size_t jlen(const json_t *a) {
	return a ? json_array_size(a) : 0;
}

static int jbool(const json_t *j, const char *key, bool dflt, bool *ret) {
	const json_t *v = jget(j, key);

	if (v && !json_is_boolean(v))
		return -EINVAL;
	*ret = v ? json_is_true(v) : dflt;
	return 0;
}

/* Integer in [min, max]; absent -> dflt. */
static int jint(const json_t *j, const char *key, long long min, long long max, long long dflt, long long *ret) {
	const json_t *v = jget(j, key);

	if (!v) {
		*ret = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return -EINVAL;
	*ret = json_integer_value(v);
	return 0;
}

static int parse_protocol(const json_t *j, const char *path, uint8_t *ret, DecodeError *err) {
	const char *s;

	if (jstr(j, "protocol", &s) < 0)
		return decode_error(err, "%s.protocol: not a string", path);
	if (!s || streq(s, "TCP"))
		*ret = KUBE_PROTO_TCP;
	else if (streq(s, "UDP"))
		*ret = KUBE_PROTO_UDP;
	else if (streq(s, "SCTP"))
		*ret = KUBE_PROTO_SCTP;
	else
		return decode_error(err, "%s.protocol: \"%.16s\" is not TCP, UDP or SCTP", path, s);
	return 0;
}

/* IANA_SVC_NAME: at most 15 of [a-z0-9-], at least one letter, no leading/trailing/double '-'. */
static bool port_name_valid(const char *s) {
	bool letter = false;
	size_t n = strlen(s);

	if (n == 0 || n > 15 || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--"))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			return false;
	}
	return letter;
}

/* IntOrString port: a number 1..65535 or an IANA service name. Absent: *ret zero. */
static int parse_port_ref(const json_t *v, const char *path, StringPool *pool, KubePortRef *ret, DecodeError *err) {
	*ret = (KubePortRef) {};
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 1 || json_integer_value(v) > 65535)
			return decode_error(err, "%s: %lld is not a port", path, (long long) json_integer_value(v));
		ret->number = (uint16_t) json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		if (!port_name_valid(json_string_value(v)))
			return decode_error(err, "%s: \"%.32s\" is not a port name", path, json_string_value(v));
		ret->name = string_pool_intern(pool, json_string_value(v));
		return ret->name ? 0 : -ENOMEM;
	}
	return decode_error(err, "%s: neither a number nor a name", path);
}

static int parse_ip(const json_t *v, const char *path, IpAddr *ret, DecodeError *err) {
	if (!json_is_string(v) || ip_addr_parse(json_string_value(v), ret) < 0)
		return decode_error(err, "%s: \"%.64s\" is not an IP address", path,
				    json_is_string(v) ? json_string_value(v) : "(not a string)");
	return 0;
}

static bool ip_in(const IpAddr *v, size_t n, const IpAddr *a) {
	for (size_t i = 0; i < n; i++)
		if (ip_addr_equal(&v[i], a))
			return true;
	return false;
}

/* A string array of IPs into a malloc'ed vector (NULL if empty); duplicates refused. */
static int parse_ip_array(const json_t *a, const char *path, const char *member, IpAddr **ret, size_t *ret_n,
			  DecodeError *err) {
	_cleanup_free_ IpAddr *v = NULL;
	const json_t *x;
	size_t i, n = jlen(a);
	char p[96];
	int r;

	if (n > 0) {
		v = calloc(n, sizeof(IpAddr));
		if (!v)
			return -ENOMEM;
	}
	json_array_foreach(a, i, x) {
		if (member)
			x = jget(x, member);
		pathf(p, sizeof(p), "%s[%zu]%s%s", path, i, member ? "." : "", member ?: "");
		r = parse_ip(x, p, &v[i], err);
		if (r < 0)
			return r;
		if (ip_in(v, i, &v[i]))
			return decode_error(err, "%s: duplicate address", p);
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

static bool ip_arrays_equal(const IpAddr *a, const IpAddr *b, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (!ip_addr_equal(&a[i], &b[i]))
			return false;
	return true;
}

/* ---- metadata ---- */

typedef struct Meta {
	const char *namespace; /* interned reference */
	const char *name;      /* borrowed from the JSON */
	const char **labels;   /* pair references while parsing, then the interned set */
	size_t n_labels;
	bool interned;   /* labels is an interned set (one reference) */
	const json_t *j; /* metadata */
	StringPool *pool;
	/* Most objects have a handful of labels: parse them here, not in a short-lived malloc()
	 * between the long-lived objects of a 10k-item list (that is RSS lost to fragmentation). */
	const char *labels_buf[16];
} Meta;

/* Cleanup for a Meta that was not moved into an object. */
static void meta_done(Meta *m) {
	if (m->pool) {
		string_pool_unref(m->pool, m->namespace);
		if (m->interned)
			string_pool_unref_labels(m->pool, m->labels);
		else
			for (size_t i = 0; i < m->n_labels; i++)
				string_pool_unref(m->pool, m->labels[i]);
	}
	if (!m->interned && m->labels != m->labels_buf)
		free(m->labels);
	m->pool = NULL;
	m->namespace = NULL;
	m->labels = NULL;
	m->n_labels = 0;
	m->interned = false;
}

typedef bool (*NameValidFn)(const char *s);

static int meta_parse(const json_t *j, bool namespaced, NameValidFn name_valid, StringPool *pool, Meta *ret,
		      DecodeError *err) {
	const json_t *md = jget(j, "metadata"), *labels;
	const char *ns, *key;
	json_t *v;
	size_t n;

	ret->j = md;
	ret->pool = pool;
	ret->namespace = NULL;
	ret->name = NULL;
	ret->labels = NULL;
	ret->n_labels = 0;
	ret->interned = false;
	if (!json_is_object(md))
		return decode_error(err, "metadata: missing or not an object");
	if (jstr(md, "name", &ret->name) < 0 || !ret->name || !name_valid(ret->name))
		return decode_error(err, "metadata.name: missing or not a valid name");
	if (jstr(md, "namespace", &ns) < 0)
		return decode_error(err, "metadata.namespace: not a string");
	if (namespaced) {
		if (!ns || !dns_label_valid(ns))
			return decode_error(err, "metadata.namespace: missing or not a valid namespace name");
		ret->namespace = string_pool_intern(pool, ns);
		if (!ret->namespace)
			return -ENOMEM;
	}
	labels = jget(md, "labels");
	if (labels && !json_is_object(labels))
		return decode_error(err, "metadata.labels: not an object");
	n = labels ? json_object_size(labels) : 0;
	if (n > UINT16_MAX)
		return decode_error(err, "metadata.labels: too many labels");
	if (n == 0)
		return 0;
	ret->labels = n <= ELEMENTSOF(ret->labels_buf) ? ret->labels_buf : calloc(n, sizeof(char *));
	if (!ret->labels)
		return -ENOMEM;
	json_object_foreach((json_t *) labels, key, v) {
		if (!label_key_valid(key))
			return decode_error(err, "metadata.labels: \"%.64s\" is not a valid label key", key);
		if (!json_is_string(v) || !label_value_valid(json_string_value(v)))
			return decode_error(err, "metadata.labels[%.64s]: not a valid label value", key);
		ret->labels[ret->n_labels] = string_pool_intern_pair(pool, key, json_string_value(v));
		if (!ret->labels[ret->n_labels])
			return -ENOMEM;
		ret->n_labels++;
	}
	label_pairs_sort(ret->labels, ret->n_labels);
	/* The pair references move into the shared set (also on failure). */
	{
		const char **set = string_pool_intern_labels(pool, ret->labels, ret->n_labels);

		if (ret->labels != ret->labels_buf)
			free(ret->labels);
		ret->labels = set;
		if (!set) {
			ret->n_labels = 0;
			return -ENOMEM;
		}
	}
	ret->interned = true;
	return 0;
}

/* Moves the parsed metadata into a separately allocated object (every kind but Pod). */
static int meta_move(Meta *m, KubeKind kind, KubeObject *o) {
	o->kind = (uint8_t) kind;
	o->name = strdup(m->name);
	if (!o->name)
		return -ENOMEM;
	o->namespace = TAKE_PTR(m->namespace);
	o->labels = TAKE_PTR(m->labels);
	o->n_labels = (uint16_t) m->n_labels;
	m->n_labels = 0;
	m->interned = false;
	return 0;
}

static bool meta_equal(const KubeObject *a, const KubeObject *b) {
	/* Label sets are interned whole: the same labels are the same array. */
	return a->kind == b->kind && a->namespace == b->namespace && a->labels == b->labels && streq(a->name, b->name);
}

static void meta_free(KubeObject *o, StringPool *pool) {
	string_pool_unref(pool, o->namespace);
	string_pool_unref_labels(pool, o->labels);
	if (!(o->flags & OBJECT_FLAG_BLOCK))
		free((char *) o->name);
}

int kube_object_json_key(const json_t *j, const char **ret_namespace, const char **ret_name) {
	const json_t *md = jget(j, "metadata");
	const char *ns, *name;

	if (jstr(md, "name", &name) < 0 || isempty(name) || jstr(md, "namespace", &ns) < 0)
		return -EINVAL;
	*ret_namespace = isempty(ns) ? NULL : ns;
	*ret_name = name;
	return 0;
}

/* ---- Node ---- */

#define WEFT_ANNOTATION_PREFIX "weft.dev/"

static void node_free(KubeNode *n) {
	free(n->pod_cidrs);
	free(n->internal_ips);
	for (size_t i = 0; i < 2u * n->n_annotations; i++)
		free(n->annotations[i]);
	free(n->annotations);
}

static int strp_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int node_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(meta_done) Meta m = {};
	KubeNode *n = NULL;
	const json_t *spec = jget(j, "spec"), *cidrs, *addrs, *ann, *x;
	const char *key;
	json_t *v;
	size_t i;
	int r;

	r = meta_parse(j, false, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;

	if (jarr(spec, "podCIDRs", &cidrs) < 0) {
		r = decode_error(err, "spec.podCIDRs: not an array");
		goto fail;
	}
	if (jlen(cidrs) == 0 && jget(spec, "podCIDR")) {
		/* Servers before 1.16 have only the singular field. */
		n->pod_cidrs = calloc(1, sizeof(IpPrefix));
		if (!n->pod_cidrs)
			goto oom;
		x = jget(spec, "podCIDR");
		if (!json_is_string(x) || ip_prefix_parse_network(json_string_value(x), &n->pod_cidrs[0]) < 0) {
			r = decode_error(err, "spec.podCIDR: not a network prefix");
			goto fail;
		}
		n->n_pod_cidrs = 1;
	} else if (jlen(cidrs) > 0) {
		if (jlen(cidrs) > 2) {
			r = decode_error(err, "spec.podCIDRs: more than one per family");
			goto fail;
		}
		n->pod_cidrs = calloc(jlen(cidrs), sizeof(IpPrefix));
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

	if (jarr(jget(j, "status"), "addresses", &addrs) < 0) {
		r = decode_error(err, "status.addresses: not an array");
		goto fail;
	}
	json_array_foreach(addrs, i, x) {
		const char *type, *addr;
		IpAddr a;
		IpAddr *nv;

		if (jstr(x, "type", &type) < 0 || jstr(x, "address", &addr) < 0) {
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
		if (ip_in(n->internal_ips, n->n_internal_ips, &a) || n->n_internal_ips == UINT8_MAX)
			continue;
		nv = reallocarray(n->internal_ips, n->n_internal_ips + 1u, sizeof(IpAddr));
		if (!nv)
			goto oom;
		n->internal_ips = nv;
		nv[n->n_internal_ips++] = a;
	}

	ann = jget(m.j, "annotations");
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

	if (meta_move(&m, KUBE_KIND_NODE, &n->meta) < 0)
		goto oom;
	*ret = &n->meta;
	return 0;
oom:
	r = -ENOMEM;
fail:
	node_free(n);
	free(n);
	return r;
}

static bool node_equal(const KubeNode *a, const KubeNode *b) {
	if (a->n_pod_cidrs != b->n_pod_cidrs || a->n_internal_ips != b->n_internal_ips ||
	    a->n_annotations != b->n_annotations)
		return false;
	for (size_t i = 0; i < a->n_pod_cidrs; i++)
		if (!ip_prefix_equal(&a->pod_cidrs[i], &b->pod_cidrs[i]))
			return false;
	for (size_t i = 0; i < 2u * a->n_annotations; i++)
		if (!streq(a->annotations[i], b->annotations[i]))
			return false;
	return ip_arrays_equal(a->internal_ips, b->internal_ips, a->n_internal_ips);
}

/* ---- Namespace ---- */

#define LABEL_NAMESPACE_NAME "kubernetes.io/metadata.name"

/*
 * The API server pins kubernetes.io/metadata.name to the Namespace's name whatever was written,
 * and policies select namespaces by it ("namespaceSelector: {matchLabels:
 * {kubernetes.io/metadata.name: victim}}"). A source without an API server (etcd) would let a
 * namespace claim another's name: set it here, for every source alike.
 */
static int namespace_pin_name_label(Meta *m, DecodeError *err) {
	const char *buf[17], **pairs = buf, **set;
	_cleanup_free_ const char **heap = NULL;
	size_t n = 0;

	if (m->n_labels >= UINT16_MAX)
		return decode_error(err, "metadata.labels: too many labels");

	if (m->n_labels + 1 > ELEMENTSOF(buf)) {
		pairs = heap = calloc(m->n_labels + 1, sizeof(char *));
		if (!pairs)
			return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_labels; i++)
		if (label_pair_key_len(m->labels[i]) != strlen(LABEL_NAMESPACE_NAME) ||
		    !startswith(m->labels[i], LABEL_NAMESPACE_NAME "="))
			pairs[n++] = string_pool_ref(m->labels[i]);
	pairs[n] = string_pool_intern_pair(m->pool, LABEL_NAMESPACE_NAME, m->name);
	if (!pairs[n]) {
		while (n > 0)
			string_pool_unref(m->pool, pairs[--n]);
		return -ENOMEM;
	}
	n++;
	label_pairs_sort(pairs, n);
	set = string_pool_intern_labels(m->pool, pairs, n); /* takes the pair references */
	if (!set)
		return -ENOMEM;
	if (m->interned)
		string_pool_unref_labels(m->pool, m->labels);
	m->labels = set;
	m->n_labels = n;
	m->interned = true;
	return 0;
}

static int namespace_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(meta_done) Meta m = {};
	KubeNamespace *n;
	int r;

	r = meta_parse(j, false, dns_label_valid, pool, &m, err);
	if (r < 0)
		return r;
	r = namespace_pin_name_label(&m, err);
	if (r < 0)
		return r;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (meta_move(&m, KUBE_KIND_NAMESPACE, &n->meta) < 0) {
		free(n);
		return -ENOMEM;
	}
	*ret = &n->meta;
	return 0;
}

/* ---- Pod ---- */

static int parse_uid(const char *s, uint8_t ret[16]) {
	/* 8-4-4-4-12 hex digits. */
	size_t k = 0;

	if (strlen(s) != 36)
		return -EINVAL;
	for (size_t i = 0; i < 36; i++) {
		int v;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		if (s[i] >= '0' && s[i] <= '9')
			v = s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			v = s[i] - 'a' + 10;
		else if (s[i] >= 'A' && s[i] <= 'F')
			v = s[i] - 'A' + 10;
		else
			return -EINVAL;
		ret[k / 2] = (uint8_t) (k % 2 ? ret[k / 2] | v : v << 4);
		k++;
	}
	return 0;
}

static int parse_phase(const char *s, uint8_t *ret) {
	static const char *const names[] = { "Pending", "Running", "Succeeded", "Failed", "Unknown" };

	if (!s) {
		*ret = KUBE_POD_PENDING;
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(s, names[i])) {
			*ret = (uint8_t) i;
			return 0;
		}
	return -EINVAL;
}

static void ports_unref(KubeContainerPort *p, size_t n, StringPool *pool) {
	for (size_t i = 0; i < n; i++)
		string_pool_unref(pool, p[i].name);
}

static int pod_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(meta_done) Meta m = {};
	/* On the stack for the usual few ports (see Meta.labels_buf). */
	KubeContainerPort ports_buf[8], *ports = ports_buf;
	_cleanup_free_ KubeContainerPort *ports_heap = NULL;
	size_t ports_cap = ELEMENTSOF(ports_buf);
	const json_t *spec = jget(j, "spec"), *status = jget(j, "status"), *ips, *containers, *c;
	const char *uid, *node, *phase_s, *pod_ip;
	IpAddr ip[2] = {};
	uint8_t uid_b[16] = {}, phase;
	size_t n_ips = 0, n_ports = 0, i, name_len, size;
	bool host_network;
	KubePod *p;
	char *b;
	int r;

	r = meta_parse(j, true, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (jstr(m.j, "uid", &uid) < 0 || (uid && parse_uid(uid, uid_b) < 0))
		return decode_error(err, "metadata.uid: not a UID");
	if (jstr(spec, "nodeName", &node) < 0 || (node && !dns_subdomain_valid(node)))
		return decode_error(err, "spec.nodeName: not a valid node name");
	if (jbool(spec, "hostNetwork", false, &host_network) < 0)
		return decode_error(err, "spec.hostNetwork: not a boolean");
	if (jstr(status, "phase", &phase_s) < 0 || parse_phase(phase_s, &phase) < 0)
		return decode_error(err, "status.phase: not a pod phase");

	if (jarr(status, "podIPs", &ips) < 0)
		return decode_error(err, "status.podIPs: not an array");
	if (jlen(ips) > 2)
		return decode_error(err, "status.podIPs: more than one address per family");
	json_array_foreach(ips, i, c) {
		char path[32];

		pathf(path, sizeof(path), "status.podIPs[%zu].ip", i);
		r = parse_ip(jget(c, "ip"), path, &ip[i], err);
		if (r < 0)
			return r;
		n_ips++;
	}
	if (n_ips == 2 && ip[0].family == ip[1].family)
		return decode_error(err, "status.podIPs: more than one address per family");
	if (n_ips == 0 && jstr(status, "podIP", &pod_ip) == 0 && pod_ip) {
		if (ip_addr_parse(pod_ip, &ip[0]) < 0)
			return decode_error(err, "status.podIP: \"%.64s\" is not an IP address", pod_ip);
		n_ips = 1;
	}

	if (jarr(spec, "containers", &containers) < 0)
		return decode_error(err, "spec.containers: not an array");
	json_array_foreach(containers, i, c) {
		const json_t *cp, *x;
		size_t k;

		if (jarr(c, "ports", &cp) < 0)
			return decode_error(err, "spec.containers[%zu].ports: not an array", i);
		json_array_foreach(cp, k, x) {
			KubeContainerPort *nv, *e;
			const char *pname;
			long long port;
			char path[64];

			if (n_ports == UINT8_MAX)
				break; /* more ports than any policy needs named: keep the first 255 */
			pathf(path, sizeof(path), "spec.containers[%zu].ports[%zu]", i, k);
			if (jint(x, "containerPort", 1, 65535, 0, &port) < 0 || port == 0) {
				ports_unref(ports, n_ports, pool);
				return decode_error(err, "%s.containerPort: missing or not a port", path);
			}
			if (jstr(x, "name", &pname) < 0 || (pname && !port_name_valid(pname))) {
				ports_unref(ports, n_ports, pool);
				return decode_error(err, "%s.name: not a port name", path);
			}
			if (n_ports == ports_cap) {
				nv = reallocarray(ports_heap, ports_cap * 2, sizeof(KubeContainerPort));
				if (!nv) {
					ports_unref(ports, n_ports, pool);
					return -ENOMEM;
				}
				if (!ports_heap)
					memcpy(nv, ports_buf, sizeof(ports_buf));
				ports_heap = ports = nv;
				ports_cap *= 2;
			}
			e = &ports[n_ports];
			*e = (KubeContainerPort) { .port = (uint16_t) port };
			r = parse_protocol(x, path, &e->protocol, err);
			if (r >= 0 && pname) {
				e->name = string_pool_intern(pool, pname);
				if (!e->name)
					r = -ENOMEM;
			}
			if (r < 0) {
				ports_unref(ports, n_ports, pool);
				return r;
			}
			n_ports++;
		}
	}

	/* Everything checked: lay the pod out in one block. Largest alignment first. */
	name_len = strlen(m.name) + 1;
	size = sizeof(KubePod) + n_ports * sizeof(KubeContainerPort) + n_ips * sizeof(IpAddr) + name_len;
	b = calloc(1, size);
	if (!b) {
		ports_unref(ports, n_ports, pool);
		return -ENOMEM;
	}
	p = (KubePod *) b;
	b += sizeof(KubePod);
	p->meta = (KubeObject) {
		.kind = KUBE_KIND_POD,
		.flags = OBJECT_FLAG_BLOCK,
		.n_labels = (uint16_t) m.n_labels,
		.namespace = TAKE_PTR(m.namespace),
		.labels = TAKE_PTR(m.labels),
	};
	m.n_labels = 0; /* the references moved */
	m.interned = false;
	if (n_ports > 0) {
		p->ports = (KubeContainerPort *) b;
		memcpy(b, ports, n_ports * sizeof(KubeContainerPort));
		b += n_ports * sizeof(KubeContainerPort);
	}
	if (n_ips > 0) {
		p->ips = (IpAddr *) b;
		memcpy(b, ip, n_ips * sizeof(IpAddr));
		b += n_ips * sizeof(IpAddr);
	}
	memcpy(b, m.name, name_len);
	p->meta.name = b;
	p->node_name = node ? string_pool_intern(pool, node) : NULL;
	memcpy(p->uid, uid_b, sizeof(uid_b));
	p->phase = phase;
	p->host_network = host_network;
	p->n_ips = (uint8_t) n_ips;
	p->n_ports = (uint8_t) n_ports;
	if (node && !p->node_name) {
		kube_object_free(&p->meta, pool);
		return -ENOMEM;
	}
	*ret = &p->meta;
	return 0;
}

static bool pod_equal(const KubePod *a, const KubePod *b) {
	if (a->node_name != b->node_name || memcmp(a->uid, b->uid, 16) != 0 || a->phase != b->phase ||
	    a->host_network != b->host_network || a->n_ips != b->n_ips || a->n_ports != b->n_ports)
		return false;
	for (size_t i = 0; i < a->n_ports; i++)
		if (a->ports[i].name != b->ports[i].name || a->ports[i].port != b->ports[i].port ||
		    a->ports[i].protocol != b->ports[i].protocol)
			return false;
	return ip_arrays_equal(a->ips, b->ips, a->n_ips);
}

/* ---- NetworkPolicy ---- */

static void policy_port_unref(KubePolicyPort *p, size_t n, StringPool *pool) {
	for (size_t i = 0; i < n; i++)
		string_pool_unref(pool, p[i].port.name);
}

static void rule_done(KubePolicyRule *r, StringPool *pool) {
	for (size_t i = 0; i < r->n_peers; i++) {
		label_selector_free(r->peers[i].pod_selector);
		label_selector_free(r->peers[i].namespace_selector);
		free(r->peers[i].except);
	}
	free(r->peers);
	policy_port_unref(r->ports, r->n_ports, pool);
	free(r->ports);
}

static void rules_free(KubePolicyRule *r, size_t n, StringPool *pool) {
	for (size_t i = 0; i < n; i++)
		rule_done(&r[i], pool);
	free(r);
}

static int peer_parse(const json_t *j, const char *path, KubePolicyPeer *ret, DecodeError *err) {
	const json_t *ps = jget(j, "podSelector"), *ns = jget(j, "namespaceSelector"), *ib = jget(j, "ipBlock"), *ex,
		     *x;
	char p[128];
	size_t i;
	int r;

	if (!json_is_object(j))
		return decode_error(err, "%s: not an object", path);
	if (!ps && !ns && !ib)
		return decode_error(err, "%s: must specify podSelector, namespaceSelector or ipBlock", path);
	if (ib && (ps || ns))
		return decode_error(err, "%s: ipBlock may not be combined with a selector", path);
	if (ib) {
		const char *cidr;

		if (jstr(ib, "cidr", &cidr) < 0 || !cidr || ip_prefix_parse(cidr, &ret->cidr) < 0)
			return decode_error(err, "%s.ipBlock.cidr: missing or not a CIDR", path);
		ret->cidr = ip_prefix_mask(&ret->cidr);
		ret->has_ip_block = true;
		if (jarr(ib, "except", &ex) < 0)
			return decode_error(err, "%s.ipBlock.except: not an array", path);
		if (jlen(ex) > KUBE_POLICY_MAX_EXCEPT)
			return decode_error(err, "%s.ipBlock.except: %zu entries, more than the limit of %u", path,
					    jlen(ex), KUBE_POLICY_MAX_EXCEPT);
		if (jlen(ex) > 0) {
			ret->except = calloc(jlen(ex), sizeof(IpPrefix));
			if (!ret->except)
				return -ENOMEM;
		}
		json_array_foreach(ex, i, x) {
			IpPrefix *e = &ret->except[i];

			if (!json_is_string(x) || ip_prefix_parse(json_string_value(x), e) < 0)
				return decode_error(err, "%s.ipBlock.except[%zu]: not a CIDR", path, i);
			*e = ip_prefix_mask(e);
			/* The API server wants a strict subset of cidr. */
			if (e->addr.family != ret->cidr.addr.family || e->len <= ret->cidr.len ||
			    !ip_prefix_contains(&ret->cidr, &e->addr))
				return decode_error(err, "%s.ipBlock.except[%zu]: not inside cidr", path, i);
			ret->n_except++;
		}
		return 0;
	}
	pathf(p, sizeof(p), "%s.podSelector", path);
	r = label_selector_parse(ps, p, &ret->pod_selector, err);
	if (r < 0)
		return r;
	pathf(p, sizeof(p), "%s.namespaceSelector", path);
	return label_selector_parse(ns, p, &ret->namespace_selector, err);
}

static int policy_port_parse(const json_t *j, const char *path, StringPool *pool, KubePolicyPort *ret,
			     DecodeError *err) {
	char p[128];
	long long end;
	int r;

	if (!json_is_object(j))
		return decode_error(err, "%s: not an object", path);
	r = parse_protocol(j, path, &ret->protocol, err);
	if (r < 0)
		return r;
	pathf(p, sizeof(p), "%s.port", path);
	r = parse_port_ref(jget(j, "port"), p, pool, &ret->port, err);
	if (r < 0)
		return r;
	if (jint(j, "endPort", 1, 65535, 0, &end) < 0)
		return decode_error(err, "%s.endPort: not a port", path);
	if (end != 0 && (ret->port.number == 0 || end < ret->port.number))
		return decode_error(err, "%s.endPort: needs a numeric port no larger than it", path);
	ret->end_port = (uint16_t) end;
	return 0;
}

static int rules_parse(const json_t *spec, const char *field, const char *peers_field, StringPool *pool,
		       size_t *peer_budget_used, KubePolicyRule **ret, size_t *ret_n, DecodeError *err) {
	const json_t *a, *rule, *x, *peers, *ports;
	KubePolicyRule *v = NULL;
	size_t i, k, n = 0;
	char p[128];
	int r;

	if (jarr(spec, field, &a) < 0)
		return decode_error(err, "spec.%s: not an array", field);
	if (jlen(a) > KUBE_POLICY_MAX_RULES)
		return decode_error(err, "spec.%s: %zu rules, more than the limit of %u", field, jlen(a),
				    KUBE_POLICY_MAX_RULES);
	if (jlen(a) > 0) {
		v = calloc(jlen(a), sizeof(KubePolicyRule));
		if (!v)
			return -ENOMEM;
	}
	json_array_foreach(a, i, rule) {
		KubePolicyRule *e = &v[i];

		n++;
		if (!json_is_object(rule)) {
			r = decode_error(err, "spec.%s[%zu]: not an object", field, i);
			goto fail;
		}
		if (jarr(rule, peers_field, &peers) < 0 || jarr(rule, "ports", &ports) < 0) {
			r = decode_error(err, "spec.%s[%zu]: %s or ports not an array", field, i, peers_field);
			goto fail;
		}
		/* Counted over both directions (the caller passes the running total). */
		*peer_budget_used += jlen(peers);
		if (*peer_budget_used > KUBE_POLICY_MAX_PEERS) {
			r = decode_error(err, "spec.%s[%zu].%s: the policy has more than the limit of %u peers", field,
					 i, peers_field, KUBE_POLICY_MAX_PEERS);
			goto fail;
		}
		if (jlen(ports) > KUBE_POLICY_MAX_PORTS) {
			r = decode_error(err, "spec.%s[%zu].ports: %zu ports, more than the limit of %u", field, i,
					 jlen(ports), KUBE_POLICY_MAX_PORTS);
			goto fail;
		}
		if (jlen(peers) > 0 && !(e->peers = calloc(jlen(peers), sizeof(KubePolicyPeer))))
			goto oom;
		json_array_foreach(peers, k, x) {
			e->n_peers++;
			pathf(p, sizeof(p), "spec.%s[%zu].%s[%zu]", field, i, peers_field, k);
			r = peer_parse(x, p, &e->peers[k], err);
			if (r < 0)
				goto fail;
		}
		if (jlen(ports) > 0 && !(e->ports = calloc(jlen(ports), sizeof(KubePolicyPort))))
			goto oom;
		json_array_foreach(ports, k, x) {
			pathf(p, sizeof(p), "spec.%s[%zu].ports[%zu]", field, i, k);
			r = policy_port_parse(x, p, pool, &e->ports[k], err);
			if (r < 0) {
				string_pool_unref(pool, e->ports[k].port.name);
				goto fail;
			}
			e->n_ports++;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
oom:
	r = -ENOMEM;
fail:
	rules_free(v, n, pool);
	return r;
}

static void policy_free(KubeNetworkPolicy *p, StringPool *pool) {
	label_selector_free(p->pod_selector);
	rules_free(p->ingress_rules, p->n_ingress, pool);
	rules_free(p->egress_rules, p->n_egress, pool);
}

static int policy_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(meta_done) Meta m = {};
	const json_t *spec = jget(j, "spec"), *types = NULL, *t;
	KubeNetworkPolicy *p;
	size_t i, n_peers = 0;
	int r;

	r = meta_parse(j, true, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (spec && !json_is_object(spec))
		return decode_error(err, "spec: not an object");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* podSelector is a struct, not a pointer, in the API: absent decodes as {} (every pod). */
	if (jget(spec, "podSelector"))
		r = label_selector_parse(jget(spec, "podSelector"), "spec.podSelector", &p->pod_selector, err);
	else if (!(p->pod_selector = calloc(1, sizeof(LabelSelector))))
		r = -ENOMEM;
	if (r >= 0)
		r = rules_parse(spec, "ingress", "from", pool, &n_peers, &p->ingress_rules, &p->n_ingress, err);
	if (r >= 0)
		r = rules_parse(spec, "egress", "to", pool, &n_peers, &p->egress_rules, &p->n_egress, err);
	if (r >= 0 && jarr(spec, "policyTypes", &types) < 0)
		r = decode_error(err, "spec.policyTypes: not an array");
	if (r >= 0 && jlen(types) == 0) {
		/* The API server's defaulting: Ingress always, Egress when there are egress rules. */
		p->ingress = true;
		p->egress = p->n_egress > 0;
	}
	json_array_foreach(r >= 0 ? types : NULL, i, t) {
		if (json_is_string(t) && streq(json_string_value(t), "Ingress"))
			p->ingress = true;
		else if (json_is_string(t) && streq(json_string_value(t), "Egress"))
			p->egress = true;
		else {
			r = decode_error(err, "spec.policyTypes[%zu]: not Ingress or Egress", i);
			break;
		}
	}
	if (r >= 0)
		r = meta_move(&m, KUBE_KIND_NETWORK_POLICY, &p->meta);
	if (r < 0) {
		policy_free(p, pool);
		free(p);
		return r;
	}
	*ret = &p->meta;
	return 0;
}

static bool prefixes_equal(const IpPrefix *a, const IpPrefix *b, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (!ip_prefix_equal(&a[i], &b[i]))
			return false;
	return true;
}

static bool rules_equal(const KubePolicyRule *a, const KubePolicyRule *b, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (a[i].n_peers != b[i].n_peers || a[i].n_ports != b[i].n_ports)
			return false;
		for (size_t k = 0; k < a[i].n_peers; k++) {
			const KubePolicyPeer *x = &a[i].peers[k], *y = &b[i].peers[k];

			if (x->has_ip_block != y->has_ip_block || x->n_except != y->n_except ||
			    !label_selector_equal(x->pod_selector, y->pod_selector) ||
			    !label_selector_equal(x->namespace_selector, y->namespace_selector) ||
			    (x->has_ip_block && !ip_prefix_equal(&x->cidr, &y->cidr)) ||
			    !prefixes_equal(x->except, y->except, x->n_except))
				return false;
		}
		for (size_t k = 0; k < a[i].n_ports; k++) {
			const KubePolicyPort *x = &a[i].ports[k], *y = &b[i].ports[k];

			if (x->protocol != y->protocol || x->port.number != y->port.number ||
			    x->port.name != y->port.name || x->end_port != y->end_port)
				return false;
		}
	}
	return true;
}

static bool policy_equal(const KubeNetworkPolicy *a, const KubeNetworkPolicy *b) {
	return a->ingress == b->ingress && a->egress == b->egress && a->n_ingress == b->n_ingress &&
	       a->n_egress == b->n_egress && label_selector_equal(a->pod_selector, b->pod_selector) &&
	       rules_equal(a->ingress_rules, b->ingress_rules, a->n_ingress) &&
	       rules_equal(a->egress_rules, b->egress_rules, a->n_egress);
}

/* ---- Service ---- */

static void service_free(KubeService *s, StringPool *pool) {
	for (size_t i = 0; i < s->n_ports; i++) {
		string_pool_unref(pool, s->ports[i].name);
		string_pool_unref(pool, s->ports[i].target_port.name);
	}
	free(s->ports);
	free(s->cluster_ips);
	free(s->external_ips);
	free(s->lb_ips);
	free(s->source_ranges);
}

/* metadata.creationTimestamp (RFC 3339 in UTC, as the API server writes it: "2024-01-02T03:04:05Z")
 * as unix seconds; 0 if absent. */
static int parse_creation_timestamp(const json_t *md, int64_t *ret, DecodeError *err) {
	const char *s, *end;
	struct tm tm = {};

	if (jstr(md, "creationTimestamp", &s) < 0)
		return decode_error(err, "metadata.creationTimestamp: not a string");
	if (!s) {
		*ret = 0;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end && *end == '.') /* fractional seconds (MicroTime): the order needs none */
		end += 1 + strspn(end + 1, "0123456789");
	if (!end || !streq(end, "Z"))
		return decode_error(err, "metadata.creationTimestamp: \"%.40s\" is not an RFC 3339 UTC time", s);
	*ret = (int64_t) timegm(&tm);
	/* an API server never wrote a time before 1970 or after 9999 (and the debug dump could not
	 * print it back the same) */
	if (*ret < 0 || *ret > INT64_C(253402300799))
		return decode_error(err, "metadata.creationTimestamp: \"%.40s\" is not between 1970 and 9999", s);
	return 0;
}

/* KubeService.created: the source's create revision if it gave one, else creationTimestamp. */
static int service_created(const json_t *j, KubeService *s, DecodeError *err) {
	const json_t *rev = jget(j, KUBE_CREATE_REVISION_FIELD);

	if (rev) {
		if (!json_is_integer(rev) || json_integer_value(rev) < 0)
			return decode_error(err, "%s: not a revision", KUBE_CREATE_REVISION_FIELD);
		s->created = json_integer_value(rev);
		s->created_by_revision = true;
		return 0;
	}
	return parse_creation_timestamp(jget(j, "metadata"), &s->created, err);
}

/* spec.loadBalancerSourceRanges: CIDRs (host bits allowed, as the API server allows them). */
static int service_source_ranges_parse(const json_t *spec, KubeService *s, DecodeError *err) {
	const json_t *a, *x;
	size_t i;

	if (jarr(spec, "loadBalancerSourceRanges", &a) < 0)
		return decode_error(err, "spec.loadBalancerSourceRanges: not an array");
	if (jlen(a) > KUBE_SERVICE_MAX_SOURCE_RANGES)
		return decode_error(err, "spec.loadBalancerSourceRanges: %zu entries, at most %d", jlen(a),
				    KUBE_SERVICE_MAX_SOURCE_RANGES);
	if (jlen(a) == 0)
		return 0;
	s->source_ranges = calloc(jlen(a), sizeof(IpPrefix));
	if (!s->source_ranges)
		return -ENOMEM;
	json_array_foreach(a, i, x) {
		IpPrefix p;

		if (!json_is_string(x) || ip_prefix_parse(json_string_value(x), &p) < 0)
			return decode_error(err, "spec.loadBalancerSourceRanges[%zu]: \"%.64s\" is not a CIDR", i,
					    json_is_string(x) ? json_string_value(x) : "(not a string)");
		s->source_ranges[s->n_source_ranges++] = ip_prefix_mask(&p);
	}
	return 0;
}

static int service_ports_parse(const json_t *spec, StringPool *pool, KubeService *s, DecodeError *err) {
	const json_t *ports, *x;
	size_t i;
	int r;

	if (jarr(spec, "ports", &ports) < 0)
		return decode_error(err, "spec.ports: not an array");
	if (jlen(ports) > KUBE_SERVICE_MAX_PORTS)
		return decode_error(err, "spec.ports: %zu entries, at most %d", jlen(ports), KUBE_SERVICE_MAX_PORTS);
	if (jlen(ports) > 0 && !(s->ports = calloc(jlen(ports), sizeof(KubeServicePort))))
		return -ENOMEM;
	json_array_foreach(ports, i, x) {
		KubeServicePort *e = &s->ports[i];
		const char *name;
		long long port, node_port;
		char p[64];

		s->n_ports++;
		pathf(p, sizeof(p), "spec.ports[%zu]", i);
		if (!json_is_object(x))
			return decode_error(err, "%s: not an object", p);
		if (jint(x, "port", 1, 65535, 0, &port) < 0 || port == 0)
			return decode_error(err, "%s.port: missing or not a port", p);
		if (jint(x, "nodePort", 0, 65535, 0, &node_port) < 0)
			return decode_error(err, "%s.nodePort: not a port", p);
		if (jstr(x, "name", &name) < 0 || (name && *name && !dns_label_valid(name)))
			return decode_error(err, "%s.name: not a valid port name", p);
		e->port = (uint16_t) port;
		e->node_port = (uint16_t) node_port;
		if (name && *name && !(e->name = string_pool_intern(pool, name)))
			return -ENOMEM;
		r = parse_protocol(x, p, &e->protocol, err);
		if (r < 0)
			return r;
		pathf(p, sizeof(p), "spec.ports[%zu].targetPort", i);
		r = parse_port_ref(jget(x, "targetPort"), p, pool, &e->target_port, err);
		if (r < 0)
			return r;
		if (!e->target_port.name && e->target_port.number == 0)
			e->target_port.number = e->port;
		/* as the API server: one port per name, per port . protocol and per nodePort . protocol
		 * (two of them would be two rules for one key, and which one wins would be chance) */
		for (size_t k = 0; k < i; k++) {
			const KubeServicePort *o = &s->ports[k];

			if (e->name && o->name == e->name) /* interned: equal strings are one pointer */
				return decode_error(err, "spec.ports[%zu].name: \"%s\" repeats spec.ports[%zu]", i,
						    e->name, k);
			if (o->port == e->port && o->protocol == e->protocol)
				return decode_error(err, "spec.ports[%zu]: port %u/%s repeats spec.ports[%zu]", i,
						    e->port, kube_protocol_to_string(e->protocol), k);
			if (e->node_port && o->node_port == e->node_port && o->protocol == e->protocol)
				return decode_error(err, "spec.ports[%zu].nodePort: %u/%s repeats spec.ports[%zu]", i,
						    e->node_port, kube_protocol_to_string(e->protocol), k);
		}
	}
	return 0;
}

static int service_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(meta_done) Meta m = {};
	const json_t *spec = jget(j, "spec"), *a, *x;
	const char *type, *s, *cip;
	KubeService *v;
	long long hc, timeout;
	size_t n, i;
	int r;

	r = meta_parse(j, true, dns1035_label_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (!json_is_object(spec))
		return decode_error(err, "spec: missing or not an object");
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;

	if (jstr(spec, "type", &type) < 0)
		type = "?";
	if (!type || streq(type, "ClusterIP"))
		v->type = KUBE_SERVICE_CLUSTER_IP;
	else if (streq(type, "NodePort"))
		v->type = KUBE_SERVICE_NODE_PORT;
	else if (streq(type, "LoadBalancer"))
		v->type = KUBE_SERVICE_LOAD_BALANCER;
	else if (streq(type, "ExternalName"))
		v->type = KUBE_SERVICE_EXTERNAL_NAME;
	else {
		r = decode_error(err, "spec.type: \"%.32s\" is not a service type", type);
		goto fail;
	}

	/* clusterIPs (clusterIP on old servers); "None" = headless. */
	if (jarr(spec, "clusterIPs", &a) < 0 || jstr(spec, "clusterIP", &cip) < 0) {
		r = decode_error(err, "spec.clusterIPs: not an array of strings");
		goto fail;
	}
	if ((jlen(a) > 0 && json_is_string(json_array_get(a, 0)) &&
	     streq(json_string_value(json_array_get(a, 0)), "None")) ||
	    (jlen(a) == 0 && cip && streq(cip, "None")))
		v->headless = true;
	else if (jlen(a) > 0) {
		r = parse_ip_array(a, "spec.clusterIPs", NULL, &v->cluster_ips, &n, err);
		if (r < 0)
			goto fail;
		if (n > 2 || (n == 2 && v->cluster_ips[0].family == v->cluster_ips[1].family)) {
			r = decode_error(err, "spec.clusterIPs: more than one address per family");
			goto fail;
		}
		v->n_cluster_ips = (uint8_t) n;
	} else if (!isempty(cip)) {
		if (!(v->cluster_ips = calloc(1, sizeof(IpAddr))))
			goto oom;
		if (ip_addr_parse(cip, &v->cluster_ips[0]) < 0) {
			r = decode_error(err, "spec.clusterIP: \"%.64s\" is not an IP address", cip);
			goto fail;
		}
		v->n_cluster_ips = 1;
	}

	r = service_ports_parse(spec, pool, v, err);
	if (r < 0)
		goto fail;
	if (jarr(spec, "externalIPs", &a) < 0) {
		r = decode_error(err, "spec.externalIPs: not an array");
		goto fail;
	}
	if (jlen(a) > KUBE_SERVICE_MAX_EXTERNAL_IPS) {
		r = decode_error(err, "spec.externalIPs: %zu entries, at most %d", jlen(a),
				 KUBE_SERVICE_MAX_EXTERNAL_IPS);
		goto fail;
	}
	r = parse_ip_array(a, "spec.externalIPs", NULL, &v->external_ips, &v->n_external_ips, err);
	if (r < 0)
		goto fail;
	if (jarr(jget(jget(j, "status"), "loadBalancer"), "ingress", &a) < 0) {
		r = decode_error(err, "status.loadBalancer.ingress: not an array");
		goto fail;
	}
	if (jlen(a) > KUBE_SERVICE_MAX_LB_INGRESS) {
		r = decode_error(err, "status.loadBalancer.ingress: %zu entries, at most %d", jlen(a),
				 KUBE_SERVICE_MAX_LB_INGRESS);
		goto fail;
	}
	/* Ingress points given only by hostname (some cloud LBs) carry nothing to route. */
	n = 0;
	json_array_foreach(a, i, x)
		if (jget(x, "ip"))
			n++;
	if (n > 0) {
		if (!(v->lb_ips = calloc(n, sizeof(IpAddr))))
			goto oom;
		json_array_foreach(a, i, x) {
			char p[64];

			if (!jget(x, "ip"))
				continue;
			pathf(p, sizeof(p), "status.loadBalancer.ingress[%zu].ip", i);
			r = parse_ip(jget(x, "ip"), p, &v->lb_ips[v->n_lb_ips], err);
			if (r < 0)
				goto fail;
			v->n_lb_ips++;
		}
	}

	if (jstr(spec, "sessionAffinity", &s) < 0 || (s && !streq(s, "None") && !streq(s, "ClientIP"))) {
		r = decode_error(err, "spec.sessionAffinity: not None or ClientIP");
		goto fail;
	}
	v->session_affinity_client_ip = s && streq(s, "ClientIP");
	if (jint(jget(jget(spec, "sessionAffinityConfig"), "clientIP"), "timeoutSeconds", 1, 86400, 10800, &timeout) <
	    0) {
		r = decode_error(err, "spec.sessionAffinityConfig.clientIP.timeoutSeconds: not in 1..86400");
		goto fail;
	}
	v->session_affinity_timeout = v->session_affinity_client_ip ? (uint32_t) timeout : 0;
	if (jstr(spec, "externalTrafficPolicy", &s) < 0 || (s && !streq(s, "Cluster") && !streq(s, "Local"))) {
		r = decode_error(err, "spec.externalTrafficPolicy: not Cluster or Local");
		goto fail;
	}
	v->external_traffic_local = s && streq(s, "Local");
	if (jstr(spec, "internalTrafficPolicy", &s) < 0 || (s && !streq(s, "Cluster") && !streq(s, "Local"))) {
		r = decode_error(err, "spec.internalTrafficPolicy: not Cluster or Local");
		goto fail;
	}
	v->internal_traffic_local = s && streq(s, "Local");
	if (jint(spec, "healthCheckNodePort", 0, 65535, 0, &hc) < 0) {
		r = decode_error(err, "spec.healthCheckNodePort: not a port");
		goto fail;
	}
	v->health_check_node_port = (uint16_t) hc;
	if (jarr(spec, "ipFamilies", &a) < 0 || jlen(a) > 2) {
		r = decode_error(err, "spec.ipFamilies: not an array of at most two families");
		goto fail;
	}
	json_array_foreach(a, i, x) {
		const char *f = json_is_string(x) ? json_string_value(x) : "";
		int fam = streq(f, "IPv4") ? AF_INET : streq(f, "IPv6") ? AF_INET6 : AF_UNSPEC;

		if (fam == AF_UNSPEC || (i == 1 && v->ip_families[0] == fam)) {
			r = decode_error(err, "spec.ipFamilies[%zu]: not IPv4 or IPv6, or repeated", i);
			goto fail;
		}
		v->ip_families[v->n_ip_families++] = (uint8_t) fam;
	}
	r = service_source_ranges_parse(spec, v, err);
	if (r < 0)
		goto fail;
	r = service_created(j, v, err);
	if (r < 0)
		goto fail;

	r = meta_move(&m, KUBE_KIND_SERVICE, &v->meta);
	if (r < 0)
		goto fail;
	*ret = &v->meta;
	return 0;
oom:
	r = -ENOMEM;
fail:
	service_free(v, pool);
	free(v);
	return r;
}

static bool service_equal(const KubeService *a, const KubeService *b) {
	if (a->type != b->type || a->headless != b->headless ||
	    a->session_affinity_client_ip != b->session_affinity_client_ip ||
	    a->session_affinity_timeout != b->session_affinity_timeout ||
	    a->external_traffic_local != b->external_traffic_local ||
	    a->internal_traffic_local != b->internal_traffic_local || a->n_cluster_ips != b->n_cluster_ips ||
	    a->n_ip_families != b->n_ip_families || memcmp(a->ip_families, b->ip_families, 2) != 0 ||
	    a->health_check_node_port != b->health_check_node_port || a->n_ports != b->n_ports ||
	    a->n_external_ips != b->n_external_ips || a->n_lb_ips != b->n_lb_ips || a->created != b->created ||
	    a->created_by_revision != b->created_by_revision || a->n_source_ranges != b->n_source_ranges)
		return false;
	for (size_t i = 0; i < a->n_source_ranges; i++)
		if (!ip_prefix_equal(&a->source_ranges[i], &b->source_ranges[i]))
			return false;
	for (size_t i = 0; i < a->n_ports; i++) {
		const KubeServicePort *x = &a->ports[i], *y = &b->ports[i];

		if (x->name != y->name || x->protocol != y->protocol || x->port != y->port ||
		    x->node_port != y->node_port || x->target_port.number != y->target_port.number ||
		    x->target_port.name != y->target_port.name)
			return false;
	}
	return ip_arrays_equal(a->cluster_ips, b->cluster_ips, a->n_cluster_ips) &&
	       ip_arrays_equal(a->external_ips, b->external_ips, a->n_external_ips) &&
	       ip_arrays_equal(a->lb_ips, b->lb_ips, a->n_lb_ips);
}

/* ---- EndpointSlice ---- */

#define LABEL_SERVICE_NAME "kubernetes.io/service-name"

static void slice_free(KubeEndpointSlice *s, StringPool *pool) {
	string_pool_unref(pool, s->service_name);
	for (size_t i = 0; i < s->n_endpoints; i++) {
		string_pool_unref(pool, s->endpoints[i].node_name);
		free(s->endpoints[i].addresses);
	}
	free(s->endpoints);
	for (size_t i = 0; i < s->n_ports; i++)
		string_pool_unref(pool, s->ports[i].name);
	free(s->ports);
}

/*
 * What kube-apiserver's discovery validation refuses as an endpoint address (ValidateEndpointIP):
 * unspecified, loopback, link-local, and multicast (it names link-local multicast; no multicast
 * group is a backend, so weft refuses them all). A node's own address is no reason: hostNetwork
 * pods' endpoints are their node's IPs. NULL if the address may be an endpoint.
 */
static const char *endpoint_address_refusal(const IpAddr *a) {
	static const struct {
		const char *prefix, *why;
	} refused[] = {
		{ "0.0.0.0/8", "unspecified (0.0.0.0/8)" },
		{ "127.0.0.0/8", "loopback" },
		{ "169.254.0.0/16", "link-local (169.254.0.0/16)" },
		{ "224.0.0.0/4", "multicast" },
		{ "::/128", "unspecified" },
		{ "::1/128", "loopback" },
		{ "fe80::/10", "link-local (fe80::/10)" },
		{ "ff00::/8", "multicast" },
		/* An IPv4-mapped address reaches the IPv4 one: judge it the same way. */
		{ "::ffff:0.0.0.0/104", "unspecified (IPv4-mapped)" },
		{ "::ffff:127.0.0.0/104", "loopback (IPv4-mapped)" },
		{ "::ffff:169.254.0.0/112", "link-local (IPv4-mapped)" },
		{ "::ffff:224.0.0.0/100", "multicast (IPv4-mapped)" },
	};

	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		IpPrefix p;

		if (ip_prefix_parse(refused[i].prefix, &p) >= 0 && p.addr.family == a->family &&
		    ip_prefix_contains(&p, a))
			return refused[i].why;
	}
	return NULL;
}

static int slice_endpoints_parse(const json_t *j, StringPool *pool, KubeEndpointSlice *s, DecodeError *err) {
	const json_t *eps, *ep;
	int family = s->address_type == KUBE_ADDRESS_IPV4 ? AF_INET : AF_INET6;
	size_t i;
	int r;

	if (jarr(j, "endpoints", &eps) < 0)
		return decode_error(err, "endpoints: not an array");
	if (jlen(eps) > KUBE_SLICE_MAX_ENDPOINTS)
		return decode_error(err, "endpoints: %zu endpoints, more than the limit of %u", jlen(eps),
				    KUBE_SLICE_MAX_ENDPOINTS);
	if (s->address_type == KUBE_ADDRESS_FQDN || jlen(eps) == 0)
		return 0;
	if (!(s->endpoints = calloc(jlen(eps), sizeof(KubeEndpoint))))
		return -ENOMEM;
	json_array_foreach(eps, i, ep) {
		KubeEndpoint *e = &s->endpoints[i];
		const json_t *addrs, *cond = jget(ep, "conditions");
		const char *node;
		size_t n;
		char p[64];

		s->n_endpoints++;
		pathf(p, sizeof(p), "endpoints[%zu].addresses", i);
		if (!json_is_object(ep) || jarr(ep, "addresses", &addrs) < 0 || jlen(addrs) == 0 ||
		    jlen(addrs) > KUBE_SLICE_MAX_ADDRESSES)
			return decode_error(err, "%s: missing, empty or more than the limit of %u", p,
					    KUBE_SLICE_MAX_ADDRESSES);
		r = parse_ip_array(addrs, p, NULL, &e->addresses, &n, err);
		if (r < 0)
			return r;
		e->n_addresses = (uint8_t) n;
		for (size_t k = 0; k < n; k++) {
			const char *why = endpoint_address_refusal(&e->addresses[k]);
			char a[IP_ADDR_STRLEN];

			ip_addr_to_string(&e->addresses[k], a);
			if (e->addresses[k].family != family)
				return decode_error(err, "%s[%zu]: \"%s\" is not of the slice's addressType %s", p, k,
						    a, family == AF_INET ? "IPv4" : "IPv6");
			if (why)
				return decode_error(err, "%s[%zu]: \"%s\" is %s", p, k, a, why);
		}
		if (jbool(cond, "ready", true, &e->ready) < 0 || jbool(cond, "serving", true, &e->serving) < 0 ||
		    jbool(cond, "terminating", false, &e->terminating) < 0)
			return decode_error(err, "endpoints[%zu].conditions: not booleans", i);
		if (jstr(ep, "nodeName", &node) < 0 || (node && !dns_subdomain_valid(node)))
			return decode_error(err, "endpoints[%zu].nodeName: not a valid node name", i);
		if (node && !(e->node_name = string_pool_intern(pool, node)))
			return -ENOMEM;
	}
	return 0;
}

static int slice_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(meta_done) Meta m = {};
	const json_t *ports, *x;
	const char *at, *svc;
	KubeEndpointSlice *s;
	LabelSet ls;
	size_t i;
	int r;

	r = meta_parse(j, true, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (jstr(j, "addressType", &at) < 0 || !at)
		return decode_error(err, "addressType: missing");
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (streq(at, "IPv4"))
		s->address_type = KUBE_ADDRESS_IPV4;
	else if (streq(at, "IPv6"))
		s->address_type = KUBE_ADDRESS_IPV6;
	else if (streq(at, "FQDN"))
		s->address_type = KUBE_ADDRESS_FQDN;
	else {
		r = decode_error(err, "addressType: \"%.16s\" is not IPv4, IPv6 or FQDN", at);
		goto fail;
	}
	ls = (LabelSet) { .pairs = m.labels, .n = m.n_labels };
	svc = label_set_get(&ls, LABEL_SERVICE_NAME);
	if (svc && !(s->service_name = string_pool_intern(pool, svc)))
		goto oom;
	r = slice_endpoints_parse(j, pool, s, err);
	if (r < 0)
		goto fail;
	if (jarr(j, "ports", &ports) < 0) {
		r = decode_error(err, "ports: not an array");
		goto fail;
	}
	if (jlen(ports) > KUBE_SLICE_MAX_PORTS) {
		r = decode_error(err, "ports: %zu ports, more than the limit of %u", jlen(ports), KUBE_SLICE_MAX_PORTS);
		goto fail;
	}
	if (jlen(ports) > 0 && !(s->ports = calloc(jlen(ports), sizeof(KubeEndpointPort))))
		goto oom;
	json_array_foreach(ports, i, x) {
		KubeEndpointPort *e = &s->ports[i];
		const char *name;
		long long port;
		char p[32];

		s->n_ports++;
		pathf(p, sizeof(p), "ports[%zu]", i);
		if (jint(x, "port", 1, 65535, 0, &port) < 0) {
			r = decode_error(err, "%s.port: not a port", p);
			goto fail;
		}
		e->port = (uint16_t) port;
		r = parse_protocol(x, p, &e->protocol, err);
		if (r < 0)
			goto fail;
		if (jstr(x, "name", &name) < 0 || (name && *name && !dns_label_valid(name))) {
			r = decode_error(err, "%s.name: not a valid port name", p);
			goto fail;
		}
		if (name && *name && !(e->name = string_pool_intern(pool, name)))
			goto oom;
	}
	r = meta_move(&m, KUBE_KIND_ENDPOINT_SLICE, &s->meta);
	if (r < 0)
		goto fail;
	*ret = &s->meta;
	return 0;
oom:
	r = -ENOMEM;
fail:
	slice_free(s, pool);
	free(s);
	return r;
}

static bool slice_equal(const KubeEndpointSlice *a, const KubeEndpointSlice *b) {
	if (a->service_name != b->service_name || a->address_type != b->address_type ||
	    a->n_endpoints != b->n_endpoints || a->n_ports != b->n_ports)
		return false;
	for (size_t i = 0; i < a->n_endpoints; i++) {
		const KubeEndpoint *x = &a->endpoints[i], *y = &b->endpoints[i];

		if (x->ready != y->ready || x->serving != y->serving || x->terminating != y->terminating ||
		    x->node_name != y->node_name || x->n_addresses != y->n_addresses ||
		    !ip_arrays_equal(x->addresses, y->addresses, x->n_addresses))
			return false;
	}
	for (size_t i = 0; i < a->n_ports; i++)
		if (a->ports[i].name != b->ports[i].name || a->ports[i].protocol != b->ports[i].protocol ||
		    a->ports[i].port != b->ports[i].port)
			return false;
	return true;
}

/* ---- dispatch ---- */

/*
 * apiVersion and kind, when present, must be the one version weft decodes: the same JSON under
 * another version can mean something else (a v2 Service is no v1 Service), and a Pod stored where
 * Services live is no Service. Absent is fine: the items of a Kubernetes List carry neither.
 */
static int type_meta_check(KubeKind kind, const json_t *j, DecodeError *err) {
	const KubeKindInfo *info = kube_kind_info(kind);
	const json_t *v;

	v = json_object_get(j, "apiVersion");
	if (v && !json_is_null(v) && (!json_is_string(v) || !streq(json_string_value(v), info->api_version)))
		return decode_error(err, "apiVersion: \"%.64s\" is not %s (the %s API weft reads)",
				    json_is_string(v) ? json_string_value(v) : "(not a string)", info->api_version,
				    info->kind);
	v = json_object_get(j, "kind");
	if (v && !json_is_null(v) && (!json_is_string(v) || !streq(json_string_value(v), info->kind)))
		return decode_error(err, "kind: \"%.64s\" is not %s",
				    json_is_string(v) ? json_string_value(v) : "(not a string)", info->kind);
	return 0;
}

int kube_object_decode(KubeKind kind, const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	KubeObject *o = NULL;
	int r;

	if (!json_is_object(j))
		return decode_error(err, "not a JSON object");
	if ((unsigned) kind >= _KUBE_KIND_MAX)
		return -EINVAL;
	r = type_meta_check(kind, j, err);
	if (r < 0)
		return r;
	switch (kind) {
	case KUBE_KIND_NODE: r = node_decode(j, pool, &o, err); break;
	case KUBE_KIND_NAMESPACE: r = namespace_decode(j, pool, &o, err); break;
	case KUBE_KIND_POD: r = pod_decode(j, pool, &o, err); break;
	case KUBE_KIND_NETWORK_POLICY: r = policy_decode(j, pool, &o, err); break;
	case KUBE_KIND_SERVICE: r = service_decode(j, pool, &o, err); break;
	case KUBE_KIND_ENDPOINT_SLICE: r = slice_decode(j, pool, &o, err); break;
	default: return -EINVAL;
	}
	if (r < 0)
		return r;
	o->hash = cache_hash_string(o->name, cache_hash_ptr(o->namespace));
	*ret = o;
	return 0;
}

KubeObject *kube_object_free(KubeObject *o, StringPool *pool) {
	if (!o)
		return NULL;
	switch ((KubeKind) o->kind) {
	case KUBE_KIND_NODE: node_free((KubeNode *) o); break;
	case KUBE_KIND_POD: {
		KubePod *p = (KubePod *) o;

		string_pool_unref(pool, p->node_name);
		ports_unref(p->ports, p->n_ports, pool);
		break;
	}
	case KUBE_KIND_NETWORK_POLICY: policy_free((KubeNetworkPolicy *) o, pool); break;
	case KUBE_KIND_SERVICE: service_free((KubeService *) o, pool); break;
	case KUBE_KIND_ENDPOINT_SLICE: slice_free((KubeEndpointSlice *) o, pool); break;
	default: break;
	}
	meta_free(o, pool);
	free(o);
	return NULL;
}

bool kube_object_equal(const KubeObject *a, const KubeObject *b) {
	if (!a || !b)
		return a == b;
	if (!meta_equal(a, b))
		return false;
	switch ((KubeKind) a->kind) {
	case KUBE_KIND_NODE: return node_equal((const KubeNode *) a, (const KubeNode *) b);
	case KUBE_KIND_NAMESPACE: return true;
	case KUBE_KIND_POD: return pod_equal((const KubePod *) a, (const KubePod *) b);
	case KUBE_KIND_NETWORK_POLICY:
		return policy_equal((const KubeNetworkPolicy *) a, (const KubeNetworkPolicy *) b);
	case KUBE_KIND_SERVICE: return service_equal((const KubeService *) a, (const KubeService *) b);
	case KUBE_KIND_ENDPOINT_SLICE: return slice_equal((const KubeEndpointSlice *) a, (const KubeEndpointSlice *) b);
	default: return false;
	}
}

size_t kube_object_ips(const KubeObject *o, const IpAddr **ret) {
	const KubePod *p = KUBE_POD(o);

	if (!p || p->host_network) {
		*ret = NULL;
		return 0;
	}
	*ret = p->ips;
	return p->n_ips;
}

const char *kube_object_index_key(const KubeObject *o) {
	if (KUBE_POD(o))
		return KUBE_POD(o)->node_name;
	if (KUBE_ENDPOINT_SLICE(o))
		return KUBE_ENDPOINT_SLICE(o)->service_name;
	return NULL;
}
