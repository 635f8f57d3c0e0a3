/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nftables wrapper and bridge-plugin objects, against the real kernel in a private network
 * namespace (unshare(CLONE_NEWNET) before anything else; nftables state is per netns, so the
 * host's firewall is never touched). Needs root; exits 77 otherwise.
 */

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/nft/nft-bridge.h"
#include "shared/nft/nft-portmap.h"
#include "shared/nft/nft-names.h"
#include "shared/nft/nft.h"
#include "shared/nl/nfnl.h"

static NftCtx *ctx;

static int setup(void **state) {
	/* Start every test from an empty ruleset (this namespace is ours alone). */
	assert_int_equal(nft_apply(ctx, "flush ruleset", NULL), 0);
	return 0;
}

/* JSON listing of one object; NULL if it does not exist. */
static json_t *list(const char *cmd) {
	json_t *j = NULL;
	int r = nft_list_json(ctx, cmd, &j);

	if (r == -ENOENT)
		return NULL;
	assert_int_equal(r, 0);
	return j;
}

/* Number of rules in a chain, -1 if the chain does not exist. */
static int count_rules(const char *family_table, const char *chain) {
	_cleanup_free_ char *cmd = strdup_printf("list chain %s %s", family_table, chain);
	json_t *j = list(cmd), *item;
	size_t i;
	int n = 0;

	if (!j)
		return -1;
	json_array_foreach(json_object_get(j, "nftables"), i, item)
		if (json_object_get(item, "rule"))
			n++;
	json_decref(j);
	return n;
}

/* Comment of the set element whose rendered first key component equals key0 (NULL if absent);
 * *ret_n gets the number of elements. Caller frees. */
static char *elem_comment(const char *family_table, const char *set, const char *key0, int *ret_n) {
	_cleanup_free_ char *cmd = strdup_printf("list set %s %s", family_table, set);
	json_t *j = list(cmd), *item, *e;
	char *found = NULL;
	size_t i, k;
	int n = 0;

	if (j)
		json_array_foreach(json_object_get(j, "nftables"), i, item) {
			json_array_foreach(json_object_get(json_object_get(item, "set"), "elem"), k, e) {
				json_t *inner = json_object_get(e, "elem");
				json_t *val = inner ? json_object_get(inner, "val") : e;
				json_t *concat = json_object_get(val, "concat");
				const char *v = json_string_value(concat ? json_array_get(concat, 0) : val);

				n++;
				if (key0 && v && streq(v, key0) && !found) {
					const char *c = json_string_value(json_object_get(inner, "comment"));
					found = strdup(c ? c : "");
				}
			}
		}
	json_decref(j);
	if (ret_n)
		*ret_n = n;
	return found;
}

static int count_elems(const char *family_table, const char *set) {
	int n;
	free(elem_comment(family_table, set, NULL, &n));
	return n;
}

static IpPrefix pfx(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

/* ---- wrapper ---- */

static void test_apply_errors(void **state) {
	_cleanup_free_ char *err = NULL, *err2 = NULL;
	json_t *j = NULL;

	assert_int_equal(nft_apply(ctx, "add tabel inet weft", &err), -EINVAL);
	assert_non_null(err);
	assert_non_null(strstr(err, "syntax error"));

	/* kernel errors keep their errno */
	assert_int_equal(nft_apply(ctx, "delete table inet nosuch", &err2), -ENOENT);
	assert_non_null(strstr(err2, "No such file or directory"));
	assert_int_equal(nft_list_json(ctx, "list table inet nosuch", &j), -ENOENT);
	assert_null(j);
	assert_int_equal(nft_apply(ctx, "add table inet x; add chain inet x c; add chain inet x c", NULL), 0);
	assert_int_equal(nft_apply(ctx, "create chain inet x c", NULL), -EEXIST);

	/* one batch = one transaction: a failing last command undoes the first ones */
	assert_int_equal(nft_apply(ctx,
				   "add table inet atomic\nadd chain inet atomic c\n"
				   "delete chain inet atomic nosuch\n",
				   NULL),
			 -ENOENT);
	assert_null(list("list table inet atomic"));

	/* NULL error pointer and bad arguments */
	assert_int_equal(nft_apply(ctx, "add table inet ok", NULL), 0);
	assert_int_equal(nft_apply(NULL, "add table inet ok", NULL), -EINVAL);
	assert_int_equal(nft_apply(ctx, NULL, NULL), -EINVAL);
	/* the context still works after errors (buffers drained) */
	err = mfree(err);
	assert_int_equal(nft_apply(ctx, "add tabel", &err), -EINVAL);
	assert_non_null(err);
	assert_int_equal(nft_apply(ctx, "list table inet ok", NULL), 0);
}

/* nft_check: the kernel's verdict on a batch ("File exists" included), nothing applied */
static void test_check(void **state) {
	_cleanup_free_ char *err = NULL;
	json_t *j = NULL;

	assert_int_equal(nft_apply(ctx,
				   "add table inet chk\nadd map inet chk m { type ipv4_addr : verdict; }\n"
				   "add element inet chk m { 10.0.0.1 : accept }\n",
				   NULL),
			 0);
	/* the same key with another verdict: only the kernel knows it conflicts */
	assert_int_equal(nft_check(ctx, "add element inet chk m { 10.0.0.1 : drop }", &err), -EEXIST);
	assert_non_null(strstr(err, "File exists"));
	assert_int_equal(nft_check(ctx, "add element inet chk m { 10.0.0.2 : drop }", NULL), 0);
	assert_int_equal(nft_list_json(ctx, "list map inet chk m", &j), 0);
	{
		char *dump = json_dumps(j, JSON_COMPACT);

		assert_non_null(strstr(dump, "10.0.0.1"));
		assert_null(strstr(dump, "10.0.0.2")); /* checked, not applied */
		free(dump);
	}
	json_decref(j);
	/* and the context applies for real afterwards */
	assert_int_equal(nft_apply(ctx, "add element inet chk m { 10.0.0.2 : drop }", NULL), 0);
	assert_int_equal(nft_apply(ctx, "delete table inet chk", NULL), 0);
}

static void test_list_json(void **state) {
	json_t *j, *arr, *item;
	size_t i;
	bool meta = false, table = false;

	assert_int_equal(nft_apply(ctx, "add table inet weft", NULL), 0);
	j = list("list table inet weft");
	assert_non_null(j);
	arr = json_object_get(j, "nftables");
	assert_true(json_is_array(arr));
	json_array_foreach(arr, i, item) {
		if (json_object_get(item, "metainfo"))
			meta = true;
		json_t *t = json_object_get(item, "table");
		if (t && streq(json_string_value(json_object_get(t, "name")), "weft") &&
		    streq(json_string_value(json_object_get(t, "family")), "inet"))
			table = true;
	}
	assert_true(meta);
	assert_true(table);
	json_decref(j);
}

/* ---- nfnl_call(): a raw nf_tables dump ---- */

static int count_msg(const struct nlmsghdr *nlh, void *data) {
	(*(int *) data)++;
	return MNL_CB_OK;
}

static int refuse_msg(const struct nlmsghdr *nlh, void *data) {
	(*(int *) data)++;
	return MNL_CB_ERROR; /* without setting errno */
}

/* nft list tables inet, or the elements of set inet weft `set`, through nfnl_call() */
static int raw_dump(uint8_t msg, const char *set, mnl_cb_t cb, int *n) {
	char buf[32768];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_NETFILTER);
	struct nlmsghdr *nlh;
	int r;

	assert_non_null(nl);
	assert_int_equal(mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID), 0);
	nlh = nfnl_put_header(buf, NFNL_SUBSYS_NFTABLES, msg, NLM_F_DUMP, 1, NFPROTO_INET, 0);
	if (set) {
		assert_true(mnl_attr_put_strz_check(nlh, sizeof(buf), NFTA_SET_ELEM_LIST_TABLE, "weft"));
		assert_true(mnl_attr_put_strz_check(nlh, sizeof(buf), NFTA_SET_ELEM_LIST_SET, set));
	}
	r = nfnl_call(nl, nlh, buf, sizeof(buf), cb, n);
	mnl_socket_close(nl);
	return r;
}

static void test_nfnl_call(void **state) {
	int n = 0;

	assert_int_equal(nft_apply(ctx,
				   "add table inet weft; add set inet weft s { type ipv4_addr; elements = { "
				   "10.0.0.1, 10.0.0.2 }; }",
				   NULL),
			 0);
	assert_int_equal(raw_dump(NFT_MSG_GETTABLE, NULL, count_msg, &n), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(raw_dump(NFT_MSG_GETSETELEM, "s", count_msg, &n), 0);
	assert_true(n >= 1); /* the elements, in as many messages as the kernel likes */
	/* the kernel's error comes back as its errno */
	assert_int_equal(raw_dump(NFT_MSG_GETSETELEM, "nope", count_msg, &n), -ENOENT);
	/* a callback that stops with MNL_CB_ERROR is an error, whatever errno held before (with errno
	 * 0 and no reset, -errno was 0: success) */
	n = 0;
	errno = 0;
	assert_int_equal(raw_dump(NFT_MSG_GETTABLE, NULL, refuse_msg, &n), -EBADMSG);
	assert_int_equal(n, 1);
}

/* ---- ids ---- */

static void test_attachment_id(void **state) {
	char buf[NFT_COMMENT_MAX + 1], longnet[100], cid[65];

	assert_int_equal(nft_attachment_id("net", "cid", "eth0", buf), 0);
	assert_string_equal(buf, "net/cid/eth0");
	assert_int_equal(nft_attachment_id("a/b", "cid", "eth0", buf), -EINVAL);
	assert_int_equal(nft_attachment_id("net", "c\"d", "eth0", buf), -EINVAL);
	assert_int_equal(nft_attachment_id("net", "", "eth0", buf), -EINVAL);
	assert_int_equal(nft_attachment_id("net", "cid", NULL, buf), -EINVAL);

	memset(longnet, 'n', sizeof(longnet) - 1);
	longnet[sizeof(longnet) - 1] = 0;
	memset(cid, 'c', 64);
	cid[64] = 0;
	assert_int_equal(nft_attachment_id(longnet, cid, "eth0", buf), 0);
	assert_true(buf[0] == '~' && strlen(buf) == 17 + 1 + 64 + 1 + 4);
}

/* ---- masq ---- */

static void test_masq_add_idempotent(void **state) {
	IpPrefix p = pfx("10.88.0.2/24"), p6 = pfx("fd00:88::2/64");
	_cleanup_free_ char *c1 = NULL, *c2 = NULL, *c3 = NULL;

	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cid1", "eth0", &p), 0);
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cid1", "eth0", &p), 0);
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cid1", "eth0", &p6), 0);
	assert_int_equal(count_rules(NFT_TABLE_INET, NFT_BR_CHAIN_POSTROUTING), 6);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 1);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_LOCAL4), 1);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ6), 1);
	c1 = elem_comment(NFT_TABLE_INET, NFT_BR_SET_MASQ4, "10.88.0.2", NULL);
	assert_string_equal(c1, "net1/cid1/eth0");
	c2 = elem_comment(NFT_TABLE_INET, NFT_BR_SET_LOCAL6, "fd00:88::2", NULL);
	assert_string_equal(c2, "net1/cid1/eth0");

	/* the same address taken over by another attachment: the element changes owner */
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cid2", "eth0", &p), 0);
	c3 = elem_comment(NFT_TABLE_INET, NFT_BR_SET_MASQ4, "10.88.0.2", NULL);
	assert_string_equal(c3, "net1/cid2/eth0");
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 1);
	/* ...so the old attachment's DEL leaves it alone */
	assert_int_equal(nft_bridge_masq_del(ctx, "net1", "cid1", "eth0"), 0);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 1);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ6), 0);

	/* bad input */
	IpPrefix bad = { .addr.family = AF_UNSPEC };
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cid1", "eth0", &bad), -EAFNOSUPPORT);
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "c/d", "eth0", &p), -EINVAL);
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cid1", "eth0", NULL), -EINVAL);
}

static void test_masq_del(void **state) {
	IpPrefix a = pfx("10.88.0.2/24"), b = pfx("10.88.0.3/24"), a6 = pfx("fd00::2/64");
	_cleanup_free_ char *c = NULL;

	/* nothing there at all: DEL is fine */
	assert_int_equal(nft_bridge_masq_del(ctx, "net1", "cidA", "eth0"), 0);
	assert_int_equal(nft_bridge_macspoof_del(ctx, "net1", "cidA", "eth0"), 0);

	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cidA", "eth0", &a), 0);
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cidA", "eth0", &a6), 0);
	assert_int_equal(nft_bridge_masq_add(ctx, "net1", "cidB", "eth0", &b), 0);
	assert_int_equal(nft_bridge_masq_del(ctx, "net1", "cidA", "eth0"), 0);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 1);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_LOCAL4), 1);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ6), 0);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_LOCAL6), 0);
	c = elem_comment(NFT_TABLE_INET, NFT_BR_SET_MASQ4, "10.88.0.3", NULL);
	assert_string_equal(c, "net1/cidB/eth0");
	/* DEL again, and a DEL for another ifname of B: no-ops */
	assert_int_equal(nft_bridge_masq_del(ctx, "net1", "cidA", "eth0"), 0);
	assert_int_equal(nft_bridge_masq_del(ctx, "net1", "cidB", "eth1"), 0);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 1);
	assert_int_equal(count_rules(NFT_TABLE_INET, NFT_BR_CHAIN_POSTROUTING), 6);
}

/* The raw-netlink presence check portmap DEL asks first agrees with what libnftables lists. */
static void test_portmap_present(void **state) {
	NftPortmapForward f = { .proto = "tcp", .host_port = 8080, .container_port = 80 };

	assert_int_equal(ip_addr_parse("10.88.0.2", &f.pod), 0);
	/* no table at all */
	assert_int_equal(nft_portmap_present("net1", "cidA", "eth0"), 0);
	assert_int_equal(nft_portmap_add(ctx, "net1", "cidA", "eth0", &f, 1, NULL, 0, NULL), 0);
	assert_int_equal(nft_portmap_present("net1", "cidA", "eth0"), 1);
	/* another attachment, and a prefix of this one's id, have none */
	assert_int_equal(nft_portmap_present("net1", "cidB", "eth0"), 0);
	assert_int_equal(nft_portmap_present("net1", "cidA", "eth"), 0);
	assert_int_equal(nft_portmap_del(ctx, "net1", "cidA", "eth0"), 0);
	assert_int_equal(nft_portmap_present("net1", "cidA", "eth0"), 0);
}

static bool valid_cid1(const char *cid, const char *ifname, void *userdata) {
	int *calls = userdata;
	(*calls)++;
	return streq(cid, "cid1") && streq(ifname, "eth0");
}

static void test_gc(void **state) {
	static const uint8_t mac1[6] = { 0x02, 0, 0, 0, 0, 1 }, mac2[6] = { 0x02, 0, 0, 0, 0, 2 };
	IpPrefix p1 = pfx("10.88.0.11/24"), p2 = pfx("10.88.0.12/24"), p3 = pfx("10.99.0.13/24");
	char longnet[80];
	int calls = 0;

	memset(longnet, 'L', sizeof(longnet) - 1);
	longnet[sizeof(longnet) - 1] = 0;
	assert_int_equal(nft_bridge_masq_add(ctx, "netA", "cid1", "eth0", &p1), 0);
	assert_int_equal(nft_bridge_masq_add(ctx, "netA", "cid2", "eth0", &p2), 0);
	assert_int_equal(nft_bridge_masq_add(ctx, "netB", "cid3", "eth0", &p3), 0);
	assert_int_equal(nft_bridge_macspoof_add(ctx, "netA", "cid1", "eth0", "veth1", mac1), 0);
	assert_int_equal(nft_bridge_macspoof_add(ctx, "netA", "cid2", "eth0", "veth2", mac2), 0);
	/* an element without a comment (not ours to judge) survives GC */
	assert_int_equal(nft_apply(ctx, "add element inet weft br-masq4 { 10.77.0.1 }", NULL), 0);

	/* cid2's 2 masq + 2 macspoof elements */
	assert_int_equal(nft_bridge_masq_gc(ctx, "netA", valid_cid1, &calls), 4);
	assert_true(calls > 0);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 3); /* .11, .13 (netB), .77 */
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_LOCAL4), 2);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS), 1);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW), 1);
	/* idempotent */
	assert_int_equal(nft_bridge_masq_gc(ctx, "netA", valid_cid1, &calls), 0);

	/* hashed network names are collected too */
	assert_int_equal(nft_bridge_masq_add(ctx, longnet,
					     "0123456789012345678901234567890123456789012345678901234567890123", "eth0",
					     &p2),
			 0);
	assert_int_equal(nft_bridge_masq_gc(ctx, "netA", valid_cid1, &calls), 0);
	assert_int_equal(nft_bridge_masq_gc(ctx, longnet, valid_cid1, &calls), 2);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), 3);

	assert_int_equal(nft_bridge_masq_gc(ctx, "netA", NULL, NULL), -EINVAL);
}

/* ---- macspoof ---- */

static void test_macspoof(void **state) {
	static const uint8_t mac1[6] = { 0x02, 0xaa, 0, 0, 0, 1 }, mac2[6] = { 0x02, 0xbb, 0, 0, 0, 2 };
	_cleanup_free_ char *c = NULL;
	json_t *j;
	const char *mac;

	assert_int_equal(nft_bridge_macspoof_add(ctx, "n", "c1", "eth0", "vethX", mac1), 0);
	assert_int_equal(nft_bridge_macspoof_add(ctx, "n", "c1", "eth0", "vethX", mac1), 0);
	assert_int_equal(count_rules(NFT_TABLE_BRIDGE, NFT_BR_CHAIN_MACSPOOF), 2);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW), 1);
	/* a new MAC replaces the old pair */
	assert_int_equal(nft_bridge_macspoof_add(ctx, "n", "c1", "eth0", "vethX", mac2), 0);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW), 1);
	j = list("list set bridge weft br-mac-allow");
	{
		/* {"nftables": [{metainfo}, {"set": {"elem": [{"elem": {"val": {"concat": [veth, mac]}}}]}}]} */
		json_t *set = json_object_get(json_array_get(json_object_get(j, "nftables"), 1), "set");
		json_t *e0 = json_object_get(json_array_get(json_object_get(set, "elem"), 0), "elem");
		json_t *concat = json_object_get(json_object_get(e0, "val"), "concat");
		mac = json_string_value(json_array_get(concat, 1));
	}
	assert_non_null(mac);
	assert_string_equal(mac, "02:bb:00:00:00:02");
	json_decref(j);
	c = elem_comment(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS, "vethX", NULL);
	assert_string_equal(c, "n/c1/eth0");

	assert_int_equal(nft_bridge_macspoof_add(ctx, "n", "c1", "eth0", "bad\"veth", mac1), -EINVAL);
	assert_int_equal(nft_bridge_macspoof_add(ctx, "n", "c1", "eth0", "veth-name-too-long", mac1), -EINVAL);

	assert_int_equal(nft_bridge_macspoof_del(ctx, "n", "c1", "eth0"), 0);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW), 0);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS), 0);
	assert_int_equal(nft_bridge_macspoof_del(ctx, "n", "c1", "eth0"), 0);
}

static void test_flush_all(void **state) {
	IpPrefix p = pfx("10.88.0.2/24");
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 9 };
	json_t *j;

	assert_int_equal(nft_bridge_flush_all(ctx), 0); /* nothing there */
	assert_int_equal(nft_bridge_masq_add(ctx, "n", "c", "eth0", &p), 0);
	assert_int_equal(nft_bridge_macspoof_add(ctx, "n", "c", "eth0", "vethF", mac), 0);
	/* weftd's objects share the inet table and must survive */
	assert_int_equal(nft_apply(ctx,
				   "add chain inet weft node-forward { type filter hook forward priority 0; }\n"
				   "add set inet weft node-peers { type ipv4_addr; }",
				   NULL),
			 0);
	assert_int_equal(nft_bridge_flush_all(ctx), 0);
	assert_null(list("list table bridge weft"));
	assert_int_equal(count_rules(NFT_TABLE_INET, NFT_BR_CHAIN_POSTROUTING), -1);
	assert_null(list("list set inet weft br-masq4"));
	assert_int_equal(count_rules(NFT_TABLE_INET, "node-forward"), 0);
	j = list("list set inet weft node-peers");
	assert_non_null(j);
	json_decref(j);
	/* and a second flush with only node-* left is a no-op */
	assert_int_equal(nft_bridge_flush_all(ctx), 0);
	assert_int_equal(count_rules(NFT_TABLE_INET, "node-forward"), 0);
	/* with node-* gone, the tables go too */
	assert_int_equal(nft_apply(ctx, "delete chain inet weft node-forward; delete set inet weft node-peers", NULL),
			 0);
	assert_int_equal(nft_bridge_flush_all(ctx), 0);
	assert_null(list("list table inet weft"));
}

/* ---- concurrency ---- */

#define N_PROCS 6
#define N_EACH 15

static void test_concurrent_add(void **state) {
	pid_t pids[N_PROCS];

	for (int i = 0; i < N_PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			/* fresh context per "plugin process" */
			for (int k = 0; k < N_EACH; k++) {
				NftCtx *c = NULL;
				char cid[64], addr[64];
				uint8_t mac[6] = { 2, 0, 0, 0, (uint8_t) i, (uint8_t) k };
				char veth[IFNAMSIZ + 48];
				IpPrefix p;
				int r;

				snprintf(cid, sizeof(cid), "c-%d-%d", i, k);
				snprintf(addr, sizeof(addr), "10.%d.%d.%d/16", 100 + i, k / 200, k % 200 + 2);
				snprintf(veth, sizeof(veth), "veth%d-%d", i, k);
				if (ip_prefix_parse(addr, &p) < 0 || nft_ctx_open(&c) < 0)
					_exit(2);
				r = nft_bridge_masq_add(c, "conc", cid, "eth0", &p);
				if (r >= 0)
					r = nft_bridge_macspoof_add(c, "conc", cid, "eth0", veth, mac);
				nft_ctx_free(c);
				if (r < 0) {
					fprintf(stderr, "child %d/%d: %s\n", i, k, strerror(-r));
					_exit(1);
				}
			}
			_exit(0);
		}
	}
	for (int i = 0; i < N_PROCS; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), N_PROCS * N_EACH);
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_LOCAL4), N_PROCS * N_EACH);
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_ALLOW), N_PROCS * N_EACH);
	assert_int_equal(count_rules(NFT_TABLE_INET, NFT_BR_CHAIN_POSTROUTING), 6);
	assert_int_equal(count_rules(NFT_TABLE_BRIDGE, NFT_BR_CHAIN_MACSPOOF), 2);

	/* and concurrent DELs of half of them */
	for (int i = 0; i < N_PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			NftCtx *c = NULL;
			if (nft_ctx_open(&c) < 0)
				_exit(2);
			for (int k = 0; k < N_EACH; k += 2) {
				char cid[64];
				snprintf(cid, sizeof(cid), "c-%d-%d", i, k);
				if (nft_bridge_masq_del(c, "conc", cid, "eth0") < 0 ||
				    nft_bridge_macspoof_del(c, "conc", cid, "eth0") < 0)
					_exit(1);
			}
			nft_ctx_free(c);
			_exit(0);
		}
	}
	for (int i = 0; i < N_PROCS; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(count_elems(NFT_TABLE_INET, NFT_BR_SET_MASQ4), N_PROCS * (N_EACH / 2));
	assert_int_equal(count_elems(NFT_TABLE_BRIDGE, NFT_BR_SET_MAC_PORTS), N_PROCS * (N_EACH / 2));
}

/* ---- cost (printed, loosely bounded) ---- */

static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_cost(void **state) {
	enum {
		N = 200
	};
	double t0, t_open = 0, t_add = 0, t_del = 0;

	for (int i = 0; i < N; i++) {
		NftCtx *c = NULL;
		char cid[64], addr[64];
		IpPrefix p;

		snprintf(cid, sizeof(cid), "bench-%d", i);
		snprintf(addr, sizeof(addr), "10.200.%d.%d/16", i / 250, i % 250 + 1);
		assert_int_equal(ip_prefix_parse(addr, &p), 0);
		t0 = now_ms();
		assert_int_equal(nft_ctx_open(&c), 0);
		t_open += now_ms() - t0;
		t0 = now_ms();
		assert_int_equal(nft_bridge_masq_add(c, "bench", cid, "eth0", &p), 0);
		t_add += now_ms() - t0;
		nft_ctx_free(c);
	}
	for (int i = 0; i < 20; i++) {
		char cid[64];
		NftCtx *c = NULL;

		snprintf(cid, sizeof(cid), "bench-%d", i);
		t0 = now_ms();
		assert_int_equal(nft_ctx_open(&c), 0);
		assert_int_equal(nft_bridge_masq_del(c, "bench", cid, "eth0"), 0);
		nft_ctx_free(c);
		t_del += now_ms() - t0;
	}
	printf("# bench: nft_ctx_open %.3f ms, masq_add batch %.3f ms (avg of %d, up to %d elements), "
	       "open+masq_del %.3f ms (at %d elements)\n",
	       t_open / N, t_add / N, N, N, t_del / 20, N);
	/* generous bound: catches an accidental full-ruleset cache fill per element */
	assert_true(t_add / N < 50.0);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_apply_errors, setup),
		cmocka_unit_test_setup(test_check, setup),
		cmocka_unit_test_setup(test_list_json, setup),
		cmocka_unit_test_setup(test_nfnl_call, setup),
		cmocka_unit_test_setup(test_attachment_id, setup),
		cmocka_unit_test_setup(test_masq_add_idempotent, setup),
		cmocka_unit_test_setup(test_masq_del, setup),
		cmocka_unit_test_setup(test_portmap_present, setup),
		cmocka_unit_test_setup(test_gc, setup),
		cmocka_unit_test_setup(test_macspoof, setup),
		cmocka_unit_test_setup(test_flush_all, setup),
		cmocka_unit_test_setup(test_concurrent_add, setup),
		cmocka_unit_test_setup(test_cost, setup),
	};
	int r;

	if (geteuid() != 0) {
		printf("SKIP: test-nft: needs root (private network namespace + nftables)\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		printf("SKIP: test-nft: unshare(CLONE_NEWNET): %m\n");
		return 77;
	}
	if (nft_ctx_open(&ctx) < 0 ||
	    nft_apply(ctx, "add table inet weftprobe; delete table inet weftprobe", NULL) < 0) {
		printf("SKIP: test-nft: kernel nf_tables not usable\n");
		return 77;
	}
	r = cmocka_run_group_tests(tests, NULL, NULL);
	nft_ctx_free(ctx);
	return r;
}
