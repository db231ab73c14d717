/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes and POSIX ACLs.
 *
 * Stored ones are arfd's (arfd/xattr.c: user.*, trusted.*, and the ACLs
 * system.posix_acl_access and system.posix_acl_default), read and written
 * through libarf with the caller's credentials.  With FUSE_CAP_POSIX_ACL
 * the kernel enforces the ACLs it reads from us (and caches), and with
 * FUSE_CAP_DONT_MASK leaves the umask to arfd, which applies it only when
 * the directory has no default ACL.  An ACL set through another mount
 * reaches this one's kernel through the file's ctime: when attributes the
 * kernel is handed show a ctime it has not seen with the mtime it has (a
 * change of metadata, not a write), its cached ACLs of the file are
 * dropped (nodes.c calls arf_fuse_acl_changed), so the next permission
 * check asks again -- within the attribute timeout, as other changes from
 * other clients.  (An ACL changed together with a write between two looks
 * is missed until the next such change or until the kernel forgets the
 * inode; the price of not asking again after every write.)
 *
 * security.* is not stored (no security module's labels travel over the
 * network): reading one says ENODATA here, without a request -- the kernel
 * asks for security.capability before every write --, setting one says
 * EOPNOTSUPP.
 *
 * And three read-only virtual attributes that tell a tool which ARF server
 * and which file it is looking at, so that arf-grep and the like can talk
 * to the server directly:
 *
 *   user.arf.server   the URL this mount was made from (arf://HOST:PORT/PATH
 *                     or arf+shm:///PATH?socket=SOCK)
 *   user.arf.ino      the file's ARF inode number (decimal; also st_ino)
 *   user.arf.gen      the file's ARF generation (decimal)
 *
 * They answer getxattr but are not listed by listxattr, like CephFS's
 * ceph.* attributes: a listed attribute would be copied by cp -a, tar
 * --xattrs or rsync -X onto files elsewhere, which would then claim to be
 * ARF files.  Names under user.arf. cannot be set or removed (ENOTSUP).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_fuse.h"

#define ARF_PREFIX "user.arf."

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

static int prefixed(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/* What a name is here: 0 stored at arfd; else the errno reading (get) or
 * changing it gets without asking. */
static int local_answer(struct arf_fuse *fs, const char *name, int get)
{
	if (prefixed(name, "security."))
		return get ? ENODATA : EOPNOTSUPP;
	if (prefixed(name, "system.posix_acl_"))
		return fs->acl ? 0 : EOPNOTSUPP; /* the kernel would not enforce them */
	if (prefixed(name, "system."))
		return EOPNOTSUPP;
	return 0;
}

/* A value or a list: the length when size is 0, else the bytes. */
static void reply_sized(fuse_req_t req, ssize_t len, const void *buf, size_t size)
{
	if (len < 0)
		fuse_reply_err(req, arf_fuse_errno_fh((int)len));
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	int e;

	if (prefixed(name, ARF_PREFIX)) {
		char buf[sizeof(fs->opts.url) + 1];
		int len = value_of(fs, n, name, buf, sizeof(buf));
		if (len >= 0 && size && size < (size_t)len)
			len = -ERANGE;
		reply_sized(req, len, buf, size);
		return;
	}
	if ((e = local_answer(fs, name, 1))) {
		fuse_reply_err(req, e);
		return;
	}
	if (size > ARF_FUSE_XATTR_MAX)
		size = ARF_FUSE_XATTR_MAX;
	void *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (prefixed(name, "system.posix_acl_")) {
		/* anyone may read an ACL: no groups to look up (the kernel asks for
		 * every file's ACL at its first permission check) */
		const struct fuse_ctx *ctx = fuse_req_ctx(req);
		struct arf_cred cr = { (uint32_t)ctx->uid, (uint32_t)ctx->gid, 0, { 0 } };
		arf_set_thread_cred(&cr);
	} else {
		arf_fuse_cred_set(req);
	}
	reply_sized(req, arf_getxattr(fs->c, n->ino, n->gen, name, buf, size), buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);

	if (size > ARF_FUSE_XATTR_MAX)
		size = ARF_FUSE_XATTR_MAX;
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	arf_fuse_cred_set(req);
	reply_sized(req, arf_listxattr(fs->c, n->ino, n->gen, buf, size), buf, size);
	free(buf);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	int e = prefixed(name, ARF_PREFIX) ? ENOTSUP : local_answer(fs, name, 0);

	if (e) {
		fuse_reply_err(req, e);
		return;
	}
	arf_fuse_cred_set(req);
	fuse_reply_err(req, arf_fuse_errno_fh(arf_setxattr(fs->c, n->ino, n->gen, name, value, size,
							    flags, NULL)));
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct arf_fuse *fs = arf_fuse_of(req);
	struct arf_fuse_node *n = arf_fuse_node(fs, ino);
	int e = prefixed(name, ARF_PREFIX) ? ENOTSUP : local_answer(fs, name, 0);

	if (e) {
		fuse_reply_err(req, e == EOPNOTSUPP && prefixed(name, "security.") ? ENODATA : e);
		return;
	}
	arf_fuse_cred_set(req);
	fuse_reply_err(req, arf_fuse_errno_fh(arf_removexattr(fs->c, n->ino, n->gen, name, NULL)));
}

void arf_fuse_ops_xattr(struct fuse_lowlevel_ops *ops)
{
	ops->getxattr = op_getxattr;
	ops->listxattr = op_listxattr;
	ops->setxattr = op_setxattr;
	ops->removexattr = op_removexattr;
}

void arf_fuse_xattr_want(struct arf_fuse *fs, struct fuse_conn_info *conn)
{
	const unsigned both = FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;

	if (!fs->opts.acl)
		return;
	if ((conn->capable & both) != both) {
		arf_fuse_log(FUSE_LOG_WARNING, "arf-fuse: the kernel cannot enforce POSIX ACLs "
			     "through FUSE: ACLs are not available on this mount");
		return;
	}
	conn->want |= both;
	fs->acl = 1;
}

void arf_fuse_acl_changed(struct arf_fuse *fs, struct arf_fuse_node *n)
{
	/* attributes only (and with them the cached ACLs): no page is
	 * touched, so this is safe inside a request about the file */
	if (fs->acl && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, n == &fs->root ? FUSE_ROOT_ID :
						 (fuse_ino_t)(uintptr_t)n, -1, 0);
}
