/* SPDX-License-Identifier: MIT */
/* arfd logging: see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

int arfd_log_level = ARFD_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int arfd_log_parse_level(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

void arfd_log_write(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	struct timespec ts;
	struct tm tm;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ arfd[%s]: %s\n", tm.tm_year + 1900,
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		level_names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}
