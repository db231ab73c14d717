/* SPDX-License-Identifier: MIT */
/*
 * Test fixture shared by the meta/ and ops/ unit tests: a filesystem in
 * malloc'd regions, a transaction wrapper, a one-sided-style reader that
 * works on validated copies as a client does, and fsck(), which checks
 * every invariant of the layout after a test has mutated it.
 */
#ifndef ARF_META_TEST_H
#define ARF_META_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "arf_meta_fs.h"

/* A filesystem in private memory. */
struct tfs {
	struct arf_meta_fs fs;     /* the state under test */
	struct arf_meta_super geo; /* the geometry it was formatted with */
	uint8_t *meta, *data;      /* the regions (calloc'd) */
};

static inline struct tfs *tfs_new(uint32_t inodes, uint32_t buckets, uint32_t overflow,
				  uint32_t pages, uint32_t blocks, uint32_t mask)
{
	struct tfs *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	arf_meta_super_layout(&t->geo, inodes, buckets, overflow, pages, blocks, mask);
	t->meta = calloc(1, t->geo.meta_size);
	t->data = calloc(1, t->geo.data_size ? t->geo.data_size : 1);
	assert_non_null(t->meta);
	assert_non_null(t->data);
	assert_int_equal(arf_meta_fs_format(&t->fs, t->meta, t->geo.meta_size, t->data,
					    t->geo.data_size, &t->geo, 0, 0), 0);
	return t;
}

static inline void tfs_free(struct tfs *t)
{
	if (!t)
		return;
	arf_meta_fs_detach(&t->fs);
	free(t->meta);
	free(t->data);
	free(t);
}

/* Every META object the last transaction touched must be sealed and valid. */
static inline void tfs_check_sealed(struct tfs *t)
{
	for (size_t i = 0; i < t->fs.ndirty; i++) {
		const struct arf_meta_dirty *d = &t->fs.dirty[i];
		if (d->region != ARF_REGION_META)
			continue;
		assert_int_equal(arf_meta_obj_validate(t->meta + d->off, d->len), 0);
	}
}

/* Run one mutation in a transaction and check what it sealed. */
#define TXN(t, expr)                                                                  \
	({                                                                            \
		arf_meta_txn_begin(&(t)->fs);                                         \
		int _rc = (expr);                                                     \
		arf_meta_txn_end(&(t)->fs, NULL);                                     \
		tfs_check_sealed(t);                                                  \
		_rc;                                                                  \
	})

/* A client-style read: copy then validate. */
static inline int os_copy(struct tfs *t, uint64_t off, void *dst, size_t len)
{
	memcpy(dst, t->meta + off, len);
	return arf_meta_obj_validate(dst, len);
}

/* A client-style lookup over validated copies: 0, -ENOENT, or a validation error. */
static inline int os_lookup(struct tfs *t, uint64_t dir, const char *name, size_t len,
			    uint64_t *child, uint32_t *hops)
{
	struct arf_meta_super sb;
	struct arf_meta_dirent e;
	int rc;

	if ((rc = os_copy(t, 0, &sb, sizeof(sb))))
		return rc;
	uint32_t h = arf_meta_name_hash(dir, name, len), idx = arf_meta_bucket(&sb, h);
	for (*hops = 0; *hops <= sb.n_entries; (*hops)++) {
		if ((rc = os_copy(t, arf_meta_entry_off(&sb, idx), &e, sizeof(e))))
			return rc;
		if (e.parent == dir && e.hash == h && e.namelen == len && !memcmp(e.name, name, len)) {
			*child = e.child;
			return 0;
		}
		if (e.next == ARF_META_NONE)
			return -2; /* -ENOENT */
		if (e.next < sb.n_buckets || e.next >= sb.n_entries)
			return -1000000; /* a link a client could not follow */
		idx = e.next;
	}
	return -1000001; /* a loop */
}

#define FSCK_FAIL(...)                                                                \
	do {                                                                          \
		print_error(__VA_ARGS__);                                             \
		fail();                                                               \
	} while (0)

/* Check every invariant of the layout; fails the test on the first breach. */
static inline void fsck(struct tfs *t)
{
	struct arf_meta_fs *fs = &t->fs;
	const struct arf_meta_super *sb = fs->sb;
	uint32_t *links = calloc(sb->n_inodes + 1, sizeof(uint32_t));
	uint32_t *subdirs = calloc(sb->n_inodes + 1, sizeof(uint32_t));
	uint8_t *blk_owner = calloc(sb->n_blocks + 1, 1);
	uint8_t *page_seen = calloc(sb->n_pages + 1, 1);
	uint32_t used_ino = 0, used_ent = 0, used_pages = 0, used_blocks = 0;

	assert_non_null(links);
	assert_non_null(subdirs);
	assert_non_null(blk_owner);
	assert_non_null(page_seen);
	assert_int_equal(arf_meta_obj_validate(fs->meta, sizeof(*sb)), 0);

	/* entries: valid, reachable, naming live inodes */
	for (uint32_t i = 0; i < sb->n_entries; i++) {
		struct arf_meta_dirent *e = arf_meta_entry_ptr(fs, i);
		uint32_t idx;
		assert_int_equal(arf_meta_obj_validate(e, sizeof(*e)), 0);
		if (i < sb->n_buckets && e->parent == 0 && e->next != ARF_META_NONE &&
		    (e->next < sb->n_buckets || e->next >= sb->n_entries))
			FSCK_FAIL("head %u has a bad link %u\n", i, e->next);
		if (e->parent == 0)
			continue;
		if (i >= sb->n_buckets)
			used_ent++;
		if (arf_meta_dir_find(fs, e->parent, e->name, e->namelen, &idx) || idx != i)
			FSCK_FAIL("entry %u (%.*s) not reachable\n", i, e->namelen, e->name);
		uint64_t child;
		uint32_t hops;
		if (os_lookup(t, e->parent, e->name, e->namelen, &child, &hops) || child != e->child)
			FSCK_FAIL("entry %u not found one-sided\n", i);
		if (e->hash != arf_meta_name_hash(e->parent, e->name, e->namelen))
			FSCK_FAIL("entry %u hash\n", i);
		if (e->child == 0 || e->child > sb->n_inodes)
			FSCK_FAIL("entry %u child out of range\n", i);
		struct arf_meta_inode *c = arf_meta_inode_ptr(fs, e->child);
		if (c->ino != e->child || c->gen != e->child_gen)
			FSCK_FAIL("entry %u names a stale inode\n", i);
		if (e->type != arf_meta_dtype(c->mode))
			FSCK_FAIL("entry %u type\n", i);
		links[e->child]++;
		if (S_ISDIR(c->mode)) {
			subdirs[e->parent]++;
			if (c->parent != e->parent)
				FSCK_FAIL("dir %llu parent %llu != %llu\n", (unsigned long long)e->child,
					  (unsigned long long)c->parent, (unsigned long long)e->parent);
		}
		struct arf_meta_page *pg = arf_meta_page_ptr(fs, e->page);
		if (e->page >= sb->n_pages || pg->kind != ARF_META_PAGE_DIR || pg->owner != e->parent ||
		    e->slot >= pg->count || pg->u.slot[e->slot] != i)
			FSCK_FAIL("entry %u listing position\n", i);
		if (e->cookie != (uint64_t)pg->ordinal * ARF_META_DIR_SLOTS + e->slot + 1)
			FSCK_FAIL("entry %u cookie\n", i);
	}
	/* inodes */
	for (uint32_t s = 0; s < sb->n_inodes; s++) {
		uint64_t ino = (uint64_t)s + 1;
		struct arf_meta_inode *in = arf_meta_inode_ptr(fs, ino);
		assert_int_equal(arf_meta_obj_validate(in, sizeof(*in)), 0);
		if (in->ino == 0)
			continue;
		used_ino++;
		if (in->ino != ino)
			FSCK_FAIL("inode slot %u holds %llu\n", s, (unsigned long long)in->ino);
		if (S_ISDIR(in->mode)) {
			uint32_t live = 0, np = 0, last = ARF_META_NONE, ord = 0;
			if (in->nlink != 2 + subdirs[ino])
				FSCK_FAIL("dir %llu nlink %u, subdirs %u\n", (unsigned long long)ino,
					  in->nlink, subdirs[ino]);
			if (ino != ARF_ROOT_INO && links[ino] != 1)
				FSCK_FAIL("dir %llu has %u names\n", (unsigned long long)ino, links[ino]);
			for (uint32_t p = in->dir_first; p != ARF_META_NONE;) {
				struct arf_meta_page *pg = arf_meta_page_ptr(fs, p);
				if (p >= sb->n_pages || page_seen[p]++ || pg->kind != ARF_META_PAGE_DIR ||
				    pg->owner != ino || pg->owner_gen != in->gen)
					FSCK_FAIL("dir %llu page %u\n", (unsigned long long)ino, p);
				if (np && pg->ordinal <= ord)
					FSCK_FAIL("dir %llu ordinals\n", (unsigned long long)ino);
				ord = pg->ordinal;
				for (uint32_t k = 0; k < pg->count; k++)
					if (pg->u.slot[k] != ARF_META_NONE) {
						struct arf_meta_dirent *e =
							arf_meta_entry_ptr(fs, pg->u.slot[k]);
						if (e->parent != ino || e->page != p || e->slot != k)
							FSCK_FAIL("dir %llu slot %u\n",
								  (unsigned long long)ino, k);
						live++;
					}
				np++;
				last = p;
				p = pg->next;
			}
			if (live != in->size || np != in->dir_pages || last != in->dir_last)
				FSCK_FAIL("dir %llu: %u live, size %llu, %u pages (%u)\n",
					  (unsigned long long)ino, live, (unsigned long long)in->size, np,
					  in->dir_pages);
			used_pages += np;
		} else {
			if (links[ino] != in->nlink)
				FSCK_FAIL("inode %llu nlink %u, names %u\n", (unsigned long long)ino,
					  in->nlink, links[ino]);
			struct arf_meta_extent *ext;
			uint32_t n;
			assert_int_equal(arf_meta_ext_load(fs, in, &ext, &n), 0);
			if (n != in->nextents)
				FSCK_FAIL("inode %llu nextents\n", (unsigned long long)ino);
			uint64_t nb = 0;
			for (uint32_t k = 0; k < n; k++) {
				if (!ext[k].len || (k && ext[k].fblk < ext[k - 1].fblk + ext[k - 1].len))
					FSCK_FAIL("inode %llu extents unsorted\n", (unsigned long long)ino);
				if (k && ext[k].fblk == ext[k - 1].fblk + ext[k - 1].len &&
				    ext[k].pblk == ext[k - 1].pblk + ext[k - 1].len)
					FSCK_FAIL("inode %llu extents not merged\n", (unsigned long long)ino);
				if ((ext[k].fblk + ext[k].len) * ARF_BLOCK_SIZE >= in->size + ARF_BLOCK_SIZE)
					FSCK_FAIL("inode %llu block past EOF\n", (unsigned long long)ino);
				for (uint32_t j = 0; j < ext[k].len; j++) {
					uint32_t b = ext[k].pblk + j;
					struct arf_meta_tag *tg = arf_meta_tag_ptr(fs, b);
					if (b >= sb->n_blocks || blk_owner[b]++)
						FSCK_FAIL("block %u shared\n", b);
					if (arf_meta_tag_check(tg, ino, in->gen, ext[k].fblk + j,
							       arf_meta_block_ptr(fs, b)))
						FSCK_FAIL("block %u tag\n", b);
					nb++;
				}
			}
			free(ext);
			if (nb != in->blocks)
				FSCK_FAIL("inode %llu blocks %llu != %llu\n", (unsigned long long)ino,
					  (unsigned long long)in->blocks, (unsigned long long)nb);
			used_blocks += (uint32_t)nb;
			if (in->flags & ARF_META_INO_EXTPAGES)
				for (int k = 0; k < ARF_META_EXT_PAGES; k++)
					if (in->u.xp.page[k] != ARF_META_NONE) {
						uint32_t p = in->u.xp.page[k];
						struct arf_meta_page *pg = arf_meta_page_ptr(fs, p);
						if (page_seen[p]++ || pg->kind != ARF_META_PAGE_EXT ||
						    pg->owner != ino || pg->owner_gen != in->gen)
							FSCK_FAIL("inode %llu ext page\n",
								  (unsigned long long)ino);
						used_pages++;
					}
		}
	}
	/* pages and tags validate; allocators agree with what is in use */
	for (uint32_t p = 0; p < sb->n_pages; p++) {
		struct arf_meta_page *pg = arf_meta_page_ptr(fs, p);
		assert_int_equal(arf_meta_obj_validate(pg, sizeof(*pg)), 0);
		if ((pg->kind != ARF_META_PAGE_FREE) != !!page_seen[p])
			FSCK_FAIL("page %u leaked or dangling\n", p);
	}
	for (uint32_t b = 0; b < sb->n_blocks; b++) {
		struct arf_meta_tag *tg = arf_meta_tag_ptr(fs, b);
		assert_int_equal(arf_meta_obj_validate(tg, sizeof(*tg)), 0);
		if ((tg->ino != 0) != !!blk_owner[b])
			FSCK_FAIL("block %u leaked or dangling\n", b);
	}
	assert_int_equal(fs->free_inodes, sb->n_inodes - used_ino);
	assert_int_equal(fs->free_entries, sb->n_entries - sb->n_buckets - used_ent);
	assert_int_equal(fs->free_pages, sb->n_pages - used_pages);
	assert_int_equal(fs->free_blocks, sb->n_blocks - used_blocks);

	/* attaching to a copy rebuilds the same allocators */
	uint8_t *copy = malloc(sb->meta_size);
	struct arf_meta_fs fs2;
	char err[128];
	assert_non_null(copy);
	memcpy(copy, fs->meta, sb->meta_size);
	assert_int_equal(arf_meta_fs_attach(&fs2, copy, sb->meta_size, fs->data, sb->data_size, err,
					    sizeof(err)), 0);
	assert_int_equal(fs2.free_inodes, fs->free_inodes);
	assert_int_equal(fs2.free_entries, fs->free_entries);
	assert_int_equal(fs2.free_pages, fs->free_pages);
	assert_int_equal(fs2.free_blocks, fs->free_blocks);
	assert_memory_equal(fs2.ino_map, fs->ino_map, (sb->n_inodes + 7) / 8);
	assert_memory_equal(fs2.page_map, fs->page_map, (sb->n_pages + 7) / 8);
	assert_memory_equal(fs2.blk_map, fs->blk_map, (sb->n_blocks + 7) / 8);
	assert_memory_equal(fs2.ent_map, fs->ent_map, (sb->n_entries - sb->n_buckets + 7) / 8);
	arf_meta_fs_detach(&fs2);
	free(copy);
	free(links);
	free(subdirs);
	free(blk_owner);
	free(page_seen);
}

#endif /* ARF_META_TEST_H */
