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
 *   kubernetes: not written yet. The seam is this ops struct: a kind that holds a
 *     coordination.k8s.io Lease per node (as kube-node-lease does) and lists them, calling
 *     lb_members_set() with the holders whose renewTime + leaseDurationSeconds is in the future.
 *
 * Until the first list the view is unknown (lb_members_synced() false): the owner announces
 * nothing in L2 mode rather than guess.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/client/etcd-client.h"
#include "shared/event/event-loop.h"

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

/* "<prefix>/loadbalancer/members/" (trailing slashes of prefix ignored); NULL on OOM. */
char *lb_members_key_prefix(const char *prefix);
