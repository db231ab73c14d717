/* SPDX-License-Identifier: MIT */
/*
 * ops/ setattr: chmod, chown, truncate and utimensat in one hook.
 *
 * Rules, as Linux applies them:
 *  - mode: the owner or root (-EPERM); a caller who is not root and not in
 *    the file's group loses S_ISGID.  A change that only clears set-id
 *    bits of a non-directory is also allowed to anyone who may write the
 *    file: it is how a FUSE kernel without HANDLE_KILLPRIV removes them
 *    before a write or truncate by a non-owner (the write would clear them
 *    here anyway).
 *  - uid: root only, unless it is unchanged; gid: root, or the owner naming
 *    a group they belong to (-EPERM).  Changing owner or group of a
 *    non-directory clears S_ISUID, and S_ISGID when group-executable.
 *  - size: write permission or ownership (-EACCES; the owner is let through
 *    as by NFS servers, since ftruncate on a file opened for writing must
 *    work whatever its mode), regular files only (-EISDIR for a directory,
 *    -EINVAL otherwise), at most ARF_OPS_MAX_FILE_SIZE (-EFBIG);
 *    an unprivileged caller clears set-id bits, as a write does.
 *  - times: explicit values need the owner or root (-EPERM); "now" also
 *    accepts write permission (-EACCES).
 *  - no field at all: chown(f, -1, -1), or the kernel removing privileges
 *    before a write (FUSE's HANDLE_KILLPRIV): a non-directory loses its
 *    set-id bits as a chown clears them; that needs the owner, root or
 *    write permission (-EPERM), as the kernel's own kill does.
 * Everything is checked before anything changes.  ctime becomes now, for
 * every setattr, the empty one included.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ops_int.h"

/* Would ops_kill_suid change this inode?  Directories keep theirs. */
static int kills_setid(const struct arf_meta_inode *in)
{
	return !S_ISDIR(in->mode) &&
	       ((in->mode & S_ISUID) || (in->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP));
}

/* Does mode only clear set-id bits of in, which cr may write? */
static int clears_setid_only(const struct arf_meta_inode *in, const struct arf_cred *cr,
			     uint32_t mode)
{
	uint32_t old = in->mode & 07777, new = mode & 07777;
	uint32_t cleared = old & ~new;

	return !S_ISDIR(in->mode) && cleared && !(cleared & ~(uint32_t)(S_ISUID | S_ISGID)) &&
	       !(new & ~old) && !arf_ops_permitted(in, cr, W_OK);
}

static int check(const struct arf_meta_inode *in, const struct arf_cred *cr,
		 const struct arf_ops_setattr *sa)
{
	uint32_t v = sa->valid;
	int owner = cr->uid == 0 || cr->uid == in->uid, rc;

	if (v & ARF_OPS_SET_SIZE) {
		if (S_ISDIR(in->mode))
			return -EISDIR;
		if (!S_ISREG(in->mode))
			return -EINVAL;
		if (sa->size > ARF_OPS_MAX_FILE_SIZE)
			return -EFBIG;
		/* the owner may, as on an NFS server: write access was checked at open */
		if (cr->uid != in->uid && (rc = arf_ops_permitted(in, cr, W_OK)))
			return rc;
	}
	if ((v & ARF_OPS_SET_UID) && cr->uid != 0 && sa->uid != in->uid)
		return -EPERM;
	if ((v & ARF_OPS_SET_GID) && cr->uid != 0 &&
	    (cr->uid != in->uid || (sa->gid != in->gid && !ops_in_group(cr, sa->gid))))
		return -EPERM;
	/* Linux has no chmod of a symbolic link (EOPNOTSUPP); root's is how
	 * a mount point is made (a link of mode 0644, AFS's mark, which
	 * libarf crosses into another volume), so nobody else may make one */
	if ((v & ARF_OPS_SET_MODE) && S_ISLNK(in->mode) && cr->uid != 0)
		return -EOPNOTSUPP;
	if ((v & ARF_OPS_SET_MODE) && !owner && !clears_setid_only(in, cr, sa->mode))
		return -EPERM;
	uint32_t explicit_t = ((v & ARF_OPS_SET_ATIME) && !(v & ARF_OPS_SET_ATIME_NOW)) ||
			      ((v & ARF_OPS_SET_MTIME) && !(v & ARF_OPS_SET_MTIME_NOW));
	if (explicit_t && !owner)
		return -EPERM;
	if ((v & (ARF_OPS_SET_ATIME_NOW | ARF_OPS_SET_MTIME_NOW)) && !owner &&
	    (rc = arf_ops_permitted(in, cr, W_OK)))
		return rc;
	if (!v && kills_setid(in) && !owner && arf_ops_permitted(in, cr, W_OK))
		return -EPERM;
	return 0;
}

int arf_ops_setattr(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		    const struct arf_ops_setattr *sa, struct arf_ops_attr *out)
{
	struct arf_meta_inode *in = ops_inode(fs, ino, gen);
	struct arf_meta_extent *ext = NULL;
	uint32_t next = 0, v = sa->valid;
	int rc;

	if (!in)
		return -ESTALE;
	if ((rc = check(in, cr, sa)))
		return rc;
	if ((v & ARF_OPS_SET_SIZE) &&
	    (rc = ops_data_truncate_prepare(fs, in, sa->size, &ext, &next)))
		return rc;
	if ((rc = arf_meta_txn_reserve(fs, OPS_TXN_BASE))) {
		free(ext);
		return rc;
	}

	int64_t now = ops_now();
	in = arf_meta_inode_touch(fs, ino);
	if (!v && kills_setid(in))
		ops_kill_suid(in);
	if (v & ARF_OPS_SET_SIZE) {
		if (sa->size != in->size) {
			ops_data_truncate(fs, in, sa->size, ext, next);
			in->mtime_ns = now;
		} else {
			free(ext);
		}
		if (cr->uid != 0)
			ops_kill_suid(in);
	}
	if (v & (ARF_OPS_SET_UID | ARF_OPS_SET_GID)) {
		if (v & ARF_OPS_SET_UID)
			in->uid = sa->uid;
		if (v & ARF_OPS_SET_GID)
			in->gid = sa->gid;
		if (!S_ISDIR(in->mode))
			ops_kill_suid(in);
	}
	if (v & ARF_OPS_SET_MODE) {
		in->mode = (in->mode & S_IFMT) | (sa->mode & 07777);
		if (cr->uid != 0 && !ops_in_group(cr, in->gid))
			in->mode &= ~(uint32_t)S_ISGID;
	}
	if (v & ARF_OPS_SET_ATIME_NOW)
		in->atime_ns = now;
	else if (v & ARF_OPS_SET_ATIME)
		in->atime_ns = sa->atime_ns;
	if (v & ARF_OPS_SET_MTIME_NOW)
		in->mtime_ns = now;
	else if (v & ARF_OPS_SET_MTIME)
		in->mtime_ns = sa->mtime_ns;
	in->ctime_ns = now;
	ops_attr(in, out);
	return 0;
}
