/* SPDX-License-Identifier: Apache-2.0 */
/* NetworkPolicy decoder (networking.k8s.io/v1): pod selector, policy types, ingress and egress rules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/string-util.h"
#include "shared/kube/kube-objects-internal.h"
#include "shared/kube/kube-objects.h"

static void policy_port_unref(KubePolicyPort *p, size_t n, StringPool *pool) {
	for (size_t i = 0; i < n; i++)
		string_pool_unref(pool, p[i].port.name);
}

static void rule_done(KubePolicyRule *r, StringPool *pool) {
	for (size_t i = 0; i < r->n_peers; i++) {
		label_selector_free(r->peers[i].pod_selector);
		label_selector_free(r->peers[i].namespace_selector);
		free(r->peers[i].except);
	}
	free(r->peers);
	policy_port_unref(r->ports, r->n_ports, pool);
	free(r->ports);
}

static void rules_free(KubePolicyRule *r, size_t n, StringPool *pool) {
	for (size_t i = 0; i < n; i++)
		rule_done(&r[i], pool);
	free(r);
}

static int peer_parse(const json_t *j, const char *path, KubePolicyPeer *ret, DecodeError *err) {
	const json_t *ps = ko_jget(j, "podSelector"), *ns = ko_jget(j, "namespaceSelector"),
		     *ib = ko_jget(j, "ipBlock"), *ex, *x;
	char p[128];
	size_t i;
	int r;

	if (!json_is_object(j))
		return decode_error(err, "%s: not an object", path);
	if (!ps && !ns && !ib)
		return decode_error(err, "%s: must specify podSelector, namespaceSelector or ipBlock", path);
	if (ib && (ps || ns))
		return decode_error(err, "%s: ipBlock may not be combined with a selector", path);
	if (ib) {
		const char *cidr;

		if (ko_jstr(ib, "cidr", &cidr) < 0 || !cidr || ip_prefix_parse(cidr, &ret->cidr) < 0)
			return decode_error(err, "%s.ipBlock.cidr: missing or not a CIDR", path);
		ret->cidr = ip_prefix_mask(&ret->cidr);
		ret->has_ip_block = true;
		if (ko_jarr(ib, "except", &ex) < 0)
			return decode_error(err, "%s.ipBlock.except: not an array", path);
		if (ko_jlen(ex) > KUBE_POLICY_MAX_EXCEPT)
			return decode_error(err, "%s.ipBlock.except: %zu entries, more than the limit of %u", path,
					    ko_jlen(ex), KUBE_POLICY_MAX_EXCEPT);
		if (ko_jlen(ex) > 0) {
			ret->except = calloc(ko_jlen(ex), sizeof(IpPrefix));
			if (!ret->except)
				return -ENOMEM;
		}
		json_array_foreach(ex, i, x) {
			IpPrefix *e = &ret->except[i];

			if (!json_is_string(x) || ip_prefix_parse(json_string_value(x), e) < 0)
				return decode_error(err, "%s.ipBlock.except[%zu]: not a CIDR", path, i);
			*e = ip_prefix_mask(e);
			/* The API server wants a strict subset of cidr. */
			if (e->addr.family != ret->cidr.addr.family || e->len <= ret->cidr.len ||
			    !ip_prefix_contains(&ret->cidr, &e->addr))
				return decode_error(err, "%s.ipBlock.except[%zu]: not inside cidr", path, i);
			ret->n_except++;
		}
		return 0;
	}
	ko_pathf(p, sizeof(p), "%s.podSelector", path);
	r = label_selector_parse(ps, p, &ret->pod_selector, err);
	if (r < 0)
		return r;
	ko_pathf(p, sizeof(p), "%s.namespaceSelector", path);
	return label_selector_parse(ns, p, &ret->namespace_selector, err);
}

static int policy_port_parse(const json_t *j, const char *path, StringPool *pool, KubePolicyPort *ret,
			     DecodeError *err) {
	char p[128];
	long long end;
	int r;

	if (!json_is_object(j))
		return decode_error(err, "%s: not an object", path);
	r = ko_parse_protocol(j, path, &ret->protocol, err);
	if (r < 0)
		return r;
	ko_pathf(p, sizeof(p), "%s.port", path);
	r = ko_parse_port_ref(ko_jget(j, "port"), p, pool, &ret->port, err);
	if (r < 0)
		return r;
	if (ko_jint(j, "endPort", 1, 65535, 0, &end) < 0)
		return decode_error(err, "%s.endPort: not a port", path);
	if (end != 0 && (ret->port.number == 0 || end < ret->port.number))
		return decode_error(err, "%s.endPort: needs a numeric port no larger than it", path);
	ret->end_port = (uint16_t) end;
	return 0;
}

static int rules_parse(const json_t *spec, const char *field, const char *peers_field, StringPool *pool,
		       size_t *peer_budget_used, KubePolicyRule **ret, size_t *ret_n, DecodeError *err) {
	const json_t *a, *rule, *x, *peers, *ports;
	KubePolicyRule *v = NULL;
	size_t i, k, n = 0;
	char p[128];
	int r;

	if (ko_jarr(spec, field, &a) < 0)
		return decode_error(err, "spec.%s: not an array", field);
	if (ko_jlen(a) > KUBE_POLICY_MAX_RULES)
		return decode_error(err, "spec.%s: %zu rules, more than the limit of %u", field, ko_jlen(a),
				    KUBE_POLICY_MAX_RULES);
	if (ko_jlen(a) > 0) {
		v = calloc(ko_jlen(a), sizeof(KubePolicyRule));
		if (!v)
			return -ENOMEM;
	}
	json_array_foreach(a, i, rule) {
		KubePolicyRule *e = &v[i];

		n++;
		if (!json_is_object(rule)) {
			r = decode_error(err, "spec.%s[%zu]: not an object", field, i);
			goto fail;
		}
		if (ko_jarr(rule, peers_field, &peers) < 0 || ko_jarr(rule, "ports", &ports) < 0) {
			r = decode_error(err, "spec.%s[%zu]: %s or ports not an array", field, i, peers_field);
			goto fail;
		}
		/* Counted over both directions (the caller passes the running total). */
		*peer_budget_used += ko_jlen(peers);
		if (*peer_budget_used > KUBE_POLICY_MAX_PEERS) {
			r = decode_error(err, "spec.%s[%zu].%s: the policy has more than the limit of %u peers", field,
					 i, peers_field, KUBE_POLICY_MAX_PEERS);
			goto fail;
		}
		if (ko_jlen(ports) > KUBE_POLICY_MAX_PORTS) {
			r = decode_error(err, "spec.%s[%zu].ports: %zu ports, more than the limit of %u", field, i,
					 ko_jlen(ports), KUBE_POLICY_MAX_PORTS);
			goto fail;
		}
		if (ko_jlen(peers) > 0 && !(e->peers = calloc(ko_jlen(peers), sizeof(KubePolicyPeer))))
			goto oom;
		json_array_foreach(peers, k, x) {
			e->n_peers++;
			ko_pathf(p, sizeof(p), "spec.%s[%zu].%s[%zu]", field, i, peers_field, k);
			r = peer_parse(x, p, &e->peers[k], err);
			if (r < 0)
				goto fail;
		}
		if (ko_jlen(ports) > 0 && !(e->ports = calloc(ko_jlen(ports), sizeof(KubePolicyPort))))
			goto oom;
		json_array_foreach(ports, k, x) {
			ko_pathf(p, sizeof(p), "spec.%s[%zu].ports[%zu]", field, i, k);
			r = policy_port_parse(x, p, pool, &e->ports[k], err);
			if (r < 0) {
				string_pool_unref(pool, e->ports[k].port.name);
				goto fail;
			}
			e->n_ports++;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
oom:
	r = -ENOMEM;
fail:
	rules_free(v, n, pool);
	return r;
}

void ko_policy_free(KubeNetworkPolicy *p, StringPool *pool) {
	label_selector_free(p->pod_selector);
	rules_free(p->ingress_rules, p->n_ingress, pool);
	rules_free(p->egress_rules, p->n_egress, pool);
}

int ko_policy_decode(const json_t *j, StringPool *pool, KubeObject **ret, DecodeError *err) {
	_cleanup_(ko_meta_done) Meta m = {};
	const json_t *spec = ko_jget(j, "spec"), *types = NULL, *t;
	KubeNetworkPolicy *p;
	size_t i, n_peers = 0;
	int r;

	r = ko_meta_parse(j, true, dns_subdomain_valid, pool, &m, err);
	if (r < 0)
		return r;
	if (spec && !json_is_object(spec))
		return decode_error(err, "spec: not an object");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* podSelector is a struct, not a pointer, in the API: absent decodes as {} (every pod). */
	if (ko_jget(spec, "podSelector"))
		r = label_selector_parse(ko_jget(spec, "podSelector"), "spec.podSelector", &p->pod_selector, err);
	else if (!(p->pod_selector = calloc(1, sizeof(LabelSelector))))
		r = -ENOMEM;
	if (r >= 0)
		r = rules_parse(spec, "ingress", "from", pool, &n_peers, &p->ingress_rules, &p->n_ingress, err);
	if (r >= 0)
		r = rules_parse(spec, "egress", "to", pool, &n_peers, &p->egress_rules, &p->n_egress, err);
	if (r >= 0 && ko_jarr(spec, "policyTypes", &types) < 0)
		r = decode_error(err, "spec.policyTypes: not an array");
	if (r >= 0 && ko_jlen(types) == 0) {
		/* The API server's defaulting: Ingress always, Egress when there are egress rules. */
		p->ingress = true;
		p->egress = p->n_egress > 0;
	}
	json_array_foreach(r >= 0 ? types : NULL, i, t) {
		if (json_is_string(t) && streq(json_string_value(t), "Ingress"))
			p->ingress = true;
		else if (json_is_string(t) && streq(json_string_value(t), "Egress"))
			p->egress = true;
		else {
			r = decode_error(err, "spec.policyTypes[%zu]: not Ingress or Egress", i);
			break;
		}
	}
	if (r >= 0)
		r = ko_meta_move(&m, KUBE_KIND_NETWORK_POLICY, &p->meta);
	if (r < 0) {
		ko_policy_free(p, pool);
		free(p);
		return r;
	}
	*ret = &p->meta;
	return 0;
}

static bool prefixes_equal(const IpPrefix *a, const IpPrefix *b, size_t n) {
	for (size_t i = 0; i < n; i++)
		if (!ip_prefix_equal(&a[i], &b[i]))
			return false;
	return true;
}

static bool rules_equal(const KubePolicyRule *a, const KubePolicyRule *b, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (a[i].n_peers != b[i].n_peers || a[i].n_ports != b[i].n_ports)
			return false;
		for (size_t k = 0; k < a[i].n_peers; k++) {
			const KubePolicyPeer *x = &a[i].peers[k], *y = &b[i].peers[k];

			if (x->has_ip_block != y->has_ip_block || x->n_except != y->n_except ||
			    !label_selector_equal(x->pod_selector, y->pod_selector) ||
			    !label_selector_equal(x->namespace_selector, y->namespace_selector) ||
			    (x->has_ip_block && !ip_prefix_equal(&x->cidr, &y->cidr)) ||
			    !prefixes_equal(x->except, y->except, x->n_except))
				return false;
		}
		for (size_t k = 0; k < a[i].n_ports; k++) {
			const KubePolicyPort *x = &a[i].ports[k], *y = &b[i].ports[k];

			if (x->protocol != y->protocol || x->port.number != y->port.number ||
			    x->port.name != y->port.name || x->end_port != y->end_port)
				return false;
		}
	}
	return true;
}

bool ko_policy_equal(const KubeNetworkPolicy *a, const KubeNetworkPolicy *b) {
	return a->ingress == b->ingress && a->egress == b->egress && a->n_ingress == b->n_ingress &&
	       a->n_egress == b->n_egress && label_selector_equal(a->pod_selector, b->pod_selector) &&
	       rules_equal(a->ingress_rules, b->ingress_rules, a->n_ingress) &&
	       rules_equal(a->egress_rules, b->egress_rules, a->n_egress);
}
