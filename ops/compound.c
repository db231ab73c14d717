/* SPDX-License-Identifier: MIT */
/*
 * ops/ compound hooks: a small file made whole in one call.
 *
 * tar, rsync and git write many small files, each with open(O_CREAT|O_EXCL),
 * one or two writes, fchown/fchmod/futimens and close: five round trips for
 * a file of a few hundred bytes.  arf_ops_create_write does them in one
 * transaction by calling the hooks in that order, so every rule is theirs
 * (create's checks on the directory and the name, write's block accounting,
 * setattr's ownership rules for the caller).  Create and write reserve
 * before they touch, but the steps after the file exists can still fail
 * (-ENOSPC part-way through the data, -EPERM for a chown the caller may not
 * do); then the new name is removed again, which frees the inode and its
 * blocks, and the directory's times are put back, so the caller sees a
 * failure and the directory as it was.
 */
#include <errno.h>
#include <string.h>

#include "ops_int.h"

/* Take back a file this call made: its name, its inode and blocks (as root:
 * the caller was allowed to make it, so it may unmake it), then the
 * directory's times as they were before. */
static void unmake(struct arf_meta_fs *fs, uint64_t dir, uint32_t dgen, const char *name,
		   size_t nlen, int64_t mtime_ns, int64_t ctime_ns)
{
	static const struct arf_cred root = { 0 };

	if (arf_ops_unlink(fs, &root, dir, dgen, name, nlen))
		return; /* cannot happen: the name is ours, under the caller's lock */
	struct arf_meta_inode *d = arf_meta_inode_touch(fs, dir);
	d->mtime_ns = mtime_ns;
	d->ctime_ns = ctime_ns;
}

int arf_ops_create_write(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir,
			 uint32_t dgen, const char *name, size_t nlen, uint32_t mode,
			 const void *data, size_t len, const struct arf_ops_setattr *sa,
			 struct arf_ops_attr *out)
{
	const struct arf_meta_inode *d = ops_inode(fs, dir, dgen);
	struct arf_ops_attr a;
	int rc;

	if (!d)
		return -ESTALE;
	if (sa && (sa->valid & ARF_OPS_SET_SIZE))
		return -EINVAL;
	if (len > ARF_OPS_MAX_FILE_SIZE)
		return -EFBIG;
	int64_t mtime = d->mtime_ns, ctime = d->ctime_ns;
	if ((rc = arf_ops_create(fs, cr, dir, dgen, name, nlen, mode, 1, &a)))
		return rc;
	if (len) {
		size_t written = 0;
		rc = arf_ops_write(fs, cr, a.ino, a.gen, 0, data, len, &written);
		if (!rc && written < len)
			rc = -ENOSPC;
		if (rc)
			goto undo;
	}
	if (sa && sa->valid) {
		if ((rc = arf_ops_setattr(fs, cr, a.ino, a.gen, sa, &a)))
			goto undo;
	} else if (len) {
		ops_attr(ops_inode(fs, a.ino, a.gen), &a);
	}
	*out = a;
	return 0;
undo:
	unmake(fs, dir, dgen, name, nlen, mtime, ctime);
	return rc;
}
