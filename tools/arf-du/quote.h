/* SPDX-License-Identifier: MIT */
/*
 * File names in messages as coreutils quotes them in the C locale
 * (gnulib's shell-escape quoting): du's quoteaf ('always') and the
 * checksum tools' quotef (only when needed, ':' included).  Shared by
 * arf-du and arf-sum.
 */
#ifndef ARF_TOOL_QUOTE_H
#define ARF_TOOL_QUOTE_H

#include <stdio.h>

#define QUOTE_ALWAYS 1u /* quote even a name that needs none (quoteaf) */
#define QUOTE_COLON  2u /* ':' needs quoting too (quotef) */

/* Writes s quoted to f. */
void tool_quote(FILE *f, const char *s, unsigned flags);

#endif
