/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the ops/ tests: credentials, path resolution through the
 * hooks, one-line wrappers that run a hook in a transaction, and the
 * standard tree most error cases start from.
 */
#ifndef ARF_OPS_TEST_H
#define ARF_OPS_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "meta_test.h"
#include "arf_ops.h"

static const struct arf_cred ROOT = { .uid = 0, .gid = 0 };
static const struct arf_cred U1 = { .uid = 1000, .gid = 1000 };
static const struct arf_cred U2 = { .uid = 1001, .gid = 1001, .ngroups = 1, .groups = { 1000 } };
static const struct arf_cred U3 = { .uid = 1002, .gid = 1002 };

/* (ino, gen) of a path ("/a/b"), resolved as root; 0 ino if missing. */
struct fh {
	uint64_t ino; /* 0 = not found */
	uint32_t gen; /* its generation */
};

static inline struct fh path(struct tfs *t, const char *p)
{
	struct fh h = { ARF_ROOT_INO, arf_meta_inode_ptr(&t->fs, ARF_ROOT_INO)->gen };
	struct arf_ops_attr a;

	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		if (arf_ops_lookup(&t->fs, &ROOT, h.ino, h.gen, p, n, &a))
			return (struct fh){ 0, 0 };
		h.ino = a.ino;
		h.gen = a.gen;
		p += n;
	}
	return h;
}

static inline struct arf_ops_attr attr_of(struct tfs *t, const char *p)
{
	struct fh h = path(t, p);
	struct arf_ops_attr a;

	memset(&a, 0, sizeof(a));
	assert_int_not_equal(h.ino, 0);
	assert_int_equal(arf_ops_getattr(&t->fs, h.ino, h.gen, &a), 0);
	return a;
}

/* Split "/a/b/name" into the parent handle and the last name. */
static inline struct fh parent_of(struct tfs *t, const char *p, const char **name)
{
	const char *slash = strrchr(p, '/');
	char dir[512];

	assert_non_null(slash);
	memcpy(dir, p, (size_t)(slash - p));
	dir[slash - p] = 0;
	*name = slash + 1;
	return path(t, dir);
}

static inline int do_mkdir(struct tfs *t, const struct arf_cred *cr, const char *p, uint32_t mode)
{
	const char *name;
	struct fh d = parent_of(t, p, &name);
	struct arf_ops_attr a;
	return TXN(t, arf_ops_mkdir(&t->fs, cr, d.ino, d.gen, name, strlen(name), mode, &a));
}

static inline int do_create(struct tfs *t, const struct arf_cred *cr, const char *p, uint32_t mode)
{
	const char *name;
	struct fh d = parent_of(t, p, &name);
	struct arf_ops_attr a;
	return TXN(t, arf_ops_create(&t->fs, cr, d.ino, d.gen, name, strlen(name), mode, 1, &a));
}

static inline int do_unlink(struct tfs *t, const struct arf_cred *cr, const char *p)
{
	const char *name;
	struct fh d = parent_of(t, p, &name);
	return TXN(t, arf_ops_unlink(&t->fs, cr, d.ino, d.gen, name, strlen(name)));
}

static inline int do_rmdir(struct tfs *t, const struct arf_cred *cr, const char *p)
{
	const char *name;
	struct fh d = parent_of(t, p, &name);
	return TXN(t, arf_ops_rmdir(&t->fs, cr, d.ino, d.gen, name, strlen(name)));
}

static inline int do_rename(struct tfs *t, const struct arf_cred *cr, const char *from,
			    const char *to, uint32_t flags)
{
	const char *on, *nn;
	struct fh od = parent_of(t, from, &on), nd = parent_of(t, to, &nn);
	return TXN(t, arf_ops_rename(&t->fs, cr, od.ino, od.gen, on, strlen(on), nd.ino, nd.gen, nn,
				     strlen(nn), flags));
}

static inline int do_link(struct tfs *t, const struct arf_cred *cr, const char *target, const char *p)
{
	const char *name;
	struct fh f = path(t, target), d = parent_of(t, p, &name);
	struct arf_ops_attr a;
	return TXN(t, arf_ops_link(&t->fs, cr, f.ino, f.gen, d.ino, d.gen, name, strlen(name), &a));
}

static inline int do_write(struct tfs *t, const struct arf_cred *cr, const char *p, uint64_t off,
			   const void *buf, size_t len)
{
	struct fh f = path(t, p);
	size_t w;
	int rc = TXN(t, arf_ops_write(&t->fs, cr, f.ino, f.gen, off, buf, len, &w));
	if (!rc && w != len)
		return -ENOSPC;
	return rc;
}

static inline int do_setattr(struct tfs *t, const struct arf_cred *cr, const char *p,
			     const struct arf_ops_setattr *sa)
{
	struct fh f = path(t, p);
	struct arf_ops_attr a;
	return TXN(t, arf_ops_setattr(&t->fs, cr, f.ino, f.gen, sa, &a));
}

static inline void own(struct tfs *t, const char *p, uint32_t uid, uint32_t gid, uint32_t mode)
{
	struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_UID | ARF_OPS_SET_GID | ARF_OPS_SET_MODE,
				      .uid = uid, .gid = gid, .mode = mode };
	assert_int_equal(do_setattr(t, &ROOT, p, &sa), 0);
}

/* The standard tree (owners in brackets):
 *   /            0777 root
 *   /d           0755 [U1]   /d/f 0644 [U1]   /d/sub 0755 [U1]   /d/sub/x 0644 [U1]
 *   /e           0755 [U1]   empty
 *   /f           0644 [U1]   100 bytes
 *   /private     0600 [U1]
 *   /ownro       0400 [U1]
 *   /pubfile     0666 [U1]
 *   /grp         0040 root:1000
 *   /ro          0555 [U1]   /ro/g 0644 [U1]
 *   /nox         0600 [U1]   /nox/in
 *   /sticky      1777 root   /sticky/u1f [U1]   /sticky/u2f [U2]
 *   /pub, /pub2  0777 root   /pub/u1d 0755 [U1]
 *   /ln          -> "f"
 *   /fifo        fifo 0644 root
 */
static inline struct tfs *std_tree(void)
{
	struct tfs *t = tfs_new(256, 64, 256, 64, 256, 0);
	char buf[100];
	struct fh r = path(t, "/");
	struct arf_ops_attr a;

	memset(buf, 'z', sizeof(buf));
	own(t, "/", 0, 0, 0777);
	assert_int_equal(do_mkdir(t, &ROOT, "/d", 0755), 0);
	assert_int_equal(do_create(t, &ROOT, "/d/f", 0644), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/d/sub", 0755), 0);
	assert_int_equal(do_create(t, &ROOT, "/d/sub/x", 0644), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/e", 0755), 0);
	assert_int_equal(do_create(t, &ROOT, "/f", 0644), 0);
	assert_int_equal(do_write(t, &ROOT, "/f", 0, buf, sizeof(buf)), 0);
	assert_int_equal(do_create(t, &ROOT, "/private", 0600), 0);
	assert_int_equal(do_create(t, &ROOT, "/ownro", 0400), 0);
	assert_int_equal(do_create(t, &ROOT, "/pubfile", 0666), 0);
	assert_int_equal(do_create(t, &ROOT, "/grp", 0040), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/ro", 0755), 0);
	assert_int_equal(do_create(t, &ROOT, "/ro/g", 0644), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/nox", 0755), 0);
	assert_int_equal(do_create(t, &ROOT, "/nox/in", 0644), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/sticky", 01777), 0);
	assert_int_equal(do_create(t, &U1, "/sticky/u1f", 0644), 0);
	assert_int_equal(do_create(t, &U2, "/sticky/u2f", 0644), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/pub", 0777), 0);
	assert_int_equal(do_mkdir(t, &ROOT, "/pub2", 0777), 0);
	assert_int_equal(do_mkdir(t, &U1, "/pub/u1d", 0755), 0);
	assert_int_equal(TXN(t, arf_ops_symlink(&t->fs, &ROOT, r.ino, r.gen, "ln", 2, "f", 1, &a)), 0);
	assert_int_equal(TXN(t, arf_ops_mknod(&t->fs, &ROOT, r.ino, r.gen, "fifo", 4, S_IFIFO | 0644, 0, &a)), 0);
	const char *u1[] = { "/d", "/d/f", "/d/sub", "/d/sub/x", "/e", "/f", "/private", "/ownro",
			     "/pubfile", "/ro/g", "/nox/in" };
	for (size_t i = 0; i < sizeof(u1) / sizeof(u1[0]); i++)
		own(t, u1[i], 1000, 1000, attr_of(t, u1[i]).mode & 07777);
	own(t, "/grp", 0, 1000, 0040);
	own(t, "/ro", 1000, 1000, 0555);
	own(t, "/nox", 1000, 1000, 0600);
	return t;
}

#endif /* ARF_OPS_TEST_H */
