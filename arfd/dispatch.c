/* SPDX-License-Identifier: MIT */
/*
 * arfd/dispatch — requests from the soft-NIC to ops/ hooks and back.
 *
 * The soft-NIC thread hands each request to a job (a copy of it, or a big
 * one's receive buffer itself) and queues it in its lane (lanes.c), or,
 * for a short unstable write or a brief read while the lane is idle, serves it
 * itself (lanes.c, serve_inline); a request worker takes a job, looks the
 * request's kind up in the procedure
 * table (procs.c), and does around the procedure what every request
 * shares: the credentials it acts with (identity.c), the counters, the
 * stale-handle limits, and for a mutation the transaction, written to the
 * store under the filesystem lock (so batches land in commit order); then
 * it replies — at once for a read or an unstable data write, after the
 * group commit for every other mutation, a COMMIT and, on an [export] sync
 * export, every write.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arf_ops.h"
#include "arf_proto.h"
#include "arfd.h"
#include "log.h"

/* A procedure that touches no filesystem state (ARFD_PROC_UNLOCKED): no
 * lock, no credentials (the body's are skipped), no reply cache. */
static void serve_unlocked(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
			   const struct arfd_proc *proc, const uint8_t *body, size_t len)
{
	struct arf_proto_rd r;
	struct arf_proto_cred pc;
	struct arf_cred cr;
	struct arf_proto_wr w;
	struct arfd_req q = { .d = d, .r = &r, .cr = &cr, .w = &w, .c = c, .id = id, .op = op,
			      .ac = arf_net_sconn_udata(c) };
	int rc;

	memset(&cr, 0, sizeof(cr));
	arf_proto_wr_init(&w);
	arf_proto_rd_init(&r, body, len);
	arf_proto_get_cred(&r, &pc);
	int idx = arf_proto_op_index(op);
	__atomic_add_fetch(&d->ctr.requests[idx < 0 ? ARF_PROTO_NKINDS - 1 : idx], 1,
			   __ATOMIC_RELAXED);
	rc = r.err ? ARF_EPROTO : proc->run(&q);
	if (rc == ARF_EPROTO)
		__atomic_add_fetch(&d->ctr.bad_requests, 1, __ATOMIC_RELAXED);
	if (rc)
		__atomic_add_fetch(&d->ctr.errors, 1, __ATOMIC_RELAXED);
	struct iovec iov = { w.buf, w.len };
	arf_net_reply(c, id, op, arf_net_status_from_err(rc), &iov, rc || !w.len ? 0 : 1);
	arf_proto_wr_free(&w);
}

static void reply(struct arf_net_sconn *c, uint64_t id, uint16_t op, int rc,
		  const struct arf_proto_wr *w)
{
	struct iovec iov = { w->buf, w->len };

	if (rc == ARF_EPROTO)
		arfd_log_limited(ARFD_LOG_WARN, "malformed %s request from %s",
				 arf_proto_op_name(op), arf_net_sconn_peer(c)->addr);
	arf_net_reply(c, id, op, arf_net_status_from_err(rc), &iov, rc || !w->len ? 0 : 1);
}

/* Serve one request.  With `try`, only if the filesystem lock is free at
 * once: returns 0, having done nothing, when it is not (lanes.c's
 * serve_inline then queues the request; the soft-NIC thread must not wait
 * behind a program or a control command).  Else returns 1. */
static int serve(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		 const uint8_t *body, size_t len, int try)
{
	const struct arfd_proc *proc = arfd_proc_find(op);
	int guarded = (proc->flags & ARFD_PROC_HANDLE) != 0;
	int shared = (proc->flags & ARFD_PROC_SHARED) != 0;

	if (proc->flags & ARFD_PROC_UNLOCKED) {
		if (try)
			return 0; /* a worker's, never the soft-NIC thread's */
		serve_unlocked(d, c, id, op, proc, body, len);
		return 1;
	}

	if (try) {
		if (__atomic_load_n(&d->ctl_waiting, __ATOMIC_ACQUIRE))
			return 0;
		if (shared) {
			if (pthread_rwlock_tryrdlock(&d->fs_rw))
				return 0;
		} else {
			if (pthread_mutex_trylock(&d->fs_lock))
				return 0;
			if (pthread_rwlock_trywrlock(&d->fs_rw)) {
				pthread_mutex_unlock(&d->fs_lock);
				return 0;
			}
		}
	}
	if (arf_net_sconn_closed(c)) {
		/* its client hung up: nobody can get the answer, and a client
		 * that wants it sends the call again on a new connection (the
		 * reply cache answers one applied before); not doing it keeps a
		 * flood a closed connection queued from costing the others */
		if (try && shared)
			arfd_fs_rdunlock(d);
		else if (try)
			arfd_fs_unlock(d);
		arf_net_reply(c, id, op, ARF_NET_S_IO, NULL, 0);
		return 1;
	}
	struct arf_proto_rd r;
	struct arf_proto_cred pc;
	struct arf_cred cr;
	struct arf_proto_wr w;
	struct arfd_req q = { .d = d, .r = &r, .cr = &cr, .w = &w, .c = c, .id = id, .op = op };
	int rc, deferred = 0;

	arf_proto_wr_init(&w);
	arf_proto_rd_init(&r, body, len);
	arf_proto_get_cred(&r, &pc);

	struct arfd_conn *ac = arf_net_sconn_udata(c);
	q.ac = ac;
	while (!try && __atomic_load_n(&d->ctl_waiting, __ATOMIC_ACQUIRE))
		sched_yield(); /* a control command goes first (arfd_lock_for_control) */
	if (try)
		; /* taken above */
	else if (shared)
		arfd_fs_rdlock(d);
	else
		arfd_fs_lock(d);
	arfd_identity_cred(d, ac, &pc, &cr, NULL); /* under the lock: SIGHUP may change the export */
	if (try && proc->small) {
		/* the transport's thread: not a change that frees much (procs.c).
		 * Nothing is looked at where the request is refused unlooked
		 * (below): the workers refuse it */
		int small = 0;
		if (!arfd_failed(d) && !__atomic_load_n(&d->moved, __ATOMIC_ACQUIRE) &&
		    !d->cfg.read_only && !(guarded && arfd_identity_stale_check(d, ac))) {
			struct arf_proto_rd peek = r;
			q.r = &peek;
			small = proc->small(&q);
			q.r = &r;
		}
		if (!small) {
			arfd_fs_unlock(d); /* never a shared one */
			arf_proto_wr_free(&w);
			return 0;
		}
	}
	int idx = arf_proto_op_index(op);
	__atomic_add_fetch(&d->ctr.requests[idx < 0 ? ARF_PROTO_NKINDS - 1 : idx], 1,
			   __ATOMIC_RELAXED);
	if (r.err) {
		rc = ARF_EPROTO;
	} else if (arfd_failed(d) && op != ARF_OP_STATUS) {
		rc = -EIO; /* the regions may hold a change RocksDB refused (commit.c) */
		arfd_log_limited(ARFD_LOG_WARN, "%s from %s: EIO: export failed: %s",
				 arf_proto_op_name(op), arf_net_sconn_peer(c)->addr, d->failure);
	} else if (__atomic_load_n(&d->moved, __ATOMIC_ACQUIRE)) {
		rc = -EREMOTE; /* sent away by vol move (move_out.c): its connections are
				* closed, and this answer is for nobody */
	} else if (guarded && arfd_identity_stale_check(d, ac)) {
		rc = -ESTALE; /* too many stale handles: a guesser; not looked at */
		guarded = 0;
	} else if (shared) {
		rc = proc->run(&q); /* only reads: beside the other readers */
	} else if (proc->flags & ARFD_PROC_MUTATES) {
		uint64_t txn = 0;
		int unstable = (proc->flags & ARFD_PROC_UNSTABLE) && !d->cfg.sync;
		if (d->cfg.read_only) {
			rc = -EROFS;
		} else if (arfd_replies_find(d, ac, id, cr.uid, &w, &txn)) {
			/* sent again after a reconnection, and applied the first
			 * time: the first reply (replies.c), once it is durable */
			rc = 0;
			if (txn > d->durable_seq && !unstable)
				deferred = 1;
			arfd_log_limited(ARFD_LOG_INFO, "%s from %s: sent again, answered from the "
					 "reply cache", arf_proto_op_name(op),
					 arf_net_sconn_peer(c)->addr);
		} else if (!(rc = arfd_txn_begin(d))) {
			rc = proc->run(&q);
			if (!rc)
				arfd_replies_stage(d, ac, id, cr.uid, &w);
			txn = arfd_txn_commit(d, unstable, &rc);
			arfd_replies_done(d, rc ? 0 : txn);
			if (txn && !unstable)
				deferred = 1; /* durable before the reply (RFC 1813) */
			static int64_t written; /* under fs_lock */
			if (txn && d->cfg.test_exit_after && ++written == d->cfg.test_exit_after) {
				/* test only: a crash after the write, before the answer */
				arfd_log(ARFD_LOG_WARN, "server.test_exit_after: exiting after mutation "
					 "%lld (%s), unanswered", (long long)written,
					 arf_proto_op_name(op));
				_exit(137);
			}
		}
	} else {
		rc = proc->run(&q);
		if ((proc->flags & ARFD_PROC_DURABLE) && !rc && d->applied_seq > d->durable_seq)
			deferred = 1; /* everything before it durable, as NFS COMMIT */
	}
	if (rc == ARFD_PROC_LATER) { /* the procedure answers it itself (locks.c) */
		arfd_fs_unlock(d); /* never a shared one */
		arf_proto_wr_free(&w);
		return 1;
	}
	if (rc == ARF_EPROTO)
		__atomic_add_fetch(&d->ctr.bad_requests, 1, __ATOMIC_RELAXED);
	if (rc)
		__atomic_add_fetch(&d->ctr.errors, 1, __ATOMIC_RELAXED);
	if (rc == -ESTALE && guarded)
		arfd_identity_stale(d, ac);
	if (deferred) {
		/* reply after the group commit that makes applied_seq durable */
		void *rbody = w.buf;
		size_t blen = w.len;
		if (rc) {
			free(rbody);
			rbody = NULL;
			blen = 0;
		}
		arfd_pending_add_reply(d->pending, d->applied_seq, c, id, op,
				       arf_net_status_from_err(rc), rbody, blen);
		w.buf = NULL;
		arfd_commit_wanted(d, try); /* never shared: only changes and COMMIT defer */
	}
	/* an unstable write: its reply goes before the data log's copy of its
	 * blocks (store.h arfd_store_settle), which the lock keeps as it wrote
	 * them; arf_net_reply never blocks */
	int early = !deferred && !shared && arfd_store_pending(d->store);
	if (early) {
		char err[256];
		reply(c, id, op, rc, &w);
		if (arfd_store_settle(d->store, err, sizeof(err)))
			arfd_fail(d, err); /* the client's COMMIT hears EIO (commit.c) */
	}
	if (shared)
		arfd_fs_rdunlock(d);
	else
		arfd_fs_unlock(d);

	if (!deferred && !early)
		reply(c, id, op, rc, &w);
	arf_proto_wr_free(&w);
	return 1;
}

void arfd_request(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		  const uint8_t *body, size_t len)
{
	serve(d, c, id, op, body, len, 0);
}

int arfd_request_try(struct arfd *d, struct arf_net_sconn *c, uint64_t id, uint16_t op,
		     const uint8_t *body, size_t len)
{
	return serve(d, c, id, op, body, len, 1);
}

void arfd_lock_for_control(struct arfd *d)
{
	__atomic_add_fetch(&d->ctl_waiting, 1, __ATOMIC_ACQ_REL);
	arfd_fs_lock(d);
	__atomic_sub_fetch(&d->ctl_waiting, 1, __ATOMIC_ACQ_REL);
}

void arfd_fs_lock(struct arfd *d)
{
	pthread_mutex_lock(&d->fs_lock);
	pthread_rwlock_wrlock(&d->fs_rw);
}

void arfd_fs_unlock(struct arfd *d)
{
	pthread_rwlock_unlock(&d->fs_rw);
	pthread_mutex_unlock(&d->fs_lock);
}

void arfd_fs_wait(struct arfd *d, pthread_cond_t *cv)
{
	pthread_rwlock_unlock(&d->fs_rw);
	pthread_cond_wait(cv, &d->fs_lock);
	pthread_rwlock_wrlock(&d->fs_rw);
}

void arfd_fs_rdlock(struct arfd *d)
{
	pthread_rwlock_rdlock(&d->fs_rw);
}

void arfd_fs_rdunlock(struct arfd *d)
{
	pthread_rwlock_unlock(&d->fs_rw);
}

int arfd_fs_lock_init(struct arfd *d)
{
	pthread_rwlockattr_t a;
	int rc;

	if ((rc = pthread_mutex_init(&d->fs_lock, NULL)))
		return -rc;
	if ((rc = pthread_rwlockattr_init(&a))) {
		pthread_mutex_destroy(&d->fs_lock);
		return -rc;
	}
	/* a stream of readers must not keep a change waiting for ever */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rc = pthread_rwlock_init(&d->fs_rw, &a);
	pthread_rwlockattr_destroy(&a);
	if (rc) {
		pthread_mutex_destroy(&d->fs_lock);
		return -rc;
	}
	return 0;
}

void arfd_fs_lock_destroy(struct arfd *d)
{
	pthread_rwlock_destroy(&d->fs_rw);
	pthread_mutex_destroy(&d->fs_lock);
}
