/* SPDX-License-Identifier: MIT */
/*
 * Handlers on a file's space: fallocate (preallocate, with or without the
 * size, and punch holes) and lseek's SEEK_DATA / SEEK_HOLE, each answered
 * by the server from the file's extent map (libarf's arf_fallocate and
 * arf_seek; ops/space.c says what each mode does).  Without the lseek
 * handler the kernel would call the whole file data, so a sparse file
 * would be copied, archived and scanned as if every hole were written.
 * Both act with the opener's credentials, as reads and writes do.
 */
#include <errno.h>
#include <fcntl.h>

#include "arf_fuse.h"

static void use_cred(fuse_req_t req, struct fuse_file_info *fi)
{
	if (fi && fi->fh)
		arf_fuse_cred_file(req, &((struct arf_fuse_file *)(uintptr_t)fi->fh)->cred);
	else
		arf_fuse_cred_set(req);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	struct arf_stat st;

	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	use_cred(req, fi);
	int rc = arf_fallocate(fs->c, n->ino, n->gen, mode, (uint64_t)off, (uint64_t)len, &st);
	if (!rc)
		arf_fuse_node_seen(fs, n, &st);
	fuse_reply_err(req, arf_fuse_errno_fh(rc));
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	uint64_t where = 0;

	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	use_cred(req, fi);
	int rc = arf_seek(fs->cf, n->ino, n->gen, (uint64_t)off, whence, &where);
	if (rc)
		fuse_reply_err(req, arf_fuse_errno_fh(rc));
	else
		fuse_reply_lseek(req, (off_t)where);
}

void arf_fuse_ops_space(struct fuse_lowlevel_ops *ops)
{
	ops->fallocate = op_fallocate;
	ops->lseek = op_lseek;
}
