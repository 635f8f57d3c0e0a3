/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/string-util.h"
#include "shared/ip/ip-addr.h"
#include "shared/client/object-store.h"
#include "tool/pod-record.h"

#define CONTAINER_ID_ANNOTATION "weft.dev/container-id"

static const char *cni_arg(const json_t *cni_args, const char *key) {
	const json_t *p;
	size_t i;

	json_array_foreach((json_t *) cni_args, i, p)
		if (streq_ptr(json_string_value(json_array_get(p, 0)), key))
			return json_string_value(json_array_get(p, 1));
	return NULL;
}

bool pod_record_identity(const json_t *cni_args, const char **ret_ns, const char **ret_name, const char **ret_uid) {
	const char *ns = cni_arg(cni_args, "K8S_POD_NAMESPACE"), *name = cni_arg(cni_args, "K8S_POD_NAME");

	if (isempty(ns) || isempty(name))
		return false;
	*ret_ns = ns;
	*ret_name = name;
	*ret_uid = cni_arg(cni_args, "K8S_POD_UID");
	return true;
}

static int fail(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int r, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(ret_error, fmt, ap) < 0)
		*ret_error = NULL;
	va_end(ap);
	return r;
}

static int store_fail(EtcdClient *c, char **ret_error, int r, const char *what) {
	const char *t = etcd_client_last_error(c);

	return fail(ret_error, r, "%s: etcd: %s", what, !isempty(t) ? t : strerror(-r));
}

/* The result's first address of each family, without prefix length, as podIPs wants them. */
static json_t *pod_ips(const json_t *result) {
	json_t *out = json_array(), *x;
	bool seen4 = false, seen6 = false;
	size_t i;

	if (!out)
		return NULL;
	json_array_foreach(json_object_get(result, "ips"), i, x) {
		const char *a = json_string_value(json_object_get(x, "address"));
		_cleanup_free_ char *ip = a ? strndup(a, strcspn(a, "/")) : NULL;
		IpAddr addr;

		if (!ip || ip_addr_parse(ip, &addr) < 0)
			continue;
		if ((addr.family == AF_INET && seen4) || (addr.family == AF_INET6 && seen6))
			continue;
		if (addr.family == AF_INET)
			seen4 = true;
		else
			seen6 = true;
		json_array_append_new(out, json_pack("{s:s}", "ip", ip));
	}
	return out;
}

static char *node_name(const PodRecordOptions *o) {
	char host[256] = {};

	if (!isempty(o->node_name))
		return strdup(o->node_name);
	if (gethostname(host, sizeof(host) - 1) < 0)
		return NULL;
	/* the kubelet's default node name: the host name, lower case */
	for (char *p = host; *p; p++)
		*p = (char) tolower((unsigned char) *p);
	return strdup(host);
}

/* The record to store, from what is stored (or nothing). */
static char *record_build(const PodRecordOptions *o, const EtcdKv *existing, const char *ns, const char *name,
			  const char *uid, const char *container_id, const json_t *result, char **ret_error) {
	_cleanup_(json_decrefp) json_t *pod = NULL;
	_cleanup_free_ char *node = node_name(o);
	json_t *md, *labels, *ann, *spec, *ips, *status;
	char uid_buf[37], ts[21];
	_cleanup_(string_pool_freep) StringPool *pool = NULL;
	KubeObject *obj = NULL;
	DecodeError err = {};
	int r;

	if (!node)
		return NULL;
	if (existing->key)
		pod = json_loadb(existing->value, existing->value_size, 0, NULL);
	if (!json_is_object(pod) || !json_is_object(json_object_get(pod, "metadata"))) {
		json_decref(pod);
		pod = json_pack("{s:s, s:s, s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata");
		if (!pod)
			return NULL;
	}
	md = json_object_get(pod, "metadata");
	json_object_set_new(md, "name", json_string(name));
	json_object_set_new(md, "namespace", json_string(ns));
	if (!isempty(uid))
		json_object_set_new(md, "uid", json_string(uid));
	else if (!json_is_string(json_object_get(md, "uid"))) {
		if (object_uid_new(uid_buf) < 0)
			return NULL;
		json_object_set_new(md, "uid", json_string(uid_buf));
	}
	if (!json_is_string(json_object_get(md, "creationTimestamp"))) {
		object_timestamp_now(ts);
		json_object_set_new(md, "creationTimestamp", json_string(ts));
	}
	labels = json_object_get(md, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(md, "labels", labels);
	}
	for (char **l = o->labels; l && *l; l++) {
		const char *eq = strchr(*l, '=');
		_cleanup_free_ char *k = eq ? strndup(*l, (size_t) (eq - *l)) : NULL;

		if (!eq) {
			fail(ret_error, -EINVAL, "label \"%s\": expected KEY=VALUE", *l);
			return NULL;
		}
		if (!k || json_object_set_new(labels, k, json_string(eq + 1)) < 0)
			return NULL;
	}
	if (json_object_size(labels) == 0)
		json_object_del(md, "labels");
	ann = json_object_get(md, "annotations");
	if (!json_is_object(ann)) {
		ann = json_object();
		json_object_set_new(md, "annotations", ann);
	}
	json_object_set_new(ann, CONTAINER_ID_ANNOTATION, json_string(container_id));
	spec = json_object_get(pod, "spec");
	if (!json_is_object(spec)) {
		spec = json_object();
		json_object_set_new(pod, "spec", spec);
	}
	json_object_set_new(spec, "nodeName", json_string(node));
	ips = pod_ips(result);
	if (!ips)
		return NULL;
	status = json_pack("{s:s, s:o*, s:o}", "phase", "Running", "podIP",
			   json_array_size(ips) ? json_incref(json_object_get(json_array_get(ips, 0), "ip")) : NULL,
			   "podIPs", ips);
	if (!status || json_object_set_new(pod, "status", status) < 0)
		return NULL;

	/* What weftd would refuse is refused here, with its reason. */
	if (string_pool_new(&pool) < 0)
		return NULL;
	r = kube_object_decode(KUBE_KIND_POD, pod, pool, &obj, &err);
	if (r < 0) {
		fail(ret_error, r, "pod %s/%s: %s", ns, name, r == -EINVAL ? err.text : strerror(-r));
		return NULL;
	}
	kube_object_free(obj, pool);
	return json_dumps(pod, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

int pod_record_add(const PodRecordOptions *o, const json_t *cni_args, const char *container_id, const json_t *result,
		   char **ret_error) {
	_cleanup_(etcd_client_freep) EtcdClient *c = NULL;
	_cleanup_free_ char *key = NULL;
	const char *ns, *name, *uid;
	int r;

	*ret_error = NULL;
	if (!pod_record_identity(cni_args, &ns, &name, &uid))
		return 0;
	if (!dns_label_valid(ns) || !dns_subdomain_valid(name))
		return fail(ret_error, -EINVAL, "K8S_POD_NAMESPACE/K8S_POD_NAME \"%s/%s\" is not a valid pod", ns,
			    name);
	key = object_key(o->prefix, KUBE_KIND_POD, ns, name);
	if (!key)
		return -ENOMEM;
	r = etcd_client_new(o->endpoints, &c);
	if (r < 0)
		return fail(ret_error, r, "etcd endpoints \"%s\": %s", o->endpoints, strerror(-r));
	for (unsigned attempt = 0; attempt < 5; attempt++) {
		ObjectOp get = { .type = OBJECT_OP_GET, .key = key };
		_cleanup_free_ char *value = NULL;
		bool ok;

		r = object_store_txn(c, &get, 1, &ok, NULL);
		if (r < 0)
			return store_fail(c, ret_error, r, "reading the pod record");
		value = record_build(o, &get.kv, ns, name, uid, container_id, result, ret_error);
		if (!value) {
			etcd_kv_done(&get.kv);
			return *ret_error ? -EINVAL : -ENOMEM;
		}
		ObjectOp put = { .type = OBJECT_OP_PUT,
				 .key = key,
				 .value = value,
				 .compare = true,
				 .expect_mod = get.kv.mod_revision };
		etcd_kv_done(&get.kv);
		r = object_store_txn(c, &put, 1, &ok, NULL);
		if (r < 0)
			return store_fail(c, ret_error, r, "writing the pod record");
		if (ok)
			return 0;
	}
	return fail(ret_error, -EAGAIN, "pod record %s kept changing while being written", key);
}

int pod_record_del(const PodRecordOptions *o, const json_t *cni_args, const char *container_id, char **ret_error) {
	_cleanup_(etcd_client_freep) EtcdClient *c = NULL;
	_cleanup_free_ char *key = NULL;
	const char *ns, *name, *uid;
	int r;

	*ret_error = NULL;
	if (!pod_record_identity(cni_args, &ns, &name, &uid))
		return 0;
	if (!dns_label_valid(ns) || !dns_subdomain_valid(name))
		return 0; /* never recorded */
	key = object_key(o->prefix, KUBE_KIND_POD, ns, name);
	if (!key)
		return -ENOMEM;
	r = etcd_client_new(o->endpoints, &c);
	if (r < 0)
		return fail(ret_error, r, "etcd endpoints \"%s\": %s", o->endpoints, strerror(-r));
	for (unsigned attempt = 0; attempt < 5; attempt++) {
		ObjectOp get = { .type = OBJECT_OP_GET, .key = key };
		_cleanup_(json_decrefp) json_t *pod = NULL;
		const char *owner = NULL;
		bool ok;

		r = object_store_txn(c, &get, 1, &ok, NULL);
		if (r < 0)
			return store_fail(c, ret_error, r, "reading the pod record");
		if (!get.kv.key)
			return 0;
		pod = json_loadb(get.kv.value, get.kv.value_size, 0, NULL);
		(void) json_unpack(pod, "{s:{s:{s:s}}}", "metadata", "annotations", CONTAINER_ID_ANNOTATION, &owner);
		/* Recorded by another sandbox of the same pod since (a late DEL of the old one). */
		if (owner && !streq(owner, container_id)) {
			etcd_kv_done(&get.kv);
			return 0;
		}
		ObjectOp del = {
			.type = OBJECT_OP_DELETE, .key = key, .compare = true, .expect_mod = get.kv.mod_revision
		};
		etcd_kv_done(&get.kv);
		r = object_store_txn(c, &del, 1, &ok, NULL);
		if (r < 0)
			return store_fail(c, ret_error, r, "deleting the pod record");
		if (ok)
			return 0;
	}
	return fail(ret_error, -EAGAIN, "pod record %s kept changing while being deleted", key);
}
