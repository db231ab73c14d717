/* SPDX-License-Identifier: MIT */
/*
 * arfd/datalog — file data off the metadata path: an append-only log of
 * data blocks, beside RocksDB (which keeps the metadata, tags included).
 *
 * The log is a directory of segment files (DIR/datalog/%016llx.seg).  Each
 * holds records: a segment header (the incarnation that opened it and the
 * length the previous segment had then), block records (block number, the
 * incarnation and transaction sequence that wrote it, its 4 KiB image) and
 * sync markers ("this incarnation's records are complete through sequence
 * S"); each record carries an XXH3 checksum of itself.  A block's live image
 * is its latest record that recovery accepts; earlier ones are garbage,
 * which reclamation removes by copying a segment's live records to the head
 * and deleting the segment once what made the rest dead is durable.
 *
 * Durability (store.c drives it): a transaction's blocks are appended
 * before its RocksDB batch is written, and a sync writes a marker,
 * fdatasyncs the log and only then syncs RocksDB's WAL.  So at recovery
 * the sequence RocksDB recovered (D) and what the log holds of the last
 * incarnation (complete through L, arfd_datalog_scan) bound what is whole:
 * through min(D, L) every block record is there.  Records above it, and
 * those of earlier incarnations above what each was found durable through,
 * are void (never replayed): a crashed incarnation's lost writes are what
 * clients re-send.
 *
 * In buffered mode ([server] test_power_loss) appended records stay in
 * arfd's memory until a sync, so a SIGKILL loses what a power cut would.
 *
 * Threads: appends and drops come from the request workers (under
 * arfd's fs_lock), syncs and reclamation from the committer (or a worker
 * running the group commit), a sync also from arfctl checkpoint's control
 * thread; the log has a lock of its own, and syncs run one at a time.
 * Replay happens before any of them run.
 */
#ifndef ARFD_DATALOG_H
#define ARFD_DATALOG_H

#include <stddef.h>
#include <stdint.h>

struct arfd_datalog;

/* Counters (monotonic where not said). */
struct arfd_datalog_stats {
	uint64_t bytes;           /* now: bytes in the segment files */
	uint64_t live_bytes;      /* now: of those, the records recovery would use */
	uint64_t segments;        /* now: segment files */
	uint64_t appended_bytes;  /* records appended by transactions since start */
	uint64_t syncs;           /* fdatasync rounds */
	uint64_t reclaimed_bytes; /* segment bytes deleted by reclamation since start */
	uint64_t copied_bytes;    /* live records rewritten by reclamation since start */
	uint64_t recycled;        /* heads made from a deleted segment's file since start */
};

/* Does recovery accept a block record written by incarnation inc at
 * transaction seq?  (store.c: what each incarnation was found durable
 * through.)  Nonzero = yes. */
typedef int (*arfd_datalog_valid_fn)(void *ctx, uint64_t inc, uint64_t seq);
/* Is block blk free (its tag says so)?  Its records are then dead. */
typedef int (*arfd_datalog_free_fn)(void *ctx, uint32_t blk);

/*
 * Open the log in dir (created if missing) for a data region of nblocks
 * blocks, segments of about segment_bytes; buffered: see above.  Nothing
 * is read yet.  0, or -errno with the reason in err.
 */
int arfd_datalog_open(const char *dir, uint32_t nblocks, uint64_t segment_bytes, int buffered,
		      struct arfd_datalog **out, char *err, size_t errlen);
/* Close (nothing is synced: sync first).  NULL ok. */
void arfd_datalog_close(struct arfd_datalog *l);

/*
 * Recovery, first step: read every segment and check every record.  *through
 * becomes the sequence through which incarnation inc's records are whole:
 * its last complete transaction or sync marker before the first damage
 * (a torn record, a segment shorter than its successor says), and
 * start - 1 when it has none.  0, or -EIO with err.
 */
int arfd_datalog_scan(struct arfd_datalog *l, uint64_t inc, uint64_t start, uint64_t *through,
		      char *err, size_t errlen);
/*
 * Recovery, second step (after scan): copy into data (data_size bytes) each
 * block's latest record that valid accepts, unless is_free says the block
 * is free; *loaded counts the blocks copied.  The records found become the
 * live set reclamation works from.  0, or -EIO with err.
 */
int arfd_datalog_replay(struct arfd_datalog *l, uint8_t *data, uint64_t data_size,
			arfd_datalog_valid_fn valid, arfd_datalog_free_fn is_free, void *ctx,
			uint64_t *loaded, char *err, size_t errlen);
/* Before replay: the data region holds already, for each block b with
 * inc[b] != 0, the image of its record (inc[b], seq[b]) (arrays of the
 * log's nblocks, kept by the caller through the replay): replay reads only
 * the blocks whose record is another, and zeroes a prefilled block no
 * record stands for.  NULL, NULL: none (the default). */
void arfd_datalog_prefill(struct arfd_datalog *l, const uint64_t *inc, const uint64_t *seq);
/* vol move's receiver (move_in.c), before the final round: the data
 * region filled from the log in dir as it stands -- every intact record
 * taken, the latest of each block -- and for each block the record its
 * image came from in inc[] and seq[] (nblocks each, zeroed by the caller;
 * 0 where none), for arfd_datalog_prefill at the volume's opening.  0 or
 * -errno with err. */
int arfd_datalog_fill(const char *dir, uint32_t nblocks, uint8_t *data, uint64_t data_size,
		      uint64_t *inc, uint64_t *seq, char *err, size_t errlen);
/*
 * Start appending as incarnation inc: cut damaged tails (what scan found
 * past the last whole record), sync them, open a new head segment.  Until
 * this call the log is read-only (arfctl fsck, arf-inject before writing).
 * 0, or -errno with err.
 */
int arfd_datalog_begin(struct arfd_datalog *l, uint64_t inc, char *err, size_t errlen);
/* Remove every segment (a new filesystem on a directory with an old log).
 * Before begin.  0 or -errno with err. */
int arfd_datalog_wipe(struct arfd_datalog *l, char *err, size_t errlen);

/*
 * Append the images of n blocks (blocks[], read from data) that transaction
 * (inc, seq) wrote; the last record is marked as its end.  csums (NULL:
 * computed here) are the blocks' XXH3-64 as their tags hold them.  flags
 * may hold ARFD_DATALOG_GC (records copied, not written: store.c's
 * conversion of an old store).  Not durable before arfd_datalog_sync.  0,
 * or -errno with err (a full or failing disk).
 */
#define ARFD_DATALOG_GC 0x2u
int arfd_datalog_append(struct arfd_datalog *l, uint64_t inc, uint64_t seq,
			const uint32_t *blocks, const uint64_t *csums, size_t n, const uint8_t *data,
			unsigned flags, char *err, size_t errlen);
/* Block blk was freed: its records are dead. */
void arfd_datalog_drop(struct arfd_datalog *l, uint32_t blk);
/*
 * Make everything appended so far durable, with a marker saying that
 * incarnation inc's records are complete through seq (when nothing was
 * appended since the last sync, the marker alone is written, not synced:
 * no fdatasync).  0, or -errno with
 * err (the caller fails the export: a failed fdatasync is not retried).
 */
int arfd_datalog_sync(struct arfd_datalog *l, uint64_t inc, uint64_t seq, char *err,
		      size_t errlen);

/*
 * Reclamation, driven by the committer after each sync that made
 * everything through durable durable:
 *   arfd_datalog_reclaim deletes the segments copied earlier whose wait is
 *   over (a sync since their copy, and durable >= the sequence their wait
 *   names), then, when the garbage exceeds the live bytes (and 4
 *   segments), copies the live records of the emptiest old segment to the
 *   head and returns 1: the caller then names, with arfd_datalog_reclaim_wait,
 *   the last sequence applied (everything that made the rest of that
 *   segment dead is at or below it) and has it synced.  Returns 0 when it
 *   copied nothing, or -errno with err.
 */
int arfd_datalog_reclaim(struct arfd_datalog *l, uint64_t durable, char *err, size_t errlen);
void arfd_datalog_reclaim_wait(struct arfd_datalog *l, uint64_t applied);
/* Would arfd_datalog_reclaim find something to do (a victim, a dead or,
 * when garbage is worth it, a mostly dead segment)?  Has anything been
 * written since the last sync (so that the next sync writes data back)? */
int arfd_datalog_reclaim_wanted(struct arfd_datalog *l);
int arfd_datalog_dirty(struct arfd_datalog *l);

/*
 * fsck: compare each live block's latest record with data; each block that
 * differs goes to report ("regions-diverge").  Returns the number of
 * differences (*compared counts the blocks looked at), or -EIO with err.
 */
int arfd_datalog_compare(struct arfd_datalog *l, const uint8_t *data, uint64_t data_size,
			 void (*report)(void *ctx, const char *kind, const char *msg), void *ctx,
			 uint64_t *compared, char *err, size_t errlen);

void arfd_datalog_stats(struct arfd_datalog *l, struct arfd_datalog_stats *s);
/* A copy of every segment, as long as it is now, in the new directory dir
 * (synced), under the log's locks: what a scan at this moment would read.
 * Closed segments, never written again, are hard links (a segment with
 * another link is not recycled); the head is copied.  The caller has made
 * everything appended durable (vol release). */
int arfd_datalog_copy(struct arfd_datalog *l, const char *dir, char *err, size_t errlen);
/* Delete the spare files kept for recycling (arfctl checkpoint gives their
 * space back; later heads are created afresh until reclamation keeps more). */
void arfd_datalog_drop_spares(struct arfd_datalog *l);

#endif
