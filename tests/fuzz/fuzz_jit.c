/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the JIT against the interpreter on raw bytecode a
 * client could ship (the input format of fuzz_mc.c, whose corpus it
 * uses).  Every program the verifier accepts is compiled and run in both
 * engines, each over its own copy of the same memory (context, output, an
 * embedder's read-only and writable regions), at a small budget and again
 * at a budget cut inside that run; any difference -- return code, r0,
 * instructions executed, output length, failing instruction, message, a
 * byte of writable memory -- aborts.  tests/mc/test_jit.c does the same
 * for a fixed set of random programs in the test command; this is the
 * longer hunt (FUZZ_SECONDS).
 *
 * Input: mc_input.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_mc.h"
#include "mc_input.h"

#define BUDGET 4096

struct world {
	struct arf_mc_vm *vm;
	uint8_t out[64];
	uint8_t ro[48];
	uint8_t rw[48];
	uint8_t *ctx;
};

static struct arf_mc_helpers *helpers;
static struct world w[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint64_t addr;

	(void)argc;
	(void)argv;
	if (arf_mc_helpers_create(&helpers) || arf_mc_helpers_add_std(helpers))
		abort();
	for (int i = 0; i < 2; i++) {
		memcpy(w[i].ro, "a read-only region lent by the embedder", 40);
		if (arf_mc_vm_create(helpers, &w[i].vm) ||
		    arf_mc_vm_add_region(w[i].vm, w[i].ro, sizeof(w[i].ro), 0, &addr) ||
		    arf_mc_vm_add_region(w[i].vm, w[i].rw, sizeof(w[i].rw), ARF_MC_REGION_WRITE, &addr))
			abort();
		arf_mc_vm_set_output(w[i].vm, w[i].out, sizeof(w[i].out));
	}
	return 0;
}

/* Runs p in both engines from the same memory; aborts on any difference. */
static uint64_t both(const struct arf_mc_prog *p, const uint8_t *ctx, size_t ctx_len,
		     uint64_t budget)
{
	struct arf_mc_result res[2];
	int rc[2];

	for (int i = 0; i < 2; i++) {
		memcpy(w[i].ctx, ctx, ctx_len);
		memset(w[i].out, 0, sizeof(w[i].out));
		memset(w[i].rw, 0x11, sizeof(w[i].rw));
		rc[i] = i ? arf_mc_run(w[i].vm, p, w[i].ctx, ctx_len, budget, &res[i])
			  : arf_mc_run_interp(w[i].vm, p, w[i].ctx, ctx_len, budget, &res[i]);
	}
	if (rc[0] != rc[1] || (rc[0] == 0 && res[0].r0 != res[1].r0) ||
	    res[0].insns != res[1].insns || res[0].out_len != res[1].out_len ||
	    (rc[0] && res[0].pc != res[1].pc) || strcmp(res[0].msg, res[1].msg) ||
	    memcmp(w[0].ctx, w[1].ctx, ctx_len) || memcmp(w[0].out, w[1].out, sizeof(w[0].out)) ||
	    memcmp(w[0].rw, w[1].rw, sizeof(w[0].rw))) {
		fprintf(stderr, "engines differ at budget %llu:\n"
			"interpreter rc %d r0 0x%llx insns %llu: %s\nJIT         rc %d r0 0x%llx insns %llu: %s\n",
			(unsigned long long)budget, rc[0], (unsigned long long)res[0].r0,
			(unsigned long long)res[0].insns, res[0].msg, rc[1],
			(unsigned long long)res[1].r0, (unsigned long long)res[1].insns, res[1].msg);
		abort();
	}
	return res[0].insns;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mc_input in;
	struct arf_mc_prog *p = NULL;
	char err[256];

	if (mc_input_split(data, size, &in) ||
	    arf_mc_prog_load(helpers, in.code, in.code_len, in.ro_len ? in.ro : NULL, in.ro_len, &p,
			     err, sizeof(err)))
		return 0;
	size_t ctx_len = in.ctx_len;
	if (arf_mc_prog_jit(p, err, sizeof(err))) {
		fprintf(stderr, "the JIT cannot compile a verified program: %s\n", err);
		abort();
	}
	/* exact-size contexts, so that ASan sees any overrun by a helper */
	w[0].ctx = malloc(ctx_len ? ctx_len : 1);
	w[1].ctx = malloc(ctx_len ? ctx_len : 1);
	if (!w[0].ctx || !w[1].ctx)
		abort();
	uint64_t insns = both(p, in.ctx, ctx_len, BUDGET);
	if (insns > 1)
		both(p, in.ctx, ctx_len, 1 + (data[0] * 131u + in.code_len) % insns);
	free(w[0].ctx);
	free(w[1].ctx);
	arf_mc_prog_destroy(p);
	return 0;
}
