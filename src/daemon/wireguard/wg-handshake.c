/* SPDX-License-Identifier: Apache-2.0 */
/* Stale-handshake transitions of one WireGuard device's peers (wg-handshake.h). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/wireguard/wg-handshake.h"

static int watch_cmp(const void *a, const void *b) {
	/* public keys: not secret, an ordinary comparison is fine */
	return memcmp(((const WgHandshakeWatch *) a)->public_key.b, ((const WgHandshakeWatch *) b)->public_key.b,
		      WG_KEY_LEN);
}

static const WgHandshakeWatch *find(const WgHandshakeMonitor *m, const WgKey *k) {
	WgHandshakeWatch key = { .public_key = *k };

	if (m->n_peers == 0)
		return NULL;
	return bsearch(&key, m->peers, m->n_peers, sizeof(*m->peers), watch_cmp);
}

int wg_handshake_monitor_update(WgHandshakeMonitor *m, const WgDevice *d, int64_t now, wg_handshake_report_fn report,
				void *userdata) {
	_cleanup_free_ WgHandshakeWatch *next = NULL;

	if (d->n_peers > 0) {
		next = calloc(d->n_peers, sizeof(*next));
		if (!next)
			return -ENOMEM;
	}
	for (size_t i = 0; i < d->n_peers; i++) {
		const WgPeer *p = &d->peers[i];
		const WgHandshakeWatch *old = find(m, &p->public_key);
		WgHandshakeWatch *w = &next[i];
		int64_t hs = p->last_handshake.tv_sec, ref;

		*w = old ? *old : (WgHandshakeWatch) { .public_key = p->public_key, .added = now };
		ref = hs > 0 ? hs : w->added;
		if (!w->stale && now - ref > WG_HANDSHAKE_STALE_SEC) {
			w->stale = true;
			w->stale_ref = ref;
			if (report)
				report(userdata, &p->public_key, WG_HANDSHAKE_STALE, hs > 0, now - ref);
		} else if (w->stale && now - ref <= WG_HANDSHAKE_STALE_SEC) {
			w->stale = false;
			if (report)
				report(userdata, &p->public_key, WG_HANDSHAKE_RECOVERED, true, ref - w->stale_ref);
		}
	}
	qsort_safe(next, d->n_peers, sizeof(*next), watch_cmp);
	free(m->peers);
	m->peers = TAKE_PTR(next);
	m->n_peers = d->n_peers;
	return 0;
}

size_t wg_handshake_monitor_n_stale(const WgHandshakeMonitor *m) {
	size_t n = 0;

	for (size_t i = 0; i < m->n_peers; i++)
		n += m->peers[i].stale;
	return n;
}

void wg_handshake_monitor_done(WgHandshakeMonitor *m) {
	m->peers = mfree(m->peers);
	m->n_peers = 0;
}
