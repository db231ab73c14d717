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

/* Native code of a program (below); NULL in a program never compiled. */
struct mc_jit_code;
struct mc_exec;

struct arf_mc_prog {
	const struct arf_mc_helpers *helpers; /* verified against these */
	struct arf_mc_insn *insns;            /* owned */
	size_t n;
	size_t entry;
	uint8_t *rodata;                      /* owned, NULL when empty */
	size_t rodata_len;
	struct mc_jit_code *jit;              /* owned; set once by arf_mc_prog_jit */
};

/*
 * A call frame of a local call, in the one format both engines use: the
 * JIT writes it as the interpreter does, so that a run the JIT started can
 * go on in the interpreter (see jit.c, "handing over").
 */
struct mc_frame {
	uint64_t saved[5]; /* caller's r6 .. r10 */
	uint64_t ret_pc;   /* instruction after the call */
};
_Static_assert(sizeof(struct mc_frame) == 48, "the JIT addresses frames as 48-byte records");

/*
 * Region table entries the JIT's code indexes: a power of two at least
 * MC_NREGIONS, so that (address >> 48) masked to it picks an entry; an
 * address whose region bits are larger lands on an entry whose limit it is
 * always above (jit.c, "the bounds check").
 */
#define MC_JIT_NREG 32u

/*
 * What the JIT's code reads and writes while it runs, at fixed offsets
 * from the vm (the code holds the vm's address in a register).  Filled
 * afresh by each run (jit.c); meaningless between runs.
 */
struct mc_jit_state {
	/* lim[w][l][k]: the first address at which an access of 1 << l bytes
	 * in region k faults (a store when w = 1); 0 when none is allowed. */
	uint64_t lim[2][4][MC_JIT_NREG];
	uint64_t delta[MC_JIT_NREG]; /* host address minus program address */
	uint64_t reg[16];            /* r0..r10 at call-outs, at the start and the end */
	uint64_t left;               /* budget left in this slice (the code's counter) */
	uint64_t fp_delta;           /* program address minus host address in the stack */
	uint64_t host_rsp;           /* the host stack pointer to unwind to */
	uint64_t fault_addr;         /* the address of a faulting access */
	uint32_t depth;              /* local calls in progress */
	uint32_t fault_pc;           /* the faulting instruction */
	uint32_t fault_info;         /* MC_JIT_FAULT_* | bytes << 8 */
	uint32_t fault_undo;         /* instructions charged after the faulting one */
	int rc;                      /* outcome decided by a call-out (MC_JIT_STOPPED) */
	uint32_t pad;
	struct mc_exec *x;           /* the run's budget accounting */
	const struct arf_mc_prog *prog;
	struct arf_mc_result *res;
};

/*
 * What a helper has spent while it runs (mc_call_helper sets it up, the
 * helper adds to it through arf_mc_call_charge, the engine takes it from
 * the budget when the helper returns: mc_charge_take).
 */
enum mc_stop { MC_STOP_NONE = 0, MC_STOP_BUDGET, MC_STOP_CLOCK, MC_STOP_ABORT };
struct mc_call_state {
	uint64_t avail;    /* instructions the run could still execute at the call */
	uint64_t charge;   /* instructions' worth the helper has charged so far */
	uint64_t checked;  /* charge at its last look at the clock */
	int stop;          /* enum mc_stop: why the helper was told to stop */
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
	const int *abort_flag;                /* arf_mc_vm_set_abort; NULL = none */
	uint64_t budget;                      /* the run's budget, for messages */
	struct mc_call_state call;            /* the helper being called, if any */
	uint8_t *out;                         /* lent output buffer */
	size_t out_cap;
	size_t out_len;                       /* bytes emitted in this run */
	struct mc_frame frames[ARF_MC_MAX_FRAMES];
	/*
	 * The lowest offset in the stack that may have been written since it
	 * was last cleared (sizeof(stack) when it is all zero): each run
	 * clears from there up when it ends, so that nothing of one run
	 * reaches the next without clearing 4 KiB every time.
	 */
	uint32_t stack_low;
	_Alignas(16) uint8_t stack[ARF_MC_MAX_FRAMES * ARF_MC_STACK_SIZE];
	struct mc_jit_state jit;              /* the JIT's code's view of this run */
};

/* A write is about to land at addr: lower the stack's mark if it is there. */
static inline void mc_stack_touch(struct arf_mc_vm *vm, uint64_t addr)
{
	if ((addr >> ARF_MC_ADDR_SHIFT) == ARF_MC_REGION_STACK &&
	    (addr & ARF_MC_OFF_MASK) < vm->stack_low)
		vm->stack_low = (uint32_t)(addr & ARF_MC_OFF_MASK);
}

/*
 * One run's state as both engines see it: the registers, where it is, how
 * deep in local calls, and the budget -- `left` counts down the current
 * slice and `reserve` holds the rest, so that the wall-clock deadline is
 * looked at once per slice (MC_SLICE instructions) and not per instruction.
 */
struct mc_exec {
	uint64_t reg[16];  /* 16: any 4-bit field indexes it safely */
	size_t pc;
	unsigned depth;
	uint64_t left, reserve, budget;
};

/*
 * Instructions between two looks at the clock when a deadline or an abort
 * flag is set.  What a helper charges counts as instructions, so a slice
 * is a bounded amount of time whatever mix of instructions and helpers
 * fills it: at most a few milliseconds (a slice of the slowest
 * instructions, atomics, or of helper calls that do almost nothing), and
 * a helper that works longer looks at the clock itself (MC_CALL_CHECK).
 */
#define MC_SLICE (UINT64_C(1) << 16)
/* A helper's charges between its own looks at the clock. */
#define MC_CALL_CHECK (MC_SLICE / 4)

/*
 * After a helper returns: takes its charge from the budget, the current
 * slice (*left) first, then the reserve.  A charge that reaches into the
 * reserve leaves *left at 0, so that the engine looks at the clock before
 * its next instruction (the interpreter's out_of_budget, the JIT's
 * refill).  Returns 0, or 1 when the charge is more than both hold: then
 * both are 0, the whole budget spent (mc_call_helper has already failed
 * the run with ARF_EBUDGET).  Both engines call it with the same totals at
 * a helper call (a call ends the JIT's blocks: nothing after it is charged
 * yet), so they agree on every count.
 */
static inline int mc_charge_take(uint64_t charge, uint64_t *left, uint64_t *reserve)
{
	if (charge <= *left) {
		*left -= charge;
		return 0;
	}
	charge -= *left;
	*left = 0;
	if (charge <= *reserve) {
		*reserve -= charge;
		return 0;
	}
	*reserve = 0;
	return 1;
}

/* run.c: what both engines share while a program runs. */
uint64_t mc_now_ns(void);
/* Message and ARF_EFAULT for an access of len bytes at addr that failed. */
int mc_fault(const struct arf_mc_vm *vm, struct arf_mc_result *res, size_t pc, uint64_t addr,
	     unsigned len, const char *what, int write);
/* "instruction PC: <fmt>" into res->msg, res->pc = pc; returns code. */
int mc_failf(struct arf_mc_result *res, size_t pc, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Calls helper hp with reg[1..5] (PTR arguments checked first), r0 = its
 * result; *unwind set when it stops the program; avail: the instructions
 * the run may still execute.  0 or the run's error (ARF_EBUDGET when what
 * the helper charged is over avail).  What it charged is in
 * vm->call.charge, for the caller to take (mc_charge_take). */
int mc_call_helper(struct arf_mc_vm *vm, const struct mc_helper *hp, uint64_t *reg, size_t pc,
		   uint64_t avail, int *unwind, struct arf_mc_result *res);
/* The atomic operation imm on the aligned word at q (dw: 8 bytes, else 4)
 * with the source value src; r0 for cmpxchg.  Returns the old value. */
uint64_t mc_atomic_op(uint8_t *q, int dw, int32_t imm, uint64_t src, uint64_t *r0);
/* A look at the clock and the abort flag, `done` instructions into the
 * run: 0 to go on, or the run's end with its message in res: ARF_EBUDGET
 * past the deadline, -ECANCELED when the embedder set the abort flag. */
int mc_clock_stop(const struct arf_mc_vm *vm, struct arf_mc_result *res, size_t pc,
		  uint64_t done);
/* Does the run look at the clock at all (a deadline or an abort flag)? */
static inline int mc_clocked(const struct arf_mc_vm *vm)
{
	return vm->deadline_ns || vm->abort_flag;
}
/* The value of r10 at call depth `depth`. */
static inline uint64_t mc_fp_at(unsigned depth)
{
	return ARF_MC_ADDR(ARF_MC_REGION_STACK,
			   (uint64_t)(ARF_MC_MAX_FRAMES - depth) * ARF_MC_STACK_SIZE);
}

/* interp.c: runs p from the state in x until it exits or fails; the run's
 * regions are set.  Returns as arf_mc_run. */
int mc_interp(struct arf_mc_vm *vm, const struct arf_mc_prog *p, struct mc_exec *x,
	      struct arf_mc_result *res);

/*
 * The JIT (jit.c: memory, runs and call-outs; jit_x86.c: code generation).
 * The code is one function, int fn(struct arf_mc_vm *vm), returning one of
 * enum mc_jit_event; everything else passes through vm->jit.
 */
struct mc_jit_code {
	int (*fn)(struct arf_mc_vm *vm); /* the entry: start of the mapping */
	void *mem;                       /* the mapping, read + execute once made */
	size_t map_len;                  /* its length (whole pages) */
	size_t code_len;                 /* bytes of code in it */
	uint32_t *undo;                  /* per instruction: instructions of its basic
					  * block after it (charged, not yet run) */
	int frame_stores;                /* stores into the frame through r10, unchecked
					  * and so unseen by the stack's mark */
};

enum mc_jit_event {
	MC_JIT_EXIT = 0,    /* exit at depth 0: r0 in vm->jit.reg[0] */
	MC_JIT_FAULT = 1,   /* an access failed: vm->jit.fault_* say which */
	MC_JIT_STOPPED = 2, /* a call-out ended the run: vm->jit.rc, res filled */
};

/* vm->jit.fault_info: the kind in the low byte, the access size above. */
#define MC_JIT_FAULT_LOAD  0u
#define MC_JIT_FAULT_STORE 1u
#define MC_JIT_FAULT_DEPTH 2u

/*
 * jit_x86.c: compiles verified p into position-independent code (it calls
 * the call-outs below by absolute address) in *code (malloc'd), and the
 * undo table (malloc'd, p->n entries); *frame_stores says whether the
 * code stores through r10 without a check.  -ENOTSUP on a host other than
 * x86-64, -ENOMEM, -E2BIG (code over 64 MiB); message in err.
 */
int mc_jit_compile(const struct arf_mc_prog *p, uint8_t **code, size_t *len, uint32_t **undo,
		   int *frame_stores, char *err, size_t errlen);

/*
 * jit_guess.c: for each load and store of p, the region its address is
 * likely to be in (guess[pc]; >= MC_NREGIONS when unknown), for the code's
 * fast path.  0, or -1 when out of memory.
 */
int mc_jit_guess(const struct arf_mc_prog *p, uint8_t *guess);

/*
 * jit.c: what the code calls, with r0..r9 in vm->jit.reg and the slice's
 * budget in vm->jit.left: 0 to go on (registers reloaded from vm->jit), 1
 * when the run has ended (vm->jit.rc and the result are set).
 */
int mc_jit_helper(struct arf_mc_vm *vm, uint32_t pc);               /* call, callx */
int mc_jit_atomic(struct arf_mc_vm *vm, uint32_t pc);               /* atomic ops */
int mc_jit_refill(struct arf_mc_vm *vm, uint32_t pc, uint32_t need); /* budget */

/*
 * jit.c: brings the JIT's table entries of region k in line with the
 * vm's; called wherever a region changes (vm.c, run.c), helpers adding
 * regions during a run included, so the code always sees the regions the
 * interpreter would.
 */
void mc_jit_region_sync(struct arf_mc_vm *vm, unsigned k);

/* jit.c: runs p's native code from the start state in x; as mc_interp. */
int mc_jit_run(struct arf_mc_vm *vm, const struct arf_mc_prog *p, struct mc_exec *x,
	       struct arf_mc_result *res);
/* jit.c: frees p's native code; NULL is fine. */
void mc_jit_free(struct mc_jit_code *code);

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
