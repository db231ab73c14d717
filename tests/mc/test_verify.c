/* SPDX-License-Identifier: MIT */
/*
 * The verifier, table-driven: every reason it rejects a program for, each
 * with the message (instruction index and reason) it must give, and the
 * programs just inside the limits that it must accept.  A case is either
 * assembler text or raw instructions (for encodings the assembler cannot
 * write).
 */
#include "mc_test.h"

#define I(op, dst, src, off, imm) { (op), (dst), (src), (off), (imm) }
#define MAXRAW 4

struct vcase {
	const char *name;
	const char *text;                  /* assembler input, or NULL: raw */
	struct arf_mc_insn raw[MAXRAW];
	size_t nraw;
	const char *msg;                   /* expected message; NULL: accepted */
};

static const struct vcase cases[] = {
	/* structure */
	{ "empty", "", { { 0 } }, 0, "empty program" },
	{ "unknown opcode", NULL, { I(0xff, 0, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unknown opcode 0xff" },
	{ "legacy packet load", NULL, { I(0x20, 0, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unknown opcode 0x20" },
	{ "neg with a register", NULL, { I(0x8f, 0, 1, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unknown opcode 0x8f" },
	{ "sign-extending dw load", NULL, { I(0x99, 0, 1, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unknown opcode 0x99" },
	{ "bswap with X bit", NULL, { I(0xdf, 0, 0, 0, 16), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unknown opcode 0xdf" },

	/* unused fields */
	{ "add imm with src", NULL, { I(0x07, 0, 1, 0, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: immediate operation with a non-zero src field" },
	{ "add reg with imm", NULL, { I(0x0f, 0, 1, 0, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: register operation with a non-zero immediate" },
	{ "add with offset", NULL, { I(0x07, 0, 0, 1, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: arithmetic with a non-zero offset" },
	{ "exit with imm", NULL, { I(0x95, 0, 0, 0, 1) }, 1,
	  "instruction 0: exit with a non-zero immediate" },
	{ "exit with dst", NULL, { I(0x95, 1, 0, 0, 0) }, 1,
	  "instruction 0: exit with a non-zero register field" },
	{ "exit with offset", NULL, { I(0x95, 0, 0, 2, 0) }, 1,
	  "instruction 0: exit with a non-zero offset" },
	{ "call with dst", NULL, { I(0x85, 1, 0, 0, 5), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: call with a non-zero dst field" },
	{ "callx with imm", NULL, { I(0x8d, 1, 0, 0, 5), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: callx with a non-zero immediate" },
	{ "callx register", NULL, { I(0x8d, 11, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: bad register in callx" },
	{ "ja with a register", NULL, { I(0x05, 1, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: ja with a non-zero register field" },
	{ "jeq reg with imm", NULL, { I(0x1d, 0, 1, 0, 7), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: register comparison with a non-zero immediate" },
	{ "neg with src", NULL, { I(0x87, 0, 1, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: neg with a non-zero src field" },
	{ "neg with offset", NULL, { I(0x84, 0, 0, 1, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: neg with a non-zero offset" },
	{ "neg with imm", NULL, { I(0x87, 0, 0, 0, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: neg with a non-zero immediate" },
	{ "be with src", NULL, { I(0xdc, 0, 1, 0, 16), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: byte swap with a non-zero src field" },
	{ "bswap with offset", NULL, { I(0xd7, 0, 0, 1, 32), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: byte swap with a non-zero offset" },
	{ "call with offset", NULL, { I(0x85, 0, 0, 1, 5), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: call with a non-zero offset" },
	{ "call kind 2", NULL, { I(0x85, 0, 2, 0, 5), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unsupported call kind" },
	{ "callx with src", NULL, { I(0x8d, 1, 1, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: callx with a non-zero src field" },
	{ "ja with imm", NULL, { I(0x05, 0, 0, 0, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: ja with a non-zero immediate" },
	{ "ja32 with offset", NULL, { I(0x06, 0, 0, 1, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: ja32 with a non-zero offset" },
	{ "jeq imm with src", NULL, { I(0x15, 0, 1, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: immediate comparison with a non-zero src field" },
	{ "load with imm", NULL, { I(0x61, 0, 10, -4, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: load with a non-zero immediate" },
	{ "store imm with src", NULL, { I(0x62, 10, 1, -4, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: store of an immediate with a non-zero src field" },
	{ "stx with imm", NULL, { I(0x63, 10, 1, -4, 1), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: store with a non-zero immediate" },
	{ "byte swap width", NULL, { I(0xdc, 0, 0, 0, 8), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: byte swap width is not 16, 32 or 64" },
	{ "division offset", NULL, { I(0x3f, 0, 1, 2, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: division offset is not 0 (unsigned) or 1 (signed)" },
	{ "movsx32 in ALU32", NULL, { I(0xbc, 0, 1, 32, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: sign-extending move width" },
	{ "atomic on a byte", NULL, { I(0xd3, 10, 1, -8, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: atomic operation on 8 or 16 bits" },
	{ "unknown atomic op", NULL, { I(0xdb, 10, 1, -8, 0x10), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: unknown atomic operation" },

	/* registers */
	{ "bad dst register", NULL, { I(0xb7, 11, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: bad destination register" },
	{ "bad src register", NULL, { I(0xbf, 0, 12, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: bad source register" },
	{ "bad jump register", NULL, { I(0x1d, 15, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 2,
	  "instruction 0: bad destination register" },
	{ "mov to r10", "mov %r10, 0\nexit", { { 0 } }, 0,
	  "instruction 0: write to r10" },
	{ "add to r10", "mov %r0, 0\nadd %r10, 8\nexit", { { 0 } }, 0,
	  "instruction 1: write to r10" },
	{ "load into r10", "mov %r0, 0\nldxdw %r10, [%r1]\nexit", { { 0 } }, 0,
	  "instruction 1: write to r10" },
	{ "lddw into r10", "lddw %r10, 1\nexit", { { 0 } }, 0,
	  "instruction 0: write to r10" },
	{ "fetch into r10", "lock fetch add [%r1], %r10\nexit", { { 0 } }, 0,
	  "instruction 0: write to r10" },
	{ "r10 read is fine", "mov %r0, %r10\nexit", { { 0 } }, 0, NULL },

	/* lddw */
	{ "lddw cut off", NULL, { I(0x18, 0, 0, 0, 1) }, 1,
	  "instruction 0: lddw without its second half" },
	{ "lddw second half", NULL, { I(0x18, 0, 0, 0, 1), I(0x00, 1, 0, 0, 0), I(0x95, 0, 0, 0, 0) },
	  3, "instruction 0: second half of lddw is not zero" },
	{ "lddw offset", NULL, { I(0x18, 0, 0, 1, 1), I(0, 0, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 3,
	  "instruction 0: lddw with a non-zero offset" },
	{ "lddw src 1", NULL, { I(0x18, 0, 1, 0, 1), I(0, 0, 0, 0, 0), I(0x95, 0, 0, 0, 0) }, 3,
	  "instruction 0: unsupported lddw source" },

	/* control flow */
	{ "jump out of range", "mov %r0, 0\nja +5\nexit", { { 0 } }, 0,
	  "instruction 1: jump out of range" },
	{ "jump before start", "mov %r0, 0\nja -3\nexit", { { 0 } }, 0,
	  "instruction 1: jump out of range" },
	{ "ja32 out of range", "mov %r0, 0\nja32 +70000\nexit", { { 0 } }, 0,
	  "instruction 1: jump out of range" },
	{ "jump into lddw", "mov %r0, 0\njeq %r0, 0, +1\nlddw %r0, 1\nexit", { { 0 } }, 0,
	  "instruction 1: jump into the middle of an lddw" },
	{ "fall off the end", "mov %r0, 0", { { 0 } }, 0,
	  "instruction 0: falls off the end of the program" },
	{ "conditional at the end", "mov %r0, 0\njeq %r0, 0, -2", { { 0 } }, 0,
	  "instruction 1: falls off the end of the program" },
	{ "lddw at the end", "lddw %r0, 1", { { 0 } }, 0,
	  "instruction 0: falls off the end of the program" },
	{ "function falls off", "mov %r1, 1\ncall local f\nexit\nf:\nmov %r0, 1\ng:\nexit\n"
	  "mov %r0, 0\ncall local g\nexit", { { 0 } }, 0,
	  "instruction 3: falls off the end of its function" },
	{ "jump into another function", "mov %r0, 0\ncall local f\nja +1\nexit\nf:\nmov %r0, 1\nexit",
	  { { 0 } }, 0, "instruction 2: jump out of its function" },
	{ "exit not last", "mov %r0, 0\nja +1\nexit\nja -2", { { 0 } }, 0, NULL },

	/* calls */
	{ "unknown helper", "mov %r0, 0\ncall 99\nexit", { { 0 } }, 0,
	  "instruction 1: call to unknown helper 99" },
	{ "negative helper", "mov %r0, 0\ncall -1\nexit", { { 0 } }, 0,
	  "instruction 1: call to unknown helper -1" },
	{ "helper out of table", "mov %r0, 0\ncall 100000\nexit", { { 0 } }, 0,
	  "instruction 1: call to unknown helper 100000" },
	{ "known helper", "mov %r1, 1\ncall 5\nexit", { { 0 } }, 0, NULL },
	{ "local call out of range", "call local +5\nexit", { { 0 } }, 0,
	  "instruction 0: local call out of range" },
	{ "local call before start", "call local -2\nexit", { { 0 } }, 0,
	  "instruction 0: local call out of range" },
	{ "local call into lddw", "call local +1\nlddw %r0, 1\nexit", { { 0 } }, 0,
	  "instruction 0: local call into the middle of an lddw" },
	{ "recursion", "call local f\nexit\nf:\ncall local f\nexit", { { 0 } }, 0,
	  "instruction 2: recursive local call" },
	{ "mutual recursion", "call local f\nexit\nf:\ncall local g\nexit\ng:\ncall local f\nexit",
	  { { 0 } }, 0, "instruction 4: recursive local call" },
	{ "8 frames", "call local f1\nexit\nf1:\ncall local f2\nexit\nf2:\ncall local f3\nexit\n"
	  "f3:\ncall local f4\nexit\nf4:\ncall local f5\nexit\nf5:\ncall local f6\nexit\n"
	  "f6:\ncall local f7\nexit\nf7:\nmov %r0, 7\nexit", { { 0 } }, 0, NULL },
	{ "9 frames", "call local f1\nexit\nf1:\ncall local f2\nexit\nf2:\ncall local f3\nexit\n"
	  "f3:\ncall local f4\nexit\nf4:\ncall local f5\nexit\nf5:\ncall local f6\nexit\n"
	  "f6:\ncall local f7\nexit\nf7:\ncall local f8\nexit\nf8:\nmov %r0, 8\nexit", { { 0 } }, 0,
	  "local calls nest deeper than 8 frames" },

	/* registers read before they are written */
	{ "exit with r0 unset", "exit", { { 0 } }, 0,
	  "instruction 0: r0 is read before it is written" },
	{ "or into unset r0", "or %r0, %r10\nexit", { { 0 } }, 0,
	  "instruction 0: r0 is read before it is written" },
	{ "unset source", "mov %r0, %r3\nexit", { { 0 } }, 0,
	  "instruction 0: r3 is read before it is written" },
	{ "unset on one path", "mov %r0, 0\njeq %r1, 0, +1\nmov %r6, 1\nmov %r0, %r6\nexit",
	  { { 0 } }, 0, "instruction 3: r6 is read before it is written" },
	{ "clobbered by a helper", "mov %r1, 1\ncall 5\nmov %r0, %r1\nexit", { { 0 } }, 0,
	  "instruction 2: r1 is read before it is written" },
	{ "helper argument unset", "call 2\nexit", { { 0 } }, 0,
	  "instruction 0: r3 is read before it is written" },
	{ "r6 kept by a local call", "mov %r6, 3\ncall local f\nmov %r0, %r6\nexit\nf:\n"
	  "mov %r0, 0\nexit", { { 0 } }, 0, NULL },
	{ "callee's r6 unset", "mov %r6, 3\ncall local f\nexit\nf:\nmov %r0, %r6\nexit", { { 0 } }, 0,
	  "instruction 3: r6 is read before it is written" },
	{ "r1 and r2 set at entry", "mov %r0, %r1\nadd %r0, %r2\nexit", { { 0 } }, 0, NULL },
};

static struct arf_mc_helpers *helpers;

static int setup(void **state)
{
	(void)state;
	if (arf_mc_helpers_create(&helpers) || arf_mc_helpers_add_std(helpers))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	arf_mc_helpers_destroy(helpers);
	return 0;
}

static void check(const struct vcase *c)
{
	struct arf_mc_insn *code = NULL;
	struct arf_mc_prog *p = NULL;
	char err[256] = "";
	size_t n = 0;
	int rc;

	if (c->text) {
		code = mc_test_asm(c->text, &n);
	} else {
		n = c->nraw;
		code = malloc(sizeof(c->raw));
		assert_non_null(code);
		memcpy(code, c->raw, sizeof(c->raw));
	}
	rc = arf_mc_prog_load(helpers, code, n * sizeof(*code), NULL, 0, &p, err, sizeof(err));
	if (!c->msg) {
		if (rc)
			fail_msg("%s: rejected: %s", c->name, err);
	} else {
		if (rc != ARF_EVERIFY)
			fail_msg("%s: load returned %d (%s), expected ARF_EVERIFY", c->name, rc, err);
		if (!strstr(err, c->msg))
			fail_msg("%s: message '%s' lacks '%s'", c->name, err, c->msg);
		assert_null(p);
	}
	arf_mc_prog_destroy(p);
	free(code);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check(&cases[i]);
}

static void test_jmp32_exit_and_call(void **state)
{
	static const struct vcase c[] = {
		{ "exit in JMP32", NULL, { I(0xb7, 0, 0, 0, 0), I(0x96, 0, 0, 0, 0) }, 2,
		  "instruction 1: unknown opcode 0x96" },
		{ "call in JMP32", NULL, { I(0x86, 0, 0, 0, 5), I(0x95, 0, 0, 0, 0) }, 2,
		  "instruction 0: unknown opcode 0x86" },
	};

	(void)state;
	check(&c[0]);
	check(&c[1]);
}

static void test_too_long(void **state)
{
	size_t n = ARF_MC_MAX_INSNS + 1;
	struct arf_mc_insn *code = calloc(n, sizeof(*code));
	struct arf_mc_prog *p = NULL;
	char err[256] = "";

	(void)state;
	assert_non_null(code);
	for (size_t i = 0; i < n; i++)
		code[i] = (struct arf_mc_insn){ .opcode = 0xb7 };
	code[n - 1].opcode = 0x95;
	assert_int_equal(arf_mc_prog_load(helpers, code, n * sizeof(*code), NULL, 0, &p, err,
					  sizeof(err)),
			 ARF_EVERIFY);
	assert_non_null(strstr(err, "limit 65536"));
	/* One fewer is fine. */
	code[n - 2].opcode = 0x95;
	assert_int_equal(arf_mc_verify(helpers, code, n - 1, 0, err, sizeof(err)), 0);
	free(code);
}

static void test_no_helpers(void **state)
{
	static const struct arf_mc_insn code[] = { I(0xb7, 1, 0, 0, 0), I(0x85, 0, 0, 0, 5),
						   I(0x95, 0, 0, 0, 0) };
	char err[128];

	(void)state;
	assert_int_equal(arf_mc_verify(NULL, code, 3, 0, err, sizeof(err)), ARF_EVERIFY);
	assert_string_equal(err, "instruction 1: call to unknown helper 5");
	assert_int_equal(arf_mc_verify(helpers, code, 3, 0, err, sizeof(err)), 0);
	assert_int_equal(arf_mc_verify(helpers, code, 3, 3, err, sizeof(err)), ARF_EVERIFY);
	assert_string_equal(err, "entry 3 out of range");
}

static void test_entry_inside_lddw(void **state)
{
	static const struct arf_mc_insn code[] = { I(0x18, 0, 0, 0, 1), I(0, 0, 0, 0, 0),
						   I(0x95, 0, 0, 0, 0) };
	char err[128];

	(void)state;
	assert_int_equal(arf_mc_verify(helpers, code, 3, 1, err, sizeof(err)), ARF_EVERIFY);
	assert_string_equal(err, "entry 1 is the second half of an lddw");
	assert_int_equal(arf_mc_verify(helpers, code, 3, 2, err, sizeof(err)), ARF_EVERIFY);
	assert_string_equal(err, "instruction 0: falls off the end of its function");
}

static void test_bad_code_length(void **state)
{
	struct arf_mc_prog *p = NULL;
	char err[128];
	uint8_t bytes[12] = { 0x95 };

	(void)state;
	assert_int_equal(arf_mc_prog_load(helpers, bytes, sizeof(bytes), NULL, 0, &p, err,
					  sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not a whole number of instructions"));
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_jmp32_exit_and_call),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_no_helpers),
		cmocka_unit_test(test_bad_code_length),
		cmocka_unit_test(test_entry_inside_lddw),
	};

	return cmocka_run_group_tests_name("mc-verify", tests, setup, teardown);
}
