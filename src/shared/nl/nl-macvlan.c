/* SPDX-License-Identifier: Apache-2.0 */
/* macvlan devices, created directly in the pod's namespace. */

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>

#include "basic/string-util.h"
#include "shared/nl/nl-internal.h"

int nl_macvlan_mode_from_string(const char *mode) {
	if (isempty(mode) || streq(mode, "bridge"))
		return MACVLAN_MODE_BRIDGE;
	if (streq(mode, "private"))
		return MACVLAN_MODE_PRIVATE;
	if (streq(mode, "vepa"))
		return MACVLAN_MODE_VEPA;
	if (streq(mode, "passthru"))
		return MACVLAN_MODE_PASSTHRU;
	return -EINVAL;
}

/* ip link add NAME link PARENT [mtu MTU] [address MAC] [netns NETNS_FD] type macvlan mode MODE */
int nl_build_macvlan(NlMsgBuf *buf, const NlMacvlanConfig *c) {
	struct nlattr *linkinfo, *data;
	uint32_t mode;
	int r;

	if (!c)
		return -EINVAL;
	mode = c->mode ? c->mode : MACVLAN_MODE_BRIDGE;
	if (mode != MACVLAN_MODE_PRIVATE && mode != MACVLAN_MODE_VEPA && mode != MACVLAN_MODE_BRIDGE &&
	    mode != MACVLAN_MODE_PASSTHRU && mode != MACVLAN_MODE_SOURCE)
		return -EINVAL;
	r = nl_build_stacked_link_begin(buf, c->name, c->parent, c->mtu, c->mac, c->netns_fd, "macvlan", &linkinfo,
					&data);
	if (r < 0)
		return r;
	NL_PUT_U32(&buf->hdr, IFLA_MACVLAN_MODE, mode);
	nl_build_stacked_link_end(buf, linkinfo, data);
	return 0;
}

int nl_macvlan_create(NlSock *s, const NlMacvlanConfig *c) {
	NlMsgBuf buf;

	return nl_link_create_built(s, &buf, nl_build_macvlan(&buf, c));
}
