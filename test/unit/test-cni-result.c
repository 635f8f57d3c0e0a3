/* SPDX-License-Identifier: Apache-2.0 */
/* Result model: parse/print for every spec version, conversion between every pair, error JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"
#include "shared/cni/cni-types.h"

static IpPrefix P(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static IpAddr A(const char *s) {
	IpAddr a = { .family = AF_UNSPEC };
	if (s)
		assert_int_equal(ip_addr_parse(s, &a), 0);
	return a;
}

/* Everything 1.1.0 can say, including what older versions cannot. */
static CniResult *canonical(void) {
	CniResult *r = cni_result_new(CNI_VERSION_1_1_0);
	IpPrefix p;
	IpAddr g;
	CniRoute rt;

	assert_non_null(r);
	assert_int_equal(cni_result_add_interface(r, "cni0", "0a:58:0a:01:00:01", NULL), 0);
	assert_int_equal(cni_result_add_interface(r, "eth0", "0a:58:0a:01:00:05", "/run/netns/pod"), 1);
	r->interfaces[1].mtu = 1400;
	r->interfaces[1].socket_path = strdup("/run/vhost.sock");
	r->interfaces[1].pci_id = strdup("0000:00:1f.6");
	p = P("10.1.0.5/24"), g = A("10.1.0.1");
	assert_int_equal(cni_result_add_ip(r, &p, &g, 1), 0);
	p = P("fd00::5/64"), g = A("fd00::1");
	assert_int_equal(cni_result_add_ip(r, &p, &g, 1), 1);
	p = P("10.2.0.5/24");
	assert_int_equal(cni_result_add_ip(r, &p, NULL, 1), 2);
	rt = (CniRoute) { .dst = P("0.0.0.0/0"),
			  .gw = A("10.1.0.1"),
			  .mtu = 1300,
			  .advmss = 1260,
			  .priority = 10,
			  .table = 100,
			  .scope = 0,
			  .has_scope = true };
	assert_int_equal(cni_result_add_route(r, &rt), 0);
	rt = (CniRoute) { .dst = P("::/0"), .gw = A("fd00::1") };
	assert_int_equal(cni_result_add_route(r, &rt), 1);
	rt = (CniRoute) { .dst = P("192.168.0.0/16") };
	assert_int_equal(cni_result_add_route(r, &rt), 2);
	assert_int_equal(strv_extend(&r->dns.nameservers, "10.96.0.10"), 0);
	r->dns.domain = strdup("cluster.local");
	assert_int_equal(strv_extend(&r->dns.search, "svc.cluster.local"), 0);
	assert_int_equal(strv_extend(&r->dns.options, "ndots:5"), 0);
	return r;
}

/* What a version can carry of `c`, built independently of the converter. */
static CniResult *reduce(const CniResult *c, CniVersion v) {
	CniResult *r = cni_result_new(v);
	bool have4 = false, have6 = false;

	if (v >= CNI_VERSION_0_3_0) {
		for (size_t i = 0; i < c->n_interfaces; i++)
			cni_result_add_interface(r, c->interfaces[i].name, c->interfaces[i].mac,
						 c->interfaces[i].sandbox);
		for (size_t i = 0; i < c->n_ips; i++)
			cni_result_add_ip(r, &c->ips[i].address, &c->ips[i].gateway, c->ips[i].interface);
		for (size_t i = 0; i < c->n_routes; i++) {
			CniRoute rt = { .dst = c->routes[i].dst, .gw = c->routes[i].gw };
			cni_result_add_route(r, v >= CNI_VERSION_1_1_0 ? &c->routes[i] : &rt);
		}
		if (v >= CNI_VERSION_1_1_0)
			for (size_t i = 0; i < c->n_interfaces; i++) {
				r->interfaces[i].mtu = c->interfaces[i].mtu;
				r->interfaces[i].socket_path = c->interfaces[i].socket_path
									       ? strdup(c->interfaces[i].socket_path)
									       : NULL;
				r->interfaces[i].pci_id =
						c->interfaces[i].pci_id ? strdup(c->interfaces[i].pci_id) : NULL;
			}
	} else {
		/* first IPv4, first IPv6, no interfaces; routes grouped under ip4 then ip6 */
		for (size_t i = 0; i < c->n_ips; i++) {
			bool is6 = c->ips[i].address.addr.family == AF_INET6;
			if (is6 ? have6 : have4)
				continue;
			cni_result_add_ip(r, &c->ips[i].address, &c->ips[i].gateway, -1);
			*(is6 ? &have6 : &have4) = true;
		}
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < c->n_routes; i++) {
				CniRoute rt = { .dst = c->routes[i].dst, .gw = c->routes[i].gw };
				bool is6 = rt.dst.addr.family == AF_INET6;
				if (is6 == (pass == 1) && (is6 ? have6 : have4))
					cni_result_add_route(r, &rt);
			}
	}
	cni_dns_merge(&r->dns, &c->dns);
	return r;
}

static char *dump(const CniResult *r, CniVersion v) {
	CniError err = {};
	json_t *j = cni_result_to_json(r, v, &err);
	char *s;

	if (!j)
		print_error("to_json(%s): %s\n", cni_version_to_string(v), err.msg);
	assert_non_null(j);
	s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	return s;
}

static CniResult *reparse(const char *s, CniVersion v) {
	CniResult *r = NULL;
	CniError err = {};
	json_t *j = json_loads(s, 0, NULL);

	assert_non_null(j);
	if (cni_result_from_json(j, v, &r, &err) < 0)
		print_error("from_json(%s, %s): %s\n", cni_version_to_string(v), s, err.msg);
	assert_non_null(r);
	json_decref(j);
	return r;
}

static void assert_result_equal(const CniResult *a, const CniResult *b) {
	char x[IP_PREFIX_STRLEN], y[IP_PREFIX_STRLEN];

	assert_int_equal(a->n_interfaces, b->n_interfaces);
	for (size_t i = 0; i < a->n_interfaces; i++) {
		assert_true(streq_ptr(a->interfaces[i].name, b->interfaces[i].name));
		assert_true(streq_ptr(a->interfaces[i].mac, b->interfaces[i].mac));
		assert_true(streq_ptr(a->interfaces[i].sandbox, b->interfaces[i].sandbox));
		assert_true(streq_ptr(a->interfaces[i].socket_path, b->interfaces[i].socket_path));
		assert_true(streq_ptr(a->interfaces[i].pci_id, b->interfaces[i].pci_id));
		assert_int_equal(a->interfaces[i].mtu, b->interfaces[i].mtu);
	}
	assert_int_equal(a->n_ips, b->n_ips);
	for (size_t i = 0; i < a->n_ips; i++) {
		assert_string_equal(ip_prefix_to_string(&a->ips[i].address, x),
				    ip_prefix_to_string(&b->ips[i].address, y));
		assert_true(ip_addr_equal(&a->ips[i].gateway, &b->ips[i].gateway));
		assert_int_equal(a->ips[i].interface, b->ips[i].interface);
	}
	assert_int_equal(a->n_routes, b->n_routes);
	for (size_t i = 0; i < a->n_routes; i++) {
		const CniRoute *p = &a->routes[i], *q = &b->routes[i];
		assert_string_equal(ip_prefix_to_string(&p->dst, x), ip_prefix_to_string(&q->dst, y));
		assert_true(ip_addr_equal(&p->gw, &q->gw));
		assert_int_equal(p->mtu, q->mtu);
		assert_int_equal(p->advmss, q->advmss);
		assert_int_equal(p->priority, q->priority);
		assert_int_equal(p->table, q->table);
		assert_int_equal(p->has_scope, q->has_scope);
		assert_int_equal(p->scope, q->scope);
	}
	assert_int_equal(strv_length(a->dns.nameservers), strv_length(b->dns.nameservers));
	assert_true(streq_ptr(a->dns.domain, b->dns.domain));
	assert_int_equal(strv_length(a->dns.search), strv_length(b->dns.search));
	assert_int_equal(strv_length(a->dns.options), strv_length(b->dns.options));
}

/* canonical -> v -> parse == what v can carry */
static void test_roundtrip_each_version(void **state) {
	_cleanup_(cni_result_freep) CniResult *c = canonical();

	for (int v = 0; v < _CNI_VERSION_MAX; v++) {
		_cleanup_free_ char *s = dump(c, (CniVersion) v);
		_cleanup_(cni_result_freep) CniResult *back = reparse(s, (CniVersion) v);
		_cleanup_(cni_result_freep) CniResult *want = reduce(c, (CniVersion) v);

		assert_result_equal(back, want);
		/* and printing again is stable */
		_cleanup_free_ char *s2 = dump(back, (CniVersion) v);
		assert_string_equal(s, s2);
	}
}

/* canonical -> a -> parse -> b is the same as (what a carries) -> b, for every pair. */
static void test_convert_every_pair(void **state) {
	_cleanup_(cni_result_freep) CniResult *c = canonical();

	for (int a = 0; a < _CNI_VERSION_MAX; a++)
		for (int b = 0; b < _CNI_VERSION_MAX; b++) {
			_cleanup_free_ char *sa = dump(c, (CniVersion) a);
			_cleanup_(cni_result_freep) CniResult *pa = reparse(sa, (CniVersion) a);
			_cleanup_(cni_result_freep) CniResult *want = reduce(c, (CniVersion) a);
			_cleanup_free_ char *got = dump(pa, (CniVersion) b), *exp = dump(want, (CniVersion) b);

			if (!streq(got, exp))
				print_error("%s -> %s:\n got %s\nwant %s\n", cni_version_to_string((CniVersion) a),
					    cni_version_to_string((CniVersion) b), got, exp);
			assert_string_equal(got, exp);
		}
}

static void test_golden(void **state) {
	_cleanup_(cni_result_freep) CniResult *c = canonical();
	_cleanup_free_ char *v020 = dump(c, CNI_VERSION_0_2_0), *v040 = dump(c, CNI_VERSION_0_4_0),
			    *v100 = dump(c, CNI_VERSION_1_0_0), *v110 = dump(c, CNI_VERSION_1_1_0);

	assert_string_equal(
			v020,
			"{\"cniVersion\":\"0.2.0\","
			"\"ip4\":{\"ip\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\",\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.1.0.1\"},{\"dst\":\"192.168.0.0/16\"}]},"
			"\"ip6\":{\"ip\":\"fd00::5/64\",\"gateway\":\"fd00::1\",\"routes\":[{\"dst\":\"::/0\",\"gw\":\"fd00::1\"}]},"
			"\"dns\":{\"nameservers\":[\"10.96.0.10\"],\"domain\":\"cluster.local\",\"search\":[\"svc.cluster.local\"],\"options\":[\"ndots:5\"]}}");
	assert_string_equal(
			v040,
			"{\"cniVersion\":\"0.4.0\","
			"\"interfaces\":[{\"name\":\"cni0\",\"mac\":\"0a:58:0a:01:00:01\"},{\"name\":\"eth0\",\"mac\":\"0a:58:0a:01:00:05\",\"sandbox\":\"/run/netns/pod\"}],"
			"\"ips\":[{\"version\":\"4\",\"interface\":1,\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\"},"
			"{\"version\":\"6\",\"interface\":1,\"address\":\"fd00::5/64\",\"gateway\":\"fd00::1\"},"
			"{\"version\":\"4\",\"interface\":1,\"address\":\"10.2.0.5/24\"}],"
			"\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.1.0.1\"},{\"dst\":\"::/0\",\"gw\":\"fd00::1\"},{\"dst\":\"192.168.0.0/16\"}],"
			"\"dns\":{\"nameservers\":[\"10.96.0.10\"],\"domain\":\"cluster.local\",\"search\":[\"svc.cluster.local\"],\"options\":[\"ndots:5\"]}}");
	assert_string_equal(
			v100,
			"{\"cniVersion\":\"1.0.0\","
			"\"interfaces\":[{\"name\":\"cni0\",\"mac\":\"0a:58:0a:01:00:01\"},{\"name\":\"eth0\",\"mac\":\"0a:58:0a:01:00:05\",\"sandbox\":\"/run/netns/pod\"}],"
			"\"ips\":[{\"interface\":1,\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\"},"
			"{\"interface\":1,\"address\":\"fd00::5/64\",\"gateway\":\"fd00::1\"},"
			"{\"interface\":1,\"address\":\"10.2.0.5/24\"}],"
			"\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.1.0.1\"},{\"dst\":\"::/0\",\"gw\":\"fd00::1\"},{\"dst\":\"192.168.0.0/16\"}],"
			"\"dns\":{\"nameservers\":[\"10.96.0.10\"],\"domain\":\"cluster.local\",\"search\":[\"svc.cluster.local\"],\"options\":[\"ndots:5\"]}}");
	assert_non_null(strstr(v110, "{\"name\":\"eth0\",\"mac\":\"0a:58:0a:01:00:05\",\"sandbox\":\"/run/netns/pod\","
				     "\"mtu\":1400,\"socketPath\":\"/run/vhost.sock\",\"pciID\":\"0000:00:1f.6\"}"));
	assert_non_null(strstr(v110, "{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.1.0.1\",\"mtu\":1300,\"advmss\":1260,"
				     "\"priority\":10,\"table\":100,\"scope\":0}"));
}

static void test_legacy_needs_an_ip(void **state) {
	_cleanup_(cni_result_freep) CniResult *r = cni_result_new(CNI_VERSION_1_0_0);
	CniError err = {};
	json_t *j;

	assert_int_equal(cni_result_add_interface(r, "eth0", NULL, "/x"), 0);
	for (CniVersion v = CNI_VERSION_0_1_0; v <= CNI_VERSION_0_2_0; v++) {
		assert_null(cni_result_to_json(r, v, &err));
		assert_int_equal(err.code, CNI_ERR_INCOMPATIBLE_VERSION);
		assert_non_null(strstr(err.msg, "no IP"));
		cni_error_clear(&err);
	}
	/* an IPv6-only result converts to ip6 alone */
	IpPrefix p = P("fd00::9/64");
	assert_int_equal(cni_result_add_ip(r, &p, NULL, 0), 0);
	j = cni_result_to_json(r, CNI_VERSION_0_2_0, &err);
	assert_non_null(j);
	assert_null(json_object_get(j, "ip4"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "ip6"), "ip")), "fd00::9/64");
	json_decref(j);
	/* an empty result is fine for 0.3.0+ (no keys but cniVersion and dns) */
	_cleanup_(cni_result_freep) CniResult *e = cni_result_new(CNI_VERSION_1_0_0);
	_cleanup_free_ char *s = dump(e, CNI_VERSION_1_0_0);
	assert_string_equal(s, "{\"cniVersion\":\"1.0.0\",\"dns\":{}}");
}

static void expect_parse_error(const char *s, CniVersion v, const char *sub) {
	CniResult *r = NULL;
	CniError err = {};
	json_t *j = json_loads(s, 0, NULL);

	assert_non_null(j);
	assert_int_equal(cni_result_from_json(j, v, &r, &err), -EINVAL);
	assert_null(r);
	assert_int_equal(err.code, CNI_ERR_DECODE);
	if (!strstr(err.msg, sub))
		print_error("%s: msg '%s' lacks '%s'\n", s, err.msg, sub);
	assert_non_null(strstr(err.msg, sub));
	cni_error_clear(&err);
	json_decref(j);
}

static void test_parse_errors(void **state) {
	expect_parse_error("[]", CNI_VERSION_1_0_0, "not a JSON object");
	expect_parse_error("{\"ips\":[{\"address\":\"10.0.0.1/24\",\"interface\":0}]}", CNI_VERSION_1_0_0, "interface");
	expect_parse_error(
			"{\"interfaces\":[{\"name\":\"e\"}],\"ips\":[{\"address\":\"10.0.0.1/24\",\"interface\":-1}]}",
			CNI_VERSION_1_0_0, "interface");
	expect_parse_error("{\"ips\":[{\"version\":\"6\",\"address\":\"10.0.0.1/24\"}]}", CNI_VERSION_0_4_0, "version");
	expect_parse_error("{\"ips\":[{\"address\":\"10.0.0.1\"}]}", CNI_VERSION_1_0_0, "\"10.0.0.1\"");
	expect_parse_error("{\"ips\":[{\"address\":\"10.0.0.1/24\",\"gateway\":\"fd00::1\"}]}", CNI_VERSION_1_0_0,
			   "family");
	expect_parse_error("{\"ips\":{}}", CNI_VERSION_1_0_0, "\"ips\"");
	expect_parse_error("{\"interfaces\":[{\"mac\":\"x\"}]}", CNI_VERSION_1_0_0, "name");
	expect_parse_error("{\"routes\":[{\"gw\":\"10.0.0.1\"}]}", CNI_VERSION_1_0_0, "dst");
	expect_parse_error("{\"routes\":[{\"dst\":\"0.0.0.0/0\",\"scope\":300}]}", CNI_VERSION_1_1_0, "scope");
	expect_parse_error("{\"ip4\":{\"ip\":\"fd00::1/64\"}}", CNI_VERSION_0_2_0, "ip4");
	expect_parse_error("{\"ip4\":{\"gateway\":\"10.0.0.1\"}}", CNI_VERSION_0_2_0, "\"ip\"");
	expect_parse_error("{\"dns\":{\"nameservers\":[1]}}", CNI_VERSION_1_0_0, "dns");
}

static void test_parse_lenient(void **state) {
	/* The reference loopback labels a 1.0-shaped result "0.2.0" and omits ips[].version at 0.4.0. */
	_cleanup_(cni_result_freep) CniResult *a = reparse(
			"{\"cniVersion\":\"0.2.0\",\"interfaces\":[{\"name\":\"lo\",\"mac\":\"00:00:00:00:00:00\",\"sandbox\":\"/x\"}],"
			"\"ips\":[{\"interface\":0,\"address\":\"127.0.0.1/8\"}],\"dns\":{}}",
			CNI_VERSION_0_2_0);
	assert_int_equal(a->n_interfaces, 1);
	assert_int_equal(a->n_ips, 1);
	assert_int_equal(a->ips[0].interface, 0);
	_cleanup_(cni_result_freep) CniResult *b =
			reparse("{\"ips\":[{\"address\":\"::1/128\"}],\"extra\":1}", CNI_VERSION_0_4_0);
	assert_int_equal(b->n_ips, 1);
	assert_int_equal(b->ips[0].interface, -1);
	/* legacy shape labelled 0.4.0 */
	_cleanup_(cni_result_freep) CniResult *c = reparse("{\"ip4\":{\"ip\":\"10.0.0.2/24\"}}", CNI_VERSION_0_4_0);
	assert_int_equal(c->n_ips, 1);
}

static void test_copy(void **state) {
	_cleanup_(cni_result_freep) CniResult *c = canonical();
	_cleanup_(cni_result_freep) CniResult *d = cni_result_copy(c);

	assert_non_null(d);
	assert_result_equal(c, d);
	assert_ptr_not_equal(c->interfaces[1].sandbox, d->interfaces[1].sandbox);
}

static void test_dns(void **state) {
	CniDns a = {}, b = {};
	json_t *j = json_loads("{\"nameservers\":[\"1.1.1.1\",\"8.8.8.8\"],\"domain\":\"x\",\"search\":[\"a\"]}", 0,
			       NULL);

	assert_int_equal(cni_dns_from_json(j, &a), 0);
	json_decref(j);
	j = json_loads("{\"nameservers\":[\"8.8.8.8\",\"9.9.9.9\"],\"domain\":\"y\",\"options\":[\"ndots:2\"]}", 0,
		       NULL);
	assert_int_equal(cni_dns_from_json(j, &b), 0);
	json_decref(j);
	assert_int_equal(cni_dns_merge(&a, &b), 0);
	assert_int_equal(strv_length(a.nameservers), 3);
	assert_string_equal(a.nameservers[2], "9.9.9.9");
	assert_string_equal(a.domain, "x");
	assert_string_equal(a.options[0], "ndots:2");
	j = cni_dns_to_json(&a);
	_cleanup_free_ char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s, "{\"nameservers\":[\"1.1.1.1\",\"8.8.8.8\",\"9.9.9.9\"],\"domain\":\"x\","
			       "\"search\":[\"a\"],\"options\":[\"ndots:2\"]}");
	json_decref(j);
	cni_dns_done(&a);
	cni_dns_done(&b);
	j = json_loads("{\"domain\":7}", 0, NULL);
	assert_int_equal(cni_dns_from_json(j, &a), -EINVAL);
	json_decref(j);
}

static void test_error_json(void **state) {
	CniError e = {}, back = {};
	json_t *j;

	assert_int_equal(cni_error_set(&e, -ENOENT, CNI_ERR_INVALID_ENV, "CNI_IFNAME \"%s\" is invalid", "a/b"),
			 -ENOENT);
	/* first error wins */
	assert_int_equal(cni_error_set(&e, -EIO, CNI_ERR_INTERNAL, "later"), -EIO);
	assert_int_equal(e.code, CNI_ERR_INVALID_ENV);
	j = cni_error_to_json(&e, CNI_VERSION_0_4_0);
	_cleanup_free_ char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s, "{\"cniVersion\":\"0.4.0\",\"code\":4,\"msg\":\"CNI_IFNAME \\\"a/b\\\" is invalid\"}");
	assert_int_equal(cni_error_from_json(j, &back), 0);
	assert_int_equal(back.code, 4);
	assert_string_equal(back.msg, e.msg);
	assert_null(back.details);
	json_decref(j);

	e.details = strdup("more");
	j = cni_error_to_json(&e, _CNI_VERSION_INVALID); /* config never parsed: newest version */
	_cleanup_free_ char *s2 = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(s2, "{\"cniVersion\":\"1.1.0\",\"code\":4,\"msg\":\"CNI_IFNAME \\\"a/b\\\" is invalid\","
				"\"details\":\"more\"}");
	assert_int_equal(cni_error_from_json(j, &back), 0);
	assert_string_equal(back.details, "more");
	json_decref(j);
	cni_error_clear(&e);
	cni_error_clear(&back);
	assert_int_equal(e.code, 0);

	/* Messages quote caller bytes; invalid UTF-8 must not make the error unprintable (fuzzer find). */
	cni_error_set(&e, -EINVAL, CNI_ERR_INVALID_ENV, "CNI_ARGS key \"%s\" is unknown", "IP\357");
	j = cni_error_to_json(&e, CNI_VERSION_1_0_0);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "msg")), "CNI_ARGS key \"IP?\" is unknown");
	json_decref(j);
	cni_error_clear(&e);

	j = json_loads("{\"msg\":\"no code\"}", 0, NULL);
	assert_int_equal(cni_error_from_json(j, &back), -EINVAL);
	json_decref(j);
}

static void test_error_errno(void **state) {
	CniError e = {};

	/* errno text appended; the kernel's extack after it when there is one */
	assert_int_equal(cni_error_set_errno(&e, -EEXIST, CNI_ERR_INTERNAL, NULL, "failed to add %s", "x"), -EEXIST);
	assert_int_equal(e.code, CNI_ERR_INTERNAL);
	assert_string_equal(e.msg, "failed to add x: File exists");
	cni_error_clear(&e);
	cni_error_set_errno(&e, -EINVAL, CNI_ERR_INVALID_NETCONF, "", "failed to set mtu %u", 70000u);
	assert_int_equal(e.code, CNI_ERR_INVALID_NETCONF);
	assert_string_equal(e.msg, "failed to set mtu 70000: Invalid argument");
	cni_error_clear(&e);
	cni_error_set_errno(&e, -EINVAL, 0, "MTU too big", "failed to set mtu");
	assert_int_equal(e.code, CNI_ERR_INTERNAL);
	assert_string_equal(e.msg, "failed to set mtu: Invalid argument: MTU too big");
	/* first error wins, as cni_error_set() */
	assert_int_equal(cni_error_set_errno(&e, -EIO, CNI_ERR_IO, "later", "later"), -EIO);
	assert_string_equal(e.msg, "failed to set mtu: Invalid argument: MTU too big");
	cni_error_clear(&e);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_each_version),
		cmocka_unit_test(test_convert_every_pair),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_legacy_needs_an_ip),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_lenient),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_dns),
		cmocka_unit_test(test_error_json),
		cmocka_unit_test(test_error_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
