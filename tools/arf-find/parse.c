/* SPDX-License-Identifier: MIT */
/*
 * GNU find's command line, the part arf-find runs on the server: options
 * -P, starting points, then an expression of the primaries listed in
 * arf-find(1) joined by ( ) ! -not -a -and -o -or and `,`.  Anything else
 * -- another predicate or action, a form of an argument this parser does
 * not take (symbolic -perm modes, fractional days, unknown users), an
 * option placed where GNU find would warn about it, a syntax error -- makes
 * find_parse answer 1: the whole command line goes to GNU find, which runs
 * it through the mount (or says what is wrong with it in its own words).
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <locale.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "find_int.h"

struct parser {
	struct find_run *run;
	char **argv;
	int argc, i;
	int fail;                  /* 1: leave it to GNU find */
	int saw_test;              /* a non-option primary was seen */
	int has_action;            /* an action other than -prune */
	reg_syntax_t syntax;
};

static struct find_node *node(struct parser *p, enum find_kind k)
{
	struct find_node *n = calloc(1, sizeof(*n));

	if (!n) {
		p->fail = 1;
		return NULL;
	}
	n->kind = k;
	return n;
}

static const char *arg(struct parser *p)
{
	if (p->i >= p->argc) {
		p->fail = 1; /* "missing argument to ...": GNU find says it */
		return NULL;
	}
	return p->argv[p->i++];
}

/* [+-]digits: *cmp and *v; 0 or -1. */
static int number(const char *s, int *cmp, uint64_t *v, const char **rest)
{
	char *end;

	*cmp = ARF_FIND_EQ;
	if (*s == '+') {
		*cmp = ARF_FIND_GT;
		s++;
	} else if (*s == '-') {
		*cmp = ARF_FIND_LT;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (rest)
		*rest = end;
	else if (*end)
		return -1;
	return 0;
}

static int octal_mode(const char *s, uint64_t *v)
{
	char *end;

	if (!*s)
		return -1;
	for (const char *c = s; *c; c++)
		if (*c < '0' || *c > '7')
			return -1;
	*v = strtoull(s, &end, 8);
	return *v > 07777 ? -1 : 0;
}

/* A glob this walker can match (arf_prog_find.h's ARF_FIND_NAME): any; the
 * program itself says "undecided" for what it cannot.  A '/' in -name is
 * GNU find's warning: not ours. */
static struct find_node *primary(struct parser *p)
{
	const char *a = p->argv[p->i++];
	struct find_node *n = NULL;
	const char *v;

	if (!strcmp(a, "-true") || !strcmp(a, "-false")) {
		n = node(p, a[1] == 't' ? FK_TRUE : FK_FALSE);
	} else if (!strcmp(a, "-name") || !strcmp(a, "-iname")) {
		if (!(v = arg(p)) || strchr(v, '/'))
			return p->fail = 1, NULL;
		n = node(p, FK_NAME);
		if (n) {
			n->str = v;
			n->icase = a[1] == 'i';
		}
	} else if (!strcmp(a, "-path") || !strcmp(a, "-ipath") || !strcmp(a, "-wholename") ||
		   !strcmp(a, "-iwholename")) {
		if (!(v = arg(p)))
			return NULL;
		n = node(p, FK_PATH);
		if (n) {
			n->str = v;
			n->icase = a[1] == 'i';
		}
	} else if (!strcmp(a, "-regex") || !strcmp(a, "-iregex")) {
		const char *msg;

		if (!(v = arg(p)) || !(n = node(p, FK_REGEX)))
			return NULL;
		n->str = v;
		n->re = calloc(1, sizeof(*n->re));
		if (!n->re)
			return p->fail = 1, NULL;
		re_syntax_options = p->syntax | (a[1] == 'i' ? RE_ICASE : 0);
		msg = re_compile_pattern(v, strlen(v), n->re);
		if (msg)
			return p->fail = 1, NULL; /* GNU find words the error */
	} else if (!strcmp(a, "-type")) {
		unsigned mask = 0;

		if (!(v = arg(p)) || !*v)
			return p->fail = 1, NULL;
		for (const char *c = v; *c; c++) {
			static const char letters[] = "bcdpfls";
			static const unsigned fmt[] = { 006, 002, 004, 001, 010, 012, 014 };
			const char *k = strchr(letters, *c);

			if (!k || (c[1] && c[1] != ',') || (c[1] == ',' && !c[2]))
				return p->fail = 1, NULL;
			mask |= 1u << fmt[k - letters];
			if (c[1])
				c++;
		}
		if ((n = node(p, FK_TYPE)))
			n->which = mask;
	} else if (!strcmp(a, "-size")) {
		const char *rest;
		uint64_t unit = 512;
		int cmp;
		uint64_t x;

		if (!(v = arg(p)) || number(v, &cmp, &x, &rest) < 0)
			return p->fail = 1, NULL;
		if (*rest) {
			switch (*rest) {
			case 'b': unit = 512; break;
			case 'c': unit = 1; break;
			case 'w': unit = 2; break;
			case 'k': unit = 1024; break;
			case 'M': unit = 1024 * 1024; break;
			case 'G': unit = 1024 * 1024 * 1024; break;
			default: return p->fail = 1, NULL;
			}
			if (rest[1])
				return p->fail = 1, NULL;
		}
		if ((n = node(p, FK_SIZE))) {
			n->cmp = cmp;
			n->x = x;
			n->y = unit;
		}
	} else if (!strcmp(a, "-mtime") || !strcmp(a, "-atime") || !strcmp(a, "-ctime") ||
		   !strcmp(a, "-mmin") || !strcmp(a, "-amin") || !strcmp(a, "-cmin")) {
		int cmp, days = !strcmp(a + 2, "time");
		uint64_t x;
		int64_t unit = days ? 86400ll * 1000000000ll : 60ll * 1000000000ll;
		int64_t origin = p->run->o.now_ns - (days ? unit : 0), ref;

		if (!(v = arg(p)) || number(v, &cmp, &x, NULL) < 0 || x > 100000000)
			return p->fail = 1, NULL;
		/* GNU find's windows (pred_timewindow): the origin is a day
		 * before the start for days, the start for minutes, and a
		 * second short of a day later for -N days */
		if (days && cmp == ARF_FIND_LT)
			origin += 86399ll * 1000000000ll;
		ref = origin - (int64_t)x * unit;
		if (!(n = node(p, FK_TIME)))
			return NULL;
		n->which = a[1] == 'a' ? 0 : a[1] == 'c' ? 1 : 2;
		if (cmp == ARF_FIND_GT) {         /* older: t < ref */
			n->x = (uint64_t)INT64_MIN;
			n->y = (uint64_t)(ref - 1);
		} else if (cmp == ARF_FIND_LT) {  /* newer: t > ref */
			n->x = (uint64_t)ref;
			n->y = (uint64_t)INT64_MAX;
		} else {                          /* ref < t <= ref + window */
			n->x = (uint64_t)ref;
			n->y = (uint64_t)(ref + (days ? unit : 60ll * 1000000000ll));
		}
	} else if (!strcmp(a, "-newer") || !strcmp(a, "-anewer") || !strcmp(a, "-cnewer")) {
		struct stat st;

		if (!(v = arg(p)) || stat(v, &st) < 0)
			return p->fail = 1, NULL; /* GNU find reports it */
		if (!(n = node(p, FK_TIME)))
			return NULL;
		n->which = a[1] == 'a' ? 0 : a[1] == 'c' ? 1 : 2;
		n->x = (uint64_t)((int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
		n->y = (uint64_t)INT64_MAX;
	} else if (!strcmp(a, "-user") || !strcmp(a, "-group")) {
		uint64_t id;
		int cmp;

		if (!(v = arg(p)) || !*v)
			return p->fail = 1, NULL;
		if (a[1] == 'u') {
			struct passwd *pw = getpwnam(v);

			if (pw)
				id = pw->pw_uid;
			else if (number(v, &cmp, &id, NULL) < 0 || cmp != ARF_FIND_EQ)
				return p->fail = 1, NULL;
		} else {
			struct group *gr = getgrnam(v);

			if (gr)
				id = gr->gr_gid;
			else if (number(v, &cmp, &id, NULL) < 0 || cmp != ARF_FIND_EQ)
				return p->fail = 1, NULL;
		}
		if ((n = node(p, a[1] == 'u' ? FK_UID : FK_GID))) {
			n->cmp = ARF_FIND_EQ;
			n->x = id;
		}
	} else if (!strcmp(a, "-uid") || !strcmp(a, "-gid") || !strcmp(a, "-links") ||
		   !strcmp(a, "-inum")) {
		int cmp;
		uint64_t x;

		if (!(v = arg(p)) || number(v, &cmp, &x, NULL) < 0)
			return p->fail = 1, NULL;
		n = node(p, a[1] == 'u' ? FK_UID : a[1] == 'g' ? FK_GID : a[1] == 'l' ? FK_LINKS
			 : FK_INUM);
		if (n) {
			n->cmp = cmp;
			n->x = x;
		}
	} else if (!strcmp(a, "-perm")) {
		int kind = 0;
		uint64_t m;

		if (!(v = arg(p)))
			return NULL;
		if (*v == '-' || *v == '/')
			kind = *v++ == '-' ? 1 : 2;
		if (octal_mode(v, &m) < 0 || (kind == 2 && m == 0))
			return p->fail = 1, NULL; /* symbolic modes, /0's warning: GNU find's */
		if ((n = node(p, FK_PERM))) {
			n->cmp = kind;
			n->x = m;
		}
	} else if (!strcmp(a, "-empty")) {
		n = node(p, FK_EMPTY);
		p->run->o.need_empty = 1;
	} else if (!strcmp(a, "-print") || !strcmp(a, "-print0")) {
		n = node(p, a[6] ? FK_PRINT0 : FK_PRINT);
		p->has_action = 1;
	} else if (!strcmp(a, "-printf")) {
		if (!(v = arg(p)))
			return NULL;
		for (const char *c = v; *c; c++) {
			if (*c == '\\' && c[1]) {
				c++;
				continue;
			}
			if (*c != '%')
				continue;
			c++;
			while (*c && strchr("-+ #0", *c))
				c++;
			while (isdigit((unsigned char)*c) || *c == '.')
				c++;
			if (!*c)
				break; /* a lone % at the end: printed as such */
			if (*c == 'T' && c[1] == '@') {
				c++;
				continue;
			}
			if (*c == 'l')
				p->run->o.need_links = 1;
			if (!strchr("pfhPsmMugUGnildytk%", *c))
				return p->fail = 1, NULL; /* GNU find's directives */
		}
		if ((n = node(p, FK_PRINTF)))
			n->str = v;
		p->has_action = 1;
	} else if (!strcmp(a, "-prune")) {
		n = node(p, FK_PRUNE);
	} else {
		p->fail = 1; /* not shipped, or not find's */
		return NULL;
	}
	p->saw_test = 1;
	return n;
}

/* Global options: position-sensitive in GNU find's warnings. */
static int option(struct parser *p, const char *a)
{
	const char *v;
	char *end;

	if (!strcmp(a, "-maxdepth") || !strcmp(a, "-mindepth")) {
		p->i++;
		if (!(v = arg(p)) || !isdigit((unsigned char)*v))
			return p->fail = 1, 1;
		long d = strtol(v, &end, 10);

		if (*end || d > 1000000)
			return p->fail = 1, 1;
		if (a[2] == 'a')
			p->run->o.maxdepth = (int)d;
		else
			p->run->o.mindepth = (int)d;
	} else if (!strcmp(a, "-depth") || !strcmp(a, "-d")) {
		p->i++;
		p->run->o.depth_first = 1;
	} else if (!strcmp(a, "-regextype")) {
		p->i++;
		if (!(v = arg(p)))
			return 1;
		if (!strcmp(v, "emacs"))
			p->syntax = RE_SYNTAX_EMACS;
		else if (!strcmp(v, "findutils-default"))
			p->syntax = RE_SYNTAX_EMACS; /* GNU find 4.9: '.' does not match a newline */
		else if (!strcmp(v, "posix-basic"))
			p->syntax = RE_SYNTAX_POSIX_BASIC;
		else if (!strcmp(v, "posix-extended"))
			p->syntax = RE_SYNTAX_POSIX_EXTENDED;
		else
			p->fail = 1;
		return 1; /* not a global option: no warning when late */
	} else if (!strcmp(a, "-noleaf") || !strcmp(a, "-ignore_readdir_race") ||
		   !strcmp(a, "-noignore_readdir_race") || !strcmp(a, "-nowarn") ||
		   !strcmp(a, "-warn")) {
		p->i++;
	} else {
		return 0;
	}
	if (p->saw_test)
		p->fail = 1; /* GNU find warns about the position */
	return 1;
}

static struct find_node *expr(struct parser *p);

static int at_end(struct parser *p)
{
	if (p->i >= p->argc)
		return 1;
	const char *a = p->argv[p->i];

	return !strcmp(a, ")") || !strcmp(a, "-o") || !strcmp(a, "-or") || !strcmp(a, ",");
}

static struct find_node *unary(struct parser *p)
{
	const char *a;

	while (!p->fail && p->i < p->argc && option(p, p->argv[p->i]))
		if (p->i >= p->argc || at_end(p))
			return node(p, FK_TRUE); /* options evaluate true */
	if (p->fail || p->i >= p->argc)
		return p->fail = 1, NULL;
	a = p->argv[p->i];
	if (!strcmp(a, "!") || !strcmp(a, "-not")) {
		struct find_node *n;

		p->i++;
		n = node(p, FK_NOT);
		if (n && !(n->l = unary(p)))
			return NULL;
		return n;
	}
	if (!strcmp(a, "(")) {
		struct find_node *n;

		p->i++;
		n = expr(p);
		if (!n || p->i >= p->argc || strcmp(p->argv[p->i], ")"))
			return p->fail = 1, NULL;
		p->i++;
		return n;
	}
	if (at_end(p) || !strcmp(a, "-a") || !strcmp(a, "-and"))
		return p->fail = 1, NULL;
	return primary(p);
}

static struct find_node *and_expr(struct parser *p)
{
	struct find_node *l = unary(p);

	while (l && !p->fail && !at_end(p)) {
		struct find_node *n;

		if (!strcmp(p->argv[p->i], "-a") || !strcmp(p->argv[p->i], "-and"))
			p->i++;
		n = node(p, FK_AND);
		if (!n)
			return NULL;
		n->l = l;
		if (!(n->r = unary(p)))
			return NULL;
		l = n;
	}
	return p->fail ? NULL : l;
}

static struct find_node *or_expr(struct parser *p)
{
	struct find_node *l = and_expr(p);

	while (l && !p->fail && p->i < p->argc &&
	       (!strcmp(p->argv[p->i], "-o") || !strcmp(p->argv[p->i], "-or"))) {
		struct find_node *n = node(p, FK_OR);

		p->i++;
		if (!n)
			return NULL;
		n->l = l;
		if (!(n->r = and_expr(p)))
			return NULL;
		l = n;
	}
	return p->fail ? NULL : l;
}

static struct find_node *expr(struct parser *p)
{
	struct find_node *l = or_expr(p);

	while (l && !p->fail && p->i < p->argc && !strcmp(p->argv[p->i], ",")) {
		struct find_node *n = node(p, FK_COMMA);

		p->i++;
		if (!n)
			return NULL;
		n->l = l;
		if (!(n->r = or_expr(p)))
			return NULL;
		l = n;
	}
	return p->fail ? NULL : l;
}

static int looks_like_expr(const char *a)
{
	return (a[0] == '-' && a[1]) || !strcmp(a, "(") || !strcmp(a, "!") || !strcmp(a, ",") ||
	       !strcmp(a, ")");
}

int find_parse(struct find_run *run, int argc, char **argv, int *sbeg, int *send)
{
	struct parser p = { run, argv, argc, 1, 0, 0, 0, RE_SYNTAX_EMACS };
	struct find_node *e = NULL;

	run->o.maxdepth = -1;
	run->o.mindepth = -1;
	while (p.i < argc && argv[p.i][0] == '-' && argv[p.i][1] && !argv[p.i][2] &&
	       strchr("HLPDO", argv[p.i][1])) {
		if (argv[p.i][1] != 'P')
			return 1; /* following links, debugging: GNU find's */
		p.i++;
	}
	if (p.i < argc && !strcmp(argv[p.i], "--"))
		p.i++;
	*sbeg = p.i;
	while (p.i < argc && !looks_like_expr(argv[p.i]))
		p.i++;
	*send = p.i;
	if (p.i < argc) {
		e = expr(&p);
		if (!p.fail && p.i < argc)
			p.fail = 1; /* a stray ')' */
		if (!p.fail && !e)
			p.fail = 1;
	}
	if (p.fail)
		return 1;
	if (!e || !p.has_action) {
		struct find_node *pr = calloc(1, sizeof(*pr)), *a = calloc(1, sizeof(*a));

		if (!pr || !a)
			return 1;
		pr->kind = FK_PRINT;
		if (!e) {
			free(a);
			e = pr;
		} else {
			a->kind = FK_AND;
			a->l = e;
			a->r = pr;
			e = a;
		}
	}
	run->expr = e;
	return 0;
}

void find_free(struct find_node *n)
{
	if (!n)
		return;
	find_free(n->l);
	find_free(n->r);
	if (n->re) {
		regfree(n->re);
		free(n->re);
	}
	free(n);
}
