/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <net/if.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "shared/nl/nf-conntrack.h"

static int parse_ip(const struct nlattr *nest, CtTuple *t) {
	const struct nlattr *a;

	mnl_attr_for_each_nested(a, nest) {
		uint16_t type = mnl_attr_get_type(a);
		size_t len = type == CTA_IP_V4_SRC || type == CTA_IP_V4_DST ? 4 : 16;
		IpAddr *ip;

		switch (type) {
		case CTA_IP_V4_SRC:
		case CTA_IP_V4_DST:
		case CTA_IP_V6_SRC:
		case CTA_IP_V6_DST:
			if (mnl_attr_get_payload_len(a) != len)
				return -EINVAL;
			ip = type == CTA_IP_V4_SRC || type == CTA_IP_V6_SRC ? &t->src : &t->dst;
			*ip = (IpAddr) { .family = len == 4 ? AF_INET : AF_INET6 };
			memcpy(ip->bytes, mnl_attr_get_payload(a), len);
			break;
		default: break;
		}
	}
	return 0;
}

int ct_tuple_parse(const struct nlattr *nest, CtTuple *ret) {
	const struct nlattr *a, *p;
	CtTuple t = {};

	mnl_attr_for_each_nested(a, nest) {
		if (mnl_attr_get_type(a) == CTA_TUPLE_IP) {
			if (parse_ip(a, &t) < 0)
				return -EINVAL;
		} else if (mnl_attr_get_type(a) == CTA_TUPLE_PROTO)
			mnl_attr_for_each_nested(p, a) {
				uint16_t type = mnl_attr_get_type(p);

				if (type == CTA_PROTO_NUM) {
					if (mnl_attr_get_payload_len(p) != 1)
						return -EINVAL;
					t.proto = mnl_attr_get_u8(p);
				} else if (type == CTA_PROTO_SRC_PORT || type == CTA_PROTO_DST_PORT) {
					if (mnl_attr_get_payload_len(p) != 2)
						return -EINVAL;
					*(type == CTA_PROTO_SRC_PORT ? &t.sport : &t.dport) =
							ntohs(mnl_attr_get_u16(p));
				}
			}
	}
	*ret = t;
	return 0;
}
