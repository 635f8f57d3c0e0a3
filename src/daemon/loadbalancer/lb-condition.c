/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-condition.h"

static const char *cause_reason(LbCause c) {
	switch (c) {
	case LB_CAUSE_BAD_REQUEST: return "BadRequest";
	case LB_CAUSE_OUTSIDE_POOLS: return "OutsidePools";
	case LB_CAUSE_IN_USE: return "AddressInUse";
	case LB_CAUSE_EXHAUSTED: return "PoolExhausted";
	default: return "NotAssigned";
	}
}

void lb_condition_from(const LbAssignment *out, const char *request_key, int64_t generation, LbCondition *ret) {
	*ret = (LbCondition) { .status = out->state == LB_ASSIGNED, .generation = generation };
	if (out->state == LB_ASSIGNED) {
		char buf[2][IP_ADDR_STRLEN];

		ret->reason = "Assigned";
		if (out->n_ips > 1)
			snprintf(ret->message, sizeof(ret->message),
				 "status.loadBalancer.ingress %s (pool %s), %s (pool %s)",
				 ip_addr_to_string(&out->ips[0], buf[0]), out->pools[0],
				 ip_addr_to_string(&out->ips[1], buf[1]), out->pools[1]);
		else
			snprintf(ret->message, sizeof(ret->message), "status.loadBalancer.ingress %s (pool %s)",
				 out->n_ips ? ip_addr_to_string(&out->ips[0], buf[0]) : "-", out->pools[0] ?: "-");
		return;
	}
	ret->reason = cause_reason(out->cause);
	/* ipam's reason names the address; the decoder's (BadRequest) already names the key */
	if (request_key && (out->cause == LB_CAUSE_OUTSIDE_POOLS || out->cause == LB_CAUSE_IN_USE ||
			    (out->cause == LB_CAUSE_BAD_REQUEST && !startswith(out->reason, request_key))))
		snprintf(ret->message, sizeof(ret->message), "%s: %s", request_key, out->reason);
	else
		snprintf(ret->message, sizeof(ret->message), "%s", out->reason);
}

bool lb_condition_held(const KubeLbCondition *have, const LbCondition *want) {
	return have->present && !have->bad && have->has_transition && have->status == want->status &&
	       have->observed_generation == want->generation && streq_ptr(have->reason, want->reason) &&
	       streq_ptr(have->message, want->message);
}

static bool is_ours(const json_t *c) {
	const json_t *t = json_object_get(c, "type");

	return json_is_string(t) && streq(json_string_value(t), KUBE_LB_CONDITION_TYPE);
}

int lb_condition_put(json_t *status, const LbCondition *want, time_t now) {
	_cleanup_(json_decrefp) json_t *c = NULL;
	const char *st = want->status ? "True" : "False", *ltt = NULL;
	json_t *conds = json_object_get(status, "conditions"), *prev = NULL;
	char when[32];
	size_t i, at = SIZE_MAX;
	struct tm tm;

	if (!json_is_array(conds)) {
		conds = json_array();
		if (!conds || json_object_set_new(status, "conditions", conds) < 0)
			return -ENOMEM;
	}
	for (i = 0; i < json_array_size(conds) && at == SIZE_MAX; i++)
		if (is_ours(json_array_get(conds, i)))
			at = i;
	prev = at != SIZE_MAX ? json_array_get(conds, at) : NULL;
	if (prev && json_is_string(json_object_get(prev, "status")) &&
	    streq(json_string_value(json_object_get(prev, "status")), st) &&
	    json_is_string(json_object_get(prev, "lastTransitionTime")))
		ltt = json_string_value(json_object_get(prev, "lastTransitionTime"));
	if (!ltt) {
		if (!gmtime_r(&now, &tm) || strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
			return -EINVAL;
		ltt = when;
	}
	c = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", KUBE_LB_CONDITION_TYPE, "status", st, "lastTransitionTime",
		      ltt, "reason", want->reason, "message", want->message);
	if (!c ||
	    (want->generation > 0 && json_object_set_new(c, "observedGeneration", json_integer(want->generation)) < 0))
		return -ENOMEM;
	if (at == SIZE_MAX)
		return json_array_append(conds, c) < 0 ? -ENOMEM : 0;
	/* ltt may point into prev: replace it only now */
	if (json_array_set(conds, at, c) < 0)
		return -ENOMEM;
	for (i = json_array_size(conds); i > at + 1; i--) /* a second entry of ours: gone */
		if (is_ours(json_array_get(conds, i - 1)))
			json_array_remove(conds, i - 1);
	return 0;
}
