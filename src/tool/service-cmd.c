/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/service-cmd.h"
#include "tool/weftd-http.h"

static int usage(void) {
	fputs("Usage: weft service explain DEST[:PORT][/TCP|UDP|SCTP] [--from POD|IP] [--node NODE] [--weftd URL]\n"
	      "       DEST: a ClusterIP, externalIP, LoadBalancer IP or node address (IPv6 with a port: [ADDR]:PORT);\n"
	      "       POD: NAMESPACE/NAME; NODE: whose rules (default: the weftd's own node);\n"
	      "       URL: a weftd's listen address (http://127.0.0.1:9876)\n",
	      stderr);
	return 2;
}

/* "&key=<escaped value>" (empty when value is NULL) */
static char *param(CURL *c, const char *key, const char *value) {
	char *e, *s;

	if (!value)
		return strdup("");
	e = curl_easy_escape(c, value, 0);
	s = e ? strdup_printf("&%s=%s", key, e) : NULL;
	curl_free(e);
	return s;
}

int service_cmd_main(int argc, char **argv) {
	const char *url = getenv("WEFT_WEFTD_URL") ?: "http://127.0.0.1:9876", *dest = NULL, *from = NULL, *node = NULL;
	_cleanup_free_ char *full = NULL, *body = NULL, *q_dest = NULL, *q_from = NULL, *q_node = NULL;
	long code = 0;
	CURL *c;
	int r;

	if (argc < 2 || !streq(argv[1], "explain"))
		return usage();
	for (int i = 2; i < argc; i++) {
		if (streq(argv[i], "--weftd") && i + 1 < argc)
			url = argv[++i];
		else if (streq(argv[i], "--from") && i + 1 < argc)
			from = argv[++i];
		else if (streq(argv[i], "--node") && i + 1 < argc)
			node = argv[++i];
		else if (!dest && argv[i][0] != '-')
			dest = argv[i];
		else
			return usage();
	}
	if (!dest)
		return usage();
	c = curl_easy_init();
	if (!c)
		return 3;
	q_dest = param(c, "dest", dest);
	q_from = param(c, "from", from);
	q_node = param(c, "node", node);
	curl_easy_cleanup(c);
	if (!q_dest || !q_from || !q_node)
		return 3;
	/* q_dest starts with '&' */
	full = strdup_printf("%s/debug/service/explain?%s%s%s", url, q_dest + 1, q_from, q_node);
	if (!full)
		return 3;
	r = weftd_http_get("weft service", full, &code, &body);
	if (r != 0)
		return r;
	if (code == 404 && body && startswith(body, "from: ")) {
		fprintf(stderr, "weft service explain: %s", body);
		return 2;
	}
	if (code == 200 || (code == 404 && body && *body)) {
		fputs(body, stdout);
		return code == 200 ? 0 : 1;
	}
	fprintf(stderr, "weft service explain: %s", body && *body ? body : "weftd has no Service agent\n");
	return code == 400 ? 2 : 3;
}
