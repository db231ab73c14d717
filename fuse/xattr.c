/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: read-only virtual attributes that tell a tool which
 * ARF server and which file it is looking at, so that arf-grep and the
 * like can talk to the server directly:
 *
 *   user.arf.server   the URL this mount was made from (arf://HOST:PORT/PATH
 *                     or arf+shm:///PATH?socket=SOCK)
 *   user.arf.ino      the file's ARF inode number (decimal; also st_ino)
 *   user.arf.gen      the file's ARF generation (decimal)
 *
 * They answer getxattr but are not listed by listxattr, like CephFS's
 * ceph.* attributes: a listed attribute would be copied by cp -a, tar
 * --xattrs or rsync -X onto files elsewhere, which would then claim to be
 * ARF files.  ARF stores no other extended attributes: setxattr and
 * removexattr fail with ENOTSUP, getxattr of any other name with ENODATA.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arf_fuse.h"

static int value_of(struct arf_fuse *fs, struct arf_fuse_node *n, const char *name, char *buf,
		    size_t cap)
{
	int len;
	if (!strcmp(name, "user.arf.server"))
		len = snprintf(buf, cap, "%s", fs->opts.url);
	else if (!strcmp(name, "user.arf.ino"))
		len = snprintf(buf, cap, "%" PRIu64, n->ino);
	else if (!strcmp(name, "user.arf.gen"))
		len = snprintf(buf, cap, "%" PRIu32, n->gen);
	else
		return -ENODATA;
	return len < 0 || (size_t)len >= cap ? -ERANGE : len;
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	char buf[sizeof(fs->opts.url) + 1];
	int len = value_of(fs, arf_fuse_node(fs, ino), name, buf, sizeof(buf));

	if (len < 0)
		fuse_reply_err(req, -len);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else if (size < (size_t)len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, ENOTSUP);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino;
	(void)name;
	fuse_reply_err(req, ENOTSUP);
}

void arf_fuse_ops_xattr(struct fuse_lowlevel_ops *ops)
{
	ops->getxattr = op_getxattr;
	ops->listxattr = op_listxattr;
	ops->setxattr = op_setxattr;
	ops->removexattr = op_removexattr;
}
