/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deploy/kubernetes/weft.yaml and weft-etcd.yaml checked against the code, since no cluster can
 * apply them here: every document parses (libyaml) and the expected kinds are there; the RBAC
 * matches the datastore; net-conf.json parses with weftd's own parser; every --flag the DaemonSet
 * passes to weftd exists in `weftd --help` (skipped if weftd is not built); every directory passed
 * is a mount (hostPath for directories, identity-mapped where the path ends up in the conflist
 * the host-side plugin reads); the init container runs install-cni into the directory weftd is
 * told is the CNI bin dir; the Containerfile puts the plugins where install-cni reads them.
 * No privileges.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <yaml.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/network-config.h"

#define MAX_DOCS 16

typedef struct Manifest {
	const char *file;          /* relative to the repository top */
	bool kubernetes_datastore; /* weft.yaml; weft-etcd.yaml otherwise */
	yaml_document_t docs[MAX_DOCS];
	size_t n_docs;
} Manifest;

static Manifest manifests[] = {
	{ .file = "deploy/kubernetes/weft.yaml", .kubernetes_datastore = true },
	{ .file = "deploy/kubernetes/weft-etcd.yaml", .kubernetes_datastore = false },
};

static char top[PATH_MAX];
static char *weftd_path;

/* ---- locating the tree: cwd (tools/run-tests runs from the top), else from our own path
 * (BUILD/test/test-deploy-manifests -> BUILD/.. is the top) ---- */

static bool is_top(const char *dir) {
	_cleanup_free_ char *p = strdup_printf("%s/deploy/kubernetes/weft.yaml", dir);

	return p && access(p, R_OK) == 0;
}

/* Cuts the last path component off in place; false if there is none. */
static bool path_up(char *p) {
	char *s = strrchr(p, '/');

	if (!s || s == p)
		return false;
	*s = 0;
	return true;
}

static void find_top(void) {
	char exe[PATH_MAX];
	ssize_t n;

	snprintf(top, sizeof(top), ".");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		/* BUILD/test/test-deploy-manifests: check against weftd of the same build. */
		if (path_up(exe) && path_up(exe)) {
			weftd_path = strdup_printf("%s/bin/weftd", exe);
			if (!is_top(top) && path_up(exe) && is_top(exe))
				snprintf(top, sizeof(top), "%s", exe);
		}
	}
	if (getenv("WEFT_TOP") && is_top(getenv("WEFT_TOP")))
		snprintf(top, sizeof(top), "%s", getenv("WEFT_TOP"));
}

/* ---- a small view over libyaml's document API ---- */

static yaml_node_t *node_at(yaml_document_t *d, int idx) {
	return yaml_document_get_node(d, idx);
}

static const char *scalar(const yaml_node_t *n) {
	return n && n->type == YAML_SCALAR_NODE ? (const char *) n->data.scalar.value : NULL;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *n, const char *key) {
	if (!n || n->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
		if (streq_ptr(scalar(node_at(d, p->key)), key))
			return node_at(d, p->value);
	return NULL;
}

/* "spec.template.spec" */
static yaml_node_t *path_get(yaml_document_t *d, yaml_node_t *n, const char *path) {
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && n; k = strtok_r(NULL, ".", &save))
		n = map_get(d, n, k);
	return n;
}

static const char *path_str(yaml_document_t *d, yaml_node_t *n, const char *path) {
	return scalar(path_get(d, n, path));
}

static size_t seq_len(const yaml_node_t *n) {
	return n && n->type == YAML_SEQUENCE_NODE ? (size_t) (n->data.sequence.items.top - n->data.sequence.items.start)
						  : 0;
}

static yaml_node_t *seq_at(yaml_document_t *d, yaml_node_t *n, size_t i) {
	return i < seq_len(n) ? node_at(d, n->data.sequence.items.start[i]) : NULL;
}

/* Element of a sequence of mappings whose `key` is `value` (containers by name, volumes, ...). */
static yaml_node_t *seq_find(yaml_document_t *d, yaml_node_t *seq, const char *key, const char *value) {
	for (size_t i = 0; i < seq_len(seq); i++)
		if (streq_ptr(path_str(d, seq_at(d, seq, i), key), value))
			return seq_at(d, seq, i);
	return NULL;
}

static bool seq_has_str(yaml_document_t *d, yaml_node_t *seq, const char *value) {
	for (size_t i = 0; i < seq_len(seq); i++)
		if (streq_ptr(scalar(seq_at(d, seq, i)), value))
			return true;
	return false;
}

static yaml_node_t *root(yaml_document_t *d) {
	return yaml_document_get_root_node(d);
}

/* The first document of `kind` (and `name` if non-NULL). */
static yaml_document_t *find_doc(Manifest *m, const char *kind, const char *name) {
	for (size_t i = 0; i < m->n_docs; i++) {
		yaml_document_t *d = &m->docs[i];

		if (streq_ptr(path_str(d, root(d), "kind"), kind) &&
		    (!name || streq_ptr(path_str(d, root(d), "metadata.name"), name)))
			return d;
	}
	return NULL;
}

/* ---- loading ---- */

static int group_setup(void **state) {
	find_top();
	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		_cleanup_free_ char *path = strdup_printf("%s/%s", top, m->file);
		yaml_parser_t p;
		FILE *f;

		if (!path)
			return -1;
		f = fopen(path, "re");
		if (!f) {
			fprintf(stderr, "cannot open %s: %m (run from the repository top or set WEFT_TOP)\n", path);
			return -1;
		}
		yaml_parser_initialize(&p);
		yaml_parser_set_input_file(&p, f);
		for (;;) {
			yaml_document_t *d = &m->docs[m->n_docs];

			if (!yaml_parser_load(&p, d)) {
				fprintf(stderr, "%s: YAML error at line %zu: %s\n", path, p.problem_mark.line + 1,
					p.problem ?: "?");
				yaml_parser_delete(&p);
				fclose(f);
				return -1;
			}
			if (!root(d)) { /* end of stream */
				yaml_document_delete(d);
				break;
			}
			if (++m->n_docs == MAX_DOCS) {
				fprintf(stderr, "%s: more than %d documents\n", path, MAX_DOCS);
				break;
			}
		}
		yaml_parser_delete(&p);
		fclose(f);
	}
	return 0;
}

static int group_teardown(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(manifests); i++)
		for (size_t j = 0; j < manifests[i].n_docs; j++)
			yaml_document_delete(&manifests[i].docs[j]);
	weftd_path = mfree(weftd_path);
	return 0;
}

/* The DaemonSet's pod spec and its weftd container. */
typedef struct Pod {
	yaml_document_t *d;
	yaml_node_t *spec, *weftd, *init;
} Pod;

static Pod pod_of(Manifest *m) {
	yaml_document_t *d = find_doc(m, "DaemonSet", "weft");
	Pod p = { .d = d };

	assert_non_null(d);
	p.spec = path_get(d, root(d), "spec.template.spec");
	assert_non_null(p.spec);
	assert_int_equal(seq_len(map_get(d, p.spec, "containers")), 1);
	p.weftd = seq_at(d, map_get(d, p.spec, "containers"), 0);
	assert_int_equal(seq_len(map_get(d, p.spec, "initContainers")), 1);
	p.init = seq_at(d, map_get(d, p.spec, "initContainers"), 0);
	return p;
}

/* command + args of a container as one NULL-terminated vector (borrowed strings). */
static const char **container_argv(yaml_document_t *d, yaml_node_t *c) {
	yaml_node_t *cmd = map_get(d, c, "command"), *args = map_get(d, c, "args");
	size_t n = seq_len(cmd) + seq_len(args), k = 0;
	const char **v = calloc(n + 1, sizeof(char *));

	assert_non_null(v);
	for (size_t i = 0; i < seq_len(cmd); i++)
		v[k++] = scalar(seq_at(d, cmd, i));
	for (size_t i = 0; i < seq_len(args); i++)
		v[k++] = scalar(seq_at(d, args, i));
	for (size_t i = 0; i < k; i++)
		assert_non_null(v[i]); /* every element a scalar */
	return v;
}

/* The value of --name in argv ("--name V" or "--name=V"), NULL if absent. */
static const char *arg_value(const char **argv, const char *name) {
	size_t l = strlen(name);

	for (size_t i = 0; argv[i]; i++) {
		if (!strncmp(argv[i], name, l) && argv[i][l] == '=')
			return argv[i] + l + 1;
		if (streq(argv[i], name))
			return argv[i + 1];
	}
	return NULL;
}

/* The volumeMount of container c covering `path` (longest mountPath that is a path prefix). */
static yaml_node_t *mount_for(yaml_document_t *d, yaml_node_t *c, const char *path) {
	yaml_node_t *mounts = map_get(d, c, "volumeMounts"), *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; i < seq_len(mounts); i++) {
		yaml_node_t *vm = seq_at(d, mounts, i);
		const char *mp = path_str(d, vm, "mountPath");
		size_t l = mp ? strlen(mp) : 0;

		if (!mp || strncmp(path, mp, l) != 0 || (path[l] != 0 && path[l] != '/'))
			continue;
		if (l >= best_len) {
			best = vm;
			best_len = l;
		}
	}
	return best;
}

static yaml_node_t *volume_of(Pod *p, yaml_node_t *mount) {
	return seq_find(p->d, map_get(p->d, p->spec, "volumes"), "name", path_str(p->d, mount, "name"));
}

/* ---- tests ---- */

static void test_kinds(void **state) {
	static const char *const kinds[] = { "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
					     "DaemonSet" };

	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		yaml_document_t *crb, *sa, *cr;

		printf("# %s: %zu documents\n", m->file, m->n_docs);
		/* + the LoadBalancer Lease's Role and RoleBinding with the kubernetes datastore */
		assert_int_equal(m->n_docs, ELEMENTSOF(kinds) + (m->kubernetes_datastore ? 2 : 0));
		for (size_t k = 0; k < ELEMENTSOF(kinds); k++)
			if (!find_doc(m, kinds[k], NULL))
				fail_msg("%s: no %s", m->file, kinds[k]);
		for (size_t j = 0; j < m->n_docs; j++) {
			yaml_document_t *d = &m->docs[j];
			const char *kind = path_str(d, root(d), "kind");

			assert_non_null(path_str(d, root(d), "apiVersion"));
			assert_non_null(path_str(d, root(d), "metadata.name"));
			/* Namespaced objects live in kube-system (system-node-critical needs it too). */
			if (!streq(kind, "ClusterRole") && !streq(kind, "ClusterRoleBinding") && !streq(kind, "Role") &&
			    !streq(kind, "RoleBinding"))
				assert_string_equal(path_str(d, root(d), "metadata.namespace") ?: "(none)",
						    "kube-system");
		}
		sa = find_doc(m, "ServiceAccount", NULL);
		cr = find_doc(m, "ClusterRole", NULL);
		crb = find_doc(m, "ClusterRoleBinding", NULL);
		assert_string_equal(path_str(crb, root(crb), "roleRef.kind"), "ClusterRole");
		assert_string_equal(path_str(crb, root(crb), "roleRef.name"), path_str(cr, root(cr), "metadata.name"));
		assert_non_null(seq_find(crb, map_get(crb, root(crb), "subjects"), "name",
					 path_str(sa, root(sa), "metadata.name")));
		{
			Pod p = pod_of(m);
			assert_string_equal(path_str(p.d, p.spec, "serviceAccountName"),
					    path_str(sa, root(sa), "metadata.name"));
		}
	}
}

/* The rules granting `verb` on `resource` in API group `group`. */
static bool rbac_allows_group(yaml_document_t *d, const char *group, const char *resource, const char *verb) {
	yaml_node_t *rules = d ? map_get(d, root(d), "rules") : NULL;

	for (size_t i = 0; i < seq_len(rules); i++) {
		yaml_node_t *r = seq_at(d, rules, i);

		if (seq_has_str(d, map_get(d, r, "apiGroups"), group) &&
		    (seq_has_str(d, map_get(d, r, "resources"), resource) ||
		     seq_has_str(d, map_get(d, r, "resources"), "*")) &&
		    (seq_has_str(d, map_get(d, r, "verbs"), verb) || seq_has_str(d, map_get(d, r, "verbs"), "*")))
			return true;
	}
	return false;
}

/* The same in the core API group. */
static bool rbac_allows(yaml_document_t *d, const char *resource, const char *verb) {
	return rbac_allows_group(d, "", resource, verb);
}

static void test_rbac(void **state) {
	static const char *const verbs[] = { "get", "list", "watch", "patch", "update", "create", "delete" };

	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		yaml_document_t *cr = find_doc(m, "ClusterRole", NULL);

		for (size_t v = 0; v < ELEMENTSOF(verbs); v++) {
			/* kubernetes datastore: get/list/watch/patch on nodes; etcd: only get (least privilege). */
			bool want = m->kubernetes_datastore ? v < 4 : v == 0;
			if (rbac_allows(cr, "nodes", verbs[v]) != want)
				fail_msg("%s: nodes %s is %s", m->file, verbs[v],
					 want ? "missing" : "granted but not needed");
		}
		assert_true(rbac_allows(cr, "nodes/status", "patch") == m->kubernetes_datastore);
		/* LoadBalancer addresses in Kubernetes mode: the assigner writes Service status, and is
		 * elected through a Lease in its own namespace (a Role there, not cluster-wide); the L2
		 * members hold a Lease each there and list them (emptied on a clean stop: no delete). */
		assert_true(rbac_allows(cr, "services/status", "update") == m->kubernetes_datastore);
		assert_false(rbac_allows_group(cr, "coordination.k8s.io", "leases", "update"));
		assert_false(rbac_allows_group(cr, "coordination.k8s.io", "leases", "list"));
		if (m->kubernetes_datastore) {
			yaml_document_t *role = find_doc(m, "Role", NULL), *rb = find_doc(m, "RoleBinding", NULL);
			static const char *const lease_verbs[] = { "get", "list", "create", "update" };

			assert_non_null(role);
			assert_non_null(rb);
			for (size_t v = 0; v < ELEMENTSOF(lease_verbs); v++)
				if (!rbac_allows_group(role, "coordination.k8s.io", "leases", lease_verbs[v]))
					fail_msg("%s: leases %s is missing", m->file, lease_verbs[v]);
			assert_false(rbac_allows_group(role, "coordination.k8s.io", "leases", "delete"));
			assert_string_equal(path_str(rb, root(rb), "roleRef.kind"), "Role");
			assert_string_equal(path_str(rb, root(rb), "roleRef.name"),
					    path_str(role, root(role), "metadata.name"));
		} else
			assert_null(find_doc(m, "Role", NULL));
		assert_false(rbac_allows(cr, "secrets", "get"));
		assert_false(rbac_allows(cr, "pods", "delete"));
	}
}

static void test_net_conf(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		yaml_document_t *d = find_doc(m, "ConfigMap", "weft-cfg");
		_cleanup_(network_config_freep) NetworkConfig *cfg = NULL;
		_cleanup_free_ char *err = NULL;
		const char *json;
		char buf[IP_PREFIX_STRLEN];

		assert_non_null(d);
		/* (the key has a dot: no path_get) */
		json = scalar(map_get(d, path_get(d, root(d), "data"), "net-conf.json"));
		assert_non_null(json);
		if (network_config_parse(json, &cfg, &err) < 0)
			fail_msg("%s: net-conf.json: %s", m->file, err);
		assert_string_equal(ip_prefix_to_string(&cfg->network, buf), "10.244.0.0/16");
		assert_int_equal(cfg->subnet_len, 24);
		assert_int_equal(cfg->backend.type, NETWORK_BACKEND_VXLAN);
		assert_int_equal(cfg->backend.vni, 1);
		assert_int_equal(cfg->backend.port, 4789);
		assert_true(cfg->masquerade);
	}
}

static void test_daemonset(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		Pod p = pod_of(m);
		yaml_document_t *d = p.d;
		yaml_node_t *tol = map_get(d, p.spec, "tolerations"), *caps, *env;
		_cleanup_free_ const char **argv = container_argv(d, p.weftd);
		const char *listen, *port;
		bool all_taints = false;

		assert_string_equal(path_str(d, p.spec, "hostNetwork"), "true");
		assert_string_equal(path_str(d, p.spec, "priorityClassName"), "system-node-critical");
		/* A toleration without key and with operator Exists matches every taint. */
		for (size_t t = 0; t < seq_len(tol); t++) {
			yaml_node_t *x = seq_at(d, tol, t);
			if (streq_ptr(path_str(d, x, "operator"), "Exists") && !map_get(d, x, "key") &&
			    !map_get(d, x, "effect"))
				all_taints = true;
		}
		assert_true(all_taints);
		assert_non_null(path_str(d, root(d), "spec.selector.matchLabels.app"));
		assert_string_equal(path_str(d, root(d), "spec.selector.matchLabels.app"),
				    path_str(d, root(d), "spec.template.metadata.labels.app") ?: "(none)");

		assert_string_equal(argv[0], "weftd");
		caps = path_get(d, p.weftd, "securityContext.capabilities.add");
		assert_true(seq_has_str(d, caps, "NET_ADMIN"));
		assert_true(seq_has_str(d, caps, "NET_RAW"));
		assert_true(seq_has_str(d, caps, "SYS_ADMIN"));
		assert_non_null(path_get(d, p.weftd, "resources.requests.cpu"));
		assert_non_null(path_get(d, p.weftd, "resources.requests.memory"));
		assert_non_null(path_get(d, p.init, "resources.requests"));

		/* Probes hit /healthz on the port weftd listens on, on all addresses (the kubelet
		 * probes the node's IP, not 127.0.0.1). */
		listen = arg_value(argv, "--listen");
		assert_non_null(listen);
		assert_true(startswith(listen, "0.0.0.0:") || startswith(listen, "[::]:"));
		port = strrchr(listen, ':') + 1;
		for (const char *const *probe = (const char *const[]) { "readinessProbe", "livenessProbe", NULL };
		     *probe; probe++) {
			yaml_node_t *pr = map_get(d, p.weftd, *probe);
			if (!pr)
				fail_msg("%s: no %s", m->file, *probe);
			assert_string_equal(path_str(d, pr, "httpGet.path"), "/healthz");
			assert_string_equal(path_str(d, pr, "httpGet.port"), port);
		}

		/* NODE_NAME from the downward API; every $(VAR) in the args is defined. */
		env = map_get(d, p.weftd, "env");
		assert_string_equal(path_str(d, seq_find(d, env, "name", "NODE_NAME"), "valueFrom.fieldRef.fieldPath"),
				    "spec.nodeName");
		assert_string_equal(arg_value(argv, "--node-name"), "$(NODE_NAME)");
		for (size_t a = 0; argv[a]; a++) {
			const char *s = strstr(argv[a], "$(");
			char var[64];
			yaml_node_t *e;

			if (!s)
				continue;
			assert_true(sscanf(s, "$(%63[A-Z0-9_])", var) == 1);
			e = seq_find(d, env, "name", var);
			if (!e)
				fail_msg("%s: %s uses $(%s), not in env", m->file, argv[a], var);
			/* A ConfigMap reference must name a key that exists. */
			if (path_get(d, e, "valueFrom.configMapKeyRef")) {
				const char *cm_name = path_str(d, e, "valueFrom.configMapKeyRef.name");
				const char *key = path_str(d, e, "valueFrom.configMapKeyRef.key");
				yaml_document_t *cm = cm_name ? find_doc(m, "ConfigMap", cm_name) : NULL;

				if (!cm || !key || !map_get(cm, path_get(cm, root(cm), "data"), key))
					fail_msg("%s: $(%s) refers to ConfigMap %s key %s, not in the file", m->file,
						 var, cm_name ?: "?", key ?: "?");
			}
		}

		if (m->kubernetes_datastore) {
			assert_string_equal(arg_value(argv, "--datastore") ?: "(none)", "kubernetes");
			assert_null(arg_value(argv, "--etcd-endpoints"));
		} else {
			assert_string_equal(arg_value(argv, "--etcd-endpoints") ?: "(none)", "$(ETCD_ENDPOINTS)");
			assert_true(!arg_value(argv, "--datastore") || streq(arg_value(argv, "--datastore"), "etcd"));
		}
	}
}

/* Every --flag given to weftd appears in `weftd --help`. */
static void test_weftd_flags(void **state) {
	_cleanup_free_ char *help = NULL, *cmd = NULL;
	size_t size = 0;
	FILE *f;
	int missing = 0;

	if (!weftd_path || access(weftd_path, X_OK) < 0) {
		free(weftd_path);
		weftd_path = strdup_printf("%s/build/bin/weftd", top);
		assert_non_null(weftd_path);
	}
	if (access(weftd_path, X_OK) < 0) {
		printf("# SKIP: weftd not built (%s): flags not checked against weftd --help\n", weftd_path);
		skip();
	}
	cmd = strdup_printf("'%s' --help 2>&1", weftd_path);
	assert_non_null(cmd);
	f = popen(cmd, "re");
	assert_non_null(f);
	assert_int_equal(read_full_fd(fileno(f), &help, &size), 0);
	assert_int_equal(pclose(f), 0);
	printf("# checking against %s --help\n", weftd_path);

	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		Pod p = pod_of(m);
		_cleanup_free_ const char **argv = container_argv(p.d, p.weftd);

		for (size_t a = 1; argv[a]; a++) {
			char flag[64];
			const char *h;
			bool found = false;

			if (!startswith(argv[a], "--"))
				continue;
			snprintf(flag, sizeof(flag), "%.*s", (int) strcspn(argv[a], "="), argv[a]);
			/* "--flag" as a whole word: followed by space, '=', ']' or end of line. */
			for (h = help; (h = strstr(h, flag)); h += strlen(flag))
				if (strchr(" =]\n\t", h[strlen(flag)])) {
					found = true;
					break;
				}
			if (!found) {
				printf("# %s: weftd has no %s (not in %s --help)\n", m->file, flag, weftd_path);
				missing++;
			}
		}
	}
	if (missing)
		fail_msg("%d flag(s) in the manifests that weftd does not accept", missing);
}

/* Options whose value is a directory on the node: must be a hostPath mount. */
static bool is_dir_option(const char *opt) {
	return endswith(opt, "-dir");
}

/* Options whose value is a file or directory the container reads or writes. (Not every value
 * starting with '/' is a path: --etcd-prefix /weft/network is a key prefix.) */
static bool is_path_option(const char *opt) {
	return is_dir_option(opt) || streq(opt, "--net-config") || streq(opt, "--kubeconfig");
}

/* Paths written into the conflist (read by the weft plugin on the host, outside the pod): the
 * container path must be the host path. */
static bool must_be_identity(const char *opt) {
	return streq(opt, "--run-dir") || streq(opt, "--ipam-data-dir");
}

static void test_mounts_cover_args(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		Pod p = pod_of(m);
		_cleanup_free_ const char **argv = container_argv(p.d, p.weftd);
		size_t n_paths = 0;

		for (size_t a = 1; argv[a]; a++) {
			char opt[64];
			const char *val;
			yaml_node_t *vm, *vol;

			if (!startswith(argv[a], "--"))
				continue;
			snprintf(opt, sizeof(opt), "%.*s", (int) strcspn(argv[a], "="), argv[a]);
			val = strchr(argv[a], '=') ? strchr(argv[a], '=') + 1 : argv[a + 1];
			if (!is_path_option(opt))
				continue;
			if (!val || val[0] != '/')
				fail_msg("%s: %s %s: not an absolute path", m->file, opt, val ?: "(none)");
			n_paths++;
			vm = mount_for(p.d, p.weftd, val);
			if (!vm)
				fail_msg("%s: %s %s is not under any volumeMount of weftd", m->file, opt, val);
			vol = volume_of(&p, vm);
			if (!vol)
				fail_msg("%s: volumeMount %s has no volume", m->file, path_str(p.d, vm, "name"));
			if (is_dir_option(opt)) {
				const char *hp = path_str(p.d, vol, "hostPath.path");
				if (!hp)
					fail_msg("%s: %s %s: volume %s is not a hostPath", m->file, opt, val,
						 path_str(p.d, vol, "name"));
				if (streq_ptr(path_str(p.d, vm, "readOnly"), "true"))
					fail_msg("%s: %s %s is mounted read-only", m->file, opt, val);
				if (must_be_identity(opt) && !streq(hp, path_str(p.d, vm, "mountPath")))
					fail_msg("%s: %s %s goes into the conflist the host reads, but is mounted from %s at %s",
						 m->file, opt, val, hp, path_str(p.d, vm, "mountPath"));
			} else if (streq(opt, "--net-config")) {
				/* A file from the ConfigMap: the key is the file name. */
				const char *cm_name = path_str(p.d, vol, "configMap.name");
				yaml_document_t *cm = cm_name ? find_doc(m, "ConfigMap", cm_name) : NULL;
				if (!cm || !map_get(cm, path_get(cm, root(cm), "data"), strrchr(val, '/') + 1))
					fail_msg("%s: --net-config %s is not a key of a ConfigMap in the file", m->file,
						 val);
			}
		}
		/* conf dir, bin dir, run dir, state dir, ipam data dir, net config */
		assert_true(n_paths >= 6);
		/* Directories every node needs even if not passed explicitly. */
		assert_non_null(mount_for(p.d, p.weftd, "/lib/modules"));
		assert_non_null(mount_for(p.d, p.weftd, "/var/lib/cni"));
	}
}

static void test_init_container(void **state) {
	for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
		Manifest *m = &manifests[i];
		Pod p = pod_of(m);
		_cleanup_free_ const char **iargv = container_argv(p.d, p.init);
		_cleanup_free_ const char **argv = container_argv(p.d, p.weftd);
		const char *dest = arg_value(iargv, "--dest"), *bin_dir = arg_value(argv, "--cni-bin-dir");
		yaml_node_t *imount, *mount;
		_cleanup_free_ char *containerfile = NULL, *path = NULL, *want = NULL;

		assert_string_equal(iargv[0], "weft");
		assert_string_equal(iargv[1], "install-cni");
		assert_string_equal(arg_value(iargv, "--src") ?: "(none)", "/opt/weft/bin");
		assert_non_null(dest);
		assert_non_null(bin_dir);
		assert_string_equal(dest, bin_dir);
		/* ... and the same host directory behind it. */
		imount = mount_for(p.d, p.init, dest);
		mount = mount_for(p.d, p.weftd, bin_dir);
		assert_non_null(imount);
		assert_non_null(mount);
		assert_string_equal(path_str(p.d, imount, "mountPath"), path_str(p.d, mount, "mountPath"));
		assert_string_equal(path_str(p.d, volume_of(&p, imount), "hostPath.path"), "/opt/cni/bin");
		assert_false(streq_ptr(path_str(p.d, imount, "readOnly"), "true"));
		assert_string_equal(path_str(p.d, p.init, "image"), path_str(p.d, p.weftd, "image"));
		/* The conflist goes to the host's /etc/cni/net.d. */
		assert_string_equal(path_str(p.d,
					     volume_of(&p, mount_for(p.d, p.weftd, arg_value(argv, "--cni-conf-dir"))),
					     "hostPath.path"),
				    "/etc/cni/net.d");

		/* The image puts the plugins where --src reads them: deploy/Containerfile copies the
		 * root filesystem deploy/image-rootfs.sh stages (test/runtime/test-image.sh builds and
		 * runs it). */
		path = strdup_printf("%s/deploy/image-rootfs.sh", top);
		assert_non_null(path);
		assert_int_equal(read_full_file(path, &containerfile, NULL), 0);
		want = strdup_printf("\"$root%s/", arg_value(iargv, "--src"));
		assert_non_null(want);
		assert_non_null(strstr(containerfile, want));
		assert_non_null(strstr(containerfile, "\"$root/usr/bin/weftd\""));
		assert_non_null(strstr(containerfile, "\"$root/usr/bin/weft\""));
	}
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),          cmocka_unit_test(test_rbac),
		cmocka_unit_test(test_net_conf),       cmocka_unit_test(test_daemonset),
		cmocka_unit_test(test_weftd_flags),    cmocka_unit_test(test_mounts_cover_args),
		cmocka_unit_test(test_init_container),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
