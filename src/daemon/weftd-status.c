/* SPDX-License-Identifier: Apache-2.0 */
/* /healthz (200 once the node is ready and its files and chains are in place), /metrics and
 * /debug/objects (weftd-objects.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/string-util.h"
#include "daemon/cni-conf.h"
#include "daemon/flows/flow-agent.h"
#include "daemon/policy/policy-agent.h"
#include "daemon/service/service-explain.h"
#include "daemon/weftd.h"

static bool healthy(Manager *m) {
	return m->ready && !m->lease_lost && access(m->lease_path, F_OK) == 0 &&
	       cni_conf_present(m->args.cni_conf_dir) && masquerade_check(m->nft, &m->masq) > 0;
}

void manager_health_publish(Manager *m) {
	atomic_store(&m->health_ok, healthy(m));
	atomic_store(&m->health_beat, now_usec());
}

/*
 * In the status server's front thread: a long Service or policy batch holds the loop for seconds
 * (2,000 Services in one transaction), and a kubelet whose probe times out restarts weftd, which
 * then rebuilds the same batch. The verdict is the loop's own, at most HEALTH_PUBLISH_USEC old; a
 * loop silent for HEALTH_STALL_USEC is wedged and reported so.
 */
int manager_status_front_handler(const char *method, const char *path, const char *query, StatusResponse *resp,
				 void *userdata) {
	Manager *m = userdata;
	uint64_t beat = atomic_load(&m->health_beat);
	bool ok;

	if ((!streq(method, "GET") && !streq(method, "HEAD")) || !streq(path, "/healthz") ||
	    (query && strstr(query, "verbose")) || beat == 0)
		return STATUS_DEFER;
	ok = atomic_load(&m->health_ok) && now_usec() - beat < HEALTH_STALL_USEC;
	resp->status = ok ? 200 : 503;
	resp->content_type = "text/plain; charset=utf-8";
	resp->body = strdup(ok ? "ok\n" : beat && !atomic_load(&m->health_ok) ? "not ready\n" : "event loop stalled\n");
	return resp->body ? 0 : -ENOMEM;
}

/* /healthz?verbose: the checks one per line. BIRD is reported but never fails the check: the
 * kubelet would restart weftd, which cannot fix BIRD (a separate process with its own restart
 * policy), and with graceful restart the datapath keeps working while BIRD is down. */
static int healthz_verbose(Manager *m, bool ok, char **ret) {
	char *buf = NULL, check[192] = "";
	BackendProbe p;
	int r;

	if (backend_probe(&m->backend, &p) >= 0 && p.ok)
		snprintf(check, sizeof(check), "[+]%s (not part of the verdict)\n", p.check);
	else if (p.check)
		snprintf(check, sizeof(check), "[-]%s: %s (not part of the verdict)\n", p.check, p.why);
	r = asprintf(&buf, "[%c]ready\n[%c]lease\n[%c]cni-conf\n[%c]masquerade\n%s%s\n", m->ready ? '+' : '-',
		     !m->lease_lost && access(m->lease_path, F_OK) == 0 ? '+' : '-',
		     cni_conf_present(m->args.cni_conf_dir) ? '+' : '-',
		     masquerade_check(m->nft, &m->masq) > 0 ? '+' : '-', check,
		     ok ? "healthz check passed" : "healthz check failed");
	if (r < 0)
		return -ENOMEM;
	if (p.detail[0]) {
		char *nb = NULL;
		r = asprintf(&nb, "%s%s\n", buf, p.detail);
		free(buf);
		if (r < 0)
			return -ENOMEM;
		buf = nb;
	}
	*ret = buf;
	return 0;
}

/* /metrics: the node's metrics, then the object cache's. */
static int render_metrics(Manager *m, char **ret) {
	_cleanup_free_ char *base = NULL, *buf = NULL;
	size_t size = 0;
	FILE *f;
	int r;

	r = metrics_render(&m->metrics, &base);
	if (r < 0)
		return r;
	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs(base, f);
	backend_render_metrics(&m->backend, f);
	(void) manager_objects_render_metrics(m, f);
	if (fclose(f) != 0 || !buf)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}

int manager_status_handler(const char *method, const char *path, const char *query, StatusResponse *resp,
			   void *userdata) {
	Manager *m = userdata;

	if (!streq(method, "GET") && !streq(method, "HEAD")) {
		resp->status = 405;
		return 0;
	}
	if (streq(path, "/healthz")) {
		bool ok = healthy(m);
		resp->status = ok ? 200 : 503;
		if (query && strstr(query, "verbose"))
			return healthz_verbose(m, ok, &resp->body);
		resp->body = strdup(ok ? "ok\n" : "not ready\n");
		return resp->body ? 0 : -ENOMEM;
	}
	if (streq(path, "/metrics")) {
		resp->status = 200;
		resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
		m->metrics.ready = m->ready;
		return render_metrics(m, &resp->body);
	}
	if (streq(path, "/debug/objects"))
		return manager_objects_debug(m, query, resp);
	if (streq(path, "/debug/policy/explain") && m->objects.policy) {
		resp->content_type = "text/plain; charset=utf-8";
		return policy_agent_explain(m->objects.policy, query, &resp->status, &resp->body);
	}
	if (streq(path, "/debug/service/explain") && m->objects.services) {
		resp->content_type = "text/plain; charset=utf-8";
		return service_agent_explain(m->objects.services, query, &resp->status, &resp->body);
	}
	if (streq(path, "/policy/drops") && m->objects.policy) {
		resp->content_type = "application/x-ndjson";
		return policy_agent_drops(m->objects.policy, query, &resp->status, &resp->body);
	}
	if (streq(path, "/flows")) {
		resp->content_type = m->objects.flows ? "application/x-ndjson" : "text/plain; charset=utf-8";
		if (m->objects.flows)
			return flow_agent_serve(m->objects.flows, query, &resp->status, &resp->body);
		resp->status = 404;
		resp->body = strdup("the flow log is off (weftd --flow-log)\n");
		return resp->body ? 0 : -ENOMEM;
	}
	resp->status = 404;
	return 0;
}
