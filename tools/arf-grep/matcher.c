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

/* Fills l with the needle bytes b[0, len) (fold: per byte, either case
 * matches; NULL: icase says for every letter).  0 or -ENOMEM. */
static int lit_set(struct grep_lit *l, const unsigned char *b, const unsigned char *fold,
		   size_t len, int icase)
{
	l->lower = malloc(len);
	l->fold = malloc(len);
	if (!l->lower || !l->fold)
		return -ENOMEM;
	l->len = len;
	l->rare = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = b[i];
		int alpha = (c | 32) >= 'a' && (c | 32) <= 'z';

		l->fold[i] = (unsigned char)(alpha && (fold ? fold[i] : icase));
		l->lower[i] = l->fold[i] ? (unsigned char)(c | 32) : c;
		if (lit_freq(c) < lit_freq(b[l->rare]))
			l->rare = i;
	}
	return 0;
}

static void lit_free(struct grep_lit *l)
{
	free(l->lower);
	free(l->fold);
	memset(l, 0, sizeof(*l));
}

/* The byte a set stands for: 0 one byte (in *c), 1 a letter in either case
 * (*c lower), -1 anything else. */
static int set_byte(const struct cset *s, unsigned char *c)
{
	int n = 0, first = -1, second = -1;

	for (int b = 0; b < 256; b++)
		if (cset_has(s, (unsigned)b)) {
			if (++n > 2)
				return -1;
			if (first < 0)
				first = b;
			else
				second = b;
		}
	if (n == 1) {
		*c = (unsigned char)first;
		return 0;
	}
	if (n == 2 && first >= 'A' && first <= 'Z' && second == first + 32) {
		*c = (unsigned char)second;
		return 1;
	}
	return -1;
}

/* Appends the factors of the concatenation at node k to v (*n of them). */
static int cat_factors(const struct rx *rx, int k, int *v, int *n, int cap)
{
	if (rx->nodes[k].kind == RX_CAT)
		return cat_factors(rx, rx->nodes[k].a, v, n, cap) ||
		       cat_factors(rx, rx->nodes[k].b, v, n, cap);
	if (*n >= cap)
		return -1;
	v[(*n)++] = k;
	return 0;
}

/*
 * m->must: a run of consecutive one-byte factors (a byte, or a letter in
 * either case) of the pattern's top-level concatenation -- bytes every
 * match holds side by side, so a line without them cannot match.  Fewer
 * than two bytes: none.  0 or -ENOMEM.
 */
static int must_find(struct matcher *m)
{
	const struct rx *rx = &m->rx;
	int v[512], n = 0, best = 0, bestat = 0, bestfreq = 1000, run = 0, freq = 1000;

	if (rx->root < 0 || cat_factors(rx, rx->root, v, &n, 512))
		return 0;
	/* of the runs of two bytes or more, the one whose rarest byte is
	 * rarest (the skip loop looks for that byte), then the longest */
	for (int i = 0; i <= n; i++) {
		unsigned char c;

		if (i < n && rx->nodes[v[i]].kind == RX_SET &&
		    set_byte(&rx->sets[rx->nodes[v[i]].set], &c) >= 0) {
			run++;
			if (lit_freq(c) < freq)
				freq = lit_freq(c);
			continue;
		}
		if (run >= 2 && (freq < bestfreq || (freq == bestfreq && run > best))) {
			best = run;
			bestat = i - run;
			bestfreq = freq;
		}
		run = 0;
		freq = 1000;
	}
	if (best < 2)
		return 0;
	unsigned char b[512], fold[512];

	for (int i = 0; i < best; i++)
		fold[i] = (unsigned char)set_byte(&rx->sets[rx->nodes[v[bestat + i]].set], &b[i]);
	return lit_set(&m->must, b, fold, (size_t)best, 0);
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
			r = lit_set(&m->lit, (const unsigned char *)pats, NULL, len, o->icase);
			if (r)
				goto fail;
			m->lit_ok = 1;
		}
	}
	if (!m->lit_ok && (r = must_find(m)))
		goto fail;
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
	lit_free(&m->lit);
	lit_free(&m->must);
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
