/* SPDX-License-Identifier: MIT */
/*
 * The walker's filter: for an expression E, the condition under which some
 * action of E fires on an entry ("reach"), written over E's tests, so that
 * arfd's walker (find.c) can leave behind every entry for which nothing
 * would be printed.  With val(E) the value E returns:
 *
 *   test t:   val t,      reach false
 *   action:   val true,   reach true   (-prune: reach false; directories
 *                                       the client enters are always sent)
 *   A -a B:   val(A) & val(B),   reach(A) | (val(A) & reach(B))
 *   A -o B:   val(A) | val(B),   reach(A) | (!val(A) & reach(B))
 *   ! A:      !val(A),           reach(A)
 *   A , B:    val(B),            reach(A) | reach(B)
 *
 * Tests the walker does not decide (-path, -regex; outside the C locale,
 * -iname and -name with a range or a byte over 0x7f) are "unknown", which the three-valued evaluation carries through,
 * so an entry is dropped only when the filter is false for certain.  The
 * formula is folded (constants), then written out in postfix.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "find_int.h"

struct f {
	int op;                    /* enum arf_find_op */
	const struct find_node *leaf;
	struct f *l, *r;
};

struct fb {
	int fail;
	int ship_names;
	struct arf_find_node *nodes;
	uint32_t nn, depth, maxdepth;
	char *str;
	uint32_t str_len;
};

static void drop(struct f *x)
{
	if (!x)
		return;
	drop(x->l);
	drop(x->r);
	free(x);
}

static struct f *mk(struct fb *b, int op, struct f *l, struct f *r, const struct find_node *leaf)
{
	struct f *x;

	/* folding: the operand left out is freed (no node has two parents) */
	if (op == ARF_FIND_AND) {
		if (l->op == ARF_FIND_FALSE || r->op == ARF_FIND_TRUE)
			return drop(r), l;
		if (r->op == ARF_FIND_FALSE || l->op == ARF_FIND_TRUE)
			return drop(l), r;
	} else if (op == ARF_FIND_OR) {
		if (l->op == ARF_FIND_TRUE || r->op == ARF_FIND_FALSE)
			return drop(r), l;
		if (r->op == ARF_FIND_TRUE || l->op == ARF_FIND_FALSE)
			return drop(l), r;
	} else if (op == ARF_FIND_NOT && (l->op == ARF_FIND_TRUE || l->op == ARF_FIND_FALSE)) {
		l->op = l->op == ARF_FIND_TRUE ? ARF_FIND_FALSE : ARF_FIND_TRUE;
		return l;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		fputs("arf-find: out of memory\n", stderr);
		exit(1);
	}
	x->op = op;
	x->l = l;
	x->r = r;
	x->leaf = leaf;
	(void)b;
	return x;
}

/* Whether the walker's byte-wise glob (ASCII names only; it leaves the
 * others to the client) decides -name as fnmatch would here: always in the
 * C locale; elsewhere for an ASCII pattern without ranges (whose order is
 * the locale's collation) and without case folding (the locale's). */
static int ship_name(const struct fb *b, const struct find_node *n)
{
	if (b->ship_names)
		return 1;
	if (n->icase || (strchr(n->str, '[') && strchr(n->str, '-')))
		return 0;
	for (const unsigned char *c = (const unsigned char *)n->str; *c; c++)
		if (*c >= 0x80)
			return 0;
	return 1;
}

static struct f *val(struct fb *b, const struct find_node *n)
{
	switch (n->kind) {
	case FK_AND: return mk(b, ARF_FIND_AND, val(b, n->l), val(b, n->r), NULL);
	case FK_OR: return mk(b, ARF_FIND_OR, val(b, n->l), val(b, n->r), NULL);
	case FK_NOT: return mk(b, ARF_FIND_NOT, val(b, n->l), NULL, NULL);
	case FK_COMMA: return val(b, n->r);
	case FK_TRUE: case FK_PRINT: case FK_PRINT0: case FK_PRINTF: case FK_PRUNE:
		return mk(b, ARF_FIND_TRUE, NULL, NULL, NULL);
	case FK_FALSE: return mk(b, ARF_FIND_FALSE, NULL, NULL, NULL);
	case FK_NAME:
		return mk(b, ship_name(b, n) ? ARF_FIND_NAME : ARF_FIND_UNKNOWN, NULL, NULL, n);
	case FK_PATH: case FK_REGEX: return mk(b, ARF_FIND_UNKNOWN, NULL, NULL, n);
	case FK_TYPE: return mk(b, ARF_FIND_TYPE, NULL, NULL, n);
	case FK_SIZE: return mk(b, ARF_FIND_SIZE, NULL, NULL, n);
	case FK_TIME: return mk(b, ARF_FIND_TIME, NULL, NULL, n);
	case FK_UID: return mk(b, ARF_FIND_UID, NULL, NULL, n);
	case FK_GID: return mk(b, ARF_FIND_GID, NULL, NULL, n);
	case FK_LINKS: return mk(b, ARF_FIND_LINKS, NULL, NULL, n);
	case FK_INUM: return mk(b, ARF_FIND_INUM, NULL, NULL, n);
	case FK_PERM: return mk(b, ARF_FIND_PERM, NULL, NULL, n);
	case FK_EMPTY: return mk(b, ARF_FIND_EMPTY, NULL, NULL, n);
	}
	return mk(b, ARF_FIND_UNKNOWN, NULL, NULL, n);
}

static struct f *reach(struct fb *b, const struct find_node *n)
{
	switch (n->kind) {
	case FK_AND:
		return mk(b, ARF_FIND_OR, reach(b, n->l),
			  mk(b, ARF_FIND_AND, val(b, n->l), reach(b, n->r), NULL), NULL);
	case FK_OR:
		return mk(b, ARF_FIND_OR, reach(b, n->l),
			  mk(b, ARF_FIND_AND, mk(b, ARF_FIND_NOT, val(b, n->l), NULL, NULL),
			     reach(b, n->r), NULL), NULL);
	case FK_NOT: return reach(b, n->l);
	case FK_COMMA: return mk(b, ARF_FIND_OR, reach(b, n->l), reach(b, n->r), NULL);
	case FK_PRINT: case FK_PRINT0: case FK_PRINTF:
		return mk(b, ARF_FIND_TRUE, NULL, NULL, NULL);
	default:
		return mk(b, ARF_FIND_FALSE, NULL, NULL, NULL);
	}
}

static void out(struct fb *b, const struct f *x)
{
	struct arf_find_node *o;

	if (b->fail)
		return;
	if (x->l)
		out(b, x->l);
	if (x->r)
		out(b, x->r);
	if (b->nn >= ARF_FIND_MAX_NODES) {
		b->fail = 1;
		return;
	}
	o = &b->nodes[b->nn++];
	memset(o, 0, sizeof(*o));
	o->op = (uint8_t)x->op;
	if (x->l && x->r)
		b->depth--;
	else if (!x->l)
		b->depth++;
	if (b->depth > b->maxdepth)
		b->maxdepth = b->depth;
	if (!x->leaf)
		return;
	const struct find_node *n = x->leaf;

	o->cmp = (uint8_t)n->cmp;
	o->x = n->x;
	o->y = n->y;
	o->a = n->which;
	if (x->op == ARF_FIND_NAME) {
		size_t l = strlen(n->str);
		char *s = realloc(b->str, b->str_len + l + 1);

		if (!s) {
			b->fail = 1;
			return;
		}
		memcpy(s + b->str_len, n->str, l);
		b->str = s;
		o->a = b->str_len;
		o->y = l;
		o->cmp = (uint8_t)n->icase;
		b->str_len += (uint32_t)l;
	}
}

static int is_c(int cat)
{
	const char *l = setlocale(cat, NULL);

	return !l || !strcmp(l, "C") || !strcmp(l, "POSIX");
}

int find_filter(const struct find_run *run, struct arf_find_node **nodes, uint32_t *nn,
		char **str, uint32_t *str_len)
{
	struct fb b = { 0, is_c(LC_CTYPE) && is_c(LC_COLLATE), NULL, 0, 0, 0, NULL, 0 };
	struct f *x = reach(&b, run->expr);

	b.nodes = calloc(ARF_FIND_MAX_NODES, sizeof(*b.nodes));
	if (!b.nodes)
		b.fail = 1;
	out(&b, x);
	drop(x);
	if (b.fail || b.maxdepth > ARF_FIND_STACK) {
		b.nn = 0; /* no filter: every entry comes back */
		free(b.str);
		b.str = NULL;
		b.str_len = 0;
	}
	*nodes = b.nodes;
	*nn = b.nn;
	*str = b.str;
	*str_len = b.str_len;
	return b.nodes ? 0 : -1;
}
