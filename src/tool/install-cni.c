/* SPDX-License-Identifier: Apache-2.0 */
/*
 * weft install-cni (see install-cni.h). Two phases, so a bad request changes nothing on the host:
 * first every source is opened and checked (exists, regular file, executable), then the files are
 * installed one by one; the first write failure stops the run (a read-only or full --dest would
 * fail the same way for every file) and is reported with the directory and the reason.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/install-cni.h"

#define PLUGIN_MODE 0755
#define CONF_MODE 0644
/* Temp files carry this prefix (a dot file: runtimes list the bin dir by plugin name and never
 * look at these) so a run killed between create and rename can be cleaned up by the next one. */
#define TMP_PREFIX ".weft-install."
/* Older leftovers than this are from a dead run, not from one installing concurrently. */
#define TMP_STALE_SEC (10 * 60)

typedef enum InstallOutcome {
	INSTALL_NEW,
	INSTALL_UPDATED,
	INSTALL_UNCHANGED,
} InstallOutcome;

static const char *const outcome_names[] = {
	[INSTALL_NEW] = "installed",
	[INSTALL_UPDATED] = "updated",
	[INSTALL_UNCHANGED] = "unchanged",
};

/* One file to install: an open source and the name it gets in the destination directory. */
typedef struct InstallItem {
	char *name;
	int fd;
	struct stat st;
} InstallItem;

static void usage(FILE *f) {
	fprintf(f, "Usage: weft install-cni --src DIR --dest DIR [--plugins NAME[,NAME...]]\n"
		   "                        [--conf-src FILE --conf-dest DIR]\n"
		   "Copies plugin executables from --src into --dest (atomic per file: temp + fsync + rename,\n"
		   "so running plugins are unaffected), skipping files that are already identical. Default\n"
		   "plugin list: every executable in --src. Only the listed names are written in --dest.\n"
		   "Names of one source file (the multi-call suite's links) stay one file: hard links.\n"
		   "--conf-src/--conf-dest install one CNI config file the same way (mode 0644).\n");
}

static bool name_valid(const char *s) {
	return !isempty(s) && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..") && strlen(s) < NAME_MAX;
}

static int cmp_str(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Every regular, executable, non-hidden file in the directory, sorted. */
static int list_executables(int dfd, const char *dir, char ***ret) {
	_cleanup_strv_free_ char **l = NULL;
	DIR *d;
	struct dirent *de;
	int dup_fd, r = 0;

	dup_fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0)
		return log_error_errno(errno, "Failed to open %s: %m", dir);
	d = fdopendir(dup_fd);
	if (!d) {
		r = negative_errno();
		close(dup_fd);
		return log_error_errno(r, "Failed to read %s: %m", dir);
	}
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		/* Follows symlinks: an image may link plugin names to one multi-call binary. */
		if (fstatat(dfd, de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			continue;
		r = strv_extend(&l, de->d_name);
		if (r < 0)
			break;
	}
	if (r >= 0 && errno != 0)
		r = negative_errno();
	closedir(d);
	if (r < 0)
		return log_error_errno(r, "Failed to read %s: %m", dir);
	if (l)
		qsort(l, strv_length(l), sizeof(char *), cmp_str);
	*ret = TAKE_PTR(l);
	return 0;
}

/* Opens and checks one source. `need_exec`: plugins must be executable; a config file need not. */
static int item_open(int dfd, const char *dir, const char *path, const char *name, bool need_exec, InstallItem *ret) {
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	/* `dir` is only for messages: "DIR/NAME", or the path alone when dir is NULL. */
	const char *sep = dir ? "/" : "";

	dir = dir ?: "";
	fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return log_error_errno(errno, "%s%s%s: no such file", dir, sep, path);
		return log_error_errno(errno, "Failed to open %s%s%s: %m", dir, sep, path);
	}
	if (fstat(fd, &st) < 0)
		return log_error_errno(errno, "Failed to stat %s%s%s: %m", dir, sep, path);
	if (!S_ISREG(st.st_mode))
		return log_error_errno(EINVAL, "%s%s%s: not a regular file", dir, sep, path);
	if (need_exec && !(st.st_mode & 0111))
		return log_error_errno(EACCES, "%s%s%s: not executable (mode %04o)", dir, sep, path,
				       (unsigned) (st.st_mode & 07777));
	ret->name = strdup(name);
	if (!ret->name)
		return log_error_errno(ENOMEM, "Out of memory");
	ret->fd = TAKE_FD(fd);
	ret->st = st;
	return 0;
}

static void items_free(InstallItem *items, size_t n) {
	for (size_t i = 0; i < n; i++) {
		free(items[i].name);
		safe_close(items[i].fd);
	}
	free(items);
}

/* Reads exactly len bytes at off (short only at EOF). */
static ssize_t pread_full(int fd, void *buf, size_t len, off_t off) {
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *) buf + done, len - done, off + (off_t) done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		done += (size_t) n;
	}
	return (ssize_t) done;
}

/* > 0 if both files have the same bytes (sizes already equal), 0 if not, < 0 on read error. A
 * byte compare rather than two hashes: it is exact, stops at the first difference and reads each
 * file once, which is all a hash would cost anyway. */
static int same_content(int a, int b, off_t size) {
	static char ba[64 * 1024], bb[64 * 1024];
	off_t off = 0;

	while (off < size) {
		ssize_t na = pread_full(a, ba, sizeof(ba), off), nb;

		if (na < 0)
			return (int) na;
		nb = pread_full(b, bb, (size_t) na, off);
		if (nb < 0)
			return (int) nb;
		if (na == 0 || nb != na || memcmp(ba, bb, (size_t) na) != 0)
			return 0;
		off += na;
	}
	return 1;
}

static int copy_fd(int src, int dst) {
	static char buf[128 * 1024];
	off_t off = 0;

	for (;;) {
		ssize_t n = pread_full(src, buf, sizeof(buf), off);
		int r;

		if (n < 0)
			return (int) n;
		if (n == 0)
			return 0;
		r = loop_write(dst, buf, (size_t) n);
		if (r < 0)
			return r;
		off += n;
	}
}

/* Two init containers of a rolling update may run at once, both as PID 1 of their own namespace:
 * a temp name needs real randomness, and O_EXCL (or linkat's EEXIST) settles any collision. */
static int tmp_name(const char *name, char tmp[static NAME_MAX + 1]) {
	uint64_t rnd = 0;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint64_t) random();
	if (snprintf(tmp, NAME_MAX + 1, TMP_PREFIX "%s.%016llx", name, (unsigned long long) rnd) >= NAME_MAX + 1)
		return log_error_errno(ENAMETOOLONG, "%s: name too long", name);
	return 0;
}

/*
 * Installs `it` as dest/it->name with `mode`. The current target (if any) is only ever opened for
 * reading and then replaced by rename(2): a process executing it keeps the old inode, and the
 * runtime sees either the old or the new complete file under the name.
 */
static int install_item(const InstallItem *it, int dest_dfd, const char *dest, mode_t mode, InstallOutcome *ret) {
	_cleanup_close_ int cur = -EBADF, tmp_fd = -EBADF;
	char tmp[NAME_MAX + 1];
	struct stat cst;
	bool exists = false;
	int r;

	if (fstatat(dest_dfd, it->name, &cst, AT_SYMLINK_NOFOLLOW) >= 0) {
		exists = true;
		if (S_ISDIR(cst.st_mode))
			return log_error_errno(EISDIR, "%s/%s: is a directory, refusing to replace it", dest, it->name);
		/* Same size and mode and same bytes: leave it (and its mtime) alone. A symlink or a
		 * file with another mode is replaced by a plain file of ours. */
		if (S_ISREG(cst.st_mode) && cst.st_size == it->st.st_size && (cst.st_mode & 07777) == mode) {
			cur = openat(dest_dfd, it->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
			if (cur < 0)
				return log_error_errno(errno, "Failed to open %s/%s for reading: %m", dest, it->name);
			r = same_content(it->fd, cur, it->st.st_size);
			if (r < 0)
				return log_error_errno(r, "Failed to compare %s with %s/%s: %m", it->name, dest,
						       it->name);
			if (r > 0) {
				*ret = INSTALL_UNCHANGED;
				return 0;
			}
		}
	} else if (errno != ENOENT)
		return log_error_errno(errno, "Failed to stat %s/%s: %m", dest, it->name);

	for (unsigned attempt = 0; attempt < 16; attempt++) {
		r = tmp_name(it->name, tmp);
		if (r < 0)
			return r;
		tmp_fd = openat(dest_dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (tmp_fd >= 0 || errno != EEXIST)
			break;
	}
	if (tmp_fd < 0) {
		r = -errno;
		return log_error_errno(r, "Failed to create a file in %s: %m%s", dest,
				       r == -EROFS ? " (the destination must be mounted read-write)" : "");
	}
	r = copy_fd(it->fd, tmp_fd);
	if (r < 0) {
		log_error_errno(r, "Failed to write %s/%s: %m", dest, tmp);
		goto fail;
	}
	/* chmod after writing: the file never exists executable with partial content. */
	if (fchmod(tmp_fd, mode) < 0 || fsync(tmp_fd) < 0) {
		r = log_error_errno(errno, "Failed to finish %s/%s: %m", dest, tmp);
		goto fail;
	}
	if (renameat(dest_dfd, tmp, dest_dfd, it->name) < 0) {
		r = log_error_errno(errno, "Failed to rename %s/%s to %s: %m", dest, tmp, it->name);
		goto fail;
	}
	*ret = exists ? INSTALL_UPDATED : INSTALL_NEW;
	return 0;

fail:
	(void) unlinkat(dest_dfd, tmp, 0);
	return r;
}

/*
 * Installs `it` as another name of dest/anchor, which install_item() has just installed from a
 * source with the same inode: the multi-call suite is one file with a name per plugin, and stays
 * one file on the host. A hard link under a temp name, renamed over the target: as for a copy,
 * a process executing the old target keeps its inode, and the name always points at a complete
 * file. A target that is already that inode is left alone.
 */
static int install_link(const InstallItem *it, const char *anchor, int dest_dfd, const char *dest,
			InstallOutcome *ret) {
	char tmp[NAME_MAX + 1];
	struct stat ast, cst;
	bool exists = false;
	int r;

	if (fstatat(dest_dfd, anchor, &ast, AT_SYMLINK_NOFOLLOW) < 0)
		return log_error_errno(errno, "Failed to stat %s/%s: %m", dest, anchor);
	if (fstatat(dest_dfd, it->name, &cst, AT_SYMLINK_NOFOLLOW) >= 0) {
		exists = true;
		if (S_ISDIR(cst.st_mode))
			return log_error_errno(EISDIR, "%s/%s: is a directory, refusing to replace it", dest, it->name);
		if (cst.st_dev == ast.st_dev && cst.st_ino == ast.st_ino) {
			*ret = INSTALL_UNCHANGED;
			return 0;
		}
	} else if (errno != ENOENT)
		return log_error_errno(errno, "Failed to stat %s/%s: %m", dest, it->name);

	for (unsigned attempt = 0;; attempt++) {
		r = tmp_name(it->name, tmp);
		if (r < 0)
			return r;
		if (linkat(dest_dfd, anchor, dest_dfd, tmp, 0) >= 0)
			break;
		if (errno != EEXIST || attempt >= 16) {
			r = -errno;
			return log_error_errno(r, "Failed to link %s/%s to %s: %m%s", dest, anchor, tmp,
					       r == -EROFS ? " (the destination must be mounted read-write)" : "");
		}
	}
	if (renameat(dest_dfd, tmp, dest_dfd, it->name) < 0) {
		r = log_error_errno(errno, "Failed to rename %s/%s to %s: %m", dest, tmp, it->name);
		(void) unlinkat(dest_dfd, tmp, 0);
		return r;
	}
	*ret = exists ? INSTALL_UPDATED : INSTALL_NEW;
	return 0;
}

/* Removes our temp files left behind by a run that died between create and rename. */
static void remove_stale_temps(int dfd) {
	_cleanup_close_ int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	time_t now = time(NULL);
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd)))
		return;
	TAKE_FD(fd);
	while ((de = readdir(d))) {
		struct stat st;

		if (!startswith(de->d_name, TMP_PREFIX))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    now - st.st_mtime < TMP_STALE_SEC)
			continue;
		if (unlinkat(dfd, de->d_name, 0) >= 0)
			log_info("Removed stale temporary file %s", de->d_name);
	}
	closedir(d);
}

static int open_dir(const char *path, const char *what) {
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return log_error_errno(errno, "%s %s: no such directory", what, path);
		return log_error_errno(errno, "Failed to open %s %s: %m", what, path);
	}
	return fd;
}

/* Installs items[0..n) into dest; prints one line each. Stops at the first failure. */
static int install_all(const InstallItem *items, size_t n, int dest_dfd, const char *dest, mode_t mode,
		       unsigned counts[static 3]) {
	bool changed = false;
	int r = 0;

	remove_stale_temps(dest_dfd);
	for (size_t i = 0; i < n; i++) {
		const InstallItem *anchor = NULL;
		InstallOutcome o;

		/* Names of one source file (the multi-call suite's hard links) become names of one
		 * installed file: the first is copied, the others linked to it. */
		for (size_t j = 0; j < i && !anchor; j++)
			if (items[j].st.st_dev == items[i].st.st_dev && items[j].st.st_ino == items[i].st.st_ino)
				anchor = &items[j];
		if (anchor)
			r = install_link(&items[i], anchor->name, dest_dfd, dest, &o);
		else
			r = install_item(&items[i], dest_dfd, dest, mode, &o);
		if (r < 0)
			break;
		counts[o]++;
		changed = changed || o != INSTALL_UNCHANGED;
		printf("%s %s/%s\n", outcome_names[o], dest, items[i].name);
	}
	/* Persist the renames (one directory fsync for the whole batch). */
	if (changed && fsync(dest_dfd) < 0 && r >= 0)
		r = log_error_errno(errno, "Failed to sync %s: %m", dest);
	return r;
}

int install_cni_main(int argc, char *argv[]) {
	enum {
		ARG_SRC = 0x100,
		ARG_DEST,
		ARG_PLUGINS,
		ARG_CONF_SRC,
		ARG_CONF_DEST
	};
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "src", required_argument, NULL, ARG_SRC },
		{ "dest", required_argument, NULL, ARG_DEST },
		{ "plugins", required_argument, NULL, ARG_PLUGINS },
		{ "conf-src", required_argument, NULL, ARG_CONF_SRC },
		{ "conf-dest", required_argument, NULL, ARG_CONF_DEST },
		{},
	};
	const char *src = NULL, *dest = NULL, *plugins = NULL, *conf_src = NULL, *conf_dest = NULL;
	_cleanup_close_ int src_dfd = -EBADF, dest_dfd = -EBADF, conf_dfd = -EBADF;
	_cleanup_strv_free_ char **names = NULL;
	InstallItem *items = NULL, conf = { .fd = -EBADF };
	unsigned counts[3] = {}, conf_counts[3] = {};
	size_t n = 0;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
		switch (c) {
		case 'h': usage(stdout); return EXIT_SUCCESS;
		case ARG_SRC: src = optarg; break;
		case ARG_DEST: dest = optarg; break;
		case ARG_PLUGINS: plugins = optarg; break;
		case ARG_CONF_SRC: conf_src = optarg; break;
		case ARG_CONF_DEST: conf_dest = optarg; break;
		default: usage(stderr); return EXIT_FAILURE;
		}
	if (optind < argc) {
		log_error("Unexpected argument '%s'", argv[optind]);
		return EXIT_FAILURE;
	}
	if (!src || !dest) {
		log_error("--src and --dest are required");
		usage(stderr);
		return EXIT_FAILURE;
	}
	if (!conf_src != !conf_dest) {
		log_error("--conf-src and --conf-dest go together");
		return EXIT_FAILURE;
	}

	/* Phase 1: open and check everything; nothing is written yet. */
	src_dfd = open_dir(src, "Source directory");
	if (src_dfd < 0)
		return EXIT_FAILURE;
	dest_dfd = open_dir(dest, "Destination directory");
	if (dest_dfd < 0)
		return EXIT_FAILURE;
	if (conf_dest) {
		conf_dfd = open_dir(conf_dest, "Config destination directory");
		if (conf_dfd < 0)
			return EXIT_FAILURE;
	}

	if (plugins) {
		r = strv_split(plugins, ",", &names);
		if (r < 0) {
			log_error_errno(r, "Out of memory");
			return EXIT_FAILURE;
		}
		if (!names || !names[0]) {
			log_error("--plugins: empty list");
			return EXIT_FAILURE;
		}
		for (char **p = names; *p; p++)
			if (!name_valid(*p)) {
				log_error("--plugins: invalid plugin name \"%s\"", *p);
				return EXIT_FAILURE;
			}
	} else {
		r = list_executables(src_dfd, src, &names);
		if (r < 0)
			return EXIT_FAILURE;
		if (!names || !names[0]) {
			log_error("Source directory %s: no executables to install", src);
			return EXIT_FAILURE;
		}
	}

	items = calloc(strv_length(names), sizeof(InstallItem));
	if (!items) {
		log_error_errno(ENOMEM, "Out of memory");
		return EXIT_FAILURE;
	}
	for (char **p = names; *p; p++) {
		items[n].fd = -EBADF;
		r = item_open(src_dfd, src, *p, *p, true, &items[n]);
		if (r < 0)
			goto out;
		n++;
	}
	if (conf_src) {
		_cleanup_free_ char *copy = strdup(conf_src);
		const char *base;

		if (!copy) {
			r = log_error_errno(ENOMEM, "Out of memory");
			goto out;
		}
		base = strrchr(copy, '/') ? strrchr(copy, '/') + 1 : copy;
		if (!name_valid(base)) {
			r = log_error_errno(EINVAL, "--conf-src %s: not a file name", conf_src);
			goto out;
		}
		r = item_open(AT_FDCWD, NULL, conf_src, base, false, &conf);
		if (r < 0)
			goto out;
	}

	/* Phase 2: install. */
	r = install_all(items, n, dest_dfd, dest, PLUGIN_MODE, counts);
	if (r >= 0 && conf_src)
		r = install_all(&conf, 1, conf_dfd, conf_dest, CONF_MODE, conf_counts);
	if (r >= 0)
		printf("install-cni: %u installed, %u updated, %u unchanged in %s%s\n", counts[INSTALL_NEW],
		       counts[INSTALL_UPDATED], counts[INSTALL_UNCHANGED], dest,
		       conf_src ? (conf_counts[INSTALL_UNCHANGED] ? "; config unchanged" : "; config installed") : "");
out:
	items_free(items, n);
	free(conf.name);
	safe_close(conf.fd);
	if (fflush(stdout) != 0 && r >= 0)
		r = log_error_errno(EIO, "Failed to write to stdout: %m");
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
