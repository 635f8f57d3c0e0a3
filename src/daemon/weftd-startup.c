/* SPDX-License-Identifier: Apache-2.0 */
/*
 * weftd's start-up, run from a timer in the loop so /healthz answers (503) and SIGTERM works while
 * we wait: STARTUP_CONNECT (open the datastore, then the object cache if it takes its kubeconfig
 * from there; read the network config), STARTUP_ACQUIRE (VTEP, lease, local programming, watch),
 * then STARTUP_WAIT_SYNC until the first full lease list has been reconciled (weftd.c). Datastore
 * trouble is retried with exponential backoff; configuration errors end weftd with EXIT_CONFIG.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include <arpa/inet.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service-route.h"
#include "daemon/weftd.h"

/* Our IPv6 subnet is derived from the IPv4 one (same index into Network6), so the store's
 * compare-and-swap on the IPv4 subnet keeps both unique. -ERANGE if Network6 is too small. */
static int derive_subnet6(const NetworkConfig *c, const IpPrefix *subnet, IpPrefix *ret) {
	unsigned __int128 idx, v6 = 0;
	uint32_t off;
	IpPrefix p = { .addr.family = AF_INET6, .len = (uint8_t) c->subnet_len6 };

	off = ntohl(subnet->addr.in.s_addr) - ntohl(c->network.addr.in.s_addr);
	idx = off >> (32 - c->subnet_len);
	if (c->subnet_len6 - c->network6.len < 64 && idx >> (c->subnet_len6 - c->network6.len) != 0)
		return -ERANGE;
	for (int i = 0; i < 16; i++)
		v6 = v6 << 8 | c->network6.addr.bytes[i];
	v6 |= idx << (128 - c->subnet_len6);
	for (int i = 15; i >= 0; i--, v6 >>= 8)
		p.addr.bytes[i] = (uint8_t) v6;
	*ret = p;
	return 0;
}

static int startup_fail_config(Manager *m, const char *msg) {
	log_error("Invalid network config: %s", msg);
	if (m->loop) /* not yet when a --net-config file is checked */
		event_loop_exit(m->loop, EXIT_CONFIG);
	return -EINVAL;
}

int manager_validate_config(Manager *m) {
	const BackendOps *ops;
	int r;

	for (size_t i = 0; i < m->backend.n_connected; i++) {
		_cleanup_free_ char *err = NULL,
				    *what = strdup_printf("the underlay network of %s", m->backend.underlay_name);

		if (!what)
			return log_error_errno(ENOMEM, "Out of memory");
		if (network_config_check_overlap(m->config, &m->backend.connected[i], what, &err) < 0)
			return startup_fail_config(m, err ?: "overlaps the underlay");
	}
	for (size_t i = 0; i < m->args.n_service_ranges; i++) {
		/* A Service range is routed to the underlay: covering the pod network or a network the
		 * node is on would take that traffic away. */
		const IpPrefix *range = &m->args.service_ranges[i];
		_cleanup_free_ char *err = NULL;

		if (network_config_check_overlap(m->config, range, "--service-cluster-ip-range", &err) < 0)
			return startup_fail_config(m, err ?: "overlaps the Service range");
		for (size_t j = 0; j < m->backend.n_connected; j++)
			if (ip_prefix_overlaps(range, &m->backend.connected[j])) {
				char a[IP_PREFIX_STRLEN], b[IP_PREFIX_STRLEN];

				log_error("--service-cluster-ip-range %s overlaps the underlay network %s of %s",
					  ip_prefix_to_string(range, a),
					  ip_prefix_to_string(&m->backend.connected[j], b), m->backend.underlay_name);
				if (m->loop)
					event_loop_exit(m->loop, EXIT_CONFIG);
				return -EINVAL;
			}
	}
	m->masq = (MasqueradeParams) {
		.network = m->config->network,
		.network6 = m->config->network6,
		.masquerade = m->config->masquerade,
	};
	ops = backend_ops_find(m->config->backend.type);
	if (!ops)
		return startup_fail_config(m, "unknown backend");
	m->backend.config = m->config->backend;
	m->backend.ipv4 = ip_addr_is_set(&m->config->network.addr);
	m->backend.ipv6 = ip_addr_is_set(&m->config->network6.addr);
	r = backend_init(&m->backend, ops);
	if (r < 0)
		return log_error_errno(r, "Failed to set up backend %s: %m", ops->name);
	return 0;
}

/* Returns 0 when done, -EAGAIN to retry later, other < 0 fatal (loop exit already requested). */
static int startup_connect(Manager *m) {
	const char *kind = datastore_kind_to_string(m->args.datastore);
	bool kube = m->args.datastore == DATASTORE_KUBERNETES;
	DatastoreConfig dc = {
		.kind = m->args.datastore,
		.endpoints = m->args.etcd_endpoints,
		.prefix = m->args.etcd_prefix,
		.kubeconfig = m->args.kubeconfig,
		.lease_ttl_sec = m->args.lease_ttl_sec,
	};
	const char *where = kube ? m->args.kubeconfig ?: "the in-cluster API server" : m->args.etcd_endpoints;
	_cleanup_free_ char *json = NULL, *err = NULL;
	int r;

	if (!m->ds) {
		r = m->ds_ops->open(&dc, &m->ds);
		if (r == -EINVAL) {
			log_error("Invalid %s datastore configuration (%s): not retrying", kind, where);
			event_loop_exit(m->loop, EXIT_CONFIG);
			return r;
		}
		if (r < 0) {
			log_warning_errno(r, "Datastore at %s unreachable (attempt %u): %m", where, m->attempt);
			return -EAGAIN;
		}
		m->metrics.datastore_connected = true;
		log_info("Connected to %s at %s", kind, where);
		/* Objects from Kubernetes too: they use the kubeconfig the datastore just loaded. */
		r = manager_objects_start(m);
		if (r < 0) {
			event_loop_exit(m->loop, r == -EXIT_CONFIG ? EXIT_CONFIG : EXIT_FAILURE);
			return r;
		}
	}
	if (m->config)
		return 0;

	r = m->ds_ops->get_network_config(m->ds, &json);
	if (r == -ENOENT) {
		log_warning("No network config at %s/config yet (attempt %u): waiting", m->args.etcd_prefix,
			    m->attempt);
		return -EAGAIN;
	}
	if (r < 0) {
		log_warning_errno(r, "Failed to read the network config (attempt %u): %m (%s)", m->attempt,
				  m->ds_ops->last_error ? m->ds_ops->last_error(m->ds) : "");
		return -EAGAIN;
	}
	r = network_config_parse(json, &m->config, &err);
	if (r < 0)
		return startup_fail_config(m, err ?: "parse error");
	return manager_validate_config(m);
}

/* The reconciler's local routes: the node's own route to the Services (service-route.h). */
static int render_service_routes(void *userdata, NodeObjects *ret, size_t max) {
	Manager *m = userdata;

	return service_routes_render(&m->backend, m->args.service_ranges, m->args.n_service_ranges, ret, max);
}

static int startup_acquire(Manager *m) {
	_cleanup_(node_lease_done) NodeLease self = {}, lease = {};
	IpPrefix prev = {}, subnet6 = {};
	const IpPrefix *network;
	unsigned subnet_len;
	char a[IP_PREFIX_STRLEN];
	bool have_prev;
	int r;

	/* The VTEP first: its MAC is part of what we publish. */
	r = m->backend.ops->ensure(&m->backend);
	if (r < 0) {
		log_error_errno(r, "Failed to set up backend %s: %m%s%s", m->backend.ops->name,
				*nl_sock_extack(m->nl) ? " - " : "", nl_sock_extack(m->nl));
		event_loop_exit(m->loop, EXIT_FAILURE);
		return r;
	}

	r = node_lease_set_name(&self, m->args.node_name);
	if (r < 0)
		return log_error_errno(r, "Out of memory");
	snprintf(self.backend, sizeof(self.backend), "%s", m->backend.ops->name);
	self.public_ip = m->backend.public_ip;
	backend_lease_attrs(&m->backend, &self); /* vxlan: the VTEP MAC */
	if (ip_addr_is_set(&m->config->network.addr)) {
		network = &m->config->network;
		subnet_len = m->config->subnet_len;
	} else {
		network = &m->config->network6;
		subnet_len = m->config->subnet_len6;
	}
	have_prev = manager_state_read_subnet(m, &prev) >= 0;
	if (m->ds_ops->set_subnet_range)
		(void) m->ds_ops->set_subnet_range(m->ds, &m->config->subnet_min, &m->config->subnet_max);
	/* Dual-stack: a store that can assign the IPv6 subnet with the IPv4 one does it in the same
	 * compare-and-swap (etcd); Kubernetes brings both in podCIDRs. */
	if (ip_addr_is_set(&m->config->network.addr) && ip_addr_is_set(&m->config->network6.addr) &&
	    m->ds_ops->set_network6)
		(void) m->ds_ops->set_network6(m->ds, &m->config->network6, m->config->subnet_len6);

	r = m->ds_ops->acquire(m->ds, network, subnet_len, &self, have_prev ? &prev : NULL, &lease);
	if (r == -ENOSPC) {
		log_error("No free subnet left in %s", ip_prefix_to_string(network, a));
		event_loop_exit(m->loop, EXIT_FAILURE);
		return r;
	}
	if (r < 0) {
		log_warning_errno(r, "Failed to acquire a subnet lease (attempt %u): %m (%s)", m->attempt,
				  m->ds_ops->last_error ? m->ds_ops->last_error(m->ds) : "");
		return -EAGAIN;
	}
	/* Dual-stack with a store that did not assign IPv6 itself: publish the IPv6 subnet that goes
	 * with the IPv4 one (same lease, re-put). */
	if (ip_addr_is_set(&m->config->network.addr) && ip_addr_is_set(&m->config->network6.addr) &&
	    !ip_addr_is_set(&lease.subnet6.addr)) {
		r = derive_subnet6(m->config, &lease.subnet, &subnet6);
		if (r < 0) {
			log_error("Network6 %s has no room for subnet index of %s",
				  ip_prefix_to_string(&m->config->network6, a), ip_prefix_to_string(&lease.subnet, a));
			event_loop_exit(m->loop, EXIT_CONFIG);
			return r;
		}
		if (!ip_prefix_equal(&lease.subnet6, &subnet6)) {
			IpPrefix subnet4 = lease.subnet;
			NodeLease again;

			self.subnet6 = subnet6;
			r = m->ds_ops->acquire(m->ds, network, subnet_len, &self, &subnet4, &again);
			if (r < 0) {
				log_warning_errno(r, "Failed to publish IPv6 subnet (attempt %u): %m", m->attempt);
				return -EAGAIN;
			}
			node_lease_done(&lease);
			lease = again;
		}
	}
	log_info("Acquired subnet %s%s%s for node %s (public IP %s)", ip_prefix_to_string(&lease.subnet, a),
		 ip_addr_is_set(&lease.subnet6.addr) ? " and " : "",
		 ip_addr_is_set(&lease.subnet6.addr) ? ip_prefix_to_string(&lease.subnet6, (char[IP_PREFIX_STRLEN]) {})
						     : "",
		 m->args.node_name, ip_addr_to_string(&m->backend.public_ip, (char[IP_ADDR_STRLEN]) {}));

	r = manager_state_write_subnet(m, &lease.subnet);
	if (r < 0)
		log_warning_errno(r, "Failed to remember the subnet in %s: %m", m->args.state_dir);

	node_lease_done(&m->backend.self);
	m->backend.self = lease;
	lease = (NodeLease) {}; /* the backend's now */
	m->backend.have_lease = true;
	m->metrics.lease_subnet = m->backend.self.subnet;
	m->metrics.lease_subnet6 = m->backend.self.subnet6;
	r = m->backend.ops->ensure(&m->backend);
	if (r < 0) {
		log_error_errno(r, "Failed to configure backend %s: %m%s%s", m->backend.ops->name,
				*nl_sock_extack(m->nl) ? " - " : "", nl_sock_extack(m->nl));
		event_loop_exit(m->loop, EXIT_FAILURE);
		return r;
	}
	r = manager_apply_masquerade(m);
	if (r < 0) {
		event_loop_exit(m->loop, EXIT_FAILURE);
		return r;
	}

	m->rec.network = m->config;
	/* Always, also without ranges: a route a previous run with the option left is then removed. */
	m->rec.render_local = render_service_routes;
	m->rec.local_userdata = m;
	r = m->ds_ops->watch(m->ds, manager_on_ds_event, m);
	if (r < 0) {
		log_warning_errno(r, "Failed to start watching leases: %m");
		return -EAGAIN;
	}
	r = event_loop_add_io(m->loop, m->ds_ops->get_fd(m->ds), EPOLLIN, manager_on_ds_io, m, &m->ds_io);
	if (r < 0)
		return log_error_errno(r, "Failed to watch the datastore fd: %m");
	manager_ds_rearm(m);
	return 0;
}

int manager_on_startup(EventSource *s, void *userdata) {
	Manager *m = userdata;
	int r = 0;

	m->attempt++;
	if (m->state == STARTUP_CONNECT) {
		r = startup_connect(m);
		if (r == 0)
			m->state = STARTUP_ACQUIRE;
	}
	if (r == 0 && m->state == STARTUP_ACQUIRE) {
		r = startup_acquire(m);
		if (r == 0) {
			m->state = STARTUP_WAIT_SYNC;
			(void) event_source_arm(m->resync_timer, m->args.resync_usec, m->args.resync_usec);
			log_info("Waiting for the lease list before programming routes");
		}
	}
	if (r == -EAGAIN) {
		if (m->args.etcd_timeout_usec > 0 && now_usec() - m->startup_begin >= m->args.etcd_timeout_usec) {
			log_error("Datastore not usable after %llu s (--etcd-timeout): giving up",
				  (unsigned long long) (m->args.etcd_timeout_usec / USEC_PER_SEC));
			event_loop_exit(m->loop, EXIT_FAILURE);
			return 0;
		}
		log_info("Retrying in %.1f s", (double) m->backoff_usec / USEC_PER_SEC);
		(void) event_source_arm(s, m->backoff_usec, 0);
		m->backoff_usec = MIN(m->backoff_usec * 2, STARTUP_BACKOFF_MAX_USEC);
	}
	return 0;
}
