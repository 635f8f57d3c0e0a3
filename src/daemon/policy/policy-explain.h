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
