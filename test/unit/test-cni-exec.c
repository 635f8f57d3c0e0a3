/* SPDX-License-Identifier: Apache-2.0 */
/* Running delegates: plugin lookup, stdin/stdout plumbing, error propagation, IPAM delegation.
 * The "plugins" are small shell scripts in a temporary directory; no privileges needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/cni/cni-exec.h"

static char dir[] = "/tmp/test-cni-exec.XXXXXX";

static char *path_of(const char *name) {
	char *p = strdup_printf("%s/%s", dir, name);
	assert_non_null(p);
	return p;
}

static void script(const char *name, const char *body, mode_t mode) {
	_cleanup_free_ char *p = path_of(name), *s = strdup_printf("#!/bin/sh\n%s\n", body);
	FILE *f = fopen(p, "we");

	assert_non_null(f);
	fputs(s, f);
	fclose(f);
	assert_int_equal(chmod(p, mode), 0);
}

static int setup(void **state) {
	_cleanup_free_ char *sub = NULL;

	if (!mkdtemp(dir))
		return -1;
	sub = strdup_printf("%s/sub", dir);
	return sub && mkdir(sub, 0755) == 0 ? 0 : -1;
}

static int teardown(void **state) {
	_cleanup_free_ char *cmd = strdup_printf("rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_find(void **state) {
	_cleanup_free_ char *path = strdup_printf("/nonexistent:%s/sub:%s", dir, dir), *want = path_of("plug");
	char *got = NULL;

	script("plug", "exit 0", 0755);
	script("noexec", "exit 0", 0644);
	assert_int_equal(cni_find_plugin("plug", path, &got), 0);
	assert_string_equal(got, want);
	free(got);
	assert_int_equal(cni_find_plugin("noexec", path, &got), -ENOENT);
	assert_int_equal(cni_find_plugin("sub", dir, &got), -ENOENT); /* a directory is no plugin */
	assert_int_equal(cni_find_plugin("missing", path, &got), -ENOENT);
	assert_int_equal(cni_find_plugin("plug", "", &got), -ENOENT);
	assert_int_equal(cni_find_plugin("../bin/sh", path, &got), -EINVAL);
	assert_int_equal(cni_find_plugin("a/b", path, &got), -EINVAL);
	assert_int_equal(cni_find_plugin("..", path, &got), -EINVAL);
	assert_int_equal(cni_find_plugin(".", path, &got), -EINVAL);
	assert_int_equal(cni_find_plugin("", path, &got), -EINVAL);
}

static void test_exec_ok(void **state) {
	_cleanup_free_ char *exe = path_of("echoer"), *in = path_of("echoer.in"), *got = NULL;
	_cleanup_free_ char *body = strdup_printf("cat > '%s'; echo \"{\\\"env\\\": \\\"$FOO\\\"}\"", in);
	char *envp[] = { "FOO=bar", NULL };
	const char data[] = "{\"cniVersion\":\"1.0.0\",\n \"name\":\"x\"}";
	CniError err = {};
	json_t *out = NULL;

	script("echoer", body, 0755);
	assert_int_equal(cni_exec(exe, envp, data, strlen(data), &out, &err), 0);
	assert_int_equal(err.code, 0);
	assert_string_equal(json_string_value(json_object_get(out, "env")), "bar");
	json_decref(out);
	/* the delegate got exactly our bytes */
	assert_int_equal(read_full_file(in, &got, NULL), 0);
	assert_string_equal(got, data);
}

static void test_exec_big_output_before_reading(void **state) {
	/* Writes 300 kB before reading 1 MiB of stdin: would deadlock without the poll loop. */
	_cleanup_free_ char *exe = path_of("big");
	_cleanup_free_ char *data = malloc(1 << 20);
	CniError err = {};
	json_t *out = NULL;

	script("big", "printf '{\"pad\":\"'; head -c 300000 /dev/zero | tr '\\0' a; printf '\"}'; cat >/dev/null",
	       0755);
	memset(data, ' ', 1 << 20);
	assert_int_equal(cni_exec(exe, NULL, data, 1 << 20, &out, &err), 0);
	assert_int_equal(strlen(json_string_value(json_object_get(out, "pad"))), 300000);
	json_decref(out);
}

static void test_exec_no_stdin_reader(void **state) {
	/* A child that exits without reading a large stdin: EPIPE is not our failure. */
	_cleanup_free_ char *exe = path_of("quiet");
	_cleanup_free_ char *data = calloc(1, 1 << 20);
	CniError err = {};
	json_t *out = (json_t *) 0x1;

	script("quiet", "exit 0", 0755);
	assert_int_equal(cni_exec(exe, NULL, data, 1 << 20, &out, &err), 0);
	assert_null(out);
}

static void test_exec_errors(void **state) {
	_cleanup_free_ char *e1 = path_of("cnierr"), *e2 = path_of("garbage"), *e3 = path_of("killed"),
			    *e4 = path_of("badjson"), *e5 = path_of("nonexistent");
	CniError err = {};
	json_t *out = NULL;

	script("cnierr",
	       "cat >/dev/null; echo '{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"try later\",\"details\":\"d\"}'; exit 1",
	       0755);
	assert_int_equal(cni_exec(e1, NULL, "{}", 2, &out, &err), -EIO);
	assert_int_equal(err.code, 11);
	assert_string_equal(err.msg, "try later");
	assert_string_equal(err.details, "d");
	cni_error_clear(&err);

	script("garbage", "echo oops; exit 3", 0755);
	assert_int_equal(cni_exec(e2, NULL, "{}", 2, &out, &err), -EIO);
	assert_int_equal(err.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(err.msg, "garbage"));
	assert_non_null(strstr(err.msg, "exit status 3"));
	assert_non_null(strstr(err.msg, "oops"));
	cni_error_clear(&err);

	script("killed", "kill -9 $$", 0755);
	assert_int_equal(cni_exec(e3, NULL, "{}", 2, &out, &err), -EIO);
	assert_non_null(strstr(err.msg, "signal 9"));
	cni_error_clear(&err);

	script("badjson", "echo '{nope'", 0755);
	assert_true(cni_exec(e4, NULL, "{}", 2, &out, &err) < 0);
	assert_int_equal(err.code, CNI_ERR_DECODE);
	assert_non_null(strstr(err.msg, "badjson"));
	cni_error_clear(&err);

	assert_int_equal(cni_exec(e5, NULL, "{}", 2, &out, &err), -ENOENT);
	assert_int_equal(err.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(err.msg, "nonexistent"));
	cni_error_clear(&err);
}

static int parse_req(CniRequest *req, const char *conf) {
	_cleanup_free_ char *p = strdup_printf("CNI_PATH=%s", dir);
	char *envp[] = { "CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/x", "CNI_IFNAME=eth0", p, NULL };

	return cni_request_parse(req, envp, conf, strlen(conf));
}

static void test_ipam_exec(void **state) {
	_cleanup_free_ char *in = path_of("ipam.in"), *cmdf = path_of("ipam.cmd"), *got = NULL, *gotcmd = NULL;
	_cleanup_free_ char *body = strdup_printf(
			"cat > '%s'; echo \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" > '%s'\n"
			"[ \"$CNI_COMMAND\" = ADD ] && echo '{\"cniVersion\":\"0.4.0\",\"ips\":[{\"version\":\"4\",\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\"}],"
			"\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dns\":{}}'\nexit 0",
			in, cmdf);
	_cleanup_free_ char *cni_path = strdup_printf("%s", dir);
	const char conf[] =
			"{\"cniVersion\":\"1.0.0\", \"name\":\"n\",\"type\":\"bridge\",\"ipam\":{\"type\":\"fake-ipam\"}}";
	CniResult *res = NULL;
	CniRequest req;

	script("fake-ipam", body, 0755);
	/* The delegate inherits this process's environment with CNI_COMMAND replaced. */
	setenv("CNI_COMMAND", "ADD", 1);
	setenv("CNI_CONTAINERID", "c1", 1);
	setenv("CNI_IFNAME", "eth0", 1);
	setenv("CNI_PATH", cni_path, 1);

	assert_int_equal(parse_req(&req, conf), 0);
	assert_int_equal(cni_ipam_exec(&req, CNI_CMD_ADD, &res), 0);
	assert_non_null(res);
	assert_int_equal(res->n_ips, 1);
	assert_int_equal(res->n_routes, 1);
	res = cni_result_free(res);
	assert_int_equal(read_full_file(in, &got, NULL), 0);
	assert_string_equal(got, conf); /* original bytes, whitespace and all */
	assert_int_equal(read_full_file(cmdf, &gotcmd, NULL), 0);
	assert_string_equal(gotcmd, "ADD c1 eth0\n");
	free(gotcmd);
	gotcmd = NULL;

	assert_int_equal(cni_ipam_exec(&req, CNI_CMD_DEL, NULL), 0);
	assert_int_equal(read_full_file(cmdf, &gotcmd, NULL), 0);
	assert_string_equal(gotcmd, "DEL c1 eth0\n");
	cni_request_done(&req);

	/* errors */
	assert_int_equal(parse_req(&req, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"bridge\"}"), 0);
	assert_true(cni_ipam_exec(&req, CNI_CMD_ADD, &res) < 0);
	assert_int_equal(req.error.code, CNI_ERR_INVALID_NETCONF);
	cni_request_done(&req);
	assert_int_equal(parse_req(&req, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"bridge\",\"ipam\":{}}"),
			 0);
	assert_true(cni_ipam_exec(&req, CNI_CMD_ADD, &res) < 0);
	assert_int_equal(req.error.code, CNI_ERR_INVALID_NETCONF);
	assert_non_null(strstr(req.error.msg, "ipam.type"));
	cni_request_done(&req);
	assert_int_equal(
			parse_req(&req,
				  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"bridge\",\"ipam\":{\"type\":\"nope\"}}"),
			0);
	assert_int_equal(cni_ipam_exec(&req, CNI_CMD_ADD, &res), -ENOENT);
	assert_int_equal(req.error.code, CNI_ERR_INTERNAL);
	assert_non_null(strstr(req.error.msg, "failed to find plugin \"nope\""));
	cni_request_done(&req);
	assert_null(res);
}

/* CNI_PATH is optional for ADD/CHECK/DEL: parsing succeeds without it, and only a delegation
 * fails, with code 4 naming CNI_PATH and the plugin it was needed for, without running anything. */
static void test_ipam_exec_without_cni_path(void **state) {
	const char conf[] =
			"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"bridge\",\"ipam\":{\"type\":\"fake-ipam\"}}";
	char *envp[] = { "CNI_COMMAND=DEL", "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", NULL };
	_cleanup_free_ char *cmdf = path_of("fake-ipam.ran");
	CniResult *res = NULL;
	CniRequest req;

	script("fake-ipam", "echo ran > \"$0.ran\"; exit 0", 0755);
	(void) unlink(cmdf);
	assert_int_equal(cni_request_parse(&req, envp, conf, strlen(conf)), 0);
	assert_null(req.cni_path);
	for (CniCommand c = CNI_CMD_ADD; c <= CNI_CMD_CHECK; c++) {
		assert_true(cni_ipam_exec(&req, c, c == CNI_CMD_ADD ? &res : NULL) < 0);
		assert_int_equal(req.error.code, CNI_ERR_INVALID_ENV);
		assert_non_null(strstr(req.error.msg, "CNI_PATH is not set"));
		assert_non_null(strstr(req.error.msg, "\"fake-ipam\""));
		cni_error_clear(&req.error);
	}
	assert_null(res);
	assert_int_equal(access(cmdf, F_OK), -1);
	cni_request_done(&req);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_exec_ok),
		cmocka_unit_test(test_exec_big_output_before_reading),
		cmocka_unit_test(test_exec_no_stdin_reader),
		cmocka_unit_test(test_exec_errors),
		cmocka_unit_test(test_ipam_exec),
		cmocka_unit_test(test_ipam_exec_without_cni_path),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
