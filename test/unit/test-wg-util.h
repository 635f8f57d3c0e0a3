/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Helpers of the WireGuard unit tests (test-wg-genl.c, test-wg-uapi.c). */

#include <string.h>

#include "daemon/wireguard/wg-device.h"

/* A key of 32 equal bytes. */
static inline WgKey key_of(uint8_t fill) {
	WgKey k;
	memset(k.b, fill, sizeof(k.b));
	return k;
}

static inline IpPrefix pfx(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

/* A pointer to a prefix parsed in place. */
#define PFX(s) (&(IpPrefix[1]) { pfx(s) }[0])

/* weft-wg: private key 0x11.., port 51820, fwmark 0x1234, one peer 0x22.. with PSK 0x33..,
 * endpoint 192.0.2.7:51820, keepalive 25, allowed 10.244.1.0/24 and fd00:10:244:1::/64 (given
 * with host bits, which are cleared). */
static inline WgDevice *sample_device(void) {
	WgKey k2 = key_of(0x22);
	WgDevice *d;
	WgPeer *p;

	assert_int_equal(wg_device_new("weft-wg", &d), 0);
	d->has_private_key = true;
	d->private_key = key_of(0x11);
	d->listen_port = 51820;
	d->fwmark = 0x1234;
	assert_int_equal(wg_device_add_peer(d, &k2, &p), 0);
	p->has_preshared_key = true;
	p->preshared_key = key_of(0x33);
	assert_int_equal(ip_addr_parse("192.0.2.7", &p->endpoint.addr), 0);
	p->endpoint.port = 51820;
	p->persistent_keepalive = 25;
	assert_int_equal(wg_peer_add_allowed_ip(p, PFX("10.244.1.0/24")), 0);
	assert_int_equal(wg_peer_add_allowed_ip(p, PFX("fd00:10:244:1::5/64")), 0);
	return d;
}
