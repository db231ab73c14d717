/* SPDX-License-Identifier: MIT */
/*
 * The DFA table walker: the DFA of the unanchored pattern (every state
 * reachable from a line start, at most GREP_MAX_DFA_STATES) becomes a table
 * in the program's read-only data -- a 256-byte map from byte to byte
 * class, then one row of u32 per state, one column per class -- and a loop
 * of ten instructions per byte walks it.  A row entry is the byte offset of
 * the next row, or a special value (>= SP_BASE): the line matched, a line
 * ended with or without a match, a NUL byte.  Context assertions, -w, -x
 * and -i are all inside the table already.  Where the walk is back in its
 * first row, the start-state skip (start_set()) runs ahead a word at a
 * time to the next byte that can leave it.  Registers and slots as
 * codegen.c says; r8 holds the current row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"


int cg_dfa_table(struct matcher *m, const struct grep_gen_opts *o, int start_sp,
		 struct grep_prog *out, int *nlcls_out, char *err, size_t errlen)
{
	struct dfa d;
	int r, ncls = 0, nlcls;
	int cls[256];
	uint32_t *col = NULL, *tab = NULL;

	r = dfa_init(&d, &m->nfa, 0, GREP_MAX_DFA_STATES);
	if (r)
		return r;
	if (m->empty || m->nfa.start < 0) {
		/* nothing matches: a one-state DFA that never accepts */
	}
	r = m->empty ? 0 : dfa_build_all(&d);
	if (r == -E2BIG) {
		snprintf(err, errlen,
			 "pattern needs more than %d DFA states: too complex for a shipped program",
			 GREP_MAX_DFA_STATES);
		goto out;
	}
	if (r)
		goto out;
	int ns = m->empty ? 1 : d.n;

	/* entry per (state, byte) before class compression (state ids) */
	col = malloc((size_t)ns * 256 * sizeof(uint32_t));
	if (!col) {
		r = -ENOMEM;
		goto out;
	}
	for (int s = 0; s < ns; s++) {
		for (int c = 0; c < 256; c++) {
			uint32_t v;
			int nul_eol = c == 0 && o->nul_mode == GREP_NUL_EOL;

			if (m->empty) {
				v = (c == '\n' || nul_eol) ? SP_EOL_NOMATCH : 0;
			} else if (c == '\n' || nul_eol) {
				v = (d.st[s].acc & (1 << CTX_EDGE)) ? SP_EOL_MATCH : SP_EOL_NOMATCH;
			} else if (c == 0 && o->nul_mode == GREP_NUL_STOP) {
				v = SP_NUL;
			} else if (d.st[s].acc & (1 << (d.nfa->uses_next ? ctx_of((unsigned char)c) : 0))) {
				v = SP_MATCH;
			} else {
				v = (uint32_t)d.st[s].next[c];
			}
			if (start_sp && v == 0)
				v = SP_START;
			col[(size_t)c * ns + s] = v;
		}
	}
	/* byte classes: bytes whose columns are equal */
	for (int c = 0; c < 256; c++) {
		cls[c] = -1;
		for (int e = 0; e < c; e++)
			if (!memcmp(&col[(size_t)c * ns], &col[(size_t)e * ns], (size_t)ns * 4)) {
				cls[c] = cls[e];
				break;
			}
		if (cls[c] < 0)
			cls[c] = ncls++;
	}
	nlcls = cls['\n'];
	tab = calloc((size_t)ns * (size_t)ncls, sizeof(uint32_t));
	if (!tab) {
		r = -ENOMEM;
		goto out;
	}
	for (int c = 0; c < 256; c++)
		for (int s = 0; s < ns; s++) {
			uint32_t v = col[(size_t)c * ns + s];

			tab[(size_t)s * ncls + cls[c]] = v >= SP_BASE ? v : v * (uint32_t)ncls * 4;
		}
	out->rodata_len = 256 + (size_t)ns * ncls * 4;
	out->rodata = malloc(out->rodata_len);
	if (!out->rodata) {
		r = -ENOMEM;
		goto out;
	}
	for (int c = 0; c < 256; c++)
		out->rodata[c] = (uint8_t)cls[c];
	memcpy(out->rodata + 256, tab, (size_t)ns * ncls * 4);
	out->nstates = ns;
	out->kind = 0;
	*nlcls_out = nlcls;
out:
	if (r) {
		free(out->rodata);
		out->rodata = NULL;
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
	}
	free(col);
	free(tab);
	dfa_free(&d);
	return r;
}

/* The entry of the row at byte offset row for byte c; SP_START as 0. */
static uint32_t entry(const struct grep_prog *p, uint32_t row, int c)
{
	uint32_t e;

	memcpy(&e, p->rodata + 256 + row + 4 * p->rodata[c], 4);
	return e == SP_START ? 0 : e;
}

/* The test for the bytes in set[] (a byte, or a letter in either case):
 * 0, or -1 when they are more. */
static int one_test(const uint8_t set[256], uint8_t *byte, uint8_t *fold)
{
	int n = 0, c0 = -1;

	for (int c = 0; c < 256; c++)
		if (set[c] && n++ == 0)
			c0 = c;
	if (n == 1) {
		*byte = (uint8_t)c0;
		*fold = 0;
		return 0;
	}
	if (n == 2 && c0 >= 'A' && c0 <= 'Z' && set[c0 | 32]) {
		*byte = (uint8_t)(c0 | 32);
		*fold = 1;
		return 0;
	}
	return -1;
}

/*
 * A pair's third byte: after c1 (from the first row to row r1) and a c2 of
 * the pair's (set c2[]), the walk is in a row a where c2 alone leads to a
 * row b; a c3 after them that leads from a where it leads from b changes
 * nothing either.  0 with the test for the c3 that do not (a byte, or a
 * letter in either case), or -1 (a or b special, or more bytes).
 */
static int third_test(const struct grep_prog *p, uint32_t r1, const uint8_t c2[256],
		      uint8_t *byte, uint8_t *fold)
{
	uint8_t c3[256] = { 0 };

	for (int d = 0; d < 256; d++) {
		uint32_t a = entry(p, r1, d), b = entry(p, 0, d);

		if (!c2[d])
			continue;
		if (a >= SP_BASE || b >= SP_BASE)
			return -1;
		for (int c = 0; c < 256; c++)
			c3[c] |= entry(p, a, c) != entry(p, b, c);
	}
	return one_test(c3, byte, fold);
}

/*
 * The start-state skip's tests (into *s): in the first row (the state at a
 * line start, and wherever the table walker's entry is SP_START), a byte
 * c1 whose entry is SP_START changes nothing, and neither does one whose
 * entry is a row r1 where the byte after it, c2, leads from r1 where it
 * leads from the first row: the walk may go on at c2 as if c1 was not
 * there.  So the skip stops only where c1 leaves the first row for
 * something special (a match, a line end, a NUL) or is followed by a c2 of
 * the few (a test per c1, a pair when they are one byte or a letter in
 * either case; where it stopped at a pair, a third byte may still say
 * the same, see third_checks()).  Under lazy (the newline leaves the first
 * row for "a line ended without a match", no -v) the newline is not looked
 * for: the lines the skip ran past are counted where it stops.  0, or -1
 * when more tests would be needed than the loop has (the table then has 0
 * for SP_START, and there is no skip).
 */
static int start_set(struct grep_prog *p, const struct grep_gen_opts *o, int *lazy,
		     struct scan_set *s)
{
	struct scan_test x[256];
	uint8_t c2[256];
	int nx = 0;

	*lazy = !o->invert && entry(p, 0, '\n') == SP_EOL_NOMATCH;
	for (int c = 0; c < 256; c++) {
		uint32_t e = entry(p, 0, c);
		int n = 0;

		if (e == 0 || (c == '\n' && *lazy))
			continue;
		x[nx] = (struct scan_test){ .byte = (uint8_t)c };
		if (e < SP_BASE) {
			for (int d = 0; d < 256; d++)
				n += c2[d] = entry(p, e, d) != entry(p, 0, d);
			if (!n)
				continue;
			x[nx].pair = one_test(c2, &x[nx].byte2, &x[nx].fold2) == 0;
		}
		nx++;
	}
	/* a letter in either case followed by the same: one folded test */
	for (int i = 0; i < nx; i++)
		for (int j = 0; j < nx; j++) {
			struct scan_test a = x[i], b = x[j];

			a.byte |= 32;
			b.byte |= 32;
			if (x[i].byte >= 'A' && x[i].byte <= 'Z' && x[j].byte == (x[i].byte | 32) &&
			    !memcmp(&a, &b, sizeof(a)))
				x[i].fold = x[j].fold = 1, x[i].byte = x[j].byte = b.byte;
		}
	for (int i = 0; i < nx; i++)
		if (cg_scan_add(s, x[i])) {
			for (size_t k = 256; k + 4 <= p->rodata_len; k += 4)
				if (!memcmp(p->rodata + k, &(uint32_t){ SP_START }, 4))
					memset(p->rodata + k, 0, 4);
			return -1;
		}
	return 0;
}

/* The third byte of test t's pair (third_test()), for c1 in either case
 * when it folds: 0, or -1 when there is none (or the cases differ). */
static int third_of(const struct grep_prog *p, const struct scan_test *t, uint8_t *b3,
		    uint8_t *f3)
{
	uint8_t c2[256];

	for (int k = 0; k <= t->fold; k++) {
		uint32_t e = entry(p, 0, k ? t->byte ^ 32 : t->byte);
		uint8_t b, f;

		if (e == 0 || e >= SP_BASE)
			return -1;
		for (int d = 0; d < 256; d++)
			c2[d] = entry(p, e, d) != entry(p, 0, d);
		if (third_test(p, e, c2, &b, &f) || (k && (b != *b3 || f != *f3)))
			return -1;
		*b3 = b;
		*f3 = f;
	}
	return 0;
}

/* s with the third byte of each pair that has one the loop can test
 * (not in either case) into *s3: 0, or -1 when no pair has one.  The loop
 * tests them only in a word where a test of s holds (cg_scan_set()):
 * tested in every word, a third byte costs each of them (xyzzy|needle,
 * whose pairs never occur in grepbench's text, a quarter slower), while
 * a pair that is common ("fo" of "foxtrot" for foo|bar) no longer stops
 * the loop. */
static int triples(const struct grep_prog *p, const struct scan_set *s, struct scan_set *s3)
{
	int n = 0;

	*s3 = *s;
	for (int i = 0; i < s3->n; i++) {
		struct scan_test *t = &s3->t[i];
		uint8_t b3, f3;

		if (t->pair && !t->fold2 && !third_of(p, t, &b3, &f3) && !f3) {
			t->triple = 1;
			t->byte3 = b3;
			n++;
		}
	}
	return n ? 0 : -1;
}

/* reg == c (either case with fold), else on to l.  Clobbers r1. */
static void byte_is(struct cg *g, int reg, uint8_t c, int fold, int l)
{
	if (fold) {
		cg_put(g, MOV_X, R1, reg, 0, 0);
		cg_put(g, OR_K, R1, 0, 0, 0x20);
		reg = R1;
	}
	cg_jmp(g, JNE_K, reg, 0, c, l);
}

/*
 * Where the skip stopped at a pair whose third byte (third_of()) is not
 * there, the place changes nothing after all: on past it (to skip) without
 * walking the table; else on.  The skip's loop has looked at the third
 * bytes it can test already (triples()); this is for the rest, and for the
 * last bytes of a slice.  Clobbers r0-r2.
 */
static void third_checks(struct cg *g, const struct grep_prog *p, const struct scan_set *s,
			 int skip)
{
	int walk = cg_label(g), n = 0;

	for (int i = 0; i < s->n; i++) {
		const struct scan_test *t = &s->t[i];
		uint8_t b3, f3;

		if (!t->pair || third_of(p, t, &b3, &f3))
			continue;
		int next = cg_label(g);

		if (!n++) { /* the three bytes inside the slice */
			cg_put(g, MOV_X, R1, R6, 0, 0);
			cg_put(g, ADD_K, R1, 0, 0, 2);
			cg_jmp(g, JGE_X, R1, R7, 0, walk);
			cg_put(g, LDXB, R0, R6, 0, 0);
		}
		byte_is(g, R0, t->byte, t->fold, next);
		cg_put(g, LDXB, R2, R6, 1, 0);
		byte_is(g, R2, t->byte2, t->fold2, next);
		cg_put(g, LDXB, R2, R6, 2, 0);
		if (f3)
			cg_put(g, OR_K, R2, 0, 0, 0x20);
		cg_jmp(g, JEQ_K, R2, 0, b3, walk);
		cg_put(g, ADD_K, R6, 0, 0, 1);
		cg_jmp(g, JA, 0, 0, 0, skip);
		cg_here(g, next);
	}
	cg_here(g, walk);
}

/* What a byte does in a row of a line already matched: ends it, stops
 * the scan (a NUL under GREP_NUL_STOP), or nothing (SP_MATCH). */
static uint32_t matched_entry(const struct grep_gen_opts *o, int c)
{
	if (c == '\n' || (c == 0 && o->nul_mode == GREP_NUL_EOL))
		return SP_EOL_MATCH;
	if (c == 0 && o->nul_mode == GREP_NUL_STOP)
		return SP_NUL;
	return SP_MATCH;
}

/* Whether the first row's entry e decides the line: a match, or a row
 * where every byte goes as in a matched line (-v ' ': after the blank,
 * only the line's end is left to find). */
static int decided(const struct grep_prog *p, const struct grep_gen_opts *o, uint32_t e)
{
	if (e == SP_MATCH)
		return 1;
	if (e == 0 || e >= SP_BASE)
		return 0;
	for (int c = 0; c < 256; c++)
		if (entry(p, e, c) != matched_entry(o, c))
			return 0;
	return 1;
}

/* Where the skip stopped at a byte of its own (not a pair's) that decides
 * the line, the line matched: straight on to matched with the byte
 * consumed, to look for the line's end only.  Clobbers r0 and r1. */
static void direct_match(struct cg *g, const struct grep_prog *p, const struct grep_gen_opts *o,
			 const struct scan_set *s, int matched)
{
	int hit = cg_label(g), n = 0;

	for (int i = 0; i < s->n; i++) {
		const struct scan_test *t = &s->t[i];

		if (t->pair || !decided(p, o, entry(p, 0, t->byte)) ||
		    (t->fold && !decided(p, o, entry(p, 0, t->byte ^ 32))))
			continue;
		if (!n++)
			cg_put(g, LDXB, R0, R6, 0, 0);
		if (t->fold) {
			cg_put(g, MOV_X, R1, R0, 0, 0);
			cg_put(g, OR_K, R1, 0, 0, 0x20);
			cg_jmp(g, JEQ_K, R1, 0, t->byte, hit);
		} else {
			cg_jmp(g, JEQ_K, R0, 0, t->byte, hit);
		}
	}
	if (!n)
		return;
	int miss = cg_label(g);

	cg_jmp(g, JA, 0, 0, 0, miss);
	cg_here(g, hit);
	cg_put(g, ADD_K, R6, 0, 0, 1);
	cg_jmp(g, JA, 0, 0, 0, matched);
	cg_here(g, miss);
}

/* Under lazy, cg_lazy_lines() for the line around r6 + adj (r6 as it was
 * after): the shared copy at blk, which comes back to back (call k). */
static void lazy_call(struct cg *g, int lazy, int k, int adj, int back, int blk)
{
	if (!lazy) {
		cg_here(g, back);
		return;
	}
	if (adj)
		cg_put(g, ADD_K, R6, 0, 0, adj);
	cg_put(g, STDW, R10, 0, SLOT_LAZYRET, k);
	cg_jmp(g, JA, 0, 0, 0, blk);
	cg_here(g, back);
	if (adj)
		cg_put(g, ADD_K, R6, 0, 0, -adj);
}

int cg_gen_dfa(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
	       char *err, size_t errlen)
{
	struct cg g = { 0 };
	struct scan_set st = { 0 }, st3;
	int r, nlcls, lazy, skip_ok, count, has3;

	r = cg_dfa_table(m, o, 1, out, &nlcls, err, errlen);
	if (r)
		return r;
	skip_ok = start_set(out, o, &lazy, &st) == 0;
	lazy = lazy && skip_ok;
	has3 = skip_ok && triples(out, &st, &st3) == 0;
	count = lazy && o->lineno; /* the skip counts the newlines it passes in r4 */
	out->skip_tests = skip_ok ? st.n : -1;

	/* the code */
	int loop = cg_label(&g), special = cg_label(&g), matched = cg_label(&g), skip = cg_label(&g),
	    eol_match = cg_label(&g), eol_nomatch = cg_label(&g), slice_end = cg_label(&g),
	    skip_end = cg_label(&g), nul = cg_label(&g), sel_eol = cg_label(&g), unsel_eol = cg_label(&g),
	    fin = cg_label(&g), fin_sel = cg_label(&g), done = cg_label(&g), consumed = cg_label(&g),
	    at_end = cg_label(&g), to_start = cg_label(&g), start = cg_label(&g), cand = cg_label(&g),
	    advanced = cg_label(&g), exit_nul = cg_label(&g), exit_slice = cg_label(&g),
	    lazy_blk = cg_label(&g), ret[4];

	for (int k = 0; k < 4; k++)
		ret[k] = cg_label(&g);

	cg_prologue(&g);
	if (lazy)
		cg_put(&g, STXDW, R10, R6, SLOT_SKIPFROM, 0);
	if (count)
		cg_put(&g, MOV_K, R4, 0, 0, 0);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, skip);
	if (skip_ok)
		cg_jmp(&g, JEQ_K, R8, 0, 0, start);
	cg_here(&g, loop);
	cg_jmp(&g, JGE_X, R6, R7, 0, slice_end);
	cg_put(&g, LDXB, R0, R6, 0, 0);
	cg_put(&g, ADD_K, R6, 0, 0, 1);
	cg_put(&g, ADD_X, R0, R5, 0, 0);
	cg_put(&g, LDXB, R0, R0, 0, 0);
	cg_put(&g, LSH_K, R0, 0, 0, 2);
	cg_put(&g, ADD_X, R0, R8, 0, 0);
	cg_put(&g, ADD_X, R0, R5, 0, 0);
	cg_put(&g, LDXW, R8, R0, 256, 0);
	cg_jmp(&g, JLT_K, R8, 0, (int32_t)SP_BASE, loop);
	cg_here(&g, special);
	if (skip_ok)
		cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_START, to_start);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_MATCH, matched);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_EOL_MATCH, eol_match);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_EOL_NOMATCH, eol_nomatch);
	cg_jmp(&g, JA, 0, 0, 0, nul);

	/* the line matched before its end: find the end */
	cg_here(&g, matched);
	cg_here(&g, skip);
	cg_line_skip(&g, o->nul_mode, at_end, skip_end);
	cg_here(&g, at_end);
	cg_put(&g, LDXB, R0, R6, 0, 0);
	cg_put(&g, ADD_K, R6, 0, 0, 1);
	cg_jmp(&g, JEQ_K, R0, 0, '\n', eol_match);
	if (o->nul_mode == GREP_NUL_EOL)
		cg_jmp(&g, JEQ_K, R0, 0, 0, eol_match);
	if (o->nul_mode == GREP_NUL_STOP)
		cg_jmp(&g, JEQ_K, R0, 0, 0, nul);
	cg_jmp(&g, JA, 0, 0, 0, skip);
	cg_here(&g, skip_end);
	cg_put(&g, MOV_K, R8, 0, 0, (int32_t)SP_PENDING);
	cg_jmp(&g, JA, 0, 0, 0, slice_end);

	/* a line ended at r6 - 1 */
	cg_here(&g, eol_match);
	lazy_call(&g, lazy, 0, -1, ret[0], lazy_blk);
	cg_jmp(&g, JA, 0, 0, 0, o->invert ? unsel_eol : sel_eol);
	cg_here(&g, eol_nomatch);
	lazy_call(&g, lazy, 1, -1, ret[1], lazy_blk);
	cg_jmp(&g, JA, 0, 0, 0, o->invert ? sel_eol : unsel_eol);
	cg_here(&g, sel_eol);
	cg_put(&g, MOV_X, R1, R6, 0, 0);
	cg_put(&g, ADD_K, R1, 0, 0, -1);
	cg_emit_record(&g, R1, -1, -1);
	cg_next_line(&g, skip_ok ? advanced : loop, o->lineno);
	/* no record, so no stop to look at */
	cg_here(&g, unsel_eol);
	cg_line_advance(&g, o->lineno);
	cg_jmp(&g, JA, 0, 0, 0, skip_ok ? advanced : loop);

	if (skip_ok) {
		/* in the first row: on to the next place that leaves it, the
		 * table walked from there (the context's line is behind under
		 * lazy, until cg_lazy_lines() brings it up) */
		cg_here(&g, to_start);
		cg_put(&g, MOV_K, R8, 0, 0, 0);
		cg_jmp(&g, JA, 0, 0, 0, start);
		cg_here(&g, advanced);
		if (lazy)
			cg_put(&g, STXDW, R10, R6, SLOT_SKIPFROM, 0);
		if (count)
			cg_put(&g, MOV_K, R4, 0, 0, 0);
		cg_here(&g, start);
		cg_scan_set(&g, &st, has3 ? &st3 : NULL, count, cand, slice_end);
		cg_here(&g, cand);
		third_checks(&g, out, &st, start);
		direct_match(&g, out, o, &st, matched);
		cg_jmp(&g, JA, 0, 0, 0, loop);
	}
	/* every way out saves the context: the line brought up first */
	cg_here(&g, nul);
	lazy_call(&g, lazy, 2, 0, ret[2], lazy_blk);
	cg_jmp(&g, JA, 0, 0, 0, exit_nul);
	cg_here(&g, slice_end);
	lazy_call(&g, lazy, 3, 0, ret[3], lazy_blk);
	cg_jmp(&g, JA, 0, 0, 0, exit_slice);
	if (lazy) { /* one cg_lazy_lines(), back to where it was called */
		cg_here(&g, lazy_blk);
		cg_lazy_lines(&g, o->lineno);
		cg_put(&g, LDXDW, R0, R10, SLOT_LAZYRET, 0);
		for (int k = 0; k < 3; k++)
			cg_jmp(&g, JEQ_K, R0, 0, k, ret[k]);
		cg_jmp(&g, JA, 0, 0, 0, ret[3]);
	}
	cg_slice_exits(&g, exit_nul, exit_slice, consumed);
	cg_ldctx(&g, R1, CTX(flags));
	cg_put(&g, AND_K, R1, 0, 0, GREP_CTX_EOF);
	cg_jmp(&g, JEQ_K, R1, 0, 0, done);
	/* the file ends: an unterminated last line ends here too */
	cg_put(&g, MOV_X, R1, R6, 0, 0);
	cg_put(&g, LDXDW, R2, R10, SLOT_DELTA, 0);
	cg_put(&g, ADD_X, R1, R2, 0, 0);
	cg_ldctx(&g, R2, CTX(line_start));
	cg_jmp(&g, JEQ_X, R1, R2, 0, done);
	if (!o->invert)
		cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, fin_sel);
	else
		cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, fin);
	cg_put(&g, MOV_K, R0, 0, 0, nlcls * 4);
	cg_put(&g, ADD_X, R0, R8, 0, 0);
	cg_put(&g, ADD_X, R0, R5, 0, 0);
	cg_put(&g, LDXW, R0, R0, 256, 0);
	cg_jmp(&g, JEQ_K, R0, 0, (int32_t)(o->invert ? SP_EOL_NOMATCH : SP_EOL_MATCH), fin_sel);
	cg_jmp(&g, JA, 0, 0, 0, fin);
	cg_here(&g, fin_sel);
	cg_emit_record(&g, R6, -1, -1);
	cg_here(&g, fin);
	cg_line_advance(&g, o->lineno);
	cg_here(&g, done);
	cg_return_done(&g);

	r = cg_resolve(&g);
	if (r) {
		snprintf(err, errlen, "program generation failed (%s)",
			 r == -E2BIG ? "program too large" : "out of memory");
		goto out;
	}
	out->insns = g.v;
	out->n = g.n;
	g.v = NULL;
out:
	if (r) {
		free(out->rodata);
		out->rodata = NULL;
	}
	cg_free(&g);
	return r;
}
