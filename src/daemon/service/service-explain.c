/* SPDX-License-Identifier: Apache-2.0 */
/* `weft service explain`: a destination explained from the Service agent's programmed units
 * (service-explain.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/policy/policy-explain.h"
#include "daemon/service/service-agent-internal.h"
#include "daemon/service/service-explain.h"
#include "daemon/status-server.h"

/* ---- reading a unit ---- */

typedef struct EpRef {
	IpAddr addr;
	uint16_t port;
} EpRef;

typedef struct EpList {
	EpRef *v;
	size_t n;
	bool oom;
} EpList;

static void eps_add(EpList *l, const IpAddr *a, uint16_t port) {
	EpRef *nv;

	for (size_t i = 0; i < l->n; i++)
		if (ip_addr_equal(&l->v[i].addr, a) && l->v[i].port == port)
			return;
	nv = reallocarray(l->v, l->n + 1, sizeof(EpRef));
	if (!nv) {
		l->oom = true;
		return;
	}
	l->v = nv;
	l->v[l->n++] = (EpRef) { .addr = *a, .port = port };
}

static bool eps_has(const EpList *l, const IpAddr *a, uint16_t port) {
	for (size_t i = 0; i < l->n; i++)
		if (ip_addr_equal(&l->v[i].addr, a) && l->v[i].port == port)
			return true;
	return false;
}

static const char *unit_value(const ServiceUnit *u, const char *map, const char *key) {
	for (size_t i = 0; u && i < u->n_elems; i++)
		if (streq(u->elems[i].map, map) && streq(u->elems[i].key, key))
			return u->elems[i].value;
	return NULL;
}

/* "10.244.1.5 . 8080" */
static bool parse_addr_dot_port(const char *s, IpAddr *a, uint16_t *port) {
	char ip[IP_ADDR_STRLEN + 1];
	unsigned p;

	if (sscanf(s, "%46s . %u", ip, &p) != 2 || p == 0 || p > 65535 || ip_addr_parse(ip, a) < 0)
		return false;
	*port = (uint16_t) p;
	return true;
}

/* "10.244.1.5:8080 ..." or "[fd00::5]:8080 ..." */
static bool parse_addr_colon_port(const char *s, IpAddr *a, uint16_t *port) {
	char ip[IP_ADDR_STRLEN + 1];
	const char *end;
	unsigned p;
	size_t n;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end || end[1] != ':')
			return false;
		s++;
	} else {
		end = strchr(s, ':');
		if (!end)
			return false;
	}
	n = (size_t) (end - s);
	if (n == 0 || n >= sizeof(ip))
		return false;
	memcpy(ip, s, n);
	ip[n] = 0;
	if (sscanf(end + (*end == ']' ? 2 : 1), "%u", &p) != 1 || p == 0 || p > 65535 || ip_addr_parse(ip, a) < 0)
		return false;
	*port = (uint16_t) p;
	return true;
}

/* The endpoints chain `name` of u may DNAT to (its single dnat, its range of an svc-eps map, or its
 * endpoint chains); *aff: the affinity timeout its rules consult (0: none). */
static void chain_endpoints(const ServiceUnit *u, const char *name, EpList *l, uint32_t *aff, unsigned depth) {
	const SvcChain *c = service_unit_chain(u, name);
	const char *p;

	if (!c || !c->rules || depth > 2)
		return;
	for (p = c->rules; *p;) {
		const char *nl = strchrnul(p, '\n');
		_cleanup_free_ char *line = strndup(p, (size_t) (nl - p));
		const char *d, *g;

		p = *nl ? nl + 1 : nl;
		if (!line) {
			l->oom = true;
			return;
		}
		if ((d = strstr(line, " dnat ip")) && (d = strstr(d, " to "))) {
			size_t k;
			unsigned first;
			char map[64];
			IpAddr a;
			uint16_t port;

			d += 4;
			if (sscanf(d, "numgen random mod %zu offset %u map @%63s", &k, &first, map) == 3) {
				for (size_t i = 0; i < k; i++) {
					char key[16];
					const char *v;

					snprintf(key, sizeof(key), "%u", first + (unsigned) i);
					v = unit_value(u, map, key);
					if (v && parse_addr_dot_port(v, &a, &port))
						eps_add(l, &a, port);
				}
			} else if (parse_addr_colon_port(d, &a, &port))
				eps_add(l, &a, port);
			continue;
		}
		if ((g = strstr(line, "saddr @"))) { /* affinity: "saddr @<endpoint chain>/aff<timeout> goto ..." */
			_cleanup_free_ char *set = strndup(g + 7, strcspn(g + 7, " "));
			const char *t = set ? strrchr(set, '/') : NULL;

			if (aff && t && startswith(t, "/aff"))
				*aff = (uint32_t) strtoul(t + 4, NULL, 10);
			continue;
		}
		if ((g = strstr(line, "goto "))) {
			_cleanup_free_ char *target = strndup(g + 5, strcspn(g + 5, " "));

			if (!target) {
				l->oom = true;
				return;
			}
			if (strstr(target, "/ep/"))
				chain_endpoints(u, target, l, NULL, depth + 1);
		}
	}
}

/* ---- the paths of one entry ---- */

typedef enum Client {
	CLIENT_ANY, /* a ClusterIP: pods and nodes alike */
	CLIENT_OUTSIDE,
	CLIENT_POD,
	CLIENT_NODE,
} Client;

static const char *client_name(Client c) {
	switch (c) {
	case CLIENT_ANY: return "every client";
	case CLIENT_OUTSIDE: return "clients outside the cluster";
	case CLIENT_POD: return "pods";
	case CLIENT_NODE: return "this node itself";
	}
	return "?";
}

typedef enum Verdict {
	VERDICT_FORWARD,
	VERDICT_REJECT,
	VERDICT_DROP,
} Verdict;

typedef struct Path {
	Client client;
	Verdict verdict;
	bool masq, local_only;
	const char *why; /* the masquerade's or the drop's reason */
	EpList eps;
	uint32_t aff;
} Path;

typedef struct Entry {
	const ServiceExplainEntry *e;
	const KubeServicePort *sp;
	ServiceAddrUse use;
	int family;
	Path paths[3];
	size_t n_paths;
	bool programmed;
	char *refused; /* the logged refusal (reason) */
	bool logged;   /* refused as weftd logged and counted it */
} Entry;

static void entry_done(Entry *x) {
	for (size_t i = 0; i < x->n_paths; i++)
		free(x->paths[i].eps.v);
	free(x->refused);
}

static Path *path_add(Entry *x, Client c) {
	Path *p = &x->paths[x->n_paths++];

	*p = (Path) { .client = c };
	return p;
}

/* A choosing chain's path: forwarded to its endpoints */
static void path_chain(Path *p, const ServiceUnit *u, const char *chain) {
	p->verdict = VERDICT_FORWARD;
	chain_endpoints(u, chain, &p->eps, &p->aff, 0);
}

/* external traffic's <base>/ext chain, rule by rule (service-compile.c external_rules()) */
static void read_ext(Entry *x, const ServiceUnit *u, const char *ext) {
	const SvcChain *c = service_unit_chain(u, ext);
	const char *p;

	if (!c || !c->rules)
		return;
	for (p = c->rules; *p;) {
		const char *nl = strchrnul(p, '\n');
		_cleanup_free_ char *line = strndup(p, (size_t) (nl - p));
		_cleanup_free_ char *target = NULL;
		const char *g;
		Path *path;

		p = *nl ? nl + 1 : nl;
		if (!line || x->n_paths >= ELEMENTSOF(x->paths))
			return;
		g = strstr(line, "goto ");
		if (g && !(target = strndup(g + 5, strcspn(g + 5, " "))))
			return;
		if (startswith(line, "meta mark set")) { /* Cluster: every client */
			path = path_add(x, CLIENT_ANY);
			path->masq = true;
			path->why = "external traffic with externalTrafficPolicy Cluster: the reply must come back "
				    "through this node";
			path_chain(path, u, target);
		} else if ((startswith(line, "ip saddr ") || startswith(line, "ip6 saddr ")) && g) {
			/* Local: pods short-circuit (one rule per pod network of the family) */
			bool seen = false;

			for (size_t i = 0; i < x->n_paths; i++)
				seen |= x->paths[i].client == CLIENT_POD;
			if (seen)
				continue;
			path = path_add(x, CLIENT_POD);
			path->why = "externalTrafficPolicy Local: pods reach every endpoint (kube-proxy's "
				    "short-circuit), their source kept";
			path_chain(path, u, target);
		} else if (startswith(line, "fib saddr type local")) {
			path = path_add(x, CLIENT_NODE);
			path->masq = true;
			path->why = "externalTrafficPolicy Local, from this node itself: masqueraded so the reply "
				    "comes back through it";
			path_chain(path, u, target);
		} else if (startswith(line, "goto ")) {
			path = path_add(x, CLIENT_OUTSIDE);
			path->local_only = true;
			path->why = "externalTrafficPolicy Local keeps the client's source";
			path_chain(path, u, target);
		} else if (startswith(line, "drop")) {
			path = path_add(x, CLIENT_OUTSIDE);
			path->local_only = true;
			path->verdict = VERDICT_DROP;
			path->why = "externalTrafficPolicy Local and no endpoint on this node (the client's source "
				    "is kept, so only a local endpoint could answer it)";
		}
	}
}

static const char *lower_proto(KubeProtocol p) {
	return p == KUBE_PROTO_UDP ? "udp" : p == KUBE_PROTO_SCTP ? "sctp" : "tcp";
}

/* The refusal weftd logged for this address and port of Service key (service-build.c admit()). */
static char *find_refusal(const ServiceExplainInput *in, const char *key, ServiceAddrUse use, const IpAddr *ip,
			  KubeProtocol proto, uint16_t port) {
	char s[IP_ADDR_STRLEN] = "";
	_cleanup_free_ char *prefix = NULL;

	if (ip)
		ip_addr_to_string(ip, s);
	prefix = strdup_printf("%s: %s %s%s%s/%u refused: ", key, service_addr_use_to_string(use), s, ip ? " " : "",
			       kube_protocol_to_string(proto), port);
	if (!prefix)
		return NULL;
	for (size_t i = 0; i < in->n_refusals; i++)
		if (startswith(in->refusals[i], prefix))
			return strdup(in->refusals[i] + strlen(prefix));
	return NULL;
}

/* Reads how the unit programs one entry: its map element, then its chains. */
static int entry_read(const ServiceExplainInput *in, Entry *x, const IpAddr *dest) {
	const KubeService *svc = x->e->svc;
	const ServiceUnit *u = x->e->unit;
	bool v4 = x->family == AF_INET, np = x->use == SERVICE_ADDR_NODE_PORT;
	_cleanup_free_ char *key = NULL, *skey = strdup_printf("%s/%s", svc->meta.namespace, svc->meta.name);
	const char *val, *lp = lower_proto(x->sp->protocol);
	char a[IP_ADDR_STRLEN];

	if (!skey)
		return -ENOMEM;
	ip_addr_to_string(dest, a);
	key = np ? strdup_printf("%s . %u", lp, x->sp->node_port) : strdup_printf("%s . %s . %u", a, lp, x->sp->port);
	if (!key)
		return -ENOMEM;
	val = unit_value(u, np ? (v4 ? "svc-nodeports4" : "svc-nodeports6") : (v4 ? "svc-ips4" : "svc-ips6"), key);
	if (!val)
		val = unit_value(u,
				 np ? (v4 ? "svc-noep-nodeports4" : "svc-noep-nodeports6")
				    : (v4 ? "svc-noep4" : "svc-noep6"),
				 key);
	if (!val) {
		x->refused = find_refusal(in, skey, x->use, np ? NULL : dest, x->sp->protocol,
					  np ? x->sp->node_port : x->sp->port);
		x->logged = x->refused;
		if (!x->refused)
			x->refused = strdup(
					x->e->quarantined
							? "nftables refused the Service's objects: quarantined, retried "
							  "when it changes and every 30 s"
					: !u ? "not programmed yet (the Service agent has not synced it)"
					     : "not programmed (no map element; see weftd's log)");
		return x->refused ? 0 : -ENOMEM;
	}
	x->programmed = true;
	if (streq(val, "goto svc-reject") || streq(val, "drop")) {
		Path *p = path_add(x, x->use == SERVICE_ADDR_CLUSTER_IP ? CLIENT_ANY : CLIENT_ANY);

		p->verdict = streq(val, "drop") ? VERDICT_DROP : VERDICT_REJECT;
		p->local_only = x->use == SERVICE_ADDR_CLUSTER_IP && svc->internal_traffic_local;
		p->why = p->verdict == VERDICT_DROP ? "endpoints exist, but none this node may use "
						      "(internalTrafficPolicy Local: none on this node)"
						    : "no usable endpoint";
		return 0;
	}
	if (!startswith(val, "goto "))
		return 0;
	val += 5;
	if (endswith(val, "/ext"))
		read_ext(x, u, val);
	else {
		Path *p = path_add(x, CLIENT_ANY);

		p->local_only = svc->internal_traffic_local;
		p->why = "a connection to a ClusterIP keeps its source";
		path_chain(p, u, val);
	}
	for (size_t i = 0; i < x->n_paths; i++)
		if (x->paths[i].eps.oom)
			return -ENOMEM;
	return 0;
}

/* ---- the endpoints of the slices, judged as service-compile.c gather()/select_eps() judge them ---- */

typedef struct SliceEp {
	const KubeEndpoint *ep;
	uint16_t port;
	int cls; /* 0 ready, 1 serving and terminating, -1 neither */
	ServiceRejectReason refused;
	bool local;
} SliceEp;

static size_t slice_eps(const ServiceExplainInput *in, const Entry *x, SliceEp **ret, size_t *ret_other) {
	uint8_t at = x->family == AF_INET ? KUBE_ADDRESS_IPV4 : KUBE_ADDRESS_IPV6;
	SliceEp *v = NULL;
	size_t n = 0, other = 0;

	for (size_t s = 0; s < x->e->n_slices; s++) {
		const KubeEndpointSlice *sl = x->e->slices[s];
		uint16_t port = 0;

		for (size_t p = 0; p < sl->n_ports; p++)
			if (sl->ports[p].protocol == x->sp->protocol && streq_ptr(sl->ports[p].name, x->sp->name)) {
				port = sl->ports[p].port;
				break;
			}
		if (port == 0)
			continue;
		if (sl->address_type != at) {
			other += sl->n_endpoints;
			continue;
		}
		for (size_t e = 0; e < sl->n_endpoints; e++) {
			const KubeEndpoint *ep = &sl->endpoints[e];
			SliceEp *nv;

			if (ep->n_addresses == 0 || ep->addresses[0].family != x->family)
				continue;
			nv = reallocarray(v, n + 1, sizeof(SliceEp));
			if (!nv)
				break;
			v = nv;
			v[n++] = (SliceEp) {
				.ep = ep,
				.port = port,
				.cls = ep->ready && !ep->terminating    ? 0
				       : ep->serving && ep->terminating ? 1
									: -1,
				.refused = in->policy ? service_admission_check_endpoint(in->policy, x->e->svc,
											 &ep->addresses[0])
						      : SERVICE_ADMIT,
				.local = ep->node_name && in->node && streq(ep->node_name, in->node),
			};
		}
	}
	*ret = v;
	*ret_other = other;
	return n;
}

/* ---- the report ---- */

static bool in_prefixes(const IpPrefix *v, size_t n, const IpAddr *a) {
	for (size_t i = 0; i < n; i++)
		if (ip_prefix_contains(&v[i], a))
			return true;
	return false;
}

static bool in_addrs(const IpAddr *v, size_t n, const IpAddr *a) {
	for (size_t i = 0; i < n; i++)
		if (ip_addr_equal(&v[i], a))
			return true;
	return false;
}

static Client client_of(const ServiceExplainInput *in) {
	if (!in->from)
		return CLIENT_OUTSIDE;
	if (in->policy && in_prefixes(in->policy->pod_networks, in->policy->n_pod_networks, in->from))
		return CLIENT_POD;
	if (in->policy && in_addrs(in->policy->node_addrs, in->policy->n_node_addrs, in->from))
		return CLIENT_NODE;
	return CLIENT_OUTSIDE;
}

/* The path the client (or, without one, a client outside the cluster) takes. */
static const Path *primary_path(const ServiceExplainInput *in, const Entry *x) {
	Client c = client_of(in);

	for (size_t i = 0; i < x->n_paths; i++)
		if (x->paths[i].client == c)
			return &x->paths[i];
	for (size_t i = 0; i < x->n_paths; i++)
		if (x->paths[i].client == CLIENT_ANY || x->paths[i].client == CLIENT_OUTSIDE)
			return &x->paths[i];
	return x->n_paths ? &x->paths[0] : NULL;
}

static void put_ep(FILE *f, const IpAddr *a, uint16_t port) {
	char s[IP_ADDR_STRLEN];

	ip_addr_to_string(a, s);
	fprintf(f, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", s, port);
}

static const char *use_title(ServiceAddrUse u) {
	switch (u) {
	case SERVICE_ADDR_CLUSTER_IP: return "ClusterIP";
	case SERVICE_ADDR_EXTERNAL_IP: return "externalIP";
	case SERVICE_ADDR_LB_IP: return "LoadBalancer IP";
	case SERVICE_ADDR_NODE_PORT: return "NodePort";
	default: return "address";
	}
}

static void put_path(FILE *f, const Path *p, const KubeServicePort *sp, bool primary) {
	fprintf(f, "  %s%s: ", primary ? "verdict" : "from ", primary ? "" : client_name(p->client));
	switch (p->verdict) {
	case VERDICT_FORWARD:
		if (p->eps.n == 0) {
			fputs("forwarded (no endpoint read back from the rules)\n", f);
			return;
		}
		fprintf(f, "forwarded to %s", p->eps.n == 1 ? "its one endpoint" : "one of");
		for (size_t i = 0; i < p->eps.n; i++) {
			fputs(i ? ", " : " ", f);
			put_ep(f, &p->eps.v[i].addr, p->eps.v[i].port);
		}
		fprintf(f, "%s\n", p->eps.n > 1 ? " at random" : "");
		break;
	case VERDICT_REJECT:
		fprintf(f, "rejected (%s: %s)\n", p->why,
			sp->protocol == KUBE_PROTO_TCP ? "TCP reset" : "ICMP port unreachable");
		break;
	case VERDICT_DROP: fprintf(f, "dropped (%s)\n", p->why); break;
	}
}

static void put_policy_dir(FILE *f, const char *dir, const PolicyDirVerdict *v) {
	fprintf(f, "%s ", dir);
	if (!v->pod)
		fputs("(not a pod: nothing applies)", f);
	else if (!v->isolated)
		fprintf(f, "%s/%s not isolated", v->pod->meta.namespace, v->pod->meta.name);
	else if (v->allowed)
		fprintf(f, "allowed by %s/%s rule %zu", v->policy ? v->policy->meta.namespace : "?",
			v->policy ? v->policy->meta.name : "?", v->rule + 1);
	else
		fprintf(f, "%s/%s isolated, no rule allows", v->pod->meta.namespace, v->pod->meta.name);
}

static int explain_entry(const ServiceExplainInput *in, FILE *f, Entry *x, const IpAddr *dest) {
	const KubeService *svc = x->e->svc;
	const KubeServicePort *sp = x->sp;
	const Path *pp;
	_cleanup_free_ SliceEp *eps = NULL;
	size_t n_eps, other;
	char d[IP_ADDR_STRLEN];
	bool hairpin = false;
	int r;

	r = entry_read(in, x, dest);
	if (r < 0)
		return r;
	ip_addr_to_string(dest, d);
	fprintf(f, x->family == AF_INET6 ? "[%s]:%u/%s: " : "%s:%u/%s: ", d,
		x->use == SERVICE_ADDR_NODE_PORT ? sp->node_port : sp->port, kube_protocol_to_string(sp->protocol));
	fprintf(f, "%s of Service %s/%s, port %s%s%s%u/%s", use_title(x->use), svc->meta.namespace, svc->meta.name,
		sp->name ? "\"" : "", sp->name ?: "", sp->name ? "\" " : "", sp->port,
		kube_protocol_to_string(sp->protocol));
	if (x->use == SERVICE_ADDR_NODE_PORT)
		fprintf(f, " (nodePort %u on a node address)", sp->node_port);
	fputc('\n', f);
	fprintf(f, "  node: %s\n", in->node ?: "?");
	if (!x->programmed) {
		fprintf(f, "  verdict: refused: weft does not program this %s: %s\n", use_title(x->use), x->refused);
		if (x->logged)
			fprintf(f, "  (logged by weftd, counted in weft_service_rejected_total{reason=\"%.*s\"})\n",
				(int) strcspn(x->refused, ","), x->refused);
		fputs("  (no rule of weft's answers for it: the packet follows the routes, and gets no answer from "
		      "this Service)\n",
		      f);
		return 0;
	}
	if (x->use == SERVICE_ADDR_CLUSTER_IP)
		fprintf(f, "  traffic policy: internalTrafficPolicy %s\n",
			svc->internal_traffic_local ? "Local" : "Cluster");
	else
		fprintf(f, "  traffic policy: externalTrafficPolicy %s (internalTrafficPolicy %s)\n",
			svc->external_traffic_local ? "Local" : "Cluster",
			svc->internal_traffic_local ? "Local" : "Cluster");
	pp = primary_path(in, x);
	if (pp && pp->aff > 0)
		fprintf(f,
			"  session affinity: ClientIP, timeout %" PRIu32 " s (a client goes back to the endpoint it "
			"reached last within that time)\n",
			pp->aff);
	else
		fprintf(f, "  session affinity: %s\n",
			svc->session_affinity_client_ip ? "ClientIP (not programmed on this path)" : "None");
	if (x->use == SERVICE_ADDR_LB_IP && svc->n_source_ranges > 0) {
		bool ok = false;

		fputs("  loadBalancerSourceRanges:", f);
		for (size_t i = 0; i < svc->n_source_ranges; i++) {
			char p[IP_PREFIX_STRLEN];

			fprintf(f, " %s", ip_prefix_to_string(&svc->source_ranges[i], p));
			ok |= in->from && ip_prefix_contains(&svc->source_ranges[i], in->from);
		}
		fprintf(f, "; other sources are dropped%s\n",
			!in->from ? ""
			: ok      ? " (the client is inside one)"
				  : " (the client is outside them: dropped)");
	}
	if (pp)
		put_path(f, pp, sp, true);
	for (size_t i = 0; i < x->n_paths; i++)
		if (&x->paths[i] != pp)
			put_path(f, &x->paths[i], sp, false);
	if (pp && pp->verdict == VERDICT_FORWARD) {
		for (size_t i = 0; in->from && i < pp->eps.n; i++)
			hairpin |= ip_addr_equal(&pp->eps.v[i].addr, in->from);
		if (hairpin)
			fputs("  masquerade: yes (hairpin: the client is one of the endpoints, it must not answer "
			      "itself directly)\n",
			      f);
		else
			fprintf(f, "  masquerade: %s (%s)\n", pp->masq ? "yes" : "no", pp->why);
	}
	/* every endpoint of the slices: chosen, or why not */
	n_eps = slice_eps(in, x, &eps, &other);
	for (size_t i = 0; i < n_eps; i++) {
		const SliceEp *e = &eps[i];
		bool dup = false, ready_exists = false;
		const char *node = e->ep->node_name;

		for (size_t k = 0; k < i && !dup; k++)
			dup = ip_addr_equal(&eps[k].ep->addresses[0], &e->ep->addresses[0]) && eps[k].port == e->port;
		if (dup)
			continue;
		fputs("  endpoint ", f);
		put_ep(f, &e->ep->addresses[0], e->port);
		fprintf(f, " (node %s): ", node ?: "none");
		if (pp && pp->verdict == VERDICT_FORWARD && eps_has(&pp->eps, &e->ep->addresses[0], e->port)) {
			fprintf(f, "chosen%s\n",
				e->cls == 1 ? " (terminating but serving: no ready endpoint is left, as kube-proxy does)"
					    : "");
			continue;
		}
		fputs("not chosen: ", f);
		for (size_t k = 0; k < n_eps; k++)
			ready_exists |= eps[k].cls == 0 && eps[k].refused == SERVICE_ADMIT &&
					(!pp || !pp->local_only || eps[k].local);
		if (e->cls < 0)
			fputs(e->ep->terminating ? "terminating and not serving\n" : "not ready\n", f);
		else if (e->refused != SERVICE_ADMIT)
			fprintf(f, "refused by the address policy: %s\n", service_reject_reason_to_string(e->refused));
		else if (pp && pp->local_only && !e->local)
			fprintf(f, "not on this node (%s), and the %s traffic policy is Local\n", in->node ?: "?",
				x->use == SERVICE_ADDR_CLUSTER_IP ? "internal" : "external");
		else if (e->cls == 1 && ready_exists)
			fputs("terminating: ready endpoints exist\n", f);
		else if (pp && pp->verdict != VERDICT_FORWARD)
			fputs("this path does not forward\n", f);
		else
			fputs("not in the programmed rules (weftd has not synced this change yet)\n", f);
	}
	if (other > 0)
		fprintf(f, "  %zu endpoint(s) of the other address family: served by the Service's %s entries\n", other,
			x->family == AF_INET ? "IPv6" : "IPv4");
	if (n_eps == 0 && other == 0)
		fputs("  endpoints: none in the Service's EndpointSlices\n", f);
	/* NetworkPolicy: the client to each endpoint it may reach (after the DNAT) */
	if (in->from && in->np && pp && pp->verdict == VERDICT_FORWARD)
		for (size_t i = 0; i < pp->eps.n; i++) {
			PolicyDirVerdict eg, ing;
			char fs[IP_ADDR_STRLEN];

			r = policy_verdict(in->np, in->from, &pp->eps.v[i].addr, pp->eps.v[i].port, sp->protocol, &eg,
					   &ing);
			if (r < 0)
				return r;
			fprintf(f, "  policy: %s -> ", in->from_name ?: ip_addr_to_string(in->from, fs));
			put_ep(f, &pp->eps.v[i].addr, pp->eps.v[i].port);
			fprintf(f, "/%s: %s (", kube_protocol_to_string(sp->protocol),
				eg.allowed && ing.allowed ? "ALLOW" : "DENY");
			put_policy_dir(f, "egress", &eg);
			fputs("; ", f);
			put_policy_dir(f, "ingress", &ing);
			fputs(")\n", f);
		}
	return 0;
}

static bool has_addr(const IpAddr *v, size_t n, const IpAddr *a) {
	return in_addrs(v, n, a);
}

int service_explain(const ServiceExplainInput *in, const IpAddr *dest, uint16_t port, int proto, char **ret_text,
		    bool *ret_found) {
	_cleanup_free_ char *buf = NULL;
	size_t size = 0, n_found = 0, n_programmed = 0;
	bool node_addr = in->policy && in_addrs(in->policy->node_addrs, in->policy->n_node_addrs, dest);
	bool known_cip = false;
	char d[IP_ADDR_STRLEN];
	FILE *f;
	int r = 0;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	ip_addr_to_string(dest, d);
	for (size_t s = 0; s < in->n_services && r >= 0; s++) {
		const ServiceExplainEntry *e = &in->services[s];
		const KubeService *svc = e->svc;
		ServiceAddrUse use;
		bool fam_ok = false;

		if (svc->headless || svc->type == KUBE_SERVICE_EXTERNAL_NAME)
			continue;
		for (size_t i = 0; i < svc->n_cluster_ips; i++)
			fam_ok |= svc->cluster_ips[i].family == dest->family;
		if (has_addr(svc->cluster_ips, svc->n_cluster_ips, dest)) {
			use = SERVICE_ADDR_CLUSTER_IP;
			/* in svc-cluster-ips: its undefined ports are rejected (only an admitted one is) */
			known_cip |= unit_value(e->unit, dest->family == AF_INET ? SVC_CLUSTER_IPS4 : SVC_CLUSTER_IPS6,
						d) != NULL;
		} else if (has_addr(svc->external_ips, svc->n_external_ips, dest))
			use = SERVICE_ADDR_EXTERNAL_IP;
		else if (svc->type == KUBE_SERVICE_LOAD_BALANCER && has_addr(svc->lb_ips, svc->n_lb_ips, dest))
			use = SERVICE_ADDR_LB_IP;
		else if (has_addr(svc->lb_proxy_ips, svc->n_lb_proxy_ips, dest)) {
			fprintf(f,
				"%s: a LoadBalancer ingress IP of Service %s/%s with ipMode Proxy: the nodes do not "
				"DNAT it, the load balancer proxies it\n",
				d, svc->meta.namespace, svc->meta.name);
			continue;
		} else if (node_addr &&
			   (svc->type == KUBE_SERVICE_NODE_PORT || svc->type == KUBE_SERVICE_LOAD_BALANCER))
			use = SERVICE_ADDR_NODE_PORT;
		else
			continue;
		if (!fam_ok) {
			fprintf(f, "%s: Service %s/%s has no ClusterIP of this family: nothing is programmed for it\n",
				d, svc->meta.namespace, svc->meta.name);
			continue;
		}
		for (size_t p = 0; p < svc->n_ports && r >= 0; p++) {
			const KubeServicePort *sp = &svc->ports[p];
			_cleanup_(entry_done) Entry x = { .e = e, .sp = sp, .use = use, .family = dest->family };

			if (proto >= 0 && sp->protocol != proto)
				continue;
			if (use == SERVICE_ADDR_NODE_PORT ? (sp->node_port == 0 || (port && sp->node_port != port))
							  : (port && sp->port != port))
				continue;
			if (n_found++ > 0)
				fputc('\n', f);
			r = explain_entry(in, f, &x, dest);
			n_programmed += x.programmed;
		}
	}
	if (r >= 0 && n_found == 0) {
		fprintf(f, "%s%s%u%s%s: no Service answers for it", d, port ? ":" : "", port, proto >= 0 ? "/" : "",
			proto >= 0 ? kube_protocol_to_string(proto) : "");
		if (!port)
			fputs(" (no Service has this address)", f);
		fputc('\n', f);
		if (in_prefixes(in->service_ranges, in->n_service_ranges, dest))
			fprintf(f, "  inside --service-cluster-ip-range: the datapath %s\n",
				known_cip ? "rejects it (a ClusterIP on a port it does not define: TCP reset / ICMP port "
					    "unreachable)"
					  : "drops it (no Service holds this address), so nothing follows the range's "
					    "route out");
		else if (node_addr)
			fputs("  a node address: no NodePort matches, the node itself answers (or not)\n", f);
		else
			fputs("  weft does not touch it: the packet follows the routes\n", f);
	}
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	if (r < 0)
		return r;
	*ret_text = TAKE_PTR(buf);
	*ret_found = n_programmed > 0;
	return 0;
}

int service_explain_parse_dest(const char *s, IpAddr *ret_addr, uint16_t *ret_port, int *ret_proto) {
	_cleanup_free_ char *c = strdup(s ?: "");
	char *slash, *addr = c, *port = NULL;
	unsigned p = 0;
	int proto = -1;

	if (!c)
		return -ENOMEM;
	slash = strrchr(c, '/');
	if (slash) {
		*slash = 0;
		if (strcasecmp(slash + 1, "tcp") == 0)
			proto = KUBE_PROTO_TCP;
		else if (strcasecmp(slash + 1, "udp") == 0)
			proto = KUBE_PROTO_UDP;
		else if (strcasecmp(slash + 1, "sctp") == 0)
			proto = KUBE_PROTO_SCTP;
		else
			return -EINVAL;
	}
	if (c[0] == '[') {
		char *end = strchr(c, ']');

		if (!end || (end[1] && end[1] != ':'))
			return -EINVAL;
		*end = 0;
		addr = c + 1;
		if (end[1])
			port = end + 2;
	} else if (strchr(c, ':') == strrchr(c, ':') && strchr(c, ':')) {
		port = strchr(c, ':');
		*port++ = 0;
	}
	if (port) {
		char *e;
		unsigned long v = strtoul(port, &e, 10);

		if (!*port || *e || v == 0 || v > 65535)
			return -EINVAL;
		p = (unsigned) v;
	}
	if (ip_addr_parse(addr, ret_addr) < 0)
		return -EINVAL;
	*ret_port = (uint16_t) p;
	*ret_proto = proto;
	return 0;
}

/* ---- weftd's side: the agent's units, the cache's objects ---- */

/* ServiceModelInput.admit for another node's view: the policy and the claims, nothing reported */
static bool admit_quiet(void *userdata, ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol, uint16_t port) {
	void **ud = userdata;
	ServiceAgent *a = ud[0];
	const KubeService *svc = ud[1];
	const char *key = ud[2];
	ServiceRejectReason why;
	_cleanup_free_ char *ckey = NULL;

	if (use == SERVICE_ADDR_ENDPOINT)
		return service_admission_check_endpoint(&a->policy, svc, ip) == SERVICE_ADMIT;
	if (use == SERVICE_ADDR_NODE_PORT || use == SERVICE_ADDR_HEALTH_CHECK_NODE_PORT)
		why = service_admission_check_node_port(&a->policy, protocol, port);
	else
		why = service_admission_check_addr(&a->policy, svc, use, ip, protocol, port);
	if (why != SERVICE_ADMIT)
		return false;
	if (use != SERVICE_ADDR_CLUSTER_IP && ip) {
		for (size_t i = 0; i < svc->n_cluster_ips; i++)
			if (ip_addr_equal(&svc->cluster_ips[i], ip))
				return false;
	}
	ckey = ip ? service_claim_key_addr(ip, protocol, port) : service_claim_key_node_port(protocol, port);
	return ckey && service_claims_wins(a->claims, key, ckey);
}

static void slot_pool_freep(SvcSlotPool **p) {
	svc_slot_pool_free(*p);
}

typedef struct Built {
	ServiceExplainEntry *v;
	ServiceUnit **own; /* units built here (another node's view) */
	size_t n;
} Built;

static void built_done(Built *b) {
	for (size_t i = 0; i < b->n; i++) {
		free((void *) b->v[i].slices);
		if (b->own)
			service_unit_free(b->own[i]);
	}
	free(b->v);
	free(b->own);
}

static bool strv_has(char **l, const char *s) {
	for (size_t i = 0; l && l[i]; i++)
		if (streq(l[i], s))
			return true;
	return false;
}

int service_agent_explain(ServiceAgent *a, const char *query, int *ret_status, char **ret_body) {
	_cleanup_free_ char *dest_s = status_server_query_get(query, "dest"),
			    *from_s = status_server_query_get(query, "from"),
			    *node_s = status_server_query_get(query, "node"), *text = NULL;
	_cleanup_(built_done) Built b = {};
	_cleanup_free_ const char **refusals = NULL;
	_cleanup_(slot_pool_freep) SvcSlotPool *slots = NULL;
	ObjectVec svcs = {}, pods = {}, nss = {}, pols = {};
	IpAddr dest, from = {};
	uint16_t port;
	int proto, r;
	bool found, other_node = node_s && *node_s && !streq_ptr(node_s, a->cfg.node), have_from = false;
	const char *node = other_node ? node_s : a->cfg.node;

	if (!dest_s || service_explain_parse_dest(dest_s, &dest, &port, &proto) < 0) {
		*ret_status = 400;
		*ret_body = strdup("usage: /debug/service/explain?dest=IP[:PORT][/PROTO]|[IPv6]:PORT[/PROTO]"
				   "[&from=NS/POD|IP][&node=NODE]\n");
		return *ret_body ? 0 : -ENOMEM;
	}
	if (from_s && *from_s) {
		if (ip_addr_parse(from_s, &from) >= 0)
			have_from = true;
		else {
			char *slash = strchr(from_s, '/');
			const KubePod *pod = NULL;

			if (slash) {
				*slash = 0;
				pod = KUBE_POD(object_cache_get(a->cache, KUBE_KIND_POD, from_s, slash + 1));
				*slash = '/';
			}
			for (size_t i = 0; pod && i < pod->n_ips && !have_from; i++)
				if (pod->ips[i].family == dest.family) {
					from = pod->ips[i];
					have_from = true;
				}
			if (!have_from) {
				*ret_status = 404;
				*ret_body = strdup_printf("from: %s is not an IP, nor a pod (NAMESPACE/NAME) with an "
							  "address of the destination's family\n",
							  from_s);
				return *ret_body ? 0 : -ENOMEM;
			}
		}
	}
	if (other_node && svc_slot_pool_new(&slots) < 0)
		return -ENOMEM;
	object_cache_foreach(a->cache, KUBE_KIND_SERVICE, object_vec_append, &svcs);
	if (svcs.oom) {
		free(svcs.v);
		return -ENOMEM;
	}
	b.v = calloc(svcs.n + 1, sizeof(ServiceExplainEntry));
	b.own = other_node ? calloc(svcs.n + 1, sizeof(ServiceUnit *)) : NULL;
	if (!b.v || (other_node && !b.own)) {
		free(svcs.v);
		return -ENOMEM;
	}
	r = 0;
	for (size_t i = 0; i < svcs.n && r >= 0; i++) {
		const KubeService *svc = KUBE_SERVICE(svcs.v[i]);
		_cleanup_free_ char *key = strdup_printf("%s/%s", svc->meta.namespace, svc->meta.name);
		ObjectVec sl = {};
		bool found_unit;
		size_t k;

		if (!key) {
			r = -ENOMEM;
			break;
		}
		object_cache_foreach_slice_of_service(a->cache, svc->meta.namespace, svc->meta.name, object_vec_append,
						      &sl);
		b.v[b.n] = (ServiceExplainEntry) { .svc = svc,
						   .slices = (const KubeEndpointSlice *const *) sl.v,
						   .n_slices = sl.n,
						   .quarantined = strv_has(a->quarantined, key) };
		b.n++;
		if (sl.oom) {
			r = -ENOMEM;
			break;
		}
		if (other_node) {
			void *ud[3] = { a, (void *) svc, key };

			r = service_unit_build(&(ServiceModelInput) { .node = node,
								      .svc = svc,
								      .slices = b.v[b.n - 1].slices,
								      .n_slices = sl.n,
								      .pod_networks = a->policy.pod_networks,
								      .n_pod_networks = a->policy.n_pod_networks,
								      .slots = slots,
								      .admit = admit_quiet,
								      .admit_userdata = ud },
					       &b.own[b.n - 1]);
			b.v[b.n - 1].unit = b.own[b.n - 1];
			svc_slot_pool_reset(slots);
			continue;
		}
		k = service_agent_unit_find(a, key, &found_unit);
		b.v[b.n - 1].unit = found_unit ? a->units[k] : NULL;
	}
	free(svcs.v);
	if (r < 0)
		return r;
	refusals = calloc(a->n_reports + 1, sizeof(char *));
	if (!refusals)
		return -ENOMEM;
	for (size_t i = 0; i < a->n_reports; i++)
		refusals[i] = a->reports[i].line;
	if (have_from) {
		object_cache_foreach(a->cache, KUBE_KIND_POD, object_vec_append, &pods);
		object_cache_foreach(a->cache, KUBE_KIND_NAMESPACE, object_vec_append, &nss);
		object_cache_foreach(a->cache, KUBE_KIND_NETWORK_POLICY, object_vec_append, &pols);
	}
	if (pods.oom || nss.oom || pols.oom)
		r = -ENOMEM;
	else
		r = service_explain(
				&(ServiceExplainInput) {
						.node = node,
						.services = b.v,
						.n_services = b.n,
						.policy = &a->policy,
						.refusals = refusals,
						.n_refusals = a->n_reports,
						.service_ranges = a->cfg.service_ranges,
						.n_service_ranges = a->cfg.n_service_ranges,
						.np = have_from ? &(PolicyInput) { .node = node,
										   .pods = (const KubePod *const *)
													   pods.v,
										   .n_pods = pods.n,
										   .namespaces = (const KubeNamespace *const
														  *)
														 nss.v,
										   .n_namespaces = nss.n,
										   .policies = (const KubeNetworkPolicy
														*const *)
													       pols.v,
										   .n_policies = pols.n }
								: NULL,
						.from = have_from ? &from : NULL,
						.from_name = from_s,
				},
				&dest, port, proto, &text, &found);
	free(pods.v);
	free(nss.v);
	free(pols.v);
	if (r < 0)
		return r;
	*ret_status = found ? 200 : 404;
	*ret_body = TAKE_PTR(text);
	return 0;
}
