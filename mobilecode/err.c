/* SPDX-License-Identifier: MIT */
/*
 * Error messages of the module: every failure that a number cannot explain
 * (verifier, assembler, loader, a faulting run) is written into the
 * caller's buffer here, truncated to fit, never printed.
 */
#include <stdio.h>

#include "mc_int.h"

int mc_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}
