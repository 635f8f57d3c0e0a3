/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weft cni: the runtime side of CNI, what libcni + cnitool are, so scripts can switch between them:
 *
 *   weft cni add|check|del NET NETNS       (del: NETNS may be omitted with --container-id)
 *   weft cni gc NET [--valid CID/IFNAME]...
 *   weft cni status NET
 *   weft cni version TYPE
 *
 * Environment as cnitool: NETCONFPATH (/etc/cni/net.d), CNI_PATH (/opt/cni/bin), CNI_IFNAME (eth0),
 * CNI_ARGS ("K=V;K=V"), CAP_ARGS (JSON object of capability args); plus CNI_CONTAINERID to
 * override the container ID cnitool derives from the netns path, and CNI_CACHE_DIR
 * (/var/lib/cni). ADD prints the result; any failure prints CNI error JSON and exits 1.
 * In etcd mode ADD and DEL also write and remove the pod's record (pod-record.h).
 */

/* argv[0] is "cni". Returns the exit code. */
int cni_cmd_main(int argc, char *argv[]);
