/* SPDX-License-Identifier: MIT */
/*
 * ops/ file data: a sparse file of more than 1 TiB (two extents), random
 * writes and reads checked against a reference buffer (with truncates up
 * and down, and two files interleaved so their maps spill into extent
 * pages), sequential writes keeping one extent, truncate zeroing the tail,
 * symlink targets, and the side effects of a write (times, set-id bits).
 */
#include "ops_test.h"

static struct fh mkfile(struct tfs *t, const char *p, uint32_t mode)
{
	assert_int_equal(do_create(t, &ROOT, p, mode), 0);
	return path(t, p);
}

static size_t rd(struct tfs *t, struct fh f, uint64_t off, void *buf, size_t len)
{
	size_t got = 0;

	assert_int_equal(arf_ops_read(&t->fs, &ROOT, f.ino, f.gen, off, buf, len, &got), 0);
	return got;
}

static void wr(struct tfs *t, struct fh f, uint64_t off, const void *buf, size_t len)
{
	size_t w = 0;

	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, f.ino, f.gen, off, buf, len, &w)), 0);
	assert_int_equal(w, len);
}

static void trunc_to(struct tfs *t, struct fh f, uint64_t size)
{
	struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_SIZE, .size = size };
	struct arf_ops_attr a;

	assert_int_equal(TXN(t, arf_ops_setattr(&t->fs, &ROOT, f.ino, f.gen, &sa, &a)), 0);
	assert_int_equal(a.size, size);
}

static void test_sparse_1tib(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 64, 0);
	struct fh f = mkfile(t, "/sparse", 0644);
	const uint64_t far = (1ull << 40) + 12345; /* past 1 TiB, unaligned */
	char buf[8192], z[8192];

	(void)state;
	memset(z, 0, sizeof(z));
	wr(t, f, 0, "head", 4);
	wr(t, f, far, "tail", 4);
	struct arf_ops_attr a = attr_of(t, "/sparse");
	assert_int_equal(a.size, far + 4);
	assert_int_equal(a.blocks, 2 * 8);
	const struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, f.ino);
	assert_int_equal(in->nextents, 2);
	assert_int_equal(in->u.ext[1].fblk, far / 4096);
	assert_int_equal(rd(t, f, 0, buf, 4), 4);
	assert_memory_equal(buf, "head", 4);
	assert_int_equal(rd(t, f, far, buf, 100), 4);
	assert_memory_equal(buf, "tail", 4);
	/* holes read as zeros, right up to the tail */
	assert_int_equal(rd(t, f, 1ull << 39, buf, sizeof(buf)), sizeof(buf));
	assert_memory_equal(buf, z, sizeof(buf));
	assert_int_equal(rd(t, f, far - 100, buf, 104), 104);
	assert_memory_equal(buf, z, 100);
	assert_memory_equal(buf + 100, "tail", 4);
	assert_int_equal(rd(t, f, far + 4, buf, 10), 0); /* EOF */
	fsck(t);
	/* truncating back below 1 TiB frees the far block */
	trunc_to(t, f, 1ull << 30);
	assert_int_equal(arf_meta_inode_ptr(&t->fs, f.ino)->nextents, 1);
	assert_int_equal(t->fs.free_blocks, 63);
	fsck(t);
	tfs_free(t);
}

static void test_sequential_one_extent(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 1024, 0);
	struct fh f = mkfile(t, "/seq", 0644), g = mkfile(t, "/odd", 0644);
	static uint8_t chunk[4096], back[1 << 20];

	(void)state;
	for (int i = 0; i < 256; i++) {
		memset(chunk, i, sizeof(chunk));
		wr(t, f, (uint64_t)i * 4096, chunk, 4096);
	}
	assert_int_equal(arf_meta_inode_ptr(&t->fs, f.ino)->nextents, 1);
	assert_int_equal(rd(t, f, 0, back, sizeof(back)), 1 << 20);
	for (int i = 0; i < 256; i++)
		assert_int_equal(back[i * 4096 + 17], (uint8_t)i);
	/* unaligned appends: still one extent */
	for (int i = 0; i < 300; i++) {
		memset(chunk, i, 1000);
		wr(t, g, (uint64_t)i * 1000, chunk, 1000);
	}
	assert_int_equal(arf_meta_inode_ptr(&t->fs, g.ino)->nextents, 1);
	assert_int_equal(rd(t, g, 0, back, 300000), 300000);
	for (int i = 0; i < 300; i++)
		assert_int_equal(back[i * 1000 + 999], (uint8_t)i);
	fsck(t);
	tfs_free(t);
}

/* Random writes, reads and truncates on two interleaved files. */
static void test_random_vs_reference(void **state)
{
	enum { MAX = 3 << 20 };
	struct tfs *t = tfs_new(16, 16, 16, 64, 4096, 0);
	struct fh f[2] = { mkfile(t, "/r0", 0644), mkfile(t, "/r1", 0644) };
	static uint8_t ref[2][MAX], buf[MAX];
	uint64_t size[2] = { 0, 0 };
	unsigned seed = 777;
	int spilled = 0;

	(void)state;
	memset(ref, 0, sizeof(ref));
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 4))
	for (int step = 0; step < 1500; step++) {
		int k = (int)(RND() % 2);
		uint32_t r = RND() % 100;
		if (r < 80) {
			uint64_t off = RND() % (MAX - 70000);
			size_t len = RND() % (r < 40 ? 600 : 70000);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)RND();
			wr(t, f[k], off, buf, len);
			memcpy(ref[k] + off, buf, len);
			if (len && off + len > size[k])
				size[k] = off + len;
		} else if (r < 90) {
			uint64_t ns = RND() % MAX;
			trunc_to(t, f[k], ns);
			if (ns < size[k])
				memset(ref[k] + ns, 0, size[k] - ns);
			size[k] = ns;
		} else {
			uint64_t off = RND() % MAX;
			size_t len = RND() % 50000;
			size_t want = off >= size[k] ? 0 : (len < size[k] - off ? len : size[k] - off);
			assert_int_equal(rd(t, f[k], off, buf, len), want);
			assert_memory_equal(buf, ref[k] + off, want);
		}
		if (arf_meta_inode_ptr(&t->fs, f[k].ino)->flags & ARF_META_INO_EXTPAGES)
			spilled = 1;
		if (step % 250 == 0)
			fsck(t);
	}
	for (int k = 0; k < 2; k++) {
		assert_int_equal(attr_of(t, k ? "/r1" : "/r0").size, size[k]);
		assert_int_equal(rd(t, f[k], 0, buf, MAX), size[k]);
		assert_memory_equal(buf, ref[k], size[k]);
	}
	assert_true(spilled); /* the maps did go through extent pages */
	fsck(t);
	/* deleting both gives every block and page back */
	assert_int_equal(do_unlink(t, &ROOT, "/r0"), 0);
	assert_int_equal(do_unlink(t, &ROOT, "/r1"), 0);
	assert_int_equal(t->fs.free_blocks, 4096);
	assert_int_equal(t->fs.free_pages, 63); /* the root's listing page remains */
	fsck(t);
	tfs_free(t);
}

static void test_truncate(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 64, 0);
	struct fh f = mkfile(t, "/t", 0644);
	uint8_t buf[3 * 4096], ones[3 * 4096];

	(void)state;
	memset(ones, 1, sizeof(ones));
	wr(t, f, 0, ones, sizeof(ones));
	assert_int_equal(t->fs.free_blocks, 61);
	trunc_to(t, f, 5000); /* into the second block */
	assert_int_equal(t->fs.free_blocks, 62);
	trunc_to(t, f, 20000); /* extend: a hole, no new blocks */
	assert_int_equal(t->fs.free_blocks, 62);
	assert_int_equal(rd(t, f, 0, buf, sizeof(buf)), sizeof(buf));
	assert_memory_equal(buf, ones, 5000);
	for (size_t i = 5000; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0); /* the old bytes past 5000 are gone */
	/* a write past EOF inside the last block keeps the zeros before it */
	trunc_to(t, f, 5000);
	wr(t, f, 6000, "x", 1);
	assert_int_equal(rd(t, f, 4096, buf, 4096), 1905);
	for (int i = 5000 - 4096; i < 6000 - 4096; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(buf[6000 - 4096], 'x');
	fsck(t);
	trunc_to(t, f, 0);
	assert_int_equal(t->fs.free_blocks, 64);
	assert_int_equal(attr_of(t, "/t").blocks, 0);
	/* mtime changes with the size */
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, f.ino);
	int64_t m0 = in->mtime_ns;
	trunc_to(t, f, 10);
	assert_true(in->mtime_ns >= m0);
	fsck(t);
	tfs_free(t);
}

static void test_symlink_and_side_effects(void **state)
{
	struct tfs *t = tfs_new(16, 16, 16, 8, 64, 0);
	struct fh r = path(t, "/");
	struct arf_ops_attr a;
	char buf[64];
	size_t n;

	(void)state;
	own(t, "/", 0, 0, 0777);
	assert_int_equal(TXN(t, arf_ops_symlink(&t->fs, &U1, r.ino, r.gen, "l", 1, "../target/x", 11, &a)), 0);
	assert_int_equal(a.size, 11);
	assert_int_equal(a.mode, S_IFLNK | 0777);
	assert_int_equal(a.uid, 1000);
	assert_int_equal(arf_ops_readlink(&t->fs, a.ino, a.gen, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, 11);
	assert_memory_equal(buf, "../target/x", 11);
	assert_int_equal(arf_ops_readlink(&t->fs, a.ino, a.gen, buf, 4, &n), 0);
	assert_int_equal(n, 4);
	/* no chmod of a link but root's: a link of mode 0644 is a mount point
	 * (libarf crosses it into another volume), so only root makes one */
	struct arf_ops_setattr lm = { .valid = ARF_OPS_SET_MODE, .mode = 0644 };
	assert_int_equal(TXN(t, arf_ops_setattr(&t->fs, &U1, a.ino, a.gen, &lm, &a)), -EOPNOTSUPP);
	assert_int_equal(attr_of(t, "/l").mode, S_IFLNK | 0777);
	assert_int_equal(TXN(t, arf_ops_setattr(&t->fs, &ROOT, a.ino, a.gen, &lm, &a)), 0);
	assert_int_equal(attr_of(t, "/l").mode, S_IFLNK | 0644);
	fsck(t);

	/* a write by a non-root caller clears set-id bits; root's does not */
	assert_int_equal(do_create(t, &U1, "/s", 06755), 0);
	assert_int_equal(attr_of(t, "/s").mode & 07777, 06755);
	struct fh s = path(t, "/s");
	size_t w;
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &ROOT, s.ino, s.gen, 0, "a", 1, &w)), 0);
	assert_int_equal(attr_of(t, "/s").mode & 07777, 06755);
	int64_t m0 = attr_of(t, "/s").mtime_ns;
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &U1, s.ino, s.gen, 0, "b", 1, &w)), 0);
	assert_int_equal(attr_of(t, "/s").mode & 07777, 0755);
	assert_true(attr_of(t, "/s").mtime_ns >= m0);
	/* chown clears them too (non-directories) */
	own(t, "/s", 1000, 1000, 06755);
	struct arf_ops_setattr sa = { .valid = ARF_OPS_SET_GID, .gid = 1000 };
	assert_int_equal(do_setattr(t, &U1, "/s", &sa), 0);
	assert_int_equal(attr_of(t, "/s").mode & 07777, 0755);
	/* zero-length write changes nothing */
	struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, s.ino);
	uint64_t v = in->h.ver;
	assert_int_equal(TXN(t, arf_ops_write(&t->fs, &U1, s.ino, s.gen, 100, "", 0, &w)), 0);
	assert_int_equal(w, 0);
	assert_int_equal(in->h.ver, v);
	fsck(t);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_1tib),
		cmocka_unit_test(test_sequential_one_extent),
		cmocka_unit_test(test_random_vs_reference),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_symlink_and_side_effects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
