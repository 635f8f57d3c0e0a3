/* SPDX-License-Identifier: Apache-2.0 */
/*
 * floor: the kernel work of the bridge plugin's pod ADD and DEL, and nothing else — no exec, no
 * JSON, no IPAM store, no file I/O beyond the sysctls the plugin writes. It is the floor every ADD
 * and DEL figure in bench/REPORT.md is set against. Built by bench/run against the same libweft.a
 * the plugins link (src/shared/nl, src/shared/nft, src/shared/netns), so each request below is the
 * very message the plugin sends.
 *
 *   floor [-j WORKERS] [-l LATFILE] [-H] [-M] [-b BRIDGE] -p POD_NETNS_PATTERN -s A.B -o add|del FROM TO
 *
 * Runs in the node namespace (bench/run: `ip netns exec <node> floor ...`). POD_NETNS_PATTERN has
 * one %d (the pod index, FROM..TO); pod i gets A.B.(i/250).(i%250+2)/16 behind gateway A.B.0.1.
 * -H: hairpin on the bridge port (flannel's chain); -M: ipMasq (the nft elements the plugin adds:
 * nft_bridge_masq_add/del, one batch each). WORKERS processes (default 1) take pods round-robin
 * (-j 2 with 100 pods: "100 at once" on this 2-core machine, the best any plugin could do).
 *
 * Per-pod work, in the plugin's order (the request the plugin sends in brackets):
 *   ADD: open the pod netns; a netlink socket in the node and one in the pod; veth with the peer
 *        created in the pod (RTM_NEWLINK veth + IFLA_NET_NS_FD); look up both ends (the ifindexes
 *        are needed; 2 x RTM_GETLINK); host end: master bridge, [hairpin], up (RTM_NEWLINK x 2-3);
 *        pod side sysctls accept_dad=0, arp_notify=1 (setns in and out, two /proc/sys writes);
 *        pod end up, address, default route via the gateway (RTM_NEWLINK, RTM_NEWADDR,
 *        RTM_NEWROUTE); [-M: one nft batch adding the masquerade elements].
 *   DEL: open the pod netns, a socket in it, delete the pod end by name (RTM_DELLINK; the host
 *        end goes with it); [-M: one nft batch removing the elements].
 * Node-wide set-up the plugin re-checks on every ADD (bridge exists and is up, its accept_ra and
 * MAC, the gateway address, ip_forward) is done once here, before anything is timed.
 *
 * Output: per pod "<index> <wall_us> 0 <rc>" to LATFILE (default stdout), as benchexec prints;
 * then on stderr "cpu_us <user+system CPU of the workers>" and "total_us <wall of the whole list>".
 * Exit 0 if every pod succeeded.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shared/ip/ip-addr.h"
#include "shared/netns/netns.h"
#include "shared/nft/nft-bridge.h"
#include "shared/nft/nft.h"
#include "shared/nl/nl.h"

static const char *bridge = "wb-floor";
static const char *pattern;
static unsigned char sa, sb;
static bool hairpin, masq;

static long long now_us(void) {
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static IpPrefix pod_prefix(int i) {
	IpPrefix p = { .addr = { .family = AF_INET }, .len = 16 };
	uint8_t *b = (uint8_t *) &p.addr.in;

	b[0] = sa, b[1] = sb, b[2] = (uint8_t) (i / 250), b[3] = (uint8_t) (i % 250 + 2);
	return p;
}

static IpAddr gateway(void) {
	IpAddr a = { .family = AF_INET };
	uint8_t *b = (uint8_t *) &a.in;

	b[0] = sa, b[1] = sb, b[2] = 0, b[3] = 1;
	return a;
}

static int setup_node(int *ret_br) {
	_cleanup_(nl_sock_freep) NlSock *host = NULL;
	IpPrefix gw = { .addr = gateway(), .len = 16 };
	char key[64 + IFNAMSIZ];
	NlLink br;
	int r;

	if ((r = nl_sock_open(&host)) < 0)
		return r;
	r = nl_bridge_create(host, &(NlBridgeConfig) { .name = bridge });
	if (r < 0 && r != -EEXIST)
		return r;
	if ((r = nl_link_get(host, bridge, 0, &br)) < 0)
		return r;
	if ((r = nl_link_set_up(host, br.ifindex, true)) < 0)
		return r;
	if (br.has_mac && (r = nl_link_set_mac(host, br.ifindex, br.mac)) < 0)
		return r;
	r = nl_addr_add(host, br.ifindex, &gw, 0);
	if (r < 0 && r != -EEXIST)
		return r;
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_ra", bridge);
	(void) sysctl_write(key, "0");
	if ((r = sysctl_write("net/ipv4/ip_forward", "1")) < 0)
		return r;
	*ret_br = br.ifindex;
	return 0;
}

static int pod_sysctls(int netns_fd, const char *ifname) {
	char key[128];
	int saved, r;

	r = netns_enter(netns_fd, &saved);
	if (r < 0)
		return r;
	snprintf(key, sizeof(key), "net/ipv6/conf/%s/accept_dad", ifname);
	(void) sysctl_write(key, "0");
	snprintf(key, sizeof(key), "net/ipv4/conf/%s/arp_notify", ifname);
	(void) sysctl_write(key, "1");
	netns_leave(saved);
	return 0;
}

static int pod_add(int i, int br_ifindex) {
	_cleanup_(nl_sock_freep) NlSock *host = NULL, *cont = NULL;
	_cleanup_close_ int fd = -EBADF;
	char path[4096], name[IFNAMSIZ], cid[32];
	IpPrefix addr = pod_prefix(i);
	NlLink h, c;
	NlRoute rt;
	uint32_t rnd;
	int r;

	snprintf(path, sizeof(path), pattern, i);
	if ((fd = netns_open(path)) < 0)
		return fd;
	if ((r = nl_sock_open(&host)) < 0 || (r = nl_sock_open_netns(fd, &cont)) < 0)
		return r;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	snprintf(name, sizeof(name), "veth%08x", rnd);
	if ((r = nl_veth_create(host, name, "eth0", fd, 0, NULL)) < 0)
		return r;
	if ((r = nl_link_get(host, name, 0, &h)) < 0 || (r = nl_link_get(cont, "eth0", 0, &c)) < 0)
		return r;
	if ((r = nl_link_set_master(host, h.ifindex, br_ifindex)) < 0)
		return r;
	if (hairpin && (r = nl_bridge_port_set_hairpin(host, h.ifindex, true)) < 0)
		return r;
	if ((r = nl_link_set_up(host, h.ifindex, true)) < 0)
		return r;
	if ((r = pod_sysctls(fd, "eth0")) < 0)
		return r;
	if ((r = nl_link_set_up(cont, c.ifindex, true)) < 0)
		return r;
	if ((r = nl_addr_add(cont, c.ifindex, &addr, 0)) < 0)
		return r;
	nl_route_init(&rt);
	rt.dst = (IpPrefix) { .addr = { .family = AF_INET }, .len = 0 };
	rt.gw = gateway();
	rt.oif = c.ifindex;
	if ((r = nl_route_add(cont, &rt, 0)) < 0)
		return r;
	if (masq) {
		_cleanup_nft_ctx_ NftCtx *nft = NULL;

		snprintf(cid, sizeof(cid), "floor-%d", i);
		if ((r = nft_ctx_open(&nft)) < 0 || (r = nft_bridge_masq_add(nft, "floor", cid, "eth0", &addr)) < 0)
			return r;
	}
	return 0;
}

static int pod_del(int i) {
	_cleanup_(nl_sock_freep) NlSock *cont = NULL;
	_cleanup_close_ int fd = -EBADF;
	char path[4096], cid[32];
	int r;

	snprintf(path, sizeof(path), pattern, i);
	if ((fd = netns_open(path)) < 0)
		return fd;
	if ((r = nl_sock_open_netns(fd, &cont)) < 0)
		return r;
	if ((r = nl_link_del_by_name(cont, "eth0")) < 0)
		return r;
	if (masq) {
		_cleanup_nft_ctx_ NftCtx *nft = NULL;

		snprintf(cid, sizeof(cid), "floor-%d", i);
		if ((r = nft_ctx_open(&nft)) < 0 || (r = nft_bridge_masq_del(nft, "floor", cid, "eth0")) < 0)
			return r;
	}
	return 0;
}

/* One worker: pods from+w, from+w+step, ...; one latency line per pod on `out` (a pipe). */
static int worker(bool add, int br, int from, int to, int w, int step, FILE *out) {
	int failed = 0;

	for (int i = from + w; i <= to; i += step) {
		long long t0 = now_us();
		int r = add ? pod_add(i, br) : pod_del(i);
		long long t1 = now_us();

		if (r < 0) {
			fprintf(stderr, "floor: pod %d: %s: %s\n", i, add ? "add" : "del", strerror(-r));
			failed++;
		}
		fprintf(out, "%d %lld 0 %d\n", i - from, t1 - t0, r < 0 ? 1 : 0);
	}
	fflush(out);
	return failed ? 1 : 0;
}

int main(int argc, char *argv[]) {
	const char *op = NULL, *latfile = NULL, *subnet = NULL;
	int workers = 1, opt, from, to, br = 0, failed = 0, r;
	unsigned a, b;
	FILE *lat = stdout;
	long long t0;

	while ((opt = getopt(argc, argv, "j:l:HMb:p:s:o:")) >= 0) {
		switch (opt) {
		case 'j': workers = atoi(optarg); break;
		case 'l': latfile = optarg; break;
		case 'H': hairpin = true; break;
		case 'M': masq = true; break;
		case 'b': bridge = optarg; break;
		case 'p': pattern = optarg; break;
		case 's': subnet = optarg; break;
		case 'o': op = optarg; break;
		default: goto usage;
		}
	}
	if (!op || !pattern || !subnet || optind + 2 != argc || sscanf(subnet, "%u.%u", &a, &b) != 2 || a > 255 ||
	    b > 255 || (strcmp(op, "add") != 0 && strcmp(op, "del") != 0) || workers < 1)
		goto usage;
	sa = (unsigned char) a, sb = (unsigned char) b;
	from = atoi(argv[optind]);
	to = atoi(argv[optind + 1]);
	if (from < 1 || to < from || to - from >= 250 * 250)
		goto usage;
	if (latfile && !(lat = fopen(latfile, "we"))) {
		fprintf(stderr, "floor: %s: %m\n", latfile);
		return 2;
	}
	if (strcmp(op, "add") == 0 && (r = setup_node(&br)) < 0) {
		fprintf(stderr, "floor: node set-up (bridge %s): %s\n", bridge, strerror(-r));
		return 2;
	}

	struct rusage self0;
	(void) getrusage(RUSAGE_SELF, &self0); /* the node set-up above is not counted */
	t0 = now_us();
	if (workers == 1)
		failed = worker(op[0] == 'a', br, from, to, 0, 1, lat);
	else {
		for (int w = 0; w < workers; w++) {
			pid_t pid = fork();

			if (pid < 0) {
				fprintf(stderr, "floor: fork: %m\n");
				return 2;
			}
			if (pid == 0)
				_exit(worker(op[0] == 'a', br, from, to, w, workers, lat));
		}
		for (int status; wait(&status) > 0;)
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				failed = 1;
	}
	{
		struct rusage self, ch;

		if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &ch) == 0)
			fprintf(stderr, "cpu_us %lld\n",
				self.ru_utime.tv_sec * 1000000LL + self.ru_utime.tv_usec +
						self.ru_stime.tv_sec * 1000000LL + self.ru_stime.tv_usec +
						ch.ru_utime.tv_sec * 1000000LL + ch.ru_utime.tv_usec +
						ch.ru_stime.tv_sec * 1000000LL + ch.ru_stime.tv_usec -
						(self0.ru_utime.tv_sec * 1000000LL + self0.ru_utime.tv_usec +
						 self0.ru_stime.tv_sec * 1000000LL + self0.ru_stime.tv_usec));
	}
	fprintf(stderr, "total_us %lld\n", now_us() - t0);
	if (lat != stdout)
		fclose(lat);
	return failed ? 1 : 0;

usage:
	fprintf(stderr, "usage: floor [-j WORKERS] [-l LATFILE] [-H] [-M] [-b BRIDGE] -p POD_NETNS_PATTERN -s A.B "
			"-o add|del FROM TO\n");
	return 2;
}
