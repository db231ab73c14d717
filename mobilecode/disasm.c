/* SPDX-License-Identifier: MIT */
/*
 * The disassembler: bytecode back to the assembler's syntax, so that
 * arf_mc_asm(arf_mc_disasm(code)) gives the same bytes.  Jumps print as
 * relative offsets (+N / -N); local calls print as `call local fn_<index>`
 * with a label line before their target, or `call local +N` when the
 * target cannot carry a label.  An encoding the syntax cannot express (one
 * that the verifier would refuse: unused fields set, unknown opcodes) is an
 * error naming the instruction.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

static const char *const sx_names[2][33] = {
	[0] = { [8] = "movsx864", [16] = "movsx1664", [32] = "movsx3264" },
	[1] = { [8] = "movsx832", [16] = "movsx1632" },
};

static void mem_operand(char *buf, size_t len, unsigned reg, int off)
{
	if (off)
		snprintf(buf, len, "[%%r%u%+d]", reg, off);
	else
		snprintf(buf, len, "[%%r%u]", reg);
}

/* Text of insns[pc] with local calls as relative offsets or label. */
static int insn_text(const struct arf_mc_insn *insns, size_t n, size_t pc, const char *label,
		     char *buf, size_t len)
{
	const struct arf_mc_insn *in = &insns[pc];
	int cls = MC_CLASS(in->opcode), op = MC_OPCODE(in->opcode), x = in->opcode & MC_X;
	const char *sfx = (cls == MC_ALU || cls == MC_JMP32) ? "32" : "";
	char mem[32];

	if (mc_insn_check(insns, n, pc))
		return -EINVAL;
	switch (cls) {
	case MC_ALU:
	case MC_ALU64:
		if (op == MC_END) {
			const char *kind = cls == MC_ALU64 ? "bswap" : x ? "be" : "le";

			snprintf(buf, len, "%s%d %%r%u", kind, in->imm, in->dst);
		} else if (op == MC_NEG) {
			snprintf(buf, len, "neg%s %%r%u", sfx, in->dst);
		} else if (op == MC_MOV && x && in->off) {
			snprintf(buf, len, "%s %%r%u, %%r%u", sx_names[cls == MC_ALU][in->off], in->dst,
				 in->src);
		} else {
			const char *name = mc_alu_names[op >> 4];

			if (in->off == 1)
				name = op == MC_DIV ? "sdiv" : "smod";
			if (x)
				snprintf(buf, len, "%s%s %%r%u, %%r%u", name, sfx, in->dst, in->src);
			else
				snprintf(buf, len, "%s%s %%r%u, %d", name, sfx, in->dst, in->imm);
		}
		return 1;
	case MC_JMP:
	case MC_JMP32:
		if (op == MC_JA) {
			snprintf(buf, len, "ja%s %+d", sfx, cls == MC_JMP32 ? in->imm : in->off);
		} else if (op == MC_EXIT) {
			snprintf(buf, len, "exit");
		} else if (op == MC_CALL) {
			if (x)
				snprintf(buf, len, "call %%r%u", in->dst);
			else if (in->src == MC_CALL_LOCAL && label)
				snprintf(buf, len, "call local %s", label);
			else if (in->src == MC_CALL_LOCAL)
				snprintf(buf, len, "call local %+d", in->imm);
			else
				snprintf(buf, len, "call %d", in->imm);
		} else if (x) {
			snprintf(buf, len, "%s%s %%r%u, %%r%u, %+d", mc_jmp_names[op >> 4], sfx, in->dst,
				 in->src, in->off);
		} else {
			snprintf(buf, len, "%s%s %%r%u, %d, %+d", mc_jmp_names[op >> 4], sfx, in->dst,
				 in->imm, in->off);
		}
		return 1;
	case MC_LD:
		snprintf(buf, len, "lddw %%r%u, 0x%" PRIx64, in->dst,
			 (uint64_t)(uint32_t)in[0].imm | (uint64_t)(uint32_t)in[1].imm << 32);
		return 2;
	case MC_LDX:
		mem_operand(mem, sizeof(mem), in->src, in->off);
		snprintf(buf, len, "ldx%s%s %%r%u, %s", MC_MODE(in->opcode) == MC_MEMSX ? "s" : "",
			 mc_size_names[MC_SIZE(in->opcode) >> 3], in->dst, mem);
		return 1;
	case MC_ST:
		mem_operand(mem, sizeof(mem), in->dst, in->off);
		snprintf(buf, len, "st%s %s, %d", mc_size_names[MC_SIZE(in->opcode) >> 3], mem,
			 in->imm);
		return 1;
	default:
		mem_operand(mem, sizeof(mem), in->dst, in->off);
		if (MC_MODE(in->opcode) == MC_ATOMIC)
			snprintf(buf, len, "lock %s%s %s, %%r%u", mc_atomic_name(in->imm),
				 MC_SIZE(in->opcode) == MC_W ? "32" : "", mem, in->src);
		else
			snprintf(buf, len, "stx%s %s, %%r%u", mc_size_names[MC_SIZE(in->opcode) >> 3],
				 mem, in->src);
		return 1;
	}
}

int arf_mc_disasm_insn(const struct arf_mc_insn *insns, size_t n, size_t pc, char *buf,
		       size_t buflen)
{
	if (!insns || pc >= n || !buf || !buflen)
		return -EINVAL;
	return insn_text(insns, n, pc, NULL, buf, buflen);
}

struct text {
	char *s;
	size_t len, cap;
};

static int append(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int append(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (k < 0)
			return -EINVAL;
		if ((size_t)k < t->cap - t->len) {
			t->len += (size_t)k;
			return 0;
		}
		size_t nc = t->cap * 2 + (size_t)k + 64;
		char *p = realloc(t->s, nc);

		if (!p)
			return -ENOMEM;
		t->s = p;
		t->cap = nc;
	}
}

int arf_mc_disasm(const struct arf_mc_insn *insns, size_t n, char **text, char *err,
		  size_t errlen)
{
	struct text t = { 0 };
	uint8_t *target = NULL, *half = NULL;
	char line[96], label[32];
	int rc = 0;

	*text = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!insns && n)
		return mc_errf(err, errlen, -EINVAL, "no instructions given");
	t.cap = 64 + n * 32;
	t.s = malloc(t.cap);
	target = calloc(1, n + 1);
	half = calloc(1, n + 1);
	if (!t.s || !target || !half) {
		rc = mc_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	t.s[0] = '\0';
	for (size_t pc = 0; pc < n; pc++)
		if (insns[pc].opcode == MC_OP_LDDW && pc + 1 < n && !half[pc])
			half[pc + 1] = 1;
	for (size_t pc = 0; pc < n; pc++) {
		int64_t to = (int64_t)pc + 1 + insns[pc].imm;

		if (!half[pc] && insns[pc].opcode == MC_OP_CALL && insns[pc].src == MC_CALL_LOCAL &&
		    to >= 0 && (uint64_t)to < n && !half[to])
			target[to] = 1;
	}
	for (size_t pc = 0; pc < n;) {
		int64_t to = (int64_t)pc + 1 + insns[pc].imm;
		int k;

		if (target[pc] && (rc = append(&t, "fn_%zu:\n", pc)))
			goto nomem;
		label[0] = '\0';
		if (insns[pc].opcode == MC_OP_CALL && insns[pc].src == MC_CALL_LOCAL && to >= 0 &&
		    (uint64_t)to < n && target[to])
			snprintf(label, sizeof(label), "fn_%lld", (long long)to);
		k = insn_text(insns, n, pc, label[0] ? label : NULL, line, sizeof(line));
		if (k < 0) {
			rc = mc_errf(err, errlen, -EINVAL,
				     "instruction %zu: %s (opcode 0x%02x) cannot be written as text", pc,
				     mc_insn_check(insns, n, pc), insns[pc].opcode);
			goto out;
		}
		if ((rc = append(&t, "%s\n", line)))
			goto nomem;
		pc += (size_t)k;
	}
	*text = t.s;
	t.s = NULL;
	goto out;
nomem:
	rc = mc_errf(err, errlen, -ENOMEM, "out of memory");
out:
	free(t.s);
	free(target);
	free(half);
	return rc;
}
