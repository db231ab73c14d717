/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous replies to reads and writes: a read or write that arrives
 * while another is being served does not hold a worker thread while it
 * waits for arfd.
 *
 * Why.  Each FUSE request is served by one of libfuse's worker threads.
 * A request served synchronously holds its thread for the round trip, and
 * every reply wakes the thread that waits for it: at queue depth 16 every
 * read paid two thread switches in arf-fuse, and on two cores the
 * switches, not the bytes, were most of arf-fuse's time (4 KiB random
 * reads at depth 16 through the mount: 17-20k/s, 76 us of arf-fuse CPU a
 * read).  Here the worker submits the operation to one libarf queue
 * (arf_submit: the one-sided rounds of reads submitted together go in
 * one frame) and goes back for the next request; a reaper thread files
 * the replies (arf_reap reads the connection itself) and answers the
 * kernel (reads 23-25k/s, 57 us; writes 13k -> 17k/s, 90 -> 60 us;
 * bench/README.md).
 *
 * Which.  Only when another read or write is being served already
 * (io_busy): a lone one is served synchronously, where libarf's short
 * poll for the reply keeps it on one thread with no switch at all (depth
 * 1 keeps its latency).  And only I/O of the volume mounted (the queue
 * serves the connected volume), on a hard mount, of at most AIO_MAX bytes
 * (larger reads are sequential ones, which the synchronous path reads
 * ahead; larger writes are sent in pieces in flight together by
 * arf_write); reads only through the main client (not within the window
 * in which the uncached client must be read), writes not O_APPEND (the
 * server's end of file decides where those go).  A write's bytes are
 * copied (libfuse's buffer is the worker's next request's), and kept by
 * libarf until a COMMIT, as arf_write's are: the queue is the main
 * client's, so close() and fsync() commit them.
 *
 * Failure.  The queue fails fast (ARF_QUEUE_F_FAIL_FAST): an operation
 * whose connection breaks is not dialled again by the reaper or a
 * submitting worker, which would then wait on a dead server; it is done
 * again synchronously on a thread of its own, with everything a
 * synchronous call has (the hard mount's wait, reconnection, the end of
 * the wait by SIGKILL: hardmount.c).  A write done so again
 * (arf_aio_again) writes the same bytes at the same place, the piece the
 * connection lost under the request id of its first sending, and its
 * writer has had no reply, so nothing it wrote since can be overwritten:
 * not even by the first sending, should a server that was only silent
 * read it after the writer's next write there (arfd's reply cache then
 * answers it instead of applying it; tests/integration test_async
 * AsyncLate, whose "newid" run shows the older bytes landing last when
 * the write goes again as a new one, as it did here before).
 *
 * An operation waiting on a server that is there but silent: every
 * 100 ms the reaper looks at the callers of operations older than a
 * second, and answers EINTR to one whose caller was killed (as
 * hardmount.c's should_cancel does for a synchronous wait), and hands a
 * read older than timeo to a synchronous read (which waits timeo for its
 * reply, then leaves the silent connection and dials again, so the
 * queue's operations on it end too); for a write older than timeo, which
 * is not handed on while libarf has it, a probe (a STATFS) leaves the
 * connection the same way, and the writes come back to be done again as
 * above.  So a connection that went silent without breaking (a dead
 * path, a hung host) holds writes for about two timeo, not until TCP
 * gives it up (test_fuse_aio AsyncSilentPath: a proxy that drops
 * everything on the connection and keeps it open).  Either way a buffer
 * stays with the queue until libarf hands it back.  arfd's reply cache
 * keeps the last 8,192 mutations of all clients: a first sending read
 * later than that would be applied again.
 *
 * Nothing else in the queue waits on the server: it sends no COMMIT at
 * the bound of unstable bytes kept (a write past it goes the synchronous
 * way, which commits: arf_unstable_full) and reads nothing ahead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arf_fuse.h"

#define AIO_DEPTH 256u          /* operations in flight at most; beyond: synchronous */
#define AIO_MAX (128u << 10)    /* largest read or write served here */
#define REAP_BATCH 64
#define LOOK_MS 100             /* how often callers of old reads are looked at */
#define OLD_MS 1000             /* a read older than this may have a killed caller */
#define DRAIN_MS 5000           /* at the end: how long reads in flight are waited for */

struct aop {
	struct arf_aio io;        /* io.user = this */
	fuse_req_t req;
	struct arf_fuse_node *n;
	struct arf_cred cred;
	pid_t pid;                /* the caller (0: unknown) */
	uint64_t since_ms;
	int answered;             /* answered already (look_at_old): free it when reaped */
	uint64_t seq;             /* names it to look_at_old (a request's address is reused) */
	struct aop *prev, *next;/* a->list: submitted, not reaped */
	char data[];
};

struct arf_fuse_aio {
	arf_queue *q;
	pthread_t reaper;
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* reaper: something submitted, or stop */
	pthread_cond_t rerun_cv;  /* the end: a re-run thread finished */
	struct aop *list;
	unsigned pending;         /* in list */
	unsigned reruns;          /* re-run and probe threads running */
	int probing;              /* a probe of the connection runs (probe_main) */
	int stop;
	int leaked;               /* reads still in libarf's hands at the end */
	/* counts, logged at the end */
	uint64_t nasync, nrerun, nkilled, nprobe;
	uint64_t seq;             /* the last aop's */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void unlist_locked(struct arf_fuse_aio *a, struct aop *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		a->list = r->next;
	if (r->next)
		r->next->prev = r->prev;
	a->pending--;
}

/* A read or write done again the synchronous way: a read with a buffer
 * of its own, a write (handed back by libarf) through arf_aio_again on
 * the aop itself, which it then frees. */
struct rerun {
	struct arf_fuse *fs;
	fuse_req_t req;
	struct arf_fuse_node *n;
	struct arf_cred cred;
	uint64_t off;
	size_t len;
	struct aop *write;
	char data[];
};

static void *rerun_main(void *arg)
{
	struct rerun *rr = arg;
	struct arf_fuse *fs = rr->fs;
	struct arf_fuse_aio *a = fs->aio;

	arf_fuse_wait_for(rr->req); /* the hard mount's wait, ended by SIGKILL */
	arf_set_thread_cred(&rr->cred);
	ssize_t got = rr->write ? arf_aio_again(a->q, &rr->write->io)
				: arf_read(fs->c, rr->n->ino, rr->n->gen, rr->off, rr->data, rr->len);
	if (got < 0)
		fuse_reply_err(rr->req, arf_fuse_errno_fh((int)got));
	else if (rr->write)
		fuse_reply_write(rr->req, (size_t)got);
	else
		fuse_reply_buf(rr->req, rr->data, (size_t)got);
	free(rr->write);
	__atomic_sub_fetch(&fs->io_busy, 1, __ATOMIC_RELAXED);
	free(rr);
	pthread_mutex_lock(&a->mu);
	a->reruns--;
	pthread_cond_broadcast(&a->rerun_cv);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* Hand r's request to a thread that does it synchronously; 0, or -1 when
 * no thread could be had (the caller answers EIO).  A read's r is not
 * touched after (its buffer may still be libarf's); a write's, handed
 * back by libarf, is the thread's, which frees it. */
static int rerun(struct arf_fuse *fs, struct aop *r)
{
	struct arf_fuse_aio *a = fs->aio;
	struct aop *write = r->io.op == ARF_AIO_WRITE ? r : NULL;
	struct rerun *rr = malloc(sizeof(*rr) + (write ? 0 : r->io.len));
	pthread_attr_t at;
	pthread_t t;

	if (!rr)
		return -1;
	*rr = (struct rerun){ fs, r->req, r->n, r->cred, r->io.off, r->io.len, write };
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&a->mu);
	a->reruns++;
	a->nrerun++;
	pthread_mutex_unlock(&a->mu);
	int rc = pthread_create(&t, &at, rerun_main, rr);
	pthread_attr_destroy(&at);
	if (!rc)
		return 0;
	pthread_mutex_lock(&a->mu);
	a->reruns--;
	a->nrerun--;
	pthread_mutex_unlock(&a->mu);
	free(rr); /* a write's r stays the caller's */
	arf_fuse_log(FUSE_LOG_WARNING, "arf-fuse: no thread to read again synchronously: EIO");
	return -1;
}

/* A probe of the connection, for writes older than timeo (writes alone
 * send nothing else that would notice a silent one): a STATFS, which
 * waits timeo for its reply, then leaves the connection and dials again as
 * every synchronous call does, so that the queue's writes on it end and
 * are done again (arf_aio_again, under their first sending's ids) on the
 * new one.  Ends with the session, as the re-runs do. */
static void *probe_main(void *arg)
{
	struct arf_fuse *fs = arg;
	struct arf_fuse_aio *a = fs->aio;
	struct arf_statfs sf;

	arf_fuse_wait_session(fs);
	(void)arf_statfs(fs->c, &sf);
	pthread_mutex_lock(&a->mu);
	a->probing = 0;
	a->reruns--;
	pthread_cond_broadcast(&a->rerun_cv);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* Start a probe unless one runs (under a->mu). */
static void probe_locked(struct arf_fuse *fs)
{
	struct arf_fuse_aio *a = fs->aio;
	pthread_attr_t at;
	pthread_t t;

	if (a->probing || a->stop)
		return;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (!pthread_create(&t, &at, probe_main, fs)) {
		a->probing = 1;
		a->reruns++;
		a->nprobe++;
	}
	pthread_attr_destroy(&at);
}

/* Answer what libarf handed back (any thread). */
static void answer(struct arf_fuse *fs, struct arf_aio **done, int n)
{
	struct arf_fuse_aio *a = fs->aio;

	for (int i = 0; i < n; i++) {
		struct aop *r = done[i]->user;
		pthread_mutex_lock(&a->mu);
		unlist_locked(a, r);
		int answered = r->answered;
		pthread_mutex_unlock(&a->mu);
		if (answered) {
			free(r);
			continue;
		}
		if (r->io.res == -ENOTCONN) {
			int write = r->io.op == ARF_AIO_WRITE; /* r may be gone once handed on */
			if (!rerun(fs, r)) {
				if (!write)
					free(r); /* a write's is the re-run's now */
				continue;
			}
			r->io.res = -EIO;
		}
		if (r->io.res < 0)
			fuse_reply_err(r->req, arf_fuse_errno_fh((int)r->io.res));
		else if (r->io.op == ARF_AIO_WRITE)
			fuse_reply_write(r->req, (size_t)r->io.res);
		else
			fuse_reply_buf(r->req, r->data, (size_t)r->io.res);
		__atomic_sub_fetch(&fs->io_busy, 1, __ATOMIC_RELAXED);
		free(r);
	}
}

/* Mark the unanswered operation seq answered (under a->mu); r or NULL. */
static struct aop *take_locked(struct arf_fuse_aio *a, uint64_t seq)
{
	for (struct aop *r = a->list; r; r = r->next)
		if (r->seq == seq && !r->answered) {
			r->answered = 1;
			return r;
		}
	return NULL;
}

/* Reads that have waited long (the reads stay with libarf: their
 * buffers are its until reaped):
 *  - a read whose caller was killed is answered EINTR, as a synchronous
 *    wait ends (hardmount.c);
 *  - a read older than timeo is handed to a synchronous read, which waits
 *    timeo for its reply and then dials again, as every synchronous call
 *    does: a connection that went silent is left, and the queue's reads on
 *    it end with it;
 *  - at the end (all), every read is answered EIO: nobody waits now. */
static int look_at_old(struct arf_fuse *fs, int all)
{
	struct arf_fuse_aio *a = fs->aio;
	uint64_t now = now_ms(), timeo_ms = (uint64_t)fs->opts.timeo * 100u;
	struct { uint64_t seq; pid_t pid; int late; } old[REAP_BATCH];
	int n = 0;

	pthread_mutex_lock(&a->mu);
	for (struct aop *r = a->list; r && n < REAP_BATCH; r = r->next)
		if (!r->answered && (all || now - r->since_ms >= OLD_MS)) {
			old[n].seq = r->seq;
			old[n].pid = r->pid;
			int late = now - r->since_ms >= timeo_ms;
			/* a write is not handed on while libarf has it (it is
			 * done again only under its first sending's id, once
			 * libarf hands it back): a probe leaves a silent
			 * connection instead */
			if (late && !all && r->io.op == ARF_AIO_WRITE)
				probe_locked(fs);
			old[n++].late = r->io.op == ARF_AIO_READ && late;
		}
	pthread_mutex_unlock(&a->mu);
	for (int i = 0; i < n; i++) {
		/* /proc is read outside the lock the submitting workers take */
		int killed = all || (old[i].pid > 0 && arf_fuse_caller_killed(old[i].pid));
		if (!killed && !old[i].late)
			continue;
		pthread_mutex_lock(&a->mu);
		struct aop *r = take_locked(a, old[i].seq);
		struct aop copy;
		if (r) {
			copy = *r; /* r stays listed until libarf hands it back */
			if (killed)
				a->nkilled++;
		}
		pthread_mutex_unlock(&a->mu);
		if (!r)
			continue; /* answered meanwhile */
		/* only a read is late: rerun copies no bytes out of copy */
		if (!killed && copy.io.op == ARF_AIO_READ && !rerun(fs, &copy))
			continue;
		fuse_reply_err(copy.req, killed && !all ? EINTR : EIO);
		__atomic_sub_fetch(&fs->io_busy, 1, __ATOMIC_RELAXED);
	}
	return n;
}

static void *reaper_main(void *arg)
{
	struct arf_fuse *fs = arg;
	struct arf_fuse_aio *a = fs->aio;
	struct arf_aio *done[REAP_BATCH];
	uint64_t looked = now_ms(), end = 0;

	arf_fuse_wait_session(fs);
	for (;;) {
		pthread_mutex_lock(&a->mu);
		while (!a->pending && !a->stop)
			pthread_cond_wait(&a->cv, &a->mu);
		int stop = a->stop, pending = a->pending;
		pthread_mutex_unlock(&a->mu);
		if (stop && !end)
			end = now_ms() + DRAIN_MS;
		if (!pending)
			break;
		if (end && now_ms() >= end) {
			while (look_at_old(fs, 1) > 0) /* nobody waits for them now */
				;
			pthread_mutex_lock(&a->mu);
			a->leaked = 1;
			pthread_mutex_unlock(&a->mu);
			break;
		}
		int n = arf_reap(a->q, done, 1, REAP_BATCH, LOOK_MS);
		if (n > 0)
			answer(fs, done, n);
		if (now_ms() - looked >= LOOK_MS) {
			looked = now_ms();
			look_at_old(fs, 0);
		}
	}
	return NULL;
}

int arf_fuse_aio_start(struct arf_fuse *fs)
{
	struct arf_fuse_aio *a;

	if (fs->opts.soft) /* a soft mount's timeouts are the synchronous calls' */
		return 0;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	int rc = arf_queue_create(fs->c, AIO_DEPTH, &a->q);
	if (!rc)
		rc = arf_queue_set_flags(a->q, ARF_QUEUE_F_FAIL_FAST);
	if (rc) {
		arf_queue_destroy(a->q);
		free(a);
		return rc;
	}
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	pthread_cond_init(&a->rerun_cv, NULL);
	fs->aio = a;
	rc = pthread_create(&a->reaper, NULL, reaper_main, fs);
	if (rc) {
		fs->aio = NULL;
		arf_queue_destroy(a->q);
		free(a);
		return -rc;
	}
	return 0;
}

void arf_fuse_aio_stop(struct arf_fuse *fs)
{
	struct arf_fuse_aio *a = fs->aio;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->reaper, NULL);
	/* re-runs end once the session has (hardmount.c's should_cancel) */
	pthread_mutex_lock(&a->mu);
	while (a->reruns)
		pthread_cond_wait(&a->rerun_cv, &a->mu);
	int leaked = a->leaked;
	pthread_mutex_unlock(&a->mu);
	arf_fuse_log(leaked ? FUSE_LOG_WARNING : FUSE_LOG_INFO,
		     "arf-fuse: reads and writes answered asynchronously: %llu (done again after a broken "
		     "connection: %llu; answered EINTR or EIO while in flight: %llu; probes of a silent "
		     "connection: %llu)%s",
		     (unsigned long long)a->nasync, (unsigned long long)a->nrerun,
		     (unsigned long long)a->nkilled, (unsigned long long)a->nprobe,
		     leaked ? "; some were still in flight at the end, so the connection is "
			      "left open" : "");
	if (leaked) {
		fs->c_leaked = 1; /* libarf may still write their buffers: keep all */
		return;
	}
	arf_queue_destroy(a->q);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	pthread_cond_destroy(&a->rerun_cv);
	free(a);
	fs->aio = NULL;
}

/* Submit op on h's file; 0, or -1: not served here (the caller serves it). */
static int submit(struct arf_fuse *fs, fuse_req_t req, struct arf_fuse_file *h, int op,
		  const void *wbuf, size_t size, off_t off)
{
	struct arf_fuse_aio *a = fs->aio;
	struct arf_fuse_node *n = h->node;

	if (!a || size > AIO_MAX || size == 0 || (n->ino >> 48))
		return -1;
	struct aop *r = malloc(sizeof(*r) + size);
	if (!r)
		return -1;
	memset(r, 0, sizeof(*r));
	r->io.op = op;
	r->io.ino = n->ino;
	r->io.gen = n->gen;
	r->io.off = (uint64_t)off;
	r->io.buf = r->data;
	r->io.len = size;
	r->io.user = r;
	if (op == ARF_AIO_WRITE) /* libfuse's buffer is the worker's next request's */
		memcpy(r->data, wbuf, size);
	r->req = req;
	r->n = n;
	r->cred = h->cred;
	r->pid = fuse_req_ctx(req)->pid;
	r->since_ms = now_ms();
	arf_set_thread_cred(&h->cred); /* the requests made carry them */
	/* nothing in the queue waits on the server (it fails fast); were
	 * anything to, only the session's end would end it, never the state
	 * of the request this thread served before */
	arf_fuse_wait_session(fs);
	pthread_mutex_lock(&a->mu);
	r->seq = ++a->seq;
	r->next = a->list;
	if (a->list)
		a->list->prev = r;
	a->list = r;
	if (!a->pending++)
		pthread_cond_signal(&a->cv);
	a->nasync++;
	pthread_mutex_unlock(&a->mu);
	struct arf_aio *io = &r->io;
	if (arf_submit(a->q, &io, 1) != 1) { /* full */
		pthread_mutex_lock(&a->mu);
		unlist_locked(a, r);
		a->nasync--;
		pthread_mutex_unlock(&a->mu);
		free(r);
		return -1;
	}
	/* what finished at once (shm: the copies are done) is answered here,
	 * with no hand-off to the reaper */
	struct arf_aio *done[REAP_BATCH];
	int got = arf_reap(a->q, done, 0, REAP_BATCH, 0);
	if (got > 0)
		answer(fs, done, got);
	return 0;
}

int arf_fuse_aio_read(struct arf_fuse *fs, fuse_req_t req, struct arf_fuse_file *h, size_t size,
		      off_t off)
{
	if (arf_fuse_reader(fs, h->node) != fs->c)
		return -1;
	return submit(fs, req, h, ARF_AIO_READ, NULL, size, off);
}

int arf_fuse_aio_write(struct arf_fuse *fs, fuse_req_t req, struct arf_fuse_file *h,
		       const void *buf, size_t size, off_t off)
{
	/* at the bound of unstable bytes kept, the synchronous write commits
	 * (the queue, failing fast, does not) */
	if (arf_unstable_full(fs->c))
		return -1;
	return submit(fs, req, h, ARF_AIO_WRITE, buf, size, off);
}
