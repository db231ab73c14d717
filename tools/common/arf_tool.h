/* SPDX-License-Identifier: MIT */
/*
 * What the active tools (arf-find, arf-du, arf-sum) share, in one static
 * library (tools/common/): the file names in their messages quoted as GNU
 * tools quote them (quote.c), the cache of connections to ARF servers,
 * one per server, reached by arf:// URL or through an ARF mount (conn.c),
 * and the --stats line of each connection (stats.c).
 *
 * Not installed: the tools link it statically.  Nothing here exits; the
 * only output is what a function says it writes.
 */
#ifndef ARF_TOOL_H
#define ARF_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arf.h"

/* ---- quote.c ---------------------------------------------------------------- */

#define ARF_TOOL_QUOTE_ALWAYS 1u /* quote even a name that needs none (quoteaf) */
#define ARF_TOOL_QUOTE_COLON  2u /* ':' needs quoting too (quotef) */

/* Writes s to f as coreutils quotes a file name in the C locale
 * (gnulib's shell-escape quoting): du's quoteaf (ARF_TOOL_QUOTE_ALWAYS)
 * and the checksum tools' quotef (ARF_TOOL_QUOTE_COLON). */
void arf_tool_quote(FILE *f, const char *s, unsigned flags);
/* Writes s to f as GNU find quotes a file name in a message (gnulib's
 * locale quoting style): 'name' in the C locale, curly quotes in a UTF-8
 * one, with C escapes for control bytes. */
void arf_tool_quote_locale(FILE *f, const char *s);

#endif /* ARF_TOOL_H */
