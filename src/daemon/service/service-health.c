/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/service/service-health.h"
#include "daemon/status-server.h"

typedef struct HealthServer {
	uint16_t port;
	char *namespace, *name;
	size_t local_endpoints;
	StatusServer *srv;
	bool seen;
} HealthServer;

struct ServiceHealth {
	EventLoop *loop;
	HealthServer **v;
	size_t n;
};

static int on_request(const char *method, const char *path, const char *query, StatusResponse *resp, void *userdata) {
	HealthServer *s = userdata;
	json_t *j = json_pack("{s:{s:s, s:s}, s:I, s:b}", "service", "namespace", s->namespace, "name", s->name,
			      "localEndpoints", (json_int_t) s->local_endpoints, "serviceProxyHealthy", 1);

	if (!j)
		return -ENOMEM;
	resp->status = s->local_endpoints > 0 ? 200 : 503;
	resp->content_type = "application/json";
	resp->body = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return resp->body ? 0 : -ENOMEM;
}

static HealthServer *server_free(HealthServer *s) {
	if (!s)
		return NULL;
	status_server_free(s->srv);
	free(s->namespace);
	free(s->name);
	free(s);
	return NULL;
}

int service_health_new(EventLoop *loop, ServiceHealth **ret) {
	ServiceHealth *h = calloc(1, sizeof(ServiceHealth));

	if (!h)
		return -ENOMEM;
	h->loop = loop;
	*ret = h;
	return 0;
}

ServiceHealth *service_health_free(ServiceHealth *h) {
	if (!h)
		return NULL;
	for (size_t i = 0; i < h->n; i++)
		server_free(h->v[i]);
	free(h->v);
	free(h);
	return NULL;
}

int service_health_update(ServiceHealth *h, const ServiceHealthEntry *v, size_t n) {
	size_t w = 0;

	for (size_t i = 0; i < h->n; i++)
		h->v[i]->seen = false;
	for (size_t k = 0; k < n; k++) {
		HealthServer *s = NULL;
		char *ns, *name;

		for (size_t i = 0; i < h->n && !s; i++)
			if (h->v[i]->port == v[k].port)
				s = h->v[i];
		if (!s) {
			HealthServer **nv = reallocarray(h->v, h->n + 1, sizeof(HealthServer *));
			char listen[16];
			int r;

			if (!nv)
				return -ENOMEM;
			h->v = nv;
			s = calloc(1, sizeof(HealthServer));
			if (!s)
				return -ENOMEM;
			s->port = v[k].port;
			snprintf(listen, sizeof(listen), ":%u", v[k].port);
			r = status_server_new(h->loop, listen, on_request, s, &s->srv);
			if (r < 0) {
				log_warning_errno(r, "Services: cannot serve healthCheckNodePort %u of %s/%s: %m",
						  v[k].port, v[k].namespace, v[k].name);
				free(s);
				continue;
			}
			h->v[h->n++] = s;
		}
		ns = strdup(v[k].namespace);
		name = strdup(v[k].name);
		if (!ns || !name) {
			free(ns);
			free(name);
			return -ENOMEM;
		}
		free(s->namespace);
		free(s->name);
		s->namespace = ns;
		s->name = name;
		s->local_endpoints = v[k].local_endpoints;
		s->seen = true;
	}
	for (size_t i = 0; i < h->n; i++)
		if (h->v[i]->seen)
			h->v[w++] = h->v[i];
		else
			server_free(h->v[i]);
	h->n = w;
	return 0;
}
