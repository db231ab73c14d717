/* SPDX-License-Identifier: MIT */
/*
 * arf-grep internals.  The pipeline, one file per stage:
 *
 *   regex.c    GNU BRE/ERE/fixed-string text -> syntax tree (C locale)
 *   nfa.c      syntax tree -> Thompson NFA with context assertions
 *   dfa.c      NFA -> DFA: lazily for local searches (a bounded state cache
 *              that is flushed when full), completely for code generation
 *              (a bounded number of states; beyond it, a clear refusal)
 *   codegen.c  DFA or fixed string -> eBPF program (arf_mc_insn) that scans
 *              a buffer and emits records of selected lines
 *   mcexec.c   runs generated programs in-process with the mobilecode
 *              interpreter (the local `--engine=mc`, and the tests)
 *   search.c   GNU grep 3.8's per-file behaviour: lines, binary files, -o,
 *              -c, -l/-L, -m and the output format
 *   remote.c   ARF mounts and arf:// URLs
 *   main.c     the command line
 *
 * Context assertions (^ $ \< \> \b \B and the -w/-x wrappers) depend on the
 * class of the byte before and after a position: the DFA keeps the previous
 * byte's class in its state and resolves assertions when it sees the next
 * byte, so that matching never looks at a byte twice.
 */
#ifndef ARF_GREP_INT_H
#define ARF_GREP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "arf_mc.h"
#include "arf_prog_abi.h"

/* ---- byte sets ---------------------------------------------------------- */

struct cset {
	uint64_t w[4];
};

static inline void cset_add(struct cset *s, unsigned c) { s->w[c >> 6] |= UINT64_C(1) << (c & 63); }
static inline int cset_has(const struct cset *s, unsigned c) { return (s->w[c >> 6] >> (c & 63)) & 1; }

/* Word constituents in the C locale: [[:alnum:]_]. */
static inline int grep_isword(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* ---- syntax tree -------------------------------------------------------- */

enum rx_kind {
	RX_EMPTY,  /* matches the empty string */
	RX_SET,    /* one byte of set */
	RX_CAT,    /* a then b */
	RX_ALT,    /* a or b */
	RX_REP,    /* a repeated min..max times (max < 0: unbounded) */
	RX_ASSERT, /* zero-width context assertion (enum rx_assert) */
};

enum rx_assert {
	RXA_BOL,      /* ^ : line start */
	RXA_EOL,      /* $ : line end */
	RXA_WBEG,     /* \< */
	RXA_WEND,     /* \> */
	RXA_WB,       /* \b */
	RXA_NWB,      /* \B */
	RXA_NOTWPREV, /* -w: the byte before is no word byte (or line start) */
	RXA_NOTWNEXT, /* -w: the byte after is no word byte (or line end) */
};

struct rx_node {
	uint8_t kind;  /* enum rx_kind */
	uint8_t assert;/* enum rx_assert for RX_ASSERT */
	int a, b;      /* children (node indexes) */
	int min, max;  /* RX_REP bounds */
	int set;       /* RX_SET: index into rx.sets */
};

/* A parsed pattern list: the union of every pattern line. */
struct rx {
	struct rx_node *nodes;
	int nnodes, capnodes;
	struct cset *sets;
	int nsets, capsets;
	int root;       /* -1: no pattern at all (matches nothing) */
	int has_assert; /* any RX_ASSERT node */
};

enum grep_syntax { GREP_BRE, GREP_ERE, GREP_FIXED };

struct grep_opts_rx {
	enum grep_syntax syntax;
	int icase;       /* -i */
	int words;       /* -w */
	int lines;       /* -x */
	int glibc;       /* parse as glibc's regcomp, not dfa.c (see regex.c) */
};

/*
 * Parses the newline-separated pattern list pats (len bytes) into rx.  0, or
 * -EINVAL with GNU grep's message in err ("Unmatched ( or \\(");
 * -ENOTSUP for back-references; -E2BIG for "Regular expression too big".
 * Warnings GNU grep prints ("* at start of expression") go to warn (may be
 * NULL) one per call.
 */
int rx_parse(struct rx *rx, const char *pats, size_t len, const struct grep_opts_rx *o,
	     char *err, size_t errlen, void (*warn)(const char *msg));
void rx_free(struct rx *rx);

/* ---- NFA ---------------------------------------------------------------- */

enum nfa_kind { NFA_SET, NFA_SPLIT, NFA_ASSERT, NFA_MATCH };

struct nfa_state {
	uint8_t kind;   /* enum nfa_kind */
	uint8_t assert; /* NFA_ASSERT: enum rx_assert */
	int out, out2;  /* successors (out2 only for SPLIT) */
	int set;        /* NFA_SET: index into nfa.sets */
};

struct nfa {
	struct nfa_state *st;
	int n, cap;
	struct cset *sets;  /* borrowed from the rx */
	int start;          /* -1: matches nothing */
	int uses_prev;      /* an assertion looks at the byte before */
	int uses_next;      /* an assertion looks at the byte after */
};

#define NFA_MAX_STATES 2000000

/* Builds the NFA of rx.  0, -E2BIG (over NFA_MAX_STATES), -ENOMEM. */
int nfa_build(struct nfa *nfa, const struct rx *rx);
void nfa_free(struct nfa *nfa);

/* ---- DFA ---------------------------------------------------------------- */

/* Byte classes seen as context: before a position, after a position. */
enum { CTX_EDGE = 0, CTX_WORD = 1, CTX_OTHER = 2 };

static inline int ctx_of(unsigned char c) { return grep_isword(c) ? CTX_WORD : CTX_OTHER; }

#define DFA_UNKNOWN (-2) /* transition not computed yet */
#define DFA_DEAD    (-1) /* no match can continue (anchored DFAs only) */

struct dfa_state {
	int *kernel;      /* sorted NFA states reached by the last byte */
	int nkernel;
	uint8_t prev;     /* CTX_* of the byte before */
	uint8_t acc;      /* bit CTX_*: a match ends here if the next byte is of that class */
	uint8_t acc_done; /* acc computed */
	int32_t next[256];
};

struct dfa {
	const struct nfa *nfa;
	int anchored;          /* 0: a match may start anywhere (line search) */
	struct dfa_state *st;
	int n, cap;
	int max_states;        /* lazy: flush beyond this; full: refuse */
	int *htab;             /* open hash of states, -1 empty */
	size_t hcap;
	int init[3];           /* initial state per CTX_* before the start */
	/* scratch */
	int *stack, *mark, *buf;
	int gen;
	uint64_t flushes;      /* times the lazy cache was emptied */
};

int dfa_init(struct dfa *d, const struct nfa *nfa, int anchored, int max_states);
void dfa_free(struct dfa *d);
/* Initial state for a match attempt whose preceding byte is of class prev. */
int dfa_initial(struct dfa *d, int prev);
/* Transition; computes it on demand.  May flush the cache (then *s ids of
 * earlier states are void: dfa_step returns an id valid in the new cache). */
int dfa_step(struct dfa *d, int s, unsigned char c);
/* Accept mask (bits 1<<CTX_*) of state s. */
int dfa_acc(struct dfa *d, int s);
/* Computes every state reachable from the initial ones (no flushing).  0,
 * or -E2BIG when more than max_states would be needed. */
int dfa_build_all(struct dfa *d);

/*
 * Does the line [p, p+n) (no newline in it) contain a match?  Uses the
 * unanchored DFA d.
 */
int dfa_line_matches(struct dfa *d, const unsigned char *p, size_t n);
/*
 * The leftmost-longest match in line [p, p+n) starting at or after from,
 * with the -w rule of GNU grep (largest valid end); anchored DFA a.
 * Returns 1 and [*ms, *me), or 0.
 */
int dfa_find(struct dfa *a, const unsigned char *p, size_t n, size_t from, size_t *ms,
	     size_t *me);
/*
 * The longest match starting at s that ends at or before strend, where the
 * string is taken to end at strend without a line end there (glibc's
 * re_match with REG_NOTEOL on a truncated string).  Its length, or -1.
 */
long dfa_longest_at(struct dfa *a, const unsigned char *p, size_t s, size_t strend);

/* ---- the compiled matcher ---------------------------------------------- */

/* A needle for the local literal search (search.c, lit_find). */
struct grep_lit {
	unsigned char *lower;  /* the bytes, ASCII letters lower-cased where fold[] */
	unsigned char *fold;   /* per byte: 1 either case of a letter matches */
	size_t len;            /* 0: none */
	size_t rare;           /* index of the rarest byte (searched first) */
};

struct matcher {
	struct rx rx;
	struct nfa nfa;
	struct dfa search;   /* unanchored: does a line match */
	struct dfa find;     /* anchored: where (for -o), parsed as glibc does */
	struct rx find_rx;
	struct nfa find_nfa;
	int find_ready;
	/* -w -o: GNU grep finds raw matches and then checks word boundaries
	 * itself (dfasearch.c), so -o needs the pattern without -w too */
	struct rx raw_rx;
	struct nfa raw_nfa;
	struct dfa raw;
	int raw_ready;
	const char *pats; size_t pats_len;
	int empty;           /* no pattern at all: nothing matches */
	struct grep_opts_rx o;
	/* the -F fast facts, for the code generator's skip loop */
	int fixed_single;     /* exactly one fixed string */
	const unsigned char *fixed; size_t fixed_len;
	/* the local literal search (search.c): lit, the pattern itself when
	 * fixed_single without -w/-x or NUL; must, the longest run of plain
	 * bytes every match of a regex holds (its lines alone go through
	 * the DFA) */
	int lit_ok;
	struct grep_lit lit, must;
};

int matcher_compile(struct matcher *m, const char *pats, size_t len, const struct grep_opts_rx *o,
		    char *err, size_t errlen, void (*warn)(const char *msg));
void matcher_free(struct matcher *m);
int matcher_line(struct matcher *m, const unsigned char *p, size_t n);
int matcher_find(struct matcher *m, const unsigned char *p, size_t n, size_t from, size_t *ms,
		 size_t *me);

/* ---- generated programs ------------------------------------------------- */

/*
 * The context a generated scan program runs against (ARF_MC_REGION_CTX, all
 * fields little-endian u64).  The program scans buf[pos, len) line by line,
 * emits a record for each selected line, and returns with the cursor saved
 * so that the next run resumes exactly where this one stopped.
 */
struct grep_ctx {
	uint64_t buf;        /* in: address of the bytes to scan (any readable region) */
	uint64_t len;        /* in: bytes at buf; buf ends at a line end unless GREP_CTX_EOF */
	uint64_t base;       /* in: file offset of buf[0] (records carry file offsets) */
	uint64_t flags;      /* in: GREP_CTX_* */
	uint64_t pos;        /* in/out: next byte to scan (index into buf) */
	uint64_t line_start; /* in/out: file offset of the current line's first byte */
	uint64_t lineno;     /* in/out: newlines before line_start (if counted) */
	uint64_t state;      /* in/out: matcher state at pos (0 at a line start) */
	uint64_t nsel;       /* in/out: lines selected so far */
	uint64_t max_sel;    /* in: stop after this many selected lines */
	uint64_t max_rec;    /* in: stop after emitting this many records in one run */
	uint64_t nrec;       /* out: records emitted by this run */
	uint64_t limit;      /* in: scan at most this many bytes in one run (0: no limit) */
	uint64_t nul_at;     /* out: file offset of the NUL that stopped the scan */
};

#define GREP_CTX_EOF 1u /* buf ends the file: an unterminated last line counts */

/* How a generated program treats NUL bytes. */
enum grep_nul_mode {
	GREP_NUL_BYTE = 0, /* an ordinary byte (-a, or NULs already replaced) */
	GREP_NUL_STOP = 1, /* stop at the first NUL: GNU grep's binary detection */
	GREP_NUL_EOL = 2,  /* a line terminator: GNU grep's binary mode */
};

/* What is compiled into a program besides the pattern. */
struct grep_gen_opts {
	int invert;   /* select lines that do not match (-v) */
	int nul_mode; /* enum grep_nul_mode */
	int lineno;   /* keep line numbers (the skip loop must then count newlines) */
	int table;    /* always the DFA table walker, never the skip loop */
};

/* Program return values (r0). */
enum {
	GREP_RET_DONE = 0,   /* buf consumed (pos == len) */
	GREP_RET_MORE = 1,   /* max_rec records emitted or limit bytes scanned: run again */
	GREP_RET_MAX = 2,    /* max_sel lines selected; the file is done */
	GREP_RET_NUL = 3,    /* a NUL at nul_at (GREP_NUL_STOP) */
	GREP_RET_GROW = 16,  /* shipped wrapper: no line end in the view past pos */
};

/* One emitted record: a selected line. */
struct grep_rec {
	uint64_t off;    /* file offset of the line */
	uint64_t lineno; /* 1-based line number */
	uint64_t len;    /* bytes in the line, without its newline */
};

/* The output helper a generated program calls: emit(ptr, len). */
#define GREP_HELPER_EMIT ARF_MC_HELPER_EMIT

#define GREP_MAX_DFA_STATES 4096 /* bound for a program's table */

struct grep_prog {
	struct arf_mc_insn *insns;
	size_t n;
	uint8_t *rodata;
	size_t rodata_len;
	int kind;       /* 0 DFA table walker, 1 fixed-string skip loop, 2 skip loop
			 * for a regex's required bytes, then the table */
	int nstates;    /* DFA states in the table */
	int skip_tests; /* kind 0: the start-state skip's tests (-1: no skip) */
};

/*
 * Generates the scan program for m.  0; -E2BIG when the DFA needs more
 * than GREP_MAX_DFA_STATES states (message in err); -ENOMEM.
 */
int grep_codegen(struct matcher *m, const struct grep_gen_opts *g, struct grep_prog *out,
		 char *err, size_t errlen);
void grep_prog_free(struct grep_prog *p);

/*
 * The shipped form (remote.c): the scan program behind a wrapper that takes
 * its bytes from the file on the server (ARF_PH_FILE_VIEW) and returns the
 * cursor with them.  Its context: the scan's, then the view, then the
 * longest line whose bytes the wrapper emits (longer ones: records only).
 * Its output: the scan's records, the struct grep_ctx after the run, then
 * the bytes of each selected line no longer than inline_max, in order;
 * r0 = nrec << 8 | the scan's GREP_RET_*, GREP_RET_GROW, or -errno.
 */
struct grep_rctx {
	struct grep_ctx c;
	struct arf_prog_file_view v;
	uint64_t inline_max;
};

/* Wraps gp as an ELF object (malloc'd) for arf_exec.  0 or -errno. */
int grep_codegen_ship(const struct grep_prog *gp, uint8_t **elf, size_t *elf_len);

/*
 * The batched form (remote.c, many small files in one run): a wrapper
 * that, for each file of f[] in turn, takes a view of the whole file
 * (view_len bytes at most; all views of a run share one region of
 * ARF_PROG_VIEW_MAX bytes on the server) and scans it from its start with
 * the cursor reset, as one slice without a byte limit.  Its output, file
 * after file: a struct grep_bres, the scan's records, then -- when
 * GREP_BRES_INLINE says so -- the bytes of each record no longer than
 * inline_max.  It starts a file only while out_room has space for the
 * header and max_rec records; r0 = the files done (their results are all
 * in the output).  A file whose bres.r0 is not GREP_RET_DONE or
 * GREP_RET_MAX (a NUL, max_rec records, a file longer than its view, an
 * error) is the client's to search again by itself.
 */
#define GREP_BATCH_MAX 512
struct grep_bfile {
	uint64_t ino;
	uint32_t gen, pad0;
};
struct grep_bctx {
	struct grep_ctx c;            /* the scan's context, set per file by the wrapper */
	struct arf_prog_file_view v;  /* the view, per file */
	uint64_t nfiles;              /* in: entries of f[] */
	uint64_t view_len;            /* in: bytes of each file to view; a longer one is GROW */
	uint64_t max_sel;             /* in: per file (-m; 1 for -l, -L, -q) */
	uint64_t max_rec;             /* in: records per file before it is left to the client */
	uint64_t inline_max;          /* in: longest line whose bytes come along (0: none) */
	uint64_t out_room;            /* in: output bytes the run may fill */
	uint64_t i, out_at, hdr_at, fl; /* the wrapper's own: file, bytes emitted, header, flags */
	uint64_t zero[2];             /* in: zeros (the header's placeholder) */
	struct grep_bfile f[GREP_BATCH_MAX];
};
struct grep_bres {
	int64_t r0;     /* nrec << 8 | the scan's GREP_RET_*; GREP_RET_GROW; or -errno */
	uint64_t flags; /* GREP_BRES_* */
};
#define GREP_BRES_INLINE 1u /* the short selected lines' bytes follow the records */

/* Wraps gp in the batch wrapper, as grep_codegen_ship.  0 or -errno. */
int grep_codegen_ship_batch(const struct grep_prog *gp, uint8_t **elf, size_t *elf_len);

/* ---- in-process execution ----------------------------------------------- */

struct grep_mc;
int grep_mc_create(const struct grep_prog *gp, int jit, struct grep_mc **out, char *err,
		   size_t errlen);
void grep_mc_destroy(struct grep_mc *g);
/*
 * Scans buf[0, len) (file offset base) with the program, calling rec for
 * each selected line.  ctx carries the cursor between calls (zero it for a
 * new file; fill buf/len/base/flags per call).  Returns the program's last
 * GREP_RET_* code, or a negative error.
 */
int grep_mc_scan(struct grep_mc *g, struct grep_ctx *ctx, const void *buf, size_t len,
		 int (*rec)(void *arg, const struct grep_rec *r), void *arg, uint64_t *insns);


/* ---- the command ---------------------------------------------------------- */

enum grep_engine { ENGINE_AUTO, ENGINE_NATIVE, ENGINE_MC, ENGINE_JIT };

struct grep_opts {
	struct grep_opts_rx rx;
	int invert;          /* -v */
	int line_numbers;    /* -n */
	int byte_offset;     /* -b */
	int count;           /* -c */
	int list;            /* 1: -l, 2: -L */
	int only;            /* -o */
	int quiet;           /* -q (or standard output is /dev/null) */
	int no_messages;     /* -s */
	long long max_count; /* -m; -1: none */
	int with_filename;   /* -1 default, 0 -h, 1 -H */
	int recursive;       /* 1: -r, 2: -R */
	int text;            /* -a */
	int engine;          /* enum grep_engine */
	int local_only;      /* --no-remote: never ship the program */
};

/* One invocation's state, shared by every file it searches. */
struct grep_run {
	struct grep_opts o;
	struct matcher m;
	struct grep_prog prog;   /* generated program (engine mc or remote) */
	int prog_ready;
	struct grep_mc *mc;      /* in-process vm for the mc engine */
	int out_file;            /* print file names */
	int errseen;             /* an error was reported: exit 2 */
	int matched;             /* a line was selected somewhere */
	uint64_t printed_below;  /* grep_file: lines before this offset were printed already */
	int stats;               /* --stats: the ARF client's counters to stderr at exit */
	FILE *out;
};

/* Where a searched file's bytes come from (a descriptor or a remote file). */
struct grep_src {
	ssize_t (*read)(void *arg, void *buf, size_t len); /* like read(2), -errno */
	void *arg;
	int64_t size;            /* regular file size, or -1 */
};

/*
 * Searches one file as GNU grep 3.8 would, printing its lines (or count,
 * or name) to run->out; name is how it is shown.  Returns the number of
 * selected lines, or -errno after printing the error (unless -s).
 */
long long grep_file(struct grep_run *run, struct grep_src *src, const char *name);
/* Prints a selected line [p, p+n) at file offset off, line lineno, as GNU
 * grep does with the options of run (-H, -n, -b, -o). */
void grep_print_line(struct grep_run *run, const char *name, const unsigned char *p, size_t n,
		     uint64_t off, uint64_t lineno);
/* After grep_file's n (nothing when it failed): the count with -c, the
 * name with -l (n > 0) or -L (n == 0). */
void grep_report(struct grep_run *run, const char *name, long long n);
/* Prints "grep: NAME: strerror" (unless -s) and marks the run failed. */
void grep_error(struct grep_run *run, const char *name, int err);
/* Exits as -q does at the first selected line. */
void grep_exit(struct grep_run *run, int status);

/* ---- remote (remote.c) ---------------------------------------------------- */

/* Searches an arf:// URL (a file or, with -r, a directory).  Returns the
 * selected line count or -errno (already reported). */
long long grep_remote(struct grep_run *run, const char *url, const char *name);
/* Searches the regular file path in an ARF mount on the server behind it
 * (user.arf.server, .ino, .gen).  1 when it did (the count, or the error,
 * in *n); 0 when path is not such a file. */
int grep_remote_path(struct grep_run *run, const char *path, const char *name, long long *n);
/* grep -r of a directory in an ARF mount, walked on the server behind it
 * (readdir with attributes; small files searched many to a run).  1 when
 * it did (errors reported); 0 when path is no such directory, -R is asked,
 * or a filesystem is mounted below it: the caller walks the mount. */
int grep_remote_dir_path(struct grep_run *run, const char *path, const char *name);

/* ---- connections (conn.c) ------------------------------------------------- */

/* A client for the server (and volume) of url, one each, kept to the end;
 * token: a credential token to connect with (NULL: none); name: what to
 * blame in the error message (NULL: say nothing, and do not try that
 * server again). */
struct arf_client *grep_conn_get(struct grep_run *run, const char *url, const uint8_t *token,
				 const char *name);
/* Closes the connections; with --stats, prints their counters to stderr. */
void grep_remote_finish(struct grep_run *run);
/* True when a filesystem is mounted somewhere below directory dir. */
int grep_mounts_below(const char *dir);

#endif /* ARF_GREP_INT_H */
