/* SPDX-License-Identifier: MIT */
/*
 * meta/ extent maps: inline maps, overflow into extent pages and back,
 * what a client reading the pages sees, the capacity limit (-ENOSPC), and
 * that storing an unchanged map touches no page.
 */
#include <errno.h>

#include "meta_test.h"

static uint64_t new_file(struct tfs *t)
{
	uint64_t ino;

	arf_meta_txn_begin(&t->fs);
	assert_int_equal(arf_meta_inode_alloc(&t->fs, &ino), 0);
	struct arf_meta_inode *in = arf_meta_inode_touch(&t->fs, ino);
	in->ino = ino;
	in->gen = 1;
	in->mode = S_IFREG | 0600;
	in->nlink = 1;
	arf_meta_txn_end(&t->fs, NULL);
	return ino;
}

/* A map of n one-block extents at every other file block (never mergeable). */
static struct arf_meta_extent *map_of(uint32_t n)
{
	struct arf_meta_extent *e = calloc(n ? n : 1, sizeof(*e));

	assert_non_null(e);
	for (uint32_t i = 0; i < n; i++)
		e[i] = (struct arf_meta_extent){ .fblk = 2ull * i + (1ull << 30), .pblk = i, .len = 1 };
	return e;
}

/* Client-style: gather extents from the inode copy and its pages. */
static uint32_t client_extents(struct tfs *t, uint64_t ino, struct arf_meta_extent *out)
{
	struct arf_meta_inode in;
	uint32_t n = 0;

	assert_int_equal(os_copy(t, arf_meta_inode_off(t->fs.sb, ino), &in, sizeof(in)), 0);
	if (!(in.flags & ARF_META_INO_EXTPAGES)) {
		for (int i = 0; i < ARF_META_INLINE_EXTENTS; i++)
			if (in.u.ext[i].len)
				out[n++] = in.u.ext[i];
		return n;
	}
	for (int i = 0; i < ARF_META_EXT_PAGES; i++) {
		struct arf_meta_page pg;
		if (in.u.xp.page[i] == ARF_META_NONE)
			continue;
		assert_int_equal(os_copy(t, arf_meta_page_off(t->fs.sb, in.u.xp.page[i]), &pg, sizeof(pg)), 0);
		assert_int_equal(pg.kind, ARF_META_PAGE_EXT);
		assert_int_equal(pg.owner, ino);
		assert_int_equal(pg.u.ext[0].fblk, in.u.xp.first_fblk[i]);
		for (uint32_t k = 0; k < pg.count; k++)
			out[n++] = pg.u.ext[k];
	}
	return n;
}

static void store(struct tfs *t, uint64_t ino, const struct arf_meta_extent *e, uint32_t n, int want)
{
	arf_meta_txn_begin(&t->fs);
	struct arf_meta_inode *in = arf_meta_inode_touch(&t->fs, ino);
	assert_int_equal(arf_meta_ext_store(&t->fs, in, e, n), want);
	arf_meta_txn_end(&t->fs, NULL);
	tfs_check_sealed(t);
}

static void test_inline_pages_inline(void **state)
{
	struct tfs *t = tfs_new(16, 4, 16, 10, 16, 0);
	uint64_t ino = new_file(t);
	static struct arf_meta_extent got[ARF_META_MAX_EXTENTS];
	uint32_t sizes[] = { 0, 1, 8, 9, 253, 254, 700, ARF_META_MAX_EXTENTS, 100, 8, 3, 0 };

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s];
		struct arf_meta_extent *e = map_of(n), *back;
		uint32_t nb;
		store(t, ino, e, n, 0);
		const struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, ino);
		assert_int_equal(in->nextents, n);
		assert_int_equal(!!(in->flags & ARF_META_INO_EXTPAGES), n > ARF_META_INLINE_EXTENTS);
		assert_int_equal(t->fs.free_pages, 10 - arf_meta_ext_pages_needed(n));
		assert_int_equal(arf_meta_ext_load(&t->fs, in, &back, &nb), 0);
		assert_int_equal(nb, n);
		if (n)
			assert_memory_equal(back, e, n * sizeof(*e));
		assert_int_equal(client_extents(t, ino, got), n);
		if (n)
			assert_memory_equal(got, e, n * sizeof(*e));
		/* lookup by file block */
		if (n) {
			assert_int_equal(arf_meta_ext_find(back, nb, 0), 0);
			assert_int_equal(arf_meta_ext_find(back, nb, e[n - 1].fblk), n - 1);
			assert_int_equal(arf_meta_ext_find(back, nb, e[n - 1].fblk + 1), n);
		}
		free(back);
		free(e);
	}
	tfs_free(t);
}

static void test_capacity(void **state)
{
	struct tfs *t = tfs_new(16, 4, 16, 3, 16, 0); /* 3 pages: at most 759 extents */
	uint64_t ino = new_file(t);
	struct arf_meta_extent *e = map_of(ARF_META_MAX_EXTENTS + 1);
	const struct arf_meta_inode *in = arf_meta_inode_ptr(&t->fs, ino);

	(void)state;
	assert_int_equal(arf_meta_ext_fits(&t->fs, in, ARF_META_MAX_EXTENTS + 1), -ENOSPC);
	assert_int_equal(arf_meta_ext_fits(&t->fs, in, 760), -ENOSPC);
	assert_int_equal(arf_meta_ext_fits(&t->fs, in, 759), 0);
	store(t, ino, e, 760, -ENOSPC);
	assert_int_equal(t->fs.free_pages, 3);
	store(t, ino, e, 759, 0);
	assert_int_equal(t->fs.free_pages, 0);
	/* holding 3 pages, 759 still fits with none free; 760 does not */
	assert_int_equal(arf_meta_ext_fits(&t->fs, in, 759), 0);
	assert_int_equal(arf_meta_ext_fits(&t->fs, in, 760), -ENOSPC);

	/* an unchanged map touches only the inode */
	arf_meta_txn_begin(&t->fs);
	struct arf_meta_inode *w = arf_meta_inode_touch(&t->fs, ino);
	assert_int_equal(arf_meta_ext_store(&t->fs, w, e, 759), 0);
	assert_int_equal(arf_meta_txn_end(&t->fs, NULL), 1);
	/* changing the last extent touches the last page only */
	e[758].len = 2;
	arf_meta_txn_begin(&t->fs);
	w = arf_meta_inode_touch(&t->fs, ino);
	assert_int_equal(arf_meta_ext_store(&t->fs, w, e, 759), 0);
	assert_int_equal(arf_meta_txn_end(&t->fs, NULL), 2);

	/* back to an empty map: the pages are freed */
	store(t, ino, NULL, 0, 0);
	assert_int_equal(t->fs.free_pages, 3);
	assert_int_equal(in->flags & ARF_META_INO_EXTPAGES, 0);
	free(e);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_pages_inline),
		cmocka_unit_test(test_capacity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
