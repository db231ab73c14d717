/* SPDX-License-Identifier: MIT */
/*
 * ops/ server-side copy: copy_file_range(2) and NFS 4.2's COPY, done next
 * to the data so that the bytes never cross the network.
 *
 * Blocks are copied, not shared: a data block's tag names one owner (inode,
 * generation, file block), which is what lets a one-sided reader holding a
 * stale map reject another file's block; sharing would need reference-
 * counted copy-on-write extents that readers can validate.  So the copy
 * reads the source range (ops_data_read) and writes it through the normal
 * write path (ops_data_write: allocation, tags, checksums, the map), one
 * run at a time, where a run is a stretch that is either all data or all
 * hole in the source.  A hole run is written (as zeros) only where the
 * destination had data before; elsewhere it is skipped, and the size is
 * extended at the end, which is enough since unmapped blocks and the bytes
 * past EOF in the last block read as zeros.
 *
 * A call copies at most ARF_OPS_COPY_MAX bytes, so that one request holds
 * the filesystem for a bounded time; a short count is a valid answer to
 * copy_file_range, and clients loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define BS ARF_BLOCK_SIZE

/* A regular file the caller may access with mask (the owner may, as for
 * read and write, since the open was checked). */
static int copy_file(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		     int mask, const struct arf_meta_inode **out)
{
	const struct arf_meta_inode *in = ops_inode(fs, ino, gen);

	if (!in)
		return -ESTALE;
	if (S_ISDIR(in->mode))
		return -EISDIR;
	if (!S_ISREG(in->mode))
		return -EINVAL;
	*out = in;
	return cr->uid == in->uid ? 0 : arf_ops_permitted(in, cr, mask);
}

/* Is file block f mapped in ext[0..n)? */
static int mapped(const struct arf_meta_extent *ext, uint32_t n, uint64_t f)
{
	uint32_t i = arf_meta_ext_find(ext, n, f);
	return i < n && ext[i].fblk <= f;
}

/* Does any block of bytes [off, off + len) have data in ext[0..n)? */
static int any_mapped(const struct arf_meta_extent *ext, uint32_t n, uint64_t off, uint64_t len)
{
	uint64_t f0 = off / BS, f1 = (off + len - 1) / BS;
	uint32_t i = arf_meta_ext_find(ext, n, f0);
	return i < n && ext[i].fblk <= f1;
}

int arf_ops_copy(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t src, uint32_t sgen,
		 uint64_t soff, uint64_t dst, uint32_t dgen, uint64_t doff, uint64_t len,
		 uint64_t *copied)
{
	const struct arf_meta_inode *sin = NULL, *din = NULL;
	struct arf_meta_extent *sext = NULL, *dext = NULL;
	uint32_t ns = 0, nd = 0;
	uint8_t *buf = NULL;
	size_t got = 0, done = 0;
	int rc;

	*copied = 0;
	if ((rc = copy_file(fs, cr, src, sgen, R_OK, &sin)) ||
	    (rc = copy_file(fs, cr, dst, dgen, W_OK, &din)))
		return rc;
	if (soff > UINT64_MAX - len || doff > UINT64_MAX - len)
		return -EOVERFLOW;
	if (src == dst && soff < doff + len && doff < soff + len && len)
		return -EINVAL; /* one file, overlapping ranges */
	if (len == 0 || soff >= sin->size)
		return 0;
	if (doff >= ARF_OPS_MAX_FILE_SIZE)
		return -EFBIG;
	if (len > sin->size - soff)
		len = sin->size - soff;
	if (len > ARF_OPS_COPY_MAX)
		len = ARF_OPS_COPY_MAX;
	if (len > ARF_OPS_MAX_FILE_SIZE - doff)
		len = ARF_OPS_MAX_FILE_SIZE - doff;

	if (!(buf = malloc((size_t)len)) || (rc = arf_meta_ext_load(fs, sin, &sext, &ns)) ||
	    (rc = arf_meta_ext_load(fs, din, &dext, &nd))) {
		rc = rc ? rc : -ENOMEM;
		goto out;
	}
	if ((rc = arf_meta_txn_reserve(fs, OPS_TXN_BASE)) ||
	    (rc = ops_data_read(fs, sin, soff, buf, (size_t)len, &got)))
		goto out;

	int64_t now = ops_now();
	while (done < got) {
		/* one run: bytes whose source blocks are all mapped, or all holes */
		int data = mapped(sext, ns, (soff + done) / BS);
		size_t end = done;
		while (end < got && mapped(sext, ns, (soff + end) / BS) == data) {
			size_t next = (size_t)(((soff + end) / BS + 1) * BS - soff);
			end = next < got ? next : got;
		}
		if (data || any_mapped(dext, nd, doff + done, end - done)) {
			size_t want = end - done, w = 0;
			rc = ops_data_write(fs, dst, doff + done, buf + done, want, &w, now);
			done += w;
			if (rc || w < want)
				break; /* out of space part-way: what fits is the answer */
		} else {
			done = end;
		}
	}
	if (done && rc == -ENOSPC)
		rc = 0;
	if (done) {
		struct arf_meta_inode *t = arf_meta_inode_touch(fs, dst);
		if (doff + done > t->size)
			t->size = doff + done; /* a trailing hole run was skipped */
		t->mtime_ns = t->ctime_ns = now;
		if (cr->uid != 0 && (t->mode & (S_ISUID | S_ISGID)))
			ops_kill_suid(t);
	}
	*copied = done;
out:
	free(buf);
	free(sext);
	free(dext);
	return rc;
}
