/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NetworkPolicy objects in, nftables objects out (policy-compile.h), for ingress and egress: which
 * pods are isolated and by which class chain, what each rule's peer, port and named-port sets hold
 * (pod selectors, namespace selectors, both in one peer, ipBlock with except, endPort, named ports
 * resolved per destination pod, SCTP), that objects stay linear in pods + policies, and that a
 * change renders as a batch touching only what changed. When run as root the batches are applied
 * to a private network namespace's nftables, start-up batch first, then each diff, and the kernel's
 * listing of the table is compared with the compiled objects.
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

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>

#include "basic/string-util.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/policy/policy-compile.h"
#include "daemon/policy/policy-drops.h"
#include "shared/nft/nft.h"

typedef struct Cluster {
	StringPool *pool;
	KubeObject *objs[4096];
	size_t n;
} Cluster;

static void obj_add(Cluster *c, KubeKind kind, const char *fmt, ...) _printf_(3, 4);
static void obj_add(Cluster *c, KubeKind kind, const char *fmt, ...) {
	char buf[8192];
	json_error_t jerr;
	DecodeError err = {};
	KubeObject *o;
	va_list ap;
	json_t *j;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	j = json_loads(buf, 0, &jerr);
	if (!j)
		fail_msg("bad test JSON: %s: %s", jerr.text, buf);
	if (kube_object_decode(kind, j, c->pool, &o, &err) < 0)
		fail_msg("refused: %s: %s", err.text, buf);
	json_decref(j);
	c->objs[c->n++] = o;
}

static void obj_del(Cluster *c, KubeKind kind, const char *ns, const char *name) {
	for (size_t i = 0; i < c->n; i++)
		if (c->objs[i]->kind == kind && streq_ptr(c->objs[i]->namespace, ns) && streq(c->objs[i]->name, name)) {
			kube_object_free(c->objs[i], c->pool);
			c->objs[i] = c->objs[--c->n];
			return;
		}
	fail_msg("no %s/%s", ns, name);
}

static void ns_add(Cluster *c, const char *name) {
	obj_add(c, KUBE_KIND_NAMESPACE, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"ns\":\"%s\"}}}", name, name);
}

/* A pod with container ports "serve-80-tcp" (80/TCP), "serve-81-udp" (81/UDP), "http" (8080 + i). */
static void pod_add(Cluster *c, const char *ns, const char *name, const char *node, const char *ip,
		    const char *labels) {
	obj_add(c, KUBE_KIND_POD,
		"{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"labels\":%s},"
		"\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"ports\":["
		"{\"name\":\"serve-80-tcp\",\"containerPort\":80},"
		"{\"name\":\"serve-81-udp\",\"containerPort\":81,\"protocol\":\"UDP\"},"
		"{\"name\":\"http\",\"containerPort\":%d}]}]},"
		"\"status\":{\"phase\":\"Running\",\"podIPs\":[{\"ip\":\"%s\"}]}}",
		ns, name, labels, node, 8080 + (int) (strlen(name) % 7), ip);
}

static void policy_add(Cluster *c, const char *ns, const char *name, const char *spec) {
	obj_add(c, KUBE_KIND_NETWORK_POLICY, "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"},\"spec\":%s}", ns,
		name, spec);
}

static PolicyRuleset *compile(Cluster *c, const char *node) {
	const KubePod *pods[4096];
	const KubeNamespace *nss[4096];
	const KubeNetworkPolicy *pols[4096];
	PolicyInput in = { .node = node, .pods = pods, .namespaces = nss, .policies = pols };
	PolicyRuleset *r;

	for (size_t i = 0; i < c->n; i++) {
		if (KUBE_POD(c->objs[i]))
			pods[in.n_pods++] = KUBE_POD(c->objs[i]);
		else if (KUBE_NAMESPACE(c->objs[i]))
			nss[in.n_namespaces++] = KUBE_NAMESPACE(c->objs[i]);
		else if (KUBE_NETWORK_POLICY(c->objs[i]))
			pols[in.n_policies++] = KUBE_NETWORK_POLICY(c->objs[i]);
	}
	assert_int_equal(policy_compile(&in, &r), 0);
	return r;
}

/* The object's items joined by " | ", or "-" if there is no such object. */
static const char *items(const PolicyRuleset *r, const char *name) {
	static char buf[8192];
	const PolicyObject *o = policy_ruleset_find(r, name);

	if (!o)
		return "-";
	buf[0] = 0;
	for (size_t i = 0; i < o->n_items; i++) {
		if (i)
			strcat(buf, " | ");
		strcat(buf, o->items[i]);
	}
	return buf;
}

/* The name of the first object whose name starts with np-<tag of ns/name> and ends with suffix. */
static const char *obj_of(const PolicyRuleset *r, const char *comment, const char *suffix) {
	for (size_t i = 0; i < r->n; i++) {
		size_t ln = strlen(r->objs[i].name), ls = strlen(suffix);

		if (strstr(r->objs[i].decl, comment) && ln >= ls && streq(r->objs[i].name + ln - ls, suffix))
			return r->objs[i].name;
	}
	return "-";
}

#define assert_items(r, name, want) assert_string_equal(items(r, name), want)

/* The counter of rule `rule` of policy chain np-<tag>-{in,out}: np-c-<tag>-{in,out}<rule>. */
static const char *ctr(const char *chain, int rule, char buf[static 64]) {
	snprintf(buf, 64, "np-c-%s%d", chain + 3, rule);
	return buf;
}

static Cluster *cluster_new(void) {
	Cluster *c = calloc(1, sizeof(Cluster));

	assert_non_null(c);
	assert_int_equal(string_pool_new(&c->pool), 0);
	ns_add(c, "x");
	ns_add(c, "y");
	ns_add(c, "z");
	pod_add(c, "x", "a", "n1", "10.0.1.1", "{\"pod\":\"a\"}");
	pod_add(c, "x", "b", "n1", "10.0.1.2", "{\"pod\":\"b\"}");
	pod_add(c, "x", "c", "n2", "10.0.2.3", "{\"pod\":\"c\"}");
	pod_add(c, "y", "a", "n2", "10.0.2.1", "{\"pod\":\"a\"}");
	pod_add(c, "y", "b", "n1", "10.0.1.5", "{\"pod\":\"b\"}");
	pod_add(c, "z", "a", "n2", "10.0.2.7", "{\"pod\":\"a\"}");
	return c;
}

static void cluster_free(Cluster *c) {
	for (size_t i = 0; i < c->n; i++)
		kube_object_free(c->objs[i], c->pool);
	string_pool_free(c->pool);
	free(c);
}

static void test_no_policy_nothing(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r = compile(c, "n1");
	char *batch;

	assert_int_equal(r->n, 0);
	assert_int_equal(policy_ruleset_render_diff(NULL, r, NULL, NULL, &batch), 0);
	assert_string_equal(batch, "");
	free(batch);
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_default_deny_ingress(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *cls;
	char want[512];

	policy_add(c, "x", "deny", "{\"podSelector\":{}}");
	r = compile(c, "n1");
	/* x/a and x/b live on n1 and are isolated by one class; y/b (n1) is not */
	cls = obj_of(r, "isolated ingress by deny", "-in");
	snprintf(want, sizeof(want), "10.0.1.1 comment \"x/a\" : jump %s | 10.0.1.2 comment \"x/b\" : jump %s", cls,
		 cls);
	assert_items(r, "np-ingress4", want);
	assert_items(r, "np-ingress6", "");
	assert_items(r, "np-egress4", "");
	snprintf(want, sizeof(want),
		 "jump %s comment \"x/deny\" | counter name \"np-cc-%s\" drop comment \"ingress deny, isolated by deny\"",
		 obj_of(r, "x/deny ingress", "-in"), cls + strlen("np-cls-"));
	assert_items(r, cls, want);
	/* the class's deny counter names the policies isolating it */
	snprintf(want, sizeof(want), "np-cc-%s", cls + strlen("np-cls-"));
	assert_items(r, want, "x/deny");
	assert_int_equal(policy_ruleset_find(r, want)->kind, POLICY_OBJ_COUNTER);
	assert_int_equal(policy_ruleset_find(r, want)->rule, -1);
	assert_true(policy_ruleset_find(r, want)->ingress);
	/* no rules: everything to them is dropped */
	assert_items(r, obj_of(r, "x/deny ingress", "-in"), "");
	assert_items(r, "np-ingress",
		     "ct state established,related accept | ip daddr vmap @np-ingress4 | ip6 daddr vmap @np-ingress6");
	policy_ruleset_free(r);

	/* on n2 only x/c is isolated */
	r = compile(c, "n2");
	assert_true(strstr(items(r, "np-ingress4"), "10.0.2.3 comment \"x/c\""));
	assert_null(strstr(items(r, "np-ingress4"), "10.0.2.1"));
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_default_deny_egress(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;

	/* policyTypes [Egress] only: pods are not isolated for ingress */
	policy_add(c, "x", "deny-out",
		   "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}},\"policyTypes\":[\"Egress\"]}");
	r = compile(c, "n1");
	assert_items(r, "np-ingress4", "");
	assert_true(strstr(items(r, "np-egress4"), "10.0.1.1 comment \"x/a\" : jump np-cls-"));
	assert_null(strstr(items(r, "np-egress4"), "10.0.1.2"));
	assert_items(r, "np-egress",
		     "ct state established,related accept | ip saddr vmap @np-egress4 | ip6 saddr vmap @np-egress6");
	assert_items(r, obj_of(r, "x/deny-out egress", "-out"), "");
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_ingress_peers_and_ports(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *chain;
	char want[2048], s4[128], ports[128], c0[64], c1[64];

	/* rule 0: pods b of x, or any pod of namespaces ns in (y), on 80/TCP and 81-83/UDP;
	 * rule 1: pods a of namespace z (both selectors in ONE peer), every port */
	policy_add(c, "x", "allow",
		   "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}},\"ingress\":["
		   "{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}},"
		   "{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"ns\",\"operator\":\"In\",\"values\":[\"y\"]}]}}],"
		   "\"ports\":[{\"port\":80},{\"port\":81,\"endPort\":83,\"protocol\":\"UDP\"},{\"port\":82,\"protocol\":\"UDP\"}]},"
		   "{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"ns\":\"z\"}},"
		   "\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}}]}]}");
	r = compile(c, "n1");
	chain = strdupa(obj_of(r, "x/allow ingress", "-in"));
	snprintf(s4, sizeof(s4), "%s0-peers4", chain);
	snprintf(ports, sizeof(ports), "%s0-ports", chain);
	assert_items(r, s4, "10.0.1.2 | 10.0.1.5 | 10.0.2.1");
	assert_items(r, ports, "tcp . 80 | udp . 81-83");
	snprintf(s4, sizeof(s4), "%s1-peers4", chain);
	assert_items(r, s4, "10.0.2.7");
	snprintf(want, sizeof(want),
		 "ip saddr @%s0-peers4 meta l4proto . th dport @%s0-ports counter name \"%s\" accept comment \"x/allow ingress rule 0\" | "
		 "ip6 saddr @%s0-peers6 meta l4proto . th dport @%s0-ports counter name \"%s\" accept comment \"x/allow ingress rule 0\" | "
		 "ip saddr @%s1-peers4 counter name \"%s\" accept comment \"x/allow ingress rule 1\" | "
		 "ip6 saddr @%s1-peers6 counter name \"%s\" accept comment \"x/allow ingress rule 1\"",
		 chain, chain, ctr(chain, 0, c0), chain, chain, c0, chain, ctr(chain, 1, c1), chain, c1);
	assert_items(r, chain, want);
	/* one counter per rule, shared by its v4 and v6 rules, naming its policy */
	assert_items(r, c0, "x/allow");
	assert_int_equal(policy_ruleset_find(r, c1)->rule, 1);
	assert_true(policy_ruleset_find(r, c1)->ingress);
	/* only x/a is selected */
	assert_null(strstr(items(r, "np-ingress4"), "10.0.1.2"));
	policy_ruleset_free(r);

	/* a label change of namespace y takes y's pods out of rule 0's peers */
	obj_del(c, KUBE_KIND_NAMESPACE, NULL, "y");
	obj_add(c, KUBE_KIND_NAMESPACE, "{\"metadata\":{\"name\":\"y\",\"labels\":{\"ns\":\"other\"}}}");
	r = compile(c, "n1");
	snprintf(s4, sizeof(s4), "%s0-peers4", chain);
	assert_items(r, s4, "10.0.1.2");
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_rules_without_peers_or_ports(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *chain;
	char want[256], c0[64];

	/* one empty rule: from everywhere on every port; one ports-only rule: from everywhere to SCTP 80 */
	policy_add(c, "x", "open", "{\"podSelector\":{},\"ingress\":[{}]}");
	policy_add(c, "x", "sctp",
		   "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"protocol\":\"SCTP\",\"port\":80}]}]}");
	policy_add(c, "x", "tcp-any", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"protocol\":\"TCP\"}]}]}");
	r = compile(c, "n1");
	chain = obj_of(r, "x/open ingress", "-in");
	snprintf(want, sizeof(want), "counter name \"%s\" accept comment \"x/open ingress rule 0\"", ctr(chain, 0, c0));
	assert_items(r, chain, want);
	chain = obj_of(r, "x/sctp ingress", "-in");
	assert_true(strstr(items(r, chain), "meta l4proto . th dport @np-"));
	assert_items(r, obj_of(r, "x/sctp ingress rule 0 ports", "-ports"), "sctp . 80");
	assert_items(r, obj_of(r, "x/tcp-any ingress rule 0 ports", "-ports"), "tcp . 0-65535");
	/* three policies select x/a: one class jumping to all three, in namespace/name order */
	assert_true(strstr(items(r, obj_of(r, "isolated ingress by open sctp tcp-any", "-in")), "\" drop comment"));
	assert_items(r, obj_of(r, "ingress deny, isolated by open sctp tcp-any", ""), "x/open | x/sctp | x/tcp-any");
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_named_ports_rules(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *chain, *named4;
	char want[1024], c0[64];

	policy_add(c, "x", "named", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":\"http\"}]}]}");
	r = compile(c, "n1");
	chain = obj_of(r, "x/named ingress", "-in");
	named4 = obj_of(r, "x/named ingress rule 0 named", "-named4");
	snprintf(want, sizeof(want),
		 "ip daddr . meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/named ingress rule 0\" | "
		 "ip6 daddr . meta l4proto . th dport @%.*s6 counter name \"%s\" accept comment \"x/named ingress rule 0\"",
		 named4, ctr(chain, 0, c0), (int) strlen(named4) - 1, named4, c0);
	assert_items(r, chain, want);
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_egress_ip_block(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *chain;
	char want[1024], peers[128], c0[64], c1[64];

	/* to 10.0.0.0/16 except 10.0.1.0/24 and 10.0.2.7/32, plus the pods of y; and to 192.168.0.0/24
	 * (overlapping the first block's range merges nothing: disjoint) on UDP 53 */
	policy_add(c, "x", "out",
		   "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}},\"policyTypes\":[\"Egress\"],\"egress\":["
		   "{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/16\",\"except\":[\"10.0.1.0/24\",\"10.0.2.7/32\"]}},"
		   "{\"namespaceSelector\":{\"matchLabels\":{\"ns\":\"y\"}}},{\"ipBlock\":{\"cidr\":\"fd00::/64\"}}]},"
		   "{\"to\":[{\"ipBlock\":{\"cidr\":\"192.168.0.0/24\"}}],\"ports\":[{\"port\":53,\"protocol\":\"UDP\"}]}]}");
	r = compile(c, "n1");
	chain = obj_of(r, "x/out egress", "-out");
	/* y/b (10.0.1.5) is inside the except, but a peer by namespace: it is allowed */
	snprintf(peers, sizeof(peers), "%s0-peers4", chain);
	assert_items(r, peers, "10.0.0.0-10.0.0.255 | 10.0.1.5 | 10.0.2.0-10.0.2.6 | 10.0.2.8-10.0.255.255");
	snprintf(peers, sizeof(peers), "%s0-peers6", chain);
	assert_items(r, peers, "fd00::-fd00::ffff:ffff:ffff:ffff");
	snprintf(peers, sizeof(peers), "%s1-peers4", chain);
	assert_items(r, peers, "192.168.0.0-192.168.0.255");
	snprintf(want, sizeof(want),
		 "ip daddr @%s0-peers4 counter name \"%s\" accept comment \"x/out egress rule 0\" | "
		 "ip6 daddr @%s0-peers6 counter name \"%s\" accept comment \"x/out egress rule 0\" | "
		 "ip daddr @%s1-peers4 meta l4proto . th dport @%s1-ports counter name \"%s\" accept comment \"x/out egress rule 1\" | "
		 "ip6 daddr @%s1-peers6 meta l4proto . th dport @%s1-ports counter name \"%s\" accept comment \"x/out egress rule 1\"",
		 chain, ctr(chain, 0, c0), chain, c0, chain, chain, ctr(chain, 1, c1), chain, chain, c1);
	assert_items(r, chain, want);
	assert_true(strstr(items(r, "np-egress4"), "10.0.1.1 comment \"x/a\""));
	assert_items(r, "np-ingress4", "");
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_egress_named_ports(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;

	/* egress named ports resolve against the destination: every pod of the cluster that has it */
	policy_add(c, "x", "dns",
		   "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":\"serve-81-udp\",\"protocol\":\"UDP\"}]}]}");
	r = compile(c, "n1");
	assert_items(r, obj_of(r, "x/dns egress rule 0 named", "-named4"),
		     "10.0.1.1 . udp . 81 | 10.0.1.2 . udp . 81 | 10.0.1.5 . udp . 81 | 10.0.2.1 . udp . 81 | "
		     "10.0.2.3 . udp . 81 | 10.0.2.7 . udp . 81");
	policy_ruleset_free(r);
	cluster_free(c);
}

/* Pods that are not running, have no IP or use the host's network are neither isolated nor peers;
 * a pod whose IP was once another's gets only its own allowances. */
static void test_inactive_and_ip_reuse(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *peers;

	policy_add(c, "x", "from-b",
		   "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}}]}]}");
	obj_add(c, KUBE_KIND_POD,
		"{\"metadata\":{\"namespace\":\"x\",\"name\":\"done\",\"labels\":{\"pod\":\"b\"}},\"spec\":{\"nodeName\":\"n1\"},"
		"\"status\":{\"phase\":\"Succeeded\",\"podIPs\":[{\"ip\":\"10.0.1.9\"}]}}");
	obj_add(c, KUBE_KIND_POD,
		"{\"metadata\":{\"namespace\":\"x\",\"name\":\"host\",\"labels\":{\"pod\":\"b\"}},\"spec\":{\"nodeName\":\"n1\",\"hostNetwork\":true},"
		"\"status\":{\"phase\":\"Running\",\"podIPs\":[{\"ip\":\"192.0.2.1\"}]}}");
	/* x/new holds 10.0.1.9 now, which x/done (a b) held: it is not a b */
	obj_add(c, KUBE_KIND_POD,
		"{\"metadata\":{\"namespace\":\"x\",\"name\":\"new\",\"labels\":{\"pod\":\"c\"}},\"spec\":{\"nodeName\":\"n1\"},"
		"\"status\":{\"phase\":\"Pending\",\"podIPs\":[{\"ip\":\"10.0.1.9\"}]}}");
	r = compile(c, "n1");
	peers = obj_of(r, "x/from-b ingress rule 0 peers", "-peers4");
	assert_items(r, peers, "10.0.1.2");
	assert_null(strstr(items(r, "np-ingress4"), "192.0.2.1"));
	assert_true(strstr(items(r, "np-ingress4"), "10.0.1.9 comment \"x/new\""));
	policy_ruleset_free(r);
	cluster_free(c);
}

/* A change renders as a batch of exactly what differs. */
static void test_diff(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *a, *b;
	char *batch;

	policy_add(c, "x", "from-b",
		   "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}}]}]}");
	a = compile(c, "n1");
	/* nothing changed: nothing to do */
	b = compile(c, "n1");
	assert_int_equal(policy_ruleset_render_diff(a, b, NULL, NULL, &batch), 0);
	assert_string_equal(batch, "");
	free(batch);
	policy_ruleset_free(b);

	/* a new b pod elsewhere: one element added, nothing else */
	pod_add(c, "x", "b2", "n2", "10.0.2.9", "{\"pod\":\"b\"}");
	b = compile(c, "n1");
	assert_int_equal(policy_ruleset_render_diff(a, b, NULL, NULL, &batch), 0);
	{
		char want[256];

		snprintf(want, sizeof(want), "add table inet weft\nadd element inet weft %s { 10.0.2.9 }\n",
			 obj_of(b, "x/from-b ingress rule 0 peers", "-peers4"));
		assert_string_equal(batch, want);
	}
	free(batch);
	policy_ruleset_free(a);
	a = b;

	/* a new pod on this node: one vmap element */
	pod_add(c, "x", "d", "n1", "10.0.1.10", "{\"pod\":\"d\"}");
	b = compile(c, "n1");
	assert_int_equal(policy_ruleset_render_diff(a, b, NULL, NULL, &batch), 0);
	assert_non_null(strstr(batch, "add element inet weft np-ingress4 { 10.0.1.10 comment \"x/d\" : jump np-cls-"));
	assert_null(strstr(batch, "delete"));
	assert_null(strstr(batch, "flush"));
	assert_null(strstr(batch, "add rule"));
	free(batch);
	policy_ruleset_free(a);
	a = b;

	/* the last policy goes: everything of ours goes, and nothing remains to delete after */
	obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "from-b");
	b = compile(c, "n1");
	assert_int_equal(b->n, 0);
	assert_int_equal(policy_ruleset_render_diff(a, b, NULL, NULL, &batch), 0);
	assert_non_null(strstr(batch, "delete chain inet weft np-ingress\n"));
	assert_non_null(strstr(batch, "delete map inet weft np-ingress4\n"));
	free(batch);
	policy_ruleset_free(a);
	policy_ruleset_free(b);
	cluster_free(c);
}

/* Counters come and go with their policy in its batch: added before the rules naming them, deleted
 * after the chains that named them are emptied. */
static void test_counter_diff(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *a, *b;
	const char *add_ctr, *add_rule, *del_ctr, *flush;
	char *batch, name[64];

	policy_add(c, "x", "deny", "{\"podSelector\":{}}");
	a = compile(c, "n1");
	policy_add(c, "x", "web", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":80}]}]}");
	b = compile(c, "n1");
	assert_int_equal(policy_ruleset_render_diff(a, b, NULL, NULL, &batch), 0);
	ctr(obj_of(b, "x/web ingress", "-in"), 0, name);
	add_ctr = strstr(batch, "add counter inet weft np-c-");
	add_rule = strstr(batch, name);
	assert_non_null(add_ctr);
	assert_non_null(strstr(add_ctr, "{ comment \"x/web ingress rule 0\"; }"));
	assert_non_null(add_rule);
	assert_true(add_ctr < add_rule);
	/* the class changed (deny, web): a new deny counter, the old one goes */
	assert_non_null(strstr(batch, "add counter inet weft np-cc-"));
	assert_non_null(strstr(batch, "delete counter inet weft np-cc-"));
	free(batch);

	assert_int_equal(policy_ruleset_render_diff(b, a, NULL, NULL, &batch), 0);
	snprintf(name, sizeof(name), "delete counter inet weft np-c-%s0\n", obj_of(b, "x/web ingress", "-in") + 3);
	del_ctr = strstr(batch, name);
	flush = strstr(batch, "flush chain inet weft np-cls-");
	assert_non_null(del_ctr);
	assert_non_null(flush);
	assert_true(flush < del_ctr);
	free(batch);
	policy_ruleset_free(a);
	policy_ruleset_free(b);
	cluster_free(c);
}

/* An NFULNL_MSG_PACKET as the kernel sends it for the drop log. */
static size_t nflog_msg(char *buf, const char *prefix, const uint8_t *payload, size_t len) {
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *g;
	struct nfulnl_msg_packet_hdr ph = { .hw_protocol = htons(0x0800), .hook = 2 };

	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->nfgen_family = AF_INET;
	g->res_id = htons(30565);
	mnl_attr_put(nlh, NFULA_PACKET_HDR, sizeof(ph), &ph);
	if (prefix)
		mnl_attr_put_strz(nlh, NFULA_PREFIX, prefix);
	mnl_attr_put(nlh, NFULA_PAYLOAD, len, payload);
	return nlh->nlmsg_len;
}

static void test_drop_parse(void **state) {
	/* 10.244.1.5:40112 -> 10.244.2.7:80, TCP SYN (IPv4 header of 20 bytes, then the ports) */
	static const uint8_t v4[] = { 0x45, 0, 0,  60,  0, 0, 0x40, 0,    64, 6,  0, 0, 10, 244,
				      1,    5, 10, 244, 2, 7, 0x9c, 0xb0, 0,  80, 0, 0, 0,  0 };
	static const uint8_t v6[48] = {
		0x60, 0,        0,           0,        0,           8,           17,       64,
		0xfd, [23] = 1, [24] = 0xfd, [39] = 2, [40] = 0x30, [41] = 0x39, [42] = 0, [43] = 53
	};
	char buf[512], *flow = NULL;
	PolicyDrop d;
	size_t n;

	n = nflog_msg(buf, "weft-np y ingress deny by deny-all: #0123456789ab-in", v4, sizeof(v4));
	assert_int_equal(policy_drop_parse(buf, n, &d), 0);
	assert_string_equal(d.tag, "0123456789ab-in");
	assert_true(d.ingress);
	assert_int_equal(d.proto, 6);
	assert_int_equal(policy_drop_format_flow(&d, &flow), 0);
	assert_string_equal(flow, "ingress 10.244.1.5:40112 -> 10.244.2.7:80/TCP");
	free(flow);

	n = nflog_msg(buf, "weft-np y egress deny by a b ...: #0123456789ab-out", v6, sizeof(v6));
	assert_int_equal(policy_drop_parse(buf, n, &d), 0);
	assert_false(d.ingress);
	assert_int_equal(policy_drop_format_flow(&d, &flow), 0);
	assert_string_equal(flow, "egress [fd00::1]:12345 -> [fd00::2]:53/UDP");
	free(flow);

	/* not ours, no tag, a short tag, no prefix, a truncated header: refused */
	n = nflog_msg(buf, "other: #0123456789ab-in", v4, sizeof(v4));
	assert_int_equal(policy_drop_parse(buf, n, &d), -EBADMSG);
	n = nflog_msg(buf, "weft-np y ingress deny by x: ", v4, sizeof(v4));
	assert_int_equal(policy_drop_parse(buf, n, &d), -EBADMSG);
	n = nflog_msg(buf, "weft-np y ingress deny by x: #0123-in", v4, sizeof(v4));
	assert_int_equal(policy_drop_parse(buf, n, &d), -EBADMSG);
	n = nflog_msg(buf, NULL, v4, sizeof(v4));
	assert_int_equal(policy_drop_parse(buf, n, &d), -EBADMSG);
	n = nflog_msg(buf, "weft-np y ingress deny by x: #0123456789ab-in", v4, 12);
	assert_int_equal(policy_drop_parse(buf, n, &d), -EBADMSG);
	/* headers without the ports (a short copy): the addresses still */
	n = nflog_msg(buf, "weft-np y ingress deny by x: #0123456789ab-in", v4, 20);
	assert_int_equal(policy_drop_parse(buf, n, &d), 0);
	assert_false(d.has_ports);
	/* a message cut short */
	n = nflog_msg(buf, "weft-np y ingress deny by x: #0123456789ab-in", v4, sizeof(v4));
	assert_int_equal(policy_drop_parse(buf, n - 8, &d), -EBADMSG);
}

/* Objects grow with pods + policies, not their product: 100 namespaces x 10 pods, 1 to 10 policies
 * per namespace each selecting every pod of its namespace. */
static void test_linear(void **state) {
	size_t sizes[3];

	for (int round = 0; round < 3; round++) {
		unsigned per_ns = round == 0 ? 1 : round == 1 ? 5 : 10;
		Cluster *c = calloc(1, sizeof(Cluster));
		PolicyRuleset *r;

		assert_int_equal(string_pool_new(&c->pool), 0);
		for (unsigned n = 0; n < 100; n++) {
			char ns[16];

			snprintf(ns, sizeof(ns), "ns%u", n);
			ns_add(c, ns);
			for (unsigned p = 0; p < 10; p++) {
				char name[16], ip[32];

				snprintf(name, sizeof(name), "p%u", p);
				snprintf(ip, sizeof(ip), "10.1.%u.%u", n, p + 1);
				pod_add(c, ns, name, p % 2 ? "n1" : "n2", ip, "{\"app\":\"web\"}");
			}
			for (unsigned k = 0; k < per_ns; k++) {
				char name[16];

				snprintf(name, sizeof(name), "pol%u", k);
				policy_add(c, ns, name,
					   "{\"podSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"ingress\":[{\"from\":[{\"podSelector\":{}}],\"ports\":[{\"port\":80}]}]}");
			}
		}
		r = compile(c, "n1");
		sizes[round] = policy_ruleset_size(r, NULL, NULL);
		printf("# %u policies, 1000 pods (500 on the node): %zu objects, %zu rules+elements\n", per_ns * 100,
		       r->n, sizes[round]);
		policy_ruleset_free(r);
		cluster_free(c);
	}
	/* each policy adds its chain's 2 rules, 2 peer sets of 10 pods and a ports element: ~ +23 */
	assert_true(sizes[2] - sizes[1] <= 2 * (sizes[1] - sizes[0]));
	assert_true(sizes[2] < 30 * 1000 + 2000);
}

/* ---- the kernel takes every batch, and ends up holding what was compiled ---- */

static bool in_netns;

static int count_in_kernel(NftCtx *nft, const char *what, const char *name) {
	char cmd[256];
	json_t *j = NULL, *it;
	size_t i;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "list %s inet weft %s", what, name);
	if (nft_list_json(nft, cmd, &j) < 0)
		return -1;
	json_array_foreach(json_object_get(j, "nftables"), i, it) {
		if (json_object_get(it, "rule"))
			n++;
		else if (json_object_get(it, what))
			n += (int) json_array_size(json_object_get(json_object_get(it, what), "elem"));
	}
	json_decref(j);
	return n;
}

static void expect_kernel(NftCtx *nft, const PolicyRuleset *r) {
	for (size_t i = 0; i < r->n; i++) {
		const PolicyObject *o = &r->objs[i];
		int n;

		if (o->kind == POLICY_OBJ_COUNTER) {
			if (count_in_kernel(nft, "counter", o->name) < 0)
				fail_msg("%s: not in the kernel", o->name);
			continue;
		}
		n = count_in_kernel(nft,
				    o->kind == POLICY_OBJ_SET   ? "set"
				    : o->kind == POLICY_OBJ_MAP ? "map"
								: "chain",
				    o->name);

		if (n != (int) o->n_items)
			fail_msg("%s: %d in the kernel, %zu compiled", o->name, n, o->n_items);
	}
}

static void count_counter(const char *name, uint64_t packets, void *userdata) {
	(*(size_t *) userdata)++;
}

static bool check_each_object = true; /* one listing per object: too slow for the scale test */

static void apply(NftCtx *nft, const PolicyRuleset *old, const PolicyRuleset *new, char *const *stale_c,
		  char *const *stale_s) {
	char *batch, *err = NULL;
	int r;

	assert_int_equal(policy_ruleset_render_diff(old, new, stale_c, stale_s, &batch), 0);
	if (batch[0]) {
		r = nft_apply(nft, batch, &err);
		if (r < 0) {
			FILE *dump = fopen("/tmp/policy-batch.nft", "w");

			if (dump) {
				fputs(batch, dump);
				fclose(dump);
			}
			fail_msg("nft refused (%d): %s (batch in /tmp/policy-batch.nft)", r, err ?: "");
		}
	}
	free(batch);
	if (check_each_object)
		expect_kernel(nft, new);
}

/* Rules in table inet weft, from one listing. */
static size_t kernel_rules(NftCtx *nft) {
	json_t *j = NULL, *it;
	size_t i, n = 0;

	assert_int_equal(nft_list_json(nft, "list table inet weft", &j), 0);
	json_array_foreach(json_object_get(j, "nftables"), i, it)
		if (json_object_get(it, "rule"))
			n++;
	json_decref(j);
	return n;
}

static void test_kernel(void **state) {
	Cluster *c;
	NftCtx *nft = NULL;
	PolicyRuleset *a, *b, *e;

	if (!in_netns)
		skip();
	assert_int_equal(nft_ctx_open(&nft), 0);
	c = cluster_new();
	e = compile(c, "n1");
	policy_add(c, "x", "allow",
		   "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}},\"ingress\":["
		   "{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}},{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\",\"except\":[\"10.0.2.0/24\"]}}],"
		   "\"ports\":[{\"port\":80},{\"port\":81,\"endPort\":90,\"protocol\":\"UDP\"},{\"port\":\"http\"},{\"protocol\":\"SCTP\",\"port\":80}]}],"
		   "\"egress\":[{\"to\":[{\"namespaceSelector\":{}}]}]}");
	policy_add(c, "x", "deny", "{\"podSelector\":{}}");
	a = compile(c, "n1");
	{
		/* the drop log, off by default, names the namespace and the policies isolating the pod */
		PolicyRuleset *l;
		const KubePod *pods[64];
		const KubeNamespace *nss[64];
		const KubeNetworkPolicy *pols[64];
		PolicyInput in = { .node = "n1", .pods = pods, .namespaces = nss, .policies = pols, .log_drops = true };

		for (size_t i = 0; i < c->n; i++) {
			if (KUBE_POD(c->objs[i]))
				pods[in.n_pods++] = KUBE_POD(c->objs[i]);
			else if (KUBE_NAMESPACE(c->objs[i]))
				nss[in.n_namespaces++] = KUBE_NAMESPACE(c->objs[i]);
			else if (KUBE_NETWORK_POLICY(c->objs[i]))
				pols[in.n_policies++] = KUBE_NETWORK_POLICY(c->objs[i]);
		}
		assert_int_equal(policy_compile(&in, &l), 0);
		assert_non_null(strstr(
				items(l, obj_of(l, "isolated ingress by allow deny", "-in")),
				"limit rate 50/second burst 20 packets log prefix \"weft-np x ingress deny by allow deny: \" | "
				"counter name \"np-cc-"));
		assert_null(strstr(items(a, obj_of(a, "isolated ingress by allow deny", "-in")), "log"));
		apply(nft, NULL, l, NULL, NULL); /* start-up: one batch; the kernel takes the log rule */
		apply(nft, l, a, NULL, NULL);    /* and a change of that option is a diff like any other */
		policy_ruleset_free(l);

		/* to nfnetlink_log: the prefix ends in the class's tag, weftd's key to its policies */
		in.log_nflog = true;
		in.log_group = 30565;
		assert_int_equal(policy_compile(&in, &l), 0);
		{
			const char *cls = obj_of(l, "isolated ingress by allow deny", "-in");
			char want[256];

			snprintf(want, sizeof(want),
				 "limit rate 50/second burst 20 packets log prefix \"weft-np x ingress deny by allow "
				 "deny: #%s\" group 30565 | counter name \"np-cc-%s\" drop",
				 cls + strlen("np-cls-"), cls + strlen("np-cls-"));
			assert_non_null(strstr(items(l, cls), want));
		}
		apply(nft, a, l, NULL, NULL); /* the kernel takes it (log group) */
		apply(nft, l, a, NULL, NULL);
		policy_ruleset_free(l);
	}

	/* churn: pods, labels, policies; every diff applies and leaves what was compiled */
	pod_add(c, "x", "d", "n1", "10.0.1.20", "{\"pod\":\"a\"}");
	b = compile(c, "n1");
	apply(nft, a, b, NULL, NULL);
	policy_ruleset_free(a);
	a = b;
	obj_del(c, KUBE_KIND_POD, "x", "d");
	pod_add(c, "x", "d", "n1", "10.0.1.20", "{\"pod\":\"b\"}"); /* label change: other class */
	b = compile(c, "n1");
	apply(nft, a, b, NULL, NULL);
	policy_ruleset_free(a);
	a = b;
	obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "deny");
	b = compile(c, "n1");
	apply(nft, a, b, NULL, NULL);

	/* a restart: weftd knows nothing, the kernel holds b; the start-up batch with b's names as stale
	 * yields c's compilation after a policy change */
	{
		char *chains[64], *sets[64];
		size_t nc = 0, ns = 0;
		PolicyRuleset *d;

		for (size_t i = 0; i < b->n; i++)
			if (b->objs[i].kind == POLICY_OBJ_CHAIN)
				chains[nc++] = b->objs[i].name;
			else
				sets[ns++] = b->objs[i].name;
		chains[nc] = sets[ns] = NULL;
		obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "allow");
		policy_add(c, "y", "deny", "{\"podSelector\":{}}");
		d = compile(c, "n1");
		apply(nft, NULL, d, chains, sets);
		/* nothing of x/allow left, its counters neither */
		assert_int_equal(count_in_kernel(nft, "chain", obj_of(b, "x/allow ingress", "-in")), -1);
		assert_int_equal(count_in_kernel(nft, "counter", obj_of(b, "x/allow ingress rule 0", "-in0")), -1);
		/* and everything goes */
		apply(nft, d, e, NULL, NULL);
		assert_int_equal(count_in_kernel(nft, "map", "np-ingress4"), -1);
		{
			json_t *j = NULL, *it;
			size_t i, n = 0;

			assert_int_equal(nft_list_json(nft, "list counters table inet weft", &j), 0);
			json_array_foreach(json_object_get(j, "nftables"), i, it)
				n += json_object_get(it, "counter") != NULL;
			json_decref(j);
			assert_int_equal(n, 0);
		}
		policy_ruleset_free(d);
	}
	policy_ruleset_free(a);
	policy_ruleset_free(b);
	policy_ruleset_free(e);
	cluster_free(c);
	nft_ctx_free(nft);
}

static double now_ms(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* 1,000 pods (500 on this node) and 1,000 policies (10 per namespace, each with a peer selector
 * and a port): the start-up batch, then one more policy and one more pod, each compiled from
 * scratch, diffed and applied. Prints "# bench" lines; the only assertion is that the kernel holds
 * what was compiled. */
static void test_scale_kernel(void **state) {
	Cluster *c = calloc(1, sizeof(Cluster));
	NftCtx *nft = NULL;
	PolicyRuleset *a, *b;
	size_t rules, els;
	double t0, t1, t2;

	if (!in_netns)
		skip();
	check_each_object = false;
	assert_int_equal(nft_ctx_open(&nft), 0);
	assert_int_equal(string_pool_new(&c->pool), 0);
	for (unsigned n = 0; n < 100; n++) {
		char ns[16];

		snprintf(ns, sizeof(ns), "ns%u", n);
		ns_add(c, ns);
		for (unsigned p = 0; p < 10; p++) {
			char name[16], ip[32], labels[64];

			snprintf(name, sizeof(name), "p%u", p);
			snprintf(ip, sizeof(ip), "10.1.%u.%u", n, p + 1);
			snprintf(labels, sizeof(labels), "{\"app\":\"a%u\",\"tier\":\"t%u\"}", p % 5, p % 2);
			pod_add(c, ns, name, p % 2 ? "n1" : "n2", ip, labels);
		}
		for (unsigned k = 0; k < 10; k++) {
			char name[16], spec[512];

			snprintf(name, sizeof(name), "pol%u", k);
			snprintf(spec, sizeof(spec),
				 "{\"podSelector\":{\"matchLabels\":{\"app\":\"a%u\"}},\"ingress\":[{\"from\":[{\"podSelector\":"
				 "{\"matchLabels\":{\"tier\":\"t%u\"}}},{\"namespaceSelector\":{\"matchLabels\":{\"ns\":\"ns%u\"}}}],"
				 "\"ports\":[{\"port\":%u}]}]}",
				 k % 5, k % 2, (n + 1) % 100, 80 + k);
			policy_add(c, ns, name, spec);
		}
	}
	t0 = now_ms();
	a = compile(c, "n1");
	t1 = now_ms();
	printf("# bench: compiled in %.1f ms\n", t1 - t0);
	fflush(stdout);
	apply(nft, NULL, a, NULL, NULL);
	t2 = now_ms();
	policy_ruleset_size(a, &rules, &els);
	printf("# bench: 1000 pods (500 here), 1000 policies: %zu objects, %zu rules, %zu elements; "
	       "compile %.1f ms, start-up batch %.1f ms\n",
	       a->n, rules, els, t1 - t0, t2 - t1);
	policy_add(c, "ns7", "new", "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{}}]}]}");
	t0 = now_ms();
	b = compile(c, "n1");
	t1 = now_ms();
	apply(nft, a, b, NULL, NULL);
	t2 = now_ms();
	printf("# bench: one more policy: compile %.1f ms, diff + apply %.1f ms\n", t1 - t0, t2 - t1);
	policy_ruleset_free(a);
	a = b;
	pod_add(c, "ns7", "late", "n1", "10.1.7.99", "{\"app\":\"a1\",\"tier\":\"t1\"}");
	t0 = now_ms();
	b = compile(c, "n1");
	t1 = now_ms();
	apply(nft, a, b, NULL, NULL);
	t2 = now_ms();
	printf("# bench: one more pod: compile %.1f ms, diff + apply %.1f ms\n", t1 - t0, t2 - t1);
	policy_ruleset_size(b, &rules, NULL);
	assert_int_equal(kernel_rules(nft), rules);
	{
		/* what /metrics costs: weftd's one netlink dump of the counter objects, against one
		 * libnftables listing of them, and one listing per chain (before the named counters;
		 * timed over 100 chains and scaled) */
		size_t n_ctr = 0, n_chains = 0, timed = 0, n_dumped = 0, i;
		double t_dump, t_list;
		json_t *j = NULL, *it;
		char cmd[128];

		for (size_t k = 0; k < b->n; k++) {
			n_ctr += b->objs[k].kind == POLICY_OBJ_COUNTER;
			n_chains += b->objs[k].kind == POLICY_OBJ_CHAIN;
		}
		t0 = now_ms();
		assert_int_equal(policy_counters_dump(count_counter, &n_dumped), 0);
		t1 = now_ms();
		t_dump = t1 - t0;
		assert_int_equal(n_dumped, n_ctr); /* the kernel holds every compiled counter, and no other */
		assert_int_equal(nft_list_json(nft, "list counters table inet weft", &j), 0);
		t2 = now_ms();
		t_list = t2 - t1;
		json_array_foreach(json_object_get(j, "nftables"), i, it)
			n_dumped -= json_object_get(it, "counter") != NULL;
		json_decref(j);
		assert_int_equal(n_dumped, 0);
		t0 = now_ms();
		for (size_t k = 0; k < b->n && timed < 100; k++) {
			if (b->objs[k].kind != POLICY_OBJ_CHAIN)
				continue;
			snprintf(cmd, sizeof(cmd), "list chain inet weft %s", b->objs[k].name);
			assert_int_equal(nft_list_json(nft, cmd, &j), 0);
			json_decref(j);
			timed++;
		}
		t1 = now_ms();
		printf("# bench: /metrics, %zu counters: one netlink dump %.1f ms; one libnftables listing %.1f ms; "
		       "one listing per chain ~%.0f ms (%zu chains)\n",
		       n_ctr, t_dump, t_list, (t1 - t0) / (double) timed * (double) n_chains, n_chains);
	}
	policy_ruleset_free(a);
	policy_ruleset_free(b);
	cluster_free(c);
	nft_ctx_free(nft);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_policy_nothing),
		cmocka_unit_test(test_default_deny_ingress),
		cmocka_unit_test(test_default_deny_egress),
		cmocka_unit_test(test_ingress_peers_and_ports),
		cmocka_unit_test(test_rules_without_peers_or_ports),
		cmocka_unit_test(test_named_ports_rules),
		cmocka_unit_test(test_egress_ip_block),
		cmocka_unit_test(test_egress_named_ports),
		cmocka_unit_test(test_inactive_and_ip_reuse),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_counter_diff),
		cmocka_unit_test(test_drop_parse),
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_scale_kernel),
	};

	in_netns = geteuid() == 0 && unshare(CLONE_NEWNET) == 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
