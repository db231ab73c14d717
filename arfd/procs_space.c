/* SPDX-License-Identifier: MIT */
/*
 * arfd/procs_space — the request procedures of file space (ops/space.c):
 * APPEND (O_APPEND at the server's end of file, the offset chosen in the
 * reply), FALLOCATE and SEEK (SEEK_DATA / SEEK_HOLE).  Registered in
 * procs.c's table beside the others; decoded as they are (every field
 * through the bounds-checked reader, ARF_EPROTO for anything left over).
 */
#include <errno.h>

#include "arf_ops.h"
#include "arf_proto.h"
#include "arfd.h"

_Static_assert(ARF_FALLOC_KEEP_SIZE == ARF_OPS_FALLOC_KEEP_SIZE &&
		       ARF_FALLOC_PUNCH_HOLE == ARF_OPS_FALLOC_PUNCH_HOLE,
	       "fallocate modes: one set of values");
_Static_assert(ARF_SEEK_DATA == ARF_OPS_SEEK_DATA && ARF_SEEK_HOLE == ARF_OPS_SEEK_HOLE,
	       "seek whences: one set of values");

static void put_attr(struct arf_proto_wr *w, const struct arf_ops_attr *a)
{
	struct arf_proto_attr p;

	ARF_META_ATTR_COPY(&p, a);
	arf_proto_put_attr(w, &p);
}

int arfd_proc_append(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	uint32_t len = 0;
	uint64_t off = 0;
	size_t written = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	const uint8_t *data = arf_proto_get_bytes(q->r, ARF_PROTO_MAX_IO, &len);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	rc = arf_ops_append(&q->d->fs, q->cr, fh.ino, fh.gen, data, len, &off, &written);
	if (rc)
		return rc;
	if ((rc = arf_ops_getattr(&q->d->fs, fh.ino, fh.gen, &a)))
		return rc;
	arf_proto_put_u64(q->w, off);
	arf_proto_put_u32(q->w, (uint32_t)written);
	put_attr(q->w, &a);
	return 0;
}

int arfd_proc_fallocate(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	struct arf_ops_attr a;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	uint32_t mode = arf_proto_get_u32(q->r);
	uint64_t off = arf_proto_get_u64(q->r), len = arf_proto_get_u64(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	rc = arf_ops_fallocate(&q->d->fs, q->cr, fh.ino, fh.gen, mode, off, len, &a);
	if (!rc)
		put_attr(q->w, &a);
	return rc;
}

int arfd_proc_seek(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	uint64_t where = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	uint64_t off = arf_proto_get_u64(q->r);
	uint32_t whence = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	rc = arf_ops_seek(&q->d->fs, q->cr, fh.ino, fh.gen, off, whence, &where);
	if (!rc)
		arf_proto_put_u64(q->w, where);
	return rc;
}
