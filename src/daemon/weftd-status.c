/* SPDX-License-Identifier: Apache-2.0 */
/* /healthz (200 once the node is ready and its files and chains are in place) and /metrics. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/string-util.h"
#include "daemon/cni-conf.h"
#include "daemon/weftd.h"

static bool healthy(Manager *m) {
	return m->ready && !m->lease_lost && access(m->lease_path, F_OK) == 0 && cni_conf_present(m->args.cni_conf_dir) &&
	       masquerade_check(m->nft, &m->masq) > 0;
}

int manager_status_handler(const char *method, const char *path, StatusResponse *resp, void *userdata) {
	Manager *m = userdata;

	if (!streq(method, "GET") && !streq(method, "HEAD")) {
		resp->status = 405;
		return 0;
	}
	if (streq(path, "/healthz")) {
		bool ok = healthy(m);
		resp->status = ok ? 200 : 503;
		resp->body = strdup(ok ? "ok\n" : "not ready\n");
		return resp->body ? 0 : -ENOMEM;
	}
	if (streq(path, "/metrics")) {
		resp->status = 200;
		resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
		m->metrics.ready = m->ready;
		return metrics_render(&m->metrics, &resp->body);
	}
	resp->status = 404;
	return 0;
}
