/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The userspace driver's protocol (src/daemon/wireguard/wg-uapi.c) without wireguard-go: the
 * "set=1" requests for a full state, one peer's update and one peer's removal, compared as text;
 * the "get=1" reply parser on a reply as wireguard-go writes it and on every malformation the
 * parser must refuse. test/netns/unit/test-wg-uapi-netns.c drives a real wireguard-go.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/wireguard/wg-uapi.h"
#include "test-wg-util.h"

#define K11 "1111111111111111111111111111111111111111111111111111111111111111"
#define K22 "2222222222222222222222222222222222222222222222222222222222222222"
#define K33 "3333333333333333333333333333333333333333333333333333333333333333"
#define K44 "4444444444444444444444444444444444444444444444444444444444444444"
#define K00 "0000000000000000000000000000000000000000000000000000000000000000"

static void format_is(const WgDevice *d, unsigned flags, const char *want) {
	char *got = NULL;
	size_t len = 0;

	assert_int_equal(wg_uapi_format_set(d, flags, &got, &len), 0);
	assert_int_equal(len, strlen(got));
	assert_string_equal(got, want);
	free(got);
}

static void test_format(void **state) {
	_cleanup_(wg_device_freep) WgDevice *empty = NULL, *d = sample_device();
	WgKey k4 = key_of(0x44);
	WgPeer *p;

	assert_int_equal(wg_device_new("weft-wg", &empty), 0);
	format_is(empty, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS,
		  "set=1\nlisten_port=0\nfwmark=0\nreplace_peers=true\n\n");

	assert_int_equal(wg_device_add_peer(d, &k4, &p), 0);
	assert_int_equal(ip_addr_parse("2001:db8::9", &p->endpoint.addr), 0);
	p->endpoint.port = 51821;

	format_is(d, WG_SET_DEVICE_ATTRS | WG_SET_REPLACE_PEERS,
		  "set=1\nprivate_key=" K11 "\nlisten_port=51820\nfwmark=4660\nreplace_peers=true\n"
		  "public_key=" K22 "\npreshared_key=" K33 "\nendpoint=192.0.2.7:51820\n"
		  "persistent_keepalive_interval=25\nreplace_allowed_ips=true\n"
		  "allowed_ip=10.244.1.0/24\nallowed_ip=fd00:10:244:1::/64\n"
		  "public_key=" K44 "\npreshared_key=" K00 "\nendpoint=[2001:db8::9]:51821\n"
		  "persistent_keepalive_interval=0\nreplace_allowed_ips=true\n\n");
	/* one peer's update: no device lines, no replace_peers */
	format_is(d, 0,
		  "set=1\npublic_key=" K22 "\npreshared_key=" K33 "\nendpoint=192.0.2.7:51820\n"
		  "persistent_keepalive_interval=25\nreplace_allowed_ips=true\n"
		  "allowed_ip=10.244.1.0/24\nallowed_ip=fd00:10:244:1::/64\n"
		  "public_key=" K44 "\npreshared_key=" K00 "\nendpoint=[2001:db8::9]:51821\n"
		  "persistent_keepalive_interval=0\nreplace_allowed_ips=true\n\n");
	format_is(d, WG_SET_REMOVE_PEERS,
		  "set=1\npublic_key=" K22 "\nremove=true\npublic_key=" K44 "\nremove=true\n\n");

	char *got;
	size_t len;
	d->peers[0].allowed_ips[0].addr.family = AF_UNSPEC;
	assert_int_equal(wg_uapi_format_set(d, 0, &got, &len), -EINVAL);
}

/* A reply as wireguard-go 0.0.20220316 writes it (keys in its order). */
static const char REPLY[] = "private_key=" K11 "\n"
			    "listen_port=51820\n"
			    "fwmark=16384\n"
			    "public_key=" K22 "\n"
			    "preshared_key=" K33 "\n"
			    "protocol_version=1\n"
			    "endpoint=192.0.2.7:51820\n"
			    "last_handshake_time_sec=1700000000\n"
			    "last_handshake_time_nsec=123456789\n"
			    "tx_bytes=7654321\n"
			    "rx_bytes=1234567\n"
			    "persistent_keepalive_interval=25\n"
			    "allowed_ip=10.244.1.0/24\n"
			    "allowed_ip=fd00:10:244:1::/64\n"
			    "public_key=" K44 "\n"
			    "preshared_key=" K00 "\n"
			    "protocol_version=1\n"
			    "endpoint=[2001:db8::9]:51821\n"
			    "last_handshake_time_sec=0\n"
			    "last_handshake_time_nsec=0\n"
			    "tx_bytes=148\n"
			    "rx_bytes=0\n"
			    "persistent_keepalive_interval=0\n"
			    "errno=0\n"
			    "\n";

static void test_parse_get(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	WgKey k1 = key_of(0x11), k2 = key_of(0x22), k3 = key_of(0x33), k4 = key_of(0x44);
	IpPrefix a = pfx("10.244.1.0/24"), b = pfx("fd00:10:244:1::/64");
	char ip[IP_ADDR_STRLEN];
	WgPeer *p;

	assert_int_equal(wg_uapi_parse_get(REPLY, strlen(REPLY), "weft-wg", &d), 0);
	assert_string_equal(d->name, "weft-wg");
	assert_true(d->has_private_key);
	assert_true(wg_key_equal(&d->private_key, &k1));
	assert_int_equal(d->listen_port, 51820);
	assert_int_equal(d->fwmark, 16384);
	assert_int_equal(d->n_peers, 2);
	p = &d->peers[0];
	assert_true(wg_key_equal(&p->public_key, &k2));
	assert_true(p->has_preshared_key);
	assert_true(wg_key_equal(&p->preshared_key, &k3));
	assert_string_equal(ip_addr_to_string(&p->endpoint.addr, ip), "192.0.2.7");
	assert_int_equal(p->endpoint.port, 51820);
	assert_int_equal(p->last_handshake.tv_sec, 1700000000);
	assert_int_equal(p->last_handshake.tv_nsec, 123456789);
	assert_int_equal(p->tx_bytes, 7654321);
	assert_int_equal(p->rx_bytes, 1234567);
	assert_int_equal(p->persistent_keepalive, 25);
	assert_int_equal(p->n_allowed_ips, 2);
	assert_true(ip_prefix_equal(&p->allowed_ips[0], &a));
	assert_true(ip_prefix_equal(&p->allowed_ips[1], &b));
	p = &d->peers[1];
	assert_true(wg_key_equal(&p->public_key, &k4));
	assert_false(p->has_preshared_key);
	assert_string_equal(ip_addr_to_string(&p->endpoint.addr, ip), "2001:db8::9");
	assert_int_equal(p->endpoint.port, 51821);
	assert_int_equal(p->tx_bytes, 148);
	assert_int_equal(p->n_allowed_ips, 0);
	d = wg_device_free(d);

	/* a fresh device: nothing but errno */
	assert_int_equal(wg_uapi_parse_get("errno=0\n\n", 9, "weft-wg", &d), 0);
	assert_false(d->has_private_key);
	assert_int_equal(d->n_peers, 0);
	d = wg_device_free(d);
	/* keys a newer wireguard-go may add are skipped */
	static const char newer[] =
			"listen_port=1\nfuture_knob=whatever\npublic_key=" K22 "\nnew_peer_thing=1\nerrno=0\n\n";
	assert_int_equal(wg_uapi_parse_get(newer, strlen(newer), "weft-wg", &d), 0);
	assert_int_equal(d->n_peers, 1);
	d = wg_device_free(d);
	/* an error */
	assert_int_equal(wg_uapi_parse_get("errno=19\n\n", 10, "weft-wg", &d), -19);
	assert_null(d);
	assert_int_equal(wg_uapi_parse_errno("errno=0\n\n", 9), 0);
	assert_int_equal(wg_uapi_parse_errno("errno=22\n\n", 10), -22);
	assert_int_equal(wg_uapi_parse_errno("listen_port=1\nerrno=0\n\n", 23), -EBADMSG);
	assert_int_equal(wg_uapi_parse_get("errno=0\n\n", 9, "bad/name", &d), -EINVAL);
}

/* Each is REPLY-like but broken in one way. */
static void test_parse_get_malformed(void **state) {
	static const char *const bad[] = {
		"",
		"errno=0\n",                                 /* no blank line */
		"errno=0\n\nx",                              /* something after it */
		"errno=0\n\n\n",                             /* two blank lines */
		"errno=0",                                   /* truncated */
		"listen_port=1\n",                           /* no errno */
		"listen_port=1\n\nerrno=0\n\n",              /* a blank line in the middle */
		"errno=-1\n\n",                              /* signed */
		"errno=99999\n\n",                           /* not an errno */
		"errno=\n\n",                                /* empty */
		"listen_port\nerrno=0\n\n",                  /* no '=' */
		"listen_port=65536\nerrno=0\n\n",            /* out of range */
		"listen_port=+1\nerrno=0\n\n",               /* sign */
		"listen_port= 1\nerrno=0\n\n",               /* space */
		"listen_port=1\nlisten_port=2\nerrno=0\n\n", /* twice */
		"fwmark=4294967296\nerrno=0\n\n",
		"fwmark=0x10\nerrno=0\n\n",
		"private_key=" K11 "0\nerrno=0\n\n", /* 65 digits */
		"private_key=111111111111111111111111111111111111111111111111111111111111111g\nerrno=0\n\n",
		"public_key=" K00 "\nerrno=0\n\n",                     /* a zero peer key */
		"public_key=" K22 "\npublic_key=" K22 "\nerrno=0\n\n", /* the same peer twice */
		"endpoint=192.0.2.7:1\nerrno=0\n\n",                   /* a peer key before any peer */
		"public_key=" K22 "\nlisten_port=1\nerrno=0\n\n",      /* a device key after a peer */
		"public_key=" K22 "\nendpoint=192.0.2.7\nerrno=0\n\n",
		"public_key=" K22 "\nendpoint=192.0.2.7:65536\nerrno=0\n\n",
		"public_key=" K22 "\nendpoint=2001:db8::9:51820\nerrno=0\n\n", /* unbracketed v6 */
		"public_key=" K22 "\nendpoint=[192.0.2.7]:1\nerrno=0\n\n",     /* bracketed v4 */
		"public_key=" K22 "\nendpoint=[fe80::1%eth0]:1\nerrno=0\n\n",  /* zone */
		"public_key=" K22 "\nendpoint=[2001:db8::9]\nerrno=0\n\n",
		"public_key=" K22 "\nendpoint=host.example:1\nerrno=0\n\n",
		"public_key=" K22 "\nallowed_ip=10.244.1.1/24\nerrno=0\n\n", /* host bits */
		"public_key=" K22 "\nallowed_ip=10.244.1.0/33\nerrno=0\n\n",
		"public_key=" K22 "\nallowed_ip=10.244.1.0\nerrno=0\n\n",
		"public_key=" K22 "\nprotocol_version=2\nerrno=0\n\n",
		"public_key=" K22 "\nlast_handshake_time_nsec=1000000000\nerrno=0\n\n",
		"public_key=" K22 "\nlast_handshake_time_sec=9223372036854775808\nerrno=0\n\n",
		"public_key=" K22 "\nrx_bytes=18446744073709551616\nerrno=0\n\n",
		"public_key=" K22 "\nrx_bytes=1\nrx_bytes=1\nerrno=0\n\n",
		"public_key=" K22 "\npersistent_keepalive_interval=65536\nerrno=0\n\n",
		"Listen_port=1\nerrno=0\n\n", /* not a protocol key */
		"=1\nerrno=0\n\n",
		"listen_port=1\r\nerrno=0\n\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		WgDevice *d = NULL;
		int r = wg_uapi_parse_get(bad[i], strlen(bad[i]), "weft-wg", &d);
		if (r != -EBADMSG)
			fail_msg("case %zu (%s): %d", i, bad[i], r);
		assert_null(d);
	}

	/* a NUL inside, and a line longer than any the protocol has */
	WgDevice *d = NULL;
	assert_int_equal(wg_uapi_parse_get("listen_port=1\0\nerrno=0\n\n", 24, "weft-wg", &d), -EBADMSG);
	char long_line[WG_UAPI_LINE_MAX + 32];
	memset(long_line, 'a', sizeof(long_line));
	memcpy(long_line + sizeof(long_line) - 12, "=1\nerrno=0\n\n", 12);
	assert_int_equal(wg_uapi_parse_get(long_line, sizeof(long_line), "weft-wg", &d), -EBADMSG);
	assert_null(d);
}

/* Many peers and allowed IPs parse in linear time and stay exact. */
static void test_parse_large(void **state) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	_cleanup_free_ char *text = NULL;
	size_t size = 4000 * 300, len = 0;

	text = malloc(size);
	assert_non_null(text);
	for (unsigned i = 0; i < 4000; i++) {
		len += (size_t) snprintf(text + len, size - len,
					 "public_key=%08x%056x\nendpoint=10.%u.%u.1:51820\nallowed_ip=10.%u.%u.0/24\n"
					 "allowed_ip=fd00:%x::/64\n",
					 i + 1, 0, i >> 8, i & 255, 100 + (i >> 8), i & 255, i);
	}
	len += (size_t) snprintf(text + len, size - len, "errno=0\n\n");
	assert_int_equal(wg_uapi_parse_get(text, len, "weft-wg", &d), 0);
	assert_int_equal(d->n_peers, 4000);
	assert_int_equal(d->peers[3999].n_allowed_ips, 2);
	assert_int_equal(d->peers[3999].public_key.b[3], 4000 & 0xff);
}

static void test_socket_dir(void **state) {
	assert_string_equal(wg_uapi_socket_dir(), getenv("WEFT_WG_SOCKET_DIR") ?: WG_UAPI_SOCKET_DIR);
	assert_int_equal(wg_uapi_set_socket_dir("relative"), -EINVAL);
	assert_int_equal(wg_uapi_set_socket_dir("/run/test-wg"), 0);
	assert_string_equal(wg_uapi_socket_dir(), "/run/test-wg");
	assert_int_equal(wg_uapi_set_socket_dir(NULL), 0);
	assert_int_equal(wg_uapi_set_program("/nonexistent/wireguard-go"), 0);
	assert_false(wg_uapi_program_available());
	assert_int_equal(wg_uapi_set_program(NULL), 0);
	assert_string_equal(wg_driver_name(&wg_uapi_driver), "wireguard-go");
	assert_string_equal(wg_driver_name(&wg_genl_driver), "kernel");
	assert_string_equal(wg_driver_name(NULL), "none");
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_parse_get),
		cmocka_unit_test(test_parse_get_malformed),
		cmocka_unit_test(test_parse_large),
		cmocka_unit_test(test_socket_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
