/* SPDX-License-Identifier: MIT */
/*
 * Directory handlers: opendir, readdir, readdirplus, releasedir, fsyncdir.
 *
 * Offsets given to the kernel are ARF's stable cookies ("resume after this
 * entry") shifted by two, below which sit "." (1) and ".." (2), so a
 * listing resumes exactly where the kernel asks however the directory
 * changed meanwhile.  The listing is fetched ahead, with attributes, in
 * large batches kept with the open directory (listing.c), and the kernel's
 * page-sized requests are answered from it.  readdirplus gives the kernel
 * each entry's attributes and a lookup reference, saving a lookup per name
 * for `ls -l` and the like.  opendir revalidates like open (close-to-open
 * for listings), and a new pass (offset 0) fetches afresh.
 *
 * The kernel may keep a listing (cache_readdir) and answer the next
 * opendir's passes from it without asking, as an NFS client keeps a
 * directory's pages while its change attribute holds.  The kernel checks
 * its copy against the directory's mtime and its own changes; here opendir
 * checks it against the server: the cached listing is kept only while the
 * directory's ctime and mtime are those of the opendir that let it be
 * filled (every change of an entry moves both, and ctime cannot be set
 * back), and is dropped otherwise, so a name another client added or
 * removed shows at the next opendir, as a change to a file shows at the
 * next open.  It is also dropped once half of acregmin has passed since it
 * was fetched: the kernel answers stat() of its names from the attributes
 * that came with it (readdirplus at the start of a pass and after lookups:
 * session.c), and past their timeout it would ask name by name, where a
 * fresh readdirplus listing asks in a dozen rounds.  noac turns the cache
 * off.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_stat fresh;
	int keep;

	arf_fuse_cred_set(req);
	int rc = arf_fuse_revalidate_st(fs, ino, n, &keep, &fresh);
	if (rc) {
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
		return;
	}
	struct arf_fuse_listing *d = arf_fuse_listing_new();
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)d;
	fi->cache_readdir = fs->opts.ac;
	pthread_mutex_lock(&fs->lock);
	/* ... and while the attributes the kernel got with it (readdirplus)
	 * are still its to use: otherwise every stat() after the kept listing
	 * would ask, one name at a time */
	keep = fs->opts.ac && n->list_ctime_ns == fresh.ctime_ns && n->list_mtime_ns == fresh.mtime_ns &&
	       arf_fuse_now_ms() - n->list_fill_ms < (uint64_t)fs->opts.acregmin * 500u;
	n->list_ctime_ns = fresh.ctime_ns;
	n->list_mtime_ns = fresh.mtime_ns;
	pthread_mutex_unlock(&fs->lock);
	fi->keep_cache = keep;
	if (!keep && fi->cache_readdir && fs->se)
		/* the kernel's listing (its pages) and its attributes go */
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	if (fuse_reply_open(req, fi) == -ENOENT)
		arf_fuse_listing_free(d);
}

/* Add one entry without attributes; returns its size, or 0 when it does
 * not fit.  In a readdirplus reply it goes with a zero node id: the kernel
 * then takes no reference (as for "." and ".."). */
static size_t add_plain(fuse_req_t req, int plus, char *buf, size_t room, const char *name,
			uint64_t ino, unsigned type, off_t next)
{
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.attr.st_ino = (ino_t)ino;
	e.attr.st_mode = (mode_t)(type << 12);
	size_t need = plus ? fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0)
			   : fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	if (need > room)
		return 0;
	return plus ? fuse_add_direntry_plus(req, buf, room, name, &e, next)
		    : fuse_add_direntry(req, buf, room, name, &e.attr, next);
}

/* Entries given a lookup reference in this reply, to undo if it is lost. */
struct refs {
	uint64_t *ids;
	size_t n, cap;
};

static size_t add_plus(struct arf_fuse *fs, fuse_req_t req, char *buf, size_t room,
		       const struct arf_dirent *de, const struct arf_stat *given, off_t next,
		       struct refs *refs)
{
	struct fuse_entry_param e;
	struct arf_stat st;
	size_t need = fuse_add_direntry_plus(req, NULL, 0, de->name, NULL, 0);

	if (need > room)
		return 0;
	if (refs->n == refs->cap) {
		size_t cap = refs->cap ? 2 * refs->cap : 64;
		uint64_t *ids = realloc(refs->ids, cap * sizeof(*ids));
		if (!ids)
			return add_plain(req, 1, buf, room, de->name, de->ino, de->type, next);
		refs->ids = ids;
		refs->cap = cap;
	}
	/* A mount point (no attributes, mode S_IFDIR: a listing never reaches
	 * the volume behind it, so that a dead one keeps no `ls` waiting): a
	 * name alone, which the kernel looks up when it is used */
	if (given && !given->ino)
		return add_plain(req, 1, buf, room, de->name, de->ino, de->type, next);
	if (given)
		st = *given; /* fetched with the listing */
	if ((!given && arf_getattr(fs->cf, de->ino, de->gen, &st)) || arf_fuse_fill_entry(fs, &e, &st))
		/* gone meanwhile (or no memory): a name without attributes */
		return add_plain(req, 1, buf, room, de->name, de->ino, de->type, next);
	refs->ids[refs->n++] = e.ino;
	return fuse_add_direntry_plus(req, buf, room, de->name, &e, next);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, int plus)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *dn = arf_fuse_node(fs, ino);
	struct arf_fuse_listing *d = (struct arf_fuse_listing *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0, got;
	struct refs refs = { NULL, 0, 0 };
	int rc = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	arf_fuse_cred_set(req);
	arf_fuse_listing_lock(d);
	if (off == 0) { /* a new pass (rewinddir): fetch afresh */
		arf_fuse_listing_reset(d);
		if (plus)
			__atomic_store_n(&dn->list_fill_ms, arf_fuse_now_ms(), __ATOMIC_RELAXED);
	}
	/* "." and ".." first: the kernel takes no reference for them */
	if (off == 0) {
		got = add_plain(req, plus, buf, size, ".", dn->ino, DT_DIR, 1);
		if (!got)
			goto reply;
		used += got;
		off = 1;
	}
	if (off == 1) {
		/* ".." of the mount's root is outside the mount: the root itself */
		struct arf_stat up;
		uint64_t upino = dn->ino;
		if (ino != FUSE_ROOT_ID && !arf_lookup(fs->c, dn->ino, dn->gen, "..", &up))
			upino = up.ino;
		got = add_plain(req, plus, buf + used, size - used, "..", upino, DT_DIR, 2);
		if (!got)
			goto reply;
		used += got;
		off = 2;
	}
	uint64_t cookie = (uint64_t)off - 2;
	for (;;) {
		const struct arf_dirent *de;
		const struct arf_stat *st;
		rc = arf_fuse_listing_next(fs, dn, d, cookie, &de, &st);
		if (rc) {
			if (rc == 1) /* the end */
				rc = 0;
			break;
		}
		off_t next = (off_t)(de->cookie + 2);
		got = plus ? add_plus(fs, req, buf + used, size - used, de, st, next, &refs)
			   : add_plain(req, 0, buf + used, size - used, de->name, de->ino, de->type,
				       next);
		if (!got)
			break;
		used += got;
		cookie = de->cookie;
	}
reply:
	if (rc && !used) {
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
	} else {
		if (fuse_reply_buf(req, buf, used) == -ENOENT) /* interrupted: no references */
			for (size_t i = 0; i < refs.n; i++)
				arf_fuse_node_forget(fs, refs.ids[i], 1);
		else if (used)
			/* while the kernel takes this in, the next batches */
			arf_fuse_listing_ahead(fs, dn, d);
	}
	arf_fuse_listing_unlock(d);
	free(refs.ids);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 0);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, 1);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	arf_fuse_listing_free((struct arf_fuse_listing *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);

	(void)datasync;
	(void)fi;
	arf_fuse_cred_set(req);
	fuse_reply_err(req, arf_fuse_errno_fh(arf_fsync(fs->c, n->ino, n->gen)));
}

void arf_fuse_ops_dir(struct fuse_lowlevel_ops *ops)
{
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->readdirplus = op_readdirplus;
	ops->releasedir = op_releasedir;
	ops->fsyncdir = op_fsyncdir;
}
