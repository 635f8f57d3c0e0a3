/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The tool's one way to ask a weftd (its /healthz, /debug/..., /policy/drops, /flows listener). */

/* GET url (5 s timeout) into *ret_body (malloc'ed) and *ret_code: 0, or 3 (unreachable, or out
 * of memory) with "<who>: <url>: <curl's reason>" on stderr. */
int weftd_http_get(const char *who, const char *url, long *ret_code, char **ret_body);
