/* SPDX-License-Identifier: MIT */
/*
 * arfd/store — RocksDB (C API) as the durable copy of the exported regions.
 *
 * Keys: "format" (u32 store format), "incarnation" (u64), 'M' + big-endian
 * u64 offset -> a META object's bytes (sealed), 'D' + big-endian u32 block ->
 * a data block's 4096 bytes, 'R' + big-endian u32 slot -> a reply cache
 * record (replies.c).  At start the regions are rebuilt by copying
 * every 'M' and 'D' value to its offset.  A transaction's objects go in one
 * WriteBatch, so a crash never leaves half of a mutation.
 */
#ifndef ARFD_STORE_H
#define ARFD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "arf_meta_fs.h"

#define ARFD_STORE_FORMAT 1u

struct arfd_store;

/* Open (creating if missing) the database in dir.  Refuses a database of
 * another store format with a message.  Returns 0, ARF_EVERSION, -EBUSY
 * (another process has it open: RocksDB's lock) or -EIO. */
int arfd_store_open(const char *dir, struct arfd_store **out, char *err, size_t errlen);
void arfd_store_close(struct arfd_store *st); /* NULL ok */

/* Bump and durably record the incarnation number; returns it. */
int arfd_store_incarnation(struct arfd_store *st, uint64_t *out, char *err, size_t errlen);

/* Read the stored superblock, if any: returns 1 (found, copied), 0 (empty db)
 * or -EIO. */
int arfd_store_super(struct arfd_store *st, struct arf_meta_super *sb, char *err, size_t errlen);

/* Copy every stored object into the regions (bounds checked). */
int arfd_store_load(struct arfd_store *st, uint8_t *meta, uint64_t meta_size, uint8_t *data,
		    uint64_t data_size, uint64_t *nobjects, char *err, size_t errlen);

/* Write the objects of one transaction, taken from the live regions (META
 * objects are sealed in the copy), as one batch.  Not synced: see sync. */
int arfd_store_put_txn(struct arfd_store *st, struct arf_meta_fs *fs,
		       const struct arf_meta_dirty *list, size_t n, char *err, size_t errlen);

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

/* Make everything written so far durable (fsync of the write-ahead log). */
int arfd_store_sync(struct arfd_store *st, char *err, size_t errlen);

/* Test only (arfd's server.test_fail_write and test_fail_sync): from the
 * fail_write-th put_txn with objects and the fail_sync-th sync after this
 * call on, each fails with -EIO without touching RocksDB, as on a failing
 * disk (0 = never). */
void arfd_store_inject_faults(struct arfd_store *st, uint64_t fail_write, uint64_t fail_sync);

/* Compact the whole key range. */
void arfd_store_compact(struct arfd_store *st);

/* Compare the stored objects with the live regions (fsck): every stored
 * object must equal the region's bytes at its offset, and every live inode
 * must be stored.  Each difference goes to report (kind "regions-diverge").
 * Returns the number of differences, or -EIO with err; *compared counts the
 * objects looked at. */
int arfd_store_compare(struct arfd_store *st, const uint8_t *meta, uint64_t meta_size,
		       const uint8_t *data, uint64_t data_size,
		       void (*report)(void *ctx, const char *kind, const char *msg), void *ctx,
		       uint64_t *compared, char *err, size_t errlen);

#endif
