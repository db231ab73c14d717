/* SPDX-License-Identifier: MIT */
/*
 * Assembler and disassembler: the encodings of each form, the round trip
 * assemble(disassemble(x)) == x over a program using every instruction, the
 * disassembler's text, and assembler errors that name their line.
 */
#include "mc_test.h"

/* Every form the syntax has, once. */
static const char every_form[] =
	"# comment line\n"
	"start: mov %r0, 0   # trailing comment\n"
	"mov %r5, 0\n"
	"add %r0, 1\nadd %r0, %r1\nsub %r0, -1\nsub %r0, %r1\nmul %r0, 3\nmul %r0, %r1\n"
	"div %r0, 3\ndiv %r0, %r1\nsdiv %r0, -3\nsdiv %r0, %r1\nmod %r0, 3\nmod %r0, %r1\n"
	"smod %r0, -3\nsmod %r0, %r1\nor %r0, 0x10\nor %r0, %r1\nand %r0, 0xffff\nand %r0, %r1\n"
	"lsh %r0, 3\nlsh %r0, %r1\nrsh %r0, 3\nrsh %r0, %r1\narsh %r0, 3\narsh %r0, %r1\n"
	"xor %r0, 5\nxor %r0, %r1\nmov %r2, -7\nmov %r2, %r1\nneg %r2\n"
	"add32 %r0, 1\nadd32 %r0, %r1\nsub32 %r0, 1\nsub32 %r0, %r1\nmul32 %r0, 3\nmul32 %r0, %r1\n"
	"div32 %r0, 3\ndiv32 %r0, %r1\nsdiv32 %r0, 3\nsdiv32 %r0, %r1\nmod32 %r0, 3\n"
	"mod32 %r0, %r1\nsmod32 %r0, 3\nsmod32 %r0, %r1\nor32 %r0, 1\nor32 %r0, %r1\n"
	"and32 %r0, 1\nand32 %r0, %r1\nlsh32 %r0, 1\nlsh32 %r0, %r1\nrsh32 %r0, 1\n"
	"rsh32 %r0, %r1\narsh32 %r0, 1\narsh32 %r0, %r1\nxor32 %r0, 1\nxor32 %r0, %r1\n"
	"mov32 %r3, 0xffffffff\nmov32 %r3, %r1\nneg32 %r3\n"
	"movsx832 %r3, %r1\nmovsx1632 %r3, %r1\nmovsx864 %r3, %r1\nmovsx1664 %r3, %r1\n"
	"movsx3264 %r3, %r1\n"
	"le16 %r3\nle32 %r3\nle64 %r3\nbe16 %r3\nbe32 %r3\nbe64 %r3\n"
	"bswap16 %r3\nbswap32 %r3\nbswap64 %r3\n"
	"lddw %r4, 0x123456789abcdef0\nlddw %r4, -1\n"
	"ldxb %r4, [%r10-1]\nldxh %r4, [%r10-2]\nldxw %r4, [%r10-4]\nldxdw %r4, [%r10-8]\n"
	"ldxsb %r4, [%r10-1]\nldxsh %r4, [%r10-2]\nldxsw %r4, [%r10-4]\n"
	"stb [%r10-1], 1\nsth [%r10-2], 2\nstw [%r10-4], 3\nstdw [%r10-8], -4\n"
	"stxb [%r10-1], %r0\nstxh [%r10-2], %r0\nstxw [%r10-4], %r0\nstxdw [%r10-8], %r0\n"
	"lock add [%r10-8], %r0\nlock or [%r10-8], %r0\nlock and [%r10-8], %r0\n"
	"lock xor [%r10-8], %r0\nlock fetch add [%r10-8], %r5\nlock fetch or [%r10-8], %r5\n"
	"lock fetch and [%r10-8], %r5\nlock fetch xor [%r10-8], %r5\nlock xchg [%r10-8], %r5\n"
	"lock cmpxchg [%r10-8], %r5\nlock add32 [%r10-4], %r0\nlock fetch xor32 [%r10-4], %r5\n"
	"lock xchg32 [%r10-4], %r5\nlock cmpxchg32 [%r10-4], %r5\n"
	"jeq %r0, 1, next\njeq %r0, %r1, next\njgt %r0, 1, next\njgt %r0, %r1, next\n"
	"jge %r0, 1, next\njge %r0, %r1, next\njlt %r0, 1, next\njlt %r0, %r1, next\n"
	"jle %r0, 1, next\njle %r0, %r1, next\njset %r0, 1, next\njset %r0, %r1, next\n"
	"jne %r0, 1, next\njne %r0, %r1, next\njsgt %r0, -1, next\njsgt %r0, %r1, next\n"
	"jsge %r0, 1, next\njsge %r0, %r1, next\njslt %r0, 1, next\njslt %r0, %r1, next\n"
	"jsle %r0, 1, next\njsle %r0, %r1, next\n"
	"jeq32 %r0, 1, +1\njne32 %r0, %r1, +0\njsgt32 %r0, -1, -1\njset32 %r0, 8, next\n"
	"next:\n"
	"ja +0\nja32 +0\n"
	"mov %r1, 1\ncall 5\nmov %r2, 5\nmov %r1, 1\ncall %r2\ncall local fn\n"
	"ja exit\n"
	"exit\n"
	"fn: mov %r0, 0\nexit\n";

static void test_round_trip_every_form(void **state)
{
	struct arf_mc_helpers *h = NULL;
	struct arf_mc_insn *code, *again;
	size_t n, m;
	char *text = NULL, err[256];

	(void)state;
	assert_int_equal(arf_mc_helpers_create(&h), 0);
	assert_int_equal(arf_mc_helpers_add_std(h), 0);
	code = mc_test_asm(every_form, &n);
	if (arf_mc_disasm(code, n, &text, err, sizeof(err)))
		fail_msg("disassembler: %s", err);
	again = mc_test_asm(text, &m);
	assert_int_equal(m, n);
	assert_memory_equal(again, code, n * sizeof(*code));
	/* and it is a valid program */
	if (arf_mc_verify(h, code, n, 0, err, sizeof(err)))
		fail_msg("verifier: %s", err);
	arf_mc_helpers_destroy(h);
	free(text);
	free(again);
	free(code);
}

static void test_encodings(void **state)
{
	struct arf_mc_insn *c;
	size_t n;

	(void)state;
	c = mc_test_asm("lddw %r3, 0x123456789abcdef0\ncall local f\nf: call %r7\n"
			"jeq %r1, 0, +2\nldxw %r0, [%r1+4]\nstw [%r10-4], 0xffffffff\n"
			"lock fetch add32 [%r2-8], %r9\nsdiv %r1, -1\nmovsx1664 %r2, %r3\nbe16 %r4\n"
			"ja32 -3\nexit",
			&n);
	assert_int_equal(n, 13);
	assert_int_equal(c[0].opcode, 0x18);
	assert_int_equal(c[0].dst, 3);
	assert_int_equal((uint32_t)c[0].imm, 0x9abcdef0u);
	assert_int_equal((uint32_t)c[1].imm, 0x12345678u);
	assert_int_equal(c[1].opcode, 0);
	assert_int_equal(c[2].opcode, 0x85);
	assert_int_equal(c[2].src, 1);
	assert_int_equal(c[2].imm, 0);
	assert_int_equal(c[3].opcode, 0x8d);
	assert_int_equal(c[3].dst, 7);
	assert_int_equal(c[3].imm, 0);
	assert_int_equal(c[4].opcode, 0x15);
	assert_int_equal(c[4].off, 2);
	assert_int_equal(c[5].opcode, 0x61);
	assert_int_equal(c[5].src, 1);
	assert_int_equal(c[5].off, 4);
	assert_int_equal(c[6].opcode, 0x62);
	assert_int_equal(c[6].imm, -1);
	assert_int_equal(c[7].opcode, 0xc3);
	assert_int_equal(c[7].imm, 0x01);
	assert_int_equal(c[7].src, 9);
	assert_int_equal(c[7].off, -8);
	assert_int_equal(c[8].opcode, 0x3f - 0x08);
	assert_int_equal(c[8].off, 1);
	assert_int_equal(c[8].imm, -1);
	assert_int_equal(c[9].opcode, 0xbf);
	assert_int_equal(c[9].off, 16);
	assert_int_equal(c[10].opcode, 0xdc);
	assert_int_equal(c[10].imm, 16);
	assert_int_equal(c[11].opcode, 0x06);
	assert_int_equal(c[11].imm, -3);
	free(c);
}

static void test_disasm_text(void **state)
{
	struct arf_mc_insn *c;
	size_t n;
	char *text = NULL, err[128], line[64];

	(void)state;
	c = mc_test_asm("mov32 %r0, 0x87654321\ncall local f\nexit\nf:\nldxh %r0, [%r1+0]\n"
			"lock fetch or32 [%r10-4], %r1\nlock cmpxchg [%r10-8], %r2\njne %r0, %r1, -3\n"
			"lddw %r0, 1\nstdw [%r1-8], 7\nexit",
			&n);
	assert_int_equal(arf_mc_disasm(c, n, &text, err, sizeof(err)), 0);
	assert_string_equal(text,
			    "mov32 %r0, -2023406815\n"
			    "call local fn_3\n"
			    "exit\n"
			    "fn_3:\n"
			    "ldxh %r0, [%r1]\n"
			    "lock fetch or32 [%r10-4], %r1\n"
			    "lock cmpxchg [%r10-8], %r2\n"
			    "jne %r0, %r1, -3\n"
			    "lddw %r0, 0x1\n"
			    "stdw [%r1-8], 7\n"
			    "exit\n");
	assert_int_equal(arf_mc_disasm_insn(c, n, 7, line, sizeof(line)), 2);
	assert_string_equal(line, "lddw %r0, 0x1");
	free(text);
	/* An encoding the syntax cannot express */
	c[0].src = 1;
	assert_int_equal(arf_mc_disasm(c, n, &text, err, sizeof(err)), -EINVAL);
	assert_null(text);
	assert_string_equal(err, "instruction 0: immediate operation with a non-zero src field "
				 "(opcode 0xb4) cannot be written as text");
	free(c);
}

static void test_ja_exit(void **state)
{
	struct arf_mc_insn *c;
	size_t n;

	(void)state;
	/* No label `exit`: the first exit instruction. */
	c = mc_test_asm("mov %r0, 0\nja exit\nmov %r0, 1\nexit\nmov %r0, 2\nexit", &n);
	assert_int_equal(c[1].off, 1);
	free(c);
	/* A label `exit` wins. */
	c = mc_test_asm("mov %r0, 0\nja exit\nexit\nexit:\nmov %r0, 2\nexit", &n);
	assert_int_equal(c[1].off, 1);
	free(c);
}

struct asm_error {
	const char *text;
	const char *msg;
};

static void test_errors_name_the_line(void **state)
{
	static const struct asm_error cases[] = {
		{ "mov %r0, 1\nfoo %r1\nexit", "line 2: unknown mnemonic 'foo'" },
		{ "mov %r0, %r11\nexit", "line 1: invalid register '%r11'" },
		{ "mov %r0, r1\nexit", "line 1: invalid immediate 'r1'" },
		{ "\n\nmov32 %r0, 2147483648", "line 3: immediate 2147483648 out of 32-bit range" },
		{ "mov32 %r0, -2147483649", "line 1: immediate -2147483649 out of 32-bit range" },
		{ "mov32 %r0, 0x100000000", "line 1: immediate 0x100000000 out of 32-bit range" },
		{ "lddw %r0, 0x10000000000000000", "line 1: invalid immediate" },
		{ "ldxb %r0, [%r1+32768]", "line 1: offset +32768 out of 16-bit range" },
		{ "ldxb %r0, %r1", "line 1: expected a memory operand" },
		{ "lddw %r0", "line 1: lddw expects 2 operands, got 1" },
		{ "exit %r0", "line 1: exit expects 0 operands, got 1" },
		{ "add %r0, 1, 2, 3, 4", "line 1: too many operands" },
		{ "lock or [%r10-8]", "line 1: invalid number of operands for lock" },
		{ "lock fetch xchg [%r10-8], %r1", "line 1: unknown atomic operation 'fetch xchg'" },
		{ "lock nand [%r10-8], %r1", "line 1: unknown atomic operation 'nand'" },
		{ "ja nowhere\nexit", "line 1: undefined label 'nowhere'" },
		{ "a:\na:\nexit", "line 2: label 'a' defined twice" },
		{ "9a: exit", "line 1: invalid label '9a'" },
		{ "mov %r0, 0\nexit\nja +40000", "line 3: offset +40000 out of 16-bit range" },
		{ "movsx832 %r0, 5", "line 1: movsx832 needs a register source" },
		{ "le8 %r0", "line 1: unknown mnemonic 'le8'" },
		{ "call local", "line 1: invalid immediate 'local'" },
		{ "add %r0, , 1", "line 1: empty operand" },
	};
	struct arf_mc_insn *c = NULL;
	size_t n;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = arf_mc_asm(cases[i].text, &c, &n, err, sizeof(err));

		if (rc != -EINVAL || !strstr(err, cases[i].msg))
			fail_msg("'%s': rc %d, message '%s', expected '%s'", cases[i].text, rc, err,
				 cases[i].msg);
		assert_null(c);
	}
}

static void test_long_jump(void **state)
{
	/* A label farther than 32767 instructions cannot be reached by ja. */
	size_t nl = 33000, len = nl * 11 + 64;
	char *text = malloc(len), *p = text;
	struct arf_mc_insn *c = NULL;
	size_t n;
	char err[128];

	(void)state;
	assert_non_null(text);
	p += sprintf(p, "ja far\n");
	for (size_t i = 0; i < nl; i++)
		p += sprintf(p, "mov %%r0, 0\n");
	sprintf(p, "far: exit\n");
	assert_int_equal(arf_mc_asm(text, &c, &n, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 1: jump to 'far' out of 16-bit range");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_every_form),
		cmocka_unit_test(test_encodings),
		cmocka_unit_test(test_disasm_text),
		cmocka_unit_test(test_ja_exit),
		cmocka_unit_test(test_errors_name_the_line),
		cmocka_unit_test(test_long_jump),
	};

	return cmocka_run_group_tests_name("mc-asm", tests, NULL, NULL);
}
