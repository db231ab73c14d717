/* SPDX-License-Identifier: MIT */
/*
 * One file, searched the way GNU grep 3.8 searches it, so that the output is
 * byte-for-byte the same.  The file is read in GNU grep's own pieces (its
 * 96 KiB buffer and the read sizes fillbuf() computes), because where a
 * piece ends decides when a NUL byte is noticed: lines before the piece
 * holding the first NUL print as text; from that piece on the file is
 * "binary": NULs end lines, output stops at the first selected line, and
 * "grep: FILE: binary file matches" goes to standard error instead (-c goes
 * on counting; -a turns all of this off).  Which lines are selected is the
 * matcher's business: the native DFA, or the generated eBPF program run by
 * the mobilecode interpreter (--engine=mc), which must agree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grep_int.h"

#define PAGE 4096u
#define INITIAL_BUFSIZE (96u * 1024u)
#define UWORD 8u
/* Where malloc put GNU grep's buffer inside its page; only read sizes after
 * a residue of nearly a page depend on it. */
#define GNU_BUF_ALIGN 16u

static size_t align_to(size_t x, size_t a) { return (x + a - 1) / a * a; }

struct file_state {
	struct grep_run *run;
	const char *name;
	/* the buffer: [0, lim) holds file bytes starting at file offset 'off' */
	unsigned char *mem;
	size_t cap, lim;
	uint64_t off;
	/* GNU fillbuf() emulation */
	size_t valloc, vlim;
	uint64_t bufoffset;      /* bytes read so far */
	/* line numbers: newlines before file offset nl_off */
	uint64_t nl_off, nl_count;
	long long outleft;
	int done_on_match, out_quiet;
};

static int fill(struct file_state *f, struct grep_src *src, size_t save)
{
	size_t vread, readsize;
	ssize_t n;

	if (PAGE <= f->valloc - UWORD - f->vlim) {
		vread = f->vlim;
	} else {
		size_t minsize = save + PAGE, newsize = f->valloc - PAGE - UWORD;

		while (newsize < minsize)
			newsize *= 2;
		if (src->size >= 0) {
			int64_t to_be_read = src->size - (int64_t)f->bufoffset;
			uint64_t maxsize = save + (uint64_t)to_be_read;

			if (to_be_read >= 0 && minsize <= maxsize && maxsize < newsize)
				newsize = (size_t)maxsize;
		}
		if (f->valloc < newsize + PAGE + UWORD)
			f->valloc = newsize + PAGE + UWORD;
		vread = align_to(GNU_BUF_ALIGN + 1 + save, PAGE) - GNU_BUF_ALIGN;
	}
	readsize = f->valloc - UWORD - vread;
	readsize -= readsize % PAGE;
	/* our own buffer: the residue moves to the front */
	if (save)
		memmove(f->mem, f->mem + f->lim - save, save);
	f->off += f->lim - save;
	f->lim = save;
	if (save + readsize + 1 > f->cap) {
		size_t cap = save + readsize + 1;
		unsigned char *m = realloc(f->mem, cap);

		if (!m)
			return -ENOMEM;
		f->mem = m;
		f->cap = cap;
	}
	do
		n = src->read(src->arg, f->mem + save, readsize);
	while (n == -EINTR);
	if (n < 0)
		return (int)n;
	f->lim = save + (size_t)n;
	f->vlim = vread + (size_t)n;
	f->bufoffset += (uint64_t)n;
	return 0;
}

/* Counts newlines up to file offset o (which must be in the buffer). */
static uint64_t lineno_at(struct file_state *f, uint64_t o)
{
	if (o > f->nl_off) {
		const unsigned char *p = f->mem + (f->nl_off - f->off), *e = f->mem + (o - f->off);

		while ((p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
			f->nl_count++;
			p++;
		}
		f->nl_off = o;
	}
	return f->nl_count + 1;
}

/* The prefix of an output line: FILE:, LINENO:, BYTE-OFFSET: as asked. */
static void print_head(struct grep_run *run, const char *name, uint64_t lineno, uint64_t at)
{
	if (run->out_file) {
		fputs(name, run->out);
		putc(':', run->out);
	}
	if (run->o.line_numbers)
		fprintf(run->out, "%" PRIu64 ":", lineno);
	if (run->o.byte_offset)
		fprintf(run->out, "%" PRIu64 ":", at);
}

void grep_print_line(struct grep_run *run, const char *name, const unsigned char *p, size_t n,
		     uint64_t off, uint64_t lineno)
{
	if (run->o.only) {
		size_t cur = 0, s, e;

		if (run->o.invert)
			return;
		while (cur < n && matcher_find(&run->m, p, n, cur, &s, &e) > 0) {
			if (s == n)
				break;
			if (e == s) {
				cur = s + 1;
				continue;
			}
			print_head(run, name, lineno, off + s);
			fwrite(p + s, 1, e - s, run->out);
			putc('\n', run->out);
			cur = e;
		}
		return;
	}
	print_head(run, name, lineno, off);
	fwrite(p, 1, n, run->out);
	putc('\n', run->out);
}

/* A selected line [p, p+n) at file offset off. */
static void prline(struct file_state *f, const unsigned char *p, size_t n, uint64_t off)
{
	grep_print_line(f->run, f->name, p, n, off,
			f->run->o.line_numbers ? lineno_at(f, off) : 0);
}

void grep_exit(struct grep_run *run, int status)
{
	fflush(run->out);
	exit(status);
}

/* One selected line; returns 1 when the search of this file must stop. */
static int select_line(struct file_state *f, const unsigned char *p, size_t n, uint64_t off)
{
	if (!f->out_quiet && off >= f->run->printed_below)
		prline(f, p, n, off);
	f->outleft--;
	f->run->matched = 1;
	if (!f->outleft || f->done_on_match) {
		if (f->run->o.quiet)
			grep_exit(f->run, 0);
		return 1;
	}
	return 0;
}

struct mc_lines {
	struct file_state *f;
	const unsigned char *beg; /* buffer byte at file offset base */
	uint64_t base;
	long long n;
	int stop;
};

static int mc_rec(void *arg, const struct grep_rec *r)
{
	struct mc_lines *l = arg;

	l->n++;
	if (select_line(l->f, l->beg + (r->off - l->base), (size_t)r->len, r->off)) {
		l->stop = 1;
		return 1;
	}
	return 0;
}

/* The first occurrence of the needle l at or after p that ends by lim, or
 * NULL: the needle's rarest byte (for a letter that matches in either
 * case: both, by two memchr cursors, each rescanned only once passed), then
 * the needle compared around it. */
static const unsigned char *lit_find(const struct grep_lit *l, const unsigned char *p,
				     const unsigned char *lim)
{
	const unsigned char *nd = l->lower, *lo = NULL, *up = NULL, *at;
	size_t len = l->len, k = l->rare;
	unsigned char a = nd[k], b = (unsigned char)(nd[k] & ~32);
	int fold = l->fold[k];

	if ((size_t)(lim - p) < len)
		return NULL;
	lim -= len - 1 - k; /* the rare byte's last possible place, plus one */
	for (p += k; p < lim;) {
		if (!lo || lo < p)
			lo = memchr(p, a, (size_t)(lim - p));
		if (fold && (!up || up < p))
			up = memchr(p, b, (size_t)(lim - p));
		if (!lo)
			lo = lim;
		if (!fold || !up)
			up = lim;
		at = lo < up ? lo : up;
		if (at >= lim)
			return NULL;
		const unsigned char *s = at - k;
		size_t j = 0;

		while (j < len && (l->fold[j] ? (s[j] | 32) == nd[j] : s[j] == nd[j]))
			j++;
		if (j == len)
			return s;
		p = at + 1;
	}
	return NULL;
}

/* The selected lines of [beg, lim) without -v, when every match holds the
 * needle l: only lines holding it are looked at, and then (check) by the
 * DFA; for a literal pattern (!check) holding it is matching. */
static long long grepbuf_literal(struct file_state *f, const struct grep_lit *l, int check,
				 unsigned char *beg, unsigned char *lim)
{
	struct matcher *m = &f->run->m;
	const unsigned char *p = beg, *hit;
	long long n = 0;

	while (p < lim && (hit = l->lower && !l->fold[l->rare] && !check && !m->o.icase
				     ? memmem(p, (size_t)(lim - p), l->lower, l->len)
				     : lit_find(l, p, lim)) != NULL) {
		const unsigned char *ls = hit, *le;

		while (ls > p && ls[-1] != '\n')
			ls--;
		le = memchr(hit + l->len, '\n', (size_t)(lim - (hit + l->len)));
		if (!le)
			le = lim - 1; /* lim - 1 is a newline: not reached */
		if (check) {
			int r = matcher_line(m, ls, (size_t)(le - ls));

			if (r < 0) {
				fprintf(stderr, "arf-grep: memory exhausted\n");
				grep_exit(f->run, 2);
			}
			if (!r) {
				p = le + 1;
				continue;
			}
		}
		n++;
		if (select_line(f, ls, (size_t)(le - ls), f->off + (uint64_t)(ls - f->mem)))
			break;
		p = le + 1;
	}
	return n;
}

/* GNU grepbuf(): the selected lines of [beg, lim), which ends in '\n'. */
static long long grepbuf(struct file_state *f, unsigned char *beg, unsigned char *lim)
{
	struct grep_run *run = f->run;
	long long n = 0;

	if (run->o.engine != ENGINE_MC && run->o.engine != ENGINE_JIT && !run->o.invert &&
	    (run->m.lit_ok || run->m.must.len))
		return run->m.lit_ok ? grepbuf_literal(f, &run->m.lit, 0, beg, lim)
				     : grepbuf_literal(f, &run->m.must, 1, beg, lim);

	if (run->o.engine == ENGINE_MC || run->o.engine == ENGINE_JIT) {
		struct grep_ctx ctx = { 0 };
		struct mc_lines l = { f, beg, f->off + (uint64_t)(beg - f->mem), 0, 0 };
		int r;

		ctx.base = l.base;
		ctx.line_start = l.base;
		ctx.flags = GREP_CTX_EOF;
		ctx.max_sel = f->done_on_match ? 1 : (uint64_t)f->outleft;
		r = grep_mc_scan(run->mc, &ctx, beg, (size_t)(lim - beg), mc_rec, &l, NULL);
		if (r < 0) {
			fprintf(stderr, "arf-grep: %s: generated program failed: %s\n", f->name,
				arf_err_text(r) ? arf_err_text(r) : strerror(-r));
			grep_exit(run, 2);
		}
		return l.n;
	}
	for (unsigned char *p = beg; p < lim;) {
		unsigned char *nl = memchr(p, '\n', (size_t)(lim - p));
		int m = matcher_line(&run->m, p, (size_t)(nl - p));

		if (m < 0) {
			fprintf(stderr, "arf-grep: memory exhausted\n");
			grep_exit(run, 2);
		}
		if (m != run->o.invert) {
			n++;
			if (select_line(f, p, (size_t)(nl - p), f->off + (uint64_t)(p - f->mem)))
				break;
		}
		p = nl + 1;
	}
	return n;
}

void grep_error(struct grep_run *run, const char *name, int err)
{
	run->errseen = 1;
	if (!run->o.no_messages) {
		fflush(run->out);
		fprintf(stderr, "grep: %s: %s\n", name, strerror(-err));
	}
}

long long grep_file(struct grep_run *run, struct grep_src *src, const char *name)
{
	struct file_state f = { 0 };
	long long nlines = 0, first_null = -1;
	size_t save = 0, residue = 0;
	int zap = 0, r;

	f.run = run;
	f.name = name;
	f.valloc = align_to(INITIAL_BUFSIZE, PAGE) + PAGE + UWORD;
	f.vlim = align_to(GNU_BUF_ALIGN + 1, PAGE) - GNU_BUF_ALIGN;
	f.outleft = run->o.max_count < 0 ? INT64_MAX : run->o.max_count;
	f.done_on_match = run->o.list || run->o.quiet;
	f.out_quiet = run->o.count || f.done_on_match;

	if ((r = fill(&f, src, 0)) < 0)
		goto ioerr;
	for (;;) {
		unsigned char *bufbeg = f.mem, *buflim = f.mem + f.lim, *beg, *lim;

		if (first_null < 0 && !run->o.text && memchr(bufbeg, 0, f.lim)) {
			if (!run->o.count)
				f.done_on_match = f.out_quiet = 1;
			first_null = nlines;
			zap = 1;
		}
		beg = bufbeg + save;
		if (beg == buflim)
			break;
		if (zap)
			for (unsigned char *q = beg; (q = memchr(q, 0, (size_t)(buflim - q))); q++)
				*q = '\n';
		lim = beg;
		for (unsigned char *q = buflim; q > beg; q--)
			if (q[-1] == '\n') {
				lim = q;
				break;
			}
		if (lim == beg)
			lim = beg - residue;
		beg -= residue;
		residue = (size_t)(buflim - lim);
		if (beg < lim) {
			if (f.outleft)
				nlines += grepbuf(&f, beg, lim);
			if (!f.outleft || (f.done_on_match && (first_null > 0 ? first_null : 0) < nlines))
				goto finish;
		}
		save = residue;
		if (run->o.line_numbers)
			lineno_at(&f, f.off + (uint64_t)(lim - f.mem));
		if ((r = fill(&f, src, save)) < 0)
			goto ioerr;
	}
	if (residue) {
		f.mem[f.lim] = '\n';
		if (f.outleft)
			nlines += grepbuf(&f, f.mem + save - residue, f.mem + f.lim + 1);
	}
finish:
	if (!(run->o.count || run->o.list || run->o.quiet) && first_null >= 0 && first_null < nlines) {
		fflush(run->out);
		fprintf(stderr, "grep: %s: binary file matches\n", name);
	}
	free(f.mem);
	return nlines;
ioerr:
	free(f.mem);
	grep_error(run, name, r);
	return r;
}

void grep_report(struct grep_run *run, const char *name, long long n)
{
	if (n < 0)
		return;
	if (run->o.count) {
		if (run->out_file)
			fprintf(run->out, "%s:", name);
		fprintf(run->out, "%lld\n", n);
	}
	if ((run->o.list == 1 && n > 0) || (run->o.list == 2 && n == 0))
		fprintf(run->out, "%s\n", name);
}
