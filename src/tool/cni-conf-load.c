/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/cni-conf-load.h"

CniNetConfList *cni_conf_list_free(CniNetConfList *l) {
	if (!l)
		return NULL;
	json_decref(l->root);
	free(l->bytes);
	free(l->path);
	free(l);
	return NULL;
}

/* The checks of libcni's ConfListFromBytes / ConfFromBytes, plus a known cniVersion: a list we
 * cannot convert results for is better refused up front than half-run. */
static int conf_list_validate(CniNetConfList *l, CniError *err) {
	json_t *name, *ver, *b, *plugin;
	size_t i;

	if (!json_is_object(l->root))
		return cni_error_set(err, -EINVAL, CNI_ERR_DECODE,
				     "error parsing configuration list: not a JSON object");
	name = json_object_get(l->root, "name");
	if (!name)
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: no name");
	if (!json_is_string(name))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: invalid name type");
	l->name = json_string_value(name);

	ver = json_object_get(l->root, "cniVersion");
	if (ver && !json_is_string(ver))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: invalid cniVersion type");
	l->version_str = ver ? json_string_value(ver) : "";
	l->version = cni_version_from_string(l->version_str);
	if (l->version < 0)
		return cni_error_set(err, -EINVAL, CNI_ERR_INCOMPATIBLE_VERSION,
				     "network %s: unsupported cniVersion \"%s\"", l->name, l->version_str);

	b = json_object_get(l->root, "disableCheck");
	if (b && !json_is_boolean(b))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: invalid disableCheck type");
	l->disable_check = json_is_true(b);
	b = json_object_get(l->root, "disableGC");
	if (b && !json_is_boolean(b))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: invalid disableGC type");
	l->disable_gc = json_is_true(b);

	l->plugins = json_object_get(l->root, "plugins");
	if (!l->plugins)
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: no 'plugins' key");
	if (!json_is_array(l->plugins))
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: invalid 'plugins' type");
	if (json_array_size(l->plugins) == 0)
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration list: no plugins in list");
	json_array_foreach(l->plugins, i, plugin) {
		json_t *type, *caps, *v;
		const char *k;

		if (!json_is_object(plugin))
			return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
					     "failed to parse plugin config %zu: not an object", i);
		type = json_object_get(plugin, "type");
		if (!json_is_string(type) || isempty(json_string_value(type)))
			return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
					     "failed to parse plugin config %zu: missing 'type'", i);
		/* libcni decodes "capabilities" into map[string]bool: anything else is a parse error. */
		caps = json_object_get(plugin, "capabilities");
		if (caps && !json_is_null(caps)) {
			if (!json_is_object(caps))
				return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
						     "failed to parse plugin config %zu: invalid 'capabilities'", i);
			json_object_foreach(caps, k, v)
				if (!json_is_boolean(v))
					return cni_error_set(
							err, -EINVAL, CNI_ERR_INVALID_NETCONF,
							"failed to parse plugin config %zu: capability \"%s\" is not a boolean",
							i, k);
		}
	}
	return 0;
}

static int conf_list_new(char *bytes, size_t len, CniNetConfList **ret) {
	CniNetConfList *l = calloc(1, sizeof(*l));

	if (!l) {
		free(bytes);
		return -ENOMEM;
	}
	l->bytes = bytes;
	l->n_bytes = len;
	*ret = l;
	return 0;
}

static json_t *parse_json(const char *bytes, size_t len, const char *what, CniError *err) {
	json_error_t jerr;
	json_t *j = json_loadb(bytes, len, 0, &jerr);

	if (!j)
		cni_error_set(err, -EINVAL, CNI_ERR_DECODE, "error parsing %s: %s (line %d)", what, jerr.text,
			      jerr.line);
	return j;
}

/* Parses and validates; *ret_named tells whether the JSON carried name `want` (even when invalid). */
static int conf_list_parse(char *bytes, size_t len, const char *want, bool *ret_named, CniNetConfList **ret,
			   CniError *err) {
	_cleanup_(cni_conf_list_freep) CniNetConfList *l = NULL;
	json_t *n;
	int r;

	r = conf_list_new(bytes, len, &l);
	if (r < 0)
		return cni_error_set(err, r, CNI_ERR_INTERNAL, "out of memory");
	l->root = parse_json(bytes, len, "configuration list", err);
	if (!l->root)
		return -EINVAL;
	n = json_object_get(l->root, "name");
	if (ret_named)
		*ret_named = want && json_is_string(n) && streq(json_string_value(n), want);
	r = conf_list_validate(l, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(l);
	return 0;
}

int cni_conf_list_from_bytes(char *bytes, size_t len, CniNetConfList **ret, CniError *err) {
	return conf_list_parse(bytes, len, NULL, NULL, ret, err);
}

static int conf_parse(char *bytes, size_t len, const char *want, bool *ret_named, CniNetConfList **ret, CniError *err) {
	_cleanup_free_ char *owned = bytes;
	json_t *conf, *type, *name, *ver, *list;
	char *text;

	conf = parse_json(bytes, len, "configuration", err);
	if (!conf)
		return -EINVAL;
	name = json_object_get(conf, "name");
	if (ret_named)
		*ret_named = want && json_is_string(name) && streq(json_string_value(name), want);
	type = json_object_get(conf, "type");
	if (!json_is_object(conf) || !json_is_string(type) || isempty(json_string_value(type))) {
		json_decref(conf);
		return cni_error_set(err, -EINVAL, CNI_ERR_INVALID_NETCONF,
				     "error parsing configuration: missing 'type'");
	}
	/* ConfListFromConf: {"name","cniVersion","plugins":[conf]}, and those bytes are what gets
	 * cached, so re-serialise rather than keep the single config's text. Go marshals a missing
	 * name or version as "". */
	ver = json_object_get(conf, "cniVersion");
	list = json_pack("{s:o,s:o,s:[o]}", "name", json_is_string(name) ? json_incref(name) : json_string(""),
			 "cniVersion", json_is_string(ver) ? json_incref(ver) : json_string(""), "plugins", conf);
	if (!list)
		return cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	text = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	if (!text)
		return cni_error_set(err, -ENOMEM, CNI_ERR_INTERNAL, "out of memory");
	return conf_list_parse(text, strlen(text), want, NULL, ret, err);
}

int cni_conf_list_from_conf_bytes(char *bytes, size_t len, CniNetConfList **ret, CniError *err) {
	return conf_parse(bytes, len, NULL, NULL, ret, err);
}

static int cmp_str(const void *a, const void *b) {
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Conf files of the directory, split into lists and single configs, each sorted bytewise like
 * Go's sort.Strings. A missing directory is no files (as libcni). */
static int conf_files(int dfd, char ***ret_lists, char ***ret_confs) {
	_cleanup_strv_free_ char **lists = NULL, **confs = NULL;
	_cleanup_close_ int fd = -EBADF;
	DIR *d;
	struct dirent *de;
	int r = 0;

	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return negative_errno();
	d = fdopendir(fd);
	if (!d)
		return negative_errno();
	TAKE_FD(fd);
	while ((de = readdir(d))) {
		bool is_list = endswith(de->d_name, ".conflist");

		if (!is_list && !endswith(de->d_name, ".conf") && !endswith(de->d_name, ".json"))
			continue;
		if (de->d_type == DT_DIR)
			continue;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
				continue;
		}
		r = strv_extend(is_list ? &lists : &confs, de->d_name);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	if (lists)
		qsort(lists, strv_length(lists), sizeof(char *), cmp_str);
	if (confs)
		qsort(confs, strv_length(confs), sizeof(char *), cmp_str);
	*ret_lists = TAKE_PTR(lists);
	*ret_confs = TAKE_PTR(confs);
	return 0;
}

/* Appends "; file: why" for a skipped file, so a not-found error can explain itself. */
static void note_broken(char **notes, const char *file, const char *why) {
	char *n = strdup_printf("%s; skipped %s: %s", *notes ?: "", file, why ?: "unreadable");
	if (n) {
		free(*notes);
		*notes = n;
	}
}

int cni_conf_list_load(const char *dir, const char *name, CniNetConfList **ret, CniError *err) {
	_cleanup_strv_free_ char **lists = NULL, **confs = NULL;
	_cleanup_free_ char *notes = NULL;
	_cleanup_close_ int dfd = -EBADF;
	int r;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT)
		return cni_error_set(err, negative_errno(), CNI_ERR_IO, "failed to open config directory %s: %m", dir);
	if (dfd >= 0) {
		r = conf_files(dfd, &lists, &confs);
		if (r < 0)
			return cni_error_set(err, r, CNI_ERR_IO, "failed to read config directory %s: %s", dir,
					     strerror(-r));
	}
	if (!lists && !confs)
		return cni_error_set(err, -ENOENT, CNI_ERR_INVALID_NETCONF, "no net configurations found in %s", dir);

	for (unsigned pass = 0; pass < 2; pass++) {
		char **files = pass == 0 ? lists : confs;

		for (char **f = files; f && *f; f++) {
			CniNetConfList *l = NULL;
			CniError e = {};
			char *bytes;
			size_t len;
			bool named;

			r = read_full_file_at(dfd, *f, &bytes, &len);
			if (r < 0) {
				note_broken(&notes, *f, strerror(-r));
				continue;
			}
			named = false;
			r = pass == 0 ? conf_list_parse(bytes, len, name, &named, &l, &e)
				      : conf_parse(bytes, len, name, &named, &l, &e);
			if (r >= 0 && streq(l->name, name)) {
				l->path = strdup_printf("%s/%s", dir, *f);
				*ret = l;
				return 0;
			}
			if (r >= 0) {
				cni_conf_list_free(l);
				continue;
			}
			/* Broken, but it names our network: that is the file the user meant, so report
			 * its error rather than "not found". */
			if (named) {
				r = cni_error_set(err, r, e.code, "%s/%s: %s", dir, *f, e.msg ?: "invalid");
				cni_error_clear(&e);
				return r;
			}
			note_broken(&notes, *f, e.msg);
			cni_error_clear(&e);
		}
	}
	return cni_error_set(err, -ENOENT, CNI_ERR_INVALID_NETCONF, "no net configuration with name \"%s\" in %s%s",
			     name, dir, notes ?: "");
}
