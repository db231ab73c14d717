/* SPDX-License-Identifier: MIT */
/*
 * Attributes for the kernel: struct arf_stat -> struct stat, the cache
 * timeouts (NFS's rule: a file that changed recently is revalidated
 * sooner, timeout = age / 10 bounded by acregmin..acregmax, or
 * acdirmin..acdirmax for directories; names live acdirmin), entry
 * replies, and the mapping of libarf's codes to errno.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "arf_fuse.h"

/* Nanoseconds since 1970 as a timespec; a time before 1970 keeps a
 * non-negative nanosecond part, as the kernel wants. */
static struct timespec ns_timespec(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };

	if (ts.tv_nsec < 0) {
		ts.tv_nsec += 1000000000;
		ts.tv_sec--;
	}
	return ts;
}

void arf_fuse_stat(const struct arf_stat *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)a->ino;
	st->st_mode = (mode_t)a->mode;
	st->st_nlink = (nlink_t)a->nlink;
	st->st_uid = (uid_t)a->uid;
	st->st_gid = (gid_t)a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = ARF_FUSE_BLKSIZE;
	st->st_rdev = (dev_t)a->rdev;
	st->st_atim = ns_timespec(a->atime_ns);
	st->st_mtim = ns_timespec(a->mtime_ns);
	st->st_ctim = ns_timespec(a->ctime_ns);
}

double arf_fuse_attr_timeout(const struct arf_fuse *fs, const struct arf_stat *a)
{
	const struct arf_fuse_opts *o = &fs->opts;
	int dir = S_ISDIR(a->mode);
	double lo = dir ? o->acdirmin : o->acregmin, hi = dir ? o->acdirmax : o->acregmax;
	struct timespec now;

	if (hi <= 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	double age = (double)now.tv_sec + now.tv_nsec / 1e9 - (double)a->mtime_ns / 1e9;
	double t = age / 10;
	return t < lo ? lo : t > hi ? hi : t;
}

double arf_fuse_entry_timeout(const struct arf_fuse *fs)
{
	return strcmp(fs->opts.lookupcache, "none") ? fs->opts.acdirmin : 0;
}

int arf_fuse_fill_entry(struct arf_fuse *fs, struct fuse_entry_param *e, const struct arf_stat *a)
{
	memset(e, 0, sizeof(*e));
	e->ino = arf_fuse_node_ref(fs, a->ino, a->gen);
	if (!e->ino)
		return -ENOMEM;
	e->generation = a->gen;
	arf_fuse_stat(a, &e->attr);
	e->attr_timeout = arf_fuse_attr_timeout(fs, a);
	e->entry_timeout = arf_fuse_entry_timeout(fs);
	arf_fuse_node_seen(fs, arf_fuse_node(fs, e->ino), a);
	return 0;
}

int arf_fuse_reply_entry(struct arf_fuse *fs, fuse_req_t req, const struct arf_stat *a)
{
	struct fuse_entry_param e;
	int rc = arf_fuse_fill_entry(fs, &e, a);

	if (rc)
		return fuse_reply_err(req, -rc);
	if (fuse_reply_entry(req, &e) == -ENOENT) /* the request was interrupted */
		arf_fuse_node_forget(fs, e.ino, 1);
	return 0;
}

int arf_fuse_errno(int rc)
{
	if (rc >= 0)
		return 0;
	if (rc <= -1000) /* ARF's own codes (arf_strerror): nothing an application can act on */
		return EIO;
	if (rc == -ENOSYS) /* the kernel would stop asking for good */
		return EIO;
	return -rc;
}

int arf_fuse_errno_fh(int rc)
{
	int e = arf_fuse_errno(rc);
	return e == ENOENT ? ESTALE : e;
}
