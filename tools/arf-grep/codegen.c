/* SPDX-License-Identifier: MIT */
/*
 * The matcher turned into an eBPF program (RFC 9669) that scans a buffer
 * and emits one record (struct grep_rec) per selected line through the
 * output helper.  Two shapes:
 *
 *  - DFA table walker: the DFA of the unanchored pattern (every state
 *    reachable from a line start, at most GREP_MAX_DFA_STATES) becomes a
 *    table in the program's read-only data -- a 256-byte map from byte to
 *    byte class, then one row of u32 per state, one column per class -- and
 *    a loop of ten instructions per byte walks it.  A row entry is the byte
 *    offset of the next row, or a special value (>= SP_BASE): the line
 *    matched, a line ended with or without a match, a NUL byte.  Context
 *    assertions, -w, -x and -i are all inside the table already.
 *  - Fixed-string skip loop (one string with nothing special in it, as -F
 *    or a literal BRE/ERE; no -w/-x/-v): the loop looks for the needle's
 *    rarest byte only, eight bytes at a time (a word's bytes equal to it,
 *    or NUL, found with the carry-free "has a zero byte" test), then byte
 *    by byte within a word that has one; a hit is verified by straight-line
 *    compares, and only then are the line's ends searched.
 *
 * The context (struct grep_ctx) carries a cursor, so a scan runs in slices
 * of ctx->limit bytes: the table walker saves its DFA state (or "line
 * already matched, looking for its end"), the skip loop just its position.
 * Registers: r6 cursor, r7 end of this slice, r8 DFA row, r9 the context,
 * r5 the read-only data (reloaded after helper calls).  Stack: -8 file offset
 * minus buffer address, -16..-32 the record, -40 stop code, -48 buffer end.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

/* ---- a tiny assembler with labels ---------------------------------------- */

struct cg {
	struct arf_mc_insn *v;
	size_t n, cap;
	int rc;
	int *lab;      /* label -> instruction index, -1 unset */
	int nlab;
	struct { size_t at; int lab; } *fix;
	size_t nfix, capfix;
};

static void put(struct cg *g, uint8_t op, int dst, int src, int16_t off, int32_t imm)
{
	if (g->rc)
		return;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		struct arf_mc_insn *v = realloc(g->v, cap * sizeof(*v));

		if (!v) {
			g->rc = -ENOMEM;
			return;
		}
		g->v = v;
		g->cap = cap;
	}
	struct arf_mc_insn *x = &g->v[g->n++];

	memset(x, 0, sizeof(*x));
	x->opcode = op;
	x->dst = (uint8_t)dst & 15;
	x->src = (uint8_t)src & 15;
	x->off = off;
	x->imm = imm;
}

static int label(struct cg *g)
{
	int *l = realloc(g->lab, (size_t)(g->nlab + 1) * sizeof(int));

	if (!l) {
		g->rc = -ENOMEM;
		return 0;
	}
	g->lab = l;
	g->lab[g->nlab] = -1;
	return g->nlab++;
}

static void here(struct cg *g, int l)
{
	if (!g->rc)
		g->lab[l] = (int)g->n;
}

/* A jump to label l (opcode op; imm or src register as given). */
static void jmp(struct cg *g, uint8_t op, int dst, int src, int32_t imm, int l)
{
	if (g->rc)
		return;
	if (g->nfix == g->capfix) {
		size_t cap = g->capfix ? g->capfix * 2 : 64;
		void *f = realloc(g->fix, cap * sizeof(*g->fix));

		if (!f) {
			g->rc = -ENOMEM;
			return;
		}
		g->fix = f;
		g->capfix = cap;
	}
	g->fix[g->nfix].at = g->n;
	g->fix[g->nfix].lab = l;
	g->nfix++;
	put(g, op, dst, src, 0, imm);
}

static int resolve(struct cg *g)
{
	for (size_t i = 0; i < g->nfix && !g->rc; i++) {
		long d = (long)g->lab[g->fix[i].lab] - (long)g->fix[i].at - 1;

		if (g->lab[g->fix[i].lab] < 0 || d < -32768 || d > 32767)
			g->rc = -E2BIG;
		else
			g->v[g->fix[i].at].off = (int16_t)d;
	}
	return g->rc;
}

/* opcodes */
enum {
	ADD_K = 0x07, ADD_X = 0x0f, SUB_K = 0x17, SUB_X = 0x1f, OR_K = 0x47, OR_X = 0x4f,
	AND_K = 0x57, AND_X = 0x5f, XOR_K = 0xa7, XOR_X = 0xaf, LSH_K = 0x67, MOV_K = 0xb7,
	MOV_X = 0xbf,
	JA = 0x05, JEQ_K = 0x15, JEQ_X = 0x1d, JGT_X = 0x2d, JGE_X = 0x3d, JNE_K = 0x55,
	JLT_K = 0xa5, JLT_X = 0xad, JLE_X = 0xbd, JGT_K = 0x25, JSGE_K = 0x75,
	CALL = 0x85, EXIT = 0x95,
	LDXB = 0x71, LDXW = 0x61, LDXDW = 0x79, STXDW = 0x7b, STDW = 0x7a, LDDW = 0x18,
};

#define R0 0
#define R1 1
#define R2 2
#define R3 3
#define R4 4
#define R5 5
#define R6 6
#define R7 7
#define R8 8
#define R9 9
#define R10 10

#define CTX(f) ((int16_t)offsetof(struct grep_ctx, f))

static void lddw(struct cg *g, int dst, uint64_t v)
{
	put(g, LDDW, dst, 0, 0, (int32_t)(uint32_t)v);
	put(g, 0, 0, 0, 0, (int32_t)(uint32_t)(v >> 32));
}

static void ldctx(struct cg *g, int dst, int16_t off) { put(g, LDXDW, dst, R9, off, 0); }
static void stctx(struct cg *g, int16_t off, int src) { put(g, STXDW, R9, src, off, 0); }

#define SLOT_DELTA (-8)
#define SLOT_REC (-32)   /* off at -32, lineno at -24, len at -16 */
#define SLOT_STOP (-40)
#define SLOT_BUFEND (-48)
#define SLOT_GROUP (-56)  /* skip loop: where the byte-at-a-time scan hands back */
#define SLOT_CASE (-64)   /* skip loop: 0x20 in every byte, for case folding */

/* Program entry: registers and stack slots as the file comment says. */
static void prologue(struct cg *g)
{
	int nolimit = label(g);

	put(g, MOV_X, R9, R1, 0, 0);
	ldctx(g, R6, CTX(buf));
	ldctx(g, R0, CTX(len));
	put(g, MOV_X, R7, R6, 0, 0);
	put(g, ADD_X, R7, R0, 0, 0);
	put(g, STXDW, R10, R7, SLOT_BUFEND, 0);
	ldctx(g, R0, CTX(pos));
	put(g, ADD_X, R6, R0, 0, 0);
	ldctx(g, R1, CTX(limit));
	jmp(g, JEQ_K, R1, 0, 0, nolimit);
	put(g, ADD_X, R1, R6, 0, 0);
	jmp(g, JGE_X, R1, R7, 0, nolimit);
	put(g, MOV_X, R7, R1, 0, 0);
	here(g, nolimit);
	ldctx(g, R0, CTX(base));
	ldctx(g, R1, CTX(buf));
	put(g, SUB_X, R0, R1, 0, 0);
	put(g, STXDW, R10, R0, SLOT_DELTA, 0);
	put(g, STDW, R9, 0, CTX(nrec), 0);
	put(g, STDW, R10, 0, SLOT_STOP, 0);
	ldctx(g, R8, CTX(state));
	lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
}

/* Saves the cursor (r6 -> pos, r8 -> state) and returns code. */
static void save_and_return(struct cg *g, int code)
{
	ldctx(g, R1, CTX(buf));
	put(g, MOV_X, R0, R6, 0, 0);
	put(g, SUB_X, R0, R1, 0, 0);
	stctx(g, CTX(pos), R0);
	stctx(g, CTX(state), R8);
	put(g, MOV_K, R0, 0, 0, code);
	put(g, EXIT, 0, 0, 0, 0);
}

/*
 * Emits the record of the line from ctx->line_start to the pointer in
 * end_reg, with line number ctx->lineno + 1 + extra_reg (extra_reg < 0:
 * none), then counts it and sets the stop slot when max_sel or max_rec is
 * reached.  Clobbers r0-r5 (r5 reloaded).
 */
static void emit_record(struct cg *g, int end_reg, int start_reg, int extra_reg)
{
	int no_max = label(g), no_full = label(g);

	if (end_reg != R1)
		put(g, MOV_X, R1, end_reg, 0, 0);
	put(g, LDXDW, R2, R10, SLOT_DELTA, 0);
	put(g, ADD_X, R1, R2, 0, 0);          /* end offset */
	if (start_reg >= 0) {
		put(g, MOV_X, R3, start_reg, 0, 0);
		put(g, ADD_X, R3, R2, 0, 0);  /* start offset */
		put(g, MOV_X, R2, R3, 0, 0);
	} else {
		ldctx(g, R2, CTX(line_start));
	}
	put(g, SUB_X, R1, R2, 0, 0);
	put(g, STXDW, R10, R1, SLOT_REC + 16, 0);
	put(g, STXDW, R10, R2, SLOT_REC, 0);
	ldctx(g, R3, CTX(lineno));
	put(g, ADD_K, R3, 0, 0, 1);
	if (extra_reg >= 0)
		put(g, ADD_X, R3, extra_reg, 0, 0);
	put(g, STXDW, R10, R3, SLOT_REC + 8, 0);
	put(g, MOV_X, R1, R10, 0, 0);
	put(g, ADD_K, R1, 0, 0, SLOT_REC);
	put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct grep_rec));
	put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	lddw(g, R5, ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
	ldctx(g, R1, CTX(nsel));
	put(g, ADD_K, R1, 0, 0, 1);
	stctx(g, CTX(nsel), R1);
	ldctx(g, R2, CTX(nrec));
	put(g, ADD_K, R2, 0, 0, 1);
	stctx(g, CTX(nrec), R2);
	ldctx(g, R3, CTX(max_sel));
	jmp(g, JLT_X, R1, R3, 0, no_max);
	put(g, STDW, R10, 0, SLOT_STOP, GREP_RET_MAX);
	here(g, no_max);
	ldctx(g, R3, CTX(max_rec));
	jmp(g, JLT_X, R2, R3, 0, no_full);
	put(g, LDXDW, R3, R10, SLOT_STOP, 0);
	jmp(g, JNE_K, R3, 0, 0, no_full);
	put(g, STDW, R10, 0, SLOT_STOP, GREP_RET_MORE);
	here(g, no_full);
}

/* After a line ended at r6 - 1: the next line starts at r6. */
static void next_line(struct cg *g, int loop)
{
	int go = label(g);

	ldctx(g, R1, CTX(lineno));
	put(g, ADD_K, R1, 0, 0, 1);
	stctx(g, CTX(lineno), R1);
	put(g, LDXDW, R2, R10, SLOT_DELTA, 0);
	put(g, ADD_X, R2, R6, 0, 0);
	stctx(g, CTX(line_start), R2);
	put(g, MOV_K, R8, 0, 0, 0);
	put(g, LDXDW, R0, R10, SLOT_STOP, 0);
	jmp(g, JEQ_K, R0, 0, 0, go);
	/* stop: save the cursor and return the code in r0 */
	put(g, MOV_X, R4, R0, 0, 0);
	ldctx(g, R1, CTX(buf));
	put(g, MOV_X, R0, R6, 0, 0);
	put(g, SUB_X, R0, R1, 0, 0);
	stctx(g, CTX(pos), R0);
	stctx(g, CTX(state), R8);
	put(g, MOV_X, R0, R4, 0, 0);
	put(g, EXIT, 0, 0, 0, 0);
	here(g, go);
	jmp(g, JA, 0, 0, 0, loop);
}

/* A NUL at r6 - 1 stopped the scan. */
static void nul_stop(struct cg *g)
{
	put(g, MOV_X, R1, R6, 0, 0);
	put(g, ADD_K, R1, 0, 0, -1);
	put(g, LDXDW, R2, R10, SLOT_DELTA, 0);
	put(g, ADD_X, R1, R2, 0, 0);
	stctx(g, CTX(nul_at), R1);
	save_and_return(g, GREP_RET_NUL);
}

/* ---- the DFA table walker ------------------------------------------------ */

#define SP_BASE        0x7fffff00u
#define SP_MATCH       0x7fffff01u /* the line matched; its end is still ahead */
#define SP_EOL_MATCH   0x7fffff02u /* a line ended; it matched */
#define SP_EOL_NOMATCH 0x7fffff03u /* a line ended; it did not match */
#define SP_NUL         0x7fffff04u /* a NUL (GREP_NUL_STOP) */
#define SP_PENDING     0x7fffff05u /* saved state: matched, looking for the end */

static int gen_dfa(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
		   char *err, size_t errlen)
{
	struct dfa d;
	struct cg g = { 0 };
	int r, ncls = 0, nlcls, nulcls = -1;
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
	nulcls = cls[0];
	(void)nulcls;
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

	/* the code */
	int loop = label(&g), special = label(&g), matched = label(&g), skip = label(&g),
	    eol_match = label(&g), eol_nomatch = label(&g), slice_end = label(&g),
	    skip_end = label(&g), nul = label(&g), sel_eol = label(&g), unsel_eol = label(&g),
	    fin = label(&g), fin_sel = label(&g), done = label(&g), consumed = label(&g);

	prologue(&g);
	jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, skip);
	here(&g, loop);
	jmp(&g, JGE_X, R6, R7, 0, slice_end);
	put(&g, LDXB, R0, R6, 0, 0);
	put(&g, ADD_K, R6, 0, 0, 1);
	put(&g, ADD_X, R0, R5, 0, 0);
	put(&g, LDXB, R0, R0, 0, 0);
	put(&g, LSH_K, R0, 0, 0, 2);
	put(&g, ADD_X, R0, R8, 0, 0);
	put(&g, ADD_X, R0, R5, 0, 0);
	put(&g, LDXW, R8, R0, 256, 0);
	jmp(&g, JLT_K, R8, 0, (int32_t)SP_BASE, loop);
	here(&g, special);
	jmp(&g, JEQ_K, R8, 0, (int32_t)SP_MATCH, matched);
	jmp(&g, JEQ_K, R8, 0, (int32_t)SP_EOL_MATCH, eol_match);
	jmp(&g, JEQ_K, R8, 0, (int32_t)SP_EOL_NOMATCH, eol_nomatch);
	jmp(&g, JA, 0, 0, 0, nul);

	/* the line matched before its end: find the end */
	here(&g, matched);
	here(&g, skip);
	jmp(&g, JGE_X, R6, R7, 0, skip_end);
	put(&g, LDXB, R0, R6, 0, 0);
	put(&g, ADD_K, R6, 0, 0, 1);
	jmp(&g, JEQ_K, R0, 0, '\n', eol_match);
	if (o->nul_mode == GREP_NUL_EOL)
		jmp(&g, JEQ_K, R0, 0, 0, eol_match);
	if (o->nul_mode == GREP_NUL_STOP)
		jmp(&g, JEQ_K, R0, 0, 0, nul);
	jmp(&g, JA, 0, 0, 0, skip);
	here(&g, skip_end);
	put(&g, MOV_K, R8, 0, 0, (int32_t)SP_PENDING);
	jmp(&g, JA, 0, 0, 0, slice_end);

	/* a line ended at r6 - 1 */
	here(&g, eol_match);
	jmp(&g, JA, 0, 0, 0, o->invert ? unsel_eol : sel_eol);
	here(&g, eol_nomatch);
	jmp(&g, JA, 0, 0, 0, o->invert ? sel_eol : unsel_eol);
	here(&g, sel_eol);
	put(&g, MOV_X, R1, R6, 0, 0);
	put(&g, ADD_K, R1, 0, 0, -1);
	emit_record(&g, R1, -1, -1);
	here(&g, unsel_eol);
	next_line(&g, loop);

	here(&g, nul);
	nul_stop(&g);

	/* the end of this slice */
	here(&g, slice_end);
	put(&g, LDXDW, R1, R10, SLOT_BUFEND, 0);
	jmp(&g, JGE_X, R6, R1, 0, consumed);
	save_and_return(&g, GREP_RET_MORE);
	here(&g, consumed);
	ldctx(&g, R1, CTX(flags));
	put(&g, AND_K, R1, 0, 0, GREP_CTX_EOF);
	jmp(&g, JEQ_K, R1, 0, 0, done);
	/* the file ends: an unterminated last line ends here too */
	put(&g, MOV_X, R1, R6, 0, 0);
	put(&g, LDXDW, R2, R10, SLOT_DELTA, 0);
	put(&g, ADD_X, R1, R2, 0, 0);
	ldctx(&g, R2, CTX(line_start));
	jmp(&g, JEQ_X, R1, R2, 0, done);
	if (!o->invert)
		jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, fin_sel);
	else
		jmp(&g, JEQ_K, R8, 0, (int32_t)SP_PENDING, fin);
	put(&g, MOV_K, R0, 0, 0, nlcls * 4);
	put(&g, ADD_X, R0, R8, 0, 0);
	put(&g, ADD_X, R0, R5, 0, 0);
	put(&g, LDXW, R0, R0, 256, 0);
	jmp(&g, JEQ_K, R0, 0, (int32_t)(o->invert ? SP_EOL_NOMATCH : SP_EOL_MATCH), fin_sel);
	jmp(&g, JA, 0, 0, 0, fin);
	here(&g, fin_sel);
	emit_record(&g, R6, -1, -1);
	here(&g, fin);
	ldctx(&g, R1, CTX(lineno));
	put(&g, ADD_K, R1, 0, 0, 1);
	stctx(&g, CTX(lineno), R1);
	put(&g, LDXDW, R2, R10, SLOT_DELTA, 0);
	put(&g, ADD_X, R2, R6, 0, 0);
	stctx(&g, CTX(line_start), R2);
	put(&g, MOV_K, R8, 0, 0, 0);
	here(&g, done);
	{
		int plain = label(&g);

		put(&g, LDXDW, R0, R10, SLOT_STOP, 0);
		jmp(&g, JNE_K, R0, 0, GREP_RET_MAX, plain);
		save_and_return(&g, GREP_RET_MAX);
		here(&g, plain);
	}
	save_and_return(&g, GREP_RET_DONE);

	r = resolve(&g);
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
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
	}
	free(col);
	free(tab);
	free(g.v);
	free(g.lab);
	free(g.fix);
	dfa_free(&d);
	return r;
}

/* ---- the fixed-string skip loop ------------------------------------------ */

/* How rare a byte is in ordinary text (lower is rarer). */
static int byte_freq(unsigned c)
{
	static const char common[] = " etaoinshrdlcumwfgypbvkjxqz\n";
	const char *p;

	if (c >= 'A' && c <= 'Z')
		c += 32;
	p = c ? strchr(common, (int)c) : NULL;
	if (p)
		return 100 - (int)(p - common);
	if (c >= '0' && c <= '9')
		return 40;
	if (c >= 32 && c < 127)
		return 30;
	return 10;
}

static int is_alpha(unsigned c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }

static int gen_fixed(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
		     char *err, size_t errlen)
{
	struct cg g = { 0 };
	const unsigned char *nd = m->fixed;
	int len = (int)m->fixed_len, k = 0, icase = m->o.icase, r;

	for (int j = 1; j < len; j++)
		if (byte_freq(nd[j]) < byte_freq(nd[k]))
			k = j;
	unsigned rare = nd[k];

	int loop = label(&g), cand = label(&g), back = label(&g), back_done = label(&g),
	    fwd = label(&g), fwd_nl = label(&g), slice_end = label(&g), consumed = label(&g),
	    nul = label(&g), cnt = label(&g), cnt_done = label(&g), cnt_skip = label(&g),
	    after = label(&g);

	int enter8 = label(&g), loop8 = label(&g), group = label(&g), tail = label(&g);
	int fold = icase && is_alpha(rare);

	prologue(&g);
	put(&g, STXDW, R10, R6, SLOT_GROUP, 0);
	if (fold) {
		lddw(&g, R1, UINT64_C(0x2020202020202020));
		put(&g, STXDW, R10, R1, SLOT_CASE, 0);
	}

	/* eight bytes at a time: r0 the word, r2 the rare byte in each byte
	 * (lower case when folding), r3 0x01 and r4 0x80 in each, r1 and r5
	 * scratch; a word with the rare byte (or a NUL) goes byte by byte */
	here(&g, enter8);
	lddw(&g, R2, UINT64_C(0x0101010101010101) * (fold ? (rare | 32) : rare));
	lddw(&g, R3, UINT64_C(0x0101010101010101));
	lddw(&g, R4, UINT64_C(0x8080808080808080));
	here(&g, loop8);
	put(&g, MOV_X, R1, R6, 0, 0);
	put(&g, ADD_K, R1, 0, 0, 8);
	jmp(&g, JGT_X, R1, R7, 0, tail);
	put(&g, LDXDW, R0, R6, 0, 0);
	put(&g, MOV_X, R1, R0, 0, 0);
	if (fold) {
		put(&g, LDXDW, R5, R10, SLOT_CASE, 0);
		put(&g, OR_X, R1, R5, 0, 0);
	}
	put(&g, XOR_X, R1, R2, 0, 0);           /* bytes equal to the rare one: 0 */
	put(&g, MOV_X, R5, R1, 0, 0);           /* r5 = (x - 0x01..) & ~x & 0x80.. */
	put(&g, SUB_X, R5, R3, 0, 0);
	put(&g, XOR_K, R1, 0, 0, -1);
	put(&g, AND_X, R5, R1, 0, 0);
	put(&g, AND_X, R5, R4, 0, 0);
	if (o->nul_mode == GREP_NUL_STOP) {    /* and the same for NUL bytes */
		put(&g, MOV_X, R1, R0, 0, 0);
		put(&g, SUB_X, R1, R3, 0, 0);
		put(&g, XOR_K, R0, 0, 0, -1);
		put(&g, AND_X, R1, R0, 0, 0);
		put(&g, AND_X, R1, R4, 0, 0);
		put(&g, OR_X, R5, R1, 0, 0);
	}
	jmp(&g, JNE_K, R5, 0, 0, group);
	put(&g, ADD_K, R6, 0, 0, 8);
	jmp(&g, JA, 0, 0, 0, loop8);
	here(&g, group);                        /* these eight bytes one at a time */
	put(&g, MOV_X, R1, R6, 0, 0);
	put(&g, ADD_K, R1, 0, 0, 8);
	put(&g, STXDW, R10, R1, SLOT_GROUP, 0);
	jmp(&g, JA, 0, 0, 0, loop);
	here(&g, tail);                         /* the last few: one at a time */
	put(&g, STXDW, R10, R7, SLOT_GROUP, 0);

	here(&g, loop);
	jmp(&g, JGE_X, R6, R7, 0, slice_end);
	put(&g, LDXDW, R1, R10, SLOT_GROUP, 0);
	jmp(&g, JGE_X, R6, R1, 0, enter8);
	put(&g, LDXB, R0, R6, 0, 0);
	put(&g, ADD_K, R6, 0, 0, 1);
	if (icase && is_alpha(rare)) {
		jmp(&g, JEQ_K, R0, 0, (int32_t)(rare | 32), cand);
		jmp(&g, JEQ_K, R0, 0, (int32_t)(rare & ~32u), cand);
	} else {
		jmp(&g, JEQ_K, R0, 0, (int32_t)rare, cand);
	}
	if (o->nul_mode == GREP_NUL_STOP)
		jmp(&g, JEQ_K, R0, 0, 0, nul);
	jmp(&g, JA, 0, 0, 0, loop);

	/* a hit at r6 - 1: the needle would start at r1 */
	here(&g, cand);
	put(&g, MOV_X, R1, R6, 0, 0);
	put(&g, ADD_K, R1, 0, 0, -1 - k);
	ldctx(&g, R2, CTX(line_start));
	put(&g, LDXDW, R3, R10, SLOT_DELTA, 0);
	put(&g, SUB_X, R2, R3, 0, 0);            /* r2 = pointer of the current line start */
	jmp(&g, JLT_X, R1, R2, 0, loop);
	put(&g, MOV_X, R3, R1, 0, 0);
	put(&g, ADD_K, R3, 0, 0, len);
	put(&g, LDXDW, R4, R10, SLOT_BUFEND, 0);
	jmp(&g, JGT_X, R3, R4, 0, loop);
	for (int j = 0; j < len; j++) {
		if (j == k && !(icase && is_alpha(nd[j])))
			continue;
		put(&g, LDXB, R0, R1, (int16_t)j, 0);
		if (icase && is_alpha(nd[j])) {
			put(&g, OR_K, R0, 0, 0, 32);
			jmp(&g, JNE_K, R0, 0, (int32_t)(nd[j] | 32), loop);
		} else {
			jmp(&g, JNE_K, R0, 0, (int32_t)nd[j], loop);
		}
	}
	/* matched: the line starts after the last terminator before r1 */
	put(&g, MOV_X, R4, R1, 0, 0);
	here(&g, back);
	jmp(&g, JLE_X, R4, R2, 0, back_done);
	put(&g, LDXB, R0, R4, -1, 0);
	jmp(&g, JEQ_K, R0, 0, '\n', back_done);
	if (o->nul_mode == GREP_NUL_EOL)
		jmp(&g, JEQ_K, R0, 0, 0, back_done);
	put(&g, ADD_K, R4, 0, 0, -1);
	jmp(&g, JA, 0, 0, 0, back);
	here(&g, back_done);
	/* r8 = newlines in [r2, r4): the lines skipped over */
	put(&g, MOV_K, R8, 0, 0, 0);
	if (o->lineno) {
		put(&g, MOV_X, R0, R2, 0, 0);
		here(&g, cnt);
		jmp(&g, JGE_X, R0, R4, 0, cnt_done);
		put(&g, LDXB, R1, R0, 0, 0);
		put(&g, ADD_K, R0, 0, 0, 1);
		jmp(&g, JNE_K, R1, 0, '\n', cnt_skip);
		put(&g, ADD_K, R8, 0, 0, 1);
		here(&g, cnt_skip);
		if (o->nul_mode == GREP_NUL_EOL) {
			int nz = label(&g);

			jmp(&g, JNE_K, R1, 0, 0, nz);
			put(&g, ADD_K, R8, 0, 0, 1);
			here(&g, nz);
		}
		jmp(&g, JA, 0, 0, 0, cnt);
		here(&g, cnt_done);
	}
	/* the line ends at the next terminator after the needle */
	here(&g, fwd);
	put(&g, LDXDW, R0, R10, SLOT_BUFEND, 0);
	jmp(&g, JGE_X, R3, R0, 0, fwd_nl);
	put(&g, LDXB, R0, R3, 0, 0);
	jmp(&g, JEQ_K, R0, 0, '\n', fwd_nl);
	if (o->nul_mode == GREP_NUL_EOL)
		jmp(&g, JEQ_K, R0, 0, 0, fwd_nl);
	if (o->nul_mode == GREP_NUL_STOP) {
		int nn = label(&g);

		jmp(&g, JNE_K, R0, 0, 0, nn);
		put(&g, MOV_X, R6, R3, 0, 0);
		put(&g, ADD_K, R6, 0, 0, 1);
		jmp(&g, JA, 0, 0, 0, nul);
		here(&g, nn);
	}
	put(&g, ADD_K, R3, 0, 0, 1);
	jmp(&g, JA, 0, 0, 0, fwd);
	here(&g, fwd_nl);
	/* emit [r4, r3) (r6 keeps the end across the helper call), then
	 * lineno += r8 and the next line starts after the terminator */
	put(&g, MOV_X, R6, R3, 0, 0);
	emit_record(&g, R6, R4, o->lineno ? R8 : -1);
	ldctx(&g, R1, CTX(lineno));
	put(&g, ADD_X, R1, R8, 0, 0);
	stctx(&g, CTX(lineno), R1);
	put(&g, ADD_K, R6, 0, 0, 1);
	put(&g, LDXDW, R1, R10, SLOT_BUFEND, 0);
	jmp(&g, JLE_X, R6, R1, 0, after);
	put(&g, MOV_X, R6, R1, 0, 0); /* the unterminated last line */
	here(&g, after);
	next_line(&g, loop);

	here(&g, nul);
	nul_stop(&g);

	here(&g, slice_end);
	put(&g, LDXDW, R1, R10, SLOT_BUFEND, 0);
	jmp(&g, JGE_X, R6, R1, 0, consumed);
	save_and_return(&g, GREP_RET_MORE);
	here(&g, consumed);
	{
		int plain = label(&g);

		put(&g, LDXDW, R0, R10, SLOT_STOP, 0);
		jmp(&g, JNE_K, R0, 0, GREP_RET_MAX, plain);
		save_and_return(&g, GREP_RET_MAX);
		here(&g, plain);
	}
	save_and_return(&g, GREP_RET_DONE);

	r = resolve(&g);
	if (r) {
		snprintf(err, errlen, "program generation failed");
		free(g.v);
	} else {
		out->insns = g.v;
		out->n = g.n;
		out->kind = 1;
	}
	free(g.lab);
	free(g.fix);
	return r;
}

int grep_codegen(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
		 char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!o->table && m->fixed_single && !m->o.words && !m->o.lines && !o->invert && m->fixed_len < 4096 &&
	    !memchr(m->fixed, 0, m->fixed_len))
		return gen_fixed(m, o, out, err, errlen);
	return gen_dfa(m, o, out, err, errlen);
}

void grep_prog_free(struct grep_prog *p)
{
	free(p->insns);
	free(p->rodata);
	memset(p, 0, sizeof(*p));
}

/* ---- the shipped form: a wrapper that views the file, and an ELF object ---- */

#define RCTX(f) ((int16_t)offsetof(struct grep_rctx, f))
#define RV(f) ((int16_t)(offsetof(struct grep_rctx, v) + offsetof(struct arf_prog_file_view, f)))

/*
 * The wrapper arfd runs (see grep_int.h, struct grep_rctx): it asks for a
 * view of the file from v.off (the current line's start), cuts it after its
 * last newline (unless it reaches the end of the file), points the scan
 * context at it, calls the scan program as a function, and emits after the
 * scan's records the context (the cursor) and the bytes of each selected
 * line no longer than inline_max; r0 is then nrec << 8 | the scan's code
 * (GREP_RET_*), or -errno from the view, or GREP_RET_GROW.  Registers: r6 the context, r7 the scan's
 * result, r8/r9 loop state.
 */
static int gen_wrapper(struct cg *g, size_t *call_at)
{
	int ok = label(g), noeof = label(g), trim = label(g), grow = label(g), trimmed = label(g),
	    setlen = label(g), loop = label(g), next = label(g), done = label(g);

	put(g, MOV_X, R6, R1, 0, 0);
	put(g, MOV_X, R1, R6, 0, 0);
	put(g, ADD_K, R1, 0, 0, RCTX(v));
	put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct arf_prog_file_view));
	put(g, CALL, 0, 0, 0, ARF_PH_FILE_VIEW);
	jmp(g, JSGE_K, R0, 0, 0, ok);
	put(g, EXIT, 0, 0, 0, 0);
	here(g, ok);
	put(g, LDXDW, R1, R6, RV(addr), 0);
	put(g, STXDW, R6, R1, RCTX(c.buf), 0);
	put(g, LDXDW, R2, R6, RV(got), 0);
	put(g, LDXDW, R3, R6, RV(off), 0);
	put(g, STXDW, R6, R3, RCTX(c.base), 0);
	put(g, MOV_X, R4, R3, 0, 0);
	put(g, ADD_X, R4, R2, 0, 0);
	put(g, LDXDW, R5, R6, RV(size), 0);
	put(g, MOV_K, R0, 0, 0, 0);
	jmp(g, JLT_X, R4, R5, 0, noeof);
	put(g, MOV_K, R0, 0, 0, GREP_CTX_EOF);
	here(g, noeof);
	put(g, STXDW, R6, R0, RCTX(c.flags), 0);
	jmp(g, JNE_K, R0, 0, 0, setlen);
	/* not the end of the file: cut after the last newline past pos */
	put(g, LDXDW, R7, R6, RCTX(c.pos), 0);
	put(g, MOV_X, R8, R1, 0, 0);
	put(g, ADD_X, R8, R2, 0, 0);
	put(g, MOV_X, R9, R1, 0, 0);
	put(g, ADD_X, R9, R7, 0, 0);
	here(g, trim);
	jmp(g, JLE_X, R8, R9, 0, grow);
	put(g, LDXB, R0, R8, -1, 0);
	jmp(g, JEQ_K, R0, 0, '\n', trimmed);
	put(g, ADD_K, R8, 0, 0, -1);
	jmp(g, JA, 0, 0, 0, trim);
	here(g, grow);
	put(g, MOV_K, R0, 0, 0, GREP_RET_GROW);
	put(g, EXIT, 0, 0, 0, 0);
	here(g, trimmed);
	put(g, MOV_X, R2, R8, 0, 0);
	put(g, SUB_X, R2, R1, 0, 0);
	here(g, setlen);
	put(g, STXDW, R6, R2, RCTX(c.len), 0);
	put(g, MOV_X, R1, R6, 0, 0);
	*call_at = g->n;
	put(g, CALL, 0, 1 /* local */, 0, 0);
	put(g, MOV_X, R7, R0, 0, 0);
	put(g, MOV_X, R1, R6, 0, 0);
	put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct grep_ctx));
	put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	put(g, LDXDW, R8, R6, RCTX(c.nrec), 0);
	lddw(g, R9, ARF_MC_ADDR(ARF_MC_REGION_OUT, 0));
	here(g, loop);
	jmp(g, JEQ_K, R8, 0, 0, done);
	put(g, LDXDW, R2, R9, 16, 0);
	jmp(g, JEQ_K, R2, 0, 0, next);
	put(g, LDXDW, R3, R6, RCTX(inline_max), 0);
	jmp(g, JGT_X, R2, R3, 0, next);
	put(g, LDXDW, R1, R9, 0, 0);
	put(g, LDXDW, R3, R6, RV(off), 0);
	put(g, SUB_X, R1, R3, 0, 0);
	put(g, LDXDW, R3, R6, RV(addr), 0);
	put(g, ADD_X, R1, R3, 0, 0);
	put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	here(g, next);
	put(g, ADD_K, R9, 0, 0, (int32_t)sizeof(struct grep_rec));
	put(g, ADD_K, R8, 0, 0, -1);
	jmp(g, JA, 0, 0, 0, loop);
	here(g, done);
	put(g, LDXDW, R0, R6, RCTX(c.nrec), 0);  /* r0 = nrec << 8 | the scan's code */
	put(g, LSH_K, R0, 0, 0, 8);
	put(g, ADD_X, R0, R7, 0, 0);
	put(g, EXIT, 0, 0, 0, 0);
	return resolve(g);
}

static void put_shdr(uint8_t *at, uint32_t name, uint32_t type, uint64_t flags, uint64_t off,
		     uint64_t size, uint64_t align)
{
	Elf64_Shdr sh;

	memset(&sh, 0, sizeof(sh));
	sh.sh_name = name;
	sh.sh_type = type;
	sh.sh_flags = flags;
	sh.sh_offset = off;
	sh.sh_size = size;
	sh.sh_addralign = align;
	memcpy(at, &sh, sizeof(sh));
}

int grep_codegen_ship(const struct grep_prog *gp, uint8_t **elf, size_t *elf_len)
{
	static const char shstr[] = "\0.text\0.rodata\0.shstrtab";
	struct cg g = { 0 };
	size_t call_at = 0, n, text_off, ro_off, str_off, sh_off, len;
	int nsec = gp->rodata_len ? 4 : 3, r;
	uint8_t *o;

	r = gen_wrapper(&g, &call_at);
	if (r) {
		free(g.v);
		free(g.lab);
		free(g.fix);
		return r;
	}
	g.v[call_at].imm = (int32_t)(g.n - call_at - 1);
	n = g.n + gp->n;
	text_off = sizeof(Elf64_Ehdr);
	ro_off = text_off + n * sizeof(struct arf_mc_insn);
	str_off = ro_off + gp->rodata_len;
	sh_off = (str_off + sizeof(shstr) + 7) & ~(size_t)7;
	len = sh_off + (size_t)nsec * sizeof(Elf64_Shdr);
	o = calloc(1, len);
	if (!o) {
		r = -ENOMEM;
		goto out;
	}
	Elf64_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_REL;
	eh.e_machine = EM_BPF;
	eh.e_version = EV_CURRENT;
	eh.e_shoff = sh_off;
	eh.e_ehsize = sizeof(Elf64_Ehdr);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)nsec;
	eh.e_shstrndx = (uint16_t)(nsec - 1);
	memcpy(o, &eh, sizeof(eh));
	memcpy(o + text_off, g.v, g.n * sizeof(struct arf_mc_insn));
	memcpy(o + text_off + g.n * sizeof(struct arf_mc_insn), gp->insns,
	       gp->n * sizeof(struct arf_mc_insn));
	if (gp->rodata_len)
		memcpy(o + ro_off, gp->rodata, gp->rodata_len);
	memcpy(o + str_off, shstr, sizeof(shstr));
	uint8_t *sh = o + sh_off + sizeof(Elf64_Shdr); /* [0] stays zero */
	put_shdr(sh, 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, text_off,
		 n * sizeof(struct arf_mc_insn), 8);
	sh += sizeof(Elf64_Shdr);
	if (gp->rodata_len) {
		put_shdr(sh, 7, SHT_PROGBITS, SHF_ALLOC, ro_off, gp->rodata_len, 8);
		sh += sizeof(Elf64_Shdr);
	}
	put_shdr(sh, 15, SHT_STRTAB, 0, str_off, sizeof(shstr), 1);
	*elf = o;
	*elf_len = len;
out:
	free(g.v);
	free(g.lab);
	free(g.fix);
	return r;
}
