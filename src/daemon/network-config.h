/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The cluster network config (Flannel's net-conf.json), read from a file or from the datastore
 * key <prefix>/config:
 *
 *   {"Network": "10.244.0.0/16", "Network6": "fd00:10:244::/56", "SubnetLen": 24, "SubnetLen6": 64,
 *    "SubnetMin": "10.244.10.0", "SubnetMax": "10.244.99.0",
 *    "Backend": {"Type": "vxlan", "VNI": 1, "Port": 4789, "DirectRouting": false, "MTU": 1450},
 *    "Masquerade": true, "LoadBalancer": {"Pools": [...], "Announce": "bgp"}}
 *
 * wireguard takes Flannel's keys: {"Type": "wireguard", "PSK": "<base64>", "ListenPort": 51820,
 * "ListenPortV6": 51821, "Mode": "separate" | "auto" | "ipv4" | "ipv6",
 * "PersistentKeepaliveInterval": 25}.
 *
 * Keys are also accepted in lower camel case ("network", "subnetLen", "backend": {"type", "vni",
 * "port", "directRouting", "mtu"}). Unknown keys are rejected. At least one of Network / Network6
 * is required. Errors name the key and the value.
 */

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "shared/ip/ip-addr.h"

typedef enum NetworkBackendType {
	NETWORK_BACKEND_VXLAN,
	NETWORK_BACKEND_HOST_GW,
	NETWORK_BACKEND_UDP,       /* Flannel's first backend: TUN + userspace UDP (backend-udp.c) */
	NETWORK_BACKEND_BGP,       /* Calico's BGP through BIRD (backend-bgp.c) */
	NETWORK_BACKEND_IPIP,      /* Calico's ipipMode (backend-ipip.c); DirectRouting = CrossSubnet */
	NETWORK_BACKEND_WIREGUARD, /* Flannel's wireguard backend (backend-wireguard.c) */
} NetworkBackendType;

/* wireguard "Mode" (Flannel's): which devices carry which family. */
typedef enum WireguardMode {
	WIREGUARD_MODE_SEPARATE, /* weft-wg for IPv4 over IPv4, weft-wg-v6 for IPv6 over IPv6 (default) */
	WIREGUARD_MODE_AUTO,     /* one device, the underlay family of the node's public IP */
	WIREGUARD_MODE_IPV4,     /* one device, peers reached over IPv4 */
	WIREGUARD_MODE_IPV6,     /* one device, peers reached over IPv6 */
} WireguardMode;

typedef struct NetworkBackendConfig {
	NetworkBackendType type;
	uint32_t vni;        /* 0..16777215, default 1 (vxlan) */
	uint16_t port;       /* UDP port, default 4789 (vxlan), 8285 (udp) */
	bool direct_routing; /* vxlan: use host-gw style routes to nodes on the same L2 */
	uint32_t mtu;        /* 0 = derive from the underlay */
	uint32_t asn;        /* bgp: the cluster's AS number ("ASNumber"), default 64512 */
	struct {
		IpAddr ip;
		uint32_t asn;
	} peers[8]; /* bgp: external peers ("Peers"); each node uses those on its own segment */
	size_t n_peers;
	char route_reflectors[8][64]; /* bgp: node names ("RouteReflectors"); none = full mesh */
	size_t n_route_reflectors;
	/* wireguard */
	uint16_t listen_port;   /* "ListenPort", default 51820 */
	uint16_t listen_port6;  /* "ListenPortV6", default 51821 (weft-wg-v6) */
	WireguardMode mode;     /* "Mode", default separate */
	uint16_t keepalive_sec; /* "PersistentKeepaliveInterval" in seconds, 0 = off (default) */
	uint8_t psk[32];        /* "PSK": pre-shared key, base64 of 32 bytes; a secret, never logged */
	bool has_psk;
} NetworkBackendConfig;

typedef struct NetworkConfig {
	IpPrefix network;     /* IPv4 cluster network; addr.family AF_UNSPEC = none (IPv6-only) */
	IpPrefix network6;    /* IPv6 cluster network; AF_UNSPEC = none */
	unsigned subnet_len;  /* per-node IPv4 subnet length, default 24 */
	unsigned subnet_len6; /* per-node IPv6 subnet length, default 64 */
	IpAddr subnet_min;    /* first IPv4 subnet that may be leased; AF_UNSPEC = network start */
	IpAddr subnet_max;    /* last IPv4 subnet that may be leased; AF_UNSPEC = network end */
	NetworkBackendConfig backend;
	bool masquerade; /* default true */
	/* "LoadBalancer": address pools for LoadBalancer Services and how they are announced
	 * (loadbalancer/lb-config.h); NULL when absent (weftd assigns no addresses). Owned. */
	struct LbConfig *load_balancer;
} NetworkConfig;

/*
 * Parses and validates a config. On success *ret is a new config (free with network_config_free).
 * On failure returns -EINVAL (or -ENOMEM) and, if ret_error is non-NULL, a malloc'ed message naming
 * the offending key and value, e.g. "SubnetLen 12: subnet length larger than the network 10.244.0.0/16".
 */
int network_config_parse(const char *json, NetworkConfig **ret, char **ret_error);
/* Same, from a file. -errno if the file can't be read (with a message). */
int network_config_load_file(const char *path, NetworkConfig **ret, char **ret_error);

NetworkConfig *network_config_free(NetworkConfig *cfg);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetworkConfig *, network_config_free);

/*
 * Checks that `other` (e.g. the node's underlay network or the service CIDR, described by `what`)
 * does not overlap the cluster Network/Network6 of the same family. 0 if fine; -EEXIST with
 * "Network 10.244.0.0/16 overlaps <what> 10.244.1.0/24" in *ret_error otherwise.
 */
int network_config_check_overlap(const NetworkConfig *cfg, const IpPrefix *other, const char *what, char **ret_error);

/* "separate" | "auto" | "ipv4" | "ipv6"; NULL for an unknown value. */
const char *wireguard_mode_to_string(WireguardMode m);
/* -EINVAL for an unknown name. */
int wireguard_mode_from_string(const char *s, WireguardMode *ret);

/* "vxlan" | "host-gw" | "udp" | "ipip" | "bgp" | "wireguard"; NULL for an unknown value. */
const char *network_backend_type_to_string(NetworkBackendType t);
/* -EINVAL for an unknown name. */
int network_backend_type_from_string(const char *s, NetworkBackendType *ret);
