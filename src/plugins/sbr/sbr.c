/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drop-in `sbr` (source based routing) meta plugin, reference 1.1.1 behaviour, inside the
 * pod's namespace (with the namespace file flock()ed, as the reference, so two chains for two
 * interfaces of one pod do not pick the same table):
 *   - table = the first id from 100 up that no rule references and no route lives in;
 *   - for every prevResult IP of CNI_IFNAME: `ip rule add from IP/32 lookup TABLE`, and when the
 *     IP has a gateway `ip route add default via GW dev IFNAME table TABLE`;
 *   - the interface's main-table routes are moved into TABLE (replace there, delete in main).
 * prevResult is passed on unchanged. DEL removes the rules whose source is an address of the
 * interface (the reference's tidyRules) and the routes left in their tables; a missing netns or
 * interface is success. Our rules carry protocol WEFT_RTPROT; DEL matches by source like the
 * reference, so rules installed by the reference are removed as well.
 */

#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl-rule.h"
#include "shared/nl/nl.h"
#include "shared/pod/pod-cni.h"

#define SBR_FIRST_TABLE 100

/* Growable arrays of routes / rules collected from dumps. */
typedef struct Routes {
	NlRoute *v;
	size_t n;
	int oif; /* collect only this oif (0 = all) */
} Routes;

static int routes_collect(const NlRoute *r, void *userdata) {
	Routes *rs = userdata;
	NlRoute *n;

	if (rs->oif > 0 && r->oif != rs->oif)
		return 0;
	n = reallocarray(rs->v, rs->n + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	rs->v = n;
	rs->v[rs->n++] = *r;
	return 0;
}

typedef struct Rules {
	NlRule *v;
	size_t n;
} Rules;

static int rules_collect(const NlRule *r, void *userdata) {
	Rules *rs = userdata;
	NlRule *n = reallocarray(rs->v, rs->n + 1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	rs->v = n;
	rs->v[rs->n++] = *r;
	return 0;
}

static uint32_t route_table(const NlRoute *r) {
	return r->table ? r->table : RT_TABLE_MAIN;
}

/* First table id >= SBR_FIRST_TABLE without rules or routes (reference getNextTableID). */
static uint32_t next_free_table(const Rules *rules, const Routes *routes) {
	for (uint32_t t = SBR_FIRST_TABLE;; t++) {
		bool used = false;

		for (size_t i = 0; i < rules->n && !used; i++)
			used = rules->v[i].table == t;
		for (size_t i = 0; i < routes->n && !used; i++)
			used = route_table(&routes->v[i]) == t;
		if (!used)
			return t;
	}
}

/* Reference getIPCfgs: IPs without an interface index, or pointing at CNI_IFNAME in a sandbox. */
static bool ip_is_ours(const CniResult *p, const CniIpConfig *ip, const char *ifname) {
	if (ip->interface < 0 || (size_t) ip->interface >= p->n_interfaces)
		return true;
	return streq_ptr(p->interfaces[ip->interface].name, ifname) && !isempty(p->interfaces[ip->interface].sandbox);
}

static IpPrefix host_prefix(const IpAddr *a) {
	return (IpPrefix) { .addr = *a, .len = (uint8_t) ip_family_bits(a->family) };
}

/* Opens the pod namespace, locks it and a netlink socket in it. */
static int open_pod(CniRequest *req, int *ret_fd, NlSock **ret_sock) {
	_cleanup_close_ int fd = -EBADF;
	int r;

	fd = cni_request_open_netns(req);
	if (fd < 0)
		return fd;
	/* Released when fd is closed. */
	if (flock(fd, LOCK_EX) < 0)
		return cni_fail(req, negative_errno(), CNI_ERR_INTERNAL, "failed to lock netns \"%s\": %m", req->netns);
	r = pod_open_cont_sock(req, fd, ret_sock);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

typedef struct SbrUndo {
	NlSock *s;
	int oif;
	uint32_t table;
	NlRule *rules; /* rules added */
	size_t n_rules;
	const Routes *moved; /* main-table routes (deleted from main: put back) */
	bool moved_deleted;
} SbrUndo;

static void sbr_undo(SbrUndo **p) {
	SbrUndo *u = *p;
	Routes in_table = { .oif = u ? u->oif : 0 };
	int r;

	if (!u)
		return;
	for (size_t i = 0; i < u->n_rules; i++)
		if ((r = nl_rule_del(u->s, &u->rules[i])) < 0 && r != -ENOENT)
			log_warning_errno(r, "rollback: failed to delete rule: %m");
	if (u->table > 0 && nl_route_dump(u->s, AF_UNSPEC, u->table, routes_collect, &in_table) >= 0)
		for (size_t i = 0; i < in_table.n; i++)
			(void) nl_route_del(u->s, &in_table.v[i]);
	free(in_table.v);
	if (u->moved_deleted)
		for (size_t i = 0; i < u->moved->n; i++)
			if ((r = nl_route_add(u->s, &u->moved->v[i], NL_ROUTE_REPLACE)) < 0)
				log_warning_errno(r, "rollback: failed to restore a main-table route: %m");
	free(u->rules);
}

static int sbr_add(CniRequest *req, void *userdata, CniResult **ret) {
	_cleanup_(cni_result_freep) CniResult *res = NULL;
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int fd = -EBADF;
	SbrUndo undo_data = {};
	_cleanup_(sbr_undo) SbrUndo *undo = NULL;
	Rules rules = {};
	Routes all = {}, moved = {};
	char as[IP_ADDR_STRLEN];
	const CniResult *p = req->prev_result;
	uint32_t table;
	NlLink link;
	int r;

	if (!p)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"This plugin must be called as chained plugin (prevResult missing)");
	res = cni_result_copy(p);
	if (!res)
		return cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");

	r = open_pod(req, &fd, &s);
	if (r < 0)
		return r;
	r = nl_link_get(s, req->ifname, 0, &link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s in netns \"%s\"", req->ifname,
				      req->netns);

	r = nl_rule_dump(s, AF_UNSPEC, rules_collect, &rules);
	if (r >= 0)
		r = nl_route_dump(s, AF_UNSPEC, NL_ROUTE_TABLE_ALL, routes_collect, &all);
	if (r >= 0) {
		moved.oif = link.ifindex;
		r = nl_route_dump(s, AF_UNSPEC, 0, routes_collect, &moved);
	}
	if (r < 0) {
		r = cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list rules and routes in netns \"%s\"",
				   req->netns);
		goto out;
	}
	table = next_free_table(&rules, &all);
	undo_data = (SbrUndo) { .s = s, .oif = link.ifindex, .table = table, .moved = &moved };
	undo = &undo_data;

	for (size_t i = 0; i < p->n_ips; i++) {
		const CniIpConfig *ip = &p->ips[i];
		NlRule rule = { .src = host_prefix(&ip->address.addr), .table = table, .protocol = WEFT_RTPROT };
		NlRule *n;

		if (!ip_is_ours(p, ip, req->ifname))
			continue;
		/* ip rule add from IP/32 lookup TABLE */
		r = nl_rule_add(s, &rule);
		if (r < 0) {
			r = cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(s),
					   "Failed to add rule from %s lookup %u",
					   ip_addr_to_string(&ip->address.addr, as), table);
			goto out;
		}
		n = reallocarray(undo->rules, undo->n_rules + 1, sizeof(*n));
		if (!n) {
			(void) nl_rule_del(s, &rule);
			r = cni_fail(req, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
			goto out;
		}
		undo->rules = n;
		undo->rules[undo->n_rules++] = rule;

		if (ip->gateway.family != AF_UNSPEC) {
			NlRoute def;

			/* ip route add default via GW dev IFNAME table TABLE */
			nl_route_init(&def);
			def.dst.addr.family = ip->gateway.family;
			def.gw = ip->gateway;
			def.oif = link.ifindex;
			def.table = table;
			r = nl_route_add(s, &def, 0);
			if (r < 0 && r != -EEXIST) {
				r = cni_fail_errno(req, r, CNI_ERR_INTERNAL, nl_sock_extack(s),
						   "Failed to add default route to %s",
						   ip_addr_to_string(&ip->gateway, as));
				goto out;
			}
		}
	}

	/* Move the interface's routes: replace into TABLE, then delete from main. */
	for (size_t i = 0; i < moved.n; i++) {
		NlRoute rt = moved.v[i];

		rt.table = table;
		r = nl_route_add(s, &rt, NL_ROUTE_REPLACE);
		if (r < 0) {
			char ds[IP_PREFIX_STRLEN];
			r = cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "Failed to readd route %s to table %u",
					   ip_prefix_to_string(&moved.v[i].dst, ds), table);
			goto out;
		}
	}
	undo->moved_deleted = true;
	for (size_t i = 0; i < moved.n; i++) {
		r = nl_route_del(s, &moved.v[i]);
		if (r < 0 && r != -ESRCH && r != -ENOENT) {
			char ds[IP_PREFIX_STRLEN];
			r = cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL,
					   "Failed to delete route %s from the main table",
					   ip_prefix_to_string(&moved.v[i].dst, ds));
			goto out;
		}
	}

	free(undo->rules);
	TAKE_PTR(undo);
	*ret = TAKE_PTR(res);
	r = 0;
out:
	if (undo) {
		sbr_undo(&undo);
		undo = NULL;
	}
	free(rules.v);
	free(all.v);
	free(moved.v);
	return r;
}

typedef struct AddrMatch {
	const IpAddr *a;
	bool *match;
} AddrMatch;

static int addr_match_cb(const NlAddr *a, void *userdata) {
	AddrMatch *q = userdata;

	if (ip_addr_equal(&a->prefix.addr, q->a))
		*q->match = true;
	return 0;
}

/* Reference tidyRules: rules whose source is an address of the interface. */
static int sbr_del(CniRequest *req, void *userdata) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int fd = -EBADF;
	Rules rules = {};
	NlLink link;
	int r = 0, k;

	if (isempty(req->netns))
		return 0;
	k = netns_open(req->netns);
	if (k == -ENOENT || k == -EINVAL)
		return 0; /* namespace gone: rules and routes went with it */
	if (k < 0)
		return cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to open netns \"%s\"", req->netns);
	fd = k;
	if (flock(fd, LOCK_EX) < 0)
		return cni_fail(req, negative_errno(), CNI_ERR_INTERNAL, "failed to lock netns \"%s\": %m", req->netns);
	k = pod_open_cont_sock(req, fd, &s);
	if (k < 0)
		return k;
	k = nl_link_get(s, req->ifname, 0, &link);
	if (k == -ENODEV)
		return 0;
	if (k < 0)
		return cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "failed to find %s", req->ifname);

	k = nl_rule_dump(s, AF_UNSPEC, rules_collect, &rules);
	if (k < 0) {
		free(rules.v);
		return cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "Failed to list all rules to tidy");
	}
	for (size_t i = 0; i < rules.n; i++) {
		NlRule *ru = &rules.v[i];
		Routes in_table = { .oif = link.ifindex };
		bool match = false;

		if (ru->src.addr.family == AF_UNSPEC || ru->src.len != ip_family_bits(ru->src.addr.family))
			continue;
		/* Is the source an address of the interface? */
		{
			AddrMatch q = { .a = &ru->src.addr, .match = &match };
			k = nl_addr_dump(s, ru->src.addr.family, link.ifindex, addr_match_cb, &q);
		}
		if (k < 0 || !match)
			continue;
		k = nl_rule_del(s, ru);
		if (k < 0 && k != -ENOENT) {
			char as[IP_ADDR_STRLEN];
			RET_GATHER(r, cni_fail_errno(req, k, CNI_ERR_INTERNAL, NULL, "Failed to delete rule from %s",
						     ip_addr_to_string(&ru->src.addr, as)));
			continue;
		}
		/* Its table's routes via this interface (the reference leaves them to the link's deletion). */
		if (ru->table >= SBR_FIRST_TABLE &&
		    nl_route_dump(s, AF_UNSPEC, ru->table, routes_collect, &in_table) >= 0)
			for (size_t j = 0; j < in_table.n; j++)
				(void) nl_route_del(s, &in_table.v[j]);
		free(in_table.v);
	}
	free(rules.v);
	return r;
}

typedef struct FindRule {
	const IpAddr *src;
	uint32_t table;
} FindRule;

static int find_rule_cb(const NlRule *r, void *userdata) {
	FindRule *f = userdata;

	if (r->src.addr.family != AF_UNSPEC && r->src.len == ip_family_bits(r->src.addr.family) &&
	    ip_addr_equal(&r->src.addr, f->src) && r->action == FR_ACT_TO_TBL)
		f->table = r->table;
	return 0;
}

static int sbr_check(CniRequest *req, void *userdata) {
	_cleanup_(nl_sock_freep) NlSock *s = NULL;
	_cleanup_close_ int fd = -EBADF;
	const CniResult *p = req->prev_result;
	char as[IP_ADDR_STRLEN];
	NlLink link;
	int r;

	if (!p)
		return cni_fail(req, -EINVAL, CNI_ERR_INVALID_NETCONF,
				"This plugin must be called as chained plugin (prevResult missing)");
	r = open_pod(req, &fd, &s);
	if (r < 0)
		return r;
	r = nl_link_get(s, req->ifname, 0, &link);
	if (r < 0)
		return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to find %s", req->ifname);
	for (size_t i = 0; i < p->n_ips; i++) {
		const CniIpConfig *ip = &p->ips[i];
		FindRule f = { .src = &ip->address.addr };
		Routes rt = { .oif = link.ifindex };

		if (!ip_is_ours(p, ip, req->ifname))
			continue;
		r = nl_rule_dump(s, ip->address.addr.family, find_rule_cb, &f);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list rules");
		if (f.table < SBR_FIRST_TABLE)
			return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL,
					"no rule \"from %s lookup <table>\" in netns \"%s\"",
					ip_addr_to_string(&ip->address.addr, as), req->netns);
		r = nl_route_dump(s, ip->address.addr.family, f.table, routes_collect, &rt);
		free(rt.v);
		if (r < 0)
			return cni_fail_errno(req, r, CNI_ERR_INTERNAL, NULL, "failed to list routes");
		if (rt.n == 0)
			return cni_fail(req, -ENOENT, CNI_ERR_INTERNAL, "table %u of %s has no route via %s", f.table,
					ip_addr_to_string(&ip->address.addr, as), req->ifname);
	}
	return 0;
}

static const PluginOps sbr_ops = {
	.name = "sbr",
	.about = "CNI source based routing plugin (weft)",
	.add = sbr_add,
	.del = sbr_del,
	.check = sbr_check,
};

int main(int argc, char *argv[]) {
	return plugin_main(&sbr_ops, argc, argv);
}
