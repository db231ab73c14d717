/* SPDX-License-Identifier: MIT */
/*
 * The code generator's line work for the table walker (codegen_dfa.c):
 * going to the end of a line already decided (matched; under -v, refused)
 * sixteen bytes a turn, counting the newlines of each word the start-state
 * skip runs past (-n), and bringing the context's line start and line
 * number up to where that skip stopped.  Where things are counted is what
 * makes -n cheap: the skip's loop adds a word's newlines to r4 while the
 * word is in a register (cg_scan_set()), so no second pass reads the bytes
 * again.
 *
 * Two word tests: the exact one (cg_nl_flags(): every newline flagged,
 * nothing else, for counting), and the "has a zero byte" one, whose lowest
 * flag is always right and which may flag more above it (for finding).
 */
#include "codegen_int.h"

#define ONES UINT64_C(0x0101010101010101)

void cg_nl_flags(struct cg *g, int dst, int src, int t1, int t2)
{
	/* y = src ^ 0x0a..: ~(((y & 0x7f..) + 0x7f..) | y | 0x7f..) is
	 * 0x80 exactly where y has a zero byte (no carry crosses a byte) */
	cg_lddw(g, t1, ONES * '\n');
	cg_put(g, XOR_X, t1, src, 0, 0);
	cg_lddw(g, t2, ONES * 0x7f);
	cg_put(g, MOV_X, dst, t1, 0, 0);
	cg_put(g, AND_X, dst, t2, 0, 0);
	cg_put(g, ADD_X, dst, t2, 0, 0);
	cg_put(g, OR_X, dst, t1, 0, 0);
	cg_put(g, OR_X, dst, t2, 0, 0);
	cg_put(g, XOR_K, dst, 0, 0, -1);
}

void cg_flags_sum(struct cg *g, int reg, int t)
{
	/* a 0 or 1 a byte; the multiply sums them into the top byte */
	cg_put(g, RSH_K, reg, 0, 0, 7);
	cg_lddw(g, t, ONES);
	cg_put(g, MUL_X, reg, t, 0, 0);
	cg_put(g, RSH_K, reg, 0, 0, 56);
}

/* dst = 0x80 in each byte of the word in r0 that may end the line (and
 * maybe above one): y, the complement of the word with the bytes that
 * matter made 0, then (0xfe.. - y) & y & 0x80.. (r5 holds 0x80.., r3 the
 * constant of y).  Clobbers r2. */
static void end_flags(struct cg *g, int dst, int nul)
{
	cg_put(g, MOV_X, R2, R0, 0, 0);
	if (nul) { /* ~(w & 0xf5..): 0 at '\n' and NUL (and 0x02, 0x08) */
		cg_put(g, XOR_K, R2, 0, 0, -1);
		cg_put(g, OR_X, R2, R3, 0, 0);
	} else {   /* w ^ 0xf5..: 0 at '\n' only */
		cg_put(g, XOR_X, R2, R3, 0, 0);
	}
	cg_lddw(g, dst, ONES * 0xfe);
	cg_put(g, SUB_X, dst, R2, 0, 0);
	cg_put(g, AND_X, dst, R2, 0, 0);
	cg_put(g, AND_X, dst, R5, 0, 0);
}

void cg_line_skip(struct cg *g, int nul_mode, int found, int end)
{
	int loop = cg_label(g), group = cg_label(g), first = cg_label(g), out = cg_label(g);
	int nul = nul_mode != GREP_NUL_BYTE;

	/* two words a turn, their flags in r1 and r0; r7 lowered by a turn
	 * meanwhile (one compare a turn) */
	cg_lddw(g, R5, ONES * 0x80);
	cg_lddw(g, R3, ONES * (nul ? 0x0a : 0xf5));
	cg_put(g, ADD_K, R7, 0, 0, -16);
	cg_jmp(g, JGT_X, R6, R7, 0, out);
	cg_here(g, loop);
	cg_put(g, LDXDW, R0, R6, 0, 0);
	end_flags(g, R1, nul);
	cg_put(g, LDXDW, R0, R6, 8, 0);
	end_flags(g, R0, nul);
	cg_put(g, MOV_X, R2, R1, 0, 0);
	cg_put(g, OR_X, R2, R0, 0, 0);
	cg_jmp(g, JNE_K, R2, 0, 0, group);
	cg_put(g, ADD_K, R6, 0, 0, 16);
	cg_jmp(g, JLE_X, R6, R7, 0, loop);
	cg_jmp(g, JA, 0, 0, 0, out);
	/* the lowest flag of the first word that has one is the place */
	cg_here(g, group);
	cg_jmp(g, JNE_K, R1, 0, 0, first);
	cg_put(g, MOV_X, R1, R0, 0, 0);
	cg_put(g, ADD_K, R6, 0, 0, 8);
	cg_here(g, first);
	cg_put(g, MOV_K, R2, 0, 0, 0);
	cg_put(g, SUB_X, R2, R1, 0, 0);
	cg_put(g, AND_X, R1, R2, 0, 0);
	cg_to_flag(g, R1, R2);
	/* found, or the last bytes (the caller looks at each), or the end */
	cg_here(g, out);
	cg_put(g, ADD_K, R7, 0, 0, 16);
	cg_lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
	cg_jmp(g, JGE_X, R6, R7, 0, end);
	cg_jmp(g, JA, 0, 0, 0, found);
}

void cg_lazy_lines(struct cg *g, int lineno)
{
	int back_done = cg_label(g), same = cg_label(g);

	if (lineno) { /* no newline passed: the line is where it was */
		cg_jmp(g, JEQ_K, R4, 0, 0, same);
		cg_ldctx(g, R1, CTX(lineno));
		cg_put(g, ADD_X, R1, R4, 0, 0);
		cg_stctx(g, CTX(lineno), R1);
	}
	cg_put(g, LDXDW, R2, R10, SLOT_SKIPFROM, 0);
	cg_put(g, MOV_X, R4, R6, 0, 0);
	cg_back_to_nl(g, R4, R2, 0, same, back_done);
	cg_here(g, back_done);
	cg_put(g, LDXDW, R1, R10, SLOT_DELTA, 0);
	cg_put(g, ADD_X, R1, R4, 0, 0);
	cg_stctx(g, CTX(line_start), R1);
	cg_here(g, same);
	cg_lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
}
