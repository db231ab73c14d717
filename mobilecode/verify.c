/* SPDX-License-Identifier: MIT */
/*
 * The verifier: every program passes it before arfd accepts it, so the
 * interpreter may assume well-formed code.  What it guarantees:
 *
 *   - every instruction is an encoding RFC 9669 defines, with its unused
 *     fields zero, registers r0..r10 and no write to r10 (isa.c);
 *   - every jump lands on an instruction of the same function, never on the
 *     second half of an lddw; no function falls off its end;
 *   - helper calls name registered helpers; local calls land on an
 *     instruction; functions do not recurse and nest at most
 *     ARF_MC_MAX_FRAMES deep;
 *   - no register is read before it is written on some path (r1, r2 and r10
 *     are set at entry, r1..r5 and r10 at the start of a called function;
 *     a call leaves r1..r5 unset and sets r0).
 *
 * Memory safety does not depend on it: the interpreter checks every access.
 * Functions are found as the kernel finds them: each starts at the entry, at
 * index 0 or at a local call's target and runs up to the next start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

#define REG(r) ((uint16_t)(1u << (r)))
#define ARGS  (REG(1) | REG(2) | REG(3) | REG(4) | REG(5))

struct vstate {
	const struct arf_mc_helpers *h;
	const struct arf_mc_insn *insns;
	size_t n;
	size_t entry;
	uint8_t *half;     /* 1: second half of an lddw */
	uint8_t *start;    /* 1: a function starts here */
	uint32_t *fn;      /* function number of each instruction */
	uint32_t *fn_start;/* first instruction of each function */
	uint32_t nfn;
	uint8_t *color;    /* per function: 0 new, 1 on the DFS path, 2 done */
	uint8_t *depth;    /* per function, when done: frames it needs */
	uint16_t *init;    /* per instruction: registers set on every path */
	uint8_t *seen;     /* per instruction: reached by the data flow */
	uint32_t *work;    /* data-flow work list */
	char *err;
	size_t errlen;
};

static int fail(struct vstate *v, size_t pc, const char *why)
{
	if (why == mc_unknown_opcode)
		return mc_errf(v->err, v->errlen, ARF_EVERIFY, "instruction %zu: unknown opcode 0x%02x",
			       pc, v->insns[pc].opcode);
	return mc_errf(v->err, v->errlen, ARF_EVERIFY, "instruction %zu: %s", pc, why);
}

static int is_jump(const struct arf_mc_insn *in)
{
	int cls = MC_CLASS(in->opcode), op = MC_OPCODE(in->opcode);

	return (cls == MC_JMP || cls == MC_JMP32) && op != MC_CALL && op != MC_EXIT;
}

static int is_local_call(const struct arf_mc_insn *in)
{
	return in->opcode == MC_OP_CALL && in->src == MC_CALL_LOCAL;
}

/* Target of a jump or local call at pc, as a signed index. */
static int64_t target_of(const struct arf_mc_insn *in, size_t pc)
{
	if (in->opcode == MC_OP_JA32 || is_local_call(in))
		return (int64_t)pc + 1 + in->imm;
	return (int64_t)pc + 1 + in->off;
}

/* Pass 1: encodings, helper ids, local call targets; marks function starts. */
static int check_insns(struct vstate *v)
{
	for (size_t pc = 0; pc < v->n; pc++) {
		if (v->half[pc])
			continue;
		const struct arf_mc_insn *in = &v->insns[pc];
		const char *why = mc_insn_check(v->insns, v->n, pc);

		if (why)
			return fail(v, pc, why);
		if (in->opcode == MC_OP_LDDW) {
			v->half[pc + 1] = 1;
			continue;
		}
		if (in->opcode == MC_OP_CALL && in->src == MC_CALL_HELPER) {
			if (in->imm < 0 || (uint32_t)in->imm >= ARF_MC_MAX_HELPERS || !v->h ||
			    !v->h->tab[in->imm].fn)
				return mc_errf(v->err, v->errlen, ARF_EVERIFY,
					       "instruction %zu: call to unknown helper %d", pc, in->imm);
		}
	}
	/* Second halves are known only now: check targets in a second loop. */
	for (size_t pc = 0; pc < v->n; pc++) {
		const struct arf_mc_insn *in = &v->insns[pc];
		int64_t t;

		if (v->half[pc] || !is_local_call(in))
			continue;
		t = target_of(in, pc);
		if (t < 0 || (uint64_t)t >= v->n)
			return fail(v, pc, "local call out of range");
		if (v->half[t])
			return fail(v, pc, "local call into the middle of an lddw");
		v->start[t] = 1;
	}
	return 0;
}

/* Pass 2: functions; jumps stay inside theirs; none falls off its end. */
static int check_flow(struct vstate *v)
{
	v->start[0] = 1;
	v->start[v->entry] = 1;
	v->nfn = 0;
	for (size_t pc = 0; pc < v->n; pc++) {
		if (v->start[pc])
			v->fn_start[v->nfn++] = (uint32_t)pc;
		v->fn[pc] = v->nfn - 1;
	}
	for (size_t pc = 0; pc < v->n; pc++) {
		const struct arf_mc_insn *in = &v->insns[pc];
		int64_t t;

		if (v->half[pc])
			continue;
		if (is_jump(in)) {
			t = target_of(in, pc);
			if (t < 0 || (uint64_t)t >= v->n)
				return fail(v, pc, "jump out of range");
			if (v->half[t])
				return fail(v, pc, "jump into the middle of an lddw");
			if (v->fn[t] != v->fn[pc])
				return fail(v, pc, "jump out of its function");
		}
		/* Last instruction of a function (or the program)? */
		if (pc + 1 == v->n || v->start[pc + 1] ||
		    (in->opcode == MC_OP_LDDW && (pc + 2 == v->n || v->start[pc + 2]))) {
			size_t next = pc + (in->opcode == MC_OP_LDDW ? 2 : 1);

			if (in->opcode != MC_OP_EXIT && in->opcode != MC_OP_JA &&
			    in->opcode != MC_OP_JA32)
				return fail(v, pc, next == v->n ? "falls off the end of the program"
							       : "falls off the end of its function");
		}
	}
	return 0;
}

/* Frames needed by function f (itself and its deepest chain of calls). */
static int call_depth(struct vstate *v, uint32_t f, unsigned level)
{
	size_t end = f + 1 < v->nfn ? v->fn_start[f + 1] : v->n;
	unsigned d = 1;

	v->color[f] = 1;
	for (size_t pc = v->fn_start[f]; pc < end; pc++) {
		const struct arf_mc_insn *in = &v->insns[pc];
		uint32_t g;
		int rc;

		if (v->half[pc] || !is_local_call(in))
			continue;
		g = v->fn[target_of(in, pc)];
		if (v->color[g] == 1)
			return fail(v, pc, "recursive local call");
		if (v->color[g] == 0) {
			if (level + 1 >= ARF_MC_MAX_FRAMES)
				return mc_errf(v->err, v->errlen, ARF_EVERIFY,
					       "instruction %zu: local calls nest deeper than %u frames",
					       pc, ARF_MC_MAX_FRAMES);
			rc = call_depth(v, g, level + 1);
			if (rc)
				return rc;
		}
		if (level + v->depth[g] >= ARF_MC_MAX_FRAMES)
			return mc_errf(v->err, v->errlen, ARF_EVERIFY,
				       "instruction %zu: local calls nest deeper than %u frames", pc,
				       ARF_MC_MAX_FRAMES);
		if (1u + v->depth[g] > d)
			d = 1u + v->depth[g];
	}
	v->color[f] = 2;
	v->depth[f] = (uint8_t)d;
	return 0;
}

/* Registers an instruction reads and writes (calls and exit aside). */
static void uses(const struct vstate *v, const struct arf_mc_insn *in, uint16_t *rd, uint16_t *wr)
{
	int cls = MC_CLASS(in->opcode), op = MC_OPCODE(in->opcode), x = in->opcode & MC_X;

	*rd = 0;
	*wr = 0;
	switch (cls) {
	case MC_ALU:
	case MC_ALU64:
		*wr = REG(in->dst);
		if (op != MC_MOV)
			*rd |= REG(in->dst);
		if (x && op != MC_END)
			*rd |= REG(in->src);
		break;
	case MC_JMP:
	case MC_JMP32:
		if (op == MC_CALL) {
			if (x) {
				*rd = REG(in->dst);
			} else if (in->src == MC_CALL_HELPER) {
				for (unsigned i = 0; i < v->h->tab[in->imm].nargs; i++)
					*rd |= REG(1 + i);
			}
			*wr = REG(0);
		} else if (op == MC_EXIT) {
			*rd = REG(0);
		} else if (op != MC_JA) {
			*rd = REG(in->dst) | (x ? REG(in->src) : 0);
		}
		break;
	case MC_LD:
		*wr = REG(in->dst);
		break;
	case MC_LDX:
		*rd = REG(in->src);
		*wr = REG(in->dst);
		break;
	case MC_ST:
		*rd = REG(in->dst);
		break;
	default:
		*rd = REG(in->dst) | REG(in->src);
		if (MC_MODE(in->opcode) == MC_ATOMIC) {
			if (in->imm == MC_CMPXCHG) {
				*rd |= REG(0);
				*wr = REG(0);
			} else if (in->imm & MC_FETCH) {
				*wr = REG(in->src);
			}
		}
		break;
	}
}

static void flow_to(struct vstate *v, size_t *nwork, size_t pc, uint16_t mask)
{
	if (!v->seen[pc]) {
		v->seen[pc] = 1;
		v->init[pc] = mask;
	} else if ((v->init[pc] & mask) != v->init[pc]) {
		v->init[pc] &= mask;
	} else {
		return;
	}
	v->work[(*nwork)++] = (uint32_t)pc;
}

/* Pass 3: no register is read before it is written, on any path. */
static int check_init(struct vstate *v)
{
	size_t nwork = 0;

	flow_to(v, &nwork, v->entry, REG(1) | REG(2) | REG(MC_FP));
	while (nwork) {
		size_t pc = v->work[--nwork];
		const struct arf_mc_insn *in = &v->insns[pc];
		uint16_t m = v->init[pc], rd, wr;

		uses(v, in, &rd, &wr);
		if (rd & ~m) {
			unsigned r = (unsigned)__builtin_ctz(rd & ~m);

			return mc_errf(v->err, v->errlen, ARF_EVERIFY,
				       "instruction %zu: r%u is read before it is written", pc, r);
		}
		if (in->opcode == MC_OP_EXIT)
			continue;
		if (MC_OPCODE(in->opcode) == MC_CALL && MC_CLASS(in->opcode) == MC_JMP) {
			if (is_local_call(in))
				flow_to(v, &nwork, (size_t)target_of(in, pc), ARGS | REG(MC_FP));
			m &= (uint16_t)~ARGS;
		}
		m |= wr;
		if (is_jump(in)) {
			flow_to(v, &nwork, (size_t)target_of(in, pc), m);
			if (in->opcode == MC_OP_JA || in->opcode == MC_OP_JA32)
				continue;
		}
		flow_to(v, &nwork, pc + (in->opcode == MC_OP_LDDW ? 2 : 1), m);
	}
	return 0;
}

int arf_mc_verify(const struct arf_mc_helpers *h, const struct arf_mc_insn *insns, size_t n,
		  size_t entry, char *err, size_t errlen)
{
	struct vstate v = { .h = h, .insns = insns, .n = n, .entry = entry, .err = err,
			    .errlen = errlen };
	uint8_t *block = NULL;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!insns && n)
		return mc_errf(err, errlen, -EINVAL, "no instructions given");
	if (n == 0)
		return mc_errf(err, errlen, ARF_EVERIFY, "empty program");
	if (n > ARF_MC_MAX_INSNS)
		return mc_errf(err, errlen, ARF_EVERIFY, "program of %zu instructions (limit %u)", n,
			       ARF_MC_MAX_INSNS);
	if (entry >= n)
		return mc_errf(err, errlen, ARF_EVERIFY, "entry %zu out of range", entry);
	/*
	 * One block for every array.  An instruction goes on the work list when
	 * first reached and again only when its mask of set registers shrinks,
	 * at most 11 times, so 12 n slots are enough.
	 */
	size_t nwork = 12 * n;

	block = calloc(1, (2 * n + nwork) * sizeof(uint32_t) + n * sizeof(uint16_t) + 5 * n);
	if (!block)
		return mc_errf(err, errlen, -ENOMEM, "out of memory");
	v.fn = (uint32_t *)block;
	v.fn_start = v.fn + n;
	v.work = v.fn_start + n;
	v.init = (uint16_t *)(v.work + nwork);
	v.half = (uint8_t *)(v.init + n);
	v.start = v.half + n;
	v.seen = v.start + n;
	v.color = v.seen + n;
	v.depth = v.color + n;

	rc = check_insns(&v);
	if (!rc && v.half[entry])
		rc = mc_errf(err, errlen, ARF_EVERIFY, "entry %zu is the second half of an lddw",
			     entry);
	if (!rc)
		rc = check_flow(&v);
	if (!rc)
		rc = call_depth(&v, v.fn[entry], 0);
	if (!rc)
		rc = check_init(&v);
	free(block);
	return rc;
}
