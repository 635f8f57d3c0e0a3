/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host bridge pods are plugged into, and the per-port settings of a pod's host veth.
 * Everything here is idempotent and safe with many plugin processes racing on the same bridge.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/cni/cni-types.h"
#include "shared/nl/nl.h"

typedef struct PodBridgeConfig {
	const char *name;
	unsigned mtu;        /* only applied when the bridge is created; 0 = default */
	bool promisc;        /* turned on when set (never turned off: others may need it) */
	bool vlan_filtering; /* requested when the bridge is created */
} PodBridgeConfig;

/*
 * Creates the bridge unless it exists (a concurrent creator winning the race is fine), turns on
 * promisc if asked, sets net.ipv6.conf.<br>.accept_ra=0 (we own the bridge's routes), brings it
 * up and pins its MAC (pod_bridge_pin_mac) so ports coming and going never change it. Returns 0 with the bridge's
 * current state in *ret (may be NULL); -EEXIST when a link of that name exists but is not a bridge. Errors name the
 * bridge in *err (may be NULL).
 */
int pod_bridge_ensure(NlSock *host, const PodBridgeConfig *c, NlLink *ret, CniError *err);

/*
 * Pins the bridge's MAC to its current value (a set address is not replaced by the lowest port
 * MAC as ports come and go, so the MAC in results stays true). pod_bridge_ensure() calls it.
 * Returns 0 or -errno.
 */
int pod_bridge_pin_mac(NlSock *host, const NlLink *br, CniError *err);

typedef struct PodBridgePort {
	bool hairpin;          /* IFLA_BRPORT_MODE */
	bool isolated;         /* IFLA_BRPORT_ISOLATED */
	uint16_t vlan;         /* access VLAN: pvid + untagged; 0 = none */
	const uint16_t *trunk; /* tagged VLANs (sorted or not, 1..4094) */
	size_t n_trunk;
	bool preserve_default_vlan; /* false: drop the bridge's default pvid from the port first
				     * (only when vlan or trunk is set, as the reference) */
} PodBridgePort;

/*
 * Makes `port_ifindex` a port of `bridge_ifindex` with the given settings and brings it up.
 * Returns 0 or -errno with *err naming the port and the failed setting.
 */
int pod_bridge_port_attach(NlSock *host, int bridge_ifindex, int port_ifindex, const char *port_name,
			   const PodBridgePort *p, CniError *err);
