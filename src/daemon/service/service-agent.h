/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weftd's Services (kube-proxy's job): a consumer of the object cache that programs every Service
 * of the cluster into table inet weft as service-compile.h describes. Once the cache has synced, the
 * first program is one full batch (which also removes svc-* chains a previous run left behind and
 * empties the svc-* maps before filling them). After that every delta of a Service or of an
 * EndpointSlice marks that Service dirty; SERVICE_AGENT_DEBOUNCE_USEC later the dirty Services are
 * rebuilt and the difference goes in as one batch touching only their objects.
 *
 * A batch nftables refuses is narrowed to the Services that cause it (halving the set of changed
 * Services, or of all Services in a full sync); those are quarantined: not programmed in the
 * refused version, logged once, counted (weft_service_quarantined,
 * weft_service_rejected_total{reason="nftables"}), retried when they change and every 30 s. The rest
 * is applied. Only a failure that no Service explains (out of memory, the fixed objects refused) is
 * retried as a full sync after a second, then with a backoff up to 16 s. The debounce, retry, full
 * versus partial passes and sync metrics are the shared runner's (nft-sync.h).
 * docs/service-datapath.md.
 */

#include <stdio.h>

#include "daemon/cache/object-cache.h"
#include "daemon/network-config.h"
#include "shared/event/event-loop.h"
#include "shared/nft/nft.h"

#define SERVICE_AGENT_DEBOUNCE_USEC 2000
/* a failed program is retried (full) after 1 s, doubled per failure up to 16 s (nft-sync.h) */
#define SERVICE_AGENT_RETRY_USEC (1000 * 1000)
#define SERVICE_AGENT_RETRY_MAX_USEC (16 * 1000 * 1000)

typedef struct ServiceAgent ServiceAgent;

/* What the agent needs to know of the node and of weftd's flags. Everything is borrowed and must
 * outlive the agent. */
typedef struct ServiceAgentConfig {
	const char *node;               /* this node's name (traffic policies Local) */
	NetworkConfig *const *network;  /* read at each sync: the pod networks; *network may be NULL until known */
	const IpPrefix *service_ranges; /* --service-cluster-ip-range: at most one per family */
	size_t n_service_ranges;
	/* the address policy (service-admission.h, docs/service-address-policy.md) */
	bool kube_mode;      /* objects from the API server (default/kubernetes may point at it) */
	const IpAddr *infra; /* the datastore and API server addresses weftd uses */
	size_t n_infra;
	/* --service-external-ip-cidrs: none = no externalIP, and no LB IP outside the network config's
	 * LoadBalancer pools (which are allowed as well: the agent reads them from `network`) */
	const IpPrefix *external_ip_cidrs;
	size_t n_external_ip_cidrs;
	uint16_t node_port_min, node_port_max; /* --service-node-port-range; 0, 0: 30000-32767 */
	uint16_t listen_port;                  /* weftd's /healthz and /metrics (tcp): never a Service's */
	/* this node's link addresses and every accepted lease's public IP, read at each sync (*ret:
	 * caller frees); -EAGAIN until the leases are listed (nothing is programmed before). NULL:
	 * none known. */
	int (*node_addresses)(void *userdata, IpAddr **ret, size_t *ret_n);
	void *node_addresses_userdata;
} ServiceAgentConfig;

/* 0, -ENOMEM or nftables' error (opens its own NftCtx in the current namespace). cfg is copied;
 * what it points to is borrowed. */
int service_agent_new(ObjectCache *cache, EventLoop *loop, const ServiceAgentConfig *cfg, ServiceAgent **ret);
ServiceAgent *service_agent_free(ServiceAgent *a);
extern const ObjectCacheHandlers service_agent_handlers;
/* weft_service_* lines for /metrics (weft_service_rejected_total{reason}: refusals and lost
 * conflicts, each counted once when first seen). */
int service_agent_render_metrics(ServiceAgent *a, FILE *f);
/* `weftd uninstall`: every svc-* chain, map and set of table inet weft, in one batch; *ret_n: how
 * many objects. */
int service_uninstall(NftCtx *nft, size_t *ret_n, char **ret_error);
