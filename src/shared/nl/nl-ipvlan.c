/* SPDX-License-Identifier: Apache-2.0 */
/* ipvlan devices, created directly in the pod's namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"
#include "shared/nl/nl-kinds.h"

int nl_ipvlan_mode_from_string(const char *mode) {
	if (isempty(mode) || streq(mode, "l2"))
		return IPVLAN_MODE_L2;
	if (streq(mode, "l3"))
		return IPVLAN_MODE_L3;
	if (streq(mode, "l3s"))
		return IPVLAN_MODE_L3S;
	return -EINVAL;
}

const char *nl_ipvlan_mode_to_string(int mode) {
	switch (mode) {
	case IPVLAN_MODE_L2: return "l2";
	case IPVLAN_MODE_L3: return "l3";
	case IPVLAN_MODE_L3S: return "l3s";
	default: return "unknown";
	}
}

/* ip link add NAME link PARENT [mtu MTU] [netns NETNS_FD] type ipvlan mode MODE */
int nl_build_ipvlan(NlMsgBuf *buf, const NlIpvlanConfig *c) {
	struct nlattr *linkinfo, *data;
	int r;

	if (!c || c->mode >= IPVLAN_MODE_MAX)
		return -EINVAL;
	r = nl_build_stacked_link_begin(buf, c->name, c->parent, c->mtu, NULL, c->netns_fd, "ipvlan", &linkinfo, &data);
	if (r < 0)
		return r;
	NL_PUT_U16(&buf->hdr, IFLA_IPVLAN_MODE, c->mode);
	nl_build_stacked_link_end(buf, linkinfo, data);
	return 0;
}

int nl_ipvlan_create(NlSock *s, const NlIpvlanConfig *c) {
	NlMsgBuf buf;

	return nl_link_create_built(s, &buf, nl_build_ipvlan(&buf, c));
}
