/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The portmap plugin's parsed configuration (portmap-config.c) and its commands (portmap.c). */

#include <stdbool.h>

#include "shared/cni/cni-plugin.h"

typedef struct PortmapConf {
	bool snat;         /* "snat", default true */
	bool masq_all;     /* "masqAll": masquerade every DNATed connection, not only hairpin/localhost */
	int mark_masq_bit; /* "markMasqBit" 0..31 (iptables only: validated, not used) */
	bool has_mark_masq_bit;
	bool has_external_set_mark_chain; /* "externalSetMarkChain" (iptables only) */
} PortmapConf;

int portmap_parse_config(CniRequest *req, void *userdata);
