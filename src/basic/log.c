/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/log.h"
#include "basic/string-util.h"

static int max_level = LOG_WARNING;
static const char *log_prefix;

void log_set_max_level(int level) {
	max_level = level;
}

int log_get_max_level(void) {
	return max_level;
}

void log_set_prefix(const char *prefix) {
	log_prefix = prefix;
}

void log_parse_environment(void) {
	const char *e = getenv("WEFT_LOG_LEVEL");

	if (!e)
		return;
	if (streq(e, "debug"))
		max_level = LOG_DEBUG;
	else if (streq(e, "info"))
		max_level = LOG_INFO;
	else if (streq(e, "notice"))
		max_level = LOG_NOTICE;
	else if (streq(e, "warning"))
		max_level = LOG_WARNING;
	else if (streq(e, "error"))
		max_level = LOG_ERR;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
	static const char *const names[] = {
		[LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "error",
		[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
	};
	int e = error < 0 ? -error : error;
	char buf[2048];
	va_list ap;

	if (level > max_level)
		return -e;

	errno = e;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);

	if (max_level >= LOG_DEBUG)
		fprintf(stderr, "%s[%d] %s: %s (%s:%d)\n", log_prefix ?: program_invocation_short_name, (int) getpid(),
			names[level & 7], buf, file, line);
	else
		fprintf(stderr, "%s: %s: %s\n", log_prefix ?: program_invocation_short_name, names[level & 7], buf);
	errno = e;
	return -e;
}
