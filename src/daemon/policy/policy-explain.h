/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Why a connection is allowed or denied, from the same model the compiler uses: the source's
 * egress (enforced on its node), then the destination's ingress (on its node), each naming the
 * policies that isolate the pod and, rule by rule, which peer and port matched or why none did.
 * FROM and TO are "namespace/pod" or an IP (a pod's, or an address outside the cluster's pods).
 */

#include <stdbool.h>
#include <stdint.h>

#include "daemon/policy/policy-compile.h"

/* 0 with *ret_text (malloc'ed, the report) and *ret_allowed; -ENOENT (text says which endpoint
 * is unknown), -EINVAL (bad port/protocol), -ENOMEM. */
int policy_explain(const PolicyInput *in, const char *from, const char *to, uint16_t port, KubeProtocol proto,
		   char **ret_text, bool *ret_allowed);

/* One direction's verdict, as policy_explain() finds it. */
typedef struct PolicyDirVerdict {
	const KubePod *pod;              /* the pod whose policies apply (NULL: not a pod, nothing applies) */
	bool isolated;                   /* some policy selects it for this direction */
	bool allowed;                    /* not isolated, or a rule allows */
	const KubeNetworkPolicy *policy; /* isolated and allowed: the first policy with a rule that allows */
	size_t rule;                     /* ... and that rule's index */
} PolicyDirVerdict;

/* The same walk for addresses, without the text (the flow log's verdict for a connection): the
 * source pod's egress, the destination pod's ingress. 0 or -ENOMEM. */
int policy_verdict(const PolicyInput *in, const IpAddr *src, const IpAddr *dst, uint16_t port, KubeProtocol proto,
		   PolicyDirVerdict *ret_egress, PolicyDirVerdict *ret_ingress);
