/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cni_request_parse(): the environment and the stdin config of one plugin invocation.
 * Order of checks follows the reference skel (command, environment, then config) so the same
 * bad input yields the same error code; the config's cniVersion is peeked first so even an
 * environment error is printed with the caller's version.
 */
#include <ctype.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"

extern char **environ;

static const char *env_get(char *const *envp, const char *name) {
	size_t l = strlen(name);

	for (char *const *e = envp ?: environ; e && *e; e++)
		if (strncmp(*e, name, l) == 0 && (*e)[l] == '=')
			return *e + l + 1;
	return NULL;
}

bool cni_name_is_valid(const char *s) {
	/* SPEC: container IDs and network names "must start with an alphanumeric character,
	 * optionally followed by any combination of one or more alphanumeric characters,
	 * underscore, dot or hyphen". Both end up in file names (IPAM store, result cache). */
	if (isempty(s) || !isalnum((unsigned char) s[0]))
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!isalnum((unsigned char) *p) && !strchr("_.-", *p))
			return false;
	return true;
}

const char *cni_ifname_invalid_reason(const char *s) {
	if (isempty(s))
		return "is empty";
	if (strlen(s) >= IFNAMSIZ)
		return "is longer than 15 bytes";
	if (streq(s, ".") || streq(s, ".."))
		return "is . or ..";
	for (const char *p = s; *p; p++) {
		if (*p == '/')
			return "contains '/'";
		if (*p == ':')
			return "contains ':'";
		if (isspace((unsigned char) *p))
			return "contains whitespace";
	}
	return NULL;
}

void cni_request_done(CniRequest *req) {
	if (!req)
		return;
	free(req->container_id);
	free(req->netns);
	free(req->ifname);
	free(req->cni_path);
	free(req->args_raw);
	cni_args_done(&req->args);
	json_decref(req->config);
	cni_dns_done(&req->dns);
	cni_result_free(req->prev_result);
	free(req->req_ips);
	free(req->req_mac);
	free(req->port_mappings);
	for (size_t i = 0; i < req->n_valid_attachments; i++) {
		free(req->valid_attachments[i].container_id);
		free(req->valid_attachments[i].ifname);
	}
	free(req->valid_attachments);
	free(req->config_raw);
	cni_error_clear(&req->error);
	*req = (CniRequest) { .command = _CNI_CMD_INVALID, .version = _CNI_VERSION_INVALID };
}

static int dup_env(CniRequest *req, char *const *envp, const char *name, char **ret) {
	const char *v = env_get(envp, name);

	/* The reference treats "set but empty" as absent (Go's Getenv cannot tell them apart). */
	if (isempty(v))
		return 0;
	*ret = strdup(v);
	return *ret ? 1 : cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
}

static int parse_env(CniRequest *req, char *const *envp) {
	enum {
		NEED_CID = 1,
		NEED_NETNS = 2,
		NEED_IFNAME = 4,
		NEED_PATH = 8
	};
	/* SPEC 1.0.0/1.1.0 list CNI_PATH as optional for ADD, CHECK and DEL: only a plugin that
	 * runs another one needs it, and cni_ipam_exec() says so when it is missing. The reference
	 * skel requires it for every command (a deliberate difference: loopback and every plugin
	 * without delegated IPAM work without it). Older spec versions never made it required
	 * either, so this does not depend on cniVersion. */
	static const unsigned need[_CNI_CMD_MAX] = {
		[CNI_CMD_ADD] = NEED_CID | NEED_NETNS | NEED_IFNAME,
		[CNI_CMD_CHECK] = NEED_CID | NEED_NETNS | NEED_IFNAME,
		[CNI_CMD_DEL] = NEED_CID | NEED_IFNAME,
		[CNI_CMD_GC] = NEED_PATH,
		[CNI_CMD_STATUS] = NEED_PATH,
	};
	char missing[128] = "";
	const char *why;
	int r;

	if ((r = dup_env(req, envp, "CNI_CONTAINERID", &req->container_id)) < 0 ||
	    (r = dup_env(req, envp, "CNI_NETNS", &req->netns)) < 0 ||
	    (r = dup_env(req, envp, "CNI_IFNAME", &req->ifname)) < 0 ||
	    (r = dup_env(req, envp, "CNI_PATH", &req->cni_path)) < 0 ||
	    (r = dup_env(req, envp, "CNI_ARGS", &req->args_raw)) < 0)
		return r;

#define ADD_MISSING(flag, field, name)                                                                                 \
	if ((need[req->command] & (flag)) && !req->field)                                                              \
	strcat(strcat(missing, *missing ? ", " : ""), name)
	ADD_MISSING(NEED_CID, container_id, "CNI_CONTAINERID");
	ADD_MISSING(NEED_NETNS, netns, "CNI_NETNS");
	ADD_MISSING(NEED_IFNAME, ifname, "CNI_IFNAME");
	ADD_MISSING(NEED_PATH, cni_path, "CNI_PATH");
#undef ADD_MISSING
	if (*missing)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "required environment variables missing for %s: %s",
				cni_command_to_string(req->command), missing);

	if (req->container_id && !cni_name_is_valid(req->container_id))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV,
				"CNI_CONTAINERID \"%s\" is invalid: must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$",
				req->container_id);
	if (req->ifname && (why = cni_ifname_invalid_reason(req->ifname)))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_IFNAME \"%s\" is invalid: %s", req->ifname,
				why);

	return cni_args_parse(req->args_raw, &req->args, &req->error);
}

#define netconf_fail(req, ...) cni_fail((req), -EINVAL, CNI_ERR_INVALID_NETCONF, __VA_ARGS__)

static int append_req_ip(CniRequest *req, const IpAddr *a) {
	IpAddr *n = reallocarray(req->req_ips, req->n_req_ips + 1, sizeof(*n));

	if (!n)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	req->req_ips = n;
	n[req->n_req_ips++] = *a;
	return 0;
}

static int set_req_mac(CniRequest *req, const char *where, const char *s) {
	unsigned char mac[6];
	char buf[18];

	if (isempty(s))
		return 0;
	if (ether_addr_parse(s, mac) < 0)
		return netconf_fail(req, "%s \"%s\" is invalid: not a MAC address", where, s);
	free(req->req_mac);
	req->req_mac = strdup(ether_addr_format(mac, buf));
	return req->req_mac ? 0 : cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
}

/* "ips": ["10.1.0.5", "10.1.0.6/24"] and "mac": "..." in args.cni and runtimeConfig. */
static int parse_ips_mac(CniRequest *req, json_t *obj, const char *where) {
	json_t *ips = cni_json_get(obj, "ips"), *mac = cni_json_get(obj, "mac"), *e;
	size_t i;
	int r;

	if (ips && !json_is_null(ips)) {
		if (!json_is_array(ips))
			return netconf_fail(req, "%s.ips is invalid: not an array", where);
		json_array_foreach(ips, i, e) {
			IpAddr a;

			if (!json_is_string(e))
				return netconf_fail(req, "%s.ips[%zu] is invalid: not a string", where, i);
			if (cni_parse_requested_ip(json_string_value(e), &a) < 0)
				return netconf_fail(req, "%s.ips[%zu] \"%s\" is invalid: not an IP address", where, i,
						    json_string_value(e));
			r = append_req_ip(req, &a);
			if (r < 0)
				return r;
		}
	}
	if (mac && !json_is_null(mac)) {
		_cleanup_free_ char *what = strdup_printf("%s.mac", where);

		if (!json_is_string(mac))
			return netconf_fail(req, "%s.mac is invalid: not a string", where);
		return set_req_mac(req, what ?: "mac", json_string_value(mac));
	}
	return 0;
}

static int get_port(CniRequest *req, json_t *pm, size_t idx, const char *key, uint16_t *ret) {
	json_t *v = cni_json_get(pm, key);

	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
		return netconf_fail(req, "runtimeConfig.portMappings[%zu].%s is invalid: expected a port 1..65535", idx,
				    key);
	*ret = (uint16_t) json_integer_value(v);
	return 0;
}

static int parse_port_mappings(CniRequest *req, json_t *a) {
	json_t *pm;
	size_t i;
	int r;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return netconf_fail(req, "runtimeConfig.portMappings is invalid: not an array");
	req->port_mappings = calloc(json_array_size(a) ?: 1, sizeof(CniPortMapping));
	if (!req->port_mappings)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	json_array_foreach(a, i, pm) {
		CniPortMapping *m = &req->port_mappings[i];
		json_t *proto, *hip;

		if (!json_is_object(pm))
			return netconf_fail(req, "runtimeConfig.portMappings[%zu] is invalid: not an object", i);
		/* Key case varies by runtime (containerd: HostPort, podman: hostPort): cni_json_get. */
		if ((r = get_port(req, pm, i, "hostPort", &m->host_port)) < 0 ||
		    (r = get_port(req, pm, i, "containerPort", &m->container_port)) < 0)
			return r;
		proto = cni_json_get(pm, "protocol");
		if (proto && !json_is_null(proto)) {
			const char *p = json_string_value(proto);
			size_t k;

			if (!p || strlen(p) >= sizeof(m->protocol))
				return netconf_fail(req, "runtimeConfig.portMappings[%zu].protocol is invalid", i);
			for (k = 0; p[k]; k++)
				m->protocol[k] = (char) tolower((unsigned char) p[k]);
			m->protocol[k] = '\0';
		}
		if (!*m->protocol)
			strcpy(m->protocol, "tcp");
		if (!streq(m->protocol, "tcp") && !streq(m->protocol, "udp") && !streq(m->protocol, "sctp"))
			return netconf_fail(
					req,
					"runtimeConfig.portMappings[%zu].protocol \"%s\" is invalid: expected tcp, udp or sctp",
					i, m->protocol);
		hip = cni_json_get(pm, "hostIP");
		m->host_ip.family = AF_UNSPEC;
		if (hip && !json_is_null(hip)) {
			if (!json_is_string(hip))
				return netconf_fail(req,
						    "runtimeConfig.portMappings[%zu].hostIP is invalid: not a string",
						    i);
			if (!isempty(json_string_value(hip)) && ip_addr_parse(json_string_value(hip), &m->host_ip) < 0)
				return netconf_fail(
						req,
						"runtimeConfig.portMappings[%zu].hostIP \"%s\" is invalid: not an IP address",
						i, json_string_value(hip));
		}
		req->n_port_mappings++;
	}
	return 0;
}

static int parse_bandwidth(CniRequest *req, json_t *bw) {
	static const struct {
		const char *key;
		size_t offset;
	} fields[] = {
		{ "ingressRate", offsetof(CniBandwidth, ingress_rate) },
		{ "ingressBurst", offsetof(CniBandwidth, ingress_burst) },
		{ "egressRate", offsetof(CniBandwidth, egress_rate) },
		{ "egressBurst", offsetof(CniBandwidth, egress_burst) },
	};

	if (!bw || json_is_null(bw))
		return 0;
	if (!json_is_object(bw))
		return netconf_fail(req, "runtimeConfig.bandwidth is invalid: not an object");
	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		json_t *v = cni_json_get(bw, fields[i].key);

		if (!v || json_is_null(v))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return netconf_fail(req,
					    "runtimeConfig.bandwidth.%s is invalid: expected a non-negative integer",
					    fields[i].key);
		*(uint64_t *) ((char *) &req->bandwidth + fields[i].offset) = (uint64_t) json_integer_value(v);
	}
	req->has_bandwidth = true;
	return 0;
}

static int parse_attachments(CniRequest *req) {
	const char *key = "cni.dev/valid-attachments";
	json_t *a = cni_json_get(req->config, key), *e;
	size_t i;

	if (!a || json_is_null(a)) {
		key = "cni.dev/attachments"; /* name used by the 1.1.0 drafts */
		a = cni_json_get(req->config, key);
	}
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return netconf_fail(req, "\"%s\" is invalid: not an array", key);
	req->valid_attachments = calloc(json_array_size(a) ?: 1, sizeof(CniAttachment));
	if (!req->valid_attachments)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	json_array_foreach(a, i, e) {
		const char *cid = json_string_value(cni_json_get(e, "containerID"));
		const char *ifn = json_string_value(cni_json_get(e, "ifname"));
		CniAttachment *at = &req->valid_attachments[i];

		if (isempty(cid) || isempty(ifn))
			return netconf_fail(req, "\"%s\"[%zu] is invalid: needs string \"containerID\" and \"ifname\"",
					    key, i);
		at->container_id = strdup(cid);
		at->ifname = strdup(ifn);
		req->n_valid_attachments++;
		if (!at->container_id || !at->ifname)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	}
	return 0;
}

static const char *supported_list(char buf[static 128]) {
	*buf = '\0';
	for (int v = 0; v < _CNI_VERSION_MAX; v++)
		strcat(strcat(buf, v ? ", " : ""), cni_version_to_string((CniVersion) v));
	return buf;
}

static int parse_config(CniRequest *req) {
	json_t *j = req->config, *v, *rc, *args;
	const char *s;
	char buf[128];
	int r;

	v = cni_json_get(j, "cniVersion");
	if (v && !json_is_null(v) && !json_is_string(v))
		return netconf_fail(req, "\"cniVersion\" is invalid: not a string");
	s = json_string_value(v);
	req->version = cni_version_from_string(s);
	if (req->version < 0)
		return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INCOMPATIBLE_VERSION,
				"incompatible CNI versions: config is \"%s\", plugin supports %s", s,
				supported_list(buf));
	if (req->command == CNI_CMD_CHECK && req->version < CNI_VERSION_0_4_0)
		return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INCOMPATIBLE_VERSION,
				"config version \"%s\" does not allow CHECK (needs 0.4.0 or newer)", s ?: "0.1.0");
	if ((req->command == CNI_CMD_GC || req->command == CNI_CMD_STATUS) && req->version < CNI_VERSION_1_1_0)
		return cni_fail(req, -EOPNOTSUPP, CNI_ERR_INCOMPATIBLE_VERSION,
				"config version \"%s\" does not allow %s (needs 1.1.0 or newer)", s ?: "0.1.0",
				cni_command_to_string(req->command));

	v = cni_json_get(j, "name");
	if (!v || json_is_null(v))
		return netconf_fail(req, "\"name\" is missing");
	if (!json_is_string(v) || !cni_name_is_valid(json_string_value(v)))
		return netconf_fail(req, "\"name\" %s%s%s is invalid: must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$",
				    json_is_string(v) ? "\"" : "",
				    json_is_string(v) ? json_string_value(v) : "(not a string)",
				    json_is_string(v) ? "\"" : "");
	req->name = json_string_value(v);

	v = cni_json_get(j, "type");
	if (!v || json_is_null(v))
		return netconf_fail(req, "\"type\" is missing");
	s = json_string_value(v);
	if (isempty(s) || strchr(s, '/') || streq(s, ".") || streq(s, ".."))
		return netconf_fail(req, "\"type\" %s%s%s is invalid: must be a plain plugin file name", s ? "\"" : "",
				    s ?: "(not a string)", s ? "\"" : "");
	req->type = s;

	v = cni_json_get(j, "ipam");
	if (v && !json_is_null(v)) {
		if (!json_is_object(v))
			return netconf_fail(req, "\"ipam\" is invalid: not an object");
		req->ipam = v;
	}

	v = cni_json_get(j, "dns");
	if (v && !json_is_null(v)) {
		r = cni_dns_from_json(v, &req->dns);
		if (r == -ENOMEM)
			return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
		if (r < 0)
			return netconf_fail(req, "\"dns\" is invalid: expected {nameservers, domain, search, options}");
	}

	/* Requested addressing, in the reference plugins' merge order: CNI_ARGS, args.cni, runtimeConfig. */
	for (size_t i = 0; i < req->args.n_ips; i++) {
		r = append_req_ip(req, &req->args.ips[i]);
		if (r < 0)
			return r;
	}
	if (req->args.mac && (r = set_req_mac(req, "CNI_ARGS MAC", req->args.mac)) < 0)
		return r;

	args = cni_json_get(j, "args");
	if (args && !json_is_null(args)) {
		json_t *cni;

		if (!json_is_object(args))
			return netconf_fail(req, "\"args\" is invalid: not an object");
		cni = cni_json_get(args, "cni");
		if (cni && !json_is_null(cni)) {
			if (!json_is_object(cni))
				return netconf_fail(req, "\"args.cni\" is invalid: not an object");
			r = parse_ips_mac(req, cni, "args.cni");
			if (r < 0)
				return r;
		}
	}

	rc = cni_json_get(j, "runtimeConfig");
	if (rc && !json_is_null(rc)) {
		if (!json_is_object(rc))
			return netconf_fail(req, "\"runtimeConfig\" is invalid: not an object");
		r = parse_ips_mac(req, rc, "runtimeConfig");
		if (r < 0)
			return r;
		v = cni_json_get(rc, "ipRanges");
		if (v && !json_is_null(v)) {
			if (!json_is_array(v))
				return netconf_fail(req, "runtimeConfig.ipRanges is invalid: not an array");
			req->rc_ip_ranges = v;
		}
		r = parse_port_mappings(req, cni_json_get(rc, "portMappings"));
		if (r < 0)
			return r;
		r = parse_bandwidth(req, cni_json_get(rc, "bandwidth"));
		if (r < 0)
			return r;
	}

	v = cni_json_get(j, "prevResult");
	if (v && !json_is_null(v)) {
		CniError e = {};

		r = cni_result_from_json(v, req->version, &req->prev_result, &e);
		if (r < 0) {
			cni_fail(req, r, e.code ?: CNI_ERR_DECODE, "\"prevResult\" is invalid: %s",
				 e.msg ?: "malformed");
			cni_error_clear(&e);
			return r;
		}
	}

	return parse_attachments(req);
}

int cni_request_parse(CniRequest *req, char *const *envp, const char *config, size_t config_len) {
	const char *cmd;
	json_error_t jerr = {};
	json_t *peek;
	int r;

	*req = (CniRequest) { .command = _CNI_CMD_INVALID, .version = _CNI_VERSION_INVALID };

	if (config && config_len > 0) {
		req->config_raw = malloc(config_len + 1);
		if (!req->config_raw)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		memcpy(req->config_raw, config, config_len);
		req->config_raw[config_len] = '\0';
		req->config_raw_len = config_len;
		req->config = json_loadb(config, config_len, 0, &jerr);
	} else
		snprintf(jerr.text, sizeof(jerr.text), "empty input");
	/* So that even an environment error is reported in the caller's version. */
	peek = cni_json_get(req->config, "cniVersion");
	if (json_is_object(req->config) && (!peek || json_is_string(peek)))
		req->version = cni_version_from_string(json_string_value(peek));

	cmd = env_get(envp, "CNI_COMMAND");
	if (isempty(cmd))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_COMMAND is not set");
	req->command = cni_command_from_string(cmd);
	if (req->command < 0)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV,
				"CNI_COMMAND \"%s\" is invalid: expected ADD, DEL, CHECK, GC, STATUS or VERSION", cmd);

	/* VERSION needs nothing and must not fail on an empty or odd stdin. */
	if (req->command == CNI_CMD_VERSION) {
		if (req->version < 0)
			req->version = CNI_VERSION_LATEST;
		return 0;
	}

	r = parse_env(req, envp);
	if (r < 0)
		return r;

	if (!req->config) {
		if (jerr.line > 0)
			return cni_fail(req, -EINVAL, CNI_ERR_DECODE,
					"failed to decode config: %s (line %d, column %d)", jerr.text, jerr.line,
					jerr.column);
		return cni_fail(req, -EINVAL, CNI_ERR_DECODE, "failed to decode config: %s", jerr.text);
	}
	if (!json_is_object(req->config))
		return cni_fail(req, -EINVAL, CNI_ERR_DECODE, "failed to decode config: not a JSON object");

	return parse_config(req);
}
