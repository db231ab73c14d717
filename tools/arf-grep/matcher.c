/* SPDX-License-Identifier: MIT */
/*
 * The compiled matcher: pattern text -> syntax tree -> NFA -> two lazy DFAs,
 * one unanchored (does a line match; the hot path) and one anchored (where
 * do matches start and end; only for -o).  The same NFA feeds the code
 * generator, so local and shipped searches agree by construction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

#define LAZY_STATES 10000 /* cache bound of the local DFAs */

/*
 * True when the pattern means its own bytes in syntax: -F, or a BRE or ERE
 * without a character that is special there (GNU grep searches those as
 * fixed strings too).  In the C locale every other byte matches itself.
 */
static int is_literal(const char *p, size_t len, int syntax)
{
	const char *special = syntax == GREP_FIXED ? "" : syntax == GREP_BRE ? "\\.[*^$"
							  : "\\.[*^$+?{}|()";

	for (size_t i = 0; i < len; i++)
		if (p[i] && strchr(special, p[i]))
			return 0;
	return 1;
}

/* How common a byte is in ordinary text (lower is rarer): the literal
 * search looks for the needle's rarest byte. */
static int lit_freq(unsigned char c)
{
	static const char common[] = " etaoinshrdlcumwfgypbvkjxqz\n";
	const char *p;

	if (c >= 'A' && c <= 'Z')
		c += 32;
	p = c ? strchr(common, c) : NULL;
	if (p)
		return 100 - (int)(p - common);
	if (c >= '0' && c <= '9')
		return 40;
	return c >= 32 && c < 127 ? 30 : 10;
}

int matcher_compile(struct matcher *m, const char *pats, size_t len, const struct grep_opts_rx *o,
		    char *err, size_t errlen, void (*warn)(const char *msg))
{
	int r;

	memset(m, 0, sizeof(*m));
	m->o = *o;
	if (!pats) { /* no pattern at all (-f /dev/null): nothing matches */
		m->empty = 1;
		m->rx.root = -1;
		return 0;
	}
	r = rx_parse(&m->rx, pats, len, o, err, errlen, warn);
	if (r)
		return r;
	r = nfa_build(&m->nfa, &m->rx);
	if (r) {
		if (err)
			snprintf(err, errlen, r == -E2BIG ? "Regular expression too big"
							  : "memory exhausted");
		goto fail;
	}
	r = dfa_init(&m->search, &m->nfa, 0, LAZY_STATES);
	if (r)
		goto fail;
	m->pats = pats;
	m->pats_len = len;
	if (len > 0 && !memchr(pats, '\n', len) && is_literal(pats, len, (int)o->syntax)) {
		m->fixed_single = 1;
		m->fixed = (const unsigned char *)pats;
		m->fixed_len = len;
		if (!o->words && !o->lines && !memchr(pats, 0, len)) {
			m->lit_fold = malloc(len);
			m->lit_lower = malloc(len);
			if (!m->lit_fold || !m->lit_lower) {
				r = -ENOMEM;
				goto fail;
			}
			for (size_t i = 0; i < len; i++) {
				unsigned char c = (unsigned char)pats[i];
				int alpha = (c | 32) >= 'a' && (c | 32) <= 'z';

				m->lit_fold[i] = (unsigned char)(o->icase && alpha);
				m->lit_lower[i] = m->lit_fold[i] ? (unsigned char)(c | 32) : c;
				if (lit_freq(c) < lit_freq((unsigned char)pats[m->lit_rare]))
					m->lit_rare = i;
			}
			m->lit_ok = 1;
		}
	}
	return 0;
fail:
	matcher_free(m);
	return r;
}

void matcher_free(struct matcher *m)
{
	if (m->search.st)
		dfa_free(&m->search);
	if (m->find_ready) {
		dfa_free(&m->find);
		nfa_free(&m->find_nfa);
		rx_free(&m->find_rx);
	}
	if (m->raw_ready) {
		dfa_free(&m->raw);
		nfa_free(&m->raw_nfa);
		rx_free(&m->raw_rx);
	}
	nfa_free(&m->nfa);
	rx_free(&m->rx);
	free(m->lit_fold);
	free(m->lit_lower);
	memset(m, 0, sizeof(*m));
}

int matcher_line(struct matcher *m, const unsigned char *p, size_t n)
{
	if (m->empty)
		return 0;
	return dfa_line_matches(&m->search, p, n);
}

static int wordc(const unsigned char *p, size_t n, size_t i)
{
	return i < n && grep_isword(p[i]);
}

/*
 * -w -o exactly as GNU grep 3.8's EGexecute loop: the leftmost-longest raw
 * match, then shorter ones at the same start (re_match on the line cut at
 * match + len - from: the cut is measured from the search start, a quirk
 * that makes some shorter matches invisible), then further on.
 */
static int find_words(struct matcher *m, const unsigned char *p, size_t n, size_t from,
		      size_t *ms, size_t *me)
{
	size_t match, s, e;
	long len;
	int r;

	if (!m->raw_ready) {
		struct grep_opts_rx o = m->o;

		o.words = 0;
		o.glibc = 1;
		r = rx_parse(&m->raw_rx, m->pats, m->pats_len, &o, NULL, 0, NULL);
		if (!r)
			r = nfa_build(&m->raw_nfa, &m->raw_rx);
		if (!r)
			r = dfa_init(&m->raw, &m->raw_nfa, 1, 10000);
		if (r)
			return r;
		m->raw_ready = 1;
	}
	r = dfa_find(&m->raw, p, n, from, &s, &e);
	if (r <= 0)
		return r;
	match = s;
	len = (long)(e - s);
	for (;;) {
		long shorter = 0;

		if (!wordc(p, n, match + (size_t)len) && !(match > 0 && grep_isword(p[match - 1]))) {
			*ms = match;
			*me = match + (size_t)len;
			return 1;
		}
		if (len > 0) {
			len--;
			if (match + (size_t)len >= from)
				shorter = dfa_longest_at(&m->raw, p, match, match + (size_t)len - from);
			else
				shorter = -1;
		}
		if (shorter > 0) {
			len = shorter;
		} else {
			if (match >= n)
				return 0;
			r = dfa_find(&m->raw, p, n, match + 1, &s, &e);
			if (r <= 0)
				return r;
			match = s;
			len = (long)(e - s);
		}
	}
}

int matcher_find(struct matcher *m, const unsigned char *p, size_t n, size_t from, size_t *ms,
		 size_t *me)
{
	if (m->empty)
		return 0;
	if (m->o.words && !m->o.lines)
		return find_words(m, p, n, from, ms, me);
	if (!m->find_ready) {
		/* -o locates matches as glibc's regex does (GNU grep) */
		struct grep_opts_rx o = m->o;
		int r;

		o.glibc = 1;
		r = rx_parse(&m->find_rx, m->pats, m->pats_len, &o, NULL, 0, NULL);
		if (!r)
			r = nfa_build(&m->find_nfa, &m->find_rx);
		if (!r)
			r = dfa_init(&m->find, &m->find_nfa, 1, LAZY_STATES);
		if (r)
			return r;
		m->find_ready = 1;
	}
	return dfa_find(&m->find, p, n, from, ms, me);
}
