/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The node lease file, <run-dir>/subnet.env (default /run/weft/subnet.env): what weftd tells the
 * `weft` CNI plugin about this node, the role of Flannel's subnet.env. weftd writes it atomically
 * (readers see the old or the new file, never a mix) and only once the node is ready (lease held,
 * routes and firewall programmed). Format: shell-style KEY=VALUE lines, no quoting, '#' comments:
 *
 *   WEFT_NETWORK=10.244.0.0/16      cluster network (IPv4)
 *   WEFT_SUBNET=10.244.1.1/24       this node's pod subnet as <gateway>/<len> (first host address)
 *   WEFT_NETWORK6=fd00:10:244::/56  (dual-stack only)
 *   WEFT_SUBNET6=fd00:10:244:1::1/64 (dual-stack only)
 *   WEFT_MTU=1450                   MTU for pod interfaces (backend overhead already subtracted)
 *   WEFT_IPMASQ=false               true only if the plugin must masquerade; weftd masquerades
 *                                   itself, so it always writes false
 *
 * The parser ignores unknown WEFT_* keys (a newer weftd may add some) and blank/comment lines;
 * it requires WEFT_MTU and at least one of WEFT_NETWORK+WEFT_SUBNET / WEFT_NETWORK6+WEFT_SUBNET6.
 */

#include <stdbool.h>

#include "shared/ip/ip-addr.h"

#define LEASE_FILE_NAME "subnet.env"

typedef struct LeaseFile {
	IpPrefix network;  /* AF_UNSPEC = no IPv4 */
	IpPrefix subnet;   /* gateway address + prefix length, e.g. 10.244.1.1/24 */
	IpPrefix network6; /* AF_UNSPEC = no IPv6 */
	IpPrefix subnet6;
	unsigned mtu;
	bool ipmasq;
} LeaseFile;

/* Renders lf as the text above into a malloc'ed string (*ret, caller frees). 0, -EINVAL if lf has
 * neither family or no MTU, -ENOMEM. */
int lease_file_render(const LeaseFile *lf, char **ret);

/* Parses the text. 0 or -EINVAL (bad value, missing key, subnet gateway outside the network,
 * family mismatch). *ret written only on success. */
int lease_file_parse(const char *text, LeaseFile *ret);

/* Atomic write of the rendered file to `path` (mode 0644; the directory must exist). */
int lease_file_write(const char *path, const LeaseFile *lf);
/* Reads and parses `path`. -ENOENT if missing. */
int lease_file_read(const char *path, LeaseFile *ret);

/* The gateway/len form of a subnet: network 10.244.1.0/24 -> 10.244.1.1/24. -EINVAL if the subnet
 * has no room for a gateway (/32, /128). */
int lease_subnet_gateway(const IpPrefix *subnet, IpPrefix *ret);
