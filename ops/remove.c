/* SPDX-License-Identifier: MIT */
/*
 * ops/ hooks that remove a name: unlink and rmdir.
 *
 * Linux's order of checks: "." and ".." first (unlink: -EISDIR; rmdir "."
 * -EINVAL, ".." -ENOTEMPTY), the name (-ENOENT), write and search permission
 * on the directory (-EACCES), the sticky bit (-EPERM: only the owner of the
 * file or of the directory, or root), then the type (-EISDIR, -ENOTDIR) and
 * emptiness (-ENOTEMPTY).  An inode whose last link goes away is freed at
 * once with its blocks or listing pages (clients that keep files open
 * across an unlink rename them aside first, as NFS clients do).
 */
#include <errno.h>
#include <unistd.h>

#include "ops_int.h"

static int remove_name(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir,
		       uint32_t dgen, const char *name, size_t len, int want_dir)
{
	struct arf_meta_inode *d, *c;
	const struct arf_meta_dirent *e;
	uint32_t idx;
	int rc, dot;

	if ((rc = ops_dir_begin(fs, cr, dir, dgen, name, len, &d)))
		return rc;
	if ((dot = ops_dot(name, len)))
		return !want_dir ? -EISDIR : dot == 1 ? -EINVAL : -ENOTEMPTY;
	if ((rc = arf_meta_dir_find(fs, dir, name, len, &idx)))
		return rc;
	e = arf_meta_entry_ptr(fs, idx);
	c = ops_inode(fs, e->child, e->child_gen);
	if (!c)
		return -ESTALE;
	if ((rc = arf_ops_permitted(d, cr, W_OK | X_OK)))
		return rc;
	if ((rc = ops_sticky_ok(d, c, cr)))
		return rc;
	if (want_dir && !S_ISDIR(c->mode))
		return -ENOTDIR;
	if (!want_dir && S_ISDIR(c->mode))
		return -EISDIR;
	if (want_dir && c->size > 0)
		return -ENOTEMPTY;
	if ((rc = arf_meta_txn_reserve(fs, (size_t)c->blocks + OPS_TXN_BASE)))
		return rc;

	int64_t now = ops_now();
	uint64_t child = c->ino;
	arf_meta_dir_remove(fs, idx);
	d = arf_meta_inode_touch(fs, dir);
	d->size--;
	d->mtime_ns = d->ctime_ns = now;
	c = arf_meta_inode_touch(fs, child);
	if (want_dir) {
		d->nlink--;
		c->nlink = 0;
	} else {
		c->nlink--;
		c->ctime_ns = now;
	}
	if (c->nlink == 0)
		ops_release(fs, child);
	return 0;
}

int arf_ops_unlink(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		   const char *name, size_t len)
{
	return remove_name(fs, cr, dir, dgen, name, len, 0);
}

int arf_ops_rmdir(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len)
{
	return remove_name(fs, cr, dir, dgen, name, len, 1);
}
