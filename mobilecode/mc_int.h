/* SPDX-License-Identifier: MIT */
/*
 * mobilecode/ internals: the instruction encoding of RFC 9669 as constants,
 * the layouts behind the opaque types of arf_mc.h, and what the files of
 * the module share (message formatting, the mnemonic tables used by both the
 * assembler and the disassembler).  Not installed, not for other modules.
 */
#ifndef ARF_MC_INT_H
#define ARF_MC_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "arf_mc.h"

_Static_assert(sizeof(struct arf_mc_insn) == 8, "an instruction is 8 bytes");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mobilecode assumes a little-endian host (instructions are read in place)"
#endif

/* Instruction classes (low 3 bits of the opcode). */
#define MC_LD    0x00
#define MC_LDX   0x01
#define MC_ST    0x02
#define MC_STX   0x03
#define MC_ALU   0x04
#define MC_JMP   0x05
#define MC_JMP32 0x06
#define MC_ALU64 0x07
#define MC_CLASS(op) ((op) & 0x07)

/* Arithmetic and jump classes: source bit and operation (high 4 bits). */
#define MC_K 0x00 /* immediate operand */
#define MC_X 0x08 /* register operand */
#define MC_OPCODE(op) ((op) & 0xf0)

#define MC_ADD  0x00
#define MC_SUB  0x10
#define MC_MUL  0x20
#define MC_DIV  0x30
#define MC_OR   0x40
#define MC_AND  0x50
#define MC_LSH  0x60
#define MC_RSH  0x70
#define MC_NEG  0x80
#define MC_MOD  0x90
#define MC_XOR  0xa0
#define MC_MOV  0xb0
#define MC_ARSH 0xc0
#define MC_END  0xd0

#define MC_JA   0x00
#define MC_JEQ  0x10
#define MC_JGT  0x20
#define MC_JGE  0x30
#define MC_JSET 0x40
#define MC_JNE  0x50
#define MC_JSGT 0x60
#define MC_JSGE 0x70
#define MC_CALL 0x80
#define MC_EXIT 0x90
#define MC_JLT  0xa0
#define MC_JLE  0xb0
#define MC_JSLT 0xc0
#define MC_JSLE 0xd0

/* Load and store classes: size (bits 3-4) and mode (bits 5-7). */
#define MC_W  0x00
#define MC_H  0x08
#define MC_B  0x10
#define MC_DW 0x18
#define MC_SIZE(op) ((op) & 0x18)
#define MC_IMM    0x00
#define MC_MEM    0x60
#define MC_MEMSX  0x80
#define MC_ATOMIC 0xc0
#define MC_MODE(op) ((op) & 0xe0)

/* Atomic operations (imm of an ATOMIC store). */
#define MC_FETCH   0x01
#define MC_XCHG    (0xe0 | MC_FETCH)
#define MC_CMPXCHG (0xf0 | MC_FETCH)

/* Call kinds (src of a CALL). */
#define MC_CALL_HELPER 0
#define MC_CALL_LOCAL  1

/* Whole opcodes the engine names. */
#define MC_OP_LDDW  (MC_LD | MC_IMM | MC_DW)   /* 0x18 */
#define MC_OP_CALL  (MC_JMP | MC_CALL)         /* 0x85 */
#define MC_OP_CALLX (MC_JMP | MC_CALL | MC_X)  /* 0x8d */
#define MC_OP_EXIT  (MC_JMP | MC_EXIT)         /* 0x95 */
#define MC_OP_JA    (MC_JMP | MC_JA)           /* 0x05 */
#define MC_OP_JA32  (MC_JMP32 | MC_JA)         /* 0x06 */

#define MC_FP    10 /* the read-only frame pointer */

/* Number of regions a vm's table holds: the engine's five and the user's. */
#define MC_NREGIONS (ARF_MC_REGION_USER + ARF_MC_MAX_USER_REGIONS)

struct mc_helper {
	arf_mc_helper_fn fn; /* NULL: no helper with this id */
	void *ctx;
	char *name;          /* owned */
	uint8_t args[5];
	uint8_t nargs;       /* arguments before the first ARF_MC_ARG_NONE */
	uint8_t has_ptr;     /* any PTR argument: checked before the call */
	uint8_t size_of[5];  /* for a PTR argument: index of its SIZE argument */
};

struct arf_mc_helpers {
	struct mc_helper tab[ARF_MC_MAX_HELPERS]; /* indexed by id */
};

struct arf_mc_prog {
	const struct arf_mc_helpers *helpers; /* verified against these */
	struct arf_mc_insn *insns;            /* owned */
	size_t n;
	size_t entry;
	uint8_t *rodata;                      /* owned, NULL when empty */
	size_t rodata_len;
};

struct mc_frame {
	uint64_t saved[5]; /* caller's r6 .. r10 */
	size_t ret_pc;     /* instruction after the call */
};

struct arf_mc_vm {
	/*
	 * The region table, indexed by the top bits of an address: host base,
	 * bytes that may be read and bytes that may be written (0 for a
	 * read-only region), so a store costs the same one check as a load.
	 */
	uint8_t *base[MC_NREGIONS];
	uint64_t rsize[MC_NREGIONS];
	uint64_t wsize[MC_NREGIONS];
	unsigned nuser;                       /* regions added by the embedder */
	const char *rname[MC_NREGIONS];       /* names for messages (NULL: generic) */
	const struct arf_mc_helpers *helpers;
	void *user;                           /* arf_mc_vm_set_user */
	uint64_t deadline_ns;                 /* CLOCK_MONOTONIC; 0 = none */
	uint8_t *out;                         /* lent output buffer */
	size_t out_cap;
	size_t out_len;                       /* bytes emitted in this run */
	struct mc_frame frames[ARF_MC_MAX_FRAMES];
	_Alignas(16) uint8_t stack[ARF_MC_MAX_FRAMES * ARF_MC_STACK_SIZE];
};

/* err.c: format "fmt" into err/errlen when err is not NULL; returns code. */
int mc_errf(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* isa.c: names shared by the assembler and the disassembler. */
extern const char *const mc_alu_names[16];  /* by MC_OPCODE >> 4; NULL: none */
extern const char *const mc_jmp_names[16];  /* conditional jumps; NULL: none */
extern const char *const mc_size_names[4];  /* by MC_SIZE >> 3: w h b dw */
const char *mc_atomic_name(int32_t imm);     /* "add", "fetch add", ..., NULL */

/* isa.c: the verifier's per-instruction rules, also used by the disassembler. */
/* NULL if insns[pc] is a well-formed encoding, else the reason. */
const char *mc_insn_check(const struct arf_mc_insn *insns, size_t n, size_t pc);
extern const char mc_unknown_opcode[]; /* the reason for undefined opcodes */

#endif /* ARF_MC_INT_H */
