/* SPDX-License-Identifier: Apache-2.0 */
/* Environment, CNI_ARGS and config parsing (cni_request_parse). No privileges needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"

#define CONF_OK "{\"cniVersion\":\"1.0.0\",\"name\":\"net1\",\"type\":\"bridge\"}"

/* Builds an envp for command `cmd` with all four variables set, then applies overrides
 * "NAME=value" (value "" = remove). */
typedef struct Env {
	char *v[16];
	char buf[16][256];
} Env;

static char *const *env_build(Env *e, const char *cmd, ...) {
	const char *defaults[] = { "CNI_CONTAINERID=c1", "CNI_NETNS=/run/netns/x", "CNI_IFNAME=eth0",
				   "CNI_PATH=/opt/cni/bin" };
	const char *o;
	size_t n = 0;
	va_list ap;

	if (cmd)
		snprintf(e->buf[n++], 256, "CNI_COMMAND=%s", cmd);
	for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
		snprintf(e->buf[n++], 256, "%s", defaults[i]);
	va_start(ap, cmd);
	while ((o = va_arg(ap, const char *))) {
		size_t kl = strchr(o, '=') - o;
		bool found = false;

		for (size_t i = 0; i < n; i++)
			if (strncmp(e->buf[i], o, kl + 1) == 0) {
				snprintf(e->buf[i], 256, "%s", o);
				found = true;
			}
		if (!found)
			snprintf(e->buf[n++], 256, "%s", o);
	}
	va_end(ap);
	for (size_t i = 0; i < n; i++)
		e->v[i] = e->buf[i];
	e->v[n] = NULL;
	return e->v;
}

static int parse(CniRequest *req, char *const *env, const char *conf) {
	return cni_request_parse(req, env, conf, conf ? strlen(conf) : 0);
}

/* Expects failure with `code` and a message containing every given substring. */
static void expect_err(char *const *env, const char *conf, unsigned code, const char *sub1, const char *sub2) {
	CniRequest req;
	int r = parse(&req, env, conf);

	if (r >= 0 || req.error.code != code || (sub1 && !strstr(req.error.msg, sub1)) ||
	    (sub2 && !strstr(req.error.msg, sub2)))
		print_error("conf=%s: r=%d code=%u msg=%s (wanted code %u with '%s' '%s')\n", conf, r, req.error.code,
			    req.error.msg ?: "(null)", code, sub1 ?: "", sub2 ?: "");
	assert_true(r < 0);
	assert_int_equal(req.error.code, code);
	if (sub1)
		assert_non_null(strstr(req.error.msg, sub1));
	if (sub2)
		assert_non_null(strstr(req.error.msg, sub2));
	cni_request_done(&req);
}

static void test_env_ok(void **state) {
	CniRequest req;
	Env e;

	assert_int_equal(parse(&req, env_build(&e, "ADD", NULL), CONF_OK), 0);
	assert_int_equal(req.command, CNI_CMD_ADD);
	assert_string_equal(req.container_id, "c1");
	assert_string_equal(req.netns, "/run/netns/x");
	assert_string_equal(req.ifname, "eth0");
	assert_string_equal(req.cni_path, "/opt/cni/bin");
	assert_int_equal(req.version, CNI_VERSION_1_0_0);
	assert_string_equal(req.name, "net1");
	assert_string_equal(req.type, "bridge");
	assert_null(req.ipam);
	assert_null(req.prev_result);
	assert_string_equal(req.config_raw, CONF_OK);
	cni_request_done(&req);
}

static void test_env_required(void **state) {
	static const struct {
		const char *cmd, *unset, *conf;
		bool ok;
	} t[] = {
		{ "ADD", "CNI_CONTAINERID=", CONF_OK, false },
		{ "ADD", "CNI_NETNS=", CONF_OK, false },
		{ "ADD", "CNI_IFNAME=", CONF_OK, false },
		{ "ADD", "CNI_PATH=", CONF_OK, true }, /* SPEC 1.0.0+: optional; needed only to delegate */
		{ "CHECK", "CNI_NETNS=", CONF_OK, false },
		{ "CHECK", "CNI_CONTAINERID=", CONF_OK, false },
		{ "CHECK", "CNI_PATH=", CONF_OK, true },
		{ "DEL", "CNI_NETNS=", CONF_OK, true }, /* netns optional for DEL */
		{ "DEL", "CNI_IFNAME=", CONF_OK, false },
		{ "DEL", "CNI_CONTAINERID=", CONF_OK, false },
		{ "DEL", "CNI_PATH=", CONF_OK, true }, /* SPEC 1.0.0+: optional; needed only to delegate */
		{ "GC", "CNI_CONTAINERID=", "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\"}", true },
		{ "GC", "CNI_PATH=", "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\"}", false },
		{ "STATUS", "CNI_IFNAME=", "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\"}", true },
		{ "STATUS", "CNI_PATH=", "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\"}", false },
		{ "VERSION", "CNI_PATH=", "", true },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		char name[64];
		Env e;

		snprintf(name, sizeof(name), "%.*s", (int) (strchr(t[i].unset, '=') - t[i].unset), t[i].unset);
		if (t[i].ok) {
			CniRequest req;
			int r = parse(&req, env_build(&e, t[i].cmd, t[i].unset, NULL), t[i].conf);

			if (r < 0)
				print_error("%s without %s: %s\n", t[i].cmd, name, req.error.msg);
			assert_int_equal(r, 0);
			cni_request_done(&req);
		} else
			expect_err(env_build(&e, t[i].cmd, t[i].unset, NULL), t[i].conf, CNI_ERR_INVALID_ENV, name,
				   t[i].cmd);
	}
}

static void test_env_invalid(void **state) {
	static const struct {
		const char *set, *sub;
	} t[] = {
		{ "CNI_CONTAINERID=../../etc", "\"../../etc\"" },
		{ "CNI_CONTAINERID=a/b", "\"a/b\"" },
		{ "CNI_CONTAINERID=-abc", "\"-abc\"" },
		{ "CNI_CONTAINERID=.hidden", "\".hidden\"" },
		{ "CNI_CONTAINERID=a b", "\"a b\"" },
		{ "CNI_IFNAME=eth/0", "contains '/'" },
		{ "CNI_IFNAME=eth:0", "contains ':'" },
		{ "CNI_IFNAME=eth 0", "whitespace" },
		{ "CNI_IFNAME=.", "is . or .." },
		{ "CNI_IFNAME=..", "is . or .." },
		{ "CNI_IFNAME=abcdefghijklmnop", "longer than 15" },
		{ "CNI_COMMAND=add", "\"add\"" },
		{ "CNI_COMMAND=FOO", "\"FOO\"" },
		{ "CNI_ARGS=FOO=bar", "\"FOO\"" },
		{ "CNI_ARGS=IP=10.1.2.300", "\"10.1.2.300\"" },
		{ "CNI_ARGS=MAC=zz:00:00:00:00:00", "\"zz:00:00:00:00:00\"" },
		{ "CNI_ARGS=novalue", "\"novalue\"" },
		{ "CNI_ARGS=IgnoreUnknown=maybe", "\"maybe\"" },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		Env e;
		char var[32];

		snprintf(var, sizeof(var), "%.*s", (int) (strchr(t[i].set, '=') - t[i].set), t[i].set);
		expect_err(env_build(&e, "ADD", t[i].set, NULL), CONF_OK, CNI_ERR_INVALID_ENV, var, t[i].sub);
	}
	/* 15 bytes is fine, and so is every allowed container ID character. */
	{
		CniRequest req;
		Env e;

		assert_int_equal(parse(&req,
				       env_build(&e, "ADD", "CNI_IFNAME=abcdefghijklmno", "CNI_CONTAINERID=Abc_1.2-3",
						 NULL),
				       CONF_OK),
				 0);
		cni_request_done(&req);
	}
	/* No CNI_COMMAND at all. */
	{
		char *env[] = { "CNI_PATH=/x", NULL };

		expect_err(env, CONF_OK, CNI_ERR_INVALID_ENV, "CNI_COMMAND", NULL);
	}
}

static void test_args(void **state) {
	CniArgs a = {};
	CniError err = {};
	char buf[IP_ADDR_STRLEN];

	assert_int_equal(cni_args_parse("", &a, &err), 0);
	assert_int_equal(a.n_ips, 0);

	assert_int_equal(
			cni_args_parse("IP=10.1.0.5,fd00::5/64;MAC=AA:bb:cc:dd:ee:ff;K8S_POD_NAME=p;K8S_POD_NAMESPACE=ns;"
				       "K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1",
				       &a, &err),
			0);
	assert_int_equal(a.n_ips, 2);
	assert_string_equal(ip_addr_to_string(&a.ips[0], buf), "10.1.0.5");
	assert_string_equal(ip_addr_to_string(&a.ips[1], buf), "fd00::5");
	assert_string_equal(a.mac, "aa:bb:cc:dd:ee:ff");
	assert_string_equal(a.k8s_pod_name, "p");
	assert_string_equal(a.k8s_pod_namespace, "ns");
	assert_string_equal(a.k8s_pod_infra_container_id, "abc");
	assert_string_equal(a.k8s_pod_uid, "u-1");
	assert_false(a.ignore_unknown);
	cni_args_done(&a);

	/* IgnoreUnknown applies wherever it appears, in any of its spellings. */
	assert_int_equal(cni_args_parse("FOO=bar;IgnoreUnknown=1", &a, &err), 0);
	assert_true(a.ignore_unknown);
	cni_args_done(&a);
	assert_int_equal(cni_args_parse("IgnoreUnknown=true;FOO=bar;X=", &a, &err), 0);
	cni_args_done(&a);
	assert_int_equal(cni_args_parse("IgnoreUnknown=0;FOO=bar", &a, &err), -EINVAL);
	assert_int_equal(err.code, CNI_ERR_INVALID_ENV);
	assert_non_null(strstr(err.msg, "\"FOO\""));
	cni_error_clear(&err);

	/* Keys are case-sensitive. */
	assert_int_equal(cni_args_parse("ip=10.0.0.1", &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"ip\""));
	cni_error_clear(&err);
	assert_int_equal(cni_args_parse("IP=10.0.0.1,bogus", &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "\"bogus\""));
	cni_error_clear(&err);
	assert_int_equal(cni_args_parse("=x", &a, &err), -EINVAL);
	cni_error_clear(&err);
	assert_int_equal(cni_args_parse("A=b=c", &a, &err), -EINVAL);
	cni_error_clear(&err);
	/* A trailing ';' is harmless. */
	assert_int_equal(cni_args_parse("K8S_POD_NAME=p;", &a, &err), 0);
	cni_args_done(&a);
}

static void test_config_errors(void **state) {
	Env e;
	char *const *env = env_build(&e, "ADD", NULL);

	expect_err(env, "{\"cniVersion\":", CNI_ERR_DECODE, "failed to decode config", "line 1");
	expect_err(env, "", CNI_ERR_DECODE, "failed to decode config", NULL);
	expect_err(env, "[1,2]", CNI_ERR_DECODE, "not a JSON object", NULL);
	expect_err(env, "\"str\"", CNI_ERR_DECODE, NULL, NULL);
	expect_err(env, CONF_OK " trailing", CNI_ERR_DECODE, NULL, NULL);
	expect_err(env, "{\"cniVersion\":\"9.9.9\",\"name\":\"n\",\"type\":\"t\"}", CNI_ERR_INCOMPATIBLE_VERSION,
		   "\"9.9.9\"", "1.1.0");
	expect_err(env, "{\"cniVersion\":1,\"name\":\"n\",\"type\":\"t\"}", CNI_ERR_INVALID_NETCONF, "cniVersion",
		   NULL);
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"type\":\"t\"}", CNI_ERR_INVALID_NETCONF, "\"name\"", "missing");
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":\"../x\",\"type\":\"t\"}", CNI_ERR_INVALID_NETCONF,
		   "\"name\"", "\"../x\"");
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":5,\"type\":\"t\"}", CNI_ERR_INVALID_NETCONF, "\"name\"",
		   NULL);
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", CNI_ERR_INVALID_NETCONF, "\"type\"", "missing");
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"../bin/sh\"}", CNI_ERR_INVALID_NETCONF,
		   "\"type\"", "\"../bin/sh\"");
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"ipam\":[]}", CNI_ERR_INVALID_NETCONF,
		   "\"ipam\"", NULL);
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"dns\":{\"nameservers\":\"x\"}}",
		   CNI_ERR_INVALID_NETCONF, "\"dns\"", NULL);
	expect_err(env,
		   "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"args\":{\"cni\":{\"ips\":[\"1.2.3\"]}}}",
		   CNI_ERR_INVALID_NETCONF, "args.cni.ips[0]", "\"1.2.3\"");
	expect_err(env, "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"runtimeConfig\":{\"mac\":\"nope\"}}",
		   CNI_ERR_INVALID_NETCONF, "runtimeConfig.mac", "\"nope\"");
	expect_err(env,
		   "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"runtimeConfig\":{\"portMappings\":"
		   "[{\"hostPort\":0,\"containerPort\":80}]}}",
		   CNI_ERR_INVALID_NETCONF, "portMappings[0].hostPort", NULL);
	expect_err(env,
		   "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"runtimeConfig\":{\"portMappings\":"
		   "[{\"hostPort\":8080,\"containerPort\":80,\"protocol\":\"icmp\"}]}}",
		   CNI_ERR_INVALID_NETCONF, "\"icmp\"", NULL);
	expect_err(env,
		   "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"runtimeConfig\":{\"bandwidth\":"
		   "{\"ingressRate\":-1}}}",
		   CNI_ERR_INVALID_NETCONF, "ingressRate", NULL);
	expect_err(env,
		   "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"prevResult\":{\"ips\":[{\"address\":\"x\"}]}}",
		   CNI_ERR_DECODE, "prevResult", "\"x\"");

	/* Command/version rules. */
	expect_err(env_build(&e, "CHECK", NULL), "{\"cniVersion\":\"0.3.1\",\"name\":\"n\",\"type\":\"t\"}",
		   CNI_ERR_INCOMPATIBLE_VERSION, "CHECK", "0.3.1");
	expect_err(env_build(&e, "GC", NULL), CONF_OK, CNI_ERR_INCOMPATIBLE_VERSION, "GC", "1.0.0");
	expect_err(env_build(&e, "STATUS", NULL), CONF_OK, CNI_ERR_INCOMPATIBLE_VERSION, "STATUS", NULL);
	/* No cniVersion means 0.1.0, which has no CHECK. */
	expect_err(env_build(&e, "CHECK", NULL), "{\"name\":\"n\",\"type\":\"t\"}", CNI_ERR_INCOMPATIBLE_VERSION,
		   "CHECK", NULL);
}

static void test_env_error_keeps_config_version(void **state) {
	CniRequest req;
	Env e;

	assert_true(parse(&req, env_build(&e, "ADD", "CNI_IFNAME=a/b", NULL),
			  "{\"cniVersion\":\"0.4.0\",\"name\":\"n\",\"type\":\"t\"}") < 0);
	assert_int_equal(req.version, CNI_VERSION_0_4_0);
	cni_request_done(&req);
}

static void test_config_full(void **state) {
	static const char conf[] =
			"{\"cniVersion\":\"1.1.0\",\"name\":\"k8s-pod-network\",\"type\":\"bridge\",\"extra\":{\"x\":1},"
			"\"ipam\":{\"type\":\"host-local\",\"subnet\":\"10.1.0.0/16\"},"
			"\"dns\":{\"nameservers\":[\"10.96.0.10\"],\"search\":[\"svc.cluster.local\"]},"
			"\"args\":{\"cni\":{\"ips\":[\"10.1.0.7/16\"],\"mac\":\"02:00:00:00:00:02\"}},"
			"\"runtimeConfig\":{\"ips\":[\"fd00::7\"],\"mac\":\"02:00:00:00:00:03\","
			"\"ipRanges\":[[{\"subnet\":\"10.2.0.0/24\"}]],"
			"\"portMappings\":[{\"HostPort\":8080,\"ContainerPort\":80,\"Protocol\":\"TCP\",\"HostIP\":\"\"},"
			"{\"hostPort\":53,\"containerPort\":53,\"protocol\":\"udp\",\"hostIP\":\"127.0.0.1\"}],"
			"\"bandwidth\":{\"IngressRate\":1000,\"ingressBurst\":2000,\"egressRate\":3000,\"EgressBurst\":4000}},"
			"\"prevResult\":{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"/x\"}],"
			"\"ips\":[{\"address\":\"10.1.0.7/16\",\"interface\":0,\"gateway\":\"10.1.0.1\"}]},"
			"\"cni.dev/valid-attachments\":[{\"containerID\":\"c1\",\"ifname\":\"eth0\"},"
			"{\"containerID\":\"c2\",\"ifname\":\"net1\"}]}";
	char buf[IP_ADDR_STRLEN];
	CniRequest req;
	Env e;

	if (parse(&req, env_build(&e, "ADD", "CNI_ARGS=IP=10.1.0.9;MAC=02:00:00:00:00:01;IgnoreUnknown=1;X=y", NULL),
		  conf) < 0)
		print_error("%s\n", req.error.msg);
	assert_int_equal(req.error.code, 0);
	assert_int_equal(req.version, CNI_VERSION_1_1_0);
	assert_string_equal(req.name, "k8s-pod-network");
	assert_non_null(req.ipam);
	assert_string_equal(json_string_value(json_object_get(req.ipam, "type")), "host-local");
	assert_string_equal(req.dns.nameservers[0], "10.96.0.10");
	assert_string_equal(req.dns.search[0], "svc.cluster.local");
	/* CNI_ARGS, then args.cni, then runtimeConfig; the last MAC wins. */
	assert_int_equal(req.n_req_ips, 3);
	assert_string_equal(ip_addr_to_string(&req.req_ips[0], buf), "10.1.0.9");
	assert_string_equal(ip_addr_to_string(&req.req_ips[1], buf), "10.1.0.7");
	assert_string_equal(ip_addr_to_string(&req.req_ips[2], buf), "fd00::7");
	assert_string_equal(req.req_mac, "02:00:00:00:00:03");
	assert_true(json_is_array(req.rc_ip_ranges));
	assert_int_equal(req.n_port_mappings, 2);
	assert_int_equal(req.port_mappings[0].host_port, 8080);
	assert_int_equal(req.port_mappings[0].container_port, 80);
	assert_string_equal(req.port_mappings[0].protocol, "tcp");
	assert_int_equal(req.port_mappings[0].host_ip.family, AF_UNSPEC);
	assert_string_equal(req.port_mappings[1].protocol, "udp");
	assert_string_equal(ip_addr_to_string(&req.port_mappings[1].host_ip, buf), "127.0.0.1");
	assert_true(req.has_bandwidth);
	assert_int_equal(req.bandwidth.ingress_rate, 1000);
	assert_int_equal(req.bandwidth.ingress_burst, 2000);
	assert_int_equal(req.bandwidth.egress_rate, 3000);
	assert_int_equal(req.bandwidth.egress_burst, 4000);
	assert_non_null(req.prev_result);
	assert_int_equal(req.prev_result->n_ips, 1);
	assert_int_equal(req.prev_result->ips[0].interface, 0);
	assert_string_equal(ip_addr_to_string(&req.prev_result->ips[0].gateway, buf), "10.1.0.1");
	assert_int_equal(req.n_valid_attachments, 2);
	assert_string_equal(req.valid_attachments[1].container_id, "c2");
	assert_string_equal(req.valid_attachments[1].ifname, "net1");
	assert_true(req.args.ignore_unknown);
	cni_request_done(&req);
}

static void test_legacy_attachments(void **state) {
	CniRequest req;
	Env e;

	assert_int_equal(parse(&req, env_build(&e, "GC", NULL),
			       "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\","
			       "\"cni.dev/attachments\":[{\"containerID\":\"c9\",\"ifname\":\"eth0\"}]}"),
			 0);
	assert_int_equal(req.n_valid_attachments, 1);
	assert_string_equal(req.valid_attachments[0].container_id, "c9");
	cni_request_done(&req);
	expect_err(env_build(&e, "GC", NULL),
		   "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"cni.dev/valid-attachments\":[{\"ifname\":\"e\"}]}",
		   CNI_ERR_INVALID_NETCONF, "cni.dev/valid-attachments", NULL);
}

static void test_version_command(void **state) {
	CniRequest req;
	char *env[] = { "CNI_COMMAND=VERSION", NULL };

	/* VERSION needs no environment and tolerates any stdin. */
	assert_int_equal(parse(&req, env, "garbage"), 0);
	assert_int_equal(req.version, CNI_VERSION_LATEST);
	cni_request_done(&req);
	assert_int_equal(parse(&req, env, "{\"cniVersion\":\"0.3.1\"}"), 0);
	assert_int_equal(req.version, CNI_VERSION_0_3_1);
	cni_request_done(&req);
}

static void test_versions_strings(void **state) {
	for (int v = 0; v < _CNI_VERSION_MAX; v++)
		assert_int_equal(cni_version_from_string(cni_version_to_string((CniVersion) v)), v);
	assert_int_equal(cni_version_from_string(NULL), CNI_VERSION_0_1_0);
	assert_int_equal(cni_version_from_string(""), CNI_VERSION_0_1_0);
	assert_int_equal(cni_version_from_string("1.0"), -EINVAL);
	assert_null(cni_version_to_string(_CNI_VERSION_MAX));
	for (int c = 0; c < _CNI_CMD_MAX; c++)
		assert_int_equal(cni_command_from_string(cni_command_to_string((CniCommand) c)), c);
	assert_int_equal(cni_command_from_string("add"), -EINVAL);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_ok),          cmocka_unit_test(test_env_required),
		cmocka_unit_test(test_env_invalid),     cmocka_unit_test(test_args),
		cmocka_unit_test(test_config_errors),   cmocka_unit_test(test_env_error_keeps_config_version),
		cmocka_unit_test(test_config_full),     cmocka_unit_test(test_legacy_attachments),
		cmocka_unit_test(test_version_command), cmocka_unit_test(test_versions_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
