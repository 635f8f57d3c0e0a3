/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The multi-call host executable (see multicall.h). argv is handed to the plugin unchanged, so a
 * plugin sees exactly what it saw as its own executable: argv[0] is still its own name (the dhcp
 * daemon and error texts use it) and /proc/self/exe is the file every name links to, which is how
 * the weft plugin recognises its own host-local (pod-cni.c compares inodes).
 *
 * Run under its own name (`weft-plugins NAME ARGS...`) it runs applet NAME, as busybox does; that
 * is for people and tests, a runtime always execs a plugin name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multicall/multicall.h"

#define MULTICALL_NAME "weft-plugins"

const MulticallApplet *multicall_find(const char *name) {
	for (size_t i = 0; i < multicall_n_applets; i++)
		if (strcmp(multicall_applets[i].name, name) == 0)
			return &multicall_applets[i];
	return NULL;
}

static void usage(FILE *f) {
	fprintf(f,
		"Usage: %s NAME [ARGS...]   (or exec it as NAME: a hard link or symlink named NAME)\n"
		"The weft CNI plugins in one executable. Names:",
		MULTICALL_NAME);
	for (size_t i = 0; i < multicall_n_applets; i++)
		fprintf(f, " %s", multicall_applets[i].name);
	fputc('\n', f);
}

static const char *base_name(const char *path) {
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int main(int argc, char *argv[]) {
	const MulticallApplet *a;
	const char *name;

	if (argc < 1 || !argv[0]) {
		fprintf(stderr, "%s: no argv[0]: cannot tell which plugin to run\n", MULTICALL_NAME);
		return EXIT_FAILURE;
	}
	name = base_name(argv[0]);
	if (strcmp(name, MULTICALL_NAME) == 0) {
		if (argc < 2) {
			usage(stderr);
			return EXIT_FAILURE;
		}
		if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
			usage(stdout);
			return EXIT_SUCCESS;
		}
		argc--;
		argv++;
		name = base_name(argv[0]);
	}
	a = multicall_find(name);
	if (!a) {
		/* A runtime that execs a name we do not know gets this on stderr and a failed exec
		 * of the plugin; CNI's error JSON needs a plugin to speak it, and there is none. */
		fprintf(stderr, "%s: unknown plugin name \"%s\"\n", MULTICALL_NAME, name);
		usage(stderr);
		return EXIT_FAILURE;
	}
	return a->main(argc, argv);
}
