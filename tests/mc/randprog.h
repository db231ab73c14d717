/* SPDX-License-Identifier: MIT */
/*
 * Random eBPF programs for the engine's tests (test_fuzz.c, test_jit.c) and
 * the JIT's fuzz target: real opcodes with random fields, shaped most of
 * the time as a compiler would shape them (unused fields zero, jumps in
 * range, loads and stores through r10 or the context), so that a good
 * share passes the verifier.  Deterministic: the generator is an xorshift
 * seeded with a constant, or with mc_rand_seed().
 */
#ifndef MC_RANDPROG_H
#define MC_RANDPROG_H

#include <stddef.h>
#include <stdint.h>

#include "arf_mc.h"

static const uint8_t opcodes[] = {
	0x07, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f,
	0x77, 0x7f, 0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd7, 0x04, 0x0c,
	0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c,
	0x84, 0x94, 0x9c, 0xa4, 0xac, 0xb4, 0xbc, 0xc4, 0xcc, 0xd4, 0xdc, 0x18, 0x61, 0x69,
	0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3,
	0xdb, 0x05, 0x06, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0xa5, 0xad, 0xb5, 0xbd, 0x45,
	0x4d, 0x55, 0x5d, 0x65, 0x6d, 0x75, 0x7d, 0xc5, 0xcd, 0xd5, 0xdd, 0x16, 0x1e, 0x26,
	0x2e, 0x36, 0x3e, 0xa6, 0xae, 0xb6, 0xbe, 0x46, 0x4e, 0x56, 0x5e, 0x66, 0x6e, 0x76,
	0x7e, 0xc6, 0xce, 0xd6, 0xde, 0x85, 0x8d, 0x95,
	0x00, 0x20, 0x8c, 0x8f, 0x96, 0x99, 0xd3, 0xdf, 0xff, /* not valid */
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static inline void mc_rand_seed(uint64_t seed)
{
	rng = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static inline uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static inline unsigned pick(unsigned n)
{
	return (unsigned)(next() % n);
}

/* Zero the fields the opcode leaves unused, as a compiler would (mostly). */
static inline void shape(struct arf_mc_insn *in)
{
	int cls = in->opcode & 7, op = in->opcode & 0xf0, x = in->opcode & 8;

	if (in->dst == 10 && cls != 2 && cls != 3 && pick(4))
		in->dst = pick(10);
	switch (cls) {
	case 4:
	case 7:
		if (op == 0xd0) {
			in->src = 0;
			in->off = 0;
			in->imm = 16 << pick(3);
		} else if (op == 0x80) {
			in->src = 0;
			in->off = 0;
			in->imm = 0;
		} else {
			if (x)
				in->imm = 0;
			else
				in->src = 0;
			if (op == 0x30 || op == 0x90)
				in->off = (int16_t)pick(2);
			else if (op == 0xb0 && x && pick(2))
				in->off = (int16_t)(8 << pick(cls == 7 ? 3 : 2));
			else
				in->off = 0;
		}
		break;
	case 5:
	case 6:
		if (op == 0x00) {
			in->dst = in->src = 0;
			if (cls == 5)
				in->imm = 0;
			else
				in->off = 0;
		} else if (op == 0x80) {
			in->off = 0;
			if (x) {
				in->src = 0;
				in->imm = 0;
			} else {
				in->dst = 0;
			}
		} else if (op == 0x90) {
			in->dst = in->src = 0;
			in->off = 0;
			in->imm = 0;
		} else if (x) {
			in->imm = 0;
		} else {
			in->src = 0;
		}
		break;
	case 1:
	case 3:
		if ((in->opcode & 0xe0) == 0xc0)
			in->imm = (int32_t)(const int[]){ 0, 0x40, 0x50, 0xa0, 1, 0x41, 0x51, 0xa1,
							  0xe1, 0xf1 }[pick(10)];
		else
			in->imm = 0;
		/* fall through */
	case 2:
		if (cls == 2)
			in->src = 0;
		{
			unsigned base = cls == 1 ? in->src : in->dst;

			if (pick(2)) {
				base = 10;
				in->off = (int16_t)(-8 * (1 + (int)pick(8)));
			} else if (pick(2)) {
				base = 1;
				in->off = (int16_t)(8 * pick(9));
			}
			if (cls == 1)
				in->src = base & 0xf;
			else
				in->dst = base & 0xf;
		}
		break;
	default:
		break;
	}
}

static inline struct arf_mc_insn random_insn(size_t pc, size_t n)
{
	static const int16_t offs[] = { 0, 0, 0, 1, 2, -1, -2, -4, -8, -16, 8, 16, 32, 1 };
	static const int32_t imms[] = { 0, 0, 1, -1, 2, 5, 8, 16, 32, 64, 0x7fffffff, 63, 31, 0x01,
					0x40, 0x50, 0xa0, 0xe1, 0xf1, 0x41 };
	struct arf_mc_insn in = { 0 };
	unsigned r = pick(100);

	in.opcode = opcodes[pick(sizeof(opcodes))];
	in.dst = r < 3 ? 10 + pick(6) : pick(10);
	in.src = r < 6 ? 11 + pick(5) : pick(11);
	if (pick(4) == 0)
		in.src = 10;
	in.off = pick(8) == 0 ? (int16_t)next() : offs[pick(sizeof(offs) / sizeof(offs[0]))];
	in.imm = pick(8) == 0 ? (int32_t)next() : imms[pick(sizeof(imms) / sizeof(imms[0]))];
	if (pick(10))
		shape(&in);
	/* Jumps and calls mostly in range. */
	if ((in.opcode & 7) == 5 || (in.opcode & 7) == 6) {
		if (pick(3) && in.opcode != 0x06)
			in.off = (int16_t)((int64_t)pick((unsigned)n + 1) - (int64_t)pc - 1);
		if (in.opcode == 0x06 || (in.opcode == 0x85 && pick(2)))
			in.imm = (int32_t)((int64_t)pick((unsigned)n + 1) - (int64_t)pc - 1);
		if (in.opcode == 0x85)
			in.src = pick(3) ? 0 : 1;
		if (in.opcode == 0x85 && in.src == 0)
			in.imm = pick(2) ? 5 : 1 + (int32_t)pick(4);
		if (in.opcode == 0x85 || in.opcode == 0x95)
			in.off = 0;
	}
	return in;
}

/*
 * A whole program into code[] (room for MC_RAND_MAX instructions): most
 * registers set first (small numbers, or addresses in the regions a vm
 * has -- the stack, the context, the output, the program's data, the
 * embedder's regions -- and some that fault: the null region, regions
 * past the table, addresses whose region bits alias a real one), a random
 * body with, now and then, a loop back to its start, and an exit.
 * Returns the instruction count.
 */
#define MC_RAND_MAX 48

static inline size_t mc_rand_program(struct arf_mc_insn *code)
{
	static const unsigned regions[] = { 1, 2, 3, 4, 5, 6, 7, 0, 0x7fff, 37, 38, 0xffff };
	size_t n = 0;

	for (unsigned r = 0; r < 10; r++) {
		if (r == 1 || r == 2 || !pick(16))
			continue;
		if (pick(4) == 0) {
			uint64_t a = ARF_MC_ADDR(regions[pick(sizeof(regions) / sizeof(regions[0]))],
						 pick(3) ? pick(64) : next() & 0xffff);

			code[n++] = (struct arf_mc_insn){ .opcode = 0x18, .dst = r & 0xf,
							  .imm = (int32_t)(uint32_t)a };
			code[n++] = (struct arf_mc_insn){ .imm = (int32_t)(uint32_t)(a >> 32) };
		} else {
			code[n++] = (struct arf_mc_insn){ .opcode = 0xb7, .dst = r & 0xf,
							  .imm = (int32_t)pick(64) };
		}
	}
	if (pick(2))
		code[n++] = (struct arf_mc_insn){ .opcode = 0xbf, .dst = 3, .src = 10 };
	size_t top = n, body = 1 + pick(20);

	for (size_t i = 0; i < body; i++) {
		struct arf_mc_insn in = random_insn(i, body);

		code[n++] = in;
		if (in.opcode == 0x18 && pick(8) && i + 1 < body) {
			code[n++] = (struct arf_mc_insn){ .imm = (int32_t)next() };
			i++;
		}
	}
	if (pick(4) == 0) {
		/* count r9 down to 0, back to the top of the body each time */
		code[n++] = (struct arf_mc_insn){ .opcode = 0x17, .dst = 9, .imm = 1 };
		code[n++] = (struct arf_mc_insn){ .opcode = 0x65, .dst = 9, .imm = 0,
						  .off = (int16_t)((int64_t)top - (int64_t)n - 1) };
	}
	code[n++] = (struct arf_mc_insn){ .opcode = 0x95 };
	return n;
}

#endif /* MC_RANDPROG_H */
