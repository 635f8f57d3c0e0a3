/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "daemon/config-keys.h"
#include "daemon/loadbalancer/lb-config.h"
#include "daemon/network-config.h"
#include "daemon/wireguard/wg-key.h"

#define SUBNET_LEN_MAX4 30u
#define SUBNET_LEN_MAX6 126u

static int parse_network(const KeySpec *k, int family, IpPrefix *ret, char **ret_error) {
	char buf[IP_PREFIX_STRLEN];
	const char *s = NULL;
	IpPrefix p, m;
	int r;

	r = cfg_get_string(k, k->name, &s, ret_error);
	if (r < 0)
		return r;
	if (ip_prefix_parse(s, &p) < 0)
		return cfg_error(ret_error, "%s \"%s\": invalid CIDR", k->name, s);
	if (p.addr.family != family)
		return cfg_error(ret_error, "%s \"%s\": not an %s network", k->name, s,
				 family == AF_INET ? "IPv4" : "IPv6");
	m = ip_prefix_mask(&p);
	if (!ip_addr_equal(&m.addr, &p.addr))
		return cfg_error(ret_error, "%s \"%s\": host bits set (did you mean %s?)", k->name, s,
				 ip_prefix_to_string(&m, buf));
	*ret = p;
	return 0;
}

static int parse_subnet_len(const KeySpec *k, const IpPrefix *net, unsigned max, unsigned *ret, char **ret_error) {
	char buf[IP_PREFIX_STRLEN];
	long long v;
	int r;

	r = cfg_get_int(k, k->name, 0, 128, &v, ret_error);
	if (r < 0)
		return r;
	if (v > max)
		return cfg_error(ret_error, "%s %lld: too long (at most %u)", k->name, v, max);
	if (v < net->len)
		return cfg_error(ret_error, "%s %lld: subnet length larger than the network %s", k->name, v,
				 ip_prefix_to_string(net, buf));
	*ret = (unsigned) v;
	return 0;
}

static int parse_subnet_bound(const KeySpec *k, const NetworkConfig *cfg, IpAddr *ret, char **ret_error) {
	char buf[IP_PREFIX_STRLEN];
	IpPrefix sub;
	const char *s = NULL;
	IpAddr a;
	int r;

	r = cfg_get_string(k, k->name, &s, ret_error);
	if (r < 0)
		return r;
	/* Flannel writes these as plain addresses; tolerate "a.b.c.d/len" with the subnet length. */
	if (ip_addr_parse(s, &a) < 0) {
		if (ip_prefix_parse(s, &sub) < 0)
			return cfg_error(ret_error, "%s \"%s\": invalid IP address", k->name, s);
		a = sub.addr;
	}
	if (a.family != AF_INET)
		return cfg_error(ret_error, "%s \"%s\": not an IPv4 address", k->name, s);
	if (!ip_prefix_contains(&cfg->network, &a))
		return cfg_error(ret_error, "%s \"%s\": outside Network %s", k->name, s,
				 ip_prefix_to_string(&cfg->network, buf));
	sub = (IpPrefix) { .addr = a, .len = (uint8_t) cfg->subnet_len };
	sub = ip_prefix_mask(&sub);
	if (!ip_addr_equal(&sub.addr, &a))
		return cfg_error(ret_error, "%s \"%s\": not the start of a /%u subnet (did you mean %s?)", k->name, s,
				 cfg->subnet_len, ip_addr_to_string(&sub.addr, buf));
	*ret = a;
	return 0;
}

enum {
	K_NETWORK,
	K_NETWORK6,
	K_SUBNET_LEN,
	K_SUBNET_LEN6,
	K_SUBNET_MIN,
	K_SUBNET_MAX,
	K_BACKEND,
	K_MASQUERADE,
	K_LOAD_BALANCER,
	_K_MAX,
};

enum {
	B_TYPE,
	B_VNI,
	B_PORT,
	B_DIRECT_ROUTING,
	B_MTU,
	B_AS_NUMBER,
	B_PEERS,
	B_ROUTE_REFLECTORS,
	B_PSK,
	B_LISTEN_PORT,
	B_LISTEN_PORT6,
	B_MODE,
	B_KEEPALIVE,
	_B_MAX,
};

#define BACKEND_TYPES "\"vxlan\", \"host-gw\", \"udp\", \"ipip\", \"bgp\" or \"wireguard\""

/* Flannel's wireguard keys. The PSK is a secret: its errors never show the value. */
static int parse_wireguard(KeySpec *keys, NetworkBackendConfig *b, char **ret_error) {
	const char *s = NULL;
	long long v;
	int r;

	b->listen_port = 51820;
	b->listen_port6 = 51821;
	if (keys[B_LISTEN_PORT].value) {
		r = cfg_get_int(&keys[B_LISTEN_PORT], "Backend.ListenPort", 1, 65535, &v, ret_error);
		if (r < 0)
			return r;
		b->listen_port = (uint16_t) v;
	}
	if (keys[B_LISTEN_PORT6].value) {
		r = cfg_get_int(&keys[B_LISTEN_PORT6], "Backend.ListenPortV6", 1, 65535, &v, ret_error);
		if (r < 0)
			return r;
		b->listen_port6 = (uint16_t) v;
	}
	if (keys[B_MODE].value) {
		r = cfg_get_string(&keys[B_MODE], "Backend.Mode", &s, ret_error);
		if (r < 0)
			return r;
		if (wireguard_mode_from_string(s, &b->mode) < 0)
			return cfg_error(ret_error,
					 "Backend.Mode \"%s\": unknown mode (expected \"separate\", \"auto\", \"ipv4\" "
					 "or \"ipv6\")",
					 s);
	}
	if (b->mode == WIREGUARD_MODE_SEPARATE && b->listen_port == b->listen_port6)
		return cfg_error(ret_error,
				 "Backend.ListenPortV6 %u: the same as ListenPort (Mode \"separate\" needs two ports)",
				 b->listen_port6);
	if (keys[B_KEEPALIVE].value) {
		r = cfg_get_int(&keys[B_KEEPALIVE], "Backend.PersistentKeepaliveInterval", 0, 65535, &v, ret_error);
		if (r < 0)
			return r;
		b->keepalive_sec = (uint16_t) v;
	}
	if (keys[B_PSK].value) {
		WgKey k;

		r = cfg_get_string(&keys[B_PSK], "Backend.PSK", &s, ret_error);
		if (r < 0)
			return r;
		if (wg_key_from_base64(s, &k) < 0)
			return cfg_error(ret_error,
					 "Backend.PSK (%zu characters, not shown): not 32 bytes of base64 "
					 "(make one with `wg genpsk`)",
					 strlen(s));
		if (wg_key_is_zero(&k))
			return cfg_error(ret_error, "Backend.PSK (not shown): all zeros");
		memcpy(b->psk, k.b, sizeof(b->psk));
		b->has_psk = true;
		wg_key_wipe(&k);
	}
	return 0;
}

static int parse_backend(json_t *obj, const NetworkConfig *cfg, NetworkBackendConfig *b, char **ret_error) {
	KeySpec keys[_B_MAX] = {
		[B_TYPE] = { "Type", "type" },
		[B_VNI] = { "VNI", "vni" },
		[B_PORT] = { "Port", "port" },
		[B_DIRECT_ROUTING] = { "DirectRouting", "directRouting" },
		[B_MTU] = { "MTU", "mtu" },
		[B_AS_NUMBER] = { "ASNumber", "asNumber" },
		[B_PEERS] = { "Peers", "peers" },
		[B_ROUTE_REFLECTORS] = { "RouteReflectors", "routeReflectors" },
		[B_PSK] = { "PSK", "psk" },
		[B_LISTEN_PORT] = { "ListenPort", "listenPort" },
		[B_LISTEN_PORT6] = { "ListenPortV6", "listenPortV6" },
		[B_MODE] = { "Mode", "mode" },
		[B_KEEPALIVE] = { "PersistentKeepaliveInterval", "persistentKeepaliveInterval" },
	};
	const char *s = NULL;
	long long v;
	int r;

	if (!json_is_object(obj))
		return cfg_error(ret_error, "Backend: expected an object, got %s", cfg_json_kind(obj));
	r = cfg_collect_keys(obj, "Backend", keys, ELEMENTSOF(keys), ret_error);
	if (r < 0)
		return r;

	if (!keys[B_TYPE].value)
		return cfg_error(ret_error, "Backend.Type: required (" BACKEND_TYPES ")");
	r = cfg_get_string(&keys[B_TYPE], "Backend.Type", &s, ret_error);
	if (r < 0)
		return r;
	if (network_backend_type_from_string(s, &b->type) < 0)
		return cfg_error(ret_error, "Backend.Type \"%s\": unknown backend type (expected " BACKEND_TYPES ")",
				 s);

	if (keys[B_VNI].value) {
		r = cfg_get_int(&keys[B_VNI], "Backend.VNI", 0, 16777215, &v, ret_error);
		if (r < 0)
			return r;
		b->vni = (uint32_t) v;
	}
	if (keys[B_PORT].value) {
		r = cfg_get_int(&keys[B_PORT], "Backend.Port", 1, 65535, &v, ret_error);
		if (r < 0)
			return r;
		b->port = (uint16_t) v;
	} else if (b->type == NETWORK_BACKEND_UDP)
		b->port = 8285; /* Flannel's udp default */
	if (keys[B_DIRECT_ROUTING].value) {
		r = cfg_get_bool(&keys[B_DIRECT_ROUTING], "Backend.DirectRouting", &b->direct_routing, ret_error);
		if (r < 0)
			return r;
	}
	if (keys[B_AS_NUMBER].value) {
		/* 0 and 4294967295 (AS_TRANS 23456 is allowed by BIRD but confusing) are reserved */
		r = cfg_get_int(&keys[B_AS_NUMBER], "Backend.ASNumber", 1, 4294967294LL, &v, ret_error);
		if (r < 0)
			return r;
		b->asn = (uint32_t) v;
	} else if (b->type == NETWORK_BACKEND_BGP)
		b->asn = 64512; /* Calico's default, first private AS */
	if (keys[B_PEERS].value) {
		/* bgp: external peers (a top-of-rack router): [{"IP": "10.99.0.1", "ASNumber": 65000}] */
		json_t *pv = keys[B_PEERS].value, *e;
		size_t i;

		if (!json_is_array(pv) || json_array_size(pv) > ELEMENTSOF(b->peers))
			return cfg_error(ret_error, "Backend.Peers: expected an array of at most %zu peers",
					 ELEMENTSOF(b->peers));
		json_array_foreach(pv, i, e) {
			KeySpec pk[2] = { { .name = "IP", .alt = "ip" }, { .name = "ASNumber", .alt = "asNumber" } };
			char path[48];

			snprintf(path, sizeof(path), "Backend.Peers[%zu]", i);
			if (!json_is_object(e))
				return cfg_error(ret_error, "%s: expected an object, got %s", path, cfg_json_kind(e));
			r = cfg_collect_keys(e, path, pk, 2, ret_error);
			if (r < 0)
				return r;
			if (!pk[0].value || !pk[1].value)
				return cfg_error(ret_error, "%s: IP and ASNumber are required", path);
			r = cfg_get_string(&pk[0], "Backend.Peers[].IP", &s, ret_error);
			if (r < 0)
				return r;
			if (ip_addr_parse(s, &b->peers[i].ip) < 0 || b->peers[i].ip.family != AF_INET)
				return cfg_error(ret_error, "%s.IP \"%s\": not an IPv4 address", path, s);
			r = cfg_get_int(&pk[1], "Backend.Peers[].ASNumber", 1, 4294967294LL, &v, ret_error);
			if (r < 0)
				return r;
			b->peers[i].asn = (uint32_t) v;
			b->n_peers++;
		}
	}
	if (keys[B_ROUTE_REFLECTORS].value) {
		/* bgp: ["node-a", "node-b"]: those nodes reflect (peer with every node), the rest peer only
		 * with them. Named in the network config, not per node: every node must agree on the roles. */
		json_t *rv = keys[B_ROUTE_REFLECTORS].value, *e;
		size_t i;

		if (!json_is_array(rv) || json_array_size(rv) > ELEMENTSOF(b->route_reflectors))
			return cfg_error(ret_error,
					 "Backend.RouteReflectors: expected an array of at most %zu node names",
					 ELEMENTSOF(b->route_reflectors));
		json_array_foreach(rv, i, e) {
			const char *n = json_string_value(e);

			if (!n || !*n || strlen(n) >= sizeof(b->route_reflectors[0]))
				return cfg_error(
						ret_error,
						"Backend.RouteReflectors[%zu]: expected a node name of 1-%zu characters",
						i, sizeof(b->route_reflectors[0]) - 1);
			strcpy(b->route_reflectors[i], n);
			b->n_route_reflectors++;
		}
	}
	if (b->type == NETWORK_BACKEND_WIREGUARD) {
		r = parse_wireguard(keys, b, ret_error);
		if (r < 0)
			return r;
	}
	if (keys[B_MTU].value) {
		/* IPv6 needs 1280 on every link; IPv4 68. */
		long long min = cfg->network6.addr.family == AF_INET6 ? 1280 : 68;

		r = cfg_get_int(&keys[B_MTU], "Backend.MTU", min, 65535, &v, ret_error);
		if (r < 0)
			return r;
		b->mtu = (uint32_t) v;
	}
	return 0;
}

/* The LoadBalancer section: pools that stay clear of the pod networks, and the announcement mode
 * (by default BGP where the backend speaks it, else L2). */
static int parse_load_balancer(json_t *v, NetworkConfig *cfg, char **ret_error) {
	int r;

	r = lb_config_parse(v, &cfg->load_balancer, ret_error);
	if (r < 0)
		return r;
	if (cfg->load_balancer->announce == LB_ANNOUNCE_DEFAULT)
		cfg->load_balancer->announce =
				cfg->backend.type == NETWORK_BACKEND_BGP ? LB_ANNOUNCE_BGP : LB_ANNOUNCE_L2;
	if (cfg->network.addr.family == AF_INET) {
		r = lb_config_check_overlap(cfg->load_balancer, &cfg->network, "Network", ret_error);
		if (r < 0)
			return -EINVAL;
	}
	if (cfg->network6.addr.family == AF_INET6) {
		r = lb_config_check_overlap(cfg->load_balancer, &cfg->network6, "Network6", ret_error);
		if (r < 0)
			return -EINVAL;
	}
	return 0;
}

int network_config_parse(const char *json, NetworkConfig **ret, char **ret_error) {
	KeySpec keys[_K_MAX] = {
		[K_NETWORK] = { "Network", "network" },
		[K_NETWORK6] = { "Network6", "network6" },
		[K_SUBNET_LEN] = { "SubnetLen", "subnetLen" },
		[K_SUBNET_LEN6] = { "SubnetLen6", "subnetLen6" },
		[K_SUBNET_MIN] = { "SubnetMin", "subnetMin" },
		[K_SUBNET_MAX] = { "SubnetMax", "subnetMax" },
		[K_BACKEND] = { "Backend", "backend" },
		[K_MASQUERADE] = { "Masquerade", "masquerade" },
		[K_LOAD_BALANCER] = { "LoadBalancer", "loadBalancer" },
	};
	_cleanup_(network_config_freep) NetworkConfig *cfg = NULL;
	json_t *root;
	json_error_t jerr;
	char buf[IP_PREFIX_STRLEN];
	int r;

	if (!json)
		return cfg_error(ret_error, "no network config");
	root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return cfg_error(ret_error, "network config is not valid JSON: %s (line %d, column %d)", jerr.text,
				 jerr.line, jerr.column);
	if (!json_is_object(root)) {
		r = cfg_error(ret_error, "network config: expected a JSON object, got %s", cfg_json_kind(root));
		goto finish;
	}

	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		r = -ENOMEM;
		goto finish;
	}
	*cfg = (NetworkConfig) {
		.subnet_len = 24,
		.subnet_len6 = 64,
		.backend = { .type = NETWORK_BACKEND_VXLAN, .vni = 1, .port = 4789 },
		.masquerade = true,
	};

	r = cfg_collect_keys(root, "", keys, ELEMENTSOF(keys), ret_error);
	if (r < 0)
		goto finish;

	if (keys[K_NETWORK].value) {
		r = parse_network(&keys[K_NETWORK], AF_INET, &cfg->network, ret_error);
		if (r < 0)
			goto finish;
	}
	if (keys[K_NETWORK6].value) {
		/* An IPv4-mapped IPv6 network would alias IPv4 space (and Network). */
		static const IpPrefix mapped = { .addr = { .family = AF_INET6, .bytes = { [10] = 0xff, [11] = 0xff } },
						 .len = 96 };

		r = parse_network(&keys[K_NETWORK6], AF_INET6, &cfg->network6, ret_error);
		if (r < 0)
			goto finish;
		if (ip_prefix_overlaps(&cfg->network6, &mapped)) {
			r = cfg_error(ret_error, "Network6 \"%s\": overlaps the IPv4-mapped range ::ffff:0:0/96%s",
				      json_string_value(keys[K_NETWORK6].value),
				      cfg->network.addr.family == AF_INET ? " (and so Network)" : "");
			goto finish;
		}
	}
	if (!keys[K_NETWORK].value && !keys[K_NETWORK6].value) {
		r = cfg_error(ret_error, "Network: required (an IPv4 CIDR such as \"10.244.0.0/16\"; or Network6)");
		goto finish;
	}

	if (keys[K_SUBNET_LEN].value) {
		if (cfg->network.addr.family != AF_INET) {
			r = cfg_error(ret_error, "SubnetLen: given without Network");
			goto finish;
		}
		r = parse_subnet_len(&keys[K_SUBNET_LEN], &cfg->network, SUBNET_LEN_MAX4, &cfg->subnet_len, ret_error);
		if (r < 0)
			goto finish;
	} else if (cfg->network.addr.family == AF_INET && cfg->network.len > cfg->subnet_len) {
		/* Like Flannel: a network smaller than the default /24 gets subnets 6 bits longer. */
		cfg->subnet_len = MIN(cfg->network.len + 6u, SUBNET_LEN_MAX4);
		if (cfg->subnet_len < cfg->network.len) {
			r = cfg_error(ret_error, "Network %s: too small to hold node subnets",
				      ip_prefix_to_string(&cfg->network, buf));
			goto finish;
		}
	}
	if (keys[K_SUBNET_LEN6].value) {
		if (cfg->network6.addr.family != AF_INET6) {
			r = cfg_error(ret_error, "SubnetLen6: given without Network6");
			goto finish;
		}
		r = parse_subnet_len(&keys[K_SUBNET_LEN6], &cfg->network6, SUBNET_LEN_MAX6, &cfg->subnet_len6,
				     ret_error);
		if (r < 0)
			goto finish;
	} else if (cfg->network6.addr.family == AF_INET6 && cfg->network6.len > cfg->subnet_len6) {
		cfg->subnet_len6 = MIN(cfg->network6.len + 16u, SUBNET_LEN_MAX6);
		if (cfg->subnet_len6 < cfg->network6.len) {
			r = cfg_error(ret_error, "Network6 %s: too small to hold node subnets",
				      ip_prefix_to_string(&cfg->network6, buf));
			goto finish;
		}
	}

	for (int i = K_SUBNET_MIN; i <= K_SUBNET_MAX; i++) {
		if (!keys[i].value)
			continue;
		if (cfg->network.addr.family != AF_INET) {
			r = cfg_error(ret_error, "%s: given without Network", keys[i].name);
			goto finish;
		}
		r = parse_subnet_bound(&keys[i], cfg, i == K_SUBNET_MIN ? &cfg->subnet_min : &cfg->subnet_max,
				       ret_error);
		if (r < 0)
			goto finish;
	}
	if (cfg->subnet_min.family == AF_INET && cfg->subnet_max.family == AF_INET &&
	    ip_addr_cmp(&cfg->subnet_min, &cfg->subnet_max) > 0) {
		char b2[IP_ADDR_STRLEN];
		r = cfg_error(ret_error, "SubnetMin %s is above SubnetMax %s", ip_addr_to_string(&cfg->subnet_min, buf),
			      ip_addr_to_string(&cfg->subnet_max, b2));
		goto finish;
	}

	if (keys[K_BACKEND].value) {
		r = parse_backend(keys[K_BACKEND].value, cfg, &cfg->backend, ret_error);
		if (r < 0)
			goto finish;
	}
	if (keys[K_MASQUERADE].value) {
		r = cfg_get_bool(&keys[K_MASQUERADE], "Masquerade", &cfg->masquerade, ret_error);
		if (r < 0)
			goto finish;
	}
	if (keys[K_LOAD_BALANCER].value) {
		r = parse_load_balancer(keys[K_LOAD_BALANCER].value, cfg, ret_error);
		if (r < 0)
			goto finish;
	}

	*ret = TAKE_PTR(cfg);
	r = 0;
finish:
	json_decref(root);
	return r;
}

int network_config_load_file(const char *path, NetworkConfig **ret, char **ret_error) {
	_cleanup_free_ char *data = NULL;
	int r;

	r = read_full_file(path, &data, NULL);
	if (r < 0) {
		if (ret_error) {
			free(*ret_error);
			*ret_error = strdup_printf("cannot read network config %s: %s", path, strerror(-r));
		}
		return r;
	}
	return network_config_parse(data, ret, ret_error);
}

NetworkConfig *network_config_free(NetworkConfig *cfg) {
	if (cfg)
		lb_config_free(cfg->load_balancer);
	free(cfg);
	return NULL;
}

int network_config_check_overlap(const NetworkConfig *cfg, const IpPrefix *other, const char *what, char **ret_error) {
	char a[IP_PREFIX_STRLEN], b[IP_PREFIX_STRLEN];
	const IpPrefix *net;
	const char *name;

	if (!cfg || !other)
		return -EINVAL;
	if (other->addr.family == AF_INET) {
		net = &cfg->network;
		name = "Network";
	} else if (other->addr.family == AF_INET6) {
		net = &cfg->network6;
		name = "Network6";
	} else
		return 0;
	if (net->addr.family != other->addr.family || !ip_prefix_overlaps(net, other))
		return 0;

	if (ret_error) {
		IpPrefix m = ip_prefix_mask(other);

		free(*ret_error);
		*ret_error = strdup_printf("%s %s overlaps %s %s", name, ip_prefix_to_string(net, a), what ?: "network",
					   ip_prefix_to_string(&m, b));
	}
	return -EEXIST;
}

const char *network_backend_type_to_string(NetworkBackendType t) {
	switch (t) {
	case NETWORK_BACKEND_VXLAN: return "vxlan";
	case NETWORK_BACKEND_HOST_GW: return "host-gw";
	case NETWORK_BACKEND_UDP: return "udp";
	case NETWORK_BACKEND_IPIP: return "ipip";
	case NETWORK_BACKEND_BGP: return "bgp";
	case NETWORK_BACKEND_WIREGUARD: return "wireguard";
	}
	return NULL;
}

int network_backend_type_from_string(const char *s, NetworkBackendType *ret) {
	if (streq_ptr(s, "vxlan"))
		*ret = NETWORK_BACKEND_VXLAN;
	else if (streq_ptr(s, "host-gw"))
		*ret = NETWORK_BACKEND_HOST_GW;
	else if (streq_ptr(s, "udp"))
		*ret = NETWORK_BACKEND_UDP;
	else if (streq_ptr(s, "ipip"))
		*ret = NETWORK_BACKEND_IPIP;
	else if (streq_ptr(s, "bgp"))
		*ret = NETWORK_BACKEND_BGP;
	else if (streq_ptr(s, "wireguard"))
		*ret = NETWORK_BACKEND_WIREGUARD;
	else
		return -EINVAL;
	return 0;
}

static const char *const wireguard_mode_table[] = {
	[WIREGUARD_MODE_SEPARATE] = "separate",
	[WIREGUARD_MODE_AUTO] = "auto",
	[WIREGUARD_MODE_IPV4] = "ipv4",
	[WIREGUARD_MODE_IPV6] = "ipv6",
};

const char *wireguard_mode_to_string(WireguardMode m) {
	return (unsigned) m < ELEMENTSOF(wireguard_mode_table) ? wireguard_mode_table[m] : NULL;
}

int wireguard_mode_from_string(const char *s, WireguardMode *ret) {
	for (size_t i = 0; i < ELEMENTSOF(wireguard_mode_table); i++)
		if (streq_ptr(s, wireguard_mode_table[i])) {
			*ret = (WireguardMode) i;
			return 0;
		}
	return -EINVAL;
}
