/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The `dhcp` executable has two personalities, as the reference:
 *   dhcp daemon [-socketpath P] [-pidfile P] [-hostprefix P] [-broadcast] [-timeout D] [-resendmax D]
 *       the long-running DHCP client for every attachment (dhcp-daemon.c);
 *   dhcp (CNI_COMMAND=...)
 *       the IPAM plugin, which only forwards the request to the daemon (dhcp.c).
 * The wire protocol between them is in src/shared/dhcp/dhcp-proto.h.
 */

/* Runs the daemon; argv[0] is "daemon". Returns the process exit code. */
int dhcp_daemon_main(int argc, char **argv);
