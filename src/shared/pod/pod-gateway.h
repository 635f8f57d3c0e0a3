/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The pod network's gateway on the host: its address on the bridge (or another host link) and
 * the forwarding sysctls of the host namespace.
 */

#include <stdbool.h>

#include "shared/cni/cni-types.h"
#include "shared/ip/ip-addr.h"
#include "shared/nl/nl.h"

/* The gateway the reference picks when IPAM gives none: the first address after the network
 * of `addr` (10.1.2.0/24 -> 10.1.2.1). */
IpAddr pod_gateway_default(const IpPrefix *addr);

/*
 * Ensures `gw` (gateway address with the pod subnet's prefix length) is on `link`.
 * Same address already there: 0. A conflicting address of the same family — for IPv4 any other
 * address, for IPv6 one whose subnet overlaps gw's — is replaced when force_address, otherwise
 * -EEXIST with *err saying "<link> already has an IP address different from <gw>". Concurrent
 * callers adding the same address all succeed. IPv6 gateways are added without DAD (the
 * address is ours by construction: IPAM reserved it), so pods can use them at once.
 * Returns 1 if the address was added, 0 if it was there, or -errno.
 */
int pod_gateway_ensure(NlSock *host, const NlLink *link, const IpPrefix *gw, bool force_address, CniError *err);

/* Turns on forwarding for `family` in the current namespace (net.ipv4.ip_forward or
 * net.ipv6.conf.all.forwarding); writes only when not already on. 0 or -errno. */
int pod_forwarding_enable(int family, CniError *err);
