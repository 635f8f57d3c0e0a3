/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The WireGuard device layer under weftd's wireguard backend: a desired-state model of one device
 * (WgDevice: key, port, fwmark, peers) and the drivers that apply it, behind one ops table:
 *
 *   wg_genl_driver   the kernel module, over generic netlink ("wireguard" family; wg-genl.c)
 *   wg_uapi_driver   wireguard-go, over the cross-platform UAPI unix socket (wg-uapi.c)
 *
 * wg_driver_detect() picks one: the kernel when it has the module, wireguard-go otherwise. Every
 * driver works in the calling thread's network namespace. Nothing here logs; a private key never
 * leaves this layer except into the kernel or wireguard-go's socket.
 */

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "basic/macro.h"
#include "daemon/wireguard/wg-key.h"
#include "shared/ip/ip-addr.h"

/* The kernel caps a peer's keepalive at 65535 s and a listen port at 65535. */
typedef struct WgEndpoint {
	IpAddr addr; /* AF_UNSPEC: none (the peer roams to us) */
	uint16_t port;
} WgEndpoint;

typedef struct WgPeer {
	WgKey public_key;
	bool has_preshared_key;
	WgKey preshared_key;
	WgEndpoint endpoint;
	IpPrefix *allowed_ips; /* networks (host bits clear); grown by wg_peer_add_allowed_ip() */
	size_t n_allowed_ips;
	uint16_t persistent_keepalive; /* seconds, 0 = off */

	/* Read back by get() only; ignored by set()/update_peer(). */
	struct timespec last_handshake; /* {0, 0}: never */
	uint64_t rx_bytes, tx_bytes;
} WgPeer;

typedef struct WgDevice {
	char name[IFNAMSIZ];
	bool has_private_key;
	WgKey private_key;
	uint16_t listen_port; /* 0: the driver picks a random port */
	uint32_t fwmark;      /* 0: none */
	WgPeer *peers;
	size_t n_peers;

	/* Read back by get() only. */
	int ifindex;
	bool has_public_key;
	WgKey public_key;
} WgDevice;

/* name must be a valid interface name. 0, -EINVAL or -ENOMEM. */
int wg_device_new(const char *name, WgDevice **ret);
/* Wipes the keys and frees everything. NULL-safe, returns NULL. */
WgDevice *wg_device_free(WgDevice *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(WgDevice *, wg_device_free);
/* Appends a peer with this key (everything else zero) and returns it (owned by d, valid until the
 * next add). -EEXIST if d already has that key (a linear search), -E2BIG, -ENOMEM. Peers and allowed
 * IPs are added through these functions only (their arrays grow in powers of two). */
int wg_device_add_peer(WgDevice *d, const WgKey *public_key, WgPeer **ret);
/* The same without the search, for many peers at once (a parser, a backend's full state): check
 * them afterwards with wg_device_check_unique_peers() (O(n log n)): 0, -EEXIST, -ENOMEM. */
int wg_device_append_peer(WgDevice *d, const WgKey *public_key, WgPeer **ret);
int wg_device_check_unique_peers(const WgDevice *d);
WgPeer *wg_device_find_peer(const WgDevice *d, const WgKey *public_key);
/* Appends a network; host bits are cleared (the kernel would clear them too, and a read-back then
 * compares equal). -EINVAL (no family, bad length), -ENOMEM. */
int wg_peer_add_allowed_ip(WgPeer *p, const IpPrefix *prefix);
/* Frees the peer's allowed IPs and wipes its pre-shared key (for a WgPeer the caller owns). */
void wg_peer_done(WgPeer *p);

/* What one set request of a driver carries (the drivers' wire builders take these). */
enum {
	WG_SET_DEVICE_ATTRS = 1 << 0,  /* private key, listen port, fwmark */
	WG_SET_REPLACE_PEERS = 1 << 1, /* peers not listed are removed */
	WG_SET_REMOVE_PEERS = 1 << 2,  /* the listed peers are removed (key only) */
};

/*
 * A driver. ifname is the device in the calling thread's network namespace.
 *   ensure       creates the device if there is none: 0 it was there, 1 created, -errno. Brings no
 *                link up and sets no address (rtnetlink's job, as for any other link).
 *   set          the whole desired state: key, port, fwmark, and exactly dev's peers (every other
 *                peer is removed; each peer's allowed IPs replace the old ones).
 *   update_peer  adds or changes one peer (PSK, endpoint, keepalive, its allowed IPs replaced);
 *                the device and the other peers are untouched.
 *   remove_peer  removes one peer; 0 also when it was not there.
 *   get          reads the device back, with each peer's handshake time and byte counters; *ret is
 *                the caller's (wg_device_free). -ENODEV when there is no such device.
 *   destroy      deletes the device; 0 also when there was none.
 */
typedef struct WgDriverOps {
	const char *name; /* "kernel", "wireguard-go": reported in /healthz and /metrics */
	int (*ensure)(const char *ifname);
	int (*set)(const WgDevice *dev);
	int (*update_peer)(const char *ifname, const WgPeer *peer);
	int (*remove_peer)(const char *ifname, const WgKey *public_key);
	int (*get)(const char *ifname, WgDevice **ret);
	int (*destroy)(const char *ifname);
} WgDriverOps;

/* For the drivers. A device they can send: a valid name, endpoints and allowed IPs of a family
 * (AF_INET, AF_INET6) and allowed IP lengths within it. 0 or -EINVAL. */
int wg_device_validate(const WgDevice *d);
/* update_peer and remove_peer on top of a driver's "send this device with these WG_SET_* flags":
 * a device of just that peer, no device attributes, no REPLACE_PEERS (and WG_SET_REMOVE_PEERS for
 * the removal). */
typedef int (*wg_set_flags_fn)(const WgDevice *dev, unsigned flags);
int wg_driver_update_peer(wg_set_flags_fn set, const char *ifname, const WgPeer *peer);
int wg_driver_remove_peer(wg_set_flags_fn set, const char *ifname, const WgKey *public_key);

extern const WgDriverOps wg_genl_driver;
extern const WgDriverOps wg_uapi_driver;

/*
 * Chooses the driver for this host: the kernel's when its "wireguard" generic netlink family is
 * registered, or when the module is built in or installed for the running kernel (creating the
 * first link loads it); else wireguard-go when it is on PATH (or at wg_uapi_set_program()'s path).
 * 0 with *ret set, or -EOPNOTSUPP (neither). ret_reason (optional) gets a static string saying why,
 * for the log and /healthz.
 */
int wg_driver_detect(const WgDriverOps **ret, const char **ret_reason);

/* "kernel", "wireguard-go", or "none" for NULL: the string /healthz and /metrics report. */
const char *wg_driver_name(const WgDriverOps *ops);
