/* SPDX-License-Identifier: MIT */
/* arfd logging: see log.h. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
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

static void log_line(int level, const char *msg)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ arfd[%s]: %s\n", tm.tm_year + 1900,
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		level_names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

void arfd_log_write(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line(level, msg);
}

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static double limit_tokens = ARFD_LOG_LIMIT_BURST;
static uint64_t limit_at_ms, limit_dropped;

void arfd_log_write_limited(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	struct timespec ts;
	uint64_t dropped = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	pthread_mutex_lock(&limit_lock);
	if (limit_at_ms)
		limit_tokens += (double)(now - limit_at_ms) * ARFD_LOG_LIMIT_RATE / 1000.0;
	if (limit_tokens > ARFD_LOG_LIMIT_BURST)
		limit_tokens = ARFD_LOG_LIMIT_BURST;
	limit_at_ms = now;
	if (limit_tokens < 1.0) {
		limit_dropped++;
		pthread_mutex_unlock(&limit_lock);
		return;
	}
	limit_tokens -= 1.0;
	dropped = limit_dropped;
	limit_dropped = 0;
	pthread_mutex_unlock(&limit_lock);
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (dropped && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, " (%llu such lines dropped before this one)",
			 (unsigned long long)dropped);
	log_line(level, msg);
}
