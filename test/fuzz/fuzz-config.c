/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzzes everything a plugin parses from its caller: the stdin config (cni_request_parse),
 * CNI_ARGS, the prevResult inside it, and result printing for every version.
 * Input: config bytes; a first line starting with "ARGS=" is used as CNI_ARGS instead.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "shared/cni/cni-plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64 * 1024)

static void exercise_result(const CniResult *r) {
	for (int v = 0; v < _CNI_VERSION_MAX; v++) {
		CniError err = {};
		json_t *j = cni_result_to_json(r, (CniVersion) v, &err);

		if (j) {
			CniResult *back = NULL;
			CniError err2 = {};

			/* What we print we must be able to read back. */
			if (cni_result_from_json(j, (CniVersion) v, &back, &err2) < 0)
				abort();
			json_t *again = cni_result_to_json(back, (CniVersion) v, NULL);
			if (!again || !json_equal(j, again))
				abort();
			json_decref(again);
			cni_result_free(back);
			json_decref(j);
		} else if (err.code == 0)
			abort(); /* failure must say why */
		cni_error_clear(&err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	_cleanup_free_ char *buf = NULL, *args_env = NULL;
	const char *conf;
	size_t conf_len;
	CniRequest req;
	json_t *j;

	if (size > MAX_INPUT)
		return 0;
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	conf = buf;
	conf_len = size;

	if (size >= 5 && memcmp(buf, "ARGS=", 5) == 0) {
		char *nl = memchr(buf, '\n', size);
		size_t l = nl ? (size_t) (nl - buf) : size;

		args_env = strndup(buf, l);
		conf = nl ? nl + 1 : buf + size;
		conf_len = size - (size_t) (conf - buf);
	}

	{
		_cleanup_free_ char *cargs = args_env ? strdup_printf("CNI_%s", args_env) : NULL;
		char *envp[] = { "CNI_COMMAND=ADD",
				 "CNI_CONTAINERID=fuzz",
				 "CNI_NETNS=/run/netns/fuzz",
				 "CNI_IFNAME=eth0",
				 "CNI_PATH=/opt/cni/bin",
				 cargs,
				 NULL };
		CniArgs a = {};
		CniError err = {};

		if (cni_request_parse(&req, envp, conf, conf_len) < 0) {
			if (req.error.code == 0 || !req.error.msg)
				abort();
		} else if (req.prev_result)
			exercise_result(req.prev_result);
		/* Error JSON for whatever state we are in must always print. */
		j = cni_error_to_json(&req.error, req.version);
		if (!j && req.error.code)
			abort();
		json_decref(j);
		cni_request_done(&req);

		if (args_env) {
			if (cni_args_parse(args_env + 5, &a, &err) < 0 && err.code == 0)
				abort();
			cni_args_done(&a);
			cni_error_clear(&err);
		}

		/* The same request as GC (attachments) and CHECK (version rules). */
		envp[0] = "CNI_COMMAND=GC";
		cni_request_parse(&req, envp, conf, conf_len);
		cni_request_done(&req);
	}

	/* prevResult (or the whole document) as a result of every version. */
	j = json_loadb(conf, conf_len, 0, NULL);
	if (json_is_object(j)) {
		json_t *pr = json_object_get(j, "prevResult") ?: j;

		for (int v = 0; v < _CNI_VERSION_MAX; v++) {
			CniResult *r = NULL;
			CniError err = {};

			if (cni_result_from_json(pr, (CniVersion) v, &r, &err) >= 0) {
				exercise_result(r);
				cni_result_free(r);
			} else if (err.code == 0)
				abort();
			cni_error_clear(&err);
		}
		CniDns d = {};
		if (cni_dns_from_json(json_object_get(j, "dns"), &d) >= 0) {
			json_t *dj = cni_dns_to_json(&d);
			json_decref(dj);
		}
		cni_dns_done(&d);
	}
	json_decref(j);
	return 0;
}
