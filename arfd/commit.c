/* SPDX-License-Identifier: MIT */
/*
 * arfd/commit — a mutation's way to the store, the group commit, and what
 * happens when the store refuses: fail-stop.
 *
 * Requests (dispatch.c) and programs' hooks (helpers.c) alike run an ops/
 * hook between arfd_txn_begin and arfd_txn_commit, under fs_lock.  The
 * commit writes the transaction to the store in that lock (data blocks to
 * the data log, the rest to RocksDB, so batches land in commit order,
 * numbered by a sequence that goes on across restarts) and only then lets
 * one-sided readers see it.  As NFSv3 does, a data write is unstable by
 * default: sealed at once (every client sees it) and answered before it
 * is durable, with the server's write verifier (its incarnation) and its
 * sequence, so that its client keeps the data until a COMMIT says it is
 * durable and re-sends it after a restart.  Its RocksDB part (tags, inode,
 * reply record) is held back and goes with the next batch -- the next
 * mutation that is not an unstable write, or the committer's flush before
 * each sync -- so a run of writes costs one RocksDB write, not one each
 * (store.h); a crash loses it with the write, which the client re-sends.
 * Every other mutation, and
 * every write on an [export] sync export, is sealed and answered once the
 * data log and the write-ahead log holding it are synced (pending.c): one
 * sync for every mutation waiting (group commit), run by the committer
 * thread, or by the request's own worker where that is quicker
 * (arfd_commit_wanted).  After a sync the data log's garbage is reclaimed
 * (store.h).
 *
 * An unstable write's blocks reach the data log after its reply has gone,
 * still under the lock (dispatch.c, store.h arfd_store_settle): the client
 * no longer waits for their copy into the page cache.  Should that copy
 * fail, the write was acknowledged as unstable only, and already visible
 * (sealed), as any unstable write is before a crash loses it; the export
 * fails as below, and the COMMIT the client sends for it answers EIO.
 *
 * Fail-stop.  The exported regions are changed in place before the write,
 * and nothing can take a change back out of them; so when RocksDB refuses
 * a write or a WAL sync (a full or failing disk), or a change could not
 * even be recorded (meta/txn.c out of memory), the regions hold something
 * that may never be durable.  arfd then stops serving the export rather
 * than let anyone rely on it: arfd_fail marks it failed (once, with the
 * reason, which `arfctl status` shows), logs it, and from then on
 *   - nothing is sealed any more: the objects of the failed transaction
 *     stay odd, so one-sided readers never accept them (they retry, then
 *     ask the server, which says EIO); objects sealed before stay as they
 *     were, and they are what RocksDB holds (but for unstable writes, sealed
 *     at once: one whose data log copy failed stays visible until a
 *     restart, as above);
 *   - what was held back from RocksDB is not written any more, so a sync
 *     covers only what RocksDB was given, and replies waiting beyond it (a
 *     COMMIT covering a held write) are sent as EIO;
 *   - every request and program run answers EIO (arfd_failed), since the
 *     server's own reads would see the change;
 *   - replies waiting for a sync that failed are sent as EIO, never as
 *     success; the WAL sync is not retried (after a failed fsync the kernel
 *     may have dropped the pages: a retry that succeeds proves nothing).
 * What was acknowledged before (committed, for data writes) is in the
 * store; restarting arfd rebuilds the regions from it and clients carry on
 * (writes not yet committed are re-sent by their clients on the new
 * incarnation, as after a crash).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "arfd.h"
#include "log.h"
#include "xattr.h"

void arfd_fail(struct arfd *d, const char *why)
{
	if (d->failed)
		return;
	snprintf(d->failure, sizeof(d->failure), "%s", why);
	__atomic_store_n(&d->failed, 1, __ATOMIC_RELEASE);
	arfd_pending_freeze(d->pending);
	arfd_log(ARFD_LOG_ERROR,
		 "export '%s' failed: %s; it serves no more: every request answers EIO and "
		 "nothing more is acknowledged (what was acknowledged is in RocksDB); restart "
		 "arfd once the cause is fixed", d->cfg.export_name, why);
	/* the committer answers the replies that wait for a sync */
	pthread_cond_signal(&d->commit_cond);
}

int arfd_txn_begin(struct arfd *d)
{
	if (d->failed)
		return -EIO;
	arf_meta_txn_begin(&d->fs);
	return 0;
}

uint64_t arfd_txn_commit(struct arfd *d, int unstable, int *rc)
{
	const struct arf_meta_dirty *list;
	char err[256];
	size_t n = arf_meta_txn_end(&d->fs, &list);

	if (arf_meta_txn_error(&d->fs)) {
		/* a change is in the regions that the list does not hold */
		arfd_fail(d, "out of memory recording a transaction");
		*rc = -EIO;
		return 0;
	}
	if (!n)
		return 0;
	arfd_xattr_txn(d, list, n); /* a freed inode's attributes go in the same batch */
	uint64_t seq = d->applied_seq + 1;
	if (arfd_store_put_txn(d->store, &d->fs, list, n, seq, unstable, err, sizeof(err))) {
		arfd_fail(d, err);
		*rc = -EIO;
		return 0;
	}
	d->applied_seq = seq;
	d->ctr.mutations++;
	d->ctr.objects_written += n;
	if (unstable) {
		/* written, not synced (NFS's unstable write): visible now */
		for (size_t i = 0; i < n; i++)
			if (list[i].region == ARF_REGION_META)
				arf_meta_obj_seal(d->fs.meta + list[i].off, list[i].len);
	} else if (arfd_pending_add_txn(d->pending, seq, list, n)) {
		/* its objects stay odd until a later transaction's commit seals
		 * them: one-sided readers ask the server meanwhile; nothing lost */
		arfd_log_limited(ARFD_LOG_WARN, "out of memory queueing seals: %zu objects stay "
				 "invisible to one-sided readers", n);
	}
	return seq;
}

/* After a sync (no lock held): the data log's reclamation.  A segment whose
 * live records were copied goes once a later sync has made the copies and
 * everything applied so far durable: ask for that sync. */
static void reclaim(struct arfd *d, uint64_t durable)
{
	char err[256];
	int rc = arfd_store_reclaim(d->store, durable, err, sizeof(err));

	arfd_fs_lock(d);
	if (rc < 0) {
		arfd_fail(d, err); /* the head segment may hold half a copy */
	} else if (rc > 0) {
		arfd_store_reclaim_wait(d->store, d->applied_seq);
		d->ctr.reclaims++;
		d->sync_forced = 1;
	}
	arfd_fs_unlock(d);
}

/* [server] test_commit_hold_ms (tests only): once a COMMIT came, the
 * sync waits first, no lock held; arfd_commit_wanted and arfd_commit_quick
 * leave every sync to the committer meanwhile.  Ends early when arfd
 * stops. */
static int hold_armed(const struct arfd *d)
{
	return d->cfg.test_commit_hold_ms && __atomic_load_n(&d->test_hold_armed, __ATOMIC_ACQUIRE);
}

static void test_hold(struct arfd *d)
{
	if (!hold_armed(d))
		return;
	for (int64_t left = d->cfg.test_commit_hold_ms;
	     left > 0 && !__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE); left -= 50) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One group commit, under fs_lock with d->syncing set (so one at a time);
 * the lock is let go during the sync and the replies' sending, and held
 * again on return.  With `hold` (the transport's thread, which must never
 * wait for the lock: lanes.c) the lock is kept throughout, so a quick sync
 * delays the workers a little rather than the transport wait behind a
 * control command; the data log's reclamation, where there is some, is
 * left to the committer (reclaim_due), which syncs and reclaims. */
static void commit_round(struct arfd *d, int hold)
{
	char err[256];
	struct arfd_reply *rep = NULL;
	uint64_t target = d->applied_seq; /* everything written so far */

	d->sync_forced = 0;
	d->reclaim_due = 0;
	if (!d->sync_failed) {
		/* unstable writes held back from RocksDB go first (under the
		 * lock: their objects come from the regions) -- not once the
		 * export failed: the regions may then hold the change RocksDB
		 * refused, and the held writes are lost as uncommitted writes
		 * are */
		int rc = arfd_failed(d) ? 0 : arfd_store_flush(d->store, &d->fs, err, sizeof(err));
		/* and so, once it failed, a sync covers only what RocksDB
		 * was given: the held writes' COMMITs hear EIO (below) */
		if (arfd_failed(d)) {
			uint64_t batched = arfd_store_batched_seq(d->store);
			if (batched < target)
				target = batched > d->durable_seq ? batched : d->durable_seq;
		}
		if (!hold)
			arfd_fs_unlock(d);
		if (!hold)
			test_hold(d);
		uint64_t t0 = mono_ns();
		if (!rc)
			rc = arfd_store_sync(d->store, err, sizeof(err));
		uint64_t took = mono_ns() - t0;
		if (!hold)
			arfd_fs_lock(d);
		/* atomic: read without the lock by arfd_commit_quick */
		__atomic_store_n(&d->sync_ns_avg, (d->sync_ns_avg * 7 + took) / 8, __ATOMIC_RELAXED);
		__atomic_store_n(&d->sync_ns_last, took, __ATOMIC_RELAXED);
		if (rc) {
			d->sync_failed = 1;
			arfd_fail(d, err);
		} else {
			d->ctr.syncs++;
			d->ctr.synced_txns += target - d->durable_seq;
			d->durable_seq = target;
			rep = arfd_pending_commit(d->pending, &d->fs, target);
		}
	}
	int failed = d->sync_failed;
	if (failed || arfd_failed(d)) {
		/* nothing more becomes durable: whoever waits hears EIO */
		rep = arfd_pending_join(rep, arfd_pending_fail(d->pending));
		d->sync_wanted = d->durable_seq;
	}
	if (hold) {
		arfd_pending_send(rep);
		if (!failed && !arfd_failed(d) && arfd_store_reclaim_wanted(d->store)) {
			/* the committer reclaims, after a sync of its own */
			d->reclaim_due = 1;
			pthread_cond_signal(&d->commit_cond);
		}
		return;
	}
	arfd_fs_unlock(d);
	arfd_pending_send(rep);
	if (!failed && !arfd_failed(d))
		reclaim(d, target);
	arfd_fs_lock(d);
}

static int commit_due(const struct arfd *d)
{
	return d->sync_wanted > d->durable_seq || d->sync_forced || d->reclaim_due;
}

/*
 * The committer hands the reply a second thread switch (the worker wakes
 * it, it wakes to send): on a 2-core machine about a third of a create's
 * cost.  So the worker whose reply waits runs the group commit itself when
 * no other commit is in progress, no request waits for a worker, and syncs
 * have been quick (the data directory on tmpfs, or a disk with a
 * write-back cache: under INLINE_SYNC_NS).  A slow sync stays with the
 * committer, so that the workers go on serving meanwhile, and everything
 * applied by then joins the next sync, as before.  While syncs are quick
 * the soft-NIC thread serves a create, mkdir, rename, a small unlink and
 * the like itself when the request lane is idle (lanes.c, ARFD_PROC_NAMING), and
 * so runs its group commit too, with no thread woken at all (creates over
 * tcp: 3.4-4.4k -> 5.4-5.6k/s, arfd's CPU 190-238 -> 140-148 us each).
 */
#define INLINE_SYNC_NS 100000u

int arfd_commit_quick(struct arfd *d)
{
	return !hold_armed(d) && !__atomic_load_n(&d->syncing, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&d->sync_ns_avg, __ATOMIC_RELAXED) <= INLINE_SYNC_NS &&
	       __atomic_load_n(&d->sync_ns_last, __ATOMIC_RELAXED) <= INLINE_SYNC_NS;
}

void arfd_commit_wanted(struct arfd *d, int transport)
{
	if (d->sync_wanted < d->applied_seq)
		d->sync_wanted = d->applied_seq;
	/* the transport's thread syncs only what is small: RocksDB's batch of
	 * a few changes, with no data written since the last sync (unstable
	 * writes held back, or appended to the data log, may be gigabytes
	 * to write and sync), nor reclamation pending (store.h) */
	if (d->syncing || d->sync_ns_avg > INLINE_SYNC_NS || hold_armed(d) ||
	    (transport && (d->sync_ns_last > INLINE_SYNC_NS || d->reclaim_due || d->sync_forced ||
			   !arfd_store_sync_small(d->store))) ||
	    arfd_lane_queued(d, ARFD_LANE_REQUEST) ||
	    __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
		pthread_cond_signal(&d->commit_cond);
		return;
	}
	__atomic_store_n(&d->syncing, 1, __ATOMIC_RELAXED);
	commit_round(d, transport);
	__atomic_store_n(&d->syncing, 0, __ATOMIC_RELAXED);
	if (commit_due(d) || __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE))
		pthread_cond_signal(&d->commit_cond); /* others came meanwhile */
}

void *arfd_committer_main(void *arg)
{
	struct arfd *d = arg;

	arfd_fs_lock(d);
	for (;;) {
		int stopping = __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE);
		if (d->syncing || (!commit_due(d) && !stopping)) {
			/* nothing to do, or a worker commits (it wakes us after) */
			arfd_fs_wait(d, &d->commit_cond);
			continue;
		}
		if (!commit_due(d))
			break; /* stopping, and nobody waits */
		__atomic_store_n(&d->syncing, 1, __ATOMIC_RELAXED);
		commit_round(d, 0);
		__atomic_store_n(&d->syncing, 0, __ATOMIC_RELAXED);
	}
	arfd_fs_unlock(d);
	return NULL;
}
