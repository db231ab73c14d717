/* SPDX-License-Identifier: MIT */
/*
 * meta/ self-verifying objects: every kind (superblock, inode, entry, page,
 * tag) published with begin/seal validates; a copy torn mid-write (odd
 * version), a corrupted byte, or a stale checksum is caught; block tags
 * reject another owner and torn block bytes; the superblock geometry is
 * checked.
 */
#include <errno.h>

#include "meta_test.h"

struct kind {
	const char *name; /* for messages */
	size_t len;       /* object size */
};

static const struct kind kinds[] = {
	{ "super", sizeof(struct arf_meta_super) },
	{ "inode", sizeof(struct arf_meta_inode) },
	{ "dirent", sizeof(struct arf_meta_dirent) },
	{ "page", sizeof(struct arf_meta_page) },
	{ "tag", sizeof(struct arf_meta_tag) },
};

static void test_publish_validate(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t len = kinds[k].len;
		uint8_t *obj = calloc(1, len), *copy = malloc(len);
		struct arf_meta_hdr *h = (struct arf_meta_hdr *)obj;
		assert_non_null(obj);
		assert_non_null(copy);

		/* never written: all zero is a valid empty slot */
		assert_int_equal(arf_meta_obj_validate(obj, len), 0);

		/* publish */
		arf_meta_obj_begin(obj, len);
		assert_int_equal(h->ver, 1);
		arf_meta_obj_begin(obj, len); /* idempotent */
		assert_int_equal(h->ver, 1);
		assert_int_equal(arf_meta_obj_validate(obj, len), ARF_ETORN);
		for (size_t i = 16; i < len; i++)
			obj[i] = (uint8_t)(i * 7 + k);
		arf_meta_obj_seal(obj, len);
		assert_int_equal(h->ver, 2);
		memcpy(copy, obj, len);
		assert_int_equal(arf_meta_obj_validate(copy, len), 0);

		/* a second change: version 4, still valid */
		arf_meta_obj_begin(obj, len);
		obj[len - 1] ^= 0x55;
		arf_meta_obj_seal(obj, len);
		assert_int_equal(h->ver, 4);
		assert_int_equal(arf_meta_obj_validate(obj, len), 0);

		/* every corrupted byte is caught */
		for (size_t i = 16; i < len; i += (len > 512 ? 97 : 1)) {
			memcpy(copy, obj, len);
			copy[i] ^= 1;
			assert_int_equal(arf_meta_obj_validate(copy, len), ARF_ECSUM);
		}
		/* a torn read: the body of version 4 with the header of version 2 */
		memcpy(copy, obj, len);
		((struct arf_meta_hdr *)copy)->ver = 2;
		assert_int_equal(arf_meta_obj_validate(copy, len), ARF_ECSUM);
		/* a copy taken mid-write */
		memcpy(copy, obj, len);
		((struct arf_meta_hdr *)copy)->ver = 5;
		assert_int_equal(arf_meta_obj_validate(copy, len), ARF_ETORN);
		/* a bad checksum on the header */
		memcpy(copy, obj, len);
		((struct arf_meta_hdr *)copy)->csum ^= 1;
		assert_int_equal(arf_meta_obj_validate(copy, len), ARF_ECSUM);
		/* zero body with a nonzero checksum is not "never written" */
		memset(copy, 0, len);
		((struct arf_meta_hdr *)copy)->csum = 1;
		assert_int_equal(arf_meta_obj_validate(copy, len), ARF_ECSUM);
		/* re-sealing a stable object publishes a new version */
		arf_meta_obj_seal(obj, len);
		assert_int_equal(h->ver, 6);
		assert_int_equal(arf_meta_obj_validate(obj, len), 0);
		free(obj);
		free(copy);
	}
}

static void test_block_tag(void **state)
{
	uint8_t *blk = malloc(ARF_BLOCK_SIZE);
	struct arf_meta_tag tag;

	(void)state;
	assert_non_null(blk);
	for (uint32_t i = 0; i < ARF_BLOCK_SIZE; i++)
		blk[i] = (uint8_t)(i ^ (i >> 8));
	memset(&tag, 0, sizeof(tag));
	arf_meta_obj_begin(&tag, sizeof(tag));
	tag.ino = 42;
	tag.gen = 7;
	tag.fblk = 1234567;
	tag.data_csum = arf_meta_block_csum(blk);
	arf_meta_obj_seal(&tag, sizeof(tag));
	assert_int_equal(arf_meta_obj_validate(&tag, sizeof(tag)), 0);
	assert_int_equal(arf_meta_tag_check(&tag, 42, 7, 1234567, blk), 0);
	assert_int_equal(arf_meta_tag_check(&tag, 43, 7, 1234567, blk), ARF_ETAG);
	assert_int_equal(arf_meta_tag_check(&tag, 42, 8, 1234567, blk), ARF_ETAG);
	assert_int_equal(arf_meta_tag_check(&tag, 42, 7, 1234566, blk), ARF_ETAG);
	blk[4095] ^= 0x80;
	assert_int_equal(arf_meta_tag_check(&tag, 42, 7, 1234567, blk), ARF_ECSUM);
	/* a freed block's tag (owner 0) never matches a file */
	memset(&tag, 0, sizeof(tag));
	assert_int_equal(arf_meta_tag_check(&tag, 42, 7, 0, blk), ARF_ETAG);
	free(blk);
}

static void test_hash(void **state)
{
	struct arf_meta_super sb;

	(void)state;
	/* the same name under another parent hashes differently */
	assert_int_not_equal(arf_meta_name_hash(1, "a", 1), arf_meta_name_hash(2, "a", 1));
	assert_int_equal(arf_meta_name_hash(5, "hello", 5), arf_meta_name_hash(5, "hello", 5));
	arf_meta_super_layout(&sb, 16, 1000, 16, 16, 16, 0);
	for (int i = 0; i < 1000; i++)
		assert_true(arf_meta_bucket(&sb, (uint32_t)i * 2654435761u) < 1000);
	sb.hash_mask = 3;
	for (int i = 0; i < 1000; i++)
		assert_true(arf_meta_bucket(&sb, (uint32_t)i * 2654435761u) < 4);
	assert_int_equal(arf_meta_dtype(S_IFDIR | 0755), 4 /* DT_DIR */);
	assert_int_equal(arf_meta_dtype(S_IFREG), 8 /* DT_REG */);
	assert_int_equal(arf_meta_dtype(S_IFLNK), 10 /* DT_LNK */);
}

static void test_super(void **state)
{
	struct arf_meta_super sb, bad;
	char err[128];

	(void)state;
	arf_meta_super_layout(&sb, 1000, 64, 500, 100, 3000, 0);
	assert_int_equal(arf_meta_super_check(&sb, err, sizeof(err)), 0);
	assert_int_equal(sb.n_entries, 564);
	assert_int_equal(sb.off_inodes % 4096, 0);
	assert_int_equal(sb.off_entries % 4096, 0);
	assert_int_equal(sb.off_pages % 4096, 0);
	assert_int_equal(sb.off_tags % 4096, 0);
	assert_int_equal(sb.meta_size % 4096, 0);
	assert_true(sb.off_entries >= sb.off_inodes + 1000 * sizeof(struct arf_meta_inode));
	assert_true(sb.off_pages >= sb.off_entries + 564 * sizeof(struct arf_meta_dirent));
	assert_true(sb.off_tags >= sb.off_pages + 100 * sizeof(struct arf_meta_page));
	assert_true(sb.meta_size >= sb.off_tags + 3000 * sizeof(struct arf_meta_tag));
	assert_int_equal(sb.data_size, 3000ull * 4096);
	assert_int_equal(arf_meta_inode_off(&sb, 1), sb.off_inodes);
	assert_int_equal(arf_meta_inode_off(&sb, 3), sb.off_inodes + 512);

	bad = sb;
	bad.magic ^= 1;
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "magic"));
	bad = sb;
	bad.format = 99;
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), ARF_EVERSION);
	bad = sb;
	bad.off_tags += 4096;
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
	bad = sb;
	bad.meta_size -= 4096;
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
	bad = sb;
	bad.n_entries = 10; /* fewer than the buckets */
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
	bad = sb;
	bad.block_size = 8192;
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
	bad = sb;
	bad.n_inodes = 0;
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
	/* an overflowing entry count is refused, not wrapped */
	arf_meta_super_layout(&bad, 16, 0xF0000000u, 0x20000000u, 16, 16, 0);
	assert_int_equal(arf_meta_super_check(&bad, err, sizeof(err)), -EINVAL);
}

/* Format writes a sealed superblock, a root directory and empty bucket heads;
 * attach rebuilds the same allocators from a copy of the regions. */
static void test_format_attach(void **state)
{
	struct tfs *t = tfs_new(64, 16, 64, 32, 128, 0);
	struct arf_meta_fs fs2;
	struct arf_meta_super sb;
	struct arf_meta_inode root;
	char err[128];

	(void)state;
	assert_int_equal(os_copy(t, 0, &sb, sizeof(sb)), 0);
	assert_int_equal(sb.magic, ARF_META_MAGIC);
	assert_int_equal(sb.n_inodes, 64);
	assert_true(sb.created_ns > 0);
	assert_int_equal(os_copy(t, arf_meta_inode_off(&sb, ARF_ROOT_INO), &root, sizeof(root)), 0);
	assert_int_equal(root.ino, ARF_ROOT_INO);
	assert_int_equal(root.mode, S_IFDIR | 0755);
	assert_int_equal(root.nlink, 2);
	assert_int_equal(root.parent, ARF_ROOT_INO);
	assert_int_equal(root.dir_first, ARF_META_NONE);
	assert_true(root.gen >= 1);
	for (uint32_t b = 0; b < sb.n_buckets; b++)
		assert_int_equal(arf_meta_entry_ptr(&t->fs, b)->next, ARF_META_NONE);
	/* the format transaction lists what to persist: super, root, heads */
	assert_int_equal(t->fs.ndirty, 2 + 16);
	assert_int_equal(t->fs.free_inodes, 63);
	assert_int_equal(t->fs.free_blocks, 128);
	assert_int_equal(t->fs.free_pages, 32);
	assert_int_equal(t->fs.free_entries, 64);
	fsck(t);

	uint8_t *copy = malloc(sb.meta_size);
	assert_non_null(copy);
	memcpy(copy, t->meta, sb.meta_size);
	assert_int_equal(arf_meta_fs_attach(&fs2, copy, sb.meta_size, t->data, sb.data_size, err,
					    sizeof(err)), 0);
	assert_int_equal(fs2.free_inodes, 63);
	assert_int_equal(fs2.free_blocks, 128);
	arf_meta_fs_detach(&fs2);
	arf_meta_fs_detach(NULL);
	/* attach refuses a region that is too small or not a filesystem */
	assert_int_equal(arf_meta_fs_attach(&fs2, copy, sb.meta_size - 4096, t->data, sb.data_size,
					    err, sizeof(err)), -EINVAL);
	((struct arf_meta_super *)copy)->magic = 0;
	assert_int_equal(arf_meta_fs_attach(&fs2, copy, sb.meta_size, t->data, sb.data_size, err,
					    sizeof(err)), -EINVAL);
	free(copy);
	/* format refuses regions smaller than the geometry */
	struct arf_meta_fs fs3;
	assert_int_equal(arf_meta_fs_format(&fs3, t->meta, t->geo.meta_size - 1, t->data,
					    t->geo.data_size, &t->geo, 0, 0), -EINVAL);
	tfs_free(t);
}

/* Touching an object twice records it once; defer_seal leaves it odd. */
static void test_txn(void **state)
{
	struct tfs *t = tfs_new(64, 16, 64, 32, 128, 0);
	const struct arf_meta_dirty *list;
	struct arf_meta_inode *in;

	(void)state;
	arf_meta_txn_begin(&t->fs);
	in = arf_meta_inode_touch(&t->fs, ARF_ROOT_INO);
	assert_true(in->h.ver & 1);
	in->atime_ns = 5;
	arf_meta_inode_touch(&t->fs, ARF_ROOT_INO);
	arf_meta_block_touch(&t->fs, 3)[0] = 1;
	arf_meta_block_touch(&t->fs, 3);
	arf_meta_tag_touch(&t->fs, 3);
	assert_int_equal(arf_meta_txn_end(&t->fs, &list), 3);
	assert_int_equal(list[0].region, ARF_REGION_META);
	assert_int_equal(list[0].off, arf_meta_inode_off(t->fs.sb, ARF_ROOT_INO));
	assert_int_equal(list[1].region, ARF_REGION_DATA);
	assert_int_equal(list[1].off, 3 * 4096);
	assert_int_equal(list[1].len, 4096);
	tfs_check_sealed(t);

	/* many objects: the dedupe set grows and is cleared for the next txn */
	arf_meta_txn_begin(&t->fs);
	for (int round = 0; round < 3; round++)
		for (uint32_t b = 0; b < 128; b++)
			arf_meta_tag_touch(&t->fs, b);
	assert_int_equal(arf_meta_txn_end(&t->fs, NULL), 128);
	arf_meta_txn_begin(&t->fs);
	arf_meta_tag_touch(&t->fs, 5);
	arf_meta_tag_touch(&t->fs, 5);
	assert_int_equal(arf_meta_txn_end(&t->fs, NULL), 1);

	/* deferred sealing: stays odd until the caller seals */
	t->fs.defer_seal = 1;
	arf_meta_txn_begin(&t->fs);
	arf_meta_inode_touch(&t->fs, ARF_ROOT_INO)->atime_ns = 6;
	assert_int_equal(arf_meta_txn_end(&t->fs, &list), 1);
	in = arf_meta_inode_ptr(&t->fs, ARF_ROOT_INO);
	assert_int_equal(arf_meta_obj_validate(in, sizeof(*in)), ARF_ETORN);
	/* a later transaction touching it again keeps it odd */
	arf_meta_txn_begin(&t->fs);
	arf_meta_inode_touch(&t->fs, ARF_ROOT_INO)->atime_ns = 7;
	arf_meta_txn_end(&t->fs, &list);
	assert_true(in->h.ver & 1);
	arf_meta_obj_seal(in, sizeof(*in));
	assert_int_equal(arf_meta_obj_validate(in, sizeof(*in)), 0);
	assert_int_equal(in->atime_ns, 7);
	t->fs.defer_seal = 0;
	tfs_free(t);
}

static void test_allocators(void **state)
{
	struct tfs *t = tfs_new(8, 4, 8, 4, 100, 0);
	struct arf_meta_fs *fs = &t->fs;
	uint64_t ino;
	uint32_t idx, p, got;

	(void)state;
	/* inodes: 7 free after the root, then ENOSPC; unreserve gives back */
	for (int i = 0; i < 7; i++)
		assert_int_equal(arf_meta_inode_alloc(fs, &ino), 0);
	assert_int_equal(arf_meta_inode_alloc(fs, &ino), -ENOSPC);
	arf_meta_inode_unreserve(fs, 5);
	assert_int_equal(arf_meta_inode_alloc(fs, &ino), 0);
	assert_int_equal(ino, 5);
	/* overflow entries are numbered after the buckets */
	assert_int_equal(arf_meta_entry_alloc(fs, &idx), 0);
	assert_true(idx >= 4 && idx < 12);
	arf_meta_entry_unreserve(fs, idx);
	assert_int_equal(fs->free_entries, 8);
	for (int i = 0; i < 4; i++)
		assert_int_equal(arf_meta_page_alloc(fs, &p), 0);
	assert_int_equal(arf_meta_page_alloc(fs, &p), -ENOSPC);
	/* blocks: contiguous runs, goal honoured, partial runs when fragmented */
	assert_int_equal(arf_meta_blocks_alloc(fs, UINT32_MAX, 10, &p, &got), 0);
	assert_int_equal(got, 10);
	uint32_t first = p;
	assert_int_equal(arf_meta_blocks_alloc(fs, first + 10, 5, &p, &got), 0);
	assert_int_equal(p, first + 10);
	assert_int_equal(got, 5);
	arf_meta_blocks_unreserve(fs, first + 2, 3);
	assert_int_equal(arf_meta_blocks_alloc(fs, first + 2, 10, &p, &got), 0);
	assert_int_equal(p, first + 2);
	assert_int_equal(got, 3);
	assert_int_equal(fs->free_blocks, 85);
	assert_int_equal(arf_meta_blocks_alloc(fs, 0, 200, &p, &got), 0);
	assert_int_equal(got, 85);
	assert_int_equal(arf_meta_blocks_alloc(fs, 0, 1, &p, &got), -ENOSPC);
	tfs_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_publish_validate),
		cmocka_unit_test(test_block_tag),
		cmocka_unit_test(test_hash),
		cmocka_unit_test(test_super),
		cmocka_unit_test(test_format_attach),
		cmocka_unit_test(test_txn),
		cmocka_unit_test(test_allocators),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
