/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `portmap` plugin: a chained plugin that forwards runtimeConfig.portMappings
 * (hostPort on the node's local addresses, or on one hostIP) to the container's first IPv4 and
 * first IPv6 address from prevResult, and masquerades hairpin and localhost-originated
 * connections (snat) so their replies come back through the node.
 *
 * The reference programs iptables (or, since 1.5, nftables rules, one per port); we keep fixed
 * rules in `table inet weft` and put each mapping into a map as an element commented with the
 * attachment (nft-portmap.h), so ADD does not grow with the number of pods and DEL needs neither
 * prevResult nor the netns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-attachment.h"
#include "shared/netns/netns.h"
#include "shared/nft/nft-portmap.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"
#include "portmap.h"

/* The container's addresses, as the reference picks them: the first IPv4 and the first IPv6 of
 * prevResult that do not belong to a known non-sandbox interface or another interface. */
typedef struct PodAddrs {
	IpPrefix addr[2];
	size_t n;
} PodAddrs;

static void pod_addrs(const CniRequest *req, PodAddrs *ret) {
	const CniResult *p = req->prev_result;
	bool have4 = false, have6 = false;

	*ret = (PodAddrs) {};
	for (size_t i = 0; p && i < p->n_ips; i++) {
		const CniIpConfig *ip = &p->ips[i];
		int fam = ip->address.addr.family;

		if ((fam == AF_INET && have4) || (fam == AF_INET6 && have6) || (fam != AF_INET && fam != AF_INET6))
			continue;
		if (ip->interface >= 0 && (size_t) ip->interface < p->n_interfaces) {
			const CniInterface *f = &p->interfaces[ip->interface];
			if (!streq_ptr(f->name, req->ifname) || isempty(f->sandbox))
				continue;
		}
		if (fam == AF_INET)
			have4 = true;
		else
			have6 = true;
		ret->addr[ret->n++] = ip->address;
	}
}

static bool addr_unspecified(const IpAddr *a) {
	for (unsigned i = 0; i < ip_addr_size(a->family); i++)
		if (a->bytes[i])
			return false;
	return true;
}

/* What the request asks for, as forwards and snat sources (arrays owned by the caller). */
typedef struct Plan {
	NftPortmapForward *fwd;
	size_t n_fwd;
	NftPortmapMasq *masq;
	size_t n_masq;
} Plan;

static void plan_done(Plan *p) {
	free(p->fwd);
	free(p->masq);
	*p = (Plan) {};
}

static int plan_build(const CniRequest *req, const PortmapConf *c, const PodAddrs *pods, Plan *ret) {
	Plan p = {};

	p.fwd = calloc(pods->n * req->n_port_mappings + 1, sizeof(*p.fwd));
	p.masq = calloc(pods->n * 2 + 1, sizeof(*p.masq));
	if (!p.fwd || !p.masq) {
		plan_done(&p);
		return -ENOMEM;
	}
	for (size_t k = 0; k < pods->n; k++) {
		const IpPrefix *pod = &pods->addr[k];
		int fam = pod->addr.family;

		for (size_t i = 0; i < req->n_port_mappings; i++) {
			const CniPortMapping *m = &req->port_mappings[i];
			NftPortmapForward *f = &p.fwd[p.n_fwd];

			*f = (NftPortmapForward) {
				.host_ip.family = AF_UNSPEC,
				.proto = m->protocol,
				.host_port = m->host_port,
				.pod = pod->addr,
				.container_port = m->container_port,
			};
			if (m->host_ip.family != AF_UNSPEC) {
				/* As the reference: a hostIP of the other family is not for this address;
				 * 0.0.0.0 / :: mean every local address (of that family only). */
				if (m->host_ip.family != fam)
					continue;
				if (!addr_unspecified(&m->host_ip))
					f->host_ip = m->host_ip;
			}
			p.n_fwd++;
		}
		if (c->snat) {
			if (c->masq_all)
				p.masq[p.n_masq++] =
						(NftPortmapMasq) { .pod = pod->addr, .from = { .addr.family = fam } };
			else {
				IpPrefix lo = { .addr.family = fam };

				/* hairpin: the pod itself and its subnet neighbours would get the
				 * reply straight from the pod, bypassing the reverse NAT */
				p.masq[p.n_masq++] = (NftPortmapMasq) { .pod = pod->addr, .from = *pod };
				/* from the node's loopback (127.0.0.0/8 needs route_localnet; ::1 never
				 * leaves lo, kept for symmetry) */
				if (fam == AF_INET) {
					lo.addr.bytes[0] = 127;
					lo.len = 8;
				} else {
					lo.addr.bytes[15] = 1;
					lo.len = 128;
				}
				p.masq[p.n_masq++] = (NftPortmapMasq) { .pod = pod->addr, .from = lo };
			}
		}
	}
	*ret = p;
	return 0;
}

/* nft's error text is multi-line (message, the command, a caret line): keep the first line. */
static const char *strempty_trim(char *s) {
	if (!s)
		return "";
	s[strcspn(s, "\n")] = 0;
	return s;
}

/*
 * As the reference's enableLocalnetRouting(): 127.0.0.1:hostPort from the node is DNATed to the
 * pod and leaves through the interface that routes to it with source 127.0.0.1 (masqueraded only
 * in postrouting); without route_localnet the kernel drops it as a martian. No route = nothing to
 * do (the reference ignores it too).
 */
static int enable_route_localnet(CniRequest *req, const IpAddr *pod) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_free_ char *key = NULL;
	char as[IP_ADDR_STRLEN];
	NlRoute rt;
	NlLink l;
	int r;

	if (nl_sock_open(&s) < 0 || nl_route_get(s, pod, &rt) < 0 || rt.oif <= 0 ||
	    nl_link_get(s, NULL, rt.oif, &l) < 0) {
		log_debug("no route to %s: route_localnet not set", ip_addr_to_string(pod, as));
		return 0;
	}
	/* '/' form: interface names may contain dots */
	key = strdup_printf("net/ipv4/conf/%s/route_localnet", l.name);
	if (!key)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	r = sysctl_write(key, "1");
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "unable to enable route_localnet on %s", l.name);
	return 0;
}

static void describe_item(const Plan *p, size_t idx, char *buf, size_t len) {
	char a[IP_ADDR_STRLEN], b[IP_ADDR_STRLEN], s[IP_PREFIX_STRLEN];

	if (idx < p->n_fwd) {
		const NftPortmapForward *f = &p->fwd[idx];
		snprintf(buf, len, "%s%s%s%s %u -> %s%s%s:%u", f->proto, f->host_ip.family ? " " : "",
			 f->host_ip.family ? ip_addr_to_string(&f->host_ip, a) : "", f->host_ip.family ? ":" : "",
			 f->host_port, f->pod.family == AF_INET6 ? "[" : "", ip_addr_to_string(&f->pod, b),
			 f->pod.family == AF_INET6 ? "]" : "", f->container_port);
	} else if (idx - p->n_fwd < p->n_masq) {
		const NftPortmapMasq *m = &p->masq[idx - p->n_fwd];
		snprintf(buf, len, "snat of connections from %s to %s", ip_prefix_to_string(&m->from, s),
			 ip_addr_to_string(&m->pod, a));
	} else
		snprintf(buf, len, "?");
}

static int portmap_add(CniRequest *req, void *userdata, CniResult **ret) {
	const PortmapConf *c = userdata;
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	_cleanup_free_ char *err = NULL;
	PodAddrs pods;
	Plan plan = {};
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"must be called as chained plugin: \"prevResult\" is missing");
	/* The result is prevResult, converted to our config's version by plugin_main(). */
	res = cni_result_copy(req->prev_result);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	if (req->n_port_mappings == 0) {
		*ret = TAKE_PTR(res);
		return 0;
	}

	pod_addrs(req, &pods);
	r = plan_build(req, c, &pods, &plan);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");

	/* Before nft: a failure here leaves no element behind (the sysctl stays, as the reference's). */
	for (size_t i = 0; c->snat && i < pods.n; i++)
		if (pods.addr[i].addr.family == AF_INET && (r = enable_route_localnet(req, &pods.addr[i].addr)) < 0)
			goto out;

	if (plan.n_fwd + plan.n_masq > 0) {
		r = pod_nft_open(req, &nft);
		if (r < 0)
			goto out;
		/* One batch for every family: all of it or nothing. */
		r = nft_portmap_add(nft, req->name, req->container_id, req->ifname, plan.fwd, plan.n_fwd, plan.masq,
				    plan.n_masq, &err);
		if (r < 0) {
			cni_fail_errno(req, r, CNI_ERR_INTERNAL, strempty_trim(err),
				       "unable to set up nftables port mappings");
			goto out;
		}
	}
	*ret = TAKE_PTR(res);
	r = 0;
out:
	plan_done(&plan);
	return r;
}

/* By attachment: works without prevResult, without runtimeConfig and with the netns gone. The
 * reference skips DEL without portMappings; removing by comment costs only a listing and also
 * cleans up after a runtime that forgot the capability args on DEL. */
static int portmap_del(CniRequest *req, void *userdata) {
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r;

	/* Most pods have no hostPort: ask the kernel directly, before loading libnftables. */
	if (nft_portmap_present(req->name, req->container_id, req->ifname) == 0)
		return 0;
	r = pod_nft_open(req, &nft);
	if (r < 0)
		return r;
	r = nft_portmap_del(nft, req->name, req->container_id, req->ifname);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "error deleting nftables port mappings");
	return 0;
}

static int portmap_check(CniRequest *req, void *userdata) {
	const PortmapConf *c = userdata;
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	PodAddrs pods;
	Plan plan = {};
	size_t bad = SIZE_MAX;
	char what[160];
	int r;

	if (!req->prev_result)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF, "Required prevResult missing");
	if (req->n_port_mappings == 0)
		return 0;

	pod_addrs(req, &pods);
	r = plan_build(req, c, &pods, &plan);
	if (r < 0)
		return cni_fail(req, r, CNI_ERR_INTERNAL, "out of memory");
	if (plan.n_fwd + plan.n_masq == 0)
		goto out;
	r = pod_nft_open(req, &nft);
	if (r < 0)
		goto out;
	r = nft_portmap_check(nft, req->name, req->container_id, req->ifname, plan.fwd, plan.n_fwd, plan.masq,
			      plan.n_masq, &bad);
	if (r < 0) {
		describe_item(&plan, bad, what, sizeof(what));
		cni_fail(req, r, CNI_ERR_INTERNAL, "%s: %s in table inet weft",
			 r == -ENOENT   ? "missing port mapping"
			 : r == -EEXIST ? "port mapping owned by another attachment"
			 : r == -ESTALE ? "port mapping points elsewhere"
					: "failed to check port mapping",
			 r == -ENOENT || r == -EEXIST || r == -ESTALE ? what : strerror(-r));
	}
out:
	plan_done(&plan);
	return r;
}

static int portmap_gc(CniRequest *req, void *userdata) {
	_cleanup_nft_ctx_ NftCtx *nft = NULL;
	int r;

	r = pod_nft_open(req, &nft);
	if (r < 0)
		return r;
	r = nft_portmap_gc(nft, req->name, cni_attachment_is_valid_cb, req);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL,
				      "failed to garbage-collect nftables port mappings");
	if (r > 0)
		log_info("removed %d stale port mapping elements", r);
	return 0;
}

static const PluginOps portmap_ops = {
	.name = "portmap",
	.about = "CNI portmap plugin (weft)",
	.conf_size = sizeof(PortmapConf),
	.parse = portmap_parse_config,
	.add = portmap_add,
	.del = portmap_del,
	.check = portmap_check,
	.gc = portmap_gc,
};

int main(int argc, char *argv[]) {
	return plugin_main(&portmap_ops, argc, argv);
}
