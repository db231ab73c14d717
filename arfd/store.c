/* SPDX-License-Identifier: MIT */
/*
 * arfd/store: RocksDB persistence of the exported regions (see store.h).
 */
#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

struct arfd_store {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;   /* not synced: arfd_store_sync syncs */
	rocksdb_writeoptions_t *wo_sync;
	rocksdb_readoptions_t *ro;
	uint8_t *scratch;             /* sealed copy of one object */
	char stage_key[16];           /* a record for the next batch (arfd_store_stage) */
	size_t stage_klen;            /* 0: none */
	uint8_t *stage_val;
	size_t stage_vlen;
	/* fault injection (tests): the put_txn / sync call numbers (1 = the
	 * next) from which on each fails; 0 = never */
	uint64_t fail_write_at, fail_sync_at, writes, syncs;
};

static int fail(char *err, size_t errlen, const char *what, char *rerr, int code)
{
	snprintf(err, errlen, "rocksdb: %s: %s", what, rerr ? rerr : "failed");
	free(rerr);
	return code;
}

void arfd_store_close(struct arfd_store *st)
{
	if (!st)
		return;
	if (st->db)
		rocksdb_close(st->db);
	if (st->opts)
		rocksdb_options_destroy(st->opts);
	if (st->wo)
		rocksdb_writeoptions_destroy(st->wo);
	if (st->wo_sync)
		rocksdb_writeoptions_destroy(st->wo_sync);
	if (st->ro)
		rocksdb_readoptions_destroy(st->ro);
	free(st->scratch);
	free(st->stage_val);
	free(st);
}

int arfd_store_open(const char *dir, struct arfd_store **out, char *err, size_t errlen)
{
	struct arfd_store *st = calloc(1, sizeof(*st));
	char *rerr = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!st)
		goto fail;
	st->scratch = malloc(ARF_BLOCK_SIZE);
	st->opts = rocksdb_options_create();
	st->wo = rocksdb_writeoptions_create();
	st->wo_sync = rocksdb_writeoptions_create();
	st->ro = rocksdb_readoptions_create();
	if (!st->scratch || !st->opts || !st->wo || !st->wo_sync || !st->ro)
		goto fail;
	rocksdb_options_set_create_if_missing(st->opts, 1);
	rocksdb_options_increase_parallelism(st->opts, 2);
	rocksdb_options_set_max_open_files(st->opts, 256);
	rocksdb_writeoptions_set_sync(st->wo_sync, 1);
	st->db = rocksdb_open(st->opts, dir, &rerr);
	if (!st->db) {
		if (rerr && strstr(rerr, "LOCK")) {
			/* "IO error: While lock file: DIR/LOCK: Resource temporarily
			 * unavailable": another process has the database open */
			snprintf(err, errlen, "data directory %s is in use by another arfd "
				 "(RocksDB: %s)", dir, rerr);
			free(rerr);
			rc = -EBUSY;
		} else {
			rc = fail(err, errlen, dir, rerr, -EIO);
		}
		goto fail;
	}

	size_t vlen = 0;
	char *v = rocksdb_get(st->db, st->ro, "format", 6, &vlen, &rerr);
	if (rerr) {
		rc = fail(err, errlen, "read format", rerr, -EIO);
		goto fail;
	}
	if (v) {
		uint32_t fmt = 0;
		if (vlen == 4)
			memcpy(&fmt, v, 4);
		free(v);
		if (fmt != ARFD_STORE_FORMAT) {
			snprintf(err, errlen,
				 "%s holds an ARF store of format %u; this arfd reads format %u only",
				 dir, fmt, ARFD_STORE_FORMAT);
			rc = ARF_EVERSION;
			goto fail;
		}
	} else {
		uint32_t fmt = ARFD_STORE_FORMAT;
		rocksdb_put(st->db, st->wo_sync, "format", 6, (const char *)&fmt, 4, &rerr);
		if (rerr) {
			rc = fail(err, errlen, "write format", rerr, -EIO);
			goto fail;
		}
	}
	*out = st;
	return 0;
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	arfd_store_close(st);
	return rc;
}

int arfd_store_incarnation(struct arfd_store *st, uint64_t *out, char *err, size_t errlen)
{
	char *rerr = NULL;
	size_t vlen = 0;
	uint64_t inc = 0;
	char *v = rocksdb_get(st->db, st->ro, "incarnation", 11, &vlen, &rerr);

	if (rerr)
		return fail(err, errlen, "read incarnation", rerr, -EIO);
	if (v && vlen == 8)
		memcpy(&inc, v, 8);
	free(v);
	inc++;
	rocksdb_put(st->db, st->wo_sync, "incarnation", 11, (const char *)&inc, 8, &rerr);
	if (rerr)
		return fail(err, errlen, "write incarnation", rerr, -EIO);
	*out = inc;
	return 0;
}

static void key_meta(char k[9], uint64_t off)
{
	k[0] = 'M';
	for (int i = 0; i < 8; i++)
		k[1 + i] = (char)(off >> (56 - 8 * i));
}

static void key_data(char k[5], uint32_t blk)
{
	k[0] = 'D';
	for (int i = 0; i < 4; i++)
		k[1 + i] = (char)(blk >> (24 - 8 * i));
}

int arfd_store_super(struct arfd_store *st, struct arf_meta_super *sb, char *err, size_t errlen)
{
	char k[9], *rerr = NULL;
	size_t vlen = 0;

	key_meta(k, 0);
	char *v = rocksdb_get(st->db, st->ro, k, sizeof(k), &vlen, &rerr);
	if (rerr)
		return fail(err, errlen, "read superblock", rerr, -EIO);
	if (!v)
		return 0;
	if (vlen != sizeof(*sb)) {
		free(v);
		snprintf(err, errlen, "stored superblock has %zu bytes, expected %zu", vlen,
			 sizeof(*sb));
		return -EIO;
	}
	memcpy(sb, v, sizeof(*sb));
	free(v);
	return 1;
}

int arfd_store_load(struct arfd_store *st, uint8_t *meta, uint64_t meta_size, uint8_t *data,
		    uint64_t data_size, uint64_t *nobjects, char *err, size_t errlen)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ro);
	uint64_t n = 0;
	int rc = 0;

	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		uint64_t off = 0;

		if (klen == 9 && k[0] == 'M') {
			for (int i = 0; i < 8; i++)
				off = off << 8 | k[1 + i];
			if (!arf_range_ok(off, vlen, meta_size)) {
				snprintf(err, errlen,
					 "stored META object at %llu (+%zu) lies outside the region (%llu bytes)",
					 (unsigned long long)off, vlen, (unsigned long long)meta_size);
				rc = -EIO;
				break;
			}
			memcpy(meta + off, v, vlen);
			n++;
		} else if (klen == 5 && k[0] == 'D') {
			for (int i = 0; i < 4; i++)
				off = off << 8 | k[1 + i];
			off *= ARF_BLOCK_SIZE;
			if (vlen != ARF_BLOCK_SIZE || !arf_range_ok(off, vlen, data_size)) {
				snprintf(err, errlen, "stored data block %llu is malformed or out of range",
					 (unsigned long long)(off / ARF_BLOCK_SIZE));
				rc = -EIO;
				break;
			}
			memcpy(data + off, v, vlen);
			n++;
		}
	}
	if (!rc) {
		char *rerr = NULL;
		rocksdb_iter_get_error(it, &rerr);
		if (rerr)
			rc = fail(err, errlen, "iterate", rerr, -EIO);
	}
	rocksdb_iter_destroy(it);
	*nobjects = n;
	return rc;
}

void arfd_store_stage(struct arfd_store *st, const void *key, size_t klen, const void *val,
		      size_t vlen)
{
	uint8_t *copy = malloc(vlen ? vlen : 1);

	arfd_store_unstage(st);
	if (!copy || klen > sizeof(st->stage_key)) {
		free(copy); /* the record is lost, not the transaction: a cache miss later */
		return;
	}
	memcpy(st->stage_key, key, klen);
	memcpy(copy, val, vlen);
	st->stage_klen = klen;
	st->stage_val = copy;
	st->stage_vlen = vlen;
}

void arfd_store_unstage(struct arfd_store *st)
{
	free(st->stage_val);
	st->stage_val = NULL;
	st->stage_klen = 0;
}

int arfd_store_each(struct arfd_store *st, char prefix,
		    int (*fn)(void *ctx, const void *key, size_t klen, const void *val, size_t vlen),
		    void *ctx, char *err, size_t errlen)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ro);
	char *rerr = NULL;
	int rc = 0;

	for (rocksdb_iter_seek(it, &prefix, 1); rocksdb_iter_valid(it) && !rc; rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		if (!klen || k[0] != prefix)
			break;
		rc = fn(ctx, k, klen, v, vlen);
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return fail(err, errlen, "iterate", rerr, -EIO);
	return rc;
}

int arfd_store_put_txn(struct arfd_store *st, struct arf_meta_fs *fs,
		       const struct arf_meta_dirty *list, size_t n, char *err, size_t errlen)
{
	rocksdb_writebatch_t *wb;
	char *rerr = NULL;

	if (!n) {
		arfd_store_unstage(st);
		return 0;
	}
	if (st->fail_write_at && ++st->writes >= st->fail_write_at) {
		snprintf(err, errlen, "rocksdb: write: injected failure (server.test_fail_write)");
		return -EIO;
	}
	wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < n; i++) {
		const struct arf_meta_dirty *d = &list[i];
		if (d->region == ARF_REGION_META) {
			char k[9];
			if (d->len > ARF_BLOCK_SIZE)
				continue; /* no META object is larger than a page */
			key_meta(k, d->off);
			memcpy(st->scratch, fs->meta + d->off, d->len);
			if (((struct arf_meta_hdr *)st->scratch)->ver & 1)
				arf_meta_obj_seal(st->scratch, d->len);
			rocksdb_writebatch_put(wb, k, sizeof(k), (const char *)st->scratch, d->len);
		} else if (d->region == ARF_REGION_DATA) {
			char k[5];
			key_data(k, (uint32_t)(d->off / ARF_BLOCK_SIZE));
			rocksdb_writebatch_put(wb, k, sizeof(k), (const char *)fs->data + d->off,
					       ARF_BLOCK_SIZE);
		}
	}
	if (st->stage_klen) /* the reply cache's record: with the transaction or not at all */
		rocksdb_writebatch_put(wb, st->stage_key, st->stage_klen, (const char *)st->stage_val,
				       st->stage_vlen);
	arfd_store_unstage(st);
	rocksdb_write(st->db, st->wo, wb, &rerr);
	rocksdb_writebatch_destroy(wb);
	if (rerr)
		return fail(err, errlen, "write", rerr, -EIO);
	return 0;
}

int arfd_store_sync(struct arfd_store *st, char *err, size_t errlen)
{
	char *rerr = NULL;

	if (st->fail_sync_at && ++st->syncs >= st->fail_sync_at) {
		snprintf(err, errlen, "rocksdb: sync: injected failure (server.test_fail_sync)");
		return -EIO;
	}
	rocksdb_flush_wal(st->db, 1, &rerr);
	if (rerr)
		return fail(err, errlen, "sync", rerr, -EIO);
	return 0;
}

void arfd_store_inject_faults(struct arfd_store *st, uint64_t fail_write, uint64_t fail_sync)
{
	st->fail_write_at = fail_write;
	st->fail_sync_at = fail_sync;
	st->writes = st->syncs = 0;
}

void arfd_store_compact(struct arfd_store *st)
{
	rocksdb_compact_range(st->db, NULL, 0, NULL, 0);
}

int arfd_store_compare(struct arfd_store *st, const uint8_t *meta, uint64_t meta_size,
		       const uint8_t *data, uint64_t data_size,
		       void (*report)(void *ctx, const char *kind, const char *msg), void *ctx,
		       uint64_t *compared, char *err, size_t errlen)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ro);
	const struct arf_meta_super *sb = (const struct arf_meta_super *)(const void *)meta;
	uint64_t n = 0;
	int diffs = 0;
	char msg[160];

	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		uint64_t off = 0;
		const uint8_t *base;
		uint64_t size;
		const char *what;

		if (klen == 9 && k[0] == 'M') {
			base = meta;
			size = meta_size;
			what = "META object";
		} else if (klen == 5 && k[0] == 'D') {
			base = data;
			size = data_size;
			what = "data block";
		} else {
			continue;
		}
		for (size_t i = 1; i < klen; i++)
			off = off << 8 | k[i];
		if (k[0] == 'D')
			off *= ARF_BLOCK_SIZE;
		n++;
		if (!arf_range_ok(off, vlen, size) || memcmp(base + off, v, vlen)) {
			snprintf(msg, sizeof(msg), "%s at offset %llu (%zu bytes) differs from RocksDB", what,
				 (unsigned long long)off, vlen);
			diffs++;
			if (report)
				report(ctx, "regions-diverge", msg);
		}
	}
	char *rerr = NULL;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return fail(err, errlen, "iterate", rerr, -EIO);
	/* live inodes that RocksDB does not have */
	for (uint64_t ino = 1; ino <= sb->n_inodes; ino++) {
		uint64_t off = arf_meta_inode_off(sb, ino);
		const struct arf_meta_inode *in = (const void *)(meta + off);
		if (!in->ino)
			continue;
		char key[9], *v;
		size_t vlen;
		key_meta(key, off);
		v = rocksdb_get(st->db, st->ro, key, sizeof(key), &vlen, &rerr);
		if (rerr)
			return fail(err, errlen, "read", rerr, -EIO);
		if (!v) {
			snprintf(msg, sizeof(msg), "live inode %llu is not in RocksDB",
				 (unsigned long long)ino);
			diffs++;
			if (report)
				report(ctx, "regions-diverge", msg);
		}
		free(v);
	}
	*compared = n;
	return diffs;
}
