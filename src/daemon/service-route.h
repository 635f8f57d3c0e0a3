/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node's own route to the Services (--service-cluster-ip-range, kube-apiserver's flag): per
 * range one route of ours
 *
 *   ip route replace 10.96.0.0/12 dev <underlay> src <pod gateway, e.g. 10.244.3.1> proto 0xfc
 *
 * A connection the node opens to a ClusterIP is routed before the nat output hook DNATs it, so it
 * needs a route, and the source chosen then stays: the pod-network gateway address is one replies
 * come back to over the pod network with every backend (the udp backend carries nothing else).
 * The route is a local object of the reconciler (reconcile.h: render_local): added only with
 * NLM_F_EXCL (a route weft did not install to the same range is left alone and logged), repaired,
 * removed when the option goes, and by `weftd uninstall` with every route of ours.
 */

#include <stddef.h>

#include "daemon/backend/backend.h"
#include "shared/ip/ip-addr.h"

/* "10.96.0.0/12" or "10.96.0.0/12,fd00:10:96::/112" (one per family, host bits zero). 0 or
 * -EINVAL. */
int service_ranges_parse(const char *s, IpPrefix ret[static 2], size_t *ret_n);

/*
 * The routes for ranges[] given this node's backend state, one per ret[] (at most max): for each
 * range whose family has a pod subnet, via the underlay with the subnet's gateway address (its
 * first host) as preferred source, once that address is on the node and usable (not tentative);
 * until then the range is left out (the address monitor brings the next pass). Returns how many
 * ret[] it filled, or -errno.
 */
int service_routes_render(const Backend *b, const IpPrefix *ranges, size_t n_ranges, NodeObjects *ret, size_t max);
