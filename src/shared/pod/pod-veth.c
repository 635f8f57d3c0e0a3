/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "basic/string-util.h"
#include "shared/pod/pod-veth.h"

/* How often a random host name may collide before we give up (2^32 names: never, in practice). */
#define POD_VETH_NAME_TRIES 8

static int random_veth_name(char buf[IFNAMSIZ]) {
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		return negative_errno();
	snprintf(buf, IFNAMSIZ, POD_VETH_PREFIX "%08x", v);
	return 0;
}

int pod_veth_create(NlSock *host, NlSock *cont, int netns_fd, const char *ifname, unsigned mtu, const uint8_t *mac,
		    char ret_host_name[IFNAMSIZ], NlLink *ret_host, NlLink *ret_cont, CniError *err) {
	char name[IFNAMSIZ];
	NlLink h, c;
	int r;

	/* No lookup up front: the create fails with EEXIST without touching anything when either
	 * name is taken, and only then do we look at which one it was (a pod interface of that
	 * name: error; else a host-name clash: retry with another name). One round trip less. */
	for (unsigned i = 0;; i++) {
		r = random_veth_name(name);
		if (r < 0)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to generate a veth name");
		/* ip link add vethXXXXXXXX [mtu M] type veth peer name IFNAME [address MAC] netns POD */
		r = nl_veth_create(host, name, ifname, netns_fd, mtu, mac);
		if (r != -EEXIST)
			break;
		r = nl_link_get(cont, ifname, 0, &c);
		if (r >= 0)
			return cni_error_set(err, -EEXIST, CNI_ERR_INTERNAL,
					     "container veth name provided (%s) already exists", ifname);
		if (r != -ENODEV)
			return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(cont),
						   "failed to look up %s in the container", ifname);
		r = -EEXIST;
		if (i + 1 >= POD_VETH_NAME_TRIES)
			break;
	}
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, nl_sock_extack(host),
					   "failed to create veth pair %s/%s", name, ifname);

	r = nl_link_get(host, name, 0, &h);
	if (r >= 0)
		r = nl_link_get(cont, ifname, 0, &c);
	if (r < 0) {
		/* Deleting one end deletes both. */
		(void) nl_link_del_by_name(host, name);
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to look up new veth pair %s/%s",
					   name, ifname);
	}

	if (ret_host_name)
		memcpy(ret_host_name, name, IFNAMSIZ);
	if (ret_host)
		*ret_host = h;
	if (ret_cont)
		*ret_cont = c;
	return 0;
}

int pod_veth_check_peer(NlSock *host, const char *host_name, const NlLink *cont, int master_ifindex, CniError *err) {
	NlLink h;
	int r;

	r = nl_link_get(host, host_name, 0, &h);
	if (r == -ENODEV)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "host veth %s not found", host_name);
	if (r < 0)
		return cni_error_set_errno(err, r, CNI_ERR_INTERNAL, NULL, "failed to look up host veth %s", host_name);
	if (!streq(h.kind, "veth"))
		return cni_error_set(err, -ENOLINK, CNI_ERR_INTERNAL, "host interface %s is a \"%s\", not a veth",
				     host_name, h.kind);
	/* IFLA_LINK of each end is the other end's ifindex in the other namespace. */
	if (h.link != cont->ifindex || cont->link != h.ifindex)
		return cni_error_set(err, -ENOLINK, CNI_ERR_INTERNAL,
				     "host veth %s is not the peer of container interface %s", host_name, cont->name);
	if (master_ifindex > 0 && h.master != master_ifindex)
		return cni_error_set(err, -EXDEV, CNI_ERR_INTERNAL,
				     "host veth %s is not attached to its bridge (master ifindex %d, expected %d)",
				     host_name, h.master, master_ifindex);
	return 0;
}
