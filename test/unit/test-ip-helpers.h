/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Literal addresses and prefixes for cmocka tests: A("10.0.0.1"), P("10.0.0.0/24"). A literal that
 * does not parse fails the test. Include after <cmocka.h>. */

#include "shared/ip/ip-addr.h"

static inline IpAddr A(const char *s) {
	IpAddr a;

	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static inline IpPrefix P(const char *s) {
	IpPrefix p;

	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}
