/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index (".weft-index") lets ADD and DEL find an attachment's addresses without reading
 * every reservation file. It is only a cache: the reservation files are the truth, and the
 * reference plugin changes them without knowing about the index. So:
 *
 *  - it records a stamp of the directory: inode, st_mtim and the number of entries (one
 *    readdir, no file reads). Creating or unlinking a file changes both mtime and count; a
 *    mismatch means someone else changed the store, and we rebuild by scanning;
 *  - the stamp is taken after our own last directory change of the operation, and the index
 *    is rewritten in place (no rename, which would itself change the directory);
 *  - the content ends with "end <FNV-1a 64 of everything before>": a torn write (crash mid
 *    update) fails the check and is rebuilt;
 *  - on DEL an attachment missing from the index, or a file whose content no longer matches,
 *    triggers a scan (covers coarse timestamps and reservations made by the reference).
 *
 * The reference scans every file of the directory and compares its whole trimmed content with
 * "<id>\r\n<ifname>" or "<id>"; our index starts with a magic line and has several lines, so it
 * never equals either, and its name is not an IP address (the reference's GetByID parses names).
 *
 * Format:
 *   weft-ipam-index 1
 *   stamp <ino> <mtime sec> <mtime nsec> <entries>
 *   r <ip> =<container id, %-escaped> (=<ifname, %-escaped> | -)
 *   end <fnv64 hex>
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/ipam/ipam-store.h"
#include "shared/store/store-file.h"
#include "shared/store/store-lock.h"

#define INDEX_MAGIC "weft-ipam-index 1\n"
#define TMP_PREFIX ".weft-tmp-"
#define LAST_RESERVED "last_reserved_ip."
#define ATOMIC_TMP_PREFIX ".#" /* write_file_atomic_at()'s temp names */
/* Upper bounds for what we read (store_file_read_at()): a reservation is "<id>\r\n<ifname>" and
 * last_reserved_ip.N an address, so anything over 64 KiB is not one; the index holds a line per
 * reservation (a /16 full of long IDs stays far below 64 MiB). */
#define ENTRY_MAX (64u << 10)
#define INDEX_MAX (64u << 20)

typedef struct DirStamp {
	uint64_t ino;
	int64_t sec;
	long nsec;
	uint64_t entries;
} DirStamp;

struct IpamStore {
	char *path;
	int dir_fd;
	int lock_fd;
	IpamReservation *res;
	size_t n_res;
	bool loaded;  /* res mirrors the directory */
	bool dirty;   /* index file must be rewritten */
	bool scanned; /* a full scan happened during this handle's life */
	unsigned scans;
	char **skipped; /* "<path>/<name> (<why>)" of entries the last scan could not read as reservations */
};

static void reservation_done(IpamReservation *r) {
	free(r->container_id);
	free(r->ifname);
	*r = (IpamReservation) {};
}

static void res_clear(IpamStore *s) {
	for (size_t i = 0; i < s->n_res; i++)
		reservation_done(&s->res[i]);
	s->res = mfree(s->res);
	s->n_res = 0;
}

static int res_add(IpamStore *s, const IpAddr *ip, const char *cid, const char *ifname) {
	IpamReservation *n = reallocarray(s->res, s->n_res + 1, sizeof(*n));
	IpamReservation r = { .ip = *ip };

	if (!n)
		return -ENOMEM;
	s->res = n;
	r.container_id = strdup(cid);
	r.ifname = ifname ? strdup(ifname) : NULL;
	if (!r.container_id || (ifname && !r.ifname)) {
		reservation_done(&r);
		return -ENOMEM;
	}
	s->res[s->n_res++] = r;
	return 0;
}

static void res_remove_ip(IpamStore *s, const IpAddr *ip) {
	for (size_t i = 0; i < s->n_res; i++)
		if (ip_addr_equal(&s->res[i].ip, ip)) {
			reservation_done(&s->res[i]);
			s->res[i] = s->res[--s->n_res];
			return;
		}
}

/* strings.TrimSpace for ASCII whitespace. */
static char *trim_dup(const char *s) {
	size_t n;

	while (isspace((unsigned char) *s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char) s[n - 1]))
		n--;
	return strndup(s, n);
}

int ipam_reservation_parse(const char *data, char **ret_container_id, char **ret_ifname) {
	_cleanup_free_ char *t = trim_dup(data), *cid = NULL, *ifn = NULL;
	char *sep;

	if (!t)
		return -ENOMEM;
	sep = strstr(t, "\r\n");
	if (sep) {
		cid = strndup(t, (size_t) (sep - t));
		ifn = strdup(sep + 2);
		if (!cid || !ifn)
			return -ENOMEM;
	} else
		cid = TAKE_PTR(t);
	*ret_container_id = TAKE_PTR(cid);
	*ret_ifname = TAKE_PTR(ifn);
	return 0;
}

/* The file name of an address: the canonical text form, like Go's net.IP.String(). */
static const char *ip_name(const IpAddr *ip, char buf[static IP_ADDR_STRLEN]) {
	return ip_addr_to_string(ip, buf);
}

/* A directory entry that is a reservation: its name is a canonical address. */
static bool name_to_ip(const char *name, IpAddr *ret) {
	char buf[IP_ADDR_STRLEN];

	if (ip_addr_parse(name, ret) < 0)
		return false;
	return streq(ip_name(ret, buf), name);
}

static int dir_stamp(IpamStore *s, DirStamp *ret) {
	DirStamp st = {};
	struct stat sb;
	DIR *d;
	int fd;

	if (fstat(s->dir_fd, &sb) < 0)
		return negative_errno();
	fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	d = fdopendir(fd);
	if (!d) {
		int r = negative_errno();
		close(fd);
		return r;
	}
	for (struct dirent *de; (de = readdir(d));)
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			st.entries++;
	closedir(d);
	st.ino = (uint64_t) sb.st_ino;
	st.sec = (int64_t) sb.st_mtim.tv_sec;
	st.nsec = sb.st_mtim.tv_nsec;
	*ret = st;
	return 0;
}

static uint64_t fnv64(const char *p, size_t n) {
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char) p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* %-escape whitespace, controls, '%' and non-ASCII so a field is one token. */
static int escape_append(FILE *f, const char *s) {
	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '%')
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	return 0;
}

static char *unescape(const char *s) {
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == '%') {
			unsigned v;

			if (!isxdigit((unsigned char) s[1]) || !isxdigit((unsigned char) s[2]) ||
			    sscanf(s + 1, "%2x", &v) != 1 || v == 0)
				return mfree(out);
			*o++ = (char) v;
			s += 2;
		} else
			*o++ = *s;
	}
	*o = 0;
	return out;
}

/* Parses and validates the index; fills s->res. -EBADMSG if torn, stale or malformed. */
static int index_load(IpamStore *s, const DirStamp *now) {
	_cleanup_free_ char *data = NULL;
	size_t size;
	char *end, *line, *save = NULL;
	DirStamp st = {};
	unsigned long long sum;
	int r;

	r = store_file_read_at(s->dir_fd, IPAM_STORE_INDEX_NAME, INDEX_MAX, &data, &size);
	if (r == -ELOOP || r == -EMEDIUMTYPE || r == -EFBIG)
		return -EBADMSG; /* not an index we wrote: rebuild (flush cannot replace it either) */
	if (r < 0)
		return r;
	if (!startswith(data, INDEX_MAGIC))
		return -EBADMSG;
	end = strstr(data, "\nend ");
	if (!end || sscanf(end + 5, "%llx", &sum) != 1 || fnv64(data, (size_t) (end + 1 - data)) != sum)
		return -EBADMSG;
	end[1] = 0;

	res_clear(s);
	for (line = strtok_r(data + strlen(INDEX_MAGIC), "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char ipb[64], cidb[1024], ifb[128];
		_cleanup_free_ char *cid = NULL, *ifn = NULL;
		IpAddr ip;

		if (startswith(line, "stamp ")) {
			unsigned long long ino, entries;
			long long sec;

			if (sscanf(line, "stamp %llu %lld %ld %llu", &ino, &sec, &st.nsec, &entries) != 4)
				goto bad;
			st.ino = ino, st.sec = sec, st.entries = entries;
			continue;
		}
		if (sscanf(line, "r %63s %1023s %127s", ipb, cidb, ifb) != 3 || !name_to_ip(ipb, &ip) ||
		    cidb[0] != '=' || (ifb[0] != '=' && !streq(ifb, "-")))
			goto bad;
		cid = unescape(cidb + 1);
		if (ifb[0] == '=')
			ifn = unescape(ifb + 1);
		if (!cid || (ifb[0] == '=' && !ifn))
			goto bad;
		r = res_add(s, &ip, cid, ifn);
		if (r < 0) {
			res_clear(s);
			return r;
		}
	}
	if (st.ino != now->ino || st.sec != now->sec || st.nsec != now->nsec || st.entries != now->entries)
		goto bad;
	return 0;
bad:
	res_clear(s);
	return -EBADMSG;
}

static int stale_temp(const char *name) {
	return startswith(name, TMP_PREFIX) ||
	       (startswith(name, ATOMIC_TMP_PREFIX) && startswith(name + strlen(ATOMIC_TMP_PREFIX), LAST_RESERVED));
}

static const char *skip_reason(int r) {
	switch (r) {
	case -ELOOP: return "a symlink";
	case -EMEDIUMTYPE: return "not a regular file";
	case -EFBIG: return "too large for a reservation";
	default: return "unreadable";
	}
}

int ipam_store_scan(IpamStore *s) {
	DIR *d;
	int fd, r = 0;

	res_clear(s);
	s->skipped = strv_free(s->skipped);
	s->loaded = false;
	fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	d = fdopendir(fd);
	if (!d) {
		r = negative_errno();
		close(fd);
		return r;
	}
	for (struct dirent *de; (de = readdir(d));) {
		_cleanup_free_ char *data = NULL, *cid = NULL, *ifn = NULL;
		IpAddr ip;
		int k;

		/* We hold the lock, so no writer is active: temp files are leftovers of a crash. */
		if (stale_temp(de->d_name)) {
			(void) unlinkat(s->dir_fd, de->d_name, 0);
			continue;
		}
		if (!name_to_ip(de->d_name, &ip))
			continue;
		k = store_file_read_at(s->dir_fd, de->d_name, ENTRY_MAX, &data, NULL);
		if (k == -ENOENT)
			continue;
		if (k == -ELOOP || k == -EMEDIUMTYPE || k == -EFBIG) {
			/* Not a reservation, whatever its name says (a FIFO, a symlink, a directory, a
			 * huge file): never read it, never release it; the caller logs it. The address
			 * stays unusable (its name is taken), which is the safe side. */
			k = strv_consume(&s->skipped, strdup_printf("%s/%s (%s)", s->path, de->d_name, skip_reason(k)));
			if (k < 0) {
				r = k;
				break;
			}
			continue;
		}
		if (k < 0) {
			r = k;
			break;
		}
		k = ipam_reservation_parse(data, &cid, &ifn);
		if (k >= 0)
			k = res_add(s, &ip, cid, ifn);
		if (k < 0) {
			r = k;
			break;
		}
	}
	closedir(d);
	if (r < 0) {
		res_clear(s);
		return r;
	}
	s->loaded = s->dirty = s->scanned = true;
	s->scans++;
	return 0;
}

static int ensure_loaded(IpamStore *s) {
	DirStamp now;
	int r;

	if (s->loaded)
		return 0;
	r = dir_stamp(s, &now);
	if (r < 0)
		return r;
	r = index_load(s, &now);
	if (r >= 0) {
		s->loaded = true;
		return 0;
	}
	if (r != -ENOENT && r != -EBADMSG)
		return r;
	return ipam_store_scan(s);
}

int ipam_store_flush(IpamStore *s) {
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -EBADF;
	size_t size = 0;
	DirStamp st;
	FILE *f;
	int r;

	if (!s || !s->loaded || !s->dirty)
		return 0;
	/* Create first: its creation is a directory change the stamp must include. */
	fd = openat(s->dir_fd, IPAM_STORE_INDEX_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return negative_errno();
	r = dir_stamp(s, &st);
	if (r < 0)
		return r;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs(INDEX_MAGIC, f);
	fprintf(f, "stamp %" PRIu64 " %" PRId64 " %ld %" PRIu64 "\n", st.ino, st.sec, st.nsec, st.entries);
	for (size_t i = 0; i < s->n_res; i++) {
		char ipb[IP_ADDR_STRLEN];

		fprintf(f, "r %s =", ip_name(&s->res[i].ip, ipb));
		escape_append(f, s->res[i].container_id);
		if (s->res[i].ifname) {
			fputs(" =", f);
			escape_append(f, s->res[i].ifname);
		} else
			fputs(" -", f);
		fputc('\n', f);
	}
	if (fflush(f) != 0) {
		fclose(f);
		return -ENOMEM;
	}
	fprintf(f, "end %016" PRIx64 "\n", fnv64(buf, size));
	if (fclose(f) != 0)
		return -ENOMEM;

	/* In place: a rename would change the directory after we stamped it. */
	for (size_t off = 0; off < size;) {
		ssize_t n = pwrite(fd, buf + off, size - off, (off_t) off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		off += (size_t) n;
	}
	if (ftruncate(fd, (off_t) size) < 0)
		return negative_errno();
	s->dirty = false;
	return 0;
}

int ipam_store_open(const char *data_dir, const char *network, unsigned flags, IpamStore **ret) {
	_cleanup_(ipam_store_freep) IpamStore *s = NULL;
	int r;

	if (isempty(data_dir) || isempty(network) || strchr(network, '/') || streq(network, ".") ||
	    streq(network, ".."))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir_fd = s->lock_fd = -EBADF;
	s->path = strdup_printf("%s/%s", data_dir, network);
	if (!s->path)
		return -ENOMEM;
	if (!(flags & IPAM_STORE_NO_CREATE)) {
		r = mkdir_p(s->path, 0755);
		if (r < 0)
			return r;
	}
	s->dir_fd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0)
		return negative_errno();
	r = store_lock_acquire(s->dir_fd, IPAM_STORE_LOCK_NAME, &s->lock_fd);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

IpamStore *ipam_store_free(IpamStore *s) {
	if (!s)
		return NULL;
	if (s->lock_fd >= 0)
		(void) ipam_store_flush(s);
	res_clear(s);
	strv_free(s->skipped);
	safe_close(s->dir_fd);
	safe_close(s->lock_fd); /* unlocks */
	free(s->path);
	return mfree(s);
}

int ipam_store_is_reserved(IpamStore *s, const IpAddr *ip) {
	char name[IP_ADDR_STRLEN];
	struct stat sb;

	if (fstatat(s->dir_fd, ip_name(ip, name), &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : negative_errno();
	return 1;
}

int ipam_store_reserve(IpamStore *s, const IpAddr *ip, const char *container_id, const char *ifname,
		       unsigned range_set) {
	_cleanup_free_ char *cid = trim_dup(container_id), *content = NULL;
	char name[IP_ADDR_STRLEN], tmp[sizeof(TMP_PREFIX) + IP_ADDR_STRLEN], last[64];
	int r;

	if (!cid)
		return -ENOMEM;
	if (isempty(cid) || !ifname)
		return -EINVAL;
	r = ensure_loaded(s);
	if (r < 0)
		return r;
	ip_name(ip, name);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name);
	/* The reference's exact bytes: TrimSpace(id) + "\r\n" + ifname, no trailing newline. */
	content = strdup_printf("%s\r\n%s", cid, ifname);
	if (!content)
		return -ENOMEM;
	r = store_file_create_exclusive_at(s->dir_fd, name, tmp, content, strlen(content), 0644);
	if (r == -EEXIST && !s->scanned) {
		/* Taken by someone the index did not know about: it is stale. */
		s->loaded = false;
		(void) ensure_loaded(s);
	}
	if (r < 0)
		return r;
	s->dirty = true;
	r = res_add(s, ip, cid, ifname);
	if (r < 0) {
		(void) unlinkat(s->dir_fd, name, 0);
		return r;
	}
	snprintf(last, sizeof(last), LAST_RESERVED "%u", range_set);
	/* Only a round-robin hint: failing to record it must not fail the reservation, and losing
	 * it in a crash only moves where the next search starts — atomic, but no fsync (the
	 * reservation file itself is durable). */
	(void) write_file_atomic_at(s->dir_fd, last, name, strlen(name), 0644, WRITE_ATOMIC_NO_SYNC);
	return 0;
}

int ipam_store_set_last_reserved(IpamStore *s, unsigned range_set, const IpAddr *ip) {
	char last[64], name[IP_ADDR_STRLEN];

	snprintf(last, sizeof(last), LAST_RESERVED "%u", range_set);
	s->dirty = true;
	if (!ip || !ip_addr_is_set(ip)) {
		if (unlinkat(s->dir_fd, last, 0) < 0 && errno != ENOENT)
			return negative_errno();
		return 0;
	}
	ip_name(ip, name);
	return write_file_atomic_at(s->dir_fd, last, name, strlen(name), 0644, WRITE_ATOMIC_NO_SYNC);
}

int ipam_store_last_reserved(IpamStore *s, unsigned range_set, IpAddr *ret) {
	_cleanup_free_ char *data = NULL, *t = NULL;
	char last[64];
	int r;

	snprintf(last, sizeof(last), LAST_RESERVED "%u", range_set);
	r = store_file_read_at(s->dir_fd, last, ENTRY_MAX, &data, NULL);
	if (r == -ELOOP || r == -EMEDIUMTYPE || r == -EFBIG)
		return -EINVAL; /* garbage: only a hint, the search starts over */
	if (r < 0)
		return r;
	t = trim_dup(data);
	if (!t)
		return -ENOMEM;
	return ip_addr_parse(t, ret);
}

static bool matches(const IpamReservation *r, const char *cid, const char *ifname, bool legacy) {
	if (!streq(r->container_id, cid))
		return false;
	return legacy ? !r->ifname : streq_ptr(r->ifname, ifname);
}

int ipam_store_get_by_id(IpamStore *s, const char *container_id, const char *ifname, bool scan_on_miss, IpAddr **ret,
			 size_t *ret_n) {
	_cleanup_free_ char *cid = trim_dup(container_id);
	_cleanup_free_ IpAddr *out = NULL;
	size_t n = 0;
	int r;

	if (!cid)
		return -ENOMEM;
	r = ensure_loaded(s);
	if (r < 0)
		return r;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < s->n_res; i++) {
			if (!matches(&s->res[i], cid, ifname, false) && !matches(&s->res[i], cid, ifname, true))
				continue;
			IpAddr *no = reallocarray(out, n + 1, sizeof(*out));
			if (!no)
				return -ENOMEM;
			out = no;
			out[n++] = s->res[i].ip;
		}
		if (n > 0 || !scan_on_miss || s->scanned)
			break;
		r = ipam_store_scan(s);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(out);
	*ret_n = n;
	return 0;
}

/* Unlinks the file of reservation i if its content still says what the index says.
 * 1 released, 0 content differs or gone (index stale), negative errno. */
static int release_verified(IpamStore *s, size_t i) {
	_cleanup_free_ char *data = NULL, *cid = NULL, *ifn = NULL;
	char name[IP_ADDR_STRLEN];
	int r;

	ip_name(&s->res[i].ip, name);
	r = store_file_read_at(s->dir_fd, name, ENTRY_MAX, &data, NULL);
	if (r == -ENOENT || r == -ELOOP || r == -EMEDIUMTYPE || r == -EFBIG)
		return 0; /* gone, or replaced by something that is no reservation: not ours to unlink */
	if (r < 0)
		return r;
	r = ipam_reservation_parse(data, &cid, &ifn);
	if (r < 0)
		return r;
	if (!streq(cid, s->res[i].container_id) || !streq_ptr(ifn, s->res[i].ifname))
		return 0;
	if (unlinkat(s->dir_fd, name, 0) < 0 && errno != ENOENT)
		return negative_errno();
	return 1;
}

int ipam_store_release_by_id(IpamStore *s, const char *container_id, const char *ifname) {
	_cleanup_free_ char *cid = trim_dup(container_id);
	unsigned released = 0;
	int r;

	if (!cid)
		return -ENOMEM;
	r = ensure_loaded(s);
	if (r < 0)
		return r;
	for (;;) {
		bool stale = false, any = false;

		/* Exact (id, ifname) matches; only if there are none, legacy id-only files. */
		for (int legacy = 0; legacy < 2 && !any; legacy++)
			for (size_t i = 0; i < s->n_res;) {
				if (!matches(&s->res[i], cid, ifname, legacy)) {
					i++;
					continue;
				}
				any = true;
				r = release_verified(s, i);
				if (r < 0)
					return r;
				if (r == 0)
					stale = true;
				else
					released++;
				s->dirty = true;
				reservation_done(&s->res[i]);
				s->res[i] = s->res[--s->n_res];
			}
		if ((any && !stale) || s->scanned)
			break;
		/* Index miss or stale entry: confirm with a scan, then try once more. */
		r = ipam_store_scan(s);
		if (r < 0)
			return r;
	}
	if (released > 0)
		(void) store_fsync_dir(s->dir_fd);
	return (int) released;
}

int ipam_store_release(IpamStore *s, const IpAddr *ip) {
	char name[IP_ADDR_STRLEN];

	if (unlinkat(s->dir_fd, ip_name(ip, name), 0) < 0 && errno != ENOENT)
		return negative_errno();
	res_remove_ip(s, ip);
	s->dirty = true;
	(void) store_fsync_dir(s->dir_fd);
	return 0;
}

int ipam_store_gc(IpamStore *s, bool (*keep)(const IpamReservation *r, void *userdata), void *userdata) {
	int r, released = 0;

	r = ipam_store_scan(s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->n_res;) {
		char name[IP_ADDR_STRLEN];

		if (keep(&s->res[i], userdata)) {
			i++;
			continue;
		}
		if (unlinkat(s->dir_fd, ip_name(&s->res[i].ip, name), 0) < 0 && errno != ENOENT)
			RET_GATHER(r, negative_errno());
		else
			released++;
		reservation_done(&s->res[i]);
		s->res[i] = s->res[--s->n_res];
	}
	if (released > 0)
		(void) store_fsync_dir(s->dir_fd);
	return r < 0 ? r : released;
}

const IpamReservation *ipam_store_reservations(IpamStore *s, size_t *ret_n) {
	*ret_n = 0;
	if (ensure_loaded(s) < 0)
		return NULL;
	*ret_n = s->n_res;
	return s->res;
}

unsigned ipam_store_scan_count(const IpamStore *s) {
	return s->scans;
}

char *const *ipam_store_skipped(const IpamStore *s) {
	return s ? s->skipped : NULL;
}
