/* SPDX-License-Identifier: MIT */
/*
 * ARF files: recognising them, and searching them.
 *
 * A path is an ARF file when arf-fuse answers ARF_IOC_CRED on it (arf.h,
 * fuse/ioctl.c): the URL of the server behind the mount, the file's handle
 * there, and a credential token for the user the kernel says runs this
 * process, so that arfd serves this search as that user and no other.
 *
 * An ARF file is searched on its server: the scan program generated for the
 * pattern (codegen.c) goes, behind a small wrapper, to arfd as an ELF object
 * (arf_exec: loaded once, cached by hash) and runs there in slices.  Each
 * run asks the file_view helper for the file's bytes from the current line's
 * start -- read under the filesystem lock with the caller's credentials and
 * the READ permission check, so one view is one state of the file and a
 * reader without permission gets EACCES before anything is scanned -- cuts
 * the view after its last newline, scans at most `slice` bytes of it, and
 * emits the records of the selected lines, the cursor (struct grep_ctx) and
 * the bytes of the selected lines.  Only that crosses the network; lines
 * longer than SHIP_INLINE travel as records, and their bytes are read with
 * arf_read.  The client prints the lines as the runs return them, resumes
 * at the cursor, and sizes the slice to the server's instruction budget:
 * the first run asks for a whole view (ARF_PROG_VIEW_MAX bytes, which
 * arfd's default budget covers even for the table walker), and a run
 * stopped by the budget or the wall clock halves it for the rest of the
 * file.  With -n the
 * program is always the DFA table walker, which carries line numbers
 * across views; the skip loop counts them only back to the last match.
 * A mount path is
 * sent to the server the mount names, as the file ARF_IOC_CRED names, on a
 * connection that presents the mount's credential token -- unless every
 * page of the file is in this host's page cache (mincore): then reading it
 * through the mount costs no round trip and the local search is faster.
 *
 * Many small files: `grep -r` of a mount's directory (or of a URL's) is
 * walked on the server with arf_readdirplus, and regular files of up to
 * BATCH_FILE_MAX bytes wait in a batch (kept in walk order: a bigger file
 * or a subdirectory flushes it first) that one run of the batch wrapper
 * (codegen_ship.c) searches, each file viewed whole (file_view lends many
 * views to a run).  A file the batch leaves undone -- a NUL, more than
 * BATCH_MAX_REC selected lines, -m with lines held, an error -- is searched
 * again by itself, in its place, by the path above.
 *
 * Binary files: GNU grep decides per 96 KiB-or-so buffer whether a NUL
 * makes the rest of the file "binary".  Without -a the shipped scan stops
 * at the first NUL (GREP_NUL_STOP), and a printed line is held back until
 * the scan has gone SHIP_HOLD bytes past it without a NUL; at a NUL (or at
 * -m's limit with lines still held) the file is searched again the way
 * search.c searches a local file, from bytes read with arf_read, printing
 * only what was not printed yet.  The same read path serves a pattern whose
 * program cannot be generated (more DFA states than GREP_MAX_DFA_STATES),
 * a line longer than ARF_PROG_VIEW_MAX, and --no-remote.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arf.h"
#include "grep_int.h"

/* ---- the read path: the file's bytes here, searched as a local file ------ */

struct arf_src {
	arf_client *c;
	uint64_t ino, off;
	uint32_t gen;
};

static ssize_t arf_src_read(void *arg, void *buf, size_t len)
{
	struct arf_src *s = arg;
	ssize_t n = arf_read(s->c, s->ino, s->gen, s->off, buf, len);

	if (n > 0)
		s->off += (uint64_t)n;
	return n;
}

static long long read_file(struct grep_run *run, arf_client *c, uint64_t ino, uint32_t gen,
			   int64_t size, const char *name)
{
	struct arf_src s = { c, ino, 0, gen };
	struct grep_src src = { arf_src_read, &s, size };

	return grep_file(run, &src, name);
}

/* ---- the shipped path ------------------------------------------------------- */

#define SHIP_SLICE0  ARF_PROG_VIEW_MAX /* bytes scanned by the first run: a whole view */
#define SHIP_SLICE_MIN 4096u
#define SHIP_MAX_REC 64u         /* records per run */
#define SHIP_INLINE  4096u       /* longest line whose bytes come with its record */
#define SHIP_HOLD    (8u << 20)  /* see the file comment: binary files */
#define BATCH_FILE_MAX (256u << 10) /* files up to this size are batched */
#define BATCH_BYTES  (4u << 20)  /* listed bytes per batched run */
#define BATCH_MAX_REC 16u        /* records per batched file; more: a run of its own */
#define BATCH_OUT    (256u << 10) /* output bytes per batched run */

static struct {
	int state;                   /* 0 not built, 1 ready, -1 none (read path) */
	uint8_t *elf;
	size_t len;
	uint64_t slice;              /* bytes per run; halved when a run runs out */
	uint64_t max_rec, inline_max;
	int skip_loop;               /* the program is the fixed-string skip loop */
	uint8_t *belf;               /* the batch wrapper (NULL: files one by one) */
	size_t blen;
	uint64_t out_room;           /* output bytes a batched run may fill */
	size_t bmax;                 /* files per batched run; halved when a run runs out */
} ship;

static int ship_ready(struct grep_run *run)
{
	/* the skip loop counts newlines only from the current line's start,
	 * which it does not move past lines without a match: with -n, views
	 * would have to reach back to the last match, so -n takes the table */
	struct grep_gen_opts g = { run->o.invert, run->o.text ? GREP_NUL_BYTE : GREP_NUL_STOP,
				   run->o.line_numbers, run->o.line_numbers };
	struct grep_prog p;
	char err[256];

	if (ship.state)
		return ship.state > 0;
	ship.state = -1;
	if (grep_codegen(&run->m, &g, &p, err, sizeof(err)) == 0) {
		if (grep_codegen_ship(&p, &ship.elf, &ship.len) == 0)
			ship.state = 1;
		if (ship.state > 0 && grep_codegen_ship_batch(&p, &ship.belf, &ship.blen))
			ship.belf = NULL;
		ship.skip_loop = p.kind != 0; /* both skip loops: position only */
		grep_prog_free(&p);
	}
	ship.slice = SHIP_SLICE0;
	if (getenv("ARF_GREP_SLICE")) { /* tests: many small slices */
		ship.slice = strtoull(getenv("ARF_GREP_SLICE"), NULL, 0);
		if (!ship.slice)
			ship.slice = 1;
	}
	ship.max_rec = SHIP_MAX_REC;
	ship.inline_max = SHIP_INLINE;
	ship.out_room = BATCH_OUT;
	ship.bmax = GREP_BATCH_MAX;
	return ship.state > 0;
}

struct held {
	uint64_t off, lineno;
	size_t len;
	unsigned char *p;
};

struct ship_file {
	struct grep_run *run;
	const char *name;
	struct held *h;
	size_t nh, caph, first;
	uint64_t printed_below;      /* every selected line before this was printed */
};

static void release(struct ship_file *f, uint64_t upto)
{
	while (f->first < f->nh && (upto == UINT64_MAX ||
				    f->h[f->first].off + f->h[f->first].len + SHIP_HOLD < upto)) {
		struct held *x = &f->h[f->first++];

		grep_print_line(f->run, f->name, x->p, x->len, x->off, x->lineno);
		f->printed_below = x->off + 1;
		free(x->p);
	}
	if (f->first == f->nh)
		f->first = f->nh = 0;
}

/* Bytes of a line that came as a record only. */
static unsigned char *fetch(arf_client *c, uint64_t ino, uint32_t gen, uint64_t off, size_t len)
{
	unsigned char *p = malloc(len ? len : 1);
	size_t got = 0;

	while (p && got < len) {
		ssize_t k = arf_read(c, ino, gen, off + got, p + got, len - got);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	if (p && got < len)
		memset(p + got, 0, len - got); /* the file shrank since the scan */
	return p;
}

/*
 * Searches (ino, gen) on the server.  The selected line count, -errno
 * (reported), or 1 << 62 when the file must be searched by the read path
 * (*printed_below: what is printed already).
 */
#define SHIP_FALLBACK (1LL << 62)

static long long ship_file(struct grep_run *run, arf_client *c, uint64_t ino, uint32_t gen,
			   const char *name, uint64_t *printed_below)
{
	int printing = !(run->o.count || run->o.list || run->o.quiet);
	int hold = printing && !run->o.text;
	struct ship_file f = { run, name, NULL, 0, 0, 0, 0 };
	struct grep_rctx x;
	struct arf_exec_result res;
	uint64_t cursor = 0, grow = 0;
	long long n = 0, ret = 0;
	size_t cap = 0;
	uint8_t *out = NULL;

	memset(&x, 0, sizeof(x));
	x.c.max_sel = run->o.list || run->o.quiet ? 1
		      : run->o.max_count < 0 ? INT64_MAX : (uint64_t)run->o.max_count;
	x.v.ino = ino;
	x.v.gen = gen;
	for (;;) {
		size_t want = ship.max_rec * (sizeof(struct grep_rec) + (printing ? ship.inline_max : 0)) +
			      sizeof(struct grep_ctx);

		if (want > cap) {
			uint8_t *o = realloc(out, want);

			if (!o) {
				ret = -ENOMEM;
				grep_error(run, name, -ENOMEM);
				goto out;
			}
			out = o;
			cap = want;
		}
		x.inline_max = printing ? ship.inline_max : 0;
		x.v.off = x.c.line_start;
		x.c.pos = cursor - x.c.line_start;
		x.c.limit = ship.slice;
		x.c.max_rec = ship.max_rec;
		x.v.len = x.c.pos + ship.slice + grow;
		x.v.addr = x.v.got = x.v.size = 0;
		int r = arf_exec(c, ship.elf, ship.len, &x, sizeof(x), out, want, &res);

		if (r == ARF_EBUDGET && ship.slice > SHIP_SLICE_MIN) {
			ship.slice /= 2;
			continue;
		}
		if (r == ARF_EOUTPUT && (ship.max_rec > 1 || ship.inline_max)) {
			if (ship.max_rec > 1)
				ship.max_rec /= 2;
			else
				ship.inline_max = 0;
			continue;
		}
		if (r == -ENOSYS) { /* mobile code disabled on that server */
			ret = SHIP_FALLBACK;
			goto out;
		}
		if (r < 0) {
			run->errseen = 1;
			if (!run->o.no_messages) {
				fflush(run->out);
				fprintf(stderr, "grep: %s: the server could not run the search: %s%s%s\n",
					name, arf_strerror(r), res.msg[0] ? ": " : "", res.msg);
			}
			ret = r;
			goto out;
		}
		if (res.r0 < 0) {
			grep_error(run, name, (int)res.r0);
			ret = res.r0;
			goto out;
		}
		if (res.r0 == GREP_RET_GROW) {
			if (x.v.len >= ARF_PROG_VIEW_MAX) {
				ret = SHIP_FALLBACK; /* a line longer than a view */
				goto out;
			}
			grow = grow ? 2 * grow : (ship.slice > 4096 ? ship.slice : 4096);
			continue;
		}
		int code = (int)(res.r0 & 255);
		size_t nrec = (size_t)(res.r0 >> 8), at;

		at = nrec * sizeof(struct grep_rec);
		if (nrec > ship.max_rec || at + sizeof(struct grep_ctx) > res.out_len) {
			run->errseen = 1;
			fprintf(stderr, "grep: %s: malformed output from the server's run\n", name);
			ret = -EPROTO;
			goto out;
		}
		uint64_t line_was = x.c.line_start;

		memcpy(&x.c, out + at, sizeof(x.c));
		if (x.c.line_start != line_was)
			grow = 0; /* a grown view was for the line now behind */
		at += sizeof(x.c);
		cursor = x.c.base + x.c.pos;
		for (size_t i = 0; i < nrec; i++) {
			struct grep_rec rec;
			unsigned char *p;

			memcpy(&rec, out + i * sizeof(rec), sizeof(rec));
			n++;
			run->matched = 1;
			if (run->o.quiet)
				grep_exit(run, 0);
			if (!printing)
				continue;
			if (rec.len && rec.len <= x.inline_max && at + rec.len <= res.out_len) {
				p = malloc((size_t)rec.len);
				if (p)
					memcpy(p, out + at, (size_t)rec.len);
				at += (size_t)rec.len;
			} else {
				p = fetch(c, ino, gen, rec.off, (size_t)rec.len);
			}
			if (!p) {
				ret = -ENOMEM;
				grep_error(run, name, -ENOMEM);
				goto out;
			}
			if (!hold) {
				grep_print_line(run, name, p, (size_t)rec.len, rec.off, rec.lineno);
				free(p);
				continue;
			}
			if (f.nh == f.caph) {
				size_t nc = f.caph ? 2 * f.caph : 64;
				struct held *h = realloc(f.h, nc * sizeof(*h));

				if (!h) {
					free(p);
					ret = -ENOMEM;
					grep_error(run, name, -ENOMEM);
					goto out;
				}
				f.h = h;
				f.caph = nc;
			}
			f.h[f.nh++] = (struct held){ rec.off, rec.lineno, (size_t)rec.len, p };
		}
		if (hold)
			release(&f, cursor);
		if (printing)
			fflush(run->out);
		if (code == GREP_RET_NUL || (code == GREP_RET_MAX && f.first < f.nh)) {
			ret = SHIP_FALLBACK;
			goto out;
		}
		if (code == GREP_RET_MAX || (code == GREP_RET_DONE && (x.c.flags & GREP_CTX_EOF)))
			break;
		/* the view ended at a line end: the skip loop (no line numbers
		 * kept) resumes with its next view from there */
		if (code == GREP_RET_DONE && ship.skip_loop) {
			x.c.line_start = cursor;
			x.c.state = 0;
		}
	}
	release(&f, UINT64_MAX);
	ret = n;
out:
	*printed_below = f.printed_below;
	for (size_t i = f.first; i < f.nh; i++)
		free(f.h[i].p);
	free(f.h);
	free(out);
	return ret;
}

/* One regular file on the server: shipped, or by the read path. */
static long long remote_file(struct grep_run *run, arf_client *c, uint64_t ino, uint32_t gen,
			     int64_t size, const char *name)
{
	long long n = SHIP_FALLBACK;
	uint64_t printed_below = 0;

	if (run->o.max_count == 0)
		n = 0;
	else if (!run->o.local_only && ship_ready(run))
		n = ship_file(run, c, ino, gen, name, &printed_below);
	if (n == SHIP_FALLBACK) {
		run->printed_below = printed_below;
		n = read_file(run, c, ino, gen, size, name);
		run->printed_below = 0;
	}
	grep_report(run, name, n);
	return n;
}

/*
 * True when every page of the open file fd (size bytes) is in this host's
 * page cache (mmap and mincore): then reading it through the mount costs
 * no round trip, and the local search is at least as fast as a shipped
 * one.  ARF_GREP_PAGECACHE=0 turns the check off (tests of the shipped
 * path on files they have just written).
 */
static int in_page_cache(int fd, off_t size)
{
	static int off = -1;
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *vec;
	size_t np;
	void *m;
	int all = 1;

	if (off < 0)
		off = getenv("ARF_GREP_PAGECACHE") && !strcmp(getenv("ARF_GREP_PAGECACHE"), "0");
	if (off || size <= 0 || pg <= 0)
		return 0;
	np = (size_t)((size + pg - 1) / pg);
	m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return 0;
	vec = malloc(np);
	if (!vec || mincore(m, (size_t)size, vec) < 0)
		all = 0;
	for (size_t i = 0; all && i < np; i++)
		if (!(vec[i] & 1))
			all = 0;
	free(vec);
	munmap(m, (size_t)size);
	return all;
}

int grep_remote_path(struct grep_run *run, const char *path, const char *name, long long *n)
{
	struct arf_ioc_cred *ic;
	arf_client *c;
	struct stat st;
	int fd, ok;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0; /* the local search says why */
	if (in_page_cache(fd, st.st_size)) {
		close(fd); /* read here, through the mount: no byte crosses */
		return 0;
	}
	ic = calloc(1, sizeof(*ic));
	ok = ic && ioctl(fd, ARF_IOC_CRED, ic) == 0 && ic->version == ARF_IOC_CRED_VERSION &&
	     memchr(ic->url, 0, sizeof(ic->url));
	close(fd);
	if (!ok) {
		/* not an ARF mount (ENOTTY), or one that cannot vouch for us:
		 * searched through the mount like any file */
		free(ic);
		return 0;
	}
	/* quietly: a server this user cannot reach (an shm socket only root
	 * may open) leaves the search to the mount, with the same result */
	c = grep_conn_get(run, ic->url, ic->token, NULL);
	uint64_t ino = ic->ino;
	uint32_t gen = ic->gen;
	free(ic);
	if (!c)
		return 0;
	*n = remote_file(run, c, ino, gen, (int64_t)st.st_size, name);
	return 1;
}

/* ---- many small files in one run ------------------------------------------ */

/* Files waiting for a batched run, in the order they must be reported. */
struct batch {
	struct grep_bctx x;
	uint64_t ino[GREP_BATCH_MAX];
	uint32_t gen[GREP_BATCH_MAX];
	char *names[GREP_BATCH_MAX];
	int64_t sizes[GREP_BATCH_MAX];
	size_t n;
	uint64_t bytes;
	uint8_t *out;
};

static void batch_single(struct grep_run *run, arf_client *c, struct batch *b, size_t j)
{
	remote_file(run, c, b->ino[j], b->gen[j], b->sizes[j], b->names[j]);
}

/*
 * Reports files [from, from + k) of b from a batched run's output: each
 * file's header, records and inline bytes in turn; a file the run left
 * undone (see grep_int.h) is searched again by itself, in its place.
 */
static int batch_report(struct grep_run *run, arf_client *c, struct batch *b, size_t from,
			size_t k, const uint8_t *out, size_t out_len)
{
	int printing = !(run->o.count || run->o.list || run->o.quiet);
	int hold = printing && !run->o.text;
	size_t at = 0;

	for (size_t j = from; j < from + k; j++) {
		struct grep_bres h;
		long long n = 0;

		if (at + sizeof(h) > out_len)
			return -EPROTO;
		memcpy(&h, out + at, sizeof(h));
		at += sizeof(h);
		size_t nrec = h.r0 < 0 ? 0 : (size_t)(h.r0 >> 8), recs = at;
		int code = h.r0 < 0 ? -1 : (int)(h.r0 & 255);

		if (nrec > BATCH_MAX_REC || at + nrec * sizeof(struct grep_rec) > out_len)
			return -EPROTO;
		at += nrec * sizeof(struct grep_rec);
		if (!(code == GREP_RET_DONE || (code == GREP_RET_MAX && !(hold && nrec)))) {
			/* -m's stop with lines held (a NUL may follow them in
			 * GNU grep's buffer), or undone: by itself, as
			 * ship_file decides; its inline bytes are passed over */
			for (size_t i = 0; (h.flags & GREP_BRES_INLINE) && i < nrec; i++) {
				struct grep_rec rec;

				memcpy(&rec, out + recs + i * sizeof(rec), sizeof(rec));
				if (rec.len && rec.len <= b->x.inline_max)
					at += (size_t)rec.len;
			}
			if (at > out_len)
				return -EPROTO;
			if (h.r0 == -EBUSY && j > from && ship.belf) {
				/* an arfd that lends one view a run: the
				 * batch costs more than it saves there */
				free(ship.belf);
				ship.belf = NULL;
			}
			batch_single(run, c, b, j);
			continue;
		}
		for (size_t i = 0; i < nrec; i++) {
			struct grep_rec rec;
			unsigned char *p;

			memcpy(&rec, out + recs + i * sizeof(rec), sizeof(rec));
			n++;
			run->matched = 1;
			if (run->o.quiet)
				grep_exit(run, 0);
			if (!printing)
				continue;
			if ((h.flags & GREP_BRES_INLINE) && rec.len && rec.len <= b->x.inline_max) {
				if (at + rec.len > out_len)
					return -EPROTO;
				p = malloc((size_t)rec.len);
				if (p)
					memcpy(p, out + at, (size_t)rec.len);
				at += (size_t)rec.len;
			} else {
				p = fetch(c, b->ino[j], b->gen[j], rec.off, (size_t)rec.len);
			}
			if (!p) {
				grep_error(run, b->names[j], -ENOMEM);
				return -ENOMEM;
			}
			grep_print_line(run, b->names[j], p, (size_t)rec.len, rec.off, rec.lineno);
			free(p);
		}
		if (printing)
			fflush(run->out);
		grep_report(run, b->names[j], n);
	}
	return 0;
}

/* Searches and reports every file of b, in as few runs as the server's
 * budget allows; b is empty after. */
static void batch_flush(struct grep_run *run, arf_client *c, struct batch *b)
{
	struct arf_exec_result res;
	size_t done = 0;

	if (!b->out)
		b->out = malloc(BATCH_OUT);
	while (done < b->n) {
		size_t k = b->n - done;
		int r;

		if (k > ship.bmax)
			k = ship.bmax;
		if (!b->out || k == 1 || !ship.belf) { /* one file: the ordinary run */
			batch_single(run, c, b, done++);
			continue;
		}
		for (size_t j = 0; j < k; j++) {
			b->x.f[j].ino = b->ino[done + j];
			b->x.f[j].gen = b->gen[done + j];
			b->x.f[j].pad0 = 0;
		}
		b->x.nfiles = k;
		b->x.view_len = BATCH_FILE_MAX;
		b->x.max_sel = run->o.list || run->o.quiet ? 1
			       : run->o.max_count < 0 ? INT64_MAX : (uint64_t)run->o.max_count;
		b->x.max_rec = BATCH_MAX_REC;
		b->x.inline_max = run->o.count || run->o.list || run->o.quiet ? 0 : SHIP_INLINE;
		b->x.out_room = ship.out_room;
		memset(b->x.zero, 0, sizeof(b->x.zero));
		r = arf_exec(c, ship.belf, ship.blen, &b->x, offsetof(struct grep_bctx, f) +
			     k * sizeof(struct grep_bfile), b->out, (size_t)ship.out_room, &res);
		if (r == ARF_EBUDGET && ship.bmax > 1) {
			ship.bmax = k / 2 ? k / 2 : 1;
			continue;
		}
		if (r == ARF_EOUTPUT && ship.out_room > 16384) {
			ship.out_room /= 2;
			continue;
		}
		if (r < 0 || res.r0 < 0 || (uint64_t)res.r0 > k) {
			/* this server cannot run it (mobile code off, or an
			 * arfd whose file_view lends one view a run): one run
			 * per file from now on */
			free(ship.belf);
			ship.belf = NULL;
			continue;
		}
		if (res.r0 == 0) { /* not even one fitted: the ordinary run */
			batch_single(run, c, b, done++);
			continue;
		}
		if (batch_report(run, c, b, done, (size_t)res.r0, b->out, res.out_len) < 0) {
			run->errseen = 1;
			fprintf(stderr, "grep: %s: malformed output from the server's run\n",
				b->names[done]);
		}
		done += (size_t)res.r0;
	}
	for (size_t j = 0; j < b->n; j++)
		free(b->names[j]);
	b->n = 0;
	b->bytes = 0;
}

/* A regular file found by the walk: into the batch when small, else
 * searched now (after the batch, to keep the walk's order). */
static void batch_add(struct grep_run *run, arf_client *c, struct batch *b, uint64_t ino,
		      uint32_t gen, int64_t size, char *name)
{
	if (!ship_ready(run) || !ship.belf || run->o.max_count == 0 || size < 0 ||
	    (uint64_t)size > BATCH_FILE_MAX) {
		batch_flush(run, c, b);
		remote_file(run, c, ino, gen, size, name);
		free(name);
		return;
	}
	if (b->n == GREP_BATCH_MAX || b->bytes + (uint64_t)size > BATCH_BYTES)
		batch_flush(run, c, b);
	b->ino[b->n] = ino;
	b->gen[b->n] = gen;
	b->names[b->n] = name;
	b->sizes[b->n] = size;
	b->n++;
	b->bytes += (uint64_t)size;
}

#define DIR_BATCH 128 /* entries per readdirplus */

/* A directory the walk on c reached through a volume's mount point (libarf
 * crossed it: the volume is in its handle's top 16 bits, docs/volumes.md):
 * the connection to that volume's server, with *st its handle there, or
 * NULL (reported).  mpath: its path on the mount, where ARF_IOC_CRED gives
 * the volume's URL, handle and a token for our user minted by that server;
 * NULL by URL (anonymous there, as every URL is). */
static arf_client *cross(struct grep_run *run, arf_client *c, const char *mpath,
			 struct arf_stat *st, const char *child, unsigned *vnum)
{
	arf_client *v;
	int r;

	*vnum = (unsigned)(st->ino >> 48);
	if (mpath) {
		struct arf_ioc_cred *ic = calloc(1, sizeof(*ic));
		int fd = open(mpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY), ok;

		if (fd < 0 || !ic) {
			grep_error(run, child, fd < 0 ? -errno : -ENOMEM);
			if (fd >= 0)
				close(fd);
			free(ic);
			return NULL;
		}
		struct stat fs;

		ok = ioctl(fd, ARF_IOC_CRED, ic) == 0 && ic->version == ARF_IOC_CRED_VERSION &&
		     memchr(ic->url, 0, sizeof(ic->url));
		r = -errno;
		if (fstat(fd, &fs) == 0) /* the volume's number as the mount shows it */
			*vnum = (unsigned)((uint64_t)fs.st_ino >> 48);
		close(fd);
		v = ok ? grep_conn_get(run, ic->url, ic->token, child) : NULL;
		if (!ok)
			grep_error(run, child, r < 0 ? r : -EPROTO);
		st->ino = ic->ino;
		st->gen = ic->gen;
		free(ic);
		return v;
	}

	char url[4352];
	uint64_t local;

	r = arf_volume_url(c, st->ino, url, sizeof(url), &local);
	if (r < 0) {
		grep_error(run, child, r);
		return NULL;
	}
	st->ino = local;
	return grep_conn_get(run, url, NULL, child);
}

#define VOL_CHAIN 16 /* volumes on one path at most (mount points crossed + 1) */

/* mpath: dir's path on the mount, or NULL (by URL); vols: the numbers of
 * the volumes on its path (nvols of them), a mount point back into one of
 * which is a loop */
static long long remote_walk(struct grep_run *run, arf_client *c, struct batch *b,
			     const struct arf_stat *dir, const char *name, const char *mpath,
			     const uint16_t *vols, unsigned nvols)
{
	struct arf_dirent *ents = malloc(DIR_BATCH * sizeof(*ents));
	struct arf_stat *sts = malloc(DIR_BATCH * sizeof(*sts));
	uint64_t cookie = 0;
	int eof = 0;
	size_t nl = strlen(name);

	if (!ents || !sts) {
		free(ents);
		free(sts);
		grep_error(run, name, -ENOMEM);
		return -ENOMEM;
	}
	while (!eof) {
		size_t n = 0;
		int r = arf_readdirplus(c, dir->ino, dir->gen, cookie, ents, sts, DIR_BATCH, &n, &eof);

		if (r < 0) {
			batch_flush(run, c, b);
			grep_error(run, name, r);
			free(ents);
			free(sts);
			return r;
		}
		for (size_t i = 0; i < n; i++) {
			struct arf_stat st = sts[i];
			char *child;

			cookie = ents[i].cookie;
			if (!nl) /* the implicit "." of `grep -r`: bare names */
				child = strdup(ents[i].name);
			else if (asprintf(&child, "%s%s%s", name, name[nl - 1] == '/' ? "" : "/",
					  ents[i].name) < 0)
				child = NULL;
			if (!child) {
				grep_error(run, name, -ENOMEM);
				continue;
			}
			/* a mount point: listings leave what is behind it out.  On
			 * a mount it is crossed there (cross()), since a token is
			 * good for one connection only; by URL libarf crosses it */
			r = 0;
			if (!st.ino && !(mpath && S_ISDIR(st.mode)))
				r = arf_lookup(c, dir->ino, dir->gen, ents[i].name, &st);
			if (r < 0) {
				batch_flush(run, c, b);
				grep_error(run, child, r);
			} else if (S_ISDIR(st.mode)) {
				char *cm = NULL;
				arf_client *v = c;

				batch_flush(run, c, b);
				if (mpath && asprintf(&cm, "%s/%s", mpath, ents[i].name) < 0) {
					grep_error(run, child, -ENOMEM);
					free(child);
					continue;
				}
				uint16_t chain[VOL_CHAIN];
				unsigned vnum = 0, n = nvols;

				memcpy(chain, vols, nvols * sizeof(*vols));
				if (!st.ino || st.ino >> 48) { /* another volume's (c's own: 0 there) */
					int loop = 0;

					v = cross(run, c, cm, &st, child, &vnum);
					for (unsigned k = 0; v && k < nvols; k++)
						loop |= vols[k] == vnum;
					loop |= v && n == VOL_CHAIN;
					if (loop) { /* back into a volume of its path */
						grep_error(run, child, -ELOOP);
						v = NULL;
					} else if (v) {
						chain[n++] = (uint16_t)vnum;
					}
				}
				if (v)
					remote_walk(run, v, b, &st, child, cm, chain, n);
				free(cm);
			} else if (S_ISREG(st.mode)) {
				batch_add(run, c, b, st.ino, st.gen, (int64_t)st.size, child);
				continue; /* the batch owns child now */
			}
			free(child);
		}
	}
	batch_flush(run, c, b);
	free(ents);
	free(sts);
	return 0;
}

int grep_remote_dir_path(struct grep_run *run, const char *path, const char *name)
{
	struct arf_ioc_cred *ic;
	struct arf_stat st;
	struct batch *b;
	arf_client *c;
	int fd, ok;

	if (run->o.recursive != 1 || run->o.local_only || getenv("ARF_GREP_NO_WALK"))
		return 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	ic = calloc(1, sizeof(*ic));
	ok = ic && ioctl(fd, ARF_IOC_CRED, ic) == 0 && ic->version == ARF_IOC_CRED_VERSION &&
	     memchr(ic->url, 0, sizeof(ic->url));
	close(fd);
	if (!ok || grep_mounts_below(path)) {
		free(ic);
		return 0;
	}
	c = grep_conn_get(run, ic->url, ic->token, NULL);
	memset(&st, 0, sizeof(st));
	st.ino = ic->ino;
	st.gen = ic->gen;
	free(ic);
	b = calloc(1, sizeof(*b));
	if (!c || !b) {
		free(b);
		return 0;
	}
	if (run->out_file < 0)
		run->out_file = 1;
	struct stat ps;
	uint16_t top = stat(path, &ps) == 0 ? (uint16_t)((uint64_t)ps.st_ino >> 48) : 0;

	remote_walk(run, c, b, &st, name, path, &top, 1);
	free(b->out);
	free(b);
	return 1;
}

static long long remote_dir(struct grep_run *run, arf_client *c, const struct arf_stat *dir,
			    const char *name)
{
	struct arf_dirent ents[64];
	uint64_t cookie = 0;
	int eof = 0;
	long long total = 0;

	if (run->out_file < 0)
		run->out_file = 1;
	if (run->o.recursive == 1) {
		struct batch *b = calloc(1, sizeof(*b));

		if (b) {
			uint16_t top = 0;

			remote_walk(run, c, b, dir, name, NULL, &top, 1);
			free(b->out);
			free(b);
			return 0;
		}
	}
	while (!eof) {
		size_t n = 0;
		int r = arf_readdir(c, dir->ino, dir->gen, cookie, ents, 64, &n, &eof);

		if (r < 0) {
			grep_error(run, name, r);
			return r;
		}
		for (size_t i = 0; i < n; i++) {
			struct arf_stat st;
			char *child;

			cookie = ents[i].cookie;
			if (asprintf(&child, "%s%s%s", name, name[strlen(name) - 1] == '/' ? "" : "/",
				     ents[i].name) < 0)
				return -ENOMEM;
			r = arf_lookup(c, dir->ino, dir->gen, ents[i].name, &st);
			if (r < 0) {
				grep_error(run, child, r);
			} else if (S_ISDIR(st.mode)) {
				remote_dir(run, c, &st, child);
			} else if (S_ISREG(st.mode)) {
				long long k = remote_file(run, c, st.ino, st.gen, (int64_t)st.size, child);

				if (k > 0)
					total += k;
			} else if (S_ISLNK(st.mode) && run->o.recursive == 2) {
				/* -R: follow it */
				struct arf_stat t;
				char target[4096];

				if (arf_readlink(c, st.ino, st.gen, target, sizeof(target)) >= 0 &&
				    arf_lookup(c, dir->ino, dir->gen, ents[i].name, &t) == 0 &&
				    S_ISREG(t.mode))
					remote_file(run, c, t.ino, t.gen, (int64_t)t.size, child);
			}
			free(child);
		}
	}
	return total;
}

long long grep_remote(struct grep_run *run, const char *url, const char *name)
{
	struct arf_url u;
	struct arf_stat st;
	arf_client *c = NULL;
	char err[256];
	int r;

	r = arf_url_parse(url, &u, err, sizeof(err));
	if (r < 0) {
		run->errseen = 1;
		if (!run->o.no_messages)
			fprintf(stderr, "grep: %s: %s\n", name, err);
		return r;
	}
	c = grep_conn_get(run, url, NULL, name);
	if (!c)
		return -EIO;
	r = arf_resolve(c, u.path, &st);
	if (r == 0 && S_ISLNK(st.mode)) {
		/* a final symbolic link on the command line is followed */
		char target[4096];
		int k = arf_readlink(c, st.ino, st.gen, target, sizeof(target));

		if (k >= 0 && target[0] == '/')
			r = arf_resolve(c, target, &st);
	}
	if (r == 0) {
		char vurl[4352];
		uint64_t local;
		/* behind a mount point (arfd's own inode numbers are below
		 * 2^32): that volume's own connection, which its programs need */
		if (st.ino > UINT32_MAX &&
		    (r = arf_volume_url(c, st.ino, vurl, sizeof(vurl), &local)) == 0) {
			c = grep_conn_get(run, vurl, NULL, name);
			r = c ? 0 : -EIO;
			st.ino = local;
		}
	}
	if (r < 0) {
		grep_error(run, name, r);
		return r;
	}
	if (S_ISDIR(st.mode)) {
		if (!run->o.recursive) {
			grep_error(run, name, -EISDIR);
			return -EISDIR;
		}
		return remote_dir(run, c, &st, name);
	}
	return remote_file(run, c, st.ino, st.gen, (int64_t)st.size, name);
}
