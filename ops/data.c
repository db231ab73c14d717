/* SPDX-License-Identifier: MIT */
/*
 * ops/ file data: write, read and truncate over a file's extent map.
 *
 * A write first plans everything on private copies: which blocks of the
 * range are holes, how many free blocks that takes (a write that does not
 * fit is cut to the prefix that does), which runs the allocator hands out
 * (each run starts where the previous extent ends when it can, so sequential
 * writes keep one extent), and the merged map, which must fit the inode.
 * Only then does it touch: each block in the range, its tag (owner, fblk and
 * checksum, in the same transaction as the bytes), the map and the inode.
 * A new block starts as zeros; a partial write into an existing block reads,
 * modifies and writes the live block.  Bytes past EOF in the last block are
 * always zero (truncate clears them), so extending a file needs no zeroing.
 * Preallocation (fallocate, space.c) runs the same plan without bytes: each
 * hole gets a zeroed block, or nothing changes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define BS ARF_BLOCK_SIZE

/* One run of freshly allocated blocks. */
struct run {
	uint64_t fblk; /* first file block it maps */
	uint32_t pblk; /* first data block */
	uint32_t len;  /* blocks */
};

/* Gaps (unmapped blocks) in [f0, f1] of a sorted map, in order: the
 * callback gets each gap [g0, g1] and the data block right after the extent
 * before it (UINT32_MAX if none), and returns nonzero to stop. */
typedef int (*gap_fn)(void *ctx, uint64_t g0, uint64_t g1, uint32_t prev_end);

static int each_gap(const struct arf_meta_extent *ext, uint32_t n, uint64_t f0, uint64_t f1,
		    gap_fn fn, void *ctx)
{
	uint32_t i = arf_meta_ext_find(ext, n, f0);
	uint64_t cur = f0;
	int rc;

	while (cur <= f1) {
		if (i < n && ext[i].fblk <= cur) {
			cur = ext[i].fblk + ext[i].len;
			i++;
			continue;
		}
		uint64_t g1 = (i < n && ext[i].fblk - 1 < f1) ? ext[i].fblk - 1 : f1;
		uint32_t prev_end = i > 0 ? ext[i - 1].pblk + ext[i - 1].len : UINT32_MAX;
		if ((rc = fn(ctx, cur, g1, prev_end)))
			return rc;
		cur = g1 + 1;
	}
	return 0;
}

/* Counting holes against a budget of free blocks. */
struct budget {
	uint64_t need;   /* holes counted so far */
	uint64_t budget; /* free blocks */
	uint64_t end;    /* last block the write may cover */
	int cut;         /* the write had to be cut at end */
};

static int count_gap(void *ctx, uint64_t g0, uint64_t g1, uint32_t prev_end)
{
	struct budget *b = ctx;
	uint64_t len = g1 - g0 + 1;

	(void)prev_end;
	if (b->need + len > b->budget) {
		b->end = g0 + (b->budget - b->need) - 1; /* g0 - 1 when nothing is left */
		b->need = b->budget;
		b->cut = 1;
		return 1;
	}
	b->need += len;
	return 0;
}

/* Allocating runs for the holes. */
struct plan {
	struct arf_meta_fs *fs; /* whose allocator */
	struct run *runs;       /* malloc'd, in file order */
	size_t nruns;           /* runs in use */
	size_t cap;             /* runs allocated */
	uint64_t got;           /* blocks reserved so far */
};

static int alloc_gap(void *ctx, uint64_t g0, uint64_t g1, uint32_t prev_end)
{
	struct plan *p = ctx;
	uint32_t goal = p->nruns && p->runs[p->nruns - 1].fblk + p->runs[p->nruns - 1].len == g0
				? p->runs[p->nruns - 1].pblk + p->runs[p->nruns - 1].len
				: prev_end;

	for (uint64_t f = g0; f <= g1;) {
		uint64_t want = g1 - f + 1;
		uint32_t pblk, got;
		if (p->nruns == p->cap) {
			size_t cap = p->cap ? p->cap * 2 : 16;
			struct run *r = realloc(p->runs, cap * sizeof(*r));
			if (!r)
				return -ENOMEM;
			p->runs = r;
			p->cap = cap;
		}
		if (arf_meta_blocks_alloc(p->fs, goal, want > UINT32_MAX ? UINT32_MAX : (uint32_t)want,
					  &pblk, &got))
			return -ENOSPC;
		p->runs[p->nruns++] = (struct run){ .fblk = f, .pblk = pblk, .len = got };
		p->got += got;
		f += got;
		goal = pblk + got;
	}
	return 0;
}

static void plan_undo(struct plan *p)
{
	for (size_t i = 0; i < p->nruns; i++)
		arf_meta_blocks_unreserve(p->fs, p->runs[i].pblk, p->runs[i].len);
	p->nruns = 0;
}

/* Append e to a map being built, merging it with the last extent when both
 * file and data blocks continue. */
static void push(struct arf_meta_extent *out, uint32_t *n, uint64_t fblk, uint32_t pblk, uint32_t len)
{
	if (*n) {
		struct arf_meta_extent *l = &out[*n - 1];
		if (l->fblk + l->len == fblk && l->pblk + l->len == pblk &&
		    (uint64_t)l->len + len <= UINT32_MAX) {
			l->len += len;
			return;
		}
	}
	out[(*n)++] = (struct arf_meta_extent){ .fblk = fblk, .pblk = pblk, .len = len };
}

/* Write buf into [off, off + len) of ino, or (buf NULL: preallocation)
 * give every hole in the range a zeroed block, all or nothing, leaving
 * mapped blocks, size and times alone. */
static int fill(struct arf_meta_fs *fs, uint64_t ino, uint64_t off, const void *buf,
		size_t len, size_t *written, int64_t now)
{
	const struct arf_meta_inode *in = arf_meta_inode_ptr(fs, ino);
	struct arf_meta_extent *a = NULL, *b = NULL;
	struct plan plan = { .fs = fs };
	struct budget bud = { 0 };
	uint32_t na = 0, nb = 0;
	uint64_t f0, f1;
	int rc;

	*written = 0;
	if (len == 0)
		return 0;
	if (off >= ARF_OPS_MAX_FILE_SIZE)
		return -EFBIG;
	if (len > ARF_OPS_MAX_FILE_SIZE - off)
		len = (size_t)(ARF_OPS_MAX_FILE_SIZE - off);
	f0 = off / BS;
	f1 = (off + len - 1) / BS;
	if ((rc = arf_meta_ext_load(fs, in, &a, &na)))
		return rc;

	/* how much fits in the free blocks */
	bud.budget = fs->free_blocks;
	bud.end = f1;
	each_gap(a, na, f0, f1, count_gap, &bud);
	if (bud.cut) {
		if (!buf || bud.end < f0 || bud.end == UINT64_MAX) {
			rc = -ENOSPC;
			goto out;
		}
		f1 = bud.end;
		len = (size_t)((f1 + 1) * BS - off);
	}

	/* reserve the runs, build the new map, check it fits */
	if ((rc = each_gap(a, na, f0, f1, alloc_gap, &plan)))
		goto undo;
	b = malloc((na + plan.nruns + 1) * sizeof(*b));
	if (!b) {
		rc = -ENOMEM;
		goto undo;
	}
	for (uint32_t i = 0, j = 0; i < na || j < plan.nruns;) {
		if (j >= plan.nruns || (i < na && a[i].fblk < plan.runs[j].fblk)) {
			push(b, &nb, a[i].fblk, a[i].pblk, a[i].len);
			i++;
		} else {
			push(b, &nb, plan.runs[j].fblk, plan.runs[j].pblk, plan.runs[j].len);
			j++;
		}
	}
	if ((rc = arf_meta_ext_fits(fs, in, nb)))
		goto undo;
	if ((rc = arf_meta_txn_reserve(fs, (size_t)(buf ? f1 - f0 + 1 : plan.got) * 2 +
					       OPS_TXN_BASE)))
		goto undo;

	/* nothing can fail from here on */
	struct arf_meta_inode *t = arf_meta_inode_touch(fs, ino);
	const uint8_t *src = buf;
	uint32_t ia = arf_meta_ext_find(a, na, f0), ib = arf_meta_ext_find(b, nb, f0);
	for (uint64_t f = f0; f <= f1; f++) {
		while (ib < nb && b[ib].fblk + b[ib].len <= f)
			ib++;
		while (ia < na && a[ia].fblk + a[ia].len <= f)
			ia++;
		uint32_t pblk = b[ib].pblk + (uint32_t)(f - b[ib].fblk);
		int fresh = !(ia < na && a[ia].fblk <= f);
		if (!buf && !fresh)
			continue; /* preallocation: a mapped block keeps its bytes */
		size_t bs = f == f0 ? (size_t)(off % BS) : 0;
		size_t be = f == f1 ? (size_t)((off + len - 1) % BS) + 1 : BS;
		uint8_t *blk = arf_meta_block_touch(fs, pblk);
		if (!buf) {
			memset(blk, 0, BS);
		} else {
			if (fresh && (bs || be < BS))
				memset(blk, 0, BS);
			memcpy(blk + bs, src, be - bs);
			src += be - bs;
		}
		struct arf_meta_tag *tag = arf_meta_tag_touch(fs, pblk);
		tag->ino = ino;
		tag->gen = t->gen;
		tag->pad0 = 0;
		tag->fblk = f;
		tag->data_csum = arf_meta_block_csum(blk);
	}
	arf_meta_ext_store(fs, t, b, nb); /* fits: checked above */
	t->blocks += plan.got;
	if (buf && off + len > t->size)
		t->size = off + len;
	if (buf)
		t->mtime_ns = t->ctime_ns = now;
	*written = len;
	rc = 0;
	goto out;
undo:
	plan_undo(&plan);
out:
	free(plan.runs);
	free(a);
	free(b);
	return rc;
}

int ops_data_write(struct arf_meta_fs *fs, uint64_t ino, uint64_t off, const void *buf,
		   size_t len, size_t *written, int64_t now)
{
	return buf || !len ? fill(fs, ino, off, buf, len, written, now) : -EINVAL;
}

int ops_data_alloc(struct arf_meta_fs *fs, uint64_t ino, uint64_t off, uint64_t len)
{
	size_t done;
	return fill(fs, ino, off, NULL, (size_t)len, &done, 0);
}

int ops_data_read(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint64_t off,
		  void *buf, size_t len, size_t *nread)
{
	struct arf_meta_extent *a;
	uint32_t na, i;
	uint8_t *dst = buf;
	int rc;

	*nread = 0;
	if (off >= in->size || len == 0)
		return 0;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	if ((rc = arf_meta_ext_load(fs, in, &a, &na)))
		return rc;
	i = arf_meta_ext_find(a, na, off / BS);
	for (size_t pos = 0; pos < len;) {
		uint64_t f = (off + pos) / BS;
		size_t bo = (size_t)((off + pos) % BS), chunk = BS - bo;
		if (chunk > len - pos)
			chunk = len - pos;
		while (i < na && a[i].fblk + a[i].len <= f)
			i++;
		if (i < na && a[i].fblk <= f)
			memcpy(dst + pos,
			       arf_meta_block_ptr(fs, a[i].pblk + (uint32_t)(f - a[i].fblk)) + bo, chunk);
		else
			memset(dst + pos, 0, chunk);
		pos += chunk;
	}
	free(a);
	*nread = len;
	return 0;
}

int ops_data_truncate_prepare(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint64_t size,
			      struct arf_meta_extent **ext, uint32_t *n)
{
	int rc;

	*ext = NULL;
	*n = 0;
	if (size >= in->size)
		return 0;
	if ((rc = arf_meta_ext_load(fs, in, ext, n)))
		return rc;
	if ((rc = arf_meta_txn_reserve(fs, (size_t)in->blocks + OPS_TXN_BASE))) {
		free(*ext);
		*ext = NULL;
	}
	return rc;
}

void ops_data_truncate(struct arf_meta_fs *fs, struct arf_meta_inode *in, uint64_t size,
		       struct arf_meta_extent *ext, uint32_t n)
{
	uint64_t keep = (size + BS - 1) / BS, freed = 0;
	uint32_t k = 0;

	if (size >= in->size || !ext) {
		in->size = size;
		free(ext);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct arf_meta_extent e = ext[i];
		if (e.fblk >= keep) {
			arf_meta_blocks_free(fs, e.pblk, e.len);
			freed += e.len;
			continue;
		}
		if (e.fblk + e.len > keep) {
			uint32_t cut = (uint32_t)(keep - e.fblk);
			arf_meta_blocks_free(fs, e.pblk + cut, e.len - cut);
			freed += e.len - cut;
			e.len = cut;
		}
		ext[k++] = e;
	}
	if (size % BS) {
		uint64_t f = size / BS;
		uint32_t i = arf_meta_ext_find(ext, k, f);
		if (i < k && ext[i].fblk <= f) {
			uint32_t pblk = ext[i].pblk + (uint32_t)(f - ext[i].fblk);
			uint8_t *blk = arf_meta_block_touch(fs, pblk);
			memset(blk + size % BS, 0, BS - size % BS);
			arf_meta_tag_touch(fs, pblk)->data_csum = arf_meta_block_csum(blk);
		}
	}
	arf_meta_ext_store(fs, in, ext, k); /* fewer extents: always fits */
	in->blocks -= freed;
	in->size = size;
	free(ext);
}

/* ---- hooks ---- */

/* The regular file (ino, gen) in *inp, if cr may read or write it (mask):
 * -ESTALE, -EISDIR, -EINVAL (not a regular file), or the permission
 * check's error.  As at an NFS server, the owner may (permission was
 * checked at open). */
static int data_file(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino,
		     uint32_t gen, int mask, const struct arf_meta_inode **inp)
{
	const struct arf_meta_inode *in = ops_inode(fs, ino, gen);

	if (!in)
		return -ESTALE;
	if (S_ISDIR(in->mode))
		return -EISDIR;
	if (!S_ISREG(in->mode))
		return -EINVAL;
	*inp = in;
	return cr->uid == in->uid ? 0 : arf_ops_permitted(in, cr, mask);
}

int arf_ops_write(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		  uint64_t off, const void *buf, size_t len, size_t *written)
{
	const struct arf_meta_inode *in = NULL;
	int rc;

	*written = 0;
	if ((rc = data_file(fs, cr, ino, gen, W_OK, &in)))
		return rc;
	rc = ops_data_write(fs, ino, off, buf, len, written, ops_now());
	if (!rc && *written && cr->uid != 0 && (in->mode & (S_ISUID | S_ISGID)))
		ops_kill_suid(arf_meta_inode_touch(fs, ino));
	return rc;
}

int arf_ops_read(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		 uint64_t off, void *buf, size_t len, size_t *nread)
{
	const struct arf_meta_inode *in = NULL;
	int rc;

	*nread = 0;
	if ((rc = data_file(fs, cr, ino, gen, R_OK, &in)))
		return rc;
	return ops_data_read(fs, in, off, buf, len, nread);
}

int arf_ops_readlink(struct arf_meta_fs *fs, uint64_t ino, uint32_t gen, char *buf, size_t cap,
		     size_t *len)
{
	const struct arf_meta_inode *in = ops_inode(fs, ino, gen);

	*len = 0;
	if (!in)
		return -ESTALE;
	if (!S_ISLNK(in->mode))
		return -EINVAL;
	return ops_data_read(fs, in, 0, buf, cap, len);
}
