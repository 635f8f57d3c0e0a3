/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"
#include "shared/cni/cni-types.h"

static const char *const version_names[_CNI_VERSION_MAX] = {
	[CNI_VERSION_0_1_0] = "0.1.0", [CNI_VERSION_0_2_0] = "0.2.0", [CNI_VERSION_0_3_0] = "0.3.0",
	[CNI_VERSION_0_3_1] = "0.3.1", [CNI_VERSION_0_4_0] = "0.4.0", [CNI_VERSION_1_0_0] = "1.0.0",
	[CNI_VERSION_1_1_0] = "1.1.0",
};

CniVersion cni_version_from_string(const char *s) {
	/* SPEC: a configuration without cniVersion predates the field, i.e. 0.1.0. */
	if (isempty(s))
		return CNI_VERSION_0_1_0;
	for (int v = 0; v < _CNI_VERSION_MAX; v++)
		if (streq(s, version_names[v]))
			return (CniVersion) v;
	return _CNI_VERSION_INVALID;
}

const char *cni_version_to_string(CniVersion v) {
	if (v < 0 || v >= _CNI_VERSION_MAX)
		return NULL;
	return version_names[v];
}

static const char *const command_names[_CNI_CMD_MAX] = {
	[CNI_CMD_ADD] = "ADD", [CNI_CMD_DEL] = "DEL",       [CNI_CMD_CHECK] = "CHECK",
	[CNI_CMD_GC] = "GC",   [CNI_CMD_STATUS] = "STATUS", [CNI_CMD_VERSION] = "VERSION",
};

CniCommand cni_command_from_string(const char *s) {
	/* Case-sensitive, like the reference skel: "add" is not a command. */
	if (!s)
		return _CNI_CMD_INVALID;
	for (int c = 0; c < _CNI_CMD_MAX; c++)
		if (streq(s, command_names[c]))
			return (CniCommand) c;
	return _CNI_CMD_INVALID;
}

const char *cni_command_to_string(CniCommand c) {
	if (c < 0 || c >= _CNI_CMD_MAX)
		return NULL;
	return command_names[c];
}
