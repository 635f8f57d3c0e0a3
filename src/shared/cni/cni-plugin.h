/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The plugin side of the protocol: the parsed request (environment + stdin config) and
 * plugin_main(), the only place that reads the environment/stdin, writes stdout and picks
 * the exit code. A plugin fills one PluginOps and calls plugin_main() from main().
 */

#include <jansson.h>

#include "shared/cni/cni-types.h"

typedef enum CniCommand {
	CNI_CMD_ADD,
	CNI_CMD_DEL,
	CNI_CMD_CHECK,
	CNI_CMD_GC,
	CNI_CMD_STATUS,
	CNI_CMD_VERSION,
	_CNI_CMD_MAX,
	_CNI_CMD_INVALID = -EINVAL,
} CniCommand;

CniCommand cni_command_from_string(const char *s);
const char *cni_command_to_string(CniCommand c);

/* A port mapping from runtimeConfig.portMappings (key case tolerated: hostPort/HostPort ...). */
typedef struct CniPortMapping {
	uint16_t host_port;
	uint16_t container_port;
	char protocol[8]; /* "tcp", "udp", "sctp" (lower-cased) */
	IpAddr host_ip;   /* AF_UNSPEC = all */
} CniPortMapping;

typedef struct CniBandwidth {
	uint64_t ingress_rate, ingress_burst, egress_rate, egress_burst; /* bits/s and bits; 0 = unset */
} CniBandwidth;

/* CNI_ARGS, parsed. Unknown keys are an error unless IgnoreUnknown=1 (or true). */
typedef struct CniArgs {
	IpAddr *ips; /* IP=a,b (CNI_ARGS) */
	size_t n_ips;
	char *mac; /* MAC= */
	bool ignore_unknown;
	char *k8s_pod_name, *k8s_pod_namespace, *k8s_pod_infra_container_id, *k8s_pod_uid;
} CniArgs;

/* Valid attachment from a GC request (cni.dev/valid-attachments or cni.dev/attachments). */
typedef struct CniAttachment {
	char *container_id;
	char *ifname;
} CniAttachment;

typedef struct CniRequest {
	CniCommand command;
	/* environment (NULL when absent and not required for the command) */
	char *container_id;
	char *netns;
	char *ifname;
	char *cni_path; /* CNI_PATH, colon separated */
	char *args_raw; /* CNI_ARGS as given */
	CniArgs args;

	/* stdin config */
	json_t *config;         /* the whole object (owned) */
	CniVersion version;     /* config "cniVersion" */
	const char *name;       /* points into config */
	const char *type;       /* points into config */
	json_t *ipam;           /* borrowed: config "ipam" object or NULL */
	CniDns dns;             /* config "dns" */
	CniResult *prev_result; /* parsed config "prevResult", NULL if absent */

	/* Requested addressing, as the reference plugins merge it: req_ips is the concatenation of
	 * CNI_ARGS IP=a,b, then args.cni.ips, then runtimeConfig.ips (entries may carry a "/len",
	 * which is dropped); req_mac is the last non-empty of CNI_ARGS MAC, args.cni.mac,
	 * runtimeConfig.mac (runtimeConfig wins). */
	IpAddr *req_ips;
	size_t n_req_ips;
	char *req_mac;
	json_t *rc_ip_ranges; /* borrowed: runtimeConfig.ipRanges (array of range sets) or NULL */
	CniPortMapping *port_mappings;
	size_t n_port_mappings;
	bool has_bandwidth;
	CniBandwidth bandwidth;

	CniAttachment *valid_attachments; /* GC only */
	size_t n_valid_attachments;

	CniError error; /* set via cni_fail(); printed by plugin_main() */

	/* The stdin bytes exactly as received (NUL-terminated copy), for delegation: a delegated
	 * IPAM plugin gets the same bytes. NULL when the request was built by hand. */
	char *config_raw;
	size_t config_raw_len;
} CniRequest;

void cni_request_done(CniRequest *req);

/*
 * Parses environment (envp style list; NULL means `environ`) and config bytes into req. On
 * failure returns negative errno with req->error set (code 4 for environment, 6 decode, 7
 * netconf, 1 version). Exposed for unit tests and fuzzers; plugin_main() calls it.
 */
int cni_request_parse(CniRequest *req, char *const *envp, const char *config, size_t config_len);

/* SPEC rule for container IDs and network names: ^[A-Za-z0-9][A-Za-z0-9_.-]*$ */
bool cni_name_is_valid(const char *s);
/* NULL if `s` is a valid interface name, else why not ("contains '/'", ...). */
const char *cni_ifname_invalid_reason(const char *s);
/* A requested IP: "10.1.0.5" or "10.1.0.5/24" (length dropped). 0 or -EINVAL. */
int cni_parse_requested_ip(const char *s, IpAddr *ret);

/* Parses a CNI_ARGS string. -EINVAL with err set (code 4, message names the key) on bad input. */
int cni_args_parse(const char *s, CniArgs *ret, CniError *err);
void cni_args_done(CniArgs *a);

/* Sets req->error (first one wins) and returns r (negative errno). Usage:
 *     return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "invalid \"mtu\": %d", mtu); */
#define cni_fail(req, r, code, ...) cni_error_set(&(req)->error, (r), (code), __VA_ARGS__)
/* cni_fail() ending in ": <strerror(-r)>[: <kernel's extack>]" (cni_error_set_errno()). Usage:
 *     return cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(s), "failed to set %s up", name);
 * extack is NULL when the failure did not come from netlink. */
#define cni_fail_errno(req, r, code, extack, ...) cni_error_set_errno(&(req)->error, (r), (code), (extack), __VA_ARGS__)

typedef struct PluginOps {
	const char *name;  /* "bridge" */
	const char *about; /* one line for the no-CNI_COMMAND text */
	size_t conf_size;  /* size of the plugin's parsed config struct (zeroed, passed as conf) */
	/* Parse plugin-specific keys from req->config into conf. Called for every command but
	 * VERSION. Errors: cni_fail(..., CNI_ERR_INVALID_NETCONF, "...names key and value..."). */
	int (*parse)(CniRequest *req, void *conf);
	void (*conf_done)(void *conf);
	/* ADD returns a result (plugin_main prints it converted to req->version). */
	int (*add)(CniRequest *req, void *conf, CniResult **ret);
	int (*del)(CniRequest *req, void *conf);
	int (*check)(CniRequest *req, void *conf);
	int (*gc)(CniRequest *req, void *conf);
	int (*status)(CniRequest *req, void *conf);
	/* Versions supported; defaults to all (0.1.0 .. 1.1.0) when 0. Bitmask of 1u << CniVersion. */
	unsigned versions;
} PluginOps;

/*
 * The plugin entry point: parses the request, checks the version against ops->versions,
 * calls ops->parse and the command's op, prints the result (ADD, converted to the config's
 * cniVersion) or the error JSON, and returns the process exit code (0 or 1).
 */
int plugin_main(const PluginOps *ops, int argc, char **argv);

/*
 * Opens req->netns (CNI_NETNS). Returns the fd, or a negative errno with req->error set:
 * code 4 naming CNI_NETNS if it is unset, does not exist or is not a network namespace.
 * Lives in cni-netns.c so programs not using namespaces do not link netns.c.
 */
int cni_request_open_netns(CniRequest *req);
