/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/base64.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "tool/cni-cache.h"

CniCacheEntry *cni_cache_entry_free(CniCacheEntry *e) {
	if (!e)
		return NULL;
	json_decref(e->root);
	free(e->config);
	free(e);
	return NULL;
}

void cni_cache_entries_free(CniCacheEntry **l) {
	if (!l)
		return;
	for (CniCacheEntry **i = l; *i; i++)
		cni_cache_entry_free(*i);
	free(l);
}

char *cni_cache_path(const char *cache_dir, const char *net, const char *cid, const char *ifname) {
	return strdup_printf("%s/results/%s-%s-%s", cache_dir, net, cid, ifname);
}

static int set_opt(json_t *o, const char *k, json_t *v) {
	return v ? json_object_set(o, k, v) : 0;
}

int cni_cache_write(const char *cache_dir, const CniCacheEntry *e) {
	_cleanup_free_ char *path = NULL, *b64 = NULL, *text = NULL, *dir = NULL;
	json_t *o;
	int r;

	r = base64_encode(e->config ?: "", e->config ? e->config_len : 0, &b64);
	if (r < 0)
		return r;
	/* Field order as libcni's cachedInfo struct, so the files diff cleanly against cnitool's. */
	o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "kind", CNI_CACHE_KIND_V1, "containerId", e->container_id, "config", b64,
		      "ifName", e->ifname, "networkName", e->network_name);
	if (!o)
		return -ENOMEM;
	r = 0;
	if (!isempty(e->netns))
		r = json_object_set_new(o, "netns", json_string(e->netns));
	if (r >= 0 && e->cni_args && json_array_size(e->cni_args) > 0)
		r = set_opt(o, "cniArgs", e->cni_args);
	if (r >= 0 && e->capability_args && json_object_size(e->capability_args) > 0)
		r = set_opt(o, "capabilityArgs", e->capability_args);
	if (r >= 0)
		r = set_opt(o, "result", e->result);
	text = r >= 0 ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return -ENOMEM;

	path = cni_cache_path(cache_dir, e->network_name, e->container_id, e->ifname);
	if (!path)
		return -ENOMEM;
	r = write_file_atomic(path, text, strlen(text), 0600);
	if (r != -ENOENT)
		return r;
	/* First attachment on this node: create the directory and retry. */
	dir = strdup_printf("%s/results", cache_dir);
	if (!dir)
		return -ENOMEM;
	r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	return write_file_atomic(path, text, strlen(text), 0600);
}

static const char *get_str(json_t *o, const char *k) {
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Parses file bytes into an entry. Legacy (bare result) files only when `legacy_ok`. */
static int entry_parse(const char *text, size_t len, bool legacy_ok, CniCacheEntry **ret) {
	_cleanup_(cni_cache_entry_freep) CniCacheEntry *e = NULL;
	json_t *v;
	const char *cfg;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->root = json_loadb(text, len, 0, NULL);
	if (!json_is_object(e->root))
		return -EINVAL;
	if (!streq_ptr(get_str(e->root, "kind"), CNI_CACHE_KIND_V1)) {
		if (!legacy_ok)
			return -EINVAL;
		e->result = e->root;
		*ret = TAKE_PTR(e);
		return 0;
	}
	e->network_name = get_str(e->root, "networkName");
	e->container_id = get_str(e->root, "containerId");
	e->ifname = get_str(e->root, "ifName");
	e->netns = get_str(e->root, "netns");
	v = json_object_get(e->root, "cniArgs");
	e->cni_args = json_is_array(v) ? v : NULL;
	v = json_object_get(e->root, "capabilityArgs");
	e->capability_args = json_is_object(v) ? v : NULL;
	v = json_object_get(e->root, "result");
	e->result = json_is_object(v) ? v : NULL;
	cfg = get_str(e->root, "config");
	if (cfg) {
		void *c;
		r = base64_decode(cfg, strlen(cfg), &c, &e->config_len);
		if (r < 0)
			return r;
		e->config = c;
	}
	*ret = TAKE_PTR(e);
	return 0;
}

int cni_cache_read(const char *cache_dir, const char *net, const char *cid, const char *ifname, CniCacheEntry **ret) {
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len;
	int r;

	path = cni_cache_path(cache_dir, net, cid, ifname);
	if (!path)
		return -ENOMEM;
	r = read_full_file(path, &text, &len);
	if (r < 0)
		return r;
	return entry_parse(text, len, true, ret);
}

int cni_cache_remove(const char *cache_dir, const char *net, const char *cid, const char *ifname) {
	_cleanup_free_ char *path = cni_cache_path(cache_dir, net, cid, ifname);

	if (!path)
		return -ENOMEM;
	if (unlink(path) < 0 && errno != ENOENT)
		return negative_errno();
	return 0;
}

static int cmp_str(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

int cni_cache_list(const char *cache_dir, const char *net, CniCacheEntry ***ret, size_t *ret_n) {
	_cleanup_free_ char *dir = NULL, *prefix = NULL;
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_close_ int dfd = -EBADF;
	CniCacheEntry **l = NULL;
	size_t n = 0, nn;
	struct dirent *de;
	DIR *d;
	int r = 0;

	dir = strdup_printf("%s/results", cache_dir);
	prefix = strdup_printf("%s-", net);
	if (!dir || !prefix)
		return -ENOMEM;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT)
		return negative_errno();
	if (dfd >= 0) {
		int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return negative_errno();
		d = fdopendir(fd);
		if (!d) {
			r = negative_errno();
			safe_close(fd);
			return r;
		}
		/* The name only pre-filters (a "net-a" prefix also matches network "net"); the
		 * recorded networkName decides. Dot files are write_file_atomic()'s temporaries. */
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' && startswith(de->d_name, prefix) &&
			    (r = strv_extend(&names, de->d_name)) < 0)
				break;
		closedir(d);
		if (r < 0)
			return r;
	}
	nn = strv_length(names);
	if (nn > 0)
		qsort(names, nn, sizeof(char *), cmp_str);
	l = calloc(nn + 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < nn; i++) {
		_cleanup_free_ char *text = NULL;
		CniCacheEntry *e;
		size_t len;

		if (read_full_file_at(dfd, names[i], &text, &len) < 0)
			continue;
		if (entry_parse(text, len, false, &e) < 0)
			continue;
		if (!streq_ptr(e->network_name, net) || isempty(e->container_id) || isempty(e->ifname)) {
			cni_cache_entry_free(e);
			continue;
		}
		l[n++] = e;
	}
	*ret = l;
	if (ret_n)
		*ret_n = n;
	return 0;
}
