/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weft policy explain FROM TO PORT[/PROTO] [--weftd URL]: asks a weftd (default
 * http://127.0.0.1:9876, or WEFT_WEFTD_URL) why a connection is allowed or denied, from weftd's own
 * model of the cluster's objects (/debug/policy/explain), and prints the answer. FROM and TO are
 * NAMESPACE/POD or an IP. Exit 0 allowed, 1 denied, 2 usage or an unknown endpoint, 3 weftd
 * unreachable.
 *
 * weft policy drops [--follow] [--json] [--weftd URL]: the packets NetworkPolicy dropped lately
 * (weftd --policy-log-drops; GET /policy/drops), one line each, naming the pods and the policies
 * isolating the destination (ingress) or source (egress); --follow polls for new ones. Exit 2 when
 * that weftd has no drop log, 3 when it is unreachable.
 */

int policy_cmd_main(int argc, char **argv);
