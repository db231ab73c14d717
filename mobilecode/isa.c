/* SPDX-License-Identifier: MIT */
/*
 * The instruction set as data: which encodings RFC 9669 defines and which
 * fields each leaves unused (and so must be zero), and the mnemonics of the
 * conformance suite's syntax.  The verifier asks mc_insn_check about every
 * instruction; the assembler and disassembler share the name tables, so the
 * two cannot drift apart.
 */
#include <stddef.h>

#include "mc_int.h"

const char *const mc_alu_names[16] = {
	"add", "sub", "mul", "div", "or", "and", "lsh", "rsh",
	"neg", "mod", "xor", "mov", "arsh", NULL, NULL, NULL,
};

const char *const mc_jmp_names[16] = {
	NULL, "jeq", "jgt", "jge", "jset", "jne", "jsgt", "jsge",
	NULL, NULL, "jlt", "jle", "jslt", "jsle", NULL, NULL,
};

const char *const mc_size_names[4] = { "w", "h", "b", "dw" };

const char *mc_atomic_name(int32_t imm)
{
	switch (imm) {
	case MC_ADD: return "add";
	case MC_OR: return "or";
	case MC_AND: return "and";
	case MC_XOR: return "xor";
	case MC_ADD | MC_FETCH: return "fetch add";
	case MC_OR | MC_FETCH: return "fetch or";
	case MC_AND | MC_FETCH: return "fetch and";
	case MC_XOR | MC_FETCH: return "fetch xor";
	case MC_XCHG: return "xchg";
	case MC_CMPXCHG: return "cmpxchg";
	default: return NULL;
	}
}

const char mc_unknown_opcode[] = "unknown opcode";

static const char *check_alu(const struct arf_mc_insn *in)
{
	int op = MC_OPCODE(in->opcode), x = in->opcode & MC_X;
	int is64 = MC_CLASS(in->opcode) == MC_ALU64;

	if (op >= 0xe0)
		return mc_unknown_opcode;
	if (in->dst > MC_FP)
		return "bad destination register";
	if (in->dst == MC_FP)
		return "write to r10 (the frame pointer is read-only)";
	if (op == MC_END) {
		if (is64 && x)
			return mc_unknown_opcode;
		if (in->src)
			return "byte swap with a non-zero src field";
		if (in->off)
			return "byte swap with a non-zero offset";
		if (in->imm != 16 && in->imm != 32 && in->imm != 64)
			return "byte swap width is not 16, 32 or 64";
		return NULL;
	}
	if (op == MC_NEG) {
		if (x)
			return mc_unknown_opcode;
		if (in->src)
			return "neg with a non-zero src field";
		if (in->off)
			return "neg with a non-zero offset";
		if (in->imm)
			return "neg with a non-zero immediate";
		return NULL;
	}
	if (x) {
		if (in->src > MC_FP)
			return "bad source register";
		if (in->imm)
			return "register operation with a non-zero immediate";
	} else if (in->src) {
		return "immediate operation with a non-zero src field";
	}
	if (op == MC_DIV || op == MC_MOD) {
		if (in->off != 0 && in->off != 1)
			return "division offset is not 0 (unsigned) or 1 (signed)";
	} else if (op == MC_MOV && x) {
		if (in->off != 0 && in->off != 8 && in->off != 16 && !(is64 && in->off == 32))
			return "sign-extending move width is not 8, 16 or 32";
	} else if (in->off) {
		return "arithmetic with a non-zero offset";
	}
	return NULL;
}

static const char *check_jmp(const struct arf_mc_insn *in)
{
	int op = MC_OPCODE(in->opcode), x = in->opcode & MC_X;
	int is32 = MC_CLASS(in->opcode) == MC_JMP32;

	switch (op) {
	case MC_JA:
		if (x)
			return mc_unknown_opcode;
		if (in->dst || in->src)
			return "ja with a non-zero register field";
		if (is32 ? in->off != 0 : in->imm != 0)
			return is32 ? "ja32 with a non-zero offset" : "ja with a non-zero immediate";
		return NULL;
	case MC_CALL:
		if (is32)
			return mc_unknown_opcode;
		if (in->off)
			return "call with a non-zero offset";
		if (x) {
			if (in->src)
				return "callx with a non-zero src field";
			if (in->imm)
				return "callx with a non-zero immediate";
			if (in->dst > MC_FP)
				return "bad register in callx";
			return NULL;
		}
		if (in->dst)
			return "call with a non-zero dst field";
		if (in->src != MC_CALL_HELPER && in->src != MC_CALL_LOCAL)
			return "unsupported call kind (src is not 0 or 1)";
		return NULL;
	case MC_EXIT:
		if (is32 || x)
			return mc_unknown_opcode;
		if (in->dst || in->src)
			return "exit with a non-zero register field";
		if (in->off)
			return "exit with a non-zero offset";
		if (in->imm)
			return "exit with a non-zero immediate";
		return NULL;
	case 0xe0:
	case 0xf0:
		return mc_unknown_opcode;
	default:
		if (in->dst > MC_FP)
			return "bad destination register";
		if (x) {
			if (in->src > MC_FP)
				return "bad source register";
			if (in->imm)
				return "register comparison with a non-zero immediate";
		} else if (in->src) {
			return "immediate comparison with a non-zero src field";
		}
		return NULL;
	}
}

static const char *check_mem(const struct arf_mc_insn *in)
{
	int cls = MC_CLASS(in->opcode), mode = MC_MODE(in->opcode);
	int size = MC_SIZE(in->opcode);

	if (in->dst > MC_FP)
		return "bad destination register";
	if (in->src > MC_FP)
		return "bad source register";
	switch (cls) {
	case MC_LDX:
		if (mode != MC_MEM && !(mode == MC_MEMSX && size != MC_DW))
			return mc_unknown_opcode;
		if (in->dst == MC_FP)
			return "write to r10 (the frame pointer is read-only)";
		if (in->imm)
			return "load with a non-zero immediate";
		return NULL;
	case MC_ST:
		if (mode != MC_MEM)
			return mc_unknown_opcode;
		if (in->src)
			return "store of an immediate with a non-zero src field";
		return NULL;
	default: /* MC_STX */
		if (mode == MC_MEM) {
			if (in->imm)
				return "store with a non-zero immediate";
			return NULL;
		}
		if (mode != MC_ATOMIC)
			return mc_unknown_opcode;
		if (size != MC_W && size != MC_DW)
			return "atomic operation on 8 or 16 bits";
		if (!mc_atomic_name(in->imm))
			return "unknown atomic operation";
		if ((in->imm & MC_FETCH) && in->imm != MC_CMPXCHG && in->src == MC_FP)
			return "write to r10 (the frame pointer is read-only)";
		return NULL;
	}
}

const char *mc_insn_check(const struct arf_mc_insn *insns, size_t n, size_t pc)
{
	const struct arf_mc_insn *in = &insns[pc];

	switch (MC_CLASS(in->opcode)) {
	case MC_ALU:
	case MC_ALU64:
		return check_alu(in);
	case MC_JMP:
	case MC_JMP32:
		return check_jmp(in);
	case MC_LD:
		if (in->opcode != MC_OP_LDDW)
			return mc_unknown_opcode;
		if (pc + 1 >= n)
			return "lddw without its second half";
		if (in->src)
			return "unsupported lddw source (src is not 0)";
		if (in->dst > MC_FP)
			return "bad destination register";
		if (in->dst == MC_FP)
			return "write to r10 (the frame pointer is read-only)";
		if (in->off)
			return "lddw with a non-zero offset";
		if (insns[pc + 1].opcode || insns[pc + 1].dst || insns[pc + 1].src ||
		    insns[pc + 1].off)
			return "second half of lddw is not zero apart from its immediate";
		return NULL;
	default:
		return check_mem(in);
	}
}
