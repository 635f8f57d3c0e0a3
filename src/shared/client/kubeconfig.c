/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "basic/base64.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/client/kubeconfig.h"

KubeConfig *kubeconfig_free(KubeConfig *k) {
	if (!k)
		return NULL;
	free(k->source);
	free(k->context);
	free(k->cluster_name);
	free(k->user_name);
	free(k->server);
	free(k->ca_file);
	free(k->ca_data);
	if (k->token)
		explicit_bzero(k->token, strlen(k->token));
	free(k->token);
	free(k->token_file);
	free(k->cert_file);
	free(k->cert_data);
	free(k->key_file);
	if (k->key_data)
		explicit_bzero(k->key_data, k->key_size);
	free(k->key_data);
	free(k);
	return NULL;
}

static int fail(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int r, const char *fmt, ...) {
	va_list ap;

	if (ret_error) {
		va_start(ap, fmt);
		if (vasprintf(ret_error, fmt, ap) < 0)
			*ret_error = NULL;
		va_end(ap);
	}
	return r;
}

/* ---- libyaml document helpers ---- */

static yaml_node_t *node_get(yaml_document_t *doc, int id) {
	return id ? yaml_document_get_node(doc, id) : NULL;
}

/* The value for `key` in mapping n; NULL if n is not a mapping or lacks it. */
static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *n, const char *key) {
	if (!n || n->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_get(doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE && streq((const char *) k->data.scalar.value, key))
			return node_get(doc, p->value);
	}
	return NULL;
}

/* A scalar's text; NULL for absent, non-scalar, empty, or YAML null ("~", "null" unquoted). */
static const char *scalar(yaml_node_t *n) {
	const char *s;

	if (!n || n->type != YAML_SCALAR_NODE)
		return NULL;
	s = (const char *) n->data.scalar.value;
	if (isempty(s) || (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (streq(s, "~") || streq(s, "null"))))
		return NULL;
	return s;
}

static const char *map_str(yaml_document_t *doc, yaml_node_t *n, const char *key) {
	return scalar(map_get(doc, n, key));
}

/* The entry of a named list (clusters/contexts/users) whose name is `name`: its `field` mapping. */
static yaml_node_t *named_find(yaml_document_t *doc, yaml_node_t *list, const char *name, const char *field) {
	if (!list || list->type != YAML_SEQUENCE_NODE)
		return NULL;
	for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
		yaml_node_t *e = node_get(doc, *i);
		const char *n = map_str(doc, e, "name");

		if (n && streq(n, name)) {
			yaml_node_t *f = map_get(doc, e, field);
			/* "user: {}" and "user:" (null) are both an empty entry. */
			return f ?: e;
		}
	}
	return NULL;
}

static int parse_bool(const char *s, bool *ret) {
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "on" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "off" };

	for (size_t i = 0; i < ELEMENTSOF(yes); i++)
		if (streq(s, yes[i])) {
			*ret = true;
			return 0;
		}
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		if (streq(s, no[i])) {
			*ret = false;
			return 0;
		}
	return -EINVAL;
}

/* base64 (whitespace tolerated: YAML folds long strings) -> bytes. */
static int decode_data(const char *s, char **ret, size_t *ret_size) {
	_cleanup_free_ char *clean = malloc(strlen(s) + 1);
	size_t n = 0;
	void *p;
	int r;

	if (!clean)
		return -ENOMEM;
	for (const char *c = s; *c; c++)
		if (!strchr(" \t\r\n", *c))
			clean[n++] = *c;
	clean[n] = 0;
	if (n == 0)
		return -EINVAL;
	r = base64_decode(clean, n, &p, ret_size);
	if (r < 0)
		return r;
	*ret = p;
	return 0;
}

/* A path from the kubeconfig: relative ones are relative to the file's directory. */
static char *resolve_path(const char *kubeconfig, const char *p) {
	const char *slash;

	if (p[0] == '/' || !(slash = strrchr(kubeconfig, '/')))
		return strdup(p);
	return strdup_printf("%.*s/%s", (int) (slash - kubeconfig), kubeconfig, p);
}

static int load_doc(yaml_document_t *doc, const char *path, yaml_node_t **ret_root, char **ret_error) {
	_cleanup_free_ char *text = NULL;
	yaml_parser_t parser;
	size_t size;
	int r;

	r = read_full_file(path, &text, &size);
	if (r < 0)
		return fail(ret_error, r, "%s: cannot read: %s", path, strerror(-r));
	if (!yaml_parser_initialize(&parser))
		return fail(ret_error, -ENOMEM, "%s: out of memory", path);
	yaml_parser_set_input_string(&parser, (const unsigned char *) text, size);
	if (!yaml_parser_load(&parser, doc)) {
		r = fail(ret_error, -EBADMSG, "%s:%zu:%zu: invalid YAML: %s", path, parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1, parser.problem ?: "parse error");
		yaml_parser_delete(&parser);
		return r;
	}
	yaml_parser_delete(&parser);
	*ret_root = yaml_document_get_root_node(doc);
	if (!*ret_root || (*ret_root)->type != YAML_MAPPING_NODE) {
		yaml_document_delete(doc);
		return fail(ret_error, -EBADMSG, "%s: not a kubeconfig (top level is not a mapping)", path);
	}
	return 0;
}

static int parse_cluster(yaml_document_t *doc, yaml_node_t *c, const char *path, KubeConfig *k, char **ret_error) {
	const char *s;
	size_t n;
	int r;

	s = map_str(doc, c, "server");
	if (!s)
		return fail(ret_error, -EINVAL, "%s: clusters[%s].cluster.server is missing", path, k->cluster_name);
	if (!startswith(s, "https://") && !startswith(s, "http://"))
		return fail(ret_error, -EINVAL, "%s: clusters[%s].cluster.server \"%s\" is not an http(s) URL", path,
			    k->cluster_name, s);
	n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		n--;
	k->server = strndup(s, n);
	if (!k->server)
		return -ENOMEM;

	s = map_str(doc, c, "certificate-authority-data");
	if (s) {
		r = decode_data(s, &k->ca_data, &k->ca_size);
		if (r < 0)
			return fail(ret_error, r,
				    "%s: clusters[%s].cluster.certificate-authority-data is not valid base64", path,
				    k->cluster_name);
	} else if ((s = map_str(doc, c, "certificate-authority"))) {
		k->ca_file = resolve_path(path, s);
		if (!k->ca_file)
			return -ENOMEM;
	}
	s = map_str(doc, c, "insecure-skip-tls-verify");
	if (s && parse_bool(s, &k->insecure_skip_tls_verify) < 0)
		return fail(ret_error, -EINVAL,
			    "%s: clusters[%s].cluster.insecure-skip-tls-verify \"%s\" is not a boolean", path,
			    k->cluster_name, s);
	return 0;
}

static int parse_user(yaml_document_t *doc, yaml_node_t *u, const char *path, KubeConfig *k, char **ret_error) {
	static const char *const unsupported[] = { "exec", "auth-provider", "username", "password" };
	const char *s;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(unsupported); i++)
		if (map_get(doc, u, unsupported[i]))
			return fail(ret_error, -EOPNOTSUPP,
				    "%s: users[%s].user.%s is not supported (use token, tokenFile or client certificates)",
				    path, k->user_name, unsupported[i]);

	if ((s = map_str(doc, u, "token"))) {
		k->token = strdup(s);
		if (!k->token)
			return -ENOMEM;
	} else if ((s = map_str(doc, u, "tokenFile"))) {
		k->token_file = resolve_path(path, s);
		if (!k->token_file)
			return -ENOMEM;
	}

	if ((s = map_str(doc, u, "client-certificate-data"))) {
		r = decode_data(s, &k->cert_data, &k->cert_size);
		if (r < 0)
			return fail(ret_error, r, "%s: users[%s].user.client-certificate-data is not valid base64",
				    path, k->user_name);
	} else if ((s = map_str(doc, u, "client-certificate"))) {
		k->cert_file = resolve_path(path, s);
		if (!k->cert_file)
			return -ENOMEM;
	}
	if ((s = map_str(doc, u, "client-key-data"))) {
		r = decode_data(s, &k->key_data, &k->key_size);
		if (r < 0)
			return fail(ret_error, r, "%s: users[%s].user.client-key-data is not valid base64", path,
				    k->user_name);
	} else if ((s = map_str(doc, u, "client-key"))) {
		k->key_file = resolve_path(path, s);
		if (!k->key_file)
			return -ENOMEM;
	}
	if ((k->cert_data || k->cert_file) != (k->key_data || k->key_file))
		return fail(ret_error, -EINVAL, "%s: users[%s].user has a client %s but no client %s", path,
			    k->user_name, k->cert_data || k->cert_file ? "certificate" : "key",
			    k->cert_data || k->cert_file
					    ? "key (client-key or client-key-data)"
					    : "certificate (client-certificate or client-certificate-data)");
	return 0;
}

/* A copy of n bytes plus a NUL (PEM data is handed to curl as a blob, but stays a C string too). */
static int dup_data(const char *s, size_t n, char **ret) {
	char *d;

	if (!s) {
		*ret = NULL;
		return 0;
	}
	d = malloc(n + 1);
	if (!d)
		return -ENOMEM;
	memcpy(d, s, n);
	d[n] = '\0';
	*ret = d;
	return 0;
}

static int dup_str(const char *s, char **ret) {
	return dup_data(s, s ? strlen(s) : 0, ret);
}

int kubeconfig_copy(const KubeConfig *k, KubeConfig **ret) {
	_cleanup_(kubeconfig_freep) KubeConfig *c = NULL;

	if (!k)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->insecure_skip_tls_verify = k->insecure_skip_tls_verify;
	c->ca_size = k->ca_size;
	c->cert_size = k->cert_size;
	c->key_size = k->key_size;
	if (dup_str(k->source, &c->source) < 0 || dup_str(k->context, &c->context) < 0 ||
	    dup_str(k->cluster_name, &c->cluster_name) < 0 || dup_str(k->user_name, &c->user_name) < 0 ||
	    dup_str(k->server, &c->server) < 0 || dup_str(k->ca_file, &c->ca_file) < 0 ||
	    dup_data(k->ca_data, k->ca_size, &c->ca_data) < 0 || dup_str(k->token, &c->token) < 0 ||
	    dup_str(k->token_file, &c->token_file) < 0 || dup_str(k->cert_file, &c->cert_file) < 0 ||
	    dup_data(k->cert_data, k->cert_size, &c->cert_data) < 0 || dup_str(k->key_file, &c->key_file) < 0 ||
	    dup_data(k->key_data, k->key_size, &c->key_data) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(c);
	return 0;
}

int kubeconfig_load(const char *path, KubeConfig **ret, char **ret_error) {
	_cleanup_(kubeconfig_freep) KubeConfig *k = NULL;
	yaml_document_t doc;
	yaml_node_t *root = NULL, *ctx, *cluster, *user;
	const char *s;
	int r;

	if (ret_error)
		*ret_error = NULL;
	if (isempty(path))
		return fail(ret_error, -EINVAL, "empty kubeconfig path");
	r = load_doc(&doc, path, &root, ret_error);
	if (r < 0)
		return r;

	k = calloc(1, sizeof(*k));
	if (!k || !(k->source = strdup(path))) {
		r = -ENOMEM;
		goto out;
	}

	s = map_str(&doc, root, "current-context");
	if (!s) {
		r = fail(ret_error, -EINVAL, "%s: current-context is not set", path);
		goto out;
	}
	k->context = strdup(s);
	if (!k->context) {
		r = -ENOMEM;
		goto out;
	}
	ctx = named_find(&doc, map_get(&doc, root, "contexts"), s, "context");
	if (!ctx) {
		r = fail(ret_error, -ENOENT, "%s: context \"%s\" (current-context) not found in contexts", path, s);
		goto out;
	}

	s = map_str(&doc, ctx, "cluster");
	if (!s) {
		r = fail(ret_error, -EINVAL, "%s: contexts[%s].context.cluster is not set", path, k->context);
		goto out;
	}
	k->cluster_name = strdup(s);
	cluster = named_find(&doc, map_get(&doc, root, "clusters"), s, "cluster");
	if (!k->cluster_name) {
		r = -ENOMEM;
		goto out;
	}
	if (!cluster) {
		r = fail(ret_error, -ENOENT, "%s: cluster \"%s\" (contexts[%s].context.cluster) not found in clusters",
			 path, s, k->context);
		goto out;
	}

	s = map_str(&doc, ctx, "user");
	if (!s) {
		r = fail(ret_error, -EINVAL, "%s: contexts[%s].context.user is not set", path, k->context);
		goto out;
	}
	k->user_name = strdup(s);
	user = named_find(&doc, map_get(&doc, root, "users"), s, "user");
	if (!k->user_name) {
		r = -ENOMEM;
		goto out;
	}
	if (!user) {
		r = fail(ret_error, -ENOENT, "%s: user \"%s\" (contexts[%s].context.user) not found in users", path, s,
			 k->context);
		goto out;
	}

	r = parse_cluster(&doc, cluster, path, k, ret_error);
	if (r >= 0)
		r = parse_user(&doc, user, path, k, ret_error);
	if (r >= 0)
		*ret = TAKE_PTR(k);
out:
	if (r == -ENOMEM && ret_error && !*ret_error)
		(void) fail(ret_error, r, "%s: out of memory", path);
	yaml_document_delete(&doc);
	return r;
}

int kubeconfig_load_in_cluster(const char *sa_dir, KubeConfig **ret, char **ret_error) {
	_cleanup_(kubeconfig_freep) KubeConfig *k = NULL;
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");

	if (ret_error)
		*ret_error = NULL;
	if (!sa_dir)
		sa_dir = KUBE_SA_DIR;
	if (isempty(host) || isempty(port))
		return fail(ret_error, -ENOENT,
			    "not running in a pod: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set "
			    "(use --kubeconfig)");

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->source = strdup("in-cluster service account");
	/* An IPv6 service address needs brackets in a URL. */
	k->server = strdup_printf(strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	k->token_file = strdup_printf("%s/token", sa_dir);
	k->ca_file = strdup_printf("%s/ca.crt", sa_dir);
	if (!k->source || !k->server || !k->token_file || !k->ca_file)
		return -ENOMEM;
	if (access(k->token_file, R_OK) < 0)
		return fail(ret_error, negative_errno(),
			    "in-cluster config: cannot read the service account token %s: %m", k->token_file);
	*ret = TAKE_PTR(k);
	return 0;
}

int kubeconfig_get_token(const KubeConfig *k, char **ret) {
	_cleanup_free_ char *t = NULL;
	size_t n;
	int r;

	if (k->token) {
		t = strdup(k->token);
		if (!t)
			return -ENOMEM;
	} else if (k->token_file) {
		r = read_full_file(k->token_file, &t, NULL);
		if (r < 0)
			return r;
	}
	if (t) {
		n = strlen(t);
		while (n > 0 && strchr(" \t\r\n", t[n - 1]))
			t[--n] = 0;
	}
	*ret = TAKE_PTR(t);
	return 0;
}
