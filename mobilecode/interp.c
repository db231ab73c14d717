/* SPDX-License-Identifier: MIT */
/*
 * The interpreter.  It trusts what the verifier established about the code
 * (valid encodings and registers, jumps inside the program, no fall off the
 * end, registered helper ids) and checks everything that depends on values:
 * each load, store and atomic goes through one lookup in the region table
 * and one overflow-safe range check; each instruction counts against the
 * budget; local calls nest at most ARF_MC_MAX_FRAMES deep; `call %rN`
 * checks the helper id it finds in the register.
 *
 * The loop keeps the registers and the budget in locals and dispatches on
 * the whole opcode byte through a table of labels (GNU C computed goto),
 * one indirect jump at the end of every handler.  It starts from any state
 * a run can be in (struct mc_exec): arf_mc_run's start, or wherever the
 * JIT's code hands a run over (jit.c); the setup around it is run.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mc_int.h"

/* Host pointer for len bytes at addr in a region of the given sizes, or NULL. */
static inline uint8_t *xlate(uint8_t *const *base, const uint64_t *sizes, uint64_t addr,
			     unsigned len)
{
	uint64_t k = addr >> ARF_MC_ADDR_SHIFT, off = addr & ARF_MC_OFF_MASK;

	if (__builtin_expect(k >= MC_NREGIONS || !arf_range_ok(off, len, sizes[k]), 0))
		return NULL;
	return base[k] + off;
}

static inline uint64_t ld(const uint8_t *p, unsigned len)
{
	uint8_t b;
	uint16_t h;
	uint32_t w;
	uint64_t d;

	switch (len) {
	case 1: memcpy(&b, p, 1); return b;
	case 2: memcpy(&h, p, 2); return h;
	case 4: memcpy(&w, p, 4); return w;
	default: memcpy(&d, p, 8); return d;
	}
}

static inline void st(uint8_t *p, unsigned len, uint64_t v)
{
	uint8_t b = (uint8_t)v;
	uint16_t h = (uint16_t)v;
	uint32_t w = (uint32_t)v;

	switch (len) {
	case 1: memcpy(p, &b, 1); break;
	case 2: memcpy(p, &h, 2); break;
	case 4: memcpy(p, &w, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

#define U32(x) ((uint32_t)(x))
#define S32(x) ((int32_t)(uint32_t)(x))
#define S64(x) ((int64_t)(x))
/* Fields of the current instruction w (little-endian, as on the wire). */
#define OPC   ((uint8_t)w)
#define DST   ((unsigned)(w >> 8) & 0xf)
#define SRC   ((unsigned)(w >> 12) & 0xf)
#define OFF   ((int16_t)(w >> 16))
#define IMM   ((int32_t)(w >> 32))
#define IMM64 ((uint64_t)(int64_t)IMM)

/* Signed division and modulo as RFC 9669 wants them, without C's traps. */
static inline uint64_t sdiv64(uint64_t a, uint64_t b)
{
	if (b == 0)
		return 0;
	if (S64(b) == -1)
		return (uint64_t)0 - a;
	return (uint64_t)(S64(a) / S64(b));
}

static inline uint64_t smod64(uint64_t a, uint64_t b)
{
	if (b == 0)
		return a;
	if (S64(b) == -1)
		return 0;
	return (uint64_t)(S64(a) % S64(b));
}

/* The 32-bit forms: sign-extended to 64 bits, the rules above give the
 * same low 32 bits (INT32_MIN / -1 included: 0 - a, truncated). */
static inline uint32_t sdiv32(uint32_t a, uint32_t b)
{
	return (uint32_t)sdiv64((uint64_t)(int64_t)S32(a), (uint64_t)(int64_t)S32(b));
}

static inline uint32_t smod32(uint32_t a, uint32_t b)
{
	return (uint32_t)smod64((uint64_t)(int64_t)S32(a), (uint64_t)(int64_t)S32(b));
}

static inline uint64_t swap(uint64_t v, int32_t width)
{
	switch (width) {
	case 16: return __builtin_bswap16((uint16_t)v);
	case 32: return __builtin_bswap32((uint32_t)v);
	default: return __builtin_bswap64(v);
	}
}

static inline uint64_t trunc_le(uint64_t v, int32_t width)
{
	switch (width) {
	case 16: return (uint16_t)v;
	case 32: return (uint32_t)v;
	default: return v;
	}
}

/* Every opcode the interpreter implements: one label each below. */
#define MC_OPCODES(X)                                                          \
	X(0x07) X(0x0f) X(0x17) X(0x1f) X(0x27) X(0x2f) X(0x37) X(0x3f)        \
	X(0x47) X(0x4f) X(0x57) X(0x5f) X(0x67) X(0x6f) X(0x77) X(0x7f)        \
	X(0x87) X(0x97) X(0x9f) X(0xa7) X(0xaf) X(0xb7) X(0xbf) X(0xc7)        \
	X(0xcf) X(0xd7)                                                        \
	X(0x04) X(0x0c) X(0x14) X(0x1c) X(0x24) X(0x2c) X(0x34) X(0x3c)        \
	X(0x44) X(0x4c) X(0x54) X(0x5c) X(0x64) X(0x6c) X(0x74) X(0x7c)        \
	X(0x84) X(0x94) X(0x9c) X(0xa4) X(0xac) X(0xb4) X(0xbc) X(0xc4)        \
	X(0xcc) X(0xd4) X(0xdc)                                                \
	X(0x18)                                                                \
	X(0x61) X(0x69) X(0x71) X(0x79) X(0x81) X(0x89) X(0x91)                \
	X(0x62) X(0x6a) X(0x72) X(0x7a) X(0x63) X(0x6b) X(0x73) X(0x7b)        \
	X(0xc3) X(0xdb)                                                        \
	X(0x05) X(0x06)                                                        \
	X(0x15) X(0x1d) X(0x25) X(0x2d) X(0x35) X(0x3d) X(0xa5) X(0xad)        \
	X(0xb5) X(0xbd) X(0x45) X(0x4d) X(0x55) X(0x5d) X(0x65) X(0x6d)        \
	X(0x75) X(0x7d) X(0xc5) X(0xcd) X(0xd5) X(0xdd)                        \
	X(0x16) X(0x1e) X(0x26) X(0x2e) X(0x36) X(0x3e) X(0xa6) X(0xae)        \
	X(0xb6) X(0xbe) X(0x46) X(0x4e) X(0x56) X(0x5e) X(0x66) X(0x6e)        \
	X(0x76) X(0x7e) X(0xc6) X(0xce) X(0xd6) X(0xde)                        \
	X(0x85) X(0x8d) X(0x95)

int mc_interp(struct arf_mc_vm *vm, const struct arf_mc_prog *p, struct mc_exec *x,
	      struct arf_mc_result *res)
{
	const struct arf_mc_insn *insns = p->insns;
	uint8_t *const *base = vm->base;
	const uint64_t *rsize = vm->rsize, *wsize = vm->wsize;
	uint64_t reg[16];
	/*
	 * The budget is spent in slices: `left` counts down the current slice
	 * and `reserve` holds the rest, so the loop keeps its one test per
	 * instruction and the clock is looked at once per slice.  What a
	 * helper charges comes off the same counters (mc_charge_take).
	 */
	uint64_t left = x->left, reserve = x->reserve, budget = x->budget, addr = 0;
	size_t pc = x->pc, cur = pc;
	unsigned depth = x->depth, len = 0;
	int unwind = 0, rc;

	memcpy(reg, x->reg, sizeof(reg));

	/*
	 * Threaded dispatch: each handler ends in its own indirect jump
	 * (NEXT), which branch predictors follow far better than the single
	 * jump of a switch.  Opcodes the verifier lets through have a label;
	 * everything else lands on op_bad.
	 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
#ifdef __clang__
#pragma GCC diagnostic ignored "-Winitializer-overrides"
#endif
#define LABEL(x) [x] = &&op_##x,
	static const void *const dispatch[256] = {
		[0 ... 255] = &&op_bad,
		MC_OPCODES(LABEL)
	};
#pragma GCC diagnostic pop
#define OP(x) op_##x:
#define NEXT                                                           \
	do {                                                           \
		cur = pc;                                              \
		if (__builtin_expect(left == 0, 0))                    \
			goto out_of_budget;                            \
		left--;                                                \
		memcpy(&w, &insns[pc++], sizeof(w));                   \
		d = &reg[DST];                                         \
		s = reg[SRC];                                          \
		goto *dispatch[OPC];                                   \
	} while (0)

	uint64_t w; /* the instruction, fields taken out where a handler needs them */
	uint64_t *d, s;
	uint8_t *q;

	NEXT;

	/* ---- ALU64 ---- */
	OP(0x07) *d += IMM64; NEXT;
	OP(0x0f) *d += s; NEXT;
	OP(0x17) *d -= IMM64; NEXT;
	OP(0x1f) *d -= s; NEXT;
	OP(0x27) *d *= IMM64; NEXT;
	OP(0x2f) *d *= s; NEXT;
	OP(0x37) *d = OFF ? sdiv64(*d, IMM64) : IMM64 ? *d / IMM64 : 0; NEXT;
	OP(0x3f) *d = OFF ? sdiv64(*d, s) : s ? *d / s : 0; NEXT;
	OP(0x47) *d |= IMM64; NEXT;
	OP(0x4f) *d |= s; NEXT;
	OP(0x57) *d &= IMM64; NEXT;
	OP(0x5f) *d &= s; NEXT;
	OP(0x67) *d <<= (IMM & 63); NEXT;
	OP(0x6f) *d <<= (s & 63); NEXT;
	OP(0x77) *d >>= (IMM & 63); NEXT;
	OP(0x7f) *d >>= (s & 63); NEXT;
	OP(0x87) *d = (uint64_t)0 - *d; NEXT;
	OP(0x97) *d = OFF ? smod64(*d, IMM64) : IMM64 ? *d % IMM64 : *d; NEXT;
	OP(0x9f) *d = OFF ? smod64(*d, s) : s ? *d % s : *d; NEXT;
	OP(0xa7) *d ^= IMM64; NEXT;
	OP(0xaf) *d ^= s; NEXT;
	OP(0xb7) *d = IMM64; NEXT;
	OP(0xbf)
		switch (OFF) {
		case 8: *d = (uint64_t)(int64_t)(int8_t)s; break;
		case 16: *d = (uint64_t)(int64_t)(int16_t)s; break;
		case 32: *d = (uint64_t)(int64_t)(int32_t)s; break;
		default: *d = s; break;
		}
		NEXT;
	OP(0xc7) *d = (uint64_t)(S64(*d) >> (IMM & 63)); NEXT;
	OP(0xcf) *d = (uint64_t)(S64(*d) >> (s & 63)); NEXT;
	OP(0xd7) *d = swap(*d, IMM); NEXT;

	/* ---- ALU (32-bit; results zero-extended) ---- */
	OP(0x04) *d = U32(*d + (uint32_t)IMM); NEXT;
	OP(0x0c) *d = U32(*d + s); NEXT;
	OP(0x14) *d = U32(*d - (uint32_t)IMM); NEXT;
	OP(0x1c) *d = U32(*d - s); NEXT;
	OP(0x24) *d = U32(U32(*d) * (uint32_t)IMM); NEXT;
	OP(0x2c) *d = U32(U32(*d) * U32(s)); NEXT;
	OP(0x34)
		*d = OFF ? sdiv32(U32(*d), (uint32_t)IMM)
			    : IMM ? U32(*d) / (uint32_t)IMM : 0;
		NEXT;
	OP(0x3c) *d = OFF ? sdiv32(U32(*d), U32(s)) : U32(s) ? U32(*d) / U32(s) : 0; NEXT;
	OP(0x44) *d = U32(*d | (uint32_t)IMM); NEXT;
	OP(0x4c) *d = U32(*d | s); NEXT;
	OP(0x54) *d = U32(*d & (uint32_t)IMM); NEXT;
	OP(0x5c) *d = U32(*d & s); NEXT;
	OP(0x64) *d = U32(U32(*d) << (IMM & 31)); NEXT;
	OP(0x6c) *d = U32(U32(*d) << (s & 31)); NEXT;
	OP(0x74) *d = U32(*d) >> (IMM & 31); NEXT;
	OP(0x7c) *d = U32(*d) >> (s & 31); NEXT;
	OP(0x84) *d = U32(0u - U32(*d)); NEXT;
	OP(0x94)
		*d = OFF ? smod32(U32(*d), (uint32_t)IMM)
			    : IMM ? U32(*d) % (uint32_t)IMM : U32(*d);
		NEXT;
	OP(0x9c) *d = OFF ? smod32(U32(*d), U32(s)) : U32(s) ? U32(*d) % U32(s) : U32(*d); NEXT;
	OP(0xa4) *d = U32(*d ^ (uint32_t)IMM); NEXT;
	OP(0xac) *d = U32(*d ^ s); NEXT;
	OP(0xb4) *d = (uint32_t)IMM; NEXT;
	OP(0xbc)
		switch (OFF) {
		case 8: *d = U32((int32_t)(int8_t)s); break;
		case 16: *d = U32((int32_t)(int16_t)s); break;
		default: *d = U32(s); break;
		}
		NEXT;
	OP(0xc4) *d = U32(S32(*d) >> (IMM & 31)); NEXT;
	OP(0xcc) *d = U32(S32(*d) >> (s & 31)); NEXT;
	OP(0xd4) *d = trunc_le(*d, IMM); NEXT;
	OP(0xdc) *d = swap(*d, IMM); NEXT;

	/* ---- 64-bit immediate ---- */
	OP(0x18)
		*d = (uint64_t)(uint32_t)IMM | ((uint64_t)(uint32_t)insns[pc].imm << 32);
		pc++;
		NEXT;

	/* ---- loads ---- */
#define LOAD(op, n, conv)                                                      \
	OP(op)                                                                 \
		addr = s + (uint64_t)(int64_t)OFF;                          \
		len = n;                                                       \
		q = xlate(base, rsize, addr, n);                               \
		if (!q)                                                        \
			goto load_fault;                                       \
		*d = conv(ld(q, n));                                           \
		NEXT;
#define ZX(v) (v)
#define SX8(v) ((uint64_t)(int64_t)(int8_t)(v))
#define SX16(v) ((uint64_t)(int64_t)(int16_t)(v))
#define SX32(v) ((uint64_t)(int64_t)(int32_t)(v))
	LOAD(0x61, 4, ZX)
	LOAD(0x69, 2, ZX)
	LOAD(0x71, 1, ZX)
	LOAD(0x79, 8, ZX)
	LOAD(0x81, 4, SX32)
	LOAD(0x89, 2, SX16)
	LOAD(0x91, 1, SX8)

	/* ---- stores ---- */
#define STORE(op, n, val)                                                      \
	OP(op)                                                                 \
		addr = *d + (uint64_t)(int64_t)OFF;                         \
		len = n;                                                       \
		q = xlate(base, wsize, addr, n);                               \
		if (!q)                                                        \
			goto store_fault;                                      \
		mc_stack_touch(vm, addr);                                      \
		st(q, n, val);                                                 \
		NEXT;
	STORE(0x62, 4, IMM64)
	STORE(0x6a, 2, IMM64)
	STORE(0x72, 1, IMM64)
	STORE(0x7a, 8, IMM64)
	STORE(0x63, 4, s)
	STORE(0x6b, 2, s)
	STORE(0x73, 1, s)
	STORE(0x7b, 8, s)

	/* ---- atomics ---- */
	OP(0xc3)
	OP(0xdb) {
		int dw = OPC == 0xdb;
		uint64_t old;

		addr = *d + (uint64_t)(int64_t)OFF;
		len = dw ? 8 : 4;
		q = xlate(base, wsize, addr, len);
		if (!q)
			goto store_fault;
		mc_stack_touch(vm, addr);
		if ((uintptr_t)q & (len - 1)) {
			rc = mc_failf(res, cur, ARF_EFAULT, "misaligned atomic operation at 0x%llx",
				      (unsigned long long)addr);
			goto failed;
		}
		old = mc_atomic_op(q, dw, IMM, s, &reg[0]);
		if ((IMM & MC_FETCH) && IMM != MC_CMPXCHG)
			reg[SRC] = old;
		NEXT;
	}

	/* ---- jumps ---- */
	OP(0x05) pc += (size_t)(ptrdiff_t)OFF; NEXT;
	OP(0x06) pc += (size_t)(ptrdiff_t)IMM; NEXT;
#define JMP(op, cond)                                                          \
	OP(op)                                                                 \
		if (cond)                                                      \
			pc += (size_t)(ptrdiff_t)OFF;                       \
		NEXT;
	JMP(0x15, *d == IMM64)
	JMP(0x1d, *d == s)
	JMP(0x25, *d > IMM64)
	JMP(0x2d, *d > s)
	JMP(0x35, *d >= IMM64)
	JMP(0x3d, *d >= s)
	JMP(0xa5, *d < IMM64)
	JMP(0xad, *d < s)
	JMP(0xb5, *d <= IMM64)
	JMP(0xbd, *d <= s)
	JMP(0x45, *d & IMM64)
	JMP(0x4d, *d & s)
	JMP(0x55, *d != IMM64)
	JMP(0x5d, *d != s)
	JMP(0x65, S64(*d) > S64(IMM64))
	JMP(0x6d, S64(*d) > S64(s))
	JMP(0x75, S64(*d) >= S64(IMM64))
	JMP(0x7d, S64(*d) >= S64(s))
	JMP(0xc5, S64(*d) < S64(IMM64))
	JMP(0xcd, S64(*d) < S64(s))
	JMP(0xd5, S64(*d) <= S64(IMM64))
	JMP(0xdd, S64(*d) <= S64(s))
	JMP(0x16, U32(*d) == (uint32_t)IMM)
	JMP(0x1e, U32(*d) == U32(s))
	JMP(0x26, U32(*d) > (uint32_t)IMM)
	JMP(0x2e, U32(*d) > U32(s))
	JMP(0x36, U32(*d) >= (uint32_t)IMM)
	JMP(0x3e, U32(*d) >= U32(s))
	JMP(0xa6, U32(*d) < (uint32_t)IMM)
	JMP(0xae, U32(*d) < U32(s))
	JMP(0xb6, U32(*d) <= (uint32_t)IMM)
	JMP(0xbe, U32(*d) <= U32(s))
	JMP(0x46, U32(*d) & (uint32_t)IMM)
	JMP(0x4e, U32(*d) & U32(s))
	JMP(0x56, U32(*d) != (uint32_t)IMM)
	JMP(0x5e, U32(*d) != U32(s))
	JMP(0x66, S32(*d) > IMM)
	JMP(0x6e, S32(*d) > S32(s))
	JMP(0x76, S32(*d) >= IMM)
	JMP(0x7e, S32(*d) >= S32(s))
	JMP(0xc6, S32(*d) < IMM)
	JMP(0xce, S32(*d) < S32(s))
	JMP(0xd6, S32(*d) <= IMM)
	JMP(0xde, S32(*d) <= S32(s))

	/* ---- calls and exit ---- */
	OP(0x85)
		if (SRC == MC_CALL_LOCAL) {
			struct mc_frame *fr;

			if (depth + 1 >= ARF_MC_MAX_FRAMES) {
				rc = mc_failf(res, cur, ARF_EFAULT,
					      "local calls nest deeper than %u frames", ARF_MC_MAX_FRAMES);
				goto failed;
			}
			fr = &vm->frames[depth++];
			memcpy(fr->saved, &reg[6], sizeof(fr->saved));
			fr->ret_pc = pc;
			reg[MC_FP] -= ARF_MC_STACK_SIZE;
			pc += (size_t)(ptrdiff_t)IMM;
			NEXT;
		}
		rc = mc_call_helper(vm, &vm->helpers->tab[IMM], reg, cur, left + reserve, &unwind, res);
		mc_charge_take(vm->call.charge, &left, &reserve);
		if (rc)
			goto failed;
		if (unwind)
			goto done;
		NEXT;
	OP(0x8d) {
		const struct mc_helper *hp = NULL;

		if (*d < ARF_MC_MAX_HELPERS && vm->helpers)
			hp = &vm->helpers->tab[*d];
		if (!hp || !hp->fn) {
			rc = mc_failf(res, cur, -ENOSYS, "call %%r%u: unknown helper %llu", DST,
				      (unsigned long long)*d);
			goto failed;
		}
		rc = mc_call_helper(vm, hp, reg, cur, left + reserve, &unwind, res);
		mc_charge_take(vm->call.charge, &left, &reserve);
		if (rc)
			goto failed;
		if (unwind)
			goto done;
		NEXT;
	}
	OP(0x95)
		if (depth == 0)
			goto done;
		depth--;
		memcpy(&reg[6], vm->frames[depth].saved, sizeof(vm->frames[depth].saved));
		pc = vm->frames[depth].ret_pc;
		NEXT;
	op_bad:
		/* The verifier lets nothing else through. */
		rc = mc_failf(res, cur, ARF_EVERIFY, "unknown opcode 0x%02x", OPC);
		goto failed;

done:
	res->r0 = reg[0];
	res->insns = budget - reserve - left;
	res->out_len = vm->out_len;
	return 0;
out_of_budget:
	if (reserve) {
		if ((rc = mc_clock_stop(vm, res, cur, budget - reserve))) {
			res->insns = budget - reserve;
			res->out_len = vm->out_len;
			return rc;
		}
		left = reserve > MC_SLICE ? MC_SLICE : reserve;
		reserve -= left;
		NEXT;
	}
	res->insns = budget;
	res->out_len = vm->out_len;
	return mc_failf(res, cur, ARF_EBUDGET, "instruction budget of %llu exhausted",
		     (unsigned long long)budget);
load_fault:
	rc = mc_fault(vm, res, cur, addr, len, "load", 0);
	goto failed;
store_fault:
	rc = mc_fault(vm, res, cur, addr, len, "store", 1);
failed:
	/* Every failure: the instructions run, the failing one included. */
	res->insns = budget - reserve - left;
	res->out_len = vm->out_len;
	return rc;
}
