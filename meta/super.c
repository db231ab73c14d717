/* SPDX-License-Identifier: MIT */
/*
 * meta/ superblock: computing a geometry (where each table lives in META
 * and how big the regions are) and checking one read back from RocksDB or
 * received by a client.  Tables start on 4 KiB boundaries so a page-sized
 * read never straddles two tables.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arf_meta.h"

#define ALIGN_UP(x) (((x) + (uint64_t)ARF_BLOCK_SIZE - 1) & ~((uint64_t)ARF_BLOCK_SIZE - 1))

/* Offsets and sizes for the counts in sb; no validation. */
static void place(struct arf_meta_super *sb)
{
	uint64_t off = ALIGN_UP(sizeof(struct arf_meta_super));

	sb->off_inodes = off;
	off = ALIGN_UP(off + (uint64_t)sb->n_inodes * sizeof(struct arf_meta_inode));
	sb->off_entries = off;
	off = ALIGN_UP(off + (uint64_t)sb->n_entries * sizeof(struct arf_meta_dirent));
	sb->off_pages = off;
	off = ALIGN_UP(off + (uint64_t)sb->n_pages * sizeof(struct arf_meta_page));
	sb->off_tags = off;
	off = ALIGN_UP(off + (uint64_t)sb->n_blocks * sizeof(struct arf_meta_tag));
	sb->meta_size = off;
	sb->data_size = (uint64_t)sb->n_blocks * ARF_BLOCK_SIZE;
}

void arf_meta_super_layout(struct arf_meta_super *sb, uint32_t n_inodes, uint32_t n_buckets,
			   uint32_t n_overflow, uint32_t n_pages, uint32_t n_blocks,
			   uint32_t hash_mask)
{
	uint64_t n_entries = (uint64_t)n_buckets + n_overflow;

	memset(sb, 0, sizeof(*sb));
	sb->magic = ARF_META_MAGIC;
	sb->format = ARF_META_FORMAT_VERSION;
	sb->block_size = ARF_BLOCK_SIZE;
	sb->hash_mask = hash_mask;
	sb->n_inodes = n_inodes;
	sb->n_buckets = n_buckets;
	/* an impossible count makes arf_meta_super_check() refuse the geometry */
	sb->n_entries = n_entries >= ARF_META_NONE ? ARF_META_NONE : (uint32_t)n_entries;
	sb->n_pages = n_pages;
	sb->n_blocks = n_blocks;
	place(sb);
}

static int bad(char *errbuf, size_t errlen, int rc, const char *what)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "superblock: %s", what);
	return rc;
}

int arf_meta_super_check(const struct arf_meta_super *sb, char *errbuf, size_t errlen)
{
	struct arf_meta_super want;

	if (sb->magic != ARF_META_MAGIC)
		return bad(errbuf, errlen, -EINVAL, "bad magic (not an ARF filesystem)");
	if (sb->format != ARF_META_FORMAT_VERSION)
		return bad(errbuf, errlen, ARF_EVERSION, "unsupported format version");
	if (sb->block_size != ARF_BLOCK_SIZE)
		return bad(errbuf, errlen, -EINVAL, "block size is not 4096");
	if (sb->n_inodes < 1 || sb->n_inodes >= ARF_META_NONE)
		return bad(errbuf, errlen, -EINVAL, "inode count out of range");
	if (sb->n_buckets < 1)
		return bad(errbuf, errlen, -EINVAL, "no directory buckets");
	if (sb->n_entries < sb->n_buckets || sb->n_entries >= ARF_META_NONE)
		return bad(errbuf, errlen, -EINVAL, "entry count out of range");
	if (sb->n_pages >= ARF_META_NONE || sb->n_blocks >= ARF_META_NONE)
		return bad(errbuf, errlen, -EINVAL, "page or block count out of range");
	memset(&want, 0, sizeof(want));
	want.n_inodes = sb->n_inodes;
	want.n_entries = sb->n_entries;
	want.n_pages = sb->n_pages;
	want.n_blocks = sb->n_blocks;
	place(&want);
	if (sb->off_inodes != want.off_inodes || sb->off_entries != want.off_entries ||
	    sb->off_pages != want.off_pages || sb->off_tags != want.off_tags)
		return bad(errbuf, errlen, -EINVAL, "table offsets do not match the counts");
	if (sb->meta_size != want.meta_size || sb->data_size != want.data_size)
		return bad(errbuf, errlen, -EINVAL, "region sizes do not match the counts");
	return 0;
}
