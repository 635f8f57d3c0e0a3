/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weft install-cni: the DaemonSet's init container step (flannel's install-cni, in C). Copies our
 * plugin executables from the image (--src, /opt/weft/bin) into the host's CNI bin dir (--dest,
 * /opt/cni/bin mounted) and optionally one config file into a config dir:
 *
 *   weft install-cni --src DIR --dest DIR [--plugins a,b,...] [--conf-src FILE --conf-dest DIR]
 *
 * Each file is replaced atomically (temp file in --dest, fsync, chmod, rename over the target):
 * the target is never opened for writing, so a plugin that is running right now (ETXTBSY for an
 * in-place write) keeps its old inode and a runtime never execs a half-written binary. Files
 * whose size and content already match are left alone, so restarting the pod changes nothing.
 * Source names that are one file (hard links or symlinks to it: the multi-call plugin suite)
 * stay one file: the first name is copied, the others become hard links to it, each put in place
 * by a rename of a temp link, so the same guarantees hold for every name.
 * Only names from the plugin list (default: every executable in --src) are ever written.
 *
 * Prints one line per file ("installed|updated|unchanged DEST/NAME") and a summary; exits 0, or
 * 1 with an error naming the file and directory.
 */

/* argv[0] is "install-cni". Returns the process exit code. */
int install_cni_main(int argc, char *argv[]);
