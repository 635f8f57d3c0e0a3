/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/ipam/ipam-config.h"

/* Go's encoding/json matches object keys case-insensitively (exact match preferred); the
 * reference host-local therefore accepts "RangeStart" or "DATADIR", and so do we. */
static json_t *obj_get(json_t *o, const char *key) {
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return NULL;
	v = json_object_get(o, key);
	if (v)
		return v;
	json_object_foreach(o, k, v)
		if (strcasecmp(k, key) == 0)
			return v;
	return NULL;
}

/* An IPv4-mapped IPv6 literal is the IPv4 address, as Go's To4() sees it. */
static void addr_canonicalize(IpAddr *a) {
	if (a->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a->in6)) {
		IpAddr v4 = { .family = AF_INET };

		memcpy(&v4.in, a->bytes + 12, 4);
		*a = v4;
	}
}

/* Optional string key: absent or null leaves *ret alone; anything else but a string errors. */
static int get_string(json_t *o, const char *key, const char *ctx, const char **ret, IpamError *err) {
	json_t *v = obj_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return ipam_error_set(err, -EINVAL, "%s.%s: expected a string", ctx, key);
	*ret = json_string_value(v);
	return 0;
}

static int get_addr(json_t *o, const char *key, const char *ctx, IpAddr *ret, IpamError *err) {
	const char *s = NULL;
	int r = get_string(o, key, ctx, &s, err);

	if (r < 0 || !s)
		return r;
	if (ip_addr_parse(s, ret) < 0)
		return ipam_error_set(err, -EINVAL, "%s.%s: invalid IP address \"%s\"", ctx, key, s);
	addr_canonicalize(ret);
	return 0;
}

static int get_prefix(json_t *o, const char *key, const char *ctx, bool required, IpPrefix *ret, IpamError *err) {
	const char *s = NULL;
	int r = get_string(o, key, ctx, &s, err);

	if (r < 0)
		return r;
	if (!s) {
		if (required)
			return ipam_error_set(err, -EINVAL, "%s.%s: missing", ctx, key);
		return 0;
	}
	if (ip_prefix_parse(s, ret) < 0)
		return ipam_error_set(err, -EINVAL, "%s.%s: invalid CIDR address \"%s\"", ctx, key, s);
	if (ret->addr.family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&ret->addr.in6) && ret->len >= 96) {
		addr_canonicalize(&ret->addr);
		ret->len -= 96;
	}
	return 0;
}

static int range_from_json(json_t *o, const char *ctx, IpamRange *ret, IpamError *err) {
	IpamRange rg = {};
	int r;

	if (!json_is_object(o))
		return ipam_error_set(err, -EINVAL, "%s: expected a range object {\"subnet\": ...}", ctx);
	r = get_prefix(o, "subnet", ctx, true, &rg.subnet, err);
	if (r >= 0)
		r = get_addr(o, "rangeStart", ctx, &rg.start, err);
	if (r >= 0)
		r = get_addr(o, "rangeEnd", ctx, &rg.end, err);
	if (r >= 0)
		r = get_addr(o, "gateway", ctx, &rg.gateway, err);
	if (r < 0)
		return r;
	*ret = rg;
	return 0;
}

static int sets_append(IpamRangeSet **sets, size_t *n, IpamRangeSet *s) {
	IpamRangeSet *ns = reallocarray(*sets, *n + 1, sizeof(**sets));

	if (!ns)
		return -ENOMEM;
	*sets = ns;
	ns[(*n)++] = *s;
	*s = (IpamRangeSet) {};
	return 0;
}

int ipam_range_sets_from_json(json_t *arr, const char *key, IpamRangeSet **sets, size_t *n_sets, IpamError *err) {
	size_t i, j;
	json_t *set, *rg;
	int r;

	if (!json_is_array(arr))
		return ipam_error_set(err, -EINVAL, "%s: expected an array of range sets", key);
	json_array_foreach(arr, i, set) {
		IpamRangeSet s = {};
		char ctx[256];

		snprintf(ctx, sizeof(ctx), "%s[%zu]", key, i);
		if (!json_is_array(set))
			return ipam_error_set(err, -EINVAL, "%s: expected an array of ranges", ctx);
		s.key = strdup(ctx);
		s.ranges = calloc(MAX(json_array_size(set), 1u), sizeof(IpamRange));
		if (!s.key || !s.ranges) {
			ipam_range_set_done(&s);
			return -ENOMEM;
		}
		json_array_foreach(set, j, rg) {
			char rctx[300];

			snprintf(rctx, sizeof(rctx), "%s[%zu]", ctx, j);
			r = range_from_json(rg, rctx, &s.ranges[j], err);
			if (r < 0) {
				ipam_range_set_done(&s);
				return r;
			}
			s.n_ranges++;
		}
		r = sets_append(sets, n_sets, &s);
		if (r < 0) {
			ipam_range_set_done(&s);
			return r;
		}
	}
	return 0;
}

static int legacy_range(json_t *ipam, IpamRangeSet **sets, size_t *n_sets, IpamError *err) {
	IpamRangeSet s = { .flat = true };
	int r;

	if (!obj_get(ipam, "subnet") || json_is_null(obj_get(ipam, "subnet")))
		return 0; /* the reference ignores rangeStart & co. without a subnet */
	s.ranges = calloc(1, sizeof(IpamRange));
	s.key = strdup("ipam");
	if (!s.ranges || !s.key) {
		ipam_range_set_done(&s);
		return -ENOMEM;
	}
	r = range_from_json(ipam, "ipam", &s.ranges[0], err);
	if (r >= 0) {
		s.n_ranges = 1;
		r = sets_append(sets, n_sets, &s);
	}
	ipam_range_set_done(&s);
	return r;
}

static int routes_from_json(json_t *arr, IpamConfig *c, IpamError *err) {
	json_t *o;
	size_t i;
	int r;

	if (!arr || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return ipam_error_set(err, -EINVAL, "ipam.routes: expected an array of {\"dst\", \"gw\"}");
	c->routes = calloc(MAX(json_array_size(arr), 1u), sizeof(CniRoute));
	if (!c->routes)
		return -ENOMEM;
	json_array_foreach(arr, i, o) {
		CniRoute rt = {};
		char ctx[64];

		snprintf(ctx, sizeof(ctx), "ipam.routes[%zu]", i);
		if (!json_is_object(o))
			return ipam_error_set(err, -EINVAL, "%s: expected an object {\"dst\", \"gw\"}", ctx);
		r = get_prefix(o, "dst", ctx, true, &rt.dst, err);
		if (r >= 0)
			r = get_addr(o, "gw", ctx, &rt.gw, err);
		if (r < 0)
			return r;
		if (ip_addr_is_set(&rt.gw) && rt.gw.family != rt.dst.addr.family)
			return ipam_error_set(err, -EINVAL, "%s.gw: address family differs from dst", ctx);
		/* 1.1.0 route attributes, carried through when present. */
		static const struct {
			const char *key;
			size_t off;
		} ints[] = {
			{ "mtu", offsetof(CniRoute, mtu) },           { "advmss", offsetof(CniRoute, advmss) },
			{ "priority", offsetof(CniRoute, priority) }, { "table", offsetof(CniRoute, table) },
			{ "scope", offsetof(CniRoute, scope) },
		};
		for (size_t k = 0; k < ELEMENTSOF(ints); k++) {
			json_t *v = obj_get(o, ints[k].key);

			if (!v || json_is_null(v))
				continue;
			if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
				return ipam_error_set(err, -EINVAL, "%s.%s: expected a non-negative integer", ctx,
						      ints[k].key);
			*(int *) ((char *) &rt + ints[k].off) = (int) json_integer_value(v);
			if (streq(ints[k].key, "scope"))
				rt.has_scope = true;
		}
		c->routes[c->n_routes++] = rt;
	}
	return 0;
}

static int dup_string(json_t *ipam, const char *key, const char *def, char **ret, IpamError *err) {
	const char *s = NULL;
	int r = get_string(ipam, key, "ipam", &s, err);

	if (r < 0)
		return r;
	if (isempty(s))
		s = def;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int ipam_config_parse(json_t *ipam, json_t *rc_ip_ranges, const char *net_name, CniVersion version, IpamConfig **ret,
		      IpamError *err) {
	_cleanup_(ipam_config_freep) IpamConfig *c = NULL;
	json_t *ranges;
	size_t n4 = 0, n6 = 0;
	int r;

	if (!json_is_object(ipam))
		return ipam_error_set(err, -EINVAL, "IPAM config missing 'ipam' key");
	if (isempty(net_name) || strchr(net_name, '/') || streq(net_name, ".") || streq(net_name, ".."))
		return ipam_error_set(err, -EINVAL, "name: \"%s\" cannot be used as a store directory name",
				      net_name ?: "");

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->name = strdup(net_name);
	if (!c->name)
		return -ENOMEM;
	r = dup_string(ipam, "dataDir", IPAM_DEFAULT_DATA_DIR, &c->data_dir, err);
	if (r < 0)
		return r;
	r = dup_string(ipam, "resolvConf", NULL, &c->resolv_conf, err);
	if (r < 0)
		return r;

	/* Order matters: it fixes each set's index, hence its last_reserved_ip.N file. */
	if (rc_ip_ranges && !json_is_null(rc_ip_ranges) &&
	    !(json_is_array(rc_ip_ranges) && json_array_size(rc_ip_ranges) == 0)) {
		r = ipam_range_sets_from_json(rc_ip_ranges, "runtimeConfig.ipRanges", &c->range_sets, &c->n_range_sets,
					      err);
		if (r < 0)
			return r;
	}
	r = legacy_range(ipam, &c->range_sets, &c->n_range_sets, err);
	if (r < 0)
		return r;
	ranges = obj_get(ipam, "ranges");
	if (ranges && !json_is_null(ranges)) {
		r = ipam_range_sets_from_json(ranges, "ipam.ranges", &c->range_sets, &c->n_range_sets, err);
		if (r < 0)
			return r;
	}
	if (c->n_range_sets == 0)
		return ipam_error_set(
				err, -EINVAL,
				"ipam: no IP ranges specified (need ipam.ranges, ipam.subnet or runtimeConfig.ipRanges)");

	for (size_t i = 0; i < c->n_range_sets; i++) {
		r = ipam_range_set_canonicalize(&c->range_sets[i], err);
		if (r < 0)
			return r;
		if (ipam_range_set_family(&c->range_sets[i]) == AF_INET)
			n4++;
		else
			n6++;
	}
	if ((n4 > 1 || n6 > 1) && (int) version < (int) CNI_VERSION_0_3_0)
		return ipam_error_set(
				err, -EINVAL,
				"cniVersion: versions before 0.3.0 support only one address per family, but %zu IPv4 and %zu IPv6 range sets are configured",
				n4, n6);
	for (size_t i = 0; i < c->n_range_sets; i++)
		for (size_t j = i + 1; j < c->n_range_sets; j++)
			if (ipam_range_set_overlaps(&c->range_sets[i], &c->range_sets[j])) {
				char a[512], b[512];

				return ipam_error_set(err, -EINVAL, "%s (%s) overlaps with %s (%s)",
						      c->range_sets[i].key,
						      ipam_range_set_to_string(&c->range_sets[i], a, sizeof(a)),
						      c->range_sets[j].key,
						      ipam_range_set_to_string(&c->range_sets[j], b, sizeof(b)));
			}

	r = routes_from_json(obj_get(ipam, "routes"), c, err);
	if (r < 0)
		return r;

	*ret = TAKE_PTR(c);
	return 0;
}

int ipam_config_check_subnets(const IpamConfig *c, IpamError *err) {
	for (size_t i = 0; i < c->n_range_sets; i++) {
		int r = ipam_range_set_check_subnets(&c->range_sets[i], err);

		if (r < 0)
			return r;
	}
	return 0;
}

IpamConfig *ipam_config_free(IpamConfig *c) {
	if (!c)
		return NULL;
	free(c->name);
	free(c->data_dir);
	free(c->resolv_conf);
	for (size_t i = 0; i < c->n_range_sets; i++)
		ipam_range_set_done(&c->range_sets[i]);
	free(c->range_sets);
	free(c->routes);
	return mfree(c);
}

void ipam_dns_done(CniDns *d) {
	if (!d)
		return;
	d->nameservers = strv_free(d->nameservers);
	d->domain = mfree(d->domain);
	d->search = strv_free(d->search);
	d->options = strv_free(d->options);
}

int ipam_resolv_conf_parse(const char *path, CniDns *ret) {
	_cleanup_free_ char *data = NULL;
	CniDns dns = {};
	char *line, *save = NULL;
	int r;

	r = read_full_file(path, &data, NULL);
	if (r < 0)
		return r;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		_cleanup_strv_free_ char **f = NULL;

		while (isspace((unsigned char) *line))
			line++;
		if (*line == 0 || *line == '#' || *line == ';')
			continue;
		r = strv_split(line, " \t\r\v\f", &f);
		if (r < 0)
			goto fail;
		if (strv_length(f) < 2)
			continue;
		if (streq(f[0], "nameserver"))
			r = strv_extend(&dns.nameservers, f[1]);
		else if (streq(f[0], "domain")) {
			free(dns.domain);
			dns.domain = strdup(f[1]);
			r = dns.domain ? 0 : -ENOMEM;
		} else if (streq(f[0], "search") || streq(f[0], "options")) {
			char ***l = streq(f[0], "search") ? &dns.search : &dns.options;

			for (size_t i = 1; f[i] && r >= 0; i++)
				r = strv_extend(l, f[i]);
		}
		if (r < 0)
			goto fail;
	}
	*ret = dns;
	return 0;
fail:
	ipam_dns_done(&dns);
	return r;
}
