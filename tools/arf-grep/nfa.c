/* SPDX-License-Identifier: MIT */
/*
 * Syntax tree -> Thompson NFA.  Built back to front: compiling a node is
 * given the state that follows it and returns its entry state, so that no
 * patch lists are needed.  Bounded repetitions are unrolled (x{2,4} is
 * x x (x (x)?)?), which is what makes the NFA size bound matter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

struct builder {
	struct nfa *nfa;
	const struct rx *rx;
	int rc;
};

static int add(struct builder *b, int kind, int out, int out2)
{
	struct nfa *n = b->nfa;

	if (b->rc)
		return -1;
	if (n->n >= NFA_MAX_STATES) {
		b->rc = -E2BIG;
		return -1;
	}
	if (n->n == n->cap) {
		int cap = n->cap ? n->cap * 2 : 256;
		struct nfa_state *ns = realloc(n->st, (size_t)cap * sizeof(*ns));

		if (!ns) {
			b->rc = -ENOMEM;
			return -1;
		}
		n->st = ns;
		n->cap = cap;
	}
	memset(&n->st[n->n], 0, sizeof(n->st[0]));
	n->st[n->n].kind = (uint8_t)kind;
	n->st[n->n].out = out;
	n->st[n->n].out2 = out2;
	return n->n++;
}

static int compile(struct builder *b, int node, int next)
{
	const struct rx_node *x;
	int s, t;

	if (b->rc)
		return -1;
	x = &b->rx->nodes[node];
	switch (x->kind) {
	case RX_EMPTY:
		return next;
	case RX_SET:
		s = add(b, NFA_SET, next, -1);
		if (s >= 0)
			b->nfa->st[s].set = x->set;
		return s;
	case RX_ASSERT:
		s = add(b, NFA_ASSERT, next, -1);
		if (s >= 0) {
			b->nfa->st[s].assert = x->assert;
			switch (x->assert) {
			case RXA_BOL: case RXA_NOTWPREV: b->nfa->uses_prev = 1; break;
			case RXA_EOL: case RXA_NOTWNEXT: b->nfa->uses_next = 1; break;
			default: b->nfa->uses_prev = b->nfa->uses_next = 1; break;
			}
		}
		return s;
	case RX_CAT:
		return compile(b, x->a, compile(b, x->b, next));
	case RX_ALT: {
		int l = compile(b, x->a, next), r = compile(b, x->b, next);

		return add(b, NFA_SPLIT, l, r);
	}
	case RX_REP:
		if (x->max < 0) {
			s = add(b, NFA_SPLIT, -1, next);
			if (s < 0)
				return -1;
			t = compile(b, x->a, s);
			if (t < 0)
				return -1;
			b->nfa->st[s].out = t;
			t = s;
		} else {
			t = next;
			for (int k = 0; k < x->max - x->min; k++) {
				int body = compile(b, x->a, t);

				t = add(b, NFA_SPLIT, body, next);
			}
		}
		for (int k = 0; k < x->min; k++)
			t = compile(b, x->a, t);
		return t;
	}
	b->rc = -EINVAL;
	return -1;
}

int nfa_build(struct nfa *nfa, const struct rx *rx)
{
	struct builder b = { nfa, rx, 0 };
	int m;

	memset(nfa, 0, sizeof(*nfa));
	nfa->sets = rx->sets;
	nfa->start = -1;
	if (rx->root < 0)
		return 0;
	m = add(&b, NFA_MATCH, -1, -1);
	nfa->start = compile(&b, rx->root, m);
	if (b.rc) {
		nfa_free(nfa);
		return b.rc;
	}
	return 0;
}

void nfa_free(struct nfa *nfa)
{
	free(nfa->st);
	nfa->st = NULL;
	nfa->n = nfa->cap = 0;
}
