/* SPDX-License-Identifier: MIT */
/*
 * The DFA table walker: the DFA of the unanchored pattern (every state
 * reachable from a line start, at most GREP_MAX_DFA_STATES) becomes a table
 * in the program's read-only data -- a 256-byte map from byte to byte
 * class, then one row of u32 per state, one column per class -- and a loop
 * of ten instructions per byte walks it.  A row entry is the byte offset of
 * the next row, or a special value (>= SP_BASE): the line matched, a line
 * ended with or without a match, a NUL byte.  Context assertions, -w, -x
 * and -i are all inside the table already.  Registers and slots as
 * codegen.c says; r8 holds the current row.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"


int cg_dfa_table(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
		 int *nlcls_out, char *err, size_t errlen)
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

int cg_gen_dfa(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
	       char *err, size_t errlen)
{
	struct cg g = { 0 };
	int r, nlcls;

	r = cg_dfa_table(m, o, out, &nlcls, err, errlen);
	if (r)
		return r;

	/* the code */
	int loop = cg_label(&g), special = cg_label(&g), matched = cg_label(&g), skip = cg_label(&g),
	    eol_match = cg_label(&g), eol_nomatch = cg_label(&g), slice_end = cg_label(&g),
	    skip_end = cg_label(&g), nul = cg_label(&g), sel_eol = cg_label(&g), unsel_eol = cg_label(&g),
	    fin = cg_label(&g), fin_sel = cg_label(&g), done = cg_label(&g), consumed = cg_label(&g);

	cg_prologue(&g);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, skip);
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
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_MATCH, matched);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_EOL_MATCH, eol_match);
	cg_jmp(&g, JEQ_K, R8, 0, (int32_t)SP_EOL_NOMATCH, eol_nomatch);
	cg_jmp(&g, JA, 0, 0, 0, nul);

	/* the line matched before its end: find the end */
	cg_here(&g, matched);
	cg_here(&g, skip);
	cg_jmp(&g, JGE_X, R6, R7, 0, skip_end);
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
	cg_jmp(&g, JA, 0, 0, 0, o->invert ? unsel_eol : sel_eol);
	cg_here(&g, eol_nomatch);
	cg_jmp(&g, JA, 0, 0, 0, o->invert ? sel_eol : unsel_eol);
	cg_here(&g, sel_eol);
	cg_put(&g, MOV_X, R1, R6, 0, 0);
	cg_put(&g, ADD_K, R1, 0, 0, -1);
	cg_emit_record(&g, R1, -1, -1);
	cg_here(&g, unsel_eol);
	cg_next_line(&g, loop);

	cg_slice_exits(&g, nul, slice_end, consumed);
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
	cg_line_advance(&g);
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
