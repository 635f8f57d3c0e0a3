/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Service address policy and conflicts (service-admission.h): special addresses, the
 * infrastructure, the pod network, the Service range, the externalIP / LB allow-list, node
 * addresses (exact listing, never the reserved ports), the nodePort range, endpoints (the
 * default/kubernetes exception in Kubernetes mode), the keys a Service claims (deduplicated) and
 * the winner of a conflict (older, then namespace/name), including who must be rebuilt when a
 * Service changes or goes. Last, the model with the policy as its admit callback renders no
 * refused address.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/service/service-admission.h"
#include "daemon/service/service-compile.h"
#include "test-ip-helpers.h"
#include "test-kube-helpers.h"

static StringPool *pool;

static KubeObject *decode(const char *fmt, ...) _printf_(1, 2);
static KubeObject *decode(const char *fmt, ...) {
	KubeObject *o;
	va_list ap;

	va_start(ap, fmt);
	o = test_kube_vdecode(pool, KUBE_KIND_SERVICE, fmt, ap);
	va_end(ap);
	return o;
}

static KubeObject *svc(const char *ns, const char *name, const char *spec, const char *status) {
	return decode("{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":{%s},\"status\":{%s}}", ns, name,
		      spec, status ?: "");
}

/* The test cluster: pods 10.244.0.0/16, Services 10.96.0.0/16, etcd at 10.0.0.100, node
 * addresses 10.0.0.1 (this node) and 10.0.0.2 (a lease), externalIPs allowed in 192.0.2.0/24 and
 * exactly 10.0.0.2/32; reserved tcp/9876 (weftd) and udp/4789 (vxlan). */
static IpPrefix ranges[1], pods[1], allow[2], pools[1];
static IpAddr infra[1], nodes[2];
static const ServiceReservedPort reserved[] = { { KUBE_PROTO_TCP, 9876 }, { KUBE_PROTO_UDP, 4789 } };
static ServiceAdmissionPolicy pol;

static int setup(void **state) {
	ranges[0] = P("10.96.0.0/16");
	pods[0] = P("10.244.0.0/16");
	allow[0] = P("192.0.2.0/24");
	allow[1] = P("10.0.0.2/32");
	pools[0] = P("198.51.100.0/24");
	infra[0] = A("10.0.0.100");
	nodes[0] = A("10.0.0.1");
	nodes[1] = A("10.0.0.2");
	pol = (ServiceAdmissionPolicy) {
		.service_ranges = ranges,
		.n_service_ranges = 1,
		.pod_networks = pods,
		.n_pod_networks = 1,
		.external_ip_cidrs = allow,
		.n_external_ip_cidrs = 2,
		.infra = infra,
		.n_infra = 1,
		.node_addrs = nodes,
		.n_node_addrs = 2,
		.reserved = reserved,
		.n_reserved = ELEMENTSOF(reserved),
		.node_port_min = SERVICE_NODE_PORT_MIN,
		.node_port_max = SERVICE_NODE_PORT_MAX,
	};
	return string_pool_new(&pool);
}

static int teardown(void **state) {
	string_pool_free(pool);
	return 0;
}

static void test_special(void **state) {
	static const struct {
		const char *ip;
		ServiceRejectReason want;
	} t[] = {
		{ "127.0.0.1", SERVICE_REJECT_LOOPBACK },
		{ "127.255.0.9", SERVICE_REJECT_LOOPBACK },
		{ "::1", SERVICE_REJECT_LOOPBACK },
		{ "::ffff:127.0.0.1", SERVICE_REJECT_LOOPBACK },
		{ "169.254.169.254", SERVICE_REJECT_LINK_LOCAL },
		{ "fe80::1", SERVICE_REJECT_LINK_LOCAL },
		{ "224.0.0.1", SERVICE_REJECT_MULTICAST },
		{ "239.255.255.250", SERVICE_REJECT_MULTICAST },
		{ "ff02::1", SERVICE_REJECT_MULTICAST },
		{ "0.0.0.0", SERVICE_REJECT_UNSPECIFIED },
		{ "0.1.2.3", SERVICE_REJECT_UNSPECIFIED },
		{ "255.255.255.255", SERVICE_REJECT_UNSPECIFIED },
		{ "::", SERVICE_REJECT_UNSPECIFIED },
		{ "10.96.0.10", SERVICE_ADMIT },
		{ "fd00::10", SERVICE_ADMIT },
		{ "223.255.255.255", SERVICE_ADMIT },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		IpAddr a = A(t[i].ip);

		if (service_admission_check_special(&a) != t[i].want)
			fail_msg("%s: %s, want %s", t[i].ip,
				 service_reject_reason_to_string(service_admission_check_special(&a)),
				 service_reject_reason_to_string(t[i].want));
	}
}

static void test_addresses(void **state) {
	static const struct {
		ServiceAddrUse use;
		const char *ip;
		KubeProtocol proto;
		uint16_t port;
		ServiceRejectReason want;
	} t[] = {
		/* clusterIPs */
		{ SERVICE_ADDR_CLUSTER_IP, "10.96.0.10", KUBE_PROTO_TCP, 80, SERVICE_ADMIT },
		{ SERVICE_ADDR_CLUSTER_IP, "127.0.0.1", KUBE_PROTO_TCP, 9876, SERVICE_REJECT_LOOPBACK },
		{ SERVICE_ADDR_CLUSTER_IP, "0.0.0.0", KUBE_PROTO_TCP, 80, SERVICE_REJECT_UNSPECIFIED },
		{ SERVICE_ADDR_CLUSTER_IP, "224.0.0.1", KUBE_PROTO_UDP, 80, SERVICE_REJECT_MULTICAST },
		{ SERVICE_ADDR_CLUSTER_IP, "10.0.0.100", KUBE_PROTO_TCP, 2379, SERVICE_REJECT_INFRASTRUCTURE },
		{ SERVICE_ADDR_CLUSTER_IP, "10.244.1.5", KUBE_PROTO_TCP, 8080, SERVICE_REJECT_POD_NETWORK },
		{ SERVICE_ADDR_CLUSTER_IP, "10.97.0.1", KUBE_PROTO_TCP, 80, SERVICE_REJECT_OUTSIDE_SERVICE_RANGE },
		{ SERVICE_ADDR_CLUSTER_IP, "10.0.0.1", KUBE_PROTO_TCP, 80, SERVICE_REJECT_NODE_ADDRESS },
		/* only an IPv4 range given: IPv6 clusterIPs are not judged by it */
		{ SERVICE_ADDR_CLUSTER_IP, "fd00:96::10", KUBE_PROTO_TCP, 80, SERVICE_ADMIT },
		/* externalIPs: only in the allow-list */
		{ SERVICE_ADDR_EXTERNAL_IP, "192.0.2.7", KUBE_PROTO_TCP, 80, SERVICE_ADMIT },
		{ SERVICE_ADDR_EXTERNAL_IP, "203.0.113.7", KUBE_PROTO_TCP, 80, SERVICE_REJECT_EXTERNAL_IP_NOT_ALLOWED },
		{ SERVICE_ADDR_EXTERNAL_IP, "10.0.0.100", KUBE_PROTO_TCP, 2379, SERVICE_REJECT_INFRASTRUCTURE },
		{ SERVICE_ADDR_EXTERNAL_IP, "169.254.169.254", KUBE_PROTO_TCP, 80, SERVICE_REJECT_LINK_LOCAL },
		{ SERVICE_ADDR_EXTERNAL_IP, "10.244.1.5", KUBE_PROTO_TCP, 80, SERVICE_REJECT_POD_NETWORK },
		/* a node's own address: this node's is not listed exactly, the lease's is (/32) ... */
		{ SERVICE_ADDR_EXTERNAL_IP, "10.0.0.1", KUBE_PROTO_TCP, 80, SERVICE_REJECT_NODE_ADDRESS },
		{ SERVICE_ADDR_EXTERNAL_IP, "10.0.0.2", KUBE_PROTO_TCP, 80, SERVICE_ADMIT },
		/* ... but never on weftd's port or the tunnel's */
		{ SERVICE_ADDR_EXTERNAL_IP, "10.0.0.2", KUBE_PROTO_TCP, 9876, SERVICE_REJECT_RESERVED_PORT },
		{ SERVICE_ADDR_EXTERNAL_IP, "10.0.0.2", KUBE_PROTO_UDP, 4789, SERVICE_REJECT_RESERVED_PORT },
		{ SERVICE_ADDR_EXTERNAL_IP, "10.0.0.2", KUBE_PROTO_TCP, 4789, SERVICE_ADMIT },
		/* LB ingress IPs: the same list, or the LB pools */
		{ SERVICE_ADDR_LB_IP, "192.0.2.9", KUBE_PROTO_TCP, 80, SERVICE_ADMIT },
		{ SERVICE_ADDR_LB_IP, "198.51.100.9", KUBE_PROTO_TCP, 80, SERVICE_REJECT_LB_IP_NOT_ALLOWED },
		{ SERVICE_ADDR_LB_IP, "10.0.0.100", KUBE_PROTO_TCP, 2379, SERVICE_REJECT_INFRASTRUCTURE },
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		IpAddr a = A(t[i].ip);
		ServiceRejectReason got = service_admission_check_addr(&pol, NULL, t[i].use, &a, t[i].proto, t[i].port);

		if (got != t[i].want)
			fail_msg("%s %s/%u: %s, want %s", service_addr_use_to_string(t[i].use), t[i].ip, t[i].port,
				 service_reject_reason_to_string(got), service_reject_reason_to_string(t[i].want));
	}

	/* a covering CIDR is not an operator's word about a node address */
	{
		IpPrefix wide[] = { P("10.0.0.0/24") };
		ServiceAdmissionPolicy p = pol;
		IpAddr a = A("10.0.0.2");

		p.external_ip_cidrs = wide;
		p.n_external_ip_cidrs = 1;
		assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_EXTERNAL_IP, &a, KUBE_PROTO_TCP,
							      80),
				 SERVICE_REJECT_NODE_ADDRESS);
		a = A("10.0.0.7");
		assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_EXTERNAL_IP, &a, KUBE_PROTO_TCP,
							      80),
				 SERVICE_ADMIT);
	}
	/* the LB pools hook */
	{
		ServiceAdmissionPolicy p = pol;
		IpAddr a = A("198.51.100.9");

		p.lb_pools = pools;
		p.n_lb_pools = 1;
		assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_LB_IP, &a, KUBE_PROTO_TCP, 80),
				 SERVICE_ADMIT);
		/* the pools are for LB IPs only */
		assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_EXTERNAL_IP, &a, KUBE_PROTO_TCP,
							      80),
				 SERVICE_REJECT_EXTERNAL_IP_NOT_ALLOWED);
	}
	/* the default: no externalIP at all */
	{
		ServiceAdmissionPolicy p = pol;
		IpAddr a = A("192.0.2.7");

		p.external_ip_cidrs = NULL;
		p.n_external_ip_cidrs = 0;
		assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_EXTERNAL_IP, &a, KUBE_PROTO_TCP,
							      80),
				 SERVICE_REJECT_EXTERNAL_IP_NOT_ALLOWED);
		assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_LB_IP, &a, KUBE_PROTO_TCP, 80),
				 SERVICE_REJECT_LB_IP_NOT_ALLOWED);
	}
}

static void test_node_ports(void **state) {
	ServiceAdmissionPolicy p = pol;
	uint16_t lo, hi;

	assert_int_equal(service_admission_check_node_port(&pol, KUBE_PROTO_TCP, 30000), SERVICE_ADMIT);
	assert_int_equal(service_admission_check_node_port(&pol, KUBE_PROTO_TCP, 32767), SERVICE_ADMIT);
	assert_int_equal(service_admission_check_node_port(&pol, KUBE_PROTO_TCP, 29999),
			 SERVICE_REJECT_NODE_PORT_RANGE);
	assert_int_equal(service_admission_check_node_port(&pol, KUBE_PROTO_TCP, 32768),
			 SERVICE_REJECT_NODE_PORT_RANGE);
	assert_int_equal(service_admission_check_node_port(&pol, KUBE_PROTO_TCP, 9876), SERVICE_REJECT_NODE_PORT_RANGE);
	assert_int_equal(service_admission_check_node_port(&pol, KUBE_PROTO_TCP, 22), SERVICE_REJECT_NODE_PORT_RANGE);
	/* an operator's wide range still never hands out weftd's port or the tunnel's */
	p.node_port_min = 1;
	p.node_port_max = 65535;
	assert_int_equal(service_admission_check_node_port(&p, KUBE_PROTO_TCP, 9876), SERVICE_REJECT_RESERVED_PORT);
	assert_int_equal(service_admission_check_node_port(&p, KUBE_PROTO_UDP, 4789), SERVICE_REJECT_RESERVED_PORT);
	assert_int_equal(service_admission_check_node_port(&p, KUBE_PROTO_UDP, 9876), SERVICE_ADMIT);

	assert_int_equal(service_node_port_range_parse("30000-32767", &lo, &hi), 0);
	assert_int_equal(lo, 30000);
	assert_int_equal(hi, 32767);
	assert_int_equal(service_node_port_range_parse("80-80", &lo, &hi), 0);
	assert_int_equal(lo, 80);
	assert_int_equal(service_node_port_range_parse("0-100", &lo, &hi), -EINVAL);
	assert_int_equal(service_node_port_range_parse("200-100", &lo, &hi), -EINVAL);
	assert_int_equal(service_node_port_range_parse("1-65536", &lo, &hi), -EINVAL);
	assert_int_equal(service_node_port_range_parse("30000", &lo, &hi), -EINVAL);
	assert_int_equal(service_node_port_range_parse("a-b", &lo, &hi), -EINVAL);
	assert_int_equal(service_node_port_range_parse("30000-", &lo, &hi), -EINVAL);
}

static void test_cidrs_parse(void **state) {
	IpPrefix *v = NULL;
	size_t n = 0;

	assert_int_equal(service_cidrs_parse("192.0.2.0/24,10.0.0.2/32,fd00::/64", &v, &n), 0);
	assert_int_equal(n, 3);
	assert_true(ip_prefix_equal(&v[1], &allow[1]));
	free(v);
	assert_int_equal(service_cidrs_parse("192.0.2.1/24", &v, &n), -EINVAL); /* host bits */
	assert_int_equal(service_cidrs_parse("nope", &v, &n), -EINVAL);
	assert_int_equal(service_cidrs_parse("", &v, &n), -EINVAL);
}

static void test_endpoints(void **state) {
	KubeObject *k = svc("default", "kubernetes", "\"clusterIP\":\"10.96.0.1\",\"ports\":[{\"port\":443}]", NULL);
	KubeObject *o = svc("attacker", "etcd", "\"clusterIP\":\"10.96.0.2\",\"ports\":[{\"port\":2379}]", NULL);
	ServiceAdmissionPolicy p = pol;
	IpAddr etcd = A("10.0.0.100"), node = A("10.0.0.1"), lo = A("127.0.0.1"), pod = A("10.244.1.5");

	/* etcd mode: nobody may point at the datastore */
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(k), &etcd), SERVICE_REJECT_INFRASTRUCTURE);
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(o), &etcd), SERVICE_REJECT_INFRASTRUCTURE);
	/* Kubernetes mode: default/kubernetes is the API server */
	p.kube_mode = true;
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(k), &etcd), SERVICE_ADMIT);
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(o), &etcd), SERVICE_REJECT_INFRASTRUCTURE);
	/* hostNetwork pods: node addresses are endpoints */
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(o), &node), SERVICE_ADMIT);
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(o), &pod), SERVICE_ADMIT);
	assert_int_equal(service_admission_check_endpoint(&p, KUBE_SERVICE(k), &lo), SERVICE_REJECT_LOOPBACK);
	kube_object_free(k, pool);
	kube_object_free(o, pool);
}

/* weftd in a pod: its API server address is KUBERNETES_SERVICE_HOST, default/kubernetes's clusterIP */
static void test_in_cluster_apiserver(void **state) {
	KubeObject *k = svc("default", "kubernetes", "\"clusterIP\":\"10.96.0.1\",\"ports\":[{\"port\":443}]", NULL);
	KubeObject *o = svc("attacker", "api", "\"clusterIP\":\"10.96.0.1\",\"ports\":[{\"port\":443}]", NULL);
	IpAddr api[] = { A("10.96.0.1") }, vip = A("10.96.0.1");
	ServiceAdmissionPolicy p = pol;

	p.infra = api;
	p.n_infra = 1;
	/* etcd mode has no such Service: the address is infrastructure for everyone */
	assert_int_equal(service_admission_check_addr(&p, KUBE_SERVICE(k), SERVICE_ADDR_CLUSTER_IP, &vip,
						      KUBE_PROTO_TCP, 443),
			 SERVICE_REJECT_INFRASTRUCTURE);
	p.kube_mode = true;
	assert_int_equal(service_admission_check_addr(&p, KUBE_SERVICE(k), SERVICE_ADDR_CLUSTER_IP, &vip,
						      KUBE_PROTO_TCP, 443),
			 SERVICE_ADMIT);
	/* only as its clusterIP, and only for that Service */
	assert_int_equal(service_admission_check_addr(&p, KUBE_SERVICE(o), SERVICE_ADDR_CLUSTER_IP, &vip,
						      KUBE_PROTO_TCP, 443),
			 SERVICE_REJECT_INFRASTRUCTURE);
	assert_int_equal(service_admission_check_addr(&p, KUBE_SERVICE(k), SERVICE_ADDR_EXTERNAL_IP, &vip,
						      KUBE_PROTO_TCP, 443),
			 SERVICE_REJECT_INFRASTRUCTURE);
	assert_int_equal(service_admission_check_addr(&p, NULL, SERVICE_ADDR_CLUSTER_IP, &vip, KUBE_PROTO_TCP, 443),
			 SERVICE_REJECT_INFRASTRUCTURE);
	kube_object_free(k, pool);
	kube_object_free(o, pool);
}

static void assert_keys(char **v, size_t n, const char *const *want) {
	size_t i = 0;

	for (; want[i]; i++) {
		if (i >= n)
			fail_msg("missing key %s", want[i]);
		if (!streq(v[i], want[i]))
			fail_msg("key %zu: %s, want %s", i, v[i], want[i]);
	}
	if (i != n)
		fail_msg("%zu keys, want %zu (extra: %s)", n, i, v[i]);
}

static void test_claim_keys(void **state) {
	char **v = NULL;
	size_t n = 0;
	/* an externalIP equal to its clusterIP, an LB IP equal to an externalIP: one claim each; the
	 * refused ones none */
	KubeObject *s = svc(
			"shop", "web",
			"\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.10\",\"externalTrafficPolicy\":\"Local\","
			"\"healthCheckNodePort\":31000,"
			"\"externalIPs\":[\"192.0.2.7\",\"10.96.0.10\",\"10.0.0.100\",\"10.0.0.1\"],"
			"\"ports\":[{\"name\":\"http\",\"port\":80,\"nodePort\":30080},"
			"{\"name\":\"ssh\",\"port\":22,\"nodePort\":22}]",
			"\"loadBalancer\":{\"ingress\":[{\"ip\":\"192.0.2.7\"},{\"ip\":\"203.0.113.1\"}]}");
	KubeObject *h = svc("shop", "headless", "\"clusterIP\":\"None\",\"ports\":[{\"port\":80}]", NULL);
	static const char *const want[] = {
		"10.96.0.10 . tcp . 22",
		"10.96.0.10 . tcp . 80",
		"192.0.2.7 . tcp . 22",
		"192.0.2.7 . tcp . 80",
		"nodeport . tcp . 30080",
		"nodeport . tcp . 31000",
		NULL,
	};
	static const char *const none[] = { NULL };

	assert_int_equal(service_admission_claim_keys(&pol, KUBE_SERVICE(s), &v, &n), 0);
	assert_keys(v, n, want);
	strv_free(v);
	assert_int_equal(service_admission_claim_keys(&pol, KUBE_SERVICE(h), &v, &n), 0);
	assert_keys(v, n, none);
	strv_free(v);
	kube_object_free(s, pool);
	kube_object_free(h, pool);
}

static void test_claims(void **state) {
	ServiceClaims *c = NULL;
	char **aff = NULL;
	char *k1[] = { "192.0.2.7 . tcp . 80", "nodeport . tcp . 30080" };
	char *k2[] = { "192.0.2.7 . tcp . 80" };
	char *k3[] = { "nodeport . tcp . 30080" };

	assert_int_equal(service_claims_new(&c), 0);
	/* b/new (created 200) first: it holds the key until an older one comes */
	assert_int_equal(service_claims_set(c, "b/new", 200, k1, 2, &aff), 0);
	assert_null(aff);
	assert_true(service_claims_wins(c, "b/new", k1[0]));
	/* a/old is older: it wins both keys, b/new must be rebuilt */
	assert_int_equal(service_claims_set(c, "z/old", 100, k1, 2, &aff), 0);
	assert_non_null(aff);
	assert_true(strv_contains(aff, "b/new"));
	aff = strv_free(aff);
	assert_string_equal(service_claims_winner(c, k1[0]), "z/old");
	assert_false(service_claims_wins(c, "b/new", k1[0]));
	assert_false(service_claims_wins(c, "b/new", k1[1]));
	/* a tie in age: namespace/name decides */
	assert_int_equal(service_claims_set(c, "a/tie", 100, k2, 1, &aff), 0);
	assert_true(strv_contains(aff, "z/old"));
	aff = strv_free(aff);
	assert_string_equal(service_claims_winner(c, k2[0]), "a/tie");
	assert_string_equal(service_claims_winner(c, k1[1]), "z/old");
	/* a key nobody claims is nobody's conflict */
	assert_true(service_claims_wins(c, "b/new", "10.96.0.1 . tcp . 1"));
	/* a/tie drops the address: z/old holds it again */
	assert_int_equal(service_claims_set(c, "a/tie", 100, k3, 1, &aff), 0);
	assert_true(strv_contains(aff, "z/old"));
	aff = strv_free(aff);
	assert_string_equal(service_claims_winner(c, k2[0]), "z/old");
	assert_string_equal(service_claims_winner(c, k3[0]), "a/tie");
	/* z/old goes: the losers win now, and are told */
	assert_int_equal(service_claims_set(c, "z/old", 0, NULL, 0, &aff), 0);
	assert_true(strv_contains(aff, "b/new"));
	aff = strv_free(aff);
	assert_string_equal(service_claims_winner(c, k1[0]), "b/new");
	assert_string_equal(service_claims_winner(c, k3[0]), "a/tie");
	/* a backdated re-creation (etcd: a smaller revision cannot be written; here it can) ranks anew */
	assert_int_equal(service_claims_set(c, "b/new", 50, k1, 2, &aff), 0);
	assert_true(strv_contains(aff, "a/tie"));
	aff = strv_free(aff);
	assert_string_equal(service_claims_winner(c, k3[0]), "b/new");
	assert_int_equal(service_claims_size(c), 2);
	/* everyone gone: nothing left */
	assert_int_equal(service_claims_set(c, "b/new", 50, NULL, 0, &aff), 0);
	aff = strv_free(aff);
	assert_int_equal(service_claims_set(c, "a/tie", 100, NULL, 0, &aff), 0);
	aff = strv_free(aff);
	assert_int_equal(service_claims_size(c), 0);
	service_claims_free(c);
}

/* Many Services on one key, in any order: the same winner (what every node must agree on). */
static void test_claims_order(void **state) {
	char *k[] = { "10.96.0.10 . tcp . 80" };
	char name[32];

	for (unsigned seed = 1; seed <= 5; seed++) {
		ServiceClaims *c = NULL;
		char **aff = NULL;

		assert_int_equal(service_claims_new(&c), 0);
		for (unsigned i = 0; i < 200; i++) {
			unsigned j = (i * 7919u + seed * 104729u) % 200;

			snprintf(name, sizeof(name), "ns%03u/svc", j);
			assert_int_equal(service_claims_set(c, name, 1000 - (j % 10), k, 1, &aff), 0);
		}
		/* created 991 is the smallest (j % 10 == 9); of those ns009 sorts first */
		assert_string_equal(service_claims_winner(c, k[0]), "ns009/svc");
		strv_free(aff);
		service_claims_free(c);
	}
}

static bool admit_by_policy(void *userdata, ServiceAddrUse use, const IpAddr *ip, KubeProtocol proto, uint16_t port) {
	const KubeService *s = userdata;

	if (use == SERVICE_ADDR_ENDPOINT)
		return service_admission_check_endpoint(&pol, s, ip) == SERVICE_ADMIT;
	if (use == SERVICE_ADDR_NODE_PORT)
		return service_admission_check_node_port(&pol, proto, port) == SERVICE_ADMIT;
	return service_admission_check_addr(&pol, NULL, use, ip, proto, port) == SERVICE_ADMIT;
}

static bool has_elem(const ServiceUnit *u, const char *key) {
	for (size_t i = 0; i < u->n_elems; i++)
		if (streq(u->elems[i].key, key))
			return true;
	return false;
}

/* The model renders no refused address, port or endpoint; the rest of the Service still is. */
static void test_model_filter(void **state) {
	KubeObject *s = svc("attacker", "grab",
			    "\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.20\","
			    "\"externalIPs\":[\"10.0.0.100\",\"192.0.2.7\"],"
			    "\"ports\":[{\"name\":\"a\",\"port\":2379,\"nodePort\":9876},"
			    "{\"name\":\"b\",\"port\":80,\"nodePort\":30080}]",
			    NULL);
	KubeObject *sl = NULL;
	json_t *j;
	json_error_t jerr;
	DecodeError err = {};
	SvcSlotPool *slots = NULL;
	ServiceUnit *u = NULL, *all = NULL;
	const KubeEndpointSlice *slices[1];

	j = json_loads("{\"metadata\":{\"namespace\":\"attacker\",\"name\":\"grab-1\",\"labels\":{\"kubernetes.io/"
		       "service-name\":\"grab\"}},\"addressType\":\"IPv4\",\"endpoints\":["
		       "{\"addresses\":[\"10.0.0.100\"],\"conditions\":{\"ready\":true}},"
		       "{\"addresses\":[\"10.244.1.5\"],\"conditions\":{\"ready\":true}}],"
		       "\"ports\":[{\"name\":\"a\",\"port\":2379},{\"name\":\"b\",\"port\":8080}]}",
		       0, &jerr);
	assert_non_null(j);
	assert_int_equal(kube_object_decode(KUBE_KIND_ENDPOINT_SLICE, j, pool, &sl, &err), 0);
	json_decref(j);
	slices[0] = KUBE_ENDPOINT_SLICE(sl);
	assert_int_equal(svc_slot_pool_new(&slots), 0);
	assert_int_equal(service_unit_build(&(ServiceModelInput) { .node = "n1",
								   .svc = KUBE_SERVICE(s),
								   .slices = slices,
								   .n_slices = 1,
								   .slots = slots },
					    &all),
			 0);
	/* without a policy (the model alone) everything is there: the reference */
	assert_true(has_elem(all, "10.0.0.100 . tcp . 2379"));
	assert_true(has_elem(all, "tcp . 9876"));
	svc_slot_pool_reset(slots);
	assert_int_equal(service_unit_build(&(ServiceModelInput) { .node = "n1",
								   .svc = KUBE_SERVICE(s),
								   .slices = slices,
								   .n_slices = 1,
								   .slots = slots,
								   .admit = admit_by_policy,
								   .admit_userdata = (void *) KUBE_SERVICE(s) },
					    &u),
			 0);
	assert_false(has_elem(u, "10.0.0.100 . tcp . 2379"));
	assert_false(has_elem(u, "10.0.0.100 . tcp . 80"));
	assert_false(has_elem(u, "tcp . 9876"));
	assert_true(has_elem(u, "10.96.0.20 . tcp . 2379"));
	assert_true(has_elem(u, "10.96.0.20 . tcp . 80"));
	assert_true(has_elem(u, "192.0.2.7 . tcp . 80"));
	assert_true(has_elem(u, "tcp . 30080"));
	/* the etcd endpoint is never a target; the pod is */
	for (size_t i = 0; i < u->n_targets; i++)
		assert_null(strstr(u->targets[i], "10.0.0.100"));
	for (size_t i = 0; i < u->n_elems; i++)
		assert_null(strstr(u->elems[i].value, "10.0.0.100"));
	for (size_t i = 0; i < u->n_chains; i++)
		assert_null(strstr(u->chains[i].rules ?: "", "10.0.0.100"));
	assert_true(u->n_targets > 0);
	service_unit_free(u);
	service_unit_free(all);
	svc_slot_pool_free(slots);
	kube_object_free(sl, pool);
	kube_object_free(s, pool);
}

/* A refused clusterIP is not "allocated": svc-cluster-ips-check must never reject traffic to it
 * (etcd's address as a clusterIP made weftd's own etcd connections fail with a reset). */
static void test_model_refused_cluster_ip(void **state) {
	KubeObject *s = svc("attacker", "etcd", "\"clusterIP\":\"10.0.0.100\",\"ports\":[{\"port\":80}]", NULL);
	SvcSlotPool *slots = NULL;
	ServiceUnit *u = NULL;

	assert_int_equal(svc_slot_pool_new(&slots), 0);
	assert_int_equal(service_unit_build(&(ServiceModelInput) { .node = "n1",
								   .svc = KUBE_SERVICE(s),
								   .slots = slots,
								   .admit = admit_by_policy,
								   .admit_userdata = (void *) KUBE_SERVICE(s) },
					    &u),
			 0);
	for (size_t i = 0; i < u->n_elems; i++)
		assert_null(strstr(u->elems[i].key, "10.0.0.100"));
	service_unit_free(u);
	svc_slot_pool_free(slots);
	kube_object_free(s, pool);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_special),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_node_ports),
		cmocka_unit_test(test_cidrs_parse),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_in_cluster_apiserver),
		cmocka_unit_test(test_claim_keys),
		cmocka_unit_test(test_claims),
		cmocka_unit_test(test_claims_order),
		cmocka_unit_test(test_model_filter),
		cmocka_unit_test(test_model_refused_cluster_ip),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
