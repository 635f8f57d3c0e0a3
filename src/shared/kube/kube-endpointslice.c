/* SPDX-License-Identifier: Apache-2.0 */
/* EndpointSlice decoder (discovery.k8s.io/v1): endpoints (addresses, conditions, node) and ports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

#define LABEL_SERVICE_NAME "kubernetes.io/service-name"

void ko_slice_free(KubeEndpointSlice *s, StringPool *pool) {
	string_pool_unref(pool, s->service_name);
	for (size_t i = 0; i < s->n_endpoints; i++) {
		string_pool_unref(pool, s->endpoints[i].node_name);
		free(s->endpoints[i].addresses);
	}
	free(s->endpoints);
	for (size_t i = 0; i < s->n_ports; i++)
		string_pool_unref(pool, s->ports[i].name);
	free(s->ports);
}

/*
 * What kube-apiserver's discovery validation refuses as an endpoint address (ValidateEndpointIP):
 * unspecified, loopback, link-local, and multicast (it names link-local multicast; no multicast
 * group is a backend, so weft refuses them all). A node's own address is no reason: hostNetwork
 * pods' endpoints are their node's IPs. NULL if the address may be an endpoint.
 */
static const char *endpoint_address_refusal(const IpAddr *a) {
	static const struct {
		const char *prefix, *why;
	} refused[] = {
		{ "0.0.0.0/8", "unspecified (0.0.0.0/8)" },
		{ "127.0.0.0/8", "loopback" },
		{ "169.254.0.0/16", "link-local (169.254.0.0/16)" },
		{ "224.0.0.0/4", "multicast" },
		{ "::/128", "unspecified" },
		{ "::1/128", "loopback" },
		{ "fe80::/10", "link-local (fe80::/10)" },
		{ "ff00::/8", "multicast" },
		/* An IPv4-mapped address reaches the IPv4 one: judge it the same way. */
		{ "::ffff:0.0.0.0/104", "unspecified (IPv4-mapped)" },
		{ "::ffff:127.0.0.0/104", "loopback (IPv4-mapped)" },
		{ "::ffff:169.254.0.0/112", "link-local (IPv4-mapped)" },
		{ "::ffff:224.0.0.0/100", "multicast (IPv4-mapped)" },
	};

	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		IpPrefix p;

		if (ip_prefix_parse(refused[i].prefix, &p) >= 0 && p.addr.family == a->family &&
		    ip_prefix_contains(&p, a))
			return refused[i].why;
	}
	return NULL;
}

static int slice_endpoints_parse(const json_t *j, StringPool *pool, KubeEndpointSlice *s, DecodeError *err) {
	const json_t *eps, *ep;
	int family = s->address_type == KUBE_ADDRESS_IPV4 ? AF_INET : AF_INET6;
	size_t i;
	int r;

	if (ko_jarr(j, "endpoints", &eps) < 0)
		return decode_error(err, "endpoints: not an array");
	if (ko_jlen(eps) > KUBE_SLICE_MAX_ENDPOINTS)
		return decode_error(err, "endpoints: %zu endpoints, more than the limit of %u", ko_jlen(eps),
				    KUBE_SLICE_MAX_ENDPOINTS);
	if (s->address_type == KUBE_ADDRESS_FQDN || ko_jlen(eps) == 0)
		return 0;
	if (!(s->endpoints = calloc(ko_jlen(eps), sizeof(KubeEndpoint))))
		return -ENOMEM;
	json_array_foreach(eps, i, ep) {
		KubeEndpoint *e = &s->endpoints[i];
		const json_t *addrs, *cond = ko_jget(ep, "conditions");
		const char *node;
		size_t n;
		char p[64];

		s->n_endpoints++;
		ko_pathf(p, sizeof(p), "endpoints[%zu].addresses", i);
		if (!json_is_object(ep) || ko_jarr(ep, "addresses", &addrs) < 0 || ko_jlen(addrs) == 0 ||
		    ko_jlen(addrs) > KUBE_SLICE_MAX_ADDRESSES)
			return decode_error(err, "%s: missing, empty or more than the limit of %u", p,
					    KUBE_SLICE_MAX_ADDRESSES);
		r = ko_parse_ip_array(addrs, p, NULL, &e->addresses, &n, err);
		if (r < 0)
			return r;
		e->n_addresses = (uint8_t) n;
		for (size_t k = 0; k < n; k++) {
			const char *why = endpoint_address_refusal(&e->addresses[k]);
			char a[IP_ADDR_STRLEN];

			ip_addr_to_string(&e->addresses[k], a);
			if (e->addresses[k].family != family)
				return decode_error(err, "%s[%zu]: \"%s\" is not of the slice's addressType %s", p, k,
						    a, family == AF_INET ? "IPv4" : "IPv6");
			if (why)
				return decode_error(err, "%s[%zu]: \"%s\" is %s", p, k, a, why);
		}
		if (ko_jbool(cond, "ready", true, &e->ready) < 0 || ko_jbool(cond, "serving", true, &e->serving) < 0 ||
		    ko_jbool(cond, "terminating", false, &e->terminating) < 0)
			return decode_error(err, "endpoints[%zu].conditions: not booleans", i);
		if (ko_jstr(ep, "nodeName", &node) < 0 || (node && !dns_subdomain_valid(node)))
			return decode_error(err, "endpoints[%zu].nodeName: not a valid node name", i);
		if (node && !(e->node_name = string_pool_intern(pool, node)))
			return -ENOMEM;
	}
	return 0;
}

int ko_slice_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(ko_meta_done) Meta m = {};
	const json_t *ports, *x;
	const char *at, *svc;
	KubeEndpointSlice *s;
	LabelSet ls;
	size_t i;
	int r;

	r = ko_meta_parse(j, true, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (ko_jstr(j, "addressType", &at) < 0 || !at)
		return decode_error(err, "addressType: missing");
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (streq(at, "IPv4"))
		s->address_type = KUBE_ADDRESS_IPV4;
	else if (streq(at, "IPv6"))
		s->address_type = KUBE_ADDRESS_IPV6;
	else if (streq(at, "FQDN"))
		s->address_type = KUBE_ADDRESS_FQDN;
	else {
		r = decode_error(err, "addressType: \"%.16s\" is not IPv4, IPv6 or FQDN", at);
		goto fail;
	}
	ls = (LabelSet) { .pairs = m.labels, .n = m.n_labels };
	svc = label_set_get(&ls, LABEL_SERVICE_NAME);
	if (svc && !(s->service_name = string_pool_intern(pool, svc)))
		goto oom;
	r = slice_endpoints_parse(j, pool, s, err);
	if (r < 0)
		goto fail;
	if (ko_jarr(j, "ports", &ports) < 0) {
		r = decode_error(err, "ports: not an array");
		goto fail;
	}
	if (ko_jlen(ports) > KUBE_SLICE_MAX_PORTS) {
		r = decode_error(err, "ports: %zu ports, more than the limit of %u", ko_jlen(ports),
				 KUBE_SLICE_MAX_PORTS);
		goto fail;
	}
	if (ko_jlen(ports) > 0 && !(s->ports = calloc(ko_jlen(ports), sizeof(KubeEndpointPort))))
		goto oom;
	json_array_foreach(ports, i, x) {
		KubeEndpointPort *e = &s->ports[i];
		const char *name;
		long long port;
		char p[32];

		s->n_ports++;
		ko_pathf(p, sizeof(p), "ports[%zu]", i);
		if (ko_jint(x, "port", 1, 65535, 0, &port) < 0) {
			r = decode_error(err, "%s.port: not a port", p);
			goto fail;
		}
		e->port = (uint16_t) port;
		r = ko_parse_protocol(x, p, &e->protocol, err);
		if (r < 0)
			goto fail;
		if (ko_jstr(x, "name", &name) < 0 || (name && *name && !dns_label_valid(name))) {
			r = decode_error(err, "%s.name: not a valid port name", p);
			goto fail;
		}
		if (name && *name && !(e->name = string_pool_intern(pool, name)))
			goto oom;
	}
	r = ko_meta_move(&m, KUBE_KIND_ENDPOINT_SLICE, &s->meta);
	if (r < 0)
		goto fail;
	*ret = &s->meta;
	return 0;
oom:
	r = -ENOMEM;
fail:
	ko_slice_free(s, pool);
	free(s);
	return r;
}

bool ko_slice_equal(const KubeEndpointSlice *a, const KubeEndpointSlice *b) {
	if (a->service_name != b->service_name || a->address_type != b->address_type ||
	    a->n_endpoints != b->n_endpoints || a->n_ports != b->n_ports)
		return false;
	for (size_t i = 0; i < a->n_endpoints; i++) {
		const KubeEndpoint *x = &a->endpoints[i], *y = &b->endpoints[i];

		if (x->ready != y->ready || x->serving != y->serving || x->terminating != y->terminating ||
		    x->node_name != y->node_name || x->n_addresses != y->n_addresses ||
		    !ko_ip_arrays_equal(x->addresses, y->addresses, x->n_addresses))
			return false;
	}
	for (size_t i = 0; i < a->n_ports; i++)
		if (a->ports[i].name != b->ports[i].name || a->ports[i].protocol != b->ports[i].protocol ||
		    a->ports[i].port != b->ports[i].port)
			return false;
	return true;
}
