/* SPDX-License-Identifier: MIT */
/*
 * Generated programs run in-process by the mobilecode interpreter, or as
 * native code from its JIT: what `--engine=mc` and `--engine=jit` use on
 * local files, and what the tests use to check the code generator (and
 * the JIT) against the native matcher and GNU grep.  The buffer is
 * lent to the vm as a read-only region and the program is run in slices
 * (ctx->limit bytes, at most GREP_MC_MAX_REC records each) exactly as arfd
 * would run it, so that resuming by cursor is exercised on every file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

#define GREP_MC_MAX_REC 512
#define GREP_MC_SLICE   (1u << 20)      /* bytes per run */
#define GREP_MC_BUDGET  (64ull << 20)   /* instructions per run */

struct grep_mc {
	struct arf_mc_helpers *h;
	struct arf_mc_prog *p;
	struct arf_mc_vm *vm;
	uint8_t *out;
	size_t outcap;
	uint64_t slice;
};

int grep_mc_create(const struct grep_prog *gp, int jit, struct grep_mc **out, char *err,
		   size_t errlen)
{
	struct grep_mc *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return -ENOMEM;
	g->outcap = GREP_MC_MAX_REC * sizeof(struct grep_rec);
	g->out = malloc(g->outcap);
	g->slice = GREP_MC_SLICE;
	if (getenv("ARF_GREP_SLICE")) /* tests: force many small slices */
		g->slice = strtoull(getenv("ARF_GREP_SLICE"), NULL, 0);
	r = g->out ? arf_mc_helpers_create(&g->h) : -ENOMEM;
	if (!r)
		r = arf_mc_helpers_add_std(g->h);
	if (!r)
		r = arf_mc_prog_load(g->h, gp->insns, gp->n * sizeof(struct arf_mc_insn), gp->rodata,
				     gp->rodata_len, &g->p, err, errlen);
	if (!r && jit)
		r = arf_mc_prog_jit(g->p, err, errlen);
	if (!r)
		r = arf_mc_vm_create(g->h, &g->vm);
	if (r) {
		grep_mc_destroy(g);
		return r;
	}
	arf_mc_vm_set_output(g->vm, g->out, g->outcap);
	*out = g;
	return 0;
}

void grep_mc_destroy(struct grep_mc *g)
{
	if (!g)
		return;
	arf_mc_vm_destroy(g->vm);
	arf_mc_prog_destroy(g->p);
	arf_mc_helpers_destroy(g->h);
	free(g->out);
	free(g);
}

int grep_mc_scan(struct grep_mc *g, struct grep_ctx *ctx, const void *buf, size_t len,
		 int (*rec)(void *arg, const struct grep_rec *r), void *arg, uint64_t *insns)
{
	struct arf_mc_result res;
	uint64_t addr;
	int r;

	arf_mc_vm_clear_regions(g->vm);
	r = arf_mc_vm_add_region(g->vm, len ? buf : "", len, 0, &addr);
	if (r)
		return r;
	ctx->buf = addr;
	ctx->len = len;
	ctx->max_rec = GREP_MC_MAX_REC;
	ctx->limit = g->slice;
	for (;;) {
		r = arf_mc_run(g->vm, g->p, ctx, sizeof(*ctx), GREP_MC_BUDGET, &res);
		if (r)
			return r;
		if (insns)
			*insns += res.insns;
		for (size_t o = 0; o + sizeof(struct grep_rec) <= res.out_len;
		     o += sizeof(struct grep_rec)) {
			struct grep_rec x;

			memcpy(&x, g->out + o, sizeof(x));
			if (rec(arg, &x))
				return GREP_RET_MAX;
		}
		if (res.r0 != GREP_RET_MORE)
			return (int)res.r0;
	}
}
