/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host suite is one executable (busybox style): every plugin directory's main() is compiled
 * as cni_<name>_main() (the Makefile passes -Dmain=...), and the build generates the table below
 * from the plugin directories (build/gen/multicall-applets.c). Each name in /opt/cni/bin is a hard
 * link to the one file; main() picks the plugin by argv[0]'s basename.
 */

#include <stddef.h>

typedef struct MulticallApplet {
	const char *name;
	int (*main)(int argc, char *argv[]);
} MulticallApplet;

/* Generated; sorted by name. */
extern const MulticallApplet multicall_applets[];
extern const size_t multicall_n_applets;

/* The applet called `name`, or NULL. */
const MulticallApplet *multicall_find(const char *name);
