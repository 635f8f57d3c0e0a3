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
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

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
void ko_pathf(char *buf, size_t n, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	(void) vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

const json_t *ko_jget(const json_t *j, const char *key) {
	const json_t *v = json_is_object(j) ? json_object_get(j, key) : NULL;

	return v && !json_is_null(v) ? v : NULL;
}

/* Optional string: absent/null -> *ret NULL. Wrong type -> -EINVAL. */
int ko_jstr(const json_t *j, const char *key, const char **ret) {
	const json_t *v = ko_jget(j, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	*ret = json_string_value(v);
	return 0;
}

/* Optional array: absent/null -> empty. */
int ko_jarr(const json_t *j, const char *key, const json_t **ret) {
	const json_t *v = ko_jget(j, key);

	*ret = v;
	return !v || json_is_array(v) ? 0 : -EINVAL;
}

size_t ko_jlen(const json_t *a) {
	return a ? json_array_size(a) : 0;
}

int ko_jbool(const json_t *j, const char *key, bool dflt, bool *ret) {
	const json_t *v = ko_jget(j, key);

	if (v && !json_is_boolean(v))
		return -EINVAL;
	*ret = v ? json_is_true(v) : dflt;
	return 0;
}

/* Integer in [min, max]; absent -> dflt. */
int ko_jint(const json_t *j, const char *key, long long min, long long max, long long dflt, long long *ret) {
	const json_t *v = ko_jget(j, key);

	if (!v) {
		*ret = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return -EINVAL;
	*ret = json_integer_value(v);
	return 0;
}

int ko_parse_protocol(const json_t *j, const char *path, uint8_t *ret, DecodeError *err) {
	const char *s;

	if (ko_jstr(j, "protocol", &s) < 0)
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
bool ko_port_name_valid(const char *s) {
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
int ko_parse_port_ref(const json_t *v, const char *path, StringPool *pool, KubePortRef *ret, DecodeError *err) {
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
		if (!ko_port_name_valid(json_string_value(v)))
			return decode_error(err, "%s: \"%.32s\" is not a port name", path, json_string_value(v));
		ret->name = string_pool_intern(pool, json_string_value(v));
		return ret->name ? 0 : -ENOMEM;
	}
	return decode_error(err, "%s: neither a number nor a name", path);
}

int ko_parse_ip(const json_t *v, const char *path, IpAddr *ret, DecodeError *err) {
	if (!json_is_string(v) || ip_addr_parse(json_string_value(v), ret) < 0)
		return decode_error(err, "%s: \"%.64s\" is not an IP address", path,
				    json_is_string(v) ? json_string_value(v) : "(not a string)");
	return 0;
}

bool ko_ip_in(const IpAddr *v, size_t n, const IpAddr *a) {
	for (size_t i = 0; i < n; i++)
		if (ip_addr_equal(&v[i], a))
			return true;
	return false;
}

/* A string array of IPs into a malloc'ed vector (NULL if empty); duplicates refused. */
int ko_parse_ip_array(const json_t *a, const char *path, const char *member, IpAddr **ret, size_t *ret_n,
		      DecodeError *err) {
	_cleanup_free_ IpAddr *v = NULL;
	const json_t *x;
	size_t i, n = ko_jlen(a);
	char p[96];
	int r;

	if (n > 0) {
		v = calloc(n, sizeof(IpAddr));
		if (!v)
			return -ENOMEM;
	}
	json_array_foreach(a, i, x) {
		if (member)
			x = ko_jget(x, member);
		ko_pathf(p, sizeof(p), "%s[%zu]%s%s", path, i, member ? "." : "", member ?: "");
		r = ko_parse_ip(x, p, &v[i], err);
		if (r < 0)
			return r;
		if (ko_ip_in(v, i, &v[i]))
			return decode_error(err, "%s: duplicate address", p);
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

bool ko_ip_arrays_equal(const IpAddr *a, const IpAddr *b, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (!ip_addr_equal(&a[i], &b[i]))
			return false;
	return true;
}

/* ---- metadata ---- */

/* Cleanup for a Meta that was not moved into an object. */
void ko_meta_done(Meta *m) {
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

int ko_meta_parse(const json_t *j, bool namespaced, NameValidFn name_valid, StringPool *pool, Meta *ret,
		  DecodeError *err) {
	const json_t *md = ko_jget(j, "metadata"), *labels;
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
	if (ko_jstr(md, "name", &ret->name) < 0 || !ret->name || !name_valid(ret->name))
		return decode_error(err, "metadata.name: missing or not a valid name");
	if (ko_jstr(md, "namespace", &ns) < 0)
		return decode_error(err, "metadata.namespace: not a string");
	if (namespaced) {
		if (!ns || !dns_label_valid(ns))
			return decode_error(err, "metadata.namespace: missing or not a valid namespace name");
		ret->namespace = string_pool_intern(pool, ns);
		if (!ret->namespace)
			return -ENOMEM;
	}
	labels = ko_jget(md, "labels");
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
int ko_meta_move(Meta *m, KubeKind kind, KubeObject *o) {
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

bool ko_meta_equal(const KubeObject *a, const KubeObject *b) {
	/* Label sets are interned whole: the same labels are the same array. */
	return a->kind == b->kind && a->namespace == b->namespace && a->labels == b->labels && streq(a->name, b->name);
}

void ko_meta_free(KubeObject *o, StringPool *pool) {
	string_pool_unref(pool, o->namespace);
	string_pool_unref_labels(pool, o->labels);
	if (!(o->flags & OBJECT_FLAG_BLOCK))
		free((char *) o->name);
}

int kube_object_json_key(const json_t *j, const char **ret_namespace, const char **ret_name) {
	const json_t *md = ko_jget(j, "metadata");
	const char *ns, *name;

	if (ko_jstr(md, "name", &name) < 0 || isempty(name) || ko_jstr(md, "namespace", &ns) < 0)
		return -EINVAL;
	*ret_namespace = isempty(ns) ? NULL : ns;
	*ret_name = name;
	return 0;
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
	case KUBE_KIND_NODE: r = ko_node_decode(j, pool, &o, err); break;
	case KUBE_KIND_NAMESPACE: r = ko_namespace_decode(j, pool, &o, err); break;
	case KUBE_KIND_POD: r = ko_pod_decode(j, pool, &o, err); break;
	case KUBE_KIND_NETWORK_POLICY: r = ko_policy_decode(j, pool, &o, err); break;
	case KUBE_KIND_SERVICE: r = ko_service_decode(j, pool, &o, err); break;
	case KUBE_KIND_ENDPOINT_SLICE: r = ko_slice_decode(j, pool, &o, err); break;
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
	case KUBE_KIND_NODE: ko_node_free((KubeNode *) o); break;
	case KUBE_KIND_POD: {
		KubePod *p = (KubePod *) o;

		string_pool_unref(pool, p->node_name);
		ko_ports_unref(p->ports, p->n_ports, pool);
		break;
	}
	case KUBE_KIND_NETWORK_POLICY: ko_policy_free((KubeNetworkPolicy *) o, pool); break;
	case KUBE_KIND_SERVICE: ko_service_free((KubeService *) o, pool); break;
	case KUBE_KIND_ENDPOINT_SLICE: ko_slice_free((KubeEndpointSlice *) o, pool); break;
	default: break;
	}
	ko_meta_free(o, pool);
	free(o);
	return NULL;
}

bool kube_object_equal(const KubeObject *a, const KubeObject *b) {
	if (!a || !b)
		return a == b;
	if (!ko_meta_equal(a, b))
		return false;
	switch ((KubeKind) a->kind) {
	case KUBE_KIND_NODE: return ko_node_equal((const KubeNode *) a, (const KubeNode *) b);
	case KUBE_KIND_NAMESPACE: return true;
	case KUBE_KIND_POD: return ko_pod_equal((const KubePod *) a, (const KubePod *) b);
	case KUBE_KIND_NETWORK_POLICY:
		return ko_policy_equal((const KubeNetworkPolicy *) a, (const KubeNetworkPolicy *) b);
	case KUBE_KIND_SERVICE: return ko_service_equal((const KubeService *) a, (const KubeService *) b);
	case KUBE_KIND_ENDPOINT_SLICE:
		return ko_slice_equal((const KubeEndpointSlice *) a, (const KubeEndpointSlice *) b);
	default: return false;
	}
}

void kube_object_take_version(KubeObject *to, KubeObject *from) {
	if (!to || !from || to->kind != KUBE_KIND_SERVICE || from->kind != KUBE_KIND_SERVICE)
		return;
	KubeService *a = (KubeService *) to, *b = (KubeService *) from;
	char *rv = a->resource_version;
	KubeLbCondition c = a->lb_condition;

	a->resource_version = b->resource_version;
	b->resource_version = rv;
	a->lb_condition = b->lb_condition;
	b->lb_condition = c;
	a->generation = b->generation;
	a->lb_request_key = b->lb_request_key;
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
