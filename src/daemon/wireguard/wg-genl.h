/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The kernel driver's wire format (wg-genl.c): WG_CMD_SET_DEVICE requests and WG_CMD_GET_DEVICE
 * replies of the "wireguard" generic netlink family (<linux/wireguard.h>). Exposed for
 * test/unit/test-wg-genl.c, which checks the builder byte for byte and feeds the parser
 * hand-built replies: the builders never send, the parser never reads a socket.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/wireguard/wg-device.h"

struct nlmsghdr;

/* wireguard-tools sizes its messages to the page (mnl_ideal_socket_buffer_size(), 4096 here); so
 * do we. A desired state larger than one message is split as wg(8) splits it. */
#define WG_GENL_MSG_SIZE 4096

/* Where the next message of a split set request starts. Zero it before the first message. */
typedef struct WgGenlCursor {
	size_t peer;       /* index of the next peer to write */
	size_t allowed_ip; /* that peer's next allowed IP */
	bool peer_started; /* that peer's head (PSK, endpoint, ..., REPLACE_ALLOWEDIPS) was sent */
	bool started;      /* the first message (device attributes, REPLACE_PEERS) was built */
	bool done;         /* nothing left after the message just built */
} WgGenlCursor;

/*
 * Builds the next WG_CMD_SET_DEVICE message (NLM_F_REQUEST|NLM_F_ACK, seq and portid 0) of the
 * request `flags` (WG_SET_*) describes for dev, into buf (size bytes, at most WG_GENL_MSG_SIZE used, 4-byte
 * aligned). As wireguard-tools does: the device attributes and WGDEVICE_F_REPLACE_PEERS go in the
 * first message only; a peer that does not fit is cancelled and starts the next message; a peer
 * whose allowed IPs do not fit is closed after the last that did and continued in the next
 * message with only its public key and the rest of its allowed IPs (no REPLACE_ALLOWEDIPS, which
 * would drop the first part). Every non-removed peer carries WGPEER_F_REPLACE_ALLOWEDIPS, its
 * pre-shared key (all zero clears it), its keepalive (0 = off) and its endpoint when it has one.
 * Returns the message length, -EINVAL (bad name, an endpoint or allowed IP without a family),
 * -EMSGSIZE (one allowed IP does not fit an empty message: no progress). cur->done is set after
 * the last message.
 */
int wg_genl_build_set(void *buf, size_t size, uint16_t family_id, const WgDevice *dev, unsigned flags,
		      WgGenlCursor *cur);

/* CTRL_CMD_GETFAMILY for "wireguard" (GENL_ID_CTRL). Returns the length. */
int wg_genl_build_getfamily(void *buf, size_t size);
/* The family id from a CTRL_CMD_NEWFAMILY reply. 0, -EBADMSG, -ENOENT (another family). */
int wg_genl_parse_family(const struct nlmsghdr *nlh, uint16_t *ret);
/* WG_CMD_GET_DEVICE dump request for ifname (NLM_F_REQUEST|NLM_F_DUMP). Returns the length. */
int wg_genl_build_get(void *buf, size_t size, uint16_t family_id, const char *ifname);

/*
 * Folds one WG_CMD_GET_DEVICE reply message into *dev (created from the message when *dev is
 * NULL). The kernel splits a large device over several messages and a peer's allowed IPs over
 * two; a message's first peer that has the key of the device's last peer continues it. Unknown
 * attributes are skipped; a known one with a bad length, a peer without a public key, an allowed IP
 * whose length does not fit its family: -EBADMSG. A key seen twice otherwise is found once the
 * dump is complete, by wg_device_check_unique_peers() (per message it would cost O(n^2)).
 */
int wg_genl_parse_get(const struct nlmsghdr *nlh, uint16_t family_id, WgDevice **dev);

/* ip link add IFNAME type wireguard (nl-internal.h's NlMsgBuf). 0, -EINVAL, -EMSGSIZE. */
union NlMsgBuf;
int wg_genl_build_link(union NlMsgBuf *buf, const char *ifname);

/* Resolves the family id in the current network namespace. 0, -ENOENT (no module), -errno. */
int wg_genl_resolve_family(uint16_t *ret);
