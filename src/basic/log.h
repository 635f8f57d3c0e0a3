/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Logging for executables. Library code in src/shared does not log (it returns errors with
 * context); the program logs once at the boundary. Everything goes to stderr: a CNI plugin's
 * stdout belongs to the protocol. The level comes from WEFT_LOG_LEVEL (error|warning|info|debug)
 * and defaults to warning for plugins; daemons call log_set_max_level(LOG_INFO).
 */

#include <syslog.h>

#include "basic/macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_prefix(const char *prefix);
void log_parse_environment(void);

/* Writes one line; errno is set to `error` (positive) first so "%m" works. Returns -abs(error). */
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...) log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
/* These return the (negative) error so callers can `return log_error_errno(r, "...: %m");` */
#define log_debug_errno(r, ...) log_full_errno(LOG_DEBUG, (r), __VA_ARGS__)
#define log_info_errno(r, ...) log_full_errno(LOG_INFO, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_full_errno(LOG_WARNING, (r), __VA_ARGS__)
#define log_error_errno(r, ...) log_full_errno(LOG_ERR, (r), __VA_ARGS__)
