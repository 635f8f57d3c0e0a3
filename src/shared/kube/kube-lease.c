/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/kube/kube-lease.h"

static const char *str_or_empty(const json_t *j, const char *key) {
	const char *s = json_string_value(json_object_get(j, key));

	return s ?: "";
}

int kube_lease_parse(const json_t *j, KubeLease *ret) {
	const json_t *spec = json_object_get(j, "spec"), *md = json_object_get(j, "metadata");
	KubeLease l = {};

	if (!json_is_object(j) || !json_is_object(md) || (spec && !json_is_object(spec)))
		return -EINVAL;
	l.holder = strdup(str_or_empty(spec, "holderIdentity"));
	l.resource_version = strdup(str_or_empty(md, "resourceVersion"));
	if (!l.holder || !l.resource_version) {
		kube_lease_done(&l);
		return -ENOMEM;
	}
	l.duration = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
	l.transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
	*ret = l;
	return 0;
}

void kube_lease_done(KubeLease *l) {
	if (!l)
		return;
	l->holder = mfree(l->holder);
	l->resource_version = mfree(l->resource_version);
}

KubeLeaseAction kube_lease_decide(const KubeLease *l, const char *identity, uint64_t now_usec, uint64_t observed_usec,
				  int64_t default_duration) {
	int64_t d = l->duration > 0 ? l->duration : default_duration;

	if (streq(l->holder, identity))
		return KUBE_LEASE_RENEW;
	/* client-go: "if the lease is held by another and not expired (observedTime + duration > now),
	 * we are not the leader" -- both times on our clock */
	if (!isempty(l->holder) && observed_usec + (uint64_t) MAX(d, (int64_t) 0) * 1000000 > now_usec)
		return KUBE_LEASE_HELD;
	return KUBE_LEASE_ACQUIRE;
}

uint64_t kube_realtime_usec(void) {
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t) tv.tv_sec * 1000000 + (uint64_t) tv.tv_usec;
}

char *kube_micro_time(uint64_t realtime_usec, char *buf, size_t size) {
	time_t t = (time_t) (realtime_usec / 1000000);
	struct tm tm;
	char day[32];

	if (!gmtime_r(&t, &tm) || strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		snprintf(day, sizeof(day), "1970-01-01T00:00:00");
	snprintf(buf, size, "%s.%06uZ", day, (unsigned) (realtime_usec % 1000000));
	return buf;
}

json_t *kube_lease_render(const json_t *lease, const char *ns, const char *name, const char *identity, int64_t duration,
			  bool acquire, uint64_t realtime_usec) {
	_cleanup_(json_decrefp) json_t *o = NULL;
	json_t *spec;
	char now[40];
	int64_t transitions = 0;

	kube_micro_time(realtime_usec, now, sizeof(now));
	if (lease) {
		o = json_deep_copy(lease);
		if (!o)
			return NULL;
		transitions = json_integer_value(json_object_get(json_object_get(o, "spec"), "leaseTransitions"));
		if (acquire)
			transitions++;
	} else {
		o = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
			      "metadata", "namespace", ns, "name", name);
		if (!o)
			return NULL;
	}
	spec = json_object_get(o, "spec");
	if (!json_is_object(spec)) {
		spec = json_object();
		if (!spec || json_object_set_new(o, "spec", spec) < 0)
			return NULL;
	}
	if (isempty(identity)) { /* release: a candidate may take it at its next try */
		if (json_object_set_new(spec, "holderIdentity", json_string("")) < 0 ||
		    json_object_set_new(spec, "leaseDurationSeconds", json_integer(1)) < 0 ||
		    json_object_set_new(spec, "renewTime", json_string(now)) < 0)
			return NULL;
		return TAKE_PTR(o);
	}
	if (json_object_set_new(spec, "holderIdentity", json_string(identity)) < 0 ||
	    json_object_set_new(spec, "leaseDurationSeconds", json_integer(duration)) < 0 ||
	    json_object_set_new(spec, "renewTime", json_string(now)) < 0 ||
	    json_object_set_new(spec, "leaseTransitions", json_integer(transitions)) < 0)
		return NULL;
	if ((acquire || !json_object_get(spec, "acquireTime")) &&
	    json_object_set_new(spec, "acquireTime", json_string(now)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

char *kube_lease_path(const char *ns, const char *name) {
	if (!name)
		return strdup_printf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
	return strdup_printf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", ns, name);
}
