/* SPDX-License-Identifier: Apache-2.0 */
/* 802.1Q VLAN devices, created directly in the pod's namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-kinds.h"

/* ip link add NAME link PARENT [mtu MTU] [netns NETNS_FD] type vlan id ID
 * (protocol 802.1Q is the kernel's default: IFLA_VLAN_PROTOCOL is not sent) */
int nl_build_vlan(NlMsgBuf *buf, const NlVlanConfig *c) {
	struct nlattr *linkinfo, *data;
	int r;

	if (!c || c->vlan_id > 4094)
		return -EINVAL;
	r = nl_build_stacked_link_begin(buf, c->name, c->parent, c->mtu, NULL, c->netns_fd, "vlan", &linkinfo, &data);
	if (r < 0)
		return r;
	NL_PUT_U16(&buf->hdr, IFLA_VLAN_ID, c->vlan_id);
	nl_build_stacked_link_end(buf, linkinfo, data);
	return 0;
}

int nl_vlan_create(NlSock *s, const NlVlanConfig *c) {
	NlMsgBuf buf;

	return nl_link_create_built(s, &buf, nl_build_vlan(&buf, c));
}
