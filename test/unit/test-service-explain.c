/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `weft service explain` on a model built in memory (service-explain.h): Services and slices
 * decoded from JSON, their units built by service_unit_build() under the address policy as the
 * agent builds them, then explained: the endpoints read back from the endpoint map and from the
 * endpoint chains (affinity), why the others are not chosen (not ready, terminating beside ready
 * ones, another node under Local), the Local paths (dropped for outside clients, pods
 * short-circuited), masquerade and hairpin, no endpoints (reject), a refused externalIP with its
 * logged reason, an address of the range no Service holds, and DEST parsing.
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
#include "daemon/service/service-explain.h"
#include "test-ip-helpers.h"
#include "test-kube-helpers.h"

static StringPool *pool;
static IpPrefix ranges[1], pods[1], allow[1];
static IpAddr nodes[2];
static ServiceAdmissionPolicy pol;

static KubeObject *decode(KubeKind kind, const char *fmt, ...) _printf_(2, 3);
static KubeObject *decode(KubeKind kind, const char *fmt, ...) {
	KubeObject *o;
	va_list ap;

	va_start(ap, fmt);
	o = test_kube_vdecode(pool, kind, fmt, ap);
	va_end(ap);
	return o;
}

static int setup(void **state) {
	ranges[0] = P("10.96.0.0/16");
	pods[0] = P("10.244.0.0/16");
	allow[0] = P("192.0.2.0/24");
	nodes[0] = A("10.0.0.1");
	nodes[1] = A("10.0.0.2");
	pol = (ServiceAdmissionPolicy) {
		.service_ranges = ranges,
		.n_service_ranges = 1,
		.pod_networks = pods,
		.n_pod_networks = 1,
		.external_ip_cidrs = allow,
		.n_external_ip_cidrs = 1,
		.node_addrs = nodes,
		.n_node_addrs = 2,
		.node_port_min = SERVICE_NODE_PORT_MIN,
		.node_port_max = SERVICE_NODE_PORT_MAX,
	};
	return string_pool_new(&pool);
}

static int teardown(void **state) {
	string_pool_free(pool);
	return 0;
}

static bool admit(void *userdata, ServiceAddrUse use, const IpAddr *ip, KubeProtocol protocol, uint16_t port) {
	const KubeService *svc = userdata;

	if (use == SERVICE_ADDR_ENDPOINT)
		return service_admission_check_endpoint(&pol, svc, ip) == SERVICE_ADMIT;
	if (use == SERVICE_ADDR_NODE_PORT || use == SERVICE_ADDR_HEALTH_CHECK_NODE_PORT)
		return service_admission_check_node_port(&pol, protocol, port) == SERVICE_ADMIT;
	return service_admission_check_addr(&pol, svc, use, ip, protocol, port) == SERVICE_ADMIT;
}

/* One Service (spec JSON members) with one IPv4 slice (endpoints JSON members, port 8080) explained
 * for `node`: the text, *found. */
static char *explain(const char *node, const char *spec, const char *status, const char *endpoints, const char *dest,
		     const char *from, const char *const *refusals, size_t n_refusals, bool *found) {
	KubeObject *s = decode(KUBE_KIND_SERVICE,
			       "{\"metadata\":{\"namespace\":\"shop\",\"name\":\"web\"},\"spec\":{%s},\"status\":{%s}}",
			       spec, status ?: "");
	KubeObject *sl = endpoints ? decode(KUBE_KIND_ENDPOINT_SLICE,
					    "{\"metadata\":{\"namespace\":\"shop\",\"name\":\"web-1\",\"labels\":{"
					    "\"kubernetes.io/service-name\":\"web\"}},\"addressType\":\"IPv4\","
					    "\"endpoints\":[%s],\"ports\":[{\"port\":8080}]}",
					    endpoints)
				   : NULL;
	const KubeEndpointSlice *slices[1] = { KUBE_ENDPOINT_SLICE(sl) };
	SvcSlotPool *slots = NULL;
	ServiceUnit *u = NULL;
	IpAddr d, f;
	uint16_t port;
	int proto;
	char *text = NULL;

	assert_int_equal(svc_slot_pool_new(&slots), 0);
	assert_int_equal(service_unit_build(&(ServiceModelInput) { .node = node,
								   .svc = KUBE_SERVICE(s),
								   .slices = slices,
								   .n_slices = sl ? 1 : 0,
								   .pod_networks = pods,
								   .n_pod_networks = 1,
								   .slots = slots,
								   .admit = admit,
								   .admit_userdata = (void *) KUBE_SERVICE(s) },
					    &u),
			 0);
	if (from)
		f = A(from);
	assert_int_equal(service_explain_parse_dest(dest, &d, &port, &proto), 0);
	assert_int_equal(service_explain(
					 &(ServiceExplainInput) {
							 .node = node,
							 .services = &(ServiceExplainEntry) { .svc = KUBE_SERVICE(s),
											      .slices = slices,
											      .n_slices = sl ? 1 : 0,
											      .unit = u },
							 .n_services = 1,
							 .policy = &pol,
							 .refusals = refusals,
							 .n_refusals = n_refusals,
							 .service_ranges = ranges,
							 .n_service_ranges = 1,
							 .from = from ? &f : NULL,
							 .from_name = from },
					 &d, port, proto, &text, found),
			 0);
	service_unit_free(u);
	svc_slot_pool_free(slots);
	kube_object_free(s, pool);
	kube_object_free(sl, pool);
	return text;
}

#define EP(ip, node, cond) "{\"addresses\":[\"" ip "\"],\"nodeName\":\"" node "\",\"conditions\":" cond "}"
#define READY "{\"ready\":true}"
#define TERMINATING "{\"ready\":false,\"serving\":true,\"terminating\":true}"

static void expect_line(const char *text, const char *line) {
	if (!strstr(text, line))
		fail_msg("missing \"%s\" in:\n%s", line, text);
}

static void test_cluster_ip(void **state) {
	bool found;
	char *t = explain("node3",
			  "\"clusterIP\":\"10.96.0.10\",\"ports\":[{\"name\":\"\",\"port\":80,\"targetPort\":8080}]",
			  NULL,
			  EP("10.244.1.5", "node1",
			     READY) "," EP("10.244.2.5", "node2",
					   READY) "," EP("10.244.3.5", "node3",
							 "{\"ready\":false}") "," EP("10.244.4.5", "node4",
										     TERMINATING),
			  "10.96.0.10:80", "10.244.3.9", NULL, 0, &found);

	assert_true(found);
	expect_line(t, "10.96.0.10:80/TCP: ClusterIP of Service shop/web, port 80/TCP\n");
	expect_line(t, "  verdict: forwarded to one of 10.244.1.5:8080, 10.244.2.5:8080 at random\n");
	expect_line(t, "  masquerade: no (a connection to a ClusterIP keeps its source)\n");
	expect_line(t, "  endpoint 10.244.3.5:8080 (node node3): not chosen: not ready\n");
	expect_line(t, "  endpoint 10.244.4.5:8080 (node node4): not chosen: terminating: ready endpoints exist\n");
	expect_line(t, "  session affinity: None\n");
	free(t);
	/* hairpin: the client is an endpoint */
	t = explain("node1", "\"clusterIP\":\"10.96.0.10\",\"ports\":[{\"port\":80,\"targetPort\":8080}]", NULL,
		    EP("10.244.1.5", "node1", READY), "10.96.0.10:80", "10.244.1.5", NULL, 0, &found);
	expect_line(t, "  verdict: forwarded to its one endpoint 10.244.1.5:8080\n");
	expect_line(t, "  masquerade: yes (hairpin");
	free(t);
	/* only a terminating, serving endpoint: chosen */
	t = explain("node1", "\"clusterIP\":\"10.96.0.10\",\"ports\":[{\"port\":80,\"targetPort\":8080}]", NULL,
		    EP("10.244.4.5", "node4", TERMINATING), "10.96.0.10:80", NULL, NULL, 0, &found);
	expect_line(t, "  endpoint 10.244.4.5:8080 (node node4): chosen (terminating but serving");
	free(t);
}

static void test_affinity_and_itp(void **state) {
	bool found;
	char *t = explain("node3",
			  "\"clusterIP\":\"10.96.0.10\",\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{"
			  "\"clientIP\":{\"timeoutSeconds\":30}},\"ports\":[{\"port\":80,\"targetPort\":8080}]",
			  NULL, EP("10.244.1.5", "node1", READY) "," EP("10.244.2.5", "node2", READY), "10.96.0.10",
			  NULL, NULL, 0, &found);

	assert_true(found);
	expect_line(t, "  session affinity: ClientIP, timeout 30 s");
	expect_line(t, "  verdict: forwarded to one of 10.244.1.5:8080, 10.244.2.5:8080 at random\n");
	free(t);
	t = explain("node3",
		    "\"clusterIP\":\"10.96.0.10\",\"internalTrafficPolicy\":\"Local\",\"ports\":[{\"port\":80,"
		    "\"targetPort\":8080}]",
		    NULL, EP("10.244.2.5", "node2", READY), "10.96.0.10:80", NULL, NULL, 0, &found);
	expect_line(t, "  verdict: dropped (endpoints exist, but none this node may use");
	free(t);
	t = explain("node2",
		    "\"clusterIP\":\"10.96.0.10\",\"internalTrafficPolicy\":\"Local\",\"ports\":[{\"port\":80,"
		    "\"targetPort\":8080}]",
		    NULL, EP("10.244.2.5", "node2", READY) "," EP("10.244.1.5", "node1", READY), "10.96.0.10:80", NULL,
		    NULL, 0, &found);
	expect_line(t, "  verdict: forwarded to its one endpoint 10.244.2.5:8080\n");
	expect_line(t,
		    "  endpoint 10.244.1.5:8080 (node node1): not chosen: not on this node (node2), and the internal "
		    "traffic policy is Local\n");
	free(t);
}

#define LOCAL_LB                                                                                                       \
	"\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.13\",\"externalTrafficPolicy\":\"Local\",\"ports\":[{"      \
	"\"port\":80,\"targetPort\":8080,\"nodePort\":30081}]"

static void test_external(void **state) {
	bool found;
	char *t = explain("node1", LOCAL_LB, NULL, EP("10.244.2.5", "node2", READY), "10.0.0.1:30081", "203.0.113.1",
			  NULL, 0, &found);

	assert_true(found);
	expect_line(t, "10.0.0.1:30081/TCP: NodePort of Service shop/web");
	expect_line(t, "  verdict: dropped (externalTrafficPolicy Local and no endpoint on this node");
	expect_line(t, "  from pods: forwarded to its one endpoint 10.244.2.5:8080\n");
	expect_line(t, "  from this node itself: forwarded to its one endpoint 10.244.2.5:8080\n");
	free(t);
	t = explain("node2", LOCAL_LB, "\"loadBalancer\":{\"ingress\":[{\"ip\":\"192.0.2.9\"}]}",
		    EP("10.244.2.5", "node2", READY), "192.0.2.9:80/tcp", "203.0.113.1", NULL, 0, &found);
	expect_line(t, "192.0.2.9:80/TCP: LoadBalancer IP of Service shop/web");
	expect_line(t, "  verdict: forwarded to its one endpoint 10.244.2.5:8080\n");
	expect_line(t, "  masquerade: no (externalTrafficPolicy Local keeps the client's source)\n");
	free(t);
	/* Cluster: masqueraded */
	t = explain("node1",
		    "\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.13\",\"externalIPs\":[\"192.0.2.7\"],\"ports\":[{"
		    "\"port\":80,\"targetPort\":8080,\"nodePort\":30080}]",
		    NULL, EP("10.244.2.5", "node2", READY), "192.0.2.7:80", NULL, NULL, 0, &found);
	expect_line(t, "192.0.2.7:80/TCP: externalIP of Service shop/web");
	expect_line(t, "  masquerade: yes (external traffic with externalTrafficPolicy Cluster");
	free(t);
}

static void test_no_endpoints_and_refused(void **state) {
	static const char *const refusals[] = {
		"shop/web: externalIP 198.51.100.7 TCP/80 refused: external-ip-not-allowed",
	};
	bool found;
	char *t = explain("node1",
			  "\"clusterIP\":\"10.96.0.11\",\"ports\":[{\"port\":80},{\"name\":\"u\",\"port\":53,"
			  "\"protocol\":\"UDP\"}]",
			  NULL, NULL, "10.96.0.11", NULL, NULL, 0, &found);

	assert_true(found);
	expect_line(t, "10.96.0.11:80/TCP: ClusterIP");
	expect_line(t, "  verdict: rejected (no usable endpoint: TCP reset)\n");
	expect_line(t, "10.96.0.11:53/UDP: ClusterIP");
	expect_line(t, "  verdict: rejected (no usable endpoint: ICMP port unreachable)\n");
	free(t);
	t = explain("node1",
		    "\"clusterIP\":\"10.96.0.19\",\"externalIPs\":[\"198.51.100.7\"],\"ports\":[{\"port\":80}]", NULL,
		    EP("10.244.1.5", "node1", READY), "198.51.100.7:80", NULL, refusals, 1, &found);
	assert_false(found);
	expect_line(t, "  verdict: refused: weft does not program this externalIP: external-ip-not-allowed\n");
	expect_line(t, "weft_service_rejected_total{reason=\"external-ip-not-allowed\"}");
	free(t);
	t = explain("node1", "\"clusterIP\":\"10.96.0.19\",\"ports\":[{\"port\":80}]", NULL, NULL, "10.96.0.99:80",
		    NULL, NULL, 0, &found);
	assert_false(found);
	expect_line(t, "10.96.0.99:80: no Service answers for it\n");
	expect_line(t, "drops it");
	free(t);
	t = explain("node1", "\"clusterIP\":\"10.96.0.19\",\"ports\":[{\"port\":80}]", NULL, NULL, "10.96.0.19:81",
		    NULL, NULL, 0, &found);
	assert_false(found);
	expect_line(t, "rejects it");
	free(t);
}

static void test_parse_dest(void **state) {
	IpAddr a;
	uint16_t port;
	int proto;

	assert_int_equal(service_explain_parse_dest("10.96.0.10", &a, &port, &proto), 0);
	assert_int_equal(port, 0);
	assert_int_equal(proto, -1);
	assert_int_equal(service_explain_parse_dest("10.96.0.10:53/UDP", &a, &port, &proto), 0);
	assert_int_equal(port, 53);
	assert_int_equal(proto, KUBE_PROTO_UDP);
	assert_int_equal(service_explain_parse_dest("fd00::1", &a, &port, &proto), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(port, 0);
	assert_int_equal(service_explain_parse_dest("[fd00::1]:80/sctp", &a, &port, &proto), 0);
	assert_int_equal(port, 80);
	assert_int_equal(proto, KUBE_PROTO_SCTP);
	assert_int_equal(service_explain_parse_dest("10.96.0.10/tcp", &a, &port, &proto), 0);
	assert_int_equal(proto, KUBE_PROTO_TCP);
	assert_int_equal(service_explain_parse_dest("10.96.0.10:0", &a, &port, &proto), -EINVAL);
	assert_int_equal(service_explain_parse_dest("10.96.0.10:70000", &a, &port, &proto), -EINVAL);
	assert_int_equal(service_explain_parse_dest("10.96.0.10:80/icmp", &a, &port, &proto), -EINVAL);
	assert_int_equal(service_explain_parse_dest("[fd00::1", &a, &port, &proto), -EINVAL);
	assert_int_equal(service_explain_parse_dest("shop/web", &a, &port, &proto), -EINVAL);
	assert_int_equal(service_explain_parse_dest("", &a, &port, &proto), -EINVAL);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_ip), cmocka_unit_test(test_affinity_and_itp),
		cmocka_unit_test(test_external),   cmocka_unit_test(test_no_endpoints_and_refused),
		cmocka_unit_test(test_parse_dest),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
