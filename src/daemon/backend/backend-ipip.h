/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The ipip backend's state (BackendOps.object_size): only backend-ipip.c and its unit tests look
 * inside. */

typedef struct IpipBackend {
	int tunnel_ifindex; /* weft.ipip; 0 until ensure() found or created it */
} IpipBackend;
