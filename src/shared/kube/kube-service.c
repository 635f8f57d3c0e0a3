/* SPDX-License-Identifier: Apache-2.0 */
/* Service decoder: type, cluster/external/LB IPs, ports, source ranges, traffic policies, affinity. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

void ko_service_free(KubeService *s, StringPool *pool) {
	for (size_t i = 0; i < s->n_ports; i++) {
		string_pool_unref(pool, s->ports[i].name);
		string_pool_unref(pool, s->ports[i].target_port.name);
	}
	free(s->ports);
	free(s->cluster_ips);
	free(s->external_ips);
	free(s->lb_ips);
	free(s->lb_proxy_ips);
	free(s->source_ranges);
	free(s->lb_request_error);
	free(s->lb_request_raw);
	free(s->resource_version);
	free(s->lb_condition.reason);
	free(s->lb_condition.message);
	string_pool_unref(pool, s->lb_class);
	string_pool_unref(pool, s->lb_sharing_key);
}

/* metadata.creationTimestamp (RFC 3339 in UTC, as the API server writes it: "2024-01-02T03:04:05Z")
 * as unix seconds; 0 if absent. */
static int parse_creation_timestamp(const json_t *md, int64_t *ret, DecodeError *err) {
	const char *s, *end;
	struct tm tm = {};

	if (ko_jstr(md, "creationTimestamp", &s) < 0)
		return decode_error(err, "metadata.creationTimestamp: not a string");
	if (!s) {
		*ret = 0;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end && *end == '.') /* fractional seconds (MicroTime): the order needs none */
		end += 1 + strspn(end + 1, "0123456789");
	if (!end || !streq(end, "Z"))
		return decode_error(err, "metadata.creationTimestamp: \"%.40s\" is not an RFC 3339 UTC time", s);
	*ret = (int64_t) timegm(&tm);
	/* an API server never wrote a time before 1970 or after 9999 (and the debug dump could not
	 * print it back the same) */
	if (*ret < 0 || *ret > INT64_C(253402300799))
		return decode_error(err, "metadata.creationTimestamp: \"%.40s\" is not between 1970 and 9999", s);
	return 0;
}

/* KubeService.created: the source's create revision if it gave one, else creationTimestamp. */
static int service_created(const json_t *j, KubeService *s, DecodeError *err) {
	const json_t *rev = ko_jget(j, KUBE_CREATE_REVISION_FIELD);

	if (rev) {
		if (!json_is_integer(rev) || json_integer_value(rev) < 0)
			return decode_error(err, "%s: not a revision", KUBE_CREATE_REVISION_FIELD);
		s->created = json_integer_value(rev);
		s->created_by_revision = true;
		return 0;
	}
	return parse_creation_timestamp(ko_jget(j, "metadata"), &s->created, err);
}

/* spec.loadBalancerSourceRanges: CIDRs (host bits allowed, as the API server allows them). */
static int service_source_ranges_parse(const json_t *spec, KubeService *s, DecodeError *err) {
	const json_t *a, *x;
	size_t i;

	if (ko_jarr(spec, "loadBalancerSourceRanges", &a) < 0)
		return decode_error(err, "spec.loadBalancerSourceRanges: not an array");
	if (ko_jlen(a) > KUBE_SERVICE_MAX_SOURCE_RANGES)
		return decode_error(err, "spec.loadBalancerSourceRanges: %zu entries, at most %d", ko_jlen(a),
				    KUBE_SERVICE_MAX_SOURCE_RANGES);
	if (ko_jlen(a) == 0)
		return 0;
	s->source_ranges = calloc(ko_jlen(a), sizeof(IpPrefix));
	if (!s->source_ranges)
		return -ENOMEM;
	json_array_foreach(a, i, x) {
		IpPrefix p;

		if (!json_is_string(x) || ip_prefix_parse(json_string_value(x), &p) < 0)
			return decode_error(err, "spec.loadBalancerSourceRanges[%zu]: \"%.64s\" is not a CIDR", i,
					    json_is_string(x) ? json_string_value(x) : "(not a string)");
		s->source_ranges[s->n_source_ranges++] = ip_prefix_mask(&p);
	}
	return 0;
}

static int service_ports_parse(const json_t *spec, StringPool *pool, KubeService *s, DecodeError *err) {
	const json_t *ports, *x;
	size_t i;
	int r;

	if (ko_jarr(spec, "ports", &ports) < 0)
		return decode_error(err, "spec.ports: not an array");
	if (ko_jlen(ports) > KUBE_SERVICE_MAX_PORTS)
		return decode_error(err, "spec.ports: %zu entries, at most %d", ko_jlen(ports), KUBE_SERVICE_MAX_PORTS);
	if (ko_jlen(ports) > 0 && !(s->ports = calloc(ko_jlen(ports), sizeof(KubeServicePort))))
		return -ENOMEM;
	json_array_foreach(ports, i, x) {
		KubeServicePort *e = &s->ports[i];
		const char *name;
		long long port, node_port;
		char p[64];

		s->n_ports++;
		ko_pathf(p, sizeof(p), "spec.ports[%zu]", i);
		if (!json_is_object(x))
			return decode_error(err, "%s: not an object", p);
		if (ko_jint(x, "port", 1, 65535, 0, &port) < 0 || port == 0)
			return decode_error(err, "%s.port: missing or not a port", p);
		if (ko_jint(x, "nodePort", 0, 65535, 0, &node_port) < 0)
			return decode_error(err, "%s.nodePort: not a port", p);
		if (ko_jstr(x, "name", &name) < 0 || (name && *name && !dns_label_valid(name)))
			return decode_error(err, "%s.name: not a valid port name", p);
		e->port = (uint16_t) port;
		e->node_port = (uint16_t) node_port;
		if (name && *name && !(e->name = string_pool_intern(pool, name)))
			return -ENOMEM;
		r = ko_parse_protocol(x, p, &e->protocol, err);
		if (r < 0)
			return r;
		ko_pathf(p, sizeof(p), "spec.ports[%zu].targetPort", i);
		r = ko_parse_port_ref(ko_jget(x, "targetPort"), p, pool, &e->target_port, err);
		if (r < 0)
			return r;
		if (!e->target_port.name && e->target_port.number == 0)
			e->target_port.number = e->port;
		/* as the API server: one port per name, per port . protocol and per nodePort . protocol
		 * (two of them would be two rules for one key, and which one wins would be chance) */
		for (size_t k = 0; k < i; k++) {
			const KubeServicePort *o = &s->ports[k];

			if (e->name && o->name == e->name) /* interned: equal strings are one pointer */
				return decode_error(err, "spec.ports[%zu].name: \"%s\" repeats spec.ports[%zu]", i,
						    e->name, k);
			if (o->port == e->port && o->protocol == e->protocol)
				return decode_error(err, "spec.ports[%zu]: port %u/%s repeats spec.ports[%zu]", i,
						    e->port, kube_protocol_to_string(e->protocol), k);
			if (e->node_port && o->node_port == e->node_port && o->protocol == e->protocol)
				return decode_error(err, "spec.ports[%zu].nodePort: %u/%s repeats spec.ports[%zu]", i,
						    e->node_port, kube_protocol_to_string(e->protocol), k);
		}
	}
	return 0;
}

/*
 * status.loadBalancer.ingress[]: the IPs (an entry given only by hostname, as some cloud load
 * balancers do, carries nothing to route), into lb_ips or, with ipMode Proxy, lb_proxy_ips.
 */
static int service_ingress_parse(const json_t *a, KubeService *v, DecodeError *err) {
	size_t n = 0, i;
	const json_t *x;

	json_array_foreach(a, i, x)
		if (ko_jget(x, "ip"))
			n++;
	if (n == 0)
		return 0;
	if (!(v->lb_ips = calloc(n, sizeof(IpAddr))) || !(v->lb_proxy_ips = calloc(n, sizeof(IpAddr))))
		return -ENOMEM;
	json_array_foreach(a, i, x) {
		const char *mode;
		IpAddr ip;
		char p[64];
		int r;

		if (!ko_jget(x, "ip"))
			continue;
		ko_pathf(p, sizeof(p), "status.loadBalancer.ingress[%zu].ip", i);
		r = ko_parse_ip(ko_jget(x, "ip"), p, &ip, err);
		if (r < 0)
			return r;
		if (ko_jstr(x, "ipMode", &mode) < 0 || (mode && !streq(mode, "VIP") && !streq(mode, "Proxy")))
			return decode_error(err, "status.loadBalancer.ingress[%zu].ipMode: not VIP or Proxy", i);
		if (mode && streq(mode, "Proxy"))
			v->lb_proxy_ips[v->n_lb_proxy_ips++] = ip;
		else
			v->lb_ips[v->n_lb_ips++] = ip;
	}
	return 0;
}

/*
 * status.conditions[] (metav1.Condition, at most KUBE_SERVICE_MAX_CONDITIONS): only the assigner's
 * own (KUBE_LB_CONDITION_TYPE) is kept. Other writers' entries are not looked into, and a malformed
 * entry of ours is taken as absent (the assigner rewrites it): a condition never refuses a Service.
 */
static int service_conditions_parse(const json_t *status, KubeService *v, DecodeError *err) {
	KubeLbCondition *c = &v->lb_condition;
	const json_t *a, *x;
	size_t i;

	if (ko_jarr(status, "conditions", &a) < 0)
		return decode_error(err, "status.conditions: not an array");
	if (ko_jlen(a) > KUBE_SERVICE_MAX_CONDITIONS)
		return decode_error(err, "status.conditions: %zu entries, at most %d", ko_jlen(a),
				    KUBE_SERVICE_MAX_CONDITIONS);
	json_array_foreach(a, i, x) {
		const char *type, *st, *reason, *message, *ltt;
		long long gen;

		if (ko_jstr(x, "type", &type) < 0 || !type || !streq(type, KUBE_LB_CONDITION_TYPE))
			continue;
		if (c->present || c->bad) { /* a second entry of ours */
			c->bad = true;
			continue;
		}
		c->bad = true; /* until it is found well-formed */
		if (ko_jstr(x, "status", &st) < 0 || !st || (!streq(st, "True") && !streq(st, "False")) ||
		    ko_jstr(x, "reason", &reason) < 0 || !reason || ko_jstr(x, "message", &message) < 0 || !message ||
		    ko_jstr(x, "lastTransitionTime", &ltt) < 0 ||
		    ko_jint(x, "observedGeneration", 0, INT64_MAX, 0, &gen) < 0)
			continue;
		c->reason = strndup(reason, 256);
		c->message = strndup(message, 512);
		if (!c->reason || !c->message)
			return -ENOMEM;
		*c = (KubeLbCondition) { .present = true,
					 .status = streq(st, "True"),
					 .has_transition = ltt != NULL,
					 .observed_generation = gen,
					 .reason = c->reason,
					 .message = c->message };
	}
	return 0;
}

/* A request that cannot be honoured: kept on the Service for the assigner to refuse and report. */
static int lb_request_refuse(KubeService *v, const char *raw, const char *fmt, const char *key) {
	v->lb_request_bad = true;
	v->n_lb_requested = 0;
	v->lb_request_raw = strdup(raw);
	v->lb_request_error = strdup_printf(fmt, key, raw);
	return v->lb_request_raw && v->lb_request_error ? 0 : -ENOMEM;
}

/* "a" or "a,b" (spaces allowed around each), at most one address per family. */
static int lb_requested_parse(KubeService *v, const char *key, const char *value) {
	_cleanup_strv_free_ char **l = NULL;

	if (strv_split(value, ",", &l) < 0)
		return -ENOMEM;
	if (strv_length(l) == 0 || strv_length(l) > 2)
		return lb_request_refuse(v, value, "%s: \"%.64s\" is not one address, or two of different families",
					 key);
	for (char **e = l; *e; e++) {
		char *t = *e + strspn(*e, " \t");
		size_t n = strlen(t);

		while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
			t[--n] = '\0';

		if (ip_addr_parse(t, &v->lb_requested[v->n_lb_requested]) < 0)
			return lb_request_refuse(v, value, "%s: \"%.64s\" is not a list of IP addresses", key);
		v->n_lb_requested++;
	}
	if (v->n_lb_requested == 2 && v->lb_requested[0].family == v->lb_requested[1].family)
		return lb_request_refuse(v, value, "%s: \"%.64s\" names two addresses of one family", key);
	return 0;
}

/*
 * spec.loadBalancerClass (refused as the API server refuses it: a label-style key with a
 * domain), the requested addresses (spec.loadBalancerIP, else the annotations) and the sharing
 * key. A malformed annotation or loadBalancerIP marks the request bad; it does not refuse the
 * Service.
 */
static int service_lb_request_parse(const json_t *md, const json_t *spec, StringPool *pool, KubeService *v,
				    DecodeError *err) {
	const json_t *ann = ko_jget(md, "annotations");
	const char *cls, *lbip, *ips = NULL, *ips_key = NULL, *share;

	if (ann && !json_is_object(ann))
		return decode_error(err, "metadata.annotations: not an object");
	if (ko_jstr(spec, "loadBalancerClass", &cls) < 0 || (cls && (!label_key_valid(cls) || !strchr(cls, '/'))))
		return decode_error(
				err,
				"spec.loadBalancerClass: not a label-style name with a domain (\"example.com/lb\")");
	if (cls && !(v->lb_class = string_pool_intern(pool, cls)))
		return -ENOMEM;
	if (ko_jstr(spec, "loadBalancerIP", &lbip) < 0)
		return decode_error(err, "spec.loadBalancerIP: not a string");
	if (!isempty(lbip)) {
		v->lb_request_key = "spec.loadBalancerIP";
		if (ip_addr_parse(lbip, &v->lb_requested[0]) < 0)
			return lb_request_refuse(v, lbip, "%s: \"%.64s\" is not an IP address", "spec.loadBalancerIP");
		v->n_lb_requested = 1;
	} else {
		const char *const keys[] = { KUBE_ANNOTATION_LB_IPS, KUBE_ANNOTATION_METALLB_LB_IPS };

		for (size_t k = 0; k < ELEMENTSOF(keys) && !ips; k++)
			if (json_is_string(json_object_get(ann, keys[k]))) {
				ips = json_string_value(json_object_get(ann, keys[k]));
				ips_key = keys[k];
				v->lb_request_key = k == 0 ? KUBE_ANNOTATION_LB_IPS : KUBE_ANNOTATION_METALLB_LB_IPS;
			}
		if (ips) {
			int r = lb_requested_parse(v, ips_key, ips);

			if (r < 0)
				return r;
		}
	}
	share = json_string_value(json_object_get(ann, KUBE_ANNOTATION_LB_SHARED))
				?: json_string_value(json_object_get(ann, KUBE_ANNOTATION_METALLB_SHARED));
	if (!isempty(share) && !(v->lb_sharing_key = string_pool_intern_n(pool, share, strnlen(share, 253))))
		return -ENOMEM;
	return 0;
}

int ko_service_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(ko_meta_done) Meta m = {};
	const json_t *spec = ko_jget(j, "spec"), *a, *x;
	const char *type, *s, *cip;
	KubeService *v;
	long long hc, timeout;
	size_t n, i;
	int r;

	r = ko_meta_parse(j, true, dns1035_label_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (!json_is_object(spec))
		return decode_error(err, "spec: missing or not an object");
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;

	if (ko_jstr(spec, "type", &type) < 0)
		type = "?";
	if (!type || streq(type, "ClusterIP"))
		v->type = KUBE_SERVICE_CLUSTER_IP;
	else if (streq(type, "NodePort"))
		v->type = KUBE_SERVICE_NODE_PORT;
	else if (streq(type, "LoadBalancer"))
		v->type = KUBE_SERVICE_LOAD_BALANCER;
	else if (streq(type, "ExternalName"))
		v->type = KUBE_SERVICE_EXTERNAL_NAME;
	else {
		r = decode_error(err, "spec.type: \"%.32s\" is not a service type", type);
		goto fail;
	}

	/* clusterIPs (clusterIP on old servers); "None" = headless. */
	if (ko_jarr(spec, "clusterIPs", &a) < 0 || ko_jstr(spec, "clusterIP", &cip) < 0) {
		r = decode_error(err, "spec.clusterIPs: not an array of strings");
		goto fail;
	}
	if ((ko_jlen(a) > 0 && json_is_string(json_array_get(a, 0)) &&
	     streq(json_string_value(json_array_get(a, 0)), "None")) ||
	    (ko_jlen(a) == 0 && cip && streq(cip, "None")))
		v->headless = true;
	else if (ko_jlen(a) > 0) {
		r = ko_parse_ip_array(a, "spec.clusterIPs", NULL, &v->cluster_ips, &n, err);
		if (r < 0)
			goto fail;
		if (n > 2 || (n == 2 && v->cluster_ips[0].family == v->cluster_ips[1].family)) {
			r = decode_error(err, "spec.clusterIPs: more than one address per family");
			goto fail;
		}
		v->n_cluster_ips = (uint8_t) n;
	} else if (!isempty(cip)) {
		if (!(v->cluster_ips = calloc(1, sizeof(IpAddr))))
			goto oom;
		if (ip_addr_parse(cip, &v->cluster_ips[0]) < 0) {
			r = decode_error(err, "spec.clusterIP: \"%.64s\" is not an IP address", cip);
			goto fail;
		}
		v->n_cluster_ips = 1;
	}

	r = service_ports_parse(spec, pool, v, err);
	if (r < 0)
		goto fail;
	if (ko_jarr(spec, "externalIPs", &a) < 0) {
		r = decode_error(err, "spec.externalIPs: not an array");
		goto fail;
	}
	if (ko_jlen(a) > KUBE_SERVICE_MAX_EXTERNAL_IPS) {
		r = decode_error(err, "spec.externalIPs: %zu entries, at most %d", ko_jlen(a),
				 KUBE_SERVICE_MAX_EXTERNAL_IPS);
		goto fail;
	}
	r = ko_parse_ip_array(a, "spec.externalIPs", NULL, &v->external_ips, &v->n_external_ips, err);
	if (r < 0)
		goto fail;
	if (ko_jarr(ko_jget(ko_jget(j, "status"), "loadBalancer"), "ingress", &a) < 0) {
		r = decode_error(err, "status.loadBalancer.ingress: not an array");
		goto fail;
	}
	if (ko_jlen(a) > KUBE_SERVICE_MAX_LB_INGRESS) {
		r = decode_error(err, "status.loadBalancer.ingress: %zu entries, at most %d", ko_jlen(a),
				 KUBE_SERVICE_MAX_LB_INGRESS);
		goto fail;
	}
	r = service_ingress_parse(a, v, err);
	if (r < 0)
		goto fail;
	r = service_conditions_parse(ko_jget(j, "status"), v, err);
	if (r < 0)
		goto fail;
	r = service_lb_request_parse(m.j, spec, pool, v, err);
	if (r < 0)
		goto fail;

	if (ko_jstr(spec, "sessionAffinity", &s) < 0 || (s && !streq(s, "None") && !streq(s, "ClientIP"))) {
		r = decode_error(err, "spec.sessionAffinity: not None or ClientIP");
		goto fail;
	}
	v->session_affinity_client_ip = s && streq(s, "ClientIP");
	if (ko_jint(ko_jget(ko_jget(spec, "sessionAffinityConfig"), "clientIP"), "timeoutSeconds", 1, 86400, 10800,
		    &timeout) < 0) {
		r = decode_error(err, "spec.sessionAffinityConfig.clientIP.timeoutSeconds: not in 1..86400");
		goto fail;
	}
	v->session_affinity_timeout = v->session_affinity_client_ip ? (uint32_t) timeout : 0;
	if (ko_jstr(spec, "externalTrafficPolicy", &s) < 0 || (s && !streq(s, "Cluster") && !streq(s, "Local"))) {
		r = decode_error(err, "spec.externalTrafficPolicy: not Cluster or Local");
		goto fail;
	}
	v->external_traffic_local = s && streq(s, "Local");
	if (ko_jstr(spec, "internalTrafficPolicy", &s) < 0 || (s && !streq(s, "Cluster") && !streq(s, "Local"))) {
		r = decode_error(err, "spec.internalTrafficPolicy: not Cluster or Local");
		goto fail;
	}
	v->internal_traffic_local = s && streq(s, "Local");
	if (ko_jint(spec, "healthCheckNodePort", 0, 65535, 0, &hc) < 0) {
		r = decode_error(err, "spec.healthCheckNodePort: not a port");
		goto fail;
	}
	v->health_check_node_port = (uint16_t) hc;
	if (ko_jarr(spec, "ipFamilies", &a) < 0 || ko_jlen(a) > 2) {
		r = decode_error(err, "spec.ipFamilies: not an array of at most two families");
		goto fail;
	}
	json_array_foreach(a, i, x) {
		const char *f = json_is_string(x) ? json_string_value(x) : "";
		int fam = streq(f, "IPv4") ? AF_INET : streq(f, "IPv6") ? AF_INET6 : AF_UNSPEC;

		if (fam == AF_UNSPEC || (i == 1 && v->ip_families[0] == fam)) {
			r = decode_error(err, "spec.ipFamilies[%zu]: not IPv4 or IPv6, or repeated", i);
			goto fail;
		}
		v->ip_families[v->n_ip_families++] = (uint8_t) fam;
	}
	r = service_source_ranges_parse(spec, v, err);
	if (r < 0)
		goto fail;
	r = service_created(j, v, err);
	if (r < 0)
		goto fail;
	if (ko_jstr(ko_jget(j, "metadata"), "resourceVersion", &s) >= 0 && !isempty(s) &&
	    !(v->resource_version = strdup(s)))
		goto oom;
	/* not the Service's to be refused for: only the assigner's condition echoes it */
	v->generation = ko_jint(ko_jget(j, "metadata"), "generation", 1, INT64_MAX, 0, &hc) < 0 ? 0 : hc;

	r = ko_meta_move(&m, KUBE_KIND_SERVICE, &v->meta);
	if (r < 0)
		goto fail;
	*ret = &v->meta;
	return 0;
oom:
	r = -ENOMEM;
fail:
	ko_service_free(v, pool);
	free(v);
	return r;
}

bool ko_service_equal(const KubeService *a, const KubeService *b) {
	if (a->type != b->type || a->headless != b->headless ||
	    a->session_affinity_client_ip != b->session_affinity_client_ip ||
	    a->session_affinity_timeout != b->session_affinity_timeout ||
	    a->external_traffic_local != b->external_traffic_local ||
	    a->internal_traffic_local != b->internal_traffic_local || a->n_cluster_ips != b->n_cluster_ips ||
	    a->n_ip_families != b->n_ip_families || memcmp(a->ip_families, b->ip_families, 2) != 0 ||
	    a->health_check_node_port != b->health_check_node_port || a->n_ports != b->n_ports ||
	    a->n_external_ips != b->n_external_ips || a->n_lb_ips != b->n_lb_ips || a->created != b->created ||
	    a->created_by_revision != b->created_by_revision || a->n_source_ranges != b->n_source_ranges)
		return false;
	if (a->n_lb_proxy_ips != b->n_lb_proxy_ips || a->lb_class != b->lb_class ||
	    a->lb_sharing_key != b->lb_sharing_key || a->lb_request_bad != b->lb_request_bad ||
	    a->n_lb_requested != b->n_lb_requested ||
	    !ko_ip_arrays_equal(a->lb_proxy_ips, b->lb_proxy_ips, a->n_lb_proxy_ips) ||
	    !ko_ip_arrays_equal(a->lb_requested, b->lb_requested, a->n_lb_requested) ||
	    !streq_ptr(a->lb_request_raw, b->lb_request_raw))
		return false;
	for (size_t i = 0; i < a->n_source_ranges; i++)
		if (!ip_prefix_equal(&a->source_ranges[i], &b->source_ranges[i]))
			return false;
	for (size_t i = 0; i < a->n_ports; i++) {
		const KubeServicePort *x = &a->ports[i], *y = &b->ports[i];

		if (x->name != y->name || x->protocol != y->protocol || x->port != y->port ||
		    x->node_port != y->node_port || x->target_port.number != y->target_port.number ||
		    x->target_port.name != y->target_port.name)
			return false;
	}
	return ko_ip_arrays_equal(a->cluster_ips, b->cluster_ips, a->n_cluster_ips) &&
	       ko_ip_arrays_equal(a->external_ips, b->external_ips, a->n_external_ips) &&
	       ko_ip_arrays_equal(a->lb_ips, b->lb_ips, a->n_lb_ips);
}
