/* SPDX-License-Identifier: MIT */
/*
 * Handlers on one file, by inode: lookup, forget, getattr, setattr,
 * access, readlink, statfs.
 *
 * Lookups and attributes are answered from the server's current state,
 * through the uncached client: the kernel's entry and attribute timeouts
 * are the only cache on a mount (NFS's rule).  A cache under the kernel's
 * would hand the kernel's revalidating LOOKUP -- the one it sends after an
 * open() got ESTALE because another client replaced or removed the name --
 * the same dead inode again, and a GETATTR after this mount's own unlink or
 * rename the link count and ctime from before it.  Reading an inode
 * one-sidedly costs one round (a memory copy over shm) and no server CPU,
 * which is why polling at the kernel's timeouts beats change notifications
 * (leases or callbacks, as AFS and NFSv4 delegations) here: a callback
 * would cost the server state per client and cached object, and a message
 * per change, to save a read that costs it nothing.  The one exception is
 * a name that names.c knows is free, as NFS's lookupcache=all keeps a
 * negative entry while the directory is unchanged: only in a directory this
 * mount changed itself, for at most the attribute timeout.
 * A failed lookup is cached by the kernel as a negative entry only with
 * lookupcache=all: NFS revalidates a negative entry when the directory
 * changes, which a FUSE entry timeout cannot do, so by default a file that
 * another client creates is visible at the next lookup.
 */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "arf_fuse.h"

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *p = arf_fuse_node(fs, parent);
	struct arf_stat st;
	struct arf_cred cred;

	arf_fuse_cred_lean(req, &cred); /* the kernel let the caller search p */
	/* in a directory whose names this mount knows (names.c), a free name
	 * (the kernel asks before every mkdir, create and rename target) and a
	 * name this mount's own change made (the rename target, looked up
	 * again) cost no round trip */
	int known = arf_fuse_names_state(fs, p->ino, p->gen, name);
	int rc = known == ARF_FUSE_NAME_ABSENT
			 ? -ENOENT
			 : arf_lookup(known == ARF_FUSE_NAME_PRESENT ? fs->c : fs->cf, p->ino, p->gen,
				      name, &st);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = arf_lookup(fs->cf, p->ino, p->gen, name, &st);
	if (rc == -ENOENT && fs->opts.neg_cache) {
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = arf_fuse_entry_timeout(fs);
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc) {
		fuse_reply_err(req, arf_fuse_errno(rc));
		return;
	}
	arf_fuse_reply_entry(fs, req, &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	arf_fuse_node_forget(arf_fuse_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	for (size_t i = 0; i < count; i++)
		arf_fuse_node_forget(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* Attributes of n as the kernel should see them. */
static int node_attr(struct arf_fuse *fs, struct arf_fuse_node *n, struct arf_stat *st)
{
	/* the kernel asks right after a change whose reply carried them */
	int rc = arf_reply_attr(fs->c, n->ino, n->gen, st) ? arf_getattr(fs->cf, n->ino, n->gen, st)
							       : 0;
	if (rc == -ESTALE)
		arf_fuse_names_forget_all(fs); /* what it knew may name the dead file */
	if (rc)
		return rc;
	/* a silly-renamed file is unlinked as far as its users know */
	if (__atomic_load_n(&n->hidden, __ATOMIC_RELAXED) && st->nlink)
		st->nlink--;
	return 0;
}

static void reply_attr(fuse_req_t req, struct arf_fuse *fs, struct arf_fuse_node *n,
		       const struct arf_stat *a)
{
	struct stat st;
	arf_fuse_stat(a, &st);
	arf_fuse_node_seen(fs, n, a);
	fuse_reply_attr(req, &st, arf_fuse_attr_timeout(fs, a));
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_stat a;

	struct arf_cred cred;

	(void)fi;
	arf_fuse_cred_lean(req, &cred);
	int rc = node_attr(fs, n, &a);
	if (arf_fuse_cred_again(req, &cred, rc))
		rc = node_attr(fs, n, &a);
	if (rc)
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
	else
		reply_attr(req, fs, n, &a);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_setattr sa;
	struct arf_stat a;
	int rc;

	memset(&sa, 0, sizeof(sa));
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= ARF_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= ARF_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= ARF_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= ARF_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= ARF_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= ARF_SET_ATIME;
		sa.atime_ns = (int64_t)attr->st_atim.tv_sec * 1000000000 + attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= ARF_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= ARF_SET_MTIME;
		sa.mtime_ns = (int64_t)attr->st_mtim.tv_sec * 1000000000 + attr->st_mtim.tv_nsec;
	}
	/* ftruncate() acts with the opener's rights, as NFS does */
	if (fi && fi->fh)
		arf_fuse_cred_file(req, &((struct arf_fuse_file *)(uintptr_t)fi->fh)->cred);
	else
		arf_fuse_cred_set(req);
	/* sent even when no field is set: chown(f, -1, -1), and the kernel's
	 * "remove privileges" before a write (FUSE_CAP_HANDLE_KILLPRIV), come
	 * as an empty SETATTR, which sets ctime and clears set-id bits at the
	 * server (ops/setattr.c) */
	rc = arf_setattr(fs->c, n->ino, n->gen, &sa, &a);
	/* a directory's ctime moves: names.c follows it (its wcc) */
	struct arf_fuse_names_change ch = { n->ino, n->gen, NULL, NULL };
	arf_fuse_names_after(fs, rc, &ch, 1);
	if (rc) {
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
		return;
	}
	if (__atomic_load_n(&n->hidden, __ATOMIC_RELAXED) && a.nlink)
		a.nlink--;
	reply_attr(req, fs, n, &a);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);

	arf_fuse_cred_set(req);
	fuse_reply_err(req, arf_fuse_errno_fh(arf_access(fs->c, n->ino, n->gen, mask)));
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	char buf[4097];

	arf_fuse_cred_set(req);
	int rc = arf_readlink(arf_fuse_reader(fs, n), n->ino, n->gen, buf, sizeof(buf));
	if (rc < 0)
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
	else
		fuse_reply_readlink(req, buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_statfs sf;
	struct statvfs st;

	arf_fuse_cred_set(req);
	/* the volume of the node asked about: df on a mount point reports it */
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	int rc = arf_statfs_at(fs->c, n ? n->ino : 0, &sf);
	if (rc) {
		fuse_reply_err(req, arf_fuse_errno(rc));
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = (unsigned long)sf.bsize;
	st.f_frsize = (unsigned long)sf.bsize;
	st.f_blocks = (fsblkcnt_t)sf.blocks;
	st.f_bfree = (fsblkcnt_t)sf.bfree;
	st.f_bavail = (fsblkcnt_t)sf.bfree;
	st.f_files = (fsfilcnt_t)sf.files;
	st.f_ffree = (fsfilcnt_t)sf.ffree;
	st.f_favail = (fsfilcnt_t)sf.ffree;
	st.f_namemax = (unsigned long)sf.namemax;
	fuse_reply_statfs(req, &st);
}

void arf_fuse_ops_node(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = op_lookup;
	ops->forget = op_forget;
	ops->forget_multi = op_forget_multi;
	ops->getattr = op_getattr;
	ops->setattr = op_setattr;
	ops->access = op_access;
	ops->readlink = op_readlink;
	ops->statfs = op_statfs;
}
