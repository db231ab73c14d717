/* SPDX-License-Identifier: MIT */
/*
 * Locks: fcntl byte-range locks (getlk, setlk) and flock locks (flock)
 * taken at arfd through libarf, so that they exclude across every mount of
 * the export (arfd/locks.c has the semantics; libarf's locks.c the lease
 * and the reclaim after a restart).  As the kernel asks: fcntl locks of an
 * owner go at FLUSH (any close by the process), flock locks at RELEASE
 * (the last close of the open file).
 *
 * A lock that must wait (F_SETLKW, flock without LOCK_NB) waits in a
 * thread of its own, not in one of the session's workers, so that any
 * number of processes may wait without starving the mount; arfd holds the
 * request meanwhile.  A signal to the waiting process reaches us as an
 * INTERRUPT, which cancels the wait at arfd: the process sees EINTR (or
 * its call restarts), unless the lock was granted first.
 *
 * As NFS does, taking a lock revalidates what this mount caches of the
 * file: the kernel's pages and attributes are dropped, and reads go through
 * the uncached client for a while, so that the holder sees every write the
 * previous holder made.  Writes reach arfd before write(2) returns, so an
 * unlock never overtakes them; with the writeback cache the kernel's dirty
 * pages are written out first.  When the lease was lost (the mount was cut
 * off from arfd for longer than its lease), reads and writes of a file
 * whose locks went answer EIO until the file is closed, as on NFS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include "arf_fuse.h"

/* Threads waiting for a lock, so that the end of the session can end them. */
static pthread_mutex_t waits_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t waits_done = PTHREAD_COND_INITIALIZER;

struct waitjob {
	struct waitjob *next;
	struct arf_fuse *fs;
	fuse_req_t req;
	fuse_ino_t ino;
	struct arf_fuse_node *n;
	struct arf_lock lk;
	uint64_t wait_id;
	struct arf_cred cred;
};
static struct waitjob *waiting;

static int lock_errno(int rc)
{
	return rc == -EAGAIN ? EAGAIN : arf_fuse_errno(rc);
}

/* A lock was taken: drop what this mount caches of the file. */
static void revalidate(struct arf_fuse *fs, fuse_ino_t ino, struct arf_fuse_node *n)
{
	if (fs->cf != fs->c)
		__atomic_store_n(&n->fresh_until_ms, arf_fuse_now_ms() + fs->cache_ms + 1, __ATOMIC_RELAXED);
	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0); /* pages and attributes */
}

/* Before an unlock: with the writeback cache, the kernel's dirty pages go
 * to arfd first (invalidating them writes them back). */
static void write_back(struct arf_fuse *fs, fuse_ino_t ino)
{
	if (fs->opts.writeback && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
}

static void range_of(const struct flock *fl, struct arf_lock *lk)
{
	lk->start = (uint64_t)fl->l_start;
	lk->end = fl->l_len > 0 ? (uint64_t)fl->l_start + (uint64_t)fl->l_len - 1 : ARF_LK_EOF;
}

static void *wait_main(void *arg)
{
	struct waitjob *j = arg;
	struct arf_fuse *fs = j->fs;

	arf_set_thread_cred(&j->cred);
	int rc = arf_lock(fs->c, j->n->ino, j->n->gen, &j->lk, 1, j->wait_id);
	if (!rc)
		revalidate(fs, j->ino, j->n);
	fuse_reply_err(j->req, rc ? lock_errno(rc) : 0);
	pthread_mutex_lock(&waits_lock);
	for (struct waitjob **pp = &waiting; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	pthread_cond_broadcast(&waits_done);
	pthread_mutex_unlock(&waits_lock);
	free(j);
	return NULL;
}

/* The kernel interrupted a waiting request (a signal to the process). */
static void on_interrupt(fuse_req_t req, void *data)
{
	arf_lock_cancel(arf_fuse_of(req)->c, (uint64_t)(uintptr_t)data);
}

/* Take lk, waiting in a thread of its own when sleep is set. */
static void take(fuse_req_t req, fuse_ino_t ino, const struct arf_lock *lk, int sleep)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	int rc;

	if (arf_lock_lost(fs->c, n->ino, n->gen)) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (!sleep) {
		arf_fuse_cred_set(req);
		rc = arf_lock(fs->c, n->ino, n->gen, lk, 0, 0);
		if (!rc)
			revalidate(fs, ino, n);
		fuse_reply_err(req, rc ? lock_errno(rc) : 0);
		return;
	}
	struct waitjob *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t t;
	if (!j) {
		fuse_reply_err(req, ENOLCK);
		return;
	}
	j->fs = fs;
	j->req = req;
	j->ino = ino;
	j->n = n;
	j->lk = *lk;
	j->wait_id = arf_lock_wait_id(fs->c);
	arf_fuse_cred_req(req, &j->cred);
	pthread_mutex_lock(&waits_lock);
	j->next = waiting;
	waiting = j;
	pthread_mutex_unlock(&waits_lock);
	/* already interrupted: the callback runs now, and the wait ends at once */
	fuse_req_interrupt_func(req, on_interrupt, (void *)(uintptr_t)j->wait_id);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256u << 10);
	rc = pthread_create(&t, &attr, wait_main, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_lock(&waits_lock);
		for (struct waitjob **pp = &waiting; *pp; pp = &(*pp)->next)
			if (*pp == j) {
				*pp = j->next;
				break;
			}
		pthread_mutex_unlock(&waits_lock);
		free(j);
		fuse_reply_err(req, ENOLCK);
	}
}

static void op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *fl)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_lock lk = { ARF_LK_FCNTL, fl->l_type == F_WRLCK ? ARF_LK_WR : ARF_LK_RD,
			       fi->lock_owner, 0, 0, (uint32_t)fl->l_pid };

	range_of(fl, &lk);
	arf_fuse_cred_set(req);
	int rc = arf_getlk(fs->c, n->ino, n->gen, &lk);
	if (rc) {
		fuse_reply_err(req, lock_errno(rc));
		return;
	}
	if (lk.type == ARF_LK_UN) {
		fl->l_type = F_UNLCK;
	} else {
		fl->l_type = lk.type == ARF_LK_WR ? F_WRLCK : F_RDLCK;
		fl->l_whence = SEEK_SET;
		fl->l_start = (off_t)lk.start;
		fl->l_len = lk.end == ARF_LK_EOF ? 0 : (off_t)(lk.end - lk.start + 1);
		fl->l_pid = (pid_t)lk.pid;
	}
	fuse_reply_lock(req, fl);
}

static void op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		     struct flock *fl, int sleep)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_lock lk = { ARF_LK_FCNTL, fl->l_type == F_WRLCK ? ARF_LK_WR : ARF_LK_RD,
			       fi->lock_owner, 0, 0, (uint32_t)fl->l_pid };

	range_of(fl, &lk);
	if (fl->l_type != F_UNLCK) {
		take(req, ino, &lk, sleep);
		return;
	}
	write_back(fs, ino);
	arf_fuse_cred_set(req);
	fuse_reply_err(req, arf_fuse_errno(arf_unlock(fs->c, n->ino, n->gen, &lk)));
}

static void op_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_lock lk = { ARF_LK_FLOCK, (op & LOCK_EX) ? ARF_LK_WR : ARF_LK_RD, fi->lock_owner,
			       0, ARF_LK_EOF, (uint32_t)fuse_req_ctx(req)->pid };

	if (op & LOCK_UN) {
		write_back(fs, ino);
		arf_fuse_cred_set(req);
		fuse_reply_err(req, arf_fuse_errno(arf_unlock(fs->c, n->ino, n->gen, &lk)));
		return;
	}
	if (!(op & (LOCK_SH | LOCK_EX))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	take(req, ino, &lk, !(op & LOCK_NB));
}

void arf_fuse_ops_locks(struct fuse_lowlevel_ops *ops)
{
	ops->getlk = op_getlk;
	ops->setlk = op_setlk;
	ops->flock = op_flock;
}

void arf_fuse_locks_want(struct arf_fuse *fs, struct fuse_conn_info *conn)
{
	(void)fs;
	conn->want |= (FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS) & conn->capable;
	if ((conn->capable & (FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS)) !=
	    (FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS))
		arf_fuse_log(FUSE_LOG_WARNING, "arf-fuse: the kernel cannot pass locks to the "
			     "filesystem: they are local to this mount");
}

void arf_fuse_locks_flush(struct arf_fuse *fs, struct arf_fuse_node *n, struct fuse_file_info *fi)
{
	struct arf_lock lk = { ARF_LK_FCNTL, ARF_LK_WR, fi->lock_owner, 0, ARF_LK_EOF, 0 };

	arf_unlock(fs->c, n->ino, n->gen, &lk); /* asks arfd only when the owner holds some */
}

void arf_fuse_locks_release(struct arf_fuse *fs, struct arf_fuse_node *n, struct fuse_file_info *fi)
{
	uint32_t nopen = 0;

	if (fi->flock_release) {
		struct arf_lock lk = { ARF_LK_FLOCK, ARF_LK_WR, fi->lock_owner, 0, ARF_LK_EOF, 0 };
		arf_unlock(fs->c, n->ino, n->gen, &lk);
	}
	arf_fuse_node_find(fs, n->ino, n->gen, &nopen);
	if (nopen <= 1) /* the last open goes: a lost lock is forgotten with it */
		arf_lock_forget_lost(fs->c, n->ino, n->gen);
}

int arf_fuse_locks_io(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	return arf_lock_lost(fs->c, n->ino, n->gen) ? EIO : 0;
}

void arf_fuse_locks_fini(struct arf_fuse *fs)
{
	pthread_mutex_lock(&waits_lock);
	for (;;) {
		int mine = 0;
		for (struct waitjob *j = waiting; j; j = j->next)
			if (j->fs == fs) {
				mine = 1;
				arf_lock_cancel(fs->c, j->wait_id);
			}
		if (!mine)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&waits_done, &waits_lock, &ts);
	}
	pthread_mutex_unlock(&waits_lock);
}
