/* SPDX-License-Identifier: MIT */
/*
 * ops/ permissions: the owner/group/other bits of a local filesystem for
 * AUTH_SYS-like credentials (after root squashing, which arfd does), or
 * the file's access ACL when it has one (acl.c).  Root
 * may read and write anything, and execute anything that has an execute bit
 * for someone (directories are always searchable for root).
 */
#include <errno.h>
#include <unistd.h>

#include "ops_int.h"

int arf_ops_permitted(const struct arf_meta_inode *in, const struct arf_cred *cr, int mask)
{
	uint32_t bits;

	mask &= R_OK | W_OK | X_OK;
	if (cr->uid == 0) {
		if ((mask & X_OK) && !S_ISDIR(in->mode) && !(in->mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
			return -EACCES;
		return 0;
	}
	if (in->flags & ARF_META_INO_ACL) {
		int rc = ops_acl_check(in, cr, mask);
		if (rc <= 0)
			return rc;
	}
	if (cr->uid == in->uid)
		bits = (in->mode >> 6) & 7;
	else if (ops_in_group(cr, in->gid))
		bits = (in->mode >> 3) & 7;
	else
		bits = in->mode & 7;
	return ((uint32_t)mask & ~bits) ? -EACCES : 0;
}

int arf_ops_access(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		   int mask)
{
	const struct arf_meta_inode *in = ops_inode(fs, ino, gen);

	if (!in)
		return -ESTALE;
	return arf_ops_permitted(in, cr, mask);
}
