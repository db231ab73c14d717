/* SPDX-License-Identifier: MIT */
/*
 * arfd/locks — advisory locks held by the server for every client of the
 * export, so that fcntl and flock locks exclude across mounts (NFS has NLM
 * and NFSv4's locks for this; the semantics follow NFSv4's).
 *
 * Owners.  A lock belongs to (client, owner): the client id is random per
 * libarf client instance (one mount), the owner is the client's own name
 * for the holder (FUSE's lock owner: the process's file table for fcntl
 * locks, the open file for flock).  A client id is bound to the principal
 * that first used it (trust and address or uid, identity.c): another
 * principal naming it gets EPERM.
 *
 * Semantics, as Linux's for local files:
 *  - fcntl (ARF_LOCK_POSIX) byte ranges: an owner's locks never conflict
 *    with each other; a new lock replaces what the owner held in its range
 *    (an upgrade or downgrade is atomic), adjacent ranges of one type
 *    merge, an unlock may split a range.  A waiting request that would
 *    close a cycle of owners waiting for each other fails with EDEADLK.
 *  - flock (ARF_LOCK_FLOCK): one lock per owner on the whole file; a
 *    conversion drops the old lock before waiting for the new one, as
 *    Linux's flock does.
 *  - fcntl and flock locks do not conflict with each other: each kind is
 *    its own space, as on a local Linux filesystem (NFS emulates flock with
 *    fcntl locks, so there they do conflict; ARF keeps local semantics).
 *
 * Waiting.  A LOCK that must wait is kept here, not on a worker: the
 * request stays unanswered (the procedure returns ARFD_PROC_LATER) and is
 * answered when the lock is granted, when the client cancels it
 * (LOCK_CANCEL, answered EINTR), or after the client's wait_ms with
 * ARF_LOCK_R_WAIT, upon which the client asks again -- so no reply is late
 * enough to trip the client's reply timeout, and a connection never has
 * more than half its max_conn_requests waiting here (past that a waiting
 * request is answered R_WAIT at once and the client polls).  A connection
 * that closes takes its waiting requests with it.
 *
 * Leases.  Every lock request of a client renews its lease, and libarf
 * renews it every third of lease_s while it holds locks (LOCK_RENEW).  A
 * client silent for lease_s loses every lock and waiting request, and its
 * next request finds a new lease id: libarf then knows its locks are gone,
 * and arf-fuse answers EIO to I/O on those files until they are closed, as
 * the Linux NFS client does when a lock is lost.
 *
 * Restart (NFSv4's reclaim).  The ids of clients that hold locks are kept
 * in the store ('L' + id -> principal; written, synced, when a client
 * first takes a lock, deleted when its lease ends).  After a restart the
 * lock table is empty; for grace_s the server is in its grace period: a
 * listed client reclaims what it held (ARF_LOCK_F_RECLAIM, granted unless
 * it conflicts) and then says so (LOCK_RENEW with RECLAIMED), while every
 * other lock request waits for the period to end.  The period ends early
 * when every listed client has reclaimed; with no listed client there is
 * none.  A reclaim after the period fails with ENOLCK.
 *
 * Moves (vol move, move_out.c).  The table goes with the volume: in the
 * freeze the sender writes every client with a lease (its id, lease,
 * principal and what is left of its lease; one that locked and let go
 * still has its store record) and their locks into the last snapshot
 * (arfd_locks_save, ARFD_LOCKS_CARRIED, with the sender's incarnation),
 * and the receiver's start takes them in (carried_in) before anything is
 * served -- only at the next incarnation, its first opening -- then
 * deletes the file.  A carried client is not waited for: no grace period
 * for it, so other clients' locks are decided at once against what it
 * holds; its libarf, meeting a new server incarnation, reclaims as after a
 * restart, and those reclaims are answered from the carried table at any
 * time until it says it has reclaimed.  Waiting requests are not carried:
 * their connections close with the move, and their clients ask again.
 * (The ticker does not stop for the freeze: a lease that ends in it may
 * grant a waiter the saved table does not show, whose reclaim there then
 * fails, as it would after a restart.)
 *
 * Why one file of about 1,250 lines: the range table, the waiters, leases,
 * the grace period and the table carried by a move share one lock-state
 * counter and one set of
 * invariants (a waiter is woken exactly when the ranges it conflicts with
 * change, a lease's end releases its ranges and wakes their waiters); split
 * apart, each piece would need the others' internals.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "arf_ops.h"
#include "arf_proto.h"
#include "arfd.h"
#include "locks.h"
#include "log.h"

#define NFILEB 4096u       /* file hash buckets */
#define NCLIB 256u         /* client hash buckets */
#define TICK_MS 100        /* how often leases, waits and the grace period are looked at */
#define TOMBSTONES 16      /* cancelled wait ids remembered per client */
#define DEADLOCK_STEPS 32  /* owners followed looking for a wait cycle */
#define DEFAULT_WAIT_MS 10000u

struct lk_client {
	struct lk_client *next;    /* hash chain */
	uint64_t id;
	uint64_t lease;            /* random, never 0; 0 = none yet (listed, not reclaimed) */
	uint64_t expires_ms;       /* monotonic: its locks go after this */
	char principal[80];        /* who may name this id */
	uint32_t nlocks, nwaiters;
	int persisted;             /* its 'L' record is in the store */
	int listed;                /* held locks before the restart: may reclaim in grace */
	int reclaimed;             /* said so (LOCK_RENEW with RECLAIMED) */
	int carried;               /* came with the volume (vol move): reclaims at any time */
	uint64_t cancelled[TOMBSTONES]; /* wait ids cancelled before they arrived */
	unsigned ncancelled;
};

struct lk_lock {
	struct lk_lock *next;      /* in its file's list */
	struct lk_client *cl;
	uint64_t owner;
	uint32_t pid, kind, type;
	uint64_t start, end;       /* inclusive */
};

struct lk_file;

struct lk_wait {
	struct lk_wait *next;      /* in its file's queue, in arrival order */
	struct lk_wait *gnext;     /* in the list of all waiting requests */
	struct lk_file *f;
	struct lk_client *cl;
	struct arf_proto_lock_req rq;
	struct arf_net_sconn *c;   /* referenced: where the answer goes */
	uint64_t req_id;
	uint16_t op;
	uint64_t deadline_ms;      /* answered R_WAIT then */
};

struct lk_file {
	struct lk_file *next;      /* hash chain */
	uint64_t ino;
	uint32_t gen;
	struct lk_lock *locks;
	struct lk_wait *waiters;
};

/* A reply to send once the mutex is released. */
struct lk_out {
	struct lk_out *next;
	struct arf_net_sconn *c;   /* referenced */
	uint64_t id;
	uint16_t op;
	int rc;
	struct arf_proto_wr w;
};

struct arfd_locks {
	struct arfd *d;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t ticker;
	int started, stop;
	uint64_t lease_ms;
	uint64_t grace_until;      /* monotonic ms; 0 = no grace period */
	unsigned nlisted;          /* listed clients that have not reclaimed */
	uint64_t seq;              /* incarnation << 40 | lock-state changes */
	struct lk_client *cli[NCLIB];
	struct lk_file *file[NFILEB];
	struct lk_wait *waiters;   /* every waiting request (gnext) */
	uint64_t nlocks, nwaiting, nclients;
	struct lk_out *out;        /* replies to send after unlocking */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t random_id(void)
{
	uint64_t v = 0;
	while (!v)
		if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
			v = now_ms() * 0x9e3779b97f4a7c15ull + 1;
	return v;
}

static void record_key(char k[9], uint64_t id)
{
	k[0] = 'L';
	for (int i = 0; i < 8; i++)
		k[1 + i] = (char)(id >> (56 - 8 * i));
}

/* ---- clients ---- */

static struct lk_client *client_find(struct arfd_locks *lm, uint64_t id)
{
	struct lk_client *cl = lm->cli[(id * 0x9e3779b97f4a7c15ull) >> 56];
	while (cl && cl->id != id)
		cl = cl->next;
	return cl;
}

static struct lk_client *client_new(struct arfd_locks *lm, uint64_t id, const char *principal)
{
	struct lk_client *cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	cl->id = id;
	snprintf(cl->principal, sizeof(cl->principal), "%s", principal);
	size_t b = (size_t)((id * 0x9e3779b97f4a7c15ull) >> 56);
	cl->next = lm->cli[b];
	lm->cli[b] = cl;
	lm->nclients++;
	return cl;
}

static void client_free(struct arfd_locks *lm, struct lk_client *cl)
{
	struct lk_client **pp = &lm->cli[(cl->id * 0x9e3779b97f4a7c15ull) >> 56];
	while (*pp != cl)
		pp = &(*pp)->next;
	*pp = cl->next;
	lm->nclients--;
	free(cl);
}

/* The client's 'L' record: written (synced) when it first holds a lock,
 * so that a restart knows to wait for it; removed when its lease ends. */
static void client_persist(struct arfd_locks *lm, struct lk_client *cl, int on)
{
	char k[9], err[256];

	if (cl->persisted == on)
		return;
	record_key(k, cl->id);
	if (arfd_store_put(lm->d->store, k, sizeof(k), on ? cl->principal : NULL,
			   on ? strlen(cl->principal) : 0, on, err, sizeof(err)))
		arfd_log_limited(ARFD_LOG_WARN, "lock client record: %s (after a restart its locks "
				 "may not be waited for)", err);
	else
		cl->persisted = on;
}

static void principal_of(const struct arfd_conn *ac, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", ac ? arfd_identity_trust_name(ac->trust) : "none",
		 ac ? ac->from : "");
}

/* ---- files and locks ---- */

static size_t file_bucket(uint64_t ino, uint32_t gen)
{
	return (size_t)(((ino ^ (uint64_t)gen << 32) * 0x9e3779b97f4a7c15ull) >> 40) & (NFILEB - 1);
}

static struct lk_file *file_get(struct arfd_locks *lm, uint64_t ino, uint32_t gen, int create)
{
	size_t b = file_bucket(ino, gen);
	struct lk_file *f = lm->file[b];

	while (f && (f->ino != ino || f->gen != gen))
		f = f->next;
	if (!f && create && (f = calloc(1, sizeof(*f)))) {
		f->ino = ino;
		f->gen = gen;
		f->next = lm->file[b];
		lm->file[b] = f;
	}
	return f;
}

static void file_put(struct arfd_locks *lm, struct lk_file *f)
{
	if (!f || f->locks || f->waiters)
		return;
	struct lk_file **pp = &lm->file[file_bucket(f->ino, f->gen)];
	while (*pp != f)
		pp = &(*pp)->next;
	*pp = f->next;
	free(f);
}

static int overlap(uint64_t s1, uint64_t e1, uint64_t s2, uint64_t e2)
{
	return s1 <= e2 && s2 <= e1;
}

static const struct lk_lock *first_conflict(const struct lk_file *f, const struct lk_client *cl,
					    const struct arf_proto_lock_req *rq)
{
	for (const struct lk_lock *l = f->locks; l; l = l->next)
		if (l->kind == rq->kind && !(l->cl == cl && l->owner == rq->owner) &&
		    overlap(l->start, l->end, rq->start, rq->end) &&
		    (rq->type == ARF_LOCK_WR || l->type == ARF_LOCK_WR))
			return l;
	return NULL;
}

static void lock_unlink(struct arfd_locks *lm, struct lk_lock **pp)
{
	struct lk_lock *l = *pp;
	*pp = l->next;
	l->cl->nlocks--;
	lm->nlocks--;
	free(l);
}

struct range {
	uint64_t start, end;
	uint32_t type;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The owner's fcntl locks on f become: what it held outside [start, end],
 * plus [start, end] of type (0: nothing there -- an unlock), adjacent
 * ranges of one type merged.  Everything is allocated before anything
 * changes: -ENOMEM, or -ENOLCK past ARF_LOCK_MAX_RANGES, change nothing.
 */
static int posix_set(struct arfd_locks *lm, struct lk_file *f, struct lk_client *cl,
		     uint64_t owner, uint32_t pid, uint32_t type, uint64_t start, uint64_t end)
{
	size_t n = 0, m = 0;
	for (struct lk_lock *l = f->locks; l; l = l->next)
		n += l->kind == ARF_LOCK_POSIX && l->cl == cl && l->owner == owner;
	struct range *r = malloc((n + 2) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (struct lk_lock *l = f->locks; l; l = l->next) {
		if (l->kind != ARF_LOCK_POSIX || l->cl != cl || l->owner != owner)
			continue;
		if (!overlap(l->start, l->end, start, end)) {
			r[m++] = (struct range){ l->start, l->end, l->type };
			continue;
		}
		if (l->start < start)
			r[m++] = (struct range){ l->start, start - 1, l->type };
		if (l->end > end)
			r[m++] = (struct range){ end + 1, l->end, l->type };
	}
	if (type)
		r[m++] = (struct range){ start, end, type };
	qsort(r, m, sizeof(*r), range_cmp);
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		if (k && r[k - 1].type == r[i].type && r[k - 1].end != ARF_LOCK_EOF &&
		    r[k - 1].end + 1 == r[i].start)
			r[k - 1].end = r[i].end;
		else
			r[k++] = r[i];
	}
	if (k > ARF_LOCK_MAX_RANGES) {
		free(r);
		return -ENOLCK;
	}
	struct lk_lock *fresh = NULL;
	for (size_t i = 0; i < k; i++) {
		struct lk_lock *l = malloc(sizeof(*l));
		if (!l) {
			while (fresh) {
				struct lk_lock *nx = fresh->next;
				free(fresh);
				fresh = nx;
			}
			free(r);
			return -ENOMEM;
		}
		*l = (struct lk_lock){ fresh, cl, owner, pid, ARF_LOCK_POSIX, r[i].type, r[i].start,
				       r[i].end };
		fresh = l;
	}
	free(r);
	for (struct lk_lock **pp = &f->locks; *pp;) {
		if ((*pp)->kind == ARF_LOCK_POSIX && (*pp)->cl == cl && (*pp)->owner == owner)
			lock_unlink(lm, pp);
		else
			pp = &(*pp)->next;
	}
	while (fresh) {
		struct lk_lock *nx = fresh->next;
		fresh->next = f->locks;
		f->locks = fresh;
		cl->nlocks++;
		lm->nlocks++;
		fresh = nx;
	}
	lm->seq++;
	return 0;
}

/* The owner's flock lock on f, or NULL; *pp its link. */
static struct lk_lock **flock_find(struct lk_file *f, struct lk_client *cl, uint64_t owner)
{
	for (struct lk_lock **pp = &f->locks; *pp; pp = &(*pp)->next)
		if ((*pp)->kind == ARF_LOCK_FLOCK && (*pp)->cl == cl && (*pp)->owner == owner)
			return pp;
	return NULL;
}

/* Take the lock rq asks for if nothing conflicts: 0, -EAGAIN with
 * *conflict, -ENOMEM or -ENOLCK. */
static int try_lock(struct arfd_locks *lm, struct lk_file *f, struct lk_client *cl,
		    const struct arf_proto_lock_req *rq, const struct lk_lock **conflict)
{
	if (rq->kind == ARF_LOCK_FLOCK) {
		struct lk_lock **pp = flock_find(f, cl, rq->owner);
		if (pp && (*pp)->type == rq->type)
			return 0;
		if (pp) { /* a conversion lets go first, as flock(2) does */
			lock_unlink(lm, pp);
			lm->seq++;
		}
		if ((*conflict = first_conflict(f, cl, rq)))
			return -EAGAIN;
		struct lk_lock *l = malloc(sizeof(*l));
		if (!l)
			return -ENOMEM;
		*l = (struct lk_lock){ f->locks, cl, rq->owner, rq->pid, ARF_LOCK_FLOCK, rq->type, 0,
				       ARF_LOCK_EOF };
		f->locks = l;
		cl->nlocks++;
		lm->nlocks++;
		lm->seq++;
		return 0;
	}
	if ((*conflict = first_conflict(f, cl, rq)))
		return -EAGAIN;
	return posix_set(lm, f, cl, rq->owner, rq->pid, rq->type, rq->start, rq->end);
}

/* Would rq's owner, waiting behind blocker, wait for itself? */
static int deadlock(struct arfd_locks *lm, const struct lk_client *cl, uint64_t owner,
		    const struct lk_lock *blocker)
{
	const struct lk_client *bc = blocker->cl;
	uint64_t bo = blocker->owner;

	for (int i = 0; i < DEADLOCK_STEPS; i++) {
		if (bc == cl && bo == owner)
			return 1;
		const struct lk_wait *w = lm->waiters;
		while (w && !(w->cl == bc && w->rq.owner == bo && w->rq.kind == ARF_LOCK_POSIX))
			w = w->gnext;
		if (!w)
			return 0;
		const struct lk_lock *l = first_conflict(w->f, w->cl, &w->rq);
		if (!l)
			return 0;
		bc = l->cl;
		bo = l->owner;
	}
	return 0;
}

/* ---- replies ---- */

static void put_hdr(struct arfd_locks *lm, struct arf_proto_wr *w, uint32_t result,
		    const struct lk_client *cl)
{
	struct arf_proto_lock_hdr h = { result, cl ? cl->lease : 0, (uint32_t)lm->lease_ms, lm->seq };
	arf_proto_put_lock_hdr(w, &h);
}

/* The owner's locks of kind on f: u32 n, n x (u32 type, u64 start, u64 end). */
static void put_ranges(struct arf_proto_wr *w, const struct lk_file *f, const struct lk_client *cl,
		       uint64_t owner, uint32_t kind)
{
	uint32_t n = 0;
	for (const struct lk_lock *l = f ? f->locks : NULL; l; l = l->next)
		n += l->cl == cl && l->owner == owner && l->kind == kind;
	arf_proto_put_u32(w, n);
	for (const struct lk_lock *l = f ? f->locks : NULL; l; l = l->next) {
		if (l->cl != cl || l->owner != owner || l->kind != kind)
			continue;
		arf_proto_put_u32(w, l->type);
		arf_proto_put_u64(w, l->start);
		arf_proto_put_u64(w, l->end);
	}
}

/* A LOCK's answer: granted (or for TEST, what conflicts), with the owner's
 * ranges after it. */
static void put_lock_answer(struct arfd_locks *lm, struct arf_proto_wr *w, const struct lk_file *f,
			    const struct lk_client *cl, const struct arf_proto_lock_req *rq,
			    const struct lk_lock *conflict)
{
	put_hdr(lm, w, conflict ? ARF_LOCK_R_CONFLICT : ARF_LOCK_R_DONE, cl);
	if (rq->flags & ARF_LOCK_F_TEST) {
		arf_proto_put_u32(w, conflict ? conflict->type : 0);
		arf_proto_put_u64(w, conflict ? conflict->start : 0);
		arf_proto_put_u64(w, conflict ? conflict->end : 0);
		arf_proto_put_u32(w, conflict ? conflict->pid : 0);
	}
	put_ranges(w, f, cl, rq->owner, rq->kind);
}

static struct lk_out *out_new(struct arfd_locks *lm, struct lk_wait *wt, int rc)
{
	struct lk_out *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL; /* the request stays unanswered; the client's timeout ends it */
	o->c = wt->c;
	arf_net_sconn_ref(o->c);
	o->id = wt->req_id;
	o->op = wt->op;
	o->rc = rc;
	arf_proto_wr_init(&o->w);
	o->next = lm->out;
	lm->out = o;
	return o;
}

static void wait_unlink(struct arfd_locks *lm, struct lk_wait *wt)
{
	struct lk_wait **pp = &wt->f->waiters;
	while (*pp != wt)
		pp = &(*pp)->next;
	*pp = wt->next;
	for (pp = &lm->waiters; *pp != wt; pp = &(*pp)->gnext)
		;
	*pp = wt->gnext;
	wt->cl->nwaiters--;
	lm->nwaiting--;
	arf_net_sconn_unref(wt->c);
	free(wt);
}

/* Answer a waiting request with rc (0: rq's answer from the table now, or
 * R_WAIT with wait_again) and forget it. */
static void wait_answer(struct arfd_locks *lm, struct lk_wait *wt, int rc, int wait_again,
			const struct lk_lock *conflict)
{
	struct lk_out *o = out_new(lm, wt, rc);
	if (o && !rc) {
		if (wait_again) {
			put_hdr(lm, &o->w, ARF_LOCK_R_WAIT, wt->cl);
			put_ranges(&o->w, wt->f, wt->cl, wt->rq.owner, wt->rq.kind);
		} else {
			put_lock_answer(lm, &o->w, wt->f, wt->cl, &wt->rq, conflict);
		}
	}
	wait_unlink(lm, wt);
}

static void flush_out(struct arfd_locks *lm, struct lk_out *o)
{
	(void)lm;
	while (o) {
		struct lk_out *nx = o->next;
		struct iovec iov = { o->w.buf, o->w.len };
		int ok = !o->rc && !o->w.err;
		arf_net_reply(o->c, o->id, o->op,
			      arf_net_status_from_err(o->rc ? o->rc : o->w.err), &iov, ok && o->w.len);
		arf_net_sconn_unref(o->c);
		arf_proto_wr_free(&o->w);
		free(o);
		o = nx;
	}
}

/* Unlock lm->mu and send what waited for it. */
static void unlock_and_send(struct arfd_locks *lm)
{
	struct lk_out *o = lm->out;
	lm->out = NULL;
	pthread_mutex_unlock(&lm->mu);
	flush_out(lm, o);
}

/* Something on f was let go (or the grace period ended): grant what waits
 * there now, in arrival order. */
static void wake(struct arfd_locks *lm, struct lk_file *f)
{
	struct lk_wait *wt = f->waiters, *nx;

	for (; wt; wt = nx) {
		const struct lk_lock *conflict = NULL;
		nx = wt->next;
		if (lm->grace_until)
			return; /* nothing but reclaims until the grace period ends */
		if (wt->rq.flags & ARF_LOCK_F_TEST) {
			wait_answer(lm, wt, 0, 0, first_conflict(f, wt->cl, &wt->rq));
			continue;
		}
		int rc = try_lock(lm, f, wt->cl, &wt->rq, &conflict);
		if (rc == -EAGAIN && (wt->rq.flags & ARF_LOCK_F_WAIT))
			continue;
		if (!rc)
			client_persist(lm, wt->cl, 1);
		wait_answer(lm, wt, rc, 0, NULL);
	}
}

/* Everything a client holds and waits for goes (its lease ended). */
static void client_expire(struct arfd_locks *lm, struct lk_client *cl)
{
	for (size_t b = 0; b < NFILEB && (cl->nlocks || cl->nwaiters); b++) {
		struct lk_file *f = lm->file[b], *fnx;
		for (; f; f = fnx) {
			int changed = 0;
			fnx = f->next;
			for (struct lk_lock **pp = &f->locks; *pp;) {
				if ((*pp)->cl == cl) {
					lock_unlink(lm, pp);
					changed = 1;
				} else {
					pp = &(*pp)->next;
				}
			}
			for (struct lk_wait *wt = f->waiters, *wnx; wt; wt = wnx) {
				wnx = wt->next;
				if (wt->cl == cl)
					wait_answer(lm, wt, -ENOLCK, 0, NULL);
			}
			if (changed) {
				lm->seq++;
				wake(lm, f);
			}
			file_put(lm, f);
		}
	}
	client_persist(lm, cl, 0);
	if (cl->listed && !cl->reclaimed && lm->nlisted)
		lm->nlisted--;
	client_free(lm, cl);
}

static void grace_end(struct arfd_locks *lm)
{
	lm->grace_until = 0;
	lm->nlisted = 0;
	arfd_log(ARFD_LOG_INFO, "lock grace period over: new locks are granted");
	for (size_t b = 0; b < NFILEB; b++)
		for (struct lk_file *f = lm->file[b], *nx; f; f = nx) {
			nx = f->next;
			wake(lm, f);
			file_put(lm, f);
		}
}

/* ---- the clock: leases, waits, the grace period ---- */

static void *ticker_main(void *arg)
{
	struct arfd_locks *lm = arg;

	pthread_mutex_lock(&lm->mu);
	while (!lm->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&lm->cond, &lm->mu, &ts);
		if (lm->stop)
			break;
		uint64_t now = now_ms();
		if (lm->grace_until && (now >= lm->grace_until || !lm->nlisted))
			grace_end(lm);
		for (size_t b = 0; b < NCLIB; b++)
			for (struct lk_client *cl = lm->cli[b], *nx; cl; cl = nx) {
				nx = cl->next;
				if (now < cl->expires_ms || (lm->grace_until && cl->listed))
					continue;
				if (cl->nlocks || cl->nwaiters)
					arfd_log(ARFD_LOG_INFO, "lock client %016llx (%s): lease "
						 "expired, %u locks released",
						 (unsigned long long)cl->id, cl->principal, cl->nlocks);
				client_expire(lm, cl);
			}
		for (struct lk_wait *wt = lm->waiters, *nx; wt; wt = nx) {
			nx = wt->gnext;
			if (now >= wt->deadline_ms) {
				struct lk_file *f = wt->f;
				wait_answer(lm, wt, 0, 1, NULL);
				file_put(lm, f);
			}
		}
		unlock_and_send(lm);
		pthread_mutex_lock(&lm->mu);
	}
	pthread_mutex_unlock(&lm->mu);
	return NULL;
}

/* ---- carried by a move (vol move) ---- */

static json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* A new object at the end of array a, or NULL with *rc = -ENOMEM. */
static json_object *entry(json_object *a, int *rc)
{
	json_object *x = json_object_new_object();

	if (!x || json_object_array_add(a, x)) {
		json_object_put(x);
		*rc = -ENOMEM;
		return NULL;
	}
	return x;
}

int arfd_locks_save(struct arfd *d, const char *dir, char *err, size_t errlen)
{
	struct arfd_locks *lm = d->locks;
	char path[PATH_MAX];
	json_object *top = json_object_new_object(), *cls = json_object_new_array(),
		    *lks = json_object_new_array();
	unsigned nc = 0, nl = 0;
	int rc = 0;

	if (!top || !cls || !lks) {
		json_object_put(top);
		json_object_put(cls);
		json_object_put(lks);
		snprintf(err, errlen, "locks: out of memory");
		return -ENOMEM;
	}
	json_object_object_add(top, "version", u64(1));
	/* the receiver opens it at the next incarnation, and never later */
	json_object_object_add(top, "incarnation", u64(d->incarnation));
	json_object_object_add(top, "clients", cls);
	json_object_object_add(top, "locks", lks);
	pthread_mutex_lock(&lm->mu);
	uint64_t now = now_ms();
	for (size_t b = 0; b < NCLIB; b++)
		for (struct lk_client *cl = lm->cli[b]; cl; cl = cl->next) {
			if (!cl->lease)
				continue; /* listed, not reclaimed yet: it reclaims there */
			json_object *x = entry(cls, &rc);
			if (!x)
				continue;
			json_object_object_add(x, "id", u64(cl->id));
			json_object_object_add(x, "lease", u64(cl->lease));
			json_object_object_add(x, "principal", json_object_new_string(cl->principal));
			json_object_object_add(x, "ms_left",
					       u64(cl->expires_ms > now ? cl->expires_ms - now : 0));
			nc++;
		}
	for (size_t b = 0; b < NFILEB; b++)
		for (const struct lk_file *f = lm->file[b]; f; f = f->next)
			for (const struct lk_lock *l = f->locks; l; l = l->next) {
				if (!l->cl->lease)
					continue;
				json_object *x = entry(lks, &rc);
				if (!x)
					continue;
				json_object_object_add(x, "ino", u64(f->ino));
				json_object_object_add(x, "gen", u64(f->gen));
				json_object_object_add(x, "client", u64(l->cl->id));
				json_object_object_add(x, "owner", u64(l->owner));
				json_object_object_add(x, "pid", u64(l->pid));
				json_object_object_add(x, "kind", u64(l->kind));
				json_object_object_add(x, "type", u64(l->type));
				json_object_object_add(x, "start", u64(l->start));
				json_object_object_add(x, "end", u64(l->end));
				nl++;
			}
	pthread_mutex_unlock(&lm->mu);
	snprintf(path, sizeof(path), "%s/%s", dir, ARFD_LOCKS_CARRIED);
	if (rc) {
		snprintf(err, errlen, "locks: out of memory");
	} else if (json_object_to_file_ext(path, top, JSON_C_TO_STRING_PLAIN)) {
		snprintf(err, errlen, "locks: %s: %s", path, json_util_get_last_err());
		rc = -EIO;
	} else if (nc) {
		arfd_log(ARFD_LOG_INFO, "locks: %u clients' leases and %u locks go with volume %s",
			 nc, nl, d->volume);
	}
	if (rc)
		unlink(path); /* none rather than part of one */
	json_object_put(top);
	return rc;
}

static uint64_t field(json_object *x, const char *k, int *ok)
{
	json_object *v;
	if (!json_object_object_get_ex(x, k, &v) || !json_object_is_type(v, json_type_int)) {
		*ok = 0;
		return 0;
	}
	return json_object_get_uint64(v);
}

/* The table a move brought (arfd_locks_save's file in the data directory),
 * taken in and the file deleted: the number of its clients that the store
 * listed (they are not waited for).  A file that cannot be read is
 * reported and left out: its clients reclaim in the grace period. */
static uint64_t carried_in(struct arfd_locks *lm)
{
	struct arfd *d = lm->d;
	char path[PATH_MAX];
	uint64_t listed = 0, nc = 0, nl = 0;

	snprintf(path, sizeof(path), "%s/%s", d->cfg.data_dir, ARFD_LOCKS_CARRIED);
	if (access(path, F_OK))
		return 0;
	json_object *top = json_object_from_file(path), *cls, *lks, *inc = NULL;
	/* once: a later start must not take these leases again (the sender's
	 * incarnation says so too, should the deletion not last) */
	unlink(path);
	int dfd = open(d->cfg.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd))
		arfd_log(ARFD_LOG_WARN, "locks: %s: %s", d->cfg.data_dir, strerror(errno));
	if (dfd >= 0)
		close(dfd);
	if (top && (!json_object_object_get_ex(top, "incarnation", &inc) ||
		    json_object_get_uint64(inc) + 1 != d->incarnation)) {
		arfd_log(ARFD_LOG_WARN, "locks: %s is from an earlier opening (incarnation %llu, "
			 "now %llu): its clients reclaim instead", path,
			 (unsigned long long)(inc ? json_object_get_uint64(inc) : 0),
			 (unsigned long long)d->incarnation);
		json_object_put(top);
		return 0;
	}
	if (!top || !json_object_object_get_ex(top, "clients", &cls) ||
	    !json_object_object_get_ex(top, "locks", &lks) ||
	    !json_object_is_type(cls, json_type_array) || !json_object_is_type(lks, json_type_array)) {
		arfd_log(ARFD_LOG_WARN, "locks: %s is not a lock table: its clients reclaim instead",
			 path);
		json_object_put(top);
		return 0;
	}
	uint64_t now = now_ms();
	for (size_t i = 0; i < json_object_array_length(cls); i++) {
		json_object *x = json_object_array_get_idx(cls, i), *p;
		int ok = 1;
		uint64_t id = field(x, "id", &ok), lease = field(x, "lease", &ok);
		uint64_t left = field(x, "ms_left", &ok);
		if (!ok || !id || !lease || !json_object_object_get_ex(x, "principal", &p) ||
		    !json_object_is_type(p, json_type_string))
			continue;
		struct lk_client *cl = client_find(lm, id);
		if (!cl && !(cl = client_new(lm, id, json_object_get_string(p))))
			continue;
		cl->lease = lease;
		cl->expires_ms = now + (left < lm->lease_ms ? left : lm->lease_ms);
		cl->carried = 1;
		if (cl->listed && !cl->reclaimed) {
			cl->reclaimed = 1;
			listed++;
		}
		client_persist(lm, cl, 1);
		nc++;
	}
	for (size_t i = 0; i < json_object_array_length(lks); i++) {
		json_object *x = json_object_array_get_idx(lks, i);
		int ok = 1;
		struct lk_lock l = { NULL, NULL, field(x, "owner", &ok), (uint32_t)field(x, "pid", &ok),
				     (uint32_t)field(x, "kind", &ok), (uint32_t)field(x, "type", &ok),
				     field(x, "start", &ok), field(x, "end", &ok) };
		uint64_t ino = field(x, "ino", &ok), client = field(x, "client", &ok);
		uint32_t gen = (uint32_t)field(x, "gen", &ok);
		if (!ok || !(l.cl = client_find(lm, client)) || !l.cl->carried ||
		    (l.kind != ARF_LOCK_POSIX && l.kind != ARF_LOCK_FLOCK) ||
		    (l.type != ARF_LOCK_RD && l.type != ARF_LOCK_WR) || l.start > l.end)
			continue;
		struct lk_file *f = file_get(lm, ino, gen, 1);
		struct lk_lock *n = f ? malloc(sizeof(*n)) : NULL;
		if (!n) {
			file_put(lm, f);
			continue;
		}
		*n = l;
		n->next = f->locks;
		f->locks = n;
		l.cl->nlocks++;
		lm->nlocks++;
		nl++;
	}
	json_object_put(top);
	lm->seq++;
	if (nc)
		arfd_log(ARFD_LOG_INFO, "locks: %llu clients' leases and %llu locks came with the "
			 "volume: not waited for", (unsigned long long)nc, (unsigned long long)nl);
	return listed;
}

/* ---- start and stop ---- */

struct load_ctx {
	struct arfd_locks *lm;
	uint64_t n;
};

static int load_one(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen)
{
	struct load_ctx *lc = ctx;
	char principal[80];
	uint64_t id = 0;

	if (klen != 9)
		return 0;
	for (int i = 0; i < 8; i++)
		id = id << 8 | key[1 + i];
	snprintf(principal, sizeof(principal), "%.*s", (int)(vlen < 79 ? vlen : 79),
		 (const char *)val);
	struct lk_client *cl = client_new(lc->lm, id, principal);
	if (!cl)
		return -ENOMEM;
	cl->persisted = 1;
	cl->listed = 1;
	lc->n++;
	return 0;
}

int arfd_locks_start(struct arfd *d, char *err, size_t errlen)
{
	struct arfd_locks *lm = calloc(1, sizeof(*lm));
	struct load_ctx lc = { lm, 0 };
	int rc;

	if (!lm) {
		snprintf(err, errlen, "lock manager: out of memory");
		return -ENOMEM;
	}
	d->locks = lm;
	lm->d = d;
	lm->lease_ms = (uint64_t)d->cfg.lock_lease_s * 1000u;
	lm->seq = d->incarnation << 40;
	pthread_mutex_init(&lm->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lm->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = arfd_store_scan(d->store, "L", 1, load_one, &lc, err, errlen)))
		return rc;
	uint64_t carried = carried_in(lm); /* listed clients a move brought with their locks */
	uint64_t now = now_ms();
	/* a replica's records are its source's clients, which never reclaim
	 * here (vol release): no grace period to wait out */
	if (lc.n > carried && d->cfg.lock_grace_s && !arfd_volume_is_replica(d->volume)) {
		lm->grace_until = now + (uint64_t)d->cfg.lock_grace_s * 1000u;
		lm->nlisted = (unsigned)(lc.n - carried);
		for (size_t b = 0; b < NCLIB; b++)
			for (struct lk_client *cl = lm->cli[b]; cl; cl = cl->next)
				if (!cl->carried)
					cl->expires_ms = lm->grace_until;
		arfd_log(ARFD_LOG_INFO, "lock grace period: %llu clients may reclaim their locks "
			 "for %d s; new locks wait", (unsigned long long)(lc.n - carried),
			 d->cfg.lock_grace_s);
	} else {
		for (size_t b = 0; b < NCLIB; b++)
			for (struct lk_client *cl = lm->cli[b], *nx; cl; cl = nx) {
				nx = cl->next;
				if (cl->carried)
					continue;
				client_persist(lm, cl, 0);
				client_free(lm, cl);
			}
	}
	if ((rc = pthread_create(&lm->ticker, NULL, ticker_main, lm))) {
		snprintf(err, errlen, "lock manager thread: %s", strerror(rc));
		return -rc;
	}
	lm->started = 1;
	return 0;
}

void arfd_locks_stop(struct arfd *d)
{
	struct arfd_locks *lm = d->locks;

	if (!lm)
		return;
	if (lm->started) {
		pthread_mutex_lock(&lm->mu);
		lm->stop = 1;
		pthread_cond_signal(&lm->cond);
		pthread_mutex_unlock(&lm->mu);
		pthread_join(lm->ticker, NULL);
	}
	/* the records of clients holding locks stay: the next incarnation waits
	 * for their reclaims; the others have nothing to reclaim */
	for (size_t b = 0; b < NCLIB; b++)
		for (struct lk_client *cl = lm->cli[b]; cl; cl = cl->next)
			if (!cl->nlocks)
				client_persist(lm, cl, 0);
	while (lm->waiters)
		wait_unlink(lm, lm->waiters);
	for (size_t b = 0; b < NFILEB; b++)
		while (lm->file[b]) {
			struct lk_file *f = lm->file[b];
			while (f->locks)
				lock_unlink(lm, &f->locks);
			lm->file[b] = f->next;
			free(f);
		}
	for (size_t b = 0; b < NCLIB; b++)
		while (lm->cli[b])
			client_free(lm, lm->cli[b]);
	flush_out(lm, lm->out);
	pthread_mutex_destroy(&lm->mu);
	pthread_cond_destroy(&lm->cond);
	free(lm);
	d->locks = NULL;
}

void arfd_locks_conn_closed(struct arfd *d, struct arf_net_sconn *c)
{
	struct arfd_locks *lm = d->locks;

	if (!lm)
		return;
	pthread_mutex_lock(&lm->mu);
	for (struct lk_wait *wt = lm->waiters, *nx; wt; wt = nx) {
		nx = wt->gnext;
		if (wt->c == c) {
			struct lk_file *f = wt->f;
			wait_unlink(lm, wt);
			file_put(lm, f);
		}
	}
	unlock_and_send(lm);
}

/* ---- the procedures ---- */

/* The client a request names: found, its principal checked and its lease
 * renewed; made (with a new lease) when create is set.  *cl NULL without
 * create when there is none.  0, -EPERM (another principal's id),
 * -EINVAL (id 0) or -ENOMEM. */
static int client_of(struct arfd_locks *lm, const struct arfd_req *q, uint64_t id, int create,
		     struct lk_client **out)
{
	char principal[80];
	struct lk_client *cl;

	*out = NULL;
	if (!id)
		return -EINVAL;
	principal_of(q->ac, principal, sizeof(principal));
	cl = client_find(lm, id);
	if (cl && strcmp(cl->principal, principal)) {
		arfd_log_limited(ARFD_LOG_WARN, "lock request from %s names the lock client of %s: "
				 "refused", principal, cl->principal);
		return -EPERM;
	}
	if (!cl && create && !(cl = client_new(lm, id, principal)))
		return -ENOMEM;
	if (cl) {
		if (!cl->lease && create)
			cl->lease = random_id();
		if (!(lm->grace_until && cl->listed && !cl->lease))
			cl->expires_ms = now_ms() + lm->lease_ms;
	}
	*out = cl;
	return 0;
}

/* A client that holds nothing and no lease may go at once. */
static void client_put(struct arfd_locks *lm, struct lk_client *cl)
{
	if (cl && !cl->lease && !cl->nlocks && !cl->nwaiters && !cl->listed)
		client_free(lm, cl);
}

static int took_tombstone(struct lk_client *cl, uint64_t wait_id)
{
	for (unsigned i = 0; wait_id && i < cl->ncancelled; i++)
		if (cl->cancelled[i] == wait_id) {
			cl->cancelled[i] = cl->cancelled[--cl->ncancelled];
			return 1;
		}
	return 0;
}

static unsigned conn_waiting(const struct arfd_locks *lm, const struct arf_net_sconn *c)
{
	unsigned n = 0;
	for (const struct lk_wait *wt = lm->waiters; wt; wt = wt->gnext)
		n += wt->c == c;
	return n;
}

/* Keep rq waiting: ARFD_PROC_LATER, or -ENOMEM. */
static int wait_queue(struct arfd_locks *lm, struct arfd_req *q, struct lk_file *f,
		      struct lk_client *cl, const struct arf_proto_lock_req *rq)
{
	struct lk_wait *wt = calloc(1, sizeof(*wt)), **pp;
	uint32_t ms = rq->wait_ms ? rq->wait_ms : DEFAULT_WAIT_MS;

	if (!wt)
		return -ENOMEM;
	if (ms > ARF_LOCK_MAX_WAIT_MS)
		ms = ARF_LOCK_MAX_WAIT_MS;
	wt->f = f;
	wt->cl = cl;
	wt->rq = *rq;
	wt->c = q->c;
	arf_net_sconn_ref(q->c);
	wt->req_id = q->id;
	wt->op = q->op;
	wt->deadline_ms = now_ms() + ms;
	for (pp = &f->waiters; *pp; pp = &(*pp)->next)
		;
	*pp = wt;
	for (pp = &lm->waiters; *pp; pp = &(*pp)->gnext)
		;
	*pp = wt;
	cl->nwaiters++;
	lm->nwaiting++;
	return ARFD_PROC_LATER;
}

int arfd_p_lock(struct arfd_req *q)
{
	struct arfd_locks *lm = q->d->locks;
	struct arf_proto_fh fh;
	struct arf_proto_lock_req rq;
	struct arf_ops_attr a;
	struct lk_client *cl = NULL;
	struct lk_file *f = NULL;
	const struct lk_lock *conflict = NULL;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	arf_proto_get_lock_req(q->r, &rq);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if ((rq.kind != ARF_LOCK_POSIX && rq.kind != ARF_LOCK_FLOCK) ||
	    (rq.type != ARF_LOCK_RD && rq.type != ARF_LOCK_WR) || rq.start > rq.end ||
	    (rq.flags & ~(ARF_LOCK_F_WAIT | ARF_LOCK_F_RECLAIM | ARF_LOCK_F_TEST)))
		return -EINVAL;
	if (rq.kind == ARF_LOCK_FLOCK) {
		rq.start = 0;
		rq.end = ARF_LOCK_EOF;
	}
	if ((rc = arf_ops_getattr(&q->d->fs, fh.ino, fh.gen, &a)))
		return rc;
	/* anyone who may read or write the file may lock it (the mode may have
	 * changed since it was opened); a stranger to it may not */
	if (!(rq.flags & ARF_LOCK_F_RECLAIM) && q->cr->uid != a.uid &&
	    arf_ops_access(&q->d->fs, q->cr, fh.ino, fh.gen, R_OK) &&
	    arf_ops_access(&q->d->fs, q->cr, fh.ino, fh.gen, W_OK))
		return -EACCES;

	pthread_mutex_lock(&lm->mu);
	int test = (rq.flags & ARF_LOCK_F_TEST) != 0, reclaim = (rq.flags & ARF_LOCK_F_RECLAIM) != 0;
	if ((rc = client_of(lm, q, rq.client, !test, &cl)))
		goto out;
	if (reclaim && !(cl && cl->carried) && (!lm->grace_until || !cl || !cl->listed)) {
		rc = -ENOLCK; /* too late: the grace period is over (or it held nothing) */
		goto out;
	}
	if (cl && took_tombstone(cl, rq.wait_id)) {
		rc = -EINTR; /* cancelled before it arrived */
		goto out;
	}
	if (!(f = file_get(lm, fh.ino, fh.gen, 1))) {
		rc = -ENOMEM;
		goto out;
	}
	if (lm->grace_until && !reclaim) {
		/* only reclaims until the grace period ends; a test waits too,
		 * since the table is not whole yet */
		if (cl) {
			rc = wait_queue(lm, q, f, cl, &rq);
		} else { /* a test by a client with no lease: it polls */
			put_hdr(lm, q->w, ARF_LOCK_R_WAIT, NULL);
			put_ranges(q->w, NULL, NULL, 0, 0);
		}
		goto out;
	}
	if (test) {
		put_lock_answer(lm, q->w, f, cl, &rq, first_conflict(f, cl, &rq));
		goto out;
	}
	rc = try_lock(lm, f, cl, &rq, &conflict);
	if (rc == -EAGAIN && reclaim) {
		rc = -ENOLCK; /* another client took it meanwhile: this one's is lost */
	} else if (rc == -EAGAIN && (rq.flags & ARF_LOCK_F_WAIT)) {
		if (rq.kind == ARF_LOCK_POSIX && deadlock(lm, cl, rq.owner, conflict)) {
			rc = -EDEADLK;
		} else if (conn_waiting(lm, q->c) * 2 >= (unsigned)q->d->cfg.max_conn_requests) {
			/* this connection's answers must not all be held here */
			rc = 0;
			put_hdr(lm, q->w, ARF_LOCK_R_WAIT, cl);
			put_ranges(q->w, f, cl, rq.owner, rq.kind);
		} else {
			rc = wait_queue(lm, q, f, cl, &rq);
		}
	} else if (!rc) {
		client_persist(lm, cl, 1);
		put_lock_answer(lm, q->w, f, cl, &rq, NULL);
	}
	if (rc == -EAGAIN || (rq.kind == ARF_LOCK_FLOCK && rc)) /* a failed conversion let go */
		wake(lm, f);
out:
	file_put(lm, f);
	client_put(lm, cl);
	unlock_and_send(lm);
	return rc;
}

int arfd_p_unlock(struct arfd_req *q)
{
	struct arfd_locks *lm = q->d->locks;
	struct arf_proto_fh fh;
	struct lk_client *cl;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	uint64_t client = arf_proto_get_u64(q->r);
	(void)arf_proto_get_u64(q->r); /* the lease the client believes in: the reply says */
	uint64_t owner = arf_proto_get_u64(q->r);
	uint32_t kind = arf_proto_get_u32(q->r);
	uint64_t start = arf_proto_get_u64(q->r), end = arf_proto_get_u64(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if ((kind != ARF_LOCK_POSIX && kind != ARF_LOCK_FLOCK) || start > end)
		return -EINVAL;
	/* no handle check: the locks of a removed file must still go */
	pthread_mutex_lock(&lm->mu);
	if ((rc = client_of(lm, q, client, 0, &cl)))
		goto out;
	struct lk_file *f = cl ? file_get(lm, fh.ino, fh.gen, 0) : NULL;
	if (f && kind == ARF_LOCK_POSIX) {
		rc = posix_set(lm, f, cl, owner, 0, 0, start, end);
	} else if (f) {
		struct lk_lock **pp = flock_find(f, cl, owner);
		if (pp) {
			lock_unlink(lm, pp);
			lm->seq++;
		}
	}
	if (!rc) {
		put_hdr(lm, q->w, ARF_LOCK_R_DONE, cl);
		put_ranges(q->w, f, cl, owner, kind);
	}
	if (f) {
		wake(lm, f);
		file_put(lm, f);
	}
out:
	unlock_and_send(lm);
	return rc;
}

int arfd_p_lock_renew(struct arfd_req *q)
{
	struct arfd_locks *lm = q->d->locks;
	struct lk_client *cl;
	int rc;

	uint64_t client = arf_proto_get_u64(q->r);
	(void)arf_proto_get_u64(q->r);
	uint32_t flags = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	pthread_mutex_lock(&lm->mu);
	if (!(rc = client_of(lm, q, client, 0, &cl))) {
		if (cl && (flags & ARF_LOCK_RENEW_RECLAIMED))
			cl->carried = 0; /* its reclaims are over: the table is its own again */
		if (cl && (flags & ARF_LOCK_RENEW_RECLAIMED) && cl->listed && !cl->reclaimed) {
			cl->reclaimed = 1;
			if (lm->nlisted && !--lm->nlisted)
				pthread_cond_signal(&lm->cond); /* the grace period may end now */
		}
		put_hdr(lm, q->w, ARF_LOCK_R_DONE, cl);
		arf_proto_put_u32(q->w, lm->grace_until ? ARF_LOCK_STATE_GRACE : 0);
	}
	unlock_and_send(lm);
	return rc;
}

int arfd_p_lock_cancel(struct arfd_req *q)
{
	struct arfd_locks *lm = q->d->locks;
	struct lk_client *cl;
	int rc, found = 0;

	uint64_t client = arf_proto_get_u64(q->r), wait_id = arf_proto_get_u64(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	pthread_mutex_lock(&lm->mu);
	if (!(rc = client_of(lm, q, client, 0, &cl)) && cl && wait_id) {
		for (struct lk_wait *wt = lm->waiters; wt; wt = wt->gnext)
			if (wt->cl == cl && wt->rq.wait_id == wait_id) {
				struct lk_file *f = wt->f;
				wait_answer(lm, wt, -EINTR, 0, NULL);
				file_put(lm, f);
				found = 1;
				break;
			}
		if (!found) { /* its LOCK may still be on the way: refuse it when it comes */
			if (cl->ncancelled == TOMBSTONES)
				memmove(cl->cancelled, cl->cancelled + 1,
					(TOMBSTONES - 1) * sizeof(cl->cancelled[0])), cl->ncancelled--;
			cl->cancelled[cl->ncancelled++] = wait_id;
		}
	}
	if (!rc)
		arf_proto_put_u32(q->w, (uint32_t)found);
	unlock_and_send(lm);
	return rc;
}

void arfd_locks_status(struct arfd *d, struct json_object *o)
{
	struct arfd_locks *lm = d->locks;
	json_object *x;

	if (!lm || !(x = json_object_new_object()))
		return;
	pthread_mutex_lock(&lm->mu);
	uint64_t now = now_ms();
	json_object_object_add(x, "clients", json_object_new_uint64(lm->nclients));
	json_object_object_add(x, "locks", json_object_new_uint64(lm->nlocks));
	json_object_object_add(x, "waiting", json_object_new_uint64(lm->nwaiting));
	json_object_object_add(x, "lease_s", json_object_new_uint64(lm->lease_ms / 1000u));
	json_object_object_add(x, "grace_s", json_object_new_uint64(
		lm->grace_until > now ? (lm->grace_until - now + 999) / 1000u : 0));
	pthread_mutex_unlock(&lm->mu);
	json_object_object_add(o, "locks", x);
}
