/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The veth pair that attaches a pod: one end in the host namespace (plugged into a bridge or
 * routed), the other created directly inside the pod's namespace (IFLA_NET_NS_FD), never moved.
 */

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "shared/cni/cni-types.h"
#include "shared/nl/nl.h"

/* "veth" + 8 random hex digits, like the reference plugins. */
#define POD_VETH_PREFIX "veth"

/*
 * Creates the pair. `host` is a socket in the host namespace, `cont` one inside the pod namespace
 * `netns_fd`. The host end gets a fresh random name (retried on a name collision); the pod end is
 * `ifname`. mtu 0 = kernel default; mac NULL = kernel random (else the pod end's MAC).
 *
 * Returns 0 with ret_host_name, ret_host (host end) and ret_cont (pod end, as seen from inside
 * the pod) filled; any of them may be NULL. -EEXIST if `ifname` already exists in the pod.
 * On failure nothing is left behind and *err (may be NULL) says what failed.
 * The caller owns the pair afterwards: deleting either end deletes both.
 */
int pod_veth_create(NlSock *host, NlSock *cont, int netns_fd, const char *ifname, unsigned mtu, const uint8_t *mac,
		    char ret_host_name[IFNAMSIZ], NlLink *ret_host, NlLink *ret_cont, CniError *err);

/*
 * CHECK helper: verifies that `host_name` (host namespace) is a veth whose peer is the pod
 * interface `cont` (IFLA_LINK both ways) and, when master_ifindex > 0, that it is a port of that
 * master. 0, or -ENODEV / -ENOLINK / -EXDEV with *err naming what does not match.
 */
int pod_veth_check_peer(NlSock *host, const char *host_name, const NlLink *cont, int master_ifindex, CniError *err);
