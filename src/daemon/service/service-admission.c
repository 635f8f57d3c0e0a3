/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-admission.h"

static const char *const reason_names[_SERVICE_REJECT_MAX] = {
	[SERVICE_ADMIT] = "admitted",
	[SERVICE_REJECT_LOOPBACK] = "loopback",
	[SERVICE_REJECT_LINK_LOCAL] = "link-local",
	[SERVICE_REJECT_MULTICAST] = "multicast",
	[SERVICE_REJECT_UNSPECIFIED] = "unspecified",
	[SERVICE_REJECT_INFRASTRUCTURE] = "infrastructure",
	[SERVICE_REJECT_POD_NETWORK] = "pod-network",
	[SERVICE_REJECT_OUTSIDE_SERVICE_RANGE] = "outside-service-range",
	[SERVICE_REJECT_EXTERNAL_IP_NOT_ALLOWED] = "external-ip-not-allowed",
	[SERVICE_REJECT_LB_IP_NOT_ALLOWED] = "lb-ip-not-allowed",
	[SERVICE_REJECT_NODE_ADDRESS] = "node-address",
	[SERVICE_REJECT_RESERVED_PORT] = "reserved-port",
	[SERVICE_REJECT_NODE_PORT_RANGE] = "node-port-range",
	[SERVICE_REJECT_CONFLICT] = "conflict",
};

const char *service_reject_reason_to_string(ServiceRejectReason r) {
	return r < _SERVICE_REJECT_MAX ? reason_names[r] : "unknown";
}

const char *service_addr_use_to_string(ServiceAddrUse u) {
	switch (u) {
	case SERVICE_ADDR_CLUSTER_IP: return "clusterIP";
	case SERVICE_ADDR_EXTERNAL_IP: return "externalIP";
	case SERVICE_ADDR_LB_IP: return "loadBalancer ingress IP";
	case SERVICE_ADDR_NODE_PORT: return "nodePort";
	case SERVICE_ADDR_HEALTH_CHECK_NODE_PORT: return "healthCheckNodePort";
	case SERVICE_ADDR_ENDPOINT: return "endpoint";
	}
	return "address";
}

ServiceRejectReason service_admission_check_special(const IpAddr *ip) {
	const uint8_t *b = ip->bytes;

	if (ip->family == AF_INET) {
		if (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0)
			return SERVICE_REJECT_UNSPECIFIED;
		if (b[0] == 127)
			return SERVICE_REJECT_LOOPBACK;
		if (b[0] == 169 && b[1] == 254)
			return SERVICE_REJECT_LINK_LOCAL;
		if (b[0] >= 224 && b[0] <= 239)
			return SERVICE_REJECT_MULTICAST;
		/* 0.0.0.0/8 ("this network") and 255.255.255.255: nothing a Service can answer on */
		if (b[0] == 0 || (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255))
			return SERVICE_REJECT_UNSPECIFIED;
		return SERVICE_ADMIT;
	}
	if (ip->family == AF_INET6) {
		if (IN6_IS_ADDR_UNSPECIFIED(&ip->in6))
			return SERVICE_REJECT_UNSPECIFIED;
		if (IN6_IS_ADDR_LOOPBACK(&ip->in6))
			return SERVICE_REJECT_LOOPBACK;
		if (IN6_IS_ADDR_LINKLOCAL(&ip->in6))
			return SERVICE_REJECT_LINK_LOCAL;
		if (IN6_IS_ADDR_MULTICAST(&ip->in6))
			return SERVICE_REJECT_MULTICAST;
		/* ::ffff:a.b.c.d names an IPv4 address: judge that one */
		if (IN6_IS_ADDR_V4MAPPED(&ip->in6)) {
			IpAddr v4 = { .family = AF_INET };

			memcpy(v4.bytes, b + 12, 4);
			return service_admission_check_special(&v4);
		}
		return SERVICE_ADMIT;
	}
	return SERVICE_REJECT_UNSPECIFIED;
}

static bool addr_in(const IpAddr *ip, const IpAddr *v, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (ip_addr_equal(ip, &v[i]))
			return true;
	return false;
}

static bool prefix_in(const IpAddr *ip, const IpPrefix *v, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (ip_prefix_contains(&v[i], ip))
			return true;
	return false;
}

/* The allow-list names ip itself (/32, /128): a covering CIDR is not an operator's word about a
 * node's own address. */
static bool listed_exactly(const ServiceAdmissionPolicy *p, const IpAddr *ip) {
	for (size_t i = 0; i < p->n_external_ip_cidrs; i++)
		if (p->external_ip_cidrs[i].addr.family == ip->family &&
		    p->external_ip_cidrs[i].len == ip_family_bits(ip->family) &&
		    ip_addr_equal(&p->external_ip_cidrs[i].addr, ip))
			return true;
	return false;
}

static bool port_reserved(const ServiceAdmissionPolicy *p, KubeProtocol protocol, uint16_t port) {
	for (size_t i = 0; i < p->n_reserved; i++)
		if (p->reserved[i].protocol == protocol && p->reserved[i].port == port)
			return true;
	return false;
}

/* default/kubernetes of an API server: the Service that leads to the API servers themselves. */
static bool is_apiserver_service(const ServiceAdmissionPolicy *p, const KubeService *svc) {
	return p->kube_mode && svc && streq_ptr(svc->meta.namespace, "default") && streq(svc->meta.name, "kubernetes");
}

ServiceRejectReason service_admission_check_addr(const ServiceAdmissionPolicy *p, const KubeService *svc,
						 ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol,
						 uint16_t port) {
	ServiceRejectReason r = service_admission_check_special(ip);
	bool has_range = false;

	if (r != SERVICE_ADMIT)
		return r;
	/* In a pod, weftd's in-cluster config reaches the API server at KUBERNETES_SERVICE_HOST, the
	 * clusterIP of default/kubernetes: that address is infrastructure only as that Service's own
	 * clusterIP (refusing it would cut every pod off the API); anything else claiming it is not. */
	if (addr_in(ip, p->infra, p->n_infra) && !(use == SERVICE_ADDR_CLUSTER_IP && is_apiserver_service(p, svc)))
		return SERVICE_REJECT_INFRASTRUCTURE;
	if (addr_in(ip, p->node_addrs, p->n_node_addrs)) {
		if (!listed_exactly(p, ip))
			return SERVICE_REJECT_NODE_ADDRESS;
		if (port_reserved(p, protocol, port))
			return SERVICE_REJECT_RESERVED_PORT;
	}
	switch (use) {
	case SERVICE_ADDR_CLUSTER_IP:
		if (prefix_in(ip, p->pod_networks, p->n_pod_networks))
			return SERVICE_REJECT_POD_NETWORK;
		for (size_t i = 0; i < p->n_service_ranges; i++)
			has_range = has_range || p->service_ranges[i].addr.family == ip->family;
		/* a family without a range given: kube-apiserver would not have allocated it, but an
		 * operator who names only the IPv4 range has said nothing about IPv6 */
		if (has_range && !prefix_in(ip, p->service_ranges, p->n_service_ranges))
			return SERVICE_REJECT_OUTSIDE_SERVICE_RANGE;
		return SERVICE_ADMIT;
	case SERVICE_ADDR_EXTERNAL_IP:
		if (prefix_in(ip, p->pod_networks, p->n_pod_networks))
			return SERVICE_REJECT_POD_NETWORK;
		if (!prefix_in(ip, p->external_ip_cidrs, p->n_external_ip_cidrs))
			return SERVICE_REJECT_EXTERNAL_IP_NOT_ALLOWED;
		return SERVICE_ADMIT;
	case SERVICE_ADDR_LB_IP:
		if (!prefix_in(ip, p->external_ip_cidrs, p->n_external_ip_cidrs) &&
		    !prefix_in(ip, p->lb_pools, p->n_lb_pools))
			return SERVICE_REJECT_LB_IP_NOT_ALLOWED;
		return SERVICE_ADMIT;
	default: return SERVICE_ADMIT;
	}
}

ServiceRejectReason service_admission_check_node_port(const ServiceAdmissionPolicy *p, KubeProtocol protocol,
						      uint16_t port) {
	if (port < p->node_port_min || port > p->node_port_max)
		return SERVICE_REJECT_NODE_PORT_RANGE;
	/* a nodePort answers on every node address: never on weftd's own port or the tunnel's */
	if (port_reserved(p, protocol, port))
		return SERVICE_REJECT_RESERVED_PORT;
	return SERVICE_ADMIT;
}

ServiceRejectReason service_admission_check_endpoint(const ServiceAdmissionPolicy *p, const KubeService *svc,
						     const IpAddr *ip) {
	ServiceRejectReason r = service_admission_check_special(ip);

	if (r != SERVICE_ADMIT)
		return r;
	/* the endpoints of default/kubernetes ARE the API servers: refusing them would cut every
	 * pod off the API */
	if (addr_in(ip, p->infra, p->n_infra) && !is_apiserver_service(p, svc))
		return SERVICE_REJECT_INFRASTRUCTURE;
	return SERVICE_ADMIT;
}

int service_node_port_range_parse(const char *s, uint16_t *ret_min, uint16_t *ret_max) {
	const char *dash = strchr(s, '-');
	char a[8], b[8];
	unsigned lo, hi;

	if (!dash || (size_t) (dash - s) >= sizeof(a) || strlen(dash + 1) >= sizeof(b))
		return -EINVAL;
	memcpy(a, s, (size_t) (dash - s));
	a[dash - s] = '\0';
	strcpy(b, dash + 1);
	if (safe_atou32(a, &lo) < 0 || safe_atou32(b, &hi) < 0 || lo < 1 || hi > 65535 || lo > hi)
		return -EINVAL;
	*ret_min = (uint16_t) lo;
	*ret_max = (uint16_t) hi;
	return 0;
}

int service_cidrs_parse(const char *s, IpPrefix **ret, size_t *ret_n) {
	_cleanup_strv_free_ char **parts = NULL;
	_cleanup_free_ IpPrefix *v = NULL;
	size_t n;
	int r;

	r = strv_split(s, ",", &parts);
	if (r < 0)
		return r;
	n = strv_length(parts);
	if (n == 0)
		return -EINVAL;
	v = calloc(n, sizeof(IpPrefix));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ip_prefix_parse_network(parts[i], &v[i]) < 0)
			return -EINVAL;
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

static const char *lproto(KubeProtocol p) {
	switch (p) {
	case KUBE_PROTO_TCP: return "tcp";
	case KUBE_PROTO_UDP: return "udp";
	case KUBE_PROTO_SCTP: return "sctp";
	}
	return "tcp";
}

char *service_claim_key_addr(const IpAddr *ip, KubeProtocol protocol, uint16_t port) {
	char a[IP_ADDR_STRLEN];

	return strdup_printf("%s . %s . %u", ip_addr_to_string(ip, a), lproto(protocol), port);
}

char *service_claim_key_node_port(KubeProtocol protocol, uint16_t port) {
	return strdup_printf("nodeport . %s . %u", lproto(protocol), port);
}

static int str_cmp(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int push(char ***v, size_t *n, char *s) {
	char **nv;

	if (!s)
		return -ENOMEM;
	nv = reallocarray(*v, *n + 2, sizeof(char *));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = s;
	nv[*n] = NULL;
	return 0;
}

int service_admission_claim_keys(const ServiceAdmissionPolicy *p, const KubeService *svc, char ***ret, size_t *ret_n) {
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0, w = 0;
	bool lb = svc->type == KUBE_SERVICE_LOAD_BALANCER;
	bool np = svc->type == KUBE_SERVICE_NODE_PORT || lb;
	int r = 0;

	if (svc->type == KUBE_SERVICE_EXTERNAL_NAME || svc->headless) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	for (size_t i = 0; i < svc->n_ports && r >= 0; i++) {
		const KubeServicePort *sp = &svc->ports[i];

		/* what service-compile.c renders: addresses of a family the Service has a clusterIP of */
		for (size_t c = 0; c < svc->n_cluster_ips && r >= 0; c++) {
			const IpAddr *cip = &svc->cluster_ips[c];

			if (service_admission_check_addr(p, svc, SERVICE_ADDR_CLUSTER_IP, cip, sp->protocol,
							 sp->port) == SERVICE_ADMIT)
				r = push(&v, &n, service_claim_key_addr(cip, sp->protocol, sp->port));
			for (size_t e = 0; e < svc->n_external_ips && r >= 0; e++)
				if (svc->external_ips[e].family == cip->family &&
				    service_admission_check_addr(p, svc, SERVICE_ADDR_EXTERNAL_IP,
								 &svc->external_ips[e], sp->protocol,
								 sp->port) == SERVICE_ADMIT)
					r = push(&v, &n,
						 service_claim_key_addr(&svc->external_ips[e], sp->protocol, sp->port));
			for (size_t e = 0; lb && e < svc->n_lb_ips && r >= 0; e++)
				if (svc->lb_ips[e].family == cip->family &&
				    service_admission_check_addr(p, svc, SERVICE_ADDR_LB_IP, &svc->lb_ips[e],
								 sp->protocol, sp->port) == SERVICE_ADMIT)
					r = push(&v, &n,
						 service_claim_key_addr(&svc->lb_ips[e], sp->protocol, sp->port));
		}
		if (r >= 0 && np && sp->node_port && svc->n_cluster_ips > 0 &&
		    service_admission_check_node_port(p, sp->protocol, sp->node_port) == SERVICE_ADMIT)
			r = push(&v, &n, service_claim_key_node_port(sp->protocol, sp->node_port));
	}
	if (r >= 0 && lb && svc->external_traffic_local && svc->health_check_node_port &&
	    service_admission_check_node_port(p, KUBE_PROTO_TCP, svc->health_check_node_port) == SERVICE_ADMIT)
		r = push(&v, &n, service_claim_key_node_port(KUBE_PROTO_TCP, svc->health_check_node_port));
	if (r < 0)
		return r;
	qsort_safe(v, n, sizeof(char *), str_cmp);
	for (size_t i = 0; i < n; i++)
		if (w > 0 && streq(v[w - 1], v[i]))
			free(v[i]);
		else
			v[w++] = v[i];
	if (v)
		v[w] = NULL;
	*ret = TAKE_PTR(v);
	*ret_n = w;
	return 0;
}

/* ---- claims ---- */

typedef struct Claimant {
	char *svc; /* borrowed from its SvcRec */
	int64_t created;
} Claimant;

typedef struct KeyRec {
	struct KeyRec *next;
	char *key;
	Claimant *v; /* sorted: v[0] wins */
	size_t n;
} KeyRec;

typedef struct SvcRec {
	struct SvcRec *next;
	char *svc;
	int64_t created;
	char **keys; /* sorted */
	size_t n_keys;
} SvcRec;

struct ServiceClaims {
	KeyRec **keys;
	size_t n_key_buckets, n_keys;
	SvcRec **svcs;
	size_t n_svc_buckets, n_svcs;
};

static size_t hash(const char *s) {
	size_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char) *s;
	return h;
}

int service_claims_new(ServiceClaims **ret) {
	ServiceClaims *c = calloc(1, sizeof(ServiceClaims));

	if (!c)
		return -ENOMEM;
	c->n_key_buckets = c->n_svc_buckets = 64;
	c->keys = calloc(c->n_key_buckets, sizeof(KeyRec *));
	c->svcs = calloc(c->n_svc_buckets, sizeof(SvcRec *));
	if (!c->keys || !c->svcs) {
		service_claims_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void service_claims_reset(ServiceClaims *c) {
	for (size_t b = 0; b < c->n_key_buckets; b++)
		while (c->keys[b]) {
			KeyRec *k = c->keys[b];

			c->keys[b] = k->next;
			free(k->key);
			free(k->v);
			free(k);
		}
	for (size_t b = 0; b < c->n_svc_buckets; b++)
		while (c->svcs[b]) {
			SvcRec *s = c->svcs[b];

			c->svcs[b] = s->next;
			free(s->svc);
			strv_free(s->keys);
			free(s);
		}
	c->n_keys = c->n_svcs = 0;
}

ServiceClaims *service_claims_free(ServiceClaims *c) {
	if (!c)
		return NULL;
	if (c->keys && c->svcs)
		service_claims_reset(c);
	free(c->keys);
	free(c->svcs);
	free(c);
	return NULL;
}

size_t service_claims_size(const ServiceClaims *c) {
	return c->n_keys;
}

static KeyRec *key_find(const ServiceClaims *c, const char *key) {
	for (KeyRec *k = c->keys[hash(key) % c->n_key_buckets]; k; k = k->next)
		if (streq(k->key, key))
			return k;
	return NULL;
}

static SvcRec *svc_find(const ServiceClaims *c, const char *svc) {
	for (SvcRec *s = c->svcs[hash(svc) % c->n_svc_buckets]; s; s = s->next)
		if (streq(s->svc, svc))
			return s;
	return NULL;
}

/* Grows a bucket array when the load passes 1 (rehashing by each record's own key). */
static void keys_grow(ServiceClaims *c) {
	size_t nb = c->n_key_buckets * 2;
	KeyRec **v;

	if (c->n_keys < c->n_key_buckets || !(v = calloc(nb, sizeof(KeyRec *))))
		return; /* a longer chain, not an error */
	for (size_t b = 0; b < c->n_key_buckets; b++)
		while (c->keys[b]) {
			KeyRec *k = c->keys[b];

			c->keys[b] = k->next;
			k->next = v[hash(k->key) % nb];
			v[hash(k->key) % nb] = k;
		}
	free(c->keys);
	c->keys = v;
	c->n_key_buckets = nb;
}

static void svcs_grow(ServiceClaims *c) {
	size_t nb = c->n_svc_buckets * 2;
	SvcRec **v;

	if (c->n_svcs < c->n_svc_buckets || !(v = calloc(nb, sizeof(SvcRec *))))
		return;
	for (size_t b = 0; b < c->n_svc_buckets; b++)
		while (c->svcs[b]) {
			SvcRec *s = c->svcs[b];

			c->svcs[b] = s->next;
			s->next = v[hash(s->svc) % nb];
			v[hash(s->svc) % nb] = s;
		}
	free(c->svcs);
	c->svcs = v;
	c->n_svc_buckets = nb;
}

/* The older wins, then namespace/name: the same answer on every node. */
static int claimant_cmp(const Claimant *a, const Claimant *b) {
	if (a->created != b->created)
		return a->created < b->created ? -1 : 1;
	return strcmp(a->svc, b->svc);
}

static const char *winner_of(const KeyRec *k) {
	return k && k->n > 0 ? k->v[0].svc : NULL;
}

static int note_change(char ***affected, const char *before, const char *after, const char *self) {
	int r = 0;

	if (streq_ptr(before, after))
		return 0;
	if (before && !streq(before, self))
		r = strv_extend(affected, before);
	if (r >= 0 && after && !streq(after, self))
		r = strv_extend(affected, after);
	return r;
}

static int key_add(ServiceClaims *c, const char *key, SvcRec *s, char ***affected) {
	KeyRec *k = key_find(c, key);
	Claimant cl = { .svc = s->svc, .created = s->created }, *nv;
	const char *before;
	size_t at;

	if (!k) {
		k = calloc(1, sizeof(KeyRec));
		if (!k || !(k->key = strdup(key))) {
			free(k);
			return -ENOMEM;
		}
		k->next = c->keys[hash(key) % c->n_key_buckets];
		c->keys[hash(key) % c->n_key_buckets] = k;
		c->n_keys++;
		keys_grow(c);
	}
	nv = reallocarray(k->v, k->n + 1, sizeof(Claimant));
	if (!nv)
		return -ENOMEM;
	k->v = nv;
	before = winner_of(k);
	for (at = 0; at < k->n && claimant_cmp(&k->v[at], &cl) < 0; at++)
		;
	memmove(k->v + at + 1, k->v + at, (k->n - at) * sizeof(Claimant));
	k->v[at] = cl;
	k->n++;
	return note_change(affected, before, winner_of(k), s->svc);
}

static int key_del(ServiceClaims *c, const char *key, SvcRec *s, char ***affected) {
	KeyRec *k = key_find(c, key);
	const char *before = winner_of(k);
	int r;

	if (!k)
		return 0;
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].svc == s->svc) {
			memmove(k->v + i, k->v + i + 1, (k->n - i - 1) * sizeof(Claimant));
			k->n--;
			break;
		}
	/* before may be s->svc (still alive here): compare before freeing anything */
	r = note_change(affected, before, winner_of(k), s->svc);
	if (k->n == 0) {
		KeyRec **p = &c->keys[hash(key) % c->n_key_buckets];

		while (*p != k)
			p = &(*p)->next;
		*p = k->next;
		free(k->key);
		free(k->v);
		free(k);
		c->n_keys--;
	}
	return r;
}

int service_claims_set(ServiceClaims *c, const char *svc, int64_t created, char *const *keys, size_t n,
		       char ***affected) {
	SvcRec *s = svc_find(c, svc);
	char **copy = NULL;
	size_t i = 0, j = 0;
	int r = 0;

	if (!s && n == 0)
		return 0;
	if (!s) {
		s = calloc(1, sizeof(SvcRec));
		if (!s || !(s->svc = strdup(svc))) {
			free(s);
			return -ENOMEM;
		}
		s->created = created;
		s->next = c->svcs[hash(svc) % c->n_svc_buckets];
		c->svcs[hash(svc) % c->n_svc_buckets] = s;
		c->n_svcs++;
		svcs_grow(c);
	}
	if (s->created != created) {
		/* its rank changed: claim everything anew */
		for (size_t k = 0; k < s->n_keys && r >= 0; k++)
			r = key_del(c, s->keys[k], s, affected);
		s->keys = strv_free(s->keys);
		s->n_keys = 0;
		s->created = created;
	}
	if (r < 0)
		return r;
	if (n > 0) {
		copy = calloc(n + 1, sizeof(char *));
		if (!copy)
			return -ENOMEM;
		for (size_t k = 0; k < n; k++)
			if (!(copy[k] = strdup(keys[k]))) {
				strv_free(copy);
				return -ENOMEM;
			}
	}
	/* merge the two sorted lists: drop what went, add what came */
	while ((i < s->n_keys || j < n) && r >= 0) {
		int cmp = i == s->n_keys ? 1 : j == n ? -1 : strcmp(s->keys[i], keys[j]);

		if (cmp < 0)
			r = key_del(c, s->keys[i++], s, affected);
		else if (cmp > 0)
			r = key_add(c, keys[j++], s, affected);
		else
			i++, j++;
	}
	if (r < 0) {
		strv_free(copy);
		return r;
	}
	strv_free(s->keys);
	s->keys = copy;
	s->n_keys = n;
	if (n == 0) {
		SvcRec **p = &c->svcs[hash(svc) % c->n_svc_buckets];

		while (*p != s)
			p = &(*p)->next;
		*p = s->next;
		free(s->svc);
		free(s);
		c->n_svcs--;
	}
	return 0;
}

const char *service_claims_winner(const ServiceClaims *c, const char *key) {
	return winner_of(key_find(c, key));
}

bool service_claims_wins(const ServiceClaims *c, const char *svc, const char *key) {
	const char *w = service_claims_winner(c, key);

	return !w || streq(w, svc);
}
