/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flow log's conntrack event parser (flow_event_parse()) and record (flow_event_to_json()) on
 * messages built as ctnetlink sends them: NEW (NLM_F_CREATE) and DESTROY, IPv4 and IPv6, DNATed,
 * with counters and timestamps; and what it must refuse or skip: an UPDATE event, another
 * subsystem, attributes of a wrong size, a missing tuple, tuples of two families, a truncated
 * message. Unknown attributes are skipped.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "daemon/flows/flow-log.h"
#include "shared/nl/nfnl.h"

#define BUF 4096

static void put_tuple(struct nlmsghdr *nlh, uint16_t type, int family, const char *src, const char *dst, uint8_t proto,
		      uint16_t sport, uint16_t dport) {
	struct nlattr *t = mnl_attr_nest_start(nlh, type), *ip, *p;
	uint8_t a[16], b[16];
	size_t len = family == AF_INET ? 4 : 16;

	assert_int_equal(inet_pton(family, src, a), 1);
	assert_int_equal(inet_pton(family, dst, b), 1);
	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	mnl_attr_put(nlh, family == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, len, a);
	mnl_attr_put(nlh, family == AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST, len, b);
	mnl_attr_nest_end(nlh, ip);
	p = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, proto);
	mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(sport));
	mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(dport));
	mnl_attr_nest_end(nlh, p);
	mnl_attr_nest_end(nlh, t);
}

static void put_counters(struct nlmsghdr *nlh, uint16_t type, uint64_t packets, uint64_t bytes) {
	struct nlattr *c = mnl_attr_nest_start(nlh, type);

	mnl_attr_put_u64(nlh, CTA_COUNTERS_PACKETS, htobe64(packets));
	mnl_attr_put_u64(nlh, CTA_COUNTERS_BYTES, htobe64(bytes));
	mnl_attr_nest_end(nlh, c);
}

/* ctnetlink's event header: NEW events carry NLM_F_CREATE | NLM_F_EXCL, updates neither */
static struct nlmsghdr *event(char *buf, uint8_t msg, uint16_t flags, int family) {
	struct nlmsghdr *nlh = nfnl_put_header(buf, NFNL_SUBSYS_CTNETLINK, msg, 0, 0, (uint8_t) family, 0);

	nlh->nlmsg_flags = flags;
	return nlh;
}

/* a pod's connection to a ClusterIP, DNATed to an endpoint: NEW */
static struct nlmsghdr *new_dnat(char *buf) {
	struct nlmsghdr *nlh = event(buf, IPCTNL_MSG_CT_NEW, NLM_F_CREATE | NLM_F_EXCL, AF_INET);

	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, "10.244.0.11", "10.96.0.10", IPPROTO_TCP, 40112, 80);
	put_tuple(nlh, CTA_TUPLE_REPLY, AF_INET, "10.244.1.13", "10.244.0.11", IPPROTO_TCP, 8080, 40112);
	mnl_attr_put_u32(nlh, CTA_STATUS, htonl(0x188));
	mnl_attr_put_u32(nlh, CTA_ID, htonl(0xdeadbeef));
	mnl_attr_put_u32(nlh, 200, 7); /* a newer kernel's attribute */
	return nlh;
}

static void test_new_dnat(void **state) {
	char buf[BUF] = {};
	struct nlmsghdr *nlh = new_dnat(buf);
	char s[IP_ADDR_STRLEN];
	FlowEvent ev;
	json_t *j;

	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), 0);
	assert_int_equal(ev.type, FLOW_EVENT_NEW);
	assert_int_equal(ev.id, 0xdeadbeef);
	assert_int_equal(ev.status, 0x188);
	assert_string_equal(ip_addr_to_string(&ev.orig.src, s), "10.244.0.11");
	assert_string_equal(ip_addr_to_string(&ev.orig.dst, s), "10.96.0.10");
	assert_string_equal(ip_addr_to_string(&ev.reply.src, s), "10.244.1.13");
	assert_int_equal(ev.orig.proto, IPPROTO_TCP);
	assert_int_equal(ev.orig.sport, 40112);
	assert_int_equal(ev.orig.dport, 80);
	assert_int_equal(ev.reply.sport, 8080);
	assert_false(ev.has_counters);
	j = flow_event_to_json(&ev);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "event")), "new");
	assert_string_equal(json_string_value(json_object_get(j, "proto")), "TCP");
	assert_string_equal(json_string_value(json_object_get(j, "dst")), "10.96.0.10");
	assert_int_equal(json_integer_value(json_object_get(j, "dport")), 80);
	assert_int_equal(json_integer_value(json_object_get(j, "ct_id")), 0xdeadbeef);
	assert_null(json_object_get(j, "bytes_orig")); /* NEW has no counters to report */
	json_decref(j);
}

static void test_destroy_v6(void **state) {
	char buf[BUF] = {};
	struct nlmsghdr *nlh = event(buf, IPCTNL_MSG_CT_DELETE, 0, AF_INET6);
	struct nlattr *ts;
	FlowEvent ev;
	json_t *j;

	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET6, "fd00:10:244::b", "fd00:10:244:1::d", IPPROTO_UDP, 5353, 81);
	put_tuple(nlh, CTA_TUPLE_REPLY, AF_INET6, "fd00:10:244:1::d", "fd00:10:244::b", IPPROTO_UDP, 81, 5353);
	put_counters(nlh, CTA_COUNTERS_ORIG, 20, 20960);
	put_counters(nlh, CTA_COUNTERS_REPLY, 19, 19912);
	ts = mnl_attr_nest_start(nlh, CTA_TIMESTAMP);
	mnl_attr_put_u64(nlh, CTA_TIMESTAMP_START, htobe64(1000000000ULL));
	mnl_attr_put_u64(nlh, CTA_TIMESTAMP_STOP, htobe64(1250000000ULL));
	mnl_attr_nest_end(nlh, ts);

	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), 0);
	assert_int_equal(ev.type, FLOW_EVENT_DESTROY);
	assert_int_equal(ev.orig.src.family, AF_INET6);
	assert_true(ev.has_counters);
	assert_int_equal(ev.packets[0], 20);
	assert_int_equal(ev.bytes[0], 20960);
	assert_int_equal(ev.packets[1], 19);
	assert_int_equal(ev.bytes[1], 19912);
	assert_int_equal(ev.stop_ns - ev.start_ns, 250000000);
	j = flow_event_to_json(&ev);
	assert_string_equal(json_string_value(json_object_get(j, "event")), "destroy");
	assert_string_equal(json_string_value(json_object_get(j, "src")), "fd00:10:244::b");
	assert_string_equal(json_string_value(json_object_get(j, "proto")), "UDP");
	assert_int_equal(json_integer_value(json_object_get(j, "bytes_orig")), 20960);
	assert_int_equal(json_integer_value(json_object_get(j, "packets_reply")), 19);
	assert_true(json_real_value(json_object_get(j, "duration_ms")) == 250.0);
	assert_null(json_object_get(j, "ct_id")); /* absent, not 0 */
	json_decref(j);
}

static void test_not_ours(void **state) {
	char buf[BUF] = {};
	struct nlmsghdr *nlh;
	FlowEvent ev;

	/* an UPDATE event (no NLM_F_CREATE) */
	nlh = event(buf, IPCTNL_MSG_CT_NEW, 0, AF_INET);
	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, "10.0.0.1", "10.0.0.2", IPPROTO_TCP, 1, 2);
	put_tuple(nlh, CTA_TUPLE_REPLY, AF_INET, "10.0.0.2", "10.0.0.1", IPPROTO_TCP, 2, 1);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -ENOENT);
	/* another subsystem (nfnetlink_log) */
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_ULOG, 0, 0, 0, AF_INET, 0);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -ENOENT);
	/* ctnetlink, but an expectation or a GET */
	nlh = event(buf, IPCTNL_MSG_CT_GET, NLM_F_CREATE, AF_INET);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -ENOENT);
}

static void test_malformed(void **state) {
	char buf[BUF] = {};
	struct nlmsghdr *nlh;
	struct nlattr *t, *ip;
	FlowEvent ev;

	/* no reply tuple */
	nlh = event(buf, IPCTNL_MSG_CT_NEW, NLM_F_CREATE, AF_INET);
	put_tuple(nlh, CTA_TUPLE_ORIG, AF_INET, "10.0.0.1", "10.0.0.2", IPPROTO_TCP, 1, 2);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -EBADMSG);
	/* tuples of two families */
	put_tuple(nlh, CTA_TUPLE_REPLY, AF_INET6, "::2", "::1", IPPROTO_TCP, 2, 1);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -EBADMSG);
	/* an IPv4 address of 3 bytes */
	nlh = event(buf, IPCTNL_MSG_CT_NEW, NLM_F_CREATE, AF_INET);
	t = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG);
	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	mnl_attr_put(nlh, CTA_IP_V4_SRC, 3, "abc");
	mnl_attr_nest_end(nlh, ip);
	mnl_attr_nest_end(nlh, t);
	put_tuple(nlh, CTA_TUPLE_REPLY, AF_INET, "10.0.0.2", "10.0.0.1", IPPROTO_TCP, 2, 1);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -EBADMSG);
	/* a counter of 2 bytes */
	nlh = new_dnat(buf);
	t = mnl_attr_nest_start(nlh, CTA_COUNTERS_ORIG);
	mnl_attr_put_u16(nlh, CTA_COUNTERS_BYTES, 1);
	mnl_attr_nest_end(nlh, t);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -EBADMSG);
	/* CTA_ID of 2 bytes */
	nlh = new_dnat(buf);
	mnl_attr_put_u16(nlh, CTA_ID, 1);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -EBADMSG);
	/* truncated: the header says more than there is */
	nlh = new_dnat(buf);
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len - 4, &ev), -EBADMSG);
	assert_int_equal(flow_event_parse(nlh, 8, &ev), -EBADMSG);
	/* a length of 0xffffffff (mnl_nlmsg_ok() takes it: it compares as an int) */
	nlh = new_dnat(buf);
	nlh->nlmsg_len = UINT32_MAX;
	assert_int_equal(flow_event_parse(nlh, BUF, &ev), -EBADMSG);
	/* no nfgenmsg */
	nlh = new_dnat(buf);
	nlh->nlmsg_len = MNL_NLMSG_HDRLEN;
	assert_int_equal(flow_event_parse(nlh, nlh->nlmsg_len, &ev), -EBADMSG);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_dnat),
		cmocka_unit_test(test_destroy_v6),
		cmocka_unit_test(test_not_ours),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
