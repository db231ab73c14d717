/* SPDX-License-Identifier: MIT */
/*
 * ops/ file space (ops/space.c): fallocate's default mode and KEEP_SIZE
 * (zeroed blocks, the size extended or not, all or nothing on ENOSPC),
 * PUNCH_HOLE (whole blocks freed, edges zeroed, a map too full to split
 * left alone), SEEK_DATA / SEEK_HOLE on known layouts, appends placed at
 * the end of file, and the checks (modes, permissions, set-id bits) --
 * with random writes and punches checked against a reference buffer, and
 * fsck after each case.
 */
#include "ops_test.h"

#define BS 4096u
#define KEEP ARF_OPS_FALLOC_KEEP_SIZE
#define PUNCH ARF_OPS_FALLOC_PUNCH_HOLE

static struct fh mkfile(struct tfs *t, const char *p)
{
	assert_int_equal(do_create(t, &ROOT, p, 0644), 0);
	return path(t, p);
}

static int falloc(struct tfs *t, const struct arf_cred *cr, struct fh f, uint32_t mode,
		  uint64_t off, uint64_t len)
{
	struct arf_ops_attr a;
	return TXN(t, arf_ops_fallocate(&t->fs, cr, f.ino, f.gen, mode, off, len, &a));
}

static void wr(struct tfs *t, struct fh f, uint64_t off, const void *buf, size_t len)
{
	size_t w = 0;
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, f.ino, f.gen, off, buf, len, &w)), 0);
	assert_int_equal(w, len);
}

static size_t rd(struct tfs *t, struct fh f, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;
	assert_int_equal(arf_ops_read(&t->fs, &ROOT, f.ino, f.gen, off, buf, len, &got), 0);
	return got;
}

static int64_t seek(struct tfs *t, struct fh f, uint64_t off, uint32_t whence)
{
	uint64_t r = 0;
	int rc = arf_ops_seek(&t->fs, &ROOT, f.ino, f.gen, off, whence, &r);
	return rc ? rc : (int64_t)r;
}

static const struct arf_meta_inode *inode(struct tfs *t, struct fh f)
{
	return arf_meta_inode_ptr(&t->fs, f.ino);
}

static void test_preallocate(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 64, 0);
	struct fh f = mkfile(t, "/f");
	static uint8_t buf[64 * BS], z[64 * BS];

	(void)state;
	wr(t, f, 0, "head", 4);
	uint32_t free0 = t->fs.free_blocks;
	assert_int_equal(falloc(t, &ROOT, f, 0, 0, 10 * BS), 0);
	assert_int_equal(inode(t, f)->size, 10 * BS);
	assert_int_equal(inode(t, f)->blocks, 10);
	assert_int_equal(t->fs.free_blocks, free0 - 9); /* block 0 was mapped already */
	assert_int_equal(rd(t, f, 0, buf, sizeof(buf)), 10 * BS);
	assert_memory_equal(buf, "head", 4);
	assert_memory_equal(buf + 4, z, 10 * BS - 4);
	/* KEEP_SIZE past the end: blocks, no size; they read as zeros once there */
	assert_int_equal(falloc(t, &ROOT, f, KEEP, 20 * BS, 4 * BS), 0);
	assert_int_equal(inode(t, f)->size, 10 * BS);
	assert_int_equal(inode(t, f)->blocks, 14);
	assert_int_equal(seek(t, f, 0, ARF_OPS_SEEK_HOLE), 10 * BS); /* the end of file */
	struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_SIZE, .size = 24 * BS };
	assert_int_equal(do_setattr(t, &ROOT, "/f", &sa), 0);
	assert_int_equal(rd(t, f, 10 * BS, buf, 14 * BS), 14 * BS);
	assert_memory_equal(buf, z, 14 * BS);
	assert_int_equal(seek(t, f, 10 * BS, ARF_OPS_SEEK_DATA), 20 * BS);
	/* a write into preallocated blocks keeps the map */
	uint32_t n = inode(t, f)->nextents;
	wr(t, f, 21 * BS + 7, "mid", 3);
	assert_int_equal(inode(t, f)->nextents, n);
	assert_int_equal(inode(t, f)->blocks, 14);
	fsck(t);
	/* all or nothing: more than is free changes nothing */
	free0 = t->fs.free_blocks;
	assert_int_equal(falloc(t, &ROOT, f, 0, 100 * BS, (uint64_t)(free0 + 1) * BS), -ENOSPC);
	assert_int_equal(t->fs.free_blocks, free0);
	assert_int_equal(inode(t, f)->size, 24 * BS);
	fsck(t);
	tfs_free(t);
}

static void test_punch_hole(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 64, 0);
	struct fh f = mkfile(t, "/f");
	static uint8_t x[32 * BS], buf[32 * BS];

	(void)state;
	memset(x, 'x', sizeof(x));
	wr(t, f, 0, x, sizeof(x));
	assert_int_equal(inode(t, f)->nextents, 1);
	uint32_t free0 = t->fs.free_blocks;
	/* from the middle of block 3 to the middle of block 9: 4..8 freed */
	uint64_t off = 3 * BS + 100, end = 9 * BS + 200;
	assert_int_equal(falloc(t, &ROOT, f, KEEP | PUNCH, off, end - off), 0);
	assert_int_equal(t->fs.free_blocks, free0 + 5);
	assert_int_equal(inode(t, f)->blocks, 27);
	assert_int_equal(inode(t, f)->nextents, 2);
	assert_int_equal(inode(t, f)->size, 32 * BS);
	assert_int_equal(rd(t, f, 0, buf, sizeof(buf)), sizeof(buf));
	for (uint64_t i = 0; i < sizeof(buf); i++)
		assert_int_equal(buf[i], i >= off && i < end ? 0 : 'x');
	assert_int_equal(seek(t, f, 0, ARF_OPS_SEEK_HOLE), 4 * BS);
	assert_int_equal(seek(t, f, 4 * BS, ARF_OPS_SEEK_DATA), 9 * BS);
	assert_int_equal(seek(t, f, 5 * BS + 1, ARF_OPS_SEEK_HOLE), 5 * BS + 1);
	assert_int_equal(seek(t, f, 31 * BS, ARF_OPS_SEEK_HOLE), 32 * BS);
	assert_int_equal(seek(t, f, 32 * BS, ARF_OPS_SEEK_DATA), -ENXIO);
	assert_int_equal(seek(t, f, 40 * BS, ARF_OPS_SEEK_HOLE), -ENXIO);
	/* a punch inside one block only zeroes */
	assert_int_equal(falloc(t, &ROOT, f, KEEP | PUNCH, 20 * BS + 1, 10), 0);
	assert_int_equal(t->fs.free_blocks, free0 + 5);
	assert_int_equal(rd(t, f, 20 * BS, buf, 16), 16);
	assert_int_equal(buf[0], 'x');
	assert_int_equal(buf[1], 0);
	assert_int_equal(buf[11], 'x');
	fsck(t);
	/* the whole file: no blocks left, the size stays */
	assert_int_equal(falloc(t, &ROOT, f, KEEP | PUNCH, 0, 1ull << 30), 0);
	assert_int_equal(inode(t, f)->blocks, 0);
	assert_int_equal(inode(t, f)->size, 32 * BS);
	assert_int_equal(seek(t, f, 0, ARF_OPS_SEEK_DATA), -ENXIO);
	fsck(t);
	tfs_free(t);
}

static void test_punch_that_cannot_split(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 256, 0);
	struct fh f = mkfile(t, "/f");
	uint32_t taken[64], ntaken = 0;
	char c = 'c';

	(void)state;
	for (uint32_t i = 0; i < ARF_META_INLINE_EXTENTS; i++) /* blocks 0, 10, 20, ... */
		wr(t, f, (uint64_t)i * 10 * BS, &c, 1);
	assert_int_equal(falloc(t, &ROOT, f, 0, 70 * BS, 3 * BS), 0); /* the last: 70..72 */
	uint32_t n = inode(t, f)->nextents, free0 = t->fs.free_blocks;
	assert_int_equal(n, ARF_META_INLINE_EXTENTS);
	/* no free page left for an extent page: the map cannot grow */
	while (ntaken < 64 && !arf_meta_page_alloc(&t->fs, &taken[ntaken]))
		ntaken++;
	assert_int_not_equal(arf_meta_ext_fits(&t->fs, inode(t, f), n + 1), 0);
	/* punching the middle block of the last extent would make n + 1 */
	assert_int_equal(falloc(t, &ROOT, f, KEEP | PUNCH, 71 * BS, BS), -ENOSPC);
	assert_int_equal(inode(t, f)->nextents, n);
	assert_int_equal(t->fs.free_blocks, free0);
	/* its end can go: no split */
	assert_int_equal(falloc(t, &ROOT, f, KEEP | PUNCH, 72 * BS, BS), 0);
	assert_int_equal(t->fs.free_blocks, free0 + 1);
	while (ntaken)
		arf_meta_page_unreserve(&t->fs, taken[--ntaken]);
	fsck(t);
	tfs_free(t);
}

static void test_random_against_reference(void **state)
{
	enum { MAX = 1 << 20 };
	struct tfs *t = tfs_new(16, 16, 16, 64, 1024, 0);
	struct fh f = mkfile(t, "/r");
	static uint8_t ref[MAX], buf[MAX];
	uint64_t size = 0;
	unsigned seed = 4242;

	(void)state;
	memset(ref, 0, sizeof(ref));
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 4))
	for (int step = 0; step < 600; step++) {
		uint32_t r = RND() % 100;
		uint64_t off = RND() % (MAX - 70000), len = 1 + RND() % 60000;
		if (r < 50) {
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)(RND() | 1);
			wr(t, f, off, buf, len);
			memcpy(ref + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (r < 80) {
			assert_int_equal(falloc(t, &ROOT, f, KEEP | PUNCH, off, len), 0);
			memset(ref + off, 0, len);
		} else {
			uint32_t mode = r < 90 ? 0 : KEEP;
			assert_int_equal(falloc(t, &ROOT, f, mode, off, len), 0);
			if (!mode && off + len > size)
				size = off + len;
		}
		assert_int_equal(inode(t, f)->size, size);
		if (step % 50)
			continue;
		assert_int_equal(rd(t, f, 0, buf, MAX), size);
		assert_memory_equal(buf, ref, size);
		/* every hole SEEK_HOLE finds reads as zeros up to SEEK_DATA's answer */
		for (int k = 0; k < 20 && size; k++) {
			uint64_t at = RND() % size;
			int64_t h = seek(t, f, at, ARF_OPS_SEEK_HOLE);
			assert_true(h >= (int64_t)at && h <= (int64_t)size);
			if (h < (int64_t)size) {
				int64_t d = seek(t, f, (uint64_t)h, ARF_OPS_SEEK_DATA);
				uint64_t stop = d < 0 ? size : (uint64_t)d;
				assert_true(stop > (uint64_t)h);
				for (uint64_t i = (uint64_t)h; i < stop; i++)
					assert_int_equal(ref[i], 0);
			}
		}
		fsck(t);
	}
	fsck(t);
	tfs_free(t);
}

static void test_append_and_checks(void **state)
{
	struct tfs *t = std_tree();
	struct fh f = path(t, "/pubfile"), d = path(t, "/d"), o = path(t, "/private");
	uint64_t at = 1;
	size_t w = 0;

	(void)state;
	for (int i = 0; i < 3; i++) {
		const struct arf_cred *cr = i % 2 ? &U2 : &U3;
		assert_int_equal(TXN(t, arf_ops_append(&t->fs, cr, f.ino, f.gen, "abcde", 5, &at, &w)),
				 0);
		assert_int_equal(at, (uint64_t)i * 5);
		assert_int_equal(w, 5);
	}
	assert_int_equal(inode(t, f)->size, 15);
	assert_int_equal(TXN(t, arf_ops_append(&t->fs, &U3, o.ino, o.gen, "x", 1, &at, &w)),
			 -EACCES);
	/* modes, types and rights */
	assert_int_equal(falloc(t, &U1, f, PUNCH, 0, 1), -EOPNOTSUPP);
	assert_int_equal(falloc(t, &U1, f, 0x10 /* ZERO_RANGE */, 0, 1), -EOPNOTSUPP);
	assert_int_equal(falloc(t, &U1, f, 0, 0, 0), -EINVAL);
	assert_int_equal(falloc(t, &U1, f, 0, ARF_OPS_MAX_FILE_SIZE, 1), -EFBIG);
	assert_int_equal(falloc(t, &U1, d, 0, 0, 1), -EISDIR);
	assert_int_equal(falloc(t, &U3, o, 0, 0, 1), -EACCES);
	assert_int_equal(seek(t, d, 0, ARF_OPS_SEEK_DATA), -EISDIR);
	assert_int_equal(seek(t, f, 0, 0 /* SEEK_SET */), -EINVAL);
	/* a non-root writer clears the set-id bits, as a write does */
	own(t, "/pubfile", 1000, 1000, 06777);
	assert_int_equal(falloc(t, &U3, f, 0, 0, 4 * BS), 0);
	assert_int_equal(inode(t, f)->mode & 07777, 0777);
	fsck(t);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preallocate),
		cmocka_unit_test(test_punch_hole),
		cmocka_unit_test(test_punch_that_cannot_split),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_append_and_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
