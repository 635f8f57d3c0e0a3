/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the lease file reader (lease_file_parse: <run-dir>/subnet.env, written by weftd, read by
 * the `weft` CNI plugin on every ADD). What parses must render, and the rendering must parse back
 * to the same lease.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "shared/lease/lease-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (16 * 1024)

static bool lease_equal(const LeaseFile *a, const LeaseFile *b) {
	return ip_prefix_equal(&a->network, &b->network) && ip_prefix_equal(&a->subnet, &b->subnet) &&
	       ip_prefix_equal(&a->network6, &b->network6) && ip_prefix_equal(&a->subnet6, &b->subnet6) &&
	       a->mtu == b->mtu && a->ipmasq == b->ipmasq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	_cleanup_free_ char *text = NULL, *out = NULL;
	LeaseFile lf, back;
	IpPrefix gw;

	if (size > MAX_INPUT)
		return 0;
	text = strndup((const char *) data, size);
	if (!text)
		return 0;
	if (lease_file_parse(text, &lf) < 0)
		return 0;
	if (lease_file_render(&lf, &out) < 0)
		abort();
	if (lease_file_parse(out, &back) < 0 || !lease_equal(&lf, &back))
		abort();
	if (lf.subnet.addr.family == AF_INET && lease_subnet_gateway(&lf.subnet, &gw) >= 0 &&
	    !ip_prefix_contains(&lf.network, &gw.addr))
		abort();
	return 0;
}
