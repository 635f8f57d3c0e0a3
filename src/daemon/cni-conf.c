/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/cni-conf.h"

int cni_conf_render(const CniConfParams *p, char **ret) {
	_cleanup_(json_decrefp) json_t *root = NULL;
	json_t *plugins;
	char *s, *t;

	/* json_pack steals the references of "o" arguments, so a failure leaks nothing. */
	root = json_pack("{s:s, s:s, s:[{s:s, s:s, s:b, s:b}]}", "cniVersion", "1.0.0", "name", CNI_CONF_NETWORK_NAME,
			 "plugins", "type", "weft", "runDir", p->run_dir ?: "/run/weft", "hairpinMode", 1,
			 "isDefaultGateway", 1);
	if (!root)
		return -ENOMEM;
	plugins = json_object_get(root, "plugins");
	if (p->data_dir && json_object_set_new(json_array_get(plugins, 0), "dataDir", json_string(p->data_dir)) < 0)
		return -ENOMEM;
	if (p->portmap && json_array_append_new(plugins, json_pack("{s:s, s:{s:b}, s:b}", "type", "portmap",
								   "capabilities", "portMappings", 1, "snat", 1)) < 0)
		return -ENOMEM;

	s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!s)
		return -ENOMEM;
	t = strdup_printf("%s\n", s);
	free(s);
	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

bool cni_conf_have_plugin(const char *bin_dir, const char *type) {
	char path[PATH_MAX];

	if (isempty(bin_dir) || snprintf(path, sizeof(path), "%s/%s", bin_dir, type) >= (int) sizeof(path))
		return false;
	return access(path, X_OK) == 0;
}

int cni_conf_write(const char *conf_dir, const CniConfParams *p) {
	_cleanup_free_ char *s = NULL, *path = NULL;
	int r;

	r = cni_conf_render(p, &s);
	if (r < 0)
		return r;
	r = mkdir_p(conf_dir, 0755);
	if (r < 0)
		return r;
	path = strdup_printf("%s/%s", conf_dir, CNI_CONF_FILE_NAME);
	if (!path)
		return -ENOMEM;
	return write_file_atomic(path, s, strlen(s), 0644);
}

int cni_conf_remove(const char *conf_dir) {
	_cleanup_free_ char *path = strdup_printf("%s/%s", conf_dir, CNI_CONF_FILE_NAME);

	if (!path)
		return -ENOMEM;
	if (unlink(path) < 0 && errno != ENOENT)
		return negative_errno();
	return 0;
}

bool cni_conf_present(const char *conf_dir) {
	_cleanup_free_ char *path = strdup_printf("%s/%s", conf_dir, CNI_CONF_FILE_NAME);

	return path && access(path, F_OK) == 0;
}
