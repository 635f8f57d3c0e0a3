/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bgp backend's pure parts (backend-bgp.h): the bird.conf weftd renders (that BIRD accepts
 * it, and what it installs, is test/netns/test-weftd-bgp.sh), BIRD's control-socket reply lines,
 * and counting sessions from "show protocols"; plus Backend.ASNumber in the net-conf.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/backend/backend-bgp.h"
#include "daemon/network-config.h"

static IpAddr A(const char *s) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

static IpPrefix P(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static void assert_contains(const char *hay, const char *needle) {
	if (!strstr(hay, needle))
		fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static void test_render(void **state) {
	BgpPeer peers[2] = {
		{ .ip = A("10.99.0.12"), .subnets = { P("10.244.2.0/24") }, .n_subnets = 1 },
		{ .ip = A("10.99.0.13"), .subnets = { P("10.244.3.0/24"), P("10.244.9.0/24") }, .n_subnets = 2 },
	};
	BirdConfInput in = {
		.router_id = A("10.99.0.11"),
		.local_ip = A("10.99.0.11"),
		.asn = 64600,
		.self = { P("10.244.1.0/24") },
		.n_self = 1,
		.peers = peers,
		.n_peers = 2,
	};
	char *c = NULL;

	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c, "router id 10.99.0.11;\n");
	/* the kernel gets BGP routes only, and BIRD reads nothing back from it */
	assert_contains(c, "import none;\n\t\texport where source = RTS_BGP;");
	assert_contains(c, "route 10.244.1.0/24 blackhole;");
	assert_contains(c,
			"protocol bgp node_10_99_0_12 {\n\tlocal 10.99.0.11 as 64600;\n\tneighbor 10.99.0.12 as 64600;");
	/* from each peer: exactly its leased subnet(s), with it as next hop */
	assert_contains(c, "if (net = 10.244.2.0/24) && bgp_next_hop = 10.99.0.12 then accept;\n\t\t\treject;");
	assert_contains(c, "if (net = 10.244.3.0/24 || net = 10.244.9.0/24) && bgp_next_hop = 10.99.0.13 then accept;");
	assert_contains(c, "graceful restart on;");
	assert_contains(c, "export where proto = \"weft_self\";");
	/* our own subnet is never accepted from anyone */
	assert_null(strstr(c, "net = 10.244.1.0/24"));
	free(c);

	/* a peer with no IPv4 subnet accepts nothing */
	peers[0].n_subnets = 0;
	in.n_peers = 1;
	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c, "import keep filtered on;\n\t\timport none;");
	free(c);

	/* no peers: still a valid config announcing our subnet */
	in.n_peers = 0;
	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_null(strstr(c, "protocol bgp"));
	free(c);

	/* an external peer (a router): eBGP, our AS back in the path allowed, only the listed prefixes */
	BgpExternalPeer ext = { .ip = A("10.99.0.1"), .asn = 65000 };
	IpPrefix acc[2] = { P("10.244.7.0/24"), P("10.244.8.0/24") };
	in.external = &ext;
	in.n_external = 1;
	in.external_accept = acc;
	in.n_external_accept = 2;
	peers[0].n_subnets = 1;
	peers[0].multihop = true;
	in.n_peers = 1;
	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c,
			"protocol bgp ext_10_99_0_1 {\n\tlocal 10.99.0.11 as 64600;\n\tneighbor 10.99.0.1 as 65000;");
	assert_contains(c, "allow local as;");
	assert_contains(c, "if net ~ [ 10.244.7.0/24, 10.244.8.0/24 ] then accept;\n\t\t\treject;");
	assert_contains(c, "neighbor 10.99.0.12 as 64600;\n\tmultihop;");
	free(c);
	in.n_external_accept = 0;
	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c, "allow local as;\n\tipv4 {\n\t\timport keep filtered on;\n\t\timport none;");
	free(c);

	in.router_id = A("2001:db8::1");
	assert_int_equal(bird_conf_render(&in, &c), -EINVAL);
}

static void test_reply_line(void **state) {
	static const struct {
		const char *line;
		int r, code;
		bool last;
		const char *text;
	} cases[] = {
		{ "0001 BIRD 2.0.12 ready.", 0, 1, true, "BIRD 2.0.12 ready." },
		{ "0002-Reading configuration from /run/weft/bird.conf", 0, 2, false,
		  "Reading configuration from /run/weft/bird.conf" },
		{ "0020 Configuration OK", 0, 20, true, "Configuration OK" },
		{ "8002 /x/bird.conf:3:1 syntax error", 0, 8002, true, "/x/bird.conf:3:1 syntax error" },
		{ " continued", 0, 0, false, "continued" },
		{ "002 short", -EBADMSG, 0, false, NULL },
		{ "00a2 x", -EBADMSG, 0, false, NULL },
		{ "0002:x", -EBADMSG, 0, false, NULL },
		{ "", -EBADMSG, 0, false, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int code = -1;
		bool last = false;
		const char *text = NULL;
		int r = bird_reply_line(cases[i].line, &code, &last, &text);
		assert_int_equal(r, cases[i].r);
		if (r < 0)
			continue;
		assert_int_equal(code, cases[i].code);
		assert_int_equal(last, cases[i].last);
		assert_string_equal(text, cases[i].text);
	}
}

static void test_count(void **state) {
	const char *reply =
			"2002-Name       Proto      Table      State  Since         Info\n"
			"1002-device1    Device     ---        up     22:40:01.123  \n"
			" weft_kernel Kernel     master4    up     22:40:01.123  \n"
			" weft_self  Static     master4    up     22:40:01.123  \n"
			" node_10_99_0_12 BGP        ---        up     22:40:03.456  Established   \n"
			" node_10_99_0_13 BGP        ---        start  22:40:03.456  Active        Socket: Connection refused\n"
			" node_10_99_0_14 BGP        ---        up     22:40:03.456  Established   \n"
			"0000 \n";
	unsigned total = 99, est = 99;

	bird_count_bgp(reply, &total, &est);
	assert_int_equal(total, 3);
	assert_int_equal(est, 2);
	bird_count_bgp("", &total, &est);
	assert_int_equal(total, 0);
	assert_int_equal(est, 0);
}

static void test_config(void **state) {
	NetworkConfig *c = NULL;
	char *err = NULL;

	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\"}}", &c,
					      &err),
			 0);
	assert_int_equal(c->backend.type, NETWORK_BACKEND_BGP);
	assert_int_equal(c->backend.asn, 64512);
	network_config_free(c);
	assert_int_equal(
			network_config_parse(
					"{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", \"ASNumber\": 4200000000}}",
					&c, &err),
			0);
	assert_int_equal(c->backend.asn, 4200000000u);
	network_config_free(c);
	assert_int_equal(
			network_config_parse(
					"{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", \"ASNumber\": 0}}",
					&c, &err),
			-EINVAL);
	assert_non_null(strstr(err, "Backend.ASNumber 0"));
	free(err);
	err = NULL;
	assert_int_equal(network_config_parse(
					 "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", \"Peers\": "
					 "[{\"IP\": \"10.99.0.1\", \"ASNumber\": 65000}]}}",
					 &c, &err),
			 0);
	assert_int_equal(c->backend.n_peers, 1);
	assert_int_equal(c->backend.peers[0].asn, 65000);
	network_config_free(c);
	assert_int_equal(network_config_parse(
					 "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", \"Peers\": "
					 "[{\"IP\": \"fe80::1\", \"ASNumber\": 65000}]}}",
					 &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "Backend.Peers[0].IP \"fe80::1\""));
	free(err);
	err = NULL;
	assert_int_equal(network_config_parse(
					 "{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", \"Peers\": "
					 "[{\"IP\": \"10.99.0.1\"}]}}",
					 &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "IP and ASNumber are required"));
	free(err);
}

/* A reflector: "rr client" for clients, reflected routes exported with next hops kept; a client
 * accepts from a reflector each other node's subnet only with that node as next hop. */
static void test_render_reflector(void **state) {
	BgpRoute reflected[2] = {
		{ .net = P("10.244.2.0/24"), .next_hop = A("10.99.0.12") },
		{ .net = P("10.244.3.0/24"), .next_hop = A("10.99.0.13") },
	};
	BgpPeer rr_peers[2] = {
		{ .ip = A("10.99.0.12"), .subnets = { P("10.244.2.0/24") }, .n_subnets = 1, .rr_client = true },
		{ .ip = A("10.99.0.13"), .subnets = { P("10.244.3.0/24") }, .n_subnets = 1, .reflector = true },
	};
	BirdConfInput in = {
		.router_id = A("10.99.0.11"),
		.local_ip = A("10.99.0.11"),
		.asn = 64600,
		.self = { P("10.244.1.0/24") },
		.n_self = 1,
		.peers = rr_peers,
		.n_peers = 2,
		.reflector = true,
		.reflected = reflected,
		.n_reflected = 2,
	};
	char *c = NULL, *stripped = NULL;

	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c,
			"neighbor 10.99.0.12 as 64600;\n\tdirect;\n\tconnect retry time 5;\n\tgraceful restart on;\n\trr client;\n");
	assert_null(strstr(strstr(c, "protocol bgp node_10_99_0_13"), "rr client"));
	assert_contains(c, "export where proto = \"weft_self\" || proto ~ \"node_*\";");
	assert_null(strstr(c, "next hop self"));
	/* from the other reflector (10.99.0.13): its own subnet, and 10.244.2.0/24 only via 10.99.0.12 */
	assert_contains(c, "if (net = 10.244.3.0/24) && bgp_next_hop = 10.99.0.13 then accept;\n"
			   "\t\t\tif net = 10.244.2.0/24 && bgp_next_hop = 10.99.0.12 then accept;\n\t\t\treject;");
	/* the client's session accepts only the client's own subnet */
	assert_contains(c, "if (net = 10.244.2.0/24) && bgp_next_hop = 10.99.0.12 then accept;\n\t\t\treject;");

	assert_int_equal(bird_conf_strip_self(c, &stripped), 0);
	assert_null(strstr(stripped, "route 10.244.1.0/24 blackhole;"));
	assert_contains(stripped, "protocol static weft_self {\n\tipv4;\n}\n");
	assert_int_equal(strlen(stripped), strlen(c) - strlen("\troute 10.244.1.0/24 blackhole;\n"));
	free(stripped);
	free(c);

	/* a client whose only peer is the reflector, which has no lease yet: nothing accepted */
	BgpPeer client_peer = { .ip = A("10.99.0.11"), .reflector = true };
	in = (BirdConfInput) { .router_id = A("10.99.0.12"),
			       .local_ip = A("10.99.0.12"),
			       .asn = 64600,
			       .peers = &client_peer,
			       .n_peers = 1 };
	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c, "import none;\n\t\texport where proto = \"weft_self\";\n\t\tnext hop self;");
	free(c);
}

/* node1 (10.99.0.11) with node peer node2, the router 10.99.0.1 and the LoadBalancer addresses lb */
static BirdConfInput lb_input(const BgpPeer *peer, const BgpExternalPeer *ext, const IpAddr *lb, size_t n) {
	return (BirdConfInput) {
		.router_id = A("10.99.0.11"),
		.local_ip = A("10.99.0.11"),
		.asn = 64600,
		.self = { P("10.244.1.0/24") },
		.n_self = 1,
		.peers = peer,
		.n_peers = 1,
		.external = ext,
		.n_external = 1,
		.announce = lb,
		.n_announce = n,
	};
}

/* LoadBalancer addresses (lb-announce.h): a static protocol of /32 blackholes exported to the
 * external peers only, and replaced alone when the set changes. */
static void test_render_announce(void **state) {
	BgpPeer peer = { .ip = A("10.99.0.12"), .subnets = { P("10.244.2.0/24") }, .n_subnets = 1 };
	BgpExternalPeer ext = { .ip = A("10.99.0.1"), .asn = 65000 };
	IpAddr lb[3] = { A("192.0.2.1"), A("2001:db8::1"), A("192.0.2.7") };
	BirdConfInput in = lb_input(&peer, &ext, lb, 3);
	char *c = NULL, *c2 = NULL, *none = NULL, *stripped = NULL;

	assert_int_equal(bird_conf_render(&in, &c), 0);
	/* IPv6 is skipped: the config is IPv4-only */
	assert_contains(c, "protocol static weft_lb {\n\tipv4;\n\troute 192.0.2.1/32 blackhole;\n"
			   "\troute 192.0.2.7/32 blackhole;\n}\n");
	assert_null(strstr(c, "2001:db8::1"));
	/* to the router, within its filters; the node mesh never gets them */
	assert_contains(c, "protocol bgp ext_10_99_0_1 {");
	assert_contains(c, "export where proto = \"weft_self\" || proto = \"weft_lb\";\n\t\tnext hop self;");
	assert_contains(c, "protocol bgp node_10_99_0_12 {");
	assert_contains(c, "\t\texport where proto = \"weft_self\";\n\t\tnext hop self;");

	/* replacing the set gives what rendering with the new set gives */
	in.n_announce = 1;
	assert_int_equal(bird_conf_render(&in, &c2), 0);
	free(c2);
	c2 = NULL;
	assert_int_equal(bird_conf_set_announced(c, lb, 1, &c2), 0);
	{
		char *want = NULL;

		assert_int_equal(bird_conf_render(&in, &want), 0);
		assert_string_equal(c2, want);
		free(want);
	}
	/* and none: an empty protocol (BIRD accepts it) */
	assert_int_equal(bird_conf_set_announced(c, NULL, 0, &none), 0);
	assert_contains(none, "protocol static weft_lb {\n\tipv4;\n}\n");
	assert_null(strstr(none, "192.0.2."));
	/* stripping our subnet on shutdown leaves the LB protocol alone */
	assert_int_equal(bird_conf_strip_self(c, &stripped), 0);
	assert_contains(stripped, "\troute 192.0.2.1/32 blackhole;");
	assert_null(strstr(stripped, "10.244.1.0/24 blackhole"));
	assert_int_equal(bird_conf_set_announced("router id 1.2.3.4;\n", lb, 1, &c2), -EINVAL);
	free(c);
	free(c2);
	free(none);
	free(stripped);
}

/* Whether the block of conf starting at head (to its closing brace) contains needle. */
static bool block_has(const char *conf, const char *head, const char *needle) {
	const char *start = strstr(conf, head), *end;

	assert_non_null(start);
	end = strstr(start, "\n}\n");
	assert_non_null(end);
	return memmem(start, (size_t) (end - start), needle, strlen(needle)) != NULL;
}

/* IPv6 LoadBalancer addresses (with an IPv6 underlay address): /128s in weft_lb6, exported only on
 * an ipv6 channel of the external sessions, next hop that address; the mesh stays IPv4. */
static void test_render_announce6(void **state) {
	BgpPeer peer = { .ip = A("10.99.0.12"), .subnets = { P("10.244.2.0/24") }, .n_subnets = 1 };
	BgpExternalPeer ext = { .ip = A("10.99.0.1"), .asn = 65000 };
	IpAddr lb[3] = { A("192.0.2.1"), A("2001:db8::1"), A("2001:db8::7") };
	BirdConfInput in = lb_input(&peer, &ext, lb, 3);
	char *c = NULL, *c2 = NULL, *want = NULL, *v4 = NULL;

	in.local_ip6 = A("fd00:99::11");
	assert_int_equal(bird_conf_render(&in, &c), 0);
	assert_contains(c, "protocol static weft_lb {\n\tipv4;\n\troute 192.0.2.1/32 blackhole;\n}\n");
	assert_contains(c, "protocol static weft_lb6 {\n\tipv6;\n\troute 2001:db8::1/128 blackhole;\n"
			   "\troute 2001:db8::7/128 blackhole;\n}\n");
	assert_contains(c, "export where proto = \"weft_self\" || proto = \"weft_lb\";\n\t\tnext hop self;\n\t};\n"
			   "\tipv6 {\n\t\timport none;\n\t\texport where proto = \"weft_lb6\";\n"
			   "\t\tnext hop self;\n\t\tnext hop address fd00:99::11;\n\t};\n}\n");
	/* the node mesh and the kernel protocol stay IPv4: BIRD never installs a /128 */
	assert_false(block_has(c, "protocol bgp node_10_99_0_12 {", "ipv6"));
	assert_false(block_has(c, "protocol kernel", "ipv6"));
	assert_true(block_has(c, "protocol bgp ext_10_99_0_1 {", "\tipv6 {"));

	/* a change of the set replaces both protocols, as rendering with the new set does */
	in.announce = lb + 1;
	in.n_announce = 1;
	assert_int_equal(bird_conf_render(&in, &want), 0);
	assert_int_equal(bird_conf_set_announced(c, lb + 1, 1, &c2), 0);
	assert_string_equal(c2, want);
	assert_contains(c2, "protocol static weft_lb {\n\tipv4;\n}\n");
	assert_contains(c2, "protocol static weft_lb6 {\n\tipv6;\n\troute 2001:db8::1/128 blackhole;\n}\n");

	/* no IPv6 underlay address: IPv4 only, the IPv6 addresses skipped (as before) */
	in.local_ip6 = (IpAddr) {};
	in.announce = lb;
	in.n_announce = 3;
	assert_int_equal(bird_conf_render(&in, &v4), 0);
	assert_null(strstr(v4, "ipv6"));
	assert_null(strstr(v4, "2001:db8::"));
	/* an IPv4 address where the IPv6 one belongs is refused */
	in.local_ip6 = A("10.99.0.11");
	free(want);
	want = NULL;
	assert_int_equal(bird_conf_render(&in, &want), -EINVAL);
	free(c);
	free(c2);
	free(v4);
}

static void test_config_reflectors(void **state) {
	NetworkConfig *c = NULL;
	char *err = NULL;

	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", "
					      "\"RouteReflectors\": [\"node-a\", \"node-b\"]}}",
					      &c, &err),
			 0);
	assert_int_equal(c->backend.n_route_reflectors, 2);
	assert_string_equal(c->backend.route_reflectors[1], "node-b");
	network_config_free(c);
	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", "
					      "\"RouteReflectors\": [\"\"]}}",
					      &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "Backend.RouteReflectors[0]"));
	free(err);
	err = NULL;
	assert_int_equal(network_config_parse("{\"Network\": \"10.244.0.0/16\", \"Backend\": {\"Type\": \"bgp\", "
					      "\"RouteReflectors\": \"node-a\"}}",
					      &c, &err),
			 -EINVAL);
	assert_non_null(strstr(err, "Backend.RouteReflectors: expected an array"));
	free(err);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_reply_line),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_render_reflector),
		cmocka_unit_test(test_config_reflectors),
		cmocka_unit_test(test_render_announce),
		cmocka_unit_test(test_render_announce6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
