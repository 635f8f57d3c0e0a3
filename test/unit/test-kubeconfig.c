/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig parsing (libyaml): every credential variant kubectl writes that weftd supports, several
 * contexts, and the errors, which must name the file and the key. Files are written by the test
 * into a temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "shared/client/kubeconfig.h"

static char dir[64];

static const char *write_file(const char *name, const char *text) {
	static char path[4][128];
	static int i;
	char *p = path[i++ % 4];
	FILE *f;

	snprintf(p, 128, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static KubeConfig *load_ok(const char *name, const char *text) {
	KubeConfig *k = NULL;
	char *err = NULL;
	int r;

	r = kubeconfig_load(write_file(name, text), &k, &err);
	if (r < 0)
		fail_msg("kubeconfig_load: %d: %s", r, err ?: "(no message)");
	assert_null(err);
	return k;
}

/* Loads text expecting failure r; the error must contain the file name and every `needle`. */
static void load_fail(const char *name, const char *text, int expect, ...) {
	const char *path = write_file(name, text), *needle;
	KubeConfig *k = NULL;
	char *err = NULL;
	va_list ap;
	int r;

	r = kubeconfig_load(path, &k, &err);
	assert_int_equal(r, expect);
	assert_null(k);
	assert_non_null(err);
	if (!strstr(err, path))
		fail_msg("error does not name the file: %s", err);
	va_start(ap, expect);
	while ((needle = va_arg(ap, const char *)))
		if (!strstr(err, needle))
			fail_msg("error \"%s\" lacks \"%s\"", err, needle);
	va_end(ap);
	free(err);
}

static int setup(void **state) {
	snprintf(dir, sizeof(dir), "/tmp/test-kubeconfig.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#define HEADER "apiVersion: v1\nkind: Config\npreferences: {}\n"

static void test_token(void **state) {
	KubeConfig *k = load_ok("token.yaml", HEADER "clusters:\n"
						     "- cluster:\n"
						     "    certificate-authority: pki/ca.crt\n"
						     "    server: https://10.0.0.1:6443/\n"
						     "  name: kind\n"
						     "contexts:\n"
						     "- context:\n"
						     "    cluster: kind\n"
						     "    user: admin\n"
						     "    namespace: kube-system\n"
						     "  name: admin@kind\n"
						     "current-context: admin@kind\n"
						     "users:\n"
						     "- name: admin\n"
						     "  user:\n"
						     "    token: abc.def\n");
	char *t = NULL, expect[128];

	assert_string_equal(k->server, "https://10.0.0.1:6443");
	snprintf(expect, sizeof(expect), "%s/pki/ca.crt", dir);
	assert_string_equal(k->ca_file, expect);
	assert_null(k->ca_data);
	assert_false(k->insecure_skip_tls_verify);
	assert_string_equal(k->token, "abc.def");
	assert_string_equal(k->context, "admin@kind");
	assert_string_equal(k->cluster_name, "kind");
	assert_string_equal(k->user_name, "admin");
	assert_null(k->cert_file);
	assert_int_equal(kubeconfig_get_token(k, &t), 0);
	assert_string_equal(t, "abc.def");
	free(t);
	kubeconfig_free(k);
}

static void test_token_file(void **state) {
	const char *tf = write_file("sa-token", "from-file-1\n");
	KubeConfig *k = load_ok("tokenfile.yaml",
				HEADER "clusters:\n"
				       "- name: c\n"
				       "  cluster: {server: 'http://127.0.0.1:8080', insecure-skip-tls-verify: true}\n"
				       "contexts:\n"
				       "- name: x\n"
				       "  context: {cluster: c, user: u}\n"
				       "current-context: x\n"
				       "users:\n"
				       "- name: u\n"
				       "  user:\n"
				       "    tokenFile: sa-token\n");
	char *t = NULL;

	assert_string_equal(k->server, "http://127.0.0.1:8080");
	assert_true(k->insecure_skip_tls_verify);
	assert_null(k->token);
	assert_string_equal(k->token_file, tf);
	assert_int_equal(kubeconfig_get_token(k, &t), 0);
	assert_string_equal(t, "from-file-1");
	free(t);
	/* Re-read on every call: projected service account tokens rotate. */
	write_file("sa-token", "from-file-2");
	assert_int_equal(kubeconfig_get_token(k, &t), 0);
	assert_string_equal(t, "from-file-2");
	free(t);
	kubeconfig_free(k);
}

static void test_cert_data(void **state) {
	/* "-----BEGIN CA-----\n", "CERT", "KEY" in base64; the CA one folded over two lines. */
	KubeConfig *k = load_ok("certdata.yaml", HEADER "clusters:\n"
							"- name: c\n"
							"  cluster:\n"
							"    server: https://api.example:6443\n"
							"    certificate-authority-data: >-\n"
							"      LS0tLS1CRUdJTiBD\n"
							"      QS0tLS0tCg==\n"
							"contexts:\n"
							"- name: x\n"
							"  context: {cluster: c, user: u}\n"
							"current-context: \"x\"\n"
							"users:\n"
							"- name: u\n"
							"  user:\n"
							"    client-certificate-data: Q0VSVA==\n"
							"    client-key-data: S0VZ\n");
	char *t = (char *) 1;

	assert_int_equal(k->ca_size, strlen("-----BEGIN CA-----\n"));
	assert_memory_equal(k->ca_data, "-----BEGIN CA-----\n", k->ca_size);
	assert_null(k->ca_file);
	assert_int_equal(k->cert_size, 4);
	assert_memory_equal(k->cert_data, "CERT", 4);
	assert_int_equal(k->key_size, 3);
	assert_memory_equal(k->key_data, "KEY", 3);
	assert_null(k->token);
	assert_int_equal(kubeconfig_get_token(k, &t), 0);
	assert_null(t);
	kubeconfig_free(k);
}

/* The copy the object cache takes of the lease datastore's config: every field, its own memory. */
static void test_copy(void **state) {
	KubeConfig *k = load_ok("copy.yaml", HEADER "clusters:\n"
						    "- name: c\n"
						    "  cluster:\n"
						    "    server: https://api.example:6443\n"
						    "    certificate-authority-data: LS0tLS1CRUdJTiBDQS0tLS0tCg==\n"
						    "    insecure-skip-tls-verify: true\n"
						    "contexts:\n"
						    "- name: x\n"
						    "  context: {cluster: c, user: u}\n"
						    "current-context: x\n"
						    "users:\n"
						    "- name: u\n"
						    "  user:\n"
						    "    token: t0k3n\n"
						    "    client-certificate-data: Q0VSVA==\n"
						    "    client-key-data: S0VZ\n");
	KubeConfig *c = NULL;

	assert_int_equal(kubeconfig_copy(k, &c), 0);
	assert_non_null(c);
	assert_string_equal(c->source, k->source);
	assert_string_equal(c->context, "x");
	assert_string_equal(c->cluster_name, "c");
	assert_string_equal(c->user_name, "u");
	assert_string_equal(c->server, "https://api.example:6443");
	assert_true(c->insecure_skip_tls_verify);
	assert_int_equal(c->ca_size, k->ca_size);
	assert_memory_equal(c->ca_data, "-----BEGIN CA-----\n", c->ca_size);
	assert_ptr_not_equal(c->ca_data, k->ca_data);
	assert_string_equal(c->token, "t0k3n");
	assert_ptr_not_equal(c->token, k->token);
	assert_int_equal(c->cert_size, 4);
	assert_memory_equal(c->cert_data, "CERT", 4);
	assert_int_equal(c->key_size, 3);
	assert_memory_equal(c->key_data, "KEY", 3);
	assert_null(c->ca_file);
	assert_null(c->token_file);
	kubeconfig_free(k); /* the copy outlives the original */
	assert_string_equal(c->server, "https://api.example:6443");
	kubeconfig_free(c);
	assert_int_equal(kubeconfig_copy(NULL, &c), -EINVAL);
}

static void test_cert_files(void **state) {
	KubeConfig *k = load_ok("certfiles.yaml",
				HEADER "clusters:\n"
				       "- name: c\n"
				       "  cluster: {server: 'https://h:1', certificate-authority: /etc/k/ca.pem}\n"
				       "contexts:\n"
				       "- name: x\n"
				       "  context: {cluster: c, user: u}\n"
				       "current-context: x\n"
				       "users:\n"
				       "- name: u\n"
				       "  user: {client-certificate: /etc/k/c.pem, client-key: k.pem}\n");
	char expect[128];

	assert_string_equal(k->ca_file, "/etc/k/ca.pem");
	assert_string_equal(k->cert_file, "/etc/k/c.pem");
	snprintf(expect, sizeof(expect), "%s/k.pem", dir);
	assert_string_equal(k->key_file, expect);
	kubeconfig_free(k);
}

static void test_multiple_contexts(void **state) {
	static const char *const tmpl =
			HEADER "clusters:\n"
			       "- name: prod\n"
			       "  cluster: {server: 'https://prod:6443'}\n"
			       "- name: dev\n"
			       "  cluster: {server: 'https://dev:6443', insecure-skip-tls-verify: yes}\n"
			       "contexts:\n"
			       "- name: p\n"
			       "  context: {cluster: prod, user: alice}\n"
			       "- name: d\n"
			       "  context: {cluster: dev, user: bob}\n"
			       "current-context: %s\n"
			       "users:\n"
			       "- name: alice\n"
			       "  user: {token: a}\n"
			       "- name: bob\n"
			       "  user: {token: b}\n";
	char text[1024];
	KubeConfig *k;

	snprintf(text, sizeof(text), tmpl, "d");
	k = load_ok("multi.yaml", text);
	assert_string_equal(k->server, "https://dev:6443");
	assert_true(k->insecure_skip_tls_verify);
	assert_string_equal(k->token, "b");
	kubeconfig_free(k);

	snprintf(text, sizeof(text), tmpl, "p");
	k = load_ok("multi.yaml", text);
	assert_string_equal(k->server, "https://prod:6443");
	assert_false(k->insecure_skip_tls_verify);
	assert_string_equal(k->token, "a");
	kubeconfig_free(k);

	snprintf(text, sizeof(text), tmpl, "staging");
	load_fail("multi.yaml", text, -ENOENT, "\"staging\"", "current-context", "contexts", NULL);
}

static void test_errors(void **state) {
	KubeConfig *k = NULL;
	char *err = NULL;

	load_fail("e1.yaml", HEADER "clusters: []\ncontexts: []\nusers: []\n", -EINVAL, "current-context", NULL);
	load_fail("e2.yaml", HEADER "current-context: ''\n", -EINVAL, "current-context", NULL);
	load_fail("e3.yaml",
		  HEADER "current-context: x\ncontexts:\n- name: x\n  context: {cluster: gone, user: u}\n"
			 "users:\n- name: u\n  user: {token: t}\n",
		  -ENOENT, "cluster \"gone\"", "clusters", NULL);
	load_fail("e4.yaml",
		  HEADER "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: nobody}\n"
			 "clusters:\n- name: c\n  cluster: {server: 'https://h'}\nusers: []\n",
		  -ENOENT, "user \"nobody\"", "users", NULL);
	load_fail("e5.yaml", HEADER "current-context: x\ncontexts:\n- name: x\n  context: {user: u}\n", -EINVAL,
		  "contexts[x].context.cluster", NULL);
	load_fail("e6.yaml",
		  HEADER
		  "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		  "clusters:\n- name: c\n  cluster: {certificate-authority: ca}\nusers:\n- name: u\n  user: {}\n",
		  -EINVAL, "clusters[c].cluster.server", NULL);
	load_fail("e7.yaml",
		  HEADER
		  "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		  "clusters:\n- name: c\n  cluster: {server: 'https://h', certificate-authority-data: '!!notb64'}\n"
		  "users:\n- name: u\n  user: {}\n",
		  -EINVAL, "certificate-authority-data", NULL);
	load_fail("e8.yaml",
		  HEADER "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
			 "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
			 "users:\n- name: u\n  user:\n    exec:\n      command: aws\n",
		  -EOPNOTSUPP, "users[u].user.exec", NULL);
	load_fail("e9.yaml",
		  HEADER "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
			 "clusters:\n- name: c\n  cluster: {server: 'https://h'}\n"
			 "users:\n- name: u\n  user: {client-certificate-data: Q0VSVA==}\n",
		  -EINVAL, "users[u].user", "client key", NULL);
	load_fail("e10.yaml", "clusters: [\n  - name: c\n", -EBADMSG, "invalid YAML", NULL);
	load_fail("e11.yaml", "- just\n- a list\n", -EBADMSG, "not a kubeconfig", NULL);
	load_fail("e12.yaml",
		  HEADER "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
			 "clusters:\n- name: c\n  cluster: {server: 'ftp://h'}\nusers:\n- name: u\n  user: {}\n",
		  -EINVAL, "server", "ftp://h", NULL);

	assert_int_equal(kubeconfig_load("/nonexistent/kubeconfig", &k, &err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/kubeconfig"));
	free(err);
}

static void test_in_cluster(void **state) {
	char sa[128], *err = NULL, *t = NULL;
	KubeConfig *k = NULL;

	snprintf(sa, sizeof(sa), "%s/sa", dir);
	assert_int_equal(mkdir(sa, 0755), 0);
	write_file("sa/token", "sa-token\n");

	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	assert_int_equal(kubeconfig_load_in_cluster(sa, &k, &err), -ENOENT);
	assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
	assert_non_null(strstr(err, "--kubeconfig"));
	free(err);

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kubeconfig_load_in_cluster(sa, &k, &err), 0);
	assert_string_equal(k->server, "https://10.96.0.1:443");
	assert_non_null(endswith(k->ca_file, "/sa/ca.crt"));
	assert_int_equal(kubeconfig_get_token(k, &t), 0);
	assert_string_equal(t, "sa-token");
	free(t);
	kubeconfig_free(k);

	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	assert_int_equal(kubeconfig_load_in_cluster(sa, &k, &err), 0);
	assert_string_equal(k->server, "https://[fd00:10:96::1]:443");
	kubeconfig_free(k);

	/* No token mounted (automountServiceAccountToken: false): say which file. */
	assert_int_equal(kubeconfig_load_in_cluster("/nonexistent-sa", &k, &err), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-sa/token"));
	free(err);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token),      cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_cert_data),  cmocka_unit_test(test_copy),
		cmocka_unit_test(test_cert_files), cmocka_unit_test(test_multiple_contexts),
		cmocka_unit_test(test_errors),     cmocka_unit_test(test_in_cluster),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
