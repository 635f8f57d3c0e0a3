/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * NetworkPolicy (networking.k8s.io/v1) compiled into the nftables objects of one node, in weft's
 * own table (inet weft, prefix "np-"). The compiler is a pure function of the cluster's Pods,
 * Namespaces and NetworkPolicies (as the object cache holds them) and the node's name; the result
 * is a set of named objects whose text is compared against the previous result, so a change
 * becomes one batch that touches only the objects that differ (policy_ruleset_render_diff()).
 *
 * Layout (per packet: two vmap lookups, then set lookups; nothing grows with pods or policies):
 *
 *   np-egress   filter forward, priority filter - 20: ct established,related accept;
 *               ip saddr vmap @np-egress4 (pod IP : jump np-cls-<h>-out) ... ; accept
 *   np-ingress  filter forward, priority filter - 10: the same with daddr, @np-ingress4, -in
 *
 * Both are base chains of their own: an `accept` in np-egress ends that chain only, so the same
 * packet still meets np-ingress (same-node traffic is checked in both directions), while a drop is
 * final. A class chain np-cls-<h>-{in,out} exists per distinct list of policies selecting a
 * local pod (pods of one ReplicaSet share one): one `jump` per policy, then the default deny of an
 * isolated pod. A policy chain np-<h>-{in,out} holds one or two rules per (rule, family), matching
 * sets: peers np-p-<k>{4,6} (addresses, interval: pod IPs and ipBlock cidr minus except), numbered
 * ports np-pt-<k> (proto . port, interval: endPort ranges) and named ports np-n-<k>{4,6} (pod IP .
 * proto . port, resolved per destination pod). <k> is a hash of what a set's elements are a
 * function of (the peers' selectors, the ports), so the rules of all policies that need the same
 * set share one object (policy-compile.c, shared_set()). Pods absent from the vmaps are not
 * isolated and pass.
 *
 * Rule and chain comments name the policy (namespace/name) and rule they came from; a shared
 * set's comment is its key (the selector or ports it holds).
 *
 * Counting: named counter objects, created and deleted with their policy in the same batch, so
 * /metrics reads them all with one dump (policy_counters_dump()):
 *   np-c-<tag>-{in,out}<N>  packets a policy's rule N accepted (every nft rule of that rule, v4/v6)
 *   np-cc-<h>-{in,out}      packets a class's default deny dropped (its items: the policies)
 * With log_drops, a rate-limited log rule (50/s, burst 20) precedes each class's drop: to an
 * nfnetlink_log group weftd reads (log_nflog; prefix "weft-np NS DIR deny by NAMES: #<h>-<dir>") or
 * else to the kernel log.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/kube/kube-objects.h"
#include "shared/nft/nft-batch.h"
#include "shared/nft/nft-names.h" /* the np-* names */
#include "shared/nft/nft.h"

/* What the compiler reads: every Pod, Namespace and NetworkPolicy of the cluster (borrowed). */
typedef struct PolicyInput {
	const char *node; /* this node's name: its pods are the ones enforced here */
	const KubePod *const *pods;
	size_t n_pods;
	const KubeNamespace *const *namespaces;
	size_t n_namespaces;
	const KubeNetworkPolicy *const *policies;
	size_t n_policies;
	bool log_drops; /* drops are logged with a prefix naming the class's policies */
	bool log_nflog; /* ... to nfnetlink_log group log_group (else the kernel log) */
	uint16_t log_group;
	bool namespaces_sorted; /* by name (policy_compile() sorts a copy itself) */
	unsigned set_hash_bits; /* bits of a shared set's name hash: 0 = 64; tests use fewer to collide */
	/* policy_explain() only: why an object is held at its last good version (its newest version
	 * was refused, object-cache.h), NULL if it is current. NULL: nothing is held. */
	const char *(*held_reason)(const KubeObject *o, void *userdata);
	void *held_userdata;
} PolicyInput;

typedef enum PolicyObjectKind {
	POLICY_OBJ_SET,
	POLICY_OBJ_MAP,
	POLICY_OBJ_CHAIN,
	POLICY_OBJ_COUNTER,
} PolicyObjectKind;

typedef struct PolicyObject {
	PolicyObjectKind kind;
	char *name;
	char *decl;   /* "{ type ipv4_addr; flags interval; comment \"...\"; }" */
	char **items; /* set/map elements (sorted, unique), chain rules (in order), or a counter's
		       * policies ("ns/name", in namespace/name order) */
	size_t n_items;
	bool ingress; /* counters: direction, and rule number (-1: a class's default deny) */
	int rule;
} PolicyObject;

/* Sorted by name. */
typedef struct PolicyRuleset {
	PolicyObject *objs;
	size_t n;
} PolicyRuleset;

/* The model the compiler and policy_explain() share. A pod takes part (isolated, or as a peer)
 * only while it has an IP, is not hostNetwork and has not terminated (Succeeded/Failed): its IP
 * may already be another pod's. */
bool policy_pod_active(const KubePod *p);
LabelSet policy_ns_labels(const PolicyInput *in, const char *ns);
bool policy_selects(const KubeNetworkPolicy *pol, const KubePod *p);
/* A podSelector/namespaceSelector peer of a policy in pol_ns matches p (ipBlock peers: false). */
bool policy_peer_matches_pod(const PolicyInput *in, const char *pol_ns, const KubePolicyPeer *peer, const KubePod *p);

/* 0, -ENOMEM. *ret owned by the caller (policy_ruleset_free()). */
int policy_compile(const PolicyInput *in, PolicyRuleset **ret);
PolicyRuleset *policy_ruleset_free(PolicyRuleset *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(PolicyRuleset *, policy_ruleset_free);
const PolicyObject *policy_ruleset_find(const PolicyRuleset *r, const char *name);
/* Rules + elements: what grows with the cluster (for the bench and /metrics). */
size_t policy_ruleset_size(const PolicyRuleset *r, size_t *ret_rules, size_t *ret_elements);

/*
 * The batch that turns `old` into `new` (old NULL: nothing of ours is known, e.g. at start-up),
 * touching only objects whose text differs: elements added/deleted one by one, a changed chain
 * flushed and refilled, vanished objects deleted after whatever referenced them. `stale` names
 * np-* chains, sets and maps found in the kernel that `old` does not know (start-up after a
 * restart; stale_sets also carries np-* maps and counters, told apart by name): they are flushed,
 * then deleted unless `new` has them. Counters are added before the rules that name them and
 * deleted after. Appended to b: nothing when nothing changes. 0 or -ENOMEM.
 */
int policy_ruleset_render_diff(const PolicyRuleset *old, const PolicyRuleset *new, char *const *stale_chains,
			       char *const *stale_sets, NftBatch *b);
/* Deletes every np-* object of the table (uninstall). */
int policy_render_uninstall(const PolicyRuleset *cur, NftBatch *b);
