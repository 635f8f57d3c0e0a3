/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes datastore against test/kube/fake-apiserver.py (the real list/watch wire format),
 * which each test starts on a free 127.0.0.1 port and kills at the end. Needs python3 (skip 77
 * otherwise); the https cases also need openssl to make a self-signed certificate.
 *
 * Like weftd, the tests drive dispatch() from epoll on get_fd() bounded by next_timeout_ms().
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/base64.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "daemon/datastore/datastore.h"
#include "shared/client/http-multi.h"
#include "shared/client/kube-client.h"

#define TOKEN "weft-test-token"

static const DatastoreOps *ops = &datastore_kube_ops;

static struct {
	char script[PATH_MAX];
	char dir[64];
	bool have_openssl;
	pid_t pid;
	int port;
	bool tls;
	char url[64];
} fx = { .pid = -1 };

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
	return http_now_usec() / 1000u;
}

static size_t fx_write(char *p, size_t s, size_t n, void *u) {
	FILE *f = u;
	return fwrite(p, s, n, f);
}

/* A blocking request to the fixture (with the right token); returns the HTTP code (0 = no answer),
 * the body in *ret_body (optional, malloc'ed). */
static long fx_call(const char *method, const char *path, const char *ctype, const char *body, char **ret_body) {
	char url[256], *buf = NULL, hdr[128];
	size_t len = 0;
	struct curl_slist *h = NULL;
	FILE *out = open_memstream(&buf, &len);
	CURL *e = curl_easy_init();
	long code = 0;

	snprintf(url, sizeof(url), "%s%s", fx.url, path);
	h = curl_slist_append(h, "Authorization: Bearer " TOKEN);
	if (ctype) {
		snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype);
		h = curl_slist_append(h, hdr);
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fx_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 15000L); /* slack for a busy machine */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	if (curl_easy_perform(e) == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	fclose(out);
	if (ret_body)
		*ret_body = buf;
	else
		free(buf);
	return code;
}

static void fx_post(const char *path, const char *body) {
	long code = fx_call("POST", path, "application/json", body ?: "{}", NULL);

	if (code < 200 || code >= 300)
		fail_msg("fixture POST %s: HTTP %ld", path, code);
}

/* POST /fixture/nodes with a short-form node. */
static void fx_node(const char *json_fmt, ...) _printf_(1, 2);
static void fx_node(const char *json_fmt, ...) {
	char body[1024];
	va_list ap;

	va_start(ap, json_fmt);
	vsnprintf(body, sizeof(body), json_fmt, ap);
	va_end(ap);
	fx_post("/fixture/nodes", body);
}

/* The Node as the fixture has it. */
static json_t *fx_get_node(const char *name) {
	char path[128], *body = NULL;
	json_t *j;
	long code;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
	code = fx_call("GET", path, NULL, NULL, &body);
	assert_int_equal(code, 200);
	j = json_loads(body, 0, NULL);
	free(body);
	assert_non_null(j);
	return j;
}

static const char *node_annotation(json_t *node, const char *key) {
	json_t *v = json_object_get(json_object_get(json_object_get(node, "metadata"), "annotations"), key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static long fx_stat(const char *key) {
	char *body = NULL;
	json_t *j;
	long v;

	assert_int_equal(fx_call("GET", "/fixture/stats", NULL, NULL, &body), 200);
	j = json_loads(body, 0, NULL);
	free(body);
	v = (long) json_integer_value(json_object_get(j, key));
	json_decref(j);
	return v;
}

/* Starts the fixture (nodes from the NULL-terminated "NAME=CIDR" list) and waits until it answers. */
static void fx_start(bool tls, ...) {
	const char *argv[32] = { "python3", fx.script, "--bind", "127.0.0.1", "--token", TOKEN, "--port" };
	char port[16], crt[96], key[96], log[96];
	size_t n = 7;
	const char *node;
	va_list ap;

	fx.port = free_port();
	fx.tls = tls;
	snprintf(port, sizeof(port), "%d", fx.port);
	argv[n++] = port;
	if (tls) {
		snprintf(crt, sizeof(crt), "%s/server.crt", fx.dir);
		snprintf(key, sizeof(key), "%s/server.key", fx.dir);
		argv[n++] = "--cert";
		argv[n++] = crt;
		argv[n++] = "--key";
		argv[n++] = key;
	}
	va_start(ap, tls);
	while ((node = va_arg(ap, const char *)) && n < ELEMENTSOF(argv) - 3) {
		argv[n++] = "--node";
		argv[n++] = node;
	}
	va_end(ap);
	argv[n] = NULL;
	snprintf(fx.url, sizeof(fx.url), "%s://127.0.0.1:%d", tls ? "https" : "http", fx.port);
	snprintf(log, sizeof(log), "%s/fixture.log", fx.dir);

	fx.pid = fork();
	assert_true(fx.pid >= 0);
	if (fx.pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execvp("python3", (char **) argv);
		_exit(127);
	}
	/* up to 30 s: a busy machine can take seconds to start Python and import the fixture */
	for (int i = 0; i < 1200; i++) {
		if (fx_call("GET", "/version", NULL, NULL, NULL) == 200)
			return;
		usleep(25 * 1000);
	}
	fail_msg("fake-apiserver did not come up; see %s", log);
}

static void fx_stop(void) {
	if (fx.pid <= 0)
		return;
	kill(fx.pid, SIGTERM);
	waitpid(fx.pid, NULL, 0);
	fx.pid = -1;
}

/* ---- kubeconfig + datastore ---- */

typedef enum CaMode {
	CA_NONE,
	CA_FILE,
	CA_DATA,
	CA_WRONG
} CaMode;

static const char *write_kubeconfig(const char *token, CaMode ca) {
	static char path[96];
	char ca_line[4096] = "", crt[96];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kubeconfig", fx.dir);
	if (ca == CA_FILE || ca == CA_WRONG) {
		snprintf(crt, sizeof(crt), "%s/%s", fx.dir, ca == CA_FILE ? "server.crt" : "other.crt");
		snprintf(ca_line, sizeof(ca_line), "    certificate-authority: %s\n", crt);
	} else if (ca == CA_DATA) {
		_cleanup_free_ char *pem = NULL, *b64 = NULL;
		size_t n;

		snprintf(crt, sizeof(crt), "%s/server.crt", fx.dir);
		assert_int_equal(read_full_file(crt, &pem, &n), 0);
		assert_int_equal(base64_encode(pem, n, &b64), 0);
		snprintf(ca_line, sizeof(ca_line), "    certificate-authority-data: %s\n", b64);
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"apiVersion: v1\nkind: Config\n"
		"clusters:\n- name: fake\n  cluster:\n    server: %s\n%s"
		"contexts:\n- name: weft@fake\n  context: {cluster: fake, user: weft}\n"
		"current-context: weft@fake\n"
		"users:\n- name: weft\n  user:\n    token: %s\n",
		fx.url, ca_line, token);
	fclose(f);
	return path;
}

static Datastore *ds_open_with(const char *token, CaMode ca) {
	DatastoreConfig cfg = { .kind = DATASTORE_KUBERNETES, .kubeconfig = write_kubeconfig(token, ca) };
	Datastore *d = NULL;
	int r;

	r = ops->open(&cfg, &d);
	if (r < 0)
		fail_msg("open: %d", r);
	return d;
}

static Datastore *ds_open(void) {
	return ds_open_with(TOKEN, fx.tls ? CA_FILE : CA_NONE);
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

static int acquire(Datastore *d, const char *name, int n, NodeLease *ret) {
	IpPrefix network = prefix("10.244.0.0/16");
	NodeLease self = self_lease(name, n);

	node_lease_done(ret); /* *ret is the caller's, from an earlier call or {} */
	return ops->acquire(d, &network, 24, &self, NULL, ret);
}

/* Events as text lines, so tests can ask "has X happened". */
typedef struct Recorder {
	char lines[256][512];
	size_t n;
} Recorder;

static void record(const DatastoreEvent *ev, void *userdata) {
	Recorder *rec = userdata;
	char *l, ip[IP_ADDR_STRLEN], mac[18];

	if (rec->n >= ELEMENTSOF(rec->lines))
		return;
	l = rec->lines[rec->n++];
	switch (ev->type) {
	case DS_EVENT_RESYNC: {
		int o = snprintf(l, 512, "RESYNC %zu", ev->n_nodes);
		/* sorted names, so tests do not depend on the list order */
		const char *names[16];
		size_t k = MIN(ev->n_nodes, ELEMENTSOF(names));
		for (size_t i = 0; i < k; i++)
			names[i] = ev->nodes[i].node_name;
		for (size_t i = 1; i < k; i++)
			for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
				const char *t = names[j];
				names[j] = names[j - 1];
				names[j - 1] = t;
			}
		for (size_t i = 0; i < k && o < 150; i++)
			o += snprintf(l + o, (size_t) (512 - o), " %s", names[i]);
		break;
	}
	case DS_EVENT_NODE_UPSERT:
		snprintf(l, 512, "UPSERT %s %s %s %s %s", ev->node->node_name, pstr(&ev->node->subnet),
			 ip_addr_to_string(&ev->node->public_ip, ip), ev->node->backend,
			 ev->node->has_vtep_mac ? ether_addr_format(ev->node->vtep_mac, mac) : "nomac");
		break;
	case DS_EVENT_NODE_DELETE: snprintf(l, 512, "DELETE %s", ev->node->node_name); break;
	case DS_EVENT_CONNECTION: snprintf(l, 512, "CONNECTION %s", ev->connected ? "true" : "false"); break;
	case DS_EVENT_SELF_RECREATED: snprintf(l, 512, "SELF_RECREATED"); break;
	}
}

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

/* weftd's loop in small: epoll on get_fd() bounded by next_timeout_ms(), until the recorder has a
 * line starting with `what` (NULL: run for timeout_ms). Returns its index or -1. */
static int pump(Datastore *d, int timeout_ms, const Recorder *rec, size_t from, const char *what) {
	uint64_t end = now_ms() + (uint64_t) timeout_ms;
	int epfd = epoll_create1(EPOLL_CLOEXEC), idx = -1;
	struct epoll_event ev;

	assert_true(epfd >= 0);
	assert_int_equal(epoll_ctl(epfd, EPOLL_CTL_ADD, ops->get_fd(d), &(struct epoll_event) { .events = EPOLLIN }),
			 0);
	for (;;) {
		uint64_t now = now_ms();
		int t, nt;

		if (rec && what && (idx = rec_find(rec, from, what)) >= 0)
			break;
		if (now >= end)
			break;
		t = (int) (end - now);
		nt = ops->next_timeout_ms(d);
		if (nt >= 0 && nt < t)
			t = nt;
		(void) epoll_wait(epfd, &ev, 1, t);
		assert_int_equal(ops->dispatch(d), 0);
	}
	close(epfd);
	return idx;
}

/* Pumps until `what` shows up after `from`, failing the test (with the event list) otherwise. */
static int expect(Datastore *d, Recorder *rec, size_t from, const char *what) {
	int i = pump(d, 5000, rec, from, what);

	if (i < 0) {
		rec_dump(rec);
		fail_msg("no event \"%s\" after %zu", what, from);
	}
	return i;
}

/* Pumps until the fixture has n open watches (a watch starts a moment after its RESYNC). */
static void wait_watches(Datastore *d, long n) {
	for (int i = 0; i < 100 && fx_stat("watches") != n; i++)
		pump(d, 50, NULL, 0, NULL);
	assert_int_equal(fx_stat("watches"), n);
}

/* ---- tests ---- */

static int test_setup(void **state) {
	return 0;
}

static int test_teardown(void **state) {
	fx_stop();
	return 0;
}

static void test_acquire_waits_for_podcidrs(void **state) {
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d;
	json_t *node;
	char *conf = NULL;

	fx_start(false, "n1=", NULL);
	d = ds_open();

	assert_int_equal(ops->get_network_config(d, &conf), -ENOENT);
	assert_null(conf);

	/* Not assigned yet: retry later, and say why. */
	assert_int_equal(acquire(d, "n1", 1, &l), -EAGAIN);
	assert_non_null(strstr(ops->last_error(d), "podCIDRs"));
	/* A node name the cluster does not know. */
	assert_int_equal(acquire(d, "nosuch", 1, &l), -EAGAIN);
	assert_non_null(strstr(ops->last_error(d), "nosuch"));

	/* kube-controller-manager assigns it (dual-stack). */
	fx_node("{\"name\": \"n1\", \"podCIDRs\": [\"10.244.1.0/24\", \"fd00:10:244:1::/64\"]}");
	assert_int_equal(acquire(d, "n1", 1, &l), 0);
	assert_string_equal(l.node_name, "n1");
	assert_string_equal(pstr(&l.subnet), "10.244.1.0/24");
	assert_string_equal(pstr(&l.subnet6), "fd00:10:244:1::/64");

	/* What we publish, as the API server has it. */
	node = fx_get_node("n1");
	assert_string_equal(node_annotation(node, "weft.dev/public-ip"), "192.0.2.1");
	assert_string_equal(node_annotation(node, "weft.dev/backend-type"), "vxlan");
	assert_string_equal(node_annotation(node, "weft.dev/vtep-mac"), "02:00:00:00:00:01");
	assert_null(node_annotation(node, "weft.dev/public-ip6"));
	/* NetworkUnavailable=False (status subresource, conditions merged by type). */
	{
		json_t *conds = json_object_get(json_object_get(node, "status"), "conditions"), *c;
		size_t i;
		bool found = false;

		json_array_foreach(conds, i, c)
			if (streq_ptr(json_string_value(json_object_get(c, "type")), "NetworkUnavailable")) {
				assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
				assert_string_equal(json_string_value(json_object_get(c, "reason")), "WeftIsUp");
				found = true;
			}
		assert_true(found);
	}
	json_decref(node);

	/* Acquiring again (a restart) changes nothing, so the object is not even modified. */
	{
		long patches = fx_stat("patches");
		char *before = NULL, *after = NULL;
		node = fx_get_node("n1");
		before = json_dumps(json_object_get(node, "metadata"), JSON_SORT_KEYS);
		json_decref(node);
		assert_int_equal(acquire(d, "n1", 1, &l), 0);
		assert_int_equal(fx_stat("patches"), patches + 1);
		node = fx_get_node("n1");
		after = json_dumps(json_object_get(node, "metadata"), JSON_SORT_KEYS);
		json_decref(node);
		assert_string_equal(before, after);
		free(before);
		free(after);
	}

	/* A podCIDR outside the configured Network is refused with a message naming both. */
	fx_node("{\"name\": \"n2\", \"podCIDRs\": [\"10.99.2.0/24\"]}");
	assert_int_equal(acquire(d, "n2", 2, &l), -EINVAL);
	assert_non_null(strstr(ops->last_error(d), "10.99.2.0/24"));
	assert_non_null(strstr(ops->last_error(d), "10.244.0.0/16"));

	/* A podCIDR of another length than SubnetLen: every other node would refuse the lease. */
	fx_node("{\"name\": \"n3\", \"podCIDRs\": [\"10.244.3.0/25\"]}");
	assert_int_equal(acquire(d, "n3", 3, &l), -EINVAL);
	assert_non_null(strstr(ops->last_error(d), "not a /24"));

	ops->free(d);
}

static void test_watch(void **state) {
	Recorder rec = {};
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d;
	size_t from;

	fx_start(false, "n1=10.244.1.0/24", "n2=10.244.2.0/24", "n3=10.244.3.0/24", NULL);
	d = ds_open();
	assert_int_equal(acquire(d, "n1", 1, &l), 0);
	/* n3 is ready (annotated by its weftd); n2 has a podCIDR but no weftd yet. */
	fx_node("{\"name\": \"n3\", \"annotations\": {\"weft.dev/public-ip\": \"192.0.2.3\", "
		"\"weft.dev/backend-type\": \"host-gw\"}}");

	assert_int_equal(ops->watch(d, record, &rec), 0);
	expect(d, &rec, 0, "RESYNC 2 n1 n3");
	assert_int_equal(rec_find(&rec, 0, "CONNECTION"), -1);

	/* A new ready node. */
	from = rec.n;
	fx_node("{\"name\": \"n4\", \"podCIDRs\": [\"10.244.4.0/24\"], \"annotations\": "
		"{\"weft.dev/public-ip\": \"192.0.2.4\", \"weft.dev/backend-type\": \"vxlan\", "
		"\"weft.dev/vtep-mac\": \"02:00:00:00:00:04\"}}");
	expect(d, &rec, from, "UPSERT n4 10.244.4.0/24 192.0.2.4 vxlan 02:00:00:00:00:04");

	/* n2 is ignored until its weftd annotates it. */
	from = rec.n;
	fx_node("{\"name\": \"n2\", \"labels\": {\"x\": \"y\"}}");
	pump(d, 300, NULL, 0, NULL);
	assert_int_equal(rec.n, from);
	fx_node("{\"name\": \"n2\", \"annotations\": {\"weft.dev/public-ip\": \"192.0.2.2\", "
		"\"weft.dev/backend-type\": \"host-gw\"}}");
	expect(d, &rec, from, "UPSERT n2 10.244.2.0/24 192.0.2.2 host-gw nomac");

	/* A real change is an UPSERT; a heartbeat-like change (status, labels) is nothing. */
	from = rec.n;
	fx_node("{\"name\": \"n3\", \"annotations\": {\"weft.dev/public-ip\": \"192.0.2.33\"}}");
	expect(d, &rec, from, "UPSERT n3 10.244.3.0/24 192.0.2.33 host-gw");
	from = rec.n;
	fx_node("{\"metadata\": {\"name\": \"n3\"}, \"status\": {\"conditions\": [{\"type\": \"Ready\", "
		"\"status\": \"True\"}]}}");
	assert_int_equal(fx_call("POST", "/fixture/bookmark", "application/json", "{}", NULL), 200);
	pump(d, 300, NULL, 0, NULL);
	assert_int_equal(rec.n, from);

	/* Losing the annotation (its weftd released) and deletion from the API are DELETEs. */
	fx_node("{\"name\": \"n2\", \"annotations\": {\"weft.dev/public-ip\": null}}");
	expect(d, &rec, from, "DELETE n2");
	from = rec.n;
	assert_int_equal(fx_call("DELETE", "/api/v1/nodes/n4", NULL, NULL, NULL), 200);
	expect(d, &rec, from, "DELETE n4");
	/* Deleting a node we never reported says nothing. */
	from = rec.n;
	assert_int_equal(fx_call("DELETE", "/api/v1/nodes/n2", NULL, NULL, NULL), 200);
	pump(d, 300, NULL, 0, NULL);
	assert_int_equal(rec.n, from);

	assert_int_equal(fx_stat("lists"), 1);
	assert_int_equal(fx_stat("watches"), 1);
	ops->free(d);
}

static void test_gone_and_bookmarks(void **state) {
	Recorder rec = {};
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d;
	size_t from;

	fx_start(false, "n1=10.244.1.0/24", NULL);
	d = ds_open();
	assert_int_equal(acquire(d, "n1", 1, &l), 0);
	assert_int_equal(ops->watch(d, record, &rec), 0);
	expect(d, &rec, 0, "RESYNC 1 n1");
	wait_watches(d, 1);

	/* The server ends the watch normally (timeoutSeconds): resume from our resourceVersion,
	 * no LIST, no event. */
	from = rec.n;
	fx_post("/fixture/end-watches", NULL);
	for (int i = 0; i < 100 && fx_stat("watches_started") < 2; i++)
		pump(d, 50, NULL, 0, NULL);
	assert_int_equal(fx_stat("watches_started"), 2);
	assert_int_equal(fx_stat("lists"), 1);
	assert_int_equal(rec.n, from);

	/* Bookmarks keep the resourceVersion fresh: other resources' writes move it on, a bookmark
	 * tells us, the old history is compacted, and the resumed watch is still valid. */
	fx_post("/fixture/advance", NULL);
	fx_post("/fixture/advance", NULL);
	wait_watches(d, 1);
	fx_post("/fixture/bookmark", NULL);
	pump(d, 500, NULL, 0, NULL);
	fx_post("/fixture/compact", "{\"advance\": false}");
	fx_post("/fixture/end-watches", NULL);
	for (int i = 0; i < 100 && fx_stat("watches_started") < 3; i++)
		pump(d, 50, NULL, 0, NULL);
	pump(d, 300, NULL, 0, NULL);
	assert_int_equal(fx_stat("lists"), 1);
	assert_int_equal(rec.n, from);

	/* Without a bookmark our resourceVersion is too old after a compaction: the watch gets an
	 * ERROR 410 (Gone), and we LIST again: RESYNC, with what changed in between. */
	fx_post("/fixture/compact", NULL);
	fx_node("{\"name\": \"n5\", \"podCIDRs\": [\"10.244.5.0/24\"], \"annotations\": "
		"{\"weft.dev/public-ip\": \"192.0.2.5\"}}");
	expect(d, &rec, from, "UPSERT n5");
	fx_post("/fixture/compact", NULL);
	from = rec.n;
	wait_watches(d, 1);
	fx_post("/fixture/end-watches", NULL);
	expect(d, &rec, from, "RESYNC 2 n1 n5");
	assert_int_equal(fx_stat("lists"), 2);
	/* A 410 is not a lost connection. */
	assert_int_equal(rec_find(&rec, 0, "CONNECTION"), -1);
	wait_watches(d, 1);
	ops->free(d);
}

static void test_dropped_watch(void **state) {
	Recorder rec = {};
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d;
	size_t from;
	int i;

	fx_start(false, "n1=10.244.1.0/24", "n2=10.244.2.0/24", NULL);
	d = ds_open();
	assert_int_equal(acquire(d, "n1", 1, &l), 0);
	assert_int_equal(ops->watch(d, record, &rec), 0);
	expect(d, &rec, 0, "RESYNC 1 n1");
	wait_watches(d, 1);

	/* The stream breaks (no final chunk): connection lost, LIST again, RESYNC, connected. */
	from = rec.n;
	fx_post("/fixture/drop-watches", NULL);
	i = expect(d, &rec, from, "CONNECTION false");
	i = expect(d, &rec, (size_t) i, "CONNECTION true");
	expect(d, &rec, (size_t) i, "RESYNC 1 n1");
	assert_int_equal(fx_stat("lists"), 2);

	/* The API server goes away entirely and comes back (same port, fresh state): we retry with
	 * backoff and RESYNC with what it has now. */
	from = rec.n;
	{
		int port = fx.port;
		fx_stop();
		expect(d, &rec, from, "CONNECTION false");
		pump(d, 500, NULL, 0, NULL);
		/* restart on the same port */
		fx.port = port;
	}
	{
		/* fx_start picks a new port; start by hand on the old one instead. */
		char p[16], log[96];
		snprintf(p, sizeof(p), "%d", fx.port);
		snprintf(log, sizeof(log), "%s/fixture2.log", fx.dir);
		fx.pid = fork();
		assert_true(fx.pid >= 0);
		if (fx.pid == 0) {
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (fd >= 0) {
				dup2(fd, STDOUT_FILENO);
				dup2(fd, STDERR_FILENO);
			}
			execlp("python3", "python3", fx.script, "--bind", "127.0.0.1", "--token", TOKEN, "--port", p,
			       "--node", "n2=10.244.2.0/24", (char *) NULL);
			_exit(127);
		}
		for (int k = 0; k < 1200 && fx_call("GET", "/version", NULL, NULL, NULL) != 200; k++)
			usleep(25 * 1000);
	}
	fx_node("{\"name\": \"n2\", \"annotations\": {\"weft.dev/public-ip\": \"192.0.2.2\"}}");
	i = expect(d, &rec, from, "CONNECTION true");
	expect(d, &rec, (size_t) i, "RESYNC 1 n2");
	ops->free(d);
}

static void test_unauthorized(void **state) {
	Recorder rec = {};
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d;
	const char *e;

	fx_start(false, "n1=10.244.1.0/24", NULL);
	d = ds_open_with("wrong-token", CA_NONE);
	assert_int_equal(acquire(d, "n1", 1, &l), -EACCES);
	e = ops->last_error(d);
	if (!strstr(e, "401") || !strstr(e, "Unauthorized") || !strstr(e, "bearer token") ||
	    !strstr(e, "user \"weft\"") || !strstr(e, "/kubeconfig"))
		fail_msg("401 error text: %s", e);

	/* The watch keeps retrying, disconnected. */
	assert_int_equal(ops->watch(d, record, &rec), 0);
	expect(d, &rec, 0, "CONNECTION false");
	assert_non_null(strstr(ops->last_error(d), "401"));
	ops->free(d);
}

static void test_release(void **state) {
	Recorder rec = {};
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d1, *d2;
	json_t *node;
	size_t from;

	fx_start(false, "n1=10.244.1.0/24", "n2=10.244.2.0/24", NULL);
	d1 = ds_open();
	d2 = ds_open();
	assert_int_equal(acquire(d1, "n1", 1, &l), 0);
	assert_int_equal(acquire(d2, "n2", 2, &l), 0);
	assert_int_equal(ops->watch(d2, record, &rec), 0);
	expect(d2, &rec, 0, "RESYNC 2 n1 n2");

	from = rec.n;
	assert_int_equal(ops->release(d1), 0);
	node = fx_get_node("n1");
	assert_null(node_annotation(node, "weft.dev/public-ip"));
	assert_null(node_annotation(node, "weft.dev/backend-type"));
	assert_null(node_annotation(node, "weft.dev/vtep-mac"));
	/* The subnet stays with the node: the controller owns it. */
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(node, "spec"), "podCIDRs"),
							     0)),
			    "10.244.1.0/24");
	json_decref(node);
	expect(d2, &rec, from, "DELETE n1");
	/* Releasing twice is fine. */
	assert_int_equal(ops->release(d1), 0);
	ops->free(d1);
	ops->free(d2);
}

static void test_https(void **state) {
	Recorder rec = {};
	_cleanup_(node_lease_done) NodeLease l = {};
	Datastore *d;

	if (!fx.have_openssl)
		skip();
	fx_start(true, "n1=10.244.1.0/24", NULL);

	/* CA from a file. */
	d = ds_open_with(TOKEN, CA_FILE);
	assert_int_equal(acquire(d, "n1", 1, &l), 0);
	assert_int_equal(ops->watch(d, record, &rec), 0);
	expect(d, &rec, 0, "RESYNC 1 n1");
	ops->free(d);

	/* CA inline (certificate-authority-data). */
	d = ds_open_with(TOKEN, CA_DATA);
	assert_int_equal(acquire(d, "n1", 1, &l), 0);
	ops->free(d);

	/* A CA that did not sign the server's certificate: refused, and the error says so. */
	d = ds_open_with(TOKEN, CA_WRONG);
	assert_int_equal(acquire(d, "n1", 1, &l), -EPROTO);
	if (!strstr(ops->last_error(d), "certificate") && !strstr(ops->last_error(d), "SSL"))
		fail_msg("TLS error text: %s", ops->last_error(d));
	ops->free(d);

	/* No CA configured: the system store does not know our self-signed certificate. */
	d = ds_open_with(TOKEN, CA_NONE);
	assert_int_equal(acquire(d, "n1", 1, &l), -EPROTO);
	ops->free(d);
}

/* ---- main ---- */

static bool make_cert(const char *name, const char *log) {
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
		 "-subj /CN=fake-apiserver -addext subjectAltName=IP:127.0.0.1 "
		 "-keyout '%s/%s.key' -out '%s/%s.crt' >>'%s' 2>&1",
		 fx.dir, name, fx.dir, name, log);
	return system(cmd) == 0;
}

static int group_setup(void **state) {
	char log[128];

	snprintf(fx.dir, sizeof(fx.dir), "/tmp/test-datastore-kube.XXXXXX");
	if (!mkdtemp(fx.dir))
		return -1;
	snprintf(log, sizeof(log), "%s/openssl.log", fx.dir);
	fx.have_openssl = system("command -v openssl >/dev/null 2>&1") == 0 && make_cert("server", log) &&
			  make_cert("other", log);
	if (!fx.have_openssl)
		fprintf(stderr, "openssl unavailable: https cases are skipped\n");
	return 0;
}

static int group_teardown(void **state) {
	char cmd[128];

	fx_stop();
	if (getenv("KEEP_TEST_DIR"))
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* test/kube/fake-apiserver.py: from $WEFT_TOP, the current directory, or relative to this binary
 * (BUILD/test/test-datastore-kube -> ../../test/kube). */
static bool find_fixture(void) {
	char exe[PATH_MAX];
	ssize_t n;
	const char *top = getenv("WEFT_TOP");

	snprintf(fx.script, sizeof(fx.script), "%s/test/kube/fake-apiserver.py", top ?: ".");
	if (access(fx.script, R_OK) == 0)
		return true;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	snprintf(fx.script, sizeof(fx.script), "%s/../../test/kube/fake-apiserver.py", dirname(exe));
	return access(fx.script, R_OK) == 0;
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_acquire_waits_for_podcidrs, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_watch, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_gone_and_bookmarks, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_dropped_watch, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_unauthorized, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_release, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_https, test_setup, test_teardown),
	};

	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		printf("SKIP: python3 not installed (needed for test/kube/fake-apiserver.py)\n");
		return 77;
	}
	if (!find_fixture()) {
		printf("SKIP: test/kube/fake-apiserver.py not found (run from the source tree or set WEFT_TOP)\n");
		return 77;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
