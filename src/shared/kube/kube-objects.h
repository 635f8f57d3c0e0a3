/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cluster's objects as weft keeps them: compact typed structs holding only the fields weft
 * uses, decoded from the Kubernetes JSON shape (what the API server serves, and what the etcd
 * datastore stores) and validated at the boundary. An object that fails validation (a bad IP, a
 * bad name, a wrong type, a bad selector) is refused whole with a reason naming the field: never
 * half-decoded.
 *
 * Strings that repeat across objects (namespaces, node names, label pairs, port names) are
 * interned in the cache's StringPool: compare them by pointer only against strings of the same
 * pool. Every object starts with KubeObject; cast by `kind`:
 *
 *   const KubePod *p = KUBE_POD(obj);   (NULL if obj is not a Pod)
 *
 * Objects are immutable once decoded; the cache owns them (a delta callback's objects are valid
 * during the callback, lookups' until the cache next changes).
 */

#include <stdbool.h>
#include <stdint.h>

#include "shared/ip/ip-addr.h"
#include "shared/kube/label-selector.h"
#include "shared/kube/string-pool.h"

typedef enum KubeKind {
	KUBE_KIND_NODE,
	KUBE_KIND_NAMESPACE,
	KUBE_KIND_POD,
	KUBE_KIND_NETWORK_POLICY,
	KUBE_KIND_SERVICE,
	KUBE_KIND_ENDPOINT_SLICE,
	_KUBE_KIND_MAX,
} KubeKind;

/* How to reach a kind (for sources): "pods", "/api/v1/pods", "Pod", namespaced or not. */
typedef struct KubeKindInfo {
	const char *resource; /* "networkpolicies" */
	const char *kind;     /* "NetworkPolicy" */
	const char *api_path; /* "/apis/networking.k8s.io/v1/networkpolicies" (all namespaces) */
	bool namespaced;
	const char *api_version; /* "networking.k8s.io/v1": the only one weft decodes */
} KubeKindInfo;

const KubeKindInfo *kube_kind_info(KubeKind k);
/* By resource ("pods") or kind ("Pod"), case-insensitive; -EINVAL if unknown. */
int kube_kind_from_string(const char *s, KubeKind *ret);

typedef enum KubeProtocol {
	KUBE_PROTO_TCP,
	KUBE_PROTO_UDP,
	KUBE_PROTO_SCTP,
} KubeProtocol;

const char *kube_protocol_to_string(KubeProtocol p);

/* The header of every object. */
typedef struct KubeObject {
	uint8_t kind;  /* KubeKind */
	uint8_t flags; /* the cache's own bookkeeping */
	uint16_t n_labels;
	uint32_t hash;         /* of namespace/name (the cache's name index) */
	const char *namespace; /* interned; NULL for cluster-scoped kinds */
	const char *name;      /* owned by the object */
	/* interned "key=value" pairs sorted by key (LabelSet); the array itself is interned too, so
	 * objects with equal labels share it (NULL if none) */
	const char **labels;
} KubeObject;

static inline LabelSet kube_object_labels(const KubeObject *o) {
	return (LabelSet) { .pairs = o->labels, .n = o->n_labels };
}

/* A port given by number or by name (Service targetPort, NetworkPolicy port). */
typedef struct KubePortRef {
	uint16_t number;  /* 0 when by name (or absent) */
	const char *name; /* interned, NULL when by number */
} KubePortRef;

/* ---- Node ---- */

typedef struct KubeNode {
	KubeObject meta;
	uint8_t n_pod_cidrs, n_internal_ips;
	uint16_t n_annotations;
	IpPrefix *pod_cidrs;  /* spec.podCIDRs (spec.podCIDR on old servers) */
	IpAddr *internal_ips; /* status.addresses of type InternalIP */
	char **annotations;   /* "weft.dev/..." annotations only: key, value, key, value ... (sorted by key) */
} KubeNode;

/* ---- Namespace ---- */

typedef struct KubeNamespace {
	KubeObject meta; /* name and labels: all a namespaceSelector needs */
} KubeNamespace;

/* ---- Pod ---- */

typedef enum KubePodPhase {
	KUBE_POD_PENDING,
	KUBE_POD_RUNNING,
	KUBE_POD_SUCCEEDED,
	KUBE_POD_FAILED,
	KUBE_POD_UNKNOWN,
} KubePodPhase;

typedef struct KubeContainerPort {
	const char *name; /* interned, NULL if unnamed */
	uint16_t port;
	uint8_t protocol; /* KubeProtocol */
} KubeContainerPort;

/* One allocation per pod (struct, arrays and name together): ~200 bytes for a typical pod. */
typedef struct KubePod {
	KubeObject meta;
	const char *node_name; /* interned, NULL while unscheduled */
	uint8_t uid[16];
	uint8_t phase; /* KubePodPhase */
	bool host_network;
	uint8_t n_ips; /* status.podIPs: at most one per family */
	uint8_t n_ports;
	IpAddr *ips;
	KubeContainerPort *ports;
} KubePod;

/* ---- NetworkPolicy (networking.k8s.io/v1) ---- */

typedef struct KubePolicyPort {
	uint8_t protocol;  /* KubeProtocol */
	KubePortRef port;  /* number 0 and no name: every port */
	uint16_t end_port; /* 0 = single port */
} KubePolicyPort;

typedef struct KubePolicyPeer {
	/* podSelector / namespaceSelector: NULL when the field is absent (see label-selector.h). An
	 * ipBlock peer has both NULL and has_ip_block set. */
	LabelSelector *pod_selector;
	LabelSelector *namespace_selector;
	bool has_ip_block;
	IpPrefix cidr;
	size_t n_except;
	IpPrefix *except;
} KubePolicyPeer;

typedef struct KubePolicyRule {
	size_t n_peers; /* 0: from/to every peer */
	KubePolicyPeer *peers;
	size_t n_ports; /* 0: every port */
	KubePolicyPort *ports;
} KubePolicyRule;

/* weft's own limits (the API server has none): docs/object-limits.md. A policy past them is refused
 * whole; 5,000 ipBlocks in one policy made a node's table balloon. */
#define KUBE_POLICY_MAX_RULES 100u  /* per direction */
#define KUBE_POLICY_MAX_PEERS 1000u /* in the whole policy, both directions */
#define KUBE_POLICY_MAX_PORTS 100u  /* per rule */
#define KUBE_POLICY_MAX_EXCEPT 100u /* per ipBlock */

typedef struct KubeNetworkPolicy {
	KubeObject meta;
	LabelSelector *pod_selector; /* never NULL: {} = every pod of the namespace */
	bool ingress, egress;        /* policyTypes (defaulted as the API server does) */
	size_t n_ingress, n_egress;
	KubePolicyRule *ingress_rules, *egress_rules;
} KubeNetworkPolicy;

/* ---- Service (v1) ---- */

typedef enum KubeServiceType {
	KUBE_SERVICE_CLUSTER_IP,
	KUBE_SERVICE_NODE_PORT,
	KUBE_SERVICE_LOAD_BALANCER,
	KUBE_SERVICE_EXTERNAL_NAME,
} KubeServiceType;

/* Limits of one Service (docs/service-address-policy.md): the API server's where it has them (unique
 * port names, port . protocol, nodePort . protocol), ours where it has none. A Service over them is
 * refused whole, with the field and the limit named. */
#define KUBE_SERVICE_MAX_PORTS 100
#define KUBE_SERVICE_MAX_EXTERNAL_IPS 64
#define KUBE_SERVICE_MAX_SOURCE_RANGES 64
#define KUBE_SERVICE_MAX_LB_INGRESS 16
#define KUBE_SERVICE_MAX_CONDITIONS 32 /* status.conditions */

typedef struct KubeServicePort {
	const char *name; /* interned, NULL if unnamed */
	uint8_t protocol;
	uint16_t port;
	uint16_t node_port;      /* 0 = none */
	KubePortRef target_port; /* defaults to port */
} KubeServicePort;

/* The LoadBalancer assigner's condition in a Service's status.conditions (metav1.Condition). */
#define KUBE_LB_CONDITION_TYPE "weft.dev/LoadBalancerAddressAssigned"

typedef struct KubeLbCondition {
	bool present;                /* one entry of KUBE_LB_CONDITION_TYPE, well-formed */
	bool bad;                    /* an entry of that type is malformed, or there are several */
	bool status;                 /* "True" */
	bool has_transition;         /* lastTransitionTime is a string */
	int64_t observed_generation; /* 0 if absent */
	char *reason, *message;
} KubeLbCondition;

typedef struct KubeService {
	KubeObject meta;
	uint8_t type;  /* KubeServiceType */
	bool headless; /* clusterIP: None */
	bool session_affinity_client_ip;
	bool external_traffic_local; /* externalTrafficPolicy: Local */
	bool internal_traffic_local; /* internalTrafficPolicy: Local */
	bool created_by_revision;    /* `created` is an etcd create_revision, not a time */
	uint8_t n_cluster_ips, n_ip_families;
	uint8_t ip_families[2]; /* AF_INET / AF_INET6, in spec order */
	uint16_t health_check_node_port;
	uint32_t session_affinity_timeout; /* seconds (default 10800 with ClientIP) */
	/*
	 * Creation order, for "the older wins" between Services that claim the same address and port:
	 * with KUBE_CREATE_REVISION_FIELD present (the etcd source sets it from the key's etcd
	 * create_revision, overwriting whatever a writer put there, since metadata.creationTimestamp
	 * is the writer's word in etcd mode), that revision; else metadata.creationTimestamp as unix
	 * seconds (set by the API server). 0 = unknown: sorts first, then namespace/name decides.
	 * Only compared between objects of one source.
	 */
	int64_t created;
	IpAddr *cluster_ips;
	size_t n_ports, n_external_ips, n_lb_ips, n_source_ranges;
	KubeServicePort *ports;
	IpAddr *external_ips;
	IpAddr *lb_ips;          /* status.loadBalancer.ingress[].ip with ipMode VIP (the default) */
	IpPrefix *source_ranges; /* spec.loadBalancerSourceRanges (masked to the network) */
	/*
	 * LoadBalancer addresses (KEP-1860): an ingress IP with ipMode Proxy belongs to a load balancer
	 * that proxies: the nodes do not DNAT it (it is not in lb_ips), so in-cluster clients go
	 * through the load balancer too. Kept for explaining.
	 */
	size_t n_lb_proxy_ips;
	IpAddr *lb_proxy_ips;
	/*
	 * What the Service asks of an address assigner (LB-IPAM, lb-ipam.h): spec.loadBalancerClass
	 * (weft acts on none or KUBE_LB_CLASS_WEFT), the addresses it asks for
	 * (spec.loadBalancerIP, else the KUBE_ANNOTATION_LB_IPS annotation, else MetalLB's), and the
	 * key under which it shares an address (KUBE_ANNOTATION_LB_SHARED, else MetalLB's). A
	 * malformed request does not refuse the Service (its ClusterIP still works): lb_request_bad
	 * is set with the reason, and the assigner refuses the address.
	 */
	const char *lb_class;       /* interned; NULL = the cluster's default */
	const char *lb_sharing_key; /* interned; NULL = shares with nobody */
	uint8_t n_lb_requested;
	bool lb_request_bad;
	IpAddr lb_requested[2];
	char *lb_request_error; /* with lb_request_bad: why, naming the key and value */
	char *lb_request_raw;   /* with lb_request_bad: the value as written */
	/* static: the key the request came from (NULL: none), for the assigner's condition message;
	 * not compared by kube_object_equal(), kept current by kube_object_take_version() */
	const char *lb_request_key;
	/* metadata.resourceVersion (NULL if absent): the precondition of the assigner's status write.
	 * Not compared by kube_object_equal(); kube_object_take_version() keeps it current. */
	char *resource_version;
	/* metadata.generation (0 if absent) and the assigner's own condition as status holds it
	 * (KUBE_LB_CONDITION_TYPE in status.conditions; other writers' conditions are not kept): what
	 * the assigner compares to know whether status needs writing. Not compared by
	 * kube_object_equal() (no consumer but the assigner reads them, and it repairs by its periodic
	 * pass); kube_object_take_version() keeps them current. */
	int64_t generation;
	KubeLbCondition lb_condition;
} KubeService;

#define KUBE_LB_CLASS_WEFT "weft.dev/loadbalancer"
#define KUBE_ANNOTATION_LB_IPS "weft.dev/loadbalancer-ips"
#define KUBE_ANNOTATION_LB_SHARED "weft.dev/allow-shared-ip"
/* MetalLB's names for the same two, read when weft's are absent (a MetalLB user's Services keep
 * working). */
#define KUBE_ANNOTATION_METALLB_LB_IPS "metallb.universe.tf/loadBalancerIPs"
#define KUBE_ANNOTATION_METALLB_SHARED "metallb.universe.tf/allow-shared-ip"

/* Top-level member the etcd object source sets to the key's create_revision (see KubeService.created);
 * the Kubernetes source removes it, so only a source can set it. */
#define KUBE_CREATE_REVISION_FIELD "weftCreateRevision"

/* ---- EndpointSlice (discovery.k8s.io/v1) ---- */

typedef enum KubeAddressType {
	KUBE_ADDRESS_IPV4,
	KUBE_ADDRESS_IPV6,
	KUBE_ADDRESS_FQDN, /* kept, but its endpoints are not (nothing of weft routes to names) */
} KubeAddressType;

typedef struct KubeEndpoint {
	/* conditions: an absent ready/serving is "unknown" and read as true (the API's own advice);
	 * an absent terminating as false. */
	bool ready, serving, terminating;
	uint8_t n_addresses;
	const char *node_name; /* interned, NULL if absent */
	IpAddr *addresses;
} KubeEndpoint;

typedef struct KubeEndpointPort {
	const char *name; /* interned, NULL if unnamed */
	uint8_t protocol;
	uint16_t port; /* 0 = absent (every port) */
} KubeEndpointPort;

/* kube-apiserver's discovery validation: endpoints per slice, addresses per endpoint. */
#define KUBE_SLICE_MAX_ENDPOINTS 1000u
#define KUBE_SLICE_MAX_ADDRESSES 100u
/* weft's own (the API server allows 20,000): a Service of weft's has at most this many ports. */
#define KUBE_SLICE_MAX_PORTS 100u

typedef struct KubeEndpointSlice {
	KubeObject meta;
	const char *service_name; /* interned: label kubernetes.io/service-name, NULL if absent */
	uint8_t address_type;     /* KubeAddressType */
	size_t n_endpoints, n_ports;
	KubeEndpoint *endpoints;
	KubeEndpointPort *ports;
} KubeEndpointSlice;

#define KUBE_OBJECT_CAST(o, k, T) ((o) && (o)->kind == (k) ? (const T *) (o) : NULL)
#define KUBE_NODE(o) KUBE_OBJECT_CAST(o, KUBE_KIND_NODE, KubeNode)
#define KUBE_NAMESPACE(o) KUBE_OBJECT_CAST(o, KUBE_KIND_NAMESPACE, KubeNamespace)
#define KUBE_POD(o) KUBE_OBJECT_CAST(o, KUBE_KIND_POD, KubePod)
#define KUBE_NETWORK_POLICY(o) KUBE_OBJECT_CAST(o, KUBE_KIND_NETWORK_POLICY, KubeNetworkPolicy)
#define KUBE_SERVICE(o) KUBE_OBJECT_CAST(o, KUBE_KIND_SERVICE, KubeService)
#define KUBE_ENDPOINT_SLICE(o) KUBE_OBJECT_CAST(o, KUBE_KIND_ENDPOINT_SLICE, KubeEndpointSlice)

/*
 * Decodes one object of `kind` from its JSON. 0 and *ret (owned by the caller, free with
 * kube_object_free() and the same pool); -EINVAL with err->text naming the field when the object is
 * refused; -ENOMEM.
 */
int kube_object_decode(KubeKind kind, const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err);
/* Frees an object and drops its pool references. NULL-safe; returns NULL. */
KubeObject *kube_object_free(KubeObject *o, StringPool *pool);
/* True if two objects of the same pool hold the same data (the cache fires no update then). */
bool kube_object_equal(const KubeObject *a, const KubeObject *b);
/* For the cache, when `from` (a newer version) is equal to `to` and `to` is kept: moves what
 * kube_object_equal() does not compare but a writer needs (a Service's resourceVersion, and what the
 * LoadBalancer assigner compares: generation, its condition, the request's key) to `to`. */
void kube_object_take_version(KubeObject *to, KubeObject *from);
/* metadata.namespace and metadata.name of a JSON object without decoding the rest (for DELETED
 * events, which must be honoured even for an object that would not validate). -EINVAL if absent. */
int kube_object_json_key(const json_t *j, const char **ret_namespace, const char **ret_name);
/* The object in its Kubernetes JSON shape, holding exactly the fields kept (kube-objects-json.c):
 * decoding it gives an equal object. For debug dumps. NULL on OOM. */
json_t *kube_object_to_json(const KubeObject *o);
/* A selector as metav1.LabelSelector (all requirements as matchExpressions); JSON null for NULL. */
json_t *label_selector_to_json(const LabelSelector *s);
/* The IPs an object is found by in the IP index (pods: status.podIPs, unless hostNetwork, whose
 * IPs are the node's). */
size_t kube_object_ips(const KubeObject *o, const IpAddr **ret);
/* The secondary key of the "by key" index: Pod -> node name, EndpointSlice -> service name. */
const char *kube_object_index_key(const KubeObject *o);
