/* SPDX-License-Identifier: MIT */
/*
 * meta/ filesystem state: formatting empty regions, attaching to regions
 * rebuilt from RocksDB (the allocators are recomputed by scanning what is in
 * use), and the typed accessors to live objects.
 *
 * What "in use" means, per table: an inode slot with ino != 0, an overflow
 * entry with parent != 0, a page whose kind is not FREE, a block whose tag
 * names an owner (ino != 0).  Bucket heads are never allocated: they exist
 * from format on, with next = ARF_META_NONE while their chain is empty.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "meta_int.h"

static const uint8_t zero_uuid[16];

static void reset(struct arf_meta_fs *fs, void *meta, uint64_t meta_size, void *data,
		  uint64_t data_size)
{
	memset(fs, 0, sizeof(*fs));
	fs->meta = meta;
	fs->meta_size = meta_size;
	fs->data = data;
	fs->data_size = data_size;
	fs->sb = meta;
}

int arf_meta_fs_format(struct arf_meta_fs *fs, void *meta, uint64_t meta_size,
		       void *data, uint64_t data_size, const struct arf_meta_super *geo,
		       uint32_t uid, uint32_t gid)
{
	char why[128];
	struct arf_meta_super *sb;
	struct arf_meta_inode *root;
	uint64_t ino;
	int64_t now = meta_now_ns();
	int rc;

	if (arf_meta_super_check(geo, why, sizeof(why)) || meta_size < geo->meta_size ||
	    data_size < geo->data_size || !meta || (geo->data_size && !data))
		return -EINVAL;
	reset(fs, meta, meta_size, data, data_size);
	/* the bitmaps follow geo: the superblock is not written yet */
	rc = meta_maps_alloc(fs, geo);
	if (rc)
		goto fail;
	/* superblock + root inode + every bucket head */
	rc = arf_meta_txn_reserve(fs, 2 + (size_t)geo->n_buckets);
	if (rc)
		goto fail;

	arf_meta_txn_begin(fs);
	sb = arf_meta_touch(fs, ARF_REGION_META, 0, sizeof(*sb));
	memcpy((uint8_t *)sb + sizeof(sb->h), (const uint8_t *)geo + sizeof(geo->h),
	       sizeof(*sb) - sizeof(sb->h));
	if (!memcmp(sb->uuid, zero_uuid, sizeof(zero_uuid)) &&
	    getrandom(sb->uuid, sizeof(sb->uuid), 0) != (ssize_t)sizeof(sb->uuid)) {
		uint64_t a = (uint64_t)now, b = (uint64_t)(uintptr_t)fs ^ 0x5851F42D4C957F2Dull;
		memcpy(sb->uuid, &a, 8);
		memcpy(sb->uuid + 8, &b, 8);
	}
	if (!sb->created_ns)
		sb->created_ns = now;

	for (uint32_t b = 0; b < sb->n_buckets; b++) {
		struct arf_meta_dirent *e = arf_meta_entry_touch(fs, b);
		memset((uint8_t *)e + sizeof(e->h), 0, sizeof(*e) - sizeof(e->h));
		e->next = ARF_META_NONE;
	}

	rc = arf_meta_inode_alloc(fs, &ino);
	if (rc || ino != ARF_ROOT_INO) { /* a fresh map hands out slot 0 first */
		arf_meta_txn_end(fs, NULL);
		rc = rc ? rc : -EINVAL;
		goto fail;
	}
	root = arf_meta_inode_touch(fs, ARF_ROOT_INO);
	uint32_t gen = root->gen + 1;
	memset((uint8_t *)root + sizeof(root->h), 0, sizeof(*root) - sizeof(root->h));
	root->ino = ARF_ROOT_INO;
	root->gen = gen ? gen : 1;
	root->mode = S_IFDIR | 0755;
	root->uid = uid;
	root->gid = gid;
	root->nlink = 2;
	root->atime_ns = root->mtime_ns = root->ctime_ns = root->btime_ns = now;
	root->dir_first = root->dir_last = ARF_META_NONE;
	root->parent = ARF_ROOT_INO;
	arf_meta_txn_end(fs, NULL);
	rc = arf_meta_txn_error(fs); /* reserved above: 0 */
	if (rc)
		goto fail;
	return 0;
fail:
	arf_meta_fs_detach(fs);
	return rc;
}

/* Rebuild the allocators from what the regions hold. */
static void scan(struct arf_meta_fs *fs)
{
	const struct arf_meta_super *sb = fs->sb;

	for (uint32_t i = 0; i < sb->n_inodes; i++)
		if (arf_meta_inode_ptr(fs, (uint64_t)i + 1)->ino != 0) {
			meta_bit_set(fs->ino_map, i);
			fs->free_inodes--;
		}
	for (uint32_t i = sb->n_buckets; i < sb->n_entries; i++)
		if (arf_meta_entry_ptr(fs, i)->parent != 0) {
			meta_bit_set(fs->ent_map, i - sb->n_buckets);
			fs->free_entries--;
		}
	for (uint32_t i = 0; i < sb->n_pages; i++)
		if (arf_meta_page_ptr(fs, i)->kind != ARF_META_PAGE_FREE) {
			meta_bit_set(fs->page_map, i);
			fs->free_pages--;
		}
	for (uint32_t i = 0; i < sb->n_blocks; i++)
		if (arf_meta_tag_ptr(fs, i)->ino != 0) {
			meta_bit_set(fs->blk_map, i);
			fs->free_blocks--;
		}
}

int arf_meta_fs_attach(struct arf_meta_fs *fs, void *meta, uint64_t meta_size,
		       void *data, uint64_t data_size, char *errbuf, size_t errlen)
{
	const struct arf_meta_super *sb = meta;
	int rc;

	if (!meta || meta_size < sizeof(*sb)) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "superblock: META region too small");
		return -EINVAL;
	}
	rc = arf_meta_super_check(sb, errbuf, errlen);
	if (rc)
		return rc;
	if (meta_size < sb->meta_size || data_size < sb->data_size || (sb->data_size && !data)) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "superblock: regions smaller than the geometry");
		return -EINVAL;
	}
	reset(fs, meta, meta_size, data, data_size);
	rc = meta_maps_alloc(fs, sb);
	if (rc) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "out of memory for the allocators");
		arf_meta_fs_detach(fs);
		return rc;
	}
	scan(fs);
	return 0;
}

void arf_meta_fs_detach(struct arf_meta_fs *fs)
{
	if (!fs)
		return;
	free(fs->ino_map);
	free(fs->ent_map);
	free(fs->page_map);
	free(fs->blk_map);
	free(fs->dirty);
	free(fs->dirty_set);
	fs->ino_map = fs->ent_map = fs->page_map = fs->blk_map = NULL;
	fs->dirty = NULL;
	fs->dirty_set = NULL;
	fs->ndirty = fs->dirty_cap = fs->dirty_set_cap = 0;
	fs->free_inodes = fs->free_entries = fs->free_pages = fs->free_blocks = 0;
	fs->in_txn = 0;
}

/* ---- live pointers ---- */

struct arf_meta_inode *arf_meta_inode_ptr(struct arf_meta_fs *fs, uint64_t ino)
{
	return (struct arf_meta_inode *)(fs->meta + arf_meta_inode_off(fs->sb, ino));
}

struct arf_meta_dirent *arf_meta_entry_ptr(struct arf_meta_fs *fs, uint32_t idx)
{
	return (struct arf_meta_dirent *)(fs->meta + arf_meta_entry_off(fs->sb, idx));
}

struct arf_meta_page *arf_meta_page_ptr(struct arf_meta_fs *fs, uint32_t idx)
{
	return (struct arf_meta_page *)(fs->meta + arf_meta_page_off(fs->sb, idx));
}

struct arf_meta_tag *arf_meta_tag_ptr(struct arf_meta_fs *fs, uint32_t pblk)
{
	return (struct arf_meta_tag *)(fs->meta + arf_meta_tag_off(fs->sb, pblk));
}

uint8_t *arf_meta_block_ptr(struct arf_meta_fs *fs, uint32_t pblk)
{
	return fs->data + arf_meta_block_off(pblk);
}

/* ---- touching accessors ---- */

struct arf_meta_inode *arf_meta_inode_touch(struct arf_meta_fs *fs, uint64_t ino)
{
	return arf_meta_touch(fs, ARF_REGION_META, arf_meta_inode_off(fs->sb, ino),
			      sizeof(struct arf_meta_inode));
}

struct arf_meta_dirent *arf_meta_entry_touch(struct arf_meta_fs *fs, uint32_t idx)
{
	return arf_meta_touch(fs, ARF_REGION_META, arf_meta_entry_off(fs->sb, idx),
			      sizeof(struct arf_meta_dirent));
}

struct arf_meta_page *arf_meta_page_touch(struct arf_meta_fs *fs, uint32_t idx)
{
	return arf_meta_touch(fs, ARF_REGION_META, arf_meta_page_off(fs->sb, idx),
			      sizeof(struct arf_meta_page));
}

struct arf_meta_tag *arf_meta_tag_touch(struct arf_meta_fs *fs, uint32_t pblk)
{
	return arf_meta_touch(fs, ARF_REGION_META, arf_meta_tag_off(fs->sb, pblk),
			      sizeof(struct arf_meta_tag));
}

uint8_t *arf_meta_block_touch(struct arf_meta_fs *fs, uint32_t pblk)
{
	return arf_meta_touch(fs, ARF_REGION_DATA, arf_meta_block_off(pblk), ARF_BLOCK_SIZE);
}
