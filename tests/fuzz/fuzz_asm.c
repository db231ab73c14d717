/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the assembler (arf_mc_asm) over arbitrary text, as
 * arf-asm reads it from a file a user hands it.  Text it accepts goes on
 * through the disassembler, which must give text that assembles to the same
 * instructions, and through the verifier; programs that pass run with a
 * small budget.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arf_mc.h"

static struct arf_mc_helpers *helpers;
static struct arf_mc_vm *vm;
static uint8_t out[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (arf_mc_helpers_create(&helpers) || arf_mc_helpers_add_std(helpers) ||
	    arf_mc_vm_create(helpers, &vm))
		abort();
	arf_mc_vm_set_output(vm, out, sizeof(out));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;

	struct arf_mc_insn *insns = NULL, *again = NULL;
	size_t n = 0, m = 0;
	char err[256] = "", *dis = NULL;
	int rc = arf_mc_asm(text, &insns, &n, err, sizeof(err));
	if (rc) {
		if (rc != -EINVAL && rc != -ENOMEM)
			abort();
		if (rc == -EINVAL && !err[0])
			abort(); /* a rejection says where */
		free(insns);
		free(text);
		return 0;
	}
	if (n > 0 && !insns)
		abort();
	if (arf_mc_disasm(insns, n, &dis, err, sizeof(err)) == 0) {
		if (arf_mc_asm(dis, &again, &m, err, sizeof(err)) != 0 || m != n ||
		    (n && memcmp(again, insns, n * sizeof(*insns))))
			abort(); /* disassembly does not assemble back to the same code */
		free(again);
		free(dis);
	}
	struct arf_mc_prog *p = NULL;
	rc = arf_mc_prog_load(helpers, insns, n * sizeof(*insns), NULL, 0, &p, err, sizeof(err));
	if (rc == 0) {
		struct arf_mc_result res;
		uint8_t ctx[64] = { 0 };
		rc = arf_mc_run(vm, p, ctx, sizeof(ctx), 4096, &res);
		if (rc != 0 && rc != ARF_EBUDGET && rc != ARF_EFAULT && rc != ARF_EOUTPUT &&
		    rc != -ENOSYS)
			abort();
		arf_mc_prog_destroy(p);
	} else if (rc != ARF_EVERIFY && rc != -EINVAL) {
		abort();
	}
	free(insns);
	free(text);
	return 0;
}
