/* SPDX-License-Identifier: MIT */
/*
 * Handlers that change names: mknod, mkdir, symlink, link, unlink, rmdir,
 * rename.  Each is one libarf request with the caller's credentials; the
 * two that can remove a file's last name first give an open file a hidden
 * name (hidden.c).  Each reply's wcc keeps names.c's knowledge of the
 * directory, and libarf keeps the directory's new attributes for the
 * kernel's next GETATTR, so neither costs another round trip.
 * RENAME_NOREPLACE and RENAME_EXCHANGE are the server's (one request,
 * atomic there); RENAME_WHITEOUT is not supported (EINVAL).
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "arf_fuse.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Reply to a request that made name in p (after names.c has seen it). */
static void reply_new(fuse_req_t req, struct arf_fuse *fs, int rc, const struct arf_stat *st,
		      const struct arf_fuse_node *p, const char *name)
{
	struct arf_fuse_names_change ch = { p->ino, p->gen, NULL, name };

	arf_fuse_names_after(fs, rc, &ch, 1);
	if (rc)
		fuse_reply_err(req, arf_fuse_errno(rc));
	else
		arf_fuse_reply_entry(fs, req, st);
}

/* The credentials for a request that may remove a file's last name: the
 * groups change nothing but the rights (cred.c), but a hidden name keeps
 * the credentials for its removal at the last close (hidden.c), so with
 * files open on the mount they are read now. */
static void cred_for_removal(fuse_req_t req, struct arf_fuse *fs, struct arf_cred *cred)
{
	if (__atomic_load_n(&fs->open_files, __ATOMIC_RELAXED))
		arf_fuse_cred_set_keep(req, cred);
	else
		arf_fuse_cred_lean(req, cred);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct arf_stat st;
	struct arf_cred cred;

	/* a setgid bit asked for is kept only for a member of the group */
	if (mode & S_ISGID)
		arf_fuse_cred_set_keep(req, &cred);
	else
		arf_fuse_cred_lean(req, &cred);
	int rc = arf_mknod(fs->c, p->ino, p->gen, name, mode, rdev, &st);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_mknod(fs->c, p->ino, p->gen, name, mode, rdev, &st);
	reply_new(req, fs, rc, &st, p, name);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct arf_stat st;
	struct arf_cred cred;

	arf_fuse_cred_lean(req, &cred); /* the groups change nothing but the rights */
	int rc = arf_mkdir(fs->c, p->ino, p->gen, name, mode & 07777, &st);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_mkdir(fs->c, p->ino, p->gen, name, mode & 07777, &st);
	if (!rc)
		arf_fuse_names_new_dir(fs, &st); /* empty, and ours to know */
	reply_new(req, fs, rc, &st, p, name);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct arf_stat st;
	struct arf_cred cred;

	arf_fuse_cred_lean(req, &cred); /* the groups change nothing but the rights */
	int rc = arf_symlink(fs->c, p->ino, p->gen, name, target, &st);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_symlink(fs->c, p->ino, p->gen, name, target, &st);
	reply_new(req, fs, rc, &st, p, name);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino), *p = arf_fuse_node(fs, newparent);
	struct arf_stat st;
	struct arf_cred cred;

	arf_fuse_cred_lean(req, &cred); /* the groups change nothing but the rights */
	int rc = arf_link(fs->c, n->ino, n->gen, p->ino, p->gen, newname, &st);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_link(fs->c, n->ino, n->gen, p->ino, p->gen, newname, &st);
	reply_new(req, fs, rc, &st, p, newname);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct arf_cred cred;

	cred_for_removal(req, fs, &cred);
	struct arf_fuse_names_change ch = { p->ino, p->gen, name, NULL };
	int rc = arf_fuse_hide_if_open(fs, p->ino, p->gen, name, &cred);
	if (rc == 0) {
		rc = arf_unlink(fs->c, p->ino, p->gen, name);
		if (arf_fuse_cred_again(req, &cred, rc))
			rc = arf_unlink(fs->c, p->ino, p->gen, name);
		arf_fuse_names_after(fs, rc, &ch, 1);
	} else {
		/* a hidden name came instead: forget the directory's names */
		arf_fuse_names_after(fs, -EAGAIN, &ch, 1);
		if (rc == 1) /* hidden: the name is gone, which is what was asked */
			rc = 0;
	}
	fuse_reply_err(req, arf_fuse_errno(rc));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct arf_cred cred;

	arf_fuse_cred_lean(req, &cred); /* the groups change nothing but the rights */
	struct arf_fuse_names_change ch = { p->ino, p->gen, name, NULL };
	int rc = arf_rmdir(fs->c, p->ino, p->gen, name);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_rmdir(fs->c, p->ino, p->gen, name);
	arf_fuse_names_after(fs, rc, &ch, 1);
	fuse_reply_err(req, arf_fuse_errno(rc));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent), *np = arf_fuse_node(fs, newparent);
	struct arf_cred cred;
	int rc = 0;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) { /* WHITEOUT */
		fuse_reply_err(req, EINVAL);
		return;
	}
	unsigned aflags = ((flags & RENAME_NOREPLACE) ? ARF_RENAME_NOREPLACE : 0) |
			  ((flags & RENAME_EXCHANGE) ? ARF_RENAME_EXCHANGE : 0);
	cred_for_removal(req, fs, &cred);
	/* the kernel has checked the types and rights already, so once the
	 * target is hidden the rename is not expected to fail */
	if (!(flags & (RENAME_NOREPLACE | RENAME_EXCHANGE))) /* an exchange removes no file */
		rc = arf_fuse_hide_if_open(fs, np->ino, np->gen, newname, &cred);
	if (rc >= 0) {
		rc = arf_rename(fs->c, p->ino, p->gen, name, np->ino, np->gen, newname, aflags);
		if (arf_fuse_cred_again(req, &cred, rc))
			rc = arf_rename(fs->c, p->ino, p->gen, name, np->ino, np->gen, newname,
					aflags);
	}
	struct arf_fuse_names_change ch[2] = { { p->ino, p->gen, name, NULL },
					       { np->ino, np->gen, NULL, newname } };
	if (flags & RENAME_EXCHANGE) /* both names stay */
		ch[0].del = ch[1].add = NULL;
	else if (p == np)
		ch[0].add = newname;
	arf_fuse_names_after(fs, rc, ch, p == np ? 1 : 2);
	fuse_reply_err(req, arf_fuse_errno(rc));
}

void arf_fuse_ops_ns(struct fuse_lowlevel_ops *ops)
{
	ops->mknod = op_mknod;
	ops->mkdir = op_mkdir;
	ops->symlink = op_symlink;
	ops->link = op_link;
	ops->unlink = op_unlink;
	ops->rmdir = op_rmdir;
	ops->rename = op_rename;
}
