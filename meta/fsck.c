/* SPDX-License-Identifier: MIT */
/*
 * meta/fsck — check a filesystem's regions for damage, without changing
 * them.  arfd runs it on its live regions (under its lock, once every
 * change is sealed); arfctl fsck --data-dir runs it on regions rebuilt from
 * a stopped server's RocksDB.
 *
 * What is checked, and the kind each finding is reported under:
 *   torn-object     an object whose version is odd or whose checksum fails
 *   bad-inode       an inode slot that names another inode number
 *   dangling-entry  an entry whose parent is not a live directory, or whose
 *                   child is not a live inode of the recorded generation
 *   bad-entry       wrong name hash, type, or listing page back-reference
 *   unreachable-entry  an entry its bucket's chain does not lead to
 *   link-count      nlink different from the names (files) or 2 + the
 *                   subdirectories (directories); a directory with two names
 *   orphan-inode    a live inode that no name reaches
 *   block-tag       a mapped block whose tag names another owner or index
 *   block-csum      a mapped block whose bytes do not match its tag
 *   double-block    a block mapped twice (two files, or twice in one)
 *   leaked-block    a block whose tag says in use that no file maps
 *   block-count     an inode's block count different from its map
 *   bad-page        a listing or extent page of the wrong kind or owner
 *   leaked-page     a page in use that nothing references
 *   free-map        the server's allocation bitmaps disagree with the regions
 * Each finding is one line through the caller's report callback.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "meta_int.h"

struct ck {
	struct arf_meta_fs *fs;
	struct arf_meta_fsck *r;
	const struct arf_meta_super *sb;
	uint8_t *live;        /* [n_inodes + 1]: 1 = live inode */
	uint32_t *refs;       /* names pointing at each inode */
	uint32_t *subdirs;    /* subdirectories of each directory */
	uint64_t *blk_owner;  /* [n_blocks]: owning inode, 0 = none */
	uint8_t *page_used;   /* [n_pages]: referenced */
};

static void report(struct ck *k, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(struct ck *k, const char *kind, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	k->r->problems++;
	if (!k->r->report)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k->r->report(k->r->ctx, kind, msg);
}

static int bit(const uint64_t *m, uint64_t i)
{
	return (int)((m[i >> 6] >> (i & 63)) & 1);
}

static void check_inodes(struct ck *k)
{
	for (uint64_t ino = 1; ino <= k->sb->n_inodes; ino++) {
		const struct arf_meta_inode *in = arf_meta_inode_ptr(k->fs, ino);
		if (arf_meta_obj_validate(in, sizeof(*in))) {
			report(k, "torn-object", "inode %llu: version or checksum wrong",
			       (unsigned long long)ino);
			continue;
		}
		if (!in->ino)
			continue;
		if (in->ino != ino) {
			report(k, "bad-inode", "inode slot %llu holds inode %llu",
			       (unsigned long long)ino, (unsigned long long)in->ino);
			continue;
		}
		k->live[ino] = 1;
		k->r->inodes++;
	}
}

/* Is idx on the chain of its bucket? */
static int reachable(struct ck *k, uint32_t hash, uint32_t idx)
{
	uint32_t cur = arf_meta_bucket(k->sb, hash);
	for (uint32_t hops = 0; cur < k->sb->n_entries && hops <= k->sb->n_entries; hops++) {
		if (cur == idx)
			return 1;
		cur = arf_meta_entry_ptr(k->fs, cur)->next;
	}
	return 0;
}

static void check_entries(struct ck *k)
{
	for (uint32_t idx = 0; idx < k->sb->n_entries; idx++) {
		const struct arf_meta_dirent *e = arf_meta_entry_ptr(k->fs, idx);
		if (arf_meta_obj_validate(e, sizeof(*e))) {
			report(k, "torn-object", "entry %u: version or checksum wrong", idx);
			continue;
		}
		if (!e->parent)
			continue;
		k->r->entries++;
		char name[256];
		size_t nl = e->namelen;
		memcpy(name, e->name, nl);
		name[nl] = 0;
		if (!nl || e->parent > k->sb->n_inodes || !k->live[e->parent] ||
		    !S_ISDIR(arf_meta_inode_ptr(k->fs, e->parent)->mode)) {
			report(k, "dangling-entry", "entry %u '%s': parent %llu is not a live directory",
			       idx, name, (unsigned long long)e->parent);
			continue;
		}
		if (!e->child || e->child > k->sb->n_inodes || !k->live[e->child] ||
		    arf_meta_inode_ptr(k->fs, e->child)->gen != e->child_gen) {
			report(k, "dangling-entry",
			       "entry %u '%s' in directory %llu: inode %llu (gen %u) is not live", idx,
			       name, (unsigned long long)e->parent, (unsigned long long)e->child,
			       e->child_gen);
			continue;
		}
		const struct arf_meta_inode *child = arf_meta_inode_ptr(k->fs, e->child);
		k->refs[e->child]++;
		if (S_ISDIR(child->mode)) {
			k->subdirs[e->parent]++;
			if (child->parent != e->parent)
				report(k, "bad-entry",
				       "directory %llu is named '%s' in %llu but records parent %llu",
				       (unsigned long long)e->child, name, (unsigned long long)e->parent,
				       (unsigned long long)child->parent);
		}
		if (e->hash != arf_meta_name_hash(e->parent, e->name, nl))
			report(k, "bad-entry", "entry %u '%s': stored hash is not the name's", idx, name);
		else if (!reachable(k, e->hash, idx))
			report(k, "unreachable-entry", "entry %u '%s' in directory %llu: not on its chain",
			       idx, name, (unsigned long long)e->parent);
		if (e->type != arf_meta_dtype(child->mode))
			report(k, "bad-entry", "entry %u '%s': type %u, inode is type %u", idx, name,
			       e->type, arf_meta_dtype(child->mode));
		if (e->page >= k->sb->n_pages ||
		    e->slot >= ARF_META_DIR_SLOTS ||
		    arf_meta_page_ptr(k->fs, e->page)->kind != ARF_META_PAGE_DIR ||
		    arf_meta_page_ptr(k->fs, e->page)->owner != e->parent ||
		    arf_meta_page_ptr(k->fs, e->page)->u.slot[e->slot] != idx)
			report(k, "bad-entry", "entry %u '%s': its listing slot does not point back", idx,
			       name);
	}
}

static void check_links(struct ck *k)
{
	for (uint64_t ino = 1; ino <= k->sb->n_inodes; ino++) {
		if (!k->live[ino])
			continue;
		const struct arf_meta_inode *in = arf_meta_inode_ptr(k->fs, ino);
		if (S_ISDIR(in->mode)) {
			k->r->dirs++;
			uint32_t want = 2 + k->subdirs[ino];
			if (in->nlink != want)
				report(k, "link-count", "directory %llu: nlink %u, expected %u",
				       (unsigned long long)ino, in->nlink, want);
			if (ino != ARF_ROOT_INO && k->refs[ino] > 1)
				report(k, "link-count", "directory %llu has %u names",
				       (unsigned long long)ino, k->refs[ino]);
		} else {
			k->r->files++;
			if (in->nlink != k->refs[ino])
				report(k, "link-count", "inode %llu: nlink %u, %u names point to it",
				       (unsigned long long)ino, in->nlink, k->refs[ino]);
		}
		if (ino != ARF_ROOT_INO && k->refs[ino] == 0)
			report(k, "orphan-inode", "inode %llu (mode %o) has no name",
			       (unsigned long long)ino, in->mode);
	}
}

static void use_page(struct ck *k, uint32_t p, uint32_t kind, const struct arf_meta_inode *in)
{
	if (p >= k->sb->n_pages) {
		report(k, "bad-page", "inode %llu references page %u past the end",
		       (unsigned long long)in->ino, p);
		return;
	}
	const struct arf_meta_page *pg = arf_meta_page_ptr(k->fs, p);
	if (arf_meta_obj_validate(pg, sizeof(*pg))) {
		report(k, "torn-object", "page %u: version or checksum wrong", p);
		return;
	}
	if (pg->kind != kind || pg->owner != in->ino || pg->owner_gen != in->gen)
		report(k, "bad-page", "page %u (kind %u, owner %llu) is referenced by inode %llu", p,
		       pg->kind, (unsigned long long)pg->owner, (unsigned long long)in->ino);
	if (k->page_used[p])
		report(k, "bad-page", "page %u is referenced twice", p);
	k->page_used[p] = 1;
}

static int check_data(struct ck *k)
{
	for (uint64_t ino = 1; ino <= k->sb->n_inodes; ino++) {
		if (!k->live[ino])
			continue;
		const struct arf_meta_inode *in = arf_meta_inode_ptr(k->fs, ino);
		if (S_ISDIR(in->mode)) {
			uint32_t p = in->dir_first, n = 0;
			while (p != ARF_META_NONE && n <= k->sb->n_pages) {
				use_page(k, p, ARF_META_PAGE_DIR, in);
				if (p >= k->sb->n_pages)
					break;
				p = arf_meta_page_ptr(k->fs, p)->next;
				n++;
			}
			continue;
		}
		if (in->flags & ARF_META_INO_EXTPAGES)
			for (int i = 0; i < ARF_META_EXT_PAGES; i++)
				if (in->u.xp.page[i] != ARF_META_NONE)
					use_page(k, in->u.xp.page[i], ARF_META_PAGE_EXT, in);
		struct arf_meta_extent *ext;
		uint32_t n;
		if (arf_meta_ext_load(k->fs, in, &ext, &n))
			return -ENOMEM;
		uint64_t mapped = 0;
		for (uint32_t i = 0; i < n; i++) {
			for (uint32_t j = 0; j < ext[i].len; j++) {
				uint64_t pblk = (uint64_t)ext[i].pblk + j, fblk = ext[i].fblk + j;
				if (pblk >= k->sb->n_blocks) {
					report(k, "block-tag", "inode %llu maps block %llu past the end",
					       (unsigned long long)ino, (unsigned long long)pblk);
					continue;
				}
				mapped++;
				if (k->blk_owner[pblk]) {
					report(k, "double-block", "block %llu is mapped by inode %llu and %llu",
					       (unsigned long long)pblk, (unsigned long long)k->blk_owner[pblk],
					       (unsigned long long)ino);
					continue;
				}
				k->blk_owner[pblk] = ino;
				const struct arf_meta_tag *t = arf_meta_tag_ptr(k->fs, (uint32_t)pblk);
				if (arf_meta_obj_validate(t, sizeof(*t))) {
					report(k, "torn-object", "tag of block %llu: version or checksum wrong",
					       (unsigned long long)pblk);
					continue;
				}
				if (t->ino != ino || t->gen != in->gen || t->fblk != fblk)
					report(k, "block-tag",
					       "block %llu (inode %llu block %llu) is tagged inode %llu gen %u "
					       "block %llu", (unsigned long long)pblk, (unsigned long long)ino,
					       (unsigned long long)fblk, (unsigned long long)t->ino, t->gen,
					       (unsigned long long)t->fblk);
				else if (t->data_csum !=
					 arf_meta_block_csum(arf_meta_block_ptr(k->fs, (uint32_t)pblk)))
					report(k, "block-csum", "block %llu (inode %llu block %llu): bytes "
					       "do not match the tag's checksum", (unsigned long long)pblk,
					       (unsigned long long)ino, (unsigned long long)fblk);
			}
		}
		free(ext);
		if (mapped != in->blocks)
			report(k, "block-count", "inode %llu: %llu blocks recorded, %llu mapped",
			       (unsigned long long)ino, (unsigned long long)in->blocks,
			       (unsigned long long)mapped);
		k->r->blocks += mapped;
	}
	for (uint32_t b = 0; b < k->sb->n_blocks; b++) {
		const struct arf_meta_tag *t = arf_meta_tag_ptr(k->fs, b);
		if (!k->blk_owner[b] && !arf_meta_obj_validate(t, sizeof(*t)) && t->ino)
			report(k, "leaked-block", "block %u is tagged in use by inode %llu but unmapped",
			       b, (unsigned long long)t->ino);
	}
	for (uint32_t p = 0; p < k->sb->n_pages; p++) {
		const struct arf_meta_page *pg = arf_meta_page_ptr(k->fs, p);
		if (!k->page_used[p] && pg->kind != ARF_META_PAGE_FREE)
			report(k, "leaked-page", "page %u (kind %u, owner %llu) is referenced by nothing",
			       p, pg->kind, (unsigned long long)pg->owner);
	}
	return 0;
}

/* The server's bitmaps (rebuilt at attach, kept since) against the regions. */
static void check_maps(struct ck *k)
{
	const struct arf_meta_super *sb = k->sb;
	uint64_t bad = 0;

	if (!k->fs->ino_map || !k->fs->blk_map || !k->fs->page_map)
		return;
	for (uint64_t ino = 1; ino <= sb->n_inodes; ino++)
		if (bit(k->fs->ino_map, ino - 1) != k->live[ino] && bad++ < 5)
			report(k, "free-map", "inode %llu is %s in the map but %s in the region",
			       (unsigned long long)ino, k->live[ino] ? "free" : "used",
			       k->live[ino] ? "live" : "free");
	for (uint32_t b = 0; b < sb->n_blocks; b++)
		if (bit(k->fs->blk_map, b) != (k->blk_owner[b] != 0) && bad++ < 10)
			report(k, "free-map", "block %u is %s in the map but %s", b,
			       k->blk_owner[b] ? "free" : "used", k->blk_owner[b] ? "mapped" : "unmapped");
	for (uint32_t p = 0; p < sb->n_pages; p++)
		if (bit(k->fs->page_map, p) != k->page_used[p] && bad++ < 15)
			report(k, "free-map", "page %u is %s in the map but %s", p,
			       k->page_used[p] ? "free" : "used",
			       k->page_used[p] ? "referenced" : "unreferenced");
	if (bad > 15)
		report(k, "free-map", "%llu more map differences", (unsigned long long)(bad - 15));
}

int arf_meta_fsck(struct arf_meta_fs *fs, struct arf_meta_fsck *r)
{
	struct ck k = { .fs = fs, .r = r, .sb = fs->sb };
	int rc = -ENOMEM;

	r->problems = r->inodes = r->dirs = r->files = r->entries = r->blocks = 0;
	k.live = calloc(fs->sb->n_inodes + 1u, 1);
	k.refs = calloc(fs->sb->n_inodes + 1u, sizeof(*k.refs));
	k.subdirs = calloc(fs->sb->n_inodes + 1u, sizeof(*k.subdirs));
	k.blk_owner = calloc(fs->sb->n_blocks ? fs->sb->n_blocks : 1, sizeof(*k.blk_owner));
	k.page_used = calloc(fs->sb->n_pages ? fs->sb->n_pages : 1, 1);
	if (!k.live || !k.refs || !k.subdirs || !k.blk_owner || !k.page_used)
		goto out;
	if (arf_meta_obj_validate(fs->sb, sizeof(*fs->sb)))
		report(&k, "torn-object", "superblock: version or checksum wrong");
	check_inodes(&k);
	if (!k.live[ARF_ROOT_INO])
		report(&k, "bad-inode", "the root directory (inode 1) is not live");
	check_entries(&k);
	check_links(&k);
	if ((rc = check_data(&k)))
		goto out;
	check_maps(&k);
	rc = 0;
out:
	free(k.live);
	free(k.refs);
	free(k.subdirs);
	free(k.blk_owner);
	free(k.page_used);
	return rc ? rc : (int)(r->problems > 0x7fffffff ? 0x7fffffff : r->problems);
}
