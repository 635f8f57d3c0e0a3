/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The LoadBalancer assigner's status condition (lb-condition.h): each outcome's status, reason and
 * message (naming the key and value); put into status beside other writers' conditions, which stay
 * as they were and where they were; lastTransitionTime kept while the status holds and moved when
 * it flips; a second entry of ours removed; observedGeneration only with a generation; and
 * lb_condition_held() against what status holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/string-util.h"
#include "daemon/loadbalancer/lb-condition.h"

#define OURS KUBE_LB_CONDITION_TYPE
#define T0 ((time_t) 1767323045) /* 2026-01-02T03:04:05Z */

static LbAssignment refused(LbCause cause, const char *reason) {
	LbAssignment a = { .state = LB_REFUSED, .cause = cause };

	snprintf(a.reason, sizeof(a.reason), "%s", reason);
	return a;
}

static void test_from(void **state) {
	LbAssignment a = { .state = LB_ASSIGNED, .n_ips = 2, .pools = { "public", "v6" } };
	LbCondition c;

	assert_int_equal(ip_addr_parse("192.0.2.1", &a.ips[0]), 0);
	assert_int_equal(ip_addr_parse("2001:db8::1", &a.ips[1]), 0);
	lb_condition_from(&a, NULL, 7, &c);
	assert_true(c.status);
	assert_string_equal(c.reason, "Assigned");
	assert_string_equal(c.message, "status.loadBalancer.ingress 192.0.2.1 (pool public), 2001:db8::1 (pool v6)");
	assert_int_equal(c.generation, 7);

	a = refused(LB_CAUSE_OUTSIDE_POOLS, "requested address 10.9.9.9 is outside every LoadBalancer pool");
	lb_condition_from(&a, "spec.loadBalancerIP", 0, &c);
	assert_false(c.status);
	assert_string_equal(c.reason, "OutsidePools");
	assert_string_equal(c.message,
			    "spec.loadBalancerIP: requested address 10.9.9.9 is outside every LoadBalancer pool");

	a = refused(LB_CAUSE_IN_USE, "requested address 192.0.2.1 is held by shop/web");
	lb_condition_from(&a, "weft.dev/loadbalancer-ips", 0, &c);
	assert_string_equal(c.reason, "AddressInUse");
	assert_string_equal(c.message, "weft.dev/loadbalancer-ips: requested address 192.0.2.1 is held by shop/web");

	/* the decoder's reason already names its key */
	a = refused(LB_CAUSE_BAD_REQUEST, "weft.dev/loadbalancer-ips: \"1.2.3.300\" is not a list of IP addresses");
	lb_condition_from(&a, "weft.dev/loadbalancer-ips", 0, &c);
	assert_string_equal(c.reason, "BadRequest");
	assert_string_equal(c.message, "weft.dev/loadbalancer-ips: \"1.2.3.300\" is not a list of IP addresses");

	a = (LbAssignment) { .state = LB_PENDING, .cause = LB_CAUSE_EXHAUSTED };
	snprintf(a.reason, sizeof(a.reason), "no free IPv4 address in a pool open to this Service (with AutoAssign)");
	lb_condition_from(&a, NULL, 0, &c);
	assert_false(c.status);
	assert_string_equal(c.reason, "PoolExhausted");
}

static const json_t *ours(const json_t *status) {
	size_t i;
	const json_t *c;

	json_array_foreach(json_object_get(status, "conditions"), i, c)
		if (streq(json_string_value(json_object_get(c, "type")), OURS))
			return c;
	return NULL;
}

static const char *ltt(const json_t *status) {
	return json_string_value(json_object_get(ours(status), "lastTransitionTime"));
}

static void test_put(void **state) {
	json_t *status = json_loads("{\"loadBalancer\": {}, \"conditions\": [{\"type\": \"example.com/A\", \"status\": "
				    "\"True\", \"reason\": \"R\", \"message\": \"theirs\", \"lastTransitionTime\": "
				    "\"2020-01-01T00:00:00Z\"}]}",
				    0, NULL);
	_cleanup_free_ char *theirs =
			json_dumps(json_array_get(json_object_get(status, "conditions"), 0), JSON_COMPACT);
	_cleanup_free_ char *after = NULL;
	LbCondition want = { .status = false, .reason = "OutsidePools", .message = "spec.loadBalancerIP: x" };

	assert_non_null(status);
	/* first put: appended after theirs, no observedGeneration */
	assert_int_equal(lb_condition_put(status, &want, T0), 0);
	assert_int_equal(json_array_size(json_object_get(status, "conditions")), 2);
	assert_ptr_equal(ours(status), json_array_get(json_object_get(status, "conditions"), 1));
	assert_string_equal(json_string_value(json_object_get(ours(status), "status")), "False");
	assert_string_equal(json_string_value(json_object_get(ours(status), "reason")), "OutsidePools");
	assert_string_equal(json_string_value(json_object_get(ours(status), "message")), "spec.loadBalancerIP: x");
	assert_null(json_object_get(ours(status), "observedGeneration"));
	assert_string_equal(ltt(status), "2026-01-02T03:04:05Z");

	/* same status, another message and a generation: lastTransitionTime stays */
	want.message[0] = 'S';
	want.generation = 2;
	assert_int_equal(lb_condition_put(status, &want, T0 + 60), 0);
	assert_string_equal(ltt(status), "2026-01-02T03:04:05Z");
	assert_string_equal(json_string_value(json_object_get(ours(status), "message")), "Spec.loadBalancerIP: x");
	assert_int_equal(json_integer_value(json_object_get(ours(status), "observedGeneration")), 2);
	assert_int_equal(json_array_size(json_object_get(status, "conditions")), 2);

	/* a flip: lastTransitionTime moves */
	want = (LbCondition) { .status = true, .reason = "Assigned", .message = "m" };
	assert_int_equal(lb_condition_put(status, &want, T0 + 3600), 0);
	assert_string_equal(ltt(status), "2026-01-02T04:04:05Z");
	assert_string_equal(json_string_value(json_object_get(ours(status), "status")), "True");

	/* a second entry of ours (another writer's mistake) goes; theirs stays first and unchanged */
	json_array_append_new(json_object_get(status, "conditions"),
			      json_pack("{s:s, s:s}", "type", OURS, "status", "True"));
	assert_int_equal(lb_condition_put(status, &want, T0 + 7200), 0);
	assert_int_equal(json_array_size(json_object_get(status, "conditions")), 2);
	assert_string_equal(ltt(status), "2026-01-02T04:04:05Z");
	after = json_dumps(json_array_get(json_object_get(status, "conditions"), 0), JSON_COMPACT);
	assert_string_equal(after, theirs);
	json_decref(status);

	/* no conditions yet, or not an array */
	status = json_loads("{\"conditions\": 5}", 0, NULL);
	assert_int_equal(lb_condition_put(status, &want, T0), 0);
	assert_int_equal(json_array_size(json_object_get(status, "conditions")), 1);
	json_decref(status);
}

static void test_held(void **state) {
	KubeLbCondition have = { .present = true,
				 .status = true,
				 .has_transition = true,
				 .observed_generation = 3,
				 .reason = (char *) "Assigned",
				 .message = (char *) "m" };
	LbCondition want = { .status = true, .reason = "Assigned", .message = "m", .generation = 3 };

	assert_true(lb_condition_held(&have, &want));
	want.generation = 4;
	assert_false(lb_condition_held(&have, &want));
	want.generation = 3;
	want.message[0] = 'n';
	assert_false(lb_condition_held(&have, &want));
	want.message[0] = 'm';
	have.has_transition = false;
	assert_false(lb_condition_held(&have, &want));
	have.has_transition = true;
	have.bad = true;
	assert_false(lb_condition_held(&have, &want));
	have = (KubeLbCondition) {};
	assert_false(lb_condition_held(&have, &want));
}

int main(void) {
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from),
		cmocka_unit_test(test_put),
		cmocka_unit_test(test_held),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
