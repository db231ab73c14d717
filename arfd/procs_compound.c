/* SPDX-License-Identifier: MIT */
/*
 * arfd/procs_compound — the procedures that save clients round trips, apart
 * from procs.c's one-hook-per-kind table entries: the directories' wcc that
 * every change of names appends to its reply (NFSv3's wcc_data, so that a
 * client answers the kernel's next GETATTR of the directory, and keeps its
 * knowledge of the directory's names, without asking again), the compound
 * CREATE_WRITE (a small file made whole in one transaction), and COPY
 * (server-side copy: the bytes never cross the network).
 *
 * Like procs.c's, these run with fs_lock held, mutations inside the
 * transaction dispatch.c opened; the body is untrusted and read through the
 * bounds-checked reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "arf_ops.h"
#include "arf_proto.h"
#include "arfd.h"

void arfd_wcc_pre(struct arfd_req *q, struct arfd_wcc *x, const struct arf_proto_fh *a,
		  const struct arf_proto_fh *b)
{
	struct arf_ops_attr at;

	x->n = 0;
	x->objs = 0;
	x->nobj = 0;
	for (int i = 0; i < 2; i++) {
		const struct arf_proto_fh *fh = i ? b : a;
		if (!fh || (i && fh->ino == a->ino && fh->gen == a->gen))
			continue;
		if (arf_ops_getattr(&q->d->fs, fh->ino, fh->gen, &at) || !S_ISDIR(at.mode))
			continue; /* the hook says why (ESTALE, ENOTDIR) */
		x->fh[x->n] = *fh;
		x->pre[x->n] = at.ctime_ns;
		x->n++;
	}
}

void arfd_wcc_obj(struct arfd_req *q, struct arfd_wcc *x, const struct arf_proto_fh *dir,
		  const char *name, uint32_t nlen)
{
	struct arf_ops_attr at;

	x->objs = 1;
	if (x->nobj < 2 && !arf_ops_lookup(&q->d->fs, q->cr, dir->ino, dir->gen, name, nlen, &at)) {
		x->obj[x->nobj].ino = at.ino;
		x->obj[x->nobj].gen = at.gen;
		x->nobj++;
	}
}

int arfd_wcc_reply(struct arfd_req *q, int rc, const struct arfd_wcc *x)
{
	struct arf_proto_wcc v[ARF_PROTO_MAX_WCC];
	struct arf_ops_attr at;
	uint32_t n = 0;

	if (rc)
		return rc;
	for (uint32_t i = 0; i < x->n; i++) {
		if (arf_ops_getattr(&q->d->fs, x->fh[i].ino, x->fh[i].gen, &at))
			continue; /* removed by the change itself (rename over a directory) */
		v[n].dir = x->fh[i];
		v[n].pre_ctime_ns = x->pre[i];
		ARF_META_ATTR_COPY(&v[n].post, &at);
		n++;
	}
	arf_proto_put_wcc(q->w, v, n);
	if (x->objs) {
		arf_proto_put_u32(q->w, x->nobj);
		for (uint32_t i = 0; i < x->nobj; i++) {
			int live = !arf_ops_getattr(&q->d->fs, x->obj[i].ino, x->obj[i].gen, &at);
			arf_proto_put_fh(q->w, &x->obj[i]);
			arf_proto_put_u32(q->w, (uint32_t)live);
			if (live) {
				struct arf_proto_attr p;
				ARF_META_ATTR_COPY(&p, &at);
				arf_proto_put_attr(q->w, &p);
			}
		}
	}
	return 0;
}

static void put_attr(struct arf_proto_wr *w, const struct arf_ops_attr *a)
{
	struct arf_proto_attr p;

	ARF_META_ATTR_COPY(&p, a);
	arf_proto_put_attr(w, &p);
}

int arfd_proc_create_write(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_proto_setattr ps;
	struct arf_ops_setattr sa;
	struct arf_ops_attr a;
	struct arfd_wcc x;
	uint32_t nlen = 0, dlen = 0;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &nlen);
	uint32_t mode = arf_proto_get_u32(q->r);
	arf_proto_get_setattr(q->r, &ps);
	const uint8_t *data = arf_proto_get_bytes(q->r, ARF_PROTO_MAX_IO, &dlen);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	sa.valid = ps.valid;
	sa.mode = ps.mode;
	sa.uid = ps.uid;
	sa.gid = ps.gid;
	sa.size = ps.size;
	sa.atime_ns = ps.atime_ns;
	sa.mtime_ns = ps.mtime_ns;
	arfd_wcc_pre(q, &x, &fh, NULL);
	int rc = arf_ops_create_write(&q->d->fs, q->cr, fh.ino, fh.gen, name, nlen, mode, data, dlen,
				      &sa, &a);
	if (rc)
		return rc;
	put_attr(q->w, &a);
	return arfd_wcc_reply(q, 0, &x);
}

int arfd_proc_copy(struct arfd_req *q)
{
	struct arf_proto_fh src, dst;
	struct arf_ops_attr a;
	uint64_t copied = 0;
	int rc;

	arf_proto_get_fh(q->r, &src);
	uint64_t soff = arf_proto_get_u64(q->r);
	arf_proto_get_fh(q->r, &dst);
	uint64_t doff = arf_proto_get_u64(q->r);
	uint64_t len = arf_proto_get_u64(q->r);
	uint32_t flags = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	if (flags)
		return -EINVAL;
	rc = arf_ops_copy(&q->d->fs, q->cr, src.ino, src.gen, soff, dst.ino, dst.gen, doff, len,
			  &copied);
	if (rc)
		return rc;
	if ((rc = arf_ops_getattr(&q->d->fs, dst.ino, dst.gen, &a)))
		return rc;
	arf_proto_put_u64(q->w, copied);
	put_attr(q->w, &a);
	return 0;
}
