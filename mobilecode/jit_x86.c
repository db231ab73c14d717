/* SPDX-License-Identifier: MIT */
/*
 * The JIT's code generator: verified eBPF to x86-64, one pass over the
 * program and a patch pass for jumps.  About 1,130 lines, kept whole: the
 * instruction encoders, the per-opcode emitters and the call-out routines
 * share the register map, the budget charging and the fault exits below,
 * and splitting them would put those invariants in two places.  The code keeps every guarantee the
 * interpreter gives, and gives the same results, faults and messages:
 *
 * Addresses.  Programs keep the interpreter's addresses, region << 48 |
 * offset, so a value a program computes is the same under both engines.
 * A load or store at address A of 1 << l bytes is checked against two
 * per-run tables in the vm (jit.c fills them): with k = (A >> 48) & 31,
 *
 *	A >= lim[write][l][k]  -> fault      (the first address that faults)
 *	host = A + delta[k]
 *
 * six instructions and a branch never taken.  lim is 0 where nothing may
 * be accessed (the null region, a store into a read-only region, entries
 * past the vm's regions), so everything there faults; an address whose
 * region bits are 32 or more lands on the entry of a smaller region whose
 * limit it is always above (a region is under 2^48 bytes), so it faults
 * too.  Accesses through r10 at a constant offset inside the current
 * frame ([-512, 0)) need no check at all: rbp holds the host address of
 * the frame, and frames never leave the stack (the verifier bounds the
 * call depth, and the code checks it again at each call).
 *
 * Registers.  r0..r9 live in host registers; r10 is not kept (its value,
 * a program address, is rbp + vm->jit.fp_delta, made where a program reads
 * it); r12 holds the vm, r11 the budget left in this slice, rax and rdx
 * are scratch.  Call-outs (helpers, atomics, budget refills) go through
 * shared routines that store r0..r9 and the budget in vm->jit, call C, and
 * load them back, so C sees and changes the registers as the interpreter
 * would.
 *
 * Budget.  Every basic block charges its length at its start (sub r11, N;
 * jb), so a run that succeeds has spent exactly what it would in the
 * interpreter.  When a block does not fit in what is left, the refill
 * call-out takes the next slice (looking at the clock, as the interpreter
 * does) or, when there is none, hands the run over to the interpreter at
 * that block, which stops it at exactly the instruction where it would
 * have stopped all along.  Local calls keep their frames in the
 * interpreter's format for that reason.  A fault inside a block reports
 * the instructions charged less those after the faulting one (the undo
 * table).
 *
 * Code layout: the entry (saves the host's registers, loads the program's,
 * calls the program's entry, stores r0), the instructions in order, the
 * out-of-line stubs (budget refills, faults), the shared routines.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mc_int.h"

#if defined(__x86_64__)

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

/* Host register of r0..r9 (r10 has none). */
static const int8_t hreg[10] = { RCX, RDI, RSI, R8, R9, R10, RBX, R13, R14, R15 };
#define VM  R12 /* the vm */
#define BUD R11 /* budget left in this slice */
#define FP  RBP /* host address of the current frame's top */
#define T0  RAX
#define T1  RDX

/* Offsets into the vm of what the code reads and writes. */
#define J(f)        ((int32_t)offsetof(struct arf_mc_vm, jit.f))
#define J_LIM(w, l) ((int32_t)(offsetof(struct arf_mc_vm, jit.lim) + ((w) * 4 + (l)) * MC_JIT_NREG * 8))
#define J_DELTA     J(delta)
#define J_REG(r)    ((int32_t)(offsetof(struct arf_mc_vm, jit.reg) + (r) * 8))
#define V_FRAMES    ((int32_t)offsetof(struct arf_mc_vm, frames))
#define V_STACK     ((int32_t)offsetof(struct arf_mc_vm, stack))
#define V_STACKLOW  ((int32_t)offsetof(struct arf_mc_vm, stack_low))
#define V_STACKTOP  ((int32_t)(offsetof(struct arf_mc_vm, stack) + sizeof(((struct arf_mc_vm *)0)->stack)))

#define MAX_CODE (64u << 20)

/* Condition codes (the low nibble of jcc). */
enum { CC_B = 2, CC_AE = 3, CC_E = 4, CC_NE = 5, CC_BE = 6, CC_A = 7, CC_L = 12, CC_GE = 13,
       CC_LE = 14, CC_G = 15 };

/* Instruction flags for the encoders. */
#define W   1u /* REX.W: 64-bit operand */
#define P66 2u /* operand-size prefix: 16-bit operand */
#define B8  4u /* a byte register operand: sil/dil need a REX prefix */

/* Jump sites to patch: to an instruction or a shared routine (jumps to
 * stubs are patched as the stubs are emitted). */
enum fx_kind { FX_INSN, FX_LABEL };
struct fixup {
	size_t at;     /* offset of the rel32 */
	uint8_t kind;  /* enum fx_kind */
	uint32_t idx;  /* instruction or label number */
};

/* Shared routines. */
enum label { L_EXIT, L_HELPER, L_ATOMIC, L_REFILL, L_FAULT, L_STOPPED, L_UNWIND, L_EPILOGUE,
	     L_COUNT };

/* Out-of-line code, emitted after the instructions. */
enum stub_kind {
	ST_FAULT,  /* an access failed at pc: arg is the fault_info */
	ST_BUDGET, /* the block at pc does not fit: arg is its charge */
	ST_STACK,  /* a store through a computed pointer lands in the stack */
	ST_SLOW,   /* an access outside its guessed region: the general check */
};
struct stub {
	uint8_t kind;    /* enum stub_kind */
	uint32_t pc;
	uint32_t arg;
	size_t at;       /* the rel32 of the jcc that goes to it */
	size_t back;     /* ST_STACK: where the code goes on */
};

struct em {
	uint8_t *b;
	size_t len, cap;
	int oom;
	struct fixup *fx;
	size_t nfx, capfx;
	struct stub *st;
	size_t nst, capst;
	size_t *insn_at;     /* code offset of each instruction */
	const uint8_t *guess;/* per instruction: the region its access is guessed to reach */
	size_t label_at[L_COUNT];
	int frame_stores;    /* the entry's function stores into its frame through r10 */
	size_t main_lo, main_hi; /* the entry's function: [main_lo, main_hi) */
};

static void put(struct em *e, const void *p, size_t n)
{
	if (e->oom)
		return;
	if (e->len + n > e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 4096;
		uint8_t *b;

		while (cap < e->len + n)
			cap *= 2;
		if (cap > MAX_CODE || !(b = realloc(e->b, cap))) {
			e->oom = 1;
			return;
		}
		e->b = b;
		e->cap = cap;
	}
	memcpy(e->b + e->len, p, n);
	e->len += n;
}

static void u8(struct em *e, uint8_t v)
{
	put(e, &v, 1);
}

static void u16(struct em *e, uint16_t v)
{
	put(e, &v, 2);
}

static void u32(struct em *e, uint32_t v)
{
	put(e, &v, 4);
}

static void u64(struct em *e, uint64_t v)
{
	put(e, &v, 8);
}

static int fits8(int64_t v)
{
	return v >= -128 && v <= 127;
}

/* ---- encoders --------------------------------------------------------- */

/* A memory operand [base + index << scale + disp]; index -1: none. */
struct mem {
	int8_t base, index;
	uint8_t scale;
	int32_t disp;
};
#define M(b, d)        ((struct mem){ (int8_t)(b), -1, 0, (int32_t)(d) })
#define MI(b, i, s, d) ((struct mem){ (int8_t)(b), (int8_t)(i), (s), (int32_t)(d) })

static void prefix(struct em *e, unsigned fl, int reg, int index, int base, int force)
{
	uint8_t rex = (uint8_t)(0x40 | ((fl & W) ? 8 : 0) | ((reg >> 3) & 1) << 2 |
				((index >> 3) & 1) << 1 | ((base >> 3) & 1));

	if (fl & P66)
		u8(e, 0x66);
	if (rex != 0x40 || force)
		u8(e, rex);
}

static void opcode(struct em *e, uint32_t opc)
{
	/* one to three bytes, the first in the low byte */
	u8(e, (uint8_t)opc);
	if (opc > 0xff)
		u8(e, (uint8_t)(opc >> 8));
	if (opc > 0xffff)
		u8(e, (uint8_t)(opc >> 16));
}

/* opc with ModRM reg = reg (a register or an opcode extension), rm = a register. */
static void op_rr(struct em *e, unsigned fl, uint32_t opc, int reg, int rm)
{
	int force = (fl & B8) && ((reg >= 4 && reg < 8) || (rm >= 4 && rm < 8));

	prefix(e, fl, reg, 0, rm, force);
	opcode(e, opc);
	u8(e, (uint8_t)(0xc0 | (reg & 7) << 3 | (rm & 7)));
}

/* opc with ModRM reg = reg, rm = memory m. */
static void op_rm(struct em *e, unsigned fl, uint32_t opc, int reg, struct mem m)
{
	int b = m.base & 7, mod;

	prefix(e, fl, reg, m.index >= 0 ? m.index : 0, m.base, (fl & B8) && reg >= 4 && reg < 8);
	opcode(e, opc);
	if (m.disp == 0 && b != 5)
		mod = 0;
	else if (fits8(m.disp))
		mod = 1;
	else
		mod = 2;
	if (m.index >= 0 || b == 4) {
		u8(e, (uint8_t)(mod << 6 | (reg & 7) << 3 | 4));
		u8(e, (uint8_t)((m.index >= 0 ? m.scale : 0) << 6 |
				(m.index >= 0 ? (m.index & 7) : 4) << 3 | b));
	} else {
		u8(e, (uint8_t)(mod << 6 | (reg & 7) << 3 | b));
	}
	if (mod == 1)
		u8(e, (uint8_t)m.disp);
	else if (mod == 2)
		u32(e, (uint32_t)m.disp);
}

static void mov_rr(struct em *e, unsigned fl, int dst, int src)
{
	op_rr(e, fl, 0x89, src, dst);
}

/* dst = [m] (64 bits with W, else 32 and zero-extended). */
static void mov_load(struct em *e, unsigned fl, int dst, struct mem m)
{
	op_rm(e, fl, 0x8b, dst, m);
}

static void mov_store(struct em *e, unsigned fl, struct mem m, int src)
{
	op_rm(e, fl, 0x89, src, m);
}

/* Arithmetic on registers: opc is the "r/m, reg" form (01 add, 09 or, ...). */
static void alu_rr(struct em *e, unsigned fl, uint8_t opc, int dst, int src)
{
	op_rr(e, fl, opc, src, dst);
}

/* Arithmetic with an immediate: ext is the /digit (0 add, 1 or, 4 and, 5 sub, 6 xor, 7 cmp). */
static void alu_ri(struct em *e, unsigned fl, int ext, int dst, int32_t imm)
{
	if (fits8(imm)) {
		op_rr(e, fl, 0x83, ext, dst);
		u8(e, (uint8_t)imm);
	} else {
		op_rr(e, fl, 0x81, ext, dst);
		u32(e, (uint32_t)imm);
	}
}

static void alu_mi(struct em *e, unsigned fl, int ext, struct mem m, int32_t imm)
{
	if (fits8(imm)) {
		op_rm(e, fl, 0x83, ext, m);
		u8(e, (uint8_t)imm);
	} else {
		op_rm(e, fl, 0x81, ext, m);
		u32(e, (uint32_t)imm);
	}
}

/* dst = v, in the shortest form. */
static void mov_ri(struct em *e, int dst, uint64_t v)
{
	if (v <= UINT32_MAX) {
		prefix(e, 0, 0, 0, dst, 0);
		u8(e, (uint8_t)(0xb8 + (dst & 7)));
		u32(e, (uint32_t)v);
	} else if ((int64_t)v == (int32_t)v) {
		op_rr(e, W, 0xc7, 0, dst);
		u32(e, (uint32_t)v);
	} else {
		prefix(e, W, 0, 0, dst, 0);
		u8(e, (uint8_t)(0xb8 + (dst & 7)));
		u64(e, v);
	}
}

static void push_r(struct em *e, int r)
{
	prefix(e, 0, 0, 0, r, 0);
	u8(e, (uint8_t)(0x50 + (r & 7)));
}

static void pop_r(struct em *e, int r)
{
	prefix(e, 0, 0, 0, r, 0);
	u8(e, (uint8_t)(0x58 + (r & 7)));
}

/* A jump with a rel32 to fill in later; returns the rel32's offset. */
static size_t jcc32(struct em *e, int cc)
{
	u8(e, 0x0f);
	u8(e, (uint8_t)(0x80 + cc));
	u32(e, 0);
	return e->len - 4;
}

static size_t jmp32(struct em *e)
{
	u8(e, 0xe9);
	u32(e, 0);
	return e->len - 4;
}

static size_t call32(struct em *e)
{
	u8(e, 0xe8);
	u32(e, 0);
	return e->len - 4;
}

/* Points the rel32 at `at` to code offset `to`. */
static void patch(struct em *e, size_t at, size_t to)
{
	int32_t rel = (int32_t)((int64_t)to - (int64_t)(at + 4));

	if (!e->oom)
		memcpy(e->b + at, &rel, 4);
}

static void fixup(struct em *e, size_t at, enum fx_kind kind, uint32_t idx)
{
	if (e->oom)
		return;
	if (e->nfx == e->capfx) {
		size_t cap = e->capfx ? e->capfx * 2 : 256;
		struct fixup *f = realloc(e->fx, cap * sizeof(*f));

		if (!f) {
			e->oom = 1;
			return;
		}
		e->fx = f;
		e->capfx = cap;
	}
	e->fx[e->nfx++] = (struct fixup){ at, (uint8_t)kind, idx };
}

/* A conditional jump to a new out-of-line stub; returns its index. */
static size_t to_stub(struct em *e, int cc, enum stub_kind kind, uint32_t pc, uint32_t arg)
{
	size_t at = jcc32(e, cc);

	if (e->oom)
		return 0;
	if (e->nst == e->capst) {
		size_t cap = e->capst ? e->capst * 2 : 256;
		struct stub *s = realloc(e->st, cap * sizeof(*s));

		if (!s) {
			e->oom = 1;
			return 0;
		}
		e->st = s;
		e->capst = cap;
	}
	e->st[e->nst] = (struct stub){ (uint8_t)kind, pc, arg, at, e->len };
	return e->nst++;
}

static void jmp_label(struct em *e, enum label l)
{
	fixup(e, jmp32(e), FX_LABEL, l);
}

static void call_label(struct em *e, enum label l)
{
	fixup(e, call32(e), FX_LABEL, l);
}

/* ---- pieces of instructions --------------------------------------------- */

/* t = the value of r10 (a program address). */
static void fp_value(struct em *e, int t)
{
	mov_rr(e, W, t, FP);
	op_rm(e, W, 0x03, t, M(VM, J(fp_delta))); /* add t, [fp_delta] */
}

/* Host register holding the value of program register r, made in t for r10. */
static int src_of(struct em *e, unsigned r, int t)
{
	if (r == MC_FP) {
		fp_value(e, t);
		return t;
	}
	return hreg[r];
}

static int log2_of(unsigned len)
{
	return len == 1 ? 0 : len == 2 ? 1 : len == 4 ? 2 : 3;
}

/*
 * The general check of the address in rax, with rdx = rax >> 48: on to the
 * fault stub, or rax = the host address.
 */
static void general_check(struct em *e, unsigned len, int write, uint32_t pc)
{
	alu_ri(e, 0, 4, T1, MC_JIT_NREG - 1); /* and edx, 31 */
	op_rm(e, W, 0x3b, T0, MI(VM, T1, 3, J_LIM(write, log2_of(len)))); /* cmp rax, lim */
	to_stub(e, CC_AE, ST_FAULT, pc, (write ? MC_JIT_FAULT_STORE : MC_JIT_FAULT_LOAD) | len << 8);
	if (write) { /* a store into the stack lowers the mark of what to clear */
		alu_ri(e, 0, 7, T1, ARF_MC_REGION_STACK);
		to_stub(e, CC_E, ST_STACK, pc, 0);
	}
	op_rm(e, W, 0x03, T0, MI(VM, T1, 3, J_DELTA)); /* add rax, delta */
}

/*
 * The memory operand for len bytes at program register base + off, for a
 * load (write 0) or a store (write 1) at instruction pc: [rbp + off] inside
 * the current frame, otherwise the checked translation into rax.  Clobbers
 * rax and rdx.
 *
 * Where the access is guessed to reach region k (jit_guess.c), the code
 * compares the address's region with k and then uses k's table entries at
 * fixed offsets: their loads do not wait for the address, so the access
 * costs the address one addition on its way.  Any other region goes to
 * the general check out of line (ST_SLOW), which comes back with rax
 * translated.  Stores guessed into the stack keep the general check, which
 * lowers the stack's mark.
 */
static struct mem address(struct em *e, unsigned base, int16_t off, unsigned len, int write,
			  uint32_t pc)
{
	if (base == MC_FP && off >= -(int)ARF_MC_STACK_SIZE && off + (int)len <= 0) {
		/* the first frame's stores; a called function's frame is marked at the call */
		if (pc >= e->main_lo && pc < e->main_hi)
			e->frame_stores |= write;
		return M(FP, off);
	}
	if (base == MC_FP) {
		fp_value(e, T0);
		if (off)
			op_rm(e, W, 0x8d, T0, M(T0, off)); /* lea rax, [rax + off] */
	} else if (off) {
		op_rm(e, W, 0x8d, T0, M(hreg[base], off));
	} else {
		mov_rr(e, W, T0, hreg[base]);
	}
	mov_rr(e, W, T1, T0);
	op_rr(e, W, 0xc1, 5, T1); /* shr rdx, 48 */
	u8(e, ARF_MC_ADDR_SHIFT);

	unsigned k = e->guess[pc];

	if (k >= MC_NREGIONS || k == ARF_MC_REGION_NULL || (write && k == ARF_MC_REGION_STACK)) {
		general_check(e, len, write, pc);
		return M(T0, 0);
	}
	alu_ri(e, 0, 7, T1, (int32_t)k); /* cmp edx, k */
	size_t slow = to_stub(e, CC_NE, ST_SLOW, pc, len | (unsigned)write << 8);
	op_rm(e, W, 0x3b, T0, M(VM, J_LIM(write, log2_of(len)) + (int32_t)k * 8));
	to_stub(e, CC_AE, ST_FAULT, pc, (write ? MC_JIT_FAULT_STORE : MC_JIT_FAULT_LOAD) | len << 8);
	op_rm(e, W, 0x03, T0, M(VM, J_DELTA + (int32_t)k * 8));
	if (!e->oom)
		e->st[slow].back = e->len;
	return M(T0, 0);
}

static unsigned size_of(uint8_t opc)
{
	switch (MC_SIZE(opc)) {
	case MC_B: return 1;
	case MC_H: return 2;
	case MC_W: return 4;
	default: return 8;
	}
}

static void emit_load(struct em *e, const struct arf_mc_insn *in, uint32_t pc)
{
	unsigned len = size_of(in->opcode);
	int d = hreg[in->dst], sx = MC_MODE(in->opcode) == MC_MEMSX;
	struct mem m = address(e, in->src, in->off, len, 0, pc);

	switch (len) {
	case 1: op_rm(e, sx ? W : 0, sx ? 0xbe0f : 0xb60f, d, m); break;
	case 2: op_rm(e, sx ? W : 0, sx ? 0xbf0f : 0xb70f, d, m); break;
	case 4:
		if (sx)
			op_rm(e, W, 0x63, d, m); /* movsxd */
		else
			mov_load(e, 0, d, m);
		break;
	default: mov_load(e, W, d, m); break;
	}
}

static void emit_store(struct em *e, const struct arf_mc_insn *in, uint32_t pc)
{
	unsigned len = size_of(in->opcode);
	struct mem m = address(e, in->dst, in->off, len, 1, pc);

	if (MC_CLASS(in->opcode) == MC_ST) {
		switch (len) {
		case 1: op_rm(e, 0, 0xc6, 0, m); u8(e, (uint8_t)in->imm); break;
		case 2: op_rm(e, P66, 0xc7, 0, m); u16(e, (uint16_t)in->imm); break;
		case 4: op_rm(e, 0, 0xc7, 0, m); u32(e, (uint32_t)in->imm); break;
		default: op_rm(e, W, 0xc7, 0, m); u32(e, (uint32_t)in->imm); break;
		}
		return;
	}
	int s = src_of(e, in->src, T1); /* rdx is free once the address is made */

	switch (len) {
	case 1: op_rm(e, B8, 0x88, s, m); break;
	case 2: op_rm(e, P66, 0x89, s, m); break;
	case 4: mov_store(e, 0, m, s); break;
	default: mov_store(e, W, m, s); break;
	}
}

/* Shift d by the register count s (x86 masks the count as eBPF wants). */
static void emit_shift_reg(struct em *e, unsigned fl, int ext, const struct arf_mc_insn *in)
{
	int d = hreg[in->dst];

	if (in->src == 0) { /* the count is already in rcx (r0) */
		op_rr(e, fl, 0xd3, ext, d);
		if (!(fl & W))
			mov_rr(e, 0, d, d);
		return;
	}
	mov_rr(e, W, T1, RCX); /* keep r0 */
	if (in->src == MC_FP)
		fp_value(e, RCX);
	else
		mov_rr(e, W, RCX, hreg[in->src]);
	if (d == RCX) { /* shifting r0 itself: its value is in rdx */
		op_rr(e, fl, 0xd3, ext, T1);
		if (!(fl & W))
			mov_rr(e, 0, T1, T1);
		mov_rr(e, W, RCX, T1);
	} else {
		op_rr(e, fl, 0xd3, ext, d);
		if (!(fl & W))
			mov_rr(e, 0, d, d);
		mov_rr(e, W, RCX, T1);
	}
}

/*
 * Division and modulo as RFC 9669 says (x / 0 = 0, x % 0 = x, and no trap
 * for INT_MIN / -1), with the divisor on the host stack.
 */
static void emit_div(struct em *e, const struct arf_mc_insn *in, int is64)
{
	unsigned fl = is64 ? W : 0;
	int d = hreg[in->dst], mod = MC_OPCODE(in->opcode) == MC_MOD, sg = in->off == 1;
	int x = in->opcode & MC_X;
	size_t jz = 0, jm1 = 0, jdone1, jdone2 = 0;

	if (!x) {
		int64_t v = is64 ? (int64_t)in->imm : (int64_t)(uint32_t)in->imm;

		if (v == 0) { /* known zero divisor */
			if (!mod)
				alu_rr(e, 0, 0x31, d, d);
			else if (!is64)
				mov_rr(e, 0, d, d);
			return;
		}
		if (sg && in->imm == -1) { /* known -1 divisor, signed */
			if (mod)
				alu_rr(e, 0, 0x31, d, d);
			else
				op_rr(e, fl, 0xf7, 3, d); /* neg */
			return;
		}
		u8(e, 0x68); /* push imm32 (sign-extended; the low half is the 32-bit divisor) */
		u32(e, (uint32_t)in->imm);
	} else {
		push_r(e, src_of(e, in->src, T0));
		alu_mi(e, fl, 7, M(RSP, 0), 0); /* cmp [rsp], 0 */
		jz = jcc32(e, CC_E);
		if (sg) {
			alu_mi(e, fl, 7, M(RSP, 0), -1);
			jm1 = jcc32(e, CC_E);
		}
	}
	mov_rr(e, fl, T0, d);
	if (sg) {
		prefix(e, fl, 0, 0, 0, 0);
		u8(e, 0x99); /* cqo / cdq */
	} else {
		alu_rr(e, 0, 0x31, T1, T1);
	}
	op_rm(e, fl, 0xf7, sg ? 7 : 6, M(RSP, 0)); /* idiv / div [rsp] */
	mov_rr(e, fl, d, mod ? T1 : T0);
	jdone1 = jmp32(e);
	if (x) {
		patch(e, jz, e->len); /* divisor 0 */
		if (!mod)
			alu_rr(e, 0, 0x31, d, d);
		else if (!is64)
			mov_rr(e, 0, d, d);
		if (sg) {
			jdone2 = jmp32(e);
			patch(e, jm1, e->len); /* divisor -1, signed */
			if (mod)
				alu_rr(e, 0, 0x31, d, d);
			else
				op_rr(e, fl, 0xf7, 3, d);
		}
	}
	patch(e, jdone1, e->len);
	if (jdone2)
		patch(e, jdone2, e->len);
	op_rm(e, W, 0x8d, RSP, M(RSP, 8)); /* lea rsp, [rsp + 8] */
}

static void emit_alu(struct em *e, const struct arf_mc_insn *in)
{
	int is64 = MC_CLASS(in->opcode) == MC_ALU64, x = in->opcode & MC_X;
	unsigned fl = is64 ? W : 0;
	int d = hreg[in->dst], s = -1;
	static const uint8_t rr[16] = { [MC_ADD >> 4] = 0x01, [MC_SUB >> 4] = 0x29,
					[MC_OR >> 4] = 0x09, [MC_AND >> 4] = 0x21,
					[MC_XOR >> 4] = 0x31 };
	static const int8_t ri[16] = { [MC_ADD >> 4] = 0, [MC_SUB >> 4] = 5, [MC_OR >> 4] = 1,
				       [MC_AND >> 4] = 4, [MC_XOR >> 4] = 6 };
	int op = MC_OPCODE(in->opcode);

	switch (op) {
	case MC_ADD:
	case MC_SUB:
	case MC_OR:
	case MC_AND:
	case MC_XOR:
		if (x) {
			s = src_of(e, in->src, T0);
			alu_rr(e, fl, rr[op >> 4], d, s);
		} else {
			alu_ri(e, fl, ri[op >> 4], d, in->imm);
		}
		return;
	case MC_MUL:
		if (x) {
			s = src_of(e, in->src, T0);
			op_rr(e, fl, 0xaf0f, d, s); /* imul d, s */
		} else {
			op_rr(e, fl, 0x69, d, d); /* imul d, d, imm32 */
			u32(e, (uint32_t)in->imm);
		}
		return;
	case MC_DIV:
	case MC_MOD:
		emit_div(e, in, is64);
		return;
	case MC_LSH:
	case MC_RSH:
	case MC_ARSH: {
		int ext = op == MC_LSH ? 4 : op == MC_RSH ? 5 : 7;

		if (x) {
			emit_shift_reg(e, fl, ext, in);
			return;
		}
		int n = in->imm & (is64 ? 63 : 31);

		if (n) {
			op_rr(e, fl, 0xc1, ext, d);
			u8(e, (uint8_t)n);
		} else if (!is64) {
			mov_rr(e, 0, d, d); /* a 32-bit operation zero-extends */
		}
		return;
	}
	case MC_NEG:
		op_rr(e, fl, 0xf7, 3, d);
		return;
	case MC_MOV:
		if (!x) {
			if (is64)
				mov_ri(e, d, (uint64_t)(int64_t)in->imm);
			else
				mov_ri(e, d, (uint32_t)in->imm);
			return;
		}
		s = src_of(e, in->src, T0);
		switch (in->off) {
		case 8: op_rr(e, fl | B8, 0xbe0f, d, s); break;  /* movsx d, s8 */
		case 16: op_rr(e, fl, 0xbf0f, d, s); break;      /* movsx d, s16 */
		case 32: op_rr(e, W, 0x63, d, s); break;         /* movsxd d, s32 */
		default: mov_rr(e, fl, d, s); break;
		}
		return;
	case MC_END:
		if (!is64 && !x) { /* to little-endian: truncation only */
			if (in->imm == 16)
				op_rr(e, 0, 0xb70f, d, d); /* movzx d32, d16 */
			else if (in->imm == 32)
				mov_rr(e, 0, d, d);
			return;
		}
		if (in->imm == 16) {
			op_rr(e, P66, 0xc1, 0, d); /* rol d16, 8 */
			u8(e, 8);
			op_rr(e, 0, 0xb70f, d, d);
		} else {
			prefix(e, in->imm == 64 ? W : 0, 0, 0, d, 0);
			u8(e, 0x0f);
			u8(e, (uint8_t)(0xc8 + (d & 7))); /* bswap */
		}
		return;
	default:
		return; /* the verifier lets nothing else through */
	}
}

static void emit_jump(struct em *e, const struct arf_mc_insn *in, uint32_t pc)
{
	int is64 = MC_CLASS(in->opcode) == MC_JMP, op = MC_OPCODE(in->opcode);
	unsigned fl = is64 ? W : 0;
	uint32_t target;
	int cc;

	if (in->opcode == MC_OP_JA32 || (in->opcode == MC_OP_JA)) {
		target = (uint32_t)((int64_t)pc + 1 + (in->opcode == MC_OP_JA32 ? in->imm : in->off));
		fixup(e, jmp32(e), FX_INSN, target);
		return;
	}
	target = (uint32_t)((int64_t)pc + 1 + in->off);
	int d = src_of(e, in->dst, T0);

	if (in->opcode & MC_X) {
		int s = src_of(e, in->src, T1);

		alu_rr(e, fl, op == MC_JSET ? 0x85 : 0x39, d, s); /* test / cmp d, s */
	} else if (op == MC_JSET) {
		op_rr(e, fl, 0xf7, 0, d); /* test d, imm32 */
		u32(e, (uint32_t)in->imm);
	} else {
		alu_ri(e, fl, 7, d, in->imm);
	}
	switch (op) {
	case MC_JEQ: cc = CC_E; break;
	case MC_JNE: cc = CC_NE; break;
	case MC_JSET: cc = CC_NE; break;
	case MC_JGT: cc = CC_A; break;
	case MC_JGE: cc = CC_AE; break;
	case MC_JLT: cc = CC_B; break;
	case MC_JLE: cc = CC_BE; break;
	case MC_JSGT: cc = CC_G; break;
	case MC_JSGE: cc = CC_GE; break;
	case MC_JSLT: cc = CC_L; break;
	default: cc = CC_LE; break; /* MC_JSLE */
	}
	fixup(e, jcc32(e, cc), FX_INSN, target);
}

/* Stores r0..r9 and the budget in the vm; loads them back. */
static void spill(struct em *e)
{
	for (unsigned r = 0; r < 10; r++)
		mov_store(e, W, M(VM, J_REG(r)), hreg[r]);
	mov_store(e, W, M(VM, J(left)), BUD);
}

static void reload(struct em *e)
{
	for (unsigned r = 0; r < 10; r++)
		mov_load(e, W, hreg[r], M(VM, J_REG(r)));
	mov_load(e, W, BUD, M(VM, J(left)));
}

/*
 * A local call: the frame in the interpreter's format (r6..r10 of the
 * caller, the instruction to return to), one level deeper, 512 bytes lower,
 * and a native call; the callee's exit (L_EXIT) undoes it all and returns.
 */
static void emit_local_call(struct em *e, const struct arf_mc_insn *in, uint32_t pc)
{
	alu_mi(e, 0, 7, M(VM, J(depth)), ARF_MC_MAX_FRAMES - 1);
	to_stub(e, CC_AE, ST_FAULT, pc, MC_JIT_FAULT_DEPTH);
	mov_load(e, 0, T0, M(VM, J(depth)));
	op_rm(e, W, 0x8d, T1, MI(T0, T0, 1, 0)); /* lea rdx, [rax + rax * 2] */
	op_rr(e, W, 0xc1, 4, T1);                /* shl rdx, 4: depth * 48 */
	u8(e, 4);
	alu_rr(e, W, 0x01, T1, VM);              /* add rdx, r12 */
	for (unsigned r = 6; r < 10; r++)
		mov_store(e, W, M(T1, V_FRAMES + (int32_t)(r - 6) * 8), hreg[r]);
	fp_value(e, T0);
	mov_store(e, W, M(T1, V_FRAMES + 32), T0);
	op_rm(e, W, 0xc7, 0, M(T1, V_FRAMES + 40)); /* ret_pc */
	u32(e, pc + 1);
	op_rm(e, 0, 0xff, 0, M(VM, J(depth))); /* inc dword [depth] */
	alu_ri(e, W, 5, FP, ARF_MC_STACK_SIZE);
	/* the new frame may be written through r10: lower the mark to its bottom */
	op_rm(e, W, 0x8d, T0, M(FP, -(int32_t)ARF_MC_STACK_SIZE - V_STACK));
	alu_rr(e, W, 0x29, T0, VM);                  /* sub rax, r12: its offset */
	op_rm(e, 0, 0x3b, T0, M(VM, V_STACKLOW));    /* cmp eax, [stack_low] */
	size_t skip = jcc32(e, CC_AE);
	mov_store(e, 0, M(VM, V_STACKLOW), T0);
	patch(e, skip, e->len);
	alu_ri(e, W, 5, RSP, 8); /* keeps the host stack 16-byte aligned in every frame */
	fixup(e, call32(e), FX_INSN, (uint32_t)((int64_t)pc + 1 + in->imm));
	alu_ri(e, W, 0, RSP, 8);
}

/* ---- blocks ------------------------------------------------------------- */

static int is_lddw(const struct arf_mc_insn *in)
{
	return in->opcode == MC_OP_LDDW;
}

/*
 * Leaders: the entry, function starts, jump targets, and whatever follows
 * a jump, a call or an exit.  Calls end blocks so that what a helper does
 * (stop the program, fail) never finds later instructions charged.
 */
static void find_leaders(const struct arf_mc_prog *p, uint8_t *lead)
{
	const struct arf_mc_insn *insns = p->insns;

	lead[p->entry] = 1;
	lead[0] = 1;
	for (size_t pc = 0; pc < p->n; pc++) {
		const struct arf_mc_insn *in = &insns[pc];
		int cls = MC_CLASS(in->opcode), op = MC_OPCODE(in->opcode);

		if (is_lddw(in)) {
			pc++;
			continue;
		}
		if (cls != MC_JMP && cls != MC_JMP32)
			continue;
		if (pc + 1 < p->n)
			lead[pc + 1] = 1;
		if (op == MC_CALL && in->opcode == MC_OP_CALL && in->src == MC_CALL_LOCAL)
			lead[pc + 1 + in->imm] = 1;
		else if (in->opcode == MC_OP_JA32)
			lead[pc + 1 + in->imm] = 1;
		else if (op != MC_CALL && op != MC_EXIT)
			lead[pc + 1 + in->off] = 1;
	}
}

/* ---- the whole program -------------------------------------------------- */

static void emit_insn(struct em *e, const struct arf_mc_prog *p, uint32_t pc)
{
	const struct arf_mc_insn *in = &p->insns[pc];

	switch (MC_CLASS(in->opcode)) {
	case MC_ALU:
	case MC_ALU64:
		emit_alu(e, in);
		break;
	case MC_LD: /* lddw */
		mov_ri(e, hreg[in->dst],
		       (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)p->insns[pc + 1].imm << 32);
		break;
	case MC_LDX:
		emit_load(e, in, pc);
		break;
	case MC_ST:
		emit_store(e, in, pc);
		break;
	case MC_STX:
		if (MC_MODE(in->opcode) == MC_ATOMIC) {
			mov_ri(e, T0, pc);
			call_label(e, L_ATOMIC);
		} else {
			emit_store(e, in, pc);
		}
		break;
	default: /* MC_JMP, MC_JMP32 */
		if (in->opcode == MC_OP_EXIT) {
			jmp_label(e, L_EXIT);
		} else if (in->opcode == MC_OP_CALL && in->src == MC_CALL_LOCAL) {
			emit_local_call(e, in, pc);
		} else if (in->opcode == MC_OP_CALL || in->opcode == MC_OP_CALLX) {
			mov_ri(e, T0, pc);
			call_label(e, L_HELPER);
		} else {
			emit_jump(e, in, pc);
		}
		break;
	}
}

/* A shared call-out routine: registers out, fn(vm, eax, rdx), registers in. */
static void emit_callout(struct em *e, void *fn)
{
	spill(e);
	mov_rr(e, W, RDI, VM);
	mov_rr(e, 0, RSI, T0);
	mov_ri(e, T0, (uint64_t)(uintptr_t)fn);
	op_rr(e, 0, 0xff, 2, T0); /* call rax */
	alu_rr(e, 0, 0x85, RAX, RAX);
	fixup(e, jcc32(e, CC_NE), FX_LABEL, L_STOPPED);
	reload(e);
	u8(e, 0xc3);
}

static void emit_shared(struct em *e)
{
	/* The exit of a function: at depth 0 back to the entry, else undo the call. */
	e->label_at[L_EXIT] = e->len;
	mov_load(e, 0, T0, M(VM, J(depth)));
	alu_rr(e, 0, 0x85, T0, T0);
	size_t top = jcc32(e, CC_E);
	alu_ri(e, 0, 5, T0, 1);
	mov_store(e, 0, M(VM, J(depth)), T0);
	op_rm(e, W, 0x8d, T1, MI(T0, T0, 1, 0));
	op_rr(e, W, 0xc1, 4, T1);
	u8(e, 4);
	alu_rr(e, W, 0x01, T1, VM);
	for (unsigned r = 6; r < 10; r++)
		mov_load(e, W, hreg[r], M(T1, V_FRAMES + (int32_t)(r - 6) * 8));
	alu_ri(e, W, 0, FP, ARF_MC_STACK_SIZE);
	patch(e, top, e->len);
	u8(e, 0xc3);

	e->label_at[L_HELPER] = e->len;
	emit_callout(e, (void *)mc_jit_helper);
	e->label_at[L_ATOMIC] = e->len;
	emit_callout(e, (void *)mc_jit_atomic);
	e->label_at[L_REFILL] = e->len;
	emit_callout(e, (void *)mc_jit_refill);

	e->label_at[L_FAULT] = e->len;
	mov_store(e, W, M(VM, J(left)), BUD);
	mov_ri(e, RAX, MC_JIT_FAULT);
	jmp_label(e, L_UNWIND);

	e->label_at[L_STOPPED] = e->len;
	mov_ri(e, RAX, MC_JIT_STOPPED);
	/* fall through */
	e->label_at[L_UNWIND] = e->len;
	mov_load(e, W, RSP, M(VM, J(host_rsp)));
	jmp_label(e, L_EPILOGUE);
}

static void emit_stubs(struct em *e)
{
	for (size_t i = 0; i < e->nst && !e->oom; i++) {
		struct stub copy = e->st[i]; /* a slow path adds stubs: the array may move */
		const struct stub *s = &copy;

		patch(e, s->at, e->len);
		if (s->kind == ST_SLOW) {
			general_check(e, s->arg & 0xff, (int)(s->arg >> 8), s->pc);
			patch(e, jmp32(e), s->back);
		} else if (s->kind == ST_STACK) {
			/* eax: the low half of the address, its offset in the stack */
			op_rm(e, 0, 0x3b, T0, M(VM, V_STACKLOW));
			patch(e, jcc32(e, CC_AE), s->back);
			mov_store(e, 0, M(VM, V_STACKLOW), T0);
			patch(e, jmp32(e), s->back);
		} else if (s->kind == ST_BUDGET) {
			alu_ri(e, W, 0, BUD, (int32_t)s->arg); /* give the charge back */
			mov_ri(e, T0, s->pc);
			mov_ri(e, T1, s->arg);
			call_label(e, L_REFILL);
			fixup(e, jmp32(e), FX_INSN, s->pc);
		} else {
			mov_store(e, W, M(VM, J(fault_addr)), T0);
			op_rm(e, 0, 0xc7, 0, M(VM, J(fault_pc)));
			u32(e, s->pc);
			op_rm(e, 0, 0xc7, 0, M(VM, J(fault_info)));
			u32(e, s->arg);
			jmp_label(e, L_FAULT);
		}
	}
}

static void emit_entry(struct em *e, const struct arf_mc_prog *p)
{
	static const int8_t saved[] = { RBP, RBX, R12, R13, R14, R15 };

	for (size_t i = 0; i < sizeof(saved); i++)
		push_r(e, saved[i]);
	alu_ri(e, W, 5, RSP, 8); /* 16-byte aligned below; the program's code runs at 8 mod 16 */
	mov_rr(e, W, VM, RDI);
	mov_store(e, W, M(VM, J(host_rsp)), RSP);
	op_rm(e, W, 0x8d, FP, M(VM, V_STACKTOP));
	reload(e);
	fixup(e, call32(e), FX_INSN, (uint32_t)p->entry);
	mov_store(e, W, M(VM, J_REG(0)), hreg[0]);
	mov_store(e, W, M(VM, J(left)), BUD);
	mov_ri(e, RAX, MC_JIT_EXIT);
	e->label_at[L_EPILOGUE] = e->len;
	alu_ri(e, W, 0, RSP, 8);
	for (size_t i = sizeof(saved); i-- > 0;)
		pop_r(e, saved[i]);
	u8(e, 0xc3);
}

int mc_jit_compile(const struct arf_mc_prog *p, uint8_t **code, size_t *len, uint32_t **undo,
		   int *frame_stores, char *err, size_t errlen)
{
	struct em e;
	uint8_t *lead = calloc(p->n + 1, 1);
	uint32_t *und = calloc(p->n + 1, sizeof(*und));
	uint8_t *guess = malloc(p->n + 1);
	int rc = 0;

	memset(&e, 0, sizeof(e));
	e.insn_at = calloc(p->n + 1, sizeof(*e.insn_at));
	if (!lead || !und || !guess || !e.insn_at || mc_jit_guess(p, guess)) {
		rc = mc_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	e.guess = guess;
	find_leaders(p, lead);
	/* the entry's function: from the entry (a function start) to the next
	 * start, a local call's target (the verifier's functions) */
	e.main_lo = p->entry;
	e.main_hi = p->n;
	for (size_t pc = 0; pc < p->n; pc += is_lddw(&p->insns[pc]) ? 2 : 1) {
		const struct arf_mc_insn *in = &p->insns[pc];

		if (in->opcode == MC_OP_CALL && in->src == MC_CALL_LOCAL) {
			size_t t = (size_t)((int64_t)pc + 1 + in->imm);

			if (t > p->entry && t < e.main_hi)
				e.main_hi = t;
		}
	}

	/* the undo table: per block, each instruction's place from its end */
	{
		size_t pc = 0;

		while (pc < p->n) {
			size_t end = pc, count = 0;

			/* the block from leader pc: up to the next leader */
			do {
				end += is_lddw(&p->insns[end]) ? 2 : 1;
				count++;
			} while (end < p->n && !lead[end]);
			for (size_t q = pc, k = 0; q < end; q += is_lddw(&p->insns[q]) ? 2 : 1, k++)
				und[q] = (uint32_t)(count - 1 - k);
			pc = end;
		}
	}

	emit_entry(&e, p);
	for (size_t pc = 0; pc < p->n && !e.oom; pc += is_lddw(&p->insns[pc]) ? 2 : 1) {
		e.insn_at[pc] = e.len;
		if (lead[pc]) {
			uint32_t charge = und[pc] + 1;

			alu_ri(&e, W, 5, BUD, (int32_t)charge); /* sub r11, charge */
			to_stub(&e, CC_B, ST_BUDGET, (uint32_t)pc, charge);
		}
		emit_insn(&e, p, (uint32_t)pc);
	}
	emit_stubs(&e);
	emit_shared(&e);
	if (e.oom) {
		rc = e.len + 64 > MAX_CODE
			? mc_errf(err, errlen, -E2BIG, "native code over %u MiB", MAX_CODE >> 20)
			: mc_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < e.nfx; i++) {
		const struct fixup *f = &e.fx[i];
		size_t to = f->kind == FX_INSN ? e.insn_at[f->idx] : e.label_at[f->idx];

		patch(&e, f->at, to);
	}
	*code = e.b;
	*len = e.len;
	*undo = und;
	*frame_stores = e.frame_stores;
	e.b = NULL;
	und = NULL;
out:
	free(e.b);
	free(e.fx);
	free(e.st);
	free(e.insn_at);
	free(lead);
	free(und);
	free(guess);
	return rc;
}

#else /* not x86-64 */

int mc_jit_compile(const struct arf_mc_prog *p, uint8_t **code, size_t *len, uint32_t **undo,
		   int *frame_stores, char *err, size_t errlen)
{
	(void)p;
	(void)frame_stores;
	(void)code;
	(void)len;
	(void)undo;
	return mc_errf(err, errlen, -ENOTSUP, "no JIT for this machine (x86-64 only)");
}

#endif
