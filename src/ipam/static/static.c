/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `static` IPAM plugin: addresses come from the config (ipam.addresses), CNI_ARGS
 * (IP=a/len,b/len and GATEWAY=g,...), args.cni.ips or runtimeConfig.ips, exactly in the
 * reference's precedence (LoadIPAMConfig):
 *   ipam.addresses, plus CNI_ARGS IPs appended; CNI_ARGS GATEWAY sets the gateway of every
 *   address so far whose subnet contains it; then args.cni.ips REPLACES the list, then
 *   runtimeConfig.ips replaces it again.
 * Every address must be in CIDR notation. ADD prints ips/routes/dns; DEL, GC and STATUS do
 * nothing; CHECK verifies the configured addresses (and gateways) are in prevResult.
 *
 * We do not use req->req_ips: the request parser drops the prefix length, which is exactly what
 * static needs, so the three sources are re-read here.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-plugin.h"

typedef struct StaticAddr {
	IpPrefix address;
	IpAddr gateway; /* AF_UNSPEC = none */
} StaticAddr;

typedef struct StaticConf {
	StaticAddr *addrs;
	size_t n_addrs;
	CniResult *extra; /* routes and dns, parsed with the result parser */
} StaticConf;

static void static_conf_done(void *userdata) {
	StaticConf *c = userdata;

	free(c->addrs);
	cni_result_free(c->extra);
}

static int addr_append(CniRequest *req, StaticConf *c, const IpPrefix *p, const IpAddr *gw) {
	StaticAddr *n = reallocarray(c->addrs, c->n_addrs + 1, sizeof(*n));

	if (!n)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	c->addrs = n;
	c->addrs[c->n_addrs++] = (StaticAddr) { .address = *p, .gateway = gw ? *gw : (IpAddr) {} };
	return 0;
}

/* args.cni.ips / runtimeConfig.ips: a non-empty array replaces every address so far. */
static int addrs_from_ips(CniRequest *req, StaticConf *c, json_t *ips, const char *where) {
	json_t *e;
	size_t i;
	int r;

	if (!json_is_array(ips) || json_array_size(ips) == 0)
		return 0;
	c->n_addrs = 0;
	json_array_foreach(ips, i, e) {
		const char *s = json_string_value(e);
		IpPrefix p;

		if (!s || ip_prefix_parse(s, &p) < 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"%s.ips[%zu]: an entry in the 'ips' field is NOT in CIDR notation, got: '%s'",
					where, i, s ?: "(not a string)");
		r = addr_append(req, c, &p, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/* CNI_ARGS IP=10.1.0.5/24,fd00::5/64 and GATEWAY=10.1.0.1. The generic CNI_ARGS parser accepted
 * the syntax already (GATEWAY is a known key there). */
static int addrs_from_cni_args(CniRequest *req, StaticConf *c) {
	_cleanup_strv_free_ char **pairs = NULL;
	int r;

	if (isempty(req->args_raw))
		return 0;
	r = strv_split(req->args_raw, ";", &pairs);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
	for (int pass = 0; pass < 2; pass++)
		for (char **p = pairs; *p; p++) {
			_cleanup_strv_free_ char **l = NULL;
			const char *v;

			v = startswith(*p, pass == 0 ? "IP=" : "GATEWAY=");
			if (!v)
				continue;
			r = strv_split(v, ",", &l);
			if (r < 0)
				return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
			for (char **i = l; *i; i++) {
				IpPrefix pfx;
				IpAddr gw;

				if (pass == 0) {
					if (ip_prefix_parse(*i, &pfx) < 0)
						return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV,
								"CNI_ARGS IP: invalid CIDR %s", *i);
					r = addr_append(req, c, &pfx, NULL);
					if (r < 0)
						return r;
					continue;
				}
				if (ip_addr_parse(*i, &gw) < 0)
					return cni_fail(req, -EINVAL, CNI_ERR_INVALID_ENV,
							"CNI_ARGS GATEWAY: invalid gateway address: %s", *i);
				for (size_t k = 0; k < c->n_addrs; k++)
					if (c->addrs[k].address.addr.family == gw.family &&
					    ip_prefix_contains(&c->addrs[k].address, &gw))
						c->addrs[k].gateway = gw;
			}
		}
	return 0;
}

static int static_parse(CniRequest *req, void *userdata) {
	StaticConf *c = userdata;
	_cleanup_(json_decrefp) json_t *fake = NULL;
	json_t *addrs, *e, *args, *rc;
	CniError err = {};
	unsigned n4 = 0, n6 = 0;
	size_t i;
	int r;

	if (!json_is_object(req->ipam))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "IPAM config missing 'ipam' key");

	addrs = cni_json_get(req->ipam, "addresses");
	if (addrs && !json_is_null(addrs) && !json_is_array(addrs))
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "ipam.addresses is invalid: not an array");
	json_array_foreach(addrs, i, e) {
		json_t *a = cni_json_get(e, "address"), *g = cni_json_get(e, "gateway");
		IpPrefix p;
		IpAddr gw = {};

		if (!json_is_string(a) || ip_prefix_parse(json_string_value(a), &p) < 0)
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.addresses[%zu]: the 'address' field is expected to be in CIDR notation, got: '%s'",
					i, json_is_string(a) ? json_string_value(a) : "(missing)");
		if (g && !json_is_null(g) && (!json_is_string(g) || ip_addr_parse(json_string_value(g), &gw) < 0))
			return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
					"ipam.addresses[%zu].gateway: invalid IP address: %s", i,
					json_is_string(g) ? json_string_value(g) : "(not a string)");
		r = addr_append(req, c, &p, &gw);
		if (r < 0)
			return r;
	}

	r = addrs_from_cni_args(req, c);
	if (r < 0)
		return r;
	args = cni_json_get(cni_json_get(req->config, "args"), "cni");
	r = addrs_from_ips(req, c, cni_json_get(args, "ips"), "args.cni");
	if (r < 0)
		return r;
	rc = cni_json_get(req->config, "runtimeConfig");
	r = addrs_from_ips(req, c, cni_json_get(rc, "ips"), "runtimeConfig");
	if (r < 0)
		return r;

	for (i = 0; i < c->n_addrs; i++)
		if (c->addrs[i].address.addr.family == AF_INET)
			n4++;
		else
			n6++;
	if ((n4 > 1 || n6 > 1) && req->version < CNI_VERSION_0_3_0)
		return cni_fail(req, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION,
				"CNI version %s does not support more than 1 address per family",
				cni_version_to_string(req->version));

	/* routes and dns have the result's shape: let the result parser validate them. */
	fake = json_object();
	if (!fake)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if ((e = cni_json_get(req->ipam, "routes")) && json_object_set(fake, "routes", e) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if ((e = cni_json_get(req->ipam, "dns")) && json_object_set(fake, "dns", e) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = cni_result_from_json(fake, CNI_VERSION_LATEST, &c->extra, &err);
	if (r < 0) {
		r = cni_fail(req, r, CNI_ERR_INVALID_NETCONF, "ipam.routes/ipam.dns are invalid: %s",
			     err.msg ?: "bad value");
		cni_error_clear(&err);
		return r;
	}
	return 0;
}

static int static_add(CniRequest *req, void *userdata, CniResult **ret) {
	StaticConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL;

	res = cni_result_new(req->version);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < c->n_addrs; i++)
		if (cni_result_add_ip(res, &c->addrs[i].address, &c->addrs[i].gateway, -1) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	for (size_t i = 0; i < c->extra->n_routes; i++)
		if (cni_result_add_route(res, &c->extra->routes[i]) < 0)
			return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (cni_dns_merge(&res->dns, &c->extra->dns) < 0)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	*ret = TAKE_PTR(res);
	return 0;
}

/* Reference cmdCheck: every configured address must be in prevResult, with the configured
 * gateway if one is set. */
static int static_check(CniRequest *req, void *userdata) {
	StaticConf *c = userdata;
	const CniResult *p = req->prev_result;

	if (!p)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "Required prevResult missing");
	for (size_t i = 0; i < c->n_addrs; i++) {
		const StaticAddr *a = &c->addrs[i];
		char as[IP_PREFIX_STRLEN];
		bool found = false;

		for (size_t k = 0; k < p->n_ips && !found; k++) {
			if (!ip_addr_equal(&p->ips[k].address.addr, &a->address.addr))
				continue;
			if (a->gateway.family != AF_UNSPEC && !ip_addr_equal(&a->gateway, &p->ips[k].gateway))
				return cni_fail(req, -EINVAL, CNI_ERR_INTERNAL,
						"static: Failed to match addr %s on interface %s (gateway differs)",
						ip_prefix_to_string(&a->address, as), req->ifname ?: "");
			found = true;
		}
		if (!found)
			return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL,
					"static: Failed to match addr %s on interface %s: not in prevResult",
					ip_prefix_to_string(&a->address, as), req->ifname ?: "");
	}
	return 0;
}

static int static_noop(CniRequest *req, void *userdata) {
	return 0;
}

static const PluginOps static_ops = {
	.name = "static",
	.about = "CNI static IPAM plugin (weft)",
	.conf_size = sizeof(StaticConf),
	.parse = static_parse,
	.conf_done = static_conf_done,
	.add = static_add,
	.del = static_noop,
	.check = static_check,
	.gc = static_noop,
	.status = static_noop,
};

int main(int argc, char *argv[]) {
	return plugin_main(&static_ops, argc, argv);
}
