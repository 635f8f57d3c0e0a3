/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The userspace driver (wg-uapi.c): wireguard-go and its cross-platform configuration protocol
 * (https://www.wireguard.com/xplatform/): a stream unix socket <dir>/<ifname>.sock, "set=1" and
 * "get=1" requests of key=value lines with hex keys, each answered by "errno=N" and a blank line.
 *
 * wireguard-go's socket directory is compiled into it (/var/run/wireguard; a linker flag changes
 * it, no environment variable does), so ours must match the build we start: it defaults to
 * /var/run/wireguard, $WEFT_WG_SOCKET_DIR overrides it, and so does wg_uapi_set_socket_dir().
 * The program is "wireguard-go" on PATH, $WEFT_WIREGUARD_GO or wg_uapi_set_program().
 */

#include <stdbool.h>
#include <stddef.h>

#include "daemon/wireguard/wg-device.h"

#define WG_UAPI_SOCKET_DIR "/var/run/wireguard"
/* A reply larger than this is refused: 16 MiB is ~40000 peers with a handful of allowed IPs each. */
#define WG_UAPI_REPLY_MAX (16U << 20)
/* Longer than any line the protocol has (an IPv6 endpoint with a zone is < 80 bytes). */
#define WG_UAPI_LINE_MAX 256

/* NULL restores the default. 0, -EINVAL (not absolute, too long), -ENOMEM. */
int wg_uapi_set_socket_dir(const char *dir);
const char *wg_uapi_socket_dir(void);
int wg_uapi_set_program(const char *path);
/* The program is an executable file (path given) or found on PATH. */
bool wg_uapi_program_available(void);

/*
 * Renders the "set=1" request for flags (WG_SET_*): device attributes, replace_peers=true, and per
 * peer either remove=true or preshared_key (zeros clear it), endpoint, keepalive,
 * replace_allowed_ips=true and every allowed_ip; then the blank line. *ret holds the private key
 * in hex when it is rendered: wipe it (explicit_bzero(*ret, *ret_len)) before freeing it.
 * 0, -EINVAL (an endpoint or allowed IP without a family), -ENOMEM.
 */
int wg_uapi_format_set(const WgDevice *dev, unsigned flags, char **ret, size_t *ret_len);

/*
 * Parses a complete reply to "get=1" for ifname: key=value lines, "errno=N", a blank line, nothing
 * after it. Strict where it matters: hex keys of exactly 64 digits, decimal numbers without sign
 * and in range, endpoints "a.b.c.d:port" / "[v6]:port" (no zone), allowed IPs as networks,
 * protocol_version 1, no NUL byte, no line over WG_UAPI_LINE_MAX, no key twice in one section,
 * no peer key twice, device keys only before the first peer, peer keys only after it, at most
 * WG_UAPI_REPLY_MAX bytes. Keys it does not know (lowercase and '_') are skipped, as wg(8) does.
 * 0 with *ret (the caller's), -N for "errno=N" with N > 0, -EBADMSG for anything malformed,
 * -ENOMEM.
 */
int wg_uapi_parse_get(const char *text, size_t len, const char *ifname, WgDevice **ret);
/* The reply to "set=1": "errno=N" and a blank line. 0, -N, -EBADMSG. */
int wg_uapi_parse_errno(const char *text, size_t len);
