/* SPDX-License-Identifier: Apache-2.0 */
/*
 * weft: the command-line tool. main() only dispatches: each subcommand is a row of subcommands[]
 * (name, entry point, one-line description), as in wireguard-tools' wg, and the top-level usage is
 * printed from that table. An entry point gets argv with argv[0] = the subcommand's name and returns
 * the exit code.
 *
 *   weft cni ...          the CNI runtime, as libcni + cnitool (cni-cmd.h)
 *   weft install-cni ...  the DaemonSet's init step (install-cni.h)
 *   weft apply|delete|get ...  cluster objects in etcd, as kubectl (object-cmd.h)
 *   weft policy ...       ask weftd about NetworkPolicy (policy-cmd.h)
 *   weft flows ...        the connections weftd logged (flows-cmd.h)
 *   weft service ...      ask weftd what it does with a connection to a Service (service-cmd.h)
 */
#include <stdio.h>
#include <stdlib.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/cni-cmd.h"
#include "tool/flows-cmd.h"
#include "tool/install-cni.h"
#include "tool/object-cmd.h"
#include "tool/policy-cmd.h"
#include "tool/service-cmd.h"

static const struct {
	const char *name;
	int (*main)(int argc, char *argv[]);
	const char *description;
} subcommands[] = {
	{ "cni", cni_cmd_main, "run a network's CNI plugins: add, check, del, gc, status (as cnitool); version" },
	{ "install-cni", install_cni_main, "install the plugins (and a network config) on the host" },
	{ "apply", object_apply_main, "write Kubernetes objects from YAML or JSON into etcd" },
	{ "delete", object_delete_main, "delete objects from etcd" },
	{ "get", object_get_main, "list or show objects in etcd" },
	{ "policy", policy_cmd_main, "ask weftd why a connection is allowed or denied, and what was dropped" },
	{ "service", service_cmd_main, "ask weftd what it does with a connection to a Service address" },
	{ "flows", flows_cmd_main, "the connections weftd logged: pods, Service, verdict, bytes" },
};

static void usage(FILE *f) {
	fprintf(f, "Usage: weft COMMAND [ARGS]...\n\nCommands:\n");
	for (size_t i = 0; i < ELEMENTSOF(subcommands); i++)
		fprintf(f, "  %-12s %s\n", subcommands[i].name, subcommands[i].description);
	fprintf(f, "Each command prints its own usage with --help.\n");
}

int main(int argc, char *argv[]) {
	log_set_prefix("weft");
	log_parse_environment();
	if (argc >= 2) {
		for (size_t i = 0; i < ELEMENTSOF(subcommands); i++)
			if (streq(argv[1], subcommands[i].name))
				return subcommands[i].main(argc - 1, argv + 1);
		if (streq(argv[1], "--help") || streq(argv[1], "-h")) {
			usage(stdout);
			return EXIT_SUCCESS;
		}
	}
	usage(stderr);
	return EXIT_FAILURE;
}
