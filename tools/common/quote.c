/* SPDX-License-Identifier: MIT */
/*
 * File names in messages, quoted as GNU tools quote them.
 *
 * gnulib's shell_escape and shell_escape_always quoting styles, for the C
 * locale (coreutils: du, the checksum tools): a name that needs no
 * quoting is written as it is (unless ARF_TOOL_QUOTE_ALWAYS); otherwise
 * in single quotes, a single quote as '\'', and a byte that is not
 * printable as $'\n' or $'\ooo' between the quotes.  A name whose only
 * trouble is a single quote goes in double quotes, as gnulib prefers
 * ("a'b").
 *
 * gnulib's locale_quoting_style (GNU find): the name between quotes,
 * control bytes as C escapes.
 */
#include <langinfo.h>
#include <string.h>

#include "arf_tool.h"

static int printable(unsigned char c)
{
	return c >= 0x20 && c < 0x7f;
}

/* May appear unquoted (position i of a name of n bytes). */
static int safe(unsigned char c, size_t i, size_t n, unsigned flags)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	switch (c) {
	case '%': case '+': case ',': case '-': case '.': case '/': case '@': case ']':
	case '_':
		return 1;
	case ':':
		return !(flags & ARF_TOOL_QUOTE_COLON);
	case '{': case '}':
		return n != 1;
	case '#': case '~':
		return i != 0;
	default:
		return 0;
	}
}

/* A byte that is not printable as C writes it: \n, or \ooo. */
static void escape(FILE *f, unsigned char c)
{
	switch (c) {
	case '\a': fputs("\\a", f); break;
	case '\b': fputs("\\b", f); break;
	case '\f': fputs("\\f", f); break;
	case '\n': fputs("\\n", f); break;
	case '\r': fputs("\\r", f); break;
	case '\t': fputs("\\t", f); break;
	case '\v': fputs("\\v", f); break;
	default: fprintf(f, "\\%03o", c); break;
	}
}

/* Fine inside double quotes as in single ones. */
static int dq_ok(unsigned char c)
{
	return printable(c) && !strchr("\"$`\\!", c);
}

void arf_tool_quote(FILE *f, const char *s, unsigned flags)
{
	size_t n = strlen(s), i;
	int need = n == 0, quote = 0, dq = 1, esc = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!safe(c, i, n, flags))
			need = 1;
		if (c == '\'')
			quote = 1;
		else if (!dq_ok(c))
			dq = 0;
	}
	if (!need && !(flags & ARF_TOOL_QUOTE_ALWAYS)) {
		fputs(s, f);
		return;
	}
	if (quote && dq) {
		fprintf(f, "\"%s\"", s);
		return;
	}
	fputc('\'', f);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (printable(c)) {
			if (esc) {
				fputs("''", f);
				esc = 0;
			}
			if (c == '\'')
				fputs("'\\''", f);
			else
				fputc(c, f);
			continue;
		}
		if (!esc) {
			fputs("'$'", f);
			esc = 1;
		}
		escape(f, c);
	}
	fputc('\'', f);
}

void arf_tool_quote_locale(FILE *f, const char *s)
{
	int utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");

	fputs(utf8 ? "\xe2\x80\x98" : "'", f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '\\')
			fputs("\\\\", f);
		else if (*c == '\'')
			fputs(utf8 ? "'" : "\\'", f);
		else if (*c < 0x20 || *c == 0x7f || (*c >= 0x80 && !utf8))
			escape(f, *c);
		else
			fputc(*c, f);
	}
	fputs(utf8 ? "\xe2\x80\x99" : "'", f);
}
