/* SPDX-License-Identifier: MIT */
/*
 * meta/ extent maps: where a file's blocks live.
 *
 * A map is a sorted array of extents.  Up to ARF_META_INLINE_EXTENTS of them
 * sit in the inode; beyond that the inode lists up to ARF_META_EXT_PAGES
 * extent pages (ARF_META_INO_EXTPAGES), page i holding extents
 * [i * ARF_META_PAGE_EXTS, ...) and the inode recording each page's first
 * fblk, so a reader fetches only the pages that cover its range.
 *
 * Callers work on a private copy (arf_meta_ext_load), change it, check it
 * fits (arf_meta_ext_fits) before their first touch, and store it back
 * (arf_meta_ext_store), which touches only the pages whose bytes change.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta_int.h"

#define PER_PAGE ARF_META_PAGE_EXTS

uint32_t arf_meta_ext_pages_needed(uint32_t n)
{
	return n <= ARF_META_INLINE_EXTENTS ? 0 : (n + PER_PAGE - 1) / PER_PAGE;
}

/* Extent pages the inode holds now. */
static uint32_t pages_held(const struct arf_meta_inode *in)
{
	uint32_t n = 0;

	if (!(in->flags & ARF_META_INO_EXTPAGES))
		return 0;
	for (int i = 0; i < ARF_META_EXT_PAGES; i++)
		if (in->u.xp.page[i] != ARF_META_NONE)
			n++;
	return n;
}

int arf_meta_ext_load(struct arf_meta_fs *fs, const struct arf_meta_inode *in,
		      struct arf_meta_extent **out, uint32_t *n)
{
	struct arf_meta_extent *ext = malloc(sizeof(*ext) * (in->nextents ? in->nextents : 1));
	uint32_t k = 0;

	if (!ext)
		return -ENOMEM;
	if (!(in->flags & ARF_META_INO_EXTPAGES)) {
		for (int i = 0; i < ARF_META_INLINE_EXTENTS && k < in->nextents; i++)
			if (in->u.ext[i].len)
				ext[k++] = in->u.ext[i];
	} else {
		for (int i = 0; i < ARF_META_EXT_PAGES; i++) {
			uint32_t p = in->u.xp.page[i];
			if (p >= fs->sb->n_pages)
				continue;
			const struct arf_meta_page *pg = arf_meta_page_ptr(fs, p);
			for (uint32_t j = 0; j < pg->count && j < PER_PAGE && k < in->nextents; j++)
				if (pg->u.ext[j].len)
					ext[k++] = pg->u.ext[j];
		}
	}
	*out = ext;
	*n = k;
	return 0;
}

int arf_meta_ext_fits(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint32_t n)
{
	uint32_t need = arf_meta_ext_pages_needed(n), held = pages_held(in);

	if (n > ARF_META_MAX_EXTENTS)
		return -ENOSPC;
	if (need > held && need - held > fs->free_pages)
		return -ENOSPC;
	return 0;
}

uint32_t arf_meta_ext_find(const struct arf_meta_extent *ext, uint32_t n, uint64_t fblk)
{
	uint32_t lo = 0, hi = n;

	/* first extent that ends after fblk */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (ext[mid].fblk + ext[mid].len <= fblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Write page i of the map (touching it only if its bytes change). */
static void store_page(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint32_t p,
		       const struct arf_meta_extent *ext, uint32_t cnt)
{
	struct arf_meta_page *live = arf_meta_page_ptr(fs, p);
	int same = live->kind == ARF_META_PAGE_EXT && live->owner == in->ino &&
		   live->owner_gen == in->gen && live->count == cnt && live->next == ARF_META_NONE &&
		   !memcmp(live->u.ext, ext, cnt * sizeof(*ext));

	if (same)
		return;
	live = arf_meta_page_touch(fs, p);
	memset((uint8_t *)live + sizeof(live->h), 0, sizeof(*live) - sizeof(live->h));
	live->kind = ARF_META_PAGE_EXT;
	live->owner = in->ino;
	live->owner_gen = in->gen;
	live->next = ARF_META_NONE;
	live->count = cnt;
	memcpy(live->u.ext, ext, cnt * sizeof(*ext));
}

int arf_meta_ext_store(struct arf_meta_fs *fs, struct arf_meta_inode *in,
		       const struct arf_meta_extent *ext, uint32_t n)
{
	uint32_t held[ARF_META_EXT_PAGES], nheld = 0, need = arf_meta_ext_pages_needed(n);
	int rc;

	if ((rc = arf_meta_ext_fits(fs, in, n)))
		return rc;
	if (in->flags & ARF_META_INO_EXTPAGES)
		for (int i = 0; i < ARF_META_EXT_PAGES; i++)
			if (in->u.xp.page[i] < fs->sb->n_pages)
				held[nheld++] = in->u.xp.page[i];
	while (nheld > need)
		arf_meta_page_free(fs, held[--nheld]);
	while (nheld < need) {
		if (arf_meta_page_alloc(fs, &held[nheld]))
			return -ENOSPC; /* cannot happen after arf_meta_ext_fits */
		nheld++;
	}
	memset(&in->u, 0, sizeof(in->u));
	in->nextents = n;
	if (!need) {
		in->flags &= ~ARF_META_INO_EXTPAGES;
		if (n)
			memcpy(in->u.ext, ext, n * sizeof(*ext));
		return 0;
	}
	in->flags |= ARF_META_INO_EXTPAGES;
	for (int i = 0; i < ARF_META_EXT_PAGES; i++)
		in->u.xp.page[i] = ARF_META_NONE;
	for (uint32_t i = 0; i < need; i++) {
		uint32_t first = i * PER_PAGE, cnt = n - first < PER_PAGE ? n - first : PER_PAGE;
		store_page(fs, in, held[i], ext + first, cnt);
		in->u.xp.page[i] = held[i];
		in->u.xp.first_fblk[i] = ext[first].fblk;
	}
	return 0;
}

void arf_meta_ext_release(struct arf_meta_fs *fs, struct arf_meta_inode *in)
{
	if (!(in->flags & ARF_META_INO_EXTPAGES)) {
		for (int i = 0; i < ARF_META_INLINE_EXTENTS; i++)
			if (in->u.ext[i].len)
				arf_meta_blocks_free(fs, in->u.ext[i].pblk, in->u.ext[i].len);
	} else {
		for (int i = 0; i < ARF_META_EXT_PAGES; i++) {
			uint32_t p = in->u.xp.page[i];
			if (p >= fs->sb->n_pages)
				continue;
			const struct arf_meta_page *pg = arf_meta_page_ptr(fs, p);
			for (uint32_t j = 0; j < pg->count && j < PER_PAGE; j++)
				if (pg->u.ext[j].len)
					arf_meta_blocks_free(fs, pg->u.ext[j].pblk, pg->u.ext[j].len);
			arf_meta_page_free(fs, p);
		}
	}
	memset(&in->u, 0, sizeof(in->u));
	in->flags &= ~ARF_META_INO_EXTPAGES;
	in->nextents = 0;
	in->blocks = 0;
}
