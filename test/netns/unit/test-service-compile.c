/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services + EndpointSlices in, nftables objects out (service-compile.h): ClusterIP for TCP, UDP and
 * SCTP, several ports, targetPort by name resolved per endpoint from the slice's ports, endpoint
 * conditions (terminating only without a ready one), headless and ExternalName get nothing, no
 * endpoints reject, NodePort / externalIPs / LB IPs, traffic policies, dual-stack, and that a change
 * renders as a batch touching only what changed. As root, the batches are applied to a private
 * network namespace's nftables (full, then each diff) and the kernel's chains are compared.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/service/service-compile.h"
#include "daemon/service/service-counters.h"
#include "shared/nft/nft.h"
#include "../../unit/test-kube-helpers.h"

static StringPool *pool;
static SvcSlotPool *slots;
static SvcRefs *refs;

static KubeObject *decode(KubeKind kind, const char *fmt, ...) _printf_(2, 3);
static KubeObject *decode(KubeKind kind, const char *fmt, ...) {
	KubeObject *o;
	va_list ap;

	va_start(ap, fmt);
	o = test_kube_vdecode(pool, kind, fmt, ap);
	va_end(ap);
	return o;
}

/* spec: the Service's spec members (JSON, without braces) */
static KubeObject *svc(const char *name, const char *spec, const char *status) {
	return decode(KUBE_KIND_SERVICE,
		      "{\"metadata\":{\"namespace\":\"shop\",\"name\":\"%s\"},\"spec\":{%s},\"status\":{%s}}", name,
		      spec, status ?: "");
}

/* endpoints: JSON array members; ports: JSON array members */
static KubeObject *slice(const char *name, const char *service, const char *type, const char *endpoints,
			 const char *ports) {
	return decode(KUBE_KIND_ENDPOINT_SLICE,
		      "{\"metadata\":{\"namespace\":\"shop\",\"name\":\"%s\",\"labels\":{\"kubernetes.io/service-name\":"
		      "\"%s\"}},\"addressType\":\"%s\",\"endpoints\":[%s],\"ports\":[%s]}",
		      name, service, type, endpoints, ports);
}

#define EP(ip, node, ready, serving, term)                                                                             \
	"{\"addresses\":[\"" ip "\"],\"nodeName\":\"" node "\",\"conditions\":{\"ready\":" #ready                      \
	",\"serving\":" #serving ",\"terminating\":" #term "}}"

/* old: the unit programmed now, whose chains keep their slots (NULL: new slots) */
static ServiceUnit *build_from(const ServiceUnit *old, const char *node, KubeObject *s, KubeObject **slices, size_t n) {
	ServiceUnit *u = NULL;
	IpPrefix nets[1];

	assert_int_equal(ip_prefix_parse("10.244.0.0/16", &nets[0]), 0);
	assert_int_equal(service_unit_build(&(ServiceModelInput) { .node = node,
								   .svc = KUBE_SERVICE(s),
								   .slices = (const KubeEndpointSlice *const *) slices,
								   .n_slices = n,
								   .pod_networks = nets,
								   .n_pod_networks = 1,
								   .slots = slots,
								   .old = old },
					    &u),
			 0);
	return u;
}

static ServiceUnit *build(const char *node, KubeObject *s, KubeObject **slices, size_t n) {
	return build_from(NULL, node, s, slices, n);
}

static const SvcElem *elem(const ServiceUnit *u, const char *map, const char *key) {
	for (size_t i = 0; i < u->n_elems; i++)
		if (streq(u->elems[i].map, map) && streq(u->elems[i].key, key))
			return &u->elems[i];
	return NULL;
}

static const char *rules(const ServiceUnit *u, const char *chain) {
	const SvcChain *c = service_unit_chain(u, chain);

	if (!c)
		fail_msg("no chain %s", chain);
	return c->rules;
}

/* The endpoints a choosing chain maps to, in order: "10.244.1.10 . 8080, 10.244.2.10 . 8081" */
static char *chosen(const ServiceUnit *u, const char *chain) {
	const char *r = rules(u, chain), *p;
	char *buf = NULL, map[64], a[IP_ADDR_STRLEN + 2];
	size_t len = 0, k;
	unsigned first, port;
	FILE *f = open_memstream(&buf, &len);

	if ((p = strstr(r, "numgen random mod ")) &&
	    sscanf(p, "numgen random mod %zu offset %u map @%63s", &k, &first, map) == 3) {
		for (size_t i = 0; i < k; i++) {
			_cleanup_free_ char *key = strdup_printf("%u", first + (unsigned) i);
			const SvcElem *e = elem(u, map, key);

			if (!e)
				fail_msg("%s: no element %s in %s", chain, key, map);
			fprintf(f, "%s%s", i ? ", " : "", e->value);
		}
	} else if ((p = strstr(r, " to ")) && sscanf(p, " to [%46[^]]]:%u", a, &port) == 2)
		fprintf(f, "%s . %u", a, port);
	else if (p && sscanf(p, " to %46[^:]:%u", a, &port) == 2)
		fprintf(f, "%s . %u", a, port);
	else
		fail_msg("%s: no endpoint choice in:\n%s", chain, r);
	fclose(f);
	return buf;
}

#define assert_chosen(u, chain, want)                                                                                  \
	do {                                                                                                           \
		_cleanup_free_ char *_c = chosen(u, chain);                                                            \
		assert_string_equal(_c, want);                                                                         \
	} while (0)

static void free_all(KubeObject **v, size_t n) {
	for (size_t i = 0; i < n; i++)
		kube_object_free(v[i], pool);
}

/* ---- the kernel: apply batches in a private netns ---- */

static NftCtx *nft;

static void apply(const char *what, void (*render)(NftBatch *f, const void *arg), const void *arg) {
	char *buf, *err = NULL;
	NftBatch b;
	int r;

	assert_int_equal(nft_batch_begin(&b), 0);
	render(&b, arg);
	buf = nft_batch_steal(&b);
	assert_non_null(buf);
	if (!nft) {
		free(buf);
		return;
	}
	r = nft_apply(nft, buf, &err);
	if (r < 0)
		fail_msg("%s: nft refused (%d): %s\n%s", what, r, err ?: "", buf);
	free(buf);
	free(err);
}

typedef struct Diff {
	const ServiceUnit *old, *new;
	bool full;
} Diff;

static void render_diff(NftBatch *f, const void *arg) {
	const Diff *d = arg;

	if (d->full) {
		service_render_base(f, NULL, 0);
		service_render_flush_maps(f, NULL);
		svc_refs_reset(refs);
	}
	service_render_unit_diff(f, d->old, d->new, d->full);
	assert_int_equal(svc_refs_update(refs, d->old, d->new, f), 0);
}

static char *diff_text(const ServiceUnit *old, const ServiceUnit *new) {
	NftBatch b;

	assert_int_equal(nft_batch_begin(&b), 0);
	service_render_unit_diff(&b, old, new, false);
	return nft_batch_steal(&b);
}

/* The kernel's svc-* chains with a '/' (per-Service ones), sorted, newline separated. */
static char *kernel_chains(void) {
	json_t *j = NULL, *it;
	size_t i;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(nft_list_json(nft, "list chains inet", &j), 0);
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		const char *name = json_string_value(json_object_get(json_object_get(it, "chain"), "name"));

		if (name && startswith(name, "svc-") && strchr(name, '/'))
			fprintf(f, "%s\n", name);
	}
	json_decref(j);
	fclose(f);
	return buf;
}

static void assert_kernel_matches(const ServiceUnit *u) {
	_cleanup_free_ char *k = NULL;
	size_t n = 0;

	if (!nft)
		return;
	k = kernel_chains();
	for (const char *p = k; *p; p = strchr(p, '\n') + 1)
		n++;
	assert_int_equal(n, u ? u->n_chains : 0);
	for (size_t i = 0; u && i < u->n_chains; i++) {
		_cleanup_free_ char *line = strdup_printf("%s\n", u->chains[i].name);

		if (!strstr(k, line))
			fail_msg("kernel lacks %s; has:\n%s", u->chains[i].name, k);
	}
}

/* ---- cases ---- */

static void test_cluster_ip_protocols_and_named_ports(void **state) {
	KubeObject *o[3];
	ServiceUnit *u;

	o[0] = svc("web",
		   "\"type\":\"ClusterIP\",\"clusterIP\":\"10.96.0.10\",\"ports\":["
		   "{\"name\":\"http\",\"port\":80,\"targetPort\":\"web\"},"
		   "{\"name\":\"dns\",\"port\":53,\"protocol\":\"UDP\",\"targetPort\":5353},"
		   "{\"name\":\"sig\",\"port\":9,\"protocol\":\"SCTP\"}]",
		   NULL);
	/* the named targetPort "web" resolved per pod: 8080 on one, 8081 on the other */
	o[1] = slice("web-a", "web", "IPv4", EP("10.244.1.10", "node1", true, true, false),
		     "{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"},"
		     "{\"name\":\"dns\",\"port\":5353,\"protocol\":\"UDP\"},"
		     "{\"name\":\"sig\",\"port\":9,\"protocol\":\"SCTP\"}");
	o[2] = slice("web-b", "web", "IPv4", EP("10.244.2.10", "node2", true, true, false),
		     "{\"name\":\"http\",\"port\":8081,\"protocol\":\"TCP\"},"
		     "{\"name\":\"dns\",\"port\":5353,\"protocol\":\"UDP\"}");
	u = build("node1", o[0], o + 1, 2);
	assert_string_equal(u->key, "shop/web");
	assert_string_equal(elem(u, "svc-ips4", "10.96.0.10 . tcp . 80")->value, "goto svc-shop/web/tcp/80/ip4");
	assert_string_equal(elem(u, "svc-ips4", "10.96.0.10 . udp . 53")->value, "goto svc-shop/web/udp/53/ip4");
	assert_string_equal(elem(u, "svc-ips4", "10.96.0.10 . sctp . 9")->value, "goto svc-shop/web/sctp/9/ip4");
	/* one rule: numgen over the chain's range of an endpoint map */
	assert_non_null(strstr(rules(u, "svc-shop/web/tcp/80/ip4"),
			       "meta l4proto tcp dnat ip to numgen random mod 2 offset "));
	assert_non_null(strstr(rules(u, "svc-shop/web/tcp/80/ip4"), " map @svc-eps4-tcp-"));
	assert_non_null(strstr(rules(u, "svc-shop/web/tcp/80/ip4"), " comment \"shop/web TCP/80\"\n"));
	assert_chosen(u, "svc-shop/web/tcp/80/ip4", "10.244.1.10 . 8080, 10.244.2.10 . 8081");
	assert_chosen(u, "svc-shop/web/udp/53/ip4", "10.244.1.10 . 5353, 10.244.2.10 . 5353");
	assert_non_null(strstr(rules(u, "svc-shop/web/udp/53/ip4"), "meta l4proto udp dnat ip to numgen"));
	/* SCTP only in slice web-a: one endpoint, a plain dnat, counted on a named counter */
	assert_string_equal(rules(u, "svc-shop/web/sctp/9/ip4"),
			    "meta l4proto sctp counter name \"svc-shop/web/sctp/9/ip4/ep/10.244.1.10/9\" dnat ip to "
			    "10.244.1.10:9 comment \"shop/web SCTP/9\"\n");
	assert_int_equal(u->n_counters, 1);
	assert_string_equal(u->counters[0], "svc-shop/web/sctp/9/ip4/ep/10.244.1.10/9");
	/* the series: one per endpoint of each port (the map elements), the named counter's */
	assert_int_equal(u->n_series, 5);
	for (size_t i = 0; i < u->n_series; i++) {
		const SvcSeries *se = &u->series[i];

		assert_false(se->noep);
		if (!se->map)
			assert_string_equal(se->labels,
					    "namespace=\"shop\",service=\"web\",port=\"9\",protocol=\"SCTP\","
					    "endpoint=\"10.244.1.10:9\"");
		else
			assert_non_null(service_unit_elem(u, se->map, se->key));
	}
	assert_string_equal(u->series[0].labels, "namespace=\"shop\",service=\"web\",port=\"53\",protocol=\"UDP\","
						 "endpoint=\"10.244.1.10:5353\"");
	/* hairpin: this node's endpoint only */
	assert_non_null(elem(u, "svc-hairpin4", "10.244.1.10 . 10.244.1.10"));
	assert_null(elem(u, "svc-hairpin4", "10.244.2.10 . 10.244.2.10"));
	assert_null(elem(u, "svc-nodeports4", "tcp . 80"));
	/* 3 ClusterIP entries + 2 + 2 endpoint-map entries + 1 hairpin + the ClusterIP in svc-cluster-ips4 */
	assert_non_null(elem(u, "svc-cluster-ips4", "10.96.0.10"));
	assert_int_equal(u->n_elems, 9);
	/* no chain per endpoint */
	assert_int_equal(u->n_chains, 3);
	assert_int_equal(u->n_targets, 5);
	assert_string_equal(u->targets[0], "sctp/10.244.1.10/9");
	apply("cluster ip", render_diff, &(Diff) { .new = u, .full = true });
	assert_kernel_matches(u);
	apply("cleanup", render_diff, &(Diff) { .old = u });
	assert_kernel_matches(NULL);
	service_unit_free(u);
	free_all(o, 3);
}

static void test_conditions(void **state) {
	KubeObject *o[2];
	ServiceUnit *u;
	const char *spec = "\"clusterIP\":\"10.96.0.11\",\"ports\":[{\"port\":80}]";

	/* ready one + terminating one: only the ready one; not-ready non-terminating: never */
	o[0] = svc("api", spec, NULL);
	o[1] = slice("api-1", "api", "IPv4",
		     EP("10.244.1.20", "node1", true, true, false) "," EP("10.244.1.21", "node1", false, true,
									  true) "," EP("10.244.1.22", "node1", false,
										       false, false),
		     "{\"port\":80}");
	u = build("node1", o[0], o + 1, 1);
	assert_chosen(u, "svc-shop/api/tcp/80/ip4", "10.244.1.20 . 80");
	service_unit_free(u);
	kube_object_free(o[1], pool);

	/* no ready one: the serving terminating one is used (not the non-serving one) */
	o[1] = slice("api-1", "api", "IPv4",
		     EP("10.244.1.21", "node1", false, true, true) "," EP("10.244.1.23", "node1", false, false, true),
		     "{\"port\":80}");
	u = build("node1", o[0], o + 1, 1);
	assert_chosen(u, "svc-shop/api/tcp/80/ip4", "10.244.1.21 . 80");
	service_unit_free(u);
	kube_object_free(o[1], pool);

	/* none usable: reject */
	o[1] = slice("api-1", "api", "IPv4", EP("10.244.1.22", "node1", false, false, false), "{\"port\":80}");
	u = build("node1", o[0], o + 1, 1);
	assert_int_equal(u->n_chains, 0);
	assert_string_equal(elem(u, "svc-noep4", "10.96.0.11 . tcp . 80")->value, "goto svc-reject");
	assert_null(elem(u, "svc-ips4", "10.96.0.11 . tcp . 80"));
	apply("no endpoints", render_diff, &(Diff) { .new = u, .full = true });
	apply("cleanup", render_diff, &(Diff) { .old = u });
	service_unit_free(u);
	/* and without any slice */
	u = build("node1", o[0], NULL, 0);
	assert_string_equal(elem(u, "svc-noep4", "10.96.0.11 . tcp . 80")->value, "goto svc-reject");
	service_unit_free(u);
	free_all(o, 2);
}

static void test_headless_external_name(void **state) {
	KubeObject *o[3];
	ServiceUnit *u;

	o[0] = svc("db", "\"clusterIP\":\"None\",\"ports\":[{\"port\":5432}]", NULL);
	o[1] = slice("db-1", "db", "IPv4", EP("10.244.1.30", "node1", true, true, false), "{\"port\":5432}");
	o[2] = svc("ext", "\"type\":\"ExternalName\",\"externalName\":\"example.com\"", NULL);
	u = build("node1", o[0], o + 1, 1);
	assert_int_equal(u->n_chains + u->n_elems, 0);
	service_unit_free(u);
	u = build("node1", o[2], NULL, 0);
	assert_int_equal(u->n_chains + u->n_elems, 0);
	service_unit_free(u);
	free_all(o, 3);
}

static void test_external_entries(void **state) {
	KubeObject *o[2];
	ServiceUnit *u;

	o[0] = svc("lb",
		   "\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.12\",\"externalIPs\":[\"192.0.2.7\"],"
		   "\"ports\":[{\"port\":80,\"nodePort\":30080,\"targetPort\":8080}]",
		   "\"loadBalancer\":{\"ingress\":[{\"ip\":\"198.51.100.9\"}]}");
	o[1] = slice("lb-1", "lb", "IPv4",
		     EP("10.244.1.40", "node1", true, true, false) "," EP("10.244.2.40", "node2", true, true, false),
		     "{\"port\":8080}");
	/* Cluster: masquerade mark, every endpoint */
	u = build("node1", o[0], o + 1, 1);
	assert_string_equal(elem(u, "svc-nodeports4", "tcp . 30080")->value, "goto svc-shop/lb/tcp/80/ip4/ext");
	assert_string_equal(elem(u, "svc-ips4", "192.0.2.7 . tcp . 80")->value, "goto svc-shop/lb/tcp/80/ip4/ext");
	assert_string_equal(elem(u, "svc-ips4", "198.51.100.9 . tcp . 80")->value, "goto svc-shop/lb/tcp/80/ip4/ext");
	assert_non_null(strstr(rules(u, "svc-shop/lb/tcp/80/ip4/ext"),
			       "meta mark set meta mark or 0x4000 goto svc-shop/lb/tcp/80/ip4 "));
	apply("lb cluster", render_diff, &(Diff) { .new = u, .full = true });
	assert_kernel_matches(u);
	service_unit_free(u);
	kube_object_free(o[0], pool);

	/* Local: pods and the node short-circuit, the rest only this node's endpoint, no mark */
	o[0] = svc("lb",
		   "\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.12\",\"externalTrafficPolicy\":\"Local\","
		   "\"healthCheckNodePort\":31000,\"ports\":[{\"port\":80,\"nodePort\":30080,\"targetPort\":8080}]",
		   NULL);
	u = build("node1", o[0], o + 1, 1);
	assert_non_null(strstr(rules(u, "svc-shop/lb/tcp/80/ip4/ext"),
			       "ip saddr 10.244.0.0/16 goto svc-shop/lb/tcp/80/ip4 "));
	assert_non_null(strstr(rules(u, "svc-shop/lb/tcp/80/ip4/ext"), "goto svc-shop/lb/tcp/80/ip4/local "));
	assert_chosen(u, "svc-shop/lb/tcp/80/ip4/local", "10.244.1.40 . 8080");
	assert_chosen(u, "svc-shop/lb/tcp/80/ip4", "10.244.1.40 . 8080, 10.244.2.40 . 8080");
	{
		ServiceUnit *u3 = build_from(u, "node3", o[0], o + 1, 1);
		_cleanup_free_ char *d = diff_text(u, u3);

		/* a node without a local endpoint drops external traffic, and only the ext chain changed */
		assert_non_null(strstr(rules(u3, "svc-shop/lb/tcp/80/ip4/ext"), "drop comment"));
		assert_null(service_unit_chain(u3, "svc-shop/lb/tcp/80/ip4/local"));
		assert_null(strstr(d, "svc-ips4"));
		assert_non_null(strstr(d, "flush chain inet weft svc-shop/lb/tcp/80/ip4/ext\n"));
		assert_non_null(strstr(d, "delete chain inet weft svc-shop/lb/tcp/80/ip4/local\n"));
		assert_null(strstr(d, "flush chain inet weft svc-shop/lb/tcp/80/ip4\n"));
		apply("lb local", render_diff, &(Diff) { .new = u, .full = true });
		assert_kernel_matches(u);
		apply("lb local -> node3", render_diff, &(Diff) { .old = u, .new = u3 });
		assert_kernel_matches(u3);
		apply("cleanup", render_diff, &(Diff) { .old = u3 });
		service_unit_free(u3);
	}
	service_unit_free(u);
	free_all(o, 2);
}

/* The kernel's svc-* set elements of one set, as nft prints them (JSON), newline separated. */
static char *kernel_set(const char *set) {
	_cleanup_free_ char *cmd = strdup_printf("list set inet weft %s", set);
	json_t *j = NULL;
	char *s;

	assert_int_equal(nft_list_json(nft, cmd, &j), 0);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

/* loadBalancerSourceRanges (issue 17 item 9): LB IPs only, per family, fail closed */
static void test_source_ranges(void **state) {
	KubeObject *o[2];
	ServiceUnit *u, *u2;

	o[0] = svc("fw",
		   "\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.40\",\"externalIPs\":[\"192.0.2.8\"],"
		   "\"loadBalancerSourceRanges\":[\"10.251.0.200/32\",\"10.252.0.0/16\",\"2001:db8::/64\"],"
		   "\"ports\":[{\"port\":80,\"nodePort\":30081,\"targetPort\":8080},"
		   "{\"port\":53,\"protocol\":\"UDP\",\"nodePort\":30053,\"targetPort\":53}]",
		   "\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.250.0.40\"}]}");
	o[1] = slice("fw-1", "fw", "IPv4", EP("10.244.1.41", "node1", true, true, false),
		     "{\"port\":8080},{\"port\":53,\"protocol\":\"UDP\"}");
	u = build("node1", o[0], o + 1, 1);
	/* the LB IP is restricted on each port, the externalIP and the ClusterIP are not */
	assert_non_null(elem(u, "svc-fw-ips4", "10.250.0.40 . tcp . 80"));
	assert_non_null(elem(u, "svc-fw-ips4", "10.250.0.40 . udp . 53"));
	assert_non_null(elem(u, "svc-fw-allow4", "10.250.0.40 . tcp . 80 . 10.251.0.200/32"));
	assert_non_null(elem(u, "svc-fw-allow4", "10.250.0.40 . tcp . 80 . 10.252.0.0/16"));
	assert_non_null(elem(u, "svc-fw-allow4", "10.250.0.40 . udp . 53 . 10.252.0.0/16"));
	assert_null(elem(u, "svc-fw-ips4", "192.0.2.8 . tcp . 80"));
	assert_null(elem(u, "svc-fw-ips4", "10.96.0.40 . tcp . 80"));
	/* the IPv6 range is not one of an IPv4 LB IP's */
	for (size_t i = 0; i < u->n_elems; i++)
		assert_null(strstr(u->elems[i].key, "2001:db8"));
	/* the LB IP still goes to the Service (the check is before the DNAT, in the base rules) */
	assert_string_equal(elem(u, "svc-ips4", "10.250.0.40 . tcp . 80")->value, "goto svc-shop/fw/tcp/80/ip4/ext");
	apply("source ranges", render_diff, &(Diff) { .new = u, .full = true });
	assert_kernel_matches(u);
	if (nft) {
		_cleanup_free_ char *k = kernel_set("svc-fw-allow4");

		assert_non_null(strstr(k, "10.251.0.200"));
		assert_non_null(strstr(k, "10.252.0.0"));
	}
	/* the list changes: one range gone; only its element goes */
	kube_object_free(o[0], pool);
	o[0] = svc("fw",
		   "\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.40\","
		   "\"loadBalancerSourceRanges\":[\"10.252.0.0/16\"],"
		   "\"ports\":[{\"port\":80,\"nodePort\":30081,\"targetPort\":8080},"
		   "{\"port\":53,\"protocol\":\"UDP\",\"nodePort\":30053,\"targetPort\":53}]",
		   "\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.250.0.40\"}]}");
	u2 = build_from(u, "node1", o[0], o + 1, 1);
	assert_null(elem(u2, "svc-fw-allow4", "10.250.0.40 . tcp . 80 . 10.251.0.200/32"));
	apply("source ranges narrowed", render_diff, &(Diff) { .old = u, .new = u2 });
	if (nft) {
		_cleanup_free_ char *k = kernel_set("svc-fw-allow4");

		assert_null(strstr(k, "10.251.0.200"));
		assert_non_null(strstr(k, "10.252.0.0"));
	}
	service_unit_free(u);
	/* only IPv6 ranges for an IPv4 LB IP: restricted, nothing allowed */
	kube_object_free(o[0], pool);
	o[0] = svc("fw",
		   "\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.0.40\","
		   "\"loadBalancerSourceRanges\":[\"2001:db8::/64\"],"
		   "\"ports\":[{\"port\":80,\"nodePort\":30081,\"targetPort\":8080}]",
		   "\"loadBalancer\":{\"ingress\":[{\"ip\":\"10.250.0.40\"}]}");
	u = build_from(u2, "node1", o[0], o + 1, 1);
	assert_non_null(elem(u, "svc-fw-ips4", "10.250.0.40 . tcp . 80"));
	for (size_t i = 0; i < u->n_elems; i++)
		assert_false(streq(u->elems[i].map, "svc-fw-allow4"));
	apply("source ranges v6 only", render_diff, &(Diff) { .old = u2, .new = u });
	apply("cleanup", render_diff, &(Diff) { .old = u });
	if (nft) {
		_cleanup_free_ char *k = kernel_set("svc-fw-ips4");

		assert_null(strstr(k, "10.250.0.40"));
	}
	service_unit_free(u2);
	service_unit_free(u);
	free_all(o, 2);
}

/* The fixed rules: the Service range check (item 10) and weftd's own sockets (SVC_SELF_MARK) */
static void test_base_rules(void **state) {
	IpPrefix ranges[2];
	char *buf = NULL;
	NftBatch b;

	assert_int_equal(ip_prefix_parse("10.96.0.0/16", &ranges[0]), 0);
	assert_int_equal(ip_prefix_parse("fd00:96::/108", &ranges[1]), 0);
	/* no range: no check at all */
	assert_int_equal(nft_batch_begin(&b), 0);
	service_render_base(&b, NULL, 0);
	buf = nft_batch_steal(&b);
	assert_null(strstr(buf, "add rule inet weft svc-cluster-ips-check"));
	assert_non_null(strstr(buf, "add rule inet weft svc-filter-forward jump svc-cluster-ips-check\n"));
	free(buf);
	buf = NULL;
	assert_int_equal(nft_batch_begin(&b), 0);
	service_render_base(&b, ranges, 2);
	buf = nft_batch_steal(&b);
	/* undefined ports of an allocated ClusterIP rejected (inside the range only), the rest of the
	 * range dropped */
	assert_non_null(strstr(buf, "add rule inet weft svc-cluster-ips-check ip daddr 10.96.0.0/16 ip daddr "
				    "@svc-cluster-ips4 meta l4proto tcp reject with tcp reset"));
	assert_non_null(strstr(buf, "add rule inet weft svc-cluster-ips-check ip daddr 10.96.0.0/16 ip daddr "
				    "@svc-cluster-ips4 reject"));
	assert_null(strstr(buf, "svc-cluster-ips-check ip daddr @svc-cluster-ips4"));
	assert_non_null(strstr(buf, "add rule inet weft svc-cluster-ips-check ip daddr 10.96.0.0/16 drop"));
	assert_non_null(strstr(buf, "add rule inet weft svc-cluster-ips-check ip6 daddr fd00:96::/108 drop"));
	/* forwarded pod traffic and node-local clients, not input */
	assert_non_null(strstr(buf, "add rule inet weft svc-filter-output jump svc-cluster-ips-check\n"));
	assert_null(strstr(buf, "add rule inet weft svc-filter-input jump svc-cluster-ips-check\n"));
	/* weftd's own connections skip every Service entry but a ClusterIP, before svc-services */
	{
		const char *self = strstr(buf, "add rule inet weft svc-output meta mark & " SVC_SELF_MARK
					       " != 0 meta nfproto ipv4 ip daddr != @svc-cluster-ips4 return");
		const char *jump = strstr(buf, "add rule inet weft svc-output jump svc-services\n");

		assert_non_null(self);
		assert_non_null(jump);
		assert_true(self < jump);
	}
	assert_int_equal(SVC_SELF_MARK_VALUE, strtoul(SVC_SELF_MARK, NULL, 16));
	assert_int_equal(SVC_SELF_MARK_VALUE & strtoul(SVC_MASQ_MARK, NULL, 16), 0);
	if (nft) {
		char *err = NULL;

		if (nft_apply(nft, buf, &err) < 0)
			fail_msg("base refused: %s", err ?: "");
		free(err);
	}
	free(buf);
}

static void test_internal_local_and_dual_stack(void **state) {
	KubeObject *o[3];
	ServiceUnit *u;

	o[0] = svc("ds",
		   "\"clusterIPs\":[\"10.96.0.13\",\"fd00:96::13\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"],"
		   "\"internalTrafficPolicy\":\"Local\",\"ports\":[{\"port\":80}]",
		   NULL);
	o[1] = slice("ds-4", "ds", "IPv4", EP("10.244.2.50", "node2", true, true, false), "{\"port\":80}");
	o[2] = slice("ds-6", "ds", "IPv6",
		     EP("fd00:10:244:1::50", "node1", true, true, false) "," EP("fd00:10:244:2::50", "node2", true,
										true, false),
		     "{\"port\":80}");
	u = build("node1", o[0], o + 1, 2);
	/* IPv4: its only endpoint is on node2: drop (not reject) on node1 */
	assert_string_equal(elem(u, "svc-noep4", "10.96.0.13 . tcp . 80")->value, "drop");
	/* IPv6: the local one only */
	assert_string_equal(elem(u, "svc-ips6", "fd00:96::13 . tcp . 80")->value, "goto svc-shop/ds/tcp/80/ip6");
	assert_chosen(u, "svc-shop/ds/tcp/80/ip6", "fd00:10:244:1::50 . 80");
	assert_non_null(strstr(
			rules(u, "svc-shop/ds/tcp/80/ip6"),
			"meta l4proto tcp counter name \"svc-shop/ds/tcp/80/ip6/ep/fd00_10_244_1__50/80\" dnat ip6 to "
			"[fd00:10:244:1::50]:80"));
	/* the IPv4 drop counts as a no-endpoint drop; the IPv6 endpoint's series has its address in brackets */
	assert_int_equal(u->n_series, 2);
	assert_false(u->series[0].noep);
	assert_string_equal(u->series[0].labels, "namespace=\"shop\",service=\"ds\",port=\"80\",protocol=\"TCP\","
						 "endpoint=\"[fd00:10:244:1::50]:80\"");
	assert_true(u->series[1].noep);
	assert_string_equal(u->series[1].map, "svc-noep4");
	assert_string_equal(u->series[1].labels,
			    "namespace=\"shop\",service=\"ds\",port=\"80\",protocol=\"TCP\",action=\"drop\"");
	assert_non_null(elem(u, "svc-hairpin6", "fd00:10:244:1::50 . fd00:10:244:1::50"));
	assert_int_equal(u->n_chains, 1);
	apply("dual stack", render_diff, &(Diff) { .new = u, .full = true });
	assert_kernel_matches(u);
	apply("cleanup", render_diff, &(Diff) { .old = u });
	service_unit_free(u);
	free_all(o, 3);
}

static void test_incremental(void **state) {
	KubeObject *o[3];
	ServiceUnit *u1, *u2;
	char *d;

	o[0] = svc("inc", "\"clusterIP\":\"10.96.0.14\",\"ports\":[{\"port\":80},{\"port\":81,\"name\":\"b\"}]", NULL);
	o[1] = slice("inc-1", "inc", "IPv4",
		     EP("10.244.1.60", "node1", true, true, false) "," EP("10.244.1.61", "node1", true, true, false),
		     "{\"port\":80}");
	u1 = build("node1", o[0], o + 1, 1);
	/* port "b" has no slice port: reject for it, service for the other */
	assert_string_equal(elem(u1, "svc-noep4", "10.96.0.14 . tcp . 81")->value, "goto svc-reject");
	kube_object_free(o[1], pool);
	o[1] = slice("inc-1", "inc", "IPv4", EP("10.244.1.60", "node1", true, true, false), "{\"port\":80}");
	u2 = build_from(u1, "node1", o[0], o + 1, 1);
	assert_false(service_unit_equal(u1, u2));
	d = diff_text(u1, u2);
	/* one endpoint gone: the chain's two map entries deleted, its one rule rewritten, nothing else */
	{
		uint32_t slot = service_unit_chain(u1, "svc-shop/inc/tcp/80/ip4")->slot, first = slot << SVC_SLOT_BITS;
		_cleanup_free_ char *want = strdup_printf(
				"delete element inet weft svc-eps4-tcp-%03u { %u }\n"
				"delete element inet weft svc-eps4-tcp-%03u { %u }\n"
				"add counter inet weft svc-shop/inc/tcp/80/ip4/ep/10.244.1.60/80\n"
				"flush chain inet weft svc-shop/inc/tcp/80/ip4\n"
				"add rule inet weft svc-shop/inc/tcp/80/ip4 meta l4proto tcp counter name "
				"\"svc-shop/inc/tcp/80/ip4/ep/10.244.1.60/80\" dnat ip to 10.244.1.60:80 "
				"comment \"shop/inc TCP/80\"\n",
				slot % SVC_EPS_BUCKETS, first, slot % SVC_EPS_BUCKETS, first + 1);

		assert_int_not_equal(slot, 0);
		assert_string_equal(d, want);
	}
	free(d);
	apply("inc full", render_diff, &(Diff) { .new = u1, .full = true });
	apply("inc diff", render_diff, &(Diff) { .old = u1, .new = u2 });
	assert_kernel_matches(u2);
	/* an equal rebuild renders nothing */
	{
		ServiceUnit *u3 = build_from(u2, "node1", o[0], o + 1, 1);

		assert_true(service_unit_equal(u2, u3));
		d = diff_text(u2, u3);
		assert_string_equal(d, "");
		free(d);
		service_unit_free(u3);
	}
	/* ClusterIP changed: the old element goes, the new one comes */
	kube_object_free(o[0], pool);
	o[0] = svc("inc", "\"clusterIP\":\"10.96.0.15\",\"ports\":[{\"port\":80}]", NULL);
	service_unit_free(u1);
	u1 = build("node1", o[0], o + 1, 1);
	d = diff_text(u2, u1);
	assert_non_null(strstr(d, "delete element inet weft svc-ips4 { 10.96.0.14 . tcp . 80 }\n"));
	assert_non_null(strstr(d, "add element inet weft svc-ips4 { 10.96.0.15 . tcp . 80 : goto "));
	assert_non_null(strstr(d, "delete element inet weft svc-noep4 { 10.96.0.14 . tcp . 81 }\n"));
	free(d);
	apply("ip change", render_diff, &(Diff) { .old = u2, .new = u1 });
	assert_kernel_matches(u1);
	apply("cleanup", render_diff, &(Diff) { .old = u1 });
	assert_kernel_matches(NULL);
	service_unit_free(u1);
	service_unit_free(u2);
	free_all(o, 2);
}

/* The kernel's per-Service svc-* sets, newline separated. */
static char *kernel_sets(void) {
	json_t *j = NULL, *it;
	size_t i;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(nft_list_json(nft, "list sets inet", &j), 0);
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		json_t *o = json_object_get(it, "set");
		const char *name = json_string_value(json_object_get(o, "name"));

		if (name && startswith(name, "svc-") && strchr(name, '/'))
			fprintf(f, "%s timeout=%lld\n", name,
				(long long) json_integer_value(json_object_get(o, "timeout")));
	}
	json_decref(j);
	fclose(f);
	return buf;
}

static void test_session_affinity(void **state) {
	KubeObject *o[3];
	ServiceUnit *u1, *u2, *u0;
	const char *r;
	char *d;

	o[0] = svc("aff",
		   "\"clusterIPs\":[\"10.96.0.16\",\"fd00:96::16\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"],"
		   "\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":3}},"
		   "\"ports\":[{\"port\":80}]",
		   NULL);
	o[1] = slice("aff-4", "aff", "IPv4",
		     EP("10.244.1.70", "node1", true, true, false) "," EP("10.244.2.70", "node2", true, true, false),
		     "{\"port\":8080}");
	o[2] = slice("aff-6", "aff", "IPv6", EP("fd00:10:244:1::70", "node1", true, true, false), "{\"port\":8080}");
	u1 = build("node1", o[0], o + 1, 2);
	/* one set per endpoint and family, the timeout in its name and declaration */
	assert_int_equal(u1->n_sets, 3);
	assert_string_equal(service_unit_set(u1, "svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080/aff3")->decl,
			    "{ type ipv4_addr; flags dynamic,timeout; timeout 3s; }");
	assert_string_equal(service_unit_set(u1, "svc-shop/aff/tcp/80/ip6/ep/fd00_10_244_1__70/8080/aff3")->decl,
			    "{ type ipv6_addr; flags dynamic,timeout; timeout 3s; }");
	/* the endpoint chain refreshes its set before the DNAT */
	r = rules(u1, "svc-shop/aff/tcp/80/ip4/ep/10.244.2.70/8080");
	assert_non_null(strstr(r, "update @svc-shop/aff/tcp/80/ip4/ep/10.244.2.70/8080/aff3 { ip saddr }"));
	assert_true(strstr(r, "update @") < strstr(r, "dnat ip to 10.244.2.70:8080"));
	assert_non_null(strstr(rules(u1, "svc-shop/aff/tcp/80/ip6/ep/fd00_10_244_1__70/8080"),
			       "update @svc-shop/aff/tcp/80/ip6/ep/fd00_10_244_1__70/8080/aff3 { ip6 saddr }"));
	/* the service chain: every endpoint's set before the random choice */
	r = rules(u1, "svc-shop/aff/tcp/80/ip4");
	assert_non_null(strstr(r, "ip saddr @svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080/aff3 goto "
				  "svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080 "));
	assert_non_null(strstr(r, "ip saddr @svc-shop/aff/tcp/80/ip4/ep/10.244.2.70/8080/aff3 goto "
				  "svc-shop/aff/tcp/80/ip4/ep/10.244.2.70/8080 "));
	assert_true(strstr(r, "/aff3 goto svc-shop/aff/tcp/80/ip4/ep/10.244.2.70/8080") < strstr(r, "numgen"));
	assert_non_null(strstr(rules(u1, "svc-shop/aff/tcp/80/ip6"),
			       "ip6 saddr @svc-shop/aff/tcp/80/ip6/ep/fd00_10_244_1__70/8080/aff3 goto "));
	apply("affinity full", render_diff, &(Diff) { .new = u1, .full = true });
	assert_kernel_matches(u1);
	if (nft) {
		_cleanup_free_ char *k = kernel_sets();

		assert_non_null(strstr(k, "svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080/aff3 timeout=3\n"));
		assert_non_null(strstr(k, "svc-shop/aff/tcp/80/ip6/ep/fd00_10_244_1__70/8080/aff3 timeout=3\n"));
	}

	/* timeout changed: new sets, rules naming them, the old sets deleted after the chains */
	kube_object_free(o[0], pool);
	o[0] = svc("aff",
		   "\"clusterIPs\":[\"10.96.0.16\",\"fd00:96::16\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"],"
		   "\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":60}},"
		   "\"ports\":[{\"port\":80}]",
		   NULL);
	u2 = build("node1", o[0], o + 1, 2);
	d = diff_text(u1, u2);
	assert_non_null(strstr(d, "add set inet weft svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080/aff60 { type "
				  "ipv4_addr; flags dynamic,timeout; timeout 60s; }\n"));
	assert_non_null(strstr(d, "flush chain inet weft svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080\n"));
	assert_non_null(strstr(d, "flush chain inet weft svc-shop/aff/tcp/80/ip4\n"));
	assert_true(strstr(d, "add set ") < strstr(d, "add rule "));
	assert_true(strstr(d, "delete set inet weft svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080/aff3\n") >
		    strstr(d, "add rule "));
	assert_null(strstr(d, "delete chain"));
	assert_null(strstr(d, "element"));
	free(d);
	apply("affinity timeout change", render_diff, &(Diff) { .old = u1, .new = u2 });
	assert_kernel_matches(u2);
	if (nft) {
		_cleanup_free_ char *k = kernel_sets();

		assert_null(strstr(k, "/aff3 "));
		assert_non_null(strstr(k, "svc-shop/aff/tcp/80/ip4/ep/10.244.2.70/8080/aff60 timeout=60\n"));
	}

	/* affinity off: no sets, no set rules */
	kube_object_free(o[0], pool);
	o[0] = svc("aff",
		   "\"clusterIPs\":[\"10.96.0.16\",\"fd00:96::16\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"],"
		   "\"ports\":[{\"port\":80}]",
		   NULL);
	u0 = build("node1", o[0], o + 1, 2);
	assert_int_equal(u0->n_sets, 0);
	assert_null(strstr(rules(u0, "svc-shop/aff/tcp/80/ip4"), "saddr @"));
	assert_null(service_unit_chain(u0, "svc-shop/aff/tcp/80/ip4/ep/10.244.1.70/8080"));
	assert_chosen(u0, "svc-shop/aff/tcp/80/ip4", "10.244.1.70 . 8080, 10.244.2.70 . 8080");
	apply("affinity off", render_diff, &(Diff) { .old = u2, .new = u0 });
	assert_kernel_matches(u0);
	if (nft) {
		_cleanup_free_ char *k = kernel_sets();

		assert_string_equal(k, "");
	}
	apply("cleanup", render_diff, &(Diff) { .old = u0 });
	assert_kernel_matches(NULL);
	service_unit_free(u0);
	service_unit_free(u1);
	service_unit_free(u2);
	free_all(o, 3);
}

/* The kernel's elements of one set or map, as nft prints them. */
static const char *eps_map_name(uint32_t slot) {
	static char n[32];

	snprintf(n, sizeof(n), "svc-eps4-tcp-%03u", (unsigned) (slot % SVC_EPS_BUCKETS));
	return n;
}

static char *kernel_elements(const char *set) {
	_cleanup_free_ char *cmd =
			strdup_printf("list %s inet weft %s", startswith(set, "svc-eps") ? "map" : "set", set);
	json_t *j = NULL, *it, *e;
	size_t i, k;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(nft_list_json(nft, cmd, &j), 0);
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		json_t *o = json_object_get(it, "set") ?: json_object_get(it, "map");

		json_array_foreach(json_object_get(o, "elem"), k, e) {
			char *t = json_dumps(e, JSON_COMPACT);

			fprintf(f, "%s\n", t);
			free(t);
		}
	}
	json_decref(j);
	fclose(f);
	return buf;
}

static void test_shared_hairpin_and_slots(void **state) {
	KubeObject *a[2], *b[2];
	ServiceUnit *ua, *ub, *ua2;
	uint32_t slot;
	char *d;

	a[0] = svc("ha", "\"clusterIP\":\"10.96.0.17\",\"ports\":[{\"port\":80}]", NULL);
	b[0] = svc("hb", "\"clusterIP\":\"10.96.0.18\",\"ports\":[{\"port\":80}]", NULL);
	a[1] = slice("ha-1", "ha", "IPv4",
		     EP("10.244.1.80", "node1", true, true, false) "," EP("10.244.2.80", "node2", true, true, false),
		     "{\"port\":80}");
	b[1] = slice("hb-1", "hb", "IPv4", EP("10.244.1.80", "node1", true, true, false), "{\"port\":80}");
	ua = build("node1", a[0], a + 1, 1);
	ub = build("node1", b[0], b + 1, 1);
	apply("ha", render_diff, &(Diff) { .new = ua, .full = true });
	apply("hb", render_diff, &(Diff) { .new = ub });
	/* both Services hairpin 10.244.1.80: one element, kept while either holds it */
	if (nft) {
		_cleanup_free_ char *k = kernel_elements("svc-hairpin4");

		assert_non_null(strstr(k, "10.244.1.80"));
	}
	apply("ha gone", render_diff, &(Diff) { .old = ua });
	if (nft) {
		_cleanup_free_ char *k = kernel_elements("svc-hairpin4");

		assert_non_null(strstr(k, "10.244.1.80"));
	}
	apply("ha back", render_diff, &(Diff) { .new = ua });
	/* an endpoint more: the chain keeps its slot; one map entry added, the rule rewritten */
	slot = service_unit_chain(ua, "svc-shop/ha/tcp/80/ip4")->slot;
	kube_object_free(a[1], pool);
	a[1] = slice("ha-1", "ha", "IPv4",
		     EP("10.244.1.80", "node1", true, true, false) "," EP("10.244.2.80", "node2", true, true,
									  false) "," EP("10.244.3.80", "node3", true,
											true, false),
		     "{\"port\":80}");
	ua2 = build_from(ua, "node1", a[0], a + 1, 1);
	assert_int_equal(service_unit_chain(ua2, "svc-shop/ha/tcp/80/ip4")->slot, slot);
	assert_chosen(ua2, "svc-shop/ha/tcp/80/ip4", "10.244.1.80 . 80, 10.244.2.80 . 80, 10.244.3.80 . 80");
	d = diff_text(ua, ua2);
	{
		_cleanup_free_ char *add =
				strdup_printf("add element inet weft svc-eps4-tcp-%03u { %u : 10.244.3.80 . 80 }\n",
					      slot % SVC_EPS_BUCKETS, (slot << SVC_SLOT_BITS) + 2);

		assert_non_null(strstr(d, add));
		assert_null(strstr(d, "delete element"));
		assert_null(strstr(d, "svc-ips4"));
		assert_true(strstr(d, add) > strstr(d, "add rule")); /* after the rule: see unit_diff() */
	}
	free(d);
	apply("ha grows", render_diff, &(Diff) { .old = ua, .new = ua2 });
	if (nft) {
		_cleanup_free_ char *m = kernel_elements(eps_map_name(slot));

		assert_non_null(strstr(m, "10.244.3.80"));
	}
	svc_slot_pool_release(slots, ua, ua2);
	assert_int_equal(svc_slot_pool_used(slots) > 0, true);
	apply("cleanup a", render_diff, &(Diff) { .old = ua2 });
	apply("cleanup b", render_diff, &(Diff) { .old = ub });
	if (nft) {
		_cleanup_free_ char *k = kernel_elements("svc-hairpin4");

		assert_string_equal(k, "");
	}
	assert_int_equal(svc_refs_size(refs), 0);
	service_unit_free(ua);
	service_unit_free(ua2);
	service_unit_free(ub);
	free_all(a, 2);
	free_all(b, 2);
}

static void test_stale_udp(void **state) {
	KubeObject *o[2];
	ServiceUnit *u1, *u2;
	ServiceCtFilter *f = NULL;
	size_t n = 0;
	char a[IP_ADDR_STRLEN];

	o[0] = svc("dns",
		   "\"type\":\"NodePort\",\"clusterIP\":\"10.96.0.53\",\"ports\":[{\"port\":53,\"protocol\":\"UDP\",\"nodePort\":30053}]",
		   NULL);
	o[1] = slice("dns-1", "dns", "IPv4",
		     EP("10.244.1.53", "node1", true, true, false) "," EP("10.244.2.53", "node2", true, true, false),
		     "{\"port\":5353,\"protocol\":\"UDP\"}");
	u1 = build("node1", o[0], o + 1, 1);
	kube_object_free(o[1], pool);
	o[1] = slice("dns-1", "dns", "IPv4", EP("10.244.1.53", "node1", true, true, false),
		     "{\"port\":5353,\"protocol\":\"UDP\"}");
	u2 = build("node1", o[0], o + 1, 1);
	/* one endpoint gone: DNATed entries replied by 10.244.2.53:5353 */
	assert_int_equal(service_unit_stale_udp(u1, u2, &f, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(ip_addr_to_string(&f[0].reply_src, a), "10.244.2.53");
	assert_int_equal(f[0].reply_sport, 5353);
	assert_true(f[0].nat_only);
	free(f);
	/* nothing changed: nothing stale */
	assert_int_equal(service_unit_stale_udp(u2, u2, &f, &n), 0);
	assert_int_equal(n, 0);
	free(f);
	/* the Service gone: its ClusterIP . port and its NodePort, and both endpoints' entries */
	assert_int_equal(service_unit_stale_udp(u1, NULL, &f, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(ip_addr_to_string(&f[0].orig_dst, a), "10.96.0.53");
	assert_int_equal(f[0].orig_dport, 53);
	assert_int_equal(f[1].orig_dst.family, AF_UNSPEC);
	assert_int_equal(f[1].orig_dport, 30053);
	assert_int_equal(f[1].family, AF_INET);
	free(f);
	service_unit_free(u1);
	service_unit_free(u2);
	free_all(o, 2);
}

/* ---- bench (not a test): test-service-compile --bench N, in the current namespace ---- */

static double ms_now(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static void bench_slice(KubeObject **ret, size_t i, size_t n_eps) {
	char eps[2048] = "";
	size_t len = 0;

	for (size_t e = 0; e < n_eps; e++)
		len += (size_t) snprintf(eps + len, sizeof(eps) - len,
					 "%s{\"addresses\":[\"10.%zu.%zu.%zu\"],\"conditions\":{\"ready\":true}}",
					 e ? "," : "", 128 + e, (i >> 8) & 255, i & 255);
	*ret = decode(KUBE_KIND_ENDPOINT_SLICE,
		      "{\"metadata\":{\"namespace\":\"bench\",\"name\":\"s%zu\",\"labels\":{\"kubernetes.io/"
		      "service-name\":\"s%zu\"}},\"addressType\":\"IPv4\",\"endpoints\":[%s],\"ports\":[{\"port\":8080}]}",
		      i, i, eps);
}

/* N Services x 5 endpoints (ClusterIP 10.100.x.y:80), plus "target" (10.99.99.99:80 -> TARGET:8080)
 * when target is given: full sync (build + render + apply), then one Service's change. */
/* CPU time of this process, user and system (the kernel's nf_tables work runs in the sender's
 * context): less inflated than wall time when the machine is shared */
static double cpu_ms_now(void) {
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int str_ptr_cmp(const void *a, const void *b) {
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int double_cmp(const void *a, const void *b) {
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static int bench(size_t n, const char *target) {
	KubeObject **svcs = calloc(n + 1, sizeof(KubeObject *)), **slices = calloc(n + 1, sizeof(KubeObject *));
	ServiceUnit **units = calloc(n + 1, sizeof(ServiceUnit *));
	char *buf = NULL, *err = NULL;
	size_t len = 0, n_all = n;
	double t0, t_full, t_incr, t_first, c0, c_full;
	NftBatch f;
	int r;

	for (size_t i = 0; i < n; i++) {
		svcs[i] = decode(KUBE_KIND_SERVICE,
				 "{\"metadata\":{\"namespace\":\"bench\",\"name\":\"s%zu\"},\"spec\":{\"clusterIP\":"
				 "\"10.100.%zu.%zu\",\"ports\":[{\"port\":80,\"targetPort\":8080}]}}",
				 i, (i >> 8) & 255, i & 255);
		bench_slice(&slices[i], i, 5);
	}
	if (target) {
		svcs[n] = decode(KUBE_KIND_SERVICE, "{\"metadata\":{\"namespace\":\"bench\",\"name\":\"target\"},"
						    "\"spec\":{\"clusterIP\":\"10.99.99.99\",\"ports\":[{\"port\":80,"
						    "\"targetPort\":8080}]}}");
		slices[n] = decode(
				KUBE_KIND_ENDPOINT_SLICE,
				"{\"metadata\":{\"namespace\":\"bench\",\"name\":\"target\",\"labels\":{"
				"\"kubernetes.io/service-name\":\"target\"}},\"addressType\":\"IPv4\",\"endpoints\":[{"
				"\"addresses\":[\"%s\"]}],\"ports\":[{\"port\":8080}]}",
				target);
		n_all++;
	}
	t0 = ms_now();
	c0 = cpu_ms_now();
	if (nft_batch_begin(&f) < 0)
		return 1;
	service_render_base(&f, NULL, 0);
	service_render_flush_maps(&f, NULL);
	for (size_t i = 0; i < n_all; i++) {
		if (service_unit_build(&(ServiceModelInput) { .node = "node1",
							      .svc = KUBE_SERVICE(svcs[i]),
							      .slices = (const KubeEndpointSlice *const *) &slices[i],
							      .n_slices = 1,
							      .slots = slots },
				       &units[i]) < 0)
			return 1;
	}
	if (service_render_full(&f, units, n_all, refs, NULL) < 0)
		return 1;
	buf = nft_batch_steal(&f);
	if (!buf)
		return 1;
	len = strlen(buf);
	r = nft_apply(nft, buf, &err);
	if (r >= 0) /* as weftd does after each batch (nft-sync.c) */
		(void) nft_ctx_drop_cache(nft);
	t_full = ms_now() - t0;
	c_full = cpu_ms_now() - c0;
	if (r < 0) {
		fprintf(stderr, "full batch refused: %s\n", err ?: "");
		return 1;
	}
	free(buf);
	buf = NULL;
	/* the counters read as a /metrics scrape reads them (service-counters.h: the maps the series
	 * name): median of 5 */
	double t_reads[5];
	size_t n_counters = 0, n_maps = 0;
	const char **maps = calloc(SVC_EPS_BUCKETS * 6 + 8, sizeof(char *));

	if (!maps)
		return 1;
	for (size_t i = 0; i < n_all; i++)
		for (size_t k = 0; k < units[i]->n_series; k++) {
			const char *m = units[i]->series[k].map;
			bool seen = false;

			for (size_t j = 0; m && j < n_maps && !seen; j++)
				seen = streq(maps[j], m);
			if (m && !seen)
				maps[n_maps++] = m;
		}
	qsort(maps, n_maps, sizeof(char *), str_ptr_cmp);

	for (size_t k = 0; k < ELEMENTSOF(t_reads); k++) {
		SvcKernelState *ks = NULL;

		t0 = ms_now();
		if (svc_kernel_read(&ks, maps, n_maps) < 0)
			return 1;
		t_reads[k] = ms_now() - t0;
		n_counters = ks->n_counters;
		for (size_t m = 0; m < ks->n_maps; m++)
			n_counters += ks->maps[m].n_elems;
		svc_kernel_free(ks);
	}
	qsort(t_reads, ELEMENTSOF(t_reads), sizeof(double), double_cmp);
	free(maps);
	/* one Service changes (loses an endpoint, or gets its fifth back), nine times over different
	 * Services: rebuild that one, diff, apply. The first change after the full sync also pays for
	 * libnftables dropping the full batch's cache; the median is the steady state. */
	double t_changes[9], c_changes[9];
	size_t n_changes = 0;

	for (size_t c = 0; c < ELEMENTSOF(t_changes) && n > 0; c++) {
		size_t at = (n / 2 + c * (n / 9 + 1)) % n;
		ServiceUnit *u = NULL;

		kube_object_free(slices[at], pool);
		bench_slice(&slices[at], at, c % 2 ? 5 : 4);
		free(buf);
		buf = NULL;
		t0 = ms_now();
		c0 = cpu_ms_now();
		if (service_unit_build(&(ServiceModelInput) { .node = "node1",
							      .svc = KUBE_SERVICE(svcs[at]),
							      .slices = (const KubeEndpointSlice *const *) &slices[at],
							      .n_slices = 1,
							      .slots = slots,
							      .old = units[at] },
				       &u) < 0)
			return 1;
		if (nft_batch_begin(&f) < 0)
			return 1;
		service_render_unit_diff(&f, units[at], u, false);
		if (svc_refs_update(refs, units[at], u, &f) < 0)
			return 1;
		buf = nft_batch_steal(&f);
		if (!buf)
			return 1;
		len = strlen(buf);
		r = nft_apply(nft, buf, &err);
		if (r >= 0)
			(void) nft_ctx_drop_cache(nft);
		c_changes[n_changes] = cpu_ms_now() - c0;
		t_changes[n_changes++] = ms_now() - t0;
		if (r < 0) {
			fprintf(stderr, "incremental batch refused: %s\n%s", err ?: "", buf);
			return 1;
		}
		svc_slot_pool_release(slots, units[at], u);
		service_unit_free(units[at]);
		units[at] = u;
	}
	t_first = n_changes ? t_changes[0] : 0;
	qsort(t_changes, n_changes, sizeof(double), double_cmp);
	qsort(c_changes, n_changes, sizeof(double), double_cmp);
	t_incr = n_changes ? t_changes[n_changes / 2] : 0;
	printf("services=%zu endpoints=5 full_sync_ms=%.1f one_service_sync_ms=%.2f one_service_sync_max_ms=%.2f "
	       "first_change_ms=%.2f one_service_batch_bytes=%zu full_sync_cpu_ms=%.1f one_service_sync_cpu_ms=%.2f "
	       "counters_read_ms=%.2f counters=%zu counted_maps=%zu\n",
	       n, t_full, t_incr, n_changes ? t_changes[n_changes - 1] : 0, t_first, len, c_full,
	       n_changes ? c_changes[n_changes / 2] : 0, t_reads[ELEMENTSOF(t_reads) / 2], n_counters, n_maps);
	free(buf);
	for (size_t i = 0; i < n_all; i++) {
		service_unit_free(units[i]);
		kube_object_free(svcs[i], pool);
		kube_object_free(slices[i], pool);
	}
	free(units);
	free(svcs);
	free(slices);
	return 0;
}

int main(int argc, char *argv[]) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_ip_protocols_and_named_ports),
		cmocka_unit_test(test_conditions),
		cmocka_unit_test(test_headless_external_name),
		cmocka_unit_test(test_external_entries),
		cmocka_unit_test(test_internal_local_and_dual_stack),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_stale_udp),
		cmocka_unit_test(test_shared_hairpin_and_slots),
		cmocka_unit_test(test_session_affinity),
		cmocka_unit_test(test_source_ranges),
		cmocka_unit_test(test_base_rules),
	};
	int r;

	if (string_pool_new(&pool) < 0 || svc_slot_pool_new(&slots) < 0 || svc_refs_new(&refs) < 0)
		return 1;
	if (argc >= 3 && streq(argv[1], "--bench")) { /* bench/services.sh: in the caller's namespace */
		if (nft_ctx_open(&nft) < 0)
			return 1;
		r = bench(strtoul(argv[2], NULL, 10), argc >= 4 ? argv[3] : NULL);
		nft_ctx_free(nft);
		string_pool_free(pool);
		return r;
	}
	if (geteuid() == 0 && unshare(CLONE_NEWNET) == 0) {
		if (nft_ctx_open(&nft) < 0)
			nft = NULL;
	} else
		fprintf(stderr, "not root: the batches are not applied to a kernel\n");
	r = cmocka_run_group_tests(tests, NULL, NULL);
	nft_ctx_free(nft);
	string_pool_free(pool);
	return r;
}
