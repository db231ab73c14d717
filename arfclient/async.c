/* SPDX-License-Identifier: MIT */
/*
 * libarf's asynchronous operations (arf.h: arf_queue, arf_submit,
 * arf_reap): many reads, writes and getattrs in flight on one connection,
 * with no thread per operation.
 *
 * Each operation is a slot with a small state machine, advanced only by
 * the thread that holds the queue's drive lock (inside arf_submit and
 * arf_reap): it takes the steps its synchronous twin takes (api.c's
 * arf_read and arf_getattr, requests.c's arf_write) -- the same validation,
 * the same retries of torn or stale objects, the same fallbacks to
 * requests, counted the same way -- but where the twin would wait for a
 * round trip it posts the round (net's arf_net_post_read / arf_net_post)
 * and moves on to the next slot.  The one-sided rounds of every slot that
 * needs one in the same pass are gathered into one batched READ (a batch),
 * so sixteen 4 KiB reads submitted together cost one frame each way.  A
 * round's completion is filed by whichever thread reads the connection (a
 * reaper waiting in arf_net_wait, or a synchronous caller of the same
 * client): its callback only moves the slots to the ready list and sets
 * the queue's wake flag, and the next pass of the drive carries on.
 *
 * A batch refused as a whole (one read out of bounds makes the soft-NIC
 * refuse the frame) is not allowed to fail its neighbours: each of its
 * slots posts its round again alone, and only a refusal of its own is its
 * error.  A broken connection completes every round in flight with its
 * error; each slot then dials again (conn.c, as the synchronous calls do)
 * and starts its current step over.
 *
 * Locks: drive (one thread advances slots) is taken before anything
 * else; the connection's lock may be taken under it (posting, waiting);
 * the queue's lock is taken last, also by completion callbacks, which run
 * under the connection's lock, so nothing calls into the connection while
 * holding it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client_int.h"

#define ARF_QUEUE_MAX 4096u
/* Rounds of different slots share a frame until it carries this many
 * bytes: small reads gain a round trip each by going together, big ones
 * nothing (the bytes dominate), and are better pipelined, each its own
 * frame, so that the server sends one while the client checks another. */
#define BATCH_BYTES (256u << 10)

enum slot_state {
	S_START,       /* begin (again): the inode, or a request */
	S_INODE,       /* round: the inode */
	S_HAVE_INODE,  /* a validated inode in s->in */
	S_PLAN,        /* the next chunk of a read */
	S_EXT,         /* round: the extent pages */
	S_EXT_READY,   /* extents known */
	S_DATA,        /* round: blocks and tags */
	S_DATA_READY,  /* blocks and tags in place */
	S_REQ_SEND,    /* a request to send */
	S_REQ,         /* request in flight */
	S_DONE,
};

struct arf_queue;

struct slot {
	struct arf_queue *q;
	struct arf_aio *io;
	enum slot_state state;
	struct arf_proto_cred cred;  /* of the submitting thread, when it set its own */
	int thread_cred;             /* 0: the process's, taken when a request is made */
	/* the round or request in flight, and how it ended */
	struct arf_net_read_op iop;  /* the inode's read */
	struct arf_net_read_op *rops;/* the round's reads (to post again) */
	size_t nrops;
	int solo;                    /* post the round alone */
	int shared;                  /* the round that ended went in a batch with others */
	struct arf_net_pending np;   /* a request */
	uint64_t conn_gen;           /* the connection that took it */
	int rc;                      /* the connection's error, or 0 */
	struct arf_wlog_ent *keep;   /* a WRITE in flight: its bytes, copied for keeping */
	uint64_t id;                 /* a WRITE: its piece's request id, the same for every
				      * sending of that piece (0: none yet) */
	int32_t status;              /* the reply's status */
	struct arf_net_buf body;     /* a request's reply */
	uint64_t deadline;           /* reconnecting until */
	uint64_t since_ms;           /* submitted at (arf_now_ms) */
	/* reads and getattr */
	struct arf_meta_inode in;
	int fresh;                   /* read the inode again, not from the cache */
	uint32_t obj_tries;          /* torn copies of the inode re-read */
	uint32_t tries;              /* stale or torn data: inode re-read */
	struct arf_os_ext x;
	struct arf_os_rd rd;
	size_t done;                 /* bytes finished (READ, WRITE) */
	size_t ra_from;              /* READ: bytes handed out by readahead first */
	size_t os_bytes;             /* READ: bytes then read one-sided through in */
	int ra_tried;
	uint32_t chunk;              /* this step's bytes */
	struct slot *next;
};

/* One batched READ: the rounds of several slots in one frame. */
struct batch {
	struct arf_net_pending np;   /* first: the callback finds the batch from it */
	struct arf_queue *q;
	uint64_t conn_gen;
	struct arf_net_read_op *ops;
	size_t nops, cap_ops;
	uint64_t bytes;
	struct slot **slots;
	size_t nslots, cap_slots;
};

/* A WRITE handed back with -ENOTCONN (ARF_QUEUE_F_FAIL_FAST): what
 * arf_aio_again needs to do the rest as the first sending went: the lost
 * piece's id, place, length and credentials.  Submitting the same struct
 * again drops its entry; the oldest are overwritten (done again then
 * under new ids). */
struct lost {
	const struct arf_aio *io;    /* NULL: a free entry */
	uint64_t id;                 /* the lost piece's request id */
	size_t done;                 /* bytes answered before it */
	uint32_t chunk;              /* the lost piece's bytes */
	struct arf_proto_cred cred;  /* the submitter's */
};

struct arf_queue {
	arf_client *c;
	unsigned depth;
	unsigned flags;              /* ARF_QUEUE_F_* */
	pthread_mutex_t drive;       /* one thread advances the slots at a time */
	pthread_mutex_t lock;        /* the lists and counts below */
	struct slot *slots;          /* depth of them */
	struct slot *free;
	struct slot *ready, **ready_tail; /* a round ended, or just submitted */
	struct slot *fin, **fin_tail;     /* finished, to reap */
	unsigned pending;            /* taken and not reaped */
	unsigned inflight;           /* batches and requests on the wire */
	int wake;                    /* atomic: ready got a slot */
	struct batch *b;             /* the batch being gathered (drive) */
	struct lost *lost;           /* handed back with -ENOTCONN: for arf_aio_again */
	unsigned nlost, lost_next;   /* its size (2 * depth), the next entry to fill, */
	unsigned lost_live;          /* and the entries in use */
	int commit_rc;               /* the last COMMIT at the bound failed so (drive) ... */
	uint64_t commit_failed_ms;   /* ... then ... */
	uint64_t commit_gen;         /* ... on this connection */
};

static int use_os(arf_client *c)
{
	return c->opts.one_sided && c->have_regions;
}

/* ------------------------------------------------------------ the lists */

static void push_ready_locked(struct arf_queue *q, struct slot *s)
{
	s->next = NULL;
	*q->ready_tail = s;
	q->ready_tail = &s->next;
	__atomic_store_n(&q->wake, 1, __ATOMIC_RELEASE);
}

static void finish(struct arf_queue *q, struct slot *s, ssize_t res)
{
	if (s->io->op == ARF_AIO_READ && s->os_bytes && q->c->ra &&
	    !(q->flags & ARF_QUEUE_F_FAIL_FAST)) {
		/* a sequential reader may get the next bytes posted ahead; a
		 * queue with other reads in flight is its own readahead */
		pthread_mutex_lock(&q->lock);
		unsigned pending = q->pending;
		pthread_mutex_unlock(&q->lock);
		if (pending == 1)
			arf_ra_note(q->c, &s->in, s->io->off + s->ra_from, s->os_bytes, s->io->len);
	}
	s->io->res = res;
	s->state = S_DONE;
	if (res == -ENOTCONN && s->io->op == ARF_AIO_WRITE && s->id) {
		pthread_mutex_lock(&q->lock);
		struct lost *e = &q->lost[q->lost_next];
		q->lost_live += !e->io;
		*e = (struct lost){ s->io, s->id, s->done, s->chunk, s->cred };
		q->lost_next = (q->lost_next + 1) % q->nlost;
		pthread_mutex_unlock(&q->lock);
	}
	arf_wlog_discard(q->c, s->keep);
	s->keep = NULL;
	arf_os_ext_free(&s->x);
	arf_os_rd_free(&s->rd);
	arf_net_buf_free(&s->body);
	pthread_mutex_lock(&q->lock);
	s->next = NULL;
	*q->fin_tail = s;
	q->fin_tail = &s->next;
	pthread_mutex_unlock(&q->lock);
}

/* A read ends: what was read counts, else the error. */
static void finish_read(struct arf_queue *q, struct slot *s, int rc)
{
	finish(q, s, s->done ? (ssize_t)s->done : rc);
}

/* A connection's failure: what was done counts only when the caller will
 * not do it all again (-ENOTCONN of a queue that fails fast). */
static void fail(struct arf_queue *q, struct slot *s, int rc)
{
	if (rc == -ENOTCONN)
		finish(q, s, rc);
	else
		finish_read(q, s, rc);
}

/* ------------------------------------------------------------- rounds */

static void batch_free(struct batch *b)
{
	free(b->ops);
	free(b->slots);
	free(b);
}

/* s's round or request ended with rc: when its connection broke, s's
 * bound for dialling again starts now, and when the connection was gone,
 * when s began waiting for it (submitted, or the connection went down:
 * conn.c arf_cl_deadline); not when the drive comes to recover s.  The
 * drive recovers slots one after another, each dial waiting out a silent
 * server's handshake, so with each bound starting at its own recovery, 16
 * writes submitted while arfd was stopped failed one bound apart, the last
 * 16 s later instead of 1 (tests/integration test_async AsyncSilent). */
static void slot_ended(struct slot *s, int rc)
{
	s->rc = rc;
	if (rc && !s->deadline)
		s->deadline = arf_cl_deadline(s->q->c, s->since_ms);
}

/* Runs on the thread that read the reply (under the connection's lock). */
static void batch_done(struct arf_net_pending *p)
{
	struct batch *b = (struct batch *)p;
	struct arf_queue *q = b->q;

	pthread_mutex_lock(&q->lock);
	for (size_t i = 0; i < b->nslots; i++) {
		struct slot *s = b->slots[i];
		slot_ended(s, p->rc);
		s->status = p->status;
		s->shared = b->nslots > 1;
		s->conn_gen = b->conn_gen;
		push_ready_locked(q, s);
	}
	q->inflight--;
	pthread_mutex_unlock(&q->lock);
	batch_free(b);
}

/* Post the batch being gathered. */
static void flush(struct arf_queue *q)
{
	struct batch *b = q->b;

	if (!b)
		return;
	q->b = NULL;
	pthread_mutex_lock(&q->lock);
	q->inflight++;
	pthread_mutex_unlock(&q->lock);
	int rc = arf_cl_post_read(q->c, b->ops, b->nops, &b->np, &b->conn_gen);
	if (!rc)
		return; /* batch_done will run (it may have run already) */
	pthread_mutex_lock(&q->lock);
	q->inflight--;
	for (size_t i = 0; i < b->nslots; i++) {
		struct slot *s = b->slots[i];
		slot_ended(s, arf_cl_broken(rc) || rc == -ENOTCONN ? rc : 0);
		s->status = arf_net_status_from_err(rc);
		s->shared = b->nslots > 1;
		s->conn_gen = b->conn_gen;
		push_ready_locked(q, s);
	}
	pthread_mutex_unlock(&q->lock);
	batch_free(b);
}

static int grow(void **p, size_t *cap, size_t want, size_t size)
{
	if (want <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < want)
		n *= 2;
	void *np = realloc(*p, n * size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

/* Add s's round (ops[0..n)) to the batch being gathered, which is posted
 * first when they would not fit in its frame; a slot marked solo goes in
 * a batch of its own. */
static void post_round(struct arf_queue *q, struct slot *s, struct arf_net_read_op *ops, size_t n,
		       enum slot_state state)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < n; i++)
		bytes += ops[i].len;
	s->rops = ops;
	s->nrops = n;
	s->state = state;
	if (q->b && (s->solo || q->b->bytes + bytes > BATCH_BYTES ||
		     !arf_net_read_fits(q->b->nops + n, q->b->bytes + bytes)))
		flush(q);
	if (!q->b) {
		q->b = calloc(1, sizeof(*q->b));
		if (!q->b)
			goto nomem;
		q->b->q = q;
		q->b->np.done = batch_done;
	}
	struct batch *b = q->b;
	if (grow((void **)&b->ops, &b->cap_ops, b->nops + n, sizeof(*b->ops)) ||
	    grow((void **)&b->slots, &b->cap_slots, b->nslots + 1, sizeof(*b->slots)))
		goto nomem;
	memcpy(b->ops + b->nops, ops, n * sizeof(*ops));
	b->nops += n;
	b->bytes += bytes;
	b->slots[b->nslots++] = s;
	if (s->solo) {
		s->solo = 0;
		flush(q);
	}
	return;
nomem:
	s->rc = 0;
	s->status = arf_net_status_from_err(-ENOMEM);
	s->shared = 0;
	pthread_mutex_lock(&q->lock);
	push_ready_locked(q, s);
	pthread_mutex_unlock(&q->lock);
}

/* The connection s's round or request went on broke: dial again as the
 * synchronous calls do (0: go on), or -EIO when no new one could be had;
 * -ENOTCONN at once for a queue that fails fast (ARF_QUEUE_F_FAIL_FAST). */
static int recover(struct arf_queue *q, struct slot *s)
{
	if (q->flags & ARF_QUEUE_F_FAIL_FAST)
		return -ENOTCONN;
	/* the bound is the operation's, as a synchronous call's is: kept
	 * across reconnections, so that a server that answers a hello but no
	 * request still ends it */
	return arf_cl_recover(q->c, s->conn_gen, &s->deadline) ? -EIO : 0;
}

/* How the round s waited for ended.  0: its reads are in place; 1: it was
 * set going again (posted alone after a shared refusal, or started over
 * after a reconnection): leave the slot; else the round's error, which is
 * the slot's (finished here when it is the connection's and no new one
 * could be had). */
static int round_end(struct arf_queue *q, struct slot *s)
{
	if (s->rc) {
		int rc = recover(q, s);
		if (rc) {
			if (s->state == S_DATA)
				arf_os_rd_fail(&s->rd);
			fail(q, s, rc);
			return 1;
		}
		s->state = S_START; /* over again on the new connection */
		s->fresh = 1;
		pthread_mutex_lock(&q->lock);
		push_ready_locked(q, s);
		pthread_mutex_unlock(&q->lock);
		return 1;
	}
	int rc = arf_net_status_to_err(s->status);
	if (rc && s->shared) {
		/* the batch was refused as a whole: ask again alone */
		s->solo = 1;
		post_round(q, s, s->rops, s->nrops, s->state);
		return 1;
	}
	return rc;
}

/* ----------------------------------------------------------- requests */

/* At the bound of unstable bytes kept, a COMMIT, here in the drive.  One
 * that failed answers for every slot that was waiting while it ran on the
 * same connection: the drive comes to those one after another, and each
 * sending a COMMIT of its own waited out a silent server one bound after
 * another (16 writes at the bound: EIO 17 s after arfd stopped answering
 * instead of 2; tests/integration test_async AsyncSilent).  A slot whose
 * write went again on a new connection since commits for itself. */
static int bound_commit(struct arf_queue *q, struct slot *s)
{
	if (q->commit_rc && s->since_ms <= q->commit_failed_ms && s->conn_gen == q->commit_gen)
		return q->commit_rc;
	uint64_t gen = arf_cl_gen(q->c);
	int rc = arf_v_fsync(q->c, 0, 0);
	q->commit_rc = rc;
	if (rc) {
		q->commit_failed_ms = arf_now_ms();
		q->commit_gen = gen;
	}
	return rc;
}

static void req_done(struct arf_net_pending *p)
{
	struct slot *s = p->ctx;
	struct arf_queue *q = s->q;

	pthread_mutex_lock(&q->lock);
	slot_ended(s, p->rc);
	s->status = p->status;
	s->body = p->body;
	s->shared = 0;
	q->inflight--;
	push_ready_locked(q, s);
	pthread_mutex_unlock(&q->lock);
}

/* Build and post s's request: READ, WRITE or GETATTR for what is left. */
static void req_send(struct arf_queue *q, struct slot *s)
{
	arf_client *c = q->c;
	struct arf_aio *io = s->io;
	struct arf_proto_wr w;
	struct arf_proto_fh fh = { io->ino, io->gen };
	struct iovec iov[3];
	uint16_t op;
	int n = 2, rc;

	arf_proto_wr_init(&w);
	if (!s->thread_cred) {
		/* the process's (a per-process identity: the same on any thread),
		 * looked up only now, as arf_read does only when it asks */
		arf_req_process_cred(&s->cred);
		s->thread_cred = 1;
	}
	arf_proto_put_cred(&w, &s->cred);
	arf_proto_put_fh(&w, &fh);
	if (!(io->op == ARF_AIO_WRITE && s->id)) /* a piece sent again keeps its length */
		s->chunk = (uint32_t)(io->len - s->done > c->info.max_io ? c->info.max_io
									  : io->len - s->done);
	switch (io->op) {
	case ARF_AIO_READ:
		op = ARF_OP_READ;
		arf_proto_put_u64(&w, io->off + s->done);
		arf_proto_put_u32(&w, s->chunk);
		break;
	case ARF_AIO_WRITE:
		/* the bytes go from the caller's buffer, as arf_proto_put_bytes
		 * would lay them out (a length, then the bytes) */
		op = ARF_OP_WRITE;
		arf_proto_put_u64(&w, io->off + s->done);
		arf_proto_put_u32(&w, s->chunk);
		iov[n++] = (struct iovec){ (uint8_t *)io->buf + s->done, s->chunk };
		break;
	default:
		op = ARF_OP_GETATTR;
		break;
	}
	iov[0] = (struct iovec){ w.buf, w.len };
	iov[1] = (struct iovec){ NULL, 0 };
	if (w.err) {
		rc = w.err;
		goto fail;
	}
	int idx = arf_proto_op_index(op);
	ARF_CTR_ADD(c, requests_by_kind[arf_kind_slot(idx)], 1);
	s->np = (struct arf_net_pending){ .done = req_done, .ctx = s };
	s->state = S_REQ;
	pthread_mutex_lock(&q->lock);
	q->inflight++;
	pthread_mutex_unlock(&q->lock);
	/* a write's piece goes under one id of the client's every time it is
	 * sent (again after a reconnection here, or by arf_aio_again): a
	 * server that applied it answers from its reply cache, also when it
	 * reads the first sending late, after the writer wrote there anew */
	if (op == ARF_OP_WRITE && !s->id)
		s->id = arf_cl_new_id(c);
	rc = arf_cl_post(c, op, op == ARF_OP_WRITE ? s->id : 0, iov, n, &s->np, &s->conn_gen);
	arf_proto_wr_free(&w);
	if (!rc) {
		/* an unstable write's copy for keeping, made while the server
		 * applies it (arf_write's precopy): its reply is handled by a
		 * later pass of this drive, never before this returns */
		if (op == ARF_OP_WRITE && s->chunk >= ARF_WLOG_PRECOPY_MIN &&
		    !(c->info.flags & ARF_PROTO_INFO_SYNC) && !s->keep &&
		    (s->keep = arf_wlog_prepare(c, s->chunk)))
			memcpy(arf_wlog_prepared_data(s->keep), (uint8_t *)io->buf + s->done,
			       s->chunk);
		return;
	}
	pthread_mutex_lock(&q->lock);
	q->inflight--;
	pthread_mutex_unlock(&q->lock);
	if (arf_cl_broken(rc) || rc == -ENOTCONN) {
		/* as a request that met the broken connection */
		slot_ended(s, rc);
		pthread_mutex_lock(&q->lock);
		push_ready_locked(q, s);
		pthread_mutex_unlock(&q->lock);
		return;
	}
fail:
	arf_proto_wr_free(&w);
	finish_read(q, s, rc);
}

/* An unstable write's bytes kept (arf_cl_keep_current calls it under the
 * connection's lock). */
struct akeep {
	arf_client *c;
	struct slot *s;
	const struct arf_wlog_write *wr;
	uint32_t written;
	int full;
};

static void slot_keep(void *arg)
{
	struct akeep *k = arg;
	struct slot *s = k->s;
	struct arf_aio *io = s->io;

	k->full = s->keep ? arf_wlog_keep_prepared(k->c, s->keep, &s->cred, io->ino, io->gen,
						   k->wr->off, k->written, k->wr->verifier,
						   k->wr->seq)
			  : arf_wlog_keep(k->c, &s->cred, io->ino, io->gen, k->wr->off,
					  (const uint8_t *)io->buf + s->done, k->written,
					  k->wr->verifier, k->wr->seq);
	s->keep = NULL;
}

/* A request's reply. */
static void req_end(struct arf_queue *q, struct slot *s)
{
	arf_client *c = q->c;
	struct arf_aio *io = s->io;
	struct arf_proto_rd r;
	struct arf_proto_attr a;

	if (s->rc) {
		arf_net_buf_free(&s->body);
		arf_wlog_discard(c, s->keep); /* copied again when sent again */
		s->keep = NULL;
		int rc = recover(q, s);
		if (rc) {
			fail(q, s, rc);
			return;
		}
		s->state = S_REQ_SEND; /* sent again, as arf_cl_call does */
		return;
	}
	int rc = arf_net_status_to_err(s->status);
	arf_proto_rd_init(&r, s->body.data, s->body.len);
	switch (io->op) {
	case ARF_AIO_READ: {
		if (rc) {
			finish_read(q, s, rc);
			return;
		}
		size_t got = s->body.len > s->chunk ? s->chunk : s->body.len;
		memcpy((uint8_t *)io->buf + s->done, s->body.data, got);
		arf_net_buf_free(&s->body);
		s->done += got;
		if (got < s->chunk || s->done >= io->len)
			finish(q, s, (ssize_t)s->done);
		else
			s->state = S_REQ_SEND;
		return;
	}
	case ARF_AIO_WRITE: {
		if (rc) {
			arf_icache_drop(c, io->ino);
			finish_read(q, s, rc);
			return;
		}
		uint32_t written = 0;
		struct arf_wlog_write wr;
		if (arf_wlog_write_reply(&s->body, &written, &a, &wr) || written > s->chunk) {
			arf_icache_drop(c, io->ino);
			arf_net_buf_free(&s->body);
			finish_read(q, s, ARF_EPROTO);
			return;
		}
		arf_stat_from_proto(&a, &io->st);
		arf_icache_update_stat(c, &io->st);
		/* an unstable write: kept until a COMMIT covers it, and re-sent
		 * after a restart, as arf_write's (wlog.c); at the bound, the
		 * COMMIT now */
		int full = 0;
		if (written && !(wr.flags & ARF_PROTO_WRITE_STABLE)) {
			struct akeep k = { c, s, &wr, written, 0 };
			/* the reply was filed under the connection's lock, but it
			 * is kept here, later: kept only if its server is still
			 * the connection's, else sent again (arf_cl_keep_current) */
			if (!arf_cl_keep_current(c, wr.verifier, slot_keep, &k)) {
				arf_wlog_discard(c, s->keep); /* copied again when sent again */
				s->keep = NULL;
				arf_net_buf_free(&s->body);
				s->id = 0; /* a new server's: not the reply cache's answer again */
				s->state = S_REQ_SEND;
				return;
			}
			full = k.full;
		} else {
			arf_wlog_discard(c, s->keep);
			s->keep = NULL;
		}
		if (full && (q->flags & ARF_QUEUE_F_FAIL_FAST)) {
			/* no COMMIT waits in here: at the bound the caller
			 * commits (arf_unstable_full); a copy that could not be
			 * kept is the caller's to write again, synchronously */
			if (full < 0) {
				arf_net_buf_free(&s->body);
				finish(q, s, -ENOTCONN);
				return;
			}
			full = 0;
		}
		if (!full)
			arf_behind_check(c);
		if (full && (rc = bound_commit(q, s))) {
			arf_net_buf_free(&s->body);
			finish_read(q, s, rc);
			return;
		}
		arf_net_buf_free(&s->body);
		s->done += written;
		s->id = 0;
		if (written < s->chunk || s->done >= io->len)
			finish(q, s, (ssize_t)s->done);
		else
			s->state = S_REQ_SEND;
		return;
	}
	default:
		if (!rc) {
			arf_proto_get_attr(&r, &a);
			if (r.err) {
				rc = ARF_EPROTO;
			} else {
				arf_stat_from_proto(&a, &io->st);
				arf_icache_update_stat(c, &io->st);
			}
		}
		finish(q, s, rc);
		return;
	}
}

/* -------------------------------------------------------- the machine */

/* Torn or stale data (n from arf_os_ext_end, arf_os_rd_begin/_end):
 * re-read the inode, whose map may have changed, a bounded number of
 * times, then ask the server -- arf_read's policy. */
static void stale(struct arf_queue *q, struct slot *s, int n)
{
	arf_client *c = q->c;

	if (n != ARF_ECSUM && n != ARF_ETORN && n != ARF_ETAG && n != ARF_ERETRY) {
		finish_read(q, s, n);
		return;
	}
	if (++s->tries <= c->opts.retries) {
		ARF_CTR_ADD(c, retries, 1);
		s->fresh = 1;
		s->state = S_START;
		return;
	}
	arf_fallback(c, n == ARF_ETAG ? ARF_FALLBACK_TAG : ARF_FALLBACK_TORN);
	s->state = S_REQ_SEND;
}

/* Readahead's data arrived for a slot waiting for it (readahead.c). */
static void ra_wake(void *arg)
{
	struct slot *s = arg;
	struct arf_queue *q = s->q;

	pthread_mutex_lock(&q->lock);
	q->inflight--;
	push_ready_locked(q, s);
	pthread_mutex_unlock(&q->lock);
}

/* Advance s until it posts something or finishes. */
static void step(struct arf_queue *q, struct slot *s)
{
	arf_client *c = q->c;
	struct arf_aio *io = s->io;
	int rc;
	ssize_t n;

	for (;;) {
		switch (s->state) {
		case S_START:
			if (io->op == ARF_AIO_WRITE || !use_os(c)) {
				s->state = S_REQ_SEND;
				break;
			}
			if (!s->fresh && arf_icache_get(c, io->ino, io->gen, &s->in) == 0) {
				s->state = S_HAVE_INODE;
				break;
			}
			if (io->ino == 0 || io->ino > c->sb.n_inodes) {
				finish_read(q, s, -ESTALE);
				return;
			}
			s->iop = (struct arf_net_read_op){ .region = ARF_REGION_META,
							   .len = sizeof(s->in),
							   .off = arf_meta_inode_off(&c->sb, io->ino),
							   .dst = &s->in };
			post_round(q, s, &s->iop, 1, S_INODE);
			return;
		case S_INODE:
			if ((rc = round_end(q, s)) == 1)
				return;
			if (rc) {
				finish_read(q, s, rc);
				return;
			}
			if (arf_meta_obj_validate(&s->in, sizeof(s->in))) {
				if (s->obj_tries++ < c->opts.retries) {
					ARF_CTR_ADD(c, retries, 1);
					post_round(q, s, &s->iop, 1, S_INODE);
					return;
				}
				/* the inode keeps changing: the server answers */
				arf_fallback(c, ARF_FALLBACK_TORN);
				s->state = S_REQ_SEND;
				break;
			}
			s->obj_tries = 0;
			s->fresh = 0;
			if (s->in.ino != io->ino || s->in.gen != io->gen) {
				finish_read(q, s, -ESTALE);
				return;
			}
			arf_icache_put(c, &s->in);
			s->state = S_HAVE_INODE;
			break;
		case S_HAVE_INODE:
			if (io->op == ARF_AIO_GETATTR) {
				arf_stat_from_inode(&s->in, &io->st);
				finish(q, s, 0);
				return;
			}
			if (S_ISDIR(s->in.mode)) {
				finish_read(q, s, -EISDIR);
				return;
			}
			if (!s->ra_tried && c->ra && !(q->flags & ARF_QUEUE_F_FAIL_FAST)) {
				/* a sequential reader's bytes may be read ahead already */
				pthread_mutex_lock(&q->lock);
				q->inflight++; /* counted while a wake may come */
				pthread_mutex_unlock(&q->lock);
				n = arf_ra_take(c, &s->in, io->off + s->done, (uint8_t *)io->buf + s->done,
						io->len - s->done, ra_wake, s);
				if (n == ARF_RA_WAIT)
					return; /* ra_wake brings it back here */
				pthread_mutex_lock(&q->lock);
				q->inflight--;
				pthread_mutex_unlock(&q->lock);
				s->ra_tried = 1;
				if (n > 0) {
					s->done += (size_t)n;
					s->ra_from = s->done;
				}
			}
			s->state = S_PLAN;
			break;
		case S_PLAN:
			if (s->done >= io->len) {
				finish(q, s, (ssize_t)s->done);
				return;
			}
			s->chunk = (uint32_t)(io->len - s->done > c->info.max_io ? c->info.max_io
										  : io->len - s->done);
			arf_os_ext_free(&s->x);
			arf_os_rd_free(&s->rd);
			if ((rc = arf_os_ext_begin(c, &s->in, io->off + s->done, s->chunk, &s->x))) {
				finish_read(q, s, rc);
				return;
			}
			if (s->x.np) {
				post_round(q, s, s->x.ops, (size_t)s->x.np, S_EXT);
				return;
			}
			s->state = S_EXT_READY;
			break;
		case S_EXT:
			if ((rc = round_end(q, s)) == 1)
				return;
			if (rc) {
				finish_read(q, s, rc);
				return;
			}
			if ((rc = arf_os_ext_end(&s->in, &s->x))) {
				stale(q, s, rc);
				if (s->state == S_DONE)
					return;
				break;
			}
			s->state = S_EXT_READY;
			break;
		case S_EXT_READY:
			rc = arf_os_rd_begin(c, &s->in, &s->x, io->off + s->done,
					     (uint8_t *)io->buf + s->done, s->chunk, &s->rd);
			if (rc) {
				stale(q, s, rc);
				if (s->state == S_DONE)
					return;
				break;
			}
			if (!s->rd.len) { /* at or past the end of the file */
				finish(q, s, (ssize_t)s->done);
				return;
			}
			if (s->rd.nops) {
				post_round(q, s, s->rd.ops, s->rd.nops, S_DATA);
				return;
			}
			s->state = S_DATA_READY; /* all holes */
			break;
		case S_DATA:
			if ((rc = round_end(q, s)) == 1)
				return;
			if (rc) {
				arf_os_rd_fail(&s->rd);
				finish_read(q, s, rc);
				return;
			}
			s->state = S_DATA_READY;
			break;
		case S_DATA_READY:
			n = arf_os_rd_end(&s->rd);
			if (n < 0) {
				stale(q, s, (int)n);
				if (s->state == S_DONE)
					return;
				break;
			}
			s->done += (size_t)n;
			s->os_bytes += (size_t)n;
			if ((size_t)n < s->chunk) {
				finish(q, s, (ssize_t)s->done);
				return;
			}
			s->state = S_PLAN;
			break;
		case S_REQ_SEND:
			req_send(q, s);
			return;
		case S_REQ:
			req_end(q, s);
			if (s->state == S_DONE)
				return;
			break;
		case S_DONE:
			return;
		}
	}
}

/* Advance every ready slot, post what they gathered, and again while
 * rounds finish at once (shm).  Caller holds q->drive. */
static void drive(struct arf_queue *q)
{
	for (;;) {
		pthread_mutex_lock(&q->lock);
		struct slot *s = q->ready;
		q->ready = NULL;
		q->ready_tail = &q->ready;
		pthread_mutex_unlock(&q->lock);
		if (!s)
			return;
		while (s) {
			struct slot *next = s->next;
			step(q, s);
			s = next;
		}
		flush(q);
	}
}

/* ---------------------------------------------------------------- API */

/* Take io's entry of q->lost into *out (NULL: drop it); at most one,
 * since submitting io drops any before. */
static void lost_take(struct arf_queue *q, const struct arf_aio *io, struct lost *out)
{
	pthread_mutex_lock(&q->lock);
	for (unsigned k = 0; q->lost_live && k < q->nlost; k++) {
		struct lost *e = &q->lost[k];
		if (e->io == io) {
			if (out)
				*out = *e;
			e->io = NULL;
			q->lost_live--;
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
}

int arf_queue_create(arf_client *c, unsigned depth, arf_queue **out)
{
	struct arf_queue *q;

	*out = NULL;
	if (!c || depth == 0 || depth > ARF_QUEUE_MAX)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->slots = calloc(depth, sizeof(*q->slots));
	q->nlost = 2 * depth;
	q->lost = calloc(q->nlost, sizeof(*q->lost));
	if (!q->slots || !q->lost) {
		free(q->slots);
		free(q->lost);
		free(q);
		return -ENOMEM;
	}
	q->c = c;
	q->depth = depth;
	pthread_mutex_init(&q->drive, NULL);
	pthread_mutex_init(&q->lock, NULL);
	q->ready_tail = &q->ready;
	q->fin_tail = &q->fin;
	for (unsigned i = depth; i-- > 0;) {
		q->slots[i].q = q;
		q->slots[i].next = q->free;
		q->free = &q->slots[i];
	}
	*out = q;
	return 0;
}

int arf_queue_set_flags(arf_queue *q, unsigned flags)
{
	if (!q || (flags & ~ARF_QUEUE_F_FAIL_FAST))
		return -EINVAL;
	pthread_mutex_lock(&q->drive);
	q->flags = flags;
	pthread_mutex_unlock(&q->drive);
	return 0;
}

unsigned arf_queue_pending(arf_queue *q)
{
	pthread_mutex_lock(&q->lock);
	unsigned n = q->pending;
	pthread_mutex_unlock(&q->lock);
	return n;
}

int arf_submit(arf_queue *q, struct arf_aio *const *ios, unsigned n)
{
	unsigned taken = 0;

	if (!q || (n && !ios))
		return -EINVAL;
	pthread_mutex_lock(&q->drive);
	for (; taken < n; taken++) {
		pthread_mutex_lock(&q->lock);
		struct slot *s = q->free;
		if (s) {
			q->free = s->next;
			q->pending++;
		}
		pthread_mutex_unlock(&q->lock);
		if (!s)
			break;
		struct arf_aio *io = ios[taken];
		if (io)
			lost_take(q, io, NULL); /* used anew: not done again */
		memset(s, 0, sizeof(*s));
		s->q = q;
		s->io = io;
		s->since_ms = arf_now_ms();
		s->state = S_START;
		s->thread_cred = arf_req_thread_cred(&s->cred);
		if (!io || (io->op != ARF_AIO_READ && io->op != ARF_AIO_WRITE &&
			    io->op != ARF_AIO_GETATTR) ||
		    (io->op != ARF_AIO_GETATTR && io->len && !io->buf)) {
			if (!io) {
				/* nothing to answer through: give the slot back */
				pthread_mutex_lock(&q->lock);
				s->next = q->free;
				q->free = s;
				q->pending--;
				pthread_mutex_unlock(&q->lock);
				break;
			}
			finish(q, s, -EINVAL);
			continue;
		}
		if (io->ino >> ARF_VOL_SHIFT) {
			/* a volume crossed into through a mount point: not served here */
			finish(q, s, -EXDEV);
			continue;
		}
		if (io->op == ARF_AIO_READ && io->len == 0) {
			finish(q, s, 0);
			continue;
		}
		step(q, s);
	}
	flush(q);
	drive(q); /* rounds that ended at once (shm) */
	pthread_mutex_unlock(&q->drive);
	if (!taken && n)
		return -EAGAIN;
	return (int)taken;
}

int arf_reap(arf_queue *q, struct arf_aio **done, unsigned min, unsigned max, int timeout_ms)
{
	unsigned got = 0;
	uint64_t deadline = timeout_ms > 0 ? arf_now_ms() + (uint64_t)timeout_ms : 0;

	if (!q || (max && !done))
		return -EINVAL;
	if (min > max)
		min = max;
	for (;;) {
		/* file the replies already there, so that rounds that end at once
		 * (shm) cannot starve the requests in flight beside them */
		pthread_mutex_lock(&q->lock);
		unsigned inflight = q->inflight;
		pthread_mutex_unlock(&q->lock);
		if (inflight)
			arf_cl_wait(q->c, &q->wake, 0);
		pthread_mutex_lock(&q->drive);
		drive(q);
		pthread_mutex_unlock(&q->drive);

		pthread_mutex_lock(&q->lock);
		while (got < max && q->fin) {
			struct slot *s = q->fin;
			q->fin = s->next;
			if (!q->fin)
				q->fin_tail = &q->fin;
			done[got++] = s->io;
			s->io = NULL;
			s->next = q->free;
			q->free = s;
			q->pending--;
		}
		int idle = !q->ready && !q->inflight;
		if (got >= min || timeout_ms == 0 || (idle && !q->fin)) {
			pthread_mutex_unlock(&q->lock);
			return (int)got;
		}
		if (q->ready || q->fin) {
			pthread_mutex_unlock(&q->lock);
			continue;
		}
		__atomic_store_n(&q->wake, 0, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&q->lock);

		int wait_ms = -1;
		if (timeout_ms > 0) {
			uint64_t now = arf_now_ms();
			if (now >= deadline)
				return (int)got;
			wait_ms = (int)(deadline - now);
		}
		/* read the connection (or sleep while another thread does) until
		 * a round of ours ends; a broken connection ends them all */
		arf_cl_wait(q->c, &q->wake, wait_ms);
	}
}

void arf_queue_destroy(arf_queue *q)
{
	struct arf_aio *done[64];

	if (!q)
		return;
	while (arf_queue_pending(q)) {
		int n = arf_reap(q, done, 1, 64, -1);
		if (n <= 0)
			break;
	}
	pthread_mutex_destroy(&q->drive);
	pthread_mutex_destroy(&q->lock);
	free(q->slots);
	free(q->lost);
	free(q);
}

ssize_t arf_aio_again(arf_queue *q, struct arf_aio *io)
{
	struct lost l = { 0 };
	ssize_t res;

	if (!q || !io)
		return -EINVAL;
	if (io->ino >> ARF_VOL_SHIFT)
		return io->res = -EXDEV; /* as arf_submit answers it */
	lost_take(q, io, &l);
	switch (io->op) {
	case ARF_AIO_READ:
		res = io->len && !io->buf ? -EINVAL : arf_v_read(q->c, io->ino, io->gen, io->off,
								   io->buf, io->len);
		break;
	case ARF_AIO_WRITE: {
		if (io->len && !io->buf) {
			res = -EINVAL;
			break;
		}
		size_t done = l.io && l.done <= io->len ? l.done : 0;
		res = arf_v_write_again(q->c, io->ino, io->gen, io->off + done,
					(const uint8_t *)io->buf + done, io->len - done, l.id,
					l.chunk, l.io ? &l.cred : NULL);
		if (done && res >= 0)
			res += (ssize_t)done;
		else if (done)
			res = (ssize_t)done; /* what was answered before counts */
		arf_behind_check(q->c);
		break;
	}
	case ARF_AIO_GETATTR:
		res = arf_v_getattr(q->c, io->ino, io->gen, &io->st);
		break;
	default:
		res = -EINVAL;
	}
	io->res = res;
	return res;
}
