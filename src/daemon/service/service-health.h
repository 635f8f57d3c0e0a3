/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * healthCheckNodePort of LoadBalancer Services with externalTrafficPolicy Local, answered as
 * kube-proxy does, so a load balancer only sends to nodes holding an endpoint: GET on
 * :<healthCheckNodePort> (any path) answers 200 when this node has a ready endpoint of the Service,
 * 503 otherwise, with {"service":{"namespace":…,"name":…},"localEndpoints":N,"serviceProxyHealthy":true}.
 */

#include <stddef.h>
#include <stdint.h>

#include "shared/event/event-loop.h"

typedef struct ServiceHealth ServiceHealth;

typedef struct ServiceHealthEntry {
	uint16_t port;
	const char *namespace, *name; /* borrowed for the call */
	size_t local_endpoints;
} ServiceHealthEntry;

int service_health_new(EventLoop *loop, ServiceHealth **ret);
ServiceHealth *service_health_free(ServiceHealth *h);
/* The wanted servers (any order, one per port): listens on new ports, closes gone ones, updates
 * the rest. A port that cannot be bound is logged and skipped. 0 or -ENOMEM. */
int service_health_update(ServiceHealth *h, const ServiceHealthEntry *v, size_t n);
