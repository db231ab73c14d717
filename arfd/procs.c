/* SPDX-License-Identifier: MIT */
/*
 * arfd/procs — the request procedures: one entry per request kind saying
 * how it is decoded and served, as nfsd's svc_procedure tables and
 * NFS-Ganesha's nfs4_op_desc do.  dispatch.c looks a request's kind up
 * here and does what every procedure shares (credentials, counters,
 * stale-handle limits, the transaction and the group commit) around the
 * entry's function; the lane says which workers serve it (arfd.h).
 *
 * A procedure's function decodes the rest of the body (untrusted: every
 * field through the bounds-checked reader, ARF_EPROTO when anything is
 * left over or missing) and calls its ops/ hook with fs_lock held; a
 * mutation's runs inside the transaction dispatch.c opened.  It returns 0
 * or -errno / an ARF code, its reply body in q->w.
 *
 * Names come from net/proto.c's one list of request kinds
 * (arf_proto_op_name), so they are not repeated here.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "arf_ops.h"
#include "arf_proto.h"
#include "arfd.h"
#include "locks.h"
#include "xattr.h"

static void put_attr(struct arf_proto_wr *w, const struct arf_ops_attr *a)
{
	struct arf_proto_attr p;

	ARF_META_ATTR_COPY(&p, a);
	arf_proto_put_attr(w, &p);
}

/* A hook's attributes as the reply, when it succeeded. */
static int reply_attr(struct arf_proto_wr *w, int rc, const struct arf_ops_attr *a)
{
	if (!rc)
		put_attr(w, a);
	return rc;
}

/* ---- reads ----------------------------------------------------------------- */

static int p_getattr(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;

	arf_proto_get_fh(q->r, &fh);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	return reply_attr(q->w, arf_ops_getattr(&q->d->fs, fh.ino, fh.gen, &a), &a);
}

static int p_lookup(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	return reply_attr(q->w, arf_ops_lookup(&q->d->fs, q->cr, fh.ino, fh.gen, name, nlen, &a),
			  &a);
}

/* READDIR, and READDIRPLUS (plus: each entry followed by its child's
 * attributes, read in place under the same shared lock as the listing, so
 * a listing of 1,024 entries costs arfd a fraction of what the shipped
 * readdir program's copied and checked reads of each entry and inode
 * cost: bench/README.md, "Listings through the mount"). */
static int readdir_reply(struct arfd_req *q, int plus)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr *attrs = NULL;
	size_t n = 0;
	int eof = 0, rc;

	arf_proto_get_fh(q->r, &fh);
	uint64_t cookie = arf_proto_get_u64(q->r);
	uint32_t max = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if (max == 0 || max > ARF_PROTO_MAX_READDIR)
		max = ARF_PROTO_MAX_READDIR;
	struct arf_ops_dirent *ents = malloc(max * sizeof(*ents));
	if (!ents || (plus && !(attrs = malloc(max * sizeof(*attrs))))) {
		free(ents);
		return -ENOMEM;
	}
	rc = plus ? arf_ops_readdirplus(&q->d->fs, q->cr, fh.ino, fh.gen, cookie, ents, attrs, max,
					&n, &eof)
		  : arf_ops_readdir(&q->d->fs, q->cr, fh.ino, fh.gen, cookie, ents, max, &n, &eof);
	if (!rc) {
		arf_proto_put_u32(q->w, (uint32_t)n);
		arf_proto_put_u32(q->w, (uint32_t)eof);
		for (size_t i = 0; i < n; i++) {
			arf_proto_put_u64(q->w, ents[i].ino);
			arf_proto_put_u32(q->w, ents[i].gen);
			arf_proto_put_u32(q->w, ents[i].type);
			arf_proto_put_u64(q->w, ents[i].cookie);
			arf_proto_put_bytes(q->w, ents[i].name, ents[i].namelen);
			if (plus) {
				arf_proto_put_u32(q->w, attrs[i].ino != 0);
				if (attrs[i].ino)
					put_attr(q->w, &attrs[i]);
			}
		}
	}
	free(attrs);
	free(ents);
	return rc;
}

static int p_readdir(struct arfd_req *q)
{
	return readdir_reply(q, 0);
}

static int p_readdirplus(struct arfd_req *q)
{
	return readdir_reply(q, 1);
}

static int p_read(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	size_t got = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	uint64_t off = arf_proto_get_u64(q->r);
	uint32_t len = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if (len > ARF_PROTO_MAX_IO)
		return -EINVAL;
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	rc = arf_ops_read(&q->d->fs, q->cr, fh.ino, fh.gen, off, buf, len, &got);
	if (!rc)
		arf_proto_put(q->w, buf, got);
	free(buf);
	return rc;
}

static int p_readlink(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	char buf[ARF_PATH_MAX];
	size_t got = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	rc = arf_ops_readlink(&q->d->fs, fh.ino, fh.gen, buf, sizeof(buf), &got);
	if (!rc)
		arf_proto_put(q->w, buf, got);
	return rc;
}

static int p_statfs(struct arfd_req *q)
{
	struct arf_ops_statfs s;
	struct arf_proto_statfs p;
	int rc;

	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	rc = arf_ops_statfs(&q->d->fs, &s);
	if (!rc) {
		p.bsize = s.bsize;
		p.blocks = s.blocks;
		p.bfree = s.bfree;
		p.files = s.files;
		p.ffree = s.ffree;
		p.namemax = s.namemax;
		arf_proto_put_statfs(q->w, &p);
	}
	return rc;
}

static int p_access(struct arfd_req *q)
{
	struct arf_proto_fh fh;

	arf_proto_get_fh(q->r, &fh);
	uint32_t mask = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	return arf_ops_access(&q->d->fs, q->cr, fh.ino, fh.gen, (int)mask);
}

static int p_status(struct arfd_req *q)
{
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	arfd_status_json(q->d, q->w);
	return 0;
}

/* The reply waits for durability (ARFD_PROC_DURABLE); the handle is checked. */
static int p_fsync(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;

	arf_proto_get_fh(q->r, &fh);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	return arf_ops_getattr(&q->d->fs, fh.ino, fh.gen, &a);
}

static int p_cred_mint(struct arfd_req *q)
{
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	return arfd_identity_mint(q->d, q->ac, q->cr, q->w);
}

/* ---- mutations (inside dispatch.c's transaction) -------------------------- */

/* The umask that may follow a create's fields (libarf's
 * arf_set_thread_umask; arf-fuse sends the caller's): applied unless the
 * directory has a default ACL, which the new file inherits instead
 * (xattr.c).  0, or ARF_EPROTO when the body does not end there. */
static int get_umask(struct arf_proto_rd *r, int *has, uint32_t *umask)
{
	*has = !r->err && r->len - r->pos == 4;
	*umask = *has ? arf_proto_get_u32(r) : 0;
	return arf_proto_rd_done(r) ? 0 : ARF_EPROTO;
}

static int p_create(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	uint32_t mode = arf_proto_get_u32(q->r), excl = arf_proto_get_u32(q->r), umask;
	struct arfd_xattr_inherit ih;
	int has_umask, rc;
	if (get_umask(q->r, &has_umask, &umask))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh, NULL);
	arfd_xattr_inherit_begin(q->d, fh.ino, fh.gen, name, nlen, &mode, has_umask, umask, &ih);
	rc = arf_ops_create(&q->d->fs, q->cr, fh.ino, fh.gen, name, nlen, mode, (int)excl, &a);
	arfd_xattr_inherit_end(q->d, &ih, rc ? NULL : &a);
	return arfd_wcc_reply(q, reply_attr(q->w, rc, &a), &x);
}

static int p_mkdir(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	uint32_t mode = arf_proto_get_u32(q->r), umask;
	struct arfd_xattr_inherit ih;
	int has_umask, rc;
	if (get_umask(q->r, &has_umask, &umask))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh, NULL);
	arfd_xattr_inherit_begin(q->d, fh.ino, fh.gen, name, nlen, &mode, has_umask, umask, &ih);
	rc = arf_ops_mkdir(&q->d->fs, q->cr, fh.ino, fh.gen, name, nlen, mode, &a);
	arfd_xattr_inherit_end(q->d, &ih, rc ? NULL : &a);
	return arfd_wcc_reply(q, reply_attr(q->w, rc, &a), &x);
}

static int p_mknod(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	uint32_t mode = arf_proto_get_u32(q->r);
	uint64_t rdev = arf_proto_get_u64(q->r);
	uint32_t umask;
	struct arfd_xattr_inherit ih;
	int has_umask, rc;
	if (get_umask(q->r, &has_umask, &umask))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh, NULL);
	arfd_xattr_inherit_begin(q->d, fh.ino, fh.gen, name, nlen, &mode, has_umask, umask, &ih);
	rc = arf_ops_mknod(&q->d->fs, q->cr, fh.ino, fh.gen, name, nlen, mode, rdev, &a);
	arfd_xattr_inherit_end(q->d, &ih, rc ? NULL : &a);
	return arfd_wcc_reply(q, reply_attr(q->w, rc, &a), &x);
}

/* unlink and rmdir: (directory, name); the reply is the directory's wcc
 * and what became of the file. */
static int remove_name(struct arfd_req *q, int dir)
{
	struct arf_proto_fh fh;
	struct arfd_wcc x;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh, NULL);
	arfd_wcc_obj(q, &x, &fh, name, nlen);
	return arfd_wcc_reply(q, (dir ? arf_ops_rmdir : arf_ops_unlink)(&q->d->fs, q->cr, fh.ino,
									   fh.gen, name, nlen), &x);
}

static int p_unlink(struct arfd_req *q)
{
	return remove_name(q, 0);
}

static int p_rmdir(struct arfd_req *q)
{
	return remove_name(q, 1);
}

static int p_rename(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh, fh2;
	uint32_t nlen = 0, nlen2 = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	arf_proto_get_fh(q->r, &fh2);
	const char *name2 = arf_proto_get_name(q->r, &nlen2);
	uint32_t flags = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh, &fh2);
	arfd_wcc_obj(q, &x, &fh, name, nlen);
	arfd_wcc_obj(q, &x, &fh2, name2, nlen2);
	return arfd_wcc_reply(q, arf_ops_rename(&q->d->fs, q->cr, fh.ino, fh.gen, name, nlen,
						fh2.ino, fh2.gen, name2, nlen2, flags), &x);
}

static int p_link(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh, fh2;
	struct arf_ops_attr a;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	arf_proto_get_fh(q->r, &fh2);
	const char *name = arf_proto_get_name(q->r, &nlen);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh2, NULL);
	return arfd_wcc_reply(q, reply_attr(q->w, arf_ops_link(&q->d->fs, q->cr, fh.ino, fh.gen,
								 fh2.ino, fh2.gen, name, nlen, &a),
					    &a), &x);
}

static int p_symlink(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t nlen = 0, tlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	const uint8_t *target = arf_proto_get_bytes(q->r, ARF_PATH_MAX, &tlen);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	arfd_wcc_pre(q, &x, &fh, NULL);
	return arfd_wcc_reply(q, reply_attr(q->w, arf_ops_symlink(&q->d->fs, q->cr, fh.ino, fh.gen,
								    name, nlen, (const char *)target,
								    tlen, &a), &a), &x);
}

static int p_setattr(struct arfd_req *q)
{
	struct arfd_wcc x;
	struct arf_proto_fh fh;
	struct arf_proto_setattr ps;
	struct arf_ops_setattr sa;
	struct arf_ops_attr a;

	arf_proto_get_fh(q->r, &fh);
	arf_proto_get_setattr(q->r, &ps);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	sa.valid = ps.valid;
	sa.mode = ps.mode;
	sa.uid = ps.uid;
	sa.gid = ps.gid;
	sa.size = ps.size;
	sa.atime_ns = ps.atime_ns;
	sa.mtime_ns = ps.mtime_ns;
	arfd_wcc_pre(q, &x, &fh, NULL); /* a directory's own wcc: its names stay known */
	int rc = arf_ops_setattr(&q->d->fs, q->cr, fh.ino, fh.gen, &sa, &a);
	if (!rc && (sa.valid & ARF_OPS_SET_MODE)) /* an access ACL follows the mode */
		arfd_xattr_chmod(q->d, fh.ino, fh.gen, a.mode);
	return arfd_wcc_reply(q, reply_attr(q->w, rc, &a), &x);
}

/* A data write.  Unstable unless [export] sync (dispatch.c): the reply
 * carries the write verifier (this incarnation) and the sequence the
 * transaction gets (applied_seq + 1: the commit that follows, under the same
 * lock, assigns exactly that), so that the client keeps the data until a
 * COMMIT covers it; and the offset the bytes went to. */
static int p_write(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t len = 0;
	size_t written = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	uint64_t off = arf_proto_get_u64(q->r);
	const uint8_t *data = arf_proto_get_bytes(q->r, ARF_PROTO_MAX_IO, &len);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	rc = arf_ops_write(&q->d->fs, q->cr, fh.ino, fh.gen, off, data, len, &written);
	if (rc)
		return rc;
	if (q->d->cfg.test_torn_delay_us) {
		/* test hook: hold the written blocks odd a while */
		struct timespec ts = { 0, (long)q->d->cfg.test_torn_delay_us * 1000 };
		nanosleep(&ts, NULL);
	}
	arf_proto_put_u32(q->w, (uint32_t)written);
	rc = reply_attr(q->w, arf_ops_getattr(&q->d->fs, fh.ino, fh.gen, &a), &a);
	arf_proto_put_u64(q->w, q->d->incarnation);
	arf_proto_put_u64(q->w, q->d->applied_seq + 1);
	arf_proto_put_u64(q->w, off);
	arf_proto_put_u32(q->w, q->d->cfg.sync ? ARF_PROTO_WRITE_STABLE : 0);
	if (!rc && written)
		(*(q->d->cfg.sync ? &q->d->ctr.stable_writes : &q->d->ctr.unstable_writes))++;
	return rc;
}

/* COMMIT: replies once everything applied before it is durable
 * (ARFD_PROC_DURABLE); how far that is, and how far an earlier incarnation
 * the client names was found durable through. */
static int p_commit(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint64_t through = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	uint64_t old = arf_proto_get_u64(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if ((fh.ino || fh.gen) && (rc = arf_ops_getattr(&q->d->fs, fh.ino, fh.gen, &a)))
		return rc;
	int known = old == q->d->incarnation ||
		    (old && arfd_store_durable_through(q->d->store, old, &through) == 0);
	if (old == q->d->incarnation)
		through = q->d->applied_seq;
	arf_proto_put_u64(q->w, q->d->incarnation);
	arf_proto_put_u64(q->w, q->d->applied_seq); /* durable when the reply goes */
	arf_proto_put_u64(q->w, through);
	arf_proto_put_u32(q->w, (uint32_t)known);
	q->d->ctr.commits++;
	if (q->d->cfg.test_commit_hold_ms)
		__atomic_store_n(&q->d->test_hold_armed, 1, __ATOMIC_RELEASE);
	return 0;
}

/* ---- what the transport's thread may serve ---------------------------------- */

/* A change served by the soft-NIC thread (lanes.c) frees at most this much
 * data (512-byte units: 1 MiB, 16 tag groups in RocksDB); removing or
 * truncating a bigger file is left to the workers, since one-sided reads
 * over tcp wait for the soft-NIC meanwhile. */
#define SMALL_FREE 2048u

/* Would a change of fh's file free little?  A name that does not resolve,
 * or a body that does not decode, fails at once: small too. */
static int frees_little(struct arfd_req *q, const struct arf_proto_fh *fh)
{
	struct arf_ops_attr a;

	return q->r->err || arf_ops_getattr(&q->d->fs, fh->ino, fh->gen, &a) ||
	       a.blocks <= SMALL_FREE;
}

static int named_frees_little(struct arfd_req *q, const struct arf_proto_fh *dir,
			      const char *name, uint32_t nlen)
{
	struct arf_ops_attr a;

	return q->r->err || !name ||
	       arf_ops_lookup(&q->d->fs, q->cr, dir->ino, dir->gen, name, nlen, &a) ||
	       a.blocks <= SMALL_FREE;
}

static int small_remove(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	uint32_t nlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	return named_frees_little(q, &fh, name, nlen);
}

static int small_rename(struct arfd_req *q)
{
	struct arf_proto_fh fh, fh2;
	uint32_t nlen = 0, nlen2 = 0;

	arf_proto_get_fh(q->r, &fh);
	(void)arf_proto_get_name(q->r, &nlen);
	arf_proto_get_fh(q->r, &fh2);
	const char *name2 = arf_proto_get_name(q->r, &nlen2);
	return named_frees_little(q, &fh2, name2, nlen2); /* what it replaces */
}

static int small_setattr(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_proto_setattr ps;

	arf_proto_get_fh(q->r, &fh);
	arf_proto_get_setattr(q->r, &ps);
	return !(ps.valid & ARF_OPS_SET_SIZE) || frees_little(q, &fh);
}

/* ---- the table ------------------------------------------------------------- */

#define M ARFD_PROC_MUTATES
#define H ARFD_PROC_HANDLE
#define S ARFD_PROC_SHARED /* only reads: the lock shared (arfd_fs_lock in arfd.h) */
#define N ARFD_PROC_NAMING /* served inline while syncs are quick */
#define REQ ARFD_LANE_REQUEST
#define PRG ARFD_LANE_PROGRAM
#define P(op, fn, flags, lane) [(op) - ARFD_PROC_BASE] = { (op), (flags), (lane), (fn), NULL }
/* served inline only when small(q) says it frees little */
#define PS(op, fn, small) [(op) - ARFD_PROC_BASE] = { (op), M | H | N, REQ, (fn), (small) }

static const struct arfd_proc procs[] = {
	P(ARF_OP_GETATTR, p_getattr, H | S | ARFD_PROC_BRIEF, REQ),
	P(ARF_OP_LOOKUP, p_lookup, H | S | ARFD_PROC_BRIEF, REQ),
	P(ARF_OP_READDIR, p_readdir, H | S, REQ),
	P(ARF_OP_READDIRPLUS, p_readdirplus, H | S, REQ),
	P(ARF_OP_READ, p_read, H | S, REQ),
	P(ARF_OP_READLINK, p_readlink, H | S | ARFD_PROC_BRIEF, REQ),
	P(ARF_OP_STATFS, p_statfs, S, REQ),
	P(ARF_OP_ACCESS, p_access, H | S | ARFD_PROC_BRIEF, REQ),
	P(ARF_OP_CREATE, p_create, M | H | N, REQ),
	P(ARF_OP_MKDIR, p_mkdir, M | H | N, REQ),
	P(ARF_OP_MKNOD, p_mknod, M | H | N, REQ),
	PS(ARF_OP_UNLINK, p_unlink, small_remove),
	PS(ARF_OP_RMDIR, p_rmdir, small_remove),
	PS(ARF_OP_RENAME, p_rename, small_rename),
	P(ARF_OP_LINK, p_link, M | H | N, REQ),
	P(ARF_OP_SYMLINK, p_symlink, M | H | N, REQ),
	PS(ARF_OP_SETATTR, p_setattr, small_setattr),
	P(ARF_OP_WRITE, p_write, M | H | ARFD_PROC_UNSTABLE, REQ),
	P(ARF_OP_FSYNC, p_fsync, H | ARFD_PROC_DURABLE, REQ),
	P(ARF_OP_CREATE_WRITE, arfd_proc_create_write, M | H, REQ), /* procs_compound.c */
	P(ARF_OP_COPY, arfd_proc_copy, M | H, REQ),
	P(ARF_OP_COMMIT, p_commit, H | ARFD_PROC_DURABLE, REQ),
	P(ARF_OP_APPEND, arfd_proc_append, M | H, REQ),
	P(ARF_OP_FALLOCATE, arfd_proc_fallocate, M | H, REQ),
	P(ARF_OP_SEEK, arfd_proc_seek, H | S, REQ),
	P(ARF_OP_STATUS, p_status, 0, REQ),
	P(ARF_OP_CRED_MINT, p_cred_mint, 0, REQ),
	P(ARF_OP_LOCATE, arfd_proc_locate, S, REQ), /* locate.c */
	P(ARF_OP_VOLUME_IN, arfd_proc_volume_in, ARFD_PROC_UNLOCKED, REQ), /* move_in.c */
	/* locks.c: a LOCK that must wait is kept there, not on a worker */
	P(ARF_OP_LOCK, arfd_p_lock, H, REQ),
	P(ARF_OP_UNLOCK, arfd_p_unlock, 0, REQ),
	P(ARF_OP_LOCK_RENEW, arfd_p_lock_renew, 0, REQ),
	P(ARF_OP_LOCK_CANCEL, arfd_p_lock_cancel, 0, REQ),
	/* xattr.c */
	P(ARF_OP_XATTR_GET, arfd_p_xattr_get, H | S | ARFD_PROC_BRIEF, REQ),
	P(ARF_OP_XATTR_SET, arfd_p_xattr_set, M | H | N, REQ),
	P(ARF_OP_XATTR_LIST, arfd_p_xattr_list, H | S, REQ),
	P(ARF_OP_XATTR_REMOVE, arfd_p_xattr_remove, M | H | N, REQ),
	/* served by progs.c, not under fs_lock, on the program workers */
	P(ARF_OP_PROG_LOAD, NULL, 0, PRG),
	P(ARF_OP_PROG_EXEC, NULL, 0, PRG),
};

/* What a request of a kind nobody serves gets: ENOSYS, after the same
 * stale-handle accounting as any request that may name a handle. */
static int p_unknown(struct arfd_req *q)
{
	(void)q;
	return -ENOSYS;
}
static const struct arfd_proc unknown = { 0, H, REQ, p_unknown, NULL };

const struct arfd_proc *arfd_proc_find(uint16_t op)
{
	size_t i = (size_t)op - ARFD_PROC_BASE;

	if (op < ARFD_PROC_BASE || i >= sizeof(procs) / sizeof(procs[0]) || !procs[i].op)
		return &unknown;
	return &procs[i];
}
