/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The bridge plugin's parsed configuration (bridge-config.c) and its commands (bridge.c). */

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/cni/cni-plugin.h"

#define BRIDGE_DEFAULT_NAME "cni0"

typedef struct BridgeConf {
	char br_name[IFNAMSIZ]; /* "bridge", default cni0 */
	bool is_gw;             /* "isGateway" (forced on by isDefaultGateway) */
	bool is_default_gw;     /* "isDefaultGateway" */
	bool force_address;     /* "forceAddress" */
	bool ip_masq;           /* "ipMasq" */
	unsigned mtu;           /* "mtu", 0 = kernel default */
	bool hairpin;           /* "hairpinMode" */
	bool promisc;           /* "promiscMode" */
	uint16_t vlan;          /* "vlan", 0 = none */
	bool has_trunk;         /* "vlanTrunk" present (turns on vlan_filtering, as the reference) */
	uint16_t *trunk;        /* "vlanTrunk", sorted and deduplicated */
	size_t n_trunk;
	bool preserve_default_vlan;   /* "preserveDefaultVlan", default true */
	bool macspoofchk;             /* "macspoofchk" */
	bool enable_dad;              /* "enabledad" */
	bool disable_container_iface; /* "disableContainerInterface" */
	bool port_isolation;          /* "portIsolation" */
	bool is_layer3;               /* "ipam" has a "type" */
	bool has_mac;                 /* MAC requested (CNI_ARGS / args.cni.mac / runtimeConfig.mac) */
	uint8_t mac[6];
} BridgeConf;

int bridge_parse_config(CniRequest *req, void *userdata);
void bridge_conf_done(void *userdata);
