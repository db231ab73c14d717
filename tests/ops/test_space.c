/* SPDX-License-Identifier: MIT */
/*
 * ops/ running out of space: inodes, overflow directory entries, listing
 * pages, data blocks (a write cut to what fits), and extent-map capacity.
 * Each -ENOSPC leaves the regions unchanged; statfs reports the allocators'
 * numbers, and fsck (which re-attaches a copy) agrees with them.
 */
#include "ops_test.h"

/* Snapshot of the regions, to prove a failing call changed nothing. */
struct snap {
	uint8_t *meta, *data; /* copies */
};

static struct snap take(struct tfs *t)
{
	struct snap s = { malloc(t->geo.meta_size), malloc(t->geo.data_size) };

	assert_non_null(s.meta);
	assert_non_null(s.data);
	memcpy(s.meta, t->meta, t->geo.meta_size);
	memcpy(s.data, t->data, t->geo.data_size);
	return s;
}

static void same(struct tfs *t, struct snap s)
{
	assert_int_equal(memcmp(s.meta, t->meta, t->geo.meta_size), 0);
	assert_int_equal(memcmp(s.data, t->data, t->geo.data_size), 0);
	free(s.meta);
	free(s.data);
}

static void test_inodes(void **state)
{
	struct tfs *t = tfs_new(8, 16, 16, 8, 16, 0);
	struct arf_ops_statfs sf;
	char p[16];

	(void)state;
	for (int i = 0; i < 7; i++) {
		snprintf(p, sizeof(p), "/f%d", i);
		assert_int_equal(do_create(t, &ROOT, p, 0644), 0);
	}
	assert_int_equal(arf_ops_statfs(&t->fs, &sf), 0);
	assert_int_equal(sf.files, 8);
	assert_int_equal(sf.ffree, 0);
	assert_int_equal(sf.namemax, 255);
	struct snap s = take(t);
	assert_int_equal(do_create(t, &ROOT, "/more", 0644), -ENOSPC);
	assert_int_equal(do_mkdir(t, &ROOT, "/dir", 0755), -ENOSPC);
	struct fh r = path(t, "/");
	struct arf_ops_attr a;
	assert_int_equal(TXN(t, arf_ops_symlink(&t->fs, &ROOT, r.ino, r.gen, "l", 1, "x", 1, &a)), -ENOSPC);
	same(t, s);
	assert_int_equal(do_unlink(t, &ROOT, "/f3"), 0);
	assert_int_equal(arf_ops_statfs(&t->fs, &sf), 0);
	assert_int_equal(sf.ffree, 1);
	assert_int_equal(do_create(t, &ROOT, "/more", 0644), 0);
	fsck(t);
	tfs_free(t);
}

static void test_entries(void **state)
{
	struct tfs *t = tfs_new(64, 1, 3, 8, 16, 0); /* one head + 3 overflow entries */
	char p[16];

	(void)state;
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "/f%d", i);
		assert_int_equal(do_create(t, &ROOT, p, 0644), 0);
	}
	uint32_t fi = t->fs.free_inodes;
	struct snap s = take(t);
	assert_int_equal(do_create(t, &ROOT, "/f4", 0644), -ENOSPC);
	assert_int_equal(do_link(t, &ROOT, "/f0", "/l"), -ENOSPC);
	assert_int_equal(do_rename(t, &ROOT, "/f0", "/newname", 0), -ENOSPC);
	same(t, s);
	assert_int_equal(t->fs.free_inodes, fi); /* the inode reserved was given back */
	/* rename over an existing name needs no new entry */
	assert_int_equal(do_rename(t, &ROOT, "/f0", "/f1", 0), 0);
	assert_int_equal(do_create(t, &ROOT, "/f4", 0644), 0); /* reuses the freed slot */
	fsck(t);
	tfs_free(t);
}

static void test_pages(void **state)
{
	struct tfs *t = tfs_new(64, 64, 64, 1, 16, 0); /* a single meta page */

	(void)state;
	assert_int_equal(do_mkdir(t, &ROOT, "/d", 0755), 0); /* root's listing takes it */
	assert_int_equal(t->fs.free_pages, 0);
	struct snap s = take(t);
	assert_int_equal(do_create(t, &ROOT, "/d/f", 0644), -ENOSPC); /* d needs a page */
	same(t, s);
	assert_int_equal(do_create(t, &ROOT, "/f", 0644), 0); /* root's page has room */
	fsck(t);
	tfs_free(t);
}

static void test_blocks(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 10, 0);
	static uint8_t buf[16 * 4096];
	struct arf_ops_statfs sf;
	size_t w;

	(void)state;
	memset(buf, 7, sizeof(buf));
	assert_int_equal(do_create(t, &ROOT, "/a", 0644), 0);
	assert_int_equal(do_create(t, &ROOT, "/b", 0644), 0);
	struct fh a = path(t, "/a"), b = path(t, "/b");
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, 0, buf, 6 * 4096, &w)), 0);
	assert_int_equal(w, 6 * 4096);
	/* 4 blocks left: a write of 16 blocks at offset 100 gets the first 4 minus the offset */
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, b.ino, b.gen, 100, buf, sizeof(buf), &w)), 0);
	assert_int_equal(w, 4 * 4096 - 100);
	assert_int_equal(attr_of(t, "/b").size, 4 * 4096);
	assert_int_equal(arf_ops_statfs(&t->fs, &sf), 0);
	assert_int_equal(sf.blocks, 10);
	assert_int_equal(sf.bfree, 0);
	assert_int_equal(sf.bsize, 4096);
	/* nothing left: ENOSPC and no change */
	struct snap s = take(t);
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, b.ino, b.gen, 4 * 4096, buf, 10, &w)), -ENOSPC);
	assert_int_equal(w, 0);
	struct arf_ops_attr at;
	struct fh r = path(t, "/");
	assert_int_equal(TXN(t, arf_ops_symlink(&t->fs, &ROOT, r.ino, r.gen, "l", 1, "x", 1, &at)), -ENOSPC);
	same(t, s);
	/* overwriting allocated blocks still works when the disk is full */
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, 10, buf, 3 * 4096, &w)), 0);
	assert_int_equal(w, 3 * 4096);
	fsck(t);
	/* truncate gives blocks back; statfs follows */
	struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_SIZE, .size = 4096 };
	assert_int_equal(do_setattr(t, &ROOT, "/a", &sa), 0);
	assert_int_equal(arf_ops_statfs(&t->fs, &sf), 0);
	assert_int_equal(sf.bfree, 5);
	assert_int_equal(attr_of(t, "/a").blocks + attr_of(t, "/b").blocks, (10 - 5) * 8);
	fsck(t);
	tfs_free(t);
}

/* A map that would need a page when none is free: -ENOSPC, unchanged. */
static void test_extent_capacity(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 1, 64, 0);
	size_t w;

	(void)state;
	assert_int_equal(do_create(t, &ROOT, "/a", 0644), 0); /* root's listing: the only page */
	assert_int_equal(do_create(t, &ROOT, "/b", 0644), 0);
	struct fh a = path(t, "/a"), b = path(t, "/b");
	/* interleave: every block of a is its own extent */
	for (int i = 0; i < 8; i++) {
		assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, (uint64_t)i * 8192, "a", 1, &w)), 0);
		assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, b.ino, b.gen, (uint64_t)i * 4096, "b", 1, &w)), 0);
	}
	assert_int_equal(arf_meta_inode_ptr(&t->fs, a.ino)->nextents, 8);
	struct snap s = take(t);
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, 8 * 8192, "a", 1, &w)), -ENOSPC);
	same(t, s);
	/* filling a hole with a block that continues no extent is refused too */
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, 4096, "a", 1, &w)), -ENOSPC);
	/* rewriting mapped blocks needs no new extent */
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, 8190, "xyzw", 4, &w)), -ENOSPC);
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, a.ino, a.gen, 8192, "xyzw", 4, &w)), 0);
	fsck(t);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inodes),
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_extent_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
