/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The host-local on-disk store, in the reference plugin's layout so weft and the reference can
 * run against the same live store:
 *
 *   <dataDir>/<network>/<ip>                  "<containerID>\r\n<ifname>" (legacy: "<containerID>")
 *   <dataDir>/<network>/last_reserved_ip.<n>  the last address reserved from range set n
 *   <dataDir>/<network>/lock                  flock(LOCK_EX) by every process, ours and theirs
 *   <dataDir>/<network>/.weft-index           ours: cache of every reservation (see ipam-store.c)
 *
 * An IpamStore holds the lock from ipam_store_open() to ipam_store_free(). Lookups by
 * (containerID, ifname) use the index, which is validated against a stamp of the directory
 * (inode, mtime, entry count) and rebuilt by a scan when another writer changed the directory.
 * Container IDs are compared with surrounding whitespace trimmed, like the reference.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "shared/ip/ip-addr.h"

typedef struct IpamReservation {
	IpAddr ip;
	char *container_id;
	char *ifname; /* NULL: legacy file that holds only the container ID */
} IpamReservation;

typedef struct IpamStore IpamStore;

#define IPAM_STORE_INDEX_NAME ".weft-index"
#define IPAM_STORE_LOCK_NAME "lock"

enum {
	IPAM_STORE_NO_CREATE = 1 << 0, /* -ENOENT instead of creating a missing store directory */
};

/* Opens (mkdir -p, mode 0755) <data_dir>/<network> and takes its lock. 0 or negative errno. */
int ipam_store_open(const char *data_dir, const char *network, unsigned flags, IpamStore **ret);
/* Writes the index if it changed (best effort: it is a cache), unlocks and frees. NULL-safe. */
IpamStore *ipam_store_free(IpamStore *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(IpamStore *, ipam_store_free);

/* Writes the index now if it changed. 0 or negative errno. */
int ipam_store_flush(IpamStore *s);

/* 1 if a reservation file for ip exists, 0 if not, negative errno. Reads no index. */
int ipam_store_is_reserved(IpamStore *s, const IpAddr *ip);

/*
 * Reserves ip for (container_id, ifname): crash-safe exclusive create of the reservation file
 * with its complete content, then last_reserved_ip.<range_set> := ip. Returns 0, -EEXIST if
 * the address is taken, or negative errno.
 */
int ipam_store_reserve(IpamStore *s, const IpAddr *ip, const char *container_id, const char *ifname,
		       unsigned range_set);

/* Sets last_reserved_ip.<range_set> to ip, or removes it when ip is NULL/unset (rollback of a
 * failed ADD restores the previous value). 0 or negative errno. */
int ipam_store_set_last_reserved(IpamStore *s, unsigned range_set, const IpAddr *ip);

/* Reads last_reserved_ip.<range_set>. 0, -ENOENT, -EINVAL (garbage), or negative errno. */
int ipam_store_last_reserved(IpamStore *s, unsigned range_set, IpAddr *ret);

/*
 * Addresses held by (container_id, ifname), plus those of legacy files naming only the
 * container ID (the reference's GetByID). With scan_on_miss, an empty answer from the index is
 * confirmed by a full scan. *ret is malloc'ed (NULL when *ret_n is 0). 0 or negative errno.
 */
int ipam_store_get_by_id(IpamStore *s, const char *container_id, const char *ifname, bool scan_on_miss, IpAddr **ret,
			 size_t *ret_n);

/*
 * Releases everything held by (container_id, ifname); if nothing matches that exactly, the
 * legacy files naming only the container ID (reference ReleaseByID). Each file's content is
 * verified before unlinking; an index miss falls back to a scan. Returns the number of
 * addresses released (0 is fine: DEL is idempotent) or negative errno.
 */
int ipam_store_release_by_id(IpamStore *s, const char *container_id, const char *ifname);

/* Releases one address unconditionally (rollback of a reservation made by this process).
 * 0 (also when it did not exist) or negative errno. */
int ipam_store_release(IpamStore *s, const IpAddr *ip);

/*
 * Rescans the directory (reads every reservation file), releasing each reservation for which
 * keep() returns false. Returns the number released or negative errno.
 */
int ipam_store_gc(IpamStore *s, bool (*keep)(const IpamReservation *r, void *userdata), void *userdata);

/* Rebuilds the index from the files now. 0 or negative errno. */
int ipam_store_scan(IpamStore *s);

/* The current reservations (loading the index if needed); valid until the next call on s.
 * NULL with *ret_n = 0 on error or when empty. */
const IpamReservation *ipam_store_reservations(IpamStore *s, size_t *ret_n);

/* How many full scans this handle did (tests assert that ADD/DEL normally do none). */
unsigned ipam_store_scan_count(const IpamStore *s);

/* Entries named like reservations that the last scan skipped because they are no regular file
 * (a FIFO, a symlink, a directory, a device) or too large: "<path> (<why>)" strings for the
 * caller to log. NULL-terminated, owned by s, valid until the next scan; NULL when none. */
char *const *ipam_store_skipped(const IpamStore *s);

/* Parses reservation file content (surrounding whitespace trimmed, "\r\n" separates ID and
 * ifname; no separator = legacy). Strings are malloc'ed; *ret_ifname NULL for legacy. */
int ipam_reservation_parse(const char *data, char **ret_container_id, char **ret_ifname);
