/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The etcd datastore against a real etcd (/usr/bin/etcd) that this test starts itself on free
 * 127.0.0.1 ports with a temporary data dir, and kills at the end. Each test uses its own key
 * prefix so they do not see each other's leases.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/datastore/datastore.h"
#include "shared/client/etcd-client.h"

#define ETCD_BIN "/usr/bin/etcd"

static struct {
	pid_t pid;
	int client_port, peer_port;
	char dir[64];
	char endpoint[64];
} etcd = { .pid = -1 };

static int free_port(void) {
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *) &sa, &l) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static uint64_t now_ms(void) {
	return etcd_now_usec() / 1000u;
}

/* Polls until etcd answers a range (or the time runs out). */
static bool etcd_wait_ready(int timeout_ms) {
	EtcdClient *c = NULL;
	uint64_t end = now_ms() + (uint64_t) timeout_ms;
	bool ok = false;

	if (etcd_client_new(etcd.endpoint, &c) < 0)
		return false;
	etcd_client_set_timeouts(c, 200, 500);
	while (now_ms() < end) {
		if (etcd_range(c, "/ready", NULL, NULL, NULL, NULL) >= 0) {
			ok = true;
			break;
		}
		usleep(50 * 1000);
	}
	etcd_client_free(c);
	return ok;
}

static int etcd_start(void) {
	char client_url[64], peer_url[64], cluster[96], data[96], log[96];
	pid_t pid;

	snprintf(client_url, sizeof(client_url), "http://127.0.0.1:%d", etcd.client_port);
	snprintf(peer_url, sizeof(peer_url), "http://127.0.0.1:%d", etcd.peer_port);
	snprintf(cluster, sizeof(cluster), "t=%s", peer_url);
	snprintf(data, sizeof(data), "%s/data", etcd.dir);
	snprintf(log, sizeof(log), "%s/etcd.log", etcd.dir);

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execl(ETCD_BIN, ETCD_BIN, "--name", "t", "--data-dir", data, "--listen-client-urls", client_url,
		      "--advertise-client-urls", client_url, "--listen-peer-urls", peer_url,
		      "--initial-advertise-peer-urls", peer_url, "--initial-cluster", cluster, "--heartbeat-interval",
		      "50", "--election-timeout", "500", "--logger", "zap", "--log-level", "error", (char *) NULL);
		_exit(127);
	}
	etcd.pid = pid;
	if (!etcd_wait_ready(15000)) {
		fprintf(stderr, "etcd did not come up; see %s\n", log);
		return -ETIMEDOUT;
	}
	return 0;
}

static void etcd_stop(void) {
	if (etcd.pid <= 0)
		return;
	kill(etcd.pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(etcd.pid, NULL, WNOHANG) == etcd.pid) {
			etcd.pid = -1;
			return;
		}
		usleep(50 * 1000);
	}
	kill(etcd.pid, SIGKILL);
	waitpid(etcd.pid, NULL, 0);
	etcd.pid = -1;
}

static int group_setup(void **state) {
	snprintf(etcd.dir, sizeof(etcd.dir), "/tmp/test-datastore-etcd.XXXXXX");
	if (!mkdtemp(etcd.dir))
		return -1;
	etcd.client_port = free_port();
	etcd.peer_port = free_port();
	while (etcd.peer_port == etcd.client_port)
		etcd.peer_port = free_port();
	snprintf(etcd.endpoint, sizeof(etcd.endpoint), "http://127.0.0.1:%d", etcd.client_port);
	return etcd_start() < 0 ? -1 : 0;
}

static int group_teardown(void **state) {
	char cmd[128];

	etcd_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", etcd.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", etcd.dir);
	return 0;
}

/* ---- helpers ---- */

static Datastore *ds_open_ttl(const char *prefix, int ttl) {
	const DatastoreOps *ops = datastore_ops_find(DATASTORE_ETCD);
	DatastoreConfig cfg = {
		.kind = DATASTORE_ETCD,
		/* a dead endpoint first: fail-over must find the live one */
		.endpoints = NULL,
		.prefix = prefix,
		.lease_ttl_sec = ttl,
	};
	char eps[160];
	Datastore *d = NULL;
	int r;

	assert_non_null(ops);
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,%s", free_port(), etcd.endpoint);
	cfg.endpoints = eps;
	r = ops->open(&cfg, &d);
	if (r < 0)
		fail_msg("open: %d", r);
	return d;
}

static Datastore *ds_open(const char *prefix) {
	return ds_open_ttl(prefix, 30);
}

static void ds_free(Datastore *d) {
	datastore_etcd_ops.free(d);
}

static NodeLease self_lease(const char *name, int n) {
	NodeLease l = {};
	char ip[32];

	l.node_name = (char *) name; /* a view: acquire() copies it */
	snprintf(ip, sizeof(ip), "192.0.2.%d", n);
	assert_int_equal(ip_addr_parse(ip, &l.public_ip), 0);
	snprintf(l.backend, sizeof(l.backend), "vxlan");
	l.has_vtep_mac = true;
	memcpy(l.vtep_mac, (uint8_t[]) { 0x02, 0, 0, 0, 0, (uint8_t) n }, 6);
	return l;
}

static IpPrefix prefix(const char *s) {
	IpPrefix p;

	assert_int_equal(ip_prefix_parse(s, &p), 0);
	return p;
}

static const char *pstr(const IpPrefix *p) {
	static char buf[4][IP_PREFIX_STRLEN];
	static int i;

	return ip_prefix_to_string(p, buf[i++ % 4]);
}

static int acquire(Datastore *d, const char *net, unsigned len, const char *name, int n, const char *prev,
		   NodeLease *ret) {
	IpPrefix network = prefix(net), p;
	NodeLease self = self_lease(name, n);

	node_lease_done(ret); /* *ret is the caller's, from an earlier call or {} */
	if (prev)
		p = prefix(prev);
	return datastore_etcd_ops.acquire(d, &network, len, &self, prev ? &p : NULL, ret);
}

/* Events as text lines, so tests can ask "has X happened". */
typedef struct Recorder {
	char lines[256][512];
	size_t n;
} Recorder;

static void record(const DatastoreEvent *ev, void *userdata) {
	Recorder *rec = userdata;
	char *l;
	char ip[IP_ADDR_STRLEN];

	if (rec->n >= ELEMENTSOF(rec->lines))
		return;
	l = rec->lines[rec->n++];
	switch (ev->type) {
	case DS_EVENT_RESYNC: {
		int o = snprintf(l, 512, "RESYNC %zu", ev->n_nodes);
		for (size_t i = 0; i < ev->n_nodes && o < 120; i++)
			o += snprintf(l + o, (size_t) (512 - o), " %s", ev->nodes[i].node_name);
		break;
	}
	case DS_EVENT_NODE_UPSERT:
		snprintf(l, 512, "UPSERT %s %s %s %s", ev->node->node_name, pstr(&ev->node->subnet),
			 ip_addr_to_string(&ev->node->public_ip, ip), ev->node->has_vtep_mac ? "mac" : "nomac");
		break;
	case DS_EVENT_NODE_DELETE:
		snprintf(l, 512, "DELETE %s %s", ev->node->node_name, pstr(&ev->node->subnet));
		break;
	case DS_EVENT_CONNECTION: snprintf(l, 512, "CONNECTION %s", ev->connected ? "true" : "false"); break;
	case DS_EVENT_SELF_RECREATED: snprintf(l, 512, "SELF_RECREATED"); break;
	}
}

/* Index of the first line at or after `from` starting with `what`, or -1. */
static int rec_find(const Recorder *rec, size_t from, const char *what) {
	for (size_t i = from; i < rec->n; i++)
		if (startswith(rec->lines[i], what))
			return (int) i;
	return -1;
}

static void rec_dump(const Recorder *rec) {
	for (size_t i = 0; i < rec->n; i++)
		fprintf(stderr, "  event %zu: %s\n", i, rec->lines[i]);
}

typedef struct Wait {
	const Recorder *rec;
	size_t from;
	const char *what;
} Wait;

/*
 * Runs the datastores' event loop (epoll on get_fd(), bounded by next_timeout_ms()) like weftd does,
 * until the recorder has a line starting with `what` (if given) or timeout_ms passes. Returns the
 * line's index, -1 on timeout without it, or a dispatch() error.
 */
static int pump(Datastore **ds, size_t n, int timeout_ms, const Recorder *rec, size_t from, const char *what) {
	uint64_t end = now_ms() + (uint64_t) timeout_ms;
	struct epoll_event evs[8];
	int epfd = epoll_create1(EPOLL_CLOEXEC), idx = -1;

	assert_true(epfd >= 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_ADD, datastore_etcd_ops.get_fd(ds[i]),
					   &(struct epoll_event) { .events = EPOLLIN, .data.u32 = (uint32_t) i }),
				 0);
	for (;;) {
		uint64_t now = now_ms();
		int t;

		if (rec && what && (idx = rec_find(rec, from, what)) >= 0)
			break;
		if (now >= end)
			break;
		t = (int) (end - now);
		for (size_t i = 0; i < n; i++) {
			int nt = datastore_etcd_ops.next_timeout_ms(ds[i]);
			if (nt >= 0 && nt < t)
				t = nt;
		}
		(void) epoll_wait(epfd, evs, (int) ELEMENTSOF(evs), t);
		for (size_t i = 0; i < n; i++) {
			int r = datastore_etcd_ops.dispatch(ds[i]);
			if (r < 0) {
				close(epfd);
				return r;
			}
		}
	}
	close(epfd);
	return idx;
}

static EtcdClient *raw_client(void) {
	EtcdClient *c = NULL;

	assert_int_equal(etcd_client_new(etcd.endpoint, &c), 0);
	return c;
}

/* The stored value of a key ("" if absent) and its lease. */
static char *raw_get(const char *key, int64_t *ret_lease) {
	EtcdClient *c = raw_client();
	EtcdKv *kvs = NULL;
	size_t n = 0;
	char *v;

	assert_int_equal(etcd_range(c, key, NULL, &kvs, &n, NULL), 0);
	v = strdup(n > 0 ? kvs[0].value : "");
	if (ret_lease)
		*ret_lease = n > 0 ? kvs[0].lease : 0;
	etcd_kvs_free(kvs, n);
	etcd_client_free(c);
	return v;
}

/* ---- tests ---- */

static void test_ops_find(void **state) {
	DatastoreKind k;

	assert_ptr_equal(datastore_ops_find(DATASTORE_ETCD), &datastore_etcd_ops);
	assert_ptr_equal(datastore_ops_find(DATASTORE_KUBERNETES), &datastore_kube_ops);
	assert_null(datastore_ops_find(_DATASTORE_KIND_MAX));
	/* the names, as --datastore takes them */
	assert_int_equal(datastore_kind_from_string("etcd", &k), 0);
	assert_int_equal(k, DATASTORE_ETCD);
	assert_int_equal(datastore_kind_from_string("kubernetes", &k), 0);
	assert_int_equal(k, DATASTORE_KUBERNETES);
	assert_string_equal(datastore_kind_to_string(DATASTORE_KUBERNETES), "kubernetes");
	assert_int_equal(datastore_kind_from_string("consul", &k), -EINVAL);
	assert_int_equal(datastore_kind_from_string(NULL, &k), -EINVAL);
	assert_null(datastore_kind_to_string(_DATASTORE_KIND_MAX));
}

static void test_open_unreachable(void **state) {
	DatastoreConfig cfg = { .kind = DATASTORE_ETCD, .prefix = "/t/x" };
	char eps[64];
	Datastore *d = NULL;
	int r;

	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d", free_port());
	cfg.endpoints = eps;
	r = datastore_etcd_ops.open(&cfg, &d);
	assert_int_equal(r, -ECONNREFUSED);
	assert_null(d);
	cfg.endpoints = "";
	assert_int_equal(datastore_etcd_ops.open(&cfg, &d), -EINVAL);
}

static void test_network_config(void **state) {
	Datastore *d = ds_open("/t/config");
	EtcdClient *c = raw_client();
	char *json = NULL;

	assert_int_equal(datastore_etcd_ops.get_network_config(d, &json), -ENOENT);
	assert_non_null(strstr(datastore_etcd_ops.last_error(d), "/t/config/config"));
	assert_int_equal(etcd_put(c, "/t/config/config", "{\"Network\": \"10.244.0.0/16\"}", 0), 0);
	assert_int_equal(datastore_etcd_ops.get_network_config(d, &json), 0);
	assert_string_equal(json, "{\"Network\": \"10.244.0.0/16\"}");
	free(json);
	etcd_client_free(c);
	ds_free(d);
}

static void test_distinct_and_reacquire(void **state) {
	Datastore *d[3];
	NodeLease l[3] = {};
	_cleanup_(node_lease_done) NodeLease again = {};
	char *v;
	int64_t lease_before, lease_after;

	for (int i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), "n%d", i);
		d[i] = ds_open("/t/distinct");
		assert_int_equal(acquire(d[i], "10.10.0.0/16", 24, name, i + 1, NULL, &l[i]), 0);
	}
	assert_string_equal(pstr(&l[0].subnet), "10.10.0.0/24");
	assert_string_equal(pstr(&l[1].subnet), "10.10.1.0/24");
	assert_string_equal(pstr(&l[2].subnet), "10.10.2.0/24");
	assert_string_equal(l[1].node_name, "n1");
	assert_true(l[1].expiration > time(NULL));

	v = raw_get("/t/distinct/subnets/10.10.1.0-24", &lease_before);
	assert_string_equal(
			v,
			"{\"backend\":\"vxlan\",\"node\":\"n1\",\"publicIP\":\"192.0.2.2\",\"vtepMAC\":\"02:00:00:00:00:02\"}");
	assert_true(lease_before != 0);
	free(v);

	/* n1 restarts (no release): same subnet, same etcd lease, even with a different prev */
	ds_free(d[1]);
	d[1] = ds_open("/t/distinct");
	assert_int_equal(acquire(d[1], "10.10.0.0/16", 24, "n1", 2, "10.10.9.0/24", &again), 0);
	assert_string_equal(pstr(&again.subnet), "10.10.1.0/24");
	v = raw_get("/t/distinct/subnets/10.10.1.0-24", &lease_after);
	assert_int_equal(lease_after, lease_before);
	free(v);

	/* a second acquire on the same handle is idempotent */
	assert_int_equal(acquire(d[1], "10.10.0.0/16", 24, "n1", 2, NULL, &again), 0);
	assert_string_equal(pstr(&again.subnet), "10.10.1.0/24");

	/* prev honoured when free; ignored when taken or outside the network */
	{
		Datastore *e = ds_open("/t/distinct");
		_cleanup_(node_lease_done) NodeLease m = {};

		assert_int_equal(acquire(e, "10.10.0.0/16", 24, "n7", 7, "10.10.7.0/24", &m), 0);
		assert_string_equal(pstr(&m.subnet), "10.10.7.0/24");
		ds_free(e);
		e = ds_open("/t/distinct");
		assert_int_equal(acquire(e, "10.10.0.0/16", 24, "n8", 8, "10.10.7.0/24", &m), 0);
		assert_string_equal(pstr(&m.subnet), "10.10.3.0/24");
		ds_free(e);
		e = ds_open("/t/distinct");
		assert_int_equal(acquire(e, "10.10.0.0/16", 24, "n9", 9, "10.99.7.0/24", &m), 0);
		assert_string_equal(pstr(&m.subnet), "10.10.4.0/24");
		ds_free(e);
	}

	for (int i = 0; i < 3; i++) {
		assert_int_equal(datastore_etcd_ops.release(d[i]), 0);
		assert_int_equal(datastore_etcd_ops.release(d[i]), 0); /* idempotent */
		ds_free(d[i]);
	}
	v = raw_get("/t/distinct/subnets/10.10.1.0-24", NULL);
	assert_string_equal(v, "");
	free(v);
	for (int i = 0; i < 3; i++)
		node_lease_done(&l[i]);
}

static void test_enospc_and_range(void **state) {
	Datastore *d[5];
	_cleanup_(node_lease_done) NodeLease l = {};
	IpAddr min, max;

	for (int i = 0; i < 5; i++) {
		char name[32];
		int r;

		snprintf(name, sizeof(name), "f%d", i);
		d[i] = ds_open("/t/full");
		r = acquire(d[i], "10.20.0.0/22", 24, name, i + 1, NULL, &l);
		if (i < 4) {
			assert_int_equal(r, 0);
			assert_int_equal(l.subnet.addr.bytes[2], i);
		} else {
			assert_int_equal(r, -ENOSPC);
			assert_non_null(strstr(datastore_etcd_ops.last_error(d[i]), "no free /24 subnet"));
		}
	}
	for (int i = 0; i < 5; i++)
		ds_free(d[i]);

	/* SubnetMin/SubnetMax */
	d[0] = ds_open("/t/range");
	assert_int_equal(ip_addr_parse("10.30.5.0", &min), 0);
	assert_int_equal(ip_addr_parse("10.30.6.0", &max), 0);
	assert_int_equal(datastore_etcd_ops.set_subnet_range(d[0], &min, &max), 0);
	assert_int_equal(acquire(d[0], "10.30.0.0/16", 24, "r0", 1, "10.30.1.0/24", &l), 0);
	assert_string_equal(pstr(&l.subnet), "10.30.5.0/24"); /* prev outside the range is ignored */
	d[1] = ds_open("/t/range");
	assert_int_equal(datastore_etcd_ops.set_subnet_range(d[1], &min, &max), 0);
	assert_int_equal(acquire(d[1], "10.30.0.0/16", 24, "r1", 2, NULL, &l), 0);
	assert_string_equal(pstr(&l.subnet), "10.30.6.0/24");
	d[2] = ds_open("/t/range");
	assert_int_equal(datastore_etcd_ops.set_subnet_range(d[2], &min, &max), 0);
	assert_int_equal(acquire(d[2], "10.30.0.0/16", 24, "r2", 3, NULL, &l), -ENOSPC);
	for (int i = 0; i < 3; i++) {
		datastore_etcd_ops.release(d[i]);
		ds_free(d[i]);
	}

	/* IPv6 network */
	d[0] = ds_open("/t/v6");
	assert_int_equal(acquire(d[0], "fd00:10::/48", 64, "six", 1, NULL, &l), 0);
	assert_string_equal(pstr(&l.subnet), "fd00:10::/64");
	d[1] = ds_open("/t/v6");
	assert_int_equal(acquire(d[1], "fd00:10::/48", 64, "six2", 2, NULL, &l), 0);
	assert_string_equal(pstr(&l.subnet), "fd00:10:0:1::/64");
	for (int i = 0; i < 2; i++) {
		datastore_etcd_ops.release(d[i]);
		ds_free(d[i]);
	}
}

static void test_dual_stack(void **state) {
	IpPrefix net6 = prefix("fd00:90::/63");
	Datastore *d[3];
	_cleanup_(node_lease_done) NodeLease l = {};
	char *v;

	for (int i = 0; i < 3; i++) {
		char name[32];
		int r;

		snprintf(name, sizeof(name), "dual%d", i);
		d[i] = ds_open("/t/dual");
		assert_int_equal(datastore_etcd_ops.set_network6(d[i], &net6, 64), 0);
		r = acquire(d[i], "10.90.0.0/16", 24, name, i + 1, NULL, &l);
		if (i == 0) {
			assert_int_equal(r, 0);
			assert_string_equal(pstr(&l.subnet6), "fd00:90::/64");
		} else if (i == 1) {
			assert_int_equal(r, 0);
			assert_string_equal(pstr(&l.subnet), "10.90.1.0/24");
			assert_string_equal(pstr(&l.subnet6), "fd00:90:0:1::/64");
		} else {
			/* the 3rd IPv4 subnet has no partner in a /63 */
			assert_int_equal(r, -ENOSPC);
			assert_non_null(strstr(datastore_etcd_ops.last_error(d[i]), "fd00:90::/63"));
		}
	}
	v = raw_get("/t/dual/subnets/10.90.1.0-24", NULL);
	assert_non_null(strstr(v, "\"subnet6\":\"fd00:90:0:1::/64\""));
	free(v);
	/* a restart keeps both */
	ds_free(d[1]);
	d[1] = ds_open("/t/dual");
	assert_int_equal(datastore_etcd_ops.set_network6(d[1], &net6, 64), 0);
	assert_int_equal(acquire(d[1], "10.90.0.0/16", 24, "dual1", 2, NULL, &l), 0);
	assert_string_equal(pstr(&l.subnet6), "fd00:90:0:1::/64");
	assert_int_equal(datastore_etcd_ops.set_network6(d[1], &net6, 48), -EINVAL);
	for (int i = 0; i < 3; i++) {
		datastore_etcd_ops.release(d[i]);
		ds_free(d[i]);
	}
}

static void test_watch(void **state) {
	static Recorder rec;
	Datastore *w = ds_open("/t/watch"), *a = ds_open("/t/watch"), *both[2];
	_cleanup_(node_lease_done) NodeLease l = {};
	int i;

	/* one lease exists before the watch starts: it comes in the RESYNC */
	assert_int_equal(acquire(a, "10.40.0.0/16", 24, "early", 1, NULL, &l), 0);
	assert_int_equal(datastore_etcd_ops.watch(w, record, &rec), 0);
	both[0] = w;
	both[1] = a;
	i = pump(both, 2, 5000, &rec, 0, "RESYNC");
	if (i < 0)
		rec_dump(&rec);
	assert_int_equal(i, 0);
	assert_string_equal(rec.lines[0], "RESYNC 1 early");

	{
		Datastore *b = ds_open("/t/watch");

		assert_int_equal(acquire(b, "10.40.0.0/16", 24, "late", 2, NULL, &l), 0);
		i = pump(both, 2, 5000, &rec, 1, "UPSERT late");
		if (i < 0)
			rec_dump(&rec);
		assert_true(i > 0);
		assert_string_equal(rec.lines[i], "UPSERT late 10.40.1.0/24 192.0.2.2 mac");

		assert_int_equal(datastore_etcd_ops.release(b), 0);
		i = pump(both, 2, 5000, &rec, (size_t) i, "DELETE late");
		if (i < 0)
			rec_dump(&rec);
		assert_true(i > 0);
		/* the node name comes from the cache: a DELETE event only carries the key */
		assert_string_equal(rec.lines[i], "DELETE late 10.40.1.0/24");
		ds_free(b);
	}
	assert_int_equal(rec_find(&rec, 0, "CONNECTION"), -1);
	datastore_etcd_ops.release(a);
	ds_free(a);
	ds_free(w);
}

static void test_ttl_expiry(void **state) {
	static Recorder rec;
	Datastore *w = ds_open("/t/ttl"), *a = ds_open_ttl("/t/ttl", 2);
	_cleanup_(node_lease_done) NodeLease l = {};
	uint64_t t0;
	int i;

	assert_int_equal(datastore_etcd_ops.watch(w, record, &rec), 0);
	assert_int_equal(pump(&w, 1, 5000, &rec, 0, "RESYNC"), 0);
	assert_int_equal(acquire(a, "10.50.0.0/16", 24, "mortal", 1, NULL, &l), 0);
	assert_true(pump(&w, 1, 5000, &rec, 1, "UPSERT mortal") > 0);

	/* the node dies without releasing: nobody renews, etcd expires the lease */
	ds_free(a);
	t0 = now_ms();
	i = pump(&w, 1, 10000, &rec, 1, "DELETE mortal");
	if (i < 0)
		rec_dump(&rec);
	assert_true(i > 0);
	assert_string_equal(rec.lines[i], "DELETE mortal 10.50.0.0/24");
	assert_true(now_ms() - t0 >= 1000); /* not before the TTL */
	ds_free(w);
}

static void test_renewal_and_recreate(void **state) {
	Datastore *a = ds_open_ttl("/t/renew", 2);
	EtcdClient *c = raw_client();
	_cleanup_(node_lease_done) NodeLease l = {};
	int64_t lease1, lease2;
	char *v;
	int r;

	assert_int_equal(acquire(a, "10.60.0.0/16", 24, "keeper", 1, NULL, &l), 0);
	assert_true(datastore_etcd_ops.next_timeout_ms(a) >= 0);
	/* renewals at TTL/3 keep it alive well past the TTL */
	assert_int_equal(pump(&a, 1, 3500, NULL, 0, NULL), -1);
	v = raw_get("/t/renew/subnets/10.60.0.0-24", &lease1);
	assert_non_null(strstr(v, "\"keeper\""));
	free(v);

	/* the etcd lease disappears (as after a long etcd outage): same key, new lease */
	assert_int_equal(etcd_lease_revoke(c, lease1), 0);
	v = raw_get("/t/renew/subnets/10.60.0.0-24", NULL);
	assert_string_equal(v, "");
	free(v);
	assert_int_equal(pump(&a, 1, 2500, NULL, 0, NULL), -1);
	v = raw_get("/t/renew/subnets/10.60.0.0-24", &lease2);
	assert_non_null(strstr(v, "\"keeper\""));
	assert_true(lease2 != 0 && lease2 != lease1);
	free(v);

	/* ... but if someone else took the subnet meanwhile, we must not silently move */
	assert_int_equal(etcd_lease_revoke(c, lease2), 0);
	assert_int_equal(etcd_put(c, "/t/renew/subnets/10.60.0.0-24", "{\"node\":\"thief\"}", 0), 0);
	r = pump(&a, 1, 3000, NULL, 0, NULL);
	assert_int_equal(r, -EADDRINUSE);
	assert_non_null(strstr(datastore_etcd_ops.last_error(a), "thief"));
	v = raw_get("/t/renew/subnets/10.60.0.0-24", NULL);
	assert_string_equal(v, "{\"node\":\"thief\"}");
	free(v);
	/* no lease left to release; and nothing further scheduled */
	assert_int_equal(datastore_etcd_ops.release(a), 0);
	assert_int_equal(datastore_etcd_ops.next_timeout_ms(a), -1);
	etcd_delete(c, "/t/renew/subnets/10.60.0.0-24", NULL);
	etcd_client_free(c);
	ds_free(a);
}

static void test_etcd_restart(void **state) {
	static Recorder rec;
	Datastore *w = ds_open("/t/restart"), *a = ds_open_ttl("/t/restart", 3), *both[2] = { w, a };
	_cleanup_(node_lease_done) NodeLease l = {};
	size_t mark;
	char *v;
	int i;

	assert_int_equal(acquire(a, "10.70.0.0/16", 24, "survivor", 1, NULL, &l), 0);
	assert_int_equal(datastore_etcd_ops.watch(w, record, &rec), 0);
	assert_int_equal(pump(both, 2, 5000, &rec, 0, "RESYNC"), 0);

	etcd_stop();
	i = pump(both, 2, 3000, &rec, 1, "CONNECTION false");
	if (i < 0)
		rec_dump(&rec);
	assert_true(i > 0);
	mark = (size_t) i;
	/* ~5 s down, longer than the TTL; the loop keeps running and never blocks */
	{
		uint64_t t0 = now_ms();

		assert_int_equal(pump(both, 2, 4000, NULL, 0, NULL), -1);
		assert_true(now_ms() - t0 < 4800);
	}
	assert_int_equal(rec_find(&rec, mark + 1, "CONNECTION"), -1); /* no flapping while down */

	assert_int_equal(etcd_start(), 0);
	i = pump(both, 2, 6000, &rec, mark, "CONNECTION true");
	if (i < 0)
		rec_dump(&rec);
	assert_true(i > 0);
	i = pump(both, 2, 3000, &rec, (size_t) i, "RESYNC");
	assert_true(i > 0);
	assert_non_null(strstr(rec.lines[i], "survivor"));

	/* the watch streams again */
	{
		Datastore *b = ds_open("/t/restart");
		_cleanup_(node_lease_done) NodeLease m = {};

		assert_int_equal(acquire(b, "10.70.0.0/16", 24, "newcomer", 2, NULL, &m), 0);
		assert_true(pump(both, 2, 5000, &rec, (size_t) i, "UPSERT newcomer 10.70.1.0/24") > 0);
		datastore_etcd_ops.release(b);
		ds_free(b);
	}

	/* renewals carry on: well past another TTL the lease is still there, same subnet */
	assert_int_equal(pump(both, 2, 4000, NULL, 0, NULL), -1);
	v = raw_get("/t/restart/subnets/10.70.0.0-24", NULL);
	assert_non_null(strstr(v, "\"survivor\""));
	free(v);
	assert_int_equal(rec_find(&rec, 0, "DELETE survivor"), -1);

	datastore_etcd_ops.release(a);
	ds_free(a);
	ds_free(w);
}

/* Issue 7 item 4: our key deleted under us is put back at once (same subnet, same node); taken
 * over by another node, dispatch() reports -EADDRINUSE and nothing is put back. */
static void test_own_key_deleted(void **state) {
	static Recorder rec;
	Datastore *a = ds_open_ttl("/t/own", 30);
	EtcdClient *c = raw_client();
	_cleanup_(node_lease_done) NodeLease l = {};
	char *v;
	int i, r;

	assert_int_equal(acquire(a, "10.65.0.0/16", 24, "owner", 1, NULL, &l), 0);
	assert_int_equal(datastore_etcd_ops.watch(a, record, &rec), 0);
	assert_int_equal(pump(&a, 1, 5000, &rec, 0, "RESYNC"), 0);

	assert_int_equal(etcd_delete(c, "/t/own/subnets/10.65.0.0-24", NULL), 0);
	i = pump(&a, 1, 3000, &rec, 1, "SELF_RECREATED");
	if (i < 0)
		rec_dump(&rec);
	assert_true(i > 0);
	v = raw_get("/t/own/subnets/10.65.0.0-24", NULL);
	assert_non_null(strstr(v, "\"owner\""));
	free(v);
	assert_int_equal(rec_find(&rec, 1, "DELETE owner"), -1); /* not passed on as a node leaving */

	/* overwritten by another node: lost, reported once, not fought over */
	assert_int_equal(etcd_put(c, "/t/own/subnets/10.65.0.0-24", "{\"node\":\"thief\"}", 0), 0);
	r = pump(&a, 1, 3000, NULL, 0, NULL);
	assert_int_equal(r, -EADDRINUSE);
	assert_non_null(strstr(datastore_etcd_ops.last_error(a), "thief"));
	assert_int_equal(pump(&a, 1, 1000, NULL, 0, NULL), -1);
	v = raw_get("/t/own/subnets/10.65.0.0-24", NULL);
	assert_string_equal(v, "{\"node\":\"thief\"}");
	free(v);
	etcd_delete(c, "/t/own/subnets/10.65.0.0-24", NULL);
	etcd_client_free(c);
	ds_free(a);
}

/* Our key overwritten while no watch stream runs (weftd between two lists, as after an etcd
 * restart): the list that follows shows it, and the lease is lost (-EADDRINUSE), as for an
 * overwrite seen as a watch event. Before, the list took the thief's lease as any other node's and
 * the watch started after it: the node kept serving a subnet that another node held. */
static void test_own_key_taken_between_lists(void **state) {
	static Recorder rec;
	Datastore *a = ds_open_ttl("/t/between", 30);
	EtcdClient *c = raw_client();
	_cleanup_(node_lease_done) NodeLease l = {};
	char *v;
	int r;

	assert_int_equal(acquire(a, "10.66.0.0/16", 24, "owner", 1, NULL, &l), 0);
	/* no watch yet: the overwrite lands before the first list */
	assert_int_equal(etcd_put(c, "/t/between/subnets/10.66.0.0-24", "{\"node\":\"thief\"}", 0), 0);
	assert_int_equal(datastore_etcd_ops.watch(a, record, &rec), 0);
	r = pump(&a, 1, 3000, NULL, 0, NULL);
	assert_int_equal(r, -EADDRINUSE);
	assert_non_null(strstr(datastore_etcd_ops.last_error(a), "thief"));
	v = raw_get("/t/between/subnets/10.66.0.0-24", NULL);
	assert_string_equal(v, "{\"node\":\"thief\"}");
	free(v);
	etcd_delete(c, "/t/between/subnets/10.66.0.0-24", NULL);
	etcd_client_free(c);
	ds_free(a);
}

/* Issue 7 item 6: a store that lost everything (our key and our etcd lease, the others' keys) is
 * not listed to weftd until our key is back and the others have had time to return: no RESYNC
 * without our own lease in it. */
static void test_wiped_store(void **state) {
	static Recorder rec;
	Datastore *a = ds_open_ttl("/t/wipe", 3), *b = ds_open_ttl("/t/wipe", 3), *both[2] = { a, b };
	EtcdClient *c = raw_client();
	int64_t lease_a, lease_b;
	_cleanup_(node_lease_done) NodeLease l = {};
	uint64_t t0;
	int i;
	char *v;

	assert_int_equal(acquire(a, "10.66.0.0/16", 24, "wa", 1, NULL, &l), 0);
	assert_int_equal(acquire(b, "10.66.0.0/16", 24, "wb", 2, NULL, &l), 0);
	assert_int_equal(datastore_etcd_ops.watch(a, record, &rec), 0);
	assert_int_equal(pump(both, 2, 5000, &rec, 0, "RESYNC"), 0);
	assert_string_equal(rec.lines[0], "RESYNC 2 wa wb");

	/* the wipe: both leases gone (their keys with them), and a's watch starts over */
	free(raw_get("/t/wipe/subnets/10.66.0.0-24", &lease_a));
	free(raw_get("/t/wipe/subnets/10.66.1.0-24", &lease_b));
	assert_int_equal(etcd_lease_revoke(c, lease_a), 0);
	assert_int_equal(etcd_lease_revoke(c, lease_b), 0);
	t0 = now_ms();
	assert_int_equal(datastore_etcd_ops.relist(a), 0);
	i = pump(both, 2, 8000, &rec, 1, "RESYNC");
	if (i < 0)
		rec_dump(&rec);
	assert_true(i > 0);
	/* the first list handed on has both again: none in between lacked them */
	assert_string_equal(rec.lines[i], "RESYNC 2 wa wb");
	assert_true(rec_find(&rec, 1, "SELF_RECREATED") > 0);
	assert_true(now_ms() - t0 >= 1000); /* a settling time after putting ours back */
	assert_int_equal(rec_find(&rec, 1, "DELETE"), -1);
	v = raw_get("/t/wipe/subnets/10.66.0.0-24", NULL);
	assert_non_null(strstr(v, "\"wa\""));
	free(v);
	datastore_etcd_ops.release(a);
	datastore_etcd_ops.release(b);
	etcd_client_free(c);
	ds_free(a);
	ds_free(b);
}

static void test_concurrent_acquire(void **state) {
	enum {
		N = 5
	};
	int pfd[2], status;
	pid_t pids[N];
	char buf[N][32] = {};

	assert_int_equal(pipe(pfd), 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char name[32], out[32];
			Datastore *d = NULL;
			DatastoreConfig cfg = { .kind = DATASTORE_ETCD,
						.endpoints = etcd.endpoint,
						.prefix = "/t/race",
						.lease_ttl_sec = 5 };
			IpPrefix net;
			NodeLease self = {}, l;
			int r;

			close(pfd[0]);
			snprintf(name, sizeof(name), "racer%d", i);
			self.node_name = (char *) name; /* a view: acquire() copies it */
			(void) ip_prefix_parse("10.80.0.0/16", &net);
			r = datastore_etcd_ops.open(&cfg, &d);
			if (r >= 0)
				r = datastore_etcd_ops.acquire(d, &net, 24, &self, NULL, &l);
			snprintf(out, sizeof(out), "%-31s", r < 0 ? "error" : pstr(&l.subnet));
			(void) !write(pfd[1], out, 31);
			_exit(r < 0 ? 1 : 0); /* leases expire on their own */
		}
	}
	close(pfd[1]);
	for (int i = 0; i < N; i++) {
		assert_int_equal(read(pfd[0], buf[i], 31), 31);
		assert_true(waitpid(pids[i], &status, 0) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	close(pfd[0]);
	for (int i = 0; i < N; i++) {
		assert_non_null(startswith(buf[i], "10.80."));
		for (int j = 0; j < i; j++)
			if (streq(buf[i], buf[j]))
				fail_msg("racers %d and %d got the same subnet %s", i, j, buf[i]);
	}
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ops_find),
		cmocka_unit_test(test_open_unreachable),
		cmocka_unit_test(test_network_config),
		cmocka_unit_test(test_distinct_and_reacquire),
		cmocka_unit_test(test_enospc_and_range),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_ttl_expiry),
		cmocka_unit_test(test_renewal_and_recreate),
		cmocka_unit_test(test_own_key_deleted),
		cmocka_unit_test(test_own_key_taken_between_lists),
		cmocka_unit_test(test_wiped_store),
		cmocka_unit_test(test_concurrent_acquire),
		cmocka_unit_test(test_etcd_restart),
	};

	if (access(ETCD_BIN, X_OK) < 0) {
		printf("SKIP: %s not installed\n", ETCD_BIN);
		return 77;
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
