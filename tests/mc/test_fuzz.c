/* SPDX-License-Identifier: MIT */
/*
 * Random programs, deterministic: many small programs made of real opcodes
 * with random fields go through the verifier; each one it accepts is run
 * with a small budget (under the sanitizers in build-mc-asan, any stray
 * access shows) and must end in one of the documented outcomes; each one
 * the disassembler can write must assemble back to the same bytes.
 */
#include "mc_test.h"
#include "randprog.h"

#define ROUNDS 60000 /* MC_FUZZ_ROUNDS in the environment asks for more */

static void test_random_programs(void **state)
{
	struct arf_mc_helpers *h = NULL;
	struct arf_mc_vm *vm = NULL;
	unsigned accepted = 0, ran_to_exit = 0;
	uint8_t out[32];
	const char *env = getenv("MC_FUZZ_ROUNDS");
	unsigned rounds = env ? (unsigned)strtoul(env, NULL, 10) : ROUNDS;

	(void)state;
	assert_int_equal(arf_mc_helpers_create(&h), 0);
	assert_int_equal(arf_mc_helpers_add_std(h), 0);
	assert_int_equal(arf_mc_vm_create(h, &vm), 0);
	arf_mc_vm_set_output(vm, out, sizeof(out));
	for (unsigned round = 0; round < rounds; round++) {
		struct arf_mc_insn code[MC_RAND_MAX], *again = NULL;
		struct arf_mc_prog *p = NULL;
		struct arf_mc_result res;
		uint8_t ctx[64];
		char err[256], *text = NULL;
		size_t n = 0, m = 0;
		int rc;

		n = mc_rand_program(code);

		if (arf_mc_disasm(code, n, &text, err, sizeof(err)) == 0) {
			assert_int_equal(arf_mc_asm(text, &again, &m, err, sizeof(err)), 0);
			assert_int_equal(m, n);
			assert_memory_equal(again, code, n * sizeof(*code));
			free(again);
			free(text);
		}
		rc = arf_mc_prog_load(h, code, n * sizeof(*code), NULL, 0, &p, err, sizeof(err));
		if (rc) {
			assert_int_equal(rc, ARF_EVERIFY);
			assert_true(strlen(err) > 0);
			continue;
		}
		accepted++;
		for (size_t i = 0; i < sizeof(ctx); i++)
			ctx[i] = (uint8_t)next();
		rc = arf_mc_run(vm, p, ctx, sizeof(ctx), 2000, &res);
		if (rc == 0)
			ran_to_exit++;
		else if (rc != ARF_EBUDGET && rc != ARF_EFAULT && rc != ARF_EOUTPUT && rc != -ENOSYS)
			fail_msg("run returned %d: %s", rc, res.msg);
		else
			assert_true(strlen(res.msg) > 0);
		arf_mc_prog_destroy(p);
	}
	print_message("%u of %u random programs verified, %u ran to exit\n", accepted, rounds,
		      ran_to_exit);
	assert_true(accepted > rounds / 50);
	assert_true(ran_to_exit > accepted / 10);
	arf_mc_vm_destroy(vm);
	arf_mc_helpers_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_programs),
	};

	return cmocka_run_group_tests_name("mc-fuzz", tests, NULL, NULL);
}
