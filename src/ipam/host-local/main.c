/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/ipam/ipam-host-local.h"

int main(int argc, char *argv[]) {
	return plugin_main(&host_local_ops, argc, argv);
}
