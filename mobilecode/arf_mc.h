/* SPDX-License-Identifier: MIT */
/*
 * mobilecode/ — ARF's engine for shipped programs ("mobile code"): the eBPF
 * instruction set of RFC 9669, with a verifier that every program passes
 * before it is accepted, a bounds-checked interpreter with an instruction
 * budget and an output limit, a helper registry through which the embedder
 * (arfd) lends programs its functions, a loader for raw bytecode and for ELF
 * objects from `clang -O2 -target bpf -mcpu=v3`, and an assembler and
 * disassembler for the text syntax of the conformance suite.
 *
 * The three objects and their lifetimes:
 *
 *   struct arf_mc_helpers  the helper table.  Build it once (create, add),
 *                          then share it read-only; it must outlive every
 *                          program and vm made with it.
 *   struct arf_mc_prog     a verified program: code and read-only data,
 *                          immutable once loaded, so one program may run in
 *                          many vms on many threads at once.
 *   struct arf_mc_vm       an execution context (stack, region table, output
 *                          buffer).  One thread at a time, one run at a time
 *                          (a helper must not start another run on the vm
 *                          that called it); reusable for any number of runs,
 *                          of any program loaded with the same helper table.
 *
 * Addresses.  A program never sees a host pointer.  An address is
 * ARF_MC_ADDR(region, offset): the region number in the top 16 bits and an
 * offset below, so every load and store is one table lookup and one
 * overflow-safe range check (arf_range_ok), and nothing about the host's
 * memory layout leaks to a client.  Regions: the null region (nothing may be
 * accessed), the stack (512 bytes per call frame; r10 points past the
 * current frame), the context given to arf_mc_run (read-write; r1 holds its
 * address and r2 its length at entry, both 0 when there is none), the output
 * buffer (read-write), the program's read-only data (the .rodata/.data of an
 * ELF object), and up to ARF_MC_MAX_USER_REGIONS regions the embedder adds
 * (read-only unless it says otherwise).
 *
 * Errors: 0 on success, -errno or one of ARF's own codes (common/arf_common.h)
 * on failure.  Where a number is not enough, functions take an error buffer
 * (err, errlen; either may be NULL/0) and write a message that says where:
 * "instruction 12: jump out of range", "line 3: unknown mnemonic 'ldxq'".
 * The library never prints.
 */
#ifndef ARF_MC_H
#define ARF_MC_H

#include <stddef.h>
#include <stdint.h>

#include "arf_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the instruction ------------------------------------------------- */

/* One 8-byte eBPF instruction, exactly as on the wire (little-endian). */
struct arf_mc_insn {
	uint8_t opcode;
	uint8_t dst : 4;  /* destination register */
	uint8_t src : 4;  /* source register */
	int16_t off;      /* signed offset */
	int32_t imm;      /* signed immediate */
};

#define ARF_MC_STACK_SIZE   512u    /* stack bytes per call frame */
#define ARF_MC_MAX_FRAMES   8u      /* main program + 7 nested local calls */
#define ARF_MC_MAX_INSNS    65536u  /* longest program accepted */
#define ARF_MC_MAX_HELPERS  256u    /* helper ids are 0 .. 255 */
#define ARF_MC_MAX_USER_REGIONS 16u /* regions an embedder may add to a vm */

/* ---- addresses --------------------------------------------------------- */

#define ARF_MC_ADDR_SHIFT 48
#define ARF_MC_OFF_MASK   ((UINT64_C(1) << ARF_MC_ADDR_SHIFT) - 1)
#define ARF_MC_ADDR(region, off) \
	(((uint64_t)(region) << ARF_MC_ADDR_SHIFT) | ((uint64_t)(off) & ARF_MC_OFF_MASK))

enum arf_mc_region_id {
	ARF_MC_REGION_NULL   = 0, /* never accessible: address 0 faults */
	ARF_MC_REGION_STACK  = 1, /* the call frames */
	ARF_MC_REGION_CTX    = 2, /* arf_mc_run's ctx buffer (read-write) */
	ARF_MC_REGION_OUT    = 3, /* the vm's output buffer (read-write) */
	ARF_MC_REGION_RODATA = 4, /* the program's own read-only data */
	ARF_MC_REGION_USER   = 5, /* first region added by arf_mc_vm_add_region */
};

#define ARF_MC_REGION_WRITE 1u /* arf_mc_vm_add_region: program may store */

/* ---- helpers ----------------------------------------------------------- */

struct arf_mc_helpers;
struct arf_mc_prog;
struct arf_mc_vm;

/*
 * Argument contract of a helper, one entry per argument r1..r5; the list ends
 * at the first ARF_MC_ARG_NONE.  For a PTR argument the engine checks, before
 * the helper runs, that [address, address + size) lies in a region the
 * program may read (PTR_RO) or write (PTR_RW), where size is the value of
 * the first SIZE argument after it; the helper then finds the host pointer in
 * call->ptr[i].  A failed check fails the run with ARF_EFAULT.
 */
enum arf_mc_arg {
	ARF_MC_ARG_NONE = 0, /* no more arguments */
	ARF_MC_ARG_ANY,      /* any 64-bit value */
	ARF_MC_ARG_PTR_RO,   /* address of memory the helper reads */
	ARF_MC_ARG_PTR_RW,   /* address of memory the helper writes */
	ARF_MC_ARG_SIZE,     /* byte count of the PTR argument(s) before it */
};

/* What a helper receives. */
struct arf_mc_call {
	struct arf_mc_vm *vm; /* the running vm: arf_mc_vm_translate, _emit */
	void *ctx;            /* the helper's ctx from its definition */
	void *user;           /* the vm's user pointer (arf_mc_vm_set_user) */
	uint64_t arg[5];      /* r1 .. r5 */
	void *ptr[5];         /* host pointers of PTR arguments, else NULL */
	uint32_t pc;          /* index of the calling instruction */
	int unwind;           /* set to 1: the program stops at once, r0 = *ret */
	const char *why;      /* on failure, optional static text for the message */
};

/*
 * A helper returns 0 and its result in *ret, which becomes r0; the program
 * then goes on, or stops at once with r0 = *ret if the helper set
 * call->unwind.  A negative return (-errno or ARF_*) fails the whole run with
 * that code; call->why, if set, ends up in the run's message.
 */
typedef int (*arf_mc_helper_fn)(struct arf_mc_call *call, uint64_t *ret);

struct arf_mc_helper_def {
	uint32_t id;         /* < ARF_MC_MAX_HELPERS; `call id` in programs */
	const char *name;    /* for messages and the disassembler; copied */
	uint8_t args[5];     /* enum arf_mc_arg per argument */
	arf_mc_helper_fn fn; /* never NULL */
	void *ctx;           /* handed back in call->ctx */
};

/*
 * What a helper's work costs.  A helper call is one instruction; a helper
 * that copies, compares, hashes or searches many bytes, or loops, or
 * blocks, charges the run for it in instructions, so that the budget
 * bounds a run's work and the clock is looked at as often in a helper-heavy
 * run as in any other (arf_mc_vm_set_deadline).  Both engines take the
 * charge from the budget alike, so their instruction counts still agree.
 *
 * arf_mc_call_charge adds insns to the call's charge (taken from the
 * budget when the helper returns) and looks at the clock and the abort
 * flag after every MC_CALL_CHECK (16384) instructions' worth; it returns
 * 0 to go on, or the code the helper should stop and return at once:
 * ARF_EBUDGET (the budget is spent, or the deadline passed) or -ECANCELED
 * (the abort flag); the run then fails with a message saying which.  A
 * helper that loops calls it each time round, so that it stops within a
 * round of the deadline.  Ignoring the code is safe -- a charge over the
 * budget fails the run when the helper returns -- but a long helper
 * should not go on working.  _bytes charges one instruction per
 * ARF_MC_BYTES_PER_INSN bytes (rounded down: a few bytes cost nothing
 * beyond the call).  arf_mc_call_check looks at the clock and the abort
 * flag now, charging nothing: for helpers that block (locks, I/O).
 * Only from inside a helper, with the call it was given.
 */
#define ARF_MC_BYTES_PER_INSN 8u
int arf_mc_call_charge(struct arf_mc_call *call, uint64_t insns);
int arf_mc_call_charge_bytes(struct arf_mc_call *call, uint64_t bytes);
int arf_mc_call_check(struct arf_mc_call *call);

/*
 * Helpers the engine itself provides (arf_mc_helpers_add_std).  Ids 0..15
 * are reserved for the engine; embedders use 16 and up.
 */
enum arf_mc_std_helper {
	ARF_MC_HELPER_EMIT   = 1, /* emit(ptr, len): append to the output buffer; ARF_EOUTPUT past its end */
	ARF_MC_HELPER_MEMCMP = 2, /* memcmp(a, b, len): <0, 0, >0 as memcmp(3) */
	ARF_MC_HELPER_MEMMEM = 3, /* memmem(hay, hlen, needle, nlen): offset of the first match,
				   * or -1; a needle over ARF_MC_MEMMEM_MAX bytes fails the run */
	ARF_MC_HELPER_UNWIND = 5, /* unwind(v): returns v; v == 0 stops the program with r0 = 0 */
	ARF_MC_HELPER_FIRST_USER = 16,
};
/* The engine's helpers work in pieces of this many bytes, charging each
 * (emit, memcmp and memmem all charge the bytes they touch); memmem's
 * needle is at most this long. */
#define ARF_MC_CHUNK      (1u << 20)
#define ARF_MC_MEMMEM_MAX ARF_MC_CHUNK

/* New empty helper table.  -ENOMEM. */
int arf_mc_helpers_create(struct arf_mc_helpers **out);
/* Frees the table; NULL is fine.  Programs and vms using it must be gone. */
void arf_mc_helpers_destroy(struct arf_mc_helpers *h);
/*
 * Registers def (copied, name included).  -EINVAL: id out of range, no fn,
 * no name, or a malformed argument list (a PTR with no SIZE after it);
 * -EEXIST: id taken; -ENOMEM.  Not thread-safe: finish adding before any
 * program is loaded or run.
 */
int arf_mc_helpers_add(struct arf_mc_helpers *h, const struct arf_mc_helper_def *def,
		       char *err, size_t errlen);
/* Registers the engine's helpers listed in enum arf_mc_std_helper. */
int arf_mc_helpers_add_std(struct arf_mc_helpers *h);
/* Name of helper id, or NULL if none is registered. */
const char *arf_mc_helper_name(const struct arf_mc_helpers *h, uint32_t id);

/* ---- verification and programs ---------------------------------------- */

/*
 * Checks n instructions that start running at index entry: 0, ARF_EVERIFY
 * with the instruction index and reason in err, or -EINVAL for bad arguments.
 * h names the helpers a program may call; NULL means none.
 */
int arf_mc_verify(const struct arf_mc_helpers *h, const struct arf_mc_insn *insns, size_t n,
		  size_t entry, char *err, size_t errlen);

/*
 * Verifies raw bytecode (code_len a multiple of 8) and makes a program of it
 * with rodata_len bytes of read-only data (the ARF_MC_REGION_RODATA region;
 * rodata may be NULL when rodata_len is 0).  Both are copied.  Errors:
 * ARF_EVERIFY (message in err), -EINVAL, -ENOMEM.  Free with
 * arf_mc_prog_destroy.
 */
int arf_mc_prog_load(const struct arf_mc_helpers *h, const void *code, size_t code_len,
		     const void *rodata, size_t rodata_len, struct arf_mc_prog **out,
		     char *err, size_t errlen);

/*
 * Same from an ELF relocatable object from clang -target bpf: every
 * executable section is loaded, .rodata*, .data* and .bss* become the
 * read-only data, and calls and 64-bit immediate loads are relocated.  entry
 * names the function (or section) where the program starts; NULL means the
 * only global function, or else the start of the first executable section.
 * Errors: -EINVAL with the reason in err (not ELF, unsupported relocation,
 * unknown symbol, ...), ARF_EVERIFY, -ENOMEM.
 */
int arf_mc_prog_load_elf(const struct arf_mc_helpers *h, const void *elf, size_t len,
			 const char *entry, struct arf_mc_prog **out, char *err, size_t errlen);

/* Frees a program (and its native code); NULL is fine.  No vm may be running it. */
void arf_mc_prog_destroy(struct arf_mc_prog *p);

/*
 * Compiles p to native code (x86-64), so that arf_mc_run runs that instead
 * of interpreting.  The code keeps every check the interpreter makes --
 * each load and store against the run's regions, the instruction budget,
 * the deadline, the call depth -- and gives the same results, faults,
 * messages and instruction counts.  Call it once, before p is shared
 * between threads; again is a no-op.  The code lives in memory never
 * writable and executable at once, and goes with p.  Errors (p stays
 * usable, interpreted): -ENOTSUP (no JIT for this machine), -ENOMEM,
 * -E2BIG (more than 64 MiB of code), -errno from mmap/mprotect; the reason
 * in err.
 */
int arf_mc_prog_jit(struct arf_mc_prog *p, char *err, size_t errlen);
/* 1 if p has native code (arf_mc_prog_jit succeeded), else 0. */
int arf_mc_prog_jitted(const struct arf_mc_prog *p);
/* p's native code (valid while p lives; never writable) and its size in
 * *len, or NULL and 0 when it has none.  For tools that show the code. */
const void *arf_mc_prog_jit_code(const struct arf_mc_prog *p, size_t *len);

/* The program's code (valid while p lives), count in *n; its entry index. */
const struct arf_mc_insn *arf_mc_prog_insns(const struct arf_mc_prog *p, size_t *n);
size_t arf_mc_prog_entry(const struct arf_mc_prog *p);
/* The program's read-only data (valid while p lives), size in *len. */
const void *arf_mc_prog_rodata(const struct arf_mc_prog *p, size_t *len);

/*
 * An ELF object's code and data after relocation, not verified: what
 * arf_mc_prog_load_elf loads, for tools that only look (disassemblers).
 * arf_mc_elf_read fills img (free its arrays with arf_mc_image_release).
 */
struct arf_mc_image {
	struct arf_mc_insn *insns; /* malloc'd */
	size_t n;
	size_t entry;
	uint8_t *rodata;           /* malloc'd, NULL when empty */
	size_t rodata_len;
};
int arf_mc_elf_read(const void *elf, size_t len, const char *entry, struct arf_mc_image *img,
		    char *err, size_t errlen);
void arf_mc_image_release(struct arf_mc_image *img);

/* ---- running ----------------------------------------------------------- */

/* An execution context for programs loaded with helper table h.  -ENOMEM. */
int arf_mc_vm_create(const struct arf_mc_helpers *h, struct arf_mc_vm **out);
/* Frees a vm; NULL is fine.  Buffers lent to it stay the caller's. */
void arf_mc_vm_destroy(struct arf_mc_vm *vm);

/*
 * Lends the vm size bytes at base as a region programs may read (and write,
 * with ARF_MC_REGION_WRITE); the address programs use for byte 0 goes to
 * *addr (ARF_MC_ADDR(ARF_MC_REGION_USER + k, 0) for the k-th region added).
 * The memory stays the caller's and must stay valid while the vm may run.
 * -ENOSPC: ARF_MC_MAX_USER_REGIONS already; -EINVAL: size over the offset
 * range or base NULL with size > 0.
 */
int arf_mc_vm_add_region(struct arf_mc_vm *vm, const void *base, uint64_t size, unsigned flags,
			 uint64_t *addr);
/* Names the added region holding addr in fault messages ("store ... at
 * 0x...: the META region is read-only"); name must be static. */
void arf_mc_vm_name_region(struct arf_mc_vm *vm, uint64_t addr, const char *name);
/* Forgets every region added with arf_mc_vm_add_region. */
void arf_mc_vm_clear_regions(struct arf_mc_vm *vm);
/*
 * Lends the vm an output buffer of cap bytes (NULL/0: none).  Each run starts
 * with it empty; ARF_MC_HELPER_EMIT and arf_mc_vm_emit append to it, and a
 * run that would go past cap fails with ARF_EOUTPUT.  Programs may also
 * load and store in it directly (ARF_MC_REGION_OUT).
 */
void arf_mc_vm_set_output(struct arf_mc_vm *vm, void *buf, size_t cap);
/* A pointer handed to every helper as call->user (e.g. arfd's request). */
void arf_mc_vm_set_user(struct arf_mc_vm *vm, void *user);
/*
 * A wall-clock limit for the following runs: a run still going at
 * deadline_ns (CLOCK_MONOTONIC nanoseconds) fails with ARF_EBUDGET and a
 * message saying so.  The clock is read once every 65536 instructions,
 * where what helpers charge counts as instructions (arf_mc_call_charge),
 * and by helpers that work longer (arf_mc_call_check), so a run stops
 * within a few milliseconds of the deadline whatever mix of instructions
 * and helpers it runs -- provided its helpers charge for their work.
 * 0 = no limit (the default).
 */
void arf_mc_vm_set_deadline(struct arf_mc_vm *vm, uint64_t deadline_ns);
/*
 * An abort flag for the following runs (NULL: none, the default): once
 * *flag is nonzero (another thread may set it at any time; it is read
 * atomically), a run fails with -ECANCELED at its next look at the clock
 * (as above, deadline or none), and a run that has not started fails at
 * once.  The int must outlive the runs.  An embedder sets it to stop every
 * run in progress, e.g. when it shuts down.
 */
void arf_mc_vm_set_abort(struct arf_mc_vm *vm, const int *flag);

/* What a run did. */
struct arf_mc_result {
	uint64_t r0;      /* the program's r0 at exit (valid when the run returns 0) */
	uint64_t insns;   /* instructions executed, for the budget and statistics */
	size_t out_len;   /* bytes appended to the output buffer */
	uint32_t pc;      /* on failure: index of the instruction that failed */
	char msg[160];    /* on failure: what happened and where; "" on success */
};

/*
 * Runs p from its entry -- its native code if it has any (arf_mc_prog_jit),
 * else in the interpreter -- with r1 = address of ctx (ctx_len bytes, read-write;
 * r1 = 0 when ctx_len is 0), r2 = ctx_len, r10 = top of the stack, other
 * registers and the stack zero; at most budget instructions.  Returns 0 and
 * the program's r0 in res->r0, or: ARF_EBUDGET (budget exhausted),
 * ARF_EFAULT (a load, store, atomic or helper argument outside the regions,
 * or a store into a read-only one; res->msg names the instruction and the
 * address), ARF_EOUTPUT (output limit), -ENOSYS (`call %rN` of an
 * unregistered helper), -EINVAL (p was loaded with another helper table), or
 * whatever a helper returned.  res may not be NULL.
 */
int arf_mc_run(struct arf_mc_vm *vm, const struct arf_mc_prog *p, void *ctx, size_t ctx_len,
	       uint64_t budget, struct arf_mc_result *res);

/* arf_mc_run in the interpreter, even when p has native code (for tests
 * and benchmarks comparing the two engines). */
int arf_mc_run_interp(struct arf_mc_vm *vm, const struct arf_mc_prog *p, void *ctx,
		      size_t ctx_len, uint64_t budget, struct arf_mc_result *res);

/*
 * For helpers, while the program runs: the host pointer for
 * [addr, addr + len) if the program may read it (write = 0) or write it
 * (write = 1), else NULL.  The same check as the interpreter's own loads and
 * stores; a zero-length range gives a non-NULL pointer never to dereference.
 */
void *arf_mc_vm_translate(struct arf_mc_vm *vm, uint64_t addr, uint64_t len, int write);
/* For helpers: append len bytes to the output.  0 or ARF_EOUTPUT. */
int arf_mc_vm_emit(struct arf_mc_vm *vm, const void *data, size_t len);

/* ---- text -------------------------------------------------------------- */

/*
 * Assembles text in the conformance suite's syntax (one instruction per
 * line, `label:`, `# comment`) into *insns (malloc'd; the caller frees) and
 * *n.  -EINVAL with "line N: reason" in err; -ENOMEM.  An empty text gives
 * n = 0 (which the verifier then rejects).
 */
int arf_mc_asm(const char *text, struct arf_mc_insn **insns, size_t *n, char *err,
	       size_t errlen);

/*
 * Disassembles n instructions into *text (malloc'd, one line each, ending in
 * '\n'; the caller frees); arf_mc_asm gives the same bytes back.  Local call
 * targets get labels "fn_<index>".  -EINVAL (an instruction the syntax
 * cannot express: reason in err), -ENOMEM.
 */
int arf_mc_disasm(const struct arf_mc_insn *insns, size_t n, char **text, char *err,
		  size_t errlen);

/*
 * One instruction (two for lddw) at insns[pc] as text without labels, into
 * buf; returns the number of instructions it took (1 or 2), or -EINVAL.
 */
int arf_mc_disasm_insn(const struct arf_mc_insn *insns, size_t n, size_t pc, char *buf,
		       size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* ARF_MC_H */
