/* SPDX-License-Identifier: Apache-2.0 */
/*
 * weftd: the node agent. Leases this node a pod subnet from the datastore, programs routes to
 * every other node's subnet (host-gw or vxlan backend), installs the node-* nftables chains,
 * and tells the CNI plugin about it (lease file + conflist), like flanneld.
 *
 * One thread, one epoll loop (src/shared/event/). Sources: the datastore's fd and timeout, an
 * rtnetlink multicast socket (our objects deleted behind our back), a periodic resync timer, a
 * debounce timer that coalesces bursts of events into one reconcile pass, a signalfd and the
 * HTTP listener. Start-up itself runs from a timer in the loop, so /healthz answers (503) and
 * SIGTERM works while we are still waiting for etcd.
 *
 *   weftd --node-name n1 --iface eth0 --etcd-endpoints http://10.99.0.2:2379 ...
 *   weftd --datastore kubernetes --node-name n1 --net-config /etc/weft/net-conf.json ...
 *   weftd uninstall [--cni-conf-dir D] [--run-dir D]
 *
 * This file: main() and the run loop (reconcile scheduling, datastore events, signals). The other
 * parts are weftd-*.c; weftd.h says which is where.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-compile.h"
#include "daemon/weftd.h"
#include "shared/client/http-multi.h"

static void manager_done(Manager *m) {
	status_server_free(m->status);
	manager_objects_done(m);
	reconciler_done(&m->rec);
	backend_done(&m->backend);
	if (m->ds)
		m->ds_ops->free(m->ds);
	network_config_free(m->config);
	nft_ctx_free(m->nft);
	nft_sync_free(m->masq_sync);
	nl_sock_free(m->monitor);
	nl_sock_free(m->nl);
	event_loop_free(m->loop);
}

/* ---- reconcile scheduling ---- */

void manager_schedule_reconcile(Manager *m) {
	/* Before the lease there is nothing of ours to repair (and no backend chosen yet). */
	if (m->debounce_timer && m->state >= STARTUP_WAIT_SYNC)
		(void) event_source_arm_once(m->debounce_timer, DEBOUNCE_USEC);
}

static void become_ready(Manager *m) {
	if (m->ready || !m->rec.synced)
		return;
	if (manager_ensure_files(m, true) < 0)
		return; /* retried on the next pass */
	m->ready = true;
	m->state = STARTUP_DONE;
	m->metrics.ready = true;
	manager_health_publish(m); /* not a tick later */
	log_info("Node %s ready: subnet %s, MTU %u, %zu remote nodes", m->args.node_name,
		 ip_prefix_to_string(&m->backend.self.subnet, (char[IP_PREFIX_STRLEN]) {}), m->backend.mtu,
		 m->rec.n_nodes);
}

static int run_reconcile(Manager *m, bool full) {
	int r;

	if (m->state < STARTUP_WAIT_SYNC)
		return 0;

	r = m->backend.ops->ensure(&m->backend);
	if (r < 0) {
		metrics_error(&m->metrics, METRICS_OP_VTEP);
		log_error_errno(r, "Failed to set up backend %s: %m%s%s", m->backend.ops->name,
				*nl_sock_extack(m->nl) ? " - " : "", nl_sock_extack(m->nl));
	}
	if (full)
		(void) manager_ensure_masquerade(m);
	r = reconciler_run(&m->rec);
	if (!m->ready)
		become_ready(m);
	else if (full)
		(void) manager_ensure_files(m, false);
	/* A full lease list (thousands of nodes as JSON) leaves freed heap behind that glibc keeps;
	 * give it back after the passes that follow one, so RSS tracks the live state. */
	if (full || !m->trimmed) {
		malloc_trim(0);
		m->trimmed = true;
	}
	return r;
}

static int on_debounce(EventSource *s, void *userdata) {
	(void) run_reconcile(userdata, false);
	return 0;
}

static int on_health_timer(EventSource *s, void *userdata) {
	manager_health_publish(userdata);
	return 0;
}

static int on_resync(EventSource *s, void *userdata) {
	Manager *m = userdata;

	log_debug("Periodic resync");
	/* The kernel is compared on every tick; the datastore is listed again every relist interval,
	 * so a delete or an update the watch never delivered cannot leave stale state for good. */
	/* Counted in ticks, not compared with the clock: a tick that fires a hair early must not
	 * skip a whole interval. */
	if (m->args.relist_usec > 0 && m->ds && m->ds_ops->relist &&
	    ++m->resyncs_since_relist * m->args.resync_usec >= m->args.relist_usec) {
		int r = m->ds_ops->relist(m->ds);
		if (r < 0)
			log_warning_errno(r, "Failed to re-list the datastore: %m");
		else
			log_debug("Re-listing the datastore");
		m->resyncs_since_relist = 0;
		manager_ds_rearm(m);
	}
	(void) run_reconcile(m, true);
	return 0;
}

/* ---- datastore ---- */

void manager_on_ds_event(const DatastoreEvent *ev, void *userdata) {
	Manager *m = userdata;
	char a[IP_PREFIX_STRLEN];
	int r = 0;

	switch (ev->type) {
	case DS_EVENT_RESYNC:
		log_info("Datastore: full list of %zu leases", ev->n_nodes);
		r = reconciler_set_all(&m->rec, ev->nodes, ev->n_nodes);
		if (r >= 0)
			/* Straight away, not debounced: this is what start-up waits for. */
			(void) event_source_arm(m->debounce_timer, 0, 0);
		break;
	case DS_EVENT_NODE_UPSERT:
		r = reconciler_upsert(&m->rec, ev->node);
		if (r > 0) {
			log_info("Node %s: subnet %s", ev->node->node_name ?: "",
				 ip_prefix_to_string(&ev->node->subnet, a));
			manager_schedule_reconcile(m);
		}
		break;
	case DS_EVENT_NODE_DELETE:
		r = reconciler_remove(&m->rec, ev->node);
		if (r > 0) {
			log_info("Node %s left (subnet %s)", ev->node->node_name ?: "",
				 ip_prefix_to_string(&ev->node->subnet, a));
			manager_schedule_reconcile(m);
		}
		break;
	case DS_EVENT_SELF_RECREATED:
		m->metrics.lease_recreated++;
		log_warning("Our lease on subnet %s had vanished from the datastore: put it back",
			    ip_prefix_to_string(&m->backend.self.subnet, a));
		break;
	case DS_EVENT_CONNECTION:
		m->metrics.datastore_connected = ev->connected;
		if (ev->connected)
			log_info("Datastore connection restored");
		else
			log_warning("Datastore connection lost; keeping programmed state");
		break;
	}
	if (r < 0) {
		metrics_error(&m->metrics, METRICS_OP_DATASTORE);
		log_error_errno(r, "Failed to process datastore event: %m");
	}
}

void manager_ds_rearm(Manager *m) {
	int ms = m->ds_ops->next_timeout_ms(m->ds);

	if (ms < 0)
		(void) event_source_disarm(m->ds_timer);
	else
		(void) event_source_arm(m->ds_timer, (uint64_t) ms * USEC_PER_MSEC, 0);
}

static void ds_dispatch(Manager *m) {
	int r = m->ds_ops->dispatch(m->ds);

	if (r == -EADDRINUSE) {
		/* Exiting would hand a restart a new subnet while our pods still use the old one, and the
		 * other node's pods the same addresses: stay, keep what is programmed, and say loudly
		 * that this node needs an operator (or its liveness probe) to restart it. */
		if (!m->lease_lost)
			log_error("LEASE LOST: subnet %s of this node is now held by another node (%s). Pods on this "
				  "node may have addresses that another node hands out too. /healthz reports failure "
				  "from now on; restart weftd (it acquires a new subnet) once this node is drained",
				  ip_prefix_to_string(&m->backend.self.subnet, (char[IP_PREFIX_STRLEN]) {}),
				  m->ds_ops->last_error ? m->ds_ops->last_error(m->ds) : "");
		m->lease_lost = true;
		m->metrics.lease_lost = true;
		manager_health_publish(m); /* not a tick later */
		manager_ds_rearm(m);
		return;
	}
	if (r < 0) {
		metrics_error(&m->metrics, METRICS_OP_DATASTORE);
		log_warning_errno(r, "Datastore: %m (%s)", m->ds_ops->last_error ? m->ds_ops->last_error(m->ds) : "");
	}
	manager_ds_rearm(m);
}

int manager_on_ds_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	ds_dispatch(userdata);
	return 0;
}

static int on_ds_timer(EventSource *s, void *userdata) {
	ds_dispatch(userdata);
	return 0;
}

/* ---- signals ---- */

static int on_signal(EventSource *s, int signo, void *userdata) {
	Manager *m = userdata;

	if (signo == SIGHUP) {
		log_info("SIGHUP: full resync");
		(void) run_reconcile(m, true);
		return 0;
	}
	log_info("%s: shutting down, leaving routes and rules in place", strsignal(signo));
	if (m->ds && m->backend.have_lease) {
		if (m->args.keep_lease)
			log_info("Keeping lease on subnet %s (--keep-lease)",
				 ip_prefix_to_string(&m->backend.self.subnet, (char[IP_PREFIX_STRLEN]) {}));
		else {
			int r = m->ds_ops->release(m->ds);
			if (r < 0)
				log_warning_errno(r, "Failed to release lease: %m (%s)",
						  m->ds_ops->last_error ? m->ds_ops->last_error(m->ds) : "");
			else {
				log_info("Released lease on subnet %s",
					 ip_prefix_to_string(&m->backend.self.subnet, (char[IP_PREFIX_STRLEN]) {}));
				backend_withdraw(&m->backend); /* stop announcing what is no longer ours (bgp) */
			}
		}
	}
	event_loop_exit(m->loop, EXIT_SUCCESS);
	return 0;
}

static int run_daemon(Manager *m) {
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, 0 };
	_cleanup_free_ char *err = NULL;
	static char hostname[HOST_NAME_MAX + 1];
	IpAddr public_ip = {};
	int r;

	if (!m->args.node_name) {
		if (gethostname(hostname, sizeof(hostname)) < 0)
			return log_error_errno(errno, "Failed to get hostname: %m");
		hostname[sizeof(hostname) - 1] = 0;
		/* kubelet lowercases the hostname into the node name: do the same */
		for (char *c = hostname; *c; c++)
			*c = (char) tolower((unsigned char) *c);
		m->args.node_name = hostname;
	}
	if (!node_name_valid(m->args.node_name)) {
		log_error("Invalid node name \"%s\": it must be a Kubernetes node name (lowercase letters, digits, "
			  "'-' and '.', at most %d characters)",
			  m->args.node_name, NODE_NAME_MAX);
		return -EXIT_CONFIG;
	}
	if (m->args.public_ip && ip_addr_parse(m->args.public_ip, &public_ip) < 0)
		return log_error_errno(EINVAL, "Invalid --public-ip '%s'", m->args.public_ip);
	manager_lease_path_init(m);

	m->ds_ops = datastore_ops_find(m->args.datastore);
	if (!m->ds_ops)
		return log_error_errno(ENOTSUP, "No %s datastore compiled in",
				       datastore_kind_to_string(m->args.datastore));
	/* The network config is a ConfigMap, not something the API server gives us. The kubeconfig is
	 * the datastore's to load (a broken one ends start-up with EXIT_CONFIG, weftd-startup.c). */
	if (m->args.datastore == DATASTORE_KUBERNETES && !m->args.net_config) {
		log_error("--datastore kubernetes needs --net-config (the network config ConfigMap, mounted)");
		return -EXIT_CONFIG;
	}

	/* A config file is checked before anything else: a bad one must not program anything. */
	if (m->args.net_config) {
		r = network_config_load_file(m->args.net_config, &m->config, &err);
		if (r < 0) {
			log_error("Invalid network config %s: %s", m->args.net_config, err ?: strerror(-r));
			return -EXIT_CONFIG;
		}
	}

	r = nl_sock_open(&m->nl);
	if (r < 0)
		return log_error_errno(r, "Failed to open rtnetlink: %m");
	r = nft_ctx_open(&m->nft);
	if (r < 0)
		return log_error_errno(r, "Failed to open nftables context: %m");
	m->backend.nl = m->nl;
	m->backend.node_name = m->args.node_name;
	r = backend_find_underlay(&m->backend, m->args.iface, m->args.public_ip ? &public_ip : NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to find the underlay interface%s%s%s%s: %m", m->args.iface ? " " : "",
				       m->args.iface ?: "", m->args.public_ip ? " with address " : "",
				       m->args.public_ip ?: "");
	log_info("Underlay %s (MTU %u), public IP %s", m->backend.underlay_name, m->backend.underlay_mtu,
		 ip_addr_to_string(&m->backend.public_ip, (char[IP_ADDR_STRLEN]) {}));
	if (m->config) {
		r = manager_validate_config(m);
		if (r < 0)
			return -EXIT_CONFIG;
	}

	reconciler_init(&m->rec, &m->backend, m->nl, &m->metrics, m->args.node_name);

	r = event_loop_new(&m->loop);
	if (r < 0)
		return log_error_errno(r, "Failed to create event loop: %m");
	m->backend.loop = m->loop;                /* the udp backend watches its TUN and socket in it */
	m->backend.run_dir = m->args.run_dir;     /* the bgp backend's bird.conf and bird.ctl */
	m->backend.state_dir = m->args.state_dir; /* the wireguard backend's private key */
	m->backend.rotate_key = m->args.rotate_key;
	r = event_loop_add_signals(m->loop, sigs, on_signal, m, NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to set up signals: %m");
	r = status_server_new(m->loop, m->args.listen, manager_status_handler, m, &m->status);
	if (r < 0)
		return log_error_errno(r, "Failed to listen on %s: %m", m->args.listen);
	/* /healthz apart from the loop (weftd-status.c); published from the first tick on */
	r = event_loop_add_timer(m->loop, on_health_timer, m, &m->health_timer);
	if (r >= 0)
		r = event_source_arm(m->health_timer, 0, HEALTH_PUBLISH_USEC);
	if (r >= 0)
		r = status_server_start_front(m->status, manager_status_front_handler, m);
	if (r < 0)
		return log_error_errno(r, "Failed to start the health listener: %m");
	/* weftd's own datastore and API server sockets: never a Service's (service-compile.h) */
	http_set_socket_mark(SVC_SELF_MARK_VALUE);
	r = manager_monitor_open(m);
	if (r < 0)
		return r;
	r = manager_objects_start(m);
	if (r < 0)
		return r;
	if (event_loop_add_timer(m->loop, manager_on_startup, m, &m->startup_timer) < 0 ||
	    event_loop_add_timer(m->loop, on_resync, m, &m->resync_timer) < 0 ||
	    event_loop_add_timer(m->loop, on_debounce, m, &m->debounce_timer) < 0 ||
	    event_loop_add_timer(m->loop, on_ds_timer, m, &m->ds_timer) < 0)
		return log_error_errno(ENOMEM, "Out of memory");

	m->startup_begin = now_usec();
	m->backoff_usec = STARTUP_BACKOFF_MIN_USEC;
	(void) event_source_arm(m->startup_timer, 0, 0);
	log_info("weftd starting: node %s, health and metrics on http://%s", m->args.node_name, m->args.listen);
	return event_loop_run(m->loop);
}

int main(int argc, char *argv[]) {
	Manager m = {};
	bool uninstall = false;
	int r;

	log_set_max_level(LOG_INFO);
	log_parse_environment();

	if (argc > 1 && streq(argv[1], "uninstall")) {
		uninstall = true;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	r = weftd_parse_args(argc, argv, &m.args);
	if (r < 0)
		return EXIT_CONFIG;
	if (optind < argc) {
		log_error("Unexpected argument '%s'", argv[optind]);
		return EXIT_CONFIG;
	}

	r = uninstall ? manager_uninstall(&m) : run_daemon(&m);
	manager_done(&m);
	if (r == -EXIT_CONFIG)
		return EXIT_CONFIG;
	return r == 0 ? EXIT_SUCCESS : r > 0 ? r : EXIT_FAILURE;
}
