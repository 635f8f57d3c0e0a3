/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rtnetlink + netns helpers against the real kernel. The process first moves into a private
 * network namespace (unshare(CLONE_NEWNET)), so nothing here can touch the host; a second
 * private namespace ("peer", kept alive by an fd only) plays the pod:
 *
 *     test netns                                     peer netns (pod)
 *   +--------------------------------------+       +---------------------+
 *   | br0 (bridge)                         |       |                     |
 *   |  └ vh0 10.10.0.1/24 fd10::1/64 ======|=veth==|= vp0 10.10.0.2/24   |
 *   | vx0 (vxlan 42, local 10.10.0.1)      |       |   fd10::2/64        |
 *   | routes: main, table 100, 1000        |       | mv0 (macvlan on vh0)|
 *   +--------------------------------------+       +---------------------+
 *
 * Checked through our own dump API, plus independently through `ip -j` / `bridge -j` (popen in
 * the test's namespace, or nsenter into the peer). Needs root; exits 77 otherwise.
 */

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <net/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"

static NlSock *s;  /* test namespace */
static NlSock *ps; /* peer namespace */
static int peer_fd = -EBADF;
static int self_fd = -EBADF;

static const uint8_t MAC1[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01 };
static const uint8_t MAC2[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x02 };

static IpAddr addr(const char *str) {
	IpAddr a;
	assert_int_equal(ip_addr_parse(str, &a), 0);
	return a;
}

static IpPrefix prefix(const char *str) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(str, &p), 0);
	return p;
}

/* Runs a command (in the test netns, or in the peer with peer=true) and parses its JSON output. */
static json_t *run_json(bool peer, const char *fmt, ...) _printf_(2, 3);
static json_t *run_json(bool peer, const char *fmt, ...) {
	char cmd[512], full[640], out[65536];
	va_list ap;
	size_t n;
	FILE *f;
	json_t *j;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (peer)
		snprintf(full, sizeof(full), "nsenter --net=/proc/%d/fd/%d %s", (int) getpid(), peer_fd, cmd);
	else
		snprintf(full, sizeof(full), "%s", cmd);
	f = popen(full, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	assert_int_equal(pclose(f), 0);
	j = json_loads(out, JSON_DECODE_ANY, NULL);
	if (!j)
		fail_msg("not JSON from '%s': %s", full, out);
	return j;
}

static int ifindex_of(NlSock *sock, const char *name) {
	NlLink l;
	assert_int_equal(nl_link_get(sock, name, 0, &l), 0);
	return l.ifindex;
}

/* veth vh0 (here) <-> vp0 (peer), both up with addresses, created fresh. */
static int mk_pair(const char *host, const char *pod) {
	int idx;
	assert_int_equal(nl_veth_create(s, host, pod, peer_fd, 0, NULL), 0);
	idx = ifindex_of(s, host);
	assert_int_equal(nl_link_set_up(s, idx, true), 0);
	assert_int_equal(nl_link_set_up(ps, ifindex_of(ps, pod), true), 0);
	return idx;
}

/* ---- netns.c / sysctl.c ---- */

static void test_netns(void **state) {
	_cleanup_close_ int cur = -EBADF, uts = -EBADF;
	_cleanup_free_ char *v = NULL;
	int saved = -EBADF, fd;

	cur = netns_open("/proc/self/ns/net");
	assert_true(cur >= 0);
	assert_true(netns_same(cur, self_fd));
	assert_false(netns_same(cur, peer_fd));
	assert_int_equal(netns_open("/nonexistent/netns"), -ENOENT);
	assert_int_equal(netns_open("/proc/self/ns/uts"), -EINVAL);
	assert_int_equal(netns_open("/proc/self/status"), -EINVAL);
	assert_int_equal(netns_open(""), -EINVAL);

	assert_int_equal(netns_enter(peer_fd, &saved), 0);
	fd = netns_open_current();
	assert_true(netns_same(fd, peer_fd));
	safe_close(fd);
	netns_leave(saved);
	fd = netns_open_current();
	assert_true(netns_same(fd, self_fd));
	safe_close(fd);

	/* setns() with a non-netns fd fails and leaves us where we were */
	uts = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
	assert_true(uts >= 0);
	assert_true(netns_enter(uts, &saved) < 0);
	fd = netns_open_current();
	assert_true(netns_same(fd, self_fd));
	safe_close(fd);

	/* sysctls are per namespace */
	assert_int_equal(sysctl_write("net.ipv4.ip_forward", "1"), 0);
	assert_int_equal(sysctl_read("net/ipv4/ip_forward", &v), 0);
	assert_string_equal(v, "1");
	v = mfree(v);
	assert_int_equal(sysctl_write_netns(peer_fd, "net.ipv4.conf.all.forwarding", "0"), 0);
	assert_int_equal(sysctl_write_netns(peer_fd, "net.ipv6.conf.all.forwarding", "1"), 0);
	assert_int_equal(sysctl_read("net.ipv6.conf.all.forwarding", &v), 0);
	assert_string_equal(v, "0"); /* the write went to the peer, not here */
	v = mfree(v);
	assert_int_equal(netns_enter(peer_fd, &saved), 0);
	assert_int_equal(sysctl_read("net.ipv6.conf.all.forwarding", &v), 0);
	netns_leave(saved);
	assert_string_equal(v, "1");
	assert_int_equal(sysctl_write("net.ipv4.no_such_key", "1"), -ENOENT);
	assert_int_equal(sysctl_write("net/../../etc/passwd", "1"), -EINVAL);
}

/* ---- links ---- */

static void test_veth(void **state) {
	NlLink h, p;
	json_t *j;
	int idx;

	assert_int_equal(nl_veth_create(s, "vh0", "vp0", peer_fd, 1400, MAC1), 0);
	assert_int_equal(nl_link_get(s, "vh0", 0, &h), 0);
	assert_string_equal(h.kind, "veth");
	assert_int_equal(h.mtu, 1400);
	assert_true(h.link_netnsid >= 0); /* the peer lives in another namespace */
	assert_int_equal(nl_link_get(s, "vp0", 0, NULL), -ENODEV);
	assert_int_equal(nl_link_get(ps, "vp0", 0, &p), 0);
	assert_memory_equal(p.mac, MAC1, 6);
	assert_int_equal(p.mtu, 1400);
	assert_int_equal(p.link, h.ifindex);
	assert_int_equal(nl_link_get(ps, NULL, p.ifindex, &p), 0);
	assert_string_equal(p.name, "vp0");

	/* independent view */
	j = run_json(true, "ip -j link show dev vp0");
	assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "address")), "02:aa:bb:cc:dd:01");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 0), "mtu")), 1400);
	json_decref(j);

	/* name collisions: host side, and peer side in the peer namespace */
	assert_int_equal(nl_veth_create(s, "vh0", "vpX", peer_fd, 0, NULL), -EEXIST);
	assert_int_equal(nl_veth_create(s, "vhX", "vp0", peer_fd, 0, NULL), -EEXIST);
	assert_int_equal(nl_link_get(s, "vhX", 0, NULL), -ENODEV); /* nothing half-created */

	/* set ops */
	idx = h.ifindex;
	assert_int_equal(nl_link_set_mtu(s, idx, 1300), 0);
	assert_int_equal(nl_link_set_mac(s, idx, MAC2), 0);
	assert_int_equal(nl_link_set_promisc(s, idx, true), 0);
	assert_int_equal(nl_link_set_up(s, idx, true), 0);
	assert_int_equal(nl_link_get(s, NULL, idx, &h), 0);
	assert_int_equal(h.mtu, 1300);
	assert_memory_equal(h.mac, MAC2, 6);
	assert_true(h.promisc);
	assert_true(h.flags & IFF_UP);
	assert_int_equal(nl_link_set_up(s, idx, false), 0);
	assert_int_equal(nl_link_set_name(s, idx, "vh0new"), 0);
	assert_int_equal(nl_link_get(s, "vh0new", 0, &h), 0);
	assert_int_equal(h.ifindex, idx);
	assert_int_equal(nl_link_set_name(s, idx, "vh0"), 0);
	j = run_json(false, "ip -j link show dev vh0");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(j, 0), "mtu")), 1300);
	char *dump = json_dumps(j, 0);
	assert_true(strstr(dump, "PROMISC") != NULL);
	free(dump);
	json_decref(j);

	/* error paths with extack */
	assert_int_equal(nl_link_set_mtu(s, idx, 10), -EINVAL);
	assert_true(strlen(nl_sock_extack(s)) > 0);
	assert_int_equal(nl_link_set_up(s, 0x7ffffff, true), -ENODEV);
	assert_int_equal(nl_link_set_master(s, idx, 0x7ffffff), -EINVAL);
	assert_int_equal(nl_link_del(s, 0x7ffffff), -ENODEV);
	assert_int_equal(nl_link_del_by_name(s, "nope0"), -ENODEV);
	assert_int_equal(nl_link_get(s, "nope0", 0, NULL), -ENODEV);
	assert_int_equal(nl_link_get(s, "0123456789abcdefgh", 0, NULL), -ENODEV);
	/* the socket is still in sync after errors */
	assert_int_equal(nl_link_get(s, "vh0", 0, NULL), 0);

	/* delete by name removes both ends */
	assert_int_equal(nl_link_del_by_name(s, "vh0"), 0);
	assert_int_equal(nl_link_get(ps, "vp0", 0, NULL), -ENODEV);
	assert_int_equal(nl_link_del(s, idx), -ENODEV);

	/* move to another namespace */
	assert_int_equal(nl_veth_create(s, "vm0", "vm1", -1, 0, NULL), 0);
	idx = ifindex_of(s, "vm1");
	assert_int_equal(nl_link_set_netns(s, idx, peer_fd), 0);
	assert_int_equal(nl_link_get(s, "vm1", 0, NULL), -ENODEV);
	assert_int_equal(nl_link_get(ps, "vm1", 0, NULL), 0);
	assert_int_equal(nl_link_del_by_name(s, "vm0"), 0);
}

static void test_bridge(void **state) {
	NlBridgeConfig c = { .name = "br0", .mtu = 1450 };
	NlLink br, port;
	json_t *j, *sd;
	int idx;

	assert_int_equal(nl_bridge_create(s, &c), 0);
	assert_int_equal(nl_bridge_create(s, &c), 0); /* racing ADDs: second is fine */
	assert_int_equal(nl_link_get(s, "br0", 0, &br), 0);
	assert_string_equal(br.kind, "bridge");
	idx = mk_pair("vh1", "vp1");
	NlBridgeConfig bad = { .name = "vh1" };
	assert_int_equal(nl_bridge_create(s, &bad), -EEXIST);

	assert_int_equal(nl_link_set_master(s, idx, br.ifindex), 0);
	assert_int_equal(nl_link_get(s, NULL, idx, &port), 0);
	assert_int_equal(port.master, br.ifindex);
	assert_int_equal(nl_bridge_port_set_hairpin(s, idx, true), 0);
	assert_int_equal(nl_bridge_port_set_isolated(s, idx, true), 0);
	j = run_json(false, "ip -d -j link show dev vh1");
	sd = json_object_get(json_object_get(json_object_get(json_array_get(j, 0), "linkinfo"), "info_slave_data"),
			     "hairpin");
	assert_true(json_is_true(sd));
	sd = json_object_get(json_object_get(json_object_get(json_array_get(j, 0), "linkinfo"), "info_slave_data"),
			     "isolated");
	assert_true(json_is_true(sd));
	json_decref(j);
	assert_int_equal(nl_bridge_port_set_hairpin(s, idx, false), 0);
	j = run_json(false, "ip -d -j link show dev vh1");
	sd = json_object_get(json_object_get(json_object_get(json_array_get(j, 0), "linkinfo"), "info_slave_data"),
			     "hairpin");
	assert_true(json_is_false(sd));
	json_decref(j);

	/* Many CNI ADDs race to create the same bridge: every one must succeed. */
	pid_t kids[8];
	for (size_t i = 0; i < ELEMENTSOF(kids); i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			NlSock *k = NULL;
			NlBridgeConfig rc = { .name = "brrace" };
			_exit(nl_sock_open(&k) < 0 ? 2 : nl_bridge_create(k, &rc) < 0 ? 1 : 0);
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(kids); i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(nl_link_del_by_name(s, "brrace"), 0);

	/* Not a bridge port: the kernel refuses */
	int lone = mk_pair("vh9", "vp9");
	assert_true(nl_bridge_port_set_hairpin(s, lone, true) < 0);
	assert_int_equal(nl_link_del(s, lone), 0);

	assert_int_equal(nl_link_set_master(s, idx, 0), 0);
	assert_int_equal(nl_link_get(s, NULL, idx, &port), 0);
	assert_int_equal(port.master, 0);
	assert_int_equal(nl_link_del(s, idx), 0);
	assert_int_equal(nl_link_del(s, br.ifindex), 0);
}

static void test_bridge_vlan(void **state) {
	NlBridgeConfig c = {
		.name = "brv", .vlan_filtering = true, .has_vlan_default_pvid = true, .vlan_default_pvid = 1
	};
	NlLink br;
	json_t *j;
	char *dump;
	int idx, r;

	r = nl_bridge_create(s, &c);
	if (r == -EOPNOTSUPP) {
		/* Kernel without CONFIG_BRIDGE_VLAN_FILTERING: the request must still reach the
		 * kernel and come back as a clean error, then skip the rest. */
		NlBridgeConfig plain = { .name = "brv" };
		assert_int_equal(nl_link_get(s, "brv", 0, NULL), -ENODEV); /* nothing half-created */
		assert_int_equal(nl_bridge_create(s, &plain), 0);
		idx = mk_pair("vh2", "vp2");
		assert_int_equal(nl_link_set_master(s, idx, ifindex_of(s, "brv")), 0);
		r = nl_bridge_vlan_add(s, idx, 10, 20, false, true, false);
		assert_int_equal(r, -EOPNOTSUPP);
		assert_int_equal(nl_link_get(s, "vh2", 0, NULL), 0); /* socket still in sync */
		assert_int_equal(nl_link_del(s, idx), 0);
		assert_int_equal(nl_link_del_by_name(s, "brv"), 0);
		skip();
	}
	assert_int_equal(r, 0);
	assert_int_equal(nl_link_get(s, "brv", 0, &br), 0);
	assert_true(br.br_vlan_filtering);
	idx = mk_pair("vh2", "vp2");
	assert_int_equal(nl_link_set_master(s, idx, br.ifindex), 0);
	assert_int_equal(nl_bridge_vlan_add(s, idx, 10, 20, false, true, false), 0);
	assert_int_equal(nl_bridge_vlan_add(s, idx, 100, 0, true, true, false), 0);
	assert_int_equal(nl_bridge_vlan_add(s, br.ifindex, 30, 0, false, false, true), 0);
	assert_int_equal(nl_bridge_vlan_del(s, idx, 15, 0, false), 0);
	j = run_json(false, "bridge -j vlan show");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"vlan\":100,\"flags\":[\"PVID\",\"Egress Untagged\"]") != NULL);
	assert_true(strstr(dump, "\"vlan\":10,\"vlanEnd\":14") != NULL);
	assert_true(strstr(dump, "\"vlan\":16,\"vlanEnd\":20") != NULL);
	assert_true(strstr(dump, "\"vlan\":30") != NULL);
	free(dump);
	json_decref(j);
	assert_int_equal(nl_link_del(s, idx), 0);
	assert_int_equal(nl_link_del(s, br.ifindex), 0);
}

/* ---- addresses ---- */

typedef struct Found {
	int n;
	NlAddr a[16];
} Found;

static int addr_cb(const NlAddr *a, void *userdata) {
	Found *f = userdata;
	if (f->n < 16)
		f->a[f->n++] = *a;
	return 0;
}

static const NlAddr *find_addr(const Found *f, const IpPrefix *p) {
	for (int i = 0; i < f->n; i++)
		if (ip_prefix_equal(&f->a[i].prefix, p))
			return &f->a[i];
	return NULL;
}

static int stop_cb(const NlAddr *a, void *userdata) {
	return -ECANCELED;
}

static void test_addr(void **state) {
	IpPrefix p4 = prefix("10.10.0.1/24"), p6 = prefix("fd10::1/64");
	Found f = {};
	const NlAddr *a;
	json_t *j;
	char *dump;
	int idx = mk_pair("vh3", "vp3");

	assert_int_equal(nl_addr_add(s, idx, &p4, 0), 0);
	assert_int_equal(nl_addr_add(s, idx, &p6, IFA_F_NODAD), 0);
	assert_int_equal(nl_addr_add(s, idx, &p4, 0), -EEXIST);
	assert_int_equal(nl_addr_dump(s, AF_UNSPEC, idx, addr_cb, &f), 0);
	a = find_addr(&f, &p4);
	assert_non_null(a);
	assert_int_equal(a->ifindex, idx);
	a = find_addr(&f, &p6);
	assert_non_null(a);
	assert_true(a->flags & IFA_F_NODAD);
	assert_false(a->flags & IFA_F_TENTATIVE);
	for (int i = 0; i < f.n; i++)
		assert_int_equal(f.a[i].ifindex, idx);
	f.n = 0;
	assert_int_equal(nl_addr_dump(s, AF_INET, 0, addr_cb, &f), 0);
	for (int i = 0; i < f.n; i++)
		assert_int_equal(f.a[i].prefix.addr.family, AF_INET);
	assert_non_null(find_addr(&f, &p4));
	assert_int_equal(nl_addr_dump(s, AF_INET, 0, stop_cb, NULL), -ECANCELED);

	j = run_json(false, "ip -j addr show dev vh3");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"local\":\"10.10.0.1\",\"prefixlen\":24,\"broadcast\":\"10.10.0.255\"") != NULL);
	assert_true(strstr(dump, "\"local\":\"fd10::1\",\"prefixlen\":64") != NULL);
	free(dump);
	json_decref(j);

	assert_int_equal(nl_addr_del(s, idx, &p4), 0);
	assert_int_equal(nl_addr_del(s, idx, &p4), -EADDRNOTAVAIL);
	f.n = 0;
	assert_int_equal(nl_addr_dump(s, AF_UNSPEC, idx, addr_cb, &f), 0);
	assert_null(find_addr(&f, &p4));
	assert_non_null(find_addr(&f, &p6));
	assert_int_equal(nl_link_del(s, idx), 0);
}

/* ---- routes ---- */

typedef struct Routes {
	int n;
	NlRoute r[64];
} Routes;

static int route_cb(const NlRoute *r, void *userdata) {
	Routes *rs = userdata;
	if (rs->n < 64)
		rs->r[rs->n++] = *r;
	return 0;
}

static const NlRoute *find_route(NlSock *sock, Routes *rs, int family, uint32_t table, const char *dst) {
	IpPrefix p = prefix(dst);
	rs->n = 0;
	assert_int_equal(nl_route_dump(sock, family, table, route_cb, rs), 0);
	for (int i = 0; i < rs->n; i++)
		if (ip_prefix_equal(&rs->r[i].dst, &p))
			return &rs->r[i];
	return NULL;
}

static void test_route(void **state) {
	IpPrefix p4 = prefix("10.10.0.1/24"), pp4 = prefix("10.10.0.2/24");
	IpPrefix p6 = prefix("fd10::1/64"), pp6 = prefix("fd10::2/64");
	Routes rs;
	const NlRoute *f;
	NlRoute r;
	json_t *j;
	char *dump;
	int idx = mk_pair("vh4", "vp4");
	int pidx = ifindex_of(ps, "vp4");

	assert_int_equal(nl_addr_add(s, idx, &p4, 0), 0);
	assert_int_equal(nl_addr_add(s, idx, &p6, IFA_F_NODAD), 0);
	assert_int_equal(nl_addr_add(ps, pidx, &pp4, 0), 0);
	assert_int_equal(nl_addr_add(ps, pidx, &pp6, IFA_F_NODAD), 0);

	/* gateway, our protocol, metric */
	nl_route_init(&r);
	r.dst = prefix("10.20.0.0/16");
	r.gw = addr("10.10.0.2");
	r.oif = idx;
	r.priority = 10;
	r.protocol = WEFT_RTPROT;
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	assert_int_equal(nl_route_add(s, &r, 0), -EEXIST);
	assert_int_equal(nl_route_add(s, &r, NL_ROUTE_REPLACE), 0);
	f = find_route(s, &rs, AF_INET, 0, "10.20.0.0/16");
	assert_non_null(f);
	assert_true(ip_addr_equal(&f->gw, &r.gw));
	assert_int_equal(f->oif, idx);
	assert_int_equal(f->priority, 10);
	assert_int_equal(f->protocol, WEFT_RTPROT);
	assert_int_equal(f->scope, RT_SCOPE_UNIVERSE);
	assert_int_equal(f->table, 0);
	assert_false(f->onlink);

	/* onlink gateway outside any connected subnet */
	nl_route_init(&r);
	r.dst = prefix("10.30.0.0/16");
	r.gw = addr("192.168.99.1");
	r.oif = idx;
	assert_int_equal(nl_route_add(s, &r, 0), -ENETUNREACH); /* without onlink: invalid gateway */
	assert_true(strlen(nl_sock_extack(s)) > 0);
	r.onlink = true;
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	f = find_route(s, &rs, AF_INET, 0, "10.30.0.0/16");
	assert_non_null(f);
	assert_true(f->onlink);
	assert_int_equal(f->protocol, RTPROT_BOOT);

	/* device route with metrics: scope link by default */
	nl_route_init(&r);
	r.dst = prefix("10.40.0.0/16");
	r.oif = idx;
	r.mtu = 1300;
	r.advmss = 1260;
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	f = find_route(s, &rs, AF_INET, 0, "10.40.0.0/16");
	assert_non_null(f);
	assert_int_equal(f->scope, RT_SCOPE_LINK);
	assert_int_equal(f->mtu, 1300);
	assert_int_equal(f->advmss, 1260);
	assert_false(ip_addr_is_set(&f->gw));

	/* tables 100 and 1000 (> 255 needs RTA_TABLE) */
	nl_route_init(&r);
	r.dst = prefix("10.50.0.0/16");
	r.gw = addr("10.10.0.2");
	r.table = 100;
	r.protocol = WEFT_RTPROT;
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	r.table = 1000;
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	assert_null(find_route(s, &rs, AF_INET, 0, "10.50.0.0/16"));
	f = find_route(s, &rs, AF_INET, 100, "10.50.0.0/16");
	assert_non_null(f);
	assert_int_equal(f->table, 100);
	assert_int_equal(f->oif, idx); /* kernel resolved the device */
	f = find_route(s, &rs, AF_UNSPEC, 1000, "10.50.0.0/16");
	assert_non_null(f);
	assert_int_equal(f->table, 1000);
	f = find_route(s, &rs, AF_INET, NL_ROUTE_TABLE_ALL, "10.50.0.0/16");
	assert_non_null(f);

	/* IPv6 via gateway */
	nl_route_init(&r);
	r.dst = prefix("fd20::/64");
	r.gw = addr("fd10::2");
	r.oif = idx;
	r.protocol = WEFT_RTPROT;
	r.priority = 7;
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	f = find_route(s, &rs, AF_INET6, 0, "fd20::/64");
	assert_non_null(f);
	assert_true(ip_addr_equal(&f->gw, &r.gw));
	assert_int_equal(f->priority, 7);
	assert_int_equal(f->protocol, WEFT_RTPROT);
	assert_null(find_route(s, &rs, AF_INET, 0, "fd20::/64"));

	/* independent view */
	j = run_json(false, "ip -j route show table 1000");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump,
			   "\"dst\":\"10.50.0.0/16\",\"gateway\":\"10.10.0.2\",\"dev\":\"vh4\",\"protocol\":\"252\"") !=
		    NULL);
	free(dump);
	json_decref(j);
	j = run_json(false, "ip -j -d route show 10.40.0.0/16");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"scope\":\"link\"") != NULL);
	assert_true(strstr(dump, "\"mtu\":1300") != NULL);
	free(dump);
	json_decref(j);
	j = run_json(false, "ip -j route show 10.30.0.0/16");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"onlink\"") != NULL);
	free(dump);
	json_decref(j);

	/* traffic actually follows our routes: the peer answers for 10.10.0.2 */
	j = run_json(false, "sh -c 'ping -c1 -W2 10.10.0.2 >/dev/null && echo true || echo false'");
	assert_true(json_is_true(j));
	json_decref(j);

	/* route get */
	IpAddr d = addr("10.10.0.77");
	assert_int_equal(nl_route_get(s, &d, &r), 0);
	assert_int_equal(r.oif, idx);
	assert_false(ip_addr_is_set(&r.gw)); /* directly connected */
	d = addr("10.20.1.1");
	assert_int_equal(nl_route_get(s, &d, &r), 0);
	assert_int_equal(r.oif, idx);
	IpAddr gw = addr("10.10.0.2");
	assert_true(ip_addr_equal(&r.gw, &gw));
	assert_int_equal(r.dst.len, 32);
	d = addr("203.0.113.1");
	assert_int_equal(nl_route_get(s, &d, &r), -ENETUNREACH);

	/* delete: scope wildcard works without repeating it; second delete is ESRCH */
	nl_route_init(&r);
	r.dst = prefix("10.40.0.0/16");
	assert_int_equal(nl_route_del(s, &r), 0);
	assert_int_equal(nl_route_del(s, &r), -ESRCH);
	assert_null(find_route(s, &rs, AF_INET, 0, "10.40.0.0/16"));
	r.dst = prefix("10.50.0.0/16");
	r.table = 1000;
	assert_int_equal(nl_route_del(s, &r), 0);
	assert_null(find_route(s, &rs, AF_INET, 1000, "10.50.0.0/16"));
	assert_non_null(find_route(s, &rs, AF_INET, 100, "10.50.0.0/16"));
	r.dst = prefix("fd20::/64");
	r.table = 0;
	assert_int_equal(nl_route_del(s, &r), 0);
	assert_null(find_route(s, &rs, AF_INET6, 0, "fd20::/64"));

	assert_int_equal(nl_link_del(s, idx), 0);
	/* routes through the device went with it */
	assert_null(find_route(s, &rs, AF_INET, NL_ROUTE_TABLE_ALL, "10.20.0.0/16"));
}

/* ---- neighbours and FDB ---- */

typedef struct Neighs {
	int n;
	NlNeigh a[32];
} Neighs;

static int neigh_cb(const NlNeigh *n, void *userdata) {
	Neighs *ns = userdata;
	if (ns->n < 32)
		ns->a[ns->n++] = *n;
	return 0;
}

static void test_neigh_fdb(void **state) {
	IpPrefix p4 = prefix("10.10.0.1/24");
	IpAddr nip = addr("10.10.0.77"), vt1 = addr("10.10.0.2"), vt2 = addr("10.10.0.3");
	static const uint8_t ZERO[6] = {};
	NlVxlanConfig vc = { .name = "vx0", .vni = 42, .local = addr("10.10.0.1"), .mtu = 1450, .mac = MAC2 };
	Neighs ns = {};
	NlLink vx;
	json_t *j;
	char *dump;
	int idx = mk_pair("vh5", "vp5"), vidx, hits = 0;

	assert_int_equal(nl_addr_add(s, idx, &p4, 0), 0);
	assert_int_equal(nl_neigh_add(s, idx, &nip, MAC1, NUD_PERMANENT, false), 0);
	assert_int_equal(nl_neigh_add(s, idx, &nip, MAC1, NUD_PERMANENT, false), -EEXIST);
	assert_int_equal(nl_neigh_add(s, idx, &nip, MAC2, NUD_PERMANENT, true), 0);
	assert_int_equal(nl_neigh_dump(s, AF_INET, idx, neigh_cb, &ns), 0);
	for (int i = 0; i < ns.n; i++)
		if (ip_addr_equal(&ns.a[i].dst, &nip)) {
			assert_memory_equal(ns.a[i].mac, MAC2, 6);
			assert_int_equal(ns.a[i].state, NUD_PERMANENT);
			hits++;
		}
	assert_int_equal(hits, 1);
	j = run_json(false, "ip -j neigh show dev vh5");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"dst\":\"10.10.0.77\",\"lladdr\":\"02:aa:bb:cc:dd:02\",\"state\":[\"PERMANENT\"]") !=
		    NULL);
	free(dump);
	json_decref(j);
	assert_int_equal(nl_neigh_del(s, idx, &nip), 0);
	assert_int_equal(nl_neigh_del(s, idx, &nip), -ENOENT);

	/* vxlan + FDB */
	vc.link = idx;
	assert_int_equal(nl_vxlan_create(s, &vc), 0);
	assert_int_equal(nl_vxlan_create(s, &vc), -EEXIST);
	assert_int_equal(nl_link_get(s, "vx0", 0, &vx), 0);
	vidx = vx.ifindex;
	assert_string_equal(vx.kind, "vxlan");
	assert_int_equal(vx.vxlan_id, 42);
	assert_int_equal(vx.vxlan_port, 4789);
	assert_int_equal(vx.vxlan_link, idx);
	assert_true(ip_addr_equal(&vx.vxlan_local, &vc.local));
	assert_memory_equal(vx.mac, MAC2, 6);
	assert_int_equal(vx.mtu, 1450);
	j = run_json(false, "ip -d -j link show dev vx0");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"id\":42") != NULL);
	assert_true(strstr(dump, "\"learning\":false") != NULL);
	assert_true(strstr(dump, "\"port\":4789") != NULL);
	free(dump);
	json_decref(j);

	/* broadcast entries to two VTEPs (append), one unicast (replace twice → one entry) */
	assert_int_equal(nl_fdb_add(s, vidx, ZERO, &vt1, false), 0);
	assert_int_equal(nl_fdb_add(s, vidx, ZERO, &vt2, false), 0);
	assert_int_equal(nl_fdb_add(s, vidx, MAC1, &vt1, true), 0);
	assert_int_equal(nl_fdb_add(s, vidx, MAC1, &vt2, true), 0);
	ns.n = 0;
	assert_int_equal(nl_neigh_dump(s, AF_BRIDGE, vidx, neigh_cb, &ns), 0);
	int zero_hits = 0, mac1_hits = 0;
	for (int i = 0; i < ns.n; i++) {
		assert_int_equal(ns.a[i].family, AF_BRIDGE);
		assert_int_equal(ns.a[i].ifindex, vidx);
		if (memcmp(ns.a[i].mac, ZERO, 6) == 0) {
			assert_true(ip_addr_equal(&ns.a[i].dst, &vt1) || ip_addr_equal(&ns.a[i].dst, &vt2));
			assert_true(ns.a[i].flags & NTF_SELF);
			assert_int_equal(ns.a[i].state, NUD_PERMANENT);
			zero_hits++;
		} else if (memcmp(ns.a[i].mac, MAC1, 6) == 0) {
			assert_true(ip_addr_equal(&ns.a[i].dst, &vt2));
			mac1_hits++;
		}
	}
	assert_int_equal(zero_hits, 2);
	assert_int_equal(mac1_hits, 1);
	j = run_json(false, "bridge -j fdb show dev vx0");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump,
			   "{\"mac\":\"02:aa:bb:cc:dd:01\",\"dst\":\"10.10.0.3\",\"flags\":[\"self\"],\"state\":\"permanent\"}") !=
		    NULL);
	assert_true(strstr(dump, "\"mac\":\"00:00:00:00:00:00\",\"dst\":\"10.10.0.2\"") != NULL);
	free(dump);
	json_decref(j);
	assert_int_equal(nl_fdb_del(s, vidx, ZERO, &vt1), 0);
	assert_int_equal(nl_fdb_del(s, vidx, MAC1, NULL), 0);
	ns.n = 0;
	assert_int_equal(nl_neigh_dump(s, AF_BRIDGE, vidx, neigh_cb, &ns), 0);
	for (int i = 0; i < ns.n; i++) {
		assert_false(memcmp(ns.a[i].mac, MAC1, 6) == 0);
		assert_false(memcmp(ns.a[i].mac, ZERO, 6) == 0 && ip_addr_equal(&ns.a[i].dst, &vt1));
	}
	assert_int_equal(nl_fdb_del(s, vidx, MAC1, NULL), -ENOENT);

	assert_int_equal(nl_link_del(s, vidx), 0);
	assert_int_equal(nl_link_del(s, idx), 0);
}

/* ---- macvlan ---- */

static void test_macvlan(void **state) {
	int idx = mk_pair("vh6", "vp6");
	NlMacvlanConfig c = {
		.name = "mv0", .parent = idx, .mode = MACVLAN_MODE_BRIDGE, .netns_fd = peer_fd, .mac = MAC1, .mtu = 1400
	};
	NlLink l;
	json_t *j;
	char *dump;

	assert_int_equal(nl_macvlan_create(s, &c), 0);
	assert_int_equal(nl_link_get(s, "mv0", 0, NULL), -ENODEV);
	assert_int_equal(nl_link_get(ps, "mv0", 0, &l), 0);
	assert_string_equal(l.kind, "macvlan");
	assert_memory_equal(l.mac, MAC1, 6);
	j = run_json(true, "ip -d -j link show dev mv0");
	dump = json_dumps(j, JSON_COMPACT);
	assert_true(strstr(dump, "\"mode\":\"bridge\"") != NULL);
	free(dump);
	json_decref(j);
	assert_int_equal(nl_macvlan_create(s, &c), -EEXIST);
	c.parent = 0x7ffffff;
	c.name = "mv1";
	assert_true(nl_macvlan_create(s, &c) < 0);
	assert_int_equal(nl_link_del(ps, l.ifindex), 0);
	assert_int_equal(nl_link_del(s, idx), 0);
}

/* ---- dump and monitor ---- */

static int name_cb(const NlLink *l, void *userdata) {
	char *names = userdata;
	strcat(names, l->name);
	strcat(names, " ");
	return 0;
}

static void test_link_dump(void **state) {
	char names[4096] = "";
	int idx = mk_pair("vh7", "vp7");

	/* enough links to span several dump messages */
	for (int i = 0; i < 40; i++) {
		char a[IFNAMSIZ], b[IFNAMSIZ];
		snprintf(a, sizeof(a), "d%da", i);
		snprintf(b, sizeof(b), "d%db", i);
		assert_int_equal(nl_veth_create(s, a, b, -1, 0, NULL), 0);
	}
	assert_int_equal(nl_link_dump(s, name_cb, names), 0);
	assert_true(strstr(names, "lo ") != NULL);
	assert_true(strstr(names, "vh7 ") != NULL);
	assert_true(strstr(names, "d0a ") != NULL);
	assert_true(strstr(names, "d39b ") != NULL);
	assert_null(strstr(names, "vp7 "));
	for (int i = 0; i < 40; i++) {
		char a[IFNAMSIZ];
		snprintf(a, sizeof(a), "d%da", i);
		assert_int_equal(nl_link_del_by_name(s, a), 0);
	}
	assert_int_equal(nl_link_del(s, idx), 0);
}

typedef struct MonSeen {
	int route_del, route_new, link_del;
	IpPrefix dst;
} MonSeen;

static int mon_route(uint16_t type, const NlRoute *r, void *userdata) {
	MonSeen *m = userdata;
	if (!ip_prefix_equal(&r->dst, &m->dst))
		return 0;
	if (type == RTM_DELROUTE)
		m->route_del++;
	else if (type == RTM_NEWROUTE)
		m->route_new++;
	return 0;
}

static int mon_link(uint16_t type, const NlLink *l, void *userdata) {
	MonSeen *m = userdata;
	if (type == RTM_DELLINK && streq(l->name, "vh8"))
		m->link_del++;
	return 0;
}

static void drain(NlSock *mon, const NlMonitorCallbacks *cb, MonSeen *m, int *counter) {
	/* Events are asynchronous: poll up to 2 s for the one we wait for. */
	for (int i = 0; i < 20 && *counter == 0; i++) {
		struct pollfd p = { .fd = nl_sock_fd(mon), .events = POLLIN };
		if (poll(&p, 1, 100) > 0)
			assert_true(nl_monitor_process(mon, cb, m) >= 0);
	}
}

static void test_monitor(void **state) {
	_cleanup_(nl_sock_freep) NlSock *mon = NULL;
	const unsigned groups[] = { RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, RTNLGRP_NEIGH };
	NlMonitorCallbacks cb = { .route = mon_route, .link = mon_link };
	MonSeen m = { .dst = prefix("10.60.0.0/16") };
	IpPrefix p4 = prefix("10.10.0.1/24");
	NlRoute r;
	int idx = mk_pair("vh8", "vp8");

	assert_int_equal(nl_monitor_open(groups, ELEMENTSOF(groups), &mon), 0);
	/* does not block with nothing to read (the veth pair's IPv6 link-local routes may already
	 * have arrived on a loaded machine, so it may also have processed some) */
	assert_true(nl_monitor_process(mon, &cb, &m) >= 0);
	assert_int_equal(nl_addr_add(s, idx, &p4, 0), 0);
	nl_route_init(&r);
	r.dst = m.dst;
	r.gw = addr("10.10.0.2");
	assert_int_equal(nl_route_add(s, &r, 0), 0);
	drain(mon, &cb, &m, &m.route_new);
	assert_int_equal(m.route_new, 1);
	/* a deletion by someone else (ip) is seen too */
	json_t *j = run_json(false, "sh -c 'ip route del 10.60.0.0/16 && echo true'");
	json_decref(j);
	drain(mon, &cb, &m, &m.route_del);
	assert_int_equal(m.route_del, 1);
	assert_int_equal(nl_link_del(s, idx), 0);
	drain(mon, &cb, &m, &m.link_del);
	assert_int_equal(m.link_del, 1);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netns),       cmocka_unit_test(test_veth),    cmocka_unit_test(test_bridge),
		cmocka_unit_test(test_bridge_vlan), cmocka_unit_test(test_addr),    cmocka_unit_test(test_route),
		cmocka_unit_test(test_neigh_fdb),   cmocka_unit_test(test_macvlan), cmocka_unit_test(test_link_dump),
		cmocka_unit_test(test_monitor),
	};
	int r;

	if (geteuid() != 0) {
		printf("SKIP: test-nl-netns: needs root\n");
		return 77;
	}
	/* Everything below happens in namespaces private to this process. */
	if (unshare(CLONE_NEWNET) < 0) {
		printf("SKIP: test-nl-netns: unshare(CLONE_NEWNET): %m\n");
		return 77;
	}
	self_fd = netns_open_current();
	/* The peer: unshare again, keep an fd, and come back. */
	if (unshare(CLONE_NEWNET) < 0)
		return 1;
	peer_fd = netns_open_current();
	if (self_fd < 0 || peer_fd < 0 || setns(self_fd, CLONE_NEWNET) < 0)
		return 1;

	if (nl_sock_open(&s) < 0 || nl_sock_open_netns(peer_fd, &ps) < 0)
		return 1;
	/* nl_sock_open_netns must leave us where we were */
	int cur = netns_open_current();
	if (!netns_same(cur, self_fd))
		return 1;
	safe_close(cur);
	if (nl_link_set_up(s, 1, true) < 0 || nl_link_set_up(ps, 1, true) < 0)
		return 1;

	r = cmocka_run_group_tests(tests, NULL, NULL);
	nl_sock_free(ps);
	nl_sock_free(s);
	safe_close(peer_fd);
	safe_close(self_fd);
	return r;
}
