/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host-local IPAM configuration (the "ipam" object of a network config plus
 * runtimeConfig.ipRanges), parsed and canonicalized the way the reference host-local does it
 * (LoadIPAMConfig). Keys are matched case-insensitively like Go's encoding/json.
 */

#include <jansson.h>

#include "shared/cni/cni-types.h"
#include "shared/ipam/ipam-range.h"

#define IPAM_DEFAULT_DATA_DIR "/var/lib/cni/networks"

typedef struct IpamConfig {
	char *name;        /* network name (store directory name) */
	char *data_dir;    /* ipam.dataDir or IPAM_DEFAULT_DATA_DIR */
	char *resolv_conf; /* ipam.resolvConf or NULL */
	IpamRangeSet *range_sets;
	size_t n_range_sets;
	CniRoute *routes; /* ipam.routes */
	size_t n_routes;
} IpamConfig;

/*
 * Parses `ipam` (the config's "ipam" object; NULL is an error) for network `net_name`.
 * Range sets, in index order (the N of last_reserved_ip.N): runtimeConfig.ipRanges
 * (`rc_ip_ranges`, may be NULL), then the legacy single range (ipam.subnet/rangeStart/
 * rangeEnd/gateway), then ipam.ranges — the reference prepends the runtime ranges rather than
 * replacing. Every set is canonicalized; sets must not overlap; before 0.3.0 (`version`) at most
 * one set per family. Returns 0 with a new config, or -EINVAL/-ENOMEM with err naming the key
 * and value.
 */
int ipam_config_parse(json_t *ipam, json_t *rc_ip_ranges, const char *net_name, CniVersion version, IpamConfig **ret,
		      IpamError *err);
/* ipam_range_set_check_subnets() on every range set of c: for ADD, CHECK and STATUS, which hand
 * out or judge addresses (DEL and GC must work on what an older, laxer version allocated). */
int ipam_config_check_subnets(const IpamConfig *c, IpamError *err);
IpamConfig *ipam_config_free(IpamConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(IpamConfig *, ipam_config_free);

/* Parses a JSON array of range sets (the shape of ipam.ranges) and appends them, keys
 * "<key>[i]". Not canonicalized. 0 or -EINVAL/-ENOMEM with err set. */
int ipam_range_sets_from_json(json_t *arr, const char *key, IpamRangeSet **sets, size_t *n_sets, IpamError *err);

/*
 * Parses a resolv.conf into dns: nameserver (first argument), domain, search and options
 * (all arguments); comments (#, ;) and short lines ignored. 0 or negative errno (file errors).
 * Free with ipam_dns_done().
 */
int ipam_resolv_conf_parse(const char *path, CniDns *ret);
void ipam_dns_done(CniDns *d);
