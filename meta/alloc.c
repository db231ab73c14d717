/* SPDX-License-Identifier: MIT */
/*
 * meta/ allocators: bitmaps in server memory over inode slots, overflow
 * directory entries, meta pages and data blocks, with next-fit cursors.
 * They are never exported; arf_meta_fs_attach() rebuilds them by scanning.
 *
 * Allocation only reserves a slot; the caller touches and initialises the
 * object.  *_unreserve gives back a slot that was never touched (a call that
 * failed after reserving).  *_free gives back a slot in use: it touches the
 * object and zeroes it inside the current transaction, so readers see an
 * empty slot once it is sealed.  Two fields survive a free on purpose: an
 * inode's gen (so the next file in the slot gets a new generation) and an
 * overflow entry's next (so a reader holding a stale chain can walk on).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta_int.h"

uint64_t meta_bit_find_zero(const uint64_t *m, uint64_t n, uint64_t from)
{
	uint64_t i = from;

	while (i < n) {
		uint64_t w = m[i >> 6] | ((1ull << (i & 63)) - 1); /* ignore bits below i */
		if (w != UINT64_MAX) {
			uint64_t b = (i & ~63ull) + (uint64_t)__builtin_ctzll(~w);
			return b < n ? b : n;
		}
		i = (i & ~63ull) + 64;
	}
	return n;
}

int meta_maps_alloc(struct arf_meta_fs *fs, const struct arf_meta_super *sb)
{
	fs->ino_map = calloc(meta_bit_words(sb->n_inodes), sizeof(uint64_t));
	fs->ent_map = calloc(meta_bit_words(sb->n_entries - sb->n_buckets), sizeof(uint64_t));
	fs->page_map = calloc(meta_bit_words(sb->n_pages), sizeof(uint64_t));
	fs->blk_map = calloc(meta_bit_words(sb->n_blocks), sizeof(uint64_t));
	if (!fs->ino_map || !fs->ent_map || !fs->page_map || !fs->blk_map)
		return -ENOMEM;
	fs->free_inodes = sb->n_inodes;
	fs->free_entries = sb->n_entries - sb->n_buckets;
	fs->free_pages = sb->n_pages;
	fs->free_blocks = sb->n_blocks;
	fs->ino_hint = fs->ent_hint = fs->page_hint = fs->blk_hint = 0;
	return 0;
}

/* Next-fit: the first clear bit at or after *hint, wrapping once. */
static int take(uint64_t *map, uint32_t n, uint32_t *hint, uint32_t *nfree, uint32_t *out)
{
	uint64_t i;

	if (!*nfree)
		return -ENOSPC;
	i = meta_bit_find_zero(map, n, *hint < n ? *hint : 0);
	if (i >= n)
		i = meta_bit_find_zero(map, n, 0);
	if (i >= n)
		return -ENOSPC;
	meta_bit_set(map, i);
	(*nfree)--;
	*hint = (uint32_t)(i + 1 < n ? i + 1 : 0);
	*out = (uint32_t)i;
	return 0;
}

static void give(uint64_t *map, uint32_t n, uint32_t *nfree, uint32_t i)
{
	if (i < n && meta_bit_test(map, i)) {
		meta_bit_clear(map, i);
		(*nfree)++;
	}
}

int arf_meta_inode_alloc(struct arf_meta_fs *fs, uint64_t *ino)
{
	uint32_t slot;
	int rc = take(fs->ino_map, fs->sb->n_inodes, &fs->ino_hint, &fs->free_inodes, &slot);

	if (!rc)
		*ino = (uint64_t)slot + 1;
	return rc;
}

void arf_meta_inode_unreserve(struct arf_meta_fs *fs, uint64_t ino)
{
	if (ino >= 1 && ino <= fs->sb->n_inodes)
		give(fs->ino_map, fs->sb->n_inodes, &fs->free_inodes, (uint32_t)(ino - 1));
}

void arf_meta_inode_free(struct arf_meta_fs *fs, uint64_t ino)
{
	if (ino < 1 || ino > fs->sb->n_inodes)
		return;
	struct arf_meta_inode *in = arf_meta_inode_touch(fs, ino);
	uint32_t gen = in->gen;
	memset((uint8_t *)in + sizeof(in->h), 0, sizeof(*in) - sizeof(in->h));
	in->gen = gen;
	arf_meta_inode_unreserve(fs, ino);
}

int arf_meta_entry_alloc(struct arf_meta_fs *fs, uint32_t *idx)
{
	uint32_t nb = fs->sb->n_buckets, i;
	int rc = take(fs->ent_map, fs->sb->n_entries - nb, &fs->ent_hint, &fs->free_entries, &i);

	if (!rc)
		*idx = nb + i;
	return rc;
}

void arf_meta_entry_unreserve(struct arf_meta_fs *fs, uint32_t idx)
{
	uint32_t nb = fs->sb->n_buckets;

	if (idx >= nb && idx < fs->sb->n_entries)
		give(fs->ent_map, fs->sb->n_entries - nb, &fs->free_entries, idx - nb);
}

void arf_meta_entry_free(struct arf_meta_fs *fs, uint32_t idx)
{
	if (idx >= fs->sb->n_entries)
		return;
	struct arf_meta_dirent *e = arf_meta_entry_touch(fs, idx);
	uint32_t next = e->next;
	memset((uint8_t *)e + sizeof(e->h), 0, sizeof(*e) - sizeof(e->h));
	e->next = next;
	arf_meta_entry_unreserve(fs, idx);
}

int arf_meta_page_alloc(struct arf_meta_fs *fs, uint32_t *idx)
{
	return take(fs->page_map, fs->sb->n_pages, &fs->page_hint, &fs->free_pages, idx);
}

void arf_meta_page_unreserve(struct arf_meta_fs *fs, uint32_t idx)
{
	give(fs->page_map, fs->sb->n_pages, &fs->free_pages, idx);
}

void arf_meta_page_free(struct arf_meta_fs *fs, uint32_t idx)
{
	if (idx >= fs->sb->n_pages)
		return;
	struct arf_meta_page *p = arf_meta_page_touch(fs, idx);
	memset((uint8_t *)p + sizeof(p->h), 0, sizeof(*p) - sizeof(p->h));
	arf_meta_page_unreserve(fs, idx);
}

int arf_meta_blocks_alloc(struct arf_meta_fs *fs, uint32_t goal, uint32_t want,
			  uint32_t *pblk, uint32_t *got)
{
	uint32_t n = fs->sb->n_blocks;
	uint64_t start;
	uint32_t len = 0;

	if (!fs->free_blocks || !want)
		return -ENOSPC;
	if (goal < n && !meta_bit_test(fs->blk_map, goal)) {
		start = goal;
	} else {
		start = meta_bit_find_zero(fs->blk_map, n, fs->blk_hint < n ? fs->blk_hint : 0);
		if (start >= n)
			start = meta_bit_find_zero(fs->blk_map, n, 0);
		if (start >= n)
			return -ENOSPC;
	}
	while (len < want && start + len < n && !meta_bit_test(fs->blk_map, start + len)) {
		meta_bit_set(fs->blk_map, start + len);
		len++;
	}
	fs->free_blocks -= len;
	fs->blk_hint = (uint32_t)(start + len < n ? start + len : 0);
	*pblk = (uint32_t)start;
	*got = len;
	return 0;
}

void arf_meta_blocks_unreserve(struct arf_meta_fs *fs, uint32_t pblk, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		give(fs->blk_map, fs->sb->n_blocks, &fs->free_blocks, pblk + i);
}

void arf_meta_blocks_free(struct arf_meta_fs *fs, uint32_t pblk, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t b = pblk + i;
		if (b >= fs->sb->n_blocks)
			break;
		struct arf_meta_tag *t = arf_meta_tag_touch(fs, b);
		memset((uint8_t *)t + sizeof(t->h), 0, sizeof(*t) - sizeof(t->h));
		give(fs->blk_map, fs->sb->n_blocks, &fs->free_blocks, b);
	}
}
