/* SPDX-License-Identifier: MIT */
/*
 * arfd/datalog: the append-only log of data blocks (see datalog.h).
 * (About 1,100 lines, one room: the record format, the in-memory index of
 * live records and the segment files are shared by scan, append, sync,
 * reclamation and recycling under one lock; split, each part would need
 * the others' internals.)
 *
 * On disk every record is a 48-byte header and its payload (4096 bytes
 * for a block, none otherwise): the header has a checksum of its own and
 * the payload's (for a block written by a request, its tag's checksum:
 * the write hashes each block once).  A
 * scan stops at the first record that does not check (a torn tail), and
 * the header of the next segment says how long this one was when it was
 * closed, so a segment that lost its tail while a later one kept records
 * (the page cache wrote them back in another order) is found too.
 *
 * In memory: for every data block where its live record lies (segment id
 * and offset, 0 = none), and for every segment its size and live bytes.
 * A block's record dies when a later one supersedes it or the block is
 * freed; reclamation copies a segment's live records (read back from the
 * segment, never from the region, which may already hold a newer,
 * not yet durable image) and deletes the segment once a sync has covered
 * the copies and everything that killed the rest is durable.
 *
 * Recycling (as RocksDB's recycle_log_file_num): a deleted segment's file
 * is kept as a spare (DIR/%016x.free, at most SPARES of them) and renamed
 * to the next head, which overwrites it from the start: no pages or
 * blocks are allocated and freed for every segment (on tmpfs that churn
 * was a quarter of a 1 MiB write's CPU; on ext4 it is block allocation
 * and the conversion of unwritten extents).  Past the last record written
 * such a file still holds records of its earlier life, which are whole
 * and would check; so a segment's header says F_SEEDED (every header
 * checksum in it is XXH3 seeded with the segment's id, and a record of
 * the file's earlier life, seeded with another id, does not check) and
 * F_REUSED (bytes past its last record are not damage: the successor's
 * header alone says how long it was).  Segments written before recycling
 * (no F_SEEDED) are read as they were written, with seed 0.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include "arf_meta.h"
#include "datalog.h"

#define BS ARF_BLOCK_SIZE
#define MAGIC 0x4c465241u            /* "ARFL" */
#define K_BLOCK 1u
#define K_MARK 2u                    /* seq: incarnation inc complete through seq */
#define K_SEG 3u                     /* block: segment id; seq: previous segment's length */
#define F_END 0x1u                   /* last block of its transaction */
#define F_GC ARFD_DATALOG_GC         /* copied by reclamation (or conversion) */
#define F_SEEDED 0x4u                /* segment header: checksums seeded with the id */
#define F_REUSED 0x8u                /* segment header: the file held an earlier segment */
#define SPARES 2                     /* deleted segments' files kept for the next heads */
#define IOV_BATCH 512                /* records per pwritev */
#define AHEAD (8u << 20)             /* the head's disk space is allocated this far ahead */

struct rec {
	uint32_t magic;
	uint16_t kind;
	uint16_t flags;
	uint32_t block;
	uint32_t len;                /* payload bytes: BS or 0 */
	uint64_t inc;
	uint64_t seq;
	uint64_t pcsum;              /* XXH3-64 of the payload: the block's tag checksum */
	uint64_t csum;               /* XXH3-64 of the header (csum 0) */
};
_Static_assert(sizeof(struct rec) == 48, "datalog record header");
#define RECSZ(len) (sizeof(struct rec) + (len))

/* One record found by the scan. */
struct found {
	uint32_t block, seg;
	uint32_t off;
	uint16_t kind, flags;
	uint64_t inc, seq;
};

struct seg {
	uint32_t id;
	int fd;                      /* open while written, unsynced or read */
	uint64_t size;               /* bytes on disk (plus the buffer, for the head) */
	uint64_t alloc;              /* the head: space allocated (fallocate) up to here */
	uint64_t intact;             /* scan: bytes up to the first damage */
	uint64_t prev_len;           /* its header: the previous segment's length */
	uint64_t inc;                /* its header: who opened it */
	uint64_t seed;               /* its records' header checksum seed: id, or 0 (old) */
	int reused;                  /* F_REUSED: a stale tail past its records is no damage */
	uint64_t live;               /* bytes of live block records */
	int dirty;                   /* written since the last sync */
	int victim;                  /* copied out, waiting to be deleted */
	uint64_t wait_seq;           /* victim: durable must reach this (UINT64_MAX: unnamed) */
	uint64_t wait_gen;           /* victim: a sync numbered above this must complete */
};

struct arfd_datalog {
	char dir[512];
	uint32_t nblocks;
	uint64_t seg_bytes;
	int buffered;
	pthread_mutex_t lock;
	pthread_mutex_t sync_lock;   /* one arfd_datalog_sync at a time */
	uint64_t *where;             /* per block: seg << 32 | offset; 0 = no live record */
	struct seg *segs;            /* by id, ascending */
	size_t nsegs, segcap;
	struct seg *head;            /* appended to (after begin) */
	uint8_t *buf;                /* buffered mode: the head's unwritten bytes */
	size_t buflen, bufcap;
	uint64_t inc;                /* begin's incarnation */
	int dir_dirty;               /* a segment was created: fsync the directory */
	uint64_t gen_started, gen_done; /* syncs begun and completed */
	uint32_t *spares;            /* ids of the spare files (DIR/%016x.free) */
	size_t nspares, sparecap;
	struct found *found;         /* scan's records, for replay */
	size_t nfound, foundcap;
	/* replay: per block, the record (incarnation, sequence) whose image
	 * the data region holds already (0: none; arfd_datalog_prefill), and
	 * where to say which record each block's image came from */
	const uint64_t *pre_inc, *pre_seq;
	uint64_t *won_inc, *won_seq;
	struct arfd_datalog_stats st;
};

static int fail(char *err, size_t errlen, int code, const char *fmt, const char *what)
{
	snprintf(err, errlen, fmt, what, strerror(-code));
	return code;
}

/* The header's checksum, seeded with its segment's seed (F_SEEDED). */
static uint64_t hdr_csum(struct rec *h, uint64_t seed)
{
	uint64_t saved = h->csum, c;

	h->csum = 0;
	c = XXH3_64bits_withSeed(h, sizeof(*h), seed);
	h->csum = saved;
	return c;
}

/* Does the record (header and payload) check? */
static int rec_ok(struct rec *h, const void *payload, uint64_t seed)
{
	return hdr_csum(h, seed) == h->csum &&
	       (!h->len || XXH3_64bits(payload, h->len) == h->pcsum);
}

/* Is h the whole header of segment id (either format)? */
static int seg_header_ok(struct rec *h, uint32_t id)
{
	return h->magic == MAGIC && h->kind == K_SEG && h->len == 0 && h->block == id &&
	       rec_ok(h, NULL, (h->flags & F_SEEDED) ? id : 0);
}

static void seg_path(const struct arfd_datalog *l, uint32_t id, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%016" PRIx32 ".seg", l->dir, id);
}

static void spare_path(const struct arfd_datalog *l, uint32_t id, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%016" PRIx32 ".free", l->dir, id);
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Delete spare files until keep are left (lock held, or before threads):
 * 0, or the first failure (-errno, with err; NULL err: not said). */
static int unlink_spares(struct arfd_datalog *l, size_t keep, char *err, size_t errlen)
{
	int rc = 0;

	for (; l->nspares > keep; l->nspares--) {
		char p[600];
		spare_path(l, l->spares[l->nspares - 1], p, sizeof(p));
		if (unlink(p) < 0 && errno != ENOENT && !rc) {
			rc = -errno;
			if (err)
				fail(err, errlen, rc, "data log: remove %s: %s", p);
		}
	}
	return rc;
}

/* Append to an array of ids.  0 or -ENOMEM. */
static int ids_push(uint32_t **ids, size_t *n, size_t *cap, uint32_t id)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		uint32_t *x = realloc(*ids, c * sizeof(*x));
		if (!x)
			return -ENOMEM;
		*ids = x;
		*cap = c;
	}
	(*ids)[(*n)++] = id;
	return 0;
}

static struct seg *seg_find(struct arfd_datalog *l, uint32_t id)
{
	size_t lo = 0, hi = l->nsegs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (l->segs[mid].id < id)
			lo = mid + 1;
		else if (l->segs[mid].id > id)
			hi = mid;
		else
			return &l->segs[mid];
	}
	return NULL;
}

/* Append a segment entry (ids only grow).  NULL when out of memory. */
static struct seg *seg_add(struct arfd_datalog *l, uint32_t id)
{
	if (l->nsegs == l->segcap) {
		size_t cap = l->segcap ? l->segcap * 2 : 16;
		uintptr_t headi = l->head ? (uintptr_t)(l->head - l->segs) : 0;
		struct seg *s = realloc(l->segs, cap * sizeof(*s));
		if (!s)
			return NULL;
		l->segs = s;
		l->segcap = cap;
		if (l->head)
			l->head = &l->segs[headi];
	}
	struct seg *s = &l->segs[l->nsegs++];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->fd = -1;
	return s;
}

static void seg_close_fd(struct seg *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static int open_fd(struct arfd_datalog *l, struct seg *s, int flags)
{
	char p[600];

	if (s->fd >= 0)
		return 0;
	seg_path(l, s->id, p, sizeof(p));
	s->fd = open(p, flags | O_CLOEXEC, 0600);
	return s->fd < 0 ? -errno : 0;
}

static uint64_t pos_of(uint32_t seg, uint64_t off)
{
	return (uint64_t)seg << 32 | (uint32_t)off;
}

/* A live record stops being live (superseded, freed or copied away). */
static void kill_pos(struct arfd_datalog *l, uint64_t pos)
{
	struct seg *s;

	if (!pos || !(s = seg_find(l, (uint32_t)(pos >> 32))))
		return;
	s->live -= RECSZ(BS);
	l->st.live_bytes -= RECSZ(BS);
}

static void set_live(struct arfd_datalog *l, uint32_t blk, struct seg *s, uint64_t off)
{
	kill_pos(l, l->where[blk]);
	l->where[blk] = pos_of(s->id, off);
	s->live += RECSZ(BS);
	l->st.live_bytes += RECSZ(BS);
}

int arfd_datalog_open(const char *dir, uint32_t nblocks, uint64_t segment_bytes, int buffered,
		      struct arfd_datalog **out, char *err, size_t errlen)
{
	struct arfd_datalog *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l || !(l->where = calloc(nblocks ? nblocks : 1, sizeof(*l->where)))) {
		free(l);
		snprintf(err, errlen, "out of memory for the data log's index (%u blocks)", nblocks);
		return -ENOMEM;
	}
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	l->nblocks = nblocks;
	l->seg_bytes = segment_bytes < (1u << 20) ? (1u << 20) : segment_bytes;
	l->buffered = buffered;
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->sync_lock, NULL);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int rc = -errno;
		arfd_datalog_close(l);
		return fail(err, errlen, rc, "data log %s: %s", dir);
	}
	/* the segments there, by id */
	DIR *dh = opendir(dir);
	if (!dh) {
		int rc = -errno;
		arfd_datalog_close(l);
		return fail(err, errlen, rc, "data log %s: %s", dir);
	}
	uint32_t *ids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(dh))) {
		char *end;
		unsigned long long id = strtoull(e->d_name, &end, 16);
		int spare = !strcmp(end, ".free");
		if ((strcmp(end, ".seg") && !spare) || end == e->d_name || id == 0 || id > UINT32_MAX)
			continue;
		if (spare ? ids_push(&l->spares, &l->nspares, &l->sparecap, (uint32_t)id)
			  : ids_push(&ids, &n, &cap, (uint32_t)id)) {
			free(ids);
			closedir(dh);
			arfd_datalog_close(l);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	closedir(dh);
	for (size_t i = 1; i < n; i++) /* few: insertion sort */
		for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			uint32_t t = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++)
		if (!seg_add(l, ids[i])) {
			free(ids);
			arfd_datalog_close(l);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	free(ids);
	*out = l;
	return 0;
}

void arfd_datalog_close(struct arfd_datalog *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nsegs; i++)
		seg_close_fd(&l->segs[i]);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->sync_lock);
	free(l->segs);
	free(l->spares);
	free(l->where);
	free(l->buf);
	free(l->found);
	free(l);
}

static int add_found(struct arfd_datalog *l, const struct rec *h, uint32_t seg, uint64_t off)
{
	if (l->nfound == l->foundcap) {
		size_t cap = l->foundcap ? l->foundcap * 2 : 4096;
		struct found *f = realloc(l->found, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		l->found = f;
		l->foundcap = cap;
	}
	l->found[l->nfound++] = (struct found){ .block = h->block, .seg = seg, .off = (uint32_t)off,
						.kind = h->kind, .flags = h->flags, .inc = h->inc,
						.seq = h->seq };
	return 0;
}

/* Read one segment's records up to the first that does not check. */
static int scan_seg(struct arfd_datalog *l, struct seg *s, uint8_t *buf, size_t cap)
{
	struct stat sb;
	uint64_t off = 0;
	size_t have = 0, at = 0;
	int rc;

	if ((rc = open_fd(l, s, O_RDONLY)))
		return rc;
	if (fstat(s->fd, &sb) < 0)
		return -errno;
	s->size = (uint64_t)sb.st_size;
	for (;;) {
		if (have - at < RECSZ(BS) && off + have < s->size) {
			memmove(buf, buf + at, have - at);
			off += at;
			have -= at;
			at = 0;
			ssize_t r = pread(s->fd, buf + have, cap - have, (off_t)(off + have));
			if (r < 0)
				return -errno;
			have += (size_t)r;
		}
		if (have - at < sizeof(struct rec))
			break;
		struct rec h;
		memcpy(&h, buf + at, sizeof(h));
		uint64_t roff = off + at;
		if (roff == 0) {
			/* not this segment's header (or a spare renamed to it
			 * whose new header was lost): nothing of it counts */
			if (!seg_header_ok(&h, s->id))
				break;
			s->seed = (h.flags & F_SEEDED) ? s->id : 0;
			s->reused = (h.flags & F_REUSED) != 0;
			s->prev_len = h.seq;
			s->inc = h.inc;
		} else if (h.magic != MAGIC || (h.len != 0 && h.len != BS) ||
			   have - at < RECSZ(h.len) || (h.kind == K_BLOCK) != (h.len == BS) ||
			   h.kind < K_BLOCK || h.kind > K_SEG || !rec_ok(&h, buf + at + sizeof(h), s->seed)) {
			break;
		} else if (h.kind == K_SEG || (h.kind == K_BLOCK && h.block >= l->nblocks)) {
			break;
		}
		if (roff > UINT32_MAX)
			break;
		if ((rc = add_found(l, &h, s->id, roff)))
			return rc;
		at += RECSZ(h.len);
		if (at == have) {
			off += have;
			have = at = 0;
		}
	}
	s->intact = off + at;
	if (s->reused) /* past its records: its earlier life's, no damage */
		s->size = s->intact;
	return 0;
}

int arfd_datalog_scan(struct arfd_datalog *l, uint64_t inc, uint64_t start, uint64_t *through,
		      char *err, size_t errlen)
{
	size_t cap = 4u << 20;
	uint8_t *buf = malloc(cap);
	uint64_t best = start ? start - 1 : 0;
	int damaged = 0, rc = 0;

	l->nfound = 0;
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->nsegs; i++) {
		struct seg *s = &l->segs[i];
		size_t first = l->nfound;
		if ((rc = scan_seg(l, s, buf, cap))) {
			char p[600];
			seg_path(l, s->id, p, sizeof(p));
			fail(err, errlen, rc, "data log %s: %s", p);
			break;
		}
		l->st.bytes += s->size;
		/* what inc wrote counts up to the first damage in its segments:
		 * a torn record, or a segment its successor says was longer */
		if (s->inc != inc || damaged)
			continue;
		for (size_t k = first; k < l->nfound; k++) {
			const struct found *f = &l->found[k];
			if (f->inc == inc && ((f->kind == K_BLOCK && (f->flags & F_END) &&
					       !(f->flags & F_GC)) || f->kind == K_MARK) &&
			    f->seq > best)
				best = f->seq;
		}
		struct seg *next = i + 1 < l->nsegs && l->segs[i + 1].id == s->id + 1 ? &l->segs[i + 1]
										      : NULL;
		if (s->intact < s->size)
			damaged = 1;
		if (next) {
			/* the successor's header is read before it is scanned; one
			 * that is not whole (lost with this segment's tail: a
			 * recycled segment, whose stale tail hides a hole, has no
			 * other witness) says nothing of this segment's length:
			 * damage too */
			struct rec h;
			if (open_fd(l, next, O_RDONLY) != 0 ||
			    pread(next->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
			    !seg_header_ok(&h, next->id) || h.seq != s->intact)
				damaged = 1;
		}
	}
	free(buf);
	l->st.segments = l->nsegs;
	*through = best;
	return rc;
}

int arfd_datalog_replay(struct arfd_datalog *l, uint8_t *data, uint64_t data_size,
			arfd_datalog_valid_fn valid, arfd_datalog_free_fn is_free, void *ctx,
			uint64_t *loaded, char *err, size_t errlen)
{
	uint64_t *seqs = calloc(l->nblocks ? l->nblocks : 1, sizeof(*seqs));
	uint64_t *incs = calloc(l->nblocks ? l->nblocks : 1, sizeof(*incs));
	int rc = 0;

	*loaded = 0;
	if (!seqs || !incs) {
		free(seqs);
		free(incs);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* each block's latest accepted record (the log's order breaks ties:
	 * a copy comes after what it copied) */
	for (size_t k = 0; k < l->nfound; k++) {
		const struct found *f = &l->found[k];
		if (f->kind != K_BLOCK || !valid(ctx, f->inc, f->seq))
			continue;
		if (l->where[f->block] && seqs[f->block] > f->seq)
			continue;
		seqs[f->block] = f->seq;
		incs[f->block] = f->inc;
		l->where[f->block] = pos_of(f->seg, f->off);
	}
	free(l->found);
	l->found = NULL;
	l->nfound = l->foundcap = 0;
	for (uint32_t b = 0; b < l->nblocks && !rc; b++) {
		uint64_t pos = l->where[b];
		/* a prefilled image no record here stands for goes */
		int pre = l->pre_inc && l->pre_inc[b] && (uint64_t)(b + 1) * BS <= data_size;
		if (!pos || (is_free && is_free(ctx, b))) {
			l->where[b] = 0;
			if (pre)
				memset(data + (uint64_t)b * BS, 0, BS);
			continue;
		}
		struct seg *s = seg_find(l, (uint32_t)(pos >> 32));
		if ((uint64_t)(b + 1) * BS > data_size) {
			snprintf(err, errlen, "data log: block %u lies outside the data region", b);
			rc = -EIO;
			break;
		}
		/* the same write (incarnation and sequence) of the same block is
		 * the same image, wherever reclamation copied its record */
		if (!pre || l->pre_inc[b] != incs[b] || l->pre_seq[b] != seqs[b]) {
			ssize_t r = pread(s->fd, data + (uint64_t)b * BS, BS,
					  (off_t)((uint32_t)pos + sizeof(struct rec)));
			if (r != (ssize_t)BS) {
				char p[600];
				seg_path(l, s->id, p, sizeof(p));
				rc = fail(err, errlen, r < 0 ? -errno : -EIO, "data log %s: read: %s",
					  p);
				break;
			}
		}
		if (l->won_inc) {
			l->won_inc[b] = incs[b];
			l->won_seq[b] = seqs[b];
		}
		s->live += RECSZ(BS);
		l->st.live_bytes += RECSZ(BS);
		(*loaded)++;
	}
	free(seqs);
	free(incs);
	return rc;
}

void arfd_datalog_prefill(struct arfd_datalog *l, const uint64_t *inc, const uint64_t *seq)
{
	l->pre_inc = inc;
	l->pre_seq = seq;
}

static int any_record(void *ctx, uint64_t inc, uint64_t seq)
{
	(void)ctx;
	(void)inc;
	(void)seq;
	return 1;
}

int arfd_datalog_fill(const char *dir, uint32_t nblocks, uint8_t *data, uint64_t data_size,
		      uint64_t *inc, uint64_t *seq, char *err, size_t errlen)
{
	struct arfd_datalog *l;
	uint64_t through, loaded;
	int rc = arfd_datalog_open(dir, nblocks, 1u << 26, 0, &l, err, errlen);

	if (rc)
		return rc;
	if (!(rc = arfd_datalog_scan(l, 0, 1, &through, err, errlen))) {
		l->won_inc = inc;
		l->won_seq = seq;
		rc = arfd_datalog_replay(l, data, data_size, any_record, NULL, NULL, &loaded, err,
					 errlen);
	}
	arfd_datalog_close(l);
	return rc;
}

int arfd_datalog_wipe(struct arfd_datalog *l, char *err, size_t errlen)
{
	for (size_t i = 0; i < l->nsegs; i++) {
		char p[600];
		seg_close_fd(&l->segs[i]);
		seg_path(l, l->segs[i].id, p, sizeof(p));
		if (unlink(p) < 0 && errno != ENOENT)
			return fail(err, errlen, -errno, "data log: remove %s: %s", p);
	}
	l->nsegs = 0;
	int rc = unlink_spares(l, 0, err, errlen);
	if (rc)
		return rc;
	memset(l->where, 0, l->nblocks * sizeof(*l->where));
	l->st.bytes = l->st.live_bytes = l->st.segments = 0;
	/* gone for good before the new filesystem writes: an old segment
	 * back after a crash would be read as the new one's */
	rc = sync_dir(l->dir);
	return rc ? fail(err, errlen, rc, "data log %s: sync: %s", l->dir) : 0;
}

/* Write out the buffered bytes of the head (buffered mode). */
static int flush_buf(struct arfd_datalog *l)
{
	size_t done = 0;

	while (done < l->buflen) {
		ssize_t w = pwrite(l->head->fd, l->buf + done, l->buflen - done,
				   (off_t)(l->head->size - l->buflen + done));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)w;
	}
	l->buflen = 0;
	return 0;
}

/* Copy the first len bytes of file from into a new file to (synced):
 * 0 or -errno. */
static int copy_file(const char *from, const char *to, uint64_t len)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	loff_t off = 0;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		rc = -errno;
	while (!rc && (uint64_t)off < len) {
		ssize_t n = copy_file_range(in, &off, out, NULL, (size_t)(len - (uint64_t)off), 0);
		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n == 0)
			rc = -EIO; /* shorter than the log says */
	}
	if (!rc && fsync(out) < 0)
		rc = -errno;
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

int arfd_datalog_copy(struct arfd_datalog *l, const char *dir, char *err, size_t errlen)
{
	char from[600], to[700];
	int rc = 0;

	pthread_mutex_lock(&l->sync_lock);
	pthread_mutex_lock(&l->lock);
	if (l->buffered && l->head && (rc = flush_buf(l)))
		rc = fail(err, errlen, rc, "data log %s: writing out: %s", l->dir);
	else if (mkdir(dir, 0700) < 0)
		rc = fail(err, errlen, -errno, "%s: %s", dir);
	for (size_t i = 0; !rc && i < l->nsegs; i++) {
		const struct seg *sg = &l->segs[i];
		seg_path(l, sg->id, from, sizeof(from));
		snprintf(to, sizeof(to), "%s/%s", dir, strrchr(from, '/') + 1);
		/* a closed segment is never written again (delete_seg does not
		 * recycle a file with another link): the copy links it; the head
		 * grows, and is copied */
		if (sg == l->head || link(from, to) < 0)
			rc = copy_file(from, to, sg->size);
		if (rc)
			rc = fail(err, errlen, rc, "copying %s: %s", from);
	}
	if (!rc && (rc = sync_dir(dir)))
		rc = fail(err, errlen, rc, "%s: sync: %s", dir);
	pthread_mutex_unlock(&l->lock);
	pthread_mutex_unlock(&l->sync_lock);
	return rc;
}

/* Write iov (total bytes) at the head's end: to the file, or to the
 * buffer.  The head's size grows either way. */
static int put(struct arfd_datalog *l, struct iovec *iov, int cnt, size_t total)
{
	if (l->buffered) {
		if (l->buflen + total > l->bufcap) {
			size_t cap = l->bufcap ? l->bufcap : (1u << 20);
			while (cap < l->buflen + total)
				cap *= 2;
			uint8_t *b = realloc(l->buf, cap);
			if (!b)
				return -ENOMEM;
			l->buf = b;
			l->bufcap = cap;
		}
		for (int i = 0; i < cnt; i++) {
			memcpy(l->buf + l->buflen, iov[i].iov_base, iov[i].iov_len);
			l->buflen += iov[i].iov_len;
		}
	} else {
		off_t at = (off_t)l->head->size;
		size_t left = total;
		/* space allocated ahead, past the end (KEEP_SIZE: what a scan
		 * reads is unchanged; after a crash it goes with its segment):
		 * a write there skips ext4's delayed allocation of every page,
		 * a fifth of its cost (perf); a failure only leaves the writes
		 * to allocate it themselves */
		if ((uint64_t)at + total > l->head->alloc) {
			l->head->alloc = ((uint64_t)at + total + AHEAD - 1) / AHEAD * AHEAD;
			(void)fallocate(l->head->fd, FALLOC_FL_KEEP_SIZE, at, (off_t)l->head->alloc - at);
		}
		while (left) {
			ssize_t w = pwritev(l->head->fd, iov, cnt, at);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			if (w == 0)
				return -EIO;
			at += w;
			left -= (size_t)w;
			while (cnt && (size_t)w >= iov->iov_len) {
				w -= (ssize_t)iov->iov_len;
				iov++;
				cnt--;
			}
			if (cnt) {
				iov->iov_base = (uint8_t *)iov->iov_base + w;
				iov->iov_len -= (size_t)w;
			}
		}
	}
	l->head->size += total;
	l->head->dirty = 1;
	l->st.bytes += total;
	return 0;
}

/* A record's header for a segment of seed seed; pcsum: the payload's
 * XXH3-64 (a block's). */
static void rec_init(struct rec *h, uint64_t seed, uint16_t kind, uint16_t flags, uint32_t block,
		     uint64_t inc, uint64_t seq, uint64_t pcsum)
{
	memset(h, 0, sizeof(*h));
	h->magic = MAGIC;
	h->kind = kind;
	h->flags = flags;
	h->block = block;
	h->len = kind == K_BLOCK ? BS : 0;
	h->inc = inc;
	h->seq = seq;
	h->pcsum = pcsum;
	h->csum = hdr_csum(h, seed);
}

/*
 * Make spare file id segment id's file: renamed, opened, *alloc set to the
 * space it has.  0, or -errno (the spare is gone either way; the caller
 * creates a file).  Its first bytes are still its earlier header, which
 * names another id: until the new header is written the segment reads as
 * empty.
 */
static int take_spare(struct arfd_datalog *l, struct seg *s, uint32_t spare, uint64_t *alloc)
{
	char from[600], to[600];
	struct stat sb;
	struct rec h;

	spare_path(l, spare, from, sizeof(from));
	seg_path(l, s->id, to, sizeof(to));
	/* ids only grow, so its records were seeded with a smaller one (a
	 * spare left by a wiped log could carry this id: never reuse those) */
	int fd = open(from, O_RDONLY | O_CLOEXEC);
	int ok = fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.block < s->id;
	if (fd >= 0)
		close(fd);
	if (!ok || renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0) {
		unlink(from);
		return -ENOENT;
	}
	/* the new name is durable before any record seeded with this id is
	 * written into the file: a crash can never leave such records under
	 * another name, to be taken again as a spare for this id */
	if (sync_dir(l->dir) < 0) {
		unlink(to);
		return -EIO;
	}
	int rc = open_fd(l, s, O_RDWR);
	if (rc || fstat(s->fd, &sb) < 0) {
		seg_close_fd(s);
		unlink(to);
		return rc ? rc : -EIO;
	}
	*alloc = (uint64_t)sb.st_size;
	return 0;
}

/* Open the next segment as the head (lock held, or before threads). */
static int new_head(struct arfd_datalog *l, char *err, size_t errlen)
{
	uint64_t prev_len = 0, alloc = 0;
	uint32_t id = 1;
	uint16_t flags = F_SEEDED;
	int rc = -ENOENT;

	if (l->nsegs) {
		id = l->segs[l->nsegs - 1].id + 1;
		prev_len = l->segs[l->nsegs - 1].size;
	}
	if (l->head && l->buffered && (rc = flush_buf(l)))
		return fail(err, errlen, rc, "data log %s: write: %s", l->dir);
	if (l->head && l->head->alloc > l->head->size) /* give back what it allocated ahead */
		(void)ftruncate(l->head->fd, (off_t)l->head->size);
	struct seg *s = seg_add(l, id);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (rc && l->nspares)
		rc = take_spare(l, s, l->spares[--l->nspares], &alloc);
	if (!rc) {
		flags |= F_REUSED;
		l->st.recycled++;
	} else if ((rc = open_fd(l, s, O_RDWR | O_CREAT | O_EXCL))) {
		l->nsegs--;
		return fail(err, errlen, rc, "data log %s: new segment: %s", l->dir);
	}
	s->seed = id;
	s->reused = (flags & F_REUSED) != 0;
	s->alloc = alloc;
	l->head = s;
	if (!s->reused) /* a recycled file's name was made durable (take_spare) */
		l->dir_dirty = 1;
	l->st.segments = l->nsegs;
	struct rec h;
	rec_init(&h, s->seed, K_SEG, flags, id, l->inc, prev_len, 0);
	struct iovec iov = { &h, sizeof(h) };
	if ((rc = put(l, &iov, 1, sizeof(h))))
		return fail(err, errlen, rc, "data log %s: write: %s", l->dir);
	return 0;
}

int arfd_datalog_begin(struct arfd_datalog *l, uint64_t inc, char *err, size_t errlen)
{
	int rc;

	l->inc = inc;
	(void)unlink_spares(l, SPARES, NULL, 0); /* one left over is only space */
	for (size_t i = 0; i < l->nsegs; i++) {
		struct seg *s = &l->segs[i];
		if (s->intact < s->size) {
			/* a torn tail: cut it, so nothing ever reads past it again */
			char p[600];
			seg_close_fd(s);
			seg_path(l, s->id, p, sizeof(p));
			if (truncate(p, (off_t)s->intact) < 0 || (rc = open_fd(l, s, O_RDWR)) ||
			    fdatasync(s->fd) < 0)
				return fail(err, errlen, -errno, "data log: cut torn tail of %s: %s", p);
			l->st.bytes -= s->size - s->intact;
			s->size = s->intact;
		}
		/* what the previous run wrote may sit in the page cache only */
		if (s->fd >= 0 && fdatasync(s->fd) < 0)
			return fail(err, errlen, -errno, "data log %s: sync: %s", l->dir);
		seg_close_fd(s);
	}
	if ((rc = new_head(l, err, errlen)))
		return rc;
	if (!l->buffered && (fdatasync(l->head->fd) < 0 || (rc = sync_dir(l->dir))))
		return fail(err, errlen, rc ? rc : -errno, "data log %s: sync: %s", l->dir);
	l->dir_dirty = 0;
	return 0;
}

int arfd_datalog_append(struct arfd_datalog *l, uint64_t inc, uint64_t seq,
			const uint32_t *blocks, const uint64_t *csums, size_t n, const uint8_t *data,
			unsigned flags, char *err, size_t errlen)
{
	struct rec hs[IOV_BATCH];
	struct iovec iov[2 * IOV_BATCH];
	int rc = 0;

	if (!n)
		return 0;
	pthread_mutex_lock(&l->lock);
	if (!l->head) {
		pthread_mutex_unlock(&l->lock);
		snprintf(err, errlen, "data log: not begun");
		return -EINVAL;
	}
	if (l->head->size >= l->seg_bytes && (rc = new_head(l, err, errlen)))
		goto out;
	for (size_t i = 0; i < n;) {
		size_t k = n - i < IOV_BATCH ? n - i : IOV_BATCH;
		uint64_t start = l->head->size;
		for (size_t j = 0; j < k; j++) {
			const uint8_t *img = data + (uint64_t)blocks[i + j] * BS;
			uint16_t f = (uint16_t)(flags | (i + j == n - 1 ? F_END : 0));
			rec_init(&hs[j], l->head->seed, K_BLOCK, f, blocks[i + j], inc, seq,
				 csums ? csums[i + j] : XXH3_64bits(img, BS));
			iov[2 * j] = (struct iovec){ &hs[j], sizeof(hs[j]) };
			iov[2 * j + 1] = (struct iovec){ (void *)img, BS };
		}
		if ((rc = put(l, iov, (int)(2 * k), k * RECSZ(BS)))) {
			fail(err, errlen, rc, "data log %s: write: %s", l->dir);
			goto out;
		}
		for (size_t j = 0; j < k; j++)
			set_live(l, blocks[i + j], l->head, start + j * RECSZ(BS));
		l->st.appended_bytes += k * RECSZ(BS);
		i += k;
	}
out:
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void arfd_datalog_drop(struct arfd_datalog *l, uint32_t blk)
{
	if (blk >= l->nblocks)
		return;
	pthread_mutex_lock(&l->lock);
	kill_pos(l, l->where[blk]);
	l->where[blk] = 0;
	pthread_mutex_unlock(&l->lock);
}

/*
 * One sync at a time (sync_lock): the committer's, and arfctl checkpoint's
 * from the control thread.  Two at once went wrong: the second found the
 * segments clean (the first had taken their dirty marks) and answered
 * before the first's fdatasync was done, counted its own generation as
 * done (a victim could be deleted before its copies were durable), and
 * closed the descriptors the first was syncing.
 */
static int sync_one(struct arfd_datalog *l, uint64_t inc, uint64_t seq, char *err,
		    size_t errlen);

int arfd_datalog_sync(struct arfd_datalog *l, uint64_t inc, uint64_t seq, char *err,
		      size_t errlen)
{
	pthread_mutex_lock(&l->sync_lock);
	int rc = sync_one(l, inc, seq, err, errlen);
	pthread_mutex_unlock(&l->sync_lock);
	return rc;
}

static int sync_one(struct arfd_datalog *l, uint64_t inc, uint64_t seq, char *err,
		    size_t errlen)
{
	int *fds, nfd = 0, rc = 0, dir_dirty;
	uint64_t gen;

	pthread_mutex_lock(&l->lock);
	if (!l->head) {
		pthread_mutex_unlock(&l->lock);
		return 0; /* read-only (not begun): nothing to sync */
	}
	if (!(fds = malloc(l->nsegs * sizeof(*fds)))) {
		pthread_mutex_unlock(&l->lock);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* nothing appended since the last sync (a create, an unlink: no
	 * blocks): the mark is written but not synced.  Lost to a power cut, it
	 * only leaves "through" at the last synced mark, and the next start
	 * checks every block's checksum against its tag (store.c), finding
	 * nothing lost; a create then costs RocksDB's fdatasync alone. */
	int clean = !l->dir_dirty;
	for (size_t i = 0; i < l->nsegs && clean; i++)
		clean = !l->segs[i].dirty;
	struct rec h;
	rec_init(&h, l->head->seed, K_MARK, 0, 0, inc, seq, 0);
	struct iovec iov = { &h, sizeof(h) };
	/* (test_power_loss keeps an unsynced mark in memory: a SIGKILL loses
	 * it, as a power cut would) */
	if ((rc = put(l, &iov, 1, sizeof(h))) || (l->buffered && !clean && (rc = flush_buf(l)))) {
		pthread_mutex_unlock(&l->lock);
		free(fds);
		return fail(err, errlen, rc, "data log %s: write: %s", l->dir);
	}
	if (clean)
		l->head->dirty = 0;
	gen = ++l->gen_started;
	/* the head and every segment rolled over since the last sync; only
	 * a sync (one at a time) closes their descriptors */
	for (size_t i = 0; i < l->nsegs; i++) {
		struct seg *s = &l->segs[i];
		if (s->dirty && s->fd >= 0) {
			fds[nfd++] = s->fd;
			s->dirty = 0;
		}
	}
	dir_dirty = l->dir_dirty;
	l->dir_dirty = 0;
	pthread_mutex_unlock(&l->lock);

	for (int i = 0; i < nfd && !rc; i++)
		if (fdatasync(fds[i]) < 0)
			rc = -errno;
	free(fds);
	if (!rc && dir_dirty)
		rc = sync_dir(l->dir);
	if (rc)
		return fail(err, errlen, rc, "data log %s: sync: %s", l->dir);

	pthread_mutex_lock(&l->lock);
	l->gen_done = gen;
	l->st.syncs++;
	for (size_t i = 0; i < l->nsegs; i++) { /* synced old segments need no descriptor */
		struct seg *s = &l->segs[i];
		if (s != l->head && !s->dirty && !s->victim)
			seg_close_fd(s);
	}
	pthread_mutex_unlock(&l->lock);
	return 0;
}

/* Delete victim segment s (lock held). */
static int delete_seg(struct arfd_datalog *l, struct seg *s, char *err, size_t errlen)
{
	char p[600];
	size_t i = (size_t)(s - l->segs);

	struct stat st;

	seg_close_fd(s);
	seg_path(l, s->id, p, sizeof(p));
	/* kept for a later head (recycling, above), which overwrites it: not
	 * a file another data log links too (a replica's, arfd_datalog_copy) */
	if (l->nspares < SPARES && stat(p, &st) == 0 && st.st_nlink == 1) {
		char to[600];
		spare_path(l, s->id, to, sizeof(to));
		if (rename(p, to) == 0 && ids_push(&l->spares, &l->nspares, &l->sparecap, s->id))
			unlink(to);
	}
	if (unlink(p) < 0 && errno != ENOENT)
		return fail(err, errlen, -errno, "data log: remove %s: %s", p);
	l->st.bytes -= s->size;
	l->st.reclaimed_bytes += s->size;
	uintptr_t headi = (uintptr_t)(l->head - l->segs);
	memmove(&l->segs[i], &l->segs[i + 1], (l->nsegs - i - 1) * sizeof(*s));
	l->nsegs--;
	l->head = &l->segs[headi - (headi > i ? 1 : 0)];
	l->st.segments = l->nsegs;
	return 0;
}

/* Copy segment id's live records to the head, a chunk at a time with the
 * lock held for each (appenders wait for one chunk at most). */
static int copy_live(struct arfd_datalog *l, uint32_t id, char *err, size_t errlen)
{
	const size_t chunk = 1u << 20;
	uint8_t *buf = malloc(chunk + RECSZ(BS));
	uint64_t off = 0;
	int rc = 0;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (;;) {
		pthread_mutex_lock(&l->lock);
		struct seg *s = seg_find(l, id);
		if (!s || off >= s->size || !s->live) {
			pthread_mutex_unlock(&l->lock);
			break;
		}
		if ((rc = open_fd(l, s, O_RDONLY))) {
			pthread_mutex_unlock(&l->lock);
			fail(err, errlen, rc, "data log %s: open: %s", l->dir);
			break;
		}
		uint64_t want = s->size - off < chunk ? s->size - off : chunk;
		ssize_t r = pread(s->fd, buf, want, (off_t)off);
		if (r <= 0) {
			pthread_mutex_unlock(&l->lock);
			rc = r < 0 ? -errno : -EIO;
			fail(err, errlen, rc, "data log %s: read: %s", l->dir);
			break;
		}
		size_t at = 0;
		while (at + sizeof(struct rec) <= (size_t)r) {
			struct rec h;
			memcpy(&h, buf + at, sizeof(h));
			if (h.magic != MAGIC || (h.len != 0 && h.len != BS))
				break; /* a cut tail: nothing after it */
			if (at + RECSZ(h.len) > (size_t)r)
				break; /* the next chunk reads it whole */
			uint64_t roff = off + at;
			if (h.kind == K_BLOCK && h.block < l->nblocks &&
			    l->where[h.block] == pos_of(id, roff)) {
				struct iovec iov[2] = { { buf + at, sizeof(h) },
							{ buf + at + sizeof(h), BS } };
				struct rec *hp = (struct rec *)(void *)(buf + at);
				hp->flags |= F_GC;
				if (l->head->size >= l->seg_bytes && (rc = new_head(l, err, errlen)))
					break;
				hp->csum = hdr_csum(hp, l->head->seed); /* the head's seed */
				uint64_t dst = l->head->size;
				if ((rc = put(l, iov, 2, RECSZ(BS)))) {
					fail(err, errlen, rc, "data log %s: write: %s", l->dir);
					break;
				}
				s = seg_find(l, id); /* new_head may have moved the array */
				set_live(l, h.block, l->head, dst);
				l->st.copied_bytes += RECSZ(BS);
			}
			at += RECSZ(h.len);
		}
		pthread_mutex_unlock(&l->lock);
		if (rc || at == 0)
			break;
		off += at;
	}
	free(buf);
	return rc;
}

int arfd_datalog_reclaim(struct arfd_datalog *l, uint64_t durable, char *err, size_t errlen)
{
	int rc = 0;
	uint32_t victim = 0;

	pthread_mutex_lock(&l->lock);
	if (!l->head) {
		pthread_mutex_unlock(&l->lock);
		return 0;
	}
	int waiting = 0;
	for (size_t i = 0; i < l->nsegs;) {
		struct seg *s = &l->segs[i];
		if (s->victim && s->wait_seq <= durable && l->gen_done > s->wait_gen) {
			if ((rc = delete_seg(l, s, err, errlen)))
				break;
			continue;
		}
		waiting |= s->victim;
		i++;
	}
	if (!rc && !waiting) {
		/* the emptiest old segment, when the garbage is worth it */
		uint64_t garbage = l->st.bytes - l->st.live_bytes, best = UINT64_MAX;
		int worth = garbage > l->st.live_bytes && garbage > 4 * l->seg_bytes;
		for (size_t i = 0; i < l->nsegs; i++) {
			struct seg *s = &l->segs[i];
			if (s == l->head || (s->live && !worth))
				continue;
			/* a dead segment is always worth its deletion */
			uint64_t ratio = s->size ? s->live * 1000 / s->size : 0;
			if (ratio < best && ratio < 900) {
				best = ratio;
				victim = s->id;
			}
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (rc || !victim)
		return rc;
	if ((rc = copy_live(l, victim, err, errlen)))
		return rc;
	pthread_mutex_lock(&l->lock);
	struct seg *s = seg_find(l, victim);
	if (s) {
		s->victim = 1;
		s->wait_seq = UINT64_MAX;
		s->wait_gen = l->gen_started; /* a sync begun after the copies covers them */
	}
	pthread_mutex_unlock(&l->lock);
	return 1;
}

int arfd_datalog_dirty(struct arfd_datalog *l)
{
	pthread_mutex_lock(&l->lock);
	int dirty = l->dir_dirty || l->buflen;
	for (size_t i = 0; i < l->nsegs && !dirty; i++)
		dirty = l->segs[i].dirty;
	pthread_mutex_unlock(&l->lock);
	return dirty;
}

int arfd_datalog_reclaim_wanted(struct arfd_datalog *l)
{
	int want = 0;

	pthread_mutex_lock(&l->lock);
	if (l->head) {
		/* arfd_datalog_reclaim's choices: a victim to delete, a dead
		 * segment, or one mostly garbage when the garbage is worth it */
		uint64_t garbage = l->st.bytes - l->st.live_bytes;
		int worth = garbage > l->st.live_bytes && garbage > 4 * l->seg_bytes;
		for (size_t i = 0; i < l->nsegs && !want; i++) {
			struct seg *s = &l->segs[i];
			want = s->victim || (s != l->head && (!s->live || worth) &&
					     (s->size ? s->live * 1000 / s->size : 0) < 900);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return want;
}

void arfd_datalog_reclaim_wait(struct arfd_datalog *l, uint64_t applied)
{
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->nsegs; i++)
		if (l->segs[i].victim && l->segs[i].wait_seq == UINT64_MAX)
			l->segs[i].wait_seq = applied;
	pthread_mutex_unlock(&l->lock);
}

int arfd_datalog_compare(struct arfd_datalog *l, const uint8_t *data, uint64_t data_size,
			 void (*report)(void *ctx, const char *kind, const char *msg), void *ctx,
			 uint64_t *compared, char *err, size_t errlen)
{
	uint8_t *buf = malloc(RECSZ(BS));
	int diffs = 0, rc = 0;
	char msg[160];

	*compared = 0;
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&l->lock);
	if (l->buffered && l->head && (rc = flush_buf(l))) {
		fail(err, errlen, rc, "data log %s: write: %s", l->dir);
		goto out;
	}
	for (uint32_t b = 0; b < l->nblocks; b++) {
		uint64_t pos = l->where[b];
		if (!pos)
			continue;
		struct seg *s = seg_find(l, (uint32_t)(pos >> 32));
		if (!s || (rc = open_fd(l, s, O_RDONLY)) ||
		    pread(s->fd, buf, RECSZ(BS), (off_t)(uint32_t)pos) != (ssize_t)RECSZ(BS)) {
			snprintf(err, errlen, "data log %s: cannot read block %u's record", l->dir, b);
			rc = -EIO;
			goto out;
		}
		struct rec h;
		memcpy(&h, buf, sizeof(h));
		(*compared)++;
		const char *why = NULL;
		if (h.magic != MAGIC || h.kind != K_BLOCK || h.block != b ||
		    !rec_ok(&h, buf + sizeof(h), s->seed))
			why = "its data log record is damaged";
		else if ((uint64_t)(b + 1) * BS > data_size ||
			 memcmp(buf + sizeof(h), data + (uint64_t)b * BS, BS))
			why = "differs from its data log record";
		if (why) {
			snprintf(msg, sizeof(msg), "data block %u (offset %llu): %s", b,
				 (unsigned long long)b * BS, why);
			diffs++;
			if (report)
				report(ctx, "regions-diverge", msg);
		}
	}
out:
	pthread_mutex_unlock(&l->lock);
	free(buf);
	return rc ? rc : diffs;
}

void arfd_datalog_drop_spares(struct arfd_datalog *l)
{
	pthread_mutex_lock(&l->lock);
	(void)unlink_spares(l, 0, NULL, 0);
	pthread_mutex_unlock(&l->lock);
}

void arfd_datalog_stats(struct arfd_datalog *l, struct arfd_datalog_stats *s)
{
	pthread_mutex_lock(&l->lock);
	*s = l->st;
	pthread_mutex_unlock(&l->lock);
}
