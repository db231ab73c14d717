/* SPDX-License-Identifier: MIT */
/*
 * meta/ directories: the global hash table of (parent, name) entries and the
 * per-directory listing pages that give readdir a stable order and cookie.
 *
 * Hash table: slot arf_meta_bucket(hash) is a chain's head; more entries of
 * the chain are overflow slots linked through next, newest right after the
 * head.  An empty head (parent == 0) keeps its next, so a chain never loses
 * its tail when the head's own entry goes away.  Links always point at
 * overflow slots: a link outside [n_buckets, n_entries) ends a chain.
 *
 * Listing: each directory owns a chain of ARF_META_PAGE_DIR pages with
 * increasing ordinals.  An entry is appended at the last page's next slot
 * and remembers (page, slot), so removing it is O(1): its slot becomes
 * ARF_META_NONE.  A page whose every slot was used and then removed is
 * unlinked and freed (the last page excepted), so a directory that churns
 * does not leak pages; ordinals never change, so cookies stay valid.
 */
#include <errno.h>
#include <string.h>

#include "meta_int.h"

#define SLOTS ARF_META_DIR_SLOTS

static int name_is(const struct arf_meta_dirent *e, uint64_t parent, uint32_t h,
		   const char *name, size_t len)
{
	return e->parent == parent && e->hash == h && e->namelen == len &&
	       !memcmp(e->name, name, len);
}

int arf_meta_dir_find(struct arf_meta_fs *fs, uint64_t parent, const char *name, size_t len,
		      uint32_t *idx)
{
	const struct arf_meta_super *sb = fs->sb;
	uint32_t h = arf_meta_name_hash(parent, name, len);
	uint32_t i = arf_meta_bucket(sb, h);

	if (parent == 0 || len == 0 || len > ARF_NAME_MAX)
		return -ENOENT;
	for (uint32_t hops = 0; hops < sb->n_entries; hops++) {
		const struct arf_meta_dirent *e = arf_meta_entry_ptr(fs, i);
		if (name_is(e, parent, h, name, len)) {
			*idx = i;
			return 0;
		}
		if (!meta_link_ok(sb, e->next))
			break;
		i = e->next;
	}
	return -ENOENT;
}

/* True if the listing page has no slot left to append to. */
static int page_full(struct arf_meta_fs *fs, uint32_t p)
{
	return arf_meta_page_ptr(fs, p)->count >= SLOTS;
}

int arf_meta_dir_reserve(struct arf_meta_fs *fs, const struct arf_meta_inode *dir,
			 const char *name, size_t len, struct arf_meta_dir_res *res)
{
	const struct arf_meta_super *sb = fs->sb;
	int rc;

	res->hash = arf_meta_name_hash(dir->ino, name, len);
	res->head = arf_meta_bucket(sb, res->hash);
	res->ent = ARF_META_NONE;
	res->page = ARF_META_NONE;
	if (arf_meta_entry_ptr(fs, res->head)->parent != 0 &&
	    (rc = arf_meta_entry_alloc(fs, &res->ent)))
		return rc;
	if (dir->dir_last >= sb->n_pages || page_full(fs, dir->dir_last)) {
		if ((rc = arf_meta_page_alloc(fs, &res->page))) {
			arf_meta_dir_unreserve(fs, res);
			return rc;
		}
	}
	return 0;
}

void arf_meta_dir_unreserve(struct arf_meta_fs *fs, struct arf_meta_dir_res *res)
{
	if (res->ent != ARF_META_NONE)
		arf_meta_entry_unreserve(fs, res->ent);
	if (res->page != ARF_META_NONE)
		arf_meta_page_unreserve(fs, res->page);
	res->ent = res->page = ARF_META_NONE;
}

/* True if no slot of the page holds an entry any more. */
static int page_dead(const struct arf_meta_page *pg)
{
	if (pg->count < SLOTS)
		return 0;
	for (uint32_t s = 0; s < pg->count; s++)
		if (pg->u.slot[s] != ARF_META_NONE)
			return 0;
	return 1;
}

/* Unlink listing page p (not the last one) from directory d (touched) and free it. */
static void page_reclaim(struct arf_meta_fs *fs, struct arf_meta_inode *d, uint32_t p)
{
	uint32_t next = arf_meta_page_ptr(fs, p)->next;

	if (d->dir_first == p) {
		d->dir_first = next;
	} else {
		uint32_t q = d->dir_first;
		for (uint32_t hops = 0; q < fs->sb->n_pages && hops < fs->sb->n_pages; hops++) {
			const struct arf_meta_page *pq = arf_meta_page_ptr(fs, q);
			if (pq->next == p) {
				arf_meta_page_touch(fs, q)->next = next;
				break;
			}
			q = pq->next;
		}
	}
	d->dir_pages--;
	arf_meta_page_free(fs, p);
}

uint32_t arf_meta_dir_insert(struct arf_meta_fs *fs, struct arf_meta_dir_res *res,
			     uint64_t parent, const char *name, size_t len, uint64_t child,
			     uint32_t child_gen, uint8_t type)
{
	const struct arf_meta_super *sb = fs->sb;
	struct arf_meta_inode *d = arf_meta_inode_touch(fs, parent);
	struct arf_meta_page *pg;
	struct arf_meta_dirent *e;
	uint32_t p, idx, slot;

	/* the listing position */
	if (res->page != ARF_META_NONE) {
		uint32_t old = d->dir_last < sb->n_pages ? d->dir_last : ARF_META_NONE;
		p = res->page;
		pg = arf_meta_page_touch(fs, p);
		memset((uint8_t *)pg + sizeof(pg->h), 0, sizeof(*pg) - sizeof(pg->h));
		pg->kind = ARF_META_PAGE_DIR;
		pg->owner = parent;
		pg->owner_gen = d->gen;
		pg->next = ARF_META_NONE;
		if (old != ARF_META_NONE) {
			struct arf_meta_page *op = arf_meta_page_touch(fs, old);
			pg->ordinal = op->ordinal + 1;
			op->next = p;
		} else {
			d->dir_first = p;
		}
		d->dir_last = p;
		d->dir_pages++;
		if (old != ARF_META_NONE && page_dead(arf_meta_page_ptr(fs, old)))
			page_reclaim(fs, d, old);
	} else {
		p = d->dir_last;
		pg = arf_meta_page_touch(fs, p);
	}
	slot = pg->count++;

	/* the hash chain */
	if (res->ent == ARF_META_NONE) {
		idx = res->head;
		e = arf_meta_entry_touch(fs, idx);
		uint32_t next = meta_link_ok(sb, e->next) ? e->next : ARF_META_NONE;
		memset((uint8_t *)e + sizeof(e->h), 0, sizeof(*e) - sizeof(e->h));
		e->next = next;
	} else {
		struct arf_meta_dirent *head = arf_meta_entry_touch(fs, res->head);
		idx = res->ent;
		e = arf_meta_entry_touch(fs, idx);
		memset((uint8_t *)e + sizeof(e->h), 0, sizeof(*e) - sizeof(e->h));
		e->next = meta_link_ok(sb, head->next) ? head->next : ARF_META_NONE;
		head->next = idx;
	}
	e->parent = parent;
	e->child = child;
	e->child_gen = child_gen;
	e->hash = res->hash;
	e->page = p;
	e->slot = (uint16_t)slot;
	e->type = type;
	e->namelen = (uint8_t)len;
	e->cookie = (uint64_t)pg->ordinal * SLOTS + slot + 1;
	memcpy(e->name, name, len);
	pg->u.slot[slot] = idx;
	res->ent = res->page = ARF_META_NONE;
	return idx;
}

void arf_meta_dir_remove(struct arf_meta_fs *fs, uint32_t idx)
{
	const struct arf_meta_super *sb = fs->sb;
	const struct arf_meta_dirent *e = arf_meta_entry_ptr(fs, idx);
	uint64_t parent = e->parent;
	uint32_t p = e->page, slot = e->slot, next = e->next;

	if (parent == 0)
		return;
	/* the listing */
	if (p < sb->n_pages && slot < SLOTS) {
		struct arf_meta_inode *d = arf_meta_inode_touch(fs, parent);
		struct arf_meta_page *pg = arf_meta_page_touch(fs, p);
		if (pg->u.slot[slot] == idx)
			pg->u.slot[slot] = ARF_META_NONE;
		if (p != d->dir_last && page_dead(pg))
			page_reclaim(fs, d, p);
	}
	/* the hash chain */
	if (idx < sb->n_buckets) {
		struct arf_meta_dirent *h = arf_meta_entry_touch(fs, idx);
		memset((uint8_t *)h + sizeof(h->h), 0, sizeof(*h) - sizeof(h->h));
		h->next = meta_link_ok(sb, next) ? next : ARF_META_NONE;
		return;
	}
	uint32_t q = arf_meta_bucket(sb, e->hash);
	for (uint32_t hops = 0; hops < sb->n_entries; hops++) {
		const struct arf_meta_dirent *qe = arf_meta_entry_ptr(fs, q);
		if (qe->next == idx) {
			arf_meta_entry_touch(fs, q)->next =
				meta_link_ok(sb, next) ? next : ARF_META_NONE;
			break;
		}
		if (!meta_link_ok(sb, qe->next))
			break;
		q = qe->next;
	}
	arf_meta_entry_free(fs, idx);
}

void arf_meta_dir_retarget(struct arf_meta_fs *fs, uint32_t idx, uint64_t child,
			   uint32_t child_gen, uint8_t type)
{
	struct arf_meta_dirent *e = arf_meta_entry_touch(fs, idx);

	e->child = child;
	e->child_gen = child_gen;
	e->type = type;
}

void arf_meta_dir_free_pages(struct arf_meta_fs *fs, uint64_t dir)
{
	struct arf_meta_inode *d = arf_meta_inode_touch(fs, dir);
	uint32_t p = d->dir_first;

	for (uint32_t hops = 0; p < fs->sb->n_pages && hops < fs->sb->n_pages; hops++) {
		uint32_t next = arf_meta_page_ptr(fs, p)->next;
		arf_meta_page_free(fs, p);
		p = next;
	}
	d->dir_first = d->dir_last = ARF_META_NONE;
	d->dir_pages = 0;
}

void arf_meta_dir_seek(struct arf_meta_fs *fs, const struct arf_meta_inode *dir, uint64_t cookie,
		       struct arf_meta_dir_iter *it)
{
	uint64_t ord = cookie / SLOTS;
	uint32_t slot = (uint32_t)(cookie % SLOTS), p = dir->dir_first;

	for (uint32_t hops = 0; p < fs->sb->n_pages && hops < fs->sb->n_pages; hops++) {
		const struct arf_meta_page *pg = arf_meta_page_ptr(fs, p);
		if (pg->ordinal >= ord) {
			if (pg->ordinal > ord)
				slot = 0;
			break;
		}
		p = pg->next;
	}
	it->page = p < fs->sb->n_pages ? p : ARF_META_NONE;
	it->slot = slot;
}

int arf_meta_dir_next(struct arf_meta_fs *fs, struct arf_meta_dir_iter *it, uint32_t *idx)
{
	while (it->page < fs->sb->n_pages) {
		const struct arf_meta_page *pg = arf_meta_page_ptr(fs, it->page);
		uint32_t count = pg->count < SLOTS ? pg->count : SLOTS;
		while (it->slot < count) {
			uint32_t s = pg->u.slot[it->slot++];
			if (s != ARF_META_NONE && s < fs->sb->n_entries) {
				*idx = s;
				return 1;
			}
		}
		it->page = pg->next < fs->sb->n_pages ? pg->next : ARF_META_NONE;
		it->slot = 0;
	}
	return 0;
}
