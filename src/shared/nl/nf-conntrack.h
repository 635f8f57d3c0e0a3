/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* ctnetlink's tuple (CTA_TUPLE_ORIG / CTA_TUPLE_REPLY), read with libmnl: what the Service
 * agent's stale-UDP clean-up and weftd's flow log both parse. */

#include <stdint.h>

#include <libmnl/libmnl.h>

#include "shared/ip/ip-addr.h"

typedef struct CtTuple {
	IpAddr src, dst;
	uint8_t proto;
	uint16_t sport, dport; /* host order; 0 when the protocol has none (ICMP: id and type are skipped) */
} CtTuple;

/* Parses a CTA_TUPLE_* nest into *ret (zeroed first). Attributes of a wrong size are refused,
 * unknown ones skipped. 0, or -EINVAL (a malformed address or port). */
int ct_tuple_parse(const struct nlattr *nest, CtTuple *ret);
