/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the verifier (arf_mc_prog_load) and the interpreter
 * (arf_mc_run) of mobilecode/ over raw bytecode a client could ship.
 * Every program the verifier accepts runs with a small instruction budget
 * over a context, an output buffer and two user regions, and must end in
 * one of the documented outcomes; every program the disassembler can write
 * must assemble back to the same bytes (as tests/mc/test_fuzz.c checks for
 * its random programs).
 *
 * Input: u8 ctx_len, u8 rodata_len, ctx bytes, rodata bytes, then the code
 * (its length cut down to a multiple of 8).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arf_mc.h"
#include "mc_input.h"

#define BUDGET 4096

static struct arf_mc_helpers *helpers;
static struct arf_mc_vm *vm;
static uint8_t out[64];
static uint8_t ro_region[48] = "a read-only region lent by the embedder";
static uint8_t rw_region[48];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint64_t addr;

	(void)argc;
	(void)argv;
	if (arf_mc_helpers_create(&helpers) || arf_mc_helpers_add_std(helpers) ||
	    arf_mc_vm_create(helpers, &vm) ||
	    arf_mc_vm_add_region(vm, ro_region, sizeof(ro_region), 0, &addr) ||
	    arf_mc_vm_add_region(vm, rw_region, sizeof(rw_region), ARF_MC_REGION_WRITE, &addr))
		abort();
	arf_mc_vm_set_output(vm, out, sizeof(out));
	return 0;
}

static void roundtrip(const struct arf_mc_insn *code, size_t n)
{
	char err[256], *text = NULL;
	struct arf_mc_insn *again = NULL;
	size_t m = 0;

	if (arf_mc_disasm(code, n, &text, err, sizeof(err)) != 0)
		return;
	if (arf_mc_asm(text, &again, &m, err, sizeof(err)) != 0 || m != n ||
	    (n && memcmp(again, code, n * sizeof(*code))))
		abort(); /* the disassembler wrote what the assembler reads otherwise */
	free(again);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mc_input in;

	if (mc_input_split(data, size, &in))
		return 0;
	size_t ctx_len = in.ctx_len, ro_len = in.ro_len, code_len = in.code_len;

	/* exact-size copies, so that ASan sees any overrun */
	uint8_t *ctx = malloc(ctx_len ? ctx_len : 1);
	uint8_t *ro = ro_len ? malloc(ro_len) : NULL;
	struct arf_mc_insn *code = malloc(code_len ? code_len : 1);
	if (!ctx || (ro_len && !ro) || !code)
		abort();
	memcpy(ctx, in.ctx, ctx_len);
	if (ro_len)
		memcpy(ro, in.ro, ro_len);
	memcpy(code, in.code, code_len);

	size_t n = code_len / sizeof(struct arf_mc_insn);
	roundtrip(code, n);

	struct arf_mc_prog *p = NULL;
	char err[256] = "";
	int rc = arf_mc_prog_load(helpers, code, code_len, ro, ro_len, &p, err, sizeof(err));
	if (rc) {
		if (rc != ARF_EVERIFY && rc != -EINVAL)
			abort();
		if (rc == ARF_EVERIFY && !err[0])
			abort(); /* a rejection says why */
	} else {
		struct arf_mc_result res;
		size_t pn = 0;
		const struct arf_mc_insn *pi = arf_mc_prog_insns(p, &pn);
		if (!pi || pn != n || arf_mc_prog_entry(p) >= pn)
			abort();
		/* each instruction on its own, as arf-asm listings print them */
		char line[128];
		for (size_t pc = 0; pc < pn;) {
			int k = arf_mc_disasm_insn(pi, pn, pc, line, sizeof(line));
			pc += k > 0 ? (size_t)k : 1;
		}
		rc = arf_mc_run(vm, p, ctx, ctx_len, BUDGET, &res);
		if (rc == 0) {
			if (res.insns > BUDGET || res.out_len > sizeof(out) || res.msg[0])
				abort();
		} else if (rc == ARF_EBUDGET || rc == ARF_EFAULT || rc == ARF_EOUTPUT ||
			   rc == -ENOSYS) {
			if (!res.msg[0])
				abort(); /* a failed run says what and where */
		} else {
			abort(); /* not a documented outcome */
		}
		/* and the same program with no context at all */
		rc = arf_mc_run(vm, p, NULL, 0, BUDGET, &res);
		if (rc != 0 && rc != ARF_EBUDGET && rc != ARF_EFAULT && rc != ARF_EOUTPUT &&
		    rc != -ENOSYS)
			abort();
		arf_mc_prog_destroy(p);
	}
	free(code);
	free(ro);
	free(ctx);
	return 0;
}
