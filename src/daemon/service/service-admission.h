/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Which Service addresses and ports may be programmed, and who wins a conflict
 * (docs/service-address-policy.md). Whatever the source (the API server validates some of this in
 * Kubernetes mode; nothing does in etcd mode), a Service never takes an address of the node's
 * infrastructure, and two Services never program the same key (the svc-ips key
 * `addr . l4proto . port`, or the svc-nodeports key `l4proto . port`): the kernel would refuse the
 * whole batch, and every node must agree on who holds it.
 *
 * The policy (ServiceAdmissionPolicy) is pure: a table of prefixes and addresses in, a reason out.
 * The claims (ServiceClaims) are the small state: every Service's admitted keys, and for each key
 * the winner (the smallest `created`, then namespace/name). Changing one Service's claims tells
 * which other Services won or lost a key, so the agent rebuilds them too.
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"
#include "shared/kube/kube-objects.h"

/* The bounded label set of weft_service_rejected_total{reason}. */
typedef enum ServiceRejectReason {
	SERVICE_ADMIT,
	SERVICE_REJECT_LOOPBACK,
	SERVICE_REJECT_LINK_LOCAL,
	SERVICE_REJECT_MULTICAST,
	SERVICE_REJECT_UNSPECIFIED,
	SERVICE_REJECT_INFRASTRUCTURE,        /* the datastore / API server weftd itself uses */
	SERVICE_REJECT_POD_NETWORK,           /* a clusterIP or externalIP inside Network/Network6 */
	SERVICE_REJECT_OUTSIDE_SERVICE_RANGE, /* a clusterIP outside --service-cluster-ip-range */
	SERVICE_REJECT_EXTERNAL_IP_NOT_ALLOWED,
	SERVICE_REJECT_LB_IP_NOT_ALLOWED,
	SERVICE_REJECT_NODE_ADDRESS,    /* a node's address the allow-list does not name exactly */
	SERVICE_REJECT_RESERVED_PORT,   /* weftd's listen port or the backend's tunnel port */
	SERVICE_REJECT_NODE_PORT_RANGE, /* outside --service-node-port-range */
	SERVICE_REJECT_CONFLICT,        /* an older Service holds the key */
	_SERVICE_REJECT_MAX,
} ServiceRejectReason;

const char *service_reject_reason_to_string(ServiceRejectReason r);

/* What an address is to a Service. */
typedef enum ServiceAddrUse {
	SERVICE_ADDR_CLUSTER_IP,
	SERVICE_ADDR_EXTERNAL_IP,
	SERVICE_ADDR_LB_IP, /* status.loadBalancer.ingress[].ip */
	SERVICE_ADDR_NODE_PORT,
	SERVICE_ADDR_HEALTH_CHECK_NODE_PORT,
	SERVICE_ADDR_ENDPOINT,
} ServiceAddrUse;

const char *service_addr_use_to_string(ServiceAddrUse u);

/* A port of the node that no Service may take on a node address: weftd's /healthz, the tunnel. */
typedef struct ServiceReservedPort {
	uint8_t protocol; /* KubeProtocol */
	uint16_t port;
} ServiceReservedPort;

#define SERVICE_NODE_PORT_MIN 30000
#define SERVICE_NODE_PORT_MAX 32767

/* Everything borrowed. */
typedef struct ServiceAdmissionPolicy {
	const IpPrefix *service_ranges; /* --service-cluster-ip-range (none: any clusterIP's range) */
	size_t n_service_ranges;
	const IpPrefix *pod_networks;
	size_t n_pod_networks;
	const IpPrefix *external_ip_cidrs; /* --service-external-ip-cidrs (none: no externalIP) */
	size_t n_external_ip_cidrs;
	/* the LoadBalancer pools (a later issue): LB ingress IPs they hold are allowed like those of
	 * external_ip_cidrs. Empty for now. */
	const IpPrefix *lb_pools;
	size_t n_lb_pools;
	const IpAddr *infra; /* the datastore and API server endpoints weftd uses (resolved at start) */
	size_t n_infra;
	const IpAddr *node_addrs; /* this node's link addresses and every accepted lease's public IP */
	size_t n_node_addrs;
	const ServiceReservedPort *reserved;
	size_t n_reserved;
	uint16_t node_port_min, node_port_max; /* --service-node-port-range */
	bool kube_mode;                        /* objects from the API server: default/kubernetes may point at it */
} ServiceAdmissionPolicy;

/* Loopback, link-local, multicast, unspecified (both families), else SERVICE_ADMIT. */
ServiceRejectReason service_admission_check_special(const IpAddr *ip);

/*
 * May `ip` be svc's address of kind `use` (CLUSTER_IP, EXTERNAL_IP, LB_IP) for protocol . port?
 * Conflicts are not checked here (ServiceClaims). svc may be NULL (no Service-specific exception).
 */
ServiceRejectReason service_admission_check_addr(const ServiceAdmissionPolicy *p, const KubeService *svc,
						 ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol,
						 uint16_t port);
/* A nodePort or healthCheckNodePort: in the range, not a reserved port. */
ServiceRejectReason service_admission_check_node_port(const ServiceAdmissionPolicy *p, KubeProtocol protocol,
						      uint16_t port);
/* An endpoint of svc: not special, not infrastructure (but default/kubernetes in Kubernetes mode
 * is backed by the API servers themselves). Node addresses are fine (hostNetwork pods). */
ServiceRejectReason service_admission_check_endpoint(const ServiceAdmissionPolicy *p, const KubeService *svc,
						     const IpAddr *ip);

/* "A-B" (kube-apiserver's --service-node-port-range syntax), 1 <= A <= B <= 65535. 0 or -EINVAL. */
int service_node_port_range_parse(const char *s, uint16_t *ret_min, uint16_t *ret_max);
/* "CIDR[,CIDR...]" (host bits must be zero); *ret (caller frees) holds *ret_n. 0, -EINVAL, -ENOMEM. */
int service_cidrs_parse(const char *s, IpPrefix **ret, size_t *ret_n);

/*
 * The conflict keys. An address key is the svc-ips key ("10.96.0.10 . tcp . 80": clusterIPs,
 * externalIPs and LB IPs share it); a node-port key "nodeport . tcp . 30080" (nodePorts and
 * healthCheckNodePorts share it, whatever the family). NULL on OOM.
 */
char *service_claim_key_addr(const IpAddr *ip, KubeProtocol protocol, uint16_t port);
char *service_claim_key_node_port(KubeProtocol protocol, uint16_t port);

/*
 * The keys svc claims (sorted, unique; duplicates inside one Service are one claim): every
 * admitted address of a family the Service has a clusterIP of, for each port, and its admitted
 * nodePorts and healthCheckNodePort. Headless and ExternalName Services claim nothing.
 * 0 or -ENOMEM.
 */
int service_admission_claim_keys(const ServiceAdmissionPolicy *p, const KubeService *svc, char ***ret, size_t *ret_n);

typedef struct ServiceClaims ServiceClaims;

int service_claims_new(ServiceClaims **ret);
ServiceClaims *service_claims_free(ServiceClaims *c);
void service_claims_reset(ServiceClaims *c);
/*
 * Replaces the claims of Service `svc` ("ns/name", created: KubeService.created) with keys (sorted
 * and unique, as service_admission_claim_keys() gives them; n 0: the Service is gone). The other
 * Services that won or lost a key by it are appended to *affected (a strv, caller frees; may hold
 * repeats). 0 or -ENOMEM (the claims are then unknown: reset and set every Service again).
 */
int service_claims_set(ServiceClaims *c, const char *svc, int64_t created, char *const *keys, size_t n,
		       char ***affected);
/* The Service holding key ("ns/name"), NULL if nobody claims it. */
const char *service_claims_winner(const ServiceClaims *c, const char *key);
/* True if svc holds key, or nobody claims it (a key the claims never saw is not a conflict). */
bool service_claims_wins(const ServiceClaims *c, const char *svc, const char *key);
size_t service_claims_size(const ServiceClaims *c);
