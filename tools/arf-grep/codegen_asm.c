/* SPDX-License-Identifier: MIT */
/*
 * A tiny eBPF assembler with labels for the code generator: instructions
 * appended to a growing array, forward jumps patched once their labels are
 * placed.  A failure is kept in the struct cg (codegen_int.h) and reported
 * once by cg_resolve().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_int.h"

void cg_put(struct cg *g, uint8_t op, int dst, int src, int16_t off, int32_t imm)
{
	if (g->rc)
		return;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		struct arf_mc_insn *v = realloc(g->v, cap * sizeof(*v));

		if (!v) {
			g->rc = -ENOMEM;
			return;
		}
		g->v = v;
		g->cap = cap;
	}
	struct arf_mc_insn *x = &g->v[g->n++];

	memset(x, 0, sizeof(*x));
	x->opcode = op;
	x->dst = (uint8_t)dst & 15;
	x->src = (uint8_t)src & 15;
	x->off = off;
	x->imm = imm;
}

int cg_label(struct cg *g)
{
	int *l = realloc(g->lab, (size_t)(g->nlab + 1) * sizeof(int));

	if (!l) {
		g->rc = -ENOMEM;
		return 0;
	}
	g->lab = l;
	g->lab[g->nlab] = -1;
	return g->nlab++;
}

void cg_here(struct cg *g, int l)
{
	if (!g->rc)
		g->lab[l] = (int)g->n;
}

/* A jump to label l (opcode op; imm or src register as given). */
void cg_jmp(struct cg *g, uint8_t op, int dst, int src, int32_t imm, int l)
{
	if (g->rc)
		return;
	if (g->nfix == g->capfix) {
		size_t cap = g->capfix ? g->capfix * 2 : 64;
		void *f = realloc(g->fix, cap * sizeof(*g->fix));

		if (!f) {
			g->rc = -ENOMEM;
			return;
		}
		g->fix = f;
		g->capfix = cap;
	}
	g->fix[g->nfix].at = g->n;
	g->fix[g->nfix].lab = l;
	g->nfix++;
	cg_put(g, op, dst, src, 0, imm);
}

int cg_resolve(struct cg *g)
{
	for (size_t i = 0; i < g->nfix && !g->rc; i++) {
		long d = (long)g->lab[g->fix[i].lab] - (long)g->fix[i].at - 1;

		if (g->lab[g->fix[i].lab] < 0 || d < -32768 || d > 32767)
			g->rc = -E2BIG;
		else
			g->v[g->fix[i].at].off = (int16_t)d;
	}
	return g->rc;
}

void cg_free(struct cg *g)
{
	free(g->v);
	free(g->lab);
	free(g->fix);
	memset(g, 0, sizeof(*g));
}

void cg_lddw(struct cg *g, int dst, uint64_t v)
{
	cg_put(g, LDDW, dst, 0, 0, (int32_t)(uint32_t)v);
	cg_put(g, 0, 0, 0, 0, (int32_t)(uint32_t)(v >> 32));
}

void cg_ldctx(struct cg *g, int dst, int16_t off) { cg_put(g, LDXDW, dst, R9, off, 0); }
void cg_stctx(struct cg *g, int16_t off, int src) { cg_put(g, STXDW, R9, src, off, 0); }
