/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object cache on a real wire: kube_object_source_ops over KubeClient against
 * test/kube/fake-apiserver.py (Nodes: the kind the fixture serves today). List, watch deltas,
 * a status-only heartbeat that fires nothing, 410 after compaction + a dropped stream (relist and
 * diff), bookmarks. Driven like weftd: poll the client's fd and the cache's fd, dispatch both.
 * Needs python3 (skip 77 otherwise).
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/cache/object-source-kube.h"
#include "shared/client/kubeconfig.h"

#define TOKEN "weft-cache-token"

static struct {
	char script[PATH_MAX];
	char dir[64];
	pid_t pid;
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

static size_t fx_write(char *p, size_t s, size_t n, void *u) {
	return fwrite(p, s, n, u);
}

/* A blocking request to the fixture; the HTTP code (0 = no answer), the body in *ret_body. */
static long fx_call(const char *method, const char *path, const char *body, char **ret_body) {
	char url[256], *buf = NULL;
	size_t len = 0;
	struct curl_slist *h = NULL;
	FILE *out = open_memstream(&buf, &len);
	CURL *e = curl_easy_init();
	long code = 0;

	snprintf(url, sizeof(url), "%s%s", fx.url, path);
	h = curl_slist_append(h, "Authorization: Bearer " TOKEN);
	h = curl_slist_append(h, "Content-Type: application/merge-patch+json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fx_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 15000L); /* slack for a busy machine */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
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

static void fx_do(const char *method, const char *path, const char *body) {
	long code = fx_call(method, path, body ?: "{}", NULL);

	if (code < 200 || code >= 300)
		fail_msg("fixture %s %s: HTTP %ld", method, path, code);
}

static void fx_start(void) {
	char port[16], log[96];
	int p = free_port();

	snprintf(port, sizeof(port), "%d", p);
	snprintf(fx.url, sizeof(fx.url), "http://127.0.0.1:%d", p);
	snprintf(log, sizeof(log), "%s/fixture.log", fx.dir);
	fx.pid = fork();
	assert_true(fx.pid >= 0);
	if (fx.pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("python3", "python3", fx.script, "--bind", "127.0.0.1", "--token", TOKEN, "--port", port,
		       "--node", "node-1=10.244.1.0/24", "--node", "node-2=10.244.2.0/24,fd00:10:244:2::/64", NULL);
		_exit(127);
	}
	/* up to 30 s: a busy machine can take seconds to start Python and import the fixture */
	for (int i = 0; i < 1200; i++) {
		if (fx_call("GET", "/version", NULL, NULL) == 200)
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

/* ---- the cache on a KubeClient ---- */

typedef struct Env {
	KubeClient *client;
	KubeObjectSource *src;
	ObjectCache *cache;
	char log[4096];
} Env;

static void rec(Env *e, const char *what, const KubeObject *o) {
	size_t l = strlen(e->log);

	snprintf(e->log + l, sizeof(e->log) - l, "%s%s %s", l ? " " : "", what, o->name);
}

static void on_added(ObjectCache *c, const KubeObject *o, void *userdata) {
	rec(userdata, "A", o);
}

static void on_updated(ObjectCache *c, const KubeObject *old, const KubeObject *o, void *userdata) {
	rec(userdata, "U", o);
}

static void on_deleted(ObjectCache *c, const KubeObject *old, void *userdata) {
	rec(userdata, "D", old);
}

static const ObjectCacheHandlers handlers = {
	.added = on_added,
	.updated = on_updated,
	.deleted = on_deleted,
};

/* weftd's loop in small: both fds, the client's timeouts. */
static bool run_until(Env *e, bool (*pred)(Env *), unsigned ms) {
	uint64_t deadline = now_usec() + ms * USEC_PER_MSEC;

	while (!pred(e)) {
		struct pollfd p[2] = {
			{ .fd = kube_client_get_fd(e->client), .events = POLLIN },
			{ .fd = object_cache_get_fd(e->cache), .events = POLLIN },
		};
		int t = kube_client_next_timeout_ms(e->client);

		if (now_usec() >= deadline)
			return false;
		(void) poll(p, 2, t < 0 || t > 10 ? 10 : t);
		(void) kube_client_dispatch(e->client);
		if (p[1].revents & POLLIN)
			(void) object_cache_dispatch(e->cache);
	}
	return true;
}

static bool synced(Env *e) {
	return object_cache_synced(e->cache, KUBE_KIND_NODE);
}

static const char *want_log;
static bool log_is(Env *e) {
	return streq(e->log, want_log);
}

static void expect_log(Env *e, const char *want) {
	want_log = want;
	if (!run_until(e, log_is, 3000))
		fail_msg("deltas\n  got:  %s\n  want: %s", e->log, want);
	e->log[0] = 0;
}

/* The cache holds what GET /api/v1/nodes returns. */
static void expect_cache_equals_server(Env *e) {
	char *body = NULL;
	json_t *list, *item;
	size_t i;

	assert_int_equal(fx_call("GET", "/api/v1/nodes", NULL, &body), 200);
	list = json_loads(body, 0, NULL);
	free(body);
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_NODE).objects,
			 json_array_size(json_object_get(list, "items")));
	json_array_foreach(json_object_get(list, "items"), i, item) {
		KubeObject *o = NULL;
		const KubeObject *got;

		assert_int_equal(kube_object_decode(KUBE_KIND_NODE, item, object_cache_pool(e->cache), &o, NULL), 0);
		got = object_cache_get(e->cache, KUBE_KIND_NODE, NULL, o->name);
		if (!got || !kube_object_equal(got, o))
			fail_msg("cache differs from the server at %s", o->name);
		kube_object_free(o, object_cache_pool(e->cache));
	}
	json_decref(list);
}

static int env_setup(void **state) {
	Env *e = calloc(1, sizeof(*e));
	ObjectCacheOptions opts = { .backoff_min_ms = 5, .backoff_max_ms = 50 };
	char path[96], *err = NULL;
	KubeConfig *cfg = NULL;
	FILE *f;

	fx_start();
	snprintf(path, sizeof(path), "%s/kubeconfig", fx.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"apiVersion: v1\nkind: Config\n"
		"clusters:\n- name: fake\n  cluster:\n    server: %s\n"
		"contexts:\n- name: weft@fake\n  context: {cluster: fake, user: weft}\n"
		"current-context: weft@fake\n"
		"users:\n- name: weft\n  user:\n    token: %s\n",
		fx.url, TOKEN);
	fclose(f);
	if (kubeconfig_load(path, &cfg, &err) < 0)
		fail_msg("kubeconfig: %s", err ?: "?");
	assert_int_equal(kube_client_new(&cfg, &e->client), 0);
	assert_int_equal(kube_object_source_new(e->client, &e->src), 0);
	assert_int_equal(object_cache_new(&opts, &e->cache), 0);
	assert_int_equal(object_cache_add_kind(e->cache, KUBE_KIND_NODE, &kube_object_source_ops, e->src, &handlers, e),
			 0);
	assert_int_equal(object_cache_start(e->cache), 0);
	assert_true(run_until(e, synced, 3000));
	*state = e;
	return 0;
}

static int env_teardown(void **state) {
	Env *e = *state;

	object_cache_free(e->cache);
	kube_object_source_free(e->src);
	kube_client_free(e->client);
	free(e);
	fx_stop();
	return 0;
}

static void test_list_and_watch(void **state) {
	Env *e = *state;
	const KubeNode *n;

	expect_log(e, "A node-1 A node-2");
	n = KUBE_NODE(object_cache_get(e->cache, KUBE_KIND_NODE, NULL, "node-2"));
	assert_non_null(n);
	assert_int_equal(n->n_pod_cidrs, 2);

	fx_do("POST", "/fixture/nodes", "{\"name\": \"node-3\", \"podCIDRs\": [\"10.244.3.0/24\"]}");
	expect_log(e, "A node-3");
	fx_do("PATCH", "/api/v1/nodes/node-1",
	      "{\"metadata\": {\"annotations\": {\"weft.dev/public-ip\": \"10.0.0.1\"}}}");
	expect_log(e, "U node-1");
	assert_string_equal(KUBE_NODE(object_cache_get(e->cache, KUBE_KIND_NODE, NULL, "node-1"))->annotations[1],
			    "10.0.0.1");
	/* A kubelet heartbeat: the server sends MODIFIED, the compact Node is unchanged. */
	fx_do("PATCH", "/api/v1/nodes/node-1/status",
	      "{\"status\": {\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\", \"lastHeartbeatTime\": "
	      "\"2026-11-25T22:00:00Z\"}]}}");
	fx_do("DELETE", "/api/v1/nodes/node-2", NULL);
	expect_log(e, "D node-2");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_NODE).unchanged, 1);
	expect_cache_equals_server(e);
}

static bool relisted(Env *e) {
	return object_cache_stats(e->cache, KUBE_KIND_NODE).lists >= 2 &&
	       object_cache_get(e->cache, KUBE_KIND_NODE, NULL, "node-4");
}

/* Compaction, then the stream is cut: the cache resumes from a resourceVersion that is gone, gets
 * 410, lists again and diffs, so what changed meanwhile arrives as deltas. */
static void test_gone_relist(void **state) {
	Env *e = *state;
	ObjectCacheStats st;

	expect_log(e, "A node-1 A node-2");
	fx_do("POST", "/fixture/compact", NULL);
	fx_do("POST", "/fixture/drop-watches", NULL);
	fx_do("DELETE", "/api/v1/nodes/node-1", NULL);
	fx_do("POST", "/fixture/nodes", "{\"name\": \"node-4\", \"podCIDRs\": [\"10.244.4.0/24\"]}");
	fx_do("POST", "/fixture/compact", NULL);
	if (!run_until(e, relisted, 5000)) {
		st = object_cache_stats(e->cache, KUBE_KIND_NODE);
		fail_msg("no relist: lists %llu watches %llu stale %llu failures %llu rv %s log %s",
			 (unsigned long long) st.lists, (unsigned long long) st.watches, (unsigned long long) st.stale,
			 (unsigned long long) st.failures, object_cache_resource_version(e->cache, KUBE_KIND_NODE),
			 e->log);
	}
	/* Whether node-1's DELETED and node-4's ADDED came by watch or by the relist, they came. */
	expect_log(e, "D node-1 A node-4");
	st = object_cache_stats(e->cache, KUBE_KIND_NODE);
	assert_true(st.stale >= 1);
	expect_cache_equals_server(e);
}

/* The fixture has our watch open (a bookmark is sent only to watches that are there). */
static bool watch_open(Env *e) {
	char *body = NULL;
	json_t *j;
	long n;

	if (fx_call("GET", "/fixture/stats", NULL, &body) != 200) {
		free(body);
		return false;
	}
	j = json_loads(body, 0, NULL);
	free(body);
	n = (long) json_integer_value(json_object_get(j, "watches"));
	json_decref(j);
	return n >= 1;
}

static bool rv_at_least(Env *e) {
	return strtoull(object_cache_resource_version(e->cache, KUBE_KIND_NODE), NULL, 10) >= 150;
}

static void test_bookmarks(void **state) {
	Env *e = *state;

	expect_log(e, "A node-1 A node-2");
	assert_true(strtoull(object_cache_resource_version(e->cache, KUBE_KIND_NODE), NULL, 10) < 150);
	assert_true(run_until(e, watch_open, 3000));
	/* Writes to other resources move the server's resourceVersion; only a bookmark tells us. */
	for (int i = 0; i < 60; i++)
		fx_do("POST", "/fixture/advance", NULL);
	fx_do("POST", "/fixture/bookmark", NULL);
	assert_true(run_until(e, rv_at_least, 3000));
	expect_log(e, "");
	assert_int_equal(object_cache_stats(e->cache, KUBE_KIND_NODE).lists, 1);
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_list_and_watch, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_gone_relist, env_setup, env_teardown),
		cmocka_unit_test_setup_teardown(test_bookmarks, env_setup, env_teardown),
	};
	char exe[PATH_MAX];
	ssize_t n;
	int r;

	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		printf("SKIP: python3 not installed (needed for test/kube/fake-apiserver.py)\n");
		return 77;
	}
	snprintf(fx.script, sizeof(fx.script), "%s/test/kube/fake-apiserver.py", getenv("WEFT_TOP") ?: ".");
	if (access(fx.script, R_OK) != 0) {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			snprintf(fx.script, sizeof(fx.script), "%s/../../test/kube/fake-apiserver.py", dirname(exe));
		}
	}
	if (access(fx.script, R_OK) != 0) {
		printf("SKIP: test/kube/fake-apiserver.py not found (run from the source tree or set WEFT_TOP)\n");
		return 77;
	}
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/test-object-source-kube.XXXXXX");
	if (!mkdtemp(fx.dir))
		return 1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	if (!getenv("KEEP_TEST_DIR")) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.dir);
		if (system(cmd) != 0)
			r = r ?: 1;
	}
	return r;
}
