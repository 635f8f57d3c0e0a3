/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file (parsed with
 * libyaml: current-context -> context -> cluster + user), or the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT + /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}).
 *
 * Supported: cluster server, certificate-authority(-data), insecure-skip-tls-verify; user token,
 * tokenFile, client-certificate(-data) + client-key(-data). Not supported (clear error): exec and
 * auth-provider credential plugins, username/password. Relative file paths are relative to the
 * kubeconfig's directory (as kubectl does).
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

typedef struct KubeConfig {
	char *source;  /* the kubeconfig path, or "in-cluster service account" (for messages) */
	char *context; /* names from the kubeconfig (NULL in-cluster) */
	char *cluster_name;
	char *user_name;

	char *server;  /* "https://host:port" (no trailing '/') */
	char *ca_file; /* PEM bundle; or ca_data (decoded certificate-authority-data) */
	char *ca_data;
	size_t ca_size;
	bool insecure_skip_tls_verify;

	char *token; /* bearer token; or token_file, re-read per request (tokens rotate) */
	char *token_file;
	char *cert_file; /* client certificate (PEM); or cert_data */
	char *cert_data;
	size_t cert_size;
	char *key_file; /* its key (PEM); or key_data */
	char *key_data;
	size_t key_size;
} KubeConfig;

KubeConfig *kubeconfig_free(KubeConfig *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeConfig *, kubeconfig_free);

/*
 * Parses a kubeconfig file. On failure returns a negative errno and *ret_error (malloc'ed) names
 * the file and the key at fault: "/root/.kube/config: context \"dev\" (current-context) not found
 * in contexts".
 */
int kubeconfig_load(const char *path, KubeConfig **ret, char **ret_error);

/*
 * The in-cluster config: server from $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, token file
 * and CA from sa_dir (NULL = KUBE_SA_DIR). Errors as above.
 */
int kubeconfig_load_in_cluster(const char *sa_dir, KubeConfig **ret, char **ret_error);

/*
 * A deep copy of k (what the file said, nothing is read again): for a second client that talks
 * with the same credentials, so one kubeconfig is loaded once. 0 or -ENOMEM.
 */
int kubeconfig_copy(const KubeConfig *k, KubeConfig **ret);

/* The bearer token to send now (token, or the current contents of token_file, trimmed); NULL with
 * *ret = NULL if the config has none. */
int kubeconfig_get_token(const KubeConfig *k, char **ret);
