/* SPDX-License-Identifier: MIT */
/*
 * libarf readahead: a file read sequentially gets its next bytes posted
 * before they are asked for, so that the server sends them while the
 * client checks and copies the ones before -- a 1 MiB read at queue depth
 * one then costs the larger of the two sides' work, not their sum.
 *
 * Only where a posted read returns before its bytes are in (tcp): over shm
 * a read is a copy done at once, and reading ahead would only copy twice.
 *
 * Per client, a few streams (one per file being read, least recently used
 * replaced), each with two windows: one being read from while the next is
 * in flight.  A stream starts reading ahead at its second read in a row
 * that begins where the previous one ended; a window is as long as the
 * reads (at least RA_MIN, at most the server's largest I/O), and the next
 * one is posted, ahead of any copying, once a read has taken the first
 * half of the current one.
 *
 * A window is read exactly as a read is (onesided.c: blocks and their tags
 * in one round, through the same inode's map) and checked the same way,
 * when first taken: a torn block, a stale map or a failed round makes the
 * window worthless and the read goes the ordinary way, with its own
 * retries.  It is used only by a read through the inode version it was
 * read through (any change of the file, this client's writes included,
 * changes the version), so what it hands out is at most one read older
 * than what the ordinary path would read.  Its extents come from a list
 * of the whole file's, loaded once per inode version (one round when they
 * are in extent pages).
 *
 * Locks: ra.lock guards the streams; it is never held while calling into
 * the connection, and the windows' completion (which runs under the
 * connection's lock) takes it, then an asynchronous reader's queue lock
 * through wake.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

#define RA_STREAMS 4
#define RA_MIN (128u << 10)

enum win_state {
	W_EMPTY,
	W_FLIGHT,     /* posted */
	W_ARRIVED,    /* the round ended (rc, status), not yet checked */
	W_CHECKING,   /* a reader checks its tags */
	W_VALID,      /* checked: its bytes may be handed out */
};

struct ra_win {
	enum win_state state;
	uint64_t off;                 /* the file range it holds */
	size_t len;
	uint8_t *buf;
	size_t cap;
	struct arf_os_rd rd;
	struct arf_net_pending np;    /* its round */
	struct ra_stream *st;
	uint64_t conn_gen;
	int flag;                     /* atomic: the round ended (arf_cl_wait) */
	int posted;                   /* the post returned: it may be redirected */
	int users;                    /* readers copying out of it */
	void (*wake)(void *);         /* an asynchronous reader waiting for it */
	void *wake_arg;
	/* adopted: a reader of exactly this range came while it was in flight,
	 * and its bytes were redirected into that reader's buffer */
	int adopted;
	void *adopter;                /* the asynchronous reader's wake argument */
	uint8_t *abuf;                /* that buffer */
	struct arf_net_read_op *aops; /* the ops redirected there */
	size_t acap;
};

struct ra_stream {
	uint64_t ino;                 /* 0 = unused */
	uint32_t gen;
	uint64_t ver;                 /* the inode version the windows were read through */
	uint64_t next_off;            /* where a sequential reader reads next */
	uint32_t seq;                 /* reads in a row that went on where the last ended */
	uint64_t used;                /* LRU stamp */
	struct arf_meta_extent *ext;  /* the whole file's extents, for ver */
	size_t next;
	int have_ext;
	struct ra_win win[2];
	struct arf_client *c;
};

struct arf_ra {
	pthread_mutex_t lock;
	uint64_t clock;
	struct ra_stream s[RA_STREAMS];
};

int arf_ra_init(arf_client *c)
{
	struct arf_ra *ra = calloc(1, sizeof(*ra));

	if (!ra)
		return -ENOMEM;
	pthread_mutex_init(&ra->lock, NULL);
	for (int i = 0; i < RA_STREAMS; i++) {
		ra->s[i].c = c;
		for (int w = 0; w < 2; w++)
			ra->s[i].win[w].st = &ra->s[i];
	}
	c->ra = ra;
	return 0;
}

void arf_ra_free(arf_client *c)
{
	struct arf_ra *ra = c->ra;

	if (!ra)
		return;
	/* the connection is closed: every round posted has ended */
	for (int i = 0; i < RA_STREAMS; i++) {
		free(ra->s[i].ext);
		for (int w = 0; w < 2; w++) {
			arf_os_rd_free(&ra->s[i].win[w].rd);
			free(ra->s[i].win[w].buf);
			free(ra->s[i].win[w].aops);
		}
	}
	pthread_mutex_destroy(&ra->lock);
	free(ra);
	c->ra = NULL;
}

/* A window's round ended (on the thread that read its reply). */
static void win_done(struct arf_net_pending *p)
{
	struct ra_win *w = p->ctx;
	struct arf_ra *ra = w->st->c->ra;
	void (*wake)(void *) = NULL;
	void *arg = NULL;

	pthread_mutex_lock(&ra->lock);
	w->state = W_ARRIVED;
	__atomic_store_n(&w->flag, 1, __ATOMIC_RELEASE);
	wake = w->wake;
	arg = w->wake_arg;
	w->wake = NULL;
	pthread_mutex_unlock(&ra->lock);
	if (wake)
		wake(arg);
}

/* Can a window be dropped or reused (nobody waits for it or reads it)? */
static int win_idle(const struct ra_win *w)
{
	return w->state != W_FLIGHT && w->state != W_CHECKING && !w->users && !w->adopted;
}

static void win_drop(struct ra_win *w)
{
	if (win_idle(w))
		w->state = W_EMPTY;
}

/* The stream of (ino, gen), made (replacing the least recently used idle
 * one) when make; NULL if none.  Caller holds ra->lock. */
static struct ra_stream *stream_find(struct arf_ra *ra, const struct arf_meta_inode *in, int make)
{
	struct ra_stream *lru = NULL;

	for (int i = 0; i < RA_STREAMS; i++) {
		struct ra_stream *s = &ra->s[i];
		if (s->ino == in->ino && s->gen == in->gen) {
			s->used = ++ra->clock;
			if (s->ver != in->h.ver) {
				/* the file changed: nothing read through the old map */
				win_drop(&s->win[0]);
				win_drop(&s->win[1]);
				s->have_ext = 0;
				s->ver = in->h.ver;
			}
			return s;
		}
		if (win_idle(&s->win[0]) && win_idle(&s->win[1]) && (!lru || s->used < lru->used))
			lru = s;
	}
	if (!make || !lru)
		return NULL;
	lru->ino = in->ino;
	lru->gen = in->gen;
	lru->ver = in->h.ver;
	lru->next_off = UINT64_MAX;
	lru->seq = 0;
	lru->have_ext = 0;
	lru->used = ++ra->clock;
	lru->win[0].state = lru->win[1].state = W_EMPTY;
	return lru;
}

/* The whole file's extents for s (caller holds ra->lock, which this may
 * drop for a round of extent pages).  0, or an error (no readahead). */
static int stream_extents(arf_client *c, struct arf_ra *ra, struct ra_stream *s,
			  const struct arf_meta_inode *in)
{
	struct arf_os_ext x;
	int rc;

	if (s->have_ext)
		return 0;
	if ((rc = arf_os_ext_begin(c, in, 0, in->size > SIZE_MAX ? SIZE_MAX : (size_t)in->size,
				   &x)))
		goto out;
	if (x.np) {
		pthread_mutex_unlock(&ra->lock);
		rc = arf_cl_read(c, x.ops, (size_t)x.np);
		pthread_mutex_lock(&ra->lock);
		if (rc || s->ino != in->ino || s->ver != in->h.ver) {
			rc = rc ? rc : -EAGAIN; /* the stream moved on meanwhile */
			goto out;
		}
	}
	if ((rc = arf_os_ext_end(in, &x)))
		goto out;
	free(s->ext);
	s->ext = x.ext;
	s->next = x.next;
	x.ext = NULL;
	s->have_ext = 1;
out:
	arf_os_ext_free(&x);
	return rc;
}

/* Post window w of s for [off, off+len) (caller holds ra->lock, dropped
 * around the post). */
static void win_post(arf_client *c, struct arf_ra *ra, struct ra_stream *s, struct ra_win *w,
		     const struct arf_meta_inode *in, uint64_t off, size_t len)
{
	if (off >= in->size || !win_idle(w) || stream_extents(c, ra, s, in) || !win_idle(w))
		return;
	if (w->cap < len) {
		uint8_t *nb = realloc(w->buf, len);
		if (!nb)
			return;
		w->buf = nb;
		w->cap = len;
	}
	struct arf_os_ext x = { .ext = s->ext, .next = s->next };
	arf_os_rd_free(&w->rd);
	if (arf_os_rd_begin(c, in, &x, off, w->buf, len, &w->rd) || !w->rd.len)
		return;
	w->off = off;
	w->len = w->rd.len;
	w->state = W_FLIGHT;
	w->flag = 0;
	w->posted = 0;
	w->wake = NULL;
	w->np = (struct arf_net_pending){ .done = win_done, .ctx = w };
	if (!w->rd.nops) { /* all holes */
		w->state = W_ARRIVED;
		w->flag = 1;
		return;
	}
	pthread_mutex_unlock(&ra->lock);
	int rc = arf_cl_post_read(c, w->rd.ops, w->rd.nops, &w->np, &w->conn_gen);
	pthread_mutex_lock(&ra->lock);
	if (rc) /* not posted: win_done will not run */
		w->state = W_EMPTY;
	else
		w->posted = 1;
}

/* Redirect w, in flight, into buf (the reader of exactly its range):
 * its blocks land there, its tags and bounce blocks where they were.
 * Caller holds ra->lock, dropped around the redirection.  1 when done. */
static int win_adopt(arf_client *c, struct arf_ra *ra, struct ra_win *w, uint8_t *buf, void *arg)
{
	if (!w->posted || w->wake)
		return 0; /* still being posted, or another reader waits for it */
	if (w->acap < w->rd.nops) {
		struct arf_net_read_op *n = realloc(w->aops, w->rd.nops * sizeof(*n));
		if (!n)
			return 0;
		w->aops = n;
		w->acap = w->rd.nops;
	}
	for (size_t i = 0; i < w->rd.nops; i++) {
		w->aops[i] = w->rd.ops[i];
		uint8_t *d = w->rd.ops[i].dst;
		if (d >= w->buf && d < w->buf + w->len)
			w->aops[i].dst = buf + (d - w->buf);
	}
	w->adopted = 1;
	w->adopter = arg;
	w->abuf = buf;
	pthread_mutex_unlock(&ra->lock);
	int ok = arf_cl_redirect(c, w->conn_gen, &w->np, w->aops);
	pthread_mutex_lock(&ra->lock);
	if (!ok)
		w->adopted = 0;
	return ok;
}

/* Post the window after w, in the other slot, if the reader has taken
 * w's first half by end and nothing is posted there yet. */
static void post_next(arf_client *c, struct arf_ra *ra, struct ra_stream *s, struct ra_win *w,
		      const struct arf_meta_inode *in, uint64_t end)
{
	struct ra_win *o = &s->win[w == &s->win[0]];
	uint64_t wend = w->off + w->len;

	if (end < w->off + w->len / 2)
		return;
	if (o->state != W_EMPTY && o->off == wend)
		return; /* already there */
	win_drop(o);
	win_post(c, ra, s, o, in, wend, w->len);
}

ssize_t arf_ra_take(arf_client *c, const struct arf_meta_inode *in, uint64_t off, void *buf,
		    size_t len, void (*wake)(void *), void *arg)
{
	struct arf_ra *ra = c->ra;
	struct ra_stream *s;
	struct ra_win *w = NULL;
	ssize_t n = 0;

	if (!ra || !len)
		return 0;
	pthread_mutex_lock(&ra->lock);
	for (;;) {
		s = stream_find(ra, in, 0);
		w = NULL;
		if (!s)
			goto out;
		for (int i = 0; wake && i < 2; i++) {
			/* an asynchronous reader back for the window it adopted */
			w = &s->win[i];
			if (w->adopted && w->adopter == arg && w->abuf == buf &&
			    w->state == W_ARRIVED)
				goto adopted;
		}
		w = NULL;
		if (off != s->next_off)
			goto out;
		for (int i = 0; i < 2; i++)
			if (s->win[i].state != W_EMPTY && s->win[i].off <= off &&
			    off < s->win[i].off + s->win[i].len)
				w = &s->win[i];
		if (!w || w->adopted)
			goto out;
		if (w->state != W_FLIGHT)
			break;
		/* in flight: a reader of exactly its range has the bytes land in
		 * its own buffer, with no copy */
		if (off == w->off && len >= w->len && win_adopt(c, ra, w, buf, arg)) {
			if (w->state == W_FLIGHT) {
				if (wake) {
					w->wake = wake;
					w->wake_arg = arg;
					n = ARF_RA_WAIT;
					goto out;
				}
				/* the bytes land in buf: never return before they have */
				pthread_mutex_unlock(&ra->lock);
				while (!__atomic_load_n(&w->flag, __ATOMIC_ACQUIRE))
					arf_cl_wait(c, &w->flag, -1);
				pthread_mutex_lock(&ra->lock);
			}
			goto adopted;
		}
		if (wake) {
			/* asynchronous: called back when it arrives (one waiter) */
			if (!w->wake) {
				w->wake = wake;
				w->wake_arg = arg;
				n = ARF_RA_WAIT;
			}
			goto out;
		}
		pthread_mutex_unlock(&ra->lock);
		int rc = arf_cl_wait(c, &w->flag, -1);
		pthread_mutex_lock(&ra->lock);
		if (rc < 0 && !__atomic_load_n(&w->flag, __ATOMIC_ACQUIRE))
			goto out;
	}
	if (w->state == W_CHECKING)
		goto out; /* another reader is checking it: read the ordinary way */
	int check = w->state == W_ARRIVED;
	if (check) {
		if (w->np.rc || w->np.status != ARF_NET_S_OK) {
			win_drop(w); /* lost: the ordinary path decides */
			goto out;
		}
		w->state = W_CHECKING;
	} else {
		w->users++;
	}
	/* the next window goes out before this one is checked and copied */
	post_next(c, ra, s, w, in, off + len);
	if (check) {
		pthread_mutex_unlock(&ra->lock);
		int ok = arf_os_rd_end(&w->rd) == (ssize_t)w->len;
		pthread_mutex_lock(&ra->lock);
		w->state = ok ? W_VALID : W_EMPTY;
		if (!ok)
			goto out; /* torn or stale: the ordinary path retries */
		w->users++;
	}
	/* W_VALID, and ours to copy from */
	n = (ssize_t)(w->off + w->len - off < len ? w->off + w->len - off : len);
	pthread_mutex_unlock(&ra->lock);
	memcpy(buf, w->buf + (off - w->off), (size_t)n);
	pthread_mutex_lock(&ra->lock);
	w->users--;
	if (off + (uint64_t)n >= w->off + w->len)
		win_drop(w); /* all taken */
	goto served;

adopted:
	/* the window's bytes are in buf: checked there, as a read's are */
	if (w->np.rc || w->np.status != ARF_NET_S_OK) {
		w->adopted = 0;
		w->state = W_EMPTY;
		memset(buf, 0, w->len); /* whatever arrived was never checked */
		goto out;
	}
	w->state = W_CHECKING;
	post_next(c, ra, s, w, in, off + len);
	pthread_mutex_unlock(&ra->lock);
	w->rd.buf = buf;
	int ok = arf_os_rd_end(&w->rd) == (ssize_t)w->len; /* zeroes buf if not */
	w->rd.buf = w->buf;
	pthread_mutex_lock(&ra->lock);
	w->adopted = 0;
	w->state = W_EMPTY;
	if (!ok)
		goto out;
	n = (ssize_t)w->len;
served:
	s->next_off = off + (uint64_t)n;
	s->seq++;
	ARF_CTR_ADD(c, readahead_bytes, (uint64_t)n);
out:
	pthread_mutex_unlock(&ra->lock);
	return n;
}

void arf_ra_note(arf_client *c, const struct arf_meta_inode *in, uint64_t off, size_t n,
		 size_t asked)
{
	struct arf_ra *ra = c->ra;

	if (!ra || !n || !arf_cl_reads_async(c))
		return;
	pthread_mutex_lock(&ra->lock);
	struct ra_stream *s = stream_find(ra, in, 1);
	if (!s)
		goto out;
	if (off == s->next_off) {
		s->seq++;
	} else {
		s->seq = 0;
		win_drop(&s->win[0]);
		win_drop(&s->win[1]);
	}
	s->next_off = off + n;
	if (s->seq < 1 || off + n >= in->size)
		goto out;
	/* a sequential reader: the window after what it read, unless one is
	 * there already */
	size_t wlen = asked < RA_MIN ? RA_MIN : asked;
	if (wlen > c->info.max_io)
		wlen = c->info.max_io;
	for (int i = 0; i < 2; i++)
		if (s->win[i].state != W_EMPTY && s->win[i].off <= off + n &&
		    off + n < s->win[i].off + s->win[i].len)
			goto out;
	struct ra_win *w = win_idle(&s->win[0]) ? &s->win[0] : &s->win[1];
	win_drop(w);
	win_post(c, ra, s, w, in, off + n, wlen);
out:
	pthread_mutex_unlock(&ra->lock);
}
