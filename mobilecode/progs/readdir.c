/* SPDX-License-Identifier: MIT */
/*
 * Batched readdir with attributes: up to max entries of a directory after
 * a cookie, each with its child's attributes, in one execution.  Walks the
 * listing pages and reads each entry and inode consistently.  Context:
 * struct arf_prog_readdir_arg; output: records (struct arf_prog_dirent,
 * struct arf_prog_attr when has_attr, the name padded to 8 bytes).
 * r0 = 1 at the end of the directory, 0 when there is more, < 0 on error.
 */
#include "prog.h"

#define PAGE ((struct arf_meta_page *)(ARF_PROG_SCRATCH + 512))
#define ENT  ((struct arf_meta_dirent *)(ARF_PROG_SCRATCH + 512 + 4096))
#define INO  ((struct arf_meta_inode *)(ARF_PROG_SCRATCH + 1024 + 4096))

static __attribute__((noinline)) long emit_entry(const struct arf_meta_dirent *e, uint32_t flags)
{
	struct arf_prog_dirent d;
	struct arf_prog_attr attr;
	struct arf_meta_inode *in = INO;

	d.ino = e->child;
	d.cookie = e->cookie;
	d.gen = e->child_gen;
	d.type = e->type;
	d.namelen = e->namelen;
	d.has_attr = 0;
	d.has_link = 0;
	if ((flags & ARF_PROG_RD_ATTRS) && e->child && e->child <= SB->n_inodes &&
	    arf_obj_read(in, sizeof(*in), prog_inode_addr(e->child)) == 0 &&
	    in->ino == e->child && in->gen == e->child_gen) {
		prog_attr(in, &attr);
		d.has_attr = 1;
	}
	arf_emit(&d, sizeof(d));
	if (d.has_attr)
		arf_emit(&attr, sizeof(attr));
	arf_emit(e->name, ((uint64_t)e->namelen + 7) & ~(uint64_t)7);
	return 0;
}

long arf_prog_readdir(struct arf_prog_readdir_arg *a, uint64_t len)
{
	struct arf_meta_inode *dir = (struct arf_meta_inode *)ARF_PROG_SCRATCH;
	struct arf_meta_page *pg = PAGE;
	struct arf_meta_dirent *e = ENT;
	uint64_t want_ord, ino;
	uint32_t slot, pidx, got = 0, max, flags;
	long rc;

	if (len < sizeof(*a))
		return -EINVAL_;
	ino = a->dir;
	max = a->max;
	flags = a->flags;
	if (ino == 0 || ino > SB->n_inodes)
		return -ESTALE_;
	rc = arf_obj_read(dir, sizeof(*dir), prog_inode_addr(ino));
	if (rc)
		return rc;
	if (dir->ino != ino || dir->gen != a->dgen)
		return -ESTALE_;
	if ((dir->mode & S_IFMT_) != S_IFDIR_)
		return -ENOTDIR_;
	want_ord = a->cookie / ARF_META_DIR_SLOTS;
	slot = (uint32_t)(a->cookie % ARF_META_DIR_SLOTS);
	pidx = dir->dir_first;
	for (;;) {
		if (pidx == ARF_META_NONE)
			return 1;
		if (pidx >= SB->n_pages)
			return ARF_ECSUM;
		rc = arf_obj_read(pg, sizeof(*pg),
				  ARF_PROG_META + SB->off_pages + (uint64_t)pidx * sizeof(*pg));
		if (rc)
			return rc;
		if (pg->kind != ARF_META_PAGE_DIR || pg->owner != ino || pg->count > ARF_META_DIR_SLOTS)
			return ARF_ETORN; /* the listing changed under us */
		if (pg->ordinal >= want_ord)
			break;
		pidx = pg->next;
	}
	if (pg->ordinal > want_ord)
		slot = 0;
	for (;;) {
		for (uint32_t s = slot; s < pg->count; s++) {
			uint32_t ei = pg->u.slot[s];

			if (ei == ARF_META_NONE)
				continue;
			if (got >= max)
				return 0;
			if (ei >= SB->n_entries)
				return ARF_ECSUM;
			rc = arf_obj_read(e, sizeof(*e), prog_entry_addr(ei));
			if (rc)
				return rc;
			if (e->parent != ino || e->namelen == 0)
				return ARF_ETORN;
			emit_entry(e, flags);
			got++;
		}
		if (pg->next == ARF_META_NONE)
			return 1;
		pidx = pg->next;
		if (pidx >= SB->n_pages)
			return ARF_ECSUM;
		rc = arf_obj_read(pg, sizeof(*pg),
				  ARF_PROG_META + SB->off_pages + (uint64_t)pidx * sizeof(*pg));
		if (rc)
			return rc;
		if (pg->kind != ARF_META_PAGE_DIR || pg->owner != ino || pg->count > ARF_META_DIR_SLOTS)
			return ARF_ETORN;
		slot = 0;
	}
}
