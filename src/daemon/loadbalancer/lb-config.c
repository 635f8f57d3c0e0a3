/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "daemon/config-keys.h"
#include "daemon/loadbalancer/lb-config.h"

const char *lb_announce_to_string(LbAnnounce a) {
	static const char *const names[_LB_ANNOUNCE_MAX] = {
		[LB_ANNOUNCE_DEFAULT] = "default",
		[LB_ANNOUNCE_BGP] = "bgp",
		[LB_ANNOUNCE_L2] = "l2",
	};

	return a < _LB_ANNOUNCE_MAX ? names[a] : NULL;
}

LbConfig *lb_config_free(LbConfig *c) {
	if (!c)
		return NULL;
	for (size_t i = 0; i < c->n_pools; i++) {
		free((char *) c->pools[i].name);
		free((IpPrefix *) c->pools[i].cidrs);
		label_selector_free((LabelSelector *) c->pools[i].service_selector);
	}
	free(c->pools);
	free(c);
	return NULL;
}

static int parse_cidrs(json_t *v, const char *path, LbPool *p, char **ret_error) {
	IpPrefix *cidrs;
	json_t *e;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > LB_CONFIG_MAX_CIDRS)
		return cfg_error(ret_error, "%s: expected an array of 1 to %u CIDRs", path, LB_CONFIG_MAX_CIDRS);
	cidrs = calloc(json_array_size(v), sizeof(IpPrefix));
	if (!cidrs)
		return -ENOMEM;
	p->cidrs = cidrs;
	json_array_foreach(v, i, e) {
		const char *s = json_string_value(e);
		char buf[IP_PREFIX_STRLEN];
		IpPrefix m;

		if (!s || ip_prefix_parse(s, &cidrs[i]) < 0)
			return cfg_error(ret_error, "%s[%zu] \"%s\": invalid CIDR", path, i, s ?: "");
		m = ip_prefix_mask(&cidrs[i]);
		if (!ip_addr_equal(&m.addr, &cidrs[i].addr))
			return cfg_error(ret_error, "%s[%zu] \"%s\": host bits set (did you mean %s?)", path, i, s,
					 ip_prefix_to_string(&m, buf));
		p->n_cidrs++;
	}
	return 0;
}

static int parse_pool(json_t *v, size_t idx, LbPool *p, char **ret_error) {
	enum {
		P_NAME,
		P_CIDRS,
		P_SELECTOR,
		P_AUTO,
		_P_MAX
	};
	KeySpec keys[_P_MAX] = {
		[P_NAME] = { "Name", "name" },
		[P_CIDRS] = { "CIDRs", "cidrs" },
		[P_SELECTOR] = { "ServiceSelector", "serviceSelector" },
		[P_AUTO] = { "AutoAssign", "autoAssign" },
	};
	char path[64];
	const char *name;
	int r;

	snprintf(path, sizeof(path), "LoadBalancer.Pools[%zu]", idx);
	if (!json_is_object(v))
		return cfg_error(ret_error, "%s: expected an object, got %s", path, cfg_json_kind(v));
	r = cfg_collect_keys(v, path, keys, _P_MAX, ret_error);
	if (r < 0)
		return r;
	if (!keys[P_NAME].value || !keys[P_CIDRS].value)
		return cfg_error(ret_error, "%s: Name and CIDRs are required", path);
	snprintf(path, sizeof(path), "LoadBalancer.Pools[%zu].Name", idx);
	r = cfg_get_string(&keys[P_NAME], path, &name, ret_error);
	if (r < 0)
		return r;
	if (!dns_label_valid(name))
		return cfg_error(ret_error, "%s \"%.64s\": not a DNS label (a-z, 0-9 and '-', at most 63)", path, name);
	if (!(p->name = strdup(name)))
		return -ENOMEM;
	snprintf(path, sizeof(path), "LoadBalancer.Pools[%zu].CIDRs", idx);
	r = parse_cidrs(keys[P_CIDRS].value, path, p, ret_error);
	if (r < 0)
		return r;
	if (keys[P_SELECTOR].value) {
		LabelSelector *sel = NULL;
		DecodeError err = {};

		snprintf(path, sizeof(path), "LoadBalancer.Pools[%zu].ServiceSelector", idx);
		r = label_selector_parse(keys[P_SELECTOR].value, path, &sel, &err);
		if (r == -EINVAL)
			return cfg_error(ret_error, "%s", err.text);
		if (r < 0)
			return r;
		p->service_selector = sel;
	}
	p->auto_assign = true;
	if (keys[P_AUTO].value) {
		snprintf(path, sizeof(path), "LoadBalancer.Pools[%zu].AutoAssign", idx);
		r = cfg_get_bool(&keys[P_AUTO], path, &p->auto_assign, ret_error);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Pool names are unique, and no two pool networks overlap (an address would belong to two). */
static int check_pools(const LbConfig *c, char **ret_error) {
	for (size_t i = 0; i < c->n_pools; i++)
		for (size_t k = 0; k < i; k++) {
			if (streq(c->pools[i].name, c->pools[k].name))
				return cfg_error(ret_error, "LoadBalancer.Pools[%zu].Name \"%s\": repeats Pools[%zu]",
						 i, c->pools[i].name, k);
			for (size_t a = 0; a < c->pools[i].n_cidrs; a++)
				for (size_t b = 0; b < c->pools[k].n_cidrs; b++) {
					char x[IP_PREFIX_STRLEN], y[IP_PREFIX_STRLEN];

					if (c->pools[i].cidrs[a].addr.family != c->pools[k].cidrs[b].addr.family ||
					    !ip_prefix_overlaps(&c->pools[i].cidrs[a], &c->pools[k].cidrs[b]))
						continue;
					return cfg_error(
							ret_error,
							"LoadBalancer.Pools[%zu].CIDRs[%zu] %s: overlaps %s of pool %s",
							i, a, ip_prefix_to_string(&c->pools[i].cidrs[a], x),
							ip_prefix_to_string(&c->pools[k].cidrs[b], y),
							c->pools[k].name);
				}
		}
	return 0;
}

int lb_config_parse(json_t *v, LbConfig **ret, char **ret_error) {
	enum {
		L_POOLS,
		L_ANNOUNCE,
		_L_MAX
	};
	KeySpec keys[_L_MAX] = {
		[L_POOLS] = { "Pools", "pools" },
		[L_ANNOUNCE] = { "Announce", "announce" },
	};
	_cleanup_(lb_config_freep) LbConfig *c = NULL;
	json_t *e;
	size_t i;
	int r;

	if (!json_is_object(v))
		return cfg_error(ret_error, "LoadBalancer: expected an object, got %s", cfg_json_kind(v));
	r = cfg_collect_keys(v, "LoadBalancer", keys, _L_MAX, ret_error);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (!json_is_array(keys[L_POOLS].value) || json_array_size(keys[L_POOLS].value) == 0 ||
	    json_array_size(keys[L_POOLS].value) > LB_CONFIG_MAX_POOLS)
		return cfg_error(ret_error, "LoadBalancer.Pools: expected an array of 1 to %u pools",
				 LB_CONFIG_MAX_POOLS);
	c->pools = calloc(json_array_size(keys[L_POOLS].value), sizeof(LbPool));
	if (!c->pools)
		return -ENOMEM;
	json_array_foreach(keys[L_POOLS].value, i, e) {
		c->n_pools++;
		r = parse_pool(e, i, &c->pools[i], ret_error);
		if (r < 0)
			return r;
	}
	r = check_pools(c, ret_error);
	if (r < 0)
		return r;
	if (keys[L_ANNOUNCE].value) {
		const char *s;

		r = cfg_get_string(&keys[L_ANNOUNCE], "LoadBalancer.Announce", &s, ret_error);
		if (r < 0)
			return r;
		if (streq(s, "bgp"))
			c->announce = LB_ANNOUNCE_BGP;
		else if (streq(s, "l2"))
			c->announce = LB_ANNOUNCE_L2;
		else
			return cfg_error(ret_error, "LoadBalancer.Announce \"%.32s\": expected \"bgp\" or \"l2\"", s);
	}
	*ret = TAKE_PTR(c);
	return 0;
}

int lb_config_check_overlap(const LbConfig *c, const IpPrefix *net, const char *what, char **ret_error) {
	char x[IP_PREFIX_STRLEN], y[IP_PREFIX_STRLEN];

	for (size_t i = 0; c && i < c->n_pools; i++)
		for (size_t k = 0; k < c->pools[i].n_cidrs; k++)
			if (c->pools[i].cidrs[k].addr.family == net->addr.family &&
			    ip_prefix_overlaps(&c->pools[i].cidrs[k], net)) {
				(void) cfg_error(ret_error, "LoadBalancer pool %s: %s overlaps %s %s", c->pools[i].name,
						 ip_prefix_to_string(&c->pools[i].cidrs[k], x), what,
						 ip_prefix_to_string(net, y));
				return -EEXIST;
			}
	return 0;
}
