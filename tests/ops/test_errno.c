/* SPDX-License-Identifier: MIT */
/*
 * ops/ error cases, one table: operation, credentials, paths in the
 * standard tree (ops_test.h), and the expected result.  Every case starts
 * from a fresh tree; a failing case must leave both regions byte for byte
 * as they were, and a succeeding one must leave a tree that passes fsck.
 *
 * Name escapes in a path's last component: "@255" and "@256" are names of
 * that many bytes, "@empty" is "", "@slash" is "a/b".
 */
#include "ops_test.h"

enum op {
	LOOKUP, CREATE, CREATE_OPEN, MKDIR, MKNOD, UNLINK, RMDIR, RENAME, LINK, SYMLINK,
	READLINK, READ, WRITE, CHMOD, CHOWN_UID, CHOWN_GID, TRUNC, TIMES, TIMES_NOW, ACCESS,
	READDIR, STALE,
};

struct ecase {
	const char *what;           /* description */
	enum op op;                 /* the hook */
	const struct arf_cred *cr;  /* caller */
	const char *a, *b;          /* paths */
	uint64_t arg;               /* mode, size, offset, uid, mask, target length */
	uint32_t flags;             /* rename flags */
	int expect;                 /* 0 or -errno */
};

static const struct ecase cases[] = {
	/* lookup */
	{ "lookup missing", LOOKUP, &U1, "/nope", 0, 0, 0, -ENOENT },
	{ "lookup in a file", LOOKUP, &U1, "/f/x", 0, 0, 0, -ENOTDIR },
	{ "lookup without search permission", LOOKUP, &U2, "/nox/in", 0, 0, 0, -EACCES },
	{ "lookup: owner without x", LOOKUP, &U1, "/nox/in", 0, 0, 0, -EACCES },
	{ "lookup: root searches anything", LOOKUP, &ROOT, "/nox/in", 0, 0, 0, 0 },
	{ "lookup 255-byte name", LOOKUP, &U1, "/@255", 0, 0, 0, -ENOENT },
	{ "lookup 256-byte name", LOOKUP, &U1, "/@256", 0, 0, 0, -ENAMETOOLONG },
	{ "lookup empty name", LOOKUP, &U1, "/@empty", 0, 0, 0, -EINVAL },
	{ "lookup name with slash", LOOKUP, &U1, "/@slash", 0, 0, 0, -EINVAL },
	{ "lookup .", LOOKUP, &U1, "/d/.", 0, 0, 0, 0 },
	{ "lookup ..", LOOKUP, &U1, "/d/..", 0, 0, 0, 0 },
	{ "lookup stale dir", STALE, &U1, "/d", 0, 0, 0, -ESTALE },
	/* create family */
	{ "create existing, exclusive", CREATE, &U1, "/f", 0, 0644, 0, -EEXIST },
	{ "create existing, not exclusive", CREATE_OPEN, &U1, "/f", 0, 0644, 0, 0 },
	{ "create over a dir, not exclusive", CREATE_OPEN, &U1, "/d", 0, 0644, 0, -EISDIR },
	{ "create in read-only dir", CREATE, &U1, "/ro/new", 0, 0644, 0, -EACCES },
	{ "create in read-only dir as root", CREATE, &ROOT, "/ro/new", 0, 0644, 0, 0 },
	{ "create in other's dir", CREATE, &U2, "/d/new", 0, 0644, 0, -EACCES },
	{ "create: existing wins over no permission", CREATE, &U2, "/d/f", 0, 0644, 0, -EEXIST },
	{ "create in a file", CREATE, &U1, "/f/new", 0, 0644, 0, -ENOTDIR },
	{ "create 255-byte name", CREATE, &U1, "/@255", 0, 0644, 0, 0 },
	{ "create 256-byte name", CREATE, &U1, "/@256", 0, 0644, 0, -ENAMETOOLONG },
	{ "create empty name", CREATE, &U1, "/@empty", 0, 0644, 0, -EINVAL },
	{ "create name with slash", CREATE, &U1, "/@slash", 0, 0644, 0, -EINVAL },
	{ "create .", CREATE, &U1, "/d/.", 0, 0644, 0, -EEXIST },
	{ "mkdir existing", MKDIR, &U1, "/d", 0, 0755, 0, -EEXIST },
	{ "mkdir ..", MKDIR, &U1, "/d/..", 0, 0755, 0, -EEXIST },
	{ "mkdir in other's dir", MKDIR, &U2, "/d/new", 0, 0755, 0, -EACCES },
	{ "mkdir ok", MKDIR, &U1, "/d/new", 0, 0755, 0, 0 },
	{ "mknod fifo", MKNOD, &U1, "/pub/p", 0, S_IFIFO | 0600, 0, 0 },
	{ "mknod socket", MKNOD, &U1, "/pub/s", 0, S_IFSOCK | 0600, 0, 0 },
	{ "mknod char device as user", MKNOD, &U1, "/pub/c", 0, S_IFCHR | 0600, 0, -EPERM },
	{ "mknod char device as root", MKNOD, &ROOT, "/pub/c", 0, S_IFCHR | 0600, 0, 0 },
	{ "mknod directory", MKNOD, &ROOT, "/pub/x", 0, S_IFDIR | 0755, 0, -EPERM },
	{ "mknod bad type", MKNOD, &ROOT, "/pub/x", 0, S_IFMT | 0755, 0, -EINVAL },
	{ "symlink empty target", SYMLINK, &U1, "/pub/l", 0, 0, 0, -ENOENT },
	{ "symlink 4096-byte target", SYMLINK, &U1, "/pub/l", 0, 4096, 0, -ENAMETOOLONG },
	{ "symlink 4095-byte target", SYMLINK, &U1, "/pub/l", 0, 4095, 0, 0 },
	{ "symlink existing name", SYMLINK, &U1, "/f", 0, 3, 0, -EEXIST },
	{ "link", LINK, &U1, "/f", "/pub/f2", 0, 0, 0 },
	{ "link a directory", LINK, &ROOT, "/d", "/pub/d2", 0, 0, -EPERM },
	{ "link over existing", LINK, &U1, "/f", "/private", 0, 0, -EEXIST },
	{ "link into read-only dir", LINK, &U1, "/f", "/ro/f2", 0, 0, -EACCES },
	{ "link 256-byte name", LINK, &U1, "/f", "/@256", 0, 0, -ENAMETOOLONG },
	/* remove */
	{ "unlink missing", UNLINK, &U1, "/nope", 0, 0, 0, -ENOENT },
	{ "unlink a dir", UNLINK, &ROOT, "/d", 0, 0, 0, -EISDIR },
	{ "unlink .", UNLINK, &ROOT, "/d/.", 0, 0, 0, -EISDIR },
	{ "unlink in read-only dir", UNLINK, &U1, "/ro/g", 0, 0, 0, -EACCES },
	{ "unlink in other's dir", UNLINK, &U2, "/d/f", 0, 0, 0, -EACCES },
	{ "unlink: sticky, not owner", UNLINK, &U2, "/sticky/u1f", 0, 0, 0, -EPERM },
	{ "unlink: sticky, owner", UNLINK, &U1, "/sticky/u1f", 0, 0, 0, 0 },
	{ "unlink: sticky, root", UNLINK, &ROOT, "/sticky/u2f", 0, 0, 0, 0 },
	{ "unlink in a file", UNLINK, &U1, "/f/x", 0, 0, 0, -ENOTDIR },
	{ "rmdir a file", RMDIR, &ROOT, "/f", 0, 0, 0, -ENOTDIR },
	{ "rmdir non-empty", RMDIR, &ROOT, "/d", 0, 0, 0, -ENOTEMPTY },
	{ "rmdir empty", RMDIR, &U1, "/e", 0, 0, 0, 0 },
	{ "rmdir .", RMDIR, &ROOT, "/d/.", 0, 0, 0, -EINVAL },
	{ "rmdir ..", RMDIR, &ROOT, "/d/..", 0, 0, 0, -ENOTEMPTY },
	{ "rmdir missing", RMDIR, &ROOT, "/nope", 0, 0, 0, -ENOENT },
	{ "rmdir in other's dir", RMDIR, &U2, "/d/sub", 0, 0, 0, -EACCES },
	/* rename */
	{ "rename missing", RENAME, &ROOT, "/nope", "/x", 0, 0, -ENOENT },
	{ "rename dir into itself", RENAME, &ROOT, "/d", "/d/x", 0, 0, -EINVAL },
	{ "rename dir into its subtree", RENAME, &ROOT, "/d", "/d/sub/x2", 0, 0, -EINVAL },
	{ "rename dir over empty dir", RENAME, &ROOT, "/d", "/e", 0, 0, 0 },
	{ "rename dir over non-empty dir", RENAME, &ROOT, "/e", "/d", 0, 0, -ENOTEMPTY },
	{ "rename dir over file", RENAME, &ROOT, "/d", "/f", 0, 0, -ENOTDIR },
	{ "rename file over dir", RENAME, &ROOT, "/f", "/e", 0, 0, -EISDIR },
	{ "rename file over file", RENAME, &ROOT, "/f", "/private", 0, 0, 0 },
	{ "rename noreplace over file", RENAME, &ROOT, "/f", "/private", 0, ARF_OPS_RENAME_NOREPLACE, -EEXIST },
	{ "rename noreplace to new", RENAME, &ROOT, "/f", "/new", 0, ARF_OPS_RENAME_NOREPLACE, 0 },
	{ "rename over an ancestor", RENAME, &ROOT, "/d/sub", "/d", 0, 0, -ENOTEMPTY },
	{ "rename onto itself", RENAME, &U2, "/f", "/f", 0, 0, 0 },
	{ "rename hard link onto its twin", RENAME, &ROOT, "/d/f", "/d/f", 0, 0, 0 },
	{ "rename bad flags", RENAME, &ROOT, "/f", "/g", 0, 4, -EINVAL },
	{ "rename noreplace|exchange", RENAME, &ROOT, "/f", "/g", 0, 3, -EINVAL },
	{ "rename out of read-only dir", RENAME, &U1, "/ro/g", "/pub/g", 0, 0, -EACCES },
	{ "rename into read-only dir", RENAME, &U1, "/pub/u1d", "/ro/u1d", 0, 0, -EACCES },
	{ "rename other's dir across parents", RENAME, &U2, "/pub/u1d", "/pub2/u1d", 0, 0, -EACCES },
	{ "rename other's dir within parent", RENAME, &U2, "/pub/u1d", "/pub/zz", 0, 0, 0 },
	{ "rename own dir across parents", RENAME, &U1, "/pub/u1d", "/pub2/u1d", 0, 0, 0 },
	{ "rename: sticky source", RENAME, &U1, "/sticky/u2f", "/sticky/zz", 0, 0, -EPERM },
	{ "rename: sticky target", RENAME, &U1, "/sticky/u1f", "/sticky/u2f", 0, 0, -EPERM },
	{ "rename: sticky, own", RENAME, &U1, "/sticky/u1f", "/sticky/zz", 0, 0, 0 },
	{ "rename . ", RENAME, &ROOT, "/d/.", "/zz", 0, 0, -EINVAL },
	{ "rename to 256-byte name", RENAME, &ROOT, "/f", "/@256", 0, 0, -ENAMETOOLONG },
	{ "exchange file and dir", RENAME, &ROOT, "/f", "/d", 0, ARF_OPS_RENAME_EXCHANGE, 0 },
	{ "exchange across dirs", RENAME, &ROOT, "/d/sub", "/pub/u1d", 0, ARF_OPS_RENAME_EXCHANGE, 0 },
	{ "exchange with missing", RENAME, &ROOT, "/f", "/nope", 0, ARF_OPS_RENAME_EXCHANGE, -ENOENT },
	{ "exchange into own subtree", RENAME, &ROOT, "/d", "/d/sub/x", 0, ARF_OPS_RENAME_EXCHANGE, -EINVAL },
	/* data */
	{ "read a dir", READ, &U1, "/d", 0, 0, 0, -EISDIR },
	{ "read without permission", READ, &U2, "/private", 0, 0, 0, -EACCES },
	{ "read as owner", READ, &U1, "/private", 0, 0, 0, 0 },
	{ "read through group", READ, &U2, "/grp", 0, 0, 0, 0 },
	{ "read: group denied to others", READ, &U3, "/grp", 0, 0, 0, -EACCES },
	{ "read a fifo", READ, &ROOT, "/fifo", 0, 0, 0, -EINVAL },
	{ "readlink", READLINK, &U1, "/ln", 0, 0, 0, 0 },
	{ "readlink a file", READLINK, &U1, "/f", 0, 0, 0, -EINVAL },
	{ "write without permission", WRITE, &U2, "/f", 0, 0, 0, -EACCES },
	{ "write as owner of a 0400 file", WRITE, &U1, "/ownro", 0, 0, 0, 0 },
	{ "write a world-writable file", WRITE, &U3, "/pubfile", 0, 0, 0, 0 },
	{ "write a dir", WRITE, &ROOT, "/d", 0, 0, 0, -EISDIR },
	{ "write a fifo", WRITE, &ROOT, "/fifo", 0, 0, 0, -EINVAL },
	{ "write at the size limit", WRITE, &ROOT, "/f", 0, 1ull << 44, 0, -EFBIG },
	{ "write just below the limit", WRITE, &ROOT, "/f", 0, (1ull << 44) - 10, 0, 0 },
	/* setattr */
	{ "chmod by other", CHMOD, &U2, "/f", 0, 0600, 0, -EPERM },
	{ "chmod by owner", CHMOD, &U1, "/f", 0, 0600, 0, 0 },
	{ "chmod by root", CHMOD, &ROOT, "/f", 0, 0600, 0, 0 },
	{ "chown uid by owner", CHOWN_UID, &U1, "/f", 0, 1001, 0, -EPERM },
	{ "chown uid to itself by owner", CHOWN_UID, &U1, "/f", 0, 1000, 0, 0 },
	{ "chown uid by root", CHOWN_UID, &ROOT, "/f", 0, 1001, 0, 0 },
	{ "chgrp to own group", CHOWN_GID, &U1, "/f", 0, 1000, 0, 0 },
	{ "chgrp to a foreign group", CHOWN_GID, &U1, "/f", 0, 5, 0, -EPERM },
	{ "chgrp by non-owner", CHOWN_GID, &U2, "/f", 0, 1000, 0, -EPERM },
	{ "truncate without permission", TRUNC, &U2, "/f", 0, 0, 0, -EACCES },
	{ "truncate as owner of a 0400 file", TRUNC, &U1, "/ownro", 0, 0, 0, 0 },
	{ "truncate by group without write", TRUNC, &U2, "/f", 0, 10, 0, -EACCES },
	{ "truncate by other with write", TRUNC, &U3, "/pubfile", 0, 10, 0, 0 },
	{ "truncate a dir", TRUNC, &ROOT, "/d", 0, 0, 0, -EISDIR },
	{ "truncate a fifo", TRUNC, &ROOT, "/fifo", 0, 0, 0, -EINVAL },
	{ "truncate past the limit", TRUNC, &ROOT, "/f", 0, (1ull << 44) + 1, 0, -EFBIG },
	{ "truncate to the limit", TRUNC, &ROOT, "/f", 0, 1ull << 44, 0, 0 },
	{ "utimes explicit by other", TIMES, &U2, "/pubfile", 0, 0, 0, -EPERM },
	{ "utimes explicit by owner", TIMES, &U1, "/f", 0, 0, 0, 0 },
	{ "utimes now without write", TIMES_NOW, &U2, "/f", 0, 0, 0, -EACCES },
	{ "utimes now with write", TIMES_NOW, &U2, "/pubfile", 0, 0, 0, 0 },
	{ "setattr stale", STALE, &ROOT, "/f", 0, 0, 0, -ESTALE },
	/* access and readdir */
	{ "access r denied", ACCESS, &U2, "/private", 0, R_OK, 0, -EACCES },
	{ "access w denied", ACCESS, &U2, "/f", 0, W_OK, 0, -EACCES },
	{ "access r by group", ACCESS, &U2, "/f", 0, R_OK, 0, 0 },
	{ "access x by root, no x bit", ACCESS, &ROOT, "/f", 0, X_OK, 0, -EACCES },
	{ "access rw by root", ACCESS, &ROOT, "/private", 0, R_OK | W_OK, 0, 0 },
	{ "access x by root on a dir", ACCESS, &ROOT, "/nox", 0, X_OK, 0, 0 },
	{ "access f_ok", ACCESS, &U3, "/private", 0, F_OK, 0, 0 },
	{ "readdir without read", READDIR, &U2, "/nox", 0, 0, 0, -EACCES },
	{ "readdir a file", READDIR, &U1, "/f", 0, 0, 0, -ENOTDIR },
	{ "readdir ok", READDIR, &U2, "/d", 0, 0, 0, 0 },
};

/* Expand the name escapes of the last component. */
static const char *name_of(const char *n, char *buf, size_t *len)
{
	if (!strcmp(n, "@255") || !strcmp(n, "@256")) {
		*len = strcmp(n, "@255") ? 256 : 255;
		memset(buf, 'n', *len);
		return buf;
	}
	if (!strcmp(n, "@empty")) {
		*len = 0;
		return "";
	}
	if (!strcmp(n, "@slash")) {
		*len = 3;
		return "a/b";
	}
	*len = strlen(n);
	return n;
}

static int run(struct tfs *t, const struct ecase *c)
{
	struct arf_meta_fs *fs = &t->fs;
	struct arf_ops_attr a;
	struct arf_ops_setattr sa = { 0 };
	char nb[300], nb2[300], buf[64];
	const char *n1, *n2 = NULL;
	size_t l1, l2 = 0, got;
	struct fh d1 = parent_of(t, c->a, &n1), d2 = { 0, 0 }, f = path(t, c->a);

	n1 = name_of(n1, nb, &l1);
	if (c->b) {
		d2 = parent_of(t, c->b, &n2);
		n2 = name_of(n2, nb2, &l2);
	}
	switch (c->op) {
	case LOOKUP:
		return arf_ops_lookup(fs, c->cr, d1.ino, d1.gen, n1, l1, &a);
	case CREATE:
	case CREATE_OPEN:
		return arf_ops_create(fs, c->cr, d1.ino, d1.gen, n1, l1, (uint32_t)c->arg, c->op == CREATE, &a);
	case MKDIR:
		return arf_ops_mkdir(fs, c->cr, d1.ino, d1.gen, n1, l1, (uint32_t)c->arg, &a);
	case MKNOD:
		return arf_ops_mknod(fs, c->cr, d1.ino, d1.gen, n1, l1, (uint32_t)c->arg, 0x0801, &a);
	case UNLINK:
		return arf_ops_unlink(fs, c->cr, d1.ino, d1.gen, n1, l1);
	case RMDIR:
		return arf_ops_rmdir(fs, c->cr, d1.ino, d1.gen, n1, l1);
	case RENAME:
		return arf_ops_rename(fs, c->cr, d1.ino, d1.gen, n1, l1, d2.ino, d2.gen, n2, l2, c->flags);
	case LINK:
		return arf_ops_link(fs, c->cr, f.ino, f.gen, d2.ino, d2.gen, n2, l2, &a);
	case SYMLINK: {
		char *tgt = malloc(c->arg + 1);
		memset(tgt, 't', c->arg);
		int rc = arf_ops_symlink(fs, c->cr, d1.ino, d1.gen, n1, l1, tgt, c->arg, &a);
		free(tgt);
		return rc;
	}
	case READLINK:
		return arf_ops_readlink(fs, f.ino, f.gen, buf, sizeof(buf), &got);
	case READ:
		return arf_ops_read(fs, c->cr, f.ino, f.gen, 0, buf, sizeof(buf), &got);
	case WRITE:
		return arf_ops_write(fs, c->cr, f.ino, f.gen, c->arg, "hello", 5, &got);
	case CHMOD:
		sa.valid = ARF_OPS_SET_MODE;
		sa.mode = (uint32_t)c->arg;
		break;
	case CHOWN_UID:
		sa.valid = ARF_OPS_SET_UID;
		sa.uid = (uint32_t)c->arg;
		break;
	case CHOWN_GID:
		sa.valid = ARF_OPS_SET_GID;
		sa.gid = (uint32_t)c->arg;
		break;
	case TRUNC:
		sa.valid = ARF_OPS_SET_SIZE;
		sa.size = c->arg;
		break;
	case TIMES:
		sa.valid = ARF_OPS_SET_ATIME | ARF_OPS_SET_MTIME;
		sa.atime_ns = sa.mtime_ns = 12345;
		break;
	case TIMES_NOW:
		sa.valid = ARF_OPS_SET_ATIME_NOW | ARF_OPS_SET_MTIME_NOW;
		break;
	case ACCESS:
		return arf_ops_access(fs, c->cr, f.ino, f.gen, (int)c->arg);
	case READDIR: {
		struct arf_ops_dirent ents[8];
		int eof;
		return arf_ops_readdir(fs, c->cr, f.ino, f.gen, 0, ents, 8, &got, &eof);
	}
	case STALE:
		if (S_ISDIR(attr_of(t, c->a).mode))
			return arf_ops_lookup(fs, c->cr, f.ino, f.gen + 1, "x", 1, &a);
		sa.valid = ARF_OPS_SET_MODE;
		return arf_ops_setattr(fs, c->cr, f.ino, f.gen + 1, &sa, &a);
	}
	return arf_ops_setattr(fs, c->cr, f.ino, f.gen, &sa, &a);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ecase *c = &cases[i];
		struct tfs *t = std_tree();
		uint8_t *meta = malloc(t->geo.meta_size), *data = malloc(t->geo.data_size);
		struct arf_meta_fs before = t->fs;
		assert_non_null(meta);
		assert_non_null(data);
		memcpy(meta, t->meta, t->geo.meta_size);
		memcpy(data, t->data, t->geo.data_size);
		int rc = TXN(t, run(t, c));
		if (rc != c->expect) {
			print_error("case \"%s\": got %d (%s), want %d (%s)\n", c->what, rc,
				    strerror(-rc), c->expect, strerror(-c->expect));
			fail();
		}
		if (rc) {
			/* a failing call changes nothing */
			if (memcmp(meta, t->meta, t->geo.meta_size) || memcmp(data, t->data, t->geo.data_size)) {
				print_error("case \"%s\" failed but changed the regions\n", c->what);
				fail();
			}
			assert_int_equal(before.free_inodes, t->fs.free_inodes);
			assert_int_equal(before.free_entries, t->fs.free_entries);
			assert_int_equal(before.free_pages, t->fs.free_pages);
			assert_int_equal(before.free_blocks, t->fs.free_blocks);
		}
		fsck(t);
		free(meta);
		free(data);
		tfs_free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
