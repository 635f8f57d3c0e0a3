/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The vxlan backend's state (BackendOps.object_size): only backend-vxlan.c and its unit tests
 * look inside. */

#include <net/if.h>
#include <stdint.h>

typedef struct VxlanBackend {
	char vtep_name[IFNAMSIZ]; /* weft.<VNI> */
	int vtep_ifindex;         /* 0 until ensure() found or created it */
	uint8_t vtep_mac[6];      /* derived from node name and VNI (backend_vtep_mac()) */
} VxlanBackend;
