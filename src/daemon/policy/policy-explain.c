/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/policy/policy-explain.h"

typedef struct Endpoint {
	const KubePod *pod; /* NULL: an address that is no active pod's */
	IpAddr ip;
	char label[300];
} Endpoint;

static void set_label(Endpoint *e) {
	char a[IP_ADDR_STRLEN];

	ip_addr_to_string(&e->ip, a);
	if (e->pod)
		snprintf(e->label, sizeof(e->label), "%s/%s (%s, node %s)", e->pod->meta.namespace, e->pod->meta.name,
			 a, e->pod->node_name ?: "-");
	else
		snprintf(e->label, sizeof(e->label), "%s (no pod)", a);
}

/* The active pod holding ip, if any (label not set). */
static void resolve_ip(const PolicyInput *in, const IpAddr *ip, Endpoint *ret) {
	*ret = (Endpoint) { .ip = *ip };
	for (size_t i = 0; i < in->n_pods; i++) {
		const KubePod *p = in->pods[i];

		if (!policy_pod_active(p))
			continue;
		for (size_t k = 0; k < p->n_ips; k++)
			if (ip_addr_equal(&p->ips[k], ip))
				ret->pod = p;
	}
}

static int resolve(const PolicyInput *in, const char *s, Endpoint *ret) {
	const char *slash = strchr(s, '/');
	IpAddr ip;

	*ret = (Endpoint) {};
	if (ip_addr_parse(s, &ip) >= 0)
		resolve_ip(in, &ip, ret);
	else if (slash) {
		for (size_t i = 0; i < in->n_pods; i++) {
			const KubePod *p = in->pods[i];

			if (strlen(p->meta.namespace) == (size_t) (slash - s) &&
			    strncmp(p->meta.namespace, s, (size_t) (slash - s)) == 0 &&
			    streq(p->meta.name, slash + 1)) {
				if (!policy_pod_active(p))
					return -EADDRNOTAVAIL;
				ret->pod = p;
				ret->ip = p->ips[0];
			}
		}
		if (!ret->pod)
			return -ENOENT;
	} else
		return -EINVAL;
	set_label(ret);
	return 0;
}

static bool ip_in_block(const KubePolicyPeer *peer, const IpAddr *ip) {
	if (!ip_prefix_contains(&peer->cidr, ip))
		return false;
	for (size_t e = 0; e < peer->n_except; e++)
		if (ip_prefix_contains(&peer->except[e], ip))
			return false;
	return true;
}

/* Does the rule's port list admit port/proto on the destination `dst` (named ports need a pod)? */
static bool ports_match(const KubePolicyRule *r, const Endpoint *dst, uint16_t port, KubeProtocol proto, FILE *f) {
	if (r->n_ports == 0) {
		fputs("every port", f);
		return true;
	}
	for (size_t i = 0; i < r->n_ports; i++) {
		const KubePolicyPort *pp = &r->ports[i];

		if (pp->protocol != proto)
			continue;
		if (pp->port.name) {
			for (size_t c = 0; dst->pod && c < dst->pod->n_ports; c++)
				if (dst->pod->ports[c].name && streq(dst->pod->ports[c].name, pp->port.name) &&
				    dst->pod->ports[c].protocol == proto && dst->pod->ports[c].port == port) {
					fprintf(f, "port %zu (named \"%s\" = %u on the destination)", i, pp->port.name,
						port);
					return true;
				}
			continue;
		}
		if (pp->port.number == 0 || (port >= pp->port.number && port <= MAX(pp->end_port, pp->port.number))) {
			fprintf(f, "port %zu (%s %u%s%.0u)", i, kube_protocol_to_string(proto), pp->port.number,
				pp->end_port ? "-" : "", pp->end_port);
			return true;
		}
	}
	fprintf(f, "no port of the rule is %u/%s", port, kube_protocol_to_string(proto));
	return false;
}

static const char *held_reason(const PolicyInput *in, const KubeObject *o) {
	return in->held_reason && o ? in->held_reason(o, in->held_userdata) : NULL;
}

/* Fail closed is visible: an object in force at its last good version says so, and why. */
static void note_held(const PolicyInput *in, const KubeObject *o, const char *indent, FILE *f) {
	const char *why = held_reason(in, o);

	if (why)
		fprintf(f, "%s(%s %s%s%s is held at its last good version: its newest version was refused: %s)\n",
			indent, kube_kind_info(o->kind)->kind, o->namespace ?: "", o->namespace ? "/" : "", o->name,
			why);
}

static void note_held_pod_and_namespace(const PolicyInput *in, const KubePod *p, FILE *f) {
	note_held(in, &p->meta, "    ", f);
	for (size_t i = 0; i < in->n_namespaces; i++)
		if (streq(in->namespaces[i]->meta.name, p->meta.namespace))
			note_held(in, &in->namespaces[i]->meta, "    ", f);
}

/* One direction: 1 allowed, 0 denied. `me` is the pod whose policies apply, `other` the far end. */
static int direction(const PolicyInput *in, const Endpoint *me, const Endpoint *other, const Endpoint *dst,
		     uint16_t port, KubeProtocol proto, bool ingress, FILE *f, PolicyDirVerdict *v) {
	const char *dir = ingress ? "ingress" : "egress";
	size_t n_sel = 0;
	bool allowed = false;

	fprintf(f, "  %s of %s", dir, me->pod ? "" : me->label);
	if (!me->pod) {
		fputs(": not a pod, no policy applies: allowed\n", f);
		return 1;
	}
	fprintf(f, "%s/%s (enforced on node %s):\n", me->pod->meta.namespace, me->pod->meta.name,
		me->pod->node_name ?: "-");
	note_held_pod_and_namespace(in, me->pod, f);
	if (other->pod)
		note_held_pod_and_namespace(in, other->pod, f);
	for (size_t k = 0; k < in->n_policies; k++) {
		const KubeNetworkPolicy *pol = in->policies[k];
		const KubePolicyRule *rules = ingress ? pol->ingress_rules : pol->egress_rules;
		size_t n_rules = ingress ? pol->n_ingress : pol->n_egress;

		if (!(ingress ? pol->ingress : pol->egress) || !policy_selects(pol, me->pod))
			continue;
		n_sel++;
		fprintf(f, "    policy %s/%s selects it%s\n", pol->meta.namespace, pol->meta.name,
			n_rules ? "" : ", with no rules for this direction (deny all)");
		note_held(in, &pol->meta, "      ", f);
		for (size_t r = 0; r < n_rules; r++) {
			const KubePolicyRule *rule = &rules[r];
			bool peer_ok = rule->n_peers == 0;
			size_t peer_idx = 0;

			for (size_t p = 0; !peer_ok && p < rule->n_peers; p++) {
				const KubePolicyPeer *peer = &rule->peers[p];

				if (peer->has_ip_block ? ip_in_block(peer, &other->ip)
						       : other->pod && policy_peer_matches_pod(in, pol->meta.namespace,
											       peer, other->pod)) {
					peer_ok = true;
					peer_idx = p;
				}
			}
			fprintf(f, "      rule %zu: ", r);
			if (!peer_ok) {
				fprintf(f, "no peer matches %s\n", other->label);
				continue;
			}
			if (rule->n_peers == 0)
				fputs("every peer, ", f);
			else
				fprintf(f, "peer %zu (%s) matches, ", peer_idx,
					rule->peers[peer_idx].has_ip_block ? "ipBlock" : "selectors");
			if (ports_match(rule, dst, port, proto, f)) {
				fputs(": ALLOWS\n", f);
				if (v && !allowed) {
					v->policy = pol;
					v->rule = r;
				}
				allowed = true;
			} else
				fputs("\n", f);
		}
	}
	if (n_sel == 0) {
		fprintf(f, "    no policy isolates it for %s: allowed\n", dir);
		return 1;
	}
	fprintf(f, "    => %s\n", allowed ? "allowed" : "denied (default deny of an isolated pod: no rule allows it)");
	if (v)
		v->isolated = true;
	return allowed;
}

int policy_explain(const PolicyInput *in, const char *from, const char *to, uint16_t port, KubeProtocol proto,
		   char **ret_text, bool *ret_allowed) {
	_cleanup_free_ char *buf = NULL;
	Endpoint src, dst;
	size_t size = 0;
	int r, eg, ig;
	FILE *f;

	r = resolve(in, from, &src);
	if (r >= 0)
		r = resolve(in, to, &dst);
	if (r < 0) {
		*ret_text = strdup_printf("%s: %s\n", r == -EINVAL ? "not ns/pod or an IP" : "no such running pod",
					  r < 0 && resolve(in, from, &src) < 0 ? from : to);
		return *ret_text ? (r == -EINVAL ? -EINVAL : -ENOENT) : -ENOMEM;
	}
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%s -> %s %u/%s\n", src.label, dst.label, port, kube_protocol_to_string(proto));
	eg = direction(in, &src, &dst, &dst, port, proto, false, f, NULL);
	ig = direction(in, &dst, &src, &dst, port, proto, true, f, NULL);
	fprintf(f, "%s\n", eg && ig ? "ALLOW" : !eg ? "DENY (egress)" : "DENY (ingress)");
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret_allowed = eg && ig;
	*ret_text = TAKE_PTR(buf);
	return 0;
}

int policy_verdict(const PolicyInput *in, const IpAddr *src, const IpAddr *dst, uint16_t port, KubeProtocol proto,
		   PolicyDirVerdict *ret_egress, PolicyDirVerdict *ret_ingress) {
	_cleanup_free_ char *buf = NULL;
	PolicyDirVerdict v[2] = {};
	Endpoint s, d;
	size_t size = 0;
	FILE *f;

	resolve_ip(in, src, &s);
	resolve_ip(in, dst, &d);
	set_label(&s);
	set_label(&d);
	/* the explanation's text goes nowhere: one walk serves both */
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	v[0].pod = s.pod;
	v[1].pod = d.pod;
	v[0].allowed = direction(in, &s, &d, &d, port, proto, false, f, &v[0]) > 0;
	v[1].allowed = direction(in, &d, &s, &d, port, proto, true, f, &v[1]) > 0;
	fclose(f);
	*ret_egress = v[0];
	*ret_ingress = v[1];
	return 0;
}
