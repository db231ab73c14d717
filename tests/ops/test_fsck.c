/* SPDX-License-Identifier: MIT */
/*
 * meta/fsck on trees built by the ops/ hooks: a healthy tree (with files
 * big enough for extent pages) has no finding; each kind of damage, made
 * by changing and re-sealing an object (so only the meaning is wrong, not
 * the checksum), is found under its own kind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ops_test.h"

struct found {
	char kinds[64][32];
	int n;
};

static void on_report(void *ctx, const char *kind, const char *msg)
{
	struct found *f = ctx;
	(void)msg;
	if (f->n < 64)
		snprintf(f->kinds[f->n++], sizeof(f->kinds[0]), "%s", kind);
}

static int has(const struct found *f, const char *kind)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->kinds[i], kind))
			return 1;
	return 0;
}

static struct found run_fsck(struct tfs *t, int *rc)
{
	struct found f = { .n = 0 };
	struct arf_meta_fsck r = { .report = on_report, .ctx = &f };
	*rc = arf_meta_fsck(&t->fs, &r);
	return f;
}

/* A tree with a sparse file of many extents (extent pages) and data. */
static struct tfs *tree(void)
{
	struct tfs *t = std_tree();
	char buf[4096];
	memset(buf, 'q', sizeof(buf));
	assert_int_equal(do_create(t, &ROOT, "/big", 0644), 0);
	for (int i = 0; i < 40; i++) /* every other block: 40 extents */
		assert_int_equal(do_write(t, &ROOT, "/big", (uint64_t)i * 2 * 4096, buf, 4096), 0);
	assert_int_equal(do_write(t, &ROOT, "/pubfile", 0, buf, 100), 0);
	return t;
}

/* Change a live object and seal it again: its checksum is right. */
#define RESEAL(obj, stmt)                                   \
	do {                                                \
		arf_meta_obj_begin((obj), sizeof(*(obj)));  \
		stmt;                                       \
		arf_meta_obj_seal((obj), sizeof(*(obj)));   \
	} while (0)

static uint32_t first_pblk(struct tfs *t, const char *p)
{
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, path(t, p).ino);
	assert_false(in->flags & ARF_META_INO_EXTPAGES);
	assert_int_not_equal(in->u.ext[0].len, 0);
	return in->u.ext[0].pblk;
}

static void test_healthy(void **state)
{
	(void)state;
	struct tfs *t = tree();
	int rc;
	struct found f = run_fsck(t, &rc);
	if (rc)
		fail_msg("healthy tree: %d findings, first '%s'", rc, f.n ? f.kinds[0] : "");
	assert_true(arf_meta_inode_ptr(&t->fs, path(t, "/big").ino)->flags & ARF_META_INO_EXTPAGES);
	/* after removals and renames too */
	assert_int_equal(do_unlink(t, &ROOT, "/d/f"), 0);
	assert_int_equal(do_rename(t, &ROOT, "/d/sub", "/e/moved", 0), 0);
	assert_int_equal(do_link(t, &ROOT, "/f", "/e/f2"), 0);
	f = run_fsck(t, &rc);
	if (rc)
		fail_msg("after changes: %d findings, first '%s'", rc, f.n ? f.kinds[0] : "");
	tfs_free(t);
}

static void expect(struct tfs *t, const char *kind)
{
	int rc;
	struct found f = run_fsck(t, &rc);
	if (rc <= 0 || !has(&f, kind))
		fail_msg("want a '%s' finding; got %d: %s %s", kind, rc, f.n ? f.kinds[0] : "",
			 f.n > 1 ? f.kinds[1] : "");
	tfs_free(t);
}

static void test_dangling_entry(void **state)
{
	(void)state;
	struct tfs *t = tree();
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, path(t, "/d/f").ino);
	RESEAL(in, in->gen++);
	expect(t, "dangling-entry");
}

static void test_link_count(void **state)
{
	(void)state;
	struct tfs *t = tree();
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, path(t, "/f").ino);
	RESEAL(in, in->nlink = 3);
	expect(t, "link-count");
}

static void test_orphan(void **state)
{
	(void)state;
	struct tfs *t = tree();
	/* a live inode in a slot nothing names */
	uint64_t ino = t->fs.sb->n_inodes;
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, ino);
	RESEAL(in, (in->ino = ino, in->gen = 1, in->mode = S_IFREG | 0644, in->nlink = 1));
	expect(t, "orphan-inode");
}

static void test_leaked_block(void **state)
{
	(void)state;
	struct tfs *t = tree();
	struct arf_meta_tag *tag = arf_meta_tag_ptr(&t->fs, t->fs.sb->n_blocks - 1);
	RESEAL(tag, (tag->ino = path(t, "/f").ino, tag->gen = 1));
	expect(t, "leaked-block");
}

static void test_double_block(void **state)
{
	(void)state;
	struct tfs *t = tree();
	uint32_t pb = first_pblk(t, "/f");
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, path(t, "/pubfile").ino);
	RESEAL(in, in->u.ext[0].pblk = pb);
	expect(t, "double-block");
}

static void test_tag_mismatch(void **state)
{
	(void)state;
	struct tfs *t = tree();
	struct arf_meta_tag *tag = arf_meta_tag_ptr(&t->fs, first_pblk(t, "/f"));
	RESEAL(tag, tag->fblk = 7);
	expect(t, "block-tag");
}

static void test_block_bytes(void **state)
{
	(void)state;
	struct tfs *t = tree();
	arf_meta_block_ptr(&t->fs, first_pblk(t, "/f"))[10] ^= 0xff;
	expect(t, "block-csum");
}

static void test_torn_object(void **state)
{
	(void)state;
	struct tfs *t = tree();
	arf_meta_inode_ptr(&t->fs, path(t, "/e").ino)->mode ^= 1; /* not re-sealed */
	expect(t, "torn-object");
}

static void test_free_map(void **state)
{
	(void)state;
	struct tfs *t = tree();
	uint32_t pb = first_pblk(t, "/f");
	t->fs.blk_map[pb >> 6] &= ~(1ull << (pb & 63));
	expect(t, "free-map");
}

static void test_unreachable_entry(void **state)
{
	(void)state;
	struct tfs *t = tree();
	/* cut /e out of its chain: find its slot and unlink it from the bucket */
	struct fh e = path(t, "/e");
	for (uint32_t i = 0; i < t->fs.sb->n_entries; i++) {
		struct arf_meta_dirent *d = arf_meta_entry_ptr(&t->fs, i);
		if (d->child == e.ino && d->parent == ARF_ROOT_INO) {
			RESEAL(d, d->hash ^= 1);
			break;
		}
	}
	expect(t, "bad-entry");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy),
		cmocka_unit_test(test_dangling_entry),
		cmocka_unit_test(test_link_count),
		cmocka_unit_test(test_orphan),
		cmocka_unit_test(test_leaked_block),
		cmocka_unit_test(test_double_block),
		cmocka_unit_test(test_tag_mismatch),
		cmocka_unit_test(test_block_bytes),
		cmocka_unit_test(test_torn_object),
		cmocka_unit_test(test_free_map),
		cmocka_unit_test(test_unreachable_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
