/* SPDX-License-Identifier: MIT */
/*
 * The ELF loader on a real object: elf_prog.c, compiled by clang for the
 * bpf target when the tests are built, whose path is argv[1].  It is
 * loaded, verified and run -- in the interpreter and as the JIT's native
 * code, which must agree -- its strings, pointer table and globals come
 * through the relocations, its local calls work, its output arrives, and
 * its stack is clean for the next run.
 * Without an object (no clang at build time) the test is skipped (77).
 */
#include "mc_test.h"

static const char *obj_path;
static uint8_t *obj;
static size_t obj_len;
static struct arf_mc_helpers *helpers;

static int setup(void **state)
{
	FILE *f = fopen(obj_path, "rb");
	long len;

	(void)state;
	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		goto fail;
	obj_len = (size_t)len;
	obj = malloc(obj_len);
	if (!obj || fread(obj, 1, obj_len, f) != obj_len)
		goto fail;
	fclose(f);
	if (arf_mc_helpers_create(&helpers) || arf_mc_helpers_add_std(helpers))
		return -1;
	return 0;
fail:
	fclose(f);
	return -1;
}

static int teardown(void **state)
{
	(void)state;
	arf_mc_helpers_destroy(helpers);
	free(obj);
	return 0;
}

/* Runs p in the interpreter or natively; then checks that the whole stack
 * is zero again, as the next run (any client's) must find it. */
static int run_in(struct arf_mc_vm *vm, const struct arf_mc_prog *p, int native, void *ctx,
		  size_t len, struct arf_mc_result *res)
{
	static const char reader[] =
		"mov %r0, 0\nmov %r2, %r10\nsub %r2, 4096\nmov %r3, 512\n"
		"loop:\nldxdw %r4, [%r2]\nor %r0, %r4\nadd %r2, 8\nsub %r3, 1\njne %r3, 0, loop\n"
		"exit\n";
	struct arf_mc_prog *rp = NULL;
	struct arf_mc_result rr;
	char err[256];
	int rc = native ? arf_mc_run(vm, p, ctx, len, 100000, res)
			: arf_mc_run_interp(vm, p, ctx, len, 100000, res);

	assert_int_equal(mc_test_load(helpers, reader, &rp, err, sizeof(err)), 0);
	assert_int_equal(arf_mc_run(vm, rp, NULL, 0, 100000, &rr), 0);
	assert_int_equal(rr.r0, 0);
	arf_mc_prog_destroy(rp);
	return rc;
}

static void test_load_and_run(void **state)
{
	(void)state;
	for (int native = 0; native < 2; native++) {
		struct arf_mc_prog *p = NULL;
		struct arf_mc_vm *vm = NULL;
		struct arf_mc_result res;
		uint8_t ctx[] = { 1, 'l', 'l', 'x', 'l' };
		char err[256] = "", out[128];
		const char *ro;
		size_t ro_len;

		if (arf_mc_prog_load_elf(helpers, obj, obj_len, NULL, &p, err, sizeof(err)))
			fail_msg("load: %s", err);
		if (native && arf_mc_prog_jit(p, err, sizeof(err)))
			fail_msg("JIT: %s", err);
		ro = arf_mc_prog_rodata(p, &ro_len);
		assert_non_null(ro);
		assert_non_null(memmem(ro, ro_len, "hello from the other side", 25));
		assert_int_equal(arf_mc_vm_create(helpers, &vm), 0);
		arf_mc_vm_set_output(vm, out, sizeof(out));
		assert_int_equal(run_in(vm, p, native, ctx, sizeof(ctx), &res), 0);
		/* three 'l' in ctx, three 'o' in the greeting */
		assert_int_equal(res.r0, 3003);
		assert_int_equal(res.out_len, 30);
		assert_memory_equal(out, "hello from the other sidebravo", 30);
		/* Another word through the pointer table; a short context takes the early return. */
		ctx[0] = 2;
		assert_int_equal(run_in(vm, p, native, ctx, sizeof(ctx), &res), 0);
		assert_memory_equal(out + 25, "charlie", 7);
		assert_int_equal(run_in(vm, p, native, ctx, 1, &res), 0);
		assert_int_equal(res.r0, 0xffffffffu);
		/* The output limit holds for ELF programs too. */
		arf_mc_vm_set_output(vm, out, 10);
		assert_int_equal(run_in(vm, p, native, ctx, sizeof(ctx), &res), ARF_EOUTPUT);
		arf_mc_vm_destroy(vm);
		arf_mc_prog_destroy(p);
	}
}

static void test_entry_by_name(void **state)
{
	struct arf_mc_prog *p = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(arf_mc_prog_load_elf(helpers, obj, obj_len, "entry", &p, err, sizeof(err)),
			 0);
	arf_mc_prog_destroy(p);
	p = NULL;
	assert_int_equal(arf_mc_prog_load_elf(helpers, obj, obj_len, "nosuch", &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "no function or section named nosuch");
	/* count() as the entry reads r3, which nobody set: the verifier says so. */
	assert_int_equal(arf_mc_prog_load_elf(helpers, obj, obj_len, "count", &p, err, sizeof(err)),
			 ARF_EVERIFY);
	assert_non_null(strstr(err, "r3 is read before it is written"));
	assert_null(p);
}

static void test_disassembles_and_round_trips(void **state)
{
	struct arf_mc_image img;
	struct arf_mc_insn *again = NULL;
	char err[256] = "", *text = NULL;
	size_t n = 0;

	(void)state;
	if (arf_mc_elf_read(obj, obj_len, NULL, &img, err, sizeof(err)))
		fail_msg("read: %s", err);
	assert_int_equal(arf_mc_disasm(img.insns, img.n, &text, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "call local fn_"));
	assert_int_equal(arf_mc_asm(text, &again, &n, err, sizeof(err)), 0);
	assert_int_equal(n, img.n);
	assert_memory_equal(again, img.insns, n * sizeof(*again));
	free(again);
	free(text);
	arf_mc_image_release(&img);
}

static void test_bad_objects(void **state)
{
	struct arf_mc_prog *p = NULL;
	char err[256] = "";
	uint8_t *copy;

	(void)state;
	assert_int_equal(arf_mc_prog_load_elf(helpers, "not elf", 7, NULL, &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "not an ELF object");
	/* Truncated: the section table is gone. */
	assert_int_equal(arf_mc_prog_load_elf(helpers, obj, 100, NULL, &p, err, sizeof(err)), -EINVAL);
	/* Another machine. */
	copy = malloc(obj_len);
	assert_non_null(copy);
	memcpy(copy, obj, obj_len);
	copy[18] = 62; /* e_machine = EM_X86_64 */
	assert_int_equal(arf_mc_prog_load_elf(helpers, copy, obj_len, NULL, &p, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "BPF"));
	copy[18] = obj[18];
	/* Every single-byte corruption is refused -- -EINVAL (a malformed
	 * object) or ARF_EVERIFY (code the verifier refuses), with a message
	 * and no program -- or loads a program that passed the verifier and
	 * therefore runs to an end, in the interpreter and natively, under a
	 * budget: a result, never a crash.  -ENOMEM is allowed for a corrupted
	 * size field. */
	struct arf_mc_vm *vm = NULL;
	size_t refused = 0, verify = 0, loaded = 0;
	uint8_t ctx[] = { 1, 'l', 'l', 'x', 'l' };
	char out[128];

	assert_int_equal(arf_mc_vm_create(helpers, &vm), 0);
	arf_mc_vm_set_output(vm, out, sizeof(out));
	for (size_t i = 0; i < obj_len; i++) {
		uint8_t saved = copy[i];
		struct arf_mc_result res;

		copy[i] ^= 0xff;
		err[0] = 0;
		p = NULL;
		int rc = arf_mc_prog_load_elf(helpers, copy, obj_len, NULL, &p, err, sizeof(err));
		if (rc == 0) {
			assert_non_null(p);
			loaded++;
			int r1 = arf_mc_run_interp(vm, p, ctx, sizeof(ctx), 100000, &res);
			if (arf_mc_prog_jit(p, err, sizeof(err)) == 0) {
				int r2 = arf_mc_run(vm, p, ctx, sizeof(ctx), 100000, &res);
				if (r1 != r2)
					fail_msg("corrupt byte %zu: interpreter %d, native %d", i, r1, r2);
			}
			arf_mc_prog_destroy(p);
		} else {
			if (rc != -EINVAL && rc != ARF_EVERIFY && rc != -ENOMEM)
				fail_msg("corrupt byte %zu: load returned %d (%s)", i, rc, err);
			if (!err[0] && rc != -ENOMEM)
				fail_msg("corrupt byte %zu: refused (%d) without a message", i, rc);
			assert_null(p);
			if (rc == ARF_EVERIFY)
				verify++;
			else
				refused++;
		}
		copy[i] = saved;
	}
	print_message("      %zu single-byte corruptions: %zu malformed, %zu refused by the verifier, "
		      "%zu loaded and ran to an end\n", obj_len, refused, verify, loaded);
	assert_int_equal(refused + verify + loaded, obj_len);
	assert_true(refused > 0 && verify + loaded > 0);
	arf_mc_vm_destroy(vm);
	free(copy);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_and_run),
		cmocka_unit_test(test_entry_by_name),
		cmocka_unit_test(test_disassembles_and_round_trips),
		cmocka_unit_test(test_bad_objects),
	};

	if (argc < 2) {
		printf("SKIP: no BPF object given (clang was not found at build time)\n");
		return 77;
	}
	obj_path = argv[1];
	return cmocka_run_group_tests_name("mc-elf", tests, setup, teardown);
}
