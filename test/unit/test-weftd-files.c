/* SPDX-License-Identifier: Apache-2.0 */
/* What weftd writes and serves: the lease file (render + the parser the weft plugin uses), the
 * CNI conflist, the nftables batch, the Prometheus page, HTTP request parsing, and the event
 * loop's timers. No privileges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/cni-conf.h"
#include "daemon/masquerade.h"
#include "daemon/status-server.h"
#include "daemon/metrics.h"
#include "shared/event/event-loop.h"
#include "shared/lease/lease-file.h"

static IpPrefix P(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static void test_lease_render(void **state) {
	LeaseFile lf = { .network = P("10.244.0.0/16"), .mtu = 1450 };
	_cleanup_free_ char *s = NULL, *s6 = NULL;
	LeaseFile back;

	assert_int_equal(lease_subnet_gateway(&(IpPrefix) { P("10.244.1.0/24").addr, 24 }, &lf.subnet), 0);
	assert_int_equal(lease_file_render(&lf, &s), 0);
	assert_string_equal(
			s, "WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.1.1/24\nWEFT_MTU=1450\nWEFT_IPMASQ=false\n");
	assert_int_equal(lease_file_parse(s, &back), 0);
	assert_true(ip_prefix_equal(&back.network, &lf.network));
	assert_true(ip_prefix_equal(&back.subnet, &lf.subnet));
	assert_int_equal(back.mtu, 1450);
	assert_false(back.ipmasq);
	assert_false(ip_addr_is_set(&back.network6.addr));

	lf.network6 = P("fd00:10:244::/56");
	assert_int_equal(lease_subnet_gateway(&(IpPrefix) { P("fd00:10:244:1::/64").addr, 64 }, &lf.subnet6), 0);
	lf.ipmasq = true;
	assert_int_equal(lease_file_render(&lf, &s6), 0);
	assert_string_equal(s6, "WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.1.1/24\n"
				"WEFT_NETWORK6=fd00:10:244::/56\nWEFT_SUBNET6=fd00:10:244:1::1/64\n"
				"WEFT_MTU=1450\nWEFT_IPMASQ=true\n");
	assert_int_equal(lease_file_parse(s6, &back), 0);
	assert_true(ip_prefix_equal(&back.subnet6, &lf.subnet6));
	assert_true(back.ipmasq);

	/* nothing to render */
	assert_int_equal(lease_file_render(&(LeaseFile) { .mtu = 1500 }, &s), -EINVAL);
	assert_int_equal(lease_subnet_gateway(&(IpPrefix) { P("10.0.0.1/32").addr, 32 }, &lf.subnet), -EINVAL);
}

static void test_lease_parse(void **state) {
	LeaseFile lf;

	/* comments, blanks, CRLF, unknown keys are fine */
	assert_int_equal(lease_file_parse("# weft\n\nWEFT_NETWORK=10.244.0.0/16\r\nWEFT_SUBNET=10.244.7.1/24\n"
					  "WEFT_FUTURE=1\nWEFT_MTU=1500\n",
					  &lf),
			 0);
	assert_int_equal(lf.subnet.len, 24);
	assert_int_equal(lf.mtu, 1500);
	/* IPv6 only */
	assert_int_equal(lease_file_parse("WEFT_NETWORK6=fd00::/48\nWEFT_SUBNET6=fd00:0:0:5::1/64\nWEFT_MTU=1430\n",
					  &lf),
			 0);
	assert_false(ip_addr_is_set(&lf.network.addr));

	static const char *const bad[] = {
		"",
		"WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.1.1/24\n",                /* no MTU */
		"WEFT_NETWORK=10.244.0.0/16\nWEFT_MTU=1450\n",                            /* no subnet */
		"WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.245.1.1/24\nWEFT_MTU=1450\n", /* outside */
		"WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.1.1/8\nWEFT_MTU=1450\n",  /* shorter than net */
		"WEFT_NETWORK=10.244.0.1/16\nWEFT_SUBNET=10.244.1.1/24\nWEFT_MTU=1450\n", /* host bits */
		"WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.1.1/24\nWEFT_MTU=abc\n",
		"WEFT_NETWORK=10.244.0.0/16\nWEFT_SUBNET=10.244.1.1/24\nWEFT_MTU=1450\nWEFT_IPMASQ=maybe\n",
		"WEFT_NETWORK=fd00::/48\nWEFT_SUBNET=fd00::1/64\nWEFT_MTU=1450\n", /* family */
		"garbage\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(lease_file_parse(bad[i], &lf), -EINVAL);
}

static void test_lease_file_io(void **state) {
	char dir[] = "/tmp/test-weftd-lease.XXXXXX";
	_cleanup_free_ char *path = NULL;
	LeaseFile lf = { .network = P("10.244.0.0/16"), .subnet = P("10.244.3.1/24"), .mtu = 1450 }, back;
	struct stat st;

	assert_non_null(mkdtemp(dir));
	path = strdup_printf("%s/%s", dir, LEASE_FILE_NAME);
	assert_int_equal(lease_file_read(path, &back), -ENOENT);
	assert_int_equal(lease_file_write(path, &lf), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(lease_file_read(path, &back), 0);
	assert_true(ip_prefix_equal(&back.subnet, &lf.subnet));
	unlink(path);
	rmdir(dir);
}

static void test_conflist(void **state) {
	_cleanup_free_ char *s = NULL, *s2 = NULL;
	json_t *j, *plugins;
	json_error_t err;

	assert_int_equal(cni_conf_render(&(CniConfParams) { .run_dir = "/run/weft" }, &s), 0);
	j = json_loads(s, 0, &err);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "cniVersion")), "1.0.0");
	assert_string_equal(json_string_value(json_object_get(j, "name")), "weft");
	plugins = json_object_get(j, "plugins");
	assert_int_equal(json_array_size(plugins), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(plugins, 0), "type")), "weft");
	assert_string_equal(json_string_value(json_object_get(json_array_get(plugins, 0), "runDir")), "/run/weft");
	/* the keys the weft plugin reads, at top level */
	assert_true(json_is_true(json_object_get(json_array_get(plugins, 0), "hairpinMode")));
	assert_true(json_is_true(json_object_get(json_array_get(plugins, 0), "isDefaultGateway")));
	assert_null(json_object_get(json_array_get(plugins, 0), "dataDir"));
	json_decref(j);

	assert_int_equal(cni_conf_render(&(CniConfParams) { .run_dir = "/x", .data_dir = "/d", .portmap = true }, &s2),
			 0);
	j = json_loads(s2, 0, &err);
	assert_non_null(j);
	plugins = json_object_get(j, "plugins");
	assert_string_equal(json_string_value(json_object_get(json_array_get(plugins, 0), "dataDir")), "/d");
	assert_int_equal(json_array_size(plugins), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(plugins, 1), "type")), "portmap");
	assert_true(json_is_true(
			json_object_get(json_object_get(json_array_get(plugins, 1), "capabilities"), "portMappings")));
	assert_true(json_is_true(json_object_get(json_array_get(plugins, 1), "snat")));
	json_decref(j);
}

static void test_conflist_files(void **state) {
	char dir[] = "/tmp/test-weftd-cni.XXXXXX";
	_cleanup_free_ char *conf = NULL, *bin = NULL, *pm = NULL, *file = NULL, *text = NULL;

	assert_non_null(mkdtemp(dir));
	conf = strdup_printf("%s/net.d", dir);
	bin = strdup_printf("%s/bin", dir);
	pm = strdup_printf("%s/portmap", bin);
	file = strdup_printf("%s/%s", conf, CNI_CONF_FILE_NAME);
	assert_false(cni_conf_have_plugin(bin, "portmap"));
	assert_int_equal(mkdir_p(bin, 0755), 0);
	assert_int_equal(write_file_atomic(pm, "#!/bin/sh\n", 10, 0755), 0);
	assert_true(cni_conf_have_plugin(bin, "portmap"));

	assert_false(cni_conf_present(conf));
	assert_int_equal(cni_conf_write(conf, &(CniConfParams) { .run_dir = dir, .portmap = true }), 0);
	assert_true(cni_conf_present(conf));
	assert_int_equal(read_full_file(file, &text, NULL), 0);
	assert_non_null(strstr(text, "\"portmap\""));
	assert_int_equal(cni_conf_remove(conf), 0);
	assert_int_equal(cni_conf_remove(conf), 0);
	assert_false(cni_conf_present(conf));
	unlink(pm);
	rmdir(bin);
	rmdir(conf);
	rmdir(dir);
}

/* masquerade_render() as text (caller frees). */
static int masq_text(const MasqueradeParams *p, char **ret) {
	NftBatch b;
	int r = nft_batch_begin(&b);

	if (r >= 0)
		r = masquerade_render(p, &b);
	if (r >= 0)
		r = nft_batch_finish(&b);
	if (r < 0) {
		nft_batch_done(&b);
		return r;
	}
	*ret = nft_batch_steal(&b);
	return 0;
}

static int masq_uninstall_text(char **ret) {
	NftBatch b;
	int r = nft_batch_begin(&b);

	if (r < 0)
		return r;
	masquerade_render_uninstall(&b);
	r = nft_batch_finish(&b);
	if (r < 0) {
		nft_batch_done(&b);
		return r;
	}
	*ret = nft_batch_steal(&b);
	return 0;
}

static void test_masquerade_render(void **state) {
	_cleanup_free_ char *on = NULL, *off = NULL, *ds = NULL, *un = NULL;

	assert_int_equal(masq_text(&(MasqueradeParams) { .network = P("10.244.0.0/16"), .masquerade = true }, &on), 0);
	assert_non_null(strstr(on, "add table inet weft\n"));
	assert_non_null(strstr(on, "flush chain inet weft node-forward\n"));
	assert_non_null(strstr(on, "add rule inet weft node-forward ip saddr 10.244.0.0/16 accept"));
	assert_non_null(strstr(on, "add rule inet weft node-forward ip daddr 10.244.0.0/16 accept"));
	/* pod -> pod returns before the masquerade rule */
	assert_true(strstr(on, "ip saddr 10.244.0.0/16 ip daddr 10.244.0.0/16 return") <
		    strstr(on, "ip saddr 10.244.0.0/16 masquerade"));
	assert_non_null(strstr(on, "ip saddr 10.244.0.0/16 ip daddr 10.244.0.0/16 return"));
	assert_null(strstr(on, "ip6"));
	assert_null(strstr(on, "delete"));

	assert_int_equal(masq_text(&(MasqueradeParams) { .network = P("10.244.0.0/16") }, &off), 0);
	assert_null(strstr(off, "masquerade"));
	assert_non_null(strstr(off, "delete chain inet weft node-postrouting\n"));

	assert_int_equal(masq_text(&(MasqueradeParams) { .network = P("10.244.0.0/16"),
							 .network6 = P("fd00::/48"),
							 .masquerade = true },
				   &ds),
			 0);
	assert_non_null(strstr(ds, "ip6 saddr fd00::/48 ip6 daddr fd00::/48 return"));
	assert_non_null(strstr(ds, "ip6 saddr fd00::/48 masquerade"));

	assert_int_equal(masq_text(&(MasqueradeParams) {}, &un), -EINVAL);
	assert_int_equal(masq_uninstall_text(&un), 0);
	assert_non_null(strstr(un, "delete chain inet weft node-forward\n"));
	assert_non_null(strstr(un, "delete chain inet weft node-postrouting\n"));
	assert_null(strstr(un, "br-"));
	assert_null(strstr(un, "delete table"));
}

static void test_metrics(void **state) {
	Metrics m = { .lease_subnet = P("10.244.1.0/24"), .nodes = 2, .routes = 2, .datastore_connected = true };
	_cleanup_free_ char *s = NULL;

	metrics_observe_reconcile(&m, 0.0005);
	metrics_observe_reconcile(&m, 0.2);
	metrics_observe_reconcile(&m, 30);
	metrics_error(&m, METRICS_OP_ROUTE_ADD);
	m.hostgw_unreachable = 1;
	assert_int_equal(metrics_render(&m, &s), 0);
	assert_non_null(strstr(s, "weft_lease_info{subnet=\"10.244.1.0/24\"} 1\n"));
	assert_non_null(strstr(s, "\nweft_nodes 2\n"));
	assert_non_null(strstr(s, "\nweft_routes_programmed 2\n"));
	assert_non_null(strstr(s, "weft_reconcile_duration_seconds_bucket{le=\"0.001\"} 1\n"));
	assert_non_null(strstr(s, "weft_reconcile_duration_seconds_bucket{le=\"0.5\"} 2\n"));
	assert_non_null(strstr(s, "weft_reconcile_duration_seconds_bucket{le=\"2\"} 2\n"));
	assert_non_null(strstr(s, "weft_reconcile_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
	assert_non_null(strstr(s, "weft_reconcile_duration_seconds_count 3\n"));
	assert_non_null(strstr(s, "\nweft_reconcile_total 3\n"));
	assert_non_null(strstr(s, "weft_errors_total{op=\"route_add\"} 1\n"));
	assert_non_null(strstr(s, "\nweft_hostgw_unreachable_total 1\n"));
	assert_non_null(strstr(s, "\nweft_datastore_connected 1\n"));
	/* every line is a comment or "name[{labels}] value" */
	for (const char *p = s; *p;) {
		size_t n = strcspn(p, "\n");
		if (*p != '#')
			assert_non_null(memchr(p, ' ', n));
		p += n + (p[n] ? 1 : 0);
	}
}

static void test_status_server_parse(void **state) {
	struct sockaddr_storage ss;
	socklen_t len;
	char method[16], path[256];

	assert_int_equal(status_server_parse_listen("127.0.0.1:9876", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(status_server_parse_listen("[::1]:80", &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(status_server_parse_listen(":9876", &ss, &len), 0);
	assert_int_equal(status_server_parse_listen("127.0.0.1", &ss, &len), -EINVAL);
	assert_int_equal(status_server_parse_listen("127.0.0.1:0", &ss, &len), -EINVAL);
	assert_int_equal(status_server_parse_listen("127.0.0.1:70000", &ss, &len), -EINVAL);
	assert_int_equal(status_server_parse_listen("host:80", &ss, &len), -EINVAL);

	assert_int_equal(status_server_parse_request_line("GET /metrics?x=1 HTTP/1.1\r\n", method, path), 0);
	assert_string_equal(method, "GET");
	assert_string_equal(path, "/metrics");
	assert_int_equal(status_server_parse_request_line("GET\r\n", method, path), -EINVAL);
	assert_int_equal(status_server_parse_request_line("GET x HTTP/1.0", method, path), -EINVAL);
	assert_int_equal(status_server_parse_request_line(" / HTTP/1.0", method, path), -EINVAL);
}

typedef struct TimerCtx {
	EventLoop *loop;
	EventSource *debounce;
	int fired, debounced;
} TimerCtx;

static int on_tick(EventSource *s, void *userdata) {
	TimerCtx *c = userdata;

	c->fired++;
	/* a burst of events: only the first arms the debounce timer */
	assert_int_equal(event_source_arm_once(c->debounce, 20 * USEC_PER_MSEC), 0);
	if (c->fired == 5) {
		assert_int_equal(event_source_disarm(s), 0);
		event_source_free(s); /* freeing oneself inside the callback is allowed */
	}
	return 0;
}

static int on_debounced(EventSource *s, void *userdata) {
	TimerCtx *c = userdata;

	c->debounced++;
	event_loop_exit(c->loop, 42);
	return 0;
}

static void test_event_loop(void **state) {
	_cleanup_(event_loop_freep) EventLoop *e = NULL;
	TimerCtx c = {};
	EventSource *tick;
	uint64_t t0 = now_usec();

	assert_int_equal(event_loop_new(&e), 0);
	c.loop = e;
	assert_int_equal(event_loop_add_timer(e, on_tick, &c, &tick), 0);
	assert_int_equal(event_loop_add_timer(e, on_debounced, &c, &c.debounce), 0);
	assert_false(event_source_armed(c.debounce));
	assert_int_equal(event_source_arm(tick, 1000, 1000), 0);
	assert_int_equal(event_loop_run(e), 42);
	assert_true(c.fired >= 5);
	assert_int_equal(c.debounced, 1);
	assert_true(now_usec() - t0 >= 20 * USEC_PER_MSEC);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lease_render),   cmocka_unit_test(test_lease_parse),
		cmocka_unit_test(test_lease_file_io),  cmocka_unit_test(test_conflist),
		cmocka_unit_test(test_conflist_files), cmocka_unit_test(test_masquerade_render),
		cmocka_unit_test(test_metrics),        cmocka_unit_test(test_status_server_parse),
		cmocka_unit_test(test_event_loop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
