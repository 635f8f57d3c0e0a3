/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's private header: the Manager every part of the daemon works on, and what the parts call
 * of each other. weftd.c holds main() and the run loop (reconcile scheduling, datastore events,
 * signals); weftd-options.c the command line; weftd-startup.c the start-up states (connect,
 * acquire, wait for the first list); weftd-files.c what weftd writes on the node besides routes
 * (lease file, conflist, remembered subnet, nftables chains); weftd-status.c /healthz and /metrics;
 * weftd-monitor.c the rtnetlink monitor; weftd-objects.c the object cache and /debug/objects;
 * weftd-uninstall.c `weftd uninstall`.
 */

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <stdio.h>

#include "daemon/backend/backend.h"
#include "daemon/cache/object-source-etcd.h"
#include "daemon/cache/object-source-kube.h"
#include "daemon/datastore/datastore.h"
#include "daemon/masquerade.h"
#include "daemon/metrics.h"
#include "daemon/network-config.h"
#include "daemon/reconcile.h"
#include "daemon/status-server.h"
#include "shared/event/event-loop.h"
#include "shared/nft/nft.h"
#include "shared/nl/nl.h"

#define EXIT_CONFIG 2
#define DEBOUNCE_USEC (20 * USEC_PER_MSEC)
#define STARTUP_BACKOFF_MIN_USEC (500 * USEC_PER_MSEC)
#define STARTUP_BACKOFF_MAX_USEC (10 * USEC_PER_SEC)
#define STATE_SUBNET_FILE "subnet"

/* --objects-datastore: where Pods, Namespaces, NetworkPolicies, Services and EndpointSlices come
 * from (weftd-objects.c); names as on the command line. */
typedef enum ObjectsDatastore {
	OBJECTS_DATASTORE_NONE,
	OBJECTS_DATASTORE_ETCD,
	OBJECTS_DATASTORE_KUBERNETES,
	_OBJECTS_DATASTORE_MAX,
} ObjectsDatastore;

typedef struct Args {
	const char *node_name;
	const char *public_ip;
	const char *iface;
	DatastoreKind datastore;
	ObjectsDatastore objects_datastore;
	const char *kubeconfig; /* NULL = in-cluster service account */
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
	uint64_t relist_usec;       /* re-list the datastore this often (on a resync tick); 0 = never */
	uint64_t etcd_timeout_usec; /* 0 = forever */
	int lease_ttl_sec;
	bool keep_lease;
	bool rotate_key;            /* --rotate-key: the wireguard backend replaces its key pair on start-up */
	bool policy_log_drops;      /* --policy-log-drops (or WEFT_POLICY_LOG_DROPS set) */
	bool flow_log;              /* --flow-log (flows/flow-agent.h; turns the drop log on too) */
	unsigned flow_log_rate;     /* --flow-log-rate: records a second (0: FLOW_LOG_RATE_DEFAULT) */
	IpPrefix service_ranges[2]; /* --service-cluster-ip-range: at most one per family */
	size_t n_service_ranges;
	IpPrefix *service_external_ip_cidrs; /* --service-external-ip-cidrs (owned; none: no externalIP) */
	size_t n_service_external_ip_cidrs;
	uint16_t service_node_port_min, service_node_port_max; /* --service-node-port-range */
} Args;

typedef enum StartupState {
	STARTUP_CONNECT,   /* open the datastore, read the config */
	STARTUP_ACQUIRE,   /* VTEP, lease, local programming, watch */
	STARTUP_WAIT_SYNC, /* waiting for the first full lease list */
	STARTUP_DONE,
} StartupState;

/* A consumer of the object cache's deltas (policy, services): weftd-objects.c fans each delta out
 * to every registered one, in registration order. */
typedef struct ObjectConsumer {
	const ObjectCacheHandlers *handlers;
	void *userdata;
} ObjectConsumer;

typedef struct ObjectsState {
	ObjectCache *cache; /* NULL with --objects-datastore none */
	const ObjectSourceOps *ops;
	void *source;
	KubeClient *kube; /* the objects' own client: one of these two */
	EtcdClient *etcd;
	KubeObjectSource *kube_source;
	EtcdObjectSource *etcd_source;
	EventSource *client_io, *relist_timer;
	ObjectConsumer consumers[8];
	size_t n_consumers;
	double started;                    /* CLOCK_MONOTONIC seconds */
	double last_delta[_KUBE_KIND_MAX]; /* unix seconds of each kind's last delta (0 = none yet) */
	char **rejected_seen;              /* "kind/ns/name: reason" already logged */
	struct PolicyAgent *policy;        /* NetworkPolicy enforcement (policy/policy-agent.h) */
	struct ServiceAgent *services;     /* Services, kube-proxy's job (service/service-agent.h) */
	struct LbAgent *lb;                /* LoadBalancer addresses (loadbalancer/lb-agent.h) */
	struct LbAnnouncer *announce;      /* ...and their announcement (loadbalancer/lb-announce.h) */
	char *namespace;                   /* Kubernetes: weftd's own (the LoadBalancer Lease's) */
	struct FlowAgent *flows;           /* the flow log, --flow-log (flows/flow-agent.h) */
	size_t n_rejected_seen;
	IpAddr *infra; /* the datastore and API server addresses weftd uses (resolved at start) */
	size_t n_infra;
} ObjectsState;

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
	MasqueradeParams masq;
	NftSync *masq_sync; /* applies masq (masquerade.h), created on first use */
	StatusServer *status;
	ObjectsState objects;

	EventSource *startup_timer, *resync_timer, *debounce_timer, *ds_timer, *ds_io, *monitor_io;
	StartupState state;
	uint64_t startup_begin;
	uint64_t backoff_usec;
	unsigned attempt;
	bool ready;
	bool trimmed;    /* heap trimmed after the first reconcile pass */
	bool lease_lost; /* another node holds our subnet: unhealthy until restarted */
	/* /healthz as the loop last saw it, for the status server's front thread (weftd-status.c) */
	atomic_bool health_ok;
	_Atomic uint64_t health_beat; /* now_usec() of the loop's last publish */
	EventSource *health_timer;
	uint64_t resyncs_since_relist;
	char lease_path[PATH_MAX];
} Manager;

/* weftd-options.c: fills *ret from the command line (exits on --help). 0 or -EINVAL (logged). */
int weftd_parse_args(int argc, char *argv[], Args *ret);
/* "none" | "etcd" | "kubernetes" */
const char *objects_datastore_to_string(ObjectsDatastore o);

/* weftd.c: the run loop's handlers that start-up and the monitor hand work to. */
void manager_schedule_reconcile(Manager *m);
void manager_on_ds_event(const DatastoreEvent *ev, void *userdata);
int manager_on_ds_io(EventSource *s, int fd, uint32_t revents, void *userdata);
void manager_ds_rearm(Manager *m);

/* weftd-startup.c: the start-up timer (connect, acquire, wait for the list), retried with backoff.
 * manager_validate_config() checks m->config against the underlay and picks the backend: 0, or
 * -EINVAL after logging (and asking the loop, if running, to exit with EXIT_CONFIG). */
int manager_on_startup(EventSource *s, void *userdata);
int manager_validate_config(Manager *m);

/* weftd-files.c */
void manager_lease_path_init(Manager *m);
/* Writes (or, without force, repairs) the lease file and the conflist. 0 or the first -errno. */
int manager_ensure_files(Manager *m, bool force);
int manager_apply_masquerade(Manager *m);
/* Reinstalls the node-* chains if someone removed or altered them. */
int manager_ensure_masquerade(Manager *m);
/* The subnet this node had last time (<state-dir>/subnet), asked for again on restart. */
int manager_state_read_subnet(Manager *m, IpPrefix *ret);
int manager_state_write_subnet(Manager *m, const IpPrefix *p);

/* weftd-status.c: the StatusServer handler for /healthz and /metrics. */
int manager_status_handler(const char *method, const char *path, const char *query, StatusResponse *resp,
			   void *userdata);
/* The front thread's handler: plain /healthz from what the loop published; the rest STATUS_DEFER. */
int manager_status_front_handler(const char *method, const char *path, const char *query, StatusResponse *resp,
				 void *userdata);
/* Publishes the /healthz verdict for the front (the loop's health timer, every HEALTH_PUBLISH_USEC). */
void manager_health_publish(Manager *m);
#define HEALTH_PUBLISH_USEC (2 * USEC_PER_SEC)
/* A loop that has not published for this long is reported unhealthy (it is wedged, not busy). */
#define HEALTH_STALL_USEC (60 * USEC_PER_SEC)

/* weftd-objects.c: the object cache (--objects-datastore), started once the loop exists; its
 * /metrics lines and /debug/objects[?kind=K[&namespace=NS]]. start: 0, -EXIT_CONFIG or -errno. */
int manager_objects_start(Manager *m);
void manager_objects_done(Manager *m);
int manager_objects_add_consumer(Manager *m, const ObjectCacheHandlers *h, void *userdata);
int manager_objects_render_metrics(Manager *m, FILE *f);
int manager_objects_debug(Manager *m, const char *query, StatusResponse *resp);

/* weftd-monitor.c: subscribes to rtnetlink and reconciles when our objects change behind our back. */
int manager_monitor_open(Manager *m);

/* weftd-uninstall.c: `weftd uninstall`, removes everything weftd installed on this node. */
int manager_uninstall(Manager *m);
