/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `weft service explain DEST[:PORT][/PROTO] [--from POD|IP] [--node NODE]`: what a node does with a
 * connection to DEST, read from the Service agent's own model: the unit it programmed for each
 * Service (service-compile.h), so the endpoints, the masquerade and the no-endpoint verdict are the
 * programmed rules' and not a second opinion. The Services whose ClusterIP, externalIP, LB IP or
 * NodePort (a node address + nodePort) DEST is; for each port: the endpoints this node chooses
 * from and why every other endpoint of the slices is not among them; session affinity; whether the
 * client is masqueraded; what happens without an endpoint; an address weft refused, with the
 * reason logged and counted; with a client, the NetworkPolicy verdict of the chosen endpoints.
 * docs/service-explain.md.
 */

#include <stdbool.h>
#include <stdint.h>

#include "daemon/policy/policy-compile.h"
#include "daemon/service/service-admission.h"
#include "daemon/service/service-agent.h"
#include "daemon/service/service-compile.h"

typedef struct ServiceExplainEntry {
	const KubeService *svc;
	const KubeEndpointSlice *const *slices;
	size_t n_slices;
	const ServiceUnit *unit; /* as programmed for `node` (NULL: nothing programmed) */
	bool quarantined;        /* nftables refused its objects (service-agent.h) */
} ServiceExplainEntry;

typedef struct ServiceExplainInput {
	const char *node; /* the node whose rules are explained */
	const ServiceExplainEntry *services;
	size_t n_services;
	const ServiceAdmissionPolicy *policy; /* the endpoints' refusals, the node addresses, the pod networks */
	/* refusals as weftd logged them: "ns/name: <what> <addr> <PROTO>/<port> refused: <reason>" */
	const char *const *refusals;
	size_t n_refusals;
	const IpPrefix *service_ranges; /* --service-cluster-ip-range */
	size_t n_service_ranges;
	const PolicyInput *np; /* NetworkPolicy, for a client (NULL: no verdict) */
	const IpAddr *from;    /* the client (NULL: none given) */
	const char *from_name; /* how it was named ("ns/pod" or the address) */
} ServiceExplainInput;

/*
 * The report on dest[:port][/proto] (port 0: every port; proto < 0: any). 0 with *ret_text and
 * *ret_found (some Service answers for it); -ENOMEM.
 */
int service_explain(const ServiceExplainInput *in, const IpAddr *dest, uint16_t port, int proto, char **ret_text,
		    bool *ret_found);

/* "10.96.0.10", "10.96.0.10:80", "10.96.0.10:80/UDP", "fd00::1", "[fd00::1]:80/tcp", "10.96.0.10/udp".
 * 0 or -EINVAL. */
int service_explain_parse_dest(const char *s, IpAddr *ret_addr, uint16_t *ret_port, int *ret_proto);

/* GET /debug/service/explain?dest=DEST[&from=NS/POD|IP][&node=NODE]: 200 with the report when a
 * Service answers, 404 with the report when none does, 400 on a bad query. 0 or -ENOMEM. */
int service_agent_explain(ServiceAgent *a, const char *query, int *ret_status, char **ret_body);
