/* SPDX-License-Identifier: MIT */
/*
 * libarf's clock and log sink: the two things every other file of the
 * library uses and that use nothing of it, so they sit at the bottom of
 * the call graph.  The library never prints: a message goes to the sink
 * the embedder set with arf_set_log_func(), or nowhere.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "client_int.h"

static arf_log_func log_fn;
static void *log_ctx;

void arf_set_log_func(arf_log_func fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

void arf_log_msg(int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_fn(log_ctx, level, buf);
}

uint64_t arf_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
