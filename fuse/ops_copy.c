/* SPDX-License-Identifier: MIT */
/*
 * copy_file_range(2) on the mount, copied by the server (COPY, as NFS 4.2
 * does): the bytes never travel through arf-fuse, whatever the size, only
 * one small request per ARF_COPY_CHUNK.  The kernel has checked the two
 * descriptors (readable, writable, one filesystem) and the flags, writes
 * back nothing here (no writeback cache by default) and drops its cached
 * pages of the destination range once the reply is in; the server checks
 * again, with the destination opener's credentials as writes do: read on
 * the source, write on the destination.  A short count is an answer
 * copy_file_range callers expect (at the source's end, or out of space).
 */
#include <errno.h>
#include <limits.h>

#include "arf_fuse.h"

/* Most bytes one kernel request copies: the reply's count is 32 bits. */
#define COPY_MAX (1u << 30)

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *src = arf_fuse_node(fs, ino_in), *dst = arf_fuse_node(fs, ino_out);
	struct arf_stat st;

	(void)fi_in;
	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (fi_out && fi_out->fh)
		arf_set_thread_cred(&((struct arf_fuse_file *)(uintptr_t)fi_out->fh)->cred);
	else
		arf_fuse_cred_set(req);
	if (len > COPY_MAX)
		len = COPY_MAX;
	ssize_t n = arf_copy(fs->c, src->ino, src->gen, (uint64_t)off_in, dst->ino, dst->gen,
			     (uint64_t)off_out, len, 0, &st);
	if (n == -ENOSYS) /* a server without COPY: the kernel copies through read and write */
		fuse_reply_err(req, ENOSYS);
	else if (n < 0)
		fuse_reply_err(req, arf_fuse_errno_fh((int)n));
	else
		fuse_reply_write(req, (size_t)n);
}

void arf_fuse_ops_copy(struct fuse_lowlevel_ops *ops)
{
	ops->copy_file_range = op_copy_file_range;
}
