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
	int ok = cg_label(g), noeof = cg_label(g), trim = cg_label(g), grow = cg_label(g), trimmed = cg_label(g),
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
	cg_here(g, trim);
	cg_jmp(g, JLE_X, R8, R9, 0, grow);
	cg_put(g, LDXB, R0, R8, -1, 0);
	cg_jmp(g, JEQ_K, R0, 0, '\n', trimmed);
	cg_put(g, ADD_K, R8, 0, 0, -1);
	cg_jmp(g, JA, 0, 0, 0, trim);
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
