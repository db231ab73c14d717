/* SPDX-License-Identifier: MIT */
/*
 * The JIT's guess of the region each load and store reaches, so that its
 * code can take the fast path for that region (jit_x86.c, "the bounds
 * check"): the table entries of a known region sit at fixed offsets, so
 * their loads do not wait for the address, and a chain of dependent loads
 * (a DFA's state, a list's next pointer) pays one addition per access
 * instead of a dependent table load.  The code still compares the
 * address's region with the guess, and goes the general way when they
 * differ, so a wrong guess costs time, never safety.
 *
 * The guess follows where a register's value came from, forward through
 * the program: r1 holds the context at entry and r10 the stack; an lddw of
 * region << 48 | offset names that region; a copy keeps it, and so does
 * adding or subtracting a number (a pointer moved); anything else -- a
 * load, a helper's result, other arithmetic, two different regions
 * meeting where paths join -- is unknown.
 */
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

#define TOP 0xff /* not reached yet */
#define UNK 0xfe /* reached, region unknown */

static uint8_t meet(uint8_t a, uint8_t b)
{
	if (a == TOP)
		return b;
	if (b == TOP || a == b)
		return a;
	return UNK;
}

/* The region of a 64-bit lddw value, or UNK for a plain number. */
static uint8_t region_of(uint64_t v)
{
	uint64_t k = v >> ARF_MC_ADDR_SHIFT;

	return k > ARF_MC_REGION_NULL && k < MC_NREGIONS ? (uint8_t)k : UNK;
}

/* Registers after insns[pc], given those before (s: r0..r10). */
static void step(const struct arf_mc_insn *insns, size_t pc, uint8_t *s)
{
	const struct arf_mc_insn *in = &insns[pc];
	int cls = MC_CLASS(in->opcode), op = MC_OPCODE(in->opcode), x = in->opcode & MC_X;
	unsigned d = in->dst & 0xf, r = in->src & 0xf;

	switch (cls) {
	case MC_ALU64:
		if (op == MC_MOV)
			s[d] = x && in->off == 0 ? s[r] : UNK;
		else if ((op == MC_ADD || op == MC_SUB) && !x)
			; /* a pointer moved by a constant */
		else if (op == MC_ADD)
			s[d] = s[d] != UNK ? s[d] : s[r];
		else if (op != MC_SUB)
			s[d] = UNK;
		break;
	case MC_ALU:
		s[d] = UNK;
		break;
	case MC_LD:
		s[d] = region_of((uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)insns[pc + 1].imm << 32);
		break;
	case MC_LDX:
		s[d] = UNK;
		break;
	case MC_STX:
		if (MC_MODE(in->opcode) == MC_ATOMIC) {
			if (in->imm == MC_CMPXCHG)
				s[0] = UNK;
			else if (in->imm & MC_FETCH)
				s[r] = UNK;
		}
		break;
	case MC_JMP:
		if (op == MC_CALL)
			for (unsigned i = 0; i <= 5; i++)
				s[i] = UNK; /* r0 the result; r1..r5 not to be read */
		break;
	default:
		break;
	}
	s[MC_FP] = ARF_MC_REGION_STACK;
}

static int flow(uint8_t *st, uint32_t *work, size_t *nwork, size_t pc, const uint8_t *s)
{
	uint8_t *t = st + pc * 11;
	int changed = 0;

	for (unsigned i = 0; i < 11; i++) {
		uint8_t m = meet(t[i], s[i]);

		if (m != t[i]) {
			t[i] = m;
			changed = 1;
		}
	}
	if (changed)
		work[(*nwork)++] = (uint32_t)pc;
	return 0;
}

int mc_jit_guess(const struct arf_mc_prog *p, uint8_t *guess)
{
	const struct arf_mc_insn *insns = p->insns;
	size_t n = p->n, nwork = 0;
	/* per instruction, the registers before it; each register of each
	 * instruction can go down at most twice (TOP, a region, UNK), so an
	 * instruction is queued at most 23 times */
	uint8_t *st = malloc(n * 11);
	uint32_t *work = malloc(n * 23 * sizeof(*work) + 1);
	uint8_t s[11];

	if (!st || !work) {
		free(st);
		free(work);
		return -1;
	}
	memset(st, TOP, n * 11);
	memset(guess, UNK, n);
	memset(s, UNK, sizeof(s));
	s[1] = ARF_MC_REGION_CTX;
	s[MC_FP] = ARF_MC_REGION_STACK;
	flow(st, work, &nwork, p->entry, s);
	/* every function start: reached by local calls with unknown arguments */
	for (size_t pc = 0; pc < n; pc++) {
		const struct arf_mc_insn *in = &insns[pc];

		if (in->opcode == MC_OP_LDDW) {
			pc++;
			continue;
		}
		if (in->opcode == MC_OP_CALL && in->src == MC_CALL_LOCAL) {
			memset(s, UNK, sizeof(s));
			s[MC_FP] = ARF_MC_REGION_STACK;
			flow(st, work, &nwork, (size_t)((int64_t)pc + 1 + in->imm), s);
		}
	}
	while (nwork) {
		size_t pc = work[--nwork];
		const struct arf_mc_insn *in = &insns[pc];
		int cls = MC_CLASS(in->opcode), op = MC_OPCODE(in->opcode);

		memcpy(s, st + pc * 11, sizeof(s));
		switch (cls) { /* the base of a load or store, before the step */
		case MC_LDX:
			guess[pc] = s[in->src & 0xf];
			break;
		case MC_ST:
		case MC_STX:
			guess[pc] = s[in->dst & 0xf];
			break;
		default:
			break;
		}
		if (in->opcode == MC_OP_EXIT)
			continue;
		step(insns, pc, s);
		if ((cls == MC_JMP || cls == MC_JMP32) && op != MC_CALL && op != MC_EXIT) {
			int64_t t = (int64_t)pc + 1 + (in->opcode == MC_OP_JA32 ? in->imm : in->off);

			flow(st, work, &nwork, (size_t)t, s);
			if (in->opcode == MC_OP_JA || in->opcode == MC_OP_JA32)
				continue;
		}
		size_t next = pc + (in->opcode == MC_OP_LDDW ? 2 : 1);

		if (next < n)
			flow(st, work, &nwork, next, s);
	}
	free(st);
	free(work);
	return 0;
}
