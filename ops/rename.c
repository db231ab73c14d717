/* SPDX-License-Identifier: MIT */
/*
 * ops/ rename, in one directory or across two, with RENAME_NOREPLACE and
 * RENAME_EXCHANGE.
 *
 * POSIX replacement rules: a file may replace a file, a directory an empty
 * directory (-ENOTEMPTY otherwise); a directory over a file is -ENOTDIR, a
 * file over a directory -EISDIR; two names of the same inode make rename a
 * successful no-op.  A directory cannot move into its own subtree (-EINVAL),
 * and a target that is an ancestor of the source is -ENOTEMPTY.  A directory
 * moving to another parent needs write permission on itself (its ".."
 * changes).  "." or ".." as either name is -EINVAL (Linux says -EBUSY).
 *
 * A replaced target keeps its directory entry, which is pointed at the
 * source (so the name never disappears, and it keeps its readdir cookie);
 * the target inode loses that link and is freed when it has no more.  An
 * exchange swaps what the two entries point at.
 */
#include <errno.h>
#include <unistd.h>

#include "ops_int.h"

/* True if `a` is dir or one of its ancestors. */
static int is_ancestor(struct arf_meta_fs *fs, uint64_t a, uint64_t dir)
{
	uint64_t x = dir;

	for (uint32_t hops = 0; hops <= fs->sb->n_inodes; hops++) {
		if (x == a)
			return 1;
		if (x == ARF_ROOT_INO || x == 0 || x > fs->sb->n_inodes)
			return 0;
		const struct arf_meta_inode *in = arf_meta_inode_ptr(fs, x);
		if (in->parent == x)
			return 0;
		x = in->parent;
	}
	return 0;
}

int arf_ops_rename(struct arf_meta_fs *fs, const struct arf_cred *cr,
		   uint64_t odir, uint32_t ogen, const char *oname, size_t olen,
		   uint64_t ndir, uint32_t ngen, const char *nname, size_t nlen, uint32_t flags)
{
	const uint32_t xchg = flags & ARF_OPS_RENAME_EXCHANGE;
	struct arf_meta_inode *od, *nd, *src, *tgt = NULL;
	struct arf_meta_dir_res res;
	uint32_t sidx, tidx = ARF_META_NONE;
	int rc;

	if (flags & ~(ARF_OPS_RENAME_NOREPLACE | ARF_OPS_RENAME_EXCHANGE) ||
	    (xchg && (flags & ARF_OPS_RENAME_NOREPLACE)))
		return -EINVAL;
	if ((rc = ops_dir_begin(fs, cr, odir, ogen, oname, olen, &od)) ||
	    (rc = ops_dir_begin(fs, cr, ndir, ngen, nname, nlen, &nd)))
		return rc;
	if (ops_dot(oname, olen) || ops_dot(nname, nlen))
		return -EINVAL;
	if ((rc = arf_meta_dir_find(fs, odir, oname, olen, &sidx)))
		return rc;
	const struct arf_meta_dirent *se = arf_meta_entry_ptr(fs, sidx);
	if (!(src = ops_inode(fs, se->child, se->child_gen)))
		return -ESTALE;
	if (!arf_meta_dir_find(fs, ndir, nname, nlen, &tidx)) {
		const struct arf_meta_dirent *te = arf_meta_entry_ptr(fs, tidx);
		if (!(tgt = ops_inode(fs, te->child, te->child_gen)))
			return -ESTALE;
	}
	if (xchg && !tgt)
		return -ENOENT;
	if ((flags & ARF_OPS_RENAME_NOREPLACE) && tgt)
		return -EEXIST;

	/* loops */
	if (S_ISDIR(src->mode) && is_ancestor(fs, src->ino, ndir))
		return -EINVAL;
	if (tgt && S_ISDIR(tgt->mode) && is_ancestor(fs, tgt->ino, odir))
		return xchg ? -EINVAL : -ENOTEMPTY;
	if (tgt && tgt->ino == src->ino)
		return 0;

	/* permissions */
	if ((rc = arf_ops_permitted(od, cr, W_OK | X_OK)) || (rc = ops_sticky_ok(od, src, cr)))
		return rc;
	if ((rc = arf_ops_permitted(nd, cr, W_OK | X_OK)))
		return rc;
	if (tgt && (rc = ops_sticky_ok(nd, tgt, cr)))
		return rc;
	if (tgt && !xchg) {
		if (S_ISDIR(src->mode) && !S_ISDIR(tgt->mode))
			return -ENOTDIR;
		if (!S_ISDIR(src->mode) && S_ISDIR(tgt->mode))
			return -EISDIR;
	}
	if (odir != ndir) {
		if (S_ISDIR(src->mode) && (rc = arf_ops_permitted(src, cr, W_OK)))
			return rc;
		if (xchg && S_ISDIR(tgt->mode) && (rc = arf_ops_permitted(tgt, cr, W_OK)))
			return rc;
	}
	if (tgt && !xchg && S_ISDIR(tgt->mode) && tgt->size > 0)
		return -ENOTEMPTY;
	if (odir != ndir) {
		int sdir = S_ISDIR(src->mode), tdir = tgt && S_ISDIR(tgt->mode);
		if (sdir && (xchg ? !tdir : !tgt) && nd->nlink >= OPS_LINK_MAX)
			return -EMLINK;
		if (xchg && tdir && !sdir && od->nlink >= OPS_LINK_MAX)
			return -EMLINK;
	}

	/* reserve */
	if ((rc = arf_meta_txn_reserve(fs, OPS_TXN_BASE + (tgt && !xchg ? (size_t)tgt->blocks : 0))))
		return rc;
	if (!tgt && (rc = arf_meta_dir_reserve(fs, nd, nname, nlen, &res)))
		return rc;

	/* apply */
	int64_t now = ops_now();
	uint64_t sino = src->ino;
	uint32_t sgen = src->gen;
	uint8_t stype = arf_meta_dtype(src->mode);
	int sdir = S_ISDIR(src->mode);
	src = arf_meta_inode_touch(fs, sino);
	if (xchg) {
		uint64_t tino = tgt->ino;
		int tdir = S_ISDIR(tgt->mode);
		arf_meta_dir_retarget(fs, sidx, tino, tgt->gen, arf_meta_dtype(tgt->mode));
		arf_meta_dir_retarget(fs, tidx, sino, sgen, stype);
		tgt = arf_meta_inode_touch(fs, tino);
		od = arf_meta_inode_touch(fs, odir);
		nd = arf_meta_inode_touch(fs, ndir);
		if (odir != ndir) {
			if (sdir) {
				src->parent = ndir;
				od->nlink--;
				nd->nlink++;
			}
			if (tdir) {
				tgt->parent = odir;
				nd->nlink--;
				od->nlink++;
			}
		}
		tgt->ctime_ns = now;
	} else if (tgt) {
		uint64_t tino = tgt->ino;
		int tdir = S_ISDIR(tgt->mode);
		arf_meta_dir_retarget(fs, tidx, sino, sgen, stype);
		arf_meta_dir_remove(fs, sidx);
		od = arf_meta_inode_touch(fs, odir);
		nd = arf_meta_inode_touch(fs, ndir);
		od->size--;
		if (tdir)
			nd->nlink--;
		if (sdir) {
			od->nlink--;
			nd->nlink++;
			src->parent = ndir;
		}
		tgt = arf_meta_inode_touch(fs, tino);
		tgt->nlink = tdir ? 0 : tgt->nlink - 1;
		tgt->ctime_ns = now;
		if (!tgt->nlink)
			ops_release(fs, tino);
	} else {
		arf_meta_dir_remove(fs, sidx);
		arf_meta_dir_insert(fs, &res, ndir, nname, nlen, sino, sgen, stype);
		od = arf_meta_inode_touch(fs, odir);
		nd = arf_meta_inode_touch(fs, ndir);
		od->size--;
		nd->size++;
		if (sdir) {
			od->nlink--;
			nd->nlink++;
			src->parent = ndir;
		}
	}
	src->ctime_ns = now;
	od->mtime_ns = od->ctime_ns = now;
	nd->mtime_ns = nd->ctime_ns = now;
	return 0;
}
