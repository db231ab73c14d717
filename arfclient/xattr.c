/* SPDX-License-Identifier: MIT */
/*
 * libarf extended attributes: requests to arfd (arfd/xattr.c keeps them),
 * with one shortcut through the exported layout.  An inode record carries
 * flag bits saying whether the file has any attribute, an access ACL or a
 * default ACL; a client holding region keys reads the inode one-sidedly
 * (a memory copy over shm, one round without the server's filesystem code
 * over tcp) and answers "no such attribute" or an empty list without a
 * request.  That is the common case: the kernel asks for every file's ACL
 * the first time it checks a permission on it.
 */
#include <errno.h>
#include <string.h>

#include "client_int.h"

/* 1 when the one-sided inode says it has no attribute that name could be
 * (name NULL: none at all); 0 when a request must tell. */
static int surely_none(arf_client *c, uint64_t ino, uint32_t gen, const char *name)
{
	struct arf_meta_inode in;
	uint32_t need = ARF_META_INO_XATTR;

	if (!c->have_regions || !c->opts.one_sided || arf_os_inode(c, ino, gen, &in))
		return 0;
	if (name && !strcmp(name, "system.posix_acl_access"))
		need = ARF_META_INO_ACL;
	else if (name && !strcmp(name, "system.posix_acl_default"))
		need = ARF_META_INO_DACL;
	return !(in.flags & need);
}

static void put_fh(struct arf_proto_wr *w, uint64_t ino, uint32_t gen)
{
	struct arf_proto_fh fh = { ino, gen };
	arf_proto_put_fh(w, &fh);
}

static int name_ok(const char *name, size_t *len)
{
	*len = strlen(name);
	return *len > ARF_XATTR_NAME_MAX ? -ERANGE : *len ? 0 : -EINVAL;
}

/* GET and LIST answer u32 len, then (when size was given) the bytes. */
static ssize_t sized_reply(struct arf_net_buf *resp, void *buf, size_t size)
{
	struct arf_proto_rd r;
	uint32_t n = 0;

	arf_proto_rd_init(&r, resp->data, resp->len);
	uint32_t len = arf_proto_get_u32(&r);
	if (size) {
		const uint8_t *p = arf_proto_get_bytes(&r, (uint32_t)size, &n);
		if (r.err || n != len)
			return ARF_EPROTO;
		memcpy(buf, p, n);
	}
	return r.err ? ARF_EPROTO : (ssize_t)len;
}

ssize_t arf_v_getxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, void *buf,
		     size_t size)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	size_t len;
	int rc;

	if ((rc = name_ok(name, &len)))
		return rc;
	if (surely_none(c, ino, gen, name))
		return -ENODATA;
	if (size > ARF_XATTR_VALUE_MAX)
		size = ARF_XATTR_VALUE_MAX;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_bytes(&w, name, (uint32_t)len);
	arf_proto_put_u32(&w, (uint32_t)size);
	rc = arf_req(c, ARF_OP_XATTR_GET, &w, &resp);
	arf_proto_wr_free(&w);
	ssize_t n = rc ? rc : sized_reply(&resp, buf, size);
	arf_net_buf_free(&resp);
	return n;
}

ssize_t arf_v_listxattr(arf_client *c, uint64_t ino, uint32_t gen, char *buf, size_t size)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;

	if (surely_none(c, ino, gen, NULL))
		return 0;
	if (size > ARF_XATTR_LIST_MAX)
		size = ARF_XATTR_LIST_MAX;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_u32(&w, (uint32_t)size);
	int rc = arf_req(c, ARF_OP_XATTR_LIST, &w, &resp);
	arf_proto_wr_free(&w);
	ssize_t n = rc ? rc : sized_reply(&resp, buf, size);
	arf_net_buf_free(&resp);
	return n;
}

/* SET and REMOVE answer the file's attributes (ctime, and the mode an ACL
 * set). */
static int attr_reply(arf_client *c, uint64_t ino, int rc, struct arf_net_buf *resp,
		      struct arf_stat *out)
{
	struct arf_proto_rd r;
	struct arf_proto_attr a;
	struct arf_stat st;

	arf_icache_drop(c, ino);
	if (rc)
		return rc;
	arf_proto_rd_init(&r, resp->data, resp->len);
	arf_proto_get_attr(&r, &a);
	if (r.err)
		return ARF_EPROTO;
	arf_stat_from_proto(&a, &st);
	if (out)
		*out = st;
	return 0;
}

int arf_v_setxattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name, const void *value,
		 size_t size, int flags, struct arf_stat *out)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	size_t len;
	int rc;

	if ((rc = name_ok(name, &len)))
		return rc;
	if (size > ARF_XATTR_VALUE_MAX)
		return -E2BIG;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_bytes(&w, name, (uint32_t)len);
	arf_proto_put_bytes(&w, value, (uint32_t)size);
	arf_proto_put_u32(&w, (uint32_t)flags & (ARF_XATTR_CREATE | ARF_XATTR_REPLACE));
	rc = arf_req(c, ARF_OP_XATTR_SET, &w, &resp);
	arf_proto_wr_free(&w);
	rc = attr_reply(c, ino, rc, &resp, out);
	arf_net_buf_free(&resp);
	return rc;
}

int arf_v_removexattr(arf_client *c, uint64_t ino, uint32_t gen, const char *name,
		    struct arf_stat *out)
{
	struct arf_proto_wr w;
	struct arf_net_buf resp;
	size_t len;
	int rc;

	if ((rc = name_ok(name, &len)))
		return rc;
	arf_proto_wr_init(&w);
	put_fh(&w, ino, gen);
	arf_proto_put_bytes(&w, name, (uint32_t)len);
	rc = arf_req(c, ARF_OP_XATTR_REMOVE, &w, &resp);
	arf_proto_wr_free(&w);
	rc = attr_reply(c, ino, rc, &resp, out);
	arf_net_buf_free(&resp);
	return rc;
}
