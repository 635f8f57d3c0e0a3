/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What the decoders of kube-objects.c and the per-kind files (kube-node.c, kube-namespace.c,
 * kube-pod.c, kube-networkpolicy.c, kube-service.c, kube-endpointslice.c) share: the JSON helpers,
 * the metadata every kind has, and each kind's decode/equal/free. Not for use outside src/shared/kube/.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/kube/kube-objects.h"

#define OBJECT_FLAG_BLOCK 0x01 /* one allocation: arrays and name live inside the object */

/* ---- JSON helpers ---- */

void ko_pathf(char *buf, size_t n, const char *fmt, ...) _printf_(3, 4);
const json_t *ko_jget(const json_t *j, const char *key);
int ko_jstr(const json_t *j, const char *key, const char **ret);
int ko_jarr(const json_t *j, const char *key, const json_t **ret);
size_t ko_jlen(const json_t *a);
int ko_jbool(const json_t *j, const char *key, bool dflt, bool *ret);
int ko_jint(const json_t *j, const char *key, long long min, long long max, long long dflt, long long *ret);
int ko_parse_protocol(const json_t *j, const char *path, uint8_t *ret, DecodeError *err);
bool ko_port_name_valid(const char *s);
int ko_parse_port_ref(const json_t *v, const char *path, StringPool *pool, KubePortRef *ret, DecodeError *err);
int ko_parse_ip(const json_t *v, const char *path, IpAddr *ret, DecodeError *err);
bool ko_ip_in(const IpAddr *v, size_t n, const IpAddr *a);
int ko_parse_ip_array(const json_t *a, const char *path, const char *member, IpAddr **ret, size_t *ret_n,
		      DecodeError *err);
bool ko_ip_arrays_equal(const IpAddr *a, const IpAddr *b, size_t n);

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
typedef bool (*NameValidFn)(const char *s);

void ko_meta_done(Meta *m);
int ko_meta_parse(const json_t *j, bool namespaced, NameValidFn name_valid, StringPool *pool, Meta *ret,
		  DecodeError *err);
int ko_meta_move(Meta *m, KubeKind kind, KubeObject *o);
bool ko_meta_equal(const KubeObject *a, const KubeObject *b);
void ko_meta_free(KubeObject *o, StringPool *pool);

/* kube-node.c */
void ko_node_free(KubeNode *n);
int ko_node_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);
bool ko_node_equal(const KubeNode *a, const KubeNode *b);

/* kube-namespace.c */
int ko_namespace_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);

/* kube-pod.c */
void ko_ports_unref(KubeContainerPort *p, size_t n, StringPool *pool);
int ko_pod_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);
bool ko_pod_equal(const KubePod *a, const KubePod *b);

/* kube-networkpolicy.c */
void ko_policy_free(KubeNetworkPolicy *p, StringPool *pool);
int ko_policy_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);
bool ko_policy_equal(const KubeNetworkPolicy *a, const KubeNetworkPolicy *b);

/* kube-service.c */
void ko_service_free(KubeService *s, StringPool *pool);
int ko_service_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);
bool ko_service_equal(const KubeService *a, const KubeService *b);

/* kube-endpointslice.c */
void ko_slice_free(KubeEndpointSlice *s, StringPool *pool);
int ko_slice_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);
bool ko_slice_equal(const KubeEndpointSlice *a, const KubeEndpointSlice *b);
