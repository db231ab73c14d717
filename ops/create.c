/* SPDX-License-Identifier: MIT */
/*
 * ops/ hooks that add a name: create, mknod, mkdir, symlink and link.
 *
 * The checks follow Linux's order: the directory (-ESTALE, -ENOTDIR), the
 * name (-EINVAL, -ENAMETOOLONG), search permission, an existing name
 * (-EEXIST, before write permission is looked at), for link the source's
 * protection (-EPERM, protected_hardlinks), write permission, link counts
 * (-EMLINK).  Then every resource is reserved (inode slot, directory
 * entry and listing page, a symlink's data block, transaction room) so that
 * -ENOSPC or -ENOMEM leave everything as it was.  New inodes take the
 * caller's uid, and the caller's gid unless the directory is setgid (BSD
 * group semantics, inherited by subdirectories).
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ops_int.h"

/* Everything a new inode needs, decided before the first touch. */
struct newnode {
	uint32_t mode;      /* S_IFMT | permission bits */
	uint64_t rdev;      /* devices only */
	const char *target; /* symlinks: the target, stored as file data */
	size_t tlen;        /* its length (0 for other types) */
};

/* A new generation for a reused slot: random, so that a handle (ino, gen)
 * cannot be guessed from the order files were made in; never 0, never the
 * slot's last one. */
static uint32_t new_gen(uint32_t old)
{
	uint32_t g = 0;

	while (!g || g == old)
		if (getrandom(&g, sizeof(g), 0) != (ssize_t)sizeof(g))
			g = old * 2654435761u + 1u; /* getrandom never fails for 4 bytes; in case */
	return g;
}

static void init_inode(struct arf_meta_inode *in, uint64_t ino, const struct newnode *nn,
		       const struct arf_cred *cr, const struct arf_meta_inode *d, int64_t now)
{
	uint32_t gen = new_gen(in->gen);

	memset((uint8_t *)in + sizeof(in->h), 0, sizeof(*in) - sizeof(in->h));
	in->ino = ino;
	in->gen = gen;
	in->mode = nn->mode;
	in->uid = cr->uid;
	in->gid = cr->gid;
	if (d->mode & S_ISGID) {
		in->gid = d->gid;
		if (S_ISDIR(nn->mode))
			in->mode |= S_ISGID;
	}
	if (!S_ISDIR(in->mode) && (in->mode & S_ISGID) && cr->uid != 0 && !ops_in_group(cr, in->gid))
		in->mode &= ~(uint32_t)S_ISGID;
	in->nlink = S_ISDIR(nn->mode) ? 2 : 1;
	in->atime_ns = in->mtime_ns = in->ctime_ns = in->btime_ns = now;
	in->rdev = nn->rdev;
	in->dir_first = in->dir_last = ARF_META_NONE;
	in->parent = S_ISDIR(nn->mode) ? d->ino : 0;
}

static int make_node(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir,
		     uint32_t dgen, const char *name, size_t len, const struct newnode *nn,
		     int open_existing, struct arf_ops_attr *out)
{
	struct arf_meta_inode *d, *in;
	struct arf_meta_dir_res res;
	uint64_t ino;
	uint32_t idx, pblk = 0, got = 0;
	int rc;

	if ((rc = ops_dir_begin(fs, cr, dir, dgen, name, len, &d)))
		return rc;
	if (ops_dot(name, len))
		return open_existing ? -EISDIR : -EEXIST;
	if (!arf_meta_dir_find(fs, dir, name, len, &idx)) {
		const struct arf_meta_dirent *e = arf_meta_entry_ptr(fs, idx);
		const struct arf_meta_inode *c = ops_inode(fs, e->child, e->child_gen);
		if (!open_existing)
			return -EEXIST;
		if (!c)
			return -ESTALE;
		if (S_ISDIR(c->mode))
			return -EISDIR;
		ops_attr(c, out);
		return 0;
	}
	if ((rc = arf_ops_permitted(d, cr, W_OK | X_OK)))
		return rc;
	if (S_ISDIR(nn->mode) && d->nlink >= OPS_LINK_MAX)
		return -EMLINK;

	/* reserve everything before the first touch */
	if ((rc = arf_meta_txn_reserve(fs, OPS_TXN_BASE)))
		return rc;
	if ((rc = arf_meta_inode_alloc(fs, &ino)))
		return rc;
	if ((rc = arf_meta_dir_reserve(fs, d, name, len, &res)))
		goto undo_inode;
	if (nn->tlen && (rc = arf_meta_blocks_alloc(fs, UINT32_MAX, 1, &pblk, &got)))
		goto undo_dir;

	int64_t now = ops_now();
	in = arf_meta_inode_touch(fs, ino);
	init_inode(in, ino, nn, cr, d, now);
	arf_meta_dir_insert(fs, &res, dir, name, len, ino, in->gen, arf_meta_dtype(in->mode));
	d = arf_meta_inode_touch(fs, dir);
	d->size++;
	if (S_ISDIR(in->mode))
		d->nlink++;
	d->mtime_ns = d->ctime_ns = now;
	if (nn->tlen) {
		/* a symlink's target is its data: one block, one inline extent */
		uint8_t *blk = arf_meta_block_touch(fs, pblk);
		memset(blk, 0, ARF_BLOCK_SIZE);
		memcpy(blk, nn->target, nn->tlen);
		struct arf_meta_tag *tag = arf_meta_tag_touch(fs, pblk);
		tag->ino = ino;
		tag->gen = in->gen;
		tag->pad0 = 0;
		tag->fblk = 0;
		tag->data_csum = arf_meta_block_csum(blk);
		in->u.ext[0] = (struct arf_meta_extent){ .fblk = 0, .pblk = pblk, .len = 1 };
		in->nextents = 1;
		in->blocks = 1;
		in->size = nn->tlen;
	}
	ops_attr(in, out);
	return 0;
undo_dir:
	arf_meta_dir_unreserve(fs, &res);
undo_inode:
	arf_meta_inode_unreserve(fs, ino);
	return rc;
}

int arf_ops_create(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		   const char *name, size_t len, uint32_t mode, int exclusive, struct arf_ops_attr *out)
{
	struct newnode nn = { .mode = S_IFREG | (mode & 07777) };

	return make_node(fs, cr, dir, dgen, name, len, &nn, !exclusive, out);
}

int arf_ops_mknod(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len, uint32_t mode, uint64_t rdev, struct arf_ops_attr *out)
{
	struct newnode nn = { 0 };
	uint32_t type = mode & S_IFMT;

	switch (type) {
	case 0:
		type = S_IFREG;
		/* fall through */
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		if (cr->uid != 0)
			return -EPERM;
		nn.rdev = rdev;
		break;
	case S_IFDIR:
		return -EPERM;
	default:
		return -EINVAL;
	}
	nn.mode = type | (mode & 07777);
	return make_node(fs, cr, dir, dgen, name, len, &nn, 0, out);
}

int arf_ops_mkdir(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len, uint32_t mode, struct arf_ops_attr *out)
{
	struct newnode nn = { .mode = S_IFDIR | (mode & 01777) };

	return make_node(fs, cr, dir, dgen, name, len, &nn, 0, out);
}

int arf_ops_symlink(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		    const char *name, size_t len, const char *target, size_t tlen, struct arf_ops_attr *out)
{
	struct newnode nn = { .mode = S_IFLNK | 0777, .target = target, .tlen = tlen };

	if (tlen == 0 || !target)
		return -ENOENT;
	if (tlen >= ARF_PATH_MAX)
		return -ENAMETOOLONG;
	return make_node(fs, cr, dir, dgen, name, len, &nn, 0, out);
}

/* Linux's may_linkat with protected_hardlinks = 1 (fs/namei.c): the owner
 * (or root, CAP_FOWNER) links anything; anyone else only a regular file
 * that is neither setuid nor setgid-executable and that they may read and
 * write, so nobody pins another user's private or privileged file under a
 * name of their own. */
static int link_allowed(const struct arf_meta_inode *in, const struct arf_cred *cr)
{
	if (cr->uid == 0 || cr->uid == in->uid)
		return 1;
	if (!S_ISREG(in->mode) || (in->mode & S_ISUID) ||
	    (in->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		return 0;
	return arf_ops_permitted(in, cr, R_OK | W_OK) == 0;
}

int arf_ops_link(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		 uint64_t dir, uint32_t dgen, const char *name, size_t len, struct arf_ops_attr *out)
{
	struct arf_meta_inode *d, *in = ops_inode(fs, ino, gen);
	struct arf_meta_dir_res res;
	uint32_t idx;
	int rc;

	if (!in)
		return -ESTALE;
	if ((rc = ops_dir_begin(fs, cr, dir, dgen, name, len, &d)))
		return rc;
	if (ops_dot(name, len) || !arf_meta_dir_find(fs, dir, name, len, &idx))
		return -EEXIST;
	if (!link_allowed(in, cr))
		return -EPERM;
	if ((rc = arf_ops_permitted(d, cr, W_OK | X_OK)))
		return rc;
	if (S_ISDIR(in->mode))
		return -EPERM;
	if (in->nlink >= OPS_LINK_MAX)
		return -EMLINK;
	if ((rc = arf_meta_txn_reserve(fs, OPS_TXN_BASE)))
		return rc;
	if ((rc = arf_meta_dir_reserve(fs, d, name, len, &res)))
		return rc;

	int64_t now = ops_now();
	arf_meta_dir_insert(fs, &res, dir, name, len, ino, gen, arf_meta_dtype(in->mode));
	in = arf_meta_inode_touch(fs, ino);
	in->nlink++;
	in->ctime_ns = now;
	d = arf_meta_inode_touch(fs, dir);
	d->size++;
	d->mtime_ns = d->ctime_ns = now;
	ops_attr(in, out);
	return 0;
}
