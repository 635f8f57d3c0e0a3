/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/cni/cni-json.h"
#include "shared/cni/cni-types.h"

void cni_error_clear(CniError *e) {
	if (!e)
		return;
	e->msg = mfree(e->msg);
	e->details = mfree(e->details);
	e->code = 0;
}

int cni_error_set(CniError *e, int r, unsigned code, const char *fmt, ...) {
	va_list ap;
	char *m;

	/* First error wins: the innermost failure has the most precise message, and callers
	 * further up only add a generic one when nothing was said yet. */
	if (!e || e->code != 0)
		return r;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	va_end(ap);
	e->code = code ?: CNI_ERR_INTERNAL;
	free(e->msg);
	e->msg = m;
	return r;
}

int cni_error_set_errno(CniError *e, int r, unsigned code, const char *extack, const char *fmt, ...) {
	_cleanup_free_ char *what = NULL;
	va_list ap;
	int k;

	if (!e || e->code != 0)
		return r;
	va_start(ap, fmt);
	k = vasprintf(&what, fmt, ap);
	va_end(ap);
	if (k < 0)
		what = NULL;
	return cni_error_set(e, r, code, "%s: %s%s%s", what ?: "failed", strerror(-r), isempty(extack) ? "" : ": ",
			     isempty(extack) ? "" : extack);
}

json_t *cni_error_to_json(const CniError *e, CniVersion v) {
	json_t *j;

	/* An error before the config parsed has no version of its own: use the newest. */
	if (v < 0 || v >= _CNI_VERSION_MAX)
		v = CNI_VERSION_LATEST;
	j = json_object();
	if (!j)
		return NULL;
	if (json_object_set_new(j, "cniVersion", json_string(cni_version_to_string(v))) < 0 ||
	    json_object_set_new(j, "code", json_integer(e->code ?: CNI_ERR_INTERNAL)) < 0 ||
	    json_object_set_new(j, "msg", cni_json_string_lossy(e->msg ?: "unknown error")) < 0)
		goto fail;
	if (!isempty(e->details) && json_object_set_new(j, "details", cni_json_string_lossy(e->details)) < 0)
		goto fail;
	return j;
fail:
	json_decref(j);
	return NULL;
}

int cni_error_from_json(json_t *j, CniError *ret) {
	json_t *code, *msg, *details;
	json_int_t c;

	if (!json_is_object(j))
		return -EINVAL;
	code = json_object_get(j, "code");
	msg = json_object_get(j, "msg");
	details = json_object_get(j, "details");
	if (!json_is_integer(code) || (msg && !json_is_string(msg)) || (details && !json_is_string(details)))
		return -EINVAL;
	c = json_integer_value(code);
	if (c <= 0 || c > 0xffff)
		return -EINVAL;

	cni_error_clear(ret);
	ret->code = (unsigned) c;
	ret->msg = strdup(msg ? json_string_value(msg) : "");
	ret->details = details ? strdup(json_string_value(details)) : NULL;
	if (!ret->msg || (details && !ret->details)) {
		cni_error_clear(ret);
		return -ENOMEM;
	}
	return 0;
}
