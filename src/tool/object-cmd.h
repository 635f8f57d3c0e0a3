/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weft apply / delete / get: the cluster's objects in etcd (object-store.h), with kubectl's
 * command line and output, for clusters without a Kubernetes API server (and the demo).
 *
 *   weft apply -f FILE|-                 YAML or JSON, multi-document, kind: List; every document is
 *                                        validated first (as weftd would), then written at once
 *   weft delete -f FILE|- | KIND NAME... [--ignore-not-found]
 *   weft get KIND [NAME...] [-n NS | -A] [-o json|name] [--show-labels]
 *
 * Common: --etcd-endpoints URLS (WEFT_ETCD_ENDPOINTS, default http://127.0.0.1:2379),
 * --etcd-prefix PREFIX (WEFT_ETCD_PREFIX, default /weft/network), -n NS (default "default").
 */

#include "shared/kube/kube-objects.h"

int object_apply_main(int argc, char *argv[]);
int object_delete_main(int argc, char *argv[]);
int object_get_main(int argc, char *argv[]);

/* Kinds by any name kubectl accepts: "po", "pod", "pods", "Pod", "netpol", "networkpolicy.networking.k8s.io" … */
int object_kind_from_name(const char *s, KubeKind *ret);
