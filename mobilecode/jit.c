/* SPDX-License-Identifier: MIT */
/*
 * The JIT around its code generator (jit_x86.c): compiling a program once
 * into memory that is never writable and executable at once, running that
 * code with the vm's tables filled for the run, and the call-outs through
 * which the code reaches C -- helpers, atomic operations, and the budget.
 *
 * W^X.  The code is written into an anonymous mapping that is readable and
 * writable, then the mapping is made readable and executable with
 * mprotect; it is never written again and is unmapped with the program.
 *
 * Handing over.  When a basic block does not fit in the budget left and
 * no slice is in reserve, mc_jit_refill runs the rest of the program in
 * the interpreter from that block's first instruction, with the registers,
 * the call depth and the frames the code kept in the interpreter's format.
 * The interpreter then stops the run where it would have stopped had it
 * run the program from the start, so the two engines agree on budget
 * stops to the instruction, and on the instruction counts of every run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mc_int.h"

int arf_mc_prog_jit(struct arf_mc_prog *p, char *err, size_t errlen)
{
	struct mc_jit_code *c;
	uint8_t *code = NULL;
	uint32_t *undo = NULL;
	size_t len = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	int rc, frame_stores = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!p)
		return mc_errf(err, errlen, -EINVAL, "no program");
	if (p->jit)
		return 0;
	rc = mc_jit_compile(p, &code, &len, &undo, &frame_stores, err, errlen);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = mc_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	c->map_len = (len + page - 1) / page * page;
	c->mem = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->mem == MAP_FAILED) {
		rc = mc_errf(err, errlen, -errno, "cannot map %zu bytes for native code: %s", len,
			     strerror(errno));
		c->mem = NULL;
		goto fail;
	}
	memcpy(c->mem, code, len);
	if (mprotect(c->mem, c->map_len, PROT_READ | PROT_EXEC)) {
		rc = mc_errf(err, errlen, -errno, "cannot make native code executable: %s",
			     strerror(errno));
		goto fail;
	}
	__builtin___clear_cache((char *)c->mem, (char *)c->mem + len);
	c->fn = (int (*)(struct arf_mc_vm *))c->mem;
	c->code_len = len;
	c->undo = undo;
	c->frame_stores = frame_stores;
	free(code);
	p->jit = c;
	return 0;
fail:
	if (c && c->mem)
		munmap(c->mem, c->map_len);
	free(c);
	free(code);
	free(undo);
	return rc;
}

void mc_jit_free(struct mc_jit_code *c)
{
	if (!c)
		return;
	if (c->mem)
		munmap(c->mem, c->map_len);
	free(c->undo);
	free(c);
}

int arf_mc_prog_jitted(const struct arf_mc_prog *p)
{
	return p && p->jit;
}

const void *arf_mc_prog_jit_code(const struct arf_mc_prog *p, size_t *len)
{
	if (len)
		*len = p && p->jit ? p->jit->code_len : 0;
	return p && p->jit ? p->jit->mem : NULL;
}

/* Instructions the run has executed, given the charge still to be undone. */
static uint64_t executed(const struct arf_mc_vm *vm, uint32_t undo)
{
	const struct mc_exec *x = vm->jit.x;

	return x->budget - x->reserve - vm->jit.left - undo;
}

/*
 * A call-out ends the run with rc (the result's message already written)
 * at instruction pc, whose block was charged whole (charged = 1), or not at
 * all (0: a refill, at the block's start).
 */
static int stop_at(struct arf_mc_vm *vm, uint32_t pc, int charged, int rc)
{
	struct arf_mc_result *res = vm->jit.res;

	res->insns = executed(vm, charged ? vm->jit.prog->jit->undo[pc] : 0);
	res->out_len = vm->out_len;
	vm->jit.rc = rc;
	return 1;
}

static int stop(struct arf_mc_vm *vm, uint32_t pc, int rc)
{
	return stop_at(vm, pc, 1, rc);
}

int mc_jit_helper(struct arf_mc_vm *vm, uint32_t pc)
{
	struct mc_jit_state *j = &vm->jit;
	const struct arf_mc_insn *in = &j->prog->insns[pc];
	const struct mc_helper *hp;
	int unwind = 0, rc;

	j->reg[MC_FP] = mc_fp_at(j->depth);
	if (in->opcode == MC_OP_CALLX) {
		uint64_t id = j->reg[in->dst];

		hp = id < ARF_MC_MAX_HELPERS ? &vm->helpers->tab[id] : NULL;
		if (!hp || !hp->fn)
			return stop(vm, pc, mc_failf(j->res, pc, -ENOSYS,
						     "call %%r%u: unknown helper %llu", in->dst,
						     (unsigned long long)id));
	} else {
		hp = &vm->helpers->tab[in->imm];
	}
	/* a call ends its block: j->left + reserve is what the interpreter
	 * would have left here, so the two take the charge alike */
	rc = mc_call_helper(vm, hp, j->reg, pc, j->left + j->x->reserve, &unwind, j->res);
	mc_charge_take(vm->call.charge, &j->left, &j->x->reserve);
	if (rc)
		return stop(vm, pc, rc);
	if (unwind) {
		j->res->r0 = j->reg[0];
		return stop(vm, pc, 0);
	}
	return 0;
}

int mc_jit_atomic(struct arf_mc_vm *vm, uint32_t pc)
{
	struct mc_jit_state *j = &vm->jit;
	const struct arf_mc_insn *in = &j->prog->insns[pc];
	int dw = MC_SIZE(in->opcode) == MC_DW;
	unsigned len = dw ? 8 : 4;
	uint64_t addr, old;
	uint8_t *q;

	j->reg[MC_FP] = mc_fp_at(j->depth);
	addr = j->reg[in->dst] + (uint64_t)(int64_t)in->off;
	q = arf_mc_vm_translate(vm, addr, len, 1);
	if (!q)
		return stop(vm, pc, mc_fault(vm, j->res, pc, addr, len, "store", 1));
	if ((uintptr_t)q & (len - 1))
		return stop(vm, pc, mc_failf(j->res, pc, ARF_EFAULT,
					     "misaligned atomic operation at 0x%llx",
					     (unsigned long long)addr));
	old = mc_atomic_op(q, dw, in->imm, j->reg[in->src], &j->reg[0]);
	if ((in->imm & MC_FETCH) && in->imm != MC_CMPXCHG)
		j->reg[in->src] = old;
	return 0;
}

int mc_jit_refill(struct arf_mc_vm *vm, uint32_t pc, uint32_t need)
{
	struct mc_jit_state *j = &vm->jit;
	struct mc_exec *x = j->x, y;

	while (j->left < need && x->reserve) {
		int rc = mc_clock_stop(vm, j->res, pc, executed(vm, 0));

		if (rc)
			return stop_at(vm, pc, 0, rc);
		uint64_t take = x->reserve > MC_SLICE ? MC_SLICE : x->reserve;

		j->left += take;
		x->reserve -= take;
	}
	if (j->left >= need)
		return 0;
	/* The block does not fit: the interpreter runs the rest (see above). */
	memcpy(y.reg, j->reg, sizeof(y.reg));
	y.reg[MC_FP] = mc_fp_at(j->depth);
	y.pc = pc;
	y.depth = j->depth;
	y.left = j->left;
	y.reserve = x->reserve;
	y.budget = x->budget;
	j->rc = mc_interp(vm, j->prog, &y, j->res);
	return 1;
}

/* The first address at which an access of len bytes faults in a region
 * starting at start of size bytes; 0 when every address does. */
static inline uint64_t limit(uint64_t start, uint64_t size, uint64_t len)
{
	return size >= len ? start + size - len + 1 : 0;
}

void mc_jit_region_sync(struct arf_mc_vm *vm, unsigned k)
{
	struct mc_jit_state *j = &vm->jit;
	uint64_t start = ARF_MC_ADDR(k, 0), r, w;

	if (k >= MC_NREGIONS)
		return; /* entries past the table stay 0: everything there faults */
	r = vm->rsize[k];
	w = vm->wsize[k];
	j->lim[0][0][k] = limit(start, r, 1);
	j->lim[0][1][k] = limit(start, r, 2);
	j->lim[0][2][k] = limit(start, r, 4);
	j->lim[0][3][k] = limit(start, r, 8);
	j->lim[1][0][k] = limit(start, w, 1);
	j->lim[1][1][k] = limit(start, w, 2);
	j->lim[1][2][k] = limit(start, w, 4);
	j->lim[1][3][k] = limit(start, w, 8);
	j->delta[k] = (uint64_t)(uintptr_t)vm->base[k] - start;
}

int mc_jit_run(struct arf_mc_vm *vm, const struct arf_mc_prog *p, struct mc_exec *x,
	       struct arf_mc_result *res)
{
	struct mc_jit_state *j = &vm->jit;
	int ev, rc;

	_Static_assert(MC_JIT_NREG >= MC_NREGIONS && (MC_JIT_NREG & (MC_JIT_NREG - 1)) == 0,
		       "the JIT's region index is a mask");
	/* the tables are kept in step with the regions (mc_jit_region_sync) */
	if (p->jit->frame_stores && vm->stack_low > sizeof(vm->stack) - ARF_MC_STACK_SIZE)
		vm->stack_low = sizeof(vm->stack) - ARF_MC_STACK_SIZE; /* the first frame's */
	memcpy(j->reg, x->reg, sizeof(j->reg));
	j->left = x->left;
	j->depth = 0;
	j->fp_delta = ARF_MC_ADDR(ARF_MC_REGION_STACK, 0) - (uint64_t)(uintptr_t)vm->stack;
	j->x = x;
	j->prog = p;
	j->res = res;
	j->rc = 0;

	ev = p->jit->fn(vm);

	switch (ev) {
	case MC_JIT_EXIT:
		res->r0 = j->reg[0];
		res->insns = executed(vm, 0);
		res->out_len = vm->out_len;
		return 0;
	case MC_JIT_FAULT: {
		uint32_t pc = j->fault_pc, kind = j->fault_info & 0xff, len = j->fault_info >> 8;

		if (kind == MC_JIT_FAULT_DEPTH)
			rc = mc_failf(res, pc, ARF_EFAULT, "local calls nest deeper than %u frames",
				      ARF_MC_MAX_FRAMES);
		else
			rc = mc_fault(vm, res, pc, j->fault_addr, len,
				      kind == MC_JIT_FAULT_STORE ? "store" : "load",
				      kind == MC_JIT_FAULT_STORE);
		return stop(vm, pc, rc), rc;
	}
	default: /* MC_JIT_STOPPED */
		return j->rc;
	}
}
