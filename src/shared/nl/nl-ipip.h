/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * IPIP tunnel devices (kernel module "ipip"): the weftd ipip backend's tunnel, Calico's tunl0
 * shape: one device with a local address and no fixed remote, so every route through it names
 * its own outer destination (route ... via <node IP> dev <tunnel> onlink). The builder is
 * exposed for test/unit/test-nl-ipip.c (build-then-parse: kernels without ipip can still check
 * the message).
 */

#include <stdint.h>

#include "shared/nl/nl.h"

union NlMsgBuf;

typedef struct NlIpipConfig {
	const char *name;
	IpAddr local; /* AF_INET (outer source); AF_UNSPEC = any */
	int link;     /* underlay ifindex the outer packets leave by; 0 = by route */
	unsigned mtu; /* 0 = the kernel's (underlay - 20) */
} NlIpipConfig;

/* ip link add NAME [mtu MTU] type ipip local LOCAL [dev LINK] ttl inherit pmtudisc
 * 0 or -errno (-EEXIST if NAME exists; -EOPNOTSUPP if the kernel has no ipip). */
int nl_ipip_create(NlSock *s, const NlIpipConfig *c);
int nl_build_ipip(union NlMsgBuf *buf, const NlIpipConfig *c);
