/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The "LoadBalancer" section of the network config: the address pools weftd assigns
 * LoadBalancer Services from (lb-ipam.h) and how the addresses are announced.
 *
 *   "LoadBalancer": {
 *     "Pools": [{"Name": "public", "CIDRs": ["192.0.2.0/28", "2001:db8:1b::/120"],
 *                "ServiceSelector": {"matchLabels": {"exposure": "public"}}, "AutoAssign": true}],
 *     "Announce": "bgp"
 *   }
 *
 * Name: a DNS label, unique. CIDRs: 1 to 32 networks (host bits clear), overlapping no other
 * pool's. ServiceSelector: a Kubernetes label selector over the Service's labels (absent: every
 * Service; a Service its selector picks gets addresses from such dedicated pools only, never from
 * the pools open to every Service). AutoAssign (default true): false hands out only addresses a Service asks for by
 * name.
 * Announce: "bgp" (each address as a /32 or /128 to the BGP peers through BIRD) or "l2" (one node
 * answers ARP/NDP for it); absent: "bgp" with the bgp backend, else "l2". Keys are also accepted in
 * lower camel case. Errors name the key path and the value.
 */

#include <jansson.h>
#include <stddef.h>

#include "basic/macro.h"
#include "daemon/loadbalancer/lb-ipam.h"

typedef enum LbAnnounce {
	LB_ANNOUNCE_DEFAULT, /* not given: the network config resolves it from the backend */
	LB_ANNOUNCE_BGP,
	LB_ANNOUNCE_L2,
	_LB_ANNOUNCE_MAX,
} LbAnnounce;

#define LB_CONFIG_MAX_POOLS 64u
#define LB_CONFIG_MAX_CIDRS 32u

typedef struct LbConfig {
	LbPool *pools; /* each pool's name, cidrs and selector are owned by the config */
	size_t n_pools;
	LbAnnounce announce;
} LbConfig;

/* Parses the section's JSON value. 0, -EINVAL with *ret_error naming the key, or -ENOMEM. */
int lb_config_parse(json_t *v, LbConfig **ret, char **ret_error);
LbConfig *lb_config_free(LbConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(LbConfig *, lb_config_free);
/* A pool network that overlaps `net` (described by `what`): -EEXIST with the message, else 0. */
int lb_config_check_overlap(const LbConfig *c, const IpPrefix *net, const char *what, char **ret_error);

/* "bgp", "l2" ("default" for LB_ANNOUNCE_DEFAULT). */
const char *lb_announce_to_string(LbAnnounce a);
