/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weft service explain DEST[:PORT][/PROTO] [--from POD|IP] [--node NODE] [--weftd URL]: asks a
 * weftd (default http://127.0.0.1:9876, or WEFT_WEFTD_URL) what its node does with a connection to
 * DEST, from the Service agent's programmed rules (/debug/service/explain): the Service and port,
 * the endpoints chosen and why others are not, session affinity, masquerade, the verdict without an
 * endpoint, a refused address, and with --from the NetworkPolicy verdict. IPv6 with a port:
 * [ADDR]:PORT. Exit 0 when a Service answers for DEST, 1 when none does, 2 usage, 3 weftd
 * unreachable.
 */

int service_cmd_main(int argc, char **argv);
