/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wireguard: Flannel's wireguard backend. Its devices are programmed through the device layer
 * (daemon/wireguard: the kernel over generic netlink, else wireguard-go over its UAPI socket, one
 * process and socket per device; wg_driver_detect() picks). Our private key lives in the state dir
 * (<state-dir>/wireguard.key, mode 0600, never logged); the public key goes out with our lease,
 * and with it our IPv6 underlay address when the underlay has both families (publicIPv6).
 *
 * Backend.Mode says which devices carry what (Flannel's semantics):
 *
 *   separate (default)  weft-wg    port ListenPort    peers at their IPv4 public IP, allowed IPs
 *                                                     and routes: their IPv4 subnet
 *                       weft-wg-v6 port ListenPortV6  peers at their IPv6 public IP, allowed IPs
 *                                                     and routes: their IPv6 subnet
 *                       (each only for a family the cluster has: Network, Network6)
 *   ipv4 | ipv6         weft-wg    port ListenPort    peers at their public IP of that family,
 *                                                     both subnets through it
 *   auto                weft-wg    port ListenPort    as ipv4/ipv6, the family chosen per peer as
 *                                                     Flannel does (auto_endpoint())
 *
 *   device address      our subnet's network address /32 (subnet6's /128) on the device that
 *                       carries that family; MTU underlay - 60 (IPv4 endpoints) or - 80 (IPv6),
 *                       the smaller where both are used
 *   per remote node     peer   <its public key> endpoint <its public IP>:<port>
 *                              allowed-ips <its subnet(s) of the device's families> [keepalive] [psk]
 *                       route  10.244.2.0/24 dev weft-wg scope link proto 0xfc
 *
 * The routes are the reconciler's, as for every backend; the peers are ours: render() collects
 * the accepted leases' peers per device, commit() sends the driver only what changed (a new or
 * changed peer is updated, a vanished one removed; the other peers and their sessions are
 * untouched). A device that was (re)created, or a driver error, makes the next commit send that
 * whole device (key, port and exactly the wanted peers: stale ones left by an earlier run go too).
 * A device the mode no longer has (weft-wg-v6 after a switch to auto) is deleted.
 *
 * Every pass also reads the peers' handshakes back: a peer with none for 3 minutes is logged once
 * when it goes stale and once when it recovers (wg-handshake.h).
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
#include "daemon/wireguard/wg-handshake.h"
#include "daemon/wireguard/wg-key.h"

#define WG_KEY_FILE "wireguard.key"
#define WG_DEVICE_V4 BACKEND_WIREGUARD_DEVICE
#define WG_DEVICE_V6 BACKEND_WIREGUARD_DEVICE "-v6"

/* One of our devices: what it carries and what its driver has. */
typedef struct WgLink {
	const char *name; /* WG_DEVICE_V4 | WG_DEVICE_V6 */
	uint16_t port;
	int endpoint_family;     /* its peers' endpoints: AF_INET, AF_INET6, AF_UNSPEC = auto, per peer */
	bool carry_v4, carry_v6; /* the subnets of these families go through it (allowed IPs, routes) */
	int ifindex;
	bool need_full_set; /* the device is new, or the driver failed: send everything */
	WgDevice *applied;  /* the peers the driver has (as we sent them) */
	WgDevice *pending;  /* filled by render(), applied by commit() */
	WgHandshakeMonitor handshakes;
} WgLink;

typedef struct WireguardBackend {
	const WgDriverOps *driver;
	const char *driver_reason;
	bool have_key;
	WgKey private_key, public_key;
	bool planned; /* links[] laid out for the mode (once: the config does not change under us) */
	WgLink links[2];
	size_t n_links;
	uint64_t set_errors;  /* driver calls that failed */
	uint64_t peer_writes; /* peers updated or removed one by one */
} WireguardBackend;

static WireguardBackend *wg(const Backend *b) {
	return b->state;
}

/* A node's underlay address of a family from its public IP and IPv6 one (AF_UNSPEC: none). */
static IpAddr family_addr(const IpAddr *public_ip, const IpAddr *public_ip6, int family) {
	if (family == AF_INET)
		return public_ip->family == AF_INET ? *public_ip : (IpAddr) {};
	return ip_addr_is_set(public_ip6) ? *public_ip6 : public_ip->family == AF_INET6 ? *public_ip : (IpAddr) {};
}

static IpAddr local_addr(const Backend *b, int family) {
	return family_addr(&b->public_ip, &b->public_ip6, family);
}

static IpAddr remote_addr(const NodeLease *l, int family) {
	return family_addr(&l->public_ip, &l->public_ip6, family);
}

/* RFC 1918 and RFC 4193 (Go's net.IP.IsPrivate, which Flannel's choice uses). */
static bool addr_is_private(const IpAddr *a) {
	if (a->family == AF_INET)
		return a->bytes[0] == 10 || (a->bytes[0] == 172 && (a->bytes[1] & 0xf0) == 16) ||
		       (a->bytes[0] == 192 && a->bytes[1] == 168);
	return a->family == AF_INET6 && (a->bytes[0] & 0xfe) == 0xfc;
}

/*
 * Mode auto's endpoint for a peer with these addresses, as Flannel chooses it: the only family
 * it has; else IPv4 if its IPv4 address is public and we have IPv4; else IPv6 if its IPv6 address
 * is public and so is ours; else IPv4.
 */
static IpAddr auto_endpoint(const Backend *b, const IpAddr *v4, const IpAddr *v6) {
	IpAddr ours6 = local_addr(b, AF_INET6);

	if (!ip_addr_is_set(v6))
		return *v4;
	if (!ip_addr_is_set(v4))
		return *v6;
	if (!addr_is_private(v4) && ip_addr_is_set(&b->public_ip) && b->public_ip.family == AF_INET)
		return *v4;
	if (!addr_is_private(v6) && ip_addr_is_set(&ours6) && !addr_is_private(&ours6))
		return *v6;
	return *v4;
}

/* WireGuard header 32 + UDP 8 + outer IP (20 | 40). Auto: 80 unless no peer can be reached over
 * IPv6 from here (no IPv6 underlay address, or only a private one next to an IPv4 one). */
static unsigned link_overhead(const Backend *b, const WgLink *l) {
	IpAddr ours6 = local_addr(b, AF_INET6);

	switch (l->endpoint_family) {
	case AF_INET: return 60;
	case AF_INET6: return 80;
	default:
		return ip_addr_is_set(&ours6) && (!addr_is_private(&ours6) || b->public_ip.family != AF_INET) ? 80 : 60;
	}
}

static unsigned wireguard_overhead(const Backend *b) {
	const WireguardBackend *w = wg(b);
	unsigned o = 60;

	for (size_t i = 0; i < w->n_links; i++)
		o = MAX(o, link_overhead(b, &w->links[i]));
	return o;
}

/* Lays out the devices for Backend.Mode and the cluster's families. */
static void plan_links(Backend *b) {
	WireguardBackend *w = wg(b);
	const NetworkBackendConfig *c = &b->config;

	w->n_links = 0;
	if (c->mode == WIREGUARD_MODE_SEPARATE) {
		if (b->ipv4 || !b->ipv6)
			w->links[w->n_links++] = (WgLink) {
				.name = WG_DEVICE_V4,
				.port = c->listen_port,
				.endpoint_family = AF_INET,
				.carry_v4 = true,
			};
		if (b->ipv6)
			w->links[w->n_links++] = (WgLink) {
				.name = WG_DEVICE_V6,
				.port = c->listen_port6,
				.endpoint_family = AF_INET6,
				.carry_v6 = true,
			};
	} else
		w->links[w->n_links++] = (WgLink) {
			.name = WG_DEVICE_V4,
			.port = c->listen_port,
			.endpoint_family = c->mode == WIREGUARD_MODE_IPV4   ? AF_INET
					   : c->mode == WIREGUARD_MODE_IPV6 ? AF_INET6
									    : AF_UNSPEC,
			.carry_v4 = true,
			.carry_v6 = true,
		};
	w->planned = true;
}

static WgLink *find_link(WireguardBackend *w, const char *name) {
	for (size_t i = 0; i < w->n_links; i++)
		if (streq(w->links[i].name, name))
			return &w->links[i];
	return NULL;
}

static void link_done(WgLink *l) {
	l->applied = wg_device_free(l->applied);
	l->pending = wg_device_free(l->pending);
	wg_handshake_monitor_done(&l->handshakes);
}

static void wireguard_done(Backend *b) {
	WireguardBackend *w = wg(b);

	wg_key_wipe(&w->private_key);
	for (size_t i = 0; i < w->n_links; i++)
		link_done(&w->links[i]);
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

/* A copy of what the driver has, with our key and port: the whole device for a full set. */
static int full_device(const WireguardBackend *w, const WgLink *l, WgDevice **ret) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	int r;

	r = wg_device_new(l->name, &d);
	if (r < 0)
		return r;
	d->has_private_key = true;
	d->private_key = w->private_key;
	d->listen_port = l->port;
	for (size_t i = 0; l->applied && i < l->applied->n_peers; i++) {
		const WgPeer *p = &l->applied->peers[i];
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
	*ret = TAKE_PTR(d);
	return 0;
}

typedef struct HandshakeLog {
	const char *device;
} HandshakeLog;

static void log_handshake(void *userdata, const WgKey *public_key, WgHandshakeEvent ev, bool ever, int64_t seconds) {
	const HandshakeLog *h = userdata;
	char key[WG_KEY_B64_LEN + 1];

	wg_key_to_base64(public_key, key);
	if (ev == WG_HANDSHAKE_STALE)
		log_warning("wireguard: peer %s on %s: no handshake for %" PRIi64 " s%s", key, h->device, seconds,
			    ever ? "" : " (none since it was added)");
	else
		log_info("wireguard: peer %s on %s: handshake again after %" PRIi64 " s", key, h->device, seconds);
}

/* The peers' handshakes, read back: stale ones logged once (and their recovery). */
static void check_handshakes(const WireguardBackend *w, WgLink *l) {
	_cleanup_(wg_device_freep) WgDevice *d = NULL;
	HandshakeLog h = { .device = l->name };
	struct timespec now;

	if (w->driver->get(l->name, &d) < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now); /* the clock of the handshake times */
	(void) wg_handshake_monitor_update(&l->handshakes, d, now.tv_sec, log_handshake, &h);
}

static int ensure_link(Backend *b, WgLink *wl) {
	WireguardBackend *w = wg(b);
	NlLink l;
	int r;

	r = w->driver->ensure(wl->name);
	if (r < 0)
		return log_error_errno(r, "wireguard: cannot create %s: %m", wl->name);
	if (r > 0)
		wl->need_full_set = true;
	r = nl_link_get(b->nl, wl->name, 0, &l);
	if (r < 0)
		return r;
	if (l.ifindex != wl->ifindex) {
		wl->ifindex = l.ifindex;
		wl->need_full_set = true;
	}
	if (wl->need_full_set) {
		/* the key and port now, so that our lease is right before any peer exists */
		_cleanup_(wg_device_freep) WgDevice *d = NULL;

		r = full_device(w, wl, &d);
		if (r < 0)
			return r;
		r = w->driver->set(d);
		if (r < 0) {
			w->set_errors++;
			return log_error_errno(r, "wireguard: cannot configure %s: %m", wl->name);
		}
		wl->need_full_set = false;
	}
	r = backend_device_finish_families(b, &l, wl->carry_v4, wl->carry_v6, IFA_F_NODAD); /* no link layer */
	if (r < 0)
		return r;
	check_handshakes(w, wl);
	return 0;
}

static int wireguard_ensure(Backend *b) {
	WireguardBackend *w = wg(b);
	int r, ret = 0;

	if (!w->planned)
		plan_links(b);
	r = backend_refresh_mtu(b, wireguard_overhead(b));
	if (r < 0)
		return r;
	if (!w->driver) {
		r = wg_driver_detect(&w->driver, &w->driver_reason);
		if (r < 0)
			return log_error_errno(r, "wireguard: no driver: %s", w->driver_reason ?: "unknown");
		log_info("wireguard: using the %s driver (%s); Mode %s: %s%s%s", wg_driver_name(w->driver),
			 w->driver_reason ?: "", wireguard_mode_to_string(b->config.mode), w->links[0].name,
			 w->n_links > 1 ? " and " : "", w->n_links > 1 ? w->links[1].name : "");
		if (find_link(w, WG_DEVICE_V6) && local_addr(b, AF_INET6).family != AF_INET6)
			log_warning("wireguard: Mode separate, but the underlay %s has no IPv6 address: %s reaches "
				    "no peer (Mode auto or ipv4 carries IPv6 pods over IPv4)",
				    b->underlay_name, WG_DEVICE_V6);
		/* a device an earlier run made in another mode is not ours to keep */
		if (!find_link(w, WG_DEVICE_V6)) {
			r = w->driver->destroy(WG_DEVICE_V6);
			if (r < 0)
				log_warning_errno(r, "wireguard: cannot remove the unused %s: %m", WG_DEVICE_V6);
		}
	}
	r = wireguard_load_key(b);
	if (r < 0)
		return r;
	for (size_t i = 0; i < w->n_links; i++)
		RET_GATHER(ret, ensure_link(b, &w->links[i]));
	return ret;
}

static void add_route(NodeObjects *o, const WgLink *l, const IpPrefix *subnet) {
	/* ip route replace 10.244.2.0/24 dev weft-wg scope link proto 0xfc */
	o->routes[o->n_routes++] = (NlRoute) {
		.dst = ip_prefix_mask(subnet),
		.oif = l->ifindex,
		.protocol = WEFT_RTPROT,
		.scope = RT_SCOPE_LINK,
		.type = RTN_UNICAST,
	};
}

/* The remote's peer on one device, if it has an endpoint of the device's family and a subnet
 * the device carries. */
static int render_link(Backend *b, WgLink *l, const NodeLease *remote, NodeObjects *o) {
	const IpPrefix *subnets[] = { &remote->subnet, &remote->subnet6 };
	IpAddr v4 = remote_addr(remote, AF_INET), v6 = remote_addr(remote, AF_INET6), ep;
	WgPeer *p = NULL;
	WgKey k;
	int r;

	ep = l->endpoint_family == AF_INET ? v4 : l->endpoint_family == AF_INET6 ? v6 : auto_endpoint(b, &v4, &v6);
	if (!ip_addr_is_set(&ep))
		return 0; /* no address of that family: the node is reached on the other device, or not */
	if (!l->pending) {
		r = wg_device_new(l->name, &l->pending);
		if (r < 0)
			return r;
	}
	memcpy(k.b, remote->public_key, WG_KEY_LEN);
	for (size_t i = 0; i < ELEMENTSOF(subnets); i++) {
		int f = subnets[i]->addr.family;

		if (!((f == AF_INET && l->carry_v4) || (f == AF_INET6 && l->carry_v6)))
			continue;
		if (!p) {
			r = wg_device_add_peer(l->pending, &k, &p);
			if (r < 0)
				return r; /* -EEXIST cannot happen: the filter made keys unique */
			p->endpoint = (WgEndpoint) { .addr = ep, .port = l->port };
			p->persistent_keepalive = b->config.keepalive_sec;
			if (b->config.has_psk) {
				p->has_preshared_key = true;
				memcpy(p->preshared_key.b, b->config.psk, WG_KEY_LEN);
			}
		}
		r = wg_peer_add_allowed_ip(p, subnets[i]);
		if (r < 0)
			return r;
		add_route(o, l, subnets[i]);
	}
	return 0;
}

static int wireguard_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	WireguardBackend *w = wg(b);
	NodeObjects o = { .node_name = remote->node_name };
	int r;

	for (size_t i = 0; i < w->n_links; i++)
		if (w->links[i].ifindex <= 0)
			return -ENODEV;
	if (!remote->has_public_key || !ip_addr_is_set(&remote->public_ip))
		return -EINVAL; /* a node of another backend, or one that has not published its key yet */
	for (size_t i = 0; i < w->n_links; i++) {
		r = render_link(b, &w->links[i], remote, &o);
		if (r < 0)
			return r;
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
 * (pending) on one device. 0 or the first error (the rest is still tried). */
static int apply_changes(WireguardBackend *w, WgLink *l) {
	const WgDevice *want = l->pending, *have = l->applied;
	char key[WG_KEY_B64_LEN + 1];
	int r, ret = 0;

	for (size_t i = 0; i < want->n_peers; i++) {
		const WgPeer *p = &want->peers[i], *old = have ? wg_device_find_peer(have, &p->public_key) : NULL;

		if (old && peer_equal(p, old))
			continue;
		wg_key_to_base64(&p->public_key, key);
		r = w->driver->update_peer(l->name, p);
		if (r < 0) {
			log_warning_errno(r, "wireguard: cannot %s peer %s on %s: %m", old ? "update" : "add", key,
					  l->name);
			ret = ret ?: r;
		} else
			log_info("wireguard: %s peer %s on %s", old ? "updated" : "added", key, l->name);
		w->peer_writes++;
	}
	for (size_t i = 0; have && i < have->n_peers; i++) {
		const WgPeer *p = &have->peers[i];

		if (wg_device_find_peer(want, &p->public_key))
			continue;
		wg_key_to_base64(&p->public_key, key);
		r = w->driver->remove_peer(l->name, &p->public_key);
		if (r < 0) {
			log_warning_errno(r, "wireguard: cannot remove peer %s from %s: %m", key, l->name);
			ret = ret ?: r;
		} else
			log_info("wireguard: removed peer %s from %s", key, l->name);
		w->peer_writes++;
	}
	return ret;
}

static void commit_link(WireguardBackend *w, WgLink *l) {
	int r;

	if (l->ifindex <= 0)
		return;
	if (!l->pending && wg_device_new(l->name, &l->pending) < 0)
		return;
	if (l->need_full_set) {
		l->pending->has_private_key = true;
		l->pending->private_key = w->private_key;
		l->pending->listen_port = l->port;
		r = w->driver->set(l->pending);
		l->pending->has_private_key = false;
		wg_key_wipe(&l->pending->private_key);
	} else
		r = apply_changes(w, l);
	if (r < 0) {
		w->set_errors++;
		l->need_full_set = true; /* the driver's state is unknown now: send everything next time */
	} else
		l->need_full_set = false;
	wg_device_free(l->applied);
	l->applied = TAKE_PTR(l->pending);
}

static void wireguard_commit(Backend *b) {
	WireguardBackend *w = wg(b);

	if (!w->driver)
		return;
	for (size_t i = 0; i < w->n_links; i++)
		commit_link(w, &w->links[i]);
}

/* Our public key, published with the lease (peers configure us with it) and refused in any
 * remote lease; and our IPv6 underlay address next to the IPv4 one (weft-wg-v6's endpoint). */
static void wireguard_lease_attrs(const Backend *b, NodeLease *self) {
	const WireguardBackend *w = wg(b);

	if (b->public_ip.family == AF_INET && ip_addr_is_set(&b->public_ip6))
		self->public_ip6 = b->public_ip6;
	if (!w->have_key)
		return;
	memcpy(self->public_key, w->public_key.b, WG_KEY_LEN);
	self->has_public_key = true;
}

/* weft_wireguard_* lines for /metrics: the driver, and per device and peer its last handshake and
 * bytes (the device label keeps them apart: in Mode separate a node is a peer on both). */
static void wireguard_render_metrics(const Backend *b, FILE *f) {
	const WireguardBackend *w = wg(b);
	WgDevice *d[ELEMENTSOF(w->links)] = {};
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
	for (size_t i = 0; i < w->n_links; i++)
		if (w->driver->get(w->links[i].name, &d[i]) < 0)
			d[i] = NULL;
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(f, "# HELP weft_wireguard_peer_last_handshake_seconds Unix time of the peer's last handshake "
		   "(0: never).\n"
		   "# TYPE weft_wireguard_peer_last_handshake_seconds gauge\n");
	for (size_t i = 0; i < w->n_links; i++)
		for (size_t j = 0; d[i] && j < d[i]->n_peers; j++) {
			wg_key_to_base64(&d[i]->peers[j].public_key, key);
			fprintf(f, "weft_wireguard_peer_last_handshake_seconds{device=\"%s\",public_key=\"%s\"} %lld\n",
				w->links[i].name, key, (long long) d[i]->peers[j].last_handshake.tv_sec);
		}
	fprintf(f, "# HELP weft_wireguard_peer_bytes_total Bytes exchanged with the peer.\n"
		   "# TYPE weft_wireguard_peer_bytes_total counter\n");
	for (size_t i = 0; i < w->n_links; i++)
		for (size_t j = 0; d[i] && j < d[i]->n_peers; j++) {
			const WgPeer *p = &d[i]->peers[j];
			const char *dev = w->links[i].name;

			wg_key_to_base64(&p->public_key, key);
			fprintf(f,
				"weft_wireguard_peer_bytes_total{device=\"%s\",public_key=\"%s\",direction=\"rx\"} %" PRIu64
				"\n"
				"weft_wireguard_peer_bytes_total{device=\"%s\",public_key=\"%s\",direction=\"tx\"} %" PRIu64
				"\n",
				dev, key, p->rx_bytes, dev, key, p->tx_bytes);
			if (p->last_handshake.tv_sec == 0)
				never++;
			else if (now.tv_sec - p->last_handshake.tv_sec > WG_HANDSHAKE_STALE_SEC)
				stale++;
			else
				up++;
		}
	for (size_t i = 0; i < w->n_links; i++)
		wg_device_free(d[i]);
	fprintf(f,
		"# HELP weft_wireguard_peers Peers by state, over all devices (up: a handshake within 3 minutes).\n"
		"# TYPE weft_wireguard_peers gauge\n"
		"weft_wireguard_peers{state=\"up\"} %zu\n"
		"weft_wireguard_peers{state=\"stale\"} %zu\n"
		"weft_wireguard_peers{state=\"never\"} %zu\n",
		up, stale, never);
}

static int wireguard_probe(const Backend *b, BackendProbe *ret) {
	const WireguardBackend *w = wg(b);
	int k;

	*ret = (BackendProbe) { .check = "wireguard", .ok = w->driver != NULL };
	if (!w->driver)
		ret->why = "no driver (neither the kernel module nor wireguard-go)";
	for (size_t i = 0; i < w->n_links; i++)
		if (w->links[i].ifindex <= 0 && ret->ok) {
			ret->ok = false;
			ret->why = streq(w->links[i].name, WG_DEVICE_V6) ? "no device " WG_DEVICE_V6
									 : "no device " WG_DEVICE_V4;
		}
	k = snprintf(ret->detail, sizeof(ret->detail), "wireguard driver: %s, peers: %zu", wg_driver_name(w->driver),
		     w->n_links > 0 && w->links[0].applied ? w->links[0].applied->n_peers : (size_t) 0);
	for (size_t i = 1; i < w->n_links && k > 0 && (size_t) k < sizeof(ret->detail); i++)
		k += snprintf(ret->detail + k, sizeof(ret->detail) - k, " (%s: %zu)", w->links[i].name,
			      w->links[i].applied ? w->links[i].applied->n_peers : (size_t) 0);
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
