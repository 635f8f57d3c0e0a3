/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Drops this process's mappings of clean, read-only, private file pages (library and executable
 * text, read-only data, symbol and relocation tables) with MADV_DONTNEED. Nothing is lost: such a
 * page is an exact copy of the file, still in the page cache, and the next access maps it again
 * (a minor fault). What goes is what the dynamic loader and start-up touched once: relocating
 * libcurl's dependency tree (libcrypto alone ~3 MiB) maps ~8 MiB of pages a long-running daemon
 * never reads again, yet they count in its RSS until the kernel reclaims them. Afterwards RSS is
 * the pages the process really uses.
 *
 * Only mappings that are private, not writable, named by a path and hold no anonymous, swapped or
 * dirty pages are touched (a RELRO segment holds relocated copy-on-write pages: skipped). Returns
 * the number of mappings dropped, or -errno if /proc/self/smaps cannot be read.
 */
int mem_drop_clean_file_pages(void);
