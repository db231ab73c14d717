/* SPDX-License-Identifier: MIT */
/*
 * ops/ file space: where a file's bytes go, apart from plain writes.
 *
 *  - append: a write at the end of file as the server has it, chosen and
 *    written in one hook, so appends from several clients never overwrite
 *    each other (O_APPEND); the offset chosen is returned.
 *  - fallocate: mode 0 gives every hole in the range a zeroed block and
 *    extends the size; KEEP_SIZE the same without the size (blocks past
 *    the end of file are zeros, so a later extension reads zeros there);
 *    PUNCH_HOLE (with KEEP_SIZE, as Linux requires) frees the whole blocks
 *    of the range and zeroes the partial ones at its edges.  All or
 *    nothing: -ENOSPC changes nothing, as does a punch whose split map
 *    would not fit the inode.  ZERO_RANGE, COLLAPSE_RANGE, INSERT_RANGE
 *    and UNSHARE_RANGE are -EOPNOTSUPP: the extent layout has no unwritten
 *    extents to make them cheap.
 *  - seek: SEEK_DATA and SEEK_HOLE from the extent map (a preallocated
 *    block counts as data, as on filesystems without unwritten extents);
 *    -ENXIO at or past the end of file.
 * Permissions as for write (the owner may; otherwise write permission),
 * and seek as for read; set-id bits are cleared as a write clears them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define BS ARF_BLOCK_SIZE

/* The regular file (ino, gen) that cr may access with mask (the owner
 * always may, as at an NFS server: access was checked at open). */
static int regular(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		   int mask, const struct arf_meta_inode **inp)
{
	const struct arf_meta_inode *in = ops_inode(fs, ino, gen);

	if (!in)
		return -ESTALE;
	if (S_ISDIR(in->mode))
		return -EISDIR;
	if (!S_ISREG(in->mode))
		return -EINVAL;
	*inp = in;
	return !mask || cr->uid == in->uid ? 0 : arf_ops_permitted(in, cr, mask);
}

int arf_ops_append(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		   const void *buf, size_t len, uint64_t *off, size_t *written)
{
	const struct arf_meta_inode *in = NULL;
	int rc;

	*written = 0;
	if ((rc = regular(fs, cr, ino, gen, W_OK, &in)))
		return rc;
	*off = in->size; /* the caller holds the filesystem: nobody moves it meanwhile */
	return arf_ops_write(fs, cr, ino, gen, *off, buf, len, written);
}

/* Free the whole blocks [p0, p1] of in's map and zero the bytes
 * [off, end) of the blocks at its edges.  Everything is checked first. */
static int punch(struct arf_meta_fs *fs, uint64_t ino, uint64_t off, uint64_t end, int64_t now)
{
	const struct arf_meta_inode *in = arf_meta_inode_ptr(fs, ino);
	struct arf_meta_extent *a = NULL, *b = NULL;
	uint64_t p0 = (off + BS - 1) / BS, p1 = end / BS; /* whole blocks: [p0, p1) */
	uint32_t na = 0, nb = 0;
	uint64_t freed = 0;
	int rc;

	if ((rc = arf_meta_ext_load(fs, in, &a, &na)))
		return rc;
	b = malloc((na + 1) * sizeof(*b));
	if (!b) {
		rc = -ENOMEM;
		goto out;
	}
	/* the new map: each extent less [p0, p1), so at most one more extent */
	for (uint32_t i = 0; i < na; i++) {
		uint64_t s = a[i].fblk, e = a[i].fblk + a[i].len;
		if (p0 >= p1 || e <= p0 || s >= p1) {
			b[nb++] = a[i];
			continue;
		}
		if (s < p0)
			b[nb++] = (struct arf_meta_extent){ .fblk = s, .pblk = a[i].pblk,
							    .len = (uint32_t)(p0 - s) };
		if (e > p1)
			b[nb++] = (struct arf_meta_extent){ .fblk = p1,
							    .pblk = a[i].pblk + (uint32_t)(p1 - s),
							    .len = (uint32_t)(e - p1) };
		freed += (e < p1 ? e : p1) - (s > p0 ? s : p0);
	}
	if ((rc = arf_meta_ext_fits(fs, in, nb)) ||
	    (rc = arf_meta_txn_reserve(fs, (size_t)freed + 4 + OPS_TXN_BASE)))
		goto out;

	/* nothing can fail from here on */
	struct arf_meta_inode *t = arf_meta_inode_touch(fs, ino);
	for (uint32_t i = 0; i < na; i++) {
		uint64_t s = a[i].fblk, e = a[i].fblk + a[i].len;
		uint64_t c0 = s > p0 ? s : p0, c1 = e < p1 ? e : p1;
		if (p0 < p1 && c0 < c1)
			arf_meta_blocks_free(fs, a[i].pblk + (uint32_t)(c0 - s), (uint32_t)(c1 - c0));
	}
	/* the partial blocks at the edges, where mapped */
	uint64_t edges[2] = { off / BS, end / BS };
	for (int k = 0; k < 2; k++) {
		uint64_t f = edges[k];
		if ((k == 1 && f == edges[0]) || f * BS >= end || (f + 1) * BS <= off ||
		    (f * BS >= off && (f + 1) * BS <= end))
			continue; /* done already, outside the range, or a whole block */
		uint32_t j = arf_meta_ext_find(b, nb, f);
		if (j >= nb || b[j].fblk > f)
			continue; /* a hole reads as zeros already */
		uint32_t pblk = b[j].pblk + (uint32_t)(f - b[j].fblk);
		uint64_t z0 = off > f * BS ? off - f * BS : 0;
		uint64_t z1 = end < (f + 1) * BS ? end - f * BS : BS;
		uint8_t *blk = arf_meta_block_touch(fs, pblk);
		memset(blk + z0, 0, (size_t)(z1 - z0));
		arf_meta_tag_touch(fs, pblk)->data_csum = arf_meta_block_csum(blk);
	}
	arf_meta_ext_store(fs, t, b, nb); /* fits: checked above */
	t->blocks -= freed;
	t->mtime_ns = t->ctime_ns = now;
out:
	free(a);
	free(b);
	return rc;
}

int arf_ops_fallocate(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino,
		      uint32_t gen, uint32_t mode, uint64_t off, uint64_t len,
		      struct arf_ops_attr *out)
{
	const struct arf_meta_inode *in = NULL;
	int rc;

	if ((rc = regular(fs, cr, ino, gen, W_OK, &in)))
		return rc;
	if (mode & ~(ARF_OPS_FALLOC_KEEP_SIZE | ARF_OPS_FALLOC_PUNCH_HOLE))
		return -EOPNOTSUPP;
	if ((mode & ARF_OPS_FALLOC_PUNCH_HOLE) && !(mode & ARF_OPS_FALLOC_KEEP_SIZE))
		return -EOPNOTSUPP; /* as Linux: a punch never changes the size */
	if (len == 0)
		return -EINVAL;
	if (off >= ARF_OPS_MAX_FILE_SIZE || len > ARF_OPS_MAX_FILE_SIZE - off)
		return -EFBIG;
	int64_t now = ops_now();
	if (mode & ARF_OPS_FALLOC_PUNCH_HOLE) {
		if ((rc = punch(fs, ino, off, off + len, now)))
			return rc;
	} else {
		if ((rc = ops_data_alloc(fs, ino, off, len)))
			return rc;
		/* the inode is touched already: nothing more to reserve */
		struct arf_meta_inode *t = arf_meta_inode_touch(fs, ino);
		if (!(mode & ARF_OPS_FALLOC_KEEP_SIZE) && off + len > t->size) {
			t->size = off + len;
			t->mtime_ns = now;
		}
		t->ctime_ns = now;
	}
	in = arf_meta_inode_ptr(fs, ino);
	if (cr->uid != 0 && (in->mode & (S_ISUID | S_ISGID)))
		ops_kill_suid(arf_meta_inode_touch(fs, ino));
	ops_attr(arf_meta_inode_ptr(fs, ino), out);
	return 0;
}

int arf_ops_seek(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		 uint64_t off, uint32_t whence, uint64_t *result)
{
	const struct arf_meta_inode *in = NULL;
	struct arf_meta_extent *a = NULL;
	uint32_t na = 0;
	int rc;

	if (whence != ARF_OPS_SEEK_DATA && whence != ARF_OPS_SEEK_HOLE)
		return -EINVAL;
	if ((rc = regular(fs, cr, ino, gen, 0, &in)))
		return rc;
	if (off >= in->size)
		return -ENXIO;
	if ((rc = arf_meta_ext_load(fs, in, &a, &na)))
		return rc;
	uint32_t i = arf_meta_ext_find(a, na, off / BS);
	if (whence == ARF_OPS_SEEK_DATA) {
		rc = -ENXIO;
		if (i < na) {
			uint64_t start = a[i].fblk * BS;
			uint64_t pos = start > off ? start : off;
			if (pos < in->size) {
				*result = pos;
				rc = 0;
			}
		}
	} else {
		uint64_t cur = off;
		for (; i < na && a[i].fblk * BS <= cur; i++)
			cur = (a[i].fblk + a[i].len) * BS; /* contiguous data goes on */
		*result = cur < in->size ? cur : in->size;
	}
	free(a);
	return rc;
}
