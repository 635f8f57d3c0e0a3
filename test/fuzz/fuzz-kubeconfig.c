/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes the kubeconfig reader (kubeconfig_load: YAML through libyaml, current-context →
 * context → cluster + user, base64 *-data fields). The input is served from a memfd under a
 * /proc/self/fd path, so no file is written per input; the paths a kubeconfig names
 * (certificate-authority, tokenFile, ...) are only resolved at load time, never opened.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shared/client/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	KubeConfig *k = NULL;
	char *err = NULL, *token = NULL;
	int r;

	if (size > MAX_INPUT)
		return 0;
	if (fd < 0) {
		fd = memfd_create("kubeconfig", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t) size)
		abort();

	r = kubeconfig_load(path, &k, &err);
	if (r < 0) {
		if (!err)
			abort(); /* every failure names the file and the key */
	} else {
		if (!k || !k->server || !k->context || !k->cluster_name || !k->user_name)
			abort();
		if ((k->cert_data || k->cert_file) != (k->key_data || k->key_file))
			abort();
		if (k->ca_data && k->ca_file)
			abort();
		/* Only an inline token: a tokenFile would be read from wherever the input points. */
		if (!k->token_file) {
			r = kubeconfig_get_token(k, &token);
			if (r < 0 || !k->token != !token)
				abort();
		}
	}
	free(token);
	free(err);
	kubeconfig_free(k);
	return 0;
}
