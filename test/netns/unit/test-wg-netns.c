/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The WireGuard device layer against real implementations, through our drivers only (wg(8) is
 * used for a read-only cross-check when installed). The process moves into private mount and
 * network namespaces first: a tmpfs over /run gives wireguard-go a socket directory nobody else
 * sees, and nothing here can touch the host's interfaces.
 *
 *        ns A (this process)                              ns B (fd only)
 *   +-------------------------------+               +-------------------------------+
 *   | va 10.77.0.1/24 ==============|=====veth======|= vb 10.77.0.2/24              |
 *   | wgt-a 10.78.0.1/24 :51820     |   UDP tunnel  | wgt-b 10.78.0.2/24 :51821     |
 *   |   peer B  allowed 10.78.0.2/32|<=============>|   peer A  allowed 10.78.0.1/32|
 *   |   peer X  (a dummy: updated, removed)         |                               |
 *   +-------------------------------+               +-------------------------------+
 *
 * For each driver this kernel can run: wireguard-go (the UAPI driver, skipped with a reason when
 * wireguard-go is not installed) and the kernel module (the genl driver, skipped with a reason
 * when there is no wireguard module, as on this project's CI machine): ensure (twice), set the
 * whole state on both sides, ping across the tunnel, read back the handshake and the byte counters,
 * change and remove a dummy peer without disturbing the real one, remove the real one and see the
 * tunnel stop, destroy (twice). Needs root and /dev/net/tun; exits 77 otherwise.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/wireguard/wg-device.h"
#include "daemon/wireguard/wg-genl.h"
#include "daemon/wireguard/wg-uapi.h"
#include "shared/netns/netns.h"
#include "shared/nl/nl.h"

static int a_fd = -EBADF, b_fd = -EBADF;
static NlSock *sa, *sb;
static WgKey priv_a, priv_b, pub_a, pub_b, key_x;
static const WgDriverOps *ops;

static IpPrefix pfx(const char *s) {
	IpPrefix p;
	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

/* Runs `f(arg)` with this thread in namespace B. */
static int in_b(int (*f)(const char *), const char *arg) {
	int saved, r;

	assert_int_equal(netns_enter(b_fd, &saved), 0);
	r = f(arg);
	netns_leave(saved);
	return r;
}

static int set_in_b(const WgDevice *d) {
	int saved, r;

	assert_int_equal(netns_enter(b_fd, &saved), 0);
	r = ops->set(d);
	netns_leave(saved);
	return r;
}

static WgDevice *get_in(bool b, const char *name) {
	WgDevice *d = NULL;
	int saved = -EBADF, r;

	if (b)
		assert_int_equal(netns_enter(b_fd, &saved), 0);
	r = ops->get(name, &d);
	if (b)
		netns_leave(saved);
	if (r < 0)
		fail_msg("get %s: %s", name, strerror(-r));
	return d;
}

static void link_up_with(NlSock *s, const char *name, const char *addr) {
	NlLink l;
	IpPrefix p = pfx(addr);

	assert_int_equal(nl_link_get(s, name, 0, &l), 0);
	assert_int_equal(nl_addr_add(s, l.ifindex, &p, 0), 0);
	assert_int_equal(nl_link_set_up(s, l.ifindex, true), 0);
}

static bool ping_ok(const char *ip) {
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ping -n -q -c 3 -i 0.2 -W 2 %s >/dev/null 2>&1", ip);
	return system(cmd) == 0;
}

static void add_peer(WgDevice *d, const WgKey *k, const char *endpoint, uint16_t port, const char *allowed,
		     uint16_t keepalive) {
	WgPeer *p;
	IpPrefix a = pfx(allowed);

	assert_int_equal(wg_device_add_peer(d, k, &p), 0);
	assert_int_equal(ip_addr_parse(endpoint, &p->endpoint.addr), 0);
	p->endpoint.port = port;
	p->persistent_keepalive = keepalive;
	assert_int_equal(wg_peer_add_allowed_ip(p, &a), 0);
}

/* `wg show IFNAME dump` in namespace A, for inspection only: our own get() is what is asserted
 * first; this checks that wg(8) reads the same device the same way. */
static void cross_check_wg(const char *name, const WgKey *pub, uint16_t port, const WgKey *peer, const char *endpoint) {
	char cmd[128], line[1024], want[256], b64[WG_KEY_B64_LEN + 1], pb64[WG_KEY_B64_LEN + 1];
	bool dev_ok = false, peer_ok = false;
	unsigned peers = 0;
	FILE *f;

	if (system("command -v wg >/dev/null 2>&1") != 0) {
		printf("# wg(8) cross-check skipped: wireguard-tools not installed\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "wg show %s dump", name);
	f = popen(cmd, "r");
	assert_non_null(f);
	wg_key_to_base64(pub, b64);
	wg_key_to_base64(peer, pb64);
	/* line 1: private-key public-key listen-port fwmark; then per peer: public-key psk endpoint
	 * allowed-ips latest-handshake rx tx keepalive */
	for (unsigned n = 0; fgets(line, sizeof(line), f); n++) {
		if (n == 0) {
			snprintf(want, sizeof(want), "\t%s\t%u\t", b64, port);
			dev_ok = strstr(line, want) != NULL;
			continue;
		}
		peers++;
		snprintf(want, sizeof(want), "%s\t(none)\t%s\t", pb64, endpoint);
		if (startswith(line, want))
			peer_ok = true;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(dev_ok);
	assert_true(peer_ok);
	assert_int_equal(peers, 1);
	printf("# wg(8) cross-check of %s: public key, port and the one peer agree\n", name);
}

static void scenario(void) {
	_cleanup_(wg_device_freep) WgDevice *da = NULL, *db = NULL, *got = NULL, *gb = NULL, *only_b = NULL;
	WgDevice *g;
	WgPeer *pb, *px, upd = {};
	uint64_t rx_before;
	NlLink l;

	/* ensure: created, then already there */
	assert_int_equal(ops->ensure("wgt-a"), 1);
	assert_int_equal(ops->ensure("wgt-a"), 0);
	assert_int_equal(in_b(ops->ensure, "wgt-b"), 1);
	assert_int_equal(in_b(ops->ensure, "wgt-b"), 0);
	/* a link of that name that is not a WireGuard device is refused, not adopted */
	assert_int_equal(ops->ensure("va"), -EEXIST);
	link_up_with(sa, "wgt-a", "10.78.0.1/24");
	link_up_with(sb, "wgt-b", "10.78.0.2/24");

	/* the whole state, both sides */
	assert_int_equal(wg_device_new("wgt-a", &da), 0);
	da->has_private_key = true;
	da->private_key = priv_a;
	da->listen_port = 51820;
	add_peer(da, &pub_b, "10.77.0.2", 51821, "10.78.0.2/32", 0);
	add_peer(da, &key_x, "10.77.0.9", 9, "10.99.0.0/24", 25);
	assert_int_equal(ops->set(da), 0);
	assert_int_equal(wg_device_new("wgt-b", &db), 0);
	db->has_private_key = true;
	db->private_key = priv_b;
	db->listen_port = 51821;
	add_peer(db, &pub_a, "10.77.0.1", 51820, "10.78.0.1/32", 0);
	assert_int_equal(set_in_b(db), 0);

	/* read back before any traffic */
	got = get_in(false, "wgt-a");
	assert_string_equal(got->name, "wgt-a");
	assert_true(got->ifindex > 0);
	assert_true(got->has_public_key);
	assert_true(wg_key_equal(&got->public_key, &pub_a));
	assert_int_equal(got->listen_port, 51820);
	assert_int_equal(got->n_peers, 2);
	px = wg_device_find_peer(got, &key_x);
	assert_non_null(px);
	assert_int_equal(px->persistent_keepalive, 25);
	assert_int_equal(px->n_allowed_ips, 1);
	assert_true(ip_prefix_equal(&px->allowed_ips[0], &(IpPrefix[1]) { pfx("10.99.0.0/24") }[0]));
	got = wg_device_free(got);

	/* traffic through the tunnel */
	assert_true(ping_ok("10.78.0.2"));
	got = get_in(false, "wgt-a");
	pb = wg_device_find_peer(got, &pub_b);
	assert_non_null(pb);
	assert_true(pb->last_handshake.tv_sec > 0);
	assert_true(pb->rx_bytes > 0);
	assert_true(pb->tx_bytes > 0);
	assert_int_equal(pb->endpoint.port, 51821);
	printf("# %s: wgt-a peer B: handshake %lld, rx %llu, tx %llu bytes\n", ops->name,
	       (long long) pb->last_handshake.tv_sec, (unsigned long long) pb->rx_bytes,
	       (unsigned long long) pb->tx_bytes);
	rx_before = pb->rx_bytes;
	got = wg_device_free(got);
	gb = get_in(true, "wgt-b");
	assert_int_equal(gb->n_peers, 1);
	assert_true(gb->peers[0].last_handshake.tv_sec > 0);
	assert_true(gb->peers[0].rx_bytes > 0);

	/* one peer changed: the other keeps its session and counters */
	upd.public_key = key_x;
	assert_int_equal(wg_peer_add_allowed_ip(&upd, &(IpPrefix[1]) { pfx("10.98.0.0/24") }[0]), 0);
	assert_int_equal(ops->update_peer("wgt-a", &upd), 0);
	wg_peer_done(&upd);
	got = get_in(false, "wgt-a");
	assert_int_equal(got->n_peers, 2);
	px = wg_device_find_peer(got, &key_x);
	assert_int_equal(px->n_allowed_ips, 1);
	assert_true(ip_prefix_equal(&px->allowed_ips[0], &(IpPrefix[1]) { pfx("10.98.0.0/24") }[0]));
	assert_int_equal(px->persistent_keepalive, 0);
	pb = wg_device_find_peer(got, &pub_b);
	assert_true(pb->rx_bytes >= rx_before);
	assert_true(pb->last_handshake.tv_sec > 0);
	assert_int_equal(pb->n_allowed_ips, 1);
	got = wg_device_free(got);

	/* one peer removed: gone, the other still carries traffic */
	assert_int_equal(ops->remove_peer("wgt-a", &key_x), 0);
	assert_int_equal(ops->remove_peer("wgt-a", &key_x), 0); /* idempotent */
	got = get_in(false, "wgt-a");
	assert_int_equal(got->n_peers, 1);
	assert_null(wg_device_find_peer(got, &key_x));
	got = wg_device_free(got);
	assert_true(ping_ok("10.78.0.2"));
	cross_check_wg("wgt-a", &pub_a, 51820, &pub_b, "10.77.0.2:51821");

	/* the real peer removed: the tunnel stops */
	assert_int_equal(ops->remove_peer("wgt-a", &pub_b), 0);
	got = get_in(false, "wgt-a");
	assert_int_equal(got->n_peers, 0);
	got = wg_device_free(got);
	assert_false(ping_ok("10.78.0.2"));

	/* set puts both back; a set with B only then replaces the peer list (X goes) */
	assert_int_equal(ops->set(da), 0);
	got = get_in(false, "wgt-a");
	assert_int_equal(got->n_peers, 2);
	got = wg_device_free(got);
	assert_int_equal(wg_device_new("wgt-a", &only_b), 0);
	only_b->has_private_key = true;
	only_b->private_key = priv_a;
	only_b->listen_port = 51820;
	add_peer(only_b, &pub_b, "10.77.0.2", 51821, "10.78.0.2/32", 0);
	assert_int_equal(ops->set(only_b), 0);
	got = get_in(false, "wgt-a");
	assert_int_equal(got->n_peers, 1);
	assert_non_null(wg_device_find_peer(got, &pub_b));
	got = wg_device_free(got);
	assert_true(ping_ok("10.78.0.2"));

	/* destroy: gone, twice */
	assert_int_equal(ops->destroy("wgt-a"), 0);
	assert_int_equal(nl_link_get(sa, "wgt-a", 0, &l), -ENODEV);
	assert_int_equal(ops->get("wgt-a", &g), -ENODEV);
	assert_int_equal(ops->destroy("wgt-a"), 0);
	assert_int_equal(in_b(ops->destroy, "wgt-b"), 0);
	assert_int_equal(nl_link_get(sb, "wgt-b", 0, &l), -ENODEV);
}

static void test_uapi(void **state) {
	struct stat st;

	if (!wg_uapi_program_available()) {
		printf("# SKIP wireguard-go driver: wireguard-go not installed (tools/install-deps.sh)\n");
		skip();
	}
	if (stat("/dev/net/tun", &st) < 0) {
		printf("# SKIP wireguard-go driver: no /dev/net/tun\n");
		skip();
	}
	ops = &wg_uapi_driver;
	scenario();
}

static void test_genl(void **state) {
	uint16_t id;
	const WgDriverOps *d;
	const char *reason;
	int r = wg_genl_resolve_family(&id);

	/* The family exists once the module is loaded; creating a link would load an installed one. */
	if (r < 0 && wg_driver_detect(&d, &reason) >= 0 && d == &wg_genl_driver) {
		r = wg_genl_driver.ensure("wgt-probe");
		if (r >= 0) {
			(void) wg_genl_driver.destroy("wgt-probe");
			r = wg_genl_resolve_family(&id);
		}
	}
	if (r < 0) {
		printf("# SKIP kernel driver: this kernel has no wireguard module (genl family: %s); its messages "
		       "are checked by test-wg-genl\n",
		       strerror(-r));
		skip();
	}
	ops = &wg_genl_driver;
	scenario();
}

static void test_detect(void **state) {
	const WgDriverOps *d = NULL;
	const char *reason = NULL;
	uint16_t id;
	int r = wg_driver_detect(&d, &reason);

	assert_non_null(reason);
	printf("# detected driver: %s (%s)\n", r < 0 ? "none" : wg_driver_name(d), reason);
	if (wg_genl_resolve_family(&id) >= 0)
		assert_ptr_equal(d, &wg_genl_driver);
	else if (r >= 0 && d == &wg_uapi_driver)
		assert_true(wg_uapi_program_available());
}

/* Stops any process left in namespace A or B (a wireguard-go a failed assertion did not destroy):
 * only processes inside the namespaces this test created, found by their namespace inode. */
static void kill_leftovers(void) {
	struct stat na, nb;
	DIR *dir;
	struct dirent *de;

	if (fstat(a_fd, &na) < 0 || fstat(b_fd, &nb) < 0)
		return;
	dir = opendir("/proc");
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char path[64];
		struct stat st;
		int pid = atoi(de->d_name);

		if (pid <= 1 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
		if (stat(path, &st) < 0)
			continue;
		if ((st.st_ino == na.st_ino && st.st_dev == na.st_dev) ||
		    (st.st_ino == nb.st_ino && st.st_dev == nb.st_dev)) {
			printf("# stopping leftover pid %d\n", pid);
			kill(pid, SIGTERM);
		}
	}
	closedir(dir);
}

static int teardown(void **state) {
	/* best effort: a failed scenario leaves devices behind */
	if (ops) {
		(void) ops->destroy("wgt-a");
		(void) in_b(ops->destroy, "wgt-b");
	}
	return 0;
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect),
		cmocka_unit_test_teardown(test_uapi, teardown),
		cmocka_unit_test_teardown(test_genl, teardown),
	};
	int r;

	if (geteuid() != 0) {
		printf("SKIP: test-wg-netns: needs root\n");
		return 77;
	}
	/* A private mount namespace with its own /run: wireguard-go's sockets (/var/run/wireguard)
	 * are seen by this process and its children only. */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
		printf("SKIP: test-wg-netns: private /run: %m\n");
		return 77;
	}
	if (mkdir("/run/wireguard", 0700) < 0)
		return 1;
	if (unshare(CLONE_NEWNET) < 0) {
		printf("SKIP: test-wg-netns: unshare(CLONE_NEWNET): %m\n");
		return 77;
	}
	a_fd = netns_open_current();
	if (unshare(CLONE_NEWNET) < 0)
		return 1;
	b_fd = netns_open_current();
	if (a_fd < 0 || b_fd < 0 || setns(a_fd, CLONE_NEWNET) < 0)
		return 1;
	if (nl_sock_open(&sa) < 0 || nl_sock_open_netns(b_fd, &sb) < 0)
		return 1;
	if (nl_link_set_up(sa, 1, true) < 0 || nl_link_set_up(sb, 1, true) < 0)
		return 1;
	if (nl_veth_create(sa, "va", "vb", b_fd, 0, NULL) < 0)
		return 1;
	{
		NlLink l;
		IpPrefix p;
		if (nl_link_get(sa, "va", 0, &l) < 0 || ip_prefix_parse("10.77.0.1/24", &p) < 0 ||
		    nl_addr_add(sa, l.ifindex, &p, 0) < 0 || nl_link_set_up(sa, l.ifindex, true) < 0)
			return 1;
		if (nl_link_get(sb, "vb", 0, &l) < 0 || ip_prefix_parse("10.77.0.2/24", &p) < 0 ||
		    nl_addr_add(sb, l.ifindex, &p, 0) < 0 || nl_link_set_up(sb, l.ifindex, true) < 0)
			return 1;
	}
	if (wg_key_generate_private(&priv_a) < 0 || wg_key_generate_private(&priv_b) < 0 ||
	    wg_key_public_from_private(&priv_a, &pub_a) < 0 || wg_key_public_from_private(&priv_b, &pub_b) < 0 ||
	    wg_key_generate_private(&key_x) < 0)
		return 1;

	r = cmocka_run_group_tests(tests, NULL, NULL);
	kill_leftovers();
	nl_sock_free(sb);
	nl_sock_free(sa);
	safe_close(b_fd);
	safe_close(a_fd);
	return r;
}
