/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compact objects back to their Kubernetes JSON shape, holding exactly what the cache keeps: for
 * debug dumps (weftd's /debug, `weft get`) and for tests, which decode what this prints and must
 * get the same object back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "shared/kube/kube-objects.h"

static int set(json_t *o, const char *key, json_t *v) {
	return json_object_set_new(o, key, v);
}

static json_t *ip_json(const IpAddr *a) {
	char buf[IP_ADDR_STRLEN];

	return json_string(ip_addr_to_string(a, buf));
}

static json_t *prefix_json(const IpPrefix *p) {
	char buf[IP_PREFIX_STRLEN];

	return json_string(ip_prefix_to_string(p, buf));
}

static json_t *ips_json(const IpAddr *v, size_t n) {
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, ip_json(&v[i]));
	return a;
}

static json_t *port_ref_json(const KubePortRef *p) {
	return p->name ? json_string(p->name) : json_integer(p->number);
}

static json_t *labels_json(const KubeObject *o) {
	json_t *l = json_object();

	for (size_t i = 0; l && i < o->n_labels; i++) {
		size_t kl = label_pair_key_len(o->labels[i]);
		char key[320];

		snprintf(key, sizeof(key), "%.*s", (int) kl, o->labels[i]);
		set(l, key, json_string(o->labels[i] + kl + 1));
	}
	return l;
}

json_t *label_selector_to_json(const LabelSelector *s) {
	json_t *j, *exprs;

	if (!s)
		return json_null();
	j = json_object();
	exprs = json_array();
	if (!j || !exprs) {
		json_decref(j);
		json_decref(exprs);
		return NULL;
	}
	/* Everything as matchExpressions: matchLabels k: v is exactly k In (v). */
	for (size_t i = 0; i < s->n; i++) {
		const LabelRequirement *r = &s->reqs[i];
		json_t *e = json_pack("{s:s, s:s}", "key", r->key, "operator", label_op_to_string(r->op));

		if (r->n_values > 0) {
			json_t *vals = json_array();

			for (size_t k = 0; k < r->n_values; k++)
				json_array_append_new(vals, json_string(r->values[k]));
			set(e, "values", vals);
		}
		json_array_append_new(exprs, e);
	}
	if (s->n > 0)
		set(j, "matchExpressions", exprs);
	else
		json_decref(exprs);
	return j;
}

static json_t *meta_json(const KubeObject *o, const char *api_version) {
	json_t *md = json_pack("{s:s}", "name", o->name);

	if (o->namespace)
		set(md, "namespace", json_string(o->namespace));
	if (o->n_labels > 0)
		set(md, "labels", labels_json(o));
	return json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", kube_kind_info(o->kind)->kind,
			 "metadata", md);
}

static const char *protocol(uint8_t p) {
	return kube_protocol_to_string((KubeProtocol) p);
}

static void node_json(const KubeNode *n, json_t *j) {
	json_t *cidrs = json_array(), *addrs = json_array(), *ann = json_object();

	for (size_t i = 0; i < n->n_pod_cidrs; i++)
		json_array_append_new(cidrs, prefix_json(&n->pod_cidrs[i]));
	for (size_t i = 0; i < n->n_internal_ips; i++)
		json_array_append_new(addrs, json_pack("{s:s, s:o}", "type", "InternalIP", "address",
						       ip_json(&n->internal_ips[i])));
	for (size_t i = 0; i < n->n_annotations; i++)
		set(ann, n->annotations[2 * i], json_string(n->annotations[2 * i + 1]));
	set(json_object_get(j, "metadata"), "annotations", ann);
	set(j, "spec", json_pack("{s:o}", "podCIDRs", cidrs));
	set(j, "status", json_pack("{s:o}", "addresses", addrs));
}

static const char *const phases[] = { "Pending", "Running", "Succeeded", "Failed", "Unknown" };

static void pod_json(const KubePod *p, json_t *j) {
	json_t *spec = json_object(), *ports = json_array(), *ips = json_array();
	static const uint8_t zero[16] = {};

	if (memcmp(p->uid, zero, 16) != 0) {
		char uid[37];
		const uint8_t *u = p->uid;

		snprintf(uid, sizeof(uid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
			 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
			 u[15]);
		set(json_object_get(j, "metadata"), "uid", json_string(uid));
	}
	if (p->node_name)
		set(spec, "nodeName", json_string(p->node_name));
	if (p->host_network)
		set(spec, "hostNetwork", json_true());
	for (size_t i = 0; i < p->n_ports; i++) {
		json_t *e = json_pack("{s:i, s:s}", "containerPort", p->ports[i].port, "protocol",
				      protocol(p->ports[i].protocol));

		if (p->ports[i].name)
			set(e, "name", json_string(p->ports[i].name));
		json_array_append_new(ports, e);
	}
	/* Which container a port belongs to is not kept: one container holds them all. */
	set(spec, "containers", json_pack("[{s:s, s:o}]", "name", "all", "ports", ports));
	set(j, "spec", spec);
	for (size_t i = 0; i < p->n_ips; i++)
		json_array_append_new(ips, json_pack("{s:o}", "ip", ip_json(&p->ips[i])));
	set(j, "status", json_pack("{s:s, s:o}", "phase", phases[p->phase < 5 ? p->phase : 4], "podIPs", ips));
}

static json_t *rules_json(const KubePolicyRule *rules, size_t n, const char *peers_field) {
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *rule = json_object(), *peers = json_array(), *ports = json_array();

		for (size_t k = 0; k < rules[i].n_peers; k++) {
			const KubePolicyPeer *p = &rules[i].peers[k];
			json_t *e = json_object();

			if (p->has_ip_block) {
				json_t *ex = json_array();

				for (size_t q = 0; q < p->n_except; q++)
					json_array_append_new(ex, prefix_json(&p->except[q]));
				set(e, "ipBlock", json_pack("{s:o, s:o}", "cidr", prefix_json(&p->cidr), "except", ex));
			}
			if (p->pod_selector)
				set(e, "podSelector", label_selector_to_json(p->pod_selector));
			if (p->namespace_selector)
				set(e, "namespaceSelector", label_selector_to_json(p->namespace_selector));
			json_array_append_new(peers, e);
		}
		for (size_t k = 0; k < rules[i].n_ports; k++) {
			const KubePolicyPort *p = &rules[i].ports[k];
			json_t *e = json_pack("{s:s}", "protocol", protocol(p->protocol));

			if (p->port.name || p->port.number)
				set(e, "port", port_ref_json(&p->port));
			if (p->end_port)
				set(e, "endPort", json_integer(p->end_port));
			json_array_append_new(ports, e);
		}
		if (json_array_size(peers) > 0)
			set(rule, peers_field, peers);
		else
			json_decref(peers);
		if (json_array_size(ports) > 0)
			set(rule, "ports", ports);
		else
			json_decref(ports);
		json_array_append_new(a, rule);
	}
	return a;
}

static void policy_json(const KubeNetworkPolicy *p, json_t *j) {
	json_t *types = json_array();

	if (p->ingress)
		json_array_append_new(types, json_string("Ingress"));
	if (p->egress)
		json_array_append_new(types, json_string("Egress"));
	set(j, "spec",
	    json_pack("{s:o, s:o, s:o, s:o}", "podSelector", label_selector_to_json(p->pod_selector), "policyTypes",
		      types, "ingress", rules_json(p->ingress_rules, p->n_ingress, "from"), "egress",
		      rules_json(p->egress_rules, p->n_egress, "to")));
}

static const char *const service_types[] = { "ClusterIP", "NodePort", "LoadBalancer", "ExternalName" };

/* What the Service asks of the LoadBalancer address assigner, in weft's own annotations. */
static void service_lb_json(const KubeService *s, json_t *spec, json_t *md) {
	json_t *ann = json_object();
	char a[IP_ADDR_STRLEN], b[IP_ADDR_STRLEN];

	if (s->lb_class)
		set(spec, "loadBalancerClass", json_string(s->lb_class));
	if (s->lb_request_bad)
		set(ann, KUBE_ANNOTATION_LB_IPS, json_string(s->lb_request_raw));
	else if (s->n_lb_requested == 1)
		set(ann, KUBE_ANNOTATION_LB_IPS, json_string(ip_addr_to_string(&s->lb_requested[0], a)));
	else if (s->n_lb_requested == 2)
		set(ann, KUBE_ANNOTATION_LB_IPS,
		    json_sprintf("%s,%s", ip_addr_to_string(&s->lb_requested[0], a),
				 ip_addr_to_string(&s->lb_requested[1], b)));
	if (s->lb_sharing_key)
		set(ann, KUBE_ANNOTATION_LB_SHARED, json_string(s->lb_sharing_key));
	if (json_object_size(ann) > 0 && md)
		set(md, "annotations", ann);
	else
		json_decref(ann);
}

static void service_json(const KubeService *s, json_t *j) {
	json_t *spec = json_object(), *ports = json_array(), *fams = json_array(), *lb = json_array();

	set(spec, "type", json_string(service_types[s->type < 4 ? s->type : 0]));
	if (s->headless)
		set(spec, "clusterIPs", json_pack("[s]", "None"));
	else if (s->n_cluster_ips > 0)
		set(spec, "clusterIPs", ips_json(s->cluster_ips, s->n_cluster_ips));
	for (size_t i = 0; i < s->n_ports; i++) {
		const KubeServicePort *p = &s->ports[i];
		json_t *e = json_pack("{s:s, s:i, s:o}", "protocol", protocol(p->protocol), "port", p->port,
				      "targetPort", port_ref_json(&p->target_port));

		if (p->name)
			set(e, "name", json_string(p->name));
		if (p->node_port)
			set(e, "nodePort", json_integer(p->node_port));
		json_array_append_new(ports, e);
	}
	set(spec, "ports", ports);
	if (s->n_external_ips > 0)
		set(spec, "externalIPs", ips_json(s->external_ips, s->n_external_ips));
	set(spec, "sessionAffinity", json_string(s->session_affinity_client_ip ? "ClientIP" : "None"));
	if (s->session_affinity_client_ip)
		set(spec, "sessionAffinityConfig",
		    json_pack("{s:{s:i}}", "clientIP", "timeoutSeconds", (json_int_t) s->session_affinity_timeout));
	set(spec, "externalTrafficPolicy", json_string(s->external_traffic_local ? "Local" : "Cluster"));
	set(spec, "internalTrafficPolicy", json_string(s->internal_traffic_local ? "Local" : "Cluster"));
	if (s->health_check_node_port)
		set(spec, "healthCheckNodePort", json_integer(s->health_check_node_port));
	for (size_t i = 0; i < s->n_ip_families; i++)
		json_array_append_new(fams, json_string(s->ip_families[i] == AF_INET6 ? "IPv6" : "IPv4"));
	set(spec, "ipFamilies", fams);
	if (s->n_source_ranges > 0) {
		json_t *ranges = json_array();

		for (size_t i = 0; i < s->n_source_ranges; i++)
			json_array_append_new(ranges, prefix_json(&s->source_ranges[i]));
		set(spec, "loadBalancerSourceRanges", ranges);
	}
	set(j, "spec", spec);
	if (s->created_by_revision)
		set(j, KUBE_CREATE_REVISION_FIELD, json_integer(s->created));
	else if (s->created > 0) {
		time_t t = (time_t) s->created;
		struct tm tm;
		char buf[32];

		if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
			set(json_object_get(j, "metadata"), "creationTimestamp", json_string(buf));
	}
	for (size_t i = 0; i < s->n_lb_ips; i++)
		json_array_append_new(lb, json_pack("{s:o}", "ip", ip_json(&s->lb_ips[i])));
	for (size_t i = 0; i < s->n_lb_proxy_ips; i++)
		json_array_append_new(lb,
				      json_pack("{s:o, s:s}", "ip", ip_json(&s->lb_proxy_ips[i]), "ipMode", "Proxy"));
	set(j, "status", json_pack("{s:{s:o}}", "loadBalancer", "ingress", lb));
	service_lb_json(s, spec, json_object_get(j, "metadata"));
}

static const char *const address_types[] = { "IPv4", "IPv6", "FQDN" };

static void slice_json(const KubeEndpointSlice *s, json_t *j) {
	json_t *eps = json_array(), *ports = json_array();

	set(j, "addressType", json_string(address_types[s->address_type < 3 ? s->address_type : 0]));
	for (size_t i = 0; i < s->n_endpoints; i++) {
		const KubeEndpoint *e = &s->endpoints[i];
		json_t *o = json_pack("{s:o, s:{s:b, s:b, s:b}}", "addresses", ips_json(e->addresses, e->n_addresses),
				      "conditions", "ready", e->ready, "serving", e->serving, "terminating",
				      e->terminating);

		if (e->node_name)
			set(o, "nodeName", json_string(e->node_name));
		json_array_append_new(eps, o);
	}
	set(j, "endpoints", eps);
	for (size_t i = 0; i < s->n_ports; i++) {
		const KubeEndpointPort *p = &s->ports[i];
		json_t *o = json_pack("{s:s}", "protocol", protocol(p->protocol));

		if (p->name)
			set(o, "name", json_string(p->name));
		if (p->port)
			set(o, "port", json_integer(p->port));
		json_array_append_new(ports, o);
	}
	set(j, "ports", ports);
}

json_t *kube_object_to_json(const KubeObject *o) {
	static const char *const api_versions[_KUBE_KIND_MAX] = {
		[KUBE_KIND_NODE] = "v1",    [KUBE_KIND_NAMESPACE] = "v1",
		[KUBE_KIND_POD] = "v1",     [KUBE_KIND_NETWORK_POLICY] = "networking.k8s.io/v1",
		[KUBE_KIND_SERVICE] = "v1", [KUBE_KIND_ENDPOINT_SLICE] = "discovery.k8s.io/v1",
	};
	json_t *j;

	if (!o || o->kind >= _KUBE_KIND_MAX)
		return NULL;
	j = meta_json(o, api_versions[o->kind]);
	if (!j)
		return NULL;
	switch ((KubeKind) o->kind) {
	case KUBE_KIND_NODE: node_json(KUBE_NODE(o), j); break;
	case KUBE_KIND_POD: pod_json(KUBE_POD(o), j); break;
	case KUBE_KIND_NETWORK_POLICY: policy_json(KUBE_NETWORK_POLICY(o), j); break;
	case KUBE_KIND_SERVICE: service_json(KUBE_SERVICE(o), j); break;
	case KUBE_KIND_ENDPOINT_SLICE: slice_json(KUBE_ENDPOINT_SLICE(o), j); break;
	default: break;
	}
	return j;
}
