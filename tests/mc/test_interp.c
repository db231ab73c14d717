/* SPDX-License-Identifier: MIT */
/*
 * The interpreter's guarantees, one test each: the budget stops an endless
 * loop; loads and stores outside the regions fault with the instruction's
 * index and the address; read-only regions (embedder's, program data) refuse
 * stores; local calls keep r6..r9; helpers get checked pointers, can unwind
 * and can fail the run; the output limit holds; nothing of one run reaches
 * the next.
 */
#include <time.h>

#include "mc_test.h"

#define BUDGET 100000

struct fixture {
	struct arf_mc_helpers *h;
	struct arf_mc_vm *vm;
	uint8_t out[64];
};

static int h_fail(struct arf_mc_call *c, uint64_t *ret)
{
	(void)ret;
	c->why = "refused on purpose";
	return -EPERM;
}

static int h_stop(struct arf_mc_call *c, uint64_t *ret)
{
	*ret = c->arg[0] + 1;
	c->unwind = 1;
	return 0;
}

static int h_fill(struct arf_mc_call *c, uint64_t *ret)
{
	memset(c->ptr[0], 0xab, c->arg[1]);
	*ret = c->arg[1] + (uint64_t)(uintptr_t)c->ctx + (c->user ? 1000 : 0);
	return 0;
}

static int setup(void **state)
{
	static const struct arf_mc_helper_def defs[] = {
		{ 16, "fail", { 0 }, h_fail, NULL },
		{ 17, "stop", { ARF_MC_ARG_ANY }, h_stop, NULL },
		{ 18, "fill", { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE }, h_fill, (void *)(uintptr_t)7 },
	};
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f || arf_mc_helpers_create(&f->h) || arf_mc_helpers_add_std(f->h))
		return -1;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (arf_mc_helpers_add(f->h, &defs[i], NULL, 0))
			return -1;
	if (arf_mc_vm_create(f->h, &f->vm))
		return -1;
	arf_mc_vm_set_output(f->vm, f->out, sizeof(f->out));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	arf_mc_vm_destroy(f->vm);
	arf_mc_helpers_destroy(f->h);
	free(f);
	return 0;
}

/* Loads text (which must verify) and runs it on ctx. */
static int run(struct fixture *f, const char *text, void *ctx, size_t len, uint64_t budget,
	       struct arf_mc_result *res)
{
	struct arf_mc_prog *p = NULL;
	char err[256] = "";
	int rc;

	if (mc_test_load(f->h, text, &p, err, sizeof(err)))
		fail_msg("verifier: %s\n--\n%s", err, text);
	rc = arf_mc_run(f->vm, p, ctx, len, budget, res);
	arf_mc_prog_destroy(p);
	return rc;
}

static void assert_msg(const struct arf_mc_result *res, const char *part)
{
	if (!strstr(res->msg, part))
		fail_msg("message '%s' lacks '%s'", res->msg, part);
}

static void test_budget(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;

	assert_int_equal(run(f, "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\nexit", NULL, 0, BUDGET, &res),
			 ARF_EBUDGET);
	assert_int_equal(res.insns, BUDGET);
	assert_msg(&res, "budget of 100000 exhausted");
	/* Exactly the budget is enough; one less is not. */
	assert_int_equal(run(f, "mov %r0, 1\nadd %r0, 2\nexit", NULL, 0, 3, &res), 0);
	assert_int_equal(res.r0, 3);
	assert_int_equal(res.insns, 3);
	assert_int_equal(run(f, "mov %r0, 1\nadd %r0, 2\nexit", NULL, 0, 2, &res), ARF_EBUDGET);
	assert_int_equal(res.pc, 2);
}

/* A wall-clock deadline stops a loop whose instruction budget never would,
 * and a run that finishes in time is untouched by it (the budget is then
 * counted across the slices exactly). */
static void test_deadline(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t now = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
	arf_mc_vm_set_deadline(f->vm, now + 50u * 1000000u);
	assert_int_equal(run(f, "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\nexit", NULL, 0,
			     UINT64_C(1) << 50, &res), ARF_EBUDGET);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_msg(&res, "wall-clock limit reached");
	assert_true(res.insns > 0 && res.insns < (UINT64_C(1) << 50));
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	/* in time: exact counts, and the budget still holds across slices */
	arf_mc_vm_set_deadline(f->vm, now + UINT64_C(3600) * 1000000000u);
	assert_int_equal(run(f, "mov %r0, 1\nadd %r0, 2\nexit", NULL, 0, 3, &res), 0);
	assert_int_equal(res.insns, 3);
	assert_int_equal(run(f, "mov %r0, 0\nloop:\nadd %r0, 1\nja loop\nexit", NULL, 0, 200000,
			     &res), ARF_EBUDGET);
	assert_int_equal(res.insns, 200000);
	arf_mc_vm_set_deadline(f->vm, 0);
}

static void test_load_out_of_bounds(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	uint8_t mem[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	assert_int_equal(run(f, "ldxw %r0, [%r1+4]\nexit", mem, sizeof(mem), BUDGET, &res), 0);
	assert_int_equal(res.r0, 0x08070605);
	assert_int_equal(run(f, "mov %r0, 0\nldxw %r0, [%r1+5]\nexit", mem, sizeof(mem), BUDGET, &res),
			 ARF_EFAULT);
	assert_int_equal(res.pc, 1);
	assert_msg(&res, "instruction 1: load of 4 bytes at 0x2000000000005");
	assert_msg(&res, "out of bounds of the context");
	/* Below the start: the address wraps into the stack's tag, still out. */
	assert_int_equal(run(f, "ldxb %r0, [%r1-1]\nexit", mem, sizeof(mem), BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "instruction 0: load of 1 bytes");
	/* No context: r1 is 0, the null region. */
	assert_int_equal(run(f, "ldxb %r0, [%r1]\nexit", NULL, 0, BUDGET, &res), ARF_EFAULT);
	assert_msg(&res, "null region");
	/* Offsets at the end of the range: the check must not overflow. */
	assert_int_equal(run(f, "lddw %r1, 0x2fffffffffffc\nldxdw %r0, [%r1]\nexit", mem,
			     sizeof(mem), BUDGET, &res),
			 ARF_EFAULT);
	assert_int_equal(res.pc, 2);
	assert_msg(&res, "out of bounds of the context (8 bytes)");
	assert_int_equal(run(f, "lddw %r1, 0xfffffffffffffff8\nldxdw %r0, [%r1+4]\nexit", mem,
			     sizeof(mem), BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "at 0xfffffffffffffffc: no such region");
	/* A sum that wraps past 2^64 lands in the null region. */
	assert_int_equal(run(f, "lddw %r1, 0xffffffffffffffff\nldxb %r0, [%r1+1]\nexit", mem,
			     sizeof(mem), BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "null region");
	/* Just past the stack's top. */
	assert_int_equal(run(f, "ldxdw %r0, [%r10]\nexit", NULL, 0, BUDGET, &res), ARF_EFAULT);
	assert_msg(&res, "out of bounds of the stack");
}

static void test_store_out_of_bounds(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	uint8_t mem[8] = { 0 };

	assert_int_equal(run(f, "stdw [%r1], 0x1234\nldxdw %r0, [%r1]\nexit", mem, sizeof(mem),
			     BUDGET, &res), 0);
	assert_int_equal(res.r0, 0x1234);
	assert_int_equal(run(f, "mov %r0, 0\nstxw [%r1+6], %r0\nexit", mem, sizeof(mem), BUDGET,
			     &res),
			 ARF_EFAULT);
	assert_int_equal(res.pc, 1);
	assert_msg(&res, "instruction 1: store of 4 bytes at 0x2000000000006");
	assert_int_equal(run(f, "mov %r0, 0\nstb [%r10+0], 1\nexit", NULL, 0, BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "instruction 1: store of 1 bytes");
	/* Atomics are stores too. */
	assert_int_equal(run(f, "mov %r0, 1\nlock add [%r1+4], %r0\nexit", mem, sizeof(mem), BUDGET,
			     &res),
			 ARF_EFAULT);
	assert_int_equal(res.pc, 1);
	/* and must be aligned. */
	assert_int_equal(run(f, "mov %r0, 1\nlock add32 [%r10-6], %r0\nexit", NULL, 0, BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "misaligned");
}

static void test_read_only_region(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	uint64_t ro[2] = { 0x1122334455667788ull, 42 }, rw[1] = { 0 }, ro_addr, rw_addr;
	uint64_t ctx[2];

	assert_int_equal(arf_mc_vm_add_region(f->vm, ro, sizeof(ro), 0, &ro_addr), 0);
	assert_int_equal(arf_mc_vm_add_region(f->vm, rw, sizeof(rw), ARF_MC_REGION_WRITE, &rw_addr),
			 0);
	assert_int_equal(ro_addr, ARF_MC_ADDR(ARF_MC_REGION_USER, 0));
	assert_int_equal(rw_addr, ARF_MC_ADDR(ARF_MC_REGION_USER + 1, 0));
	ctx[0] = ro_addr;
	ctx[1] = rw_addr;
	/* Reading the region works, through an address the context carries. */
	assert_int_equal(run(f, "ldxdw %r2, [%r1]\nldxdw %r0, [%r2+8]\nexit", ctx, sizeof(ctx),
			     BUDGET, &res), 0);
	assert_int_equal(res.r0, 42);
	/* Storing is refused, naming the instruction and the region. */
	assert_int_equal(run(f, "ldxdw %r2, [%r1]\nmov %r0, 0\nstxdw [%r2+8], %r0\nexit", ctx,
			     sizeof(ctx), BUDGET, &res),
			 ARF_EFAULT);
	assert_int_equal(res.pc, 2);
	assert_msg(&res, "instruction 2: store of 8 bytes at 0x5000000000008: the embedder region is read-only");
	assert_int_equal(ro[1], 42);
	assert_int_equal(run(f, "ldxdw %r2, [%r1]\nmov %r0, 0\nlock xchg [%r2], %r0\nexit", ctx,
			     sizeof(ctx), BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "read-only");
	/* A helper may not write it either. */
	assert_int_equal(run(f, "ldxdw %r1, [%r1]\nmov %r2, 8\ncall 18\nexit", ctx, sizeof(ctx),
			     BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "helper fill: argument 1 (8 bytes at 0x5000000000000) is not writable memory");
	/* The writable one takes stores. */
	assert_int_equal(run(f, "ldxdw %r2, [%r1+8]\nmov %r0, 9\nstxdw [%r2], %r0\nexit", ctx,
			     sizeof(ctx), BUDGET, &res), 0);
	assert_int_equal(rw[0], 9);
	arf_mc_vm_clear_regions(f->vm);
	assert_int_equal(run(f, "ldxdw %r2, [%r1]\nldxdw %r0, [%r2]\nexit", ctx, sizeof(ctx), BUDGET,
			     &res),
			 ARF_EFAULT);
	for (unsigned i = 0; i < ARF_MC_MAX_USER_REGIONS; i++)
		assert_int_equal(arf_mc_vm_add_region(f->vm, ro, sizeof(ro), 0, NULL), 0);
	assert_int_equal(arf_mc_vm_add_region(f->vm, ro, sizeof(ro), 0, NULL), -ENOSPC);
	assert_int_equal(arf_mc_vm_add_region(f->vm, NULL, 8, 0, NULL), -EINVAL);
	arf_mc_vm_clear_regions(f->vm);
}

static void test_rodata_read_only(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	struct arf_mc_prog *p = NULL;
	struct arf_mc_insn *code;
	const char data[] = "rodata!";
	char err[256], text[256];
	size_t n;

	snprintf(text, sizeof(text), "lddw %%r1, 0x%llx\nldxb %%r0, [%%r1+6]\nstb [%%r1], 0\nexit",
		 (unsigned long long)ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
	code = mc_test_asm(text, &n);
	assert_int_equal(arf_mc_prog_load(f->h, code, n * sizeof(*code), data, sizeof(data), &p, err,
					  sizeof(err)), 0);
	assert_int_equal(arf_mc_run(f->vm, p, NULL, 0, BUDGET, &res), ARF_EFAULT);
	assert_msg(&res, "instruction 3: store of 1 bytes at 0x4000000000000: the program data is read-only");
	arf_mc_prog_destroy(p);
	free(code);
}

static void test_r10_write_rejected(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_prog *p = NULL;
	char err[256];

	assert_int_equal(mc_test_load(f->h, "mov %r0, 0\nsub %r10, 16\nexit", &p, err, sizeof(err)),
			 ARF_EVERIFY);
	assert_string_equal(err, "instruction 1: write to r10 (the frame pointer is read-only)");
	assert_null(p);
}

static void test_local_calls_keep_r6_r9(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	const char *text =
		"mov %r6, 6\nmov %r7, 7\nmov %r8, 8\nmov %r9, 9\n"
		"stdw [%r10-8], 100\n"
		"mov %r1, 1\n"
		"call local f\n"
		/* r0 = f's result; r6..r9 and the caller's frame untouched */
		"jne %r6, 6, bad\njne %r7, 7, bad\njne %r8, 8, bad\njne %r9, 9, bad\n"
		"ldxdw %r1, [%r10-8]\njne %r1, 100, bad\n"
		"exit\n"
		"bad:\nmov %r0, -1\nexit\n"
		"f:\n"
		"mov %r6, 60\nmov %r7, 70\nmov %r8, 80\nmov %r9, 90\n"
		"stdw [%r10-8], 200\n"          /* its own frame */
		"call local g\n"
		"add %r0, %r6\n"                /* 1 + 60 */
		"exit\n"
		"g:\n"
		"mov %r6, 600\nmov %r0, %r1\n"
		"exit\n";

	assert_int_equal(run(f, text, NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 61);
}

static void test_frames_are_512_bytes(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	/* A callee's r10 is 512 below its caller's: it reaches the caller's frame. */
	const char *text =
		"stdw [%r10-8], 77\n"
		"call local f\nexit\n"
		"f:\nldxdw %r0, [%r10+504]\nexit\n";

	assert_int_equal(run(f, text, NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 77);
}

static void test_helpers(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;
	uint8_t mem[4] = { 0 };
	int user;

	/* unwind: 0 stops the program at once with r0 = 0, inside a local call too */
	assert_int_equal(run(f, "call local f\nmov %r0, 5\nexit\nf:\nmov %r1, 0\ncall 5\nmov %r0, 9\nexit",
			     NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 0);
	assert_int_equal(run(f, "mov %r1, 3\ncall 5\nadd %r0, 1\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 4);
	/* any helper may unwind */
	assert_int_equal(run(f, "mov %r1, 41\ncall 17\nmov %r0, 0\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 42);
	/* a failing helper fails the run with its code and says why */
	assert_int_equal(run(f, "mov %r0, 0\ncall 16\nexit", NULL, 0, BUDGET, &res), -EPERM);
	assert_msg(&res, "instruction 1: helper fail failed: refused on purpose");
	/* pointer arguments arrive checked and translated; ctx and user reach it */
	arf_mc_vm_set_user(f->vm, &user);
	assert_int_equal(run(f, "mov %r2, 4\ncall 18\nexit", mem, sizeof(mem), BUDGET, &res), 0);
	arf_mc_vm_set_user(f->vm, NULL);
	assert_int_equal(res.r0, 4 + 7 + 1000);
	assert_int_equal(mem[3], 0xab);
	assert_int_equal(run(f, "mov %r2, 5\ncall 18\nexit", mem, sizeof(mem), BUDGET, &res),
			 ARF_EFAULT);
	assert_msg(&res, "instruction 1: helper fill: argument 1");
	/* call %rN with an id nobody registered */
	assert_int_equal(run(f, "mov %r0, 0\nmov %r3, 99\ncall %r3\nexit", NULL, 0, BUDGET, &res),
			 -ENOSYS);
	assert_msg(&res, "instruction 2: call %r3: unknown helper 99");
	/* memcmp and memmem */
	assert_int_equal(run(f, "stw [%r10-8], 0x64636261\nstw [%r10-4], 0x63\n"
			     "mov %r1, %r10\nadd %r1, -8\nmov %r2, 5\nmov %r3, %r10\nadd %r3, -4\nmov %r4, 1\n"
			     "call 3\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 2);
	assert_int_equal(run(f, "stw [%r10-8], 0x64636261\nmov %r1, %r10\nadd %r1, -8\n"
			     "mov %r2, %r10\nadd %r2, -7\nmov %r3, 2\ncall 2\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, (uint64_t)-1);
}

static void test_output(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;

	memset(f->out, 0, sizeof(f->out));
	assert_int_equal(run(f, "lddw %r3, 0x6f6c6c6568\nstxdw [%r10-8], %r3\nmov %r1, %r10\nadd %r1, -8\n"
			     "mov %r2, 5\ncall 1\nmov %r1, %r10\nadd %r1, -8\nmov %r2, 2\ncall 1\n"
			     "mov %r0, 0\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.out_len, 7);
	assert_memory_equal(f->out, "hellohe", 7);
	/* past the limit of 64 bytes */
	assert_int_equal(run(f, "mov %r6, 0\nloop:\nmov %r1, %r10\nadd %r1, -16\nmov %r2, 16\ncall 1\n"
			     "add %r6, 1\njlt %r6, 5, loop\nmov %r0, 0\nexit", NULL, 0, BUDGET, &res),
			 ARF_EOUTPUT);
	assert_int_equal(res.pc, 4);
	assert_int_equal(res.out_len, 64);
	assert_msg(&res, "output limit of 64 bytes exceeded");
	/* the output region can be read and written directly too */
	assert_int_equal(run(f, "lddw %r1, 0x3000000000000\nstb [%r1+63], 7\nldxb %r0, [%r1+63]\n"
			     "stb [%r1+64], 7\nexit", NULL, 0, BUDGET, &res),
			 ARF_EFAULT);
	assert_int_equal(f->out[63], 7);
}

static void test_runs_do_not_share_state(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_result res;

	assert_int_equal(run(f, "stdw [%r10-8], 1234\nmov %r0, 0\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(run(f, "ldxdw %r0, [%r10-8]\nexit", NULL, 0, BUDGET, &res), 0);
	assert_int_equal(res.r0, 0);
}

static void test_other_helper_table(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_helpers *other = NULL;
	struct arf_mc_prog *p = NULL;
	struct arf_mc_result res;
	char err[128];

	assert_int_equal(arf_mc_helpers_create(&other), 0);
	assert_int_equal(mc_test_load(other, "mov %r0, 0\nexit", &p, err, sizeof(err)), 0);
	assert_int_equal(arf_mc_run(f->vm, p, NULL, 0, BUDGET, &res), -EINVAL);
	arf_mc_prog_destroy(p);
	arf_mc_helpers_destroy(other);
}

static void test_helper_registry(void **state)
{
	struct fixture *f = *state;
	struct arf_mc_helper_def bad = { 300, "big", { 0 }, h_fail, NULL };
	char err[128];

	assert_int_equal(arf_mc_helpers_add(f->h, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "helper big: id 300 out of range (0..255)");
	bad.id = 5;
	assert_int_equal(arf_mc_helpers_add(f->h, &bad, err, sizeof(err)), -EEXIST);
	bad.id = 40;
	bad.args[0] = ARF_MC_ARG_PTR_RO;
	assert_int_equal(arf_mc_helpers_add(f->h, &bad, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "helper big: pointer argument without a size");
	assert_string_equal(arf_mc_helper_name(f->h, 5), "unwind");
	assert_null(arf_mc_helper_name(f->h, 40));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_load_out_of_bounds),
		cmocka_unit_test(test_store_out_of_bounds),
		cmocka_unit_test(test_read_only_region),
		cmocka_unit_test(test_rodata_read_only),
		cmocka_unit_test(test_r10_write_rejected),
		cmocka_unit_test(test_local_calls_keep_r6_r9),
		cmocka_unit_test(test_frames_are_512_bytes),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_output),
		cmocka_unit_test(test_runs_do_not_share_state),
		cmocka_unit_test(test_other_helper_table),
		cmocka_unit_test(test_helper_registry),
	};

	return cmocka_run_group_tests_name("mc-interp", tests, setup, teardown);
}
