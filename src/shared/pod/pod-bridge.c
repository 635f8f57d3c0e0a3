/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/netns/netns.h"
#include "shared/pod/pod-bridge.h"

int pod_bridge_ensure(NlSock *host, const PodBridgeConfig *c, NlLink *ret, CniError *err) {
	char key[64 + IFNAMSIZ];
	NlLink br;
	int r;

	/* Every ADD but a node's first finds the bridge: look it up first (one round trip instead of
	 * a create that fails with EEXIST plus lookups). The existing bridge's settings are left
	 * alone, as the reference does. */
	r = nl_link_get(host, c->name, 0, &br);
	if (r == -ENODEV) {
		/* ip link add NAME [mtu MTU] type bridge [vlan_filtering 1] — a concurrent creator
		 * winning the race is fine (nl_bridge_create() checks it made a bridge) */
		r = nl_bridge_create(host, &(NlBridgeConfig) {
							   .name = c->name,
							   .mtu = c->mtu,
							   .vlan_filtering = c->vlan_filtering,
					   });
		if (r == -EEXIST)
			return cni_error_set(err, r, CNI_ERR_INTERNAL, "%s already exists but is not a bridge",
					     c->name);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "failed to create bridge %s", c->name);
		r = nl_link_get(host, c->name, 0, &br);
	}
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "could not look up bridge %s", c->name);
	if (!streq(br.kind, "bridge"))
		return cni_error_set(err, -EEXIST, CNI_ERR_INTERNAL, "%s already exists but is not a bridge", c->name);

	if (c->promisc && !(br.flags & IFF_PROMISC)) {
		r = nl_link_set_promisc(host, br.ifindex, true);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "could not set promiscuous mode on %s", c->name);
		br.flags |= IFF_PROMISC;
		br.promisc = true;
	}

	/* We own the bridge's routes; best effort like the reference (IPv6 may be disabled). */
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", c->name);
	(void) sysctl_write(key, "0");

	if (!(br.flags & IFF_UP)) {
		r = nl_link_set_up(host, br.ifindex, true);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "could not set bridge %s up", c->name);
		br.flags |= IFF_UP;
	}

	/* Pin the MAC before any port of ours is attached: an unpinned bridge takes the lowest MAC of
	 * its ports, so the MAC reported in earlier results (and checked by CHECK) would change as pods
	 * come and go. Concurrent ADDs all read and pin the same value (ports are only attached after
	 * their ADD pinned it), and once pinned the kernel keeps it. */
	r = pod_bridge_pin_mac(host, &br, err);
	if (r < 0)
		return r;

	/* No refetch: what we changed is in br, and the pinned MAC is the one we read. */
	if (ret)
		*ret = br;
	return 0;
}

int pod_bridge_pin_mac(NlSock *host, const NlLink *br, CniError *err) {
	int r;

	if (!br->has_mac)
		return 0;
	/* ip link set BR address <its own address>: the kernel then marks it NET_ADDR_SET. */
	r = nl_link_set_mac(host, br->ifindex, br->mac);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					   "could not set bridge %s's mac", br->name);
	return 0;
}

static int cmp_u16(const void *a, const void *b) {
	return (int) *(const uint16_t *) a - (int) *(const uint16_t *) b;
}

int pod_bridge_port_attach(NlSock *host, int bridge_ifindex, int port_ifindex, const char *port_name,
			   const PodBridgePort *p, CniError *err) {
	_cleanup_free_ uint16_t *vids = NULL;
	int r;

	/* ip link set PORT master BR */
	r = nl_link_set_master(host, port_ifindex, bridge_ifindex);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					   "failed to connect %s to bridge (ifindex %d)", port_name, bridge_ifindex);

	if (p->hairpin) {
		/* bridge link set dev PORT hairpin on */
		r = nl_bridge_port_set_hairpin(host, port_ifindex, true);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "failed to setup hairpin mode for %s", port_name);
	}
	if (p->isolated) {
		/* bridge link set dev PORT isolated on */
		r = nl_bridge_port_set_isolated(host, port_ifindex, true);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "failed to set port isolation on %s", port_name);
	}

	if ((p->vlan != 0 || p->n_trunk > 0) && !p->preserve_default_vlan) {
		/* bridge vlan del dev PORT vid 1-4094: drops the default pvid (whatever the bridge's
		 * vlan_default_pvid is); the kernel ignores VLANs the port does not have. */
		r = nl_bridge_vlan_del(host, port_ifindex, 1, 4094, false);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "failed to remove default vlan on interface %s", port_name);
	}
	if (p->vlan != 0) {
		/* bridge vlan add dev PORT vid VLAN pvid untagged */
		r = nl_bridge_vlan_add(host, port_ifindex, p->vlan, 0, true, true, false);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
						   "failed to setup vlan tag %u on interface %s", p->vlan, port_name);
	}
	if (p->n_trunk > 0) {
		vids = malloc(p->n_trunk * sizeof(uint16_t));
		if (!vids)
			return cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
		memcpy(vids, p->trunk, p->n_trunk * sizeof(uint16_t));
		qsort(vids, p->n_trunk, sizeof(uint16_t), cmp_u16);
		/* One request per contiguous range: bridge vlan add dev PORT vid A-B */
		for (size_t i = 0; i < p->n_trunk;) {
			size_t j = i;
			while (j + 1 < p->n_trunk && vids[j + 1] <= vids[j] + 1)
				j++;
			r = nl_bridge_vlan_add(host, port_ifindex, vids[i], vids[j], false, false, false);
			if (r < 0)
				return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
							   "failed to setup vlan trunk %u-%u on interface %s", vids[i],
							   vids[j], port_name);
			i = j + 1;
		}
	}

	/* ip link set PORT up */
	r = nl_link_set_up(host, port_ifindex, true);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host), "failed to set %s up",
					   port_name);
	return 0;
}
