/* SPDX-License-Identifier: MIT */
/*
 * NFA -> DFA by subset construction, with context assertions resolved on the
 * way.  A DFA state is (kernel, prev): the NFA states reached by the last
 * byte, and the class of that byte (line edge, word byte, other byte).  Its
 * epsilon closure depends on the class of the *next* byte too, so a state
 * keeps up to three closures, one per next class; a transition on byte c
 * uses the closure for c's class, and the state accepts "before a byte of
 * class k" when MATCH is in the closure for k (bit k of acc).  Classes the
 * pattern never asks about are folded together so they cost no states.
 *
 * Two uses.  Local searches build states lazily, at most max_states of them;
 * when the cache is full it is emptied and refilled from the current state,
 * so any pattern runs in bounded memory.  The code generator builds every
 * state reachable from a line start and refuses (-E2BIG) beyond the bound.
 * An unanchored DFA lets a match start at every byte (the NFA's start joins
 * every closure); an anchored one only at its initial state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

static int assert_ok(int what, int prev, int next)
{
	int pw = prev == CTX_WORD, nw = next == CTX_WORD;

	switch (what) {
	case RXA_BOL: return prev == CTX_EDGE;
	case RXA_EOL: return next == CTX_EDGE;
	case RXA_WBEG: return !pw && nw;
	case RXA_WEND: return pw && !nw;
	case RXA_WB: return pw != nw;
	case RXA_NWB: return pw == nw;
	case RXA_NOTWPREV: return !pw;
	case RXA_NOTWNEXT: return !nw;
	}
	return 0;
}

/*
 * Closure of seeds (plus the NFA start when unanchored) under prev/next:
 * the SET states reached, sorted, into d->buf; returns their count, and
 * *match when MATCH is reachable.
 */
static int closure(struct dfa *d, const int *seeds, int nseeds, int prev, int next, int *match)
{
	const struct nfa *nfa = d->nfa;
	int sp = 0, nout = 0;

	*match = 0;
	if (++d->gen == 0x7fffffff) {
		memset(d->mark, 0, (size_t)nfa->n * sizeof(int));
		d->gen = 1;
	}
	if (!d->anchored && nfa->start >= 0)
		d->stack[sp++] = nfa->start;
	for (int k = 0; k < nseeds; k++)
		d->stack[sp++] = seeds[k];
	while (sp > 0) {
		int s = d->stack[--sp];
		const struct nfa_state *x;

		if (s < 0 || d->mark[s] == d->gen)
			continue;
		d->mark[s] = d->gen;
		x = &nfa->st[s];
		switch (x->kind) {
		case NFA_SET:
			d->buf[nout++] = s;
			break;
		case NFA_MATCH:
			*match = 1;
			break;
		case NFA_SPLIT:
			d->stack[sp++] = x->out2;
			d->stack[sp++] = x->out;
			break;
		case NFA_ASSERT:
			if (assert_ok(x->assert, prev, next))
				d->stack[sp++] = x->out;
			break;
		}
	}
	return nout;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static uint64_t hash_key(const int *k, int n, int prev)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)prev;

	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)(uint32_t)k[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static void free_states(struct dfa *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->st[i].kernel);
	d->n = 0;
	for (size_t i = 0; i < d->hcap; i++)
		d->htab[i] = -1;
	d->init[0] = d->init[1] = d->init[2] = -1;
}

static int compute_acc(struct dfa *d, int id)
{
	struct dfa_state *s = &d->st[id];
	int acc = 0, m;

	for (int nx = 0; nx < 3; nx++) {
		if (!d->nfa->uses_next && nx > 0) {
			if (acc & 1)
				acc |= 6;
			break;
		}
		closure(d, s->kernel, s->nkernel, s->prev, nx, &m);
		if (m)
			acc |= 1 << nx;
	}
	s->acc = (uint8_t)acc;
	s->acc_done = 1;
	return acc;
}

/* The state (kernel, prev), added if new.  -ENOMEM; -E2BIG when full and
 * flushing is not allowed. */
static int intern(struct dfa *d, const int *kernel, int nk, int prev, int may_flush)
{
	uint64_t h;
	size_t i;

	if (!d->nfa->uses_prev)
		prev = 0;
	h = hash_key(kernel, nk, prev);
	for (i = h & (d->hcap - 1); d->htab[i] >= 0; i = (i + 1) & (d->hcap - 1)) {
		struct dfa_state *s = &d->st[d->htab[i]];

		if (s->prev == prev && s->nkernel == nk &&
		    !memcmp(s->kernel, kernel, (size_t)nk * sizeof(int)))
			return d->htab[i];
	}
	if (d->n >= d->max_states) {
		int *copy;

		if (!may_flush)
			return -E2BIG;
		/* empty the cache, keeping the kernel (it may live in d->buf) */
		copy = malloc(((size_t)nk + 1) * sizeof(int));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, kernel, (size_t)nk * sizeof(int));
		free_states(d);
		d->flushes++;
		int r = intern(d, copy, nk, prev, 0);

		free(copy);
		return r;
	}
	if (d->n == d->cap) {
		int cap = d->cap * 2;
		struct dfa_state *ns = realloc(d->st, (size_t)cap * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		d->st = ns;
		d->cap = cap;
	}
	struct dfa_state *s = &d->st[d->n];

	s->kernel = malloc(((size_t)nk + 1) * sizeof(int));
	if (!s->kernel)
		return -ENOMEM;
	memcpy(s->kernel, kernel, (size_t)nk * sizeof(int));
	s->nkernel = nk;
	s->prev = (uint8_t)prev;
	s->acc_done = 0;
	for (int c = 0; c < 256; c++)
		s->next[c] = DFA_UNKNOWN;
	d->htab[i] = d->n;
	int id = d->n++;

	compute_acc(d, id);
	return id;
}

int dfa_init(struct dfa *d, const struct nfa *nfa, int anchored, int max_states)
{
	size_t ns = nfa->n ? (size_t)nfa->n : 1;

	memset(d, 0, sizeof(*d));
	d->nfa = nfa;
	d->anchored = anchored;
	d->max_states = max_states;
	d->cap = 64;
	d->hcap = 1;
	while (d->hcap < (size_t)max_states * 2)
		d->hcap <<= 1;
	d->st = malloc((size_t)d->cap * sizeof(*d->st));
	d->htab = malloc(d->hcap * sizeof(int));
	d->stack = malloc(ns * 2 * sizeof(int) + 16);
	d->mark = calloc(ns, sizeof(int));
	d->buf = malloc(ns * sizeof(int) + 16);
	if (!d->st || !d->htab || !d->stack || !d->mark || !d->buf) {
		dfa_free(d);
		return -ENOMEM;
	}
	d->n = 0;
	free_states(d);
	return 0;
}

void dfa_free(struct dfa *d)
{
	if (d->st)
		free_states(d);
	free(d->st);
	free(d->htab);
	free(d->stack);
	free(d->mark);
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

int dfa_initial(struct dfa *d, int prev)
{
	if (!d->nfa->uses_prev)
		prev = 0;
	if (d->init[prev] < 0) {
		int seed = d->nfa->start;
		int r = intern(d, &seed, d->anchored && seed >= 0 ? 1 : 0, prev, 1);

		if (r < 0)
			return r;
		d->init[prev] = r;
	}
	return d->init[prev];
}

static int compute_step(struct dfa *d, int id, unsigned char c, int may_flush)
{
	struct dfa_state *s = &d->st[id];
	int next = d->nfa->uses_next ? ctx_of(c) : 0;
	int m, n, nk = 0;

	n = closure(d, s->kernel, s->nkernel, s->prev, next, &m);
	for (int k = 0; k < n; k++) {
		const struct nfa_state *x = &d->nfa->st[d->buf[k]];

		if (cset_has(&d->nfa->sets[x->set], c))
			d->buf[nk++] = x->out;
	}
	if (d->anchored && nk == 0) {
		s->next[c] = DFA_DEAD;
		return DFA_DEAD;
	}
	qsort(d->buf, (size_t)nk, sizeof(int), cmp_int);
	int w = 0;

	for (int k = 0; k < nk; k++)
		if (!w || d->buf[w - 1] != d->buf[k])
			d->buf[w++] = d->buf[k];
	int before = d->n;
	uint64_t fl = d->flushes;
	int t = intern(d, d->buf, w, ctx_of(c), may_flush);

	if (t < 0)
		return t;
	if (d->flushes == fl && d->n >= before)
		d->st[id].next[c] = t;
	return t;
}

int dfa_step(struct dfa *d, int s, unsigned char c)
{
	int t = d->st[s].next[c];

	if (t != DFA_UNKNOWN)
		return t;
	return compute_step(d, s, c, 1);
}

int dfa_acc(struct dfa *d, int s)
{
	return d->st[s].acc;
}

int dfa_build_all(struct dfa *d)
{
	int r = dfa_initial(d, CTX_EDGE);

	if (r < 0)
		return r;
	for (int i = 0; i < d->n; i++) {
		for (int c = 0; c < 256; c++) {
			if (c == '\n' || d->st[i].next[c] != DFA_UNKNOWN)
				continue;
			r = compute_step(d, i, (unsigned char)c, 0);
			if (r < 0 && r != DFA_DEAD)
				return r;
		}
	}
	return 0;
}

int dfa_line_matches(struct dfa *d, const unsigned char *p, size_t n)
{
	int s = dfa_initial(d, CTX_EDGE);

	if (s < 0)
		return s;
	for (size_t i = 0; i < n; i++) {
		const struct dfa_state *st = &d->st[s];
		unsigned char c = p[i];

		if (st->acc & (1 << ctx_of(c)))
			return 1;
		int t = st->next[c];

		if (t < 0) {
			t = compute_step(d, s, c, 1);
			if (t < 0)
				return t;
		}
		s = t;
	}
	return (d->st[s].acc & 1) != 0;
}

int dfa_find(struct dfa *a, const unsigned char *p, size_t n, size_t from, size_t *ms, size_t *me)
{
	for (size_t s = from; s <= n; s++) {
		int st = dfa_initial(a, s == 0 ? CTX_EDGE : ctx_of(p[s - 1]));
		long best = -1;

		if (st < 0)
			return st;
		for (size_t e = s;; e++) {
			int nx = e == n ? CTX_EDGE : ctx_of(p[e]);

			if (a->st[st].acc & (1 << nx))
				best = (long)e;
			if (e == n)
				break;
			st = dfa_step(a, st, p[e]);
			if (st == DFA_DEAD)
				break;
			if (st < 0)
				return st;
		}
		if (best >= 0) {
			*ms = s;
			*me = (size_t)best;
			return 1;
		}
	}
	return 0;
}

long dfa_longest_at(struct dfa *a, const unsigned char *p, size_t s, size_t strend)
{
	long best = -1;
	int st;

	if (strend < s)
		return -1;
	st = dfa_initial(a, s == 0 ? CTX_EDGE : ctx_of(p[s - 1]));
	if (st < 0)
		return -1;
	for (size_t e = s;; e++) {
		/* at strend: no line end (REG_NOTEOL), and no word byte follows */
		int nx = e == strend ? CTX_OTHER : ctx_of(p[e]);

		if (a->st[st].acc & (1 << nx))
			best = (long)(e - s);
		if (e == strend)
			break;
		st = dfa_step(a, st, p[e]);
		if (st < 0)
			break;
	}
	return best;
}
