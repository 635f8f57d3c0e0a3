/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stale WireGuard handshakes (src/daemon/wireguard/wg-handshake.c), on an injected clock: a peer
 * is reported once when its last handshake is older than 3 minutes and once when it has one again
 * ("after N s"), never on every check in between; a peer that never had a handshake counts from
 * when it was first seen; a removed peer is forgotten, and one added again starts afresh.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/wireguard/wg-handshake.h"

typedef struct Report {
	WgKey key;
	WgHandshakeEvent ev;
	bool ever;
	int64_t seconds;
} Report;

typedef struct Reports {
	Report r[16];
	size_t n;
} Reports;

static void collect(void *userdata, const WgKey *key, WgHandshakeEvent ev, bool ever, int64_t seconds) {
	Reports *rs = userdata;

	assert_true(rs->n < ELEMENTSOF(rs->r));
	rs->r[rs->n++] = (Report) { .key = *key, .ev = ev, .ever = ever, .seconds = seconds };
}

static WgKey key(uint8_t b) {
	WgKey k;

	memset(k.b, b, sizeof(k.b));
	return k;
}

/* a device whose peers have these keys and last handshakes (0 = never) */
static WgDevice *device(size_t n, const uint8_t *keys, const int64_t *hs) {
	WgDevice *d = NULL;

	assert_int_equal(wg_device_new("weft-wg", &d), 0);
	for (size_t i = 0; i < n; i++) {
		WgKey k = key(keys[i]);
		WgPeer *p;

		assert_int_equal(wg_device_add_peer(d, &k, &p), 0);
		p->last_handshake.tv_sec = hs[i];
	}
	return d;
}

/* update at `now`; the number of reports it made */
static size_t tick(WgHandshakeMonitor *m, Reports *rs, const WgDevice *d, int64_t now) {
	size_t before = rs->n;

	assert_int_equal(wg_handshake_monitor_update(m, d, now, collect, rs), 0);
	return rs->n - before;
}

static void test_stale_once_and_recovery_once(void **state) {
	const int64_t t0 = 1700000000;
	WgHandshakeMonitor m = {};
	Reports rs = {};
	WgKey k1 = key(1);
	WgDevice *d = device(1, (uint8_t[]) { 1 }, (int64_t[]) { t0 });

	/* within 3 minutes of the handshake: nothing, whatever the number of checks */
	for (int64_t t = t0; t <= t0 + WG_HANDSHAKE_STALE_SEC; t += 10)
		assert_int_equal(tick(&m, &rs, d, t), 0);
	/* one second later: stale, reported once with its age */
	assert_int_equal(tick(&m, &rs, d, t0 + 181), 1);
	assert_int_equal(rs.r[0].ev, WG_HANDSHAKE_STALE);
	assert_true(rs.r[0].ever);
	assert_int_equal(rs.r[0].seconds, 181);
	assert_memory_equal(rs.r[0].key.b, k1.b, WG_KEY_LEN);
	assert_int_equal(wg_handshake_monitor_n_stale(&m), 1);
	/* an hour of ticks every 10 s while it stays stale: not one more line */
	for (int64_t t = t0 + 190; t < t0 + 3600; t += 10)
		assert_int_equal(tick(&m, &rs, d, t), 0);
	/* a handshake at t0 + 3600: reported once, with the gap since the previous one */
	d->peers[0].last_handshake.tv_sec = t0 + 3600;
	assert_int_equal(tick(&m, &rs, d, t0 + 3605), 1);
	assert_int_equal(rs.r[1].ev, WG_HANDSHAKE_RECOVERED);
	assert_int_equal(rs.r[1].seconds, 3600);
	assert_int_equal(wg_handshake_monitor_n_stale(&m), 0);
	for (int64_t t = t0 + 3610; t <= t0 + 3600 + WG_HANDSHAKE_STALE_SEC; t += 10)
		assert_int_equal(tick(&m, &rs, d, t), 0);
	/* and stale again later: one more report */
	assert_int_equal(tick(&m, &rs, d, t0 + 3600 + 200), 1);
	assert_int_equal(rs.r[2].ev, WG_HANDSHAKE_STALE);
	assert_int_equal(rs.r[2].seconds, 200);
	assert_int_equal(tick(&m, &rs, d, t0 + 3600 + 210), 0);

	wg_handshake_monitor_done(&m);
	wg_device_free(d);
}

static void test_never_counts_from_added(void **state) {
	const int64_t t0 = 1700000000;
	WgHandshakeMonitor m = {};
	Reports rs = {};
	WgDevice *d = device(1, (uint8_t[]) { 1 }, (int64_t[]) { 0 });

	/* first seen at t0 + 1000 (not at the epoch: "never" is not 55 years stale) */
	assert_int_equal(tick(&m, &rs, d, t0 + 1000), 0);
	assert_int_equal(tick(&m, &rs, d, t0 + 1000 + WG_HANDSHAKE_STALE_SEC), 0);
	assert_int_equal(tick(&m, &rs, d, t0 + 1000 + WG_HANDSHAKE_STALE_SEC + 1), 1);
	assert_int_equal(rs.r[0].ev, WG_HANDSHAKE_STALE);
	assert_false(rs.r[0].ever);
	assert_int_equal(rs.r[0].seconds, WG_HANDSHAKE_STALE_SEC + 1);
	assert_int_equal(tick(&m, &rs, d, t0 + 2000), 0);
	/* its first handshake: recovered after the time since it was added */
	d->peers[0].last_handshake.tv_sec = t0 + 1500;
	assert_int_equal(tick(&m, &rs, d, t0 + 1510), 1);
	assert_int_equal(rs.r[1].ev, WG_HANDSHAKE_RECOVERED);
	assert_int_equal(rs.r[1].seconds, 500);

	wg_handshake_monitor_done(&m);
	wg_device_free(d);
}

static void test_peers_come_and_go(void **state) {
	const int64_t t0 = 1700000000;
	WgHandshakeMonitor m = {};
	Reports rs = {};
	WgDevice *two = device(2, (uint8_t[]) { 2, 1 }, (int64_t[]) { 0, t0 });
	WgDevice *one = device(1, (uint8_t[]) { 1 }, (int64_t[]) { t0 });
	WgKey k2 = key(2);

	assert_int_equal(tick(&m, &rs, two, t0), 0);
	/* both stale at t0 + 200: two reports, one each */
	assert_int_equal(tick(&m, &rs, two, t0 + 200), 2);
	assert_int_equal(tick(&m, &rs, two, t0 + 210), 0);
	assert_int_equal(wg_handshake_monitor_n_stale(&m), 2);
	/* peer 2 removed: forgotten */
	assert_int_equal(tick(&m, &rs, one, t0 + 220), 0);
	assert_int_equal(m.n_peers, 1);
	assert_int_equal(wg_handshake_monitor_n_stale(&m), 1);
	/* added again: its clock starts now, not at its first addition */
	assert_int_equal(tick(&m, &rs, two, t0 + 300), 0);
	assert_int_equal(tick(&m, &rs, two, t0 + 300 + WG_HANDSHAKE_STALE_SEC), 0);
	assert_int_equal(tick(&m, &rs, two, t0 + 300 + WG_HANDSHAKE_STALE_SEC + 1), 1);
	assert_memory_equal(rs.r[rs.n - 1].key.b, k2.b, WG_KEY_LEN);
	assert_false(rs.r[rs.n - 1].ever);
	/* an empty device: everything forgotten, nothing reported */
	WgDevice *none = device(0, NULL, NULL);
	assert_int_equal(tick(&m, &rs, none, t0 + 1000), 0);
	assert_int_equal(m.n_peers, 0);

	wg_handshake_monitor_done(&m);
	wg_device_free(none);
	wg_device_free(one);
	wg_device_free(two);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_once_and_recovery_once),
		cmocka_unit_test(test_never_counts_from_added),
		cmocka_unit_test(test_peers_come_and_go),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
