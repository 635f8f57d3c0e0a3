/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * CNI-level steps every attachment plugin repeats: opening the netlink sockets and the nftables
 * context, running IPAM, choosing DNS, finding the container interface of a prevResult for CHECK
 * and deleting the pod's interface for DEL. GC's "is this attachment still valid" test is
 * cni/cni-attachment.h's.
 */

#include <stdbool.h>

#include "shared/cni/cni-plugin.h"
#include "shared/cni/cni-types.h"
#include "shared/nft/nft.h"
#include "shared/nl/nl.h"

/* The config's "dns" says anything. */
bool pod_dns_set(const CniDns *d);

/*
 * Delegated IPAM (cni_ipam_exec()), except that when CNI_PATH resolves "host-local" to our own
 * host-local (the same file next to this executable) its code runs in-process: same store, lock
 * and result, one process less. Same contract as cni_ipam_exec().
 */
int pod_ipam_exec(CniRequest *req, CniCommand cmd, CniResult **ret);

/* Runs IPAM ADD; fails (code 999, "IPAM plugin returned missing IP config") when it returns no
 * address. On failure after a successful exec, IPAM DEL is run before returning. */
int pod_ipam_add(CniRequest *req, CniResult **ret);
/* Rollback helper: IPAM DEL keeping req->error as it is (failures are logged). */
void pod_ipam_release(CniRequest *req);

/* The interface of `p` named `name`: inside `sandbox` (in_sandbox) or a host one (no sandbox). */
const CniInterface *pod_result_find_iface(const CniResult *p, const char *name, bool in_sandbox, const char *sandbox,
					  int *ret_index);

/*
 * CHECK prologue of the reference plugins: prevResult is required (code 7) and must list
 * CNI_IFNAME with sandbox CNI_NETNS. Returns 0 with *ret_iface and *ret_index (either may be NULL),
 * or -errno with req->error set.
 */
int pod_check_prev_iface(CniRequest *req, const CniInterface **ret_iface, int *ret_index);

/*
 * DEL of the pod's interface: `ip -n CNI_NETNS link del CNI_IFNAME`. A missing CNI_NETNS, a
 * namespace that is gone and an interface that is gone are all success. 0 or -errno with
 * req->error set.
 */
int pod_link_del_in_netns(CniRequest *req);

/*
 * The one way to open a netlink socket inside the pod's namespace (netns_fd, from
 * cni_request_open_netns() or netns_open()): 0, or -errno with req->error set ("failed to open
 * netlink socket in netns \"CNI_NETNS\": ...").
 */
int pod_open_cont_sock(CniRequest *req, int netns_fd, NlSock **ret);

/*
 * ADD prologue: opens CNI_NETNS (cni_request_open_netns()), a netlink socket in the host namespace
 * and one inside the pod's. 0 with all three set (caller owns them), or -errno with req->error
 * set; on failure the outputs hold what was opened so far, for the caller's cleanup attributes.
 */
int pod_open_netns_socks(CniRequest *req, int *ret_netns_fd, NlSock **ret_host, NlSock **ret_cont);

/* Opens the nftables context on first use (*nft NULL to start with; caller frees). 0 or -errno
 * with req->error set. */
int pod_nft_open(CniRequest *req, NftCtx **nft);
