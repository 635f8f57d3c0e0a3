/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flow log when the kernel overruns its socket. Regression: the overrun (ENOBUFS) is reported
 * as EPOLLERR even while the log waits, EPOLLIN off, for its coalescing timer; each report
 * re-armed the timer, so the timer never fired: weftd spun, and the flow log neither read nor
 * counted anything again (the full run's sanitizer pass saw "records +0, lost 0 -> 0" after a
 * flood).
 *
 * In a private network namespace: the log's socket shrunk to the kernel's minimum, conntrack
 * entries made through ctnetlink until the kernel cannot queue their NEW events, and only then
 * the loop run (for at most a second): the overrun must be counted and the queued events kept.
 * Needs root and ctnetlink; exits 77 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>

#include "daemon/flows/flow-log.h"
#include "shared/event/event-loop.h"
#include "shared/nl/nfnl.h"

#define N_ENTRIES 400

static void put_tuple(struct nlmsghdr *nlh, uint16_t type, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport) {
	struct nlattr *t = mnl_attr_nest_start(nlh, type), *ip, *p;

	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	mnl_attr_put_u32(nlh, CTA_IP_V4_SRC, htonl(src));
	mnl_attr_put_u32(nlh, CTA_IP_V4_DST, htonl(dst));
	mnl_attr_nest_end(nlh, ip);
	p = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, IPPROTO_UDP);
	mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(sport));
	mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(dport));
	mnl_attr_nest_end(nlh, p);
	mnl_attr_nest_end(nlh, t);
}

/* One UDP entry 10.1.0.1:(10000+i) -> 10.2.0.1:53 through ctnetlink: the kernel sends its NEW event. */
static int ct_create(struct mnl_socket *nl, unsigned i) {
	char buf[8192];
	struct nlmsghdr *nlh = nfnl_put_header(buf, NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_NEW,
					       NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK, i + 1, AF_INET, 0);

	put_tuple(nlh, CTA_TUPLE_ORIG, 0x0a010001, 0x0a020001, (uint16_t) (10000 + i), 53);
	put_tuple(nlh, CTA_TUPLE_REPLY, 0x0a020001, 0x0a010001, 53, (uint16_t) (10000 + i));
	mnl_attr_put_u32(nlh, CTA_TIMEOUT, htonl(60));
	return nfnl_call(nl, nlh, buf, sizeof(buf), NULL, NULL);
}

static int count_cb(const FlowEvent *ev, void *userdata) {
	(void) ev;
	(*(unsigned *) userdata)++;
	return 0;
}

static bool wanted(const FlowEvent *ev, void *userdata) {
	return count_cb(ev, userdata) == 0;
}

static int stop(EventSource *s, void *userdata) {
	event_loop_exit(userdata, 0);
	return 0;
}

static void test_overrun_counted_and_read_on(void **state) {
	_cleanup_(event_loop_freep) EventLoop *loop = NULL;
	_cleanup_(flow_log_freep) FlowLog *log = NULL;
	static const FlowLogOps ops = { .wanted = wanted };
	struct mnl_socket *ct;
	EventSource *deadline;
	unsigned seen = 0, made = 0;
	int zero = 0, r;
	FlowLogStats st;

	assert_int_equal(event_loop_new(&loop), 0);
	r = flow_log_new(loop, &ops, &seen, 1000000, &log);
	if (r == -EPROTONOSUPPORT || r == -ENOENT) {
		print_message("SKIP: no ctnetlink: %s\n", strerror(-r));
		skip();
	}
	assert_int_equal(r, 0);
	/* the smallest buffer the kernel allows: a few events fill it */
	assert_int_equal(setsockopt(flow_log_fd(log), SOL_SOCKET, SO_RCVBUFFORCE, &zero, sizeof(zero)), 0);

	ct = mnl_socket_open(NETLINK_NETFILTER);
	assert_non_null(ct);
	assert_int_equal(mnl_socket_bind(ct, 0, MNL_SOCKET_AUTOPID), 0);
	for (unsigned i = 0; i < N_ENTRIES; i++)
		if (ct_create(ct, i) == 0)
			made++;
	mnl_socket_close(ct);
	assert_int_equal(made, N_ENTRIES);

	/* The overrun is pending now (EPOLLIN and EPOLLERR); run the loop a second at most. */
	assert_int_equal(event_loop_add_timer(loop, stop, loop, &deadline), 0);
	assert_int_equal(event_source_arm(deadline, 1000 * 1000, 0), 0);
	assert_int_equal(event_loop_run(loop), 0);

	flow_log_stats(log, &st);
	print_message("# %u entries made; %u events read, %" PRIu64 " records, lost to the kernel %" PRIu64 "\n", made,
		      seen, st.seq, st.lost_kernel);
	assert_true(st.lost_kernel >= 1); /* the overrun is counted */
	assert_true(seen >= 1);           /* and what the kernel did queue is read */
	assert_true(st.seq >= 1);
	assert_true(seen < N_ENTRIES); /* (the buffer did overflow) */
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overrun_counted_and_read_on),
	};

	if (geteuid() != 0) {
		printf("SKIP: test-flow-log-overrun: needs root\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		printf("SKIP: test-flow-log-overrun: unshare(CLONE_NEWNET): %m\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
