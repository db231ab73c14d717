/* SPDX-License-Identifier: MIT */
/*
 * arfd/store: metadata in RocksDB, data in the data log (see store.h).
 * About 1,300 lines, kept whole because load, begin, put_txn and the held
 * unstable writes (hold, flush) share the key layout, the tag groups and
 * the recovery state (through, repairs, format conversion) that store.h
 * describes; the data log itself is apart (datalog.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <limits.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datalog.h"
#include "store.h"

#define SEGMENT_BYTES (64ull << 20)
/* Tags go to RocksDB in groups: a 1 MiB write changes 256 tags, and 256
 * keys cost more in RocksDB's memtable than all else the write does. */
#define TAG_GROUP 16u
#define TAG_BYTES sizeof(struct arf_meta_tag)
#define GROUP_BYTES (TAG_GROUP * TAG_BYTES)
/* Unstable writes held back from RocksDB, at most: transactions, tag
 * groups (4096: 256 MiB of blocks, a 2 MiB batch), other META objects
 * (inodes: one a file written).  Past a bound the batch goes at once. */
#define HOLD_TXNS 256u
#define HOLD_GROUPS 4096u
#define HOLD_OBJS 64u

struct dend {
	uint64_t inc, through;
};

struct arfd_store {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;   /* not synced: arfd_store_sync syncs */
	rocksdb_writeoptions_t *wo_sync;
	rocksdb_readoptions_t *ro;
	char dir[512];
	unsigned flags;               /* ARFD_STORE_* */
	uint32_t format;              /* as found: 1 is converted at begin */
	uint8_t *scratch;             /* sealed copy of one object */
	struct arfd_datalog *log;     /* opened by load or begin */
	uint64_t prev_inc;            /* the incarnation that ran last (0: none) */
	uint64_t prev_start;          /* its first sequence */
	uint64_t inc;                 /* ours, once begun */
	uint64_t seq;                 /* last transaction written or recovered (atomic) */
	uint64_t through;             /* what prev_inc is durable through (load) */
	int loaded;
	struct dend *dends;           /* 'E' records, by incarnation */
	size_t ndends;
	uint32_t *blocks;             /* one transaction's data blocks */
	uint64_t *csums;              /* and their hashes */
	size_t blkcap;
	/* a held transaction's blocks not yet in the data log (put_txn's
	 * defer; arfd_store_settle appends them, before fs_lock is let go) */
	size_t pend_nb;
	uint64_t pend_seq;
	const uint8_t *pend_data;
	uint64_t held_from;           /* the first held transaction's seq */
	uint64_t *tagmark;            /* bitmap: blocks whose tag the transaction wrote */
	uint32_t *groups;             /* one transaction's tag groups put so far */
	size_t ngroups;
	uint32_t *conv;               /* format 1: blocks loaded from 'D' keys */
	size_t nconv;
	const uint64_t *pre_inc, *pre_seq; /* load: the data region's prefilled images
					 * (arfd_store_prefill) */
	uint32_t *repair;             /* load: blocks zeroed for lost writes */
	size_t nrepair;
	uint8_t *meta;                /* the regions load filled (for begin's repairs) */
	uint8_t *data;
	uint64_t wal_bytes;
	uint64_t batches, held_total;  /* stats: transactions' batches, holds */
	char stage_key[16];           /* a record for the next batch (arfd_store_stage) */
	size_t stage_klen;            /* 0: none */
	uint8_t *stage_val;
	size_t stage_vlen;
	/* fault injection (tests): the put_txn / sync call numbers (1 = the
	 * next) from which on each fails; 0 = never */
	uint64_t fail_write_at, fail_sync_at, writes, syncs;
	uint64_t fail_append_at, appends;
	rocksdb_writebatch_t *staged; /* keys of arfd's own (xattrs, held reply records) for
				       * the next batch */
	/* unstable writes held back from RocksDB (arfd_store_put_txn's defer):
	 * the tag groups and other META objects they changed, put from the
	 * regions when the batch goes (arfd_store_flush or the next
	 * transaction that is not held); their reply records wait in staged */
	uint64_t *held_bits;          /* bitmap by tag group */
	uint32_t *held_groups;        /* the same, listed */
	size_t nheld_groups;
	struct held_obj { uint64_t off; uint32_t len; } held_objs[HOLD_OBJS];
	size_t nheld_objs;
	size_t held_txns;             /* 0: nothing held */
};

static int fail(char *err, size_t errlen, const char *what, char *rerr, int code)
{
	snprintf(err, errlen, "rocksdb: %s: %s", what, rerr ? rerr : "failed");
	free(rerr);
	return code;
}

static void be64(char *k, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		k[i] = (char)(v >> (56 - 8 * i));
}

static uint64_t get_be(const unsigned char *k, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | k[i];
	return v;
}

void arfd_store_close(struct arfd_store *st)
{
	if (!st)
		return;
	arfd_datalog_close(st->log);
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
	if (st->staged)
		rocksdb_writebatch_destroy(st->staged);
	free(st->scratch);
	free(st->dends);
	free(st->blocks);
	free(st->csums);
	free(st->tagmark);
	free(st->groups);
	free(st->conv);
	free(st->repair);
	free(st->stage_val);
	free(st->held_bits);
	free(st->held_groups);
	free(st);
}

/* A u64 record ("incarnation", "inc_start"): 0 when absent. */
static int get_u64(struct arfd_store *st, const char *key, uint64_t *v, char *err, size_t errlen)
{
	char *rerr = NULL;
	size_t vlen = 0;
	char *p = rocksdb_get(st->db, st->ro, key, strlen(key), &vlen, &rerr);

	if (rerr)
		return fail(err, errlen, key, rerr, -EIO);
	*v = 0;
	if (p && vlen == 8)
		memcpy(v, p, 8);
	free(p);
	return 0;
}

/* What the store says about earlier runs: incarnation, sequence, 'E' records. */
static int read_state(struct arfd_store *st, char *err, size_t errlen)
{
	char *rerr = NULL;
	size_t vlen = 0;
	int rc;

	if ((rc = get_u64(st, "incarnation", &st->prev_inc, err, errlen)) ||
	    (rc = get_u64(st, "inc_start", &st->prev_start, err, errlen)))
		return rc;
	char *v = rocksdb_get(st->db, st->ro, "seq", 3, &vlen, &rerr);
	if (rerr)
		return fail(err, errlen, "read seq", rerr, -EIO);
	if (v && vlen == 16)
		memcpy(&st->seq, v + 8, 8);
	free(v);
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ro);
	for (rocksdb_iter_seek(it, "E", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *val = rocksdb_iter_value(it, &vlen);
		if (klen != 9 || k[0] != 'E')
			break;
		if (vlen != 8)
			continue;
		struct dend *d = realloc(st->dends, (st->ndends + 1) * sizeof(*d));
		if (!d) {
			rocksdb_iter_destroy(it);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		st->dends = d;
		d[st->ndends].inc = get_be(k + 1, 8);
		memcpy(&d[st->ndends].through, val, 8);
		st->ndends++;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return fail(err, errlen, "read incarnations", rerr, -EIO);
	return 0;
}

int arfd_store_open(const char *dir, unsigned flags, struct arfd_store **out, char *err,
		    size_t errlen)
{
	struct arfd_store *st = calloc(1, sizeof(*st));
	char *rerr = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	if (!st)
		goto fail;
	snprintf(st->dir, sizeof(st->dir), "%s", dir);
	st->flags = flags;
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
	/* INFO: the library's default here is DEBUG, a line in LOG (a write)
	 * for every FlushWAL, so every durable request.  (The memtable stays
	 * the skiplist: a vector memtable made a 4 KiB write ~15% cheaper but
	 * sorted the format's 262,144 objects at the first read, 2.3 s more
	 * for every new filesystem's start.) */
	rocksdb_options_set_info_log_level(st->opts, 1);
	/* A transaction rewrites the same few keys (the inode, its tag
	 * groups, the sequence, a reply-cache slot): updated in place, a key
	 * is one memtable entry however often it is written, so the skiplist
	 * stays small, each insert a short search, and it fills, flushes and
	 * compacts far less often.  (Its search was ~16% of arfd's CPU for a
	 * 4 KiB write while the format's 262,144 hash-chain heads sat in the
	 * memtable; format 3 no longer stores them, see put_format.)  The
	 * price, no point-in-time iterator while writes go on, is none here:
	 * arfd iterates only at start and under the filesystem lock (fsck),
	 * and RocksDB's flushes read memtables no longer written.  In-place
	 * updates need writes to the memtable one at a time, as arfd's are
	 * anyway (one transaction at a time). */
	rocksdb_options_set_allow_concurrent_memtable_write(st->opts, 0);
	rocksdb_options_set_inplace_update_support(st->opts, 1);
	if (flags & ARFD_STORE_POWER_LOSS)
		rocksdb_options_set_manual_wal_flush(st->opts, 1);
	if (flags & ARFD_STORE_BLOB) {
		/* the measured alternative (bench/writecost.py): data blocks as
		 * RocksDB values in its integrated BlobDB */
		rocksdb_options_set_enable_blob_files(st->opts, 1);
		rocksdb_options_set_min_blob_size(st->opts, ARF_BLOCK_SIZE);
		rocksdb_options_set_blob_file_size(st->opts, 64u << 20);
		rocksdb_options_set_enable_blob_gc(st->opts, 1);
	}
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
		if (fmt > ARFD_STORE_FORMAT || fmt < 1) {
			snprintf(err, errlen,
				 "%s holds an ARF store of format %u; this arfd reads formats 2 to %u "
				 "(and converts format 1)", dir, fmt, ARFD_STORE_FORMAT);
			rc = ARF_EVERSION;
			goto fail;
		}
		st->format = fmt;
	} else {
		uint32_t fmt = ARFD_STORE_FORMAT;
		rocksdb_put(st->db, st->wo_sync, "format", 6, (const char *)&fmt, 4, &rerr);
		if (rerr) {
			rc = fail(err, errlen, "write format", rerr, -EIO);
			goto fail;
		}
		st->format = fmt;
	}
	if ((rc = read_state(st, err, errlen)))
		goto fail;
	{
		uint64_t blob = 0, want = (flags & ARFD_STORE_BLOB) != 0;
		if ((rc = get_u64(st, "blobstore", &blob, err, errlen)))
			goto fail;
		char *p = rocksdb_get(st->db, st->ro, "M\0\0\0\0\0\0\0\0", 9, &vlen, &rerr);
		free(p);
		if (rerr) {
			rc = fail(err, errlen, "read superblock", rerr, -EIO);
			goto fail;
		}
		if (p && blob != want) {
			snprintf(err, errlen, "%s keeps its data %s; [server] test_blob_store must be %s",
				 dir, blob ? "in RocksDB's BlobDB" : "in the data log",
				 blob ? "true" : "false");
			rc = -EINVAL;
			goto fail;
		}
		if (!p && want)
			rocksdb_put(st->db, st->wo_sync, "blobstore", 9, (const char *)&want, 8, &rerr);
		if (rerr) {
			rc = fail(err, errlen, "write blobstore", rerr, -EIO);
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

uint64_t arfd_store_seq(struct arfd_store *st)
{
	return __atomic_load_n(&st->seq, __ATOMIC_ACQUIRE);
}

int arfd_store_durable_through(struct arfd_store *st, uint64_t inc, uint64_t *through)
{
	for (size_t i = 0; i < st->ndends; i++)
		if (st->dends[i].inc == inc) {
			*through = st->dends[i].through;
			return 0;
		}
	return -ENOENT;
}

static void key_meta(char k[9], uint64_t off)
{
	k[0] = 'M';
	be64(k + 1, off);
}

static void key_tags(char k[5], uint32_t group)
{
	k[0] = 'T';
	for (int i = 0; i < 4; i++)
		k[1 + i] = (char)(group >> (24 - 8 * i));
}

/* The bytes of tag group g in meta (clipped to the last block). */
static uint64_t group_off(const struct arf_meta_super *sb, uint32_t g)
{
	return arf_meta_tag_off(sb, g * TAG_GROUP);
}

static size_t group_len(const struct arf_meta_super *sb, uint32_t g)
{
	uint32_t n = sb->n_blocks - g * TAG_GROUP;
	return (n < TAG_GROUP ? n : TAG_GROUP) * TAG_BYTES;
}

/* Put tag group g, from meta, with every tag in it sealed (a tag an
 * earlier, not yet durable transaction changed is odd in the region). */
static void put_group(struct arfd_store *st, rocksdb_writebatch_t *wb,
		      const struct arf_meta_super *sb, const uint8_t *meta, uint32_t g)
{
	char k[5];
	size_t len = group_len(sb, g);

	memcpy(st->scratch, meta + group_off(sb, g), len);
	for (size_t o = 0; o < len; o += TAG_BYTES)
		if (((struct arf_meta_hdr *)(st->scratch + o))->ver & 1)
			arf_meta_obj_seal(st->scratch + o, TAG_BYTES);
	key_tags(k, g);
	rocksdb_writebatch_put(wb, k, sizeof(k), (const char *)st->scratch, len);
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

static int open_log(struct arfd_store *st, uint32_t nblocks, char *err, size_t errlen)
{
	char p[600];

	if (st->log)
		return 0;
	snprintf(p, sizeof(p), "%s/datalog", st->dir);
	return arfd_datalog_open(p, nblocks, SEGMENT_BYTES, (st->flags & ARFD_STORE_POWER_LOSS) != 0,
				 &st->log, err, errlen);
}

/* Recovery's rule for a data log record (datalog.h). */
static int record_valid(void *ctx, uint64_t inc, uint64_t seq)
{
	struct arfd_store *st = ctx;
	uint64_t through;

	if (inc == st->prev_inc)
		return seq <= st->through;
	return arfd_store_durable_through(st, inc, &through) == 0 && seq <= through;
}

struct tags {
	const uint8_t *meta;
	const struct arf_meta_super *sb;
};

static const struct arf_meta_tag *tag_of(const uint8_t *meta, const struct arf_meta_super *sb,
					 uint32_t blk)
{
	return (const void *)(meta + arf_meta_tag_off(sb, blk));
}

static int block_free(void *ctx, uint32_t blk)
{
	struct tags *t = ctx;
	return tag_of(t->meta, t->sb, blk)->ino == 0;
}

static int is_free_cb(void *ctx, uint32_t blk)
{
	struct arfd_store *st = ctx;
	struct tags t = { st->meta, (const void *)st->meta };
	return block_free(&t, blk);
}

static int push_u32(uint32_t **a, size_t *n, uint32_t v)
{
	if (*n >= 64 ? !(*n & (*n - 1)) : !*n) { /* full at 64, 128, 256, ... */
		size_t cap = *n ? *n * 2 : 64;
		uint32_t *x = realloc(*a, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		*a = x;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/* The data log's scan, on a thread of its own while RocksDB's objects are
 * copied into the regions (they share nothing: on two cores a volume opens
 * in about two thirds of the time; vol move's pause is mostly an opening). */
struct log_scan {
	struct arfd_store *st;
	uint32_t nblocks;
	uint64_t through;
	int rc;
	char err[600];
};

static void *log_scan_main(void *arg)
{
	struct log_scan *j = arg;

	j->rc = open_log(j->st, j->nblocks, j->err, sizeof(j->err));
	if (!j->rc)
		j->rc = arfd_datalog_scan(j->st->log, j->st->prev_inc, j->st->prev_start, &j->through,
					  j->err, sizeof(j->err));
	return NULL;
}

int arfd_store_load(struct arfd_store *st, uint8_t *meta, uint64_t meta_size, uint8_t *data,
		    uint64_t data_size, uint64_t *nobjects, char *err, size_t errlen)
{
	rocksdb_iterator_t *it;
	const struct arf_meta_super *sb = (const void *)meta;
	uint64_t n = 0;
	int rc = 0;
	struct arf_meta_super stored;
	struct log_scan job = { .st = st };
	pthread_t scanner;
	int scanning = 0;

	/* the data log's geometry from the stored superblock (checked against
	 * the loaded one below) */
	if (st->format != 1 && !(st->flags & ARFD_STORE_BLOB) &&
	    arfd_store_super(st, &stored, err, errlen) == 1) {
		job.nblocks = stored.n_blocks;
		scanning = !pthread_create(&scanner, NULL, log_scan_main, &job);
	}
	it = rocksdb_create_iterator(st->db, st->ro);

	*nobjects = 0;
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		uint64_t off;

		if (klen == 9 && k[0] == 'M') {
			off = get_be(k + 1, 8);
			if (!arf_range_ok(off, vlen, meta_size)) {
				snprintf(err, errlen,
					 "stored META object at %llu (+%zu) lies outside the region (%llu bytes)",
					 (unsigned long long)off, vlen, (unsigned long long)meta_size);
				rc = -EIO;
				break;
			}
			memcpy(meta + off, v, vlen);
			n++;
		} else if (klen == 5 && k[0] == 'T') {
			/* after every 'M' key: a tag group overrides the M tags of
			 * a converted store */
			uint32_t g = (uint32_t)get_be(k + 1, 4);
			if (g >= (sb->n_blocks + TAG_GROUP - 1) / TAG_GROUP || vlen != group_len(sb, g) ||
			    !arf_range_ok(group_off(sb, g), vlen, meta_size)) {
				snprintf(err, errlen, "stored tag group %u is malformed or out of range", g);
				rc = -EIO;
				break;
			}
			memcpy(meta + group_off(sb, g), v, vlen);
			n++;
		} else if (klen == 5 && k[0] == 'D' && (st->format == 1 || (st->flags & ARFD_STORE_BLOB))) {
			off = get_be(k + 1, 4) * ARF_BLOCK_SIZE;
			if (vlen != ARF_BLOCK_SIZE || !arf_range_ok(off, vlen, data_size)) {
				snprintf(err, errlen, "stored data block %llu is malformed or out of range",
					 (unsigned long long)(off / ARF_BLOCK_SIZE));
				rc = -EIO;
				break;
			}
			memcpy(data + off, v, vlen);
			if (st->format == 1 &&
			    push_u32(&st->conv, &st->nconv, (uint32_t)(off / ARF_BLOCK_SIZE))) {
				snprintf(err, errlen, "out of memory");
				rc = -ENOMEM;
				break;
			}
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
	if (scanning)
		pthread_join(scanner, NULL);
	if (!rc && scanning && job.rc) {
		snprintf(err, errlen, "%s", job.err);
		rc = job.rc;
	}
	if (!rc && scanning && job.nblocks != sb->n_blocks) {
		snprintf(err, errlen, "stored superblock changed while the data log was read");
		rc = -EIO;
	}
	if (rc)
		return rc;
	if (meta_size < sizeof(*sb) || (uint64_t)sb->n_blocks * ARF_BLOCK_SIZE > data_size ||
	    arf_meta_tag_off(sb, sb->n_blocks) > meta_size ||
	    !arf_range_ok(sb->off_entries, (uint64_t)sb->n_buckets * sizeof(struct arf_meta_dirent),
			  meta_size)) {
		snprintf(err, errlen, "stored superblock does not fit the regions");
		return -EIO;
	}
	/* the empty hash-chain heads a format-3 store leaves out: a head never
	 * stored is still all zero here (a stored object never is) */
	for (uint32_t b = 0; b < sb->n_buckets; b++) {
		struct arf_meta_dirent *e = (void *)(meta + arf_meta_entry_off(sb, b));
		if (e->h.ver)
			continue;
		e->next = ARF_META_NONE;
		arf_meta_obj_seal(e, sizeof(*e)); /* as the format left it: version 2 */
	}
	st->meta = meta;
	st->data = data;

	/* the data log: how far the last run's blocks are whole, then each
	 * block's latest image from what is whole */
	st->through = st->seq;
	if (st->format != 1 && !(st->flags & ARFD_STORE_BLOB)) {
		uint64_t through = job.through, blocks = 0;
		if (!scanning && ((rc = open_log(st, sb->n_blocks, err, errlen)) ||
				  (rc = arfd_datalog_scan(st->log, st->prev_inc, st->prev_start,
							  &through, err, errlen))))
			return rc;
		if (st->prev_inc && through < st->through)
			st->through = through;
		arfd_datalog_prefill(st->log, st->pre_inc, st->pre_seq);
		rc = arfd_datalog_replay(st->log, data, data_size, record_valid, is_free_cb, st,
					 &blocks, err, errlen);
		arfd_datalog_prefill(st->log, NULL, NULL);
		if (rc)
			return rc;
		n += blocks;
	}

	/* RocksDB got further than the data log (D > L): the transactions in
	 * between have their metadata but lost their blocks.  A live block
	 * whose bytes are not what its tag says lost its write: zero it and say
	 * so in its tag, so that nobody reads another file's old bytes or a
	 * checksum failure; its client re-sends the write.  Otherwise a
	 * mismatch is damage, left for fsck to report. */
	struct tags t = { meta, sb };
	for (uint32_t b = 0; st->through < st->seq && b < sb->n_blocks; b++) {
		struct arf_meta_tag *tag = (void *)(meta + arf_meta_tag_off(sb, b));
		if (block_free(&t, b))
			continue;
		uint8_t *blk = data + (uint64_t)b * ARF_BLOCK_SIZE;
		if (arf_meta_block_csum(blk) == tag->data_csum)
			continue;
		memset(blk, 0, ARF_BLOCK_SIZE);
		arf_meta_obj_begin(tag, sizeof(*tag));
		tag->data_csum = arf_meta_block_csum(blk);
		arf_meta_obj_seal(tag, sizeof(*tag));
		if (push_u32(&st->repair, &st->nrepair, b)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	st->loaded = 1;
	*nobjects = n;
	return 0;
}

void arfd_store_recovered(struct arfd_store *st, struct arfd_store_recovery *r)
{
	r->prev_inc = st->prev_inc;
	r->seq = arfd_store_seq(st);
	r->through = st->through;
	r->repaired = st->nrepair;
}

/* Write a batch (synced when sync), flushing RocksDB's buffered WAL too. */
static int write_batch(struct arfd_store *st, rocksdb_writebatch_t *wb, int sync, const char *what,
		       char *err, size_t errlen)
{
	char *rerr = NULL;
	size_t len = 0;

	rocksdb_writebatch_data(wb, &len);
	rocksdb_write(st->db, sync ? st->wo_sync : st->wo, wb, &rerr);
	if (!rerr && sync && (st->flags & ARFD_STORE_POWER_LOSS))
		rocksdb_flush_wal(st->db, 1, &rerr);
	if (rerr)
		return fail(err, errlen, what, rerr, -EIO);
	st->wal_bytes += len;
	return 0;
}

static void put_seq(rocksdb_writebatch_t *wb, uint64_t inc, uint64_t seq)
{
	char v[16];

	memcpy(v, &inc, 8);
	memcpy(v + 8, &seq, 8);
	rocksdb_writebatch_put(wb, "seq", 3, v, sizeof(v));
}

int arfd_store_begin(struct arfd_store *st, uint32_t nblocks, uint64_t *incarnation, char *err,
		     size_t errlen)
{
	rocksdb_writebatch_t *wb;
	char k[9];
	int rc;

	int blob = (st->flags & ARFD_STORE_BLOB) != 0;
	if (!blob && (rc = open_log(st, nblocks, err, errlen)))
		return rc;
	if (!blob && !st->loaded && (rc = arfd_datalog_wipe(st->log, err, errlen)))
		return rc; /* a new filesystem: a stray log is nobody's */
	uint64_t inc = st->prev_inc + 1, seq = arfd_store_seq(st);

	/* the last run's durable end, and who runs now, from which sequence */
	wb = rocksdb_writebatch_create();
	if (st->prev_inc) {
		k[0] = 'E';
		be64(k + 1, st->prev_inc);
		rocksdb_writebatch_put(wb, k, 9, (const char *)&st->through, 8);
	}
	uint64_t start = seq + 1;
	rocksdb_writebatch_put(wb, "incarnation", 11, (const char *)&inc, 8);
	rocksdb_writebatch_put(wb, "inc_start", 9, (const char *)&start, 8);
	/* formats 2 and 3 become 4 before this run writes a segment an older
	 * arfd could not read (store.h); format 1 becomes 4 at its conversion */
	uint32_t fmt = ARFD_STORE_FORMAT;
	if (st->format == 2 || st->format == 3)
		rocksdb_writebatch_put(wb, "format", 6, (const char *)&fmt, 4);
	rc = write_batch(st, wb, 1, "write incarnation", err, errlen);
	rocksdb_writebatch_destroy(wb);
	if (rc)
		return rc;
	if (st->format == 2 || st->format == 3)
		st->format = fmt;
	if (st->prev_inc) {
		struct dend *d = realloc(st->dends, (st->ndends + 1) * sizeof(*d));
		if (!d) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		st->dends = d;
		d[st->ndends++] = (struct dend){ st->prev_inc, st->through };
	}
	st->inc = inc;
	if (blob) {
		*incarnation = inc;
		return 0;
	}
	if ((rc = arfd_datalog_begin(st->log, inc, err, errlen)))
		return rc;

	if (st->format == 1) {
		/* convert: the blocks of 'D' keys into the data log, then drop
		 * the keys.  A crash in between converts again. */
		struct tags t = { st->meta, (const void *)st->meta };
		size_t live = 0;
		for (size_t i = 0; st->meta && i < st->nconv; i++)
			if (!block_free(&t, st->conv[i]))
				st->conv[live++] = st->conv[i];
		if ((rc = arfd_datalog_append(st->log, inc, seq, st->conv, NULL, live, st->data,
					      ARFD_DATALOG_GC, err, errlen)) ||
		    (rc = arfd_datalog_sync(st->log, inc, seq, err, errlen)))
			return rc;
		wb = rocksdb_writebatch_create();
		rocksdb_writebatch_delete_range(wb, "D", 1, "E", 1);
		if (st->meta) { /* tags: from one key each to groups */
			const struct arf_meta_super *sb = (const void *)st->meta;
			char k0[9], k1[9];
			for (uint32_t g = 0; g * TAG_GROUP < sb->n_blocks; g++)
				put_group(st, wb, sb, st->meta, g);
			key_meta(k0, sb->off_tags);
			key_meta(k1, arf_meta_tag_off(sb, sb->n_blocks));
			rocksdb_writebatch_delete_range(wb, k0, 9, k1, 9);
		}
		rocksdb_writebatch_put(wb, "format", 6, (const char *)&fmt, 4);
		rc = write_batch(st, wb, 1, "convert format 1", err, errlen);
		rocksdb_writebatch_destroy(wb);
		if (rc)
			return rc;
		st->format = fmt;
	}
	if (st->nrepair) {
		/* the zeroed blocks and their tags, as a transaction */
		const struct arf_meta_super *sb = (const void *)st->meta;
		seq++;
		if ((rc = arfd_datalog_append(st->log, inc, seq, st->repair, NULL, st->nrepair, st->data, 0,
					      err, errlen)))
			return rc;
		wb = rocksdb_writebatch_create();
		for (size_t i = 0; i < st->nrepair; i++)
			if (i == 0 || st->repair[i] / TAG_GROUP != st->repair[i - 1] / TAG_GROUP)
				put_group(st, wb, sb, st->meta, st->repair[i] / TAG_GROUP);
		put_seq(wb, inc, seq);
		rc = write_batch(st, wb, 0, "write repairs", err, errlen);
		rocksdb_writebatch_destroy(wb);
		__atomic_store_n(&st->seq, seq, __ATOMIC_RELEASE);
		if (rc || (rc = arfd_store_sync(st, err, errlen)))
			return rc;
	}
	*incarnation = inc;
	return 0;
}

/* Was tag group g put in this batch already?  If not, remember it.  (A
 * linear look: a transaction touches few groups out of order.) */
static int group_seen(struct arfd_store *st, uint32_t g)
{
	for (size_t i = 0; i < st->ngroups; i++)
		if (st->groups[i] == g)
			return 1;
	if (push_u32(&st->groups, &st->ngroups, g))
		return 0; /* out of memory: put it again, harmless */
	return 0;
}

/* Is the META object at off a block's tag?  Its block number if so. */
static int tag_block(const struct arf_meta_super *sb, const struct arf_meta_dirty *d,
		     uint32_t *blk)
{
	if (d->len != sizeof(struct arf_meta_tag) || d->off < sb->off_tags)
		return 0;
	uint64_t i = (d->off - sb->off_tags) / sizeof(struct arf_meta_tag);
	if (i >= sb->n_blocks || (d->off - sb->off_tags) % sizeof(struct arf_meta_tag))
		return 0;
	*blk = (uint32_t)i;
	return 1;
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

/* ---- unstable writes held back -------------------------------------------- */

static int held_group(const struct arfd_store *st, uint32_t g)
{
	return st->held_bits && (st->held_bits[g / 64] >> (g % 64)) & 1;
}

/* One pass over a transaction's META objects for hold: without apply,
 * count the tag groups (*newg, an upper bound: once per tag) and objects
 * (*newo) not held yet, and return -1 for a freed block; with apply, hold
 * them. */
static int hold_pass(struct arfd_store *st, struct arf_meta_fs *fs,
		     const struct arf_meta_dirty *list, size_t n, int apply, size_t *newg,
		     size_t *newo)
{
	for (size_t i = 0; i < n; i++) {
		const struct arf_meta_dirty *d = &list[i];
		uint32_t blk;
		if (d->region != ARF_REGION_META || d->len > ARF_BLOCK_SIZE)
			continue;
		if (tag_block(fs->sb, d, &blk)) {
			uint32_t g = blk / TAG_GROUP;
			if (!((const struct arf_meta_tag *)(fs->meta + d->off))->ino)
				return -1; /* a freed block: its records' end goes with the batch */
			if (held_group(st, g))
				continue;
			(*newg)++;
			if (apply) {
				st->held_bits[g / 64] |= 1ull << (g % 64);
				st->held_groups[st->nheld_groups++] = g;
			}
			continue;
		}
		size_t j = 0;
		while (j < st->nheld_objs && st->held_objs[j].off != d->off)
			j++;
		if (j == st->nheld_objs) {
			(*newo)++;
			if (apply)
				st->held_objs[st->nheld_objs++] = (struct held_obj){ d->off, d->len };
		} else if (apply && st->held_objs[j].len < d->len) {
			st->held_objs[j].len = d->len;
		}
	}
	return 0;
}

/*
 * Hold transaction list back from RocksDB: its blocks are in the data log
 * already; its tag groups and other META objects are remembered (each
 * once) and put from the regions by the batch that next goes, with the
 * sequence of the last transaction in it; its reply record waits in
 * staged.  Until then a crash loses it as it loses any unstable write:
 * recovery takes what is whole through min(RocksDB's sequence, the log's),
 * and clients re-send the rest.  Nonzero if held; 0 when the transaction
 * must go now (a freed block, a bound reached, out of memory).
 */
static int hold(struct arfd_store *st, struct arf_meta_fs *fs, const struct arf_meta_dirty *list,
		size_t n)
{
	uint32_t ngroups = (fs->sb->n_blocks + TAG_GROUP - 1) / TAG_GROUP;
	size_t newg = 0, newo = 0;

	if (st->held_txns >= HOLD_TXNS)
		return 0;
	if (!st->held_bits) {
		st->held_bits = calloc((ngroups + 63) / 64, 8);
		st->held_groups = malloc(HOLD_GROUPS * sizeof(*st->held_groups));
		if (!st->held_bits || !st->held_groups) {
			free(st->held_bits);
			free(st->held_groups);
			st->held_bits = NULL;
			st->held_groups = NULL;
			return 0;
		}
	}
	if (hold_pass(st, fs, list, n, 0, &newg, &newo) ||
	    st->nheld_groups + newg > HOLD_GROUPS || st->nheld_objs + newo > HOLD_OBJS)
		return 0;
	if (st->stage_klen && arfd_store_queue(st, st->stage_key, st->stage_klen, st->stage_val,
					       st->stage_vlen))
		return 0;
	arfd_store_unstage(st);
	hold_pass(st, fs, list, n, 1, &newg, &newo);
	st->held_txns++;
	st->held_total++;
	return 1;
}

/* Put what is held into wb, from the regions as they are now. */
static void put_held(struct arfd_store *st, struct arf_meta_fs *fs, rocksdb_writebatch_t *wb)
{
	for (size_t i = 0; i < st->nheld_groups; i++)
		put_group(st, wb, fs->sb, fs->meta, st->held_groups[i]);
	for (size_t i = 0; i < st->nheld_objs; i++) {
		char k[9];
		key_meta(k, st->held_objs[i].off);
		memcpy(st->scratch, fs->meta + st->held_objs[i].off, st->held_objs[i].len);
		if (((struct arf_meta_hdr *)st->scratch)->ver & 1)
			arf_meta_obj_seal(st->scratch, st->held_objs[i].len);
		rocksdb_writebatch_put(wb, k, sizeof(k), (const char *)st->scratch,
				       st->held_objs[i].len);
	}
}

/* The batch with what was held went (or failed: the export fails then). */
static void release_held(struct arfd_store *st)
{
	for (size_t i = 0; i < st->nheld_groups; i++)
		st->held_bits[st->held_groups[i] / 64] = 0;
	st->nheld_groups = 0;
	st->nheld_objs = 0;
	st->held_txns = 0;
}

/* Blocks left to arfd_store_settle that it never appended: a bug in its
 * caller.  Appended now they could be newer images under the old
 * checksums (a later transaction may have changed the region), which the
 * next start would take for a torn tail and cut off with everything after
 * it; so refuse, and the export fails instead. */
static int unsettled(struct arfd_store *st, char *err, size_t errlen)
{
	if (!st->pend_nb)
		return 0;
	st->pend_nb = 0;
	snprintf(err, errlen, "data log: transaction %" PRIu64 "'s blocks were never appended "
		 "(arfd_store_settle not called: a bug)", st->pend_seq);
	return -EIO;
}

uint64_t arfd_store_batched_seq(struct arfd_store *st)
{
	return st->held_txns ? st->held_from - 1 : arfd_store_seq(st);
}

/* Transaction seq's blocks (st->blocks, st->csums) to the data log. */
static int append_txn(struct arfd_store *st, uint64_t seq, size_t nb, const uint8_t *data,
		      char *err, size_t errlen)
{
	if (st->fail_append_at && ++st->appends >= st->fail_append_at) {
		snprintf(err, errlen, "data log: write: injected failure (server.test_fail_append)");
		return -EIO;
	}
	return arfd_datalog_append(st->log, st->inc, seq, st->blocks, st->csums, nb, data, 0, err,
				   errlen);
}

int arfd_store_put_txn(struct arfd_store *st, struct arf_meta_fs *fs,
		       const struct arf_meta_dirty *list, size_t n, uint64_t seq, int defer,
		       char *err, size_t errlen)
{
	rocksdb_writebatch_t *wb;
	size_t nb = 0;
	int rc;

	if ((rc = unsettled(st, err, errlen)))
		return rc;
	if (!n) {
		arfd_store_unstage(st);
		return 0;
	}
	if (st->fail_write_at && ++st->writes >= st->fail_write_at) {
		snprintf(err, errlen, "rocksdb: write: injected failure (server.test_fail_write)");
		return -EIO;
	}
	if (n > st->blkcap) {
		uint32_t *b = realloc(st->blocks, n * sizeof(*b));
		uint64_t *c = b ? realloc(st->csums, n * sizeof(*c)) : NULL;
		if (b)
			st->blocks = b;
		if (!c) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		st->csums = c;
		st->blkcap = n;
	}
	if (!st->tagmark && !(st->tagmark = calloc((fs->sb->n_blocks + 63) / 64, 8))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* each block's hash, for its data log record: its tag's checksum when
	 * the transaction wrote the tag too (every ops/ write does), computed
	 * otherwise (arf-inject changes bytes behind the tag's back) */
	for (size_t i = 0; i < n; i++) {
		uint32_t blk;
		if (list[i].region == ARF_REGION_DATA)
			st->blocks[nb++] = (uint32_t)(list[i].off / ARF_BLOCK_SIZE);
		else if (tag_block(fs->sb, &list[i], &blk))
			st->tagmark[blk / 64] |= 1ull << (blk % 64);
	}
	for (size_t i = 0; i < nb; i++) {
		uint32_t b = st->blocks[i];
		st->csums[i] = (st->tagmark[b / 64] >> (b % 64)) & 1
				       ? arf_meta_tag_ptr(fs, b)->data_csum
				       : arf_meta_block_csum(fs->data + (uint64_t)b * ARF_BLOCK_SIZE);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t blk;
		if (list[i].region == ARF_REGION_META && tag_block(fs->sb, &list[i], &blk))
			st->tagmark[blk / 64] = 0;
	}
	if (defer && st->log && hold(st, fs, list, n)) {
		/* held: no batch names these blocks before the next put_txn or
		 * flush, and the caller appends them before either can run,
		 * once its reply is on its way (arfd_store_settle) */
		if (st->held_txns == 1)
			st->held_from = seq;
		st->pend_nb = nb;
		st->pend_seq = seq;
		st->pend_data = fs->data;
		if (!nb)
			__atomic_store_n(&st->seq, seq, __ATOMIC_RELEASE);
		return 0;
	}
	/* the blocks first: a batch RocksDB recovers never names blocks the
	 * log lost for want of ordering */
	if (nb && st->log && (rc = append_txn(st, seq, nb, fs->data, err, errlen)))
		return rc;
	wb = st->staged ? st->staged : rocksdb_writebatch_create();
	st->staged = NULL;
	put_held(st, fs, wb);
	for (size_t i = 0; i < nb && !st->log; i++) { /* test_blob_store */
		char k[5] = { 'D', (char)(st->blocks[i] >> 24), (char)(st->blocks[i] >> 16),
			      (char)(st->blocks[i] >> 8), (char)st->blocks[i] };
		rocksdb_writebatch_put(wb, k, 5, (const char *)fs->data +
				       (uint64_t)st->blocks[i] * ARF_BLOCK_SIZE, ARF_BLOCK_SIZE);
	}
	uint32_t last_group = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct arf_meta_dirty *d = &list[i];
		char k[9];
		uint32_t blk;
		if (d->region != ARF_REGION_META || d->len > ARF_BLOCK_SIZE)
			continue; /* no META object is larger than a page */
		if (tag_block(fs->sb, d, &blk)) {
			if (st->log && !((const struct arf_meta_tag *)(fs->meta + d->off))->ino)
				arfd_datalog_drop(st->log, blk); /* freed: its image is garbage */
			/* a write touches its tags in block order: most repeats of a
			 * group are the one just put */
			if (blk / TAG_GROUP != last_group && !held_group(st, blk / TAG_GROUP) &&
			    !group_seen(st, blk / TAG_GROUP)) {
				last_group = blk / TAG_GROUP;
				put_group(st, wb, fs->sb, fs->meta, last_group);
			}
			continue;
		}
		key_meta(k, d->off);
		memcpy(st->scratch, fs->meta + d->off, d->len);
		if (((struct arf_meta_hdr *)st->scratch)->ver & 1)
			arf_meta_obj_seal(st->scratch, d->len);
		rocksdb_writebatch_put(wb, k, sizeof(k), (const char *)st->scratch, d->len);
	}
	st->ngroups = 0;
	put_seq(wb, st->inc, seq);
	if (st->stage_klen) /* the reply cache's record: with the transaction or not at all */
		rocksdb_writebatch_put(wb, st->stage_key, st->stage_klen, (const char *)st->stage_val,
				       st->stage_vlen);
	arfd_store_unstage(st);
	rc = write_batch(st, wb, 0, "write", err, errlen);
	rocksdb_writebatch_destroy(wb);
	release_held(st);
	st->batches++;
	if (!rc)
		__atomic_store_n(&st->seq, seq, __ATOMIC_RELEASE);
	return rc;
}

int arfd_store_pending(const struct arfd_store *st)
{
	return st && st->pend_nb != 0;
}

int arfd_store_settle(struct arfd_store *st, char *err, size_t errlen)
{
	if (!st->pend_nb)
		return 0;
	int rc = append_txn(st, st->pend_seq, st->pend_nb, st->pend_data, err, errlen);
	st->pend_nb = 0;
	/* only now may a sync's mark say the run is whole through it */
	if (!rc)
		__atomic_store_n(&st->seq, st->pend_seq, __ATOMIC_RELEASE);
	return rc;
}

int arfd_store_flush(struct arfd_store *st, struct arf_meta_fs *fs, char *err, size_t errlen)
{
	rocksdb_writebatch_t *wb;
	int rc;

	if ((rc = unsettled(st, err, errlen)))
		return rc;
	if (!st->held_txns)
		return 0;
	wb = st->staged ? st->staged : rocksdb_writebatch_create();
	st->staged = NULL;
	put_held(st, fs, wb);
	put_seq(wb, st->inc, arfd_store_seq(st));
	rc = write_batch(st, wb, 0, "write", err, errlen);
	rocksdb_writebatch_destroy(wb);
	release_held(st);
	st->batches++;
	return rc;
}

int arfd_store_put_format(struct arfd_store *st, struct arf_meta_fs *fs,
			  const struct arf_meta_dirty *list, size_t n, uint64_t seq, char *err,
			  size_t errlen)
{
	const struct arf_meta_super *sb = fs->sb;
	uint64_t heads = sb->off_entries,
		 heads_end = heads + (uint64_t)sb->n_buckets * sizeof(struct arf_meta_dirent);
	struct arf_meta_dirty *keep = malloc((n ? n : 1) * sizeof(*keep));
	size_t nkeep = 0;
	int rc;

	if (!keep) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (list[i].region != ARF_REGION_META || list[i].off < heads ||
		    list[i].off >= heads_end)
			keep[nkeep++] = list[i];
	rc = arfd_store_put_txn(st, fs, keep, nkeep, seq, 0, err, errlen);
	free(keep);
	return rc;
}

int arfd_store_sync(struct arfd_store *st, char *err, size_t errlen)
{
	char *rerr = NULL;
	int rc;

	if (st->fail_sync_at && ++st->syncs >= st->fail_sync_at) {
		snprintf(err, errlen, "rocksdb: sync: injected failure (server.test_fail_sync)");
		return -EIO;
	}
	/* the marker says how far this run's blocks are whole: every
	 * transaction through the last one written appended its blocks first */
	if (st->log && st->inc &&
	    (rc = arfd_datalog_sync(st->log, st->inc, arfd_store_seq(st), err, errlen)))
		return rc;
	rocksdb_flush_wal(st->db, 1, &rerr);
	if (rerr)
		return fail(err, errlen, "sync", rerr, -EIO);
	return 0;
}

int arfd_store_clone(struct arfd_store *st, const char *dir, char *err, size_t errlen)
{
	char *rerr = NULL, logdir[PATH_MAX];
	rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(st->db, &rerr);

	if (!cp)
		return fail(err, errlen, "checkpoint", rerr, -EIO);
	/* log_size_for_flush 0: the memtable is flushed first, so the copy
	 * needs no WAL replay (its files: hard links where they can be) */
	rocksdb_checkpoint_create(cp, dir, 0, &rerr);
	rocksdb_checkpoint_object_destroy(cp);
	if (rerr)
		return fail(err, errlen, dir, rerr, -EIO);
	if (!st->log)
		return 0;
	if ((size_t)snprintf(logdir, sizeof(logdir), "%s/datalog", dir) >= sizeof(logdir)) {
		snprintf(err, errlen, "%s/datalog: path too long", dir);
		return -ENAMETOOLONG;
	}
	return arfd_datalog_copy(st->log, logdir, err, errlen);
}

void arfd_store_prefill(struct arfd_store *st, const uint64_t *inc, const uint64_t *seq)
{
	st->pre_inc = inc;
	st->pre_seq = seq;
}

int arfd_store_reclaim(struct arfd_store *st, uint64_t durable, char *err, size_t errlen)
{
	return st->log ? arfd_datalog_reclaim(st->log, durable, err, errlen) : 0;
}

int arfd_store_reclaim_wanted(struct arfd_store *st)
{
	return st->log && arfd_datalog_reclaim_wanted(st->log);
}

int arfd_store_sync_small(struct arfd_store *st)
{
	return !st->held_txns && (!st->log || !arfd_datalog_dirty(st->log));
}

void arfd_store_reclaim_wait(struct arfd_store *st, uint64_t applied)
{
	if (st->log)
		arfd_datalog_reclaim_wait(st->log, applied);
}

void arfd_store_stats(struct arfd_store *st, struct arfd_store_stats *s)
{
	struct arfd_datalog_stats ls;

	memset(s, 0, sizeof(*s));
	s->wal_bytes = st->wal_bytes;
	s->batches = st->batches;
	s->held_txns = st->held_total;
	if (!st->log)
		return;
	arfd_datalog_stats(st->log, &ls);
	s->log_bytes = ls.bytes;
	s->log_live_bytes = ls.live_bytes;
	s->log_segments = ls.segments;
	s->log_appended_bytes = ls.appended_bytes;
	s->log_syncs = ls.syncs;
	s->log_reclaimed_bytes = ls.reclaimed_bytes;
	s->log_copied_bytes = ls.copied_bytes;
	s->log_recycled = ls.recycled;
}

void arfd_store_inject_faults(struct arfd_store *st, uint64_t fail_write, uint64_t fail_sync,
			      uint64_t fail_append)
{
	st->fail_write_at = fail_write;
	st->fail_sync_at = fail_sync;
	st->fail_append_at = fail_append;
	st->writes = st->syncs = st->appends = 0;
}

void arfd_store_compact(struct arfd_store *st)
{
	if (st->log)
		arfd_datalog_drop_spares(st->log);
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

	*compared = 0;
	for (rocksdb_iter_seek(it, "M", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);

		if (klen != 9 || k[0] != 'M')
			break;
		uint64_t off = get_be(k + 1, 8);
		n++;
		if (!arf_range_ok(off, vlen, meta_size) || memcmp(meta + off, v, vlen)) {
			snprintf(msg, sizeof(msg), "META object at offset %llu (%zu bytes) differs from "
				 "RocksDB", (unsigned long long)off, vlen);
			diffs++;
			if (report)
				report(ctx, "regions-diverge", msg);
		}
	}
	for (rocksdb_iter_seek(it, "D", 1); !st->log && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		if (klen != 5 || k[0] != 'D')
			break;
		uint64_t off = get_be(k + 1, 4) * ARF_BLOCK_SIZE;
		n++;
		if (!arf_range_ok(off, vlen, data_size) || memcmp(data + off, v, vlen)) {
			snprintf(msg, sizeof(msg), "data block %llu differs from RocksDB",
				 (unsigned long long)(off / ARF_BLOCK_SIZE));
			diffs++;
			if (report)
				report(ctx, "regions-diverge", msg);
		}
	}
	for (rocksdb_iter_seek(it, "T", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const unsigned char *k = (const unsigned char *)rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);

		if (klen != 5 || k[0] != 'T')
			break;
		uint32_t g = (uint32_t)get_be(k + 1, 4);
		uint64_t off = g * TAG_GROUP < sb->n_blocks ? group_off(sb, g) : meta_size;
		n++;
		if (!arf_range_ok(off, vlen, meta_size) || memcmp(meta + off, v, vlen)) {
			snprintf(msg, sizeof(msg), "tag group %u (blocks %u-%u) differs from RocksDB", g,
				 g * TAG_GROUP, g * TAG_GROUP + TAG_GROUP - 1);
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
	/* live data blocks against their latest data log record */
	if (st->log) {
		uint64_t blocks = 0;
		int d = arfd_datalog_compare(st->log, data, data_size, report, ctx, &blocks, err,
					     errlen);
		if (d < 0)
			return d;
		diffs += d;
		n += blocks;
	}
	*compared = n;
	return diffs;
}

int arfd_store_queue(struct arfd_store *st, const void *key, size_t klen, const void *val,
		     size_t vlen)
{
	if (!st->staged && !(st->staged = rocksdb_writebatch_create()))
		return -ENOMEM;
	if (val)
		rocksdb_writebatch_put(st->staged, key, klen, val, vlen);
	else
		rocksdb_writebatch_delete(st->staged, key, klen);
	return 0;
}

int arfd_store_flush_staged(struct arfd_store *st, char *err, size_t errlen)
{
	char *rerr = NULL;

	if (!st->staged)
		return 0;
	rocksdb_write(st->db, st->wo, st->staged, &rerr);
	rocksdb_writebatch_destroy(st->staged);
	st->staged = NULL;
	return rerr ? fail(err, errlen, "write", rerr, -EIO) : 0;
}

int arfd_store_put(struct arfd_store *st, const void *key, size_t klen, const void *val,
		   size_t vlen, int sync, char *err, size_t errlen)
{
	char *rerr = NULL;

	if (val)
		rocksdb_put(st->db, sync ? st->wo_sync : st->wo, key, klen, val, vlen, &rerr);
	else
		rocksdb_delete(st->db, sync ? st->wo_sync : st->wo, key, klen, &rerr);
	return rerr ? fail(err, errlen, val ? "put" : "delete", rerr, -EIO) : 0;
}

int arfd_store_scan(struct arfd_store *st, const void *prefix, size_t plen,
		    int (*fn)(void *ctx, const uint8_t *key, size_t klen, const uint8_t *val,
			      size_t vlen),
		    void *ctx, char *err, size_t errlen)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(st->db, st->ro);
	char *rerr = NULL;
	int rc = 0;

	for (rocksdb_iter_seek(it, prefix, plen); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);

		if (klen < plen || memcmp(k, prefix, plen))
			break;
		if ((rc = fn(ctx, (const uint8_t *)k, klen, (const uint8_t *)v, vlen)))
			break;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rerr)
		return fail(err, errlen, "iterate", rerr, -EIO);
	return rc;
}
