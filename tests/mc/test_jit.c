/* SPDX-License-Identifier: MIT */
/*
 * The JIT against the interpreter.  Every program here runs twice, once in
 * each engine, each in its own vm over its own copy of the same memory
 * (context, output buffer, an embedder's read-only and writable regions,
 * helpers that keep a log), and the two runs must agree on everything a
 * run shows: its return code, r0, the instructions it executed, the output
 * length, the failing instruction and the message, and every byte of the
 * memory it could write, the helper logs included.  Because the JIT hands
 * a run that is short of budget over to the interpreter, budget stops must
 * agree to the instruction too, not only in kind.
 *
 *   - random programs (randprog.h), each at a full budget and at a budget
 *     cut somewhere inside its run; MC_JIT_ROUNDS asks for more; their
 *     helper calls include one that charges for work (so budgets run out
 *     inside helpers too, and must still agree);
 *   - escapes: computed pointers past a region, below or above the stack,
 *     to host addresses, into a region number past the table or aliasing
 *     one, a callx to code -- stopped with the interpreter's error;
 *   - every budget from 1 up through a loop with local calls;
 *   - regions a helper lends during the run (as arfd's file_view does);
 *   - nothing a run leaves in the stack reaches the next run;
 *   - the deadline stops a runaway program in native code;
 *   - the code is mapped read + execute, never writable.
 */
#include <time.h>

#include "mc_test.h"
#include "randprog.h"

#define ROUNDS 60000

/* One engine's world: a vm with its regions and what helpers noted. */
struct world {
	struct arf_mc_vm *vm;
	uint8_t ctx[64];
	uint8_t out[32];
	uint8_t ro[48];
	uint8_t rw[48];
	uint8_t mapped[24]; /* lent by map() during a run */
	uint64_t log[16];
	unsigned nlog;
};

/* note(x): logs x, returns 3x + 1. */
static int h_note(struct arf_mc_call *c, uint64_t *ret)
{
	struct world *w = c->user;

	if (w->nlog < 16)
		w->log[w->nlog] = c->arg[0];
	w->nlog++;
	*ret = c->arg[0] * 3 + 1;
	return 0;
}

/* fail_odd(x): fails the run when x is odd. */
static int h_fail_odd(struct arf_mc_call *c, uint64_t *ret)
{
	if (c->arg[0] & 1) {
		c->why = "odd on purpose";
		return -EIO;
	}
	*ret = c->arg[0] / 2;
	return 0;
}

/* stop3(x): ends the program with r0 = x + 7 when 3 divides x. */
static int h_stop3(struct arf_mc_call *c, uint64_t *ret)
{
	*ret = c->arg[0] + 7;
	c->unwind = c->arg[0] % 3 == 0;
	return 0;
}

/* map(w): lends the program a new region during the run, as arfd's file_view
 * does (writable when w is odd); its address, or 0 when the table is full. */
static int h_map(struct arf_mc_call *c, uint64_t *ret)
{
	struct world *w = c->user;
	uint64_t addr = 0;

	if (arf_mc_vm_add_region(c->vm, w->mapped, sizeof(w->mapped),
				 (c->arg[0] & 1) ? ARF_MC_REGION_WRITE : 0, &addr) == -ENOSPC)
		addr = 0;
	*ret = addr;
	return 0;
}

/* fill(ptr, len): writes len bytes of 0x5a at a checked pointer. */
static int h_fill(struct arf_mc_call *c, uint64_t *ret)
{
	memset(c->ptr[0], 0x5a, c->arg[1]);
	*ret = c->arg[1];
	return 0;
}

/* charge(x): charges x % 4096 instructions' worth of work; stops the run
 * when the charge says so (budget), as a helper that loops would. */
static int h_charge(struct arf_mc_call *c, uint64_t *ret)
{
	*ret = c->arg[0] % 4096;
	return arf_mc_call_charge(c, c->arg[0] % 4096);
}

static struct arf_mc_helpers *helpers(void)
{
	static const struct arf_mc_helper_def defs[] = {
		{ 16, "note", { ARF_MC_ARG_ANY }, h_note, NULL },
		{ 17, "fail_odd", { ARF_MC_ARG_ANY }, h_fail_odd, NULL },
		{ 18, "stop3", { ARF_MC_ARG_ANY }, h_stop3, NULL },
		{ 19, "fill", { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE }, h_fill, NULL },
		{ 20, "map", { ARF_MC_ARG_ANY }, h_map, NULL },
		{ 21, "charge", { ARF_MC_ARG_ANY }, h_charge, NULL },
	};
	struct arf_mc_helpers *h = NULL;

	assert_int_equal(arf_mc_helpers_create(&h), 0);
	assert_int_equal(arf_mc_helpers_add_std(h), 0);
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		assert_int_equal(arf_mc_helpers_add(h, &defs[i], NULL, 0), 0);
	return h;
}

/* The embedder's regions, afresh (what map() added before is forgotten). */
static void world_regions(struct world *w)
{
	uint64_t a;

	arf_mc_vm_clear_regions(w->vm);
	assert_int_equal(arf_mc_vm_add_region(w->vm, w->ro, sizeof(w->ro), 0, &a), 0);
	assert_true(a == ARF_MC_ADDR(5, 0));
	assert_int_equal(arf_mc_vm_add_region(w->vm, w->rw, sizeof(w->rw), ARF_MC_REGION_WRITE, &a), 0);
	assert_true(a == ARF_MC_ADDR(6, 0));
	arf_mc_vm_name_region(w->vm, ARF_MC_ADDR(5, 0), "test's read-only region");
}

static void world_init(struct world *w, const struct arf_mc_helpers *h)
{
	memset(w, 0, sizeof(*w));
	assert_int_equal(arf_mc_vm_create(h, &w->vm), 0);
	world_regions(w);
	arf_mc_vm_set_output(w->vm, w->out, sizeof(w->out));
	arf_mc_vm_set_user(w->vm, w);
}

/* Same bytes in both worlds, from seed. */
static void world_fill(struct world *w, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < sizeof(w->ctx) + sizeof(w->ro) + sizeof(w->rw); i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		uint8_t b = (uint8_t)s;

		if (i < sizeof(w->ctx))
			w->ctx[i] = b;
		else if (i < sizeof(w->ctx) + sizeof(w->ro))
			w->ro[i - sizeof(w->ctx)] = b;
		else
			w->rw[i - sizeof(w->ctx) - sizeof(w->ro)] = b;
	}
	memset(w->out, 0xee, sizeof(w->out));
	memset(w->mapped, 0x33, sizeof(w->mapped));
	world_regions(w);
	memset(w->log, 0, sizeof(w->log));
	w->nlog = 0;
}

static void world_free(struct world *w)
{
	arf_mc_vm_destroy(w->vm);
}

/* What a run showed. */
struct outcome {
	int rc;
	struct arf_mc_result res;
};

/*
 * Runs p in the interpreter in a and natively in b (from the same seed) and
 * fails the test, with the program's text, on any difference.
 */
static void differ(struct world *a, struct world *b, const struct arf_mc_prog *p, uint64_t seed,
		   uint64_t budget, struct outcome *oa)
{
	struct outcome ob;

	world_fill(a, seed);
	world_fill(b, seed);
	memset(oa, 0, sizeof(*oa));
	memset(&ob, 0, sizeof(ob));
	oa->rc = arf_mc_run_interp(a->vm, p, a->ctx, sizeof(a->ctx), budget, &oa->res);
	ob.rc = arf_mc_run(b->vm, p, b->ctx, sizeof(b->ctx), budget, &ob.res);

	const char *what = NULL;

	if (oa->rc != ob.rc)
		what = "return code";
	else if (oa->rc == 0 && oa->res.r0 != ob.res.r0)
		what = "r0";
	else if (oa->res.insns != ob.res.insns)
		what = "instructions executed";
	else if (oa->res.out_len != ob.res.out_len)
		what = "output length";
	else if (oa->rc && oa->res.pc != ob.res.pc)
		what = "failing instruction";
	else if (strcmp(oa->res.msg, ob.res.msg))
		what = "message";
	else if (memcmp(a->ctx, b->ctx, sizeof(a->ctx)))
		what = "context bytes";
	else if (memcmp(a->out, b->out, sizeof(a->out)))
		what = "output bytes";
	else if (memcmp(a->rw, b->rw, sizeof(a->rw)))
		what = "writable region";
	else if (memcmp(a->mapped, b->mapped, sizeof(a->mapped)))
		what = "region lent during the run";
	else if (a->nlog != b->nlog || memcmp(a->log, b->log, sizeof(a->log)))
		what = "helper log";
	if (what) {
		size_t n = 0;
		char *text = NULL, err[128];
		const struct arf_mc_insn *code = arf_mc_prog_insns(p, &n);

		if (arf_mc_disasm(code, n, &text, err, sizeof(err)))
			text = NULL;
		fail_msg("engines differ in %s (seed %llu, budget %llu)\n"
			 "interpreter: rc %d r0 0x%llx insns %llu out %zu pc %u: %s\n"
			 "JIT:         rc %d r0 0x%llx insns %llu out %zu pc %u: %s\n--\n%s",
			 what, (unsigned long long)seed, (unsigned long long)budget, oa->rc,
			 (unsigned long long)oa->res.r0, (unsigned long long)oa->res.insns,
			 oa->res.out_len, oa->res.pc, oa->res.msg, ob.rc, (unsigned long long)ob.res.r0,
			 (unsigned long long)ob.res.insns, ob.res.out_len, ob.res.pc, ob.res.msg,
			 text ? text : "(not expressible as text)");
	}
}

static struct arf_mc_prog *load_jit(const struct arf_mc_helpers *h, const struct arf_mc_insn *code,
				    size_t n, char *err, size_t errlen)
{
	struct arf_mc_prog *p = NULL;

	if (arf_mc_prog_load(h, code, n * sizeof(*code), "rodata!", 8, &p, err, errlen))
		return NULL;
	if (arf_mc_prog_jit(p, err, errlen))
		fail_msg("the JIT cannot compile a verified program: %s", err);
	assert_true(arf_mc_prog_jitted(p));
	return p;
}

/* What every test shares: the helper table, and a world for each engine. */
struct fixture {
	struct arf_mc_helpers *h;
	struct world a, b;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->h = helpers();
	world_init(&f->a, f->h);
	world_init(&f->b, f->h);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	world_free(&f->a);
	world_free(&f->b);
	arf_mc_helpers_destroy(f->h);
	free(f);
	return 0;
}

/* Assembles, verifies and compiles text, or fails the test saying why. */
static struct arf_mc_prog *load_text(const struct fixture *f, const char *text)
{
	char err[256];
	size_t n = 0;
	struct arf_mc_insn *code = mc_test_asm(text, &n);
	struct arf_mc_prog *p = load_jit(f->h, code, n, err, sizeof(err));

	free(code);
	if (!p)
		fail_msg("not verified: %s\n--\n%s", err, text);
	return p;
}

static void test_random_programs(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_helpers *h = f->h;
	struct world *a = &f->a, *b = &f->b;
	const char *env = getenv("MC_JIT_ROUNDS");
	unsigned rounds = env ? (unsigned)strtoul(env, NULL, 10) : ROUNDS;
	unsigned accepted = 0, exited = 0, faulted = 0, budget_stops = 0, cut = 0;

	mc_rand_seed(0x5eed5eedull);
	for (unsigned round = 0; round < rounds; round++) {
		struct arf_mc_insn code[MC_RAND_MAX];
		struct outcome o;
		char err[256];
		size_t n = mc_rand_program(code);

		/* Half the helper calls go to the test's helpers. */
		for (size_t i = 0; i < n; i++)
			if (code[i].opcode == 0x85 && code[i].src == 0 && pick(2))
				code[i].imm = 16 + (int32_t)pick(6);
		struct arf_mc_prog *p = load_jit(h, code, n, err, sizeof(err));

		if (!p)
			continue;
		accepted++;
		differ(a, b, p, round, 3000, &o);
		exited += o.rc == 0;
		faulted += o.rc == ARF_EFAULT;
		budget_stops += o.rc == ARF_EBUDGET;
		if (o.res.insns > 1) {
			/* again with the budget cut somewhere inside that run */
			differ(a, b, p, round, 1 + pick((unsigned)o.res.insns), &o);
			cut += o.rc == ARF_EBUDGET;
		}
		arf_mc_prog_destroy(p);
	}
	print_message("%u of %u random programs verified and compared: %u exited, %u faulted, "
		      "%u out of budget; %u stopped by a cut budget\n",
		      accepted, rounds, exited, faulted, budget_stops, cut);
	assert_true(accepted > rounds / 50);
	assert_true(exited > accepted / 10);
	assert_true(faulted > accepted / 100);
	assert_true(cut > accepted / 10);
}

/* Programs that reach for memory they may not touch. */
static void test_escapes(void **state)
{
	static char host_var;
	char host_addr[64];
	struct fixture *f = *state;
	const struct {
		const char *name;
		const char *text;
		int rc;
		const char *msg; /* a part of the message */
	} cases[] = {
		{ "past the context", "ldxb %r0, [%r1+64]\nexit", ARF_EFAULT,
		  "load of 1 bytes at 0x2000000000040: out of bounds of the context (64 bytes)" },
		{ "straddling the context's end", "ldxdw %r0, [%r1+60]\nexit", ARF_EFAULT,
		  "out of bounds of the context" },
		{ "below the context (the stack's last byte)", "ldxb %r0, [%r1-1]\nexit", ARF_EFAULT,
		  "load of 1 bytes at 0x1ffffffffffff: out of bounds of the stack" },
		{ "above the stack", "ldxdw %r0, [%r10]\nexit", ARF_EFAULT,
		  "out of bounds of the stack (4096 bytes)" },
		{ "below the stack", "mov %r2, %r10\nsub %r2, 4097\nldxb %r0, [%r2]\nexit", ARF_EFAULT,
		  "at 0xffffffffffff: out of bounds of the null region" },
		{ "the stack's bottom is fine", "mov %r2, %r10\nsub %r2, 4096\nldxb %r0, [%r2]\nexit", 0,
		  NULL },
		{ "a host address", NULL, ARF_EFAULT, "out of bounds of the null region" },
		{ "region bits past the table", "lddw %r2, 0x250000000000000\nldxb %r0, [%r2]\nexit",
		  ARF_EFAULT, "no such region" },
		{ "region bits aliasing the embedder's", "lddw %r2, 0x0025000000000000\nldxb %r0, [%r2]\nexit",
		  ARF_EFAULT, "no such region" },
		{ "an empty region slot", "lddw %r2, 0x0007000000000000\nldxb %r0, [%r2]\nexit",
		  ARF_EFAULT, "out of bounds of the embedder region (0 bytes)" },
		{ "the null address", "mov %r2, 0\nldxw %r0, [%r2]\nexit", ARF_EFAULT,
		  "out of bounds of the null region" },
		{ "a store into a read-only region", "lddw %r2, 0x0005000000000000\nstb [%r2], 1\nexit",
		  ARF_EFAULT, "the test's read-only region is read-only" },
		{ "a store into the program's data", "lddw %r2, 0x0004000000000000\nstxb [%r2], %r1\nexit",
		  ARF_EFAULT, "the program data is read-only" },
		{ "past the writable region", "lddw %r2, 0x0006000000000030\nstb [%r2], 1\nexit",
		  ARF_EFAULT, "out of bounds of the embedder region (48 bytes)" },
		{ "an offset wrapping around", "lddw %r2, 0xffffffffffffffff\nldxb %r0, [%r2+1]\nexit",
		  ARF_EFAULT, "out of bounds of the null region" },
		{ "a huge offset in a region", "lddw %r2, 0x0006ffffffffffff\nstxdw [%r2], %r1\nexit",
		  ARF_EFAULT, "out of bounds of the embedder region" },
		{ "callx to code", NULL, -ENOSYS, "unknown helper" },
		{ "helper pointer past a region", "mov %r1, %r10\nmov %r2, 8\ncall 19\nexit", ARF_EFAULT,
		  "helper fill: argument 1 (8 bytes at 0x1000000001000) is not writable memory" },
		{ "atomic on a read-only region",
		  "lddw %r2, 0x0005000000000000\nmov %r3, 1\nlock add [%r2], %r3\nexit", ARF_EFAULT,
		  "is read-only" },
		{ "misaligned atomic", "mov %r3, 1\nlock add [%r1+1], %r3\nexit", ARF_EFAULT,
		  "misaligned atomic operation" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		const char *t = cases[i].text;
		struct outcome o;

		if (!t && cases[i].rc == ARF_EFAULT) {
			snprintf(host_addr, sizeof(host_addr), "lddw %%r2, 0x%llx\nldxb %%r0, [%%r2]\nexit",
				 (unsigned long long)(uintptr_t)&host_var);
			t = host_addr;
		} else if (!t) {
			snprintf(text, sizeof(text), "lddw %%r2, 0x%llx\ncall %%r2\nexit",
				 (unsigned long long)(uintptr_t)&arf_mc_run);
			t = text;
		}
		char full[512];

		snprintf(full, sizeof(full), "mov %%r0, 0\n%s", t); /* r0 is set at exit */
		struct arf_mc_prog *p = load_text(f, full);

		differ(&f->a, &f->b, p, i, 1000, &o);
		if (o.rc != cases[i].rc)
			fail_msg("%s: rc %d (%s), expected %d", cases[i].name, o.rc, o.res.msg,
				 cases[i].rc);
		if (cases[i].msg && !strstr(o.res.msg, cases[i].msg))
			fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].name, o.res.msg,
				 cases[i].msg);
		arf_mc_prog_destroy(p);
	}
}

/*
 * Every budget from 1 to past the end of a run that loops, calls local
 * functions three deep (each keeping things in its own frame and writing
 * through a pointer into its caller's), and calls a helper: the engines
 * agree at each, and at the largest ones the run succeeds.
 */
static void test_every_budget(void **state)
{
	static const char text[] =
		"mov %r6, 0\n"
		"mov %r7, 5\n"
		"loop:\n"
		"mov %r1, %r10\n"
		"add %r1, -8\n"
		"stxdw [%r10-8], %r7\n"
		"call local f1\n"
		"ldxdw %r2, [%r10-8]\n"
		"add %r6, %r2\n"
		"add %r6, %r0\n"
		"mov %r1, %r6\n"
		"call 16\n"
		"sub %r7, 1\n"
		"jne %r7, 0, loop\n"
		"mov %r0, %r6\n"
		"exit\n"
		"f1:\n"
		"mov %r6, %r1\n"
		"stxdw [%r10-16], %r1\n"
		"mov %r1, %r10\n"
		"add %r1, -24\n"
		"stdw [%r10-24], 3\n"
		"call local f2\n"
		"ldxdw %r1, [%r10-16]\n"
		"ldxdw %r2, [%r1]\n"
		"add %r2, %r0\n"
		"stxdw [%r6], %r2\n"
		"mov %r0, %r2\n"
		"exit\n"
		"f2:\n"
		"ldxdw %r2, [%r1]\n"
		"mul %r2, 7\n"
		"stxdw [%r1], %r2\n"
		"mov %r1, %r10\n"
		"rsh %r1, 9\n"
		"and %r1, 7\n"
		"call local f3\n"
		"exit\n"
		"f3:\n"
		"mov %r3, %r10\n"
		"stxdw [%r10-512], %r3\n"
		"ldxdw %r4, [%r10-512]\n"
		"sub %r4, %r3\n"
		"mov %r0, %r1\n"
		"add %r0, %r4\n"
		"exit\n";
	struct fixture *f = *state;
	struct outcome o;
	struct arf_mc_prog *p = load_text(f, text);
	uint64_t full;

	differ(&f->a, &f->b, p, 1, 100000, &o);
	assert_int_equal(o.rc, 0);
	full = o.res.insns;
	assert_true(full > 100);
	for (uint64_t budget = 1; budget <= full + 2; budget++) {
		differ(&f->a, &f->b, p, 1, budget, &o);
		assert_int_equal(o.rc, budget < full ? ARF_EBUDGET : 0);
	}
	print_message("%llu budgets compared\n", (unsigned long long)full + 2);
	arf_mc_prog_destroy(p);
}

/*
 * Regions a helper lends during the run (arfd's file_view) are seen by the
 * code at once: loads from them, stores into a writable one, a fault at
 * the end of one and on a store into a read-only one.
 */
static void test_region_added_during_run(void **state)
{
	static const char *const texts[] = {
		"mov %r1, 0\ncall 20\nldxdw %r0, [%r0+16]\nexit\n",
		"mov %r1, 1\ncall 20\nmov %r6, %r0\nstdw [%r6+8], 77\nldxdw %r0, [%r6+8]\nexit\n",
		"mov %r1, 0\ncall 20\nldxb %r0, [%r0+24]\nexit\n",
		"mov %r1, 0\ncall 20\nstb [%r0+3], 1\nexit\n",
		"mov %r1, 1\ncall 20\nmov %r6, %r0\nmov %r1, 0\ncall 20\nstxb [%r6], %r0\n"
		"ldxb %r1, [%r0]\nmov %r0, %r1\nexit\n",
	};
	static const int want[] = { 0, 0, ARF_EFAULT, ARF_EFAULT, 0 };
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct outcome o;
		struct arf_mc_prog *p = load_text(f, texts[i]);

		differ(&f->a, &f->b, p, 7, 1000, &o);
		if (o.rc != want[i])
			fail_msg("case %zu: rc %d (%s)", i, o.rc, o.res.msg);
		if (i == 1)
			assert_int_equal(o.res.r0, 77);
		arf_mc_prog_destroy(p);
	}
}

/*
 * Nothing of one run reaches the next: each engine clears what a run may
 * have written into the stack -- through r10 in any frame, through a
 * computed pointer, through a helper's pointer, by an atomic operation --
 * whether the run exits, faults or runs out of budget, and a program that
 * then reads all 4 KiB finds zeros.
 */
static void test_stack_cleared(void **state)
{
	static const char reader[] =
		"mov %r0, 0\nmov %r2, %r10\nsub %r2, 4096\nmov %r3, 512\n"
		"loop:\nldxdw %r4, [%r2]\nor %r0, %r4\nadd %r2, 8\nsub %r3, 1\njne %r3, 0, loop\n"
		"exit\n";
	static const struct {
		const char *text;
		uint64_t budget;
	} writers[] = {
		{ "stdw [%r10-8], -1\nstb [%r10-512], 1\nmov %r0, 0\nexit\n", 100 },
		{ "mov %r2, %r10\nsub %r2, 3000\nstdw [%r2], -1\nmov %r0, 0\nexit\n", 100 },
		{ "stdw [%r10-4096], -1\nmov %r0, 0\nexit\n", 100 },
		{ "call local f\nmov %r0, 0\nexit\nf:\ncall local g\nexit\n"
		  "g:\nstdw [%r10-512], -1\nstdw [%r10-8], -1\nmov %r0, 0\nexit\n", 100 },
		{ "mov %r1, %r10\nsub %r1, 4000\nmov %r2, 64\ncall 19\nmov %r0, 0\nexit\n", 100 },
		{ "mov %r2, %r10\nsub %r2, 2048\nmov %r3, -1\nlock add [%r2], %r3\nmov %r0, 0\nexit\n",
		  100 },
		{ "stdw [%r10-16], -1\nmov %r2, %r10\nsub %r2, 1000\nstdw [%r2], -1\n"
		  "ldxb %r0, [%r1+4096]\nexit\n", 100 },
		{ "stdw [%r10-24], -1\nmov %r2, %r10\nsub %r2, 1500\nstdw [%r2], -1\n"
		  "loop:\nja loop\n", 1000 },
		{ "call local f\nmov %r0, 0\nexit\nf:\nstdw [%r10-8], -1\nmov %r1, %r10\n"
		  "sub %r1, 600\nstdw [%r1], -1\nloop:\nja loop\n", 7 },
	};
	struct fixture *f = *state;
	struct world *w = &f->a;
	struct arf_mc_result res;
	struct arf_mc_prog *rp = load_text(f, reader);

	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		struct arf_mc_prog *wp = load_text(f, writers[i].text);

		for (int we = 0; we < 2; we++)
			for (int re = 0; re < 2; re++) {
				world_fill(w, i);
				if (we)
					arf_mc_run(w->vm, wp, w->ctx, sizeof(w->ctx), writers[i].budget, &res);
				else
					arf_mc_run_interp(w->vm, wp, w->ctx, sizeof(w->ctx), writers[i].budget,
							  &res);
				int rc = re ? arf_mc_run(w->vm, rp, NULL, 0, 100000, &res)
					    : arf_mc_run_interp(w->vm, rp, NULL, 0, 100000, &res);

				assert_int_equal(rc, 0);
				if (res.r0)
					fail_msg("writer %zu (%s), reader (%s): the stack holds 0x%llx", i,
						 we ? "JIT" : "interpreter", re ? "JIT" : "interpreter",
						 (unsigned long long)res.r0);
			}
		arf_mc_prog_destroy(wp);
	}
	arf_mc_prog_destroy(rp);
}

/* A helper that unwinds from inside local calls ends the whole run. */
static void test_unwind_deep(void **state)
{
	static const char text[] =
		"call local f\n"
		"mov %r0, 1\n"
		"exit\n"
		"f:\n"
		"call local g\n"
		"mov %r0, 2\n"
		"exit\n"
		"g:\n"
		"mov %r1, 9\n"
		"call 18\n"
		"mov %r0, 3\n"
		"exit\n";
	struct fixture *f = *state;
	struct outcome o;
	struct arf_mc_prog *p = load_text(f, text);

	differ(&f->a, &f->b, p, 0, 1000, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.res.r0, 16);
	assert_int_equal(o.res.insns, 4);
	arf_mc_prog_destroy(p);
}

/* A runaway loop in native code stops at the wall-clock deadline. */
static void test_deadline(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_vm *vm = f->a.vm;
	struct arf_mc_result res;
	struct timespec t0, t1;
	struct arf_mc_prog *p = load_text(f, "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\n");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	arf_mc_vm_set_deadline(vm, (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec +
					     50000000u);
	assert_int_equal(arf_mc_run(vm, p, NULL, 0, UINT64_C(1) << 50, &res), ARF_EBUDGET);
	arf_mc_vm_set_deadline(vm, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_non_null(strstr(res.msg, "wall-clock limit reached"));
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

	print_message("stopped after %.3f s, %llu instructions: %s\n", s,
		      (unsigned long long)res.insns, res.msg);
	assert_true(s >= 0.05 && s < 5);
	assert_true(res.insns > 0);
	arf_mc_prog_destroy(p);
}

/* The code's mapping is readable and executable, never writable. */
static void test_wx(void **state)
{
	char line[512];
	size_t len = 0;
	struct arf_mc_prog *p = load_text(*state, "mov %r0, 42\nexit\n");
	const void *native = arf_mc_prog_jit_code(p, &len);
	FILE *maps = fopen("/proc/self/maps", "r");
	int found = 0;

	assert_non_null(native);
	assert_true(len > 0);
	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
			continue;
		if ((uintptr_t)native >= lo && (uintptr_t)native < hi) {
			found = 1;
			if (strncmp(perms, "r-x", 3))
				fail_msg("native code mapped %s: %s", perms, line);
		}
	}
	fclose(maps);
	assert_true(found);
	arf_mc_prog_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_every_budget),
		cmocka_unit_test(test_unwind_deep),
		cmocka_unit_test(test_region_added_during_run),
		cmocka_unit_test(test_stack_cleared),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_wx),
		cmocka_unit_test(test_random_programs),
	};

	return cmocka_run_group_tests_name("mc-jit", tests, setup, teardown);
}
