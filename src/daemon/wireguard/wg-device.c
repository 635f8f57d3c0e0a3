/* SPDX-License-Identifier: Apache-2.0 */
/* The WgDevice model and the choice of driver. */

#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/wireguard/wg-device.h"
#include "daemon/wireguard/wg-genl.h"
#include "daemon/wireguard/wg-uapi.h"
#include "shared/nl/nl-internal.h"

/* Far above any cluster (a peer per node) and any node's pod CIDRs, but a bound: a corrupt reply
 * or desired state cannot make us allocate without end. */
#define WG_MAX_PEERS (1U << 16)
#define WG_MAX_ALLOWED_IPS (1U << 16)

static bool prefix_ok(const IpPrefix *p) {
	return (p->addr.family == AF_INET || p->addr.family == AF_INET6) && p->len <= ip_family_bits(p->addr.family);
}

int wg_device_new(const char *name, WgDevice **ret) {
	WgDevice *d;

	if (!name || !nl_ifname_valid(name))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	memcpy(d->name, name, strlen(name) + 1);
	*ret = d;
	return 0;
}

void wg_peer_done(WgPeer *p) {
	if (!p)
		return;
	p->allowed_ips = mfree(p->allowed_ips);
	p->n_allowed_ips = 0;
	wg_key_wipe(&p->preshared_key);
}

WgDevice *wg_device_free(WgDevice *d) {
	if (!d)
		return NULL;
	for (size_t i = 0; i < d->n_peers; i++)
		wg_peer_done(&d->peers[i]);
	free(d->peers);
	wg_key_wipe(&d->private_key);
	free(d);
	return NULL;
}

WgPeer *wg_device_find_peer(const WgDevice *d, const WgKey *public_key) {
	for (size_t i = 0; i < d->n_peers; i++)
		if (wg_key_equal(&d->peers[i].public_key, public_key))
			return &d->peers[i];
	return NULL;
}

/* Arrays grow to the next power of two (at least 4) when n reaches one, so appending n elements
 * costs O(n) copies, not O(n^2): the capacity is implied by n, no field needed. */
static bool needs_growth(size_t n) {
	return n == 0 || (n >= 4 && (n & (n - 1)) == 0);
}

static size_t grown(size_t n) {
	return n == 0 ? 4 : 2 * n;
}

int wg_device_append_peer(WgDevice *d, const WgKey *public_key, WgPeer **ret) {
	if (d->n_peers >= WG_MAX_PEERS)
		return -E2BIG;
	if (needs_growth(d->n_peers)) {
		WgPeer *peers = reallocarray(d->peers, grown(d->n_peers), sizeof(*peers));
		if (!peers)
			return -ENOMEM;
		d->peers = peers;
	}
	d->peers[d->n_peers] = (WgPeer) { .public_key = *public_key };
	if (ret)
		*ret = &d->peers[d->n_peers];
	d->n_peers++;
	return 0;
}

int wg_device_add_peer(WgDevice *d, const WgKey *public_key, WgPeer **ret) {
	if (wg_device_find_peer(d, public_key))
		return -EEXIST;
	return wg_device_append_peer(d, public_key, ret);
}

static int key_cmp(const void *a, const void *b) {
	/* public keys: not secret, an ordinary comparison is fine */
	return memcmp(a, b, WG_KEY_LEN);
}

int wg_device_check_unique_peers(const WgDevice *d) {
	_cleanup_free_ WgKey *keys = NULL;

	if (d->n_peers < 2)
		return 0;
	keys = malloc(d->n_peers * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_peers; i++)
		keys[i] = d->peers[i].public_key;
	qsort(keys, d->n_peers, sizeof(*keys), key_cmp);
	for (size_t i = 1; i < d->n_peers; i++)
		if (key_cmp(&keys[i - 1], &keys[i]) == 0)
			return -EEXIST;
	return 0;
}

int wg_peer_add_allowed_ip(WgPeer *p, const IpPrefix *prefix) {
	IpPrefix *a;

	if (!prefix_ok(prefix))
		return -EINVAL;
	if (p->n_allowed_ips >= WG_MAX_ALLOWED_IPS)
		return -E2BIG;
	if (needs_growth(p->n_allowed_ips)) {
		a = reallocarray(p->allowed_ips, grown(p->n_allowed_ips), sizeof(*a));
		if (!a)
			return -ENOMEM;
		p->allowed_ips = a;
	}
	p->allowed_ips[p->n_allowed_ips++] = ip_prefix_mask(prefix);
	return 0;
}

int wg_device_validate(const WgDevice *d) {
	if (!nl_ifname_valid(d->name))
		return -EINVAL;
	for (size_t i = 0; i < d->n_peers; i++) {
		const WgPeer *p = &d->peers[i];
		int f = p->endpoint.addr.family;

		if (f != AF_UNSPEC && f != AF_INET && f != AF_INET6)
			return -EINVAL;
		for (size_t j = 0; j < p->n_allowed_ips; j++)
			if (!prefix_ok(&p->allowed_ips[j]))
				return -EINVAL;
	}
	return 0;
}

/* The device borrows the peer (and its allowed IPs): nothing to free. */
static int one_peer_device(const char *ifname, const WgPeer *peer, WgDevice *ret) {
	if (!ifname || !nl_ifname_valid(ifname))
		return -EINVAL;
	*ret = (WgDevice) { .peers = (WgPeer *) peer, .n_peers = 1 };
	strcpy(ret->name, ifname);
	return 0;
}

int wg_driver_update_peer(wg_set_flags_fn set, const char *ifname, const WgPeer *peer) {
	WgDevice d;
	int r = one_peer_device(ifname, peer, &d);

	return r < 0 ? r : set(&d, 0);
}

int wg_driver_remove_peer(wg_set_flags_fn set, const char *ifname, const WgKey *public_key) {
	WgPeer p = { .public_key = *public_key };
	WgDevice d;
	int r = one_peer_device(ifname, &p, &d);

	/* Both implementations ignore the removal of a peer they do not have: idempotent. */
	return r < 0 ? r : set(&d, WG_SET_REMOVE_PEERS);
}

/* The module is built in (/sys/module/wireguard without being loadable) or installed for the running
 * kernel: the first RTM_NEWLINK of kind "wireguard" loads it (request_module("rtnl-link-wireguard")). */
static bool kernel_module_available(void) {
	struct utsname u;
	char pattern[sizeof(u.release) + 64];
	glob_t g = {};
	bool found;

	if (access("/sys/module/wireguard", F_OK) == 0)
		return true;
	if (uname(&u) < 0)
		return false;
	snprintf(pattern, sizeof(pattern), "/lib/modules/%s/kernel/drivers/net/wireguard/wireguard.ko*", u.release);
	found = glob(pattern, GLOB_NOSORT, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return found;
}

int wg_driver_detect(const WgDriverOps **ret, const char **ret_reason) {
	uint16_t id;
	const char *reason;

	if (wg_genl_resolve_family(&id) >= 0) {
		reason = "the kernel's wireguard generic netlink family is registered";
		*ret = &wg_genl_driver;
	} else if (kernel_module_available()) {
		reason = "the kernel has the wireguard module (loaded with the first device)";
		*ret = &wg_genl_driver;
	} else if (wg_uapi_program_available()) {
		reason = "no wireguard kernel module; using the userspace implementation wireguard-go";
		*ret = &wg_uapi_driver;
	} else {
		if (ret_reason)
			*ret_reason = "no wireguard kernel module and no wireguard-go";
		return -EOPNOTSUPP;
	}
	if (ret_reason)
		*ret_reason = reason;
	return 0;
}

const char *wg_driver_name(const WgDriverOps *ops) {
	return ops ? ops->name : "none";
}
