/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Pod records for clusters without Kubernetes (etcd mode): what the kubelet does with
 * Pod.status.podIPs after the CNI ADD, `weft cni add` does when it is given an etcd
 * (--etcd-endpoints / WEFT_ETCD_ENDPOINTS) and the pod's identity in CNI_ARGS (K8S_POD_NAMESPACE,
 * K8S_POD_NAME, optionally K8S_POD_UID, as every runtime passes them):
 *
 *   <prefix>/objects/pods/<ns>/<name> = Pod {metadata: name, namespace, uid, labels (--label k=v,
 *     WEFT_POD_LABELS "k=v,k=v"; merged over an existing object's), annotations
 *     weft.dev/container-id}, spec.nodeName (--node-name, WEFT_NODE_NAME, else the host name),
 *     status {phase: Running, podIP, podIPs: the result's first address of each family}}
 *
 * An object applied before (weft apply of the Pod's YAML) keeps its spec and gets nodeName and
 * status. DEL removes the record unless another sandbox (container ID) has recorded the pod since.
 */

#include <jansson.h>
#include <stdbool.h>

typedef struct PodRecordOptions {
	const char *endpoints; /* NULL: no recording */
	const char *prefix;
	const char *node_name; /* NULL: the host name */
	char **labels;         /* "k=v" strings */
} PodRecordOptions;

/* The pod's namespace and name from CNI_ARGS ([[k, v], ...]); false if either is missing. */
bool pod_record_identity(const json_t *cni_args, const char **ret_ns, const char **ret_name, const char **ret_uid);

/*
 * Records the pod after a successful ADD. 0 if recorded, -errno with *ret_error (malloc'ed) naming
 * what failed otherwise (-EINVAL: the record would be refused, e.g. a bad label; others: etcd).
 */
int pod_record_add(const PodRecordOptions *o, const json_t *cni_args, const char *container_id, const json_t *result,
		   char **ret_error);
/* Removes the record at DEL; a missing record (or one of another sandbox) is success. */
int pod_record_del(const PodRecordOptions *o, const json_t *cni_args, const char *container_id, char **ret_error);
