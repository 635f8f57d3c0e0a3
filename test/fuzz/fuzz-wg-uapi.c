/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the wireguard-go UAPI reply parser (wg_uapi_parse_get: what a process behind
 * /var/run/wireguard/<dev>.sock sends weftd). What parses must render as a set request, and that
 * request, read back as a reply, must parse to the same device: keys, port, fwmark, and every
 * peer's PSK, endpoint, keepalive and allowed IPs in order.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/wireguard/wg-uapi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

static bool peer_equal(const WgPeer *a, const WgPeer *b) {
	if (!wg_key_equal(&a->public_key, &b->public_key) || a->has_preshared_key != b->has_preshared_key ||
	    (a->has_preshared_key && !wg_key_equal(&a->preshared_key, &b->preshared_key)) ||
	    a->persistent_keepalive != b->persistent_keepalive || a->n_allowed_ips != b->n_allowed_ips)
		return false;
	if (a->endpoint.addr.family != b->endpoint.addr.family ||
	    (a->endpoint.addr.family != AF_UNSPEC &&
	     (!ip_addr_equal(&a->endpoint.addr, &b->endpoint.addr) || a->endpoint.port != b->endpoint.port)))
		return false;
	for (size_t i = 0; i < a->n_allowed_ips; i++)
		if (!ip_prefix_equal(&a->allowed_ips[i], &b->allowed_ips[i]))
			return false;
	return true;
}

static bool device_equal(const WgDevice *a, const WgDevice *b) {
	if (a->has_private_key != b->has_private_key ||
	    (a->has_private_key && !wg_key_equal(&a->private_key, &b->private_key)) ||
	    a->listen_port != b->listen_port || a->fwmark != b->fwmark || a->n_peers != b->n_peers)
		return false;
	for (size_t i = 0; i < a->n_peers; i++)
		if (!peer_equal(&a->peers[i], &b->peers[i]))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL, *back = NULL;
	_cleanup_free_ char *req = NULL, *reply = NULL;
	size_t len;

	if (size > MAX_INPUT)
		return 0;
	if (wg_uapi_parse_get((const char *) data, size, "wg0", &d) < 0)
		return 0;
	if (wg_uapi_format_set(d, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS, &req, &len) < 0)
		abort();
	/* "set=1\n...\n\n" → "...\nerrno=0\n\n": the set-only keys (set, replace_*) are keys the
	 * reply parser skips as unknown. */
	if (len < 8 || memcmp(req, "set=1\n", 6) != 0 || req[len - 1] != '\n' || req[len - 2] != '\n')
		abort();
	reply = malloc(len + 16);
	if (!reply)
		return 0;
	memcpy(reply, req + 6, len - 7);
	memcpy(reply + len - 7, "errno=0\n\n", 9);
	if (wg_uapi_parse_get(reply, len - 7 + 9, "wg0", &back) < 0 || !device_equal(d, back))
		abort();
	return 0;
}
