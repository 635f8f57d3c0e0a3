/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Stale handshakes: which peers of one device have had no handshake for WG_HANDSHAKE_STALE_SEC
 * (WireGuard re-keys every 2 minutes while traffic flows, and a keepalive makes traffic). Each
 * change is reported once: when a peer goes stale, and when it has a handshake again, never on
 * every check. A peer that never had one counts from when the monitor first saw it.
 *
 * The clock is the caller's (`now`, in the handshake times' seconds: CLOCK_REALTIME), so a test
 * walks it forward instead of waiting. Nothing here logs: the caller's report function does.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/wireguard/wg-device.h"

#define WG_HANDSHAKE_STALE_SEC 180

typedef enum WgHandshakeEvent {
	WG_HANDSHAKE_STALE,     /* seconds: since the last handshake (or since added, if never: !ever) */
	WG_HANDSHAKE_RECOVERED, /* seconds: from the last handshake (or the addition) to this one */
} WgHandshakeEvent;

typedef void (*wg_handshake_report_fn)(void *userdata, const WgKey *public_key, WgHandshakeEvent ev, bool ever,
				       int64_t seconds);

typedef struct WgHandshakeWatch {
	WgKey public_key;
	int64_t added; /* now when first seen */
	bool stale;
	int64_t stale_ref; /* while stale: the handshake (or addition) it is stale since */
} WgHandshakeWatch;

typedef struct WgHandshakeMonitor {
	WgHandshakeWatch *peers; /* sorted by key */
	size_t n_peers;
} WgHandshakeMonitor;

/* d: the device as read back (get()); peers no longer in it are forgotten, new ones start their
 * clock at now. report is called once per change. 0 or -ENOMEM (the monitor unchanged). */
int wg_handshake_monitor_update(WgHandshakeMonitor *m, const WgDevice *d, int64_t now, wg_handshake_report_fn report,
				void *userdata);
/* How many peers are stale now. */
size_t wg_handshake_monitor_n_stale(const WgHandshakeMonitor *m);
void wg_handshake_monitor_done(WgHandshakeMonitor *m);
