/* SPDX-License-Identifier: Apache-2.0 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "tool/flows-cmd.h"
#include "tool/weftd-http.h"

typedef struct Filter {
	const char *pod;
	const char *verdict;
	bool as_json;
} Filter;

static int usage(void) {
	fputs("Usage: weft flows [--follow] [--pod NAMESPACE/POD] [--verdict allowed|denied] [--json] [--weftd URL]\n"
	      "       URL: a weftd's listen address (http://127.0.0.1:9876)\n",
	      stderr);
	return 2;
}

static const char *str(json_t *o, const char *key) {
	return json_string_value(json_object_get(o, key));
}

static bool matches(json_t *f, const Filter *flt) {
	if (flt->verdict && !streq_ptr(str(f, "verdict"), flt->verdict))
		return false;
	if (flt->pod && !streq_ptr(str(f, "from"), flt->pod) && !streq_ptr(str(f, "to"), flt->pod) &&
	    !streq_ptr(str(f, "endpoint_pod"), flt->pod))
		return false;
	return true;
}

static void print_end(json_t *f, const char *key, const char *addr, const char *port_key) {
	bool v6 = addr && strchr(addr, ':');
	json_t *port = json_object_get(f, port_key);

	if (port)
		printf("%s%s%s:%lld", v6 ? "[" : "", addr ?: "?", v6 ? "]" : "", (long long) json_integer_value(port));
	else
		fputs(addr ?: "?", stdout);
	if (str(f, key))
		printf(" (%s)", str(f, key));
}

/* 12:00:01.123 NEW TCP 10.244.1.5:40112 (a/x) -> 10.96.0.10:80 service a/web -> 10.244.2.7:8080 (a/web-1)
 *   allowed: unpoliced */
static void print_flow(json_t *f) {
	const char *when = str(f, "time") ?: "", *ev = str(f, "event") ?: "?";

	printf("%.12s %-4s %s ", strlen(when) >= 23 ? when + 11 : when,
	       streq(ev, "new")       ? "NEW"
	       : streq(ev, "destroy") ? "END"
	       : streq(ev, "drop")    ? "DROP"
				      : ev,
	       str(f, "proto") ?: "?");
	print_end(f, "from", str(f, "src"), "sport");
	fputs(" -> ", stdout);
	print_end(f, "to", str(f, "dst"), "dport");
	if (str(f, "endpoint")) {
		printf(" service %s -> %s", str(f, "service") ?: "?", str(f, "endpoint"));
		if (str(f, "endpoint_pod"))
			printf(" (%s)", str(f, "endpoint_pod"));
	}
	if (json_object_get(f, "bytes_orig"))
		printf(" bytes %lld/%lld packets %lld/%lld",
		       (long long) json_integer_value(json_object_get(f, "bytes_orig")),
		       (long long) json_integer_value(json_object_get(f, "bytes_reply")),
		       (long long) json_integer_value(json_object_get(f, "packets_orig")),
		       (long long) json_integer_value(json_object_get(f, "packets_reply")));
	if (!streq(ev, "destroy"))
		printf(" %s%s%s", str(f, "verdict") ?: "?", str(f, "why") ? ": " : "", str(f, "why") ?: "");
	putchar('\n');
}

static void print_summary(json_t *s, long long *last_lost) {
	json_t *lost = json_object_get(s, "lost");
	long long k = json_integer_value(json_object_get(lost, "kernel")),
		  r = json_integer_value(json_object_get(lost, "ring")),
		  t = json_integer_value(json_object_get(lost, "rate"));

	if (k + r + t == *last_lost)
		return;
	*last_lost = k + r + t;
	printf("# lost so far: %lld (kernel %lld, ring %lld, rate %lld)\n", k + r + t, k, r, t);
}

static int flows_main(const char *url, bool follow, const Filter *flt) {
	unsigned long long since = 0;
	long long last_lost = 0;

	for (bool first = true;; first = false) {
		_cleanup_free_ char *full = strdup_printf("%s/flows?since=%llu", url, since), *body = NULL;
		long code = 0;
		int r;

		if (!full)
			return 3;
		r = weftd_http_get("weft flows", full, &code, &body);
		if (r != 0)
			return r;
		if (code != 200) {
			fprintf(stderr, "weft flows: %s", body ?: "");
			return code == 404 ? 2 : 3;
		}
		for (char *line = body, *end; line && *line; line = end ? end + 1 : NULL) {
			json_t *f;

			end = strchr(line, '\n');
			if (end)
				*end = 0;
			f = json_loads(line, 0, NULL);
			if (!f)
				continue;
			if (streq_ptr(str(f, "event"), "summary")) {
				unsigned long long oldest =
						(unsigned long long) json_integer_value(json_object_get(f, "first"));

				if (!first && oldest > since + 1)
					fprintf(stderr, "weft flows: %llu records missed (the ring moved on)\n",
						oldest - since - 1);
				if (flt->as_json && !follow)
					puts(line);
				else if (!flt->as_json)
					print_summary(f, &last_lost);
			} else {
				if (json_integer_value(json_object_get(f, "seq")) > (json_int_t) since)
					since = (unsigned long long) json_integer_value(json_object_get(f, "seq"));
				if (matches(f, flt)) {
					if (flt->as_json)
						puts(line);
					else
						print_flow(f);
				}
			}
			json_decref(f);
		}
		fflush(stdout);
		if (!follow)
			return 0;
		usleep(500 * 1000);
	}
}

int flows_cmd_main(int argc, char **argv) {
	const char *url = getenv("WEFT_WEFTD_URL") ?: "http://127.0.0.1:9876";
	Filter flt = {};
	bool follow = false;

	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--weftd") && i + 1 < argc)
			url = argv[++i];
		else if (streq(argv[i], "--follow") || streq(argv[i], "-f"))
			follow = true;
		else if (streq(argv[i], "--json"))
			flt.as_json = true;
		else if (streq(argv[i], "--pod") && i + 1 < argc && strchr(argv[i + 1], '/'))
			flt.pod = argv[++i];
		else if (streq(argv[i], "--verdict") && i + 1 < argc &&
			 (streq(argv[i + 1], "allowed") || streq(argv[i + 1], "denied")))
			flt.verdict = argv[++i];
		else
			return usage();
	}
	return flows_main(url, follow, &flt);
}
