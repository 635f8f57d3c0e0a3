/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/policy-cmd.h"

static size_t on_body(char *p, size_t size, size_t n, void *userdata) {
	return fwrite(p, size, n, userdata) * size;
}

static int usage(void) {
	fputs("Usage: weft policy explain FROM TO PORT[/TCP|UDP|SCTP] [--weftd URL]\n"
	      "       FROM, TO: NAMESPACE/POD or IP; URL: a weftd's listen address (http://127.0.0.1:9876)\n",
	      stderr);
	return 2;
}

int policy_cmd_main(int argc, char **argv) {
	const char *url = getenv("WEFT_WEFTD_URL") ?: "http://127.0.0.1:9876";
	_cleanup_free_ char *full = NULL, *body = NULL;
	const char *pos[3];
	size_t n = 0, size = 0;
	char port[16], *proto;
	long code = 0;
	CURLcode cr;
	CURL *c;
	FILE *f;

	if (argc < 2 || !streq(argv[1], "explain"))
		return usage();
	for (int i = 2; i < argc; i++) {
		if (streq(argv[i], "--weftd") && i + 1 < argc)
			url = argv[++i];
		else if (n < 3 && argv[i][0] != '-')
			pos[n++] = argv[i];
		else
			return usage();
	}
	if (n != 3)
		return usage();
	snprintf(port, sizeof(port), "%s", pos[2]);
	proto = strchr(port, '/');
	if (proto)
		*proto++ = 0;
	c = curl_easy_init();
	if (!c)
		return 3;
	{
		char *a = curl_easy_escape(c, pos[0], 0), *b = curl_easy_escape(c, pos[1], 0);

		full = strdup_printf("%s/debug/policy/explain?from=%s&to=%s&port=%s&proto=%s", url, a ?: "", b ?: "",
				     port, proto ?: "TCP");
		curl_free(a);
		curl_free(b);
	}
	f = open_memstream(&body, &size);
	if (!full || !f) {
		curl_easy_cleanup(c);
		return 3;
	}
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	fclose(f);
	if (cr != CURLE_OK) {
		fprintf(stderr, "weft policy explain: %s: %s\n", url, curl_easy_strerror(cr));
		return 3;
	}
	if (code != 200) {
		fprintf(stderr, "weft policy explain: %s", body ?: "");
		return code == 404 && !strstr(body ?: "", "no such") && !strstr(body ?: "", "not ns/pod") ? 3 : 2;
	}
	fputs(body ?: "", stdout);
	return body && strstr(body, "\nALLOW\n") ? 0 : 1;
}
