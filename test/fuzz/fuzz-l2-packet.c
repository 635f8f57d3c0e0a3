/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the L2 responder's frame parsers (l2_parse_arp, l2_parse_ns: what any host on the
 * underlay can send weftd). Every input goes to both. What parses as a request must hold what the
 * parser promises (the right family, a unicast sender MAC, a non-multicast NS target), and the
 * answer built from it must parse back: an ARP reply as a well-formed ARP frame that asks
 * nothing, the ARP request rebuilt from the parsed fields as the same request, and the Neighbor
 * Advertisement as a well-formed IPv6 frame that is not a solicitation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/loadbalancer/l2-responder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 4096

static const uint8_t our_mac[6] = { 0x02, 0, 0, 0, 0xaa, 0x01 };

static void check_arp(const uint8_t *data, size_t size) {
	uint8_t f[L2_FRAME_MAX];
	L2Request q, back;
	size_t n;
	int r = l2_parse_arp(data, size, &q);

	if (r < 0)
		return;
	if (r > 1 || size < L2_ARP_FRAME_LEN)
		abort();
	if (r == 0)
		return;
	if (q.family != AF_INET || q.sender.family != AF_INET || q.target.family != AF_INET || (q.sender_mac[0] & 1))
		abort();
	n = l2_build_arp(f, 2 /* reply */, our_mac, &q.target.in, q.sender_mac, &q.sender.in);
	if (n != L2_ARP_FRAME_LEN || l2_parse_arp(f, n, &back) != 0)
		abort();
	n = l2_build_arp(f, 1 /* request */, q.sender_mac, &q.sender.in, q.eth_src, &q.target.in);
	if (l2_parse_arp(f, n, &back) != 1 || !ip_addr_equal(&back.target, &q.target) ||
	    !ip_addr_equal(&back.sender, &q.sender) || memcmp(back.sender_mac, q.sender_mac, 6) != 0)
		abort();
}

static void check_ns(const uint8_t *data, size_t size) {
	uint8_t f[L2_FRAME_MAX];
	L2Request q, back;
	size_t n;
	int r = l2_parse_ns(data, size, &q);

	if (r <= 0)
		return;
	if (r > 1 || q.family != AF_INET6 || q.target.family != AF_INET6 || IN6_IS_ADDR_MULTICAST(&q.target.in6) ||
	    IN6_IS_ADDR_MULTICAST(&q.sender.in6) || (q.sender_mac[0] & 1))
		abort();
	n = l2_build_na(f, our_mac, &q.target.in6, q.sender_mac, &q.sender.in6, true);
	if (n != L2_NA_FRAME_LEN || l2_parse_ns(f, n, &back) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	if (size > MAX_INPUT)
		return 0;
	check_arp(data, size);
	check_ns(data, size);
	return 0;
}
