/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cluster objects for cmocka tests, decoded by weft's own decoders from printf-built JSON:
 * test_kube_vdecode(pool, KUBE_KIND_SERVICE, "{\"metadata\":...}", ap). JSON that does not parse,
 * or an object the decoder refuses, fails the test. Include after <cmocka.h>. */

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>

#include "shared/kube/kube-objects.h"

static inline KubeObject *test_kube_vdecode(StringPool *pool, KubeKind kind, const char *fmt, va_list ap) {
	char buf[8192];
	json_error_t jerr;
	DecodeError err = {};
	KubeObject *o = NULL;
	json_t *j;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	j = json_loads(buf, 0, &jerr);
	if (!j)
		fail_msg("bad test JSON: %s: %s", jerr.text, buf);
	if (kube_object_decode(kind, j, pool, &o, &err) < 0)
		fail_msg("refused: %s: %s", err.text, buf);
	json_decref(j);
	return o;
}
