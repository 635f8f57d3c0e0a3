/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoding the cluster's objects from their JSON (the test/data/cache/ files are `kubectl get -o
 * json` output): every field weft keeps, the defaults the API server would apply, what counts as a
 * change, and refusal of bad objects — each bad case is a fixture with one field broken, and must
 * be refused whole with a reason naming that field.
 */
#include <libgen.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects.h"

static char data_dir[PATH_MAX];
static StringPool *pool;

static json_t *fixture(const char *name) {
	char path[PATH_MAX + 64];
	json_error_t err;
	json_t *j;

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	j = json_load_file(path, 0, &err);
	if (!j)
		fail_msg("%s: %s", path, err.text);
	return j;
}

static KubeObject *decode_ok(KubeKind kind, const json_t *j) {
	KubeObject *o = NULL;
	DecodeError err = {};

	if (kube_object_decode(kind, j, pool, &o, &err) < 0)
		fail_msg("refused: %s", err.text);
	assert_int_equal(o->kind, kind);
	return o;
}

static const char *ip_str(const IpAddr *a) {
	static char buf[4][IP_ADDR_STRLEN];
	static unsigned i;

	return ip_addr_to_string(a, buf[i++ % 4]);
}

/* Sets (or with value NULL, removes) the member at a '|'-separated path; numbers index arrays. */
static const char *prefix_str(const IpPrefix *p) {
	static char buf[IP_PREFIX_STRLEN];

	return ip_prefix_to_string(p, buf);
}

static void mutate(json_t *j, const char *path, const char *value) {
	_cleanup_free_ char *p = strdup(path);
	char *save = NULL, *tok = strtok_r(p, "|", &save), *next;
	json_t *v = value ? json_loads(value, JSON_DECODE_ANY, NULL) : NULL;

	assert_true(!value || v);
	for (; (next = strtok_r(NULL, "|", &save)); tok = next) {
		json_t *c = json_is_array(j) ? json_array_get(j, strtoul(tok, NULL, 10)) : json_object_get(j, tok);
		if (!c) {
			c = json_object();
			json_object_set_new(j, tok, c);
		}
		j = c;
	}
	if (json_is_array(j)) {
		if (v)
			json_array_set_new(j, strtoul(tok, NULL, 10), v);
		else
			json_array_remove(j, strtoul(tok, NULL, 10));
	} else if (v)
		json_object_set_new(j, tok, v);
	else
		json_object_del(j, tok);
}

static void test_pod(void **state) {
	json_t *j = fixture("pod.json");
	KubeObject *o = decode_ok(KUBE_KIND_POD, j);
	const KubePod *p = KUBE_POD(o);
	LabelSet ls = kube_object_labels(o);
	static const uint8_t uid[16] = { 0x5f, 0x0c, 0x1c, 0x3e, 0x2b, 0x8a, 0x4d, 0x0e,
					 0x9a, 0x6f, 0x7c, 0x1d, 0x2e, 0x3f, 0x4a, 0x5b };

	assert_non_null(p);
	assert_null(KUBE_NODE(o));
	assert_string_equal(o->namespace, "shop");
	assert_string_equal(o->name, "frontend-6c8b9f7d5-x7k2p");
	assert_memory_equal(p->uid, uid, 16);
	assert_string_equal(p->node_name, "node-2");
	assert_false(p->host_network);
	assert_int_equal(p->phase, KUBE_POD_RUNNING);
	assert_int_equal(p->n_ips, 2);
	assert_string_equal(ip_str(&p->ips[0]), "10.244.2.17");
	assert_string_equal(ip_str(&p->ips[1]), "fd00:10:244:2::11");
	assert_int_equal(o->n_labels, 5);
	assert_string_equal(label_set_get(&ls, "app"), "frontend");
	assert_string_equal(label_set_get(&ls, "app.kubernetes.io/part-of"), "shop");
	assert_string_equal(label_set_get(&ls, "version"), "v2");
	assert_int_equal(p->n_ports, 3);
	assert_string_equal(p->ports[0].name, "http");
	assert_int_equal(p->ports[0].port, 8080);
	assert_int_equal(p->ports[0].protocol, KUBE_PROTO_TCP);
	assert_string_equal(p->ports[2].name, "statsd");
	assert_int_equal(p->ports[2].protocol, KUBE_PROTO_UDP);
	/* Interned: the namespace and label pairs are the pool's strings. */
	assert_ptr_equal(o->namespace, string_pool_lookup(pool, "shop"));
	assert_ptr_equal(o->labels[0], string_pool_lookup(pool, o->labels[0]));
	kube_object_free(o, pool);
	json_decref(j);
}

static void test_pod_defaults_and_old_fields(void **state) {
	json_t *j = fixture("pod.json");
	KubeObject *o;
	const KubePod *p;

	/* Unscheduled, no IPs yet, no phase: Pending with nothing. */
	mutate(j, "spec|nodeName", NULL);
	mutate(j, "status", "{}");
	mutate(j, "spec|hostNetwork", "true");
	mutate(j, "metadata|labels", NULL);
	o = decode_ok(KUBE_KIND_POD, j);
	p = KUBE_POD(o);
	assert_null(p->node_name);
	assert_int_equal(p->n_ips, 0);
	assert_int_equal(p->phase, KUBE_POD_PENDING);
	assert_true(p->host_network);
	assert_int_equal(o->n_labels, 0);
	kube_object_free(o, pool);
	/* Only the singular podIP (servers before dual-stack). */
	mutate(j, "status", "{\"podIP\": \"10.244.0.9\", \"phase\": \"Succeeded\"}");
	o = decode_ok(KUBE_KIND_POD, j);
	p = KUBE_POD(o);
	assert_int_equal(p->n_ips, 1);
	assert_string_equal(ip_str(&p->ips[0]), "10.244.0.9");
	assert_int_equal(p->phase, KUBE_POD_SUCCEEDED);
	kube_object_free(o, pool);
	json_decref(j);
}

static void test_node(void **state) {
	json_t *j = fixture("node.json");
	KubeObject *o = decode_ok(KUBE_KIND_NODE, j);
	const KubeNode *n = KUBE_NODE(o);
	char buf[IP_PREFIX_STRLEN];

	assert_null(o->namespace);
	assert_string_equal(o->name, "node-2");
	assert_int_equal(n->n_pod_cidrs, 2);
	assert_string_equal(ip_prefix_to_string(&n->pod_cidrs[0], buf), "10.244.2.0/24");
	assert_string_equal(ip_prefix_to_string(&n->pod_cidrs[1], buf), "fd00:10:244:2::/64");
	/* InternalIP only: not the ExternalIP, not the Hostname. */
	assert_int_equal(n->n_internal_ips, 2);
	assert_string_equal(ip_str(&n->internal_ips[0]), "10.0.0.12");
	assert_string_equal(ip_str(&n->internal_ips[1]), "fd00::12");
	/* weft.dev/ annotations only, sorted. */
	assert_int_equal(n->n_annotations, 3);
	assert_string_equal(n->annotations[0], "weft.dev/backend-type");
	assert_string_equal(n->annotations[1], "vxlan");
	assert_string_equal(n->annotations[2], "weft.dev/public-ip");
	assert_string_equal(n->annotations[3], "10.0.0.12");
	assert_string_equal(n->annotations[4], "weft.dev/vtep-mac");
	kube_object_free(o, pool);

	/* Old servers: only spec.podCIDR. */
	mutate(j, "spec|podCIDRs", NULL);
	o = decode_ok(KUBE_KIND_NODE, j);
	assert_int_equal(KUBE_NODE(o)->n_pod_cidrs, 1);
	kube_object_free(o, pool);
	json_decref(j);
}

static void test_namespace(void **state) {
	json_t *j = fixture("namespace.json");
	KubeObject *o = decode_ok(KUBE_KIND_NAMESPACE, j);
	LabelSet ls = kube_object_labels(o);

	assert_non_null(KUBE_NAMESPACE(o));
	assert_null(o->namespace);
	assert_string_equal(o->name, "shop");
	assert_int_equal(o->n_labels, 3);
	assert_string_equal(label_set_get(&ls, "team"), "storefront");
	assert_string_equal(label_set_get(&ls, "kubernetes.io/metadata.name"), "shop");
	kube_object_free(o, pool);
	json_decref(j);
}

/* The API server pins kubernetes.io/metadata.name to the name: a namespace cannot claim another's. */
static void test_namespace_name_label(void **state) {
	static const char *const labels[] = {
		"{\"kubernetes.io/metadata.name\": \"victim\", \"team\": \"red\"}",
		"{\"team\": \"red\"}",
		"null",
		"{\"kubernetes.io/metadata.name\": \"attacker\", \"team\": \"red\"}",
		"{\"kubernetes.io/metadata.namex\": \"victim\", \"kubernetes.io/metadata.nam\": \"v\"}",
	};

	for (size_t i = 0; i < ELEMENTSOF(labels); i++) {
		json_t *j = fixture("namespace.json");
		KubeObject *o, *again;
		LabelSet ls;

		mutate(j, "metadata|name", "\"attacker\"");
		mutate(j, "metadata|labels", labels[i]);
		o = decode_ok(KUBE_KIND_NAMESPACE, j);
		ls = kube_object_labels(o);
		assert_string_equal(label_set_get(&ls, "kubernetes.io/metadata.name"), "attacker");
		if (i < 2 || i == 3)
			assert_string_equal(label_set_get(&ls, "team"), "red");
		if (i == 4) {
			assert_string_equal(label_set_get(&ls, "kubernetes.io/metadata.namex"), "victim");
			assert_int_equal(o->n_labels, 3);
		}
		/* Sorted and interned like any set: the debug dump decodes to the same object. */
		json_decref(j);
		j = kube_object_to_json(o);
		again = decode_ok(KUBE_KIND_NAMESPACE, j);
		assert_true(kube_object_equal(o, again));
		assert_ptr_equal(o->labels, again->labels);
		kube_object_free(again, pool);
		kube_object_free(o, pool);
		json_decref(j);
	}
}

static void expect_refused(KubeKind kind, json_t *j, const char *reason) {
	KubeObject *o = NULL;
	DecodeError err = {};
	size_t strings = string_pool_size(pool);

	if (kube_object_decode(kind, j, pool, &o, &err) != -EINVAL)
		fail_msg("accepted, expected refusal \"%s\"", reason);
	if (!strstr(err.text, reason))
		fail_msg("reason \"%s\" does not name \"%s\"", err.text, reason);
	assert_int_equal(string_pool_size(pool), strings);
}

static json_t *ip_block_peers(size_t n_peers, size_t n_except) {
	json_t *peers = json_array();

	for (size_t i = 0; i < n_peers; i++) {
		json_t *ex = json_array();
		char buf[64];

		for (size_t k = 0; k < n_except; k++) {
			snprintf(buf, sizeof(buf), "10.%zu.%zu.0/24", (i / 200) % 200, k);
			json_array_append_new(ex, json_string(buf));
		}
		snprintf(buf, sizeof(buf), "10.%zu.0.0/16", (i / 200) % 200);
		json_array_append_new(peers, json_pack("{s:{s:s, s:o}}", "ipBlock", "cidr", buf, "except", ex));
	}
	return peers;
}

static json_t *rules(size_t n, json_t *peers, const char *peers_field) {
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:O}", peers_field, peers));
	json_decref(peers);
	return a;
}

static json_t *policy_with(const char *field, json_t *rule_array) {
	json_t *j = fixture("networkpolicy.json");

	json_object_set_new(json_object_get(j, "spec"), field, rule_array);
	return j;
}

static json_t *ports(size_t n) {
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:I, s:s}", "port", (json_int_t) (1000 + i), "protocol", "TCP"));
	return a;
}

/* weft's own NetworkPolicy limits (docs/object-limits.md) and the API server's EndpointSlice ones:
 * at the limit accepted, one past it refused with the field and the limit named. */
static void test_limits(void **state) {
	json_t *j, *rule, *eps;
	KubeObject *o;

	/* 100 rules per direction */
	j = policy_with("ingress", rules(100, json_array(), "from"));
	o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	kube_object_free(o, pool);
	json_decref(j);
	j = policy_with("egress", rules(101, json_array(), "to"));
	expect_refused(KUBE_KIND_NETWORK_POLICY, j, "spec.egress: 101 rules, more than the limit of 100");
	json_decref(j);

	/* 1,000 peers in the whole policy: 5,000 ipBlocks was the attack */
	j = policy_with("ingress", rules(1, ip_block_peers(1000, 0), "from"));
	json_object_set_new(json_object_get(j, "spec"), "egress", json_array());
	o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	assert_int_equal(KUBE_NETWORK_POLICY(o)->ingress_rules[0].n_peers, 1000);
	kube_object_free(o, pool);
	json_decref(j);
	j = policy_with("ingress", rules(1, ip_block_peers(5000, 0), "from"));
	expect_refused(KUBE_KIND_NETWORK_POLICY, j,
		       "spec.ingress[0].from: the policy has more than the limit of 1000 peers");
	json_decref(j);
	/* ... counted over both directions */
	j = policy_with("ingress", rules(5, ip_block_peers(100, 0), "from"));
	json_object_set_new(json_object_get(j, "spec"), "egress", rules(6, ip_block_peers(100, 0), "to"));
	expect_refused(KUBE_KIND_NETWORK_POLICY, j,
		       "spec.egress[5].to: the policy has more than the limit of 1000 peers");
	json_decref(j);

	/* 100 except entries per ipBlock */
	j = policy_with("ingress", rules(1, ip_block_peers(1, 100), "from"));
	o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	kube_object_free(o, pool);
	json_decref(j);
	j = policy_with("ingress", rules(1, ip_block_peers(1, 101), "from"));
	expect_refused(KUBE_KIND_NETWORK_POLICY, j,
		       "spec.ingress[0].from[0].ipBlock.except: 101 entries, more than the limit of 100");
	json_decref(j);

	/* 100 ports per rule */
	rule = json_pack("[{s:o}]", "ports", ports(100));
	j = policy_with("ingress", rule);
	o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	kube_object_free(o, pool);
	json_decref(j);
	rule = json_pack("[{s:[], s:o}]", "from", "ports", ports(101));
	j = policy_with("ingress", rule);
	expect_refused(KUBE_KIND_NETWORK_POLICY, j, "spec.ingress[0].ports: 101 ports, more than the limit of 100");
	json_decref(j);

	/* EndpointSlice: 1,000 endpoints, 100 addresses each, 100 ports */
	j = fixture("endpointslice.json");
	eps = json_array();
	for (size_t i = 0; i < 1000; i++) {
		char a[32];

		snprintf(a, sizeof(a), "10.244.%zu.%zu", i / 250, i % 250 + 1);
		json_array_append_new(eps, json_pack("{s:[s]}", "addresses", a));
	}
	json_object_set(j, "endpoints", eps);
	o = decode_ok(KUBE_KIND_ENDPOINT_SLICE, j);
	assert_int_equal(KUBE_ENDPOINT_SLICE(o)->n_endpoints, 1000);
	kube_object_free(o, pool);
	json_array_append_new(eps, json_pack("{s:[s]}", "addresses", "10.245.0.1"));
	expect_refused(KUBE_KIND_ENDPOINT_SLICE, j, "endpoints: 1001 endpoints, more than the limit of 1000");
	/* FQDN slices too (their endpoints are not kept, but 20,000 of them still cost a parse) */
	json_object_set_new(j, "addressType", json_string("FQDN"));
	expect_refused(KUBE_KIND_ENDPOINT_SLICE, j, "endpoints: 1001 endpoints");
	json_decref(eps);
	json_decref(j);

	j = fixture("endpointslice.json");
	eps = json_array();
	for (size_t i = 0; i < 101; i++) {
		char a[32];

		snprintf(a, sizeof(a), "10.244.0.%zu", i + 1);
		json_array_append_new(eps, json_string(a));
	}
	json_object_set_new(j, "endpoints", json_pack("[{s:o}]", "addresses", eps));
	expect_refused(KUBE_KIND_ENDPOINT_SLICE, j,
		       "endpoints[0].addresses: missing, empty or more than the limit of 100");
	json_array_remove(eps, 100);
	o = decode_ok(KUBE_KIND_ENDPOINT_SLICE, j);
	kube_object_free(o, pool);
	json_object_set_new(j, "ports", ports(101));
	expect_refused(KUBE_KIND_ENDPOINT_SLICE, j, "ports: 101 ports, more than the limit of 100");
	json_decref(j);
}

/* The same address rules for IPv6 slices. */
static void test_slice_ipv6_addresses(void **state) {
	static const struct {
		const char *addr, *reason;
	} cases[] = {
		{ "::1", "\"::1\" is loopback" },
		{ "::", "\"::\" is unspecified" },
		{ "fe80::1", "\"fe80::1\" is link-local" },
		{ "febf::1", "\"febf::1\" is link-local" },
		{ "ff02::1", "\"ff02::1\" is multicast" },
		{ "ff05::2", "\"ff05::2\" is multicast" },
		{ "::ffff:127.0.0.1", "is loopback (IPv4-mapped)" },
		{ "::ffff:169.254.169.254", "is link-local (IPv4-mapped)" },
		{ "10.0.0.1", "is not of the slice's addressType IPv6" },
		{ "fd00:10:244::5", NULL },
		{ "fec0::1", NULL },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		json_t *j = fixture("endpointslice.json");
		char path[64];

		json_object_set_new(j, "addressType", json_string("IPv6"));
		json_object_set_new(j, "endpoints",
				    json_pack("[{s:[s]}, {s:[s]}]", "addresses", "fd00::7", "addresses",
					      cases[i].addr));
		snprintf(path, sizeof(path), "endpoints[1].addresses[0]: ");
		if (cases[i].reason) {
			_cleanup_free_ char *want = strdup_printf("%s%s", path,
								  strchr(cases[i].reason, '"') ? cases[i].reason : "");
			expect_refused(KUBE_KIND_ENDPOINT_SLICE, j,
				       strchr(cases[i].reason, '"') ? want : cases[i].reason);
		} else
			kube_object_free(decode_ok(KUBE_KIND_ENDPOINT_SLICE, j), pool);
		json_decref(j);
	}
}

static void test_network_policy(void **state) {
	json_t *j = fixture("networkpolicy.json");
	KubeObject *o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	const KubeNetworkPolicy *p = KUBE_NETWORK_POLICY(o);
	const KubePolicyRule *in, *eg;
	char buf[IP_PREFIX_STRLEN];

	assert_string_equal(o->namespace, "shop");
	assert_true(p->ingress);
	assert_true(p->egress);
	assert_int_equal(p->pod_selector->n, 1);
	assert_string_equal(p->pod_selector->reqs[0].key, "role");
	assert_int_equal(p->n_ingress, 2);
	in = &p->ingress_rules[0];
	assert_int_equal(in->n_peers, 4);
	assert_true(in->peers[0].has_ip_block);
	assert_string_equal(ip_prefix_to_string(&in->peers[0].cidr, buf), "172.17.0.0/16");
	assert_int_equal(in->peers[0].n_except, 1);
	assert_string_equal(ip_prefix_to_string(&in->peers[0].except[0], buf), "172.17.1.0/24");
	assert_null(in->peers[0].pod_selector);
	/* namespaceSelector only: every pod of the selected namespaces (pod_selector absent). */
	assert_false(in->peers[1].has_ip_block);
	assert_non_null(in->peers[1].namespace_selector);
	assert_null(in->peers[1].pod_selector);
	/* podSelector only: the policy's own namespace (namespace_selector absent). */
	assert_non_null(in->peers[2].pod_selector);
	assert_null(in->peers[2].namespace_selector);
	assert_non_null(in->peers[3].pod_selector);
	assert_int_equal(in->peers[3].namespace_selector->reqs[0].op, LABEL_OP_IN);
	assert_int_equal(in->peers[3].namespace_selector->reqs[0].n_values, 2);
	assert_int_equal(in->peers[3].pod_selector->reqs[0].op, LABEL_OP_EXISTS);
	assert_int_equal(in->n_ports, 2);
	assert_int_equal(in->ports[0].port.number, 6379);
	assert_int_equal(in->ports[1].port.number, 0);
	assert_string_equal(in->ports[1].port.name, "metrics");
	assert_int_equal(in->ports[1].protocol, KUBE_PROTO_TCP);
	/* {}: from everyone, to every port. */
	assert_int_equal(p->ingress_rules[1].n_peers, 0);
	assert_int_equal(p->ingress_rules[1].n_ports, 0);
	assert_int_equal(p->n_egress, 1);
	eg = &p->egress_rules[0];
	assert_int_equal(eg->ports[0].port.number, 32000);
	assert_int_equal(eg->ports[0].end_port, 32768);
	kube_object_free(o, pool);

	/* policyTypes defaulting: Ingress always, Egress only with egress rules. */
	mutate(j, "spec|policyTypes", NULL);
	o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	assert_true(KUBE_NETWORK_POLICY(o)->ingress && KUBE_NETWORK_POLICY(o)->egress);
	kube_object_free(o, pool);
	mutate(j, "spec|egress", NULL);
	mutate(j, "spec|podSelector", "{}");
	o = decode_ok(KUBE_KIND_NETWORK_POLICY, j);
	assert_true(KUBE_NETWORK_POLICY(o)->ingress);
	assert_false(KUBE_NETWORK_POLICY(o)->egress);
	assert_true(label_selector_is_everything(KUBE_NETWORK_POLICY(o)->pod_selector));
	kube_object_free(o, pool);
	json_decref(j);
}

static void test_service(void **state) {
	json_t *j = fixture("service.json");
	KubeObject *o = decode_ok(KUBE_KIND_SERVICE, j);
	const KubeService *s = KUBE_SERVICE(o);

	assert_int_equal(s->type, KUBE_SERVICE_LOAD_BALANCER);
	assert_false(s->headless);
	assert_int_equal(s->n_cluster_ips, 2);
	assert_string_equal(ip_str(&s->cluster_ips[0]), "10.96.12.34");
	assert_string_equal(ip_str(&s->cluster_ips[1]), "fd00:10:96::1234");
	assert_int_equal(s->n_ip_families, 2);
	assert_int_equal(s->ip_families[0], AF_INET);
	assert_int_equal(s->ip_families[1], AF_INET6);
	assert_int_equal(s->n_ports, 3);
	assert_string_equal(s->ports[0].name, "http");
	assert_int_equal(s->ports[0].port, 80);
	assert_int_equal(s->ports[0].node_port, 30080);
	assert_string_equal(s->ports[0].target_port.name, "http");
	assert_int_equal(s->ports[1].target_port.number, 9090);
	assert_null(s->ports[1].target_port.name);
	/* targetPort absent: the port itself. */
	assert_int_equal(s->ports[2].target_port.number, 8125);
	assert_int_equal(s->ports[2].protocol, KUBE_PROTO_UDP);
	assert_int_equal(s->n_external_ips, 1);
	assert_string_equal(ip_str(&s->external_ips[0]), "198.51.100.7");
	assert_int_equal(s->n_lb_ips, 1); /* the hostname-only ingress is skipped */
	assert_string_equal(ip_str(&s->lb_ips[0]), "203.0.113.50");
	assert_true(s->session_affinity_client_ip);
	assert_int_equal(s->session_affinity_timeout, 600);
	assert_true(s->external_traffic_local);
	assert_false(s->internal_traffic_local);
	assert_int_equal(s->health_check_node_port, 31555);
	assert_int_equal(s->n_source_ranges, 3);
	assert_string_equal(prefix_str(&s->source_ranges[0]), "10.251.0.200/32");
	assert_string_equal(prefix_str(&s->source_ranges[1]), "192.0.2.0/24"); /* host bits dropped */
	assert_string_equal(prefix_str(&s->source_ranges[2]), "2001:db8:1::/48");
	assert_false(s->created_by_revision);
	assert_int_equal(s->created, 1795509300); /* 2026-11-24T08:35:00Z */
	kube_object_free(o, pool);

	/* The etcd source's create revision takes the place of the writer's creationTimestamp. */
	mutate(j, KUBE_CREATE_REVISION_FIELD, "42");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	s = KUBE_SERVICE(o);
	assert_true(s->created_by_revision);
	assert_int_equal(s->created, 42);
	kube_object_free(o, pool);
	mutate(j, KUBE_CREATE_REVISION_FIELD, NULL);

	mutate(j, "spec|clusterIPs", "[\"None\"]");
	mutate(j, "spec|clusterIP", "\"None\"");
	mutate(j, "spec|sessionAffinityConfig", NULL);
	mutate(j, "spec|type", NULL);
	o = decode_ok(KUBE_KIND_SERVICE, j);
	s = KUBE_SERVICE(o);
	assert_true(s->headless);
	assert_int_equal(s->n_cluster_ips, 0);
	assert_int_equal(s->type, KUBE_SERVICE_CLUSTER_IP);
	assert_int_equal(s->session_affinity_timeout, 10800);
	kube_object_free(o, pool);
	json_decref(j);
}

static void test_endpoint_slice(void **state) {
	json_t *j = fixture("endpointslice.json");
	KubeObject *o = decode_ok(KUBE_KIND_ENDPOINT_SLICE, j);
	const KubeEndpointSlice *s = KUBE_ENDPOINT_SLICE(o);

	assert_string_equal(s->service_name, "frontend");
	assert_string_equal(kube_object_index_key(o), "frontend");
	assert_int_equal(s->address_type, KUBE_ADDRESS_IPV4);
	assert_int_equal(s->n_endpoints, 3);
	assert_string_equal(ip_str(&s->endpoints[0].addresses[0]), "10.244.2.17");
	assert_true(s->endpoints[0].ready && s->endpoints[0].serving && !s->endpoints[0].terminating);
	assert_string_equal(s->endpoints[0].node_name, "node-2");
	assert_true(!s->endpoints[1].ready && s->endpoints[1].serving && s->endpoints[1].terminating);
	/* Conditions absent: ready and serving are "unknown", read as true. */
	assert_true(s->endpoints[2].ready && s->endpoints[2].serving && !s->endpoints[2].terminating);
	assert_null(s->endpoints[2].node_name);
	assert_int_equal(s->n_ports, 3);
	assert_string_equal(s->ports[2].name, "statsd");
	assert_int_equal(s->ports[2].port, 8125);
	assert_int_equal(s->ports[2].protocol, KUBE_PROTO_UDP);
	kube_object_free(o, pool);

	/* FQDN slices are kept without endpoints. */
	mutate(j, "addressType", "\"FQDN\"");
	mutate(j, "endpoints|0|addresses", "[\"db.example.com\"]");
	o = decode_ok(KUBE_KIND_ENDPOINT_SLICE, j);
	assert_int_equal(KUBE_ENDPOINT_SLICE(o)->n_endpoints, 0);
	kube_object_free(o, pool);
	json_decref(j);
}

/* What kube_object_to_json() prints decodes to the same object: for every fixture, and for every
 * variant of the change table. */
static void expect_round_trip(const KubeObject *o) {
	json_t *j = kube_object_to_json(o);
	KubeObject *back = NULL;
	DecodeError err = {};

	assert_non_null(j);
	if (kube_object_decode(o->kind, j, pool, &back, &err) < 0) {
		char *dump = json_dumps(j, JSON_COMPACT);

		fail_msg("%s %s: printed object refused: %s\n%s", kube_kind_info(o->kind)->kind, o->name, err.text,
			 dump);
	}
	if (!kube_object_equal(o, back)) {
		char *dump = json_dumps(j, JSON_COMPACT);

		fail_msg("%s %s: printed object decodes differently\n%s", kube_kind_info(o->kind)->kind, o->name, dump);
	}
	kube_object_free(back, pool);
	json_decref(j);
}

/* What changes an object and what does not. */
static void test_equal(void **state) {
	static const struct {
		const char *file;
		KubeKind kind;
		const char *path, *value;
		bool equal;
	} cases[] = {
		{ "pod.json", KUBE_KIND_POD, "status|conditions|1|status", "\"False\"", true },
		{ "pod.json", KUBE_KIND_POD, "metadata|resourceVersion", "\"99999\"", true },
		{ "pod.json", KUBE_KIND_POD, "status|containerStatuses|0|restartCount", "3", true },
		{ "pod.json", KUBE_KIND_POD, "metadata|annotations|x", "\"y\"", true },
		{ "pod.json", KUBE_KIND_POD, "metadata|labels|version", "\"v3\"", false },
		{ "pod.json", KUBE_KIND_POD, "metadata|labels|new", "\"x\"", false },
		{ "pod.json", KUBE_KIND_POD, "status|podIPs|1", NULL, false },
		{ "pod.json", KUBE_KIND_POD, "status|phase", "\"Failed\"", false },
		{ "pod.json", KUBE_KIND_POD, "spec|nodeName", "\"node-3\"", false },
		{ "pod.json", KUBE_KIND_POD, "spec|containers|1|ports|0|containerPort", "8126", false },
		{ "node.json", KUBE_KIND_NODE, "status|conditions|0|lastHeartbeatTime", "\"2026-11-24T09:00:10Z\"",
		  true },
		{ "node.json", KUBE_KIND_NODE, "metadata|annotations|node.alpha.kubernetes.io/ttl", "\"5\"", true },
		{ "node.json", KUBE_KIND_NODE, "metadata|annotations|weft.dev/public-ip", "\"10.0.0.13\"", false },
		{ "node.json", KUBE_KIND_NODE, "status|addresses|0|address", "\"10.0.0.99\"", false },
		{ "node.json", KUBE_KIND_NODE, "status|addresses|2|address", "\"203.0.113.99\"", true },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "metadata|generation", "2", true },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|ports|0|port", "6380", false },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|from|0|ipBlock|except", "[]", false },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY,
		  "spec|ingress|0|from|3|namespaceSelector|matchExpressions|0|values", "[\"staging\", \"prod\"]",
		  true },
		{ "service.json", KUBE_KIND_SERVICE, "spec|ipFamilyPolicy", "\"SingleStack\"", true },
		{ "service.json", KUBE_KIND_SERVICE, "spec|ports|0|targetPort", "8080", false },
		{ "service.json", KUBE_KIND_SERVICE, "status|loadBalancer|ingress", "[]", false },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|zone", "\"zone-c\"", true },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|conditions|ready", "false", false },
		{ "namespace.json", KUBE_KIND_NAMESPACE, "status|phase", "\"Terminating\"", true },
		{ "namespace.json", KUBE_KIND_NAMESPACE, "metadata|labels|env", "\"dev\"", false },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		json_t *j = fixture(cases[i].file);
		KubeObject *a = decode_ok(cases[i].kind, j), *b;

		mutate(j, cases[i].path, cases[i].value);
		b = decode_ok(cases[i].kind, j);
		expect_round_trip(a);
		expect_round_trip(b);
		if (kube_object_equal(a, b) != cases[i].equal)
			fail_msg("%s %s := %s: equal should be %d", cases[i].file, cases[i].path,
				 cases[i].value ?: "(removed)", cases[i].equal);
		assert_true(kube_object_equal(a, a));
		kube_object_free(a, pool);
		kube_object_free(b, pool);
		json_decref(j);
	}
}

/* Each fixture with one field broken: refused, and the reason names the field. */
static void test_refused(void **state) {
	static const struct {
		const char *file;
		KubeKind kind;
		const char *path, *value, *reason;
	} cases[] = {
		{ "pod.json", KUBE_KIND_POD, "metadata|name", NULL, "metadata.name" },
		{ "pod.json", KUBE_KIND_POD, "metadata|name", "\"Frontend_1\"", "metadata.name" },
		{ "pod.json", KUBE_KIND_POD, "metadata|namespace", NULL, "metadata.namespace" },
		{ "pod.json", KUBE_KIND_POD, "metadata|namespace", "7", "metadata.namespace" },
		{ "pod.json", KUBE_KIND_POD, "metadata|uid", "\"not-a-uid\"", "metadata.uid" },
		{ "pod.json", KUBE_KIND_POD, "metadata|labels|app", "\"front end\"", "metadata.labels[app]" },
		{ "pod.json", KUBE_KIND_POD, "metadata|labels|bad key!", "\"x\"", "not a valid label key" },
		{ "pod.json", KUBE_KIND_POD, "metadata|labels", "[]", "metadata.labels" },
		{ "pod.json", KUBE_KIND_POD, "status|podIPs|0|ip", "\"10.244.2.300\"", "status.podIPs[0].ip" },
		{ "pod.json", KUBE_KIND_POD, "status|podIPs|1|ip", "\"10.244.2.18\"",
		  "more than one address per family" },
		{ "pod.json", KUBE_KIND_POD, "status|podIPs", "{}", "status.podIPs" },
		{ "pod.json", KUBE_KIND_POD, "status|podIPs",
		  "[{\"ip\": \"10.0.0.1\"}, {\"ip\": \"::1\"}, {\"ip\": \"::2\"}]", "status.podIPs" },
		{ "pod.json", KUBE_KIND_POD, "spec|hostNetwork", "\"yes\"", "spec.hostNetwork" },
		{ "pod.json", KUBE_KIND_POD, "spec|nodeName", "\"Node 2\"", "spec.nodeName" },
		{ "pod.json", KUBE_KIND_POD, "status|phase", "\"Sleeping\"", "status.phase" },
		{ "pod.json", KUBE_KIND_POD, "spec|containers|0|ports|1|containerPort", "70000",
		  "spec.containers[0].ports[1].containerPort" },
		{ "pod.json", KUBE_KIND_POD, "spec|containers|1|ports|0|protocol", "\"ICMP\"",
		  "spec.containers[1].ports[0].protocol" },
		{ "pod.json", KUBE_KIND_POD, "spec|containers|0|ports|0|name", "\"HTTP\"",
		  "spec.containers[0].ports[0].name" },
		{ "node.json", KUBE_KIND_NODE, "spec|podCIDRs|0", "\"10.244.2.1/24\"", "spec.podCIDRs[0]" },
		{ "node.json", KUBE_KIND_NODE, "spec|podCIDRs|1", "\"10.244.3.0/24\"", "more than one per family" },
		{ "node.json", KUBE_KIND_NODE, "status|addresses|0|address", "\"10.0.0\"",
		  "status.addresses[0].address" },
		{ "node.json", KUBE_KIND_NODE, "metadata|annotations|weft.dev/public-ip", "12", "weft.dev/public-ip" },
		{ "namespace.json", KUBE_KIND_NAMESPACE, "metadata|name", "\"shop.prod\"", "metadata.name" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|from|0|ipBlock|cidr",
		  "\"172.17.0.0/33\"", "spec.ingress[0].from[0].ipBlock.cidr" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|from|0|ipBlock|except|0",
		  "\"10.1.0.0/24\"", "except[0]: not inside cidr" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|from|1|podSelector", "{}",
		  NULL /* a control: still valid (a namespace + pod peer) */ },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|from|0|podSelector", "{}",
		  "ipBlock may not be combined" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|from|2", "{}",
		  "must specify podSelector, namespaceSelector or ipBlock" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY,
		  "spec|ingress|0|from|3|podSelector|matchExpressions|0|values", "[\"x\"]",
		  "must be empty for Exists" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|egress|0|ports|0|endPort", "31000",
		  "spec.egress[0].ports[0].endPort" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|ports|1|port", "\"no_such\"",
		  "spec.ingress[0].ports[1].port" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|ingress|0|ports|0|port", "0",
		  "spec.ingress[0].ports[0].port" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "spec|policyTypes|1", "\"Both\"",
		  "spec.policyTypes[1]" },
		{ "service.json", KUBE_KIND_SERVICE, "metadata|name", "\"1frontend\"", "metadata.name" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|type", "\"Magic\"", "spec.type" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|clusterIPs|1", "\"fd00:10:96::zz\"", "spec.clusterIPs[1]" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|ports|1|port", "\"9090\"", "spec.ports[1].port" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|ports|1|targetPort", "65536", "spec.ports[1].targetPort" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|ports|0|nodePort", "-1", "spec.ports[0].nodePort" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|externalIPs|0", "\"198.51.100\"", "spec.externalIPs[0]" },
		{ "service.json", KUBE_KIND_SERVICE, "status|loadBalancer|ingress|0|ip", "\"x\"",
		  "status.loadBalancer.ingress[0].ip" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|sessionAffinityConfig|clientIP|timeoutSeconds", "0",
		  "timeoutSeconds" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|externalTrafficPolicy", "\"Nearby\"",
		  "spec.externalTrafficPolicy" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|ipFamilies|1", "\"IPv4\"", "spec.ipFamilies[1]" },
		{ "service.json", KUBE_KIND_SERVICE, "spec|loadBalancerSourceRanges|1", "\"10.0.0.0/33\"",
		  "spec.loadBalancerSourceRanges[1]: \"10.0.0.0/33\" is not a CIDR" },
		{ "service.json", KUBE_KIND_SERVICE, "metadata|creationTimestamp", "\"yesterday\"",
		  "metadata.creationTimestamp" },
		{ "service.json", KUBE_KIND_SERVICE, KUBE_CREATE_REVISION_FIELD, "\"7\"", KUBE_CREATE_REVISION_FIELD },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "addressType", "\"IPv5\"", "addressType" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|1|addresses|0", "\"fd00::1\"",
		  "endpoints[1].addresses[0]: \"fd00::1\" is not of the slice's addressType IPv4" },
		/* kube-apiserver's discovery validation (ValidateEndpointIP), for every source */
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|1|addresses|0", "\"127.0.0.1\"",
		  "endpoints[1].addresses[0]: \"127.0.0.1\" is loopback" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|2|addresses|0", "\"127.8.9.10\"",
		  "endpoints[2].addresses[0]: \"127.8.9.10\" is loopback" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|addresses|0", "\"169.254.169.254\"",
		  "endpoints[0].addresses[0]: \"169.254.169.254\" is link-local" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|addresses|0", "\"0.0.0.0\"",
		  "endpoints[0].addresses[0]: \"0.0.0.0\" is unspecified" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|addresses|0", "\"224.0.0.1\"",
		  "endpoints[0].addresses[0]: \"224.0.0.1\" is multicast" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|addresses|0", "\"239.255.0.9\"",
		  "endpoints[0].addresses[0]: \"239.255.0.9\" is multicast" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|addresses|0", "\"192.168.1.10\"",
		  NULL /* a control: a node's address (a hostNetwork pod's endpoint) is fine */ },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|addresses",
		  "[\"10.244.2.17\", \"10.244.2.17\"]", "duplicate address" },
		/* apiVersion and kind per kind: wrong is refused, absent (List items) is fine */
		{ "service.json", KUBE_KIND_SERVICE, "apiVersion", "\"v2\"", "apiVersion: \"v2\" is not v1" },
		{ "service.json", KUBE_KIND_SERVICE, "apiVersion", "7", "apiVersion: \"(not a string)\"" },
		{ "service.json", KUBE_KIND_SERVICE, "kind", "\"Pod\"", "kind: \"Pod\" is not Service" },
		{ "service.json", KUBE_KIND_SERVICE, "apiVersion", NULL, NULL },
		{ "pod.json", KUBE_KIND_POD, "apiVersion", "\"apps/v1\"", "apiVersion: \"apps/v1\" is not v1" },
		{ "pod.json", KUBE_KIND_POD, "kind", NULL, NULL },
		{ "namespace.json", KUBE_KIND_NAMESPACE, "apiVersion", "\"v1beta1\"", "apiVersion: \"v1beta1\"" },
		{ "node.json", KUBE_KIND_NODE, "kind", "\"Namespace\"", "kind: \"Namespace\" is not Node" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "apiVersion", "\"v1\"",
		  "apiVersion: \"v1\" is not networking.k8s.io/v1" },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY, "apiVersion", "\"extensions/v1beta1\"",
		  "is not networking.k8s.io/v1" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "apiVersion", "\"discovery.k8s.io/v1beta1\"",
		  "apiVersion: \"discovery.k8s.io/v1beta1\" is not discovery.k8s.io/v1" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "kind", "\"Endpoints\"",
		  "kind: \"Endpoints\" is not EndpointSlice" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|1|addresses", "[]",
		  "endpoints[1].addresses" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "endpoints|0|conditions|ready", "\"true\"",
		  "endpoints[0].conditions" },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE, "ports|0|port", "0", "ports[0].port" },
	};
	unsigned refused = 0;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		json_t *j = fixture(cases[i].file);
		KubeObject *o = NULL;
		DecodeError err = {};
		size_t strings = string_pool_size(pool);
		int r;

		mutate(j, cases[i].path, cases[i].value);
		r = kube_object_decode(cases[i].kind, j, pool, &o, &err);
		if (!cases[i].reason) {
			assert_int_equal(r, 0);
			kube_object_free(o, pool);
			json_decref(j);
			continue;
		}
		if (r != -EINVAL)
			fail_msg("%s %s := %s: accepted (%d)", cases[i].file, cases[i].path,
				 cases[i].value ?: "(removed)", r);
		assert_null(o);
		if (!strstr(err.text, cases[i].reason))
			fail_msg("%s %s: reason \"%s\" does not name \"%s\"", cases[i].file, cases[i].path, err.text,
				 cases[i].reason);
		/* Nothing half-decoded stays behind: every interned string was released. */
		assert_int_equal(string_pool_size(pool), strings);
		refused++;
		json_decref(j);
	}
	print_message("%u broken objects refused with a reason\n", refused);
}

/* status.conditions: only the assigner's own is kept (others never refuse the Service); a malformed
 * or repeated one of ours counts as not there; metadata.generation is read leniently. */
static void test_service_lb_condition(void **state) {
	static const char *ours = "{\"type\": \"weft.dev/LoadBalancerAddressAssigned\", \"status\": \"False\", "
				  "\"observedGeneration\": 4, \"lastTransitionTime\": \"2026-01-02T03:04:05Z\", "
				  "\"reason\": \"OutsidePools\", \"message\": \"spec.loadBalancerIP: x\"}";
	json_t *j = fixture("service.json");
	_cleanup_free_ char *two = NULL, *three = NULL;
	KubeObject *o;
	const KubeService *s;

	o = decode_ok(KUBE_KIND_SERVICE, j); /* none */
	assert_false(KUBE_SERVICE(o)->lb_condition.present);
	assert_int_equal(KUBE_SERVICE(o)->generation, 0);
	kube_object_free(o, pool);

	two = strdup_printf("[{\"type\": \"example.com/Other\", \"status\": 7}, %s]", ours);
	mutate(j, "status|conditions", two);
	mutate(j, "metadata|generation", "4");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	s = KUBE_SERVICE(o);
	assert_true(s->lb_condition.present);
	assert_false(s->lb_condition.bad);
	assert_false(s->lb_condition.status);
	assert_true(s->lb_condition.has_transition);
	assert_int_equal(s->lb_condition.observed_generation, 4);
	assert_string_equal(s->lb_condition.reason, "OutsidePools");
	assert_string_equal(s->lb_condition.message, "spec.loadBalancerIP: x");
	assert_int_equal(s->generation, 4);
	kube_object_free(o, pool);

	three = strdup_printf("[%s, %s]", ours, ours); /* ours twice */
	mutate(j, "status|conditions", three);
	mutate(j, "metadata|generation", "\"junk\"");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	assert_true(KUBE_SERVICE(o)->lb_condition.bad);
	assert_int_equal(KUBE_SERVICE(o)->generation, 0);
	kube_object_free(o, pool);

	mutate(j, "status|conditions", "[{\"type\": \"weft.dev/LoadBalancerAddressAssigned\", \"status\": \"Maybe\"}]");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	assert_false(KUBE_SERVICE(o)->lb_condition.present);
	assert_true(KUBE_SERVICE(o)->lb_condition.bad);
	kube_object_free(o, pool);
	json_decref(j);
}

/* Service limits (docs/service-address-policy.md): at the limit accepted, one over refused with the
 * field and the limit named; port names, port . protocol and nodePort . protocol unique. */
static void test_service_limits(void **state) {
	static const struct {
		const char *path; /* an array under spec (or status|loadBalancer) */
		int limit;
		const char *reason;
	} arrays[] = {
		{ "spec|ports", KUBE_SERVICE_MAX_PORTS, "spec.ports: 101 entries, at most 100" },
		{ "spec|externalIPs", KUBE_SERVICE_MAX_EXTERNAL_IPS, "spec.externalIPs: 65 entries, at most 64" },
		{ "spec|loadBalancerSourceRanges", KUBE_SERVICE_MAX_SOURCE_RANGES,
		  "spec.loadBalancerSourceRanges: 65 entries, at most 64" },
		{ "status|loadBalancer|ingress", KUBE_SERVICE_MAX_LB_INGRESS,
		  "status.loadBalancer.ingress: 17 entries, at most 16" },
		{ "status|conditions", KUBE_SERVICE_MAX_CONDITIONS, "status.conditions: 33 entries, at most 32" },
	};
	static const struct {
		const char *path, *value, *reason;
	} dups[] = {
		{ "spec|ports|1|name", "\"http\"", "spec.ports[1].name: \"http\" repeats spec.ports[0]" },
		{ "spec|ports|1|port", "80", "spec.ports[1]: port 80/TCP repeats spec.ports[0]" },
		{ "spec|ports|1|nodePort", "30080", "spec.ports[1].nodePort: 30080/TCP repeats spec.ports[0]" },
		/* controls: the same number for another protocol is another port (DNS over TCP and UDP) */
		{ "spec|ports|2|port", "80", NULL },
		{ "spec|ports|2|nodePort", "30080", NULL },
	};

	for (size_t i = 0; i < ELEMENTSOF(arrays); i++)
		for (int n = arrays[i].limit; n <= arrays[i].limit + 1; n++) {
			json_t *j = fixture("service.json"), *a = json_array();
			KubeObject *o = NULL;
			DecodeError err = {};
			_cleanup_free_ char *text = NULL;
			int r;

			for (int k = 0; k < n; k++) {
				char v[64];

				if (strstr(arrays[i].path, "ports"))
					json_array_append_new(a, json_pack("{s:i,s:i}", "port", k + 1, "targetPort",
									   8080));
				else if (strstr(arrays[i].path, "ingress")) {
					snprintf(v, sizeof(v), "192.0.2.%d", k + 1);
					json_array_append_new(a, json_pack("{s:s}", "ip", v));
				} else if (strstr(arrays[i].path, "conditions")) {
					snprintf(v, sizeof(v), "example.com/C%d", k);
					json_array_append_new(a, json_pack("{s:s,s:s}", "type", v, "status", "True"));
				} else if (strstr(arrays[i].path, "Ranges")) {
					snprintf(v, sizeof(v), "10.%d.0.0/16", k);
					json_array_append_new(a, json_string(v));
				} else {
					snprintf(v, sizeof(v), "198.51.%d.7", k);
					json_array_append_new(a, json_string(v));
				}
			}
			text = json_dumps(a, JSON_COMPACT);
			json_decref(a);
			mutate(j, arrays[i].path, text);
			r = kube_object_decode(KUBE_KIND_SERVICE, j, pool, &o, &err);
			if (n == arrays[i].limit) {
				if (r < 0)
					fail_msg("%s with %d entries refused: %s", arrays[i].path, n, err.text);
				kube_object_free(o, pool);
			} else {
				assert_int_equal(r, -EINVAL);
				if (!strstr(err.text, arrays[i].reason))
					fail_msg("%s: \"%s\", want \"%s\"", arrays[i].path, err.text, arrays[i].reason);
			}
			json_decref(j);
		}
	for (size_t i = 0; i < ELEMENTSOF(dups); i++) {
		json_t *j = fixture("service.json");
		KubeObject *o = NULL;
		DecodeError err = {};
		int r;

		mutate(j, dups[i].path, dups[i].value);
		r = kube_object_decode(KUBE_KIND_SERVICE, j, pool, &o, &err);
		if (!dups[i].reason) {
			if (r < 0)
				fail_msg("%s := %s refused: %s", dups[i].path, dups[i].value, err.text);
			kube_object_free(o, pool);
		} else {
			assert_int_equal(r, -EINVAL);
			if (!strstr(err.text, dups[i].reason))
				fail_msg("%s: \"%s\", want \"%s\"", dups[i].path, err.text, dups[i].reason);
		}
		json_decref(j);
	}
}

/* LoadBalancer fields: ipMode Proxy kept apart from the DNATed ingress IPs (KEP-1860), the class,
 * the requested addresses (loadBalancerIP, weft's annotation, MetalLB's), the sharing key, and a
 * malformed request that marks the request bad without refusing the Service. */
static void test_service_load_balancer(void **state) {
	json_t *j = fixture("service.json");
	KubeObject *o;
	const KubeService *s;

	mutate(j, "status|loadBalancer|ingress",
	       "[{\"ip\": \"203.0.113.50\", \"ipMode\": \"VIP\"}, {\"ip\": \"203.0.113.51\", \"ipMode\": "
	       "\"Proxy\"}, {\"ip\": \"2001:db8::50\"}]");
	mutate(j, "spec|loadBalancerClass", "\"weft.dev/loadbalancer\"");
	mutate(j, "metadata|annotations",
	       "{\"weft.dev/loadbalancer-ips\": \"203.0.113.50, 2001:db8::50\", \"weft.dev/allow-shared-ip\": "
	       "\"front\", \"metallb.universe.tf/loadBalancerIPs\": \"198.51.100.1\"}");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	s = KUBE_SERVICE(o);
	assert_int_equal(s->n_lb_ips, 2);
	assert_string_equal(ip_str(&s->lb_ips[0]), "203.0.113.50");
	assert_string_equal(ip_str(&s->lb_ips[1]), "2001:db8::50");
	assert_int_equal(s->n_lb_proxy_ips, 1);
	assert_string_equal(ip_str(&s->lb_proxy_ips[0]), "203.0.113.51");
	assert_string_equal(s->lb_class, KUBE_LB_CLASS_WEFT);
	assert_false(s->lb_request_bad);
	assert_int_equal(s->n_lb_requested, 2); /* weft's annotation wins over MetalLB's */
	assert_string_equal(ip_str(&s->lb_requested[0]), "203.0.113.50");
	assert_string_equal(ip_str(&s->lb_requested[1]), "2001:db8::50");
	assert_string_equal(s->lb_sharing_key, "front");
	expect_round_trip(o);
	kube_object_free(o, pool);

	/* spec.loadBalancerIP wins over both annotations; MetalLB's sharing key is read too */
	mutate(j, "spec|loadBalancerIP", "\"203.0.113.9\"");
	mutate(j, "metadata|annotations",
	       "{\"weft.dev/loadbalancer-ips\": \"203.0.113.50\", \"metallb.universe.tf/allow-shared-ip\": \"k\"}");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	s = KUBE_SERVICE(o);
	assert_int_equal(s->n_lb_requested, 1);
	assert_string_equal(ip_str(&s->lb_requested[0]), "203.0.113.9");
	assert_string_equal(s->lb_sharing_key, "k");
	expect_round_trip(o);
	kube_object_free(o, pool);

	/* MetalLB's address annotation, alone */
	mutate(j, "spec|loadBalancerIP", NULL);
	mutate(j, "metadata|annotations", "{\"metallb.universe.tf/loadBalancerIPs\": \"198.51.100.1\"}");
	o = decode_ok(KUBE_KIND_SERVICE, j);
	assert_int_equal(KUBE_SERVICE(o)->n_lb_requested, 1);
	assert_string_equal(ip_str(&KUBE_SERVICE(o)->lb_requested[0]), "198.51.100.1");
	kube_object_free(o, pool);

	/* malformed requests: the Service decodes, the request is marked bad with key and value */
	static const struct {
		const char *field, *value, *error;
	} bad[] = {
		{ "spec|loadBalancerIP", "\"10.0.0.300\"", "spec.loadBalancerIP: \"10.0.0.300\" is not an IP address" },
		{ "metadata|annotations", "{\"weft.dev/loadbalancer-ips\": \"10.0.0.1,nope\"}",
		  "weft.dev/loadbalancer-ips: \"10.0.0.1,nope\" is not a list of IP addresses" },
		{ "metadata|annotations", "{\"weft.dev/loadbalancer-ips\": \"10.0.0.1,10.0.0.2\"}",
		  "weft.dev/loadbalancer-ips: \"10.0.0.1,10.0.0.2\" names two addresses of one family" },
		{ "metadata|annotations", "{\"weft.dev/loadbalancer-ips\": \"10.0.0.1,::1,10.0.0.2\"}",
		  "weft.dev/loadbalancer-ips: \"10.0.0.1,::1,10.0.0.2\" is not one address, or two of different "
		  "families" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		json_t *c = json_deep_copy(j);

		mutate(c, "metadata|annotations", NULL);
		mutate(c, bad[i].field, bad[i].value);
		o = decode_ok(KUBE_KIND_SERVICE, c);
		s = KUBE_SERVICE(o);
		assert_true(s->lb_request_bad);
		assert_int_equal(s->n_lb_requested, 0);
		assert_string_equal(s->lb_request_error, bad[i].error);
		expect_round_trip(o);
		kube_object_free(o, pool);
		json_decref(c);
	}

	/* refused as the API server refuses them */
	mutate(j, "status|loadBalancer|ingress", "[{\"ip\": \"203.0.113.50\", \"ipMode\": \"Direct\"}]");
	expect_refused(KUBE_KIND_SERVICE, j, "status.loadBalancer.ingress[0].ipMode: not VIP or Proxy");
	mutate(j, "status|loadBalancer|ingress", "[]");
	mutate(j, "spec|loadBalancerClass", "\"no-domain\"");
	expect_refused(KUBE_KIND_SERVICE, j, "spec.loadBalancerClass: not a label-style name with a domain");
	mutate(j, "spec|loadBalancerClass", NULL);
	mutate(j, "metadata|annotations", "[]");
	expect_refused(KUBE_KIND_SERVICE, j, "metadata.annotations: not an object");
	json_decref(j);
}

static void test_round_trip(void **state) {
	static const struct {
		const char *file;
		KubeKind kind;
	} fixtures[] = {
		{ "pod.json", KUBE_KIND_POD },
		{ "node.json", KUBE_KIND_NODE },
		{ "namespace.json", KUBE_KIND_NAMESPACE },
		{ "networkpolicy.json", KUBE_KIND_NETWORK_POLICY },
		{ "service.json", KUBE_KIND_SERVICE },
		{ "endpointslice.json", KUBE_KIND_ENDPOINT_SLICE },
	};

	for (size_t i = 0; i < ELEMENTSOF(fixtures); i++) {
		json_t *j = fixture(fixtures[i].file);
		KubeObject *o = decode_ok(fixtures[i].kind, j);

		expect_round_trip(o);
		kube_object_free(o, pool);
		/* And the headless / default variants. */
		if (fixtures[i].kind == KUBE_KIND_SERVICE) {
			mutate(j, "spec|clusterIPs", "[\"None\"]");
			mutate(j, "spec|sessionAffinity", NULL);
			o = decode_ok(fixtures[i].kind, j);
			expect_round_trip(o);
			kube_object_free(o, pool);
		}
		json_decref(j);
	}
}

static void test_kind_names(void **state) {
	KubeKind k;

	assert_int_equal(kube_kind_from_string("pods", &k), 0);
	assert_int_equal(k, KUBE_KIND_POD);
	assert_int_equal(kube_kind_from_string("NetworkPolicy", &k), 0);
	assert_int_equal(k, KUBE_KIND_NETWORK_POLICY);
	assert_int_equal(kube_kind_from_string("endpointslices", &k), 0);
	assert_string_equal(kube_kind_info(k)->api_path, "/apis/discovery.k8s.io/v1/endpointslices");
	assert_int_equal(kube_kind_from_string("deployments", &k), -EINVAL);
	assert_false(kube_kind_info(KUBE_KIND_NODE)->namespaced);
}

static int setup(void **state) {
	char exe[PATH_MAX];
	ssize_t n;

	if (getenv("WEFT_TOP"))
		snprintf(data_dir, sizeof(data_dir), "%s/test/data/cache", getenv("WEFT_TOP"));
	else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0)
			return -1;
		exe[n] = 0;
		/* <top>/<build>/test/test-kube-objects */
		snprintf(data_dir, sizeof(data_dir), "%s/../../test/data/cache", dirname(exe));
	}
	return string_pool_new(&pool);
}

static int teardown(void **state) {
	/* Every object was freed: the pool must be empty again (no leaked references). */
	if (string_pool_size(pool) != 0) {
		print_error("%zu interned strings leaked\n", string_pool_size(pool));
		return -1;
	}
	string_pool_free(pool);
	return 0;
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod),
		cmocka_unit_test(test_pod_defaults_and_old_fields),
		cmocka_unit_test(test_node),
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_namespace_name_label),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_slice_ipv6_addresses),
		cmocka_unit_test(test_network_policy),
		cmocka_unit_test(test_service),
		cmocka_unit_test(test_endpoint_slice),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_service_limits),
		cmocka_unit_test(test_service_lb_condition),
		cmocka_unit_test(test_service_load_balancer),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
