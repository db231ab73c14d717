/* SPDX-License-Identifier: MIT */
/*
 * The fixed-string skip loop, for one string with nothing special in it (as
 * -F or a literal BRE/ERE; no -w/-x/-v): the loop looks for the needle's
 * rarest byte only (matcher.c chose it; a letter under -i in either case),
 * eight bytes at a time (a word's bytes equal to it, or NUL, found with the
 * carry-free "has a zero byte" test; the word OR 0x20.. when folding), then
 * byte by byte within a word that has one; a hit is verified by
 * straight-line compares, and only then are the line's ends searched.  Its
 * saved state is the position alone.
 *
 * The same loop serves a regex with required bytes (matcher.c's must: bytes
 * every match holds side by side): a line holding them is walked through
 * the DFA's table (codegen_dfa.c) from its first row, and selected if the
 * walk matches; other lines are never looked at, so the scan goes at the
 * skip loop's speed rather than the table walker's ten instructions a byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"

int cg_gen_fixed(struct matcher *m, const struct grep_lit *l, int dfa,
		 const struct grep_gen_opts *o, struct grep_prog *out, char *err, size_t errlen)
{
	struct cg g = { 0 };
	const unsigned char *nd = l->lower;
	int len = (int)l->len, k = (int)l->rare, r, nlcls = 0;
	unsigned rare = nd[k];

	if (dfa && (r = cg_dfa_table(m, o, 0, out, &nlcls, err, errlen)))
		return r;

	int loop = cg_label(&g), cand = cg_label(&g), back_done = cg_label(&g),
	    fwd = cg_label(&g), fwd_nl = cg_label(&g), slice_end = cg_label(&g), consumed = cg_label(&g),
	    nul = cg_label(&g), cnt = cg_label(&g), cnt_done = cg_label(&g), cnt_skip = cg_label(&g),
	    after = cg_label(&g);

	int enter8 = cg_label(&g), loop8 = cg_label(&g), group = cg_label(&g), tail = cg_label(&g),
	    count = cg_label(&g), emit = cg_label(&g), matched = cg_label(&g);
	int fold = l->fold[k];

	cg_prologue(&g);
	cg_put(&g, STXDW, R10, R6, SLOT_GROUP, 0);
	if (fold) {
		cg_lddw(&g, R1, UINT64_C(0x2020202020202020));
		cg_put(&g, STXDW, R10, R1, SLOT_CASE, 0);
	}

	/* eight bytes at a time: r0 the word, r2 the rare byte in each byte
	 * (lower case when folding), r3 0x01 and r4 0x80 in each, r1 and r5
	 * scratch; a word with the rare byte (or a NUL) goes byte by byte */
	cg_here(&g, enter8);
	cg_lddw(&g, R2, UINT64_C(0x0101010101010101) * rare);
	cg_lddw(&g, R3, UINT64_C(0x0101010101010101));
	cg_lddw(&g, R4, UINT64_C(0x8080808080808080));
	cg_here(&g, loop8);
	cg_put(&g, MOV_X, R1, R6, 0, 0);
	cg_put(&g, ADD_K, R1, 0, 0, 8);
	cg_jmp(&g, JGT_X, R1, R7, 0, tail);
	cg_put(&g, LDXDW, R0, R6, 0, 0);
	cg_put(&g, MOV_X, R1, R0, 0, 0);
	if (fold) {
		cg_put(&g, LDXDW, R5, R10, SLOT_CASE, 0);
		cg_put(&g, OR_X, R1, R5, 0, 0);
	}
	cg_put(&g, XOR_X, R1, R2, 0, 0);           /* bytes equal to the rare one: 0 */
	cg_put(&g, MOV_X, R5, R1, 0, 0);           /* r5 = (x - 0x01..) & ~x & 0x80.. */
	cg_put(&g, SUB_X, R5, R3, 0, 0);
	cg_put(&g, XOR_K, R1, 0, 0, -1);
	cg_put(&g, AND_X, R5, R1, 0, 0);
	cg_put(&g, AND_X, R5, R4, 0, 0);
	if (o->nul_mode == GREP_NUL_STOP) {    /* and the same for NUL bytes */
		cg_put(&g, MOV_X, R1, R0, 0, 0);
		cg_put(&g, SUB_X, R1, R3, 0, 0);
		cg_put(&g, XOR_K, R0, 0, 0, -1);
		cg_put(&g, AND_X, R1, R0, 0, 0);
		cg_put(&g, AND_X, R1, R4, 0, 0);
		cg_put(&g, OR_X, R5, R1, 0, 0);
	}
	cg_jmp(&g, JNE_K, R5, 0, 0, group);
	cg_put(&g, ADD_K, R6, 0, 0, 8);
	cg_jmp(&g, JA, 0, 0, 0, loop8);
	cg_here(&g, group);                        /* these eight bytes one at a time */
	cg_put(&g, MOV_X, R1, R6, 0, 0);
	cg_put(&g, ADD_K, R1, 0, 0, 8);
	cg_put(&g, STXDW, R10, R1, SLOT_GROUP, 0);
	cg_jmp(&g, JA, 0, 0, 0, loop);
	cg_here(&g, tail);                         /* the last few: one at a time */
	cg_put(&g, STXDW, R10, R7, SLOT_GROUP, 0);

	cg_here(&g, loop);
	cg_jmp(&g, JGE_X, R6, R7, 0, slice_end);
	cg_put(&g, LDXDW, R1, R10, SLOT_GROUP, 0);
	cg_jmp(&g, JGE_X, R6, R1, 0, enter8);
	cg_put(&g, LDXB, R0, R6, 0, 0);
	cg_put(&g, ADD_K, R6, 0, 0, 1);
	if (fold) {
		cg_jmp(&g, JEQ_K, R0, 0, (int32_t)(rare | 32), cand);
		cg_jmp(&g, JEQ_K, R0, 0, (int32_t)(rare & ~32u), cand);
	} else {
		cg_jmp(&g, JEQ_K, R0, 0, (int32_t)rare, cand);
	}
	if (o->nul_mode == GREP_NUL_STOP)
		cg_jmp(&g, JEQ_K, R0, 0, 0, nul);
	cg_jmp(&g, JA, 0, 0, 0, loop);

	/* a hit at r6 - 1: the needle would start at r1 */
	cg_here(&g, cand);
	cg_put(&g, MOV_X, R1, R6, 0, 0);
	cg_put(&g, ADD_K, R1, 0, 0, -1 - k);
	cg_ldctx(&g, R2, CTX(line_start));
	cg_put(&g, LDXDW, R3, R10, SLOT_DELTA, 0);
	cg_put(&g, SUB_X, R2, R3, 0, 0);            /* r2 = pointer of the current line start */
	cg_jmp(&g, JLT_X, R1, R2, 0, loop);
	cg_put(&g, MOV_X, R3, R1, 0, 0);
	cg_put(&g, ADD_K, R3, 0, 0, len);
	cg_put(&g, LDXDW, R4, R10, SLOT_BUFEND, 0);
	cg_jmp(&g, JGT_X, R3, R4, 0, loop);
	for (int j = 0; j < len; j++) {
		if (j == k && !l->fold[j])
			continue;
		cg_put(&g, LDXB, R0, R1, (int16_t)j, 0);
		if (l->fold[j]) {
			cg_put(&g, OR_K, R0, 0, 0, 32);
			cg_jmp(&g, JNE_K, R0, 0, (int32_t)(nd[j] | 32), loop);
		} else {
			cg_jmp(&g, JNE_K, R0, 0, (int32_t)nd[j], loop);
		}
	}
	/* matched: the line starts after the last terminator before r1 */
	cg_put(&g, MOV_X, R4, R1, 0, 0);
	cg_back_to_nl(&g, R4, R2, o->nul_mode == GREP_NUL_EOL, back_done, back_done);
	cg_here(&g, back_done);
	if (dfa)
		cg_jmp(&g, JA, 0, 0, 0, fwd);  /* the line's end, its walk, then the count */
	cg_here(&g, count);
	/* r8 = newlines in [r2, r4): the lines skipped over */
	cg_put(&g, MOV_K, R8, 0, 0, 0);
	if (o->lineno) {
		cg_put(&g, MOV_X, R0, R2, 0, 0);
		cg_here(&g, cnt);
		cg_jmp(&g, JGE_X, R0, R4, 0, cnt_done);
		cg_put(&g, LDXB, R1, R0, 0, 0);
		cg_put(&g, ADD_K, R0, 0, 0, 1);
		cg_jmp(&g, JNE_K, R1, 0, '\n', cnt_skip);
		cg_put(&g, ADD_K, R8, 0, 0, 1);
		cg_here(&g, cnt_skip);
		if (o->nul_mode == GREP_NUL_EOL) {
			int nz = cg_label(&g);

			cg_jmp(&g, JNE_K, R1, 0, 0, nz);
			cg_put(&g, ADD_K, R8, 0, 0, 1);
			cg_here(&g, nz);
		}
		cg_jmp(&g, JA, 0, 0, 0, cnt);
		cg_here(&g, cnt_done);
	}
	if (dfa)
		cg_jmp(&g, JA, 0, 0, 0, emit);
	/* the line ends at the next terminator after the needle */
	cg_here(&g, fwd);
	cg_put(&g, LDXDW, R0, R10, SLOT_BUFEND, 0);
	cg_jmp(&g, JGE_X, R3, R0, 0, fwd_nl);
	cg_put(&g, LDXB, R0, R3, 0, 0);
	cg_jmp(&g, JEQ_K, R0, 0, '\n', fwd_nl);
	if (o->nul_mode == GREP_NUL_EOL)
		cg_jmp(&g, JEQ_K, R0, 0, 0, fwd_nl);
	if (o->nul_mode == GREP_NUL_STOP) {
		int nn = cg_label(&g);

		cg_jmp(&g, JNE_K, R0, 0, 0, nn);
		cg_put(&g, MOV_X, R6, R3, 0, 0);
		cg_put(&g, ADD_K, R6, 0, 0, 1);
		cg_jmp(&g, JA, 0, 0, 0, nul);
		cg_here(&g, nn);
	}
	cg_put(&g, ADD_K, R3, 0, 0, 1);
	cg_jmp(&g, JA, 0, 0, 0, fwd);
	cg_here(&g, fwd_nl);
	if (dfa) {
		/* the line [r4, r3) through the table from its first row:
		 * r1 cursor, r2 row, r5 the table, r0 scratch */
		int walk = cg_label(&g), at_end = cg_label(&g), no = cg_label(&g),
		    no_clamp = cg_label(&g);

		cg_lddw(&g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
		cg_put(&g, MOV_X, R1, R4, 0, 0);
		cg_put(&g, MOV_K, R2, 0, 0, 0);
		cg_here(&g, walk);
		cg_jmp(&g, JGE_X, R1, R3, 0, at_end);
		cg_put(&g, LDXB, R0, R1, 0, 0);
		cg_put(&g, ADD_K, R1, 0, 0, 1);
		cg_put(&g, ADD_X, R0, R5, 0, 0);
		cg_put(&g, LDXB, R0, R0, 0, 0);
		cg_put(&g, LSH_K, R0, 0, 0, 2);
		cg_put(&g, ADD_X, R0, R2, 0, 0);
		cg_put(&g, ADD_X, R0, R5, 0, 0);
		cg_put(&g, LDXW, R2, R0, 256, 0);
		cg_jmp(&g, JLT_K, R2, 0, (int32_t)SP_BASE, walk);
		cg_jmp(&g, JEQ_K, R2, 0, (int32_t)SP_MATCH, matched);
		cg_jmp(&g, JA, 0, 0, 0, no);
		cg_here(&g, at_end);                /* the line's end decides */
		cg_put(&g, MOV_K, R0, 0, 0, nlcls * 4);
		cg_put(&g, ADD_X, R0, R2, 0, 0);
		cg_put(&g, ADD_X, R0, R5, 0, 0);
		cg_put(&g, LDXW, R0, R0, 256, 0);
		cg_jmp(&g, JEQ_K, R0, 0, (int32_t)SP_EOL_MATCH, matched);
		cg_here(&g, no);                    /* not selected: on after its end */
		cg_put(&g, MOV_X, R6, R3, 0, 0);
		cg_put(&g, ADD_K, R6, 0, 0, 1);
		cg_put(&g, LDXDW, R1, R10, SLOT_BUFEND, 0);
		cg_jmp(&g, JLE_X, R6, R1, 0, no_clamp);
		cg_put(&g, MOV_X, R6, R1, 0, 0);
		cg_here(&g, no_clamp);
		cg_jmp(&g, JA, 0, 0, 0, loop);
		cg_here(&g, matched);               /* r2 again the line start pointer */
		cg_ldctx(&g, R2, CTX(line_start));
		cg_put(&g, LDXDW, R0, R10, SLOT_DELTA, 0);
		cg_put(&g, SUB_X, R2, R0, 0, 0);
		cg_jmp(&g, JA, 0, 0, 0, count);
	}
	cg_here(&g, emit);
	/* emit [r4, r3) (r6 keeps the end across the helper call), then
	 * lineno += r8 and the next line starts after the terminator */
	cg_put(&g, MOV_X, R6, R3, 0, 0);
	cg_emit_record(&g, R6, R4, o->lineno ? R8 : -1);
	cg_ldctx(&g, R1, CTX(lineno));
	cg_put(&g, ADD_X, R1, R8, 0, 0);
	cg_stctx(&g, CTX(lineno), R1);
	cg_put(&g, ADD_K, R6, 0, 0, 1);
	cg_put(&g, LDXDW, R1, R10, SLOT_BUFEND, 0);
	cg_jmp(&g, JLE_X, R6, R1, 0, after);
	cg_put(&g, MOV_X, R6, R1, 0, 0); /* the unterminated last line */
	cg_here(&g, after);
	cg_next_line(&g, loop, 1);

	cg_slice_exits(&g, nul, slice_end, consumed);
	cg_return_done(&g);

	r = cg_resolve(&g);
	if (r) {
		snprintf(err, errlen, "program generation failed");
		free(out->rodata);
		out->rodata = NULL;
	} else {
		out->insns = g.v;
		out->n = g.n;
		out->kind = dfa ? 2 : 1;
		g.v = NULL;
	}
	cg_free(&g);
	return r;
}
