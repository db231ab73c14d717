/* SPDX-License-Identifier: MIT */
/*
 * ops/ read-only hooks on names and attributes: getattr, lookup (with "."
 * and ".."), readdir with stable cookies, and statfs.  They change nothing,
 * so they need no transaction.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ops_int.h"

int arf_ops_getattr(struct arf_meta_fs *fs, uint64_t ino, uint32_t gen, struct arf_ops_attr *out)
{
	const struct arf_meta_inode *in = ops_inode(fs, ino, gen);

	if (!in)
		return -ESTALE;
	ops_attr(in, out);
	return 0;
}

int arf_ops_lookup(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		   const char *name, size_t len, struct arf_ops_attr *out)
{
	struct arf_meta_inode *d;
	const struct arf_meta_inode *c;
	const struct arf_meta_dirent *e;
	uint32_t idx;
	int rc;

	if ((rc = ops_dir_begin(fs, cr, dir, dgen, name, len, &d)))
		return rc;
	switch (ops_dot(name, len)) {
	case 1:
		ops_attr(d, out);
		return 0;
	case 2:
		c = arf_meta_inode_ptr(fs, d->parent ? d->parent : ARF_ROOT_INO);
		ops_attr(c, out);
		return 0;
	}
	if ((rc = arf_meta_dir_find(fs, dir, name, len, &idx)))
		return rc;
	e = arf_meta_entry_ptr(fs, idx);
	c = ops_inode(fs, e->child, e->child_gen);
	if (!c)
		return -ESTALE; /* an entry naming a freed inode: never left behind by ops */
	ops_attr(c, out);
	return 0;
}

int arf_ops_readdir(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		    uint64_t cookie, struct arf_ops_dirent *out, size_t max, size_t *n, int *eof)
{
	const struct arf_meta_inode *d = ops_inode(fs, dir, dgen);
	struct arf_meta_dir_iter it;
	uint32_t idx;
	int rc;

	*n = 0;
	*eof = 0;
	if (!d)
		return -ESTALE;
	if (!S_ISDIR(d->mode))
		return -ENOTDIR;
	if ((rc = arf_ops_permitted(d, cr, R_OK)))
		return rc;
	arf_meta_dir_seek(fs, d, cookie, &it);
	while (*n < max && arf_meta_dir_next(fs, &it, &idx)) {
		const struct arf_meta_dirent *e = arf_meta_entry_ptr(fs, idx);
		struct arf_ops_dirent *o = &out[(*n)++];
		o->ino = e->child;
		o->gen = e->child_gen;
		o->type = e->type;
		o->namelen = e->namelen;
		o->cookie = e->cookie;
		memcpy(o->name, e->name, e->namelen);
		o->name[e->namelen] = 0;
	}
	/* end of listing: nothing left after the last entry returned */
	struct arf_meta_dir_iter peek = it;
	*eof = !arf_meta_dir_next(fs, &peek, &idx);
	return 0;
}

int arf_ops_readdirplus(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir,
			uint32_t dgen, uint64_t cookie, struct arf_ops_dirent *out,
			struct arf_ops_attr *attrs, size_t max, size_t *n, int *eof)
{
	int rc = arf_ops_readdir(fs, cr, dir, dgen, cookie, out, max, n, eof);

	for (size_t i = 0; !rc && i < *n; i++) {
		/* read in place: under the lock the listing was read under */
		const struct arf_meta_inode *c = ops_inode(fs, out[i].ino, out[i].gen);
		if (c)
			ops_attr(c, &attrs[i]);
		else
			memset(&attrs[i], 0, sizeof(attrs[i]));
	}
	return rc;
}

int arf_ops_statfs(struct arf_meta_fs *fs, struct arf_ops_statfs *out)
{
	memset(out, 0, sizeof(*out));
	out->bsize = ARF_BLOCK_SIZE;
	out->blocks = fs->sb->n_blocks;
	out->bfree = fs->free_blocks;
	out->files = fs->sb->n_inodes;
	out->ffree = fs->free_inodes;
	out->namemax = ARF_NAME_MAX;
	return 0;
}
