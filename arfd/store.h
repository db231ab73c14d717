/* SPDX-License-Identifier: MIT */
/*
 * arfd/store — the durable copy of the exported regions: metadata in
 * RocksDB (C API), file data in an append-only data log beside it
 * (datalog.h), so that data blocks never ride RocksDB's write-ahead log,
 * memtables and compactions.
 *
 * RocksDB keys: "format" (u32 store format), "incarnation" (u64, the last
 * incarnation that started), "inc_start" (u64, the first transaction
 * sequence it could use), "seq" (u64 incarnation + u64 sequence of the last
 * transaction written: every batch carries it, so what RocksDB recovers
 * after a crash says how far it got), 'E' + big-endian u64 incarnation ->
 * u64 (the sequence that incarnation was found durable through when the
 * next one started), 'M' + big-endian u64 offset -> a META object's bytes
 * (sealed) other than tags, 'T' + big-endian u32 group -> the tags of 16
 * blocks (a write changes its tags together: one key, not 16), 'R' +
 * big-endian u32 slot -> a reply cache record (replies.c); 'X' and 'L'
 * (below) are arfd's own too.  Format 1 kept data blocks as 'D' + big-endian u32 block; such
 * a store is converted at its first start (arfd_store_begin).
 *
 * A transaction's data blocks are appended to the data log, then its
 * objects and its sequence go to RocksDB in one WriteBatch (a crash never
 * leaves half of a mutation there), neither synced; arfd_store_sync makes
 * everything written durable (the data log first, then RocksDB's WAL).
 *
 * Recovery (arfd_store_load): the META objects are copied to their offsets,
 * then the data log is replayed.  What is whole after a crash is every
 * transaction through min(D, L): D the sequence RocksDB recovered, L how
 * far the data log holds the last incarnation's blocks.  That is what the
 * crashed incarnation is then recorded as durable through, and the data of
 * its later transactions is void: their clients re-send those writes.  A
 * block whose tag (from RocksDB) names an image the log no longer has (a
 * lost write) is zeroed, and its tag says so, never another file's bytes.
 */
#ifndef ARFD_STORE_H
#define ARFD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "arf_meta_fs.h"

/* 3: a new filesystem's empty hash-chain heads are not stored (load makes
 * them); a store of format 2 holds them all and is read as it is.
 * 4: the data log's segments may be seeded and recycled (datalog.c), which
 * an arfd of format 3 would read as torn, losing their blocks: so a store
 * of format 2 or 3 becomes 4 when an arfd begins writing it (before its
 * first segment), and an older arfd refuses it.  Read as 2 and 3 are. */
#define ARFD_STORE_FORMAT 4u

/* arfd_store_open flags */
#define ARFD_STORE_POWER_LOSS 0x1u /* test only: keep everything unsynced in this
				    * process (RocksDB's manual_wal_flush, the data log
				    * buffered), so a SIGKILL loses what a power cut would */
#define ARFD_STORE_BLOB       0x2u /* bench only: data blocks as 'D' keys in RocksDB's
				    * integrated BlobDB instead of the data log (the
				    * alternative bench/writecost.py measures); a store
				    * keeps the choice it was made with */

struct arfd_store;

/* Counters of the store (monotonic where not said). */
struct arfd_store_stats {
	uint64_t wal_bytes;          /* bytes of RocksDB write batches (the WAL's payload) */
	uint64_t batches;            /* RocksDB write batches of transactions */
	uint64_t held_txns;          /* unstable writes held back for a later batch */
	uint64_t log_bytes;          /* now: bytes in data log segments */
	uint64_t log_live_bytes;     /* now: of those, live block records */
	uint64_t log_segments;       /* now: segment files */
	uint64_t log_appended_bytes; /* records appended since start */
	uint64_t log_syncs;          /* data log fdatasync rounds */
	uint64_t log_reclaimed_bytes;/* segment bytes deleted by reclamation */
	uint64_t log_copied_bytes;   /* live records rewritten by reclamation */
	uint64_t log_recycled;       /* heads made from a deleted segment's file */
};

/* Open (creating if missing) the store in dir.  Refuses a store of another
 * format than 1 or 2 with a message.  Returns 0, ARF_EVERSION, -EBUSY
 * (another process has it open: RocksDB's lock) or -EIO. */
int arfd_store_open(const char *dir, unsigned flags, struct arfd_store **out, char *err,
		    size_t errlen);
void arfd_store_close(struct arfd_store *st); /* NULL ok */

/* Read the stored superblock, if any: returns 1 (found, copied), 0 (empty db)
 * or -EIO. */
int arfd_store_super(struct arfd_store *st, struct arf_meta_super *sb, char *err, size_t errlen);

/* Rebuild the regions (see above; bounds checked).  *nobjects counts the
 * META objects and data blocks copied.  Reads only: nothing on disk
 * changes before arfd_store_begin. */
int arfd_store_load(struct arfd_store *st, uint8_t *meta, uint64_t meta_size, uint8_t *data,
		    uint64_t data_size, uint64_t *nobjects, char *err, size_t errlen);

/* What load found (for the log): the incarnation that ran last, the
 * sequence RocksDB recovered, what that incarnation is durable through,
 * and the blocks zeroed because their write was lost. */
struct arfd_store_recovery {
	uint64_t prev_inc, seq, through, repaired;
};
void arfd_store_recovered(struct arfd_store *st, struct arfd_store_recovery *r);

/* One more record (key, value; copied) for the next put_txn's batch, so it
 * is written with that transaction or not at all: the reply cache's
 * (replies.c).  A put_txn with no objects writes nothing, and drops it, as
 * does unstage.  One at a time: staging again replaces it. */
void arfd_store_stage(struct arfd_store *st, const void *key, size_t klen, const void *val,
		      size_t vlen);
void arfd_store_unstage(struct arfd_store *st);

/* Call fn for every record whose key starts with prefix (a byte the regions'
 * keys do not use, such as 'R').  fn's nonzero return stops the walk and is
 * returned.  0, fn's value, or -EIO with err. */
int arfd_store_each(struct arfd_store *st, char prefix,
		    int (*fn)(void *ctx, const void *key, size_t klen, const void *val, size_t vlen),
		    void *ctx, char *err, size_t errlen);

/*
 * Start a new incarnation, for a data region of nblocks blocks (after
 * load, or on an empty store before the format): record what the last
 * one was durable through, bump and durably record the incarnation
 * (*incarnation), cut damaged data log tails, convert a format-1 store,
 * and write the repairs load made (lost blocks zeroed).  Then
 * arfd_store_seq() is the last sequence used.  0 or -errno with err.
 */
int arfd_store_begin(struct arfd_store *st, uint32_t nblocks, uint64_t *incarnation, char *err,
		     size_t errlen);
/* The sequence of the last transaction written (or recovered). */
uint64_t arfd_store_seq(struct arfd_store *st);
/* What incarnation inc (an earlier one) was found durable through at the
 * next start: 0 with *through, or -ENOENT when the store has no record of
 * it. */
int arfd_store_durable_through(struct arfd_store *st, uint64_t inc, uint64_t *through);

/* Write the objects of transaction seq (the last one's + 1), taken from the
 * live regions (META objects are sealed in the copy): data blocks to the
 * data log, the rest to RocksDB as one batch.  Not synced: see sync.
 * defer (an unstable data write): the RocksDB part may be held back and
 * go with the next batch -- the next transaction not held, or
 * arfd_store_flush -- so that a run of writes costs one RocksDB write, not
 * one each; a crash loses it as it loses any unstable write (the clients
 * re-send it). */
int arfd_store_put_txn(struct arfd_store *st, struct arf_meta_fs *fs,
		       const struct arf_meta_dirty *list, size_t n, uint64_t seq, int defer,
		       char *err, size_t errlen);

/* The data log's copy of a held transaction's blocks, which put_txn leaves
 * to its caller so that an unstable write's reply goes first (the copy of a
 * 1 MiB write into the page cache was a fifth of arfd's time, and the
 * client waited for it): call it before fs_lock is let go, the blocks
 * still as that transaction left them in the region (put_txn and flush
 * refuse to go on, failing, where it was not).  Until it has run, the
 * store's sequence (and so a sync's mark of how far the log is whole)
 * stays at the transaction before.  Nonzero: the append failed, and the
 * export must fail. */
int arfd_store_settle(struct arfd_store *st, char *err, size_t errlen);
/* Whether put_txn left blocks to arfd_store_settle. */
int arfd_store_pending(const struct arfd_store *st);

/* The last transaction whose RocksDB part is written (held ones are not,
 * until arfd_store_flush): all a sync can make durable when no flush may
 * run any more (a failed export, commit.c). */
uint64_t arfd_store_batched_seq(struct arfd_store *st);

/* Write what put_txn held back, as one batch (not synced), taking the
 * objects from the regions: so call it under arfd's fs_lock, before a sync
 * that must cover every transaction applied.  0 when nothing is held. */
int arfd_store_flush(struct arfd_store *st, struct arf_meta_fs *fs, char *err, size_t errlen);

/* The format's transaction (arf_meta_fs_format's dirty list): stored as a
 * transaction is, less the empty hash-chain heads, 262,144 of a default
 * filesystem's 262,146 objects, which load makes again where RocksDB has
 * none. */
int arfd_store_put_format(struct arfd_store *st, struct arf_meta_fs *fs,
			  const struct arf_meta_dirty *list, size_t n, uint64_t seq, char *err,
			  size_t errlen);

/* Make everything written so far durable: the data log, then RocksDB's WAL. */
int arfd_store_sync(struct arfd_store *st, char *err, size_t errlen);

/* A copy of the store in the new directory dir: a RocksDB checkpoint (its
 * memtable flushed first) and a copy of the data log (dir/datalog), which
 * a store opened on dir recovers as one state.  The caller holds the
 * filesystem lock with everything applied made durable (arfd_store_flush,
 * arfd_store_sync), so that the two agree (vol release, arfd/volumes.c). */
int arfd_store_clone(struct arfd_store *st, const char *dir, char *err, size_t errlen);
/* Before arfd_store_load: the data region it is given holds these blocks'
 * images already (arfd_datalog_prefill: vol move's receiver); the arrays
 * are kept by the caller through the load.  NULL, NULL: none. */
void arfd_store_prefill(struct arfd_store *st, const uint64_t *inc, const uint64_t *seq);

/*
 * Data log reclamation, from the committer after a sync that made
 * everything through durable durable.  Returns 1 when it copied a
 * segment's live records: the caller then calls arfd_store_reclaim_wait
 * with the last sequence applied and has it synced (the segment goes at
 * a later call, once that is durable).  0: nothing copied; -errno with err.
 */
int arfd_store_reclaim(struct arfd_store *st, uint64_t durable, char *err, size_t errlen);
void arfd_store_reclaim_wait(struct arfd_store *st, uint64_t applied);
/* Would arfd_store_reclaim have work (commit.c asks the committer then)? */
int arfd_store_reclaim_wanted(struct arfd_store *st);
/* Under fs_lock: would the next sync be small -- no unstable writes held
 * back, nothing written to the data log since its last sync? */
int arfd_store_sync_small(struct arfd_store *st);

void arfd_store_stats(struct arfd_store *st, struct arfd_store_stats *s);

/* Test only (arfd's server.test_fail_write, test_fail_sync and
 * test_fail_append): from the fail_write-th put_txn with objects, the
 * fail_sync-th sync and the fail_append-th data log append of a
 * transaction's blocks after this call on, each fails with -EIO without
 * touching RocksDB or the log, as on a failing disk (0 = never). */
void arfd_store_inject_faults(struct arfd_store *st, uint64_t fail_write, uint64_t fail_sync,
			      uint64_t fail_append);

/*
 * Keys of arfd's own beside the regions' objects: 'X' extended attributes
 * (arfd/xattr.c), 'L' lock clients (arfd/locks.c).  Neither is a region
 * object: load and compare skip them.
 *
 * queue: a put (val) or a delete (val NULL) for the next put_txn,
 * which writes it in the same batch as the transaction's objects, so a
 * crash keeps both or neither (the caller holds fs_lock, as for put_txn).
 * flush_staged writes what is queued on its own.  put: one key now
 * (deleted when val is NULL), synced when sync is set.  scan: fn for every
 * key starting with prefix, in key order, until fn returns non-zero (which
 * scan returns).  All return 0, -ENOMEM (queue) or -EIO with err.
 */
int arfd_store_queue(struct arfd_store *st, const void *key, size_t klen, const void *val,
		     size_t vlen);
int arfd_store_flush_staged(struct arfd_store *st, char *err, size_t errlen);
int arfd_store_put(struct arfd_store *st, const void *key, size_t klen, const void *val,
		   size_t vlen, int sync, char *err, size_t errlen);
int arfd_store_scan(struct arfd_store *st, const void *prefix, size_t plen,
		    int (*fn)(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val,
			      size_t vlen),
		    void *ctx, char *err, size_t errlen);

/* Compact RocksDB's whole key range, and give back the data log's spare
 * segment files. */
void arfd_store_compact(struct arfd_store *st);

/* Compare the stored objects with the live regions (fsck): every stored
 * META object must equal the region's bytes at its offset, every live data
 * block its latest data log record, and every live inode must be stored.
 * Each difference goes to report (kind "regions-diverge").  Returns the
 * number of differences, or -EIO with err; *compared counts the objects
 * looked at.  The caller has made everything durable first. */
int arfd_store_compare(struct arfd_store *st, const uint8_t *meta, uint64_t meta_size,
		       const uint8_t *data, uint64_t data_size,
		       void (*report)(void *ctx, const char *kind, const char *msg), void *ctx,
		       uint64_t *compared, char *err, size_t errlen);

#endif
