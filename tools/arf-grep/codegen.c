/* SPDX-License-Identifier: MIT */
/*
 * The matcher turned into an eBPF program (RFC 9669) that scans a buffer
 * and emits one record (struct grep_rec) per selected line through the
 * output helper.  grep_codegen() picks one of two shapes: the DFA table
 * walker (codegen_dfa.c), or for one plain string the fixed-string skip
 * loop (codegen_fixed.c).  Both are written with the assembler of
 * codegen_asm.c and share what is here: the entry, the record of a line,
 * the step to the next line and the ways out.  codegen_ship.c wraps a scan
 * for arfd.
 *
 * The context (struct grep_ctx) carries a cursor, so a scan runs in slices
 * of ctx->limit bytes: the table walker saves its DFA state (or "line
 * already matched, looking for its end"), the skip loop just its position.
 * Registers: r6 cursor, r7 end of this slice, r8 DFA row, r9 the context,
 * r5 the read-only data (reloaded after helper calls).  Stack: -8 file offset
 * minus buffer address, -16..-32 the record, -40 stop code, -48 buffer end.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"

/* Program entry: registers and stack slots as the file comment says. */
void cg_prologue(struct cg *g)
{
	int nolimit = cg_label(g);

	cg_put(g, MOV_X, R9, R1, 0, 0);
	cg_ldctx(g, R6, CTX(buf));
	cg_ldctx(g, R0, CTX(len));
	cg_put(g, MOV_X, R7, R6, 0, 0);
	cg_put(g, ADD_X, R7, R0, 0, 0);
	cg_put(g, STXDW, R10, R7, SLOT_BUFEND, 0);
	cg_ldctx(g, R0, CTX(pos));
	cg_put(g, ADD_X, R6, R0, 0, 0);
	cg_ldctx(g, R1, CTX(limit));
	cg_jmp(g, JEQ_K, R1, 0, 0, nolimit);
	cg_put(g, ADD_X, R1, R6, 0, 0);
	cg_jmp(g, JGE_X, R1, R7, 0, nolimit);
	cg_put(g, MOV_X, R7, R1, 0, 0);
	cg_here(g, nolimit);
	cg_ldctx(g, R0, CTX(base));
	cg_ldctx(g, R1, CTX(buf));
	cg_put(g, SUB_X, R0, R1, 0, 0);
	cg_put(g, STXDW, R10, R0, SLOT_DELTA, 0);
	cg_put(g, STDW, R9, 0, CTX(nrec), 0);
	cg_put(g, STDW, R10, 0, SLOT_STOP, 0);
	cg_ldctx(g, R8, CTX(state));
	cg_lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
}

/* Saves the cursor (r6 -> pos, r8 -> state) and returns code. */
void cg_save_and_return(struct cg *g, int code)
{
	cg_ldctx(g, R1, CTX(buf));
	cg_put(g, MOV_X, R0, R6, 0, 0);
	cg_put(g, SUB_X, R0, R1, 0, 0);
	cg_stctx(g, CTX(pos), R0);
	cg_stctx(g, CTX(state), R8);
	cg_put(g, MOV_K, R0, 0, 0, code);
	cg_put(g, EXIT, 0, 0, 0, 0);
}

/*
 * Emits the record of the line from ctx->line_start to the pointer in
 * end_reg, with line number ctx->lineno + 1 + extra_reg (extra_reg < 0:
 * none), then counts it and sets the stop slot when max_sel or max_rec is
 * reached.  Clobbers r0-r5 (r5 reloaded).
 */
void cg_emit_record(struct cg *g, int end_reg, int start_reg, int extra_reg)
{
	int no_max = cg_label(g), no_full = cg_label(g);

	if (end_reg != R1)
		cg_put(g, MOV_X, R1, end_reg, 0, 0);
	cg_put(g, LDXDW, R2, R10, SLOT_DELTA, 0);
	cg_put(g, ADD_X, R1, R2, 0, 0);          /* end offset */
	if (start_reg >= 0) {
		cg_put(g, MOV_X, R3, start_reg, 0, 0);
		cg_put(g, ADD_X, R3, R2, 0, 0);  /* start offset */
		cg_put(g, MOV_X, R2, R3, 0, 0);
	} else {
		cg_ldctx(g, R2, CTX(line_start));
	}
	cg_put(g, SUB_X, R1, R2, 0, 0);
	cg_put(g, STXDW, R10, R1, SLOT_REC + 16, 0);
	cg_put(g, STXDW, R10, R2, SLOT_REC, 0);
	cg_ldctx(g, R3, CTX(lineno));
	cg_put(g, ADD_K, R3, 0, 0, 1);
	if (extra_reg >= 0)
		cg_put(g, ADD_X, R3, extra_reg, 0, 0);
	cg_put(g, STXDW, R10, R3, SLOT_REC + 8, 0);
	cg_put(g, MOV_X, R1, R10, 0, 0);
	cg_put(g, ADD_K, R1, 0, 0, SLOT_REC);
	cg_put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct grep_rec));
	cg_put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	cg_lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
	cg_ldctx(g, R1, CTX(nsel));
	cg_put(g, ADD_K, R1, 0, 0, 1);
	cg_stctx(g, CTX(nsel), R1);
	cg_ldctx(g, R2, CTX(nrec));
	cg_put(g, ADD_K, R2, 0, 0, 1);
	cg_stctx(g, CTX(nrec), R2);
	cg_ldctx(g, R3, CTX(max_sel));
	cg_jmp(g, JLT_X, R1, R3, 0, no_max);
	cg_put(g, STDW, R10, 0, SLOT_STOP, GREP_RET_MAX);
	cg_here(g, no_max);
	cg_ldctx(g, R3, CTX(max_rec));
	cg_jmp(g, JLT_X, R2, R3, 0, no_full);
	cg_put(g, LDXDW, R3, R10, SLOT_STOP, 0);
	cg_jmp(g, JNE_K, R3, 0, 0, no_full);
	cg_put(g, STDW, R10, 0, SLOT_STOP, GREP_RET_MORE);
	cg_here(g, no_full);
}

/* After a line ended at r6 - 1: count it (with count; the context's
 * lineno is only looked at with line numbers), the next one starts at r6
 * in the DFA's first row. */
void cg_line_advance(struct cg *g, int count)
{
	if (count) {
		cg_ldctx(g, R1, CTX(lineno));
		cg_put(g, ADD_K, R1, 0, 0, 1);
		cg_stctx(g, CTX(lineno), R1);
	}
	cg_put(g, LDXDW, R2, R10, SLOT_DELTA, 0);
	cg_put(g, ADD_X, R2, R6, 0, 0);
	cg_stctx(g, CTX(line_start), R2);
	cg_put(g, MOV_K, R8, 0, 0, 0);
}

/* After a line ended at r6 - 1: the next line starts at r6. */
void cg_next_line(struct cg *g, int loop, int count)
{
	int go = cg_label(g);

	cg_line_advance(g, count);
	cg_put(g, LDXDW, R0, R10, SLOT_STOP, 0);
	cg_jmp(g, JEQ_K, R0, 0, 0, go);
	/* stop: save the cursor and return the code in r0 */
	cg_put(g, MOV_X, R4, R0, 0, 0);
	cg_ldctx(g, R1, CTX(buf));
	cg_put(g, MOV_X, R0, R6, 0, 0);
	cg_put(g, SUB_X, R0, R1, 0, 0);
	cg_stctx(g, CTX(pos), R0);
	cg_stctx(g, CTX(state), R8);
	cg_put(g, MOV_X, R0, R4, 0, 0);
	cg_put(g, EXIT, 0, 0, 0, 0);
	cg_here(g, go);
	cg_jmp(g, JA, 0, 0, 0, loop);
}

/* The buffer is done: GREP_RET_MAX if the last record reached max_sel,
 * else GREP_RET_DONE. */
void cg_return_done(struct cg *g)
{
	int plain = cg_label(g);

	cg_put(g, LDXDW, R0, R10, SLOT_STOP, 0);
	cg_jmp(g, JNE_K, R0, 0, GREP_RET_MAX, plain);
	cg_save_and_return(g, GREP_RET_MAX);
	cg_here(g, plain);
	cg_save_and_return(g, GREP_RET_DONE);
}

/* A NUL at r6 - 1 stopped the scan. */
void cg_nul_stop(struct cg *g)
{
	cg_put(g, MOV_X, R1, R6, 0, 0);
	cg_put(g, ADD_K, R1, 0, 0, -1);
	cg_put(g, LDXDW, R2, R10, SLOT_DELTA, 0);
	cg_put(g, ADD_X, R1, R2, 0, 0);
	cg_stctx(g, CTX(nul_at), R1);
	cg_save_and_return(g, GREP_RET_NUL);
}

void cg_slice_exits(struct cg *g, int nul, int slice_end, int consumed)
{
	cg_here(g, nul);
	cg_nul_stop(g);
	cg_here(g, slice_end);
	cg_put(g, LDXDW, R1, R10, SLOT_BUFEND, 0);
	cg_jmp(g, JGE_X, R6, R1, 0, consumed);
	cg_save_and_return(g, GREP_RET_MORE);
	cg_here(g, consumed);
}

void cg_back_to_nl(struct cg *g, int ptr, int lo, int nul_eol, int at_lo, int at_nl)
{
	int back = cg_label(g);

	cg_here(g, back);
	cg_jmp(g, JLE_X, ptr, lo, 0, at_lo);
	cg_put(g, LDXB, R0, ptr, -1, 0);
	cg_jmp(g, JEQ_K, R0, 0, '\n', at_nl);
	if (nul_eol)
		cg_jmp(g, JEQ_K, R0, 0, 0, at_nl);
	cg_put(g, ADD_K, ptr, 0, 0, -1);
	cg_jmp(g, JA, 0, 0, 0, back);
}

int cg_scan_add(struct scan_set *s, struct scan_test x)
{
	if (!x.pair)
		x.byte2 = x.fold2 = 0;
	for (int i = 0; i < s->n; i++)
		if (!memcmp(&s->t[i], &x, sizeof(x)))
			return 0;
	if (s->n == SCAN_MAX_TESTS)
		return -1;
	s->t[s->n++] = x;
	return 0;
}

#define ONES UINT64_C(0x0101010101010101)

/* r2 = y, the complement of x: the word in r0 (in fw when fold) XOR the
 * test's byte in every byte, OR for a pair the same of the word one byte
 * on (r8), and for a third byte of the word two bytes on (made of r0 and
 * the next word, r5).  x is 0 where the test holds; y is made as the AND
 * of the complements, each word XOR the complemented byte.  Clobbers r1. */
static void scan_xor(struct cg *g, const struct scan_test *x, int fw)
{
	if (x->triple) {
		cg_put(g, MOV_X, R2, R0, 0, 0);
		cg_put(g, RSH_K, R2, 0, 0, 16);
		cg_put(g, MOV_X, R1, R5, 0, 0);
		cg_put(g, LSH_K, R1, 0, 0, 48);
		cg_put(g, OR_X, R2, R1, 0, 0);
		cg_lddw(g, R1, ~(ONES * x->byte3));
		cg_put(g, XOR_X, R2, R1, 0, 0);
		cg_lddw(g, R1, ~(ONES * x->byte2));
		cg_put(g, XOR_X, R1, R8, 0, 0);
		cg_put(g, AND_X, R2, R1, 0, 0);
		cg_lddw(g, R1, ~(ONES * x->byte));
		cg_put(g, XOR_X, R1, x->fold ? fw : R0, 0, 0);
		cg_put(g, AND_X, R2, R1, 0, 0);
	} else if (x->pair) {
		cg_lddw(g, R2, ~(ONES * x->byte2));
		cg_put(g, XOR_X, R2, R8, 0, 0);
		if (x->fold2) { /* either case: the bit that tells them apart on */
			cg_lddw(g, R1, ONES * 0x20);
			cg_put(g, OR_X, R2, R1, 0, 0);
		}
		cg_lddw(g, R1, ~(ONES * x->byte));
		cg_put(g, XOR_X, R1, x->fold ? fw : R0, 0, 0);
		cg_put(g, AND_X, R2, R1, 0, 0);
	} else if (x->byte || x->fold) {
		cg_lddw(g, R2, ~(ONES * x->byte));
		cg_put(g, XOR_X, R2, x->fold ? fw : R0, 0, 0);
	} else { /* the NUL */
		cg_put(g, MOV_X, R2, R0, 0, 0);
		cg_put(g, XOR_K, R2, 0, 0, -1);
	}
}

void cg_to_flag(struct cg *g, int bit, int t)
{
	/* (bit >> 7) * 0x0001020304050607 >> 56 is the byte's index */
	cg_put(g, RSH_K, bit, 0, 0, 7);
	cg_lddw(g, t, UINT64_C(0x0001020304050607));
	cg_put(g, MUL_X, bit, t, 0, 0);
	cg_put(g, RSH_K, bit, 0, 0, 56);
	cg_put(g, ADD_X, R6, bit, 0, 0);
}

/* r3 = the flags of s for the word in r0 (see cg_scan_set()); mask: r4
 * holds 0x80.. */
static void scan_flags(struct cg *g, const struct scan_set *s, int fw, int mask)
{
	if (!s->n) /* nothing to look for (a pattern that cannot match) */
		cg_put(g, MOV_K, R3, 0, 0, 0);
	for (int i = 0; i < s->n; i++) {
		/* (x - 0x01..) & ~x has 0x80 set where x has a zero byte: with
		 * y = ~x, (0xfe.. - y) & y */
		scan_xor(g, &s->t[i], fw);
		cg_lddw(g, R1, ONES * 0xfe);
		cg_put(g, SUB_X, R1, R2, 0, 0);
		cg_put(g, AND_X, R1, R2, 0, 0);
		cg_put(g, i ? OR_X : MOV_X, R3, R1, 0, 0);
	}
	if (mask) {
		cg_put(g, AND_X, R3, R4, 0, 0);
	} else {
		cg_lddw(g, R1, ONES * 0x80);
		cg_put(g, AND_X, R3, R1, 0, 0);
	}
}

void cg_scan_set(struct cg *g, const struct scan_set *s, const struct scan_set *s3, int count,
		 int found, int end)
{
	int loop = cg_label(g), group = cg_label(g), out = cg_label(g), pass = cg_label(g),
	    fold = 0, pairs = 0;

	for (int i = 0; i < s->n; i++) {
		fold |= s->t[i].fold;
		pairs |= s->t[i].pair;
	}
	/* r0 the word; with pairs r8 the word a byte on, made of r0 and the
	 * next word (r5), which the next turn takes over (one load a turn);
	 * fw the word OR 0x20.. (fold), else r4 0x80.. (unless r4 counts);
	 * r3 the flags, r1 and r2 scratch; r7 lowered by a turn's bytes
	 * meanwhile (an address is never that small), so the bound is one
	 * compare */
	int fw = count ? R9 : R4, need = pairs ? 16 : 8, mask = !fold && !count;

	if (count && fold) /* r9 (the context) lends itself for the folded word */
		cg_put(g, STXDW, R10, R9, SLOT_R9, 0);
	if (mask)
		cg_lddw(g, R4, ONES * 0x80);
	cg_put(g, ADD_K, R7, 0, 0, -need);
	cg_jmp(g, JGT_X, R6, R7, 0, out);
	if (pairs)
		cg_put(g, LDXDW, R0, R6, 0, 0);
	/* the bound checked at the bottom: two blocks a turn */
	cg_here(g, loop);
	if (pairs) {
		cg_put(g, LDXDW, R5, R6, 8, 0);
		cg_put(g, MOV_X, R8, R0, 0, 0);
		cg_put(g, RSH_K, R8, 0, 0, 8);
		cg_put(g, MOV_X, R1, R5, 0, 0);
		cg_put(g, LSH_K, R1, 0, 0, 56);
		cg_put(g, OR_X, R8, R1, 0, 0);
	} else {
		cg_put(g, LDXDW, R0, R6, 0, 0);
	}
	if (fold) {
		cg_lddw(g, fw, ONES * 0x20);
		cg_put(g, OR_X, fw, R0, 0, 0);
	}
	scan_flags(g, s, fw, mask);
	cg_jmp(g, JNE_K, R3, 0, 0, group);
	cg_here(g, pass);
	if (count) { /* r4 += the word's newlines */
		cg_nl_flags(g, R1, R0, R2, R3);
		cg_flags_sum(g, R1, R2);
		cg_put(g, ADD_X, R4, R1, 0, 0);
	}
	if (pairs)
		cg_put(g, MOV_X, R0, R5, 0, 0);
	cg_put(g, ADD_K, R6, 0, 0, 8);
	cg_jmp(g, JLE_X, R6, R7, 0, loop);
	cg_jmp(g, JA, 0, 0, 0, out);
	/* the lowest flag is a test that holds (a wrong one is only ever
	 * above a right one, where the borrow went): r6 to its byte */
	cg_here(g, group);
	if (s3) { /* the same word tested with the third bytes */
		scan_flags(g, s3, fw, mask);
		cg_jmp(g, JEQ_K, R3, 0, 0, pass);
	}
	cg_put(g, MOV_K, R1, 0, 0, 0);
	cg_put(g, SUB_X, R1, R3, 0, 0);
	cg_put(g, AND_X, R1, R3, 0, 0);
	if (count) { /* r4 += the newlines below that byte */
		cg_put(g, MOV_X, R3, R1, 0, 0);
		cg_put(g, ADD_K, R3, 0, 0, -1);
		cg_nl_flags(g, R2, R0, R5, R8);
		cg_put(g, AND_X, R2, R3, 0, 0);
		cg_flags_sum(g, R2, R3);
		cg_put(g, ADD_X, R4, R2, 0, 0);
	}
	cg_to_flag(g, R1, R2);
	/* found, or the last bytes (fewer than a turn needs: the caller
	 * looks at each), or the end */
	cg_here(g, out);
	cg_put(g, ADD_K, R7, 0, 0, need);
	if (pairs || count)
		cg_put(g, MOV_K, R8, 0, 0, 0);
	if (count && fold)
		cg_put(g, LDXDW, R9, R10, SLOT_R9, 0);
	cg_lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
	cg_jmp(g, JGE_X, R6, R7, 0, end);
	cg_jmp(g, JA, 0, 0, 0, found);
}

int grep_codegen(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
		 char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!o->table && !o->invert && m->lit_ok && m->lit.len < 4096)
		return cg_gen_fixed(m, &m->lit, 0, o, out, err, errlen);
	if (!o->table && !o->invert && !m->lit_ok && m->must.len && m->must.len < 4096)
		return cg_gen_fixed(m, &m->must, 1, o, out, err, errlen);
	return cg_gen_dfa(m, o, out, err, errlen);
}

void grep_prog_free(struct grep_prog *p)
{
	free(p->insns);
	free(p->rodata);
	memset(p, 0, sizeof(*p));
}
