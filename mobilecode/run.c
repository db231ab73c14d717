/* SPDX-License-Identifier: MIT */
/*
 * Running a program: what arf_mc_run does before and after either engine
 * (the interpreter, interp.c; the native code of the JIT, jit.c) takes
 * over, and what the two share while a program runs, so that they cannot
 * drift apart: the messages of faults and failures, helper calls with
 * their argument checks, the atomic operations, the wall-clock stop.
 *
 * A run starts with r1 = the context's address, r2 = its length, r10 =
 * the top of the stack, every other register and the whole stack zero, and
 * the output buffer empty; nothing of one run reaches the next.  The stack
 * is cleared when a run ends, from the lowest byte the run may have
 * written (vm->stack_low) up.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mc_int.h"

uint64_t mc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *region_name(const struct arf_mc_vm *vm, uint64_t k)
{
	if (k < MC_NREGIONS && vm->rname[k])
		return vm->rname[k];

	static const char *const names[] = { "null region", "stack", "context", "output buffer",
					     "program data" };

	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "embedder region";
}

int mc_fault(const struct arf_mc_vm *vm, struct arf_mc_result *res, size_t pc, uint64_t addr,
	     unsigned len, const char *what, int write)
{
	uint64_t k = addr >> ARF_MC_ADDR_SHIFT, off = addr & ARF_MC_OFF_MASK;

	res->pc = (uint32_t)pc;
	if (k >= MC_NREGIONS)
		snprintf(res->msg, sizeof(res->msg),
			 "instruction %zu: %s of %u bytes at 0x%llx: no such region", pc, what, len,
			 (unsigned long long)addr);
	else if (write && arf_range_ok(off, len, vm->rsize[k]))
		snprintf(res->msg, sizeof(res->msg),
			 "instruction %zu: %s of %u bytes at 0x%llx: the %s is read-only", pc, what,
			 len, (unsigned long long)addr, region_name(vm, k));
	else
		snprintf(res->msg, sizeof(res->msg),
			 "instruction %zu: %s of %u bytes at 0x%llx: out of bounds of the %s "
			 "(%llu bytes)", pc, what, len, (unsigned long long)addr, region_name(vm, k),
			 (unsigned long long)vm->rsize[k]);
	return ARF_EFAULT;
}

int mc_failf(struct arf_mc_result *res, size_t pc, int code, const char *fmt, ...)
{
	va_list ap;
	int k;

	res->pc = (uint32_t)pc;
	k = snprintf(res->msg, sizeof(res->msg), "instruction %zu: ", pc);
	va_start(ap, fmt);
	vsnprintf(res->msg + k, sizeof(res->msg) - (size_t)k, fmt, ap);
	va_end(ap);
	return code;
}

/* Which stop a look at the clock calls for now (enum mc_stop). */
static int clock_says(const struct arf_mc_vm *vm)
{
	if (vm->abort_flag && __atomic_load_n(vm->abort_flag, __ATOMIC_ACQUIRE))
		return MC_STOP_ABORT;
	if (vm->deadline_ns && mc_now_ns() >= vm->deadline_ns)
		return MC_STOP_CLOCK;
	return MC_STOP_NONE;
}

/* The message and code of a stop (not MC_STOP_NONE) `done` instructions in. */
static int stop_msg(const struct arf_mc_vm *vm, struct arf_mc_result *res, size_t pc, int why,
		    const char *helper, uint64_t done)
{
	const char *h = helper ? "helper " : "", *sep = helper ? ": " : "";

	if (!helper)
		helper = "";
	switch (why) {
	case MC_STOP_ABORT:
		return mc_failf(res, pc, -ECANCELED, "%s%s%srun aborted by its embedder after %llu "
				"instructions", h, helper, sep, (unsigned long long)done);
	case MC_STOP_CLOCK:
		return mc_failf(res, pc, ARF_EBUDGET, "%s%s%swall-clock limit reached after %llu "
				"instructions", h, helper, sep, (unsigned long long)done);
	default: /* MC_STOP_BUDGET */
		return mc_failf(res, pc, ARF_EBUDGET, "%s%s%sinstruction budget of %llu exhausted "
				"(helpers' work counts as instructions)", h, helper, sep,
				(unsigned long long)vm->budget);
	}
}

int mc_clock_stop(const struct arf_mc_vm *vm, struct arf_mc_result *res, size_t pc, uint64_t done)
{
	int why = clock_says(vm);

	return why ? stop_msg(vm, res, pc, why, NULL, done) : 0;
}

/* ---- what helpers spend -------------------------------------------------- */

int arf_mc_call_check(struct arf_mc_call *c)
{
	struct arf_mc_vm *vm = c->vm;
	int why = clock_says(vm);

	vm->call.checked = vm->call.charge;
	if (!why)
		return 0;
	vm->call.stop = why;
	return why == MC_STOP_ABORT ? -ECANCELED : ARF_EBUDGET;
}

int arf_mc_call_charge(struct arf_mc_call *c, uint64_t insns)
{
	struct arf_mc_vm *vm = c->vm;
	struct mc_call_state *cs = &vm->call;

	cs->charge = cs->charge + insns < cs->charge ? UINT64_MAX : cs->charge + insns;
	if (cs->charge > cs->avail) {
		cs->stop = MC_STOP_BUDGET;
		return ARF_EBUDGET;
	}
	if (mc_clocked(vm) && cs->charge - cs->checked >= MC_CALL_CHECK)
		return arf_mc_call_check(c);
	return 0;
}

int arf_mc_call_charge_bytes(struct arf_mc_call *c, uint64_t bytes)
{
	return arf_mc_call_charge(c, bytes / ARF_MC_BYTES_PER_INSN);
}

uint64_t mc_atomic_op(uint8_t *p, int dw, int32_t op, uint64_t src, uint64_t *r0)
{
	if (dw) {
		uint64_t *q = (uint64_t *)(void *)p, old;

		switch (op & ~MC_FETCH) {
		case MC_ADD: return __atomic_fetch_add(q, src, __ATOMIC_SEQ_CST);
		case MC_OR: return __atomic_fetch_or(q, src, __ATOMIC_SEQ_CST);
		case MC_AND: return __atomic_fetch_and(q, src, __ATOMIC_SEQ_CST);
		case MC_XOR: return __atomic_fetch_xor(q, src, __ATOMIC_SEQ_CST);
		case MC_XCHG & ~MC_FETCH: return __atomic_exchange_n(q, src, __ATOMIC_SEQ_CST);
		default: /* MC_CMPXCHG */
			old = *r0;
			__atomic_compare_exchange_n(q, &old, src, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			*r0 = old;
			return old;
		}
	} else {
		uint32_t *q = (uint32_t *)(void *)p, s = (uint32_t)src, old;

		switch (op & ~MC_FETCH) {
		case MC_ADD: return __atomic_fetch_add(q, s, __ATOMIC_SEQ_CST);
		case MC_OR: return __atomic_fetch_or(q, s, __ATOMIC_SEQ_CST);
		case MC_AND: return __atomic_fetch_and(q, s, __ATOMIC_SEQ_CST);
		case MC_XOR: return __atomic_fetch_xor(q, s, __ATOMIC_SEQ_CST);
		case MC_XCHG & ~MC_FETCH: return __atomic_exchange_n(q, s, __ATOMIC_SEQ_CST);
		default: /* MC_CMPXCHG */
			old = (uint32_t)*r0;
			__atomic_compare_exchange_n(q, &old, s, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			*r0 = old;
			return old;
		}
	}
}

int mc_call_helper(struct arf_mc_vm *vm, const struct mc_helper *hp, uint64_t *reg, size_t pc,
		   uint64_t avail, int *unwind, struct arf_mc_result *res)
{
	struct arf_mc_call c;
	uint64_t ret = 0;
	int rc;

	vm->call.avail = avail;
	vm->call.charge = 0;
	vm->call.checked = 0;
	vm->call.stop = MC_STOP_NONE;
	c.vm = vm;
	c.ctx = hp->ctx;
	c.user = vm->user;
	c.pc = (uint32_t)pc;
	c.unwind = 0;
	c.why = NULL;
	for (unsigned i = 0; i < 5; i++) {
		c.arg[i] = reg[1 + i];
		c.ptr[i] = NULL;
	}
	if (hp->has_ptr) {
		for (unsigned i = 0; i < hp->nargs; i++) {
			int w = hp->args[i] == ARF_MC_ARG_PTR_RW;
			uint64_t len;

			if (hp->args[i] != ARF_MC_ARG_PTR_RO && !w)
				continue;
			len = c.arg[hp->size_of[i]];
			c.ptr[i] = arf_mc_vm_translate(vm, c.arg[i], len, w);
			if (!c.ptr[i])
				return mc_failf(res, pc, ARF_EFAULT,
						"helper %s: argument %u (%llu bytes at 0x%llx) is not %s memory",
						hp->name, i + 1, (unsigned long long)len,
						(unsigned long long)c.arg[i], w ? "writable" : "readable");
		}
	}
	rc = hp->fn(&c, &ret);
	if (vm->call.charge > avail && (rc >= 0 || !vm->call.stop))
		vm->call.stop = MC_STOP_BUDGET, rc = ARF_EBUDGET; /* it charged more than there was */
	if (rc < 0) {
		if (vm->call.stop)
			return stop_msg(vm, res, pc, vm->call.stop, hp->name,
					vm->budget - avail + (vm->call.charge < avail ? vm->call.charge
									 : avail));
		if (rc == ARF_EOUTPUT)
			return mc_failf(res, pc, rc, "helper %s: output limit of %zu bytes exceeded",
					hp->name, vm->out_cap);
		return mc_failf(res, pc, rc, "helper %s failed: %s", hp->name,
				c.why ? c.why : arf_err_text(rc) ? arf_err_text(rc) : strerror(-rc));
	}
	reg[0] = ret;
	*unwind = c.unwind;
	return 0;
}

/* Both engines: set the run's regions up, run, forget the caller's buffers. */
static int run(struct arf_mc_vm *vm, const struct arf_mc_prog *p, void *ctx, size_t ctx_len,
	       uint64_t budget, struct arf_mc_result *res, int native)
{
	struct mc_exec x;
	int rc;

	res->r0 = 0;
	res->insns = 0;
	res->out_len = 0;
	res->pc = 0;
	res->msg[0] = '\0';
	if (!vm || !p)
		return -EINVAL;
	if (p->helpers != vm->helpers) {
		snprintf(res->msg, sizeof(res->msg),
			 "program was verified against another helper table");
		return -EINVAL;
	}
	if ((ctx_len && !ctx) || ctx_len > ARF_MC_OFF_MASK) {
		snprintf(res->msg, sizeof(res->msg), "bad context buffer");
		return -EINVAL;
	}
	vm->budget = budget;
	if (vm->abort_flag && __atomic_load_n(vm->abort_flag, __ATOMIC_ACQUIRE))
		return stop_msg(vm, res, p->entry, MC_STOP_ABORT, NULL, 0); /* nothing lent, nothing ran */

	vm->base[ARF_MC_REGION_CTX] = ctx_len ? ctx : NULL;
	vm->rsize[ARF_MC_REGION_CTX] = ctx_len;
	vm->wsize[ARF_MC_REGION_CTX] = ctx_len;
	vm->base[ARF_MC_REGION_RODATA] = p->rodata;
	vm->rsize[ARF_MC_REGION_RODATA] = p->rodata_len;
	vm->wsize[ARF_MC_REGION_RODATA] = 0;
	mc_jit_region_sync(vm, ARF_MC_REGION_CTX);
	mc_jit_region_sync(vm, ARF_MC_REGION_RODATA);
	vm->out_len = 0;

	memset(&x, 0, sizeof(x));
	x.reg[1] = ctx_len ? ARF_MC_ADDR(ARF_MC_REGION_CTX, 0) : 0;
	x.reg[2] = ctx_len;
	x.reg[MC_FP] = mc_fp_at(0);
	x.pc = p->entry;
	x.budget = budget;
	x.left = mc_clocked(vm) && budget > MC_SLICE ? MC_SLICE : budget;
	x.reserve = budget - x.left;

	rc = native && p->jit ? mc_jit_run(vm, p, &x, res) : mc_interp(vm, p, &x, res);

	/* A vm serves many clients: nothing of one run may reach the next. */
	if (vm->stack_low < sizeof(vm->stack))
		memset(vm->stack + vm->stack_low, 0, sizeof(vm->stack) - vm->stack_low);
	vm->stack_low = sizeof(vm->stack);
	/* The caller's context and the program end with the run: forget them. */
	vm->base[ARF_MC_REGION_CTX] = NULL;
	vm->rsize[ARF_MC_REGION_CTX] = vm->wsize[ARF_MC_REGION_CTX] = 0;
	vm->base[ARF_MC_REGION_RODATA] = NULL;
	vm->rsize[ARF_MC_REGION_RODATA] = 0;
	/* (the JIT's entries for the two are set again by the next run) */
	return rc;
}

int arf_mc_run(struct arf_mc_vm *vm, const struct arf_mc_prog *p, void *ctx, size_t ctx_len,
	       uint64_t budget, struct arf_mc_result *res)
{
	return run(vm, p, ctx, ctx_len, budget, res, 1);
}

int arf_mc_run_interp(struct arf_mc_vm *vm, const struct arf_mc_prog *p, void *ctx,
		      size_t ctx_len, uint64_t budget, struct arf_mc_result *res)
{
	return run(vm, p, ctx, ctx_len, budget, res, 0);
}
