/* SPDX-License-Identifier: MIT */
/*
 * ops/ shared steps: resolving a file handle (ino, gen) to its live inode,
 * checking names, filling attributes, and releasing an inode whose last
 * link went away.  Everything the hooks have in common lives here so each
 * hook file reads as the POSIX rules of its operation.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "ops_int.h"

struct arf_meta_inode *ops_inode(struct arf_meta_fs *fs, uint64_t ino, uint32_t gen)
{
	struct arf_meta_inode *in;

	if (ino == 0 || ino > fs->sb->n_inodes)
		return NULL;
	in = arf_meta_inode_ptr(fs, ino);
	if (in->ino != ino || in->gen != gen)
		return NULL;
	return in;
}

void ops_attr(const struct arf_meta_inode *in, struct arf_ops_attr *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	ARF_META_ATTR_FROM_INODE(out, in);
}

int ops_name_check(const char *name, size_t len)
{
	if (len == 0 || !name)
		return -EINVAL;
	if (len > ARF_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return -EINVAL;
	return 0;
}

int ops_dot(const char *name, size_t len)
{
	if (len == 1 && name[0] == '.')
		return 1;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return 2;
	return 0;
}

int ops_in_group(const struct arf_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return 1;
	for (uint32_t i = 0; i < cr->ngroups && i < ARF_OPS_NGROUPS; i++)
		if (cr->groups[i] == gid)
			return 1;
	return 0;
}

int ops_sticky_ok(const struct arf_meta_inode *dir, const struct arf_meta_inode *child,
		  const struct arf_cred *cr)
{
	if (!(dir->mode & S_ISVTX) || cr->uid == 0 || cr->uid == child->uid || cr->uid == dir->uid)
		return 0;
	return -EPERM;
}

int ops_dir_begin(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len, struct arf_meta_inode **d)
{
	int rc;

	*d = ops_inode(fs, dir, dgen);
	if (!*d)
		return -ESTALE;
	if (!S_ISDIR((*d)->mode))
		return -ENOTDIR;
	if ((rc = ops_name_check(name, len)))
		return rc;
	return arf_ops_permitted(*d, cr, X_OK);
}

int64_t ops_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ops_kill_suid(struct arf_meta_inode *in)
{
	in->mode &= ~(uint32_t)S_ISUID;
	if (in->mode & S_IXGRP)
		in->mode &= ~(uint32_t)S_ISGID;
}

void ops_release(struct arf_meta_fs *fs, uint64_t ino)
{
	struct arf_meta_inode *in = arf_meta_inode_touch(fs, ino);

	if (S_ISDIR(in->mode))
		arf_meta_dir_free_pages(fs, ino);
	else
		arf_meta_ext_release(fs, in);
	arf_meta_inode_free(fs, ino);
}
