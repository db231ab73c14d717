/* SPDX-License-Identifier: MIT */
/*
 * Random programs, deterministic: many small programs made of real opcodes
 * with random fields go through the verifier; each one it accepts is run
 * with a small budget (under the sanitizers in build-mc-asan, any stray
 * access shows) and must end in one of the documented outcomes; each one
 * the disassembler can write must assemble back to the same bytes.
 */
#include "mc_test.h"

#define ROUNDS 60000 /* MC_FUZZ_ROUNDS in the environment asks for more */

static const uint8_t opcodes[] = {
	0x07, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f,
	0x77, 0x7f, 0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd7, 0x04, 0x0c,
	0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3c, 0x44, 0x4c, 0x54, 0x5c, 0x64, 0x6c, 0x74, 0x7c,
	0x84, 0x94, 0x9c, 0xa4, 0xac, 0xb4, 0xbc, 0xc4, 0xcc, 0xd4, 0xdc, 0x18, 0x61, 0x69,
	0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x6a, 0x72, 0x7a, 0x63, 0x6b, 0x73, 0x7b, 0xc3,
	0xdb, 0x05, 0x06, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0xa5, 0xad, 0xb5, 0xbd, 0x45,
	0x4d, 0x55, 0x5d, 0x65, 0x6d, 0x75, 0x7d, 0xc5, 0xcd, 0xd5, 0xdd, 0x16, 0x1e, 0x26,
	0x2e, 0x36, 0x3e, 0xa6, 0xae, 0xb6, 0xbe, 0x46, 0x4e, 0x56, 0x5e, 0x66, 0x6e, 0x76,
	0x7e, 0xc6, 0xce, 0xd6, 0xde, 0x85, 0x8d, 0x95,
	0x00, 0x20, 0x8c, 0x8f, 0x96, 0x99, 0xd3, 0xdf, 0xff, /* not valid */
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned pick(unsigned n)
{
	return (unsigned)(next() % n);
}

/* Zero the fields the opcode leaves unused, as a compiler would (mostly). */
static void shape(struct arf_mc_insn *in)
{
	int cls = in->opcode & 7, op = in->opcode & 0xf0, x = in->opcode & 8;

	if (in->dst == 10 && cls != 2 && cls != 3 && pick(4))
		in->dst = pick(10);
	switch (cls) {
	case 4:
	case 7:
		if (op == 0xd0) {
			in->src = 0;
			in->off = 0;
			in->imm = 16 << pick(3);
		} else if (op == 0x80) {
			in->src = 0;
			in->off = 0;
			in->imm = 0;
		} else {
			if (x)
				in->imm = 0;
			else
				in->src = 0;
			if (op == 0x30 || op == 0x90)
				in->off = (int16_t)pick(2);
			else if (op == 0xb0 && x && pick(2))
				in->off = (int16_t)(8 << pick(cls == 7 ? 3 : 2));
			else
				in->off = 0;
		}
		break;
	case 5:
	case 6:
		if (op == 0x00) {
			in->dst = in->src = 0;
			if (cls == 5)
				in->imm = 0;
			else
				in->off = 0;
		} else if (op == 0x80) {
			in->off = 0;
			if (x) {
				in->src = 0;
				in->imm = 0;
			} else {
				in->dst = 0;
			}
		} else if (op == 0x90) {
			in->dst = in->src = 0;
			in->off = 0;
			in->imm = 0;
		} else if (x) {
			in->imm = 0;
		} else {
			in->src = 0;
		}
		break;
	case 1:
	case 3:
		if ((in->opcode & 0xe0) == 0xc0)
			in->imm = (int32_t)(const int[]){ 0, 0x40, 0x50, 0xa0, 1, 0x41, 0x51, 0xa1,
							  0xe1, 0xf1 }[pick(10)];
		else
			in->imm = 0;
		/* fall through */
	case 2:
		if (cls == 2)
			in->src = 0;
		{
			unsigned base = cls == 1 ? in->src : in->dst;

			if (pick(2)) {
				base = 10;
				in->off = (int16_t)(-8 * (1 + (int)pick(8)));
			} else if (pick(2)) {
				base = 1;
				in->off = (int16_t)(8 * pick(9));
			}
			if (cls == 1)
				in->src = base & 0xf;
			else
				in->dst = base & 0xf;
		}
		break;
	default:
		break;
	}
}

static struct arf_mc_insn random_insn(size_t pc, size_t n)
{
	static const int16_t offs[] = { 0, 0, 0, 1, 2, -1, -2, -4, -8, -16, 8, 16, 32, 1 };
	static const int32_t imms[] = { 0, 0, 1, -1, 2, 5, 8, 16, 32, 64, 0x7fffffff, 63, 31, 0x01,
					0x40, 0x50, 0xa0, 0xe1, 0xf1, 0x41 };
	struct arf_mc_insn in = { 0 };
	unsigned r = pick(100);

	in.opcode = opcodes[pick(sizeof(opcodes))];
	in.dst = r < 3 ? 10 + pick(6) : pick(10);
	in.src = r < 6 ? 11 + pick(5) : pick(11);
	if (pick(4) == 0)
		in.src = 10;
	in.off = pick(8) == 0 ? (int16_t)next() : offs[pick(sizeof(offs) / sizeof(offs[0]))];
	in.imm = pick(8) == 0 ? (int32_t)next() : imms[pick(sizeof(imms) / sizeof(imms[0]))];
	if (pick(10))
		shape(&in);
	/* Jumps and calls mostly in range. */
	if ((in.opcode & 7) == 5 || (in.opcode & 7) == 6) {
		if (pick(3) && in.opcode != 0x06)
			in.off = (int16_t)((int64_t)pick((unsigned)n + 1) - (int64_t)pc - 1);
		if (in.opcode == 0x06 || (in.opcode == 0x85 && pick(2)))
			in.imm = (int32_t)((int64_t)pick((unsigned)n + 1) - (int64_t)pc - 1);
		if (in.opcode == 0x85)
			in.src = pick(3) ? 0 : 1;
		if (in.opcode == 0x85 && in.src == 0)
			in.imm = pick(2) ? 5 : 1 + (int32_t)pick(4);
		if (in.opcode == 0x85 || in.opcode == 0x95)
			in.off = 0;
	}
	return in;
}

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
		struct arf_mc_insn code[40], *again = NULL;
		struct arf_mc_prog *p = NULL;
		struct arf_mc_result res;
		uint8_t ctx[64];
		char err[256], *text = NULL;
		size_t n = 0, m = 0;
		int rc;

		/* Registers set first, so that the verifier's data flow lets some through. */
		for (unsigned r = 0; r < 10; r++)
			if (r != 1 && r != 2 && pick(16))
				code[n++] = (struct arf_mc_insn){ .opcode = 0xb7, .dst = r & 0xf,
								  .imm = (int32_t)pick(64) };
		if (pick(2))
			code[n++] = (struct arf_mc_insn){ .opcode = 0xbf, .dst = 3, .src = 10 };
		size_t body = 1 + pick(20);

		for (size_t i = 0; i < body; i++) {
			struct arf_mc_insn in = random_insn(i, body);

			code[n++] = in;
			if (in.opcode == 0x18 && pick(8) && i + 1 < body) {
				code[n++] = (struct arf_mc_insn){ .imm = (int32_t)next() };
				i++;
			}
		}
		code[n++] = (struct arf_mc_insn){ .opcode = 0x95 };

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
