/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Result model and the conversion between spec versions. Shapes, by version:
 *   0.1.0, 0.2.0  {cniVersion, ip4: {ip, gateway, routes}, ip6: {...}, dns}
 *   0.3.0..0.4.0  {cniVersion, interfaces, ips: [{version, interface, address, gateway}], routes, dns}
 *   1.0.0         same without ips[].version
 *   1.1.0         + interfaces[].mtu/socketPath/pciID, routes[].mtu/advmss/priority/table/scope
 * Key order follows what the Go reference prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-types.h"

CniResult *cni_result_new(CniVersion v) {
	CniResult *r = calloc(1, sizeof(*r));

	if (r)
		r->version = v;
	return r;
}

static void interface_done(CniInterface *i) {
	free(i->name);
	free(i->mac);
	free(i->sandbox);
	free(i->socket_path);
	free(i->pci_id);
}

CniResult *cni_result_free(CniResult *r) {
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->n_interfaces; i++)
		interface_done(&r->interfaces[i]);
	free(r->interfaces);
	free(r->ips);
	free(r->routes);
	cni_dns_done(&r->dns);
	return mfree(r);
}

static int strdup_opt(const char *s, char **ret) {
	if (!s) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

static int add_interface_full(CniResult *r, const CniInterface *src) {
	CniInterface *a, n = { .mtu = src->mtu };

	if (!src->name)
		return -EINVAL;
	if (strdup_opt(src->name, &n.name) < 0 || strdup_opt(src->mac, &n.mac) < 0 ||
	    strdup_opt(src->sandbox, &n.sandbox) < 0 || strdup_opt(src->socket_path, &n.socket_path) < 0 ||
	    strdup_opt(src->pci_id, &n.pci_id) < 0)
		goto oom;
	a = reallocarray(r->interfaces, r->n_interfaces + 1, sizeof(*a));
	if (!a)
		goto oom;
	r->interfaces = a;
	a[r->n_interfaces] = n;
	return (int) r->n_interfaces++;
oom:
	interface_done(&n);
	return -ENOMEM;
}

int cni_result_add_interface(CniResult *r, const char *name, const char *mac, const char *sandbox) {
	CniInterface i = { .name = (char *) name, .mac = (char *) mac, .sandbox = (char *) sandbox };

	return add_interface_full(r, &i);
}

int cni_result_add_ip(CniResult *r, const IpPrefix *address, const IpAddr *gateway, int interface) {
	CniIpConfig *a;

	if (!address || !ip_addr_is_set(&address->addr))
		return -EINVAL;
	a = reallocarray(r->ips, r->n_ips + 1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->ips = a;
	a[r->n_ips] = (CniIpConfig) {
		.address = *address,
		.gateway = gateway ? *gateway : (IpAddr) { .family = AF_UNSPEC },
		.interface = interface < 0 ? -1 : interface,
	};
	return (int) r->n_ips++;
}

int cni_result_add_route(CniResult *r, const CniRoute *route) {
	CniRoute *a;

	a = reallocarray(r->routes, r->n_routes + 1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->routes = a;
	a[r->n_routes] = *route;
	return (int) r->n_routes++;
}

CniResult *cni_result_copy(const CniResult *r) {
	_cleanup_(cni_result_freep) CniResult *c = NULL;

	if (!r)
		return NULL;
	c = cni_result_new(r->version);
	if (!c)
		return NULL;
	for (size_t i = 0; i < r->n_interfaces; i++)
		if (add_interface_full(c, &r->interfaces[i]) < 0)
			return NULL;
	for (size_t i = 0; i < r->n_ips; i++)
		if (cni_result_add_ip(c, &r->ips[i].address, &r->ips[i].gateway, r->ips[i].interface) < 0)
			return NULL;
	for (size_t i = 0; i < r->n_routes; i++)
		if (cni_result_add_route(c, &r->routes[i]) < 0)
			return NULL;
	if (cni_dns_merge(&c->dns, &r->dns) < 0)
		return NULL;
	return TAKE_PTR(c);
}

/* ---- parsing ---- */

#define decode_fail(err, ...) cni_error_set((err), -EINVAL, CNI_ERR_DECODE, __VA_ARGS__)

static int get_opt_string(json_t *o, const char *key, const char *what, const char **ret, CniError *err) {
	json_t *v = cni_json_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return decode_fail(err, "invalid result: %s \"%s\" is not a string", what, key);
	*ret = json_string_value(v);
	return 0;
}

static int get_opt_int(json_t *o, const char *key, const char *what, int min, int max, int *ret, bool *ret_present,
		       CniError *err) {
	json_t *v = cni_json_get(o, key);
	json_int_t i;

	if (ret_present)
		*ret_present = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return decode_fail(err, "invalid result: %s \"%s\" is not an integer", what, key);
	i = json_integer_value(v);
	if (i < min || i > max)
		return decode_fail(err, "invalid result: %s \"%s\" %lld is out of range", what, key, (long long) i);
	*ret = (int) i;
	if (ret_present)
		*ret_present = true;
	return 0;
}

static int parse_prefix(json_t *o, const char *key, const char *what, bool required, IpPrefix *ret, CniError *err) {
	const char *s;
	int r;

	r = get_opt_string(o, key, what, &s, err);
	if (r < 0)
		return r;
	if (!s) {
		if (required)
			return decode_fail(err, "invalid result: %s has no \"%s\"", what, key);
		return 0;
	}
	if (ip_prefix_parse(s, ret) < 0)
		return decode_fail(err, "invalid result: %s \"%s\": \"%s\" is not an address/prefix", what, key, s);
	return 1;
}

static int parse_addr(json_t *o, const char *key, const char *what, IpAddr *ret, CniError *err) {
	const char *s;
	int r;

	*ret = (IpAddr) { .family = AF_UNSPEC };
	r = get_opt_string(o, key, what, &s, err);
	if (r < 0)
		return r;
	/* Go prints an absent net.IP as "" in some older plugins. */
	if (isempty(s))
		return 0;
	if (ip_addr_parse(s, ret) < 0)
		return decode_fail(err, "invalid result: %s \"%s\": \"%s\" is not an IP address", what, key, s);
	return 0;
}

static int parse_route(CniResult *res, json_t *o, CniError *err) {
	CniRoute rt = {};
	int r;

	if (!json_is_object(o))
		return decode_fail(err, "invalid result: route is not an object");
	r = parse_prefix(o, "dst", "route", true, &rt.dst, err);
	if (r < 0)
		return r;
	r = parse_addr(o, "gw", "route", &rt.gw, err);
	if (r < 0)
		return r;
	if (ip_addr_is_set(&rt.gw) && rt.gw.family != rt.dst.addr.family)
		return decode_fail(err, "invalid result: route gateway family differs from its dst");
	if ((r = get_opt_int(o, "mtu", "route", 0, INT32_MAX, &rt.mtu, NULL, err)) < 0 ||
	    (r = get_opt_int(o, "advmss", "route", 0, INT32_MAX, &rt.advmss, NULL, err)) < 0 ||
	    (r = get_opt_int(o, "priority", "route", 0, INT32_MAX, &rt.priority, NULL, err)) < 0 ||
	    (r = get_opt_int(o, "table", "route", 0, INT32_MAX, &rt.table, NULL, err)) < 0 ||
	    (r = get_opt_int(o, "scope", "route", 0, 255, &rt.scope, &rt.has_scope, err)) < 0)
		return r;
	r = cni_result_add_route(res, &rt);
	return r < 0 ? cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory") : 0;
}

static int parse_routes(CniResult *res, json_t *a, CniError *err) {
	size_t i;
	json_t *e;
	int r;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return decode_fail(err, "invalid result: \"routes\" is not an array");
	json_array_foreach(a, i, e) {
		r = parse_route(res, e, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* 0.1.0/0.2.0: "ip4"/"ip6" = {ip, gateway, routes} */
static int parse_legacy_ip(CniResult *res, json_t *o, const char *key, int family, CniError *err) {
	CniIpConfig ip = { .interface = -1 };
	int r;

	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return decode_fail(err, "invalid result: \"%s\" is not an object", key);
	r = parse_prefix(o, "ip", key, true, &ip.address, err);
	if (r < 0)
		return r;
	r = parse_addr(o, "gateway", key, &ip.gateway, err);
	if (r < 0)
		return r;
	if (ip.address.addr.family != family || (ip_addr_is_set(&ip.gateway) && ip.gateway.family != family))
		return decode_fail(err, "invalid result: \"%s\" holds an address of the other family", key);
	r = cni_result_add_ip(res, &ip.address, &ip.gateway, -1);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
	return parse_routes(res, cni_json_get(o, "routes"), err);
}

static int parse_interface(CniResult *res, json_t *o, CniError *err) {
	CniInterface i = {};
	const char *name, *mac, *sandbox, *sock, *pci;
	int r;

	if (!json_is_object(o))
		return decode_fail(err, "invalid result: interface is not an object");
	if ((r = get_opt_string(o, "name", "interface", &name, err)) < 0 ||
	    (r = get_opt_string(o, "mac", "interface", &mac, err)) < 0 ||
	    (r = get_opt_string(o, "sandbox", "interface", &sandbox, err)) < 0 ||
	    (r = get_opt_string(o, "socketPath", "interface", &sock, err)) < 0 ||
	    (r = get_opt_string(o, "pciID", "interface", &pci, err)) < 0 ||
	    (r = get_opt_int(o, "mtu", "interface", 0, INT32_MAX, &i.mtu, NULL, err)) < 0)
		return r;
	if (isempty(name))
		return decode_fail(err, "invalid result: interface has no \"name\"");
	/* Go's omitempty: "" and absent are the same thing. */
	i.name = (char *) name;
	i.mac = isempty(mac) ? NULL : (char *) mac;
	i.sandbox = isempty(sandbox) ? NULL : (char *) sandbox;
	i.socket_path = isempty(sock) ? NULL : (char *) sock;
	i.pci_id = isempty(pci) ? NULL : (char *) pci;
	r = add_interface_full(res, &i);
	return r < 0 ? cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory") : 0;
}

static int parse_ipconfig(CniResult *res, json_t *o, CniVersion v, CniError *err) {
	CniIpConfig ip = { .interface = -1 };
	const char *ver;
	bool has_if;
	int r;

	if (!json_is_object(o))
		return decode_fail(err, "invalid result: ips entry is not an object");
	r = parse_prefix(o, "address", "ips entry", true, &ip.address, err);
	if (r < 0)
		return r;
	r = parse_addr(o, "gateway", "ips entry", &ip.gateway, err);
	if (r < 0)
		return r;
	if (ip_addr_is_set(&ip.gateway) && ip.gateway.family != ip.address.addr.family)
		return decode_fail(err, "invalid result: ips entry gateway family differs from its address");
	r = get_opt_int(o, "interface", "ips entry", 0, INT32_MAX, &ip.interface, &has_if, err);
	if (r < 0)
		return r;
	if (!has_if)
		ip.interface = -1;
	else if ((size_t) ip.interface >= res->n_interfaces)
		/* An index nothing can resolve would make every consumer index out of bounds. */
		return decode_fail(err, "invalid result: ips entry \"interface\" %d but only %zu interfaces",
				   ip.interface, res->n_interfaces);

	/* 0.3.x/0.4.0 carry "version"; it is derived from the address anyway, so only a
	 * contradiction is an error (the reference loopback omits it). 1.0+ has none: ignore. */
	if (v < CNI_VERSION_1_0_0) {
		r = get_opt_string(o, "version", "ips entry", &ver, err);
		if (r < 0)
			return r;
		if (!isempty(ver) && !((streq(ver, "4") && ip.address.addr.family == AF_INET) ||
				       (streq(ver, "6") && ip.address.addr.family == AF_INET6)))
			return decode_fail(err,
					   "invalid result: ips entry \"version\" \"%s\" does not match its address",
					   ver);
	}
	r = cni_result_add_ip(res, &ip.address, &ip.gateway, ip.interface);
	return r < 0 ? cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory") : 0;
}

int cni_result_from_json(json_t *j, CniVersion v, CniResult **ret, CniError *err) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	json_t *a, *e, *dns;
	size_t i;
	int r;

	if (v < 0 || v >= _CNI_VERSION_MAX)
		return cni_error_set(err, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION, "invalid result version");
	if (!json_is_object(j))
		return decode_fail(err, "invalid result: not a JSON object");
	res = cni_result_new(v);
	if (!res)
		return cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	/* Some plugins announce 0.1.0/0.2.0 but print the 0.3+ shape (the reference loopback does),
	 * and the other way round: go by what is there. */
	if (v <= CNI_VERSION_0_2_0 ? !cni_json_get(j, "interfaces") && !cni_json_get(j, "ips")
				   : (cni_json_get(j, "ip4") || cni_json_get(j, "ip6")) && !cni_json_get(j, "ips")) {
		r = parse_legacy_ip(res, cni_json_get(j, "ip4"), "ip4", AF_INET, err);
		if (r < 0)
			return r;
		r = parse_legacy_ip(res, cni_json_get(j, "ip6"), "ip6", AF_INET6, err);
		if (r < 0)
			return r;
	} else {
		a = cni_json_get(j, "interfaces");
		if (a && !json_is_null(a)) {
			if (!json_is_array(a))
				return decode_fail(err, "invalid result: \"interfaces\" is not an array");
			json_array_foreach(a, i, e) {
				r = parse_interface(res, e, err);
				if (r < 0)
					return r;
			}
		}
		a = cni_json_get(j, "ips");
		if (a && !json_is_null(a)) {
			if (!json_is_array(a))
				return decode_fail(err, "invalid result: \"ips\" is not an array");
			json_array_foreach(a, i, e) {
				r = parse_ipconfig(res, e, v, err);
				if (r < 0)
					return r;
			}
		}
		r = parse_routes(res, cni_json_get(j, "routes"), err);
		if (r < 0)
			return r;
	}

	dns = cni_json_get(j, "dns");
	if (dns && !json_is_null(dns)) {
		r = cni_dns_from_json(dns, &res->dns);
		if (r == -ENOMEM)
			return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
		if (r < 0)
			return decode_fail(err, "invalid result: malformed \"dns\"");
	}
	*ret = TAKE_PTR(res);
	return 0;
}

/* ---- printing ---- */

static int set_str(json_t *o, const char *k, const char *s) {
	return json_object_set_new(o, k, cni_json_string_lossy(s));
}

static int set_prefix(json_t *o, const char *k, const IpPrefix *p) {
	char buf[IP_PREFIX_STRLEN];
	return set_str(o, k, ip_prefix_to_string(p, buf));
}

static int set_addr(json_t *o, const char *k, const IpAddr *a) {
	char buf[IP_ADDR_STRLEN];
	return set_str(o, k, ip_addr_to_string(a, buf));
}

static json_t *route_to_json(const CniRoute *rt, CniVersion v) {
	json_t *o = json_object();

	if (!o)
		return NULL;
	if (set_prefix(o, "dst", &rt->dst) < 0)
		goto fail;
	if (ip_addr_is_set(&rt->gw) && set_addr(o, "gw", &rt->gw) < 0)
		goto fail;
	if (v >= CNI_VERSION_1_1_0) {
		if ((rt->mtu > 0 && json_object_set_new(o, "mtu", json_integer(rt->mtu)) < 0) ||
		    (rt->advmss > 0 && json_object_set_new(o, "advmss", json_integer(rt->advmss)) < 0) ||
		    (rt->priority > 0 && json_object_set_new(o, "priority", json_integer(rt->priority)) < 0) ||
		    (rt->table > 0 && json_object_set_new(o, "table", json_integer(rt->table)) < 0) ||
		    (rt->has_scope && json_object_set_new(o, "scope", json_integer(rt->scope)) < 0))
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

static json_t *legacy_ip_to_json(const CniResult *r, const CniIpConfig *ip, CniVersion v) {
	json_t *o = json_object(), *routes = NULL;

	if (!o)
		return NULL;
	if (set_prefix(o, "ip", &ip->address) < 0)
		goto fail;
	if (ip_addr_is_set(&ip->gateway) && set_addr(o, "gateway", &ip->gateway) < 0)
		goto fail;
	for (size_t i = 0; i < r->n_routes; i++) {
		if (r->routes[i].dst.addr.family != ip->address.addr.family)
			continue;
		if (!routes) {
			routes = json_array();
			if (!routes || json_object_set_new(o, "routes", routes) < 0)
				goto fail;
		}
		if (json_array_append_new(routes, route_to_json(&r->routes[i], v)) < 0)
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

static json_t *to_json_legacy(const CniResult *r, CniVersion v, json_t *o, CniError *err) {
	const CniIpConfig *ip4 = NULL, *ip6 = NULL;

	/* 0.1.0/0.2.0 hold one address per family: the first of each, as the reference converts. */
	for (size_t i = 0; i < r->n_ips; i++) {
		if (!ip4 && r->ips[i].address.addr.family == AF_INET)
			ip4 = &r->ips[i];
		else if (!ip6 && r->ips[i].address.addr.family == AF_INET6)
			ip6 = &r->ips[i];
	}
	if (!ip4 && !ip6) {
		cni_error_set(err, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION,
			      "cannot convert result to %s: no IP addresses", cni_version_to_string(v));
		json_decref(o);
		return NULL;
	}
	if ((ip4 && json_object_set_new(o, "ip4", legacy_ip_to_json(r, ip4, v)) < 0) ||
	    (ip6 && json_object_set_new(o, "ip6", legacy_ip_to_json(r, ip6, v)) < 0))
		goto oom;
	if (json_object_set_new(o, "dns", cni_dns_to_json(&r->dns)) < 0)
		goto oom;
	return o;
oom:
	json_decref(o);
	cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return NULL;
}

json_t *cni_result_to_json(const CniResult *r, CniVersion v, CniError *err) {
	json_t *o, *a, *e;

	if (v < 0 || v >= _CNI_VERSION_MAX) {
		cni_error_set(err, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION, "invalid result version");
		return NULL;
	}
	o = json_object();
	if (!o || set_str(o, "cniVersion", cni_version_to_string(v)) < 0)
		goto oom;
	if (v <= CNI_VERSION_0_2_0)
		return to_json_legacy(r, v, o, err);

	if (r->n_interfaces > 0) {
		a = json_array();
		if (!a || json_object_set_new(o, "interfaces", a) < 0)
			goto oom;
		for (size_t i = 0; i < r->n_interfaces; i++) {
			const CniInterface *in = &r->interfaces[i];

			e = json_object();
			if (!e || json_array_append_new(a, e) < 0 || set_str(e, "name", in->name) < 0 ||
			    (in->mac && set_str(e, "mac", in->mac) < 0) ||
			    (in->sandbox && set_str(e, "sandbox", in->sandbox) < 0))
				goto oom;
			if (v >= CNI_VERSION_1_1_0 &&
			    ((in->mtu > 0 && json_object_set_new(e, "mtu", json_integer(in->mtu)) < 0) ||
			     (in->socket_path && set_str(e, "socketPath", in->socket_path) < 0) ||
			     (in->pci_id && set_str(e, "pciID", in->pci_id) < 0)))
				goto oom;
		}
	}
	if (r->n_ips > 0) {
		a = json_array();
		if (!a || json_object_set_new(o, "ips", a) < 0)
			goto oom;
		for (size_t i = 0; i < r->n_ips; i++) {
			const CniIpConfig *ip = &r->ips[i];

			e = json_object();
			if (!e || json_array_append_new(a, e) < 0)
				goto oom;
			if (v < CNI_VERSION_1_0_0 &&
			    set_str(e, "version", ip->address.addr.family == AF_INET6 ? "6" : "4") < 0)
				goto oom;
			/* An index into interfaces[] means nothing when those are not printed. */
			if (ip->interface >= 0 && (size_t) ip->interface < r->n_interfaces &&
			    json_object_set_new(e, "interface", json_integer(ip->interface)) < 0)
				goto oom;
			if (set_prefix(e, "address", &ip->address) < 0 ||
			    (ip_addr_is_set(&ip->gateway) && set_addr(e, "gateway", &ip->gateway) < 0))
				goto oom;
		}
	}
	if (r->n_routes > 0) {
		a = json_array();
		if (!a || json_object_set_new(o, "routes", a) < 0)
			goto oom;
		for (size_t i = 0; i < r->n_routes; i++)
			if (json_array_append_new(a, route_to_json(&r->routes[i], v)) < 0)
				goto oom;
	}
	/* Go always prints "dns": {} (omitempty has no effect on a struct). */
	if (json_object_set_new(o, "dns", cni_dns_to_json(&r->dns)) < 0)
		goto oom;
	return o;
oom:
	json_decref(o);
	cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return NULL;
}
