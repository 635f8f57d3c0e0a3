/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `dhcp` IPAM plugin (containernetworking/plugins 1.1.1 plugins/ipam/dhcp). The
 * plugin does not speak DHCP: it forwards ADD/DEL/CHECK/GC/STATUS to `dhcp daemon` over its
 * unix socket (dhcp-proto.h), which runs the DHCP client inside the pod's namespace and keeps
 * the lease. ipam keys: daemonSocketPath, provide [{option, value, fromArg}],
 * request [{option, skipDefault}].
 *
 * Differences from the reference, on purpose:
 *   - DEL and GC succeed (with a warning) when the daemon is unreachable: it keeps leases in
 *     memory only, so a daemon that is not running holds nothing to release, and a failing DEL
 *     would wedge pod deletion.
 *   - CHECK asks whether the lease is held (and matches prevResult) instead of re-running ADD.
 *   - GC and STATUS (CNI 1.1) exist; STATUS fails with code 50 when the daemon is unreachable.
 *   - Option 121 is requested by default besides 1 and 3 (servers send it only when asked).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"
#include "dhcp.h"
#include "shared/dhcp/dhcp-proto.h"

/* A request waits for the daemon's own acquisition timeout; this is only a backstop against a
 * wedged daemon (runtimes time ADD out long before). */
#define CALL_TIMEOUT_USEC (5ULL * 60 * 1000000)

typedef struct DhcpConf {
	char *socket_path;
	json_t *provide; /* [{"code":N,"value":S}] for the daemon */
	json_t *request; /* [N...] parameter request list */
} DhcpConf;

static void dhcp_conf_done(void *userdata) {
	DhcpConf *c = userdata;

	free(c->socket_path);
	json_decref(c->provide);
	json_decref(c->request);
}

/* CNI_ARGS "K=V;K2=V2" lookup, as the reference's prepareOptions() splits it. */
static char *cni_arg_value(const char *args, const char *key) {
	_cleanup_strv_free_ char **pairs = NULL;

	if (isempty(args) || isempty(key) || strv_split(args, ";", &pairs) < 0)
		return NULL;
	for (char **p = pairs; *p; p++) {
		char *eq = strchr(*p, '=');
		if (eq && (size_t) (eq - *p) == strlen(key) && strncmp(*p, key, strlen(key)) == 0)
			return strdup(eq + 1);
	}
	return NULL;
}

static int parse_provide(CniRequest *req, DhcpConf *c, json_t *arr) {
	json_t *e;
	size_t i;

	if (arr && !json_is_null(arr) && !json_is_array(arr))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "ipam.provide: expected an array");
	json_array_foreach(arr, i, e) {
		json_t *opt = cni_json_get(e, "option"), *val = cni_json_get(e, "value"),
		       *from = cni_json_get(e, "fromArg");
		_cleanup_free_ char *argval = NULL;
		const char *v = NULL;
		int code;

		if (!json_is_string(opt) || (code = dhcp_option_from_name(json_string_value(opt))) < 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.provide[%zu]: Can not parse option \"%s\"", i,
					json_is_string(opt) ? json_string_value(opt) : "(missing)");
		if (code == 0 || code == 255 || code == 53)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.provide[%zu]: option %d cannot be provided", i, code);
		if (val && !json_is_null(val) && !json_is_string(val))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.provide[%zu].value: expected a string", i);
		if (from && !json_is_null(from) && !json_is_string(from))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.provide[%zu].fromArg: expected a string", i);
		if (!isempty(json_string_value(val)))
			v = json_string_value(val);
		/* fromArg wins when CNI_ARGS has it (reference order). */
		if (json_is_string(from) && (argval = cni_arg_value(req->args_raw, json_string_value(from))))
			v = argval;
		if (!v)
			continue;
		if (strlen(v) > 255)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.provide[%zu]: value too long for option \"%s\" (%zu bytes, at most 255)",
					i, json_string_value(opt), strlen(v));
		if (json_array_append_new(c->provide, json_pack("{s:i,s:s}", "code", code, "value", v)) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	}
	return 0;
}

static int parse_request(CniRequest *req, DhcpConf *c, json_t *arr) {
	static const uint8_t defaults[] = DHCP_DEFAULT_PRL;
	bool seen[256] = {}, skip_default = false;
	json_t *e;
	size_t i;

	if (arr && !json_is_null(arr) && !json_is_array(arr))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "ipam.request: expected an array");
	json_array_foreach(arr, i, e) {
		json_t *opt = cni_json_get(e, "option"), *skip = cni_json_get(e, "skipDefault");
		int code;

		if (json_is_true(skip))
			skip_default = true;
		/* {"skipDefault":true} alone is how the reference's README turns the defaults off. */
		if (!opt && skip)
			continue;
		if (!json_is_string(opt) || (code = dhcp_option_from_name(json_string_value(opt))) < 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.request[%zu]: Can not parse option \"%s\"", i,
					json_is_string(opt) ? json_string_value(opt) : "(missing)");
		if (code == 0 || code == 255)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.request[%zu]: option %d cannot be requested", i, code);
		if (!seen[code] && json_array_append_new(c->request, json_integer(code)) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		seen[code] = true;
	}
	if (!skip_default)
		for (i = 0; i < ELEMENTSOF(defaults); i++)
			if (!seen[defaults[i]] && json_array_append_new(c->request, json_integer(defaults[i])) < 0)
				return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return 0;
}

static int dhcp_parse(CniRequest *req, void *userdata) {
	DhcpConf *c = userdata;
	json_t *p;
	int r;

	if (!json_is_object(req->ipam))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "IPAM config missing 'ipam' key");
	p = cni_json_get(req->ipam, "daemonSocketPath");
	if (p && !json_is_null(p) && !json_is_string(p))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "ipam.daemonSocketPath: expected a string");
	c->socket_path = strdup(isempty(json_string_value(p)) ? DHCP_DEFAULT_SOCKET_PATH : json_string_value(p));
	c->provide = json_array();
	c->request = json_array();
	if (!c->socket_path || !c->provide || !c->request)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = parse_provide(req, c, cni_json_get(req->ipam, "provide"));
	if (r < 0)
		return r;
	return parse_request(req, c, cni_json_get(req->ipam, "request"));
}

/* Sends one request. *ret gets the answer when it says ok; a negative return has req->error set
 * (the daemon's code and message, or "error dialing" naming the socket). */
static int call(CniRequest *req, const DhcpConf *c, json_t *msg, json_t **ret) {
	_cleanup_(json_decrefp) json_t *answer = NULL;
	json_t *ok;
	int r;

	if (!msg)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = dhcp_proto_call(c->socket_path, msg, CALL_TIMEOUT_USEC, &answer);
	json_decref(msg);
	if (r == -ENOENT || r == -ECONNREFUSED || r == -ENOTSOCK || r == -EACCES || r == -ENAMETOOLONG)
		/* Wording of the reference: "error dialing DHCP daemon: dial unix PATH: connect: ..." */
		return cni_fail(req, r, CNI_ERR_INTERNAL,
				"error dialing DHCP daemon: dial unix %s: connect: %s (is `dhcp daemon` running?)",
				c->socket_path, strerror(-r));
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "error calling DHCP daemon at %s",
				      c->socket_path);
	ok = json_object_get(answer, "ok");
	if (!json_is_true(ok)) {
		json_int_t code = json_integer_value(json_object_get(answer, "code"));
		const char *m = json_string_value(json_object_get(answer, "msg"));
		return cni_fail(req, -EIO, code > 0 ? (unsigned) code : CNI_ERR_INTERNAL, "%s",
				m ?: "DHCP daemon failed without a message");
	}
	if (ret)
		*ret = TAKE_PTR(answer);
	return 0;
}

static bool dialing_failed(const CniRequest *req) {
	return req->error.msg && startswith(req->error.msg, "error dialing DHCP daemon");
}

static json_t *attachment_msg(const CniRequest *req, const char *op) {
	return json_pack("{s:s,s:s?,s:s?,s:s?}", "op", op, "containerId", req->container_id, "network", req->name,
			 "ifname", req->ifname);
}

static int dhcp_add(CniRequest *req, void *userdata, CniResult **ret) {
	DhcpConf *c = userdata;
	_cleanup_(json_decrefp) json_t *answer = NULL;
	_cleanup_free_ char *netns = NULL;
	CniResult *res = NULL;
	json_t *msg;
	int r;

	if (isempty(req->netns))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "required env variable CNI_NETNS missing");
	/* The daemon may run with another working directory: send an absolute path (reference). */
	if (req->netns[0] != '/') {
		_cleanup_free_ char *cwd = get_current_dir_name();
		netns = cwd ? strdup_printf("%s/%s", cwd, req->netns) : NULL;
	} else
		netns = strdup(req->netns);
	if (!netns)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	msg = attachment_msg(req, "add");
	if (msg &&
	    (json_object_set_new(msg, "netns", json_string(netns)) < 0 ||
	     json_object_set(msg, "request", c->request) < 0 || json_object_set(msg, "provide", c->provide) < 0)) {
		json_decref(msg);
		msg = NULL;
	}
	r = call(req, c, msg, &answer);
	if (r < 0)
		return r;
	r = cni_result_from_json(json_object_get(answer, "result"), CNI_VERSION_1_1_0, &res, &req->error);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "DHCP daemon returned an invalid result");
	res->version = req->version;
	*ret = res;
	return 0;
}

static int dhcp_del(CniRequest *req, void *userdata) {
	DhcpConf *c = userdata;
	int r;

	r = call(req, c, attachment_msg(req, "del"), NULL);
	if (r < 0 && dialing_failed(req)) {
		log_warning("%s; nothing to release", req->error.msg);
		cni_error_clear(&req->error);
		return 0;
	}
	return r;
}

static int dhcp_check(CniRequest *req, void *userdata) {
	DhcpConf *c = userdata;
	_cleanup_(json_decrefp) json_t *answer = NULL;
	_cleanup_(cni_result_freep) CniResult *lease = NULL;
	char as[IP_PREFIX_STRLEN];
	int r;

	r = call(req, c, attachment_msg(req, "check"), &answer);
	if (r < 0)
		return r;
	r = cni_result_from_json(json_object_get(answer, "result"), CNI_VERSION_1_1_0, &lease, &req->error);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "DHCP daemon returned an invalid result");
	if (!req->prev_result)
		return 0;
	for (size_t i = 0; i < lease->n_ips; i++) {
		bool found = false;
		for (size_t k = 0; k < req->prev_result->n_ips && !found; k++)
			found = ip_prefix_equal(&lease->ips[i].address, &req->prev_result->ips[k].address);
		if (!found)
			return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL, "DHCP lease %s of %s is not in prevResult",
					ip_prefix_to_string(&lease->ips[i].address, as), req->ifname ?: "");
	}
	return 0;
}

static int dhcp_gc(CniRequest *req, void *userdata) {
	DhcpConf *c = userdata;
	json_t *msg, *valid;
	int r;

	valid = json_array();
	for (size_t i = 0; valid && i < req->n_valid_attachments; i++)
		if (json_array_append_new(valid, json_pack("{s:s?,s:s?}", "containerId",
							   req->valid_attachments[i].container_id, "ifname",
							   req->valid_attachments[i].ifname)) < 0) {
			json_decref(valid);
			valid = NULL;
		}
	msg = valid ? json_pack("{s:s,s:s?,s:o}", "op", "gc", "network", req->name, "valid", valid) : NULL;
	r = call(req, c, msg, NULL);
	if (r < 0 && dialing_failed(req)) {
		log_warning("%s; nothing to collect", req->error.msg);
		cni_error_clear(&req->error);
		return 0;
	}
	return r;
}

static int dhcp_status(CniRequest *req, void *userdata) {
	DhcpConf *c = userdata;
	int r;

	r = call(req, c, json_pack("{s:s}", "op", "status"), NULL);
	if (r < 0 && dialing_failed(req)) {
		_cleanup_free_ char *m = TAKE_PTR(req->error.msg);
		cni_error_clear(&req->error);
		return cni_fail(req, r, CNI_ERR_PLUGIN_NOT_AVAILABLE, "%s", m);
	}
	return r;
}

static const PluginOps dhcp_ops = {
	.name = "dhcp",
	.about = "CNI dhcp plugin (weft); run `dhcp daemon` for the DHCP client daemon",
	.conf_size = sizeof(DhcpConf),
	.parse = dhcp_parse,
	.conf_done = dhcp_conf_done,
	.add = dhcp_add,
	.del = dhcp_del,
	.check = dhcp_check,
	.gc = dhcp_gc,
	.status = dhcp_status,
};

int main(int argc, char *argv[]) {
	if (argc > 1 && streq(argv[1], "daemon"))
		return dhcp_daemon_main(argc - 1, argv + 1);
	return plugin_main(&dhcp_ops, argc, argv);
}
