/* SPDX-License-Identifier: MIT */
/*
 * The code generator's private header, shared by its rooms only (arf-grep's
 * shared header stays grep_int.h): the tiny assembler with labels
 * (codegen_asm.c), the opcodes and registers it speaks, the stack slots and
 * the emitters both scan shapes use (codegen.c), the line work of the
 * table walker (codegen_lines.c), and the two shapes (codegen_dfa.c,
 * codegen_fixed.c).  The shipped wrapper and its ELF object
 * are codegen_ship.c.
 *
 * Emitting never fails by itself: the first allocation failure or
 * out-of-range jump is kept in cg.rc, later emits do nothing, and
 * cg_resolve() reports it, so a generator checks once at the end.
 */
#ifndef ARF_GREP_CODEGEN_INT_H
#define ARF_GREP_CODEGEN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "grep_int.h"

/* ---- the assembler (codegen_asm.c) ---- */

struct cg {
	struct arf_mc_insn *v; /* the instructions so far (malloc'd; the caller takes them) */
	size_t n, cap;
	int rc;        /* the first failure (-ENOMEM, -E2BIG), 0 until then */
	int *lab;      /* label -> instruction index, -1 unset */
	int nlab;
	struct { size_t at; int lab; } *fix; /* jumps to patch once labels are placed */
	size_t nfix, capfix;
};

/* opcodes */
enum {
	ADD_K = 0x07, ADD_X = 0x0f, SUB_K = 0x17, SUB_X = 0x1f, OR_K = 0x47, OR_X = 0x4f,
	AND_K = 0x57, AND_X = 0x5f, XOR_K = 0xa7, XOR_X = 0xaf, LSH_K = 0x67, RSH_K = 0x77,
	MUL_X = 0x2f, MOV_K = 0xb7, MOV_X = 0xbf,
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

void cg_put(struct cg *g, uint8_t op, int dst, int src, int16_t off, int32_t imm);
/* A new label, placed later by cg_here(). */
int cg_label(struct cg *g);
void cg_here(struct cg *g, int l);
/* A jump to label l (opcode op; imm or src register as given). */
void cg_jmp(struct cg *g, uint8_t op, int dst, int src, int32_t imm, int l);
/* Patch the jumps: 0, or cg.rc (-ENOMEM; -E2BIG for an unplaced label or a
 * jump farther than 16 bits reach). */
int cg_resolve(struct cg *g);
/* Free what g holds (its instructions too, unless the caller took them and
 * set g->v to NULL). */
void cg_free(struct cg *g);
void cg_lddw(struct cg *g, int dst, uint64_t v);
/* Load and store a u64 field of the context (r9). */
void cg_ldctx(struct cg *g, int dst, int16_t off);
void cg_stctx(struct cg *g, int16_t off, int src);

/* ---- what both scan shapes share (codegen.c) ---- */

#define SLOT_DELTA (-8)
#define SLOT_REC (-32)   /* off at -32, lineno at -24, len at -16 */
#define SLOT_STOP (-40)
#define SLOT_BUFEND (-48)
#define SLOT_GROUP (-56)  /* skip loop: where the byte-at-a-time scan hands back */
#define SLOT_CASE (-64)   /* skip loop: 0x20 in every byte, for case folding */
#define SLOT_SKIPFROM (-72) /* table walker: where its start-state skip began */
#define SLOT_R9 (-88)     /* cg_scan_set(): r9 kept while it holds a word */
#define SLOT_LAZYRET (-96) /* table walker: where its one lazy_lines() returns to */

/* Program entry: registers and stack slots as codegen.c's comment says. */
void cg_prologue(struct cg *g);
/* Saves the cursor (r6 -> pos, r8 -> state) and returns code. */
void cg_save_and_return(struct cg *g, int code);
/* The record of the line ending at end_reg (see codegen.c). */
void cg_emit_record(struct cg *g, int end_reg, int start_reg, int extra_reg);
/* After a line ended at r6 - 1: count it (with count: line numbers are
 * kept), the next starts at r6 in row 0. */
void cg_line_advance(struct cg *g, int count);
/* cg_line_advance(), then return if a stop is set, else on to loop. */
void cg_next_line(struct cg *g, int loop, int count);
/* The buffer is done: GREP_RET_MAX if max_sel was reached, else _DONE. */
void cg_return_done(struct cg *g);
/* A NUL at r6 - 1 stopped the scan. */
void cg_nul_stop(struct cg *g);
/* The exits both shapes place after their loop: at nul, cg_nul_stop();
 * at slice_end, the cursor saved and GREP_RET_MORE unless the slice is
 * consumed; code placed next runs at consumed (the whole buffer scanned). */
void cg_slice_exits(struct cg *g, int nul, int slice_end, int consumed);

/* Moves register ptr back to just after the last newline (with nul_eol, or
 * NUL) in [lo, ptr) and jumps to at_nl; to at_lo once ptr <= lo (none).
 * Clobbers r0. */
void cg_back_to_nl(struct cg *g, int ptr, int lo, int nul_eol, int at_lo, int at_nl);

/*
 * What the scan loop of cg_scan_set() looks for: up to SCAN_MAX_TESTS
 * tests, each a byte, or a letter in either case (the byte OR 0x20 equal
 * to the lower case one), optionally followed by a second such byte (a
 * pair: both must be there, side by side), and after a pair's second
 * byte maybe a third (triple; not in either case).
 */
#define SCAN_MAX_TESTS 4
struct scan_set {
	int n;
	struct scan_test {
		uint8_t byte, fold;   /* the byte (lower case when fold: either case) */
		uint8_t pair;         /* 1: byte2 must follow */
		uint8_t byte2, fold2; /* the byte after it, as byte and fold */
		uint8_t triple;       /* 1 (with pair, not fold2): byte3 must follow byte2 */
		uint8_t byte3;
	} t[SCAN_MAX_TESTS];
};

/* r6 += the index of the byte whose 0x80 is the one bit set in bit (a
 * word test's lowest flag, isolated).  Clobbers bit and t. */
void cg_to_flag(struct cg *g, int bit, int t);
/* Adds test x to s unless it is there: 0, or -1 when s is full. */
int cg_scan_add(struct scan_set *s, struct scan_test x);
/* The loop that moves r6 to the next place a test of s holds before r7:
 * eight bytes a turn (the "has a zero byte" test: the lowest byte it
 * flags is the place; a place may be one where no test holds, never past
 * the first where one does); in the last bytes, fewer than a turn needs
 * (sixteen with pairs: the next word is loaded a turn ahead), every byte
 * is such a place (the caller looks at it).  A word where a test of s
 * holds is tested again with s3 (when given: s with third bytes), and
 * passed when none of those holds.  With count, r4 += the newlines in
 * the bytes r6 moved past.  Jumps to found with r6 at the
 * place (not consumed), to end with r6 == r7.  Clobbers r0-r3 and r5
 * (r5 reloaded before either jump), r4 without count; with pairs or
 * count, r8 too (0 at either jump); r7 as it was at either jump. */
void cg_scan_set(struct cg *g, const struct scan_set *s, const struct scan_set *s3, int count,
		 int found, int end);

/* ---- line work (codegen_lines.c) ---- */

/* dst = 0x80 in each byte of the word in src that is a newline, 0 in
 * every other (exact).  Clobbers t1, t2; all four registers distinct. */
void cg_nl_flags(struct cg *g, int dst, int src, int t1, int t2);
/* reg = the number of bytes of reg that have 0x80 set, given that no
 * other bit is.  Clobbers t. */
void cg_flags_sum(struct cg *g, int reg, int t);
/* Moves r6 to the next byte before r7 that may end a line: a newline, a
 * NUL unless nul_mode is GREP_NUL_BYTE (and there, maybe 0x02 or 0x08:
 * the caller looks at the byte), sixteen bytes a turn; in the last bytes,
 * fewer than a turn, every byte is such a place.  Jumps to found with r6
 * at it (not consumed), to end with r6 == r7.  Clobbers r0-r3 and r5
 * (reloaded); keeps r4 and r8. */
void cg_line_skip(struct cg *g, int nul_mode, int found, int end);
/* The table walker's start-state skip under lazy (codegen_dfa.c) ran past
 * the ends of lines from SLOT_SKIPFROM to r6: the context's line start is
 * moved to after the last newline in [SLOT_SKIPFROM, r6), and with lineno
 * its line number up by r4 (the newlines the skip counted there).
 * Clobbers r0-r5 (r5 reloaded). */
void cg_lazy_lines(struct cg *g, int lineno);

/* ---- the shapes: grep_codegen()'s contract ---- */

/* Table entries at or above SP_BASE (codegen_dfa.c) */
#define SP_BASE        0x7fffff00u
#define SP_MATCH       0x7fffff01u /* the line matched; its end is still ahead */
#define SP_EOL_MATCH   0x7fffff02u /* a line ended; it matched */
#define SP_EOL_NOMATCH 0x7fffff03u /* a line ended; it did not match */
#define SP_NUL         0x7fffff04u /* a NUL (GREP_NUL_STOP) */
#define SP_PENDING     0x7fffff05u /* saved state: matched, looking for the end */
#define SP_START       0x7fffff06u /* back to the first row: the start-state skip */

/* The DFA's table as the program's read-only data (out->rodata, nstates);
 * *nlcls: the newline's byte class; start_sp: an entry for the first row
 * is SP_START instead of 0.  0, -E2BIG (message in err), -ENOMEM. */
int cg_dfa_table(struct matcher *m, const struct grep_gen_opts *o, int start_sp,
		 struct grep_prog *out, int *nlcls, char *err, size_t errlen);
int cg_gen_dfa(struct matcher *m, const struct grep_gen_opts *o, struct grep_prog *out,
	       char *err, size_t errlen);
/* The skip loop for needle l: the pattern itself (dfa 0), or a regex's
 * required bytes, each line holding them then walked through the table
 * (dfa 1; kind 2). */
int cg_gen_fixed(struct matcher *m, const struct grep_lit *l, int dfa,
		 const struct grep_gen_opts *o, struct grep_prog *out, char *err, size_t errlen);

#endif
