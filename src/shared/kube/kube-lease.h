/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * coordination.k8s.io/v1 Leases for leader election, with client-go's leaderelection semantics
 * (tools/leaderelection, LeaseLock):
 *
 *   spec.holderIdentity        who holds it ("" or absent: nobody, e.g. after a clean release)
 *   spec.leaseDurationSeconds  how long a candidate waits, after it last saw the record change, before
 *                              it may take the Lease
 *   spec.acquireTime / renewTime   MicroTime ("2006-01-02T15:04:05.000000Z"), informational
 *   spec.leaseTransitions      bumped by every change of holder
 *
 * Expiry is judged on the candidate's own clock, never from renewTime (which is the holder's
 * clock): a candidate notes when the record it reads last changed (its resourceVersion) and takes
 * the Lease only when it has not changed for leaseDurationSeconds. Every write is a PUT of the
 * object read, so the API server's resourceVersion check (409 Conflict) makes exactly one of two
 * racing candidates win. The pure decision is kube_lease_decide(); the HTTP is the caller's.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct KubeLease {
	char *holder;           /* spec.holderIdentity; "" if none */
	int64_t duration;       /* spec.leaseDurationSeconds (0 if absent) */
	int64_t transitions;    /* spec.leaseTransitions */
	char *resource_version; /* metadata.resourceVersion; "" if absent */
} KubeLease;

typedef enum KubeLeaseAction {
	KUBE_LEASE_HELD,    /* another holder, not expired by our clock: wait */
	KUBE_LEASE_RENEW,   /* ours: renew it (holder and acquireTime kept) */
	KUBE_LEASE_ACQUIRE, /* free or expired: take it (acquireTime now, leaseTransitions + 1) */
} KubeLeaseAction;

/* Parses a Lease object. 0, -EINVAL (not a Lease-shaped object) or -ENOMEM; fills *ret (free with
 * kube_lease_done()). */
int kube_lease_parse(const json_t *j, KubeLease *ret);
void kube_lease_done(KubeLease *l);

/*
 * What `identity` may do with the Lease `l`, read at now_usec (a monotonic clock), whose record was
 * last seen to change at observed_usec (same clock). An expired holder is judged by `l->duration`,
 * or by default_duration when the Lease has none.
 */
KubeLeaseAction kube_lease_decide(const KubeLease *l, const char *identity, uint64_t now_usec, uint64_t observed_usec,
				  int64_t default_duration);

/* CLOCK_REALTIME now, in microseconds (what renewTime and acquireTime are written from). */
uint64_t kube_realtime_usec(void);

/* MicroTime of a CLOCK_REALTIME instant: "2026-01-02T15:04:05.123456Z" (buf: at least 32 bytes). */
char *kube_micro_time(uint64_t realtime_usec, char *buf, size_t size);

/*
 * The Lease to write: a new one (lease NULL: for POST, with metadata namespace/name) or the one
 * read (its metadata, resourceVersion included, is kept: the PUT's precondition), with the spec
 * of `identity` holding it for duration seconds as of realtime_usec. acquire: a change of holder
 * (acquireTime now, leaseTransitions + 1 unless new). identity "" releases it (client-go's
 * ReleaseOnCancel: holder cleared, leaseDurationSeconds 1). NULL on OOM.
 */
json_t *kube_lease_render(const json_t *lease, const char *ns, const char *name, const char *identity, int64_t duration,
			  bool acquire, uint64_t realtime_usec);

/* "/apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]" (name NULL: the collection). */
char *kube_lease_path(const char *ns, const char *name);
