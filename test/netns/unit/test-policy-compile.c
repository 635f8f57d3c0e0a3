/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NetworkPolicy objects in, nftables objects out (policy-compile.h), for ingress and egress: which
 * pods are isolated and by which class chain, what each rule's peer, port and named-port sets hold
 * (pod selectors, namespace selectors, both in one peer, ipBlock with except, endPort, named ports
 * resolved per destination pod, SCTP), that objects stay linear in pods + policies, that rules
 * needing the same set share one (named by its selector, also when the names' hashes collide), and
 * that a change renders as a batch touching only what changed. When run as root the batches are
 * applied to a private network namespace's nftables, start-up batch first, then each diff, and the
 * kernel's listing of the table is compared with the compiled objects.
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
#include "../../unit/test-kube-helpers.h"

typedef struct Cluster {
	StringPool *pool;
	KubeObject *objs[4096];
	size_t n;
} Cluster;

/* policy_ruleset_render_diff() as text (caller frees). */
static int render_diff(const PolicyRuleset *old, const PolicyRuleset *new, char *const *stale_chains,
		       char *const *stale_sets, char **ret) {
	NftBatch b;
	int r = nft_batch_begin(&b);

	if (r >= 0)
		r = policy_ruleset_render_diff(old, new, stale_chains, stale_sets, &b);
	if (r >= 0)
		r = nft_batch_finish(&b);
	if (r < 0) {
		nft_batch_done(&b);
		return r;
	}
	*ret = nft_batch_steal(&b);
	return 0;
}
static void obj_add(Cluster *c, KubeKind kind, const char *fmt, ...) _printf_(3, 4);
static void obj_add(Cluster *c, KubeKind kind, const char *fmt, ...) {
	va_list ap;

	va_start(ap, fmt);
	c->objs[c->n++] = test_kube_vdecode(c->pool, kind, fmt, ap);
	va_end(ap);
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

/* bits: PolicyInput.set_hash_bits (0: full hashes) */
static PolicyRuleset *compile_hashed(Cluster *c, const char *node, unsigned bits) {
	const KubePod *pods[4096];
	const KubeNamespace *nss[4096];
	const KubeNetworkPolicy *pols[4096];
	PolicyInput in = { .node = node, .pods = pods, .namespaces = nss, .policies = pols, .set_hash_bits = bits };
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

static PolicyRuleset *compile(Cluster *c, const char *node) {
	return compile_hashed(c, node, 0);
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

/* The n-th set (from 0) that rule `rule` of `chain` refers to ("@name"), "-" if none; the name is
 * checked to be a shared set's: np-p-<16 hex>{4,6}, np-pt-<16 hex> or np-n-<16 hex>{4,6}. */
static const char *set_ref(const PolicyRuleset *r, const char *chain, size_t rule, int n, char buf[static 128]) {
	const PolicyObject *o = policy_ruleset_find(r, chain);
	const char *at, *h;
	size_t len;

	strcpy(buf, "-");
	if (!o || rule >= o->n_items)
		return buf;
	at = o->items[rule];
	for (int i = 0; i <= n; i++) {
		at = strchr(at, '@');
		if (!at)
			return buf;
		at++;
	}
	len = strcspn(at, " ");
	assert_true(len < 128);
	memcpy(buf, at, len);
	buf[len] = 0;
	h = startswith(buf, "np-pt-") ?: startswith(buf, "np-p-") ?: startswith(buf, "np-n-");
	assert_non_null(h);
	assert_true(strspn(h, "0123456789abcdef") >= 16); /* then the family, a digit too */
	assert_true(streq(h + 16, "") || streq(h + 16, "4") || streq(h + 16, "6"));
	assert_int_equal(policy_ruleset_find(r, buf)->kind, POLICY_OBJ_SET);
	return buf;
}

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
	assert_int_equal(render_diff(NULL, r, NULL, NULL, &batch), 0);
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
	char want[2048], s4[128], s6[128], ports[128], t4[128], t6[128], c0[64], c1[64];

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
	set_ref(r, chain, 0, 0, s4);
	set_ref(r, chain, 0, 1, ports);
	set_ref(r, chain, 1, 0, s6);
	set_ref(r, chain, 2, 0, t4);
	set_ref(r, chain, 3, 0, t6);
	assert_items(r, s4, "10.0.1.2 | 10.0.1.5 | 10.0.2.1");
	assert_items(r, s6, "");
	assert_items(r, ports, "tcp . 80 | udp . 81-83");
	assert_items(r, t4, "10.0.2.7");
	assert_items(r, t6, "");
	/* a set's comment is what it holds (its name is a hash of that) */
	assert_string_equal(
			policy_ruleset_find(r, s4)->decl,
			"{ type ipv4_addr; flags interval; comment \"peers4: pods ns=x sel=pod in (b); pods nss=ns in "
			"(y) sel=*\"; }");
	assert_string_equal(
			policy_ruleset_find(r, ports)->decl,
			"{ type inet_proto . inet_service; flags interval; comment \"ports: tcp . 80,udp . 81-83\"; }");
	/* the v6 sets differ from the v4 ones, rule 1's from rule 0's */
	assert_string_not_equal(s4, s6);
	assert_string_not_equal(s4, t4);
	assert_string_not_equal(s6, t6);
	snprintf(want, sizeof(want),
		 "ip saddr @%s meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/allow ingress rule 0\" | "
		 "ip6 saddr @%s meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/allow ingress rule 0\" | "
		 "ip saddr @%s counter name \"%s\" accept comment \"x/allow ingress rule 1\" | "
		 "ip6 saddr @%s counter name \"%s\" accept comment \"x/allow ingress rule 1\"",
		 s4, ports, ctr(chain, 0, c0), s6, ports, c0, t4, ctr(chain, 1, c1), t6, c1);
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
	assert_items(r, s4, "10.0.1.2"); /* the same set (named by selector): other elements */
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
	assert_true(strstr(items(r, chain), "meta l4proto . th dport @np-pt-"));
	assert_items(r, set_ref(r, chain, 0, 0, want), "sctp . 80");
	assert_items(r, set_ref(r, obj_of(r, "x/tcp-any ingress", "-in"), 0, 0, want), "tcp . 0-65535");
	/* three policies select x/a: one class jumping to all three, in namespace/name order */
	assert_true(strstr(items(r, obj_of(r, "isolated ingress by open sctp tcp-any", "-in")), "\" drop comment"));
	assert_items(r, obj_of(r, "ingress deny, isolated by open sctp tcp-any", ""), "x/open | x/sctp | x/tcp-any");
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_named_ports_rules(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *chain;
	char want[1024], c0[64], named4[128], named6[128];

	policy_add(c, "x", "named", "{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"port\":\"http\"}]}]}");
	r = compile(c, "n1");
	chain = obj_of(r, "x/named ingress", "-in");
	set_ref(r, chain, 0, 0, named4);
	set_ref(r, chain, 1, 0, named6);
	assert_true(startswith(named4, "np-n-") && endswith(named4, "4"));
	assert_true(startswith(named6, "np-n-") && endswith(named6, "6"));
	/* the selected pods of this node: x/a (8081), x/b (8081) */
	assert_items(r, named4, "10.0.1.1 . tcp . 8081 | 10.0.1.2 . tcp . 8081");
	assert_string_equal(
			policy_ruleset_find(r, named4)->decl,
			"{ type ipv4_addr . inet_proto . inet_service; comment \"named4 in ns=x sel=*: tcp/http\"; }");
	snprintf(want, sizeof(want),
		 "ip daddr . meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/named ingress rule 0\" | "
		 "ip6 daddr . meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/named ingress rule 0\"",
		 named4, ctr(chain, 0, c0), named6, c0);
	assert_items(r, chain, want);
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_egress_ip_block(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	const char *chain;
	char want[2048], p4[128], p6[128], q4[128], q6[128], ports[128], c0[64], c1[64];

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
	set_ref(r, chain, 0, 0, p4);
	set_ref(r, chain, 1, 0, p6);
	set_ref(r, chain, 2, 0, q4);
	set_ref(r, chain, 2, 1, ports);
	set_ref(r, chain, 3, 0, q6);
	assert_items(r, p4, "10.0.0.0-10.0.0.255 | 10.0.1.5 | 10.0.2.0-10.0.2.6 | 10.0.2.8-10.0.255.255");
	assert_items(r, p6, "fd00::-fd00::ffff:ffff:ffff:ffff");
	assert_items(r, q4, "192.168.0.0-192.168.0.255");
	assert_items(r, q6, "");
	assert_items(r, ports, "udp . 53");
	/* a family's key holds only that family's blocks */
	assert_non_null(strstr(
			policy_ruleset_find(r, p4)->decl,
			"comment \"peers4: block 10.0.0.0/16 except 10.0.1.0/24,10.0.2.7/32; pods nss=ns in (y) sel=*\""));
	assert_non_null(strstr(policy_ruleset_find(r, p6)->decl,
			       "comment \"peers6: block fd00::/64; pods nss=ns in (y) sel=*\""));
	snprintf(want, sizeof(want),
		 "ip daddr @%s counter name \"%s\" accept comment \"x/out egress rule 0\" | "
		 "ip6 daddr @%s counter name \"%s\" accept comment \"x/out egress rule 0\" | "
		 "ip daddr @%s meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/out egress rule 1\" | "
		 "ip6 daddr @%s meta l4proto . th dport @%s counter name \"%s\" accept comment \"x/out egress rule 1\"",
		 p4, ctr(chain, 0, c0), p6, c0, q4, ports, ctr(chain, 1, c1), q6, ports, c1);
	assert_items(r, chain, want);
	assert_true(strstr(items(r, "np-egress4"), "10.0.1.1 comment \"x/a\""));
	assert_items(r, "np-ingress4", "");
	policy_ruleset_free(r);
	cluster_free(c);
}

static void test_egress_named_ports(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	char named4[128];

	/* egress named ports resolve against the destination: every pod of the cluster that has it */
	policy_add(c, "x", "dns",
		   "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":\"serve-81-udp\",\"protocol\":\"UDP\"}]}]}");
	r = compile(c, "n1");
	assert_items(r, set_ref(r, obj_of(r, "x/dns egress", "-out"), 0, 0, named4),
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
	char peers[128];

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
	assert_items(r, set_ref(r, obj_of(r, "x/from-b ingress", "-in"), 0, 0, peers), "10.0.1.2");
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
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	assert_string_equal(batch, "");
	free(batch);
	policy_ruleset_free(b);

	/* a new b pod elsewhere: one element added, nothing else */
	pod_add(c, "x", "b2", "n2", "10.0.2.9", "{\"pod\":\"b\"}");
	b = compile(c, "n1");
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	{
		char want[256], peers[128];

		snprintf(want, sizeof(want), "add table inet weft\nadd element inet weft %s { 10.0.2.9 }\n",
			 set_ref(b, obj_of(b, "x/from-b ingress", "-in"), 0, 0, peers));
		assert_string_equal(batch, want);
	}
	free(batch);
	policy_ruleset_free(a);
	a = b;

	/* a new pod on this node: one vmap element */
	pod_add(c, "x", "d", "n1", "10.0.1.10", "{\"pod\":\"d\"}");
	b = compile(c, "n1");
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
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
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
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
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
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

	assert_int_equal(render_diff(b, a, NULL, NULL, &batch), 0);
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

/* Sets of the same content are one object: policies (and directions) whose rules have the same
 * peers, ports or named ports refer to one set, named by its selector. */
static size_t n_named(const PolicyRuleset *r, const char *name) {
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += streq(r->objs[i].name, name);
	return n;
}

static void assert_unique_names(const PolicyRuleset *r) {
	for (size_t i = 1; i < r->n; i++)
		if (streq(r->objs[i - 1].name, r->objs[i].name))
			fail_msg("%s twice", r->objs[i].name);
}

static size_t n_sets(const PolicyRuleset *r, size_t *ret_elements) {
	size_t n = 0, els = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->objs[i].kind == POLICY_OBJ_SET) {
			n++;
			els += r->objs[i].n_items;
		}
	if (ret_elements)
		*ret_elements = els;
	return n;
}

#define FROM_B_80                                                                                                      \
	"\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}}],\"ports\":[{\"port\":80}]}]"

static void test_shared_sets(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *r;
	char p1[128], p1_6[128], p2[128], p3[128], p4[128], p5[128], pt1[128], pt2[128], n1[128], n2[128];
	const char *ch1, *ch2;
	size_t els;

	/* p1, p2: other pods selected, the same peers and ports; p3: other peers; y/p4: the same
	 * podSelector in another namespace (other pods); p5: the same peers for egress; x/p6, y/p7:
	 * the same egress named port (resolved against every pod: the namespace does not matter) */
	policy_add(c, "x", "p1", "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}," FROM_B_80 "}");
	policy_add(c, "x", "p2", "{\"podSelector\":{}," FROM_B_80 "}");
	policy_add(c, "x", "p3",
		   "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}},\"ingress\":[{\"from\":[{\"podSelector\":"
		   "{\"matchLabels\":{\"pod\":\"c\"}}}],\"ports\":[{\"port\":81}]}]}");
	policy_add(c, "y", "p4", "{\"podSelector\":{}," FROM_B_80 "}");
	policy_add(c, "x", "p5",
		   "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"podSelector\":"
		   "{\"matchLabels\":{\"pod\":\"b\"}}}]}]}");
	policy_add(c, "x", "p6",
		   "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":\"http\"}]}]}");
	policy_add(c, "y", "p7",
		   "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"ports\":[{\"port\":\"http\"}]}]}");
	r = compile(c, "n1");
	assert_unique_names(r);
	ch1 = obj_of(r, "x/p1 ingress", "-in");
	ch2 = obj_of(r, "x/p2 ingress", "-in");
	set_ref(r, ch1, 0, 0, p1);
	set_ref(r, ch1, 0, 1, pt1);
	set_ref(r, ch1, 1, 0, p1_6);
	set_ref(r, ch2, 0, 0, p2);
	set_ref(r, ch2, 0, 1, pt2);
	set_ref(r, obj_of(r, "x/p3 ingress", "-in"), 0, 0, p3);
	set_ref(r, obj_of(r, "y/p4 ingress", "-in"), 0, 0, p4);
	set_ref(r, obj_of(r, "x/p5 egress", "-out"), 0, 0, p5);
	set_ref(r, obj_of(r, "x/p6 egress", "-out"), 0, 0, n1);
	set_ref(r, obj_of(r, "y/p7 egress", "-out"), 0, 0, n2);
	/* one object for p1's, p2's and p5's peers, one for p1's and p2's ports, one named set */
	assert_string_equal(p1, p2);
	assert_string_equal(p1, p5);
	assert_string_equal(pt1, pt2);
	assert_string_equal(n1, n2);
	assert_int_equal(n_named(r, p1), 1);
	assert_int_equal(n_named(r, pt1), 1);
	assert_int_equal(n_named(r, n1), 1);
	assert_items(r, p1, "10.0.1.2");
	assert_items(r, pt1, "tcp . 80");
	/* other selectors, other sets */
	assert_string_not_equal(p1, p1_6);
	assert_string_not_equal(p1, p3);
	assert_string_not_equal(p1, p4);
	assert_items(r, p3, "10.0.2.3");
	assert_items(r, p4, "10.0.1.5");
	/* sets: peers p1=p2=p5, p3, p4 (x2 families); ports 80 (p1, p2, p4), 81; named (x2 families) */
	set_ref(r, obj_of(r, "y/p4 ingress", "-in"), 0, 1, pt2);
	assert_string_equal(pt1, pt2);
	assert_int_equal(n_sets(r, &els), 3 * 2 + 2 + 2);
	printf("# 7 policies, 4 of them sharing sets: %zu sets, %zu elements\n", n_sets(r, NULL), els);
	policy_ruleset_free(r);
	cluster_free(c);
}

/* A shared set named by its selector: a pod entering or leaving it is an element diff; it stays
 * while one policy still uses it; a rule whose selector changes moves to another set. */
static void test_shared_set_diff(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *a, *b;
	char s4[128], s6[128], pt[128], t4[128], want[512], *batch;
	const char *ch2;

	policy_add(c, "x", "deny", "{\"podSelector\":{}}");
	policy_add(c, "x", "p1", "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}," FROM_B_80 "}");
	policy_add(c, "x", "p2", "{\"podSelector\":{}," FROM_B_80 "}");
	a = compile(c, "n1");
	set_ref(a, obj_of(a, "x/p1 ingress", "-in"), 0, 0, s4);
	set_ref(a, obj_of(a, "x/p1 ingress", "-in"), 0, 1, pt);
	set_ref(a, obj_of(a, "x/p1 ingress", "-in"), 1, 0, s6);
	assert_items(a, s4, "10.0.1.2");

	/* x/c (n2) becomes a b: one element into the shared set, nothing else */
	obj_del(c, KUBE_KIND_POD, "x", "c");
	pod_add(c, "x", "c", "n2", "10.0.2.3", "{\"pod\":\"b\"}");
	b = compile(c, "n1");
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	snprintf(want, sizeof(want), "add table inet weft\nadd element inet weft %s { 10.0.2.3 }\n", s4);
	assert_string_equal(batch, want);
	free(batch);
	policy_ruleset_free(a);
	a = b;
	/* and back: one element out */
	obj_del(c, KUBE_KIND_POD, "x", "c");
	pod_add(c, "x", "c", "n2", "10.0.2.3", "{\"pod\":\"c\"}");
	b = compile(c, "n1");
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	snprintf(want, sizeof(want), "add table inet weft\ndelete element inet weft %s { 10.0.2.3 }\n", s4);
	assert_string_equal(batch, want);
	free(batch);
	policy_ruleset_free(a);
	a = b;

	/* p2 goes: its chain goes, the sets p1 still uses stay untouched */
	ch2 = strdupa(obj_of(a, "x/p2 ingress", "-in"));
	obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p2");
	b = compile(c, "n1");
	assert_items(b, s4, "10.0.1.2");
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	snprintf(want, sizeof(want), "delete chain inet weft %s\n", ch2);
	assert_non_null(strstr(batch, want));
	assert_null(strstr(batch, s4));
	assert_null(strstr(batch, s6));
	assert_null(strstr(batch, pt));
	assert_null(strstr(batch, "delete set"));
	free(batch);
	policy_ruleset_free(a);
	a = b;

	/* p2 comes back from c: a set of its own; p1's stays */
	policy_add(c, "x", "p2",
		   "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"c\"}}}],"
		   "\"ports\":[{\"port\":80}]}]}");
	b = compile(c, "n1");
	set_ref(b, obj_of(b, "x/p2 ingress", "-in"), 0, 0, t4);
	assert_string_not_equal(s4, t4);
	assert_items(b, t4, "10.0.2.3");
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	snprintf(want, sizeof(want), "add set inet weft %s ", t4);
	assert_non_null(strstr(batch, want));
	assert_null(strstr(batch, "delete set"));
	assert_null(strstr(batch, "delete element inet weft np-p-"));
	free(batch);
	policy_ruleset_free(a);
	a = b;

	/* p1 goes: the last user of s4, s6; the ports set is still p2's */
	obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p1");
	b = compile(c, "n1");
	assert_null(policy_ruleset_find(b, s4));
	assert_non_null(policy_ruleset_find(b, pt));
	assert_int_equal(render_diff(a, b, NULL, NULL, &batch), 0);
	snprintf(want, sizeof(want), "delete set inet weft %s\n", s4);
	assert_non_null(strstr(batch, want));
	snprintf(want, sizeof(want), "delete set inet weft %s\n", s6);
	assert_non_null(strstr(batch, want));
	assert_null(strstr(batch, pt));
	free(batch);
	policy_ruleset_free(a);
	policy_ruleset_free(b);
	cluster_free(c);
}

/* Each chain's rules with every "@set" replaced by the set's elements: what the rules match,
 * whatever the sets are called. */
static char *resolved(const PolicyRuleset *r, const PolicyObject *chain) {
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	for (size_t k = 0; k < chain->n_items; k++) {
		const char *p = chain->items[k], *at;

		while ((at = strchr(p, '@'))) {
			char name[160];
			size_t len = strcspn(at + 1, " ");
			const PolicyObject *s;

			fwrite(p, 1, (size_t) (at - p), f);
			assert_true(len < sizeof(name));
			memcpy(name, at + 1, len);
			name[len] = 0;
			s = policy_ruleset_find(r, name);
			if (!s)
				fail_msg("%s: no such set", name);
			if (s->kind == POLICY_OBJ_SET) {
				fputs("{ ", f);
				for (size_t i = 0; i < s->n_items; i++)
					fprintf(f, "%s%s", i ? ", " : "", s->items[i]);
				fputs(" }", f);
			} else
				fprintf(f, "@%s", name);
			p = at + 1 + len;
		}
		fprintf(f, "%s\n", p);
	}
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Compiled with 1-bit hashes every set name collides: each distinct key still gets its own set,
 * and every rule matches what it matches with full hashes. */
static PolicyRuleset *compile_bits(Cluster *c, unsigned bits) {
	return compile_hashed(c, "n1", bits);
}

static void assert_same_meaning(const PolicyRuleset *full, const PolicyRuleset *coll) {
	size_t n_full = n_sets(full, NULL), n_coll = n_sets(coll, NULL);

	assert_unique_names(coll);
	assert_int_equal(n_full, n_coll); /* collisions split nothing that was shared, merge nothing */
	for (size_t i = 0; i < full->n; i++) {
		const PolicyObject *o = &full->objs[i], *x;
		char *a, *b;

		if (o->kind != POLICY_OBJ_CHAIN)
			continue;
		x = policy_ruleset_find(coll, o->name);
		assert_non_null(x);
		a = resolved(full, o);
		b = resolved(coll, x);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
}

static void collision_cluster(Cluster *c) {
	policy_add(c, "x", "deny", "{\"podSelector\":{}}");
	policy_add(c, "x", "p1", "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}," FROM_B_80 "}");
	policy_add(c, "x", "p2", "{\"podSelector\":{}," FROM_B_80 "}");
	policy_add(c, "x", "p3",
		   "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"c\"}}},"
		   "{\"ipBlock\":{\"cidr\":\"10.9.0.0/16\"}}],\"ports\":[{\"port\":\"http\"},{\"port\":81}]}],"
		   "\"egress\":[{\"to\":[{\"namespaceSelector\":{\"matchLabels\":{\"ns\":\"y\"}}}],\"ports\":[{\"port\":\"http\"}]}]}");
	policy_add(c, "y", "p4", "{\"podSelector\":{}," FROM_B_80 "}");
}

static void test_hash_collisions(void **state) {
	Cluster *c = cluster_new();
	PolicyRuleset *full, *coll;
	bool fallback = false;

	collision_cluster(c);
	full = compile_bits(c, 0);
	coll = compile_bits(c, 1);
	assert_same_meaning(full, coll);
	for (size_t i = 0; i < coll->n; i++)
		fallback |= coll->objs[i].kind == POLICY_OBJ_SET && strlen(coll->objs[i].name) > 24;
	assert_true(fallback); /* the collisions were real */
	policy_ruleset_free(full);
	policy_ruleset_free(coll);
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
	/* each policy adds its chain's 2 rules; its peer and port sets are its namespace's, shared */
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

	assert_int_equal(render_diff(old, new, stale_c, stale_s, &batch), 0);
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

/* Sets in table inet weft (maps not counted), from one listing. */
static size_t kernel_sets(NftCtx *nft) {
	json_t *j = NULL, *it;
	size_t i, n = 0;

	if (nft_list_json(nft, "list sets table inet weft", &j) < 0)
		return 0;
	json_array_foreach(json_object_get(j, "nftables"), i, it)
		n += json_object_get(it, "set") != NULL;
	json_decref(j);
	return n;
}

/* Shared sets through the kernel: one object per distinct set, element diffs when pods move in
 * or out, kept while a policy uses them, deleted with the last; then the same with 1-bit hashes
 * (every name collides: fallback names, and a short name that passes from one key to another
 * between compilations), including a restart over what the kernel holds. */
/* The name of the port set that rule 0 of `chain` refers to (any form of name), into buf. */
static const char *set_ref_any(const PolicyRuleset *r, const char *chain, char *buf) {
	const PolicyObject *o = policy_ruleset_find(r, chain);
	const char *at;

	strcpy(buf, "-");
	if (!o || o->n_items == 0 || !(at = strstr(o->items[0], "@np-pt-")))
		return buf;
	at++;
	memcpy(buf, at, strcspn(at, " "));
	buf[strcspn(at, " ")] = 0;
	return buf;
}

/* Sets of both that have the same name and another key (comment). */
static size_t n_rekeyed(const PolicyRuleset *a, const PolicyRuleset *b) {
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++) {
		const PolicyObject *o = policy_ruleset_find(a, b->objs[i].name);

		n += b->objs[i].kind == POLICY_OBJ_SET && o && !streq(o->decl, b->objs[i].decl);
	}
	return n;
}

static void test_kernel_shared(void **state) {
	NftCtx *nft = NULL;
	size_t rekeyed[2] = {};

	if (!in_netns)
		skip();
	assert_int_equal(nft_ctx_open(&nft), 0);
	for (unsigned bits = 0; bits <= 1; bits++) {
		Cluster *c = cluster_new();
		PolicyRuleset *a, *b, *e = compile_bits(c, bits);
		char *chains[128], *sets[128];
		size_t nc = 0, ns = 0;

		collision_cluster(c);
		a = compile_bits(c, bits);
		apply(nft, NULL, a, NULL, NULL);
		assert_int_equal(kernel_sets(nft), n_sets(a, NULL));
		/* x/c becomes a b, then p2 goes, then p1 allows from c instead of b */
		obj_del(c, KUBE_KIND_POD, "x", "c");
		pod_add(c, "x", "c", "n2", "10.0.2.3", "{\"pod\":\"b\"}");
		b = compile_bits(c, bits);
		rekeyed[bits] += n_rekeyed(a, b);
		apply(nft, a, b, NULL, NULL);
		policy_ruleset_free(a);
		a = b;
		obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p2");
		b = compile_bits(c, bits);
		rekeyed[bits] += n_rekeyed(a, b);
		apply(nft, a, b, NULL, NULL);
		assert_int_equal(kernel_sets(nft), n_sets(b, NULL));
		policy_ruleset_free(a);
		a = b;
		obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p1");
		policy_add(c, "x", "p1",
			   "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}},\"ingress\":[{\"from\":[{\"podSelector\":"
			   "{\"matchLabels\":{\"pod\":\"c\"}}}],\"ports\":[{\"port\":80}]}]}");
		b = compile_bits(c, bits);
		rekeyed[bits] += n_rekeyed(a, b);
		apply(nft, a, b, NULL, NULL);
		assert_int_equal(kernel_sets(nft), n_sets(b, NULL));
		if (bits > 0) {
			PolicyRuleset *full = compile_bits(c, 0);

			assert_same_meaning(full, b);
			policy_ruleset_free(full);
		}
		policy_ruleset_free(a);
		a = b;
		/* a restart: the kernel's objects are stale, then p1 goes (with 1-bit hashes, later keys
		 * take the names its sets had) */
		for (size_t i = 0; i < a->n; i++)
			if (a->objs[i].kind == POLICY_OBJ_CHAIN)
				chains[nc++] = a->objs[i].name;
			else
				sets[ns++] = a->objs[i].name;
		chains[nc] = sets[ns] = NULL;
		obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p1");
		b = compile_bits(c, bits);
		rekeyed[bits] += n_rekeyed(a, b);
		apply(nft, NULL, b, chains, sets);
		assert_int_equal(kernel_sets(nft), n_sets(b, NULL));
		policy_ruleset_free(a);
		a = b;
		/* p1 comes back: its keys take their names back, as element diffs */
		policy_add(c, "x", "p1", "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}," FROM_B_80 "}");
		b = compile_bits(c, bits);
		rekeyed[bits] += n_rekeyed(a, b);
		apply(nft, a, b, NULL, NULL);
		assert_int_equal(kernel_sets(nft), n_sets(b, NULL));
		if (bits > 0) {
			PolicyRuleset *full = compile_bits(c, 0);

			assert_same_meaning(full, b);
			policy_ruleset_free(full);
		}
		/* and everything goes */
		apply(nft, b, e, NULL, NULL);
		assert_int_equal(kernel_sets(nft), 0);
		policy_ruleset_free(a);
		policy_ruleset_free(b);
		policy_ruleset_free(e);
		cluster_free(c);
	}
	{
		/* 1-bit hashes again, with two port sets of the same hash: x/p1's (80) has the short name,
		 * x/p9's a fallback; when p1 goes, p9's takes the short name (an element diff), and when
		 * p1 comes back over a restart the set is added again with p1's comment */
		Cluster *c = cluster_new();
		PolicyRuleset *a = NULL, *b, *d, *e = compile_bits(c, 1);
		char spec[256], *chains[128], *sets[128];
		size_t nc = 0, ns = 0;
		unsigned q;

		policy_add(c, "x", "deny", "{\"podSelector\":{}}");
		policy_add(c, "x", "p1", "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}," FROM_B_80 "}");
		for (q = 82; q < 200; q++) {
			snprintf(spec, sizeof(spec),
				 "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":"
				 "\"b\"}}}],\"ports\":[{\"port\":%u}]}]}",
				 q);
			policy_add(c, "x", "p9", spec);
			a = compile_bits(c, 1);
			if (streq(obj_of(a, "ports: tcp . 80", ""), "np-pt-0000000000000000") &&
			    startswith(set_ref_any(a, obj_of(a, "x/p9 ingress", "-in"), spec),
				       "np-pt-0000000000000000-"))
				break;
			policy_ruleset_free(a);
			a = NULL;
			obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p9");
		}
		assert_non_null(a);
		apply(nft, NULL, a, NULL, NULL);
		obj_del(c, KUBE_KIND_NETWORK_POLICY, "x", "p1");
		b = compile_bits(c, 1);
		rekeyed[1] += n_rekeyed(a, b);
		apply(nft, a, b, NULL, NULL);
		d = compile_bits(c, 0);
		assert_same_meaning(d, b);
		policy_ruleset_free(d);
		for (size_t i = 0; i < b->n; i++)
			if (b->objs[i].kind == POLICY_OBJ_CHAIN)
				chains[nc++] = b->objs[i].name;
			else
				sets[ns++] = b->objs[i].name;
		chains[nc] = sets[ns] = NULL;
		policy_add(c, "x", "p1", "{\"podSelector\":{\"matchLabels\":{\"pod\":\"a\"}}," FROM_B_80 "}");
		d = compile_bits(c, 1);
		rekeyed[1] += n_rekeyed(b, d);
		apply(nft, NULL, d, chains, sets);
		assert_int_equal(kernel_sets(nft), n_sets(d, NULL));
		policy_ruleset_free(b);
		b = compile_bits(c, 0);
		assert_same_meaning(b, d);
		apply(nft, d, e, NULL, NULL);
		assert_int_equal(kernel_sets(nft), 0);
		policy_ruleset_free(a);
		policy_ruleset_free(b);
		policy_ruleset_free(d);
		policy_ruleset_free(e);
		cluster_free(c);
	}
	printf("# sets that kept their name for another key: %zu with 64-bit hashes, %zu with 1-bit\n", rekeyed[0],
	       rekeyed[1]);
	assert_int_equal(rekeyed[0], 0);
	assert_true(rekeyed[1] >= 2);
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
		cmocka_unit_test(test_shared_sets),
		cmocka_unit_test(test_shared_set_diff),
		cmocka_unit_test(test_hash_collisions),
		cmocka_unit_test(test_drop_parse),
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_kernel_shared),
		cmocka_unit_test(test_scale_kernel),
	};

	in_netns = geteuid() == 0 && unshare(CLONE_NEWNET) == 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
