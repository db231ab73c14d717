/* SPDX-License-Identifier: MIT */
/*
 * The shipped form of a scan program (remote.c sends it): a wrapper that
 * asks arfd for a view of the file and calls the scan as a function, both
 * in one relocatable eBPF ELF object (.text, .rodata) for arf_exec.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"

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
	int ok = cg_label(g), noeof = cg_label(g), grow = cg_label(g), trimmed = cg_label(g),
	    setlen = cg_label(g), loop = cg_label(g), next = cg_label(g), done = cg_label(g);

	cg_put(g, MOV_X, R6, R1, 0, 0);
	cg_put(g, MOV_X, R1, R6, 0, 0);
	cg_put(g, ADD_K, R1, 0, 0, RCTX(v));
	cg_put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct arf_prog_file_view));
	cg_put(g, CALL, 0, 0, 0, ARF_PH_FILE_VIEW);
	cg_jmp(g, JSGE_K, R0, 0, 0, ok);
	cg_put(g, EXIT, 0, 0, 0, 0);
	cg_here(g, ok);
	cg_put(g, LDXDW, R1, R6, RV(addr), 0);
	cg_put(g, STXDW, R6, R1, RCTX(c.buf), 0);
	cg_put(g, LDXDW, R2, R6, RV(got), 0);
	cg_put(g, LDXDW, R3, R6, RV(off), 0);
	cg_put(g, STXDW, R6, R3, RCTX(c.base), 0);
	cg_put(g, MOV_X, R4, R3, 0, 0);
	cg_put(g, ADD_X, R4, R2, 0, 0);
	cg_put(g, LDXDW, R5, R6, RV(size), 0);
	cg_put(g, MOV_K, R0, 0, 0, 0);
	cg_jmp(g, JLT_X, R4, R5, 0, noeof);
	cg_put(g, MOV_K, R0, 0, 0, GREP_CTX_EOF);
	cg_here(g, noeof);
	cg_put(g, STXDW, R6, R0, RCTX(c.flags), 0);
	cg_jmp(g, JNE_K, R0, 0, 0, setlen);
	/* not the end of the file: cut after the last newline past pos */
	cg_put(g, LDXDW, R7, R6, RCTX(c.pos), 0);
	cg_put(g, MOV_X, R8, R1, 0, 0);
	cg_put(g, ADD_X, R8, R2, 0, 0);
	cg_put(g, MOV_X, R9, R1, 0, 0);
	cg_put(g, ADD_X, R9, R7, 0, 0);
	cg_back_to_nl(g, R8, R9, 0, grow, trimmed);
	cg_here(g, grow);
	cg_put(g, MOV_K, R0, 0, 0, GREP_RET_GROW);
	cg_put(g, EXIT, 0, 0, 0, 0);
	cg_here(g, trimmed);
	cg_put(g, MOV_X, R2, R8, 0, 0);
	cg_put(g, SUB_X, R2, R1, 0, 0);
	cg_here(g, setlen);
	cg_put(g, STXDW, R6, R2, RCTX(c.len), 0);
	cg_put(g, MOV_X, R1, R6, 0, 0);
	*call_at = g->n;
	cg_put(g, CALL, 0, 1 /* local */, 0, 0);
	cg_put(g, MOV_X, R7, R0, 0, 0);
	cg_put(g, MOV_X, R1, R6, 0, 0);
	cg_put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct grep_ctx));
	cg_put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	cg_put(g, LDXDW, R8, R6, RCTX(c.nrec), 0);
	cg_lddw(g, R9, ARF_MC_ADDR(ARF_MC_REGION_OUT, 0));
	cg_here(g, loop);
	cg_jmp(g, JEQ_K, R8, 0, 0, done);
	cg_put(g, LDXDW, R2, R9, 16, 0);
	cg_jmp(g, JEQ_K, R2, 0, 0, next);
	cg_put(g, LDXDW, R3, R6, RCTX(inline_max), 0);
	cg_jmp(g, JGT_X, R2, R3, 0, next);
	cg_put(g, LDXDW, R1, R9, 0, 0);
	cg_put(g, LDXDW, R3, R6, RV(off), 0);
	cg_put(g, SUB_X, R1, R3, 0, 0);
	cg_put(g, LDXDW, R3, R6, RV(addr), 0);
	cg_put(g, ADD_X, R1, R3, 0, 0);
	cg_put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	cg_here(g, next);
	cg_put(g, ADD_K, R9, 0, 0, (int32_t)sizeof(struct grep_rec));
	cg_put(g, ADD_K, R8, 0, 0, -1);
	cg_jmp(g, JA, 0, 0, 0, loop);
	cg_here(g, done);
	cg_put(g, LDXDW, R0, R6, RCTX(c.nrec), 0);  /* r0 = nrec << 8 | the scan's code */
	cg_put(g, LSH_K, R0, 0, 0, 8);
	cg_put(g, ADD_X, R0, R7, 0, 0);
	cg_put(g, EXIT, 0, 0, 0, 0);
	return cg_resolve(g);
}

#define BCTX(f) ((int16_t)offsetof(struct grep_bctx, f))
#define BV(f) ((int16_t)(offsetof(struct grep_bctx, v) + offsetof(struct arf_prog_file_view, f)))
#define BC(f) ((int16_t)(offsetof(struct grep_bctx, c) + offsetof(struct grep_ctx, f)))

/* r0 = r0 * 24 (a record's size), with r1 as scratch */
static void mul_rec(struct cg *g, int r, int t)
{
	_Static_assert(sizeof(struct grep_rec) == 24, "grep_rec");
	cg_put(g, LSH_K, r, 0, 0, 3);
	cg_put(g, MOV_X, t, r, 0, 0);
	cg_put(g, LSH_K, t, 0, 0, 1);
	cg_put(g, ADD_X, r, t, 0, 0);
}

/*
 * The batch wrapper (grep_int.h, struct grep_bctx).  r6 the context (the
 * scan's context is its first member, so r6 is also the scan's r1), r7
 * the file's result, r8/r9 loop state; every count lives in the context,
 * since helper calls take r1-r5.
 */
static int gen_batch_wrapper(struct cg *g, size_t *call_at)
{
	int next = cg_label(g), finish = cg_label(g), viewed = cg_label(g), whole = cg_label(g),
	    patch = cg_label(g), no_inline = cg_label(g), sum = cg_label(g), sum_skip = cg_label(g),
	    sum_done = cg_label(g), emit = cg_label(g), emit_skip = cg_label(g), scanned = cg_label(g),
	    neg = cg_label(g);
	uint64_t out = ARF_MC_ADDR(ARF_MC_REGION_OUT, 0);

	cg_put(g, MOV_X, R6, R1, 0, 0);
	cg_put(g, STDW, R6, 0, BCTX(i), 0);
	cg_put(g, STDW, R6, 0, BCTX(out_at), 0);
	cg_here(g, next);
	cg_put(g, LDXDW, R1, R6, BCTX(i), 0);
	cg_put(g, LDXDW, R2, R6, BCTX(nfiles), 0);
	cg_jmp(g, JGE_X, R1, R2, 0, finish);
	/* room for the header and max_rec records, or the run ends here */
	cg_put(g, LDXDW, R3, R6, BCTX(max_rec), 0);
	mul_rec(g, R3, R4);
	cg_put(g, LDXDW, R4, R6, BCTX(out_at), 0);
	cg_put(g, ADD_X, R3, R4, 0, 0);
	cg_put(g, ADD_K, R3, 0, 0, (int32_t)sizeof(struct grep_bres));
	cg_put(g, LDXDW, R4, R6, BCTX(out_room), 0);
	cg_jmp(g, JGT_X, R3, R4, 0, finish);
	/* the header's place, filled in once the file is done */
	cg_put(g, LDXDW, R1, R6, BCTX(out_at), 0);
	cg_put(g, STXDW, R6, R1, BCTX(hdr_at), 0);
	cg_put(g, ADD_K, R1, 0, 0, (int32_t)sizeof(struct grep_bres));
	cg_put(g, STXDW, R6, R1, BCTX(out_at), 0);
	cg_put(g, STDW, R6, 0, BCTX(fl), 0);
	cg_put(g, STDW, R6, 0, BC(nrec), 0);
	cg_put(g, MOV_X, R1, R6, 0, 0);
	cg_put(g, ADD_K, R1, 0, 0, BCTX(zero));
	cg_put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct grep_bres));
	cg_put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	/* the view of file i: all of it, from its start */
	cg_put(g, LDXDW, R1, R6, BCTX(i), 0);
	cg_put(g, LSH_K, R1, 0, 0, 4);
	cg_put(g, ADD_X, R1, R6, 0, 0);
	cg_put(g, LDXDW, R2, R1, BCTX(f), 0);
	cg_put(g, STXDW, R6, R2, BV(ino), 0);
	cg_put(g, LDXDW, R2, R1, (int16_t)(BCTX(f) + 8), 0); /* gen and pad0 */
	cg_put(g, STXDW, R6, R2, BV(gen), 0);
	cg_put(g, STDW, R6, 0, BV(off), 0);
	cg_put(g, LDXDW, R2, R6, BCTX(view_len), 0);
	cg_put(g, STXDW, R6, R2, BV(len), 0);
	cg_put(g, MOV_X, R1, R6, 0, 0);
	cg_put(g, ADD_K, R1, 0, 0, BCTX(v));
	cg_put(g, MOV_K, R2, 0, 0, (int32_t)sizeof(struct arf_prog_file_view));
	cg_put(g, CALL, 0, 0, 0, ARF_PH_FILE_VIEW);
	cg_jmp(g, JSGE_K, R0, 0, 0, viewed);
	cg_put(g, MOV_X, R7, R0, 0, 0);
	cg_jmp(g, JA, 0, 0, 0, neg);
	cg_here(g, viewed);
	/* longer than its view (it grew since the listing): the client's */
	cg_put(g, LDXDW, R2, R6, BV(got), 0);
	cg_put(g, LDXDW, R3, R6, BV(size), 0);
	cg_jmp(g, JGE_X, R2, R3, 0, whole);
	cg_put(g, MOV_K, R7, 0, 0, GREP_RET_GROW);
	cg_jmp(g, JA, 0, 0, 0, neg);
	cg_here(g, whole);
	/* the scan's context: the whole view, cursor at its start */
	cg_put(g, LDXDW, R1, R6, BV(addr), 0);
	cg_put(g, STXDW, R6, R1, BC(buf), 0);
	cg_put(g, STXDW, R6, R2, BC(len), 0);
	cg_put(g, STDW, R6, 0, BC(base), 0);
	cg_put(g, STDW, R6, 0, BC(flags), GREP_CTX_EOF);
	cg_put(g, STDW, R6, 0, BC(pos), 0);
	cg_put(g, STDW, R6, 0, BC(line_start), 0);
	cg_put(g, STDW, R6, 0, BC(lineno), 0);
	cg_put(g, STDW, R6, 0, BC(state), 0);
	cg_put(g, STDW, R6, 0, BC(nsel), 0);
	cg_put(g, LDXDW, R1, R6, BCTX(max_sel), 0);
	cg_put(g, STXDW, R6, R1, BC(max_sel), 0);
	cg_put(g, LDXDW, R1, R6, BCTX(max_rec), 0);
	cg_put(g, STXDW, R6, R1, BC(max_rec), 0);
	cg_put(g, STDW, R6, 0, BC(limit), 0);
	cg_put(g, STDW, R6, 0, BC(nul_at), 0);
	cg_put(g, MOV_X, R1, R6, 0, 0);
	*call_at = g->n;
	cg_put(g, CALL, 0, 1 /* local */, 0, 0);
	cg_put(g, MOV_X, R7, R0, 0, 0);
	cg_here(g, scanned);
	/* the records are out: count them */
	cg_put(g, LDXDW, R1, R6, BC(nrec), 0);
	mul_rec(g, R1, R2);
	cg_put(g, LDXDW, R2, R6, BCTX(out_at), 0);
	cg_put(g, ADD_X, R2, R1, 0, 0);
	cg_put(g, STXDW, R6, R2, BCTX(out_at), 0);
	/* the short lines' bytes, when the file is done and they all fit */
	cg_put(g, LDXDW, R1, R6, BCTX(inline_max), 0);
	cg_jmp(g, JEQ_K, R1, 0, 0, no_inline);
	cg_jmp(g, JEQ_K, R7, 0, GREP_RET_DONE, sum);
	cg_jmp(g, JNE_K, R7, 0, GREP_RET_MAX, no_inline);
	cg_here(g, sum);
	cg_lddw(g, R9, out);
	cg_put(g, LDXDW, R1, R6, BCTX(hdr_at), 0);
	cg_put(g, ADD_X, R9, R1, 0, 0);
	cg_put(g, ADD_K, R9, 0, 0, (int32_t)sizeof(struct grep_bres));
	cg_put(g, LDXDW, R8, R6, BC(nrec), 0);
	cg_put(g, MOV_K, R2, 0, 0, 0);
	cg_put(g, LDXDW, R5, R6, BCTX(inline_max), 0);
	cg_put(g, MOV_X, R3, R8, 0, 0);
	cg_put(g, MOV_X, R0, R9, 0, 0);
	{
		int l = cg_label(g);

		cg_here(g, l);
		cg_jmp(g, JEQ_K, R3, 0, 0, sum_done);
		cg_put(g, LDXDW, R4, R0, 16, 0);
		cg_jmp(g, JEQ_K, R4, 0, 0, sum_skip);
		cg_jmp(g, JGT_X, R4, R5, 0, sum_skip);
		cg_put(g, ADD_X, R2, R4, 0, 0);
		cg_here(g, sum_skip);
		cg_put(g, ADD_K, R0, 0, 0, (int32_t)sizeof(struct grep_rec));
		cg_put(g, ADD_K, R3, 0, 0, -1);
		cg_jmp(g, JA, 0, 0, 0, l);
	}
	cg_here(g, sum_done);
	cg_put(g, LDXDW, R1, R6, BCTX(out_at), 0);
	cg_put(g, ADD_X, R2, R1, 0, 0);
	cg_put(g, LDXDW, R1, R6, BCTX(out_room), 0);
	cg_jmp(g, JGT_X, R2, R1, 0, no_inline);
	cg_put(g, STDW, R6, 0, BCTX(fl), GREP_BRES_INLINE);
	cg_here(g, emit);
	cg_jmp(g, JEQ_K, R8, 0, 0, no_inline);
	cg_put(g, LDXDW, R2, R9, 16, 0);
	cg_jmp(g, JEQ_K, R2, 0, 0, emit_skip);
	cg_put(g, LDXDW, R3, R6, BCTX(inline_max), 0);
	cg_jmp(g, JGT_X, R2, R3, 0, emit_skip);
	cg_put(g, LDXDW, R3, R6, BCTX(out_at), 0);
	cg_put(g, ADD_X, R3, R2, 0, 0);
	cg_put(g, STXDW, R6, R3, BCTX(out_at), 0);
	cg_put(g, LDXDW, R1, R9, 0, 0);            /* base 0: the offset is the index */
	cg_put(g, LDXDW, R3, R6, BV(addr), 0);
	cg_put(g, ADD_X, R1, R3, 0, 0);
	cg_put(g, CALL, 0, 0, 0, GREP_HELPER_EMIT);
	cg_here(g, emit_skip);
	cg_put(g, ADD_K, R9, 0, 0, (int32_t)sizeof(struct grep_rec));
	cg_put(g, ADD_K, R8, 0, 0, -1);
	cg_jmp(g, JA, 0, 0, 0, emit);
	cg_here(g, no_inline);
	/* the header: nrec << 8 | code */
	cg_put(g, LDXDW, R0, R6, BC(nrec), 0);
	cg_put(g, LSH_K, R0, 0, 0, 8);
	cg_put(g, ADD_X, R0, R7, 0, 0);
	cg_put(g, MOV_X, R7, R0, 0, 0);
	cg_here(g, neg);
	cg_here(g, patch);
	cg_lddw(g, R1, out);
	cg_put(g, LDXDW, R2, R6, BCTX(hdr_at), 0);
	cg_put(g, ADD_X, R1, R2, 0, 0);
	cg_put(g, STXDW, R1, R7, 0, 0);
	cg_put(g, LDXDW, R2, R6, BCTX(fl), 0);
	cg_put(g, STXDW, R1, R2, 8, 0);
	cg_put(g, LDXDW, R1, R6, BCTX(i), 0);
	cg_put(g, ADD_K, R1, 0, 0, 1);
	cg_put(g, STXDW, R6, R1, BCTX(i), 0);
	cg_jmp(g, JA, 0, 0, 0, next);
	cg_here(g, finish);
	cg_put(g, LDXDW, R0, R6, BCTX(i), 0);
	cg_put(g, EXIT, 0, 0, 0, 0);
	return cg_resolve(g);
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

static int ship(const struct grep_prog *gp, int (*wrapper)(struct cg *, size_t *), uint8_t **elf,
		size_t *elf_len)
{
	static const char shstr[] = "\0.text\0.rodata\0.shstrtab";
	struct cg g = { 0 };
	size_t call_at = 0, n, text_off, ro_off, str_off, sh_off, len;
	int nsec = gp->rodata_len ? 4 : 3, r;
	uint8_t *o;

	r = wrapper(&g, &call_at);
	if (r) {
		cg_free(&g);
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
	cg_free(&g);
	return r;
}

int grep_codegen_ship(const struct grep_prog *gp, uint8_t **elf, size_t *elf_len)
{
	return ship(gp, gen_wrapper, elf, elf_len);
}

int grep_codegen_ship_batch(const struct grep_prog *gp, uint8_t **elf, size_t *elf_len)
{
	return ship(gp, gen_batch_wrapper, elf, elf_len);
}
