/* SPDX-License-Identifier: MIT */
/*
 * Pattern text -> syntax tree, following GNU grep 3.8 in the C locale: the
 * syntax of glibc's RE_SYNTAX_GREP (BRE with \+ \? \| and \{m,n\}) and
 * RE_SYNTAX_EGREP (ERE, where an invalid interval is taken literally), the
 * GNU escapes \w \W \s \S \b \B \< \> \` \', bracket expressions with
 * [:class:], [=c=] and [.c.], and fixed strings for -F.  Each pattern line
 * becomes one alternative; -x and -w wrap each alternative in assertions, and
 * -i folds every byte set, so the matcher never interprets options per byte.
 *
 * Errors carry glibc's messages ("Unmatched ( or \\(", "Invalid range end",
 * "Invalid content of \\{\\}", ...).  Back-references are refused with
 * -ENOTSUP: a DFA cannot express them and no general matcher exists yet.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grep_int.h"

#define RE_DUP_MAX 32767

struct parser {
	struct rx *rx;
	const unsigned char *s;
	size_t n, i;
	int ere, icase, glibc;
	int depth;        /* open groups */
	int rc;           /* first error */
	char *err;
	size_t errlen;
	void (*warn)(const char *msg);
};

static int fail(struct parser *p, int rc, const char *msg)
{
	if (!p->rc) {
		p->rc = rc;
		if (p->err && p->errlen)
			snprintf(p->err, p->errlen, "%s", msg);
	}
	return -1;
}

/* Array v of n elements of size bytes, with room for one more (its
 * capacity *cap doubling from 64); NULL when memory ran out (the parse
 * failed: fail() says so), v then unchanged. */
static void *grow(struct parser *p, void *v, int n, int *cap, size_t size)
{
	if (n < *cap)
		return v;
	int c = *cap ? *cap * 2 : 64;
	void *nv = realloc(v, (size_t)c * size);

	if (!nv) {
		fail(p, -ENOMEM, "memory exhausted");
		return NULL;
	}
	*cap = c;
	return nv;
}

static int new_node(struct parser *p, int kind)
{
	struct rx *rx = p->rx;
	struct rx_node *nn;

	if (p->rc)
		return -1;
	if (!(nn = grow(p, rx->nodes, rx->nnodes, &rx->capnodes, sizeof(*nn))))
		return -1;
	rx->nodes = nn;
	memset(&rx->nodes[rx->nnodes], 0, sizeof(rx->nodes[0]));
	rx->nodes[rx->nnodes].kind = (uint8_t)kind;
	rx->nodes[rx->nnodes].a = rx->nodes[rx->nnodes].b = -1;
	return rx->nnodes++;
}

static void fold(struct cset *s)
{
	for (unsigned c = 'a'; c <= 'z'; c++) {
		if (cset_has(s, c) || cset_has(s, c - 32)) {
			cset_add(s, c);
			cset_add(s, c - 32);
		}
	}
}

/* A node for the byte set s (folded under -i; negated after folding). */
static int set_node(struct parser *p, struct cset s, int negate)
{
	struct rx *rx = p->rx;
	int k;

	if (p->icase)
		fold(&s);
	if (negate)
		for (int j = 0; j < 4; j++)
			s.w[j] = ~s.w[j];
	s.w['\n' >> 6] &= ~(UINT64_C(1) << ('\n' & 63)); /* lines never hold one */
	struct cset *ns;
	if ((k = new_node(p, RX_SET)) < 0)
		return -1;
	if (!(ns = grow(p, rx->sets, rx->nsets, &rx->capsets, sizeof(*ns))))
		return -1;
	rx->sets = ns;
	rx->sets[rx->nsets] = s;
	rx->nodes[k].set = rx->nsets++;
	return k;
}

static int char_node(struct parser *p, unsigned c)
{
	struct cset s = { { 0 } };

	cset_add(&s, c);
	return set_node(p, s, 0);
}

static int bin(struct parser *p, int kind, int a, int b)
{
	int k;

	if (a < 0)
		return b;
	if (b < 0)
		return a;
	if ((k = new_node(p, kind)) < 0)
		return -1;
	p->rx->nodes[k].a = a;
	p->rx->nodes[k].b = b;
	return k;
}

static int assert_node(struct parser *p, int what)
{
	int k = new_node(p, RX_ASSERT);

	if (k >= 0) {
		p->rx->nodes[k].assert = (uint8_t)what;
		p->rx->has_assert = 1;
	}
	return k;
}

static int empty_node(struct parser *p) { return new_node(p, RX_EMPTY); }

static int rep_node(struct parser *p, int a, int min, int max)
{
	int k = new_node(p, RX_REP);

	if (k >= 0) {
		p->rx->nodes[k].a = a;
		p->rx->nodes[k].min = min;
		p->rx->nodes[k].max = max;
	}
	return k;
}

/* ---- character classes ------------------------------------------------ */

static int class_set(const char *name, size_t len, int icase, struct cset *s)
{
	static const char *const names[] = { "alpha", "upper", "lower", "digit", "xdigit", "space",
					     "print", "punct", "graph", "cntrl", "blank", "alnum" };
	int which = -1;

	for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++)
		if (strlen(names[k]) == len && !memcmp(names[k], name, len))
			which = k;
	if (which < 0)
		return -1;
	if (icase && (which == 1 || which == 2))
		which = 0; /* [[:upper:]] and [[:lower:]] fold to [[:alpha:]] */
	for (unsigned c = 0; c < 128; c++) {
		int up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z', dg = c >= '0' && c <= '9';
		int sp = c == ' ' || (c >= '\t' && c <= '\r');
		int pr = c >= 32 && c < 127;
		int in = 0;

		switch (which) {
		case 0: in = up || lo; break;
		case 1: in = up; break;
		case 2: in = lo; break;
		case 3: in = dg; break;
		case 4: in = dg || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); break;
		case 5: in = sp; break;
		case 6: in = pr; break;
		case 7: in = pr && c != ' ' && !up && !lo && !dg; break;
		case 8: in = pr && c != ' '; break;
		case 9: in = c < 32 || c == 127; break;
		case 10: in = c == ' ' || c == '\t'; break;
		case 11: in = up || lo || dg; break;
		}
		if (in)
			cset_add(s, c);
	}
	return 0;
}

static const char unmatched_bracket[] = "Unmatched [, [^, [:, [., or [=";

/* After '[': a bracket expression up to its ']'. */
static int parse_bracket(struct parser *p)
{
	struct cset s = { { 0 } };
	int negate = 0, first = 1, fancy = 0;
	size_t open = p->i;

	if (p->i < p->n && p->s[p->i] == '^') {
		negate = 1;
		p->i++;
	}
	size_t content = p->i;
	for (;;) {
		int lo, is_class = 0;

		if (p->i >= p->n)
			return fail(p, -EINVAL, unmatched_bracket);
		unsigned c = p->s[p->i];

		if (c == ']' && !first) {
			p->i++;
			break;
		}
		first = 0;
		if (c == '[' && p->i + 1 < p->n &&
		    (p->s[p->i + 1] == ':' || p->s[p->i + 1] == '.' || p->s[p->i + 1] == '=')) {
			unsigned kind = p->s[p->i + 1];
			size_t j = p->i + 2;

			while (j + 1 < p->n && !(p->s[j] == kind && p->s[j + 1] == ']'))
				j++;
			if (j + 1 >= p->n)
				return fail(p, -EINVAL, unmatched_bracket);
			const char *name = (const char *)p->s + p->i + 2;
			size_t nlen = j - (p->i + 2);

			fancy = 1;
			if (kind == ':') {
				if (class_set(name, nlen, p->icase, &s) < 0)
					return fail(p, -EINVAL, "Invalid character class name");
				is_class = 1;
				lo = -1;
			} else {
				if (nlen != 1)
					return fail(p, -EINVAL, "Invalid collation character");
				lo = (unsigned char)name[0];
				if (kind == '=')
					is_class = 1; /* an equivalence class ends no range */
			}
			p->i = j + 2;
		} else {
			lo = (int)c;
			p->i++;
		}
		if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
			int hi;

			if (is_class)
				return fail(p, -EINVAL, "Invalid range end");
			p->i++;
			fancy = 1;
			if (p->s[p->i] == '[' && p->i + 1 < p->n &&
			    (p->s[p->i + 1] == '.' || p->s[p->i + 1] == '=' || p->s[p->i + 1] == ':')) {
				unsigned kind = p->s[p->i + 1];
				size_t j = p->i + 2;

				while (j + 1 < p->n && !(p->s[j] == kind && p->s[j + 1] == ']'))
					j++;
				if (j + 1 >= p->n)
					return fail(p, -EINVAL, unmatched_bracket);
				if (kind != '.' || j - (p->i + 2) != 1)
					return fail(p, -EINVAL, "Invalid range end");
				hi = p->s[p->i + 2];
				p->i = j + 2;
			} else {
				hi = p->s[p->i++];
			}
			if (hi < lo)
				return fail(p, -EINVAL, "Invalid range end");
			for (int k = lo; k <= hi; k++)
				cset_add(&s, (unsigned)k);
		} else if (!is_class || lo >= 0) {
			if (lo >= 0)
				cset_add(&s, (unsigned)lo);
		}
	}
	/* "[:space:]" is almost always a mistake for "[[:space:]]" */
	size_t clen = p->i - 1 - content;
	if (!fancy && clen >= 2 && p->s[content] == ':' && p->s[p->i - 2] == ':') {
		for (size_t k = content; k < p->i - 1; k++)
			if (p->s[k] != ':')
				return fail(p, -EINVAL,
					    "character class syntax is [[:space:]], not [:space:]");
	}
	(void)open;
	return set_node(p, s, negate);
}

/* ---- intervals (glibc's parse_dup_op) -------------------------------- */

enum { STOP_CLOSE, STOP_COMMA, STOP_END };

static int at_close(struct parser *p)
{
	if (p->ere)
		return p->i < p->n && p->s[p->i] == '}';
	return p->i + 1 < p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == '}';
}

static int fetch_number(struct parser *p, int *stop)
{
	int num = -1;

	for (;;) {
		if (p->i >= p->n) {
			*stop = STOP_END;
			return -2;
		}
		if (at_close(p)) {
			p->i += p->ere ? 1 : 2;
			*stop = STOP_CLOSE;
			return num;
		}
		int plain = p->s[p->i] != '\\';
		unsigned c;

		if (!plain) {
			if (p->i + 1 >= p->n) { /* a trailing backslash */
				p->i++;
				*stop = STOP_END;
				return -2;
			}
			p->i++;
		}
		c = p->s[p->i++];
		if (c == ',') {
			*stop = STOP_COMMA;
			return num;
		}
		if (!plain || c < '0' || c > '9' || num == -2)
			num = -2;
		else if (num == -1)
			num = (int)(c - '0');
		else
			num = num * 10 + (int)(c - '0') > RE_DUP_MAX + 1 ? RE_DUP_MAX + 1
									 : num * 10 + (int)(c - '0');
	}
}

/*
 * After an opening brace (ERE) or backslash-brace (BRE).  1 with the bounds
 * in min and max, 0 when the ERE text is no interval (the caller takes '{'
 * literally; p->i is restored), -1 error.
 */
static int parse_interval(struct parser *p, int *min, int *max)
{
	size_t save = p->i;
	int stop, start, end = 0;

	start = fetch_number(p, &stop);
	if (start == -1) {
		if (stop == STOP_COMMA)
			start = 0;
		else
			return fail(p, -EINVAL, "Invalid content of \\{\\}");
	}
	if (start != -2) {
		if (stop == STOP_CLOSE)
			end = start;
		else if (stop == STOP_COMMA)
			end = fetch_number(p, &stop);
		else
			end = -2;
	}
	if (start == -2 || end == -2) {
		if (p->ere) {
			p->i = save;
			return 0;
		}
		return fail(p, -EINVAL, stop == STOP_END ? "Unmatched \\{" : "Invalid content of \\{\\}");
	}
	if ((end != -1 && start > end) || stop != STOP_CLOSE)
		return fail(p, -EINVAL, "Invalid content of \\{\\}");
	if ((end == -1 ? start : end) > RE_DUP_MAX)
		return fail(p, -E2BIG, "Regular expression too big");
	*min = start;
	*max = end;
	return 1;
}

/* ---- the grammar -------------------------------------------------------- */

static int parse_alt(struct parser *p);

/* Is the text at p->i the end of a branch (so that '$' is an anchor)? */
static int bre_branch_end(struct parser *p, size_t at)
{
	if (at >= p->n)
		return 1;
	return at + 1 < p->n && p->s[at] == '\\' && (p->s[at + 1] == ')' || p->s[at + 1] == '|');
}

/* One atom, or -2 when the branch ends here. */
static int parse_atom(struct parser *p, int at_start)
{
	unsigned c = p->s[p->i];

	if (c == '.') {
		struct cset s = { { 0 } };

		p->i++;
		return set_node(p, s, 1);
	}
	if (c == '[') {
		p->i++;
		return parse_bracket(p);
	}
	if (c == '^' && (p->ere || at_start)) {
		p->i++;
		return assert_node(p, RXA_BOL);
	}
	if (c == '$' && (p->ere || bre_branch_end(p, p->i + 1))) {
		p->i++;
		return assert_node(p, RXA_EOL);
	}
	if (p->ere && c == '(') {
		p->i++;
		p->depth++;
		int k = parse_alt(p);

		if (p->rc)
			return -1;
		if (p->i >= p->n || p->s[p->i] != ')')
			return fail(p, -EINVAL, "Unmatched ( or \\(");
		p->i++;
		p->depth--;
		return k < 0 ? empty_node(p) : k;
	}
	if (c != '\\') {
		p->i++;
		return char_node(p, c);
	}
	/* an escape */
	if (p->i + 1 >= p->n)
		return fail(p, -EINVAL, "Trailing backslash");
	c = p->s[p->i + 1];
	p->i += 2;
	if (!p->ere && c == '(') {
		p->depth++;
		int k = parse_alt(p);

		if (p->rc)
			return -1;
		if (p->i + 1 >= p->n || p->s[p->i] != '\\' || p->s[p->i + 1] != ')')
			return fail(p, -EINVAL, "Unmatched ( or \\(");
		p->i += 2;
		p->depth--;
		return k < 0 ? empty_node(p) : k;
	}
	if (c >= '1' && c <= '9')
		return fail(p, -ENOTSUP, "back-references are not supported");
	switch (c) {
	case 'w': case 'W': case 's': case 'S': {
		struct cset s = { { 0 } };

		for (unsigned b = 0; b < 256; b++) {
			int in = (c == 'w' || c == 'W') ? grep_isword((unsigned char)b)
							: (b == ' ' || (b >= '\t' && b <= '\r'));
			if (in)
				cset_add(&s, b);
		}
		/* \W and \S are complements; not folded (their sets are closed) */
		int icase = p->icase, k;

		p->icase = 0;
		k = set_node(p, s, c == 'W' || c == 'S');
		p->icase = icase;
		return k;
	}
	case 'b': return assert_node(p, RXA_WB);
	case 'B': return assert_node(p, RXA_NWB);
	case '<': return assert_node(p, RXA_WBEG);
	case '>': return assert_node(p, RXA_WEND);
	case '`': return assert_node(p, RXA_BOL);
	case '\'': return assert_node(p, RXA_EOL);
	default:
		return char_node(p, c);
	}
}

static int parse_branch(struct parser *p)
{
	int seq = -1, at_start = 1, first = 1;

	while (p->i < p->n && !p->rc) {
		unsigned c = p->s[p->i];
		int atom;

		/* the end of this branch */
		if (p->ere) {
			if (c == '|' || (c == ')' && p->depth > 0))
				break;
		} else if (c == '\\' && p->i + 1 < p->n) {
			unsigned d = p->s[p->i + 1];

			if (d == '|')
				break;
			if (d == ')') {
				if (p->depth > 0)
					break;
				return fail(p, -EINVAL, "Unmatched ) or \\)");
			}
		}
		/* a repetition operator with nothing before it */
		if (at_start) {
			if (p->ere && (c == '*' || c == '+' || c == '?')) {
				char msg[64];

				snprintf(msg, sizeof(msg), "%c at start of expression", c);
				if (p->warn)
					p->warn(msg);
				p->i++;
				continue;
			}
			if (p->ere && c == '{') {
				int mn, mx, r;

				p->i++;
				r = parse_interval(p, &mn, &mx);
				if (r < 0)
					return -1;
				if (r > 0) {
					if (p->warn)
						p->warn("{...} at start of expression");
					continue;
				}
				atom = char_node(p, '{');
				goto postfix;
			}
			if (!p->ere && c == '*') {
				p->i++;
				atom = char_node(p, '*');
				goto postfix;
			}
			if (!p->ere && c == '\\' && p->i + 1 < p->n &&
			    (p->s[p->i + 1] == '+' || p->s[p->i + 1] == '?' || p->s[p->i + 1] == '{')) {
				atom = char_node(p, p->s[p->i + 1]);
				p->i += 2;
				goto postfix;
			}
		}
		/* BRE: '^' anchors only as the very first thing of a branch */
		atom = parse_atom(p, first);
		first = 0;
		if (atom < 0)
			return -1;
		if (p->rx->nodes[atom].kind == RX_ASSERT && p->glibc) {
			/*
			 * glibc's regcomp (which GNU grep uses to locate -o
			 * matches) never repeats an anchor: a BRE operator
			 * after one is an ordinary character, an ERE one is
			 * skipped.  dfa.c (line selection) repeats it.
			 */
			unsigned d = p->i < p->n ? p->s[p->i] : 0;

			seq = bin(p, RX_CAT, seq, atom);
			if (!p->ere && d == '*') {
				p->i++;
				atom = char_node(p, '*');
				goto postfix;
			}
			if (!p->ere && d == '\\' && p->i + 1 < p->n &&
			    (p->s[p->i + 1] == '+' || p->s[p->i + 1] == '?')) {
				atom = char_node(p, p->s[p->i + 1]);
				p->i += 2;
				goto postfix;
			}
			while (p->ere && p->i < p->n && strchr("*+?", p->s[p->i]))
				p->i++;
			continue;
		}
		if (p->rx->nodes[atom].kind == RX_ASSERT) {
			if (!p->ere && at_start) {
				/* BRE: only zero-width atoms so far, so a following
				 * '*', '\+', '\?' or '\{' is still an ordinary
				 * character (dfa.c's "laststart") */
				seq = bin(p, RX_CAT, seq, atom);
				continue;
			}
			if (p->ere && p->i < p->n && strchr("*+?", p->s[p->i])) {
				/* glibc skips a repetition operator after an anchor,
				 * and then takes a ')' for an ordinary character:
				 * GNU grep reports the group as unmatched */
				size_t j = p->i;

				while (j < p->n && strchr("*+?", p->s[j]))
					j++;
				if (j < p->n && p->s[j] == ')' && p->depth > 0)
					return fail(p, -EINVAL, "Unmatched ( or \\(");
			}
		}
postfix:
		if (atom < 0)
			return -1;
		at_start = 0;
		first = 0;
		for (;;) {
			int mn, mx;

			if (p->i >= p->n)
				break;
			c = p->s[p->i];
			if (c == '*') {
				p->i++;
				mn = 0, mx = -1;
			} else if (p->ere && (c == '+' || c == '?')) {
				p->i++;
				mn = c == '+', mx = c == '+' ? -1 : 1;
			} else if (!p->ere && c == '\\' && p->i + 1 < p->n &&
				   (p->s[p->i + 1] == '+' || p->s[p->i + 1] == '?')) {
				mn = p->s[p->i + 1] == '+', mx = p->s[p->i + 1] == '+' ? -1 : 1;
				p->i += 2;
			} else if ((p->ere && c == '{') ||
				   (!p->ere && c == '\\' && p->i + 1 < p->n && p->s[p->i + 1] == '{')) {
				size_t save = p->i;
				int r;

				p->i += p->ere ? 1 : 2;
				r = parse_interval(p, &mn, &mx);
				if (r < 0)
					return -1;
				if (r == 0) {
					p->i = save;
					break; /* '{' starts the next atom, literally */
				}
			} else {
				break;
			}
			atom = rep_node(p, atom, mn, mx);
			if (atom < 0)
				return -1;
		}
		seq = bin(p, RX_CAT, seq, atom);
		/* ERE: a literal '{' that is no interval */
		if (p->ere && p->i < p->n && p->s[p->i] == '{') {
			size_t save = p->i;
			int mn, mx;

			p->i++;
			int r = parse_interval(p, &mn, &mx);

			p->i = save;
			if (r < 0)
				return -1;
			if (r == 0) {
				p->i++;
				atom = char_node(p, '{');
				goto postfix;
			}
		}
	}
	if (p->rc)
		return -1;
	return seq < 0 ? empty_node(p) : seq;
}

static int parse_alt(struct parser *p)
{
	int k = parse_branch(p);

	while (!p->rc && p->i < p->n) {
		if (p->ere && p->s[p->i] == '|') {
			p->i++;
		} else if (!p->ere && p->s[p->i] == '\\' && p->i + 1 < p->n && p->s[p->i + 1] == '|') {
			p->i += 2;
		} else {
			break;
		}
		int r = parse_branch(p);

		k = bin(p, RX_ALT, k, r);
	}
	return p->rc ? -1 : k;
}

static int parse_one(struct parser *p)
{
	/* ERE: an unmatched ')' is an ordinary character (glibc), which
	 * parse_branch gets by ending branches at ')' only inside a group */
	int k = parse_alt(p);

	return p->rc ? -1 : k;
}

int rx_parse(struct rx *rx, const char *pats, size_t len, const struct grep_opts_rx *o,
	     char *err, size_t errlen, void (*warn)(const char *msg))
{
	struct parser p = { 0 };
	size_t beg = 0;
	int all = -1;

	memset(rx, 0, sizeof(*rx));
	rx->root = -1;
	p.rx = rx;
	p.ere = o->syntax == GREP_ERE;
	p.icase = o->icase;
	p.glibc = o->glibc;
	p.err = err;
	p.errlen = errlen;
	p.warn = warn;
	for (;;) {
		size_t end = beg;
		int k;

		while (end < len && pats[end] != '\n')
			end++;
		p.s = (const unsigned char *)pats + beg;
		p.n = end - beg;
		p.i = 0;
		p.depth = 0;
		if (o->syntax == GREP_FIXED) {
			k = -1;
			for (size_t j = 0; j < p.n; j++)
				k = bin(&p, RX_CAT, k, char_node(&p, p.s[j]));
			if (k < 0)
				k = empty_node(&p);
		} else {
			k = parse_one(&p);
			if (!p.rc && p.i < p.n)
				fail(&p, -EINVAL, p.ere ? "Unmatched ) or \\)" : "Invalid regular expression");
		}
		if (p.rc)
			goto bad;
		if (o->lines) {
			k = bin(&p, RX_CAT, assert_node(&p, RXA_BOL), k);
			k = bin(&p, RX_CAT, k, assert_node(&p, RXA_EOL));
		} else if (o->words) {
			k = bin(&p, RX_CAT, assert_node(&p, RXA_NOTWPREV), k);
			k = bin(&p, RX_CAT, k, assert_node(&p, RXA_NOTWNEXT));
		}
		all = bin(&p, RX_ALT, all, k);
		if (p.rc)
			goto bad;
		if (end >= len)
			break;
		beg = end + 1;
	}
	rx->root = all;
	return 0;
bad:
	rx_free(rx);
	return p.rc;
}

void rx_free(struct rx *rx)
{
	free(rx->nodes);
	free(rx->sets);
	memset(rx, 0, sizeof(*rx));
	rx->root = -1;
}
