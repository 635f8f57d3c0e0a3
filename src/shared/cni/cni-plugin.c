/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_main(): the one place that reads the environment and stdin, writes stdout and picks
 * the exit code. Everything a plugin does is reached through its PluginOps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"

#define ALL_VERSIONS ((1u << _CNI_VERSION_MAX) - 1)

static unsigned ops_versions(const PluginOps *ops) {
	return (ops->versions ?: ALL_VERSIONS) & ALL_VERSIONS;
}

static int print_json(json_t *j) {
	int r = 0;

	if (!j)
		return -ENOMEM;
	/* Four-space indent, keys in insertion order: byte-for-byte what the Go plugins print. */
	if (json_dumpf(j, stdout, JSON_INDENT(4) | JSON_PRESERVE_ORDER) < 0 || fputc('\n', stdout) == EOF)
		r = -EIO;
	if (fflush(stdout) == EOF || ferror(stdout))
		r = -EIO;
	json_decref(j);
	return r;
}

static void print_about(const PluginOps *ops) {
	unsigned mask = ops_versions(ops);
	bool first = true;

	if (ops->about)
		fprintf(stderr, "%s\n", ops->about);
	else
		fprintf(stderr, "CNI %s plugin (weft)\n", ops->name);
	fprintf(stderr, "CNI protocol versions supported: ");
	for (int v = 0; v < _CNI_VERSION_MAX; v++)
		if (mask & (1u << v)) {
			fprintf(stderr, "%s%s", first ? "" : ", ", cni_version_to_string((CniVersion) v));
			first = false;
		}
	fputc('\n', stderr);
}

static json_t *version_info(const PluginOps *ops, CniVersion v) {
	unsigned mask = ops_versions(ops);
	json_t *j = json_object(), *a = json_array();

	if (!j || !a || json_object_set_new(j, "cniVersion", json_string(cni_version_to_string(v))) < 0 ||
	    json_object_set(j, "supportedVersions", a) < 0) {
		json_decref(a);
		json_decref(j);
		return NULL;
	}
	for (int i = 0; i < _CNI_VERSION_MAX; i++)
		if ((mask & (1u << i)) &&
		    json_array_append_new(a, json_string(cni_version_to_string((CniVersion) i))) < 0) {
			json_decref(a);
			json_decref(j);
			return NULL;
		}
	json_decref(a);
	return j;
}

static int dispatch(const PluginOps *ops, CniRequest *req, void *conf) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	json_t *out;
	int r;

	switch (req->command) {
	case CNI_CMD_ADD:
		if (!ops->add)
			return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INTERNAL, "plugin %s does not implement ADD",
					ops->name);
		r = ops->add(req, conf, &res);
		if (r < 0)
			return r;
		if (!res)
			return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "plugin %s returned no result", ops->name);
		out = cni_result_to_json(res, req->version, &req->error);
		if (!out)
			return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL, "failed to convert result to %s",
					cni_version_to_string(req->version));
		r = print_json(out);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_IO, NULL, "failed to write result");
		return 0;
	case CNI_CMD_DEL:
		if (!ops->del)
			return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INTERNAL, "plugin %s does not implement DEL",
					ops->name);
		return ops->del(req, conf);
	case CNI_CMD_CHECK:
		if (!ops->check)
			return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INTERNAL, "plugin %s does not implement CHECK",
					ops->name);
		return ops->check(req, conf);
	/* SPEC 1.1: a plugin with nothing to collect or report simply succeeds. */
	case CNI_CMD_GC: return ops->gc ? ops->gc(req, conf) : 0;
	case CNI_CMD_STATUS: return ops->status ? ops->status(req, conf) : 0;
	default: return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "unsupported command");
	}
}

static int run(const PluginOps *ops, CniRequest *req, const char *input, size_t size) {
	_cleanup_free_ void *conf = NULL;
	char buf[128] = "";
	int r;

	r = cni_request_parse(req, NULL, input, size);
	if (r < 0)
		return r;

	if (!(ops_versions(ops) & (1u << req->version)) && req->command != CNI_CMD_VERSION) {
		for (int v = 0; v < _CNI_VERSION_MAX; v++)
			if (ops_versions(ops) & (1u << v))
				strcat(strcat(buf, *buf ? ", " : ""), cni_version_to_string((CniVersion) v));
		return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INCOMPATIBLE_VERSION,
				"incompatible CNI versions: config is \"%s\", plugin %s supports %s",
				cni_version_to_string(req->version), ops->name, buf);
	}
	if (req->command == CNI_CMD_VERSION) {
		r = print_json(version_info(ops, req->version));
		return r < 0 ? cni_fail_errno(req, r, CNI_ERR_IO, NULL, "failed to write version info") : 0;
	}

	conf = calloc(1, ops->conf_size ?: 1);
	if (!conf)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (ops->parse) {
		r = ops->parse(req, conf);
		if (r >= 0)
			r = dispatch(ops, req, conf);
	} else
		r = dispatch(ops, req, conf);
	if (ops->conf_done)
		ops->conf_done(conf);
	return r;
}

int plugin_main(const PluginOps *ops, int argc, char **argv) {
	_cleanup_free_ char *input = NULL;
	CniRequest req = { .command = _CNI_CMD_INVALID, .version = _CNI_VERSION_INVALID };
	size_t size = 0;
	int r;

	log_parse_environment();
	log_set_prefix(ops->name);

	/* Run by hand: say what we are (the reference prints its "about" line too). */
	if (isempty(getenv("CNI_COMMAND"))) {
		print_about(ops);
		return 0;
	}

	r = read_full_fd(STDIN_FILENO, &input, &size);
	if (r == -EBADF) /* no stdin at all: same as empty */
		r = 0, size = 0;
	if (r < 0) {
		cni_fail_errno(&req, r, CNI_ERR_IO, NULL, "failed to read config from stdin");
	} else {
		r = run(ops, &req, input, size);
		if (r < 0 && req.error.code == 0)
			/* An op that failed without saying why: keep the errno as the message. */
			cni_fail_errno(&req, r, CNI_ERR_INTERNAL, NULL, "%s %s failed", ops->name,
				       cni_command_to_string(req.command) ?: "?");
	}

	if (r < 0) {
		log_debug("%s: code %u: %s", cni_command_to_string(req.command) ?: "?", req.error.code,
			  req.error.msg ?: "");
		(void) print_json(cni_error_to_json(&req.error, req.version));
		cni_request_done(&req);
		return 1;
	}
	cni_request_done(&req);
	return 0;
}
