/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The dhcp plugin <-> `dhcp daemon` protocol (ours; the reference uses Go net/rpc over HTTP, which
 * nothing else speaks, so there is no wire compatibility to keep). One request per connection
 * on a unix stream socket (default /run/cni/dhcp.sock, ipam "daemonSocketPath"): the plugin
 * writes one JSON object followed by '\n', the daemon answers with one JSON object and '\n' and
 * closes. An ADD's answer comes when the lease is bound or the daemon gives up.
 *
 * Requests ("op" selects; unknown keys are ignored so either side can grow):
 *   {"op":"add",   "containerId":C, "network":N, "ifname":I, "netns":"/abs/path",
 *                  "request":[1,3,121],                  option codes for the parameter request list
 *                  "provide":[{"code":12,"value":"pod-a"}]}  options sent verbatim (string bytes)
 *   {"op":"del",   "containerId":C, "network":N, "ifname":I}     release; no lease is not an error
 *   {"op":"check", "containerId":C, "network":N, "ifname":I}     is the lease held?
 *   {"op":"gc",    "network":N, "valid":[{"containerId":C,"ifname":I},...]}
 *                  release every lease of network N whose attachment is not listed
 *   {"op":"status"}                                              liveness
 * Answers:
 *   {"ok":true}                                                  del, gc, status
 *   {"ok":true, "result":{CNI 1.1.0 result: ips (address/prefix + gateway), routes},
 *               "state":"bound", "expires":SECONDS_LEFT}        add, check
 *   {"ok":false, "code":CNI_ERROR_CODE, "msg":"..."}
 * A lease is identified by the client identifier the reference uses:
 * "<containerId>/<network>/<ifname>" (truncated to 254 bytes), sent as option 61 with type 0.
 */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define DHCP_DEFAULT_SOCKET_PATH "/run/cni/dhcp.sock"
/* Longest request or answer line either side accepts. */
#define DHCP_PROTO_LINE_MAX (64 * 1024)
/* Default parameter request list: subnet mask, router (the reference's defaults) and
 * classless static routes (RFC 3442), which servers only send when asked. */
#define DHCP_DEFAULT_PRL                                                                                               \
	{ 1, 3, 121 }

/* The lease key / client identifier, as the reference's generateClientID(). Returns a malloc'ed
 * string or NULL on OOM. */
char *dhcp_client_id(const char *container_id, const char *network, const char *ifname);

/*
 * A DHCP option as the config names it: a number "0".."255" or one of the reference's names
 * (dhcp-client-identifier, subnet-mask, routers, host-name, user-class,
 * vendor-class-identifier). Returns the code or -EINVAL.
 */
int dhcp_option_from_name(const char *name);

/*
 * Connects to the daemon at `path`, sends `req` (a JSON object, not consumed) and reads the
 * answer. Returns 0 with *ret (a new reference) or -errno: connect()'s error (-ENOENT,
 * -ECONNREFUSED: the daemon is not running), -EPROTO for a malformed answer, -ETIMEDOUT after
 * timeout_usec (0 = wait forever).
 */
int dhcp_proto_call(const char *path, json_t *req, uint64_t timeout_usec, json_t **ret);
