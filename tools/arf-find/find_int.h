/* SPDX-License-Identifier: MIT */
/*
 * arf-find's internals: the expression tree parse.c builds from GNU find's
 * command line, what eval.c evaluates it on (one entry: path, name,
 * attributes as arfd gives them), and the walk of walk.c that ships the
 * filter derived from it (filter.c) to arfd's find walker.
 */
#ifndef FIND_INT_H
#define FIND_INT_H

#include <regex.h>
#include <stdint.h>
#include <stdio.h>

#include "arf_prog_abi.h"
#include "arf_prog_find.h"

enum find_kind {
	/* operators */
	FK_AND, FK_OR, FK_NOT, FK_COMMA,
	/* tests */
	FK_TRUE, FK_FALSE, FK_NAME, FK_PATH, FK_REGEX, FK_TYPE, FK_SIZE, FK_TIME, FK_UID,
	FK_GID, FK_PERM, FK_EMPTY, FK_LINKS, FK_INUM,
	/* actions */
	FK_PRINT, FK_PRINT0, FK_PRINTF, FK_PRUNE,
};

struct find_node {
	enum find_kind kind;
	struct find_node *l, *r;   /* operands (FK_NOT: l) */
	int cmp;                   /* enum arf_find_cmp; FK_PERM: 0 exact, 1 all, 2 any */
	int icase;                 /* -iname, -ipath, -iregex */
	unsigned which;            /* FK_TIME: 0 atime, 1 ctime, 2 mtime; FK_TYPE: mask */
	uint64_t x, y;             /* as struct arf_find_node's */
	const char *str;           /* pattern, format (points into argv) */
	regex_t *re;               /* FK_REGEX: compiled (re_compile_pattern) */
};

/* One entry as the expression sees it. */
struct find_ent {
	const char *path;          /* as printed */
	const char *name;          /* the last component (%f) */
	size_t start_len;          /* length of its starting point in path (for %P) */
	unsigned depth;
	int has_attr;              /* attributes withheld: no search permission */
	struct arf_prog_attr at;
	unsigned type;             /* S_IFMT >> 12 when !has_attr */
	const char *link;          /* symbolic link's target, or NULL */
	int empty;                 /* ARF_FIND_EMPTY_* or -errno */
};

struct find_opts {
	int maxdepth, mindepth;    /* -1: not given */
	int depth_first;           /* -depth: -prune does nothing */
	int stats;
	int need_links;            /* an expression looks at link targets (%l) */
	int need_empty;            /* -empty appears */
	int names_only;            /* names and types are all the expression needs */
	int tty;                   /* stdout is a terminal: -print shows odd bytes as '?' */
	int64_t now_ns;            /* the time the run started (for -mtime ...) */
};

struct find_run {
	struct find_opts o;
	struct find_node *expr;    /* with the implicit -print added */
	int status;                /* the exit status so far */
	const char *prog;          /* "arf-find" */
	int pruned;                /* the current entry was pruned */
	int nostat_said;           /* the entry's missing attributes were reported */
};

/* parse.c: 0, or 1 when the command line must go to GNU find whole (a
 * predicate or option not shipped, a syntax error GNU find reports). */
int find_parse(struct find_run *run, int argc, char **argv, int *sbeg, int *send);
void find_free(struct find_node *n);
/* eval.c */
/* Whether the expression looks at more than names and types (GNU find then
 * reports an entry it cannot stat instead of evaluating it). */
int find_needs_stat(const struct find_node *n);
/* Whether it prints types (%y). */
int find_needs_type(const struct find_node *n);
int find_eval(struct find_run *run, const struct find_node *n, const struct find_ent *e);
void find_err(struct find_run *run, const char *path, int err);
/* filter.c: the walker's filter for expr; the nodes and strings are malloc'd. */
int find_filter(const struct find_run *run, struct arf_find_node **nodes, uint32_t *nn,
		char **str, uint32_t *str_len);
/* walk.c: each starting point, on its server; 0 or 1 when a start is not on ARF and
 * nothing was printed yet (GNU find takes over). */
int find_walk(struct find_run *run, char **starts, int nstarts);

#endif /* FIND_INT_H */
