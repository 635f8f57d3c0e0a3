/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wireguard: Flannel's wireguard backend. One WireGuard device per node, weft-wg, programmed
 * through the device layer (daemon/wireguard: the kernel over generic netlink, else wireguard-go
 * over its UAPI socket; wg_driver_detect() picks). Our private key lives in the state dir
 * (<state-dir>/wireguard.key, mode 0600, never logged); the public key goes out with our lease.
 *
 *   device address      <our subnet network address>/32 (and subnet6's /128), MTU underlay - 60
 *                       (IPv4 underlay) or - 80 (IPv6)
 *   per remote node     peer   <its public key> endpoint <its public IP>:ListenPort
 *                              allowed-ips <its subnet>[,<its subnet6>] [keepalive] [psk]
 *                       route  10.244.2.0/24 dev weft-wg scope link proto 0xfc
 *
 * The routes are the reconciler's, as for every backend; the peers are ours: render() collects
 * the accepted leases' peers, commit() sends the driver only what changed (a new or changed peer
 * is updated, a vanished one removed; the other peers and their sessions are untouched). A device
 * that was (re)created, or a driver error, makes the next commit send the whole device (key, port
 * and exactly the wanted peers: stale ones left by an earlier run go too).
 *
 * This first slice carries both families over the one device (WireGuard allows IPv6 inside IPv4
 * and back); Mode separate's second device weft-wg-v6 is not created yet.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/backend/backend.h"
#include "daemon/wireguard/wg-device.h"
#include "daemon/wireguard/wg-key.h"

#define WG_KEY_FILE "wireguard.key"
/* WireGuard re-keys every 2 minutes while traffic flows; older than this is "stale". */
#define WG_HANDSHAKE_STALE_SEC 180

typedef struct WireguardBackend {
	const WgDriverOps *driver;
	const char *driver_reason;
	bool have_key;
	WgKey private_key, public_key;
	int ifindex;
	bool need_full_set;   /* the device is new, or the driver failed: send everything */
	WgDevice *applied;    /* the peers the driver has (as we sent them) */
	WgDevice *pending;    /* filled by render(), applied by commit() */
	uint64_t set_errors;  /* driver calls that failed */
	uint64_t peer_writes; /* peers updated or removed one by one */
} WireguardBackend;

static WireguardBackend *wg(const Backend *b) {
	return b->state;
}

/* WireGuard header 32 + UDP 8 + outer IP (20 | 40) */
static unsigned wireguard_overhead(const Backend *b) {
	return b->public_ip.family == AF_INET6 ? 80 : 60;
}

static void wireguard_done(Backend *b) {
	WireguardBackend *w = wg(b);

	wg_key_wipe(&w->private_key);
	w->applied = wg_device_free(w->applied);
	w->pending = wg_device_free(w->pending);
}

static int wireguard_load_key(Backend *b) {
	WireguardBackend *w = wg(b);
	_cleanup_free_ char *path = NULL;
	int r;

	if (w->have_key)
		return 0;
	path = strdup_printf("%s/%s", b->state_dir ?: "/var/lib/weft", WG_KEY_FILE);
	if (!path)
		return -ENOMEM;
	if (b->rotate_key) {
		/* --rotate-key: the new key replaces the file atomically; the peers learn the public
		 * key from our lease and re-key their peer for us. */
		r = wg_key_generate_private(&w->private_key);
		if (r >= 0)
			r = wg_key_store_private(path, &w->private_key);
		if (r < 0) {
			wg_key_wipe(&w->private_key);
			return log_error_errno(r, "wireguard: cannot replace the private key %s: %m", path);
		}
		log_info("wireguard: replaced the key pair (--rotate-key; private key in %s)", path);
	} else {
		r = wg_key_load_or_create(path, &w->private_key);
		if (r < 0)
			return log_error_errno(r, "wireguard: cannot load or create the private key %s: %m", path);
		if (r > 0)
			log_info("wireguard: generated a new key pair (private key in %s)", path);
	}
	r = wg_key_public_from_private(&w->private_key, &w->public_key);
	if (r < 0) {
		wg_key_wipe(&w->private_key);
		return log_error_errno(r, "wireguard: the private key in %s has no public key: %m", path);
	}
	w->have_key = true;
	return 0;
}

static int wireguard_ensure(Backend *b) {
	WireguardBackend *w = wg(b);
	NlLink l;
	int r;

	r = backend_refresh_mtu(b, wireguard_overhead(b));
	if (r < 0)
		return r;
	if (!w->driver) {
		r = wg_driver_detect(&w->driver, &w->driver_reason);
		if (r < 0)
			return log_error_errno(r, "wireguard: no driver: %s", w->driver_reason ?: "unknown");
		log_info("wireguard: using the %s driver (%s)", wg_driver_name(w->driver), w->driver_reason ?: "");
	}
	r = wireguard_load_key(b);
	if (r < 0)
		return r;

	r = w->driver->ensure(BACKEND_WIREGUARD_DEVICE);
	if (r < 0)
		return r;
	if (r > 0)
		w->need_full_set = true;
	r = nl_link_get(b->nl, BACKEND_WIREGUARD_DEVICE, 0, &l);
	if (r < 0)
		return r;
	if (l.ifindex != w->ifindex) {
		w->ifindex = l.ifindex;
		w->need_full_set = true;
	}
	if (w->need_full_set) {
		/* the key and port now, so that our lease is right before any peer exists */
		_cleanup_(wg_device_freep) WgDevice *d = NULL;

		r = wg_device_new(BACKEND_WIREGUARD_DEVICE, &d);
		if (r < 0)
			return r;
		d->has_private_key = true;
		d->private_key = w->private_key;
		d->listen_port = b->config.listen_port;
		for (size_t i = 0; w->applied && i < w->applied->n_peers; i++) {
			const WgPeer *p = &w->applied->peers[i];
			WgPeer *q;

			r = wg_device_add_peer(d, &p->public_key, &q);
			if (r < 0)
				return r;
			q->has_preshared_key = p->has_preshared_key;
			q->preshared_key = p->preshared_key;
			q->endpoint = p->endpoint;
			q->persistent_keepalive = p->persistent_keepalive;
			for (size_t j = 0; j < p->n_allowed_ips; j++) {
				r = wg_peer_add_allowed_ip(q, &p->allowed_ips[j]);
				if (r < 0)
					return r;
			}
		}
		r = w->driver->set(d);
		if (r < 0) {
			w->set_errors++;
			return log_error_errno(r, "wireguard: cannot configure %s: %m", BACKEND_WIREGUARD_DEVICE);
		}
		w->need_full_set = false;
	}
	return backend_device_finish(b, &l, true, IFA_F_NODAD); /* no link layer */
}

static int pending_device(WireguardBackend *w) {
	if (w->pending)
		return 0;
	return wg_device_new(BACKEND_WIREGUARD_DEVICE, &w->pending);
}

static void add_route(Backend *b, const IpPrefix *subnet, NodeObjects *o) {
	/* ip route replace 10.244.2.0/24 dev weft-wg scope link proto 0xfc */
	o->routes[o->n_routes++] = (NlRoute) {
		.dst = ip_prefix_mask(subnet),
		.oif = wg(b)->ifindex,
		.protocol = WEFT_RTPROT,
		.scope = RT_SCOPE_LINK,
		.type = RTN_UNICAST,
	};
}

static int wireguard_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	WireguardBackend *w = wg(b);
	NodeObjects o = { .node_name = remote->node_name };
	WgPeer *p;
	WgKey k;
	int r;

	if (w->ifindex <= 0)
		return -ENODEV;
	if (!remote->has_public_key || !ip_addr_is_set(&remote->public_ip))
		return -EINVAL; /* a node of another backend, or one that has not published its key yet */
	r = pending_device(w);
	if (r < 0)
		return r;
	memcpy(k.b, remote->public_key, WG_KEY_LEN);
	r = wg_device_add_peer(w->pending, &k, &p);
	if (r < 0)
		return r; /* -EEXIST cannot happen: the filter made keys unique */
	p->endpoint = (WgEndpoint) { .addr = remote->public_ip, .port = b->config.listen_port };
	p->persistent_keepalive = b->config.keepalive_sec;
	if (b->config.has_psk) {
		p->has_preshared_key = true;
		memcpy(p->preshared_key.b, b->config.psk, WG_KEY_LEN);
	}
	if (ip_addr_is_set(&remote->subnet.addr)) {
		r = wg_peer_add_allowed_ip(p, &remote->subnet);
		if (r < 0)
			return r;
		add_route(b, &remote->subnet, &o);
	}
	if (ip_addr_is_set(&remote->subnet6.addr)) {
		r = wg_peer_add_allowed_ip(p, &remote->subnet6);
		if (r < 0)
			return r;
		add_route(b, &remote->subnet6, &o);
	}
	*ret = o;
	return 0;
}

static bool peer_equal(const WgPeer *a, const WgPeer *b) {
	if (!wg_key_equal(&a->public_key, &b->public_key) || a->has_preshared_key != b->has_preshared_key ||
	    (a->has_preshared_key && !wg_key_equal(&a->preshared_key, &b->preshared_key)) ||
	    !ip_addr_equal(&a->endpoint.addr, &b->endpoint.addr) || a->endpoint.port != b->endpoint.port ||
	    a->persistent_keepalive != b->persistent_keepalive || a->n_allowed_ips != b->n_allowed_ips)
		return false;
	for (size_t i = 0; i < a->n_allowed_ips; i++)
		if (!ip_prefix_equal(&a->allowed_ips[i], &b->allowed_ips[i]))
			return false;
	return true;
}

/* Sends the driver the difference between what it has (applied) and what the pass wants
 * (pending). 0 or the first error (the rest is still tried). */
static int apply_changes(Backend *b) {
	WireguardBackend *w = wg(b);
	const WgDevice *want = w->pending, *have = w->applied;
	char key[WG_KEY_B64_LEN + 1];
	int r, ret = 0;

	for (size_t i = 0; i < want->n_peers; i++) {
		const WgPeer *p = &want->peers[i], *old = have ? wg_device_find_peer(have, &p->public_key) : NULL;

		if (old && peer_equal(p, old))
			continue;
		wg_key_to_base64(&p->public_key, key);
		r = w->driver->update_peer(BACKEND_WIREGUARD_DEVICE, p);
		if (r < 0) {
			log_warning_errno(r, "wireguard: cannot %s peer %s: %m", old ? "update" : "add", key);
			ret = ret ?: r;
		} else
			log_info("wireguard: %s peer %s", old ? "updated" : "added", key);
		w->peer_writes++;
	}
	for (size_t i = 0; have && i < have->n_peers; i++) {
		const WgPeer *p = &have->peers[i];

		if (wg_device_find_peer(want, &p->public_key))
			continue;
		wg_key_to_base64(&p->public_key, key);
		r = w->driver->remove_peer(BACKEND_WIREGUARD_DEVICE, &p->public_key);
		if (r < 0) {
			log_warning_errno(r, "wireguard: cannot remove peer %s: %m", key);
			ret = ret ?: r;
		} else
			log_info("wireguard: removed peer %s", key);
		w->peer_writes++;
	}
	return ret;
}

static void wireguard_commit(Backend *b) {
	WireguardBackend *w = wg(b);
	int r;

	if (!w->driver || w->ifindex <= 0 || pending_device(w) < 0)
		return;
	if (w->need_full_set) {
		w->pending->has_private_key = true;
		w->pending->private_key = w->private_key;
		w->pending->listen_port = b->config.listen_port;
		r = w->driver->set(w->pending);
		w->pending->has_private_key = false;
		wg_key_wipe(&w->pending->private_key);
	} else
		r = apply_changes(b);
	if (r < 0) {
		w->set_errors++;
		w->need_full_set = true; /* the driver's state is unknown now: send everything next time */
	} else
		w->need_full_set = false;
	wg_device_free(w->applied);
	w->applied = TAKE_PTR(w->pending);
}

/* Our public key, published with the lease (peers configure us with it) and refused in any
 * remote lease. */
static void wireguard_lease_attrs(const Backend *b, NodeLease *self) {
	const WireguardBackend *w = wg(b);

	if (!w->have_key)
		return;
	memcpy(self->public_key, w->public_key.b, WG_KEY_LEN);
	self->has_public_key = true;
}

/* weft_wireguard_* lines for /metrics: the driver, and per peer its last handshake and bytes. */
static void wireguard_render_metrics(const Backend *b, FILE *f) {
	const WireguardBackend *w = wg(b);
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	struct timespec now;
	size_t up = 0, stale = 0, never = 0;
	char key[WG_KEY_B64_LEN + 1];

	if (!w->driver)
		return;
	fprintf(f,
		"# HELP weft_wireguard_driver The WireGuard driver in use (1 for the one named).\n"
		"# TYPE weft_wireguard_driver gauge\n"
		"weft_wireguard_driver{driver=\"%s\"} 1\n"
		"# HELP weft_wireguard_errors_total Driver calls that failed.\n"
		"# TYPE weft_wireguard_errors_total counter\n"
		"weft_wireguard_errors_total %" PRIu64 "\n",
		wg_driver_name(w->driver), w->set_errors);
	if (w->driver->get(BACKEND_WIREGUARD_DEVICE, &d) < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(f, "# HELP weft_wireguard_peer_last_handshake_seconds Unix time of the peer's last handshake "
		   "(0: never).\n"
		   "# TYPE weft_wireguard_peer_last_handshake_seconds gauge\n");
	for (size_t i = 0; i < d->n_peers; i++) {
		wg_key_to_base64(&d->peers[i].public_key, key);
		fprintf(f, "weft_wireguard_peer_last_handshake_seconds{public_key=\"%s\"} %lld\n", key,
			(long long) d->peers[i].last_handshake.tv_sec);
	}
	fprintf(f, "# HELP weft_wireguard_peer_bytes_total Bytes exchanged with the peer.\n"
		   "# TYPE weft_wireguard_peer_bytes_total counter\n");
	for (size_t i = 0; i < d->n_peers; i++) {
		const WgPeer *p = &d->peers[i];

		wg_key_to_base64(&p->public_key, key);
		fprintf(f,
			"weft_wireguard_peer_bytes_total{public_key=\"%s\",direction=\"rx\"} %" PRIu64 "\n"
			"weft_wireguard_peer_bytes_total{public_key=\"%s\",direction=\"tx\"} %" PRIu64 "\n",
			key, p->rx_bytes, key, p->tx_bytes);
		if (p->last_handshake.tv_sec == 0)
			never++;
		else if (now.tv_sec - p->last_handshake.tv_sec > WG_HANDSHAKE_STALE_SEC)
			stale++;
		else
			up++;
	}
	fprintf(f,
		"# HELP weft_wireguard_peers Peers by state (up: a handshake within 3 minutes).\n"
		"# TYPE weft_wireguard_peers gauge\n"
		"weft_wireguard_peers{state=\"up\"} %zu\n"
		"weft_wireguard_peers{state=\"stale\"} %zu\n"
		"weft_wireguard_peers{state=\"never\"} %zu\n",
		up, stale, never);
}

static int wireguard_probe(const Backend *b, BackendProbe *ret) {
	const WireguardBackend *w = wg(b);

	*ret = (BackendProbe) { .check = "wireguard", .ok = w->driver && w->ifindex > 0 };
	if (!w->driver)
		ret->why = "no driver (neither the kernel module nor wireguard-go)";
	else if (w->ifindex <= 0)
		ret->why = "no device " BACKEND_WIREGUARD_DEVICE;
	snprintf(ret->detail, sizeof(ret->detail), "wireguard driver: %s, peers: %zu", wg_driver_name(w->driver),
		 w->applied ? w->applied->n_peers : (size_t) 0);
	return 0;
}

/* weft-wg and weft-wg-v6: kernel WireGuard links, or wireguard-go's TUNs (wireguard-go exits when its
 * TUN goes, and removes its UAPI socket) */
static int wireguard_uninstall(NlSock *nl) {
	int r = backend_delete_links(nl, "wireguard", BACKEND_WIREGUARD_DEVICE);

	RET_GATHER(r, backend_delete_links(nl, "tun", BACKEND_WIREGUARD_DEVICE));
	return r;
}

const BackendOps backend_wireguard_ops = {
	.name = "wireguard",
	.object_size = sizeof(WireguardBackend),
	.done = wireguard_done,
	.ensure = wireguard_ensure,
	.render = wireguard_render,
	.commit = wireguard_commit,
	.lease_attrs = wireguard_lease_attrs,
	.render_metrics = wireguard_render_metrics,
	.probe = wireguard_probe,
	.uninstall = wireguard_uninstall,
};
