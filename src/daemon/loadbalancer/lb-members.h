/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Who is alive, for the LoadBalancer announcements (lb-announce.h): in L2 mode one live node answers
 * for each address, so a node that dies must drop out of every node's view soon, and by itself.
 *
 * One kind per source of liveness, as one ops struct (LbMembersOps); the generic part holds the
 * sorted list of live node names and tells the owner when it changes.
 *
 *   etcd (lb_members_etcd_ops): a member key per node, held with a short lease,
 *       <prefix>/loadbalancer/members/<node> = <node>   (lease of `ttl` seconds)
 *     Every tick (ttl/3) the node keeps its lease alive (a new one and the key again when it is
 *     gone); every LB_MEMBERS_POLL_USEC it lists the members' prefix. A node killed with -9 stops
 *     keeping its lease alive, etcd deletes its key when the lease expires (ttl after its last
 *     keepalive), and the next list of every other node no longer has it. A node that stops
 *     cleanly revokes its lease: it is gone at once.
 *   Kubernetes (lb_members_kube_ops, lb-members-kube.c): a coordination.k8s.io/v1 Lease per
 *     node in weftd's namespace, as kube-node-lease holds one per kubelet,
 *       weft-member-<node>  labels weft.dev/lb-member=true, holderIdentity <node>,
 *                           leaseDurationSeconds ttl, renewTime <now>
 *     Every tick (ttl/3) the node renews it (a PUT of the one it last wrote; GET, then create or
 *     PUT, when it has none or the PUT conflicted); every poll it lists the Leases with the label
 *     and calls lb_members_set() with the holders judged live by lb_members_kube_judge(): as
 *     kube_lease_decide() judges a holder, on our own clock from when we last saw the record
 *     change (its resourceVersion), never from renewTime (the holder's clock). A record seen for
 *     the first time counts as just changed (client-go does the same): a node that starts next to
 *     a dead node's Lease counts it live for at most leaseDurationSeconds, rather than trusting
 *     a clock it does not share. A node killed with -9 stops renewing and drops out ttl after the
 *     others last saw its record change; one that stops cleanly empties its Lease (holder "", as
 *     client-go's ReleaseOnCancel): it drops out at the others' next list.
 *
 * Until the first list the view is unknown (lb_members_synced() false): the owner announces
 * nothing in L2 mode rather than guess.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/client/etcd-client.h"
#include "shared/client/kube-client.h"
#include "shared/event/event-loop.h"
#include "shared/kube/kube-lease.h"

/* The member key's lease (seconds): a node killed with -9 drops out within about this. */
#define LB_MEMBERS_TTL 6u
/* How often the members are listed. */
#define LB_MEMBERS_POLL_USEC (250 * 1000)

typedef struct LbMembers LbMembers;

/* Called when the list of live nodes changes (and after the first list). */
typedef void (*LbMembersChangedFn)(LbMembers *m, void *userdata);

typedef struct LbMembersConfig {
	const char *node;   /* borrowed: this node's name (the key's last element and value) */
	const char *prefix; /* borrowed: --etcd-prefix */
	EtcdClient *etcd;   /* borrowed: etcd kind */
	KubeClient *kube;   /* borrowed: Kubernetes kind, and the Leases' namespace (borrowed) */
	const char *namespace;
	uint32_t ttl;       /* 0: LB_MEMBERS_TTL */
	uint64_t poll_usec; /* 0: LB_MEMBERS_POLL_USEC */
} LbMembersConfig;

typedef struct LbMembersOps {
	const char *name;
	size_t object_size; /* the kind's state, at lb_members_state() */
	/* Starts holding our membership and watching the others'. 0 or -errno. */
	int (*start)(LbMembers *m);
	/* Stops (revokes our membership if it can, quickly) and releases the state's resources. */
	void (*stop)(LbMembers *m);
} LbMembersOps;

extern const LbMembersOps lb_members_etcd_ops;
extern const LbMembersOps lb_members_kube_ops;

/* cfg is copied (what it points to is borrowed). 0, -ENOMEM or the kind's start error. */
int lb_members_new(const LbMembersOps *ops, EventLoop *loop, const LbMembersConfig *cfg, LbMembersChangedFn fn,
		   void *userdata, LbMembers **ret);
LbMembers *lb_members_free(LbMembers *m);

/* Whether the list is known (a first list arrived). */
bool lb_members_synced(const LbMembers *m);
/* The live nodes, sorted (borrowed; valid until the next change). */
const char *const *lb_members_list(const LbMembers *m, size_t *ret_n);
bool lb_members_is_live(const LbMembers *m, const char *node);
/* Lists that failed since start (for /metrics). */
uint64_t lb_members_failures(const LbMembers *m);

/* For the kinds: */
void *lb_members_state(LbMembers *m);
const LbMembersConfig *lb_members_config(const LbMembers *m);
EventLoop *lb_members_loop(const LbMembers *m);
/* Replaces the list (names copied; any order, duplicates dropped); calls the owner if it changed.
 * 0 or -ENOMEM (the old list stays). */
int lb_members_set(LbMembers *m, const char *const *names, size_t n);
void lb_members_failed(LbMembers *m);
/* The kind's timers, freed by its stop: tick every ttl/3 (holding our membership) and poll every
 * poll_usec (listing the others), each first after 1 ms. 0 or -errno. */
int lb_members_add_timers(LbMembers *m, EventTimerFn tick, EventTimerFn poll, void *userdata, EventSource **ret_tick,
			  EventSource **ret_poll);

/* "<prefix>/loadbalancer/members/" (trailing slashes of prefix ignored); NULL on OOM. */
char *lb_members_key_prefix(const char *prefix);

/* ---- the Kubernetes kind's judgement (pure, lb-members-kube.c) ---- */

/* The member Leases' label (a labelSelector's "key=value") and their names' prefix. */
#define LB_MEMBERS_KUBE_LABEL "weft.dev/lb-member"
#define LB_MEMBERS_KUBE_PREFIX "weft-member-"

/* One member Lease as last seen: when its record (resourceVersion) last changed, on our clock. */
typedef struct LbMemberSeen {
	char *name; /* the Lease's name */
	char *resource_version;
	uint64_t observed_usec;
} LbMemberSeen;

void lb_member_seen_free(LbMemberSeen *v, size_t n);

/*
 * A list of member Leases just read at now_usec (now_usec() clock): leases[i] parsed
 * (kube_lease_parse()), names[i] its metadata.name. *seen (n_seen entries, the previous call's)
 * is replaced by what this list shows: a record whose resourceVersion is unchanged keeps its
 * observed time, a new or changed one is observed now; Leases no longer listed are forgotten.
 * live[] (room for n) gets the holders counted live, borrowed from leases: a holder that is not
 * "" and whose Lease is LB_MEMBERS_KUBE_PREFIX<holder>, and whose record changed less than its
 * leaseDurationSeconds (default_ttl if it has none) ago. 0 or -ENOMEM (*seen then unchanged).
 */
int lb_members_kube_judge(const KubeLease *leases, const char *const *names, size_t n, LbMemberSeen **seen,
			  size_t *n_seen, uint64_t now_usec, uint32_t default_ttl, const char **live,
			  size_t *ret_n_live);
