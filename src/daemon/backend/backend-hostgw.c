/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host-gw: every node is a router for its own pod subnet; the others reach it with one plain
 * route per remote subnet via that node's public IP. Works only when all nodes share an L2
 * network, so a remote whose public IP is not directly connected is refused (the caller logs it
 * and counts weft_hostgw_unreachable_total) instead of installing a route the kernel would bounce
 * through the default gateway.
 */
#include <errno.h>

#include "daemon/backend/backend.h"

static int hostgw_ensure(Backend *b) {
	int r;

	r = backend_refresh_underlay(b);
	if (r < 0)
		return r;
	b->mtu = b->config.mtu ?: b->underlay_mtu;
	return 0;
}

/* ip route replace <subnet> via <public ip> dev <underlay> proto 0xfc */
static int hostgw_render(Backend *b, const NodeLease *remote, NodeObjects *ret) {
	return backend_render_direct_routes(b, remote, ret);
}

const BackendOps backend_hostgw_ops = {
	.name = "host-gw",
	.ensure = hostgw_ensure,
	.render = hostgw_render,
};
