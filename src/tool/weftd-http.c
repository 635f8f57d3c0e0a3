/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "tool/weftd-http.h"

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
	return fwrite(p, size, n, userdata) * size;
}

int weftd_http_get(const char *who, const char *url, long *ret_code, char **ret_body) {
	_cleanup_free_ char *body = NULL;
	size_t size = 0;
	CURLcode cr;
	CURL *c;
	FILE *f;

	c = curl_easy_init();
	f = open_memstream(&body, &size);
	if (!c || !f) {
		if (f)
			fclose(f);
		curl_easy_cleanup(c);
		return 3;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_code);
	curl_easy_cleanup(c);
	fclose(f);
	if (cr != CURLE_OK) {
		fprintf(stderr, "%s: %s: %s\n", who, url, curl_easy_strerror(cr));
		return 3;
	}
	*ret_body = TAKE_PTR(body);
	return 0;
}
