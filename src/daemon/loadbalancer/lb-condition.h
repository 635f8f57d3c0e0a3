/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The LoadBalancer assigner's status condition (Cilium's io.cilium/lb-ipam-request-satisfied): one
 * metav1.Condition of type KUBE_LB_CONDITION_TYPE in each of its Services' status.conditions.
 *
 *   True  Assigned       the Service has its addresses (the message names them and their pools)
 *   False OutsidePools   a requested address lies outside every pool open to the Service
 *   False AddressInUse   a requested address is held by another Service
 *   False BadRequest     a malformed request (spec.loadBalancerIP, the annotation), or an address
 *                        not of the Service's ipFamilies
 *   False PoolExhausted  pending: no free address
 *
 * The message names the key and the value. observedGeneration is metadata.generation when the
 * Service has one; lastTransitionTime changes only when the status flips. The entries of other
 * writers are kept as they are, in their order. Pure: unit-tested in test/unit/test-lb-condition.c.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "daemon/loadbalancer/lb-ipam.h"
#include "shared/kube/kube-objects.h"

typedef struct LbCondition {
	bool status; /* True */
	const char *reason;
	char message[256];
	int64_t generation; /* observedGeneration; 0: none */
} LbCondition;

/* The condition for an outcome; request_key: where the Service's request came from (NULL: none). */
void lb_condition_from(const LbAssignment *out, const char *request_key, int64_t generation, LbCondition *ret);
/* Whether status already holds exactly this condition (then it is not written). */
bool lb_condition_held(const KubeLbCondition *have, const LbCondition *want);
/* Puts want into status (a Service's status object): replaces our entries, keeps every other
 * one; keeps lastTransitionTime when the status does not flip, else sets it to now. 0 or -ENOMEM. */
int lb_condition_put(json_t *status, const LbCondition *want, time_t now);
