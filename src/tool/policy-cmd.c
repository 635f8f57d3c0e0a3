/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/policy-cmd.h"
#include "tool/weftd-http.h"

static int usage(void) {
	fputs("Usage: weft policy explain FROM TO PORT[/TCP|UDP|SCTP] [--weftd URL]\n"
	      "       weft policy drops [--follow] [--json] [--weftd URL]\n"
	      "       FROM, TO: NAMESPACE/POD or IP; URL: a weftd's listen address (http://127.0.0.1:9876)\n",
	      stderr);
	return 2;
}

/* One drop, as weftd's JSON line has it:
 * 12:00:01.123 DROP ingress 10.244.1.5:40112 -> 10.244.2.7:80/TCP (x/b -> y/a) isolated by y/deny-all */
static void print_drop(json_t *d) {
	const char *when = json_string_value(json_object_get(d, "time")) ?: "";
	const char *src = json_string_value(json_object_get(d, "src")) ?: "?";
	const char *dst = json_string_value(json_object_get(d, "dst")) ?: "?";
	bool v6 = strchr(src, ':'), ports = json_object_get(d, "dport");
	json_t *pols = json_object_get(d, "policies"), *v;
	size_t i;

	/* "2026-11-26T12:00:01.123Z": the time of day, UTC */
	printf("%.12s DROP %s ", strlen(when) >= 23 ? when + 11 : when,
	       json_string_value(json_object_get(d, "direction")) ?: "?");
	if (ports)
		printf("%s%s%s:%lld -> %s%s%s:%lld/", v6 ? "[" : "", src, v6 ? "]" : "",
		       (long long) json_integer_value(json_object_get(d, "sport")), v6 ? "[" : "", dst, v6 ? "]" : "",
		       (long long) json_integer_value(json_object_get(d, "dport")));
	else
		printf("%s -> %s/", src, dst);
	printf("%s (%s -> %s) isolated by", json_string_value(json_object_get(d, "proto")) ?: "?",
	       json_string_value(json_object_get(d, "from")) ?: "?",
	       json_string_value(json_object_get(d, "to")) ?: "?");
	if (json_array_size(pols) == 0)
		fputs(" ?", stdout);
	json_array_foreach(pols, i, v)
		printf("%s%s", i ? ", " : " ", json_string_value(v) ?: "?");
	putchar('\n');
}

/* weft policy drops [--follow] [--json]: the drops weftd keeps (GET /policy/drops), then with
 * --follow every new one (polled every 0.5 s with ?since=). */
static int drops_main(const char *url, bool follow, bool as_json) {
	unsigned long long since = 0;

	for (;;) {
		_cleanup_free_ char *full = strdup_printf("%s/policy/drops?since=%llu", url, since), *body = NULL;
		long code = 0;
		int r;

		if (!full)
			return 3;
		r = weftd_http_get("weft policy", full, &code, &body);
		if (r != 0)
			return r;
		if (code != 200) {
			fprintf(stderr, "weft policy drops: %s", body ?: "");
			return code == 404 ? 2 : 3;
		}
		for (char *line = body, *end; line && *line; line = end ? end + 1 : NULL) {
			json_t *d;

			end = strchr(line, '\n');
			if (end)
				*end = 0;
			d = json_loads(line, 0, NULL);
			if (!d)
				continue;
			if (json_integer_value(json_object_get(d, "seq")) > (json_int_t) since)
				since = (unsigned long long) json_integer_value(json_object_get(d, "seq"));
			if (as_json)
				puts(line);
			else
				print_drop(d);
			json_decref(d);
		}
		fflush(stdout);
		if (!follow)
			return 0;
		usleep(500 * 1000);
	}
}

int policy_cmd_main(int argc, char **argv) {
	const char *url = getenv("WEFT_WEFTD_URL") ?: "http://127.0.0.1:9876";
	_cleanup_free_ char *full = NULL, *body = NULL;
	const char *pos[3];
	size_t n = 0;
	char port[16], *proto;
	long code = 0;
	CURL *c;
	int r;

	if (argc >= 2 && streq(argv[1], "drops")) {
		bool follow = false, as_json = false;

		for (int i = 2; i < argc; i++) {
			if (streq(argv[i], "--weftd") && i + 1 < argc)
				url = argv[++i];
			else if (streq(argv[i], "--follow") || streq(argv[i], "-f"))
				follow = true;
			else if (streq(argv[i], "--json"))
				as_json = true;
			else
				return usage();
		}
		return drops_main(url, follow, as_json);
	}
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
	/* FROM and TO may be IPv6 addresses or carry characters a query string must escape */
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
	curl_easy_cleanup(c);
	if (!full)
		return 3;
	r = weftd_http_get("weft policy", full, &code, &body);
	if (r != 0)
		return r;
	if (code != 200) {
		fprintf(stderr, "weft policy explain: %s", body ?: "");
		return code == 404 && !strstr(body ?: "", "no such") && !strstr(body ?: "", "not ns/pod") ? 3 : 2;
	}
	fputs(body ?: "", stdout);
	return body && strstr(body, "\nALLOW\n") ? 0 : 1;
}
