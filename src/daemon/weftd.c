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

#include <linux/rtnetlink.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/mem-util.h"
#include "basic/string-util.h"
#include "daemon/backend/backend.h"
#include "daemon/cni-conf.h"
#include "daemon/datastore/datastore.h"
#include "daemon/masquerade.h"
#include "daemon/status-server.h"
#include "daemon/client/kube-client.h"
#include "daemon/client/kubeconfig.h"
#include "daemon/metrics.h"
#include "daemon/network-config.h"
#include "daemon/reconcile.h"
#include "event/event-loop.h"
#include "lease/lease-file.h"
#include "nft/nft.h"
#include "nl/nl.h"

#define EXIT_CONFIG 2
#define DEBOUNCE_USEC (20 * USEC_PER_MSEC)
#define STARTUP_BACKOFF_MIN_USEC (500 * USEC_PER_MSEC)
#define STARTUP_BACKOFF_MAX_USEC (10 * USEC_PER_SEC)
#define STATE_SUBNET_FILE "subnet"

typedef struct Args {
	const char *node_name;
	const char *public_ip;
	const char *iface;
	const char *datastore;          /* "etcd" | "kubernetes" */
	const char *kubeconfig;         /* NULL = in-cluster service account */
	const char *etcd_endpoints;
	const char *etcd_prefix;
	const char *net_config;
	const char *cni_conf_dir;
	const char *ipam_data_dir;
	const char *cni_bin_dir;
	const char *run_dir;
	const char *state_dir;
	const char *listen;
	uint64_t resync_usec;
	uint64_t relist_usec;           /* re-list the datastore this often (on a resync tick); 0 = never */
	uint64_t etcd_timeout_usec;     /* 0 = forever */
	int lease_ttl_sec;
	bool keep_lease;
} Args;

typedef enum StartupState {
	STARTUP_CONNECT,        /* open the datastore, read the config */
	STARTUP_ACQUIRE,        /* VTEP, lease, local programming, watch */
	STARTUP_WAIT_SYNC,      /* waiting for the first full lease list */
	STARTUP_DONE,
} StartupState;

typedef struct Manager {
	Args args;
	EventLoop *loop;
	NlSock *nl;
	NlSock *monitor;
	NftCtx *nft;
	NetworkConfig *config;
	const DatastoreOps *ds_ops;
	Datastore *ds;
	Backend backend;
	Reconciler rec;
	Metrics metrics;
	MasqueradeParams fw;
	StatusServer *http;

	EventSource *startup_timer, *resync_timer, *debounce_timer, *ds_timer, *ds_io, *monitor_io;
	StartupState state;
	uint64_t startup_begin;
	uint64_t backoff_usec;
	unsigned attempt;
	bool ready;
	bool trimmed;           /* heap trimmed after the first reconcile pass */
	bool lease_lost;        /* another node holds our subnet: unhealthy until restarted */
	uint64_t resyncs_since_relist;
	char lease_path[PATH_MAX];
} Manager;

static void manager_done(Manager *m) {
	status_server_free(m->http);
	reconciler_done(&m->rec);
	backend_done(&m->backend);
	if (m->ds)
		m->ds_ops->free(m->ds);
	network_config_free(m->config);
	nft_ctx_free(m->nft);
	nl_sock_free(m->monitor);
	nl_sock_free(m->nl);
	event_loop_free(m->loop);
}

/* ---- command line ---- */

/* "10", "10s", "500ms", "2m" -> microseconds */
static int parse_duration(const char *s, uint64_t *ret) {
	unsigned long long v;
	char num[32];
	size_t n = strspn(s, "0123456789");
	uint64_t mult = USEC_PER_SEC;

	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = 0;
	if (safe_atou64(num, &v) < 0)
		return -EINVAL;
	if (streq(s + n, "ms"))
		mult = USEC_PER_MSEC;
	else if (streq(s + n, "m"))
		mult = 60 * USEC_PER_SEC;
	else if (!streq(s + n, "") && !streq(s + n, "s"))
		return -EINVAL;
	*ret = v * mult;
	return 0;
}

static void help(void) {
	printf("Usage: weftd [OPTIONS]\n"
	       "       weftd uninstall [--cni-conf-dir DIR] [--run-dir DIR] [--state-dir DIR]\n\n"
	       "  --node-name NAME          this node (default: hostname)\n"
	       "  --public-ip ADDR          underlay address other nodes use\n"
	       "  --iface IFACE             take the underlay address from IFACE\n"
	       "  --datastore etcd|kubernetes  where leases live (default etcd); kubernetes: the node's\n"
	       "                            spec.podCIDRs, needs --net-config\n"
	       "  --kubeconfig PATH         kubernetes datastore credentials (default: the in-cluster\n"
	       "                            service account)\n"
	       "  --etcd-endpoints URLS     http://host:2379[,...] (default http://127.0.0.1:2379)\n"
	       "  --etcd-prefix PREFIX      key prefix (default /weft/network)\n"
	       "  --etcd-timeout DURATION   give up start-up after this long (default 0 = never)\n"
	       "  --net-config FILE         network config (default: <prefix>/config in the store)\n"
	       "  --cni-conf-dir DIR        (default /etc/cni/net.d)\n"
	       "  --cni-bin-dir DIR         (default /opt/cni/bin; portmap is used if present there)\n"
	       "  --run-dir DIR             lease file directory (default /run/weft)\n"
	       "  --state-dir DIR           remembered subnet (default /var/lib/weft)\n"
	       "  --listen ADDR:PORT        /healthz and /metrics (default 127.0.0.1:9876)\n"
	       "  --resync-interval DUR     periodic full resync (default 10s)\n"
	       "  --relist-interval DUR     re-list the datastore on a resync this often, to repair\n"
	       "                            what the watch missed (default 60s, 0 = never)\n"
	       "  --lease-ttl SECONDS       datastore lease TTL (default 60)\n"
	       "  --keep-lease              do not release the lease on shutdown\n"
	       "  --ipam-data-dir DIR       pod address store written into the conflist\n"
	       "                            (default: host-local's /var/lib/cni/networks)\n");
}

enum {
	ARG_NODE_NAME = 0x100,
	ARG_PUBLIC_IP,
	ARG_IFACE,
	ARG_ETCD_ENDPOINTS,
	ARG_ETCD_PREFIX,
	ARG_ETCD_TIMEOUT,
	ARG_NET_CONFIG,
	ARG_CNI_CONF_DIR,
	ARG_CNI_BIN_DIR,
	ARG_RUN_DIR,
	ARG_STATE_DIR,
	ARG_LISTEN,
	ARG_RESYNC,
	ARG_RELIST,
	ARG_LEASE_TTL,
	ARG_KEEP_LEASE,
	ARG_IPAM_DATA_DIR,
	ARG_DATASTORE,
	ARG_KUBECONFIG,
};

static int parse_args(int argc, char *argv[], Args *a) {
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "node-name", required_argument, NULL, ARG_NODE_NAME },
		{ "public-ip", required_argument, NULL, ARG_PUBLIC_IP },
		{ "iface", required_argument, NULL, ARG_IFACE },
		{ "etcd-endpoints", required_argument, NULL, ARG_ETCD_ENDPOINTS },
		{ "etcd-prefix", required_argument, NULL, ARG_ETCD_PREFIX },
		{ "etcd-timeout", required_argument, NULL, ARG_ETCD_TIMEOUT },
		{ "net-config", required_argument, NULL, ARG_NET_CONFIG },
		{ "cni-conf-dir", required_argument, NULL, ARG_CNI_CONF_DIR },
		{ "cni-bin-dir", required_argument, NULL, ARG_CNI_BIN_DIR },
		{ "run-dir", required_argument, NULL, ARG_RUN_DIR },
		{ "state-dir", required_argument, NULL, ARG_STATE_DIR },
		{ "listen", required_argument, NULL, ARG_LISTEN },
		{ "resync-interval", required_argument, NULL, ARG_RESYNC },
		{ "relist-interval", required_argument, NULL, ARG_RELIST },
		{ "lease-ttl", required_argument, NULL, ARG_LEASE_TTL },
		{ "keep-lease", no_argument, NULL, ARG_KEEP_LEASE },
		{ "ipam-data-dir", required_argument, NULL, ARG_IPAM_DATA_DIR },
		{ "datastore", required_argument, NULL, ARG_DATASTORE },
		{ "kubeconfig", required_argument, NULL, ARG_KUBECONFIG },
		{}
	};
	int c;

	*a = (Args) {
		.datastore = "etcd",
		.etcd_endpoints = "http://127.0.0.1:2379",
		.etcd_prefix = "/weft/network",
		.cni_conf_dir = "/etc/cni/net.d",
		.cni_bin_dir = "/opt/cni/bin",
		.run_dir = "/run/weft",
		.state_dir = "/var/lib/weft",
		.listen = "127.0.0.1:9876",
		.resync_usec = 10 * USEC_PER_SEC,
		.relist_usec = 60 * USEC_PER_SEC,
		.lease_ttl_sec = 60,
	};
	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			exit(EXIT_SUCCESS);
		case ARG_NODE_NAME: a->node_name = optarg; break;
		case ARG_PUBLIC_IP: a->public_ip = optarg; break;
		case ARG_IFACE: a->iface = optarg; break;
		case ARG_ETCD_ENDPOINTS: a->etcd_endpoints = optarg; break;
		case ARG_ETCD_PREFIX: a->etcd_prefix = optarg; break;
		case ARG_NET_CONFIG: a->net_config = optarg; break;
		case ARG_CNI_CONF_DIR: a->cni_conf_dir = optarg; break;
		case ARG_CNI_BIN_DIR: a->cni_bin_dir = optarg; break;
		case ARG_RUN_DIR: a->run_dir = optarg; break;
		case ARG_STATE_DIR: a->state_dir = optarg; break;
		case ARG_LISTEN: a->listen = optarg; break;
		case ARG_KEEP_LEASE: a->keep_lease = true; break;
		case ARG_IPAM_DATA_DIR: a->ipam_data_dir = optarg; break;
		case ARG_KUBECONFIG: a->kubeconfig = optarg; break;
		case ARG_DATASTORE:
			if (!streq(optarg, "etcd") && !streq(optarg, "kubernetes"))
				return log_error_errno(EINVAL, "Invalid --datastore '%s' (etcd or kubernetes)", optarg);
			a->datastore = optarg;
			break;
		case ARG_ETCD_TIMEOUT:
			if (parse_duration(optarg, &a->etcd_timeout_usec) < 0)
				return log_error_errno(EINVAL, "Invalid --etcd-timeout '%s'", optarg);
			break;
		case ARG_RESYNC:
			if (parse_duration(optarg, &a->resync_usec) < 0 || a->resync_usec == 0)
				return log_error_errno(EINVAL, "Invalid --resync-interval '%s'", optarg);
			break;
		case ARG_RELIST:
			if (parse_duration(optarg, &a->relist_usec) < 0)
				return log_error_errno(EINVAL, "Invalid --relist-interval '%s'", optarg);
			break;
		case ARG_LEASE_TTL:
			if (safe_atoi(optarg, &a->lease_ttl_sec) < 0 || a->lease_ttl_sec < 2)
				return log_error_errno(EINVAL, "Invalid --lease-ttl '%s' (seconds, at least 2)", optarg);
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- readiness: lease file, conflist, health ---- */

static void lease_path_init(Manager *m) {
	snprintf(m->lease_path, sizeof(m->lease_path), "%s/%s", m->args.run_dir, LEASE_FILE_NAME);
}

static int write_lease_file(Manager *m) {
	LeaseFile lf = { .mtu = m->backend.mtu, .ipmasq = false };
	int r;

	if (ip_addr_is_set(&m->backend.self.subnet.addr)) {
		lf.network = m->config->network;
		r = lease_subnet_gateway(&m->backend.self.subnet, &lf.subnet);
		if (r < 0)
			return r;
	}
	if (ip_addr_is_set(&m->backend.self.subnet6.addr)) {
		lf.network6 = m->config->network6;
		r = lease_subnet_gateway(&m->backend.self.subnet6, &lf.subnet6);
		if (r < 0)
			return r;
	}
	r = mkdir_p(m->args.run_dir, 0755);
	if (r < 0)
		return r;
	return lease_file_write(m->lease_path, &lf);
}

static int write_cni_conf(Manager *m) {
	CniConfParams p = {
		.run_dir = m->args.run_dir,
		.data_dir = m->args.ipam_data_dir,
		.portmap = cni_conf_have_plugin(m->args.cni_bin_dir, "portmap"),
	};

	return cni_conf_write(m->args.cni_conf_dir, &p);
}

/* Writes (or repairs) the lease file and the conflist. */
static int ensure_files(Manager *m, bool force) {
	int r, ret = 0;

	if (force || access(m->lease_path, F_OK) < 0) {
		r = write_lease_file(m);
		if (r < 0) {
			metrics_error(&m->metrics, METRICS_OP_LEASE_FILE);
			RET_GATHER(ret, log_error_errno(r, "Failed to write %s: %m", m->lease_path));
		} else
			log_info("Wrote %s", m->lease_path);
	}
	if (force || !cni_conf_present(m->args.cni_conf_dir)) {
		r = write_cni_conf(m);
		if (r < 0) {
			metrics_error(&m->metrics, METRICS_OP_CNI_CONF);
			RET_GATHER(ret, log_error_errno(r, "Failed to write %s/%s: %m", m->args.cni_conf_dir,
							CNI_CONF_FILE_NAME));
		} else
			log_info("Wrote %s/%s", m->args.cni_conf_dir, CNI_CONF_FILE_NAME);
	}
	return ret;
}

static int apply_firewall(Manager *m) {
	_cleanup_free_ char *err = NULL;
	int r;

	r = masquerade_apply(m->nft, &m->fw, &err);
	if (r < 0) {
		metrics_error(&m->metrics, METRICS_OP_NFT);
		return log_error_errno(r, "Failed to install nftables chains: %m%s%s", err ? ": " : "", err ?: "");
	}
	return 0;
}

/* Repairs the firewall if someone removed or flushed our chains. */
static int ensure_firewall(Manager *m) {
	int r = masquerade_check(m->nft, &m->fw);

	if (r > 0)
		return 0;
	if (r < 0)
		log_warning_errno(r, "Failed to list our nftables chains: %m");
	else
		log_warning("nftables chains of weftd missing or altered: reinstalling");
	return apply_firewall(m);
}

static bool healthy(Manager *m) {
	return m->ready && !m->lease_lost && access(m->lease_path, F_OK) == 0 && cni_conf_present(m->args.cni_conf_dir) &&
	       masquerade_check(m->nft, &m->fw) > 0;
}

static int status_handler(const char *method, const char *path, StatusResponse *resp, void *userdata) {
	Manager *m = userdata;

	if (!streq(method, "GET") && !streq(method, "HEAD")) {
		resp->status = 405;
		return 0;
	}
	if (streq(path, "/healthz")) {
		bool ok = healthy(m);
		resp->status = ok ? 200 : 503;
		resp->body = strdup(ok ? "ok\n" : "not ready\n");
		return resp->body ? 0 : -ENOMEM;
	}
	if (streq(path, "/metrics")) {
		resp->status = 200;
		resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
		m->metrics.ready = m->ready;
		return metrics_render(&m->metrics, &resp->body);
	}
	resp->status = 404;
	return 0;
}

/* ---- reconcile scheduling ---- */

static void schedule_reconcile(Manager *m) {
	/* Before the lease there is nothing of ours to repair (and no backend chosen yet). */
	if (m->debounce_timer && m->state >= STARTUP_WAIT_SYNC)
		(void) event_source_arm_once(m->debounce_timer, DEBOUNCE_USEC);
}

static void become_ready(Manager *m) {
	if (m->ready || !m->rec.synced)
		return;
	if (ensure_files(m, true) < 0)
		return; /* retried on the next pass */
	m->ready = true;
	m->state = STARTUP_DONE;
	m->metrics.ready = true;
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
		(void) ensure_firewall(m);
	r = reconciler_run(&m->rec);
	if (!m->ready)
		become_ready(m);
	else if (full)
		(void) ensure_files(m, false);
	/* A full lease list (thousands of nodes as JSON) leaves freed heap behind that glibc keeps;
	 * give it back after the passes that follow one, so RSS tracks the live state. */
	if (full || !m->trimmed) {
		malloc_trim(0);
		/* Likewise the library pages only start-up touched (see mem-util.h): ~8 MiB of RSS. */
		(void) mem_drop_clean_file_pages();
		m->trimmed = true;
	}
	return r;
}

static int on_debounce(EventSource *s, void *userdata) {
	(void) run_reconcile(userdata, false);
	return 0;
}

static void ds_rearm(Manager *m);

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
		ds_rearm(m);
	}
	(void) run_reconcile(m, true);
	return 0;
}

/* ---- datastore ---- */

static void on_ds_event(const DatastoreEvent *ev, void *userdata) {
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
			log_info("Node %s: subnet %s", ev->node->node_name, ip_prefix_to_string(&ev->node->subnet, a));
			schedule_reconcile(m);
		}
		break;
	case DS_EVENT_NODE_DELETE:
		r = reconciler_remove(&m->rec, ev->node);
		if (r > 0) {
			log_info("Node %s left (subnet %s)", ev->node->node_name,
				 ip_prefix_to_string(&ev->node->subnet, a));
			schedule_reconcile(m);
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

static void ds_rearm(Manager *m) {
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
		ds_rearm(m);
		return;
	}
	if (r < 0) {
		metrics_error(&m->metrics, METRICS_OP_DATASTORE);
		log_warning_errno(r, "Datastore: %m (%s)", m->ds_ops->last_error ? m->ds_ops->last_error(m->ds) : "");
	}
	ds_rearm(m);
}

static int on_ds_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
	ds_dispatch(userdata);
	return 0;
}

static int on_ds_timer(EventSource *s, void *userdata) {
	ds_dispatch(userdata);
	return 0;
}

/* ---- netlink monitor: something deleted our objects ---- */

static int mon_route(uint16_t type, const NlRoute *r, void *userdata) {
	Manager *m = userdata;

	if (type == RTM_DELROUTE && r->protocol == WEFT_RTPROT) {
		log_debug("Route of ours deleted: reconciling");
		schedule_reconcile(m);
	}
	return 0;
}

static int mon_neigh(uint16_t type, const NlNeigh *n, void *userdata) {
	Manager *m = userdata;

	if (type == RTM_DELNEIGH && m->backend.vtep_ifindex > 0 && n->ifindex == m->backend.vtep_ifindex) {
		log_debug("%s of ours deleted: reconciling", n->family == AF_BRIDGE ? "FDB entry" : "Neighbour");
		schedule_reconcile(m);
	}
	return 0;
}

static int mon_link(uint16_t type, const NlLink *l, void *userdata) {
	Manager *m = userdata;

	if ((type == RTM_DELLINK && m->backend.vtep_ifindex > 0 && l->ifindex == m->backend.vtep_ifindex) ||
	    (l->ifindex == m->backend.underlay_ifindex && l->mtu != m->backend.underlay_mtu)) {
		log_info("Link %s changed or removed: reconciling", l->name);
		schedule_reconcile(m);
	}
	return 0;
}

static int mon_addr(uint16_t type, const NlAddr *a, void *userdata) {
	Manager *m = userdata;

	/* Any address of the node: the underlay's define which nodes are directly connected, every
	 * link's which subnets a remote lease may not cover (and which public IPs are ours); the VTEP
	 * address must stay. */
	(void) type;
	(void) a;
	schedule_reconcile(m);
	return 0;
}

static int on_monitor(EventSource *s, int fd, uint32_t revents, void *userdata) {
	static const NlMonitorCallbacks cbs = {
		.link = mon_link,
		.route = mon_route,
		.neigh = mon_neigh,
		.addr = mon_addr,
	};
	Manager *m = userdata;
	int r;

	r = nl_monitor_process(m->monitor, &cbs, m);
	if (r == -ENOBUFS) {
		log_warning("Netlink monitor overran: full resync");
		schedule_reconcile(m);
	} else if (r < 0)
		log_warning_errno(r, "Netlink monitor: %m");
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
			else
				log_info("Released lease on subnet %s",
					 ip_prefix_to_string(&m->backend.self.subnet, (char[IP_PREFIX_STRLEN]) {}));
		}
	}
	event_loop_exit(m->loop, EXIT_SUCCESS);
	return 0;
}

/* ---- start-up ---- */

static int state_read_subnet(Manager *m, IpPrefix *ret) {
	_cleanup_free_ char *path = strdup_printf("%s/%s", m->args.state_dir, STATE_SUBNET_FILE), *s = NULL;
	int r;

	if (!path)
		return -ENOMEM;
	r = read_full_file(path, &s, NULL);
	if (r < 0)
		return r;
	s[strcspn(s, "\n")] = 0;
	return ip_prefix_parse_network(s, ret);
}

static int state_write_subnet(Manager *m, const IpPrefix *p) {
	_cleanup_free_ char *path = strdup_printf("%s/%s", m->args.state_dir, STATE_SUBNET_FILE);
	char buf[IP_PREFIX_STRLEN + 1];
	int r;

	if (!path)
		return -ENOMEM;
	r = mkdir_p(m->args.state_dir, 0755);
	if (r < 0)
		return r;
	ip_prefix_to_string(p, buf);
	strcat(buf, "\n");
	return write_file_atomic(path, buf, strlen(buf), 0644);
}

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

static int validate_config(Manager *m) {
	for (size_t i = 0; i < m->backend.n_connected; i++) {
		_cleanup_free_ char *err = NULL;
		char what[64];

		snprintf(what, sizeof(what), "the underlay network of %s", m->backend.underlay_name);
		if (network_config_check_overlap(m->config, &m->backend.connected[i], what, &err) < 0)
			return startup_fail_config(m, err ?: "overlaps the underlay");
	}
	m->fw = (MasqueradeParams) {
		.network = m->config->network,
		.network6 = m->config->network6,
		.masquerade = m->config->masquerade,
	};
	m->backend.config = m->config->backend;
	m->backend.ops = backend_ops_find(m->config->backend.type);
	if (!m->backend.ops)
		return startup_fail_config(m, "unknown backend");
	return 0;
}

/* Returns 0 when done, -EAGAIN to retry later, other < 0 fatal (loop exit already requested). */
static int startup_connect(Manager *m) {
	bool kube = streq(m->args.datastore, "kubernetes");
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
		if (r < 0) {
			log_warning_errno(r, "Datastore at %s unreachable (attempt %u): %m", where, m->attempt);
			return -EAGAIN;
		}
		m->metrics.datastore_connected = true;
		log_info("Connected to %s at %s", m->args.datastore, where);
	}
	if (m->config)
		return 0;

	r = m->ds_ops->get_network_config(m->ds, &json);
	if (r == -ENOENT) {
		log_warning("No network config at %s/config yet (attempt %u): waiting", m->args.etcd_prefix, m->attempt);
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
	return validate_config(m);
}

static int startup_acquire(Manager *m) {
	NodeLease self = {}, lease;
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

	snprintf(self.node_name, sizeof(self.node_name), "%s", m->args.node_name);
	snprintf(self.backend, sizeof(self.backend), "%s", m->backend.ops->name);
	self.public_ip = m->backend.public_ip;
	if (m->backend.vtep_ifindex > 0) {
		memcpy(self.vtep_mac, m->backend.vtep_mac, 6);
		self.has_vtep_mac = true;
	}
	if (ip_addr_is_set(&m->config->network.addr)) {
		network = &m->config->network;
		subnet_len = m->config->subnet_len;
	} else {
		network = &m->config->network6;
		subnet_len = m->config->subnet_len6;
	}
	have_prev = state_read_subnet(m, &prev) >= 0;
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
			self.subnet6 = subnet6;
			r = m->ds_ops->acquire(m->ds, network, subnet_len, &self, &lease.subnet, &lease);
			if (r < 0) {
				log_warning_errno(r, "Failed to publish IPv6 subnet (attempt %u): %m", m->attempt);
				return -EAGAIN;
			}
		}
	}
	log_info("Acquired subnet %s%s%s for node %s (public IP %s)", ip_prefix_to_string(&lease.subnet, a),
		 ip_addr_is_set(&lease.subnet6.addr) ? " and " : "",
		 ip_addr_is_set(&lease.subnet6.addr) ? ip_prefix_to_string(&lease.subnet6, (char[IP_PREFIX_STRLEN]) {}) : "",
		 m->args.node_name, ip_addr_to_string(&m->backend.public_ip, (char[IP_ADDR_STRLEN]) {}));

	r = state_write_subnet(m, &lease.subnet);
	if (r < 0)
		log_warning_errno(r, "Failed to remember the subnet in %s: %m", m->args.state_dir);

	m->backend.self = lease;
	m->backend.have_lease = true;
	m->metrics.lease_subnet = lease.subnet;
	m->metrics.lease_subnet6 = lease.subnet6;
	r = m->backend.ops->ensure(&m->backend);
	if (r < 0) {
		log_error_errno(r, "Failed to configure backend %s: %m%s%s", m->backend.ops->name,
				*nl_sock_extack(m->nl) ? " - " : "", nl_sock_extack(m->nl));
		event_loop_exit(m->loop, EXIT_FAILURE);
		return r;
	}
	r = apply_firewall(m);
	if (r < 0) {
		event_loop_exit(m->loop, EXIT_FAILURE);
		return r;
	}

	m->rec.network = m->config;
	r = m->ds_ops->watch(m->ds, on_ds_event, m);
	if (r < 0) {
		log_warning_errno(r, "Failed to start watching leases: %m");
		return -EAGAIN;
	}
	r = event_loop_add_io(m->loop, m->ds_ops->get_fd(m->ds), EPOLLIN, on_ds_io, m, &m->ds_io);
	if (r < 0)
		return log_error_errno(r, "Failed to watch the datastore fd: %m");
	ds_rearm(m);
	return 0;
}

static int on_startup(EventSource *s, void *userdata) {
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

static int run_daemon(Manager *m) {
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, 0 };
	static const unsigned groups[] = {
		RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_NEIGH,
		RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR,
	};
	_cleanup_free_ char *err = NULL;
	static char hostname[65];
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
			  "'-' and '.', at most %d characters)", m->args.node_name, NODE_NAME_MAX);
		return -EXIT_CONFIG;
	}
	if (m->args.public_ip && ip_addr_parse(m->args.public_ip, &public_ip) < 0)
		return log_error_errno(EINVAL, "Invalid --public-ip '%s'", m->args.public_ip);
	lease_path_init(m);

	m->ds_ops = datastore_ops_find(m->args.datastore);
	if (!m->ds_ops)
		return log_error_errno(ENOTSUP, "No %s datastore compiled in", m->args.datastore);
	if (streq(m->args.datastore, "kubernetes")) {
		_cleanup_(kubeconfig_freep) KubeConfig *k = NULL;

		/* The network config is a ConfigMap, not something the API server gives us. */
		if (!m->args.net_config) {
			log_error("--datastore kubernetes needs --net-config (the network config ConfigMap, mounted)");
			return -EXIT_CONFIG;
		}
		/* A broken kubeconfig is a configuration error, not something to retry. */
		r = m->args.kubeconfig ? kubeconfig_load(m->args.kubeconfig, &k, &err)
				       : kubeconfig_load_in_cluster(NULL, &k, &err);
		if (r < 0) {
			log_error("Invalid Kubernetes client config: %s", err ?: strerror(-r));
			return -EXIT_CONFIG;
		}
		err = mfree(err);
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
	snprintf(m->backend.node_name, sizeof(m->backend.node_name), "%s", m->args.node_name);
	r = backend_find_underlay(&m->backend, m->args.iface, m->args.public_ip ? &public_ip : NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to find the underlay interface%s%s%s%s: %m",
				       m->args.iface ? " " : "", m->args.iface ?: "",
				       m->args.public_ip ? " with address " : "", m->args.public_ip ?: "");
	log_info("Underlay %s (MTU %u), public IP %s", m->backend.underlay_name, m->backend.underlay_mtu,
		 ip_addr_to_string(&m->backend.public_ip, (char[IP_ADDR_STRLEN]) {}));
	if (m->config) {
		r = validate_config(m);
		if (r < 0)
			return -EXIT_CONFIG;
	}

	reconciler_init(&m->rec, &m->backend, m->nl, &m->metrics, m->args.node_name);

	r = event_loop_new(&m->loop);
	if (r < 0)
		return log_error_errno(r, "Failed to create event loop: %m");
	r = event_loop_add_signals(m->loop, sigs, on_signal, m, NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to set up signals: %m");
	r = status_server_new(m->loop, m->args.listen, status_handler, m, &m->http);
	if (r < 0)
		return log_error_errno(r, "Failed to listen on %s: %m", m->args.listen);
	r = nl_monitor_open(groups, ELEMENTSOF(groups), &m->monitor);
	if (r < 0)
		return log_error_errno(r, "Failed to open the rtnetlink monitor: %m");
	r = event_loop_add_io(m->loop, nl_sock_fd(m->monitor), EPOLLIN, on_monitor, m, &m->monitor_io);
	if (r < 0)
		return log_error_errno(r, "Failed to watch rtnetlink: %m");
	if (event_loop_add_timer(m->loop, on_startup, m, &m->startup_timer) < 0 ||
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

/* ---- uninstall ---- */

typedef struct RouteList {
	NlRoute *r;
	size_t n, alloc;
} RouteList;

static int collect_ours(const NlRoute *rt, void *userdata) {
	RouteList *l = userdata;

	if (rt->protocol != WEFT_RTPROT)
		return 0;
	if (l->n == l->alloc) {
		size_t na = l->alloc ? l->alloc * 2 : 64;
		NlRoute *p = reallocarray(l->r, na, sizeof(NlRoute));
		if (!p)
			return -ENOMEM;
		l->r = p;
		l->alloc = na;
	}
	l->r[l->n++] = *rt;
	return 0;
}

static int run_uninstall(Manager *m) {
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ NlRoute *routes = NULL;
	RouteList rl = {};
	int r, ret = 0;

	lease_path_init(m);
	r = nl_sock_open(&m->nl);
	if (r < 0)
		return log_error_errno(r, "Failed to open rtnetlink: %m");
	r = nft_ctx_open(&m->nft);
	if (r < 0)
		return log_error_errno(r, "Failed to open nftables context: %m");

	r = masquerade_uninstall(m->nft, &err);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove nftables chains: %m%s%s", err ? ": " : "", err ?: ""));
	else
		log_info("Removed nftables chains node-*");

	r = backend_uninstall_links(m->nl);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove the VTEP: %m"));

	r = nl_route_dump(m->nl, AF_UNSPEC, NL_ROUTE_TABLE_ALL, collect_ours, &rl);
	routes = rl.r;
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to list routes: %m"));
	for (size_t i = 0; i < rl.n; i++) {
		r = nl_route_del(m->nl, &routes[i]);
		if (r < 0 && r != -ESRCH && r != -ENOENT)
			RET_GATHER(ret, log_error_errno(r, "Failed to delete route: %m"));
	}
	log_info("Removed %zu weft routes", rl.n);

	r = cni_conf_remove(m->args.cni_conf_dir);
	if (r < 0)
		RET_GATHER(ret, log_error_errno(r, "Failed to remove the CNI config: %m"));
	if (unlink(m->lease_path) < 0 && errno != ENOENT)
		RET_GATHER(ret, log_error_errno(errno, "Failed to remove %s: %m", m->lease_path));
	log_info("Removed %s/%s and %s", m->args.cni_conf_dir, CNI_CONF_FILE_NAME, m->lease_path);
	return ret;
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
	r = parse_args(argc, argv, &m.args);
	if (r < 0)
		return EXIT_CONFIG;
	if (optind < argc) {
		log_error("Unexpected argument '%s'", argv[optind]);
		return EXIT_CONFIG;
	}

	r = uninstall ? run_uninstall(&m) : run_daemon(&m);
	manager_done(&m);
	if (r == -EXIT_CONFIG)
		return EXIT_CONFIG;
	return r == 0 ? EXIT_SUCCESS : r > 0 ? r : EXIT_FAILURE;
}
