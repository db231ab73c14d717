/* SPDX-License-Identifier: MIT */
/*
 * libarf one-sided readers: copy self-verifying objects out of the server's
 * exported regions and accept them only when arf_meta_obj_validate() says
 * so, retrying a bounded number of times.  Nothing here sends a request;
 * the callers (api.c) decide when to fall back to one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

int arf_os_read_obj(arf_client *c, uint32_t region, uint64_t off, void *dst, uint32_t len)
{
	struct arf_net_read_op op = { .region = region, .len = len, .off = off, .dst = dst };

	for (uint32_t attempt = 0;; attempt++) {
		int rc = arf_cl_read(c, &op, 1);
		if (rc)
			return rc;
		rc = arf_meta_obj_validate(dst, len);
		if (!rc)
			return 0;
		if (attempt >= c->opts.retries)
			return ARF_ERETRY;
		ARF_CTR_ADD(c, retries, 1);
	}
}

int arf_os_inode(arf_client *c, uint64_t ino, uint32_t gen, struct arf_meta_inode *out)
{
	if (ino == 0 || ino > c->sb.n_inodes)
		return -ESTALE;
	int rc = arf_os_read_obj(c, ARF_REGION_META, arf_meta_inode_off(&c->sb, ino), out,
				 sizeof(*out));
	if (rc)
		return rc;
	if (out->ino != ino || out->gen != gen)
		return -ESTALE;
	return 0;
}

int arf_os_lookup(arf_client *c, uint64_t dir, const char *name, size_t len, uint64_t *child,
		  uint32_t *child_gen, uint8_t *type)
{
	struct arf_meta_dirent e;
	uint32_t h = arf_meta_name_hash(dir, name, len);
	uint32_t idx = arf_meta_bucket(&c->sb, h);

	for (uint32_t hops = 0;; hops++) {
		if (hops > c->pol.max_hops)
			return 1; /* the chain is longer than the one-sided limit */
		if (idx >= c->sb.n_entries)
			return ARF_ERETRY; /* a link we cannot trust: let the server answer */
		int rc = arf_os_read_obj(c, ARF_REGION_META, arf_meta_entry_off(&c->sb, idx), &e,
					 sizeof(e));
		if (rc)
			return rc;
		if (e.parent == dir && e.hash == h && e.namelen == len && !memcmp(e.name, name, len)) {
			*child = e.child;
			*child_gen = e.child_gen;
			*type = e.type;
			return 0;
		}
		if (e.next == ARF_META_NONE)
			return -ENOENT;
		idx = e.next;
	}
}

/* Find the extents of a file covering [fblk0, fblk1]; inline ones are in the
 * inode, others in extent pages read in one round.  *ext is malloc'd. */
static int load_extents(arf_client *c, const struct arf_meta_inode *in, uint64_t fblk0,
			uint64_t fblk1, struct arf_meta_extent **ext, size_t *next)
{
	*ext = NULL;
	*next = 0;
	if (!(in->flags & ARF_META_INO_EXTPAGES)) {
		*ext = malloc(sizeof(in->u.ext));
		if (!*ext)
			return -ENOMEM;
		for (int i = 0; i < ARF_META_INLINE_EXTENTS; i++)
			if (in->u.ext[i].len)
				(*ext)[(*next)++] = in->u.ext[i];
		return 0;
	}
	/* pages whose range may intersect [fblk0, fblk1] */
	struct arf_net_read_op ops[ARF_META_EXT_PAGES];
	struct arf_meta_page *pages = malloc(ARF_META_EXT_PAGES * sizeof(*pages));
	int np = 0, rc = 0;
	if (!pages)
		return -ENOMEM;
	for (int i = 0; i < ARF_META_EXT_PAGES; i++) {
		if (in->u.xp.page[i] == ARF_META_NONE || in->u.xp.page[i] >= c->sb.n_pages)
			continue;
		uint64_t start = in->u.xp.first_fblk[i];
		uint64_t next_start = UINT64_MAX;
		for (int j = i + 1; j < ARF_META_EXT_PAGES; j++)
			if (in->u.xp.page[j] != ARF_META_NONE) {
				next_start = in->u.xp.first_fblk[j];
				break;
			}
		if (start > fblk1 || (next_start != UINT64_MAX && next_start <= fblk0))
			continue;
		ops[np] = (struct arf_net_read_op){ .region = ARF_REGION_META,
						    .len = sizeof(struct arf_meta_page),
						    .off = arf_meta_page_off(&c->sb, in->u.xp.page[i]),
						    .dst = &pages[np] };
		np++;
	}
	if (np && (rc = arf_cl_read(c, ops, (size_t)np)))
		goto out;
	*ext = malloc((size_t)(np ? np : 1) * ARF_META_PAGE_EXTS * sizeof(**ext));
	if (!*ext) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < np; i++) {
		if ((rc = arf_meta_obj_validate(&pages[i], sizeof(pages[i]))))
			goto out;
		if (pages[i].kind != ARF_META_PAGE_EXT || pages[i].owner != in->ino ||
		    pages[i].owner_gen != in->gen || pages[i].count > ARF_META_PAGE_EXTS) {
			rc = ARF_ETAG;
			goto out;
		}
		for (uint32_t k = 0; k < pages[i].count; k++)
			if (pages[i].u.ext[k].len)
				(*ext)[(*next)++] = pages[i].u.ext[k];
	}
out:
	free(pages);
	if (rc) {
		free(*ext);
		*ext = NULL;
	}
	return rc;
}

ssize_t arf_os_read(arf_client *c, const struct arf_meta_inode *in, uint64_t off, void *buf,
		    size_t len)
{
	struct arf_meta_extent *ext = NULL;
	size_t next = 0;
	int rc;

	if (off >= in->size || len == 0)
		return 0;
	if (len > in->size - off)
		len = (size_t)(in->size - off);
	uint64_t fblk0 = off >> ARF_BLOCK_SHIFT, fblk1 = (off + len - 1) >> ARF_BLOCK_SHIFT;
	size_t nblk = (size_t)(fblk1 - fblk0 + 1);
	if ((rc = load_extents(c, in, fblk0, fblk1, &ext, &next)))
		return rc;

	uint8_t *blocks = malloc(nblk * ARF_BLOCK_SIZE);
	struct arf_meta_tag *tags = malloc(nblk * sizeof(*tags));
	uint8_t *mapped = calloc(nblk, 1);
	struct arf_net_read_op *ops = malloc(2 * (next + 1) * sizeof(*ops));
	size_t nops = 0;
	if (!blocks || !tags || !mapped || !ops) {
		rc = -ENOMEM;
		goto out;
	}
	/* one data read and one tag read per extent piece, all in one round */
	for (size_t i = 0; i < next; i++) {
		uint64_t s = ext[i].fblk, e = ext[i].fblk + ext[i].len; /* [s, e) */
		if (e <= fblk0 || s > fblk1)
			continue;
		uint64_t a = s > fblk0 ? s : fblk0, b = e < fblk1 + 1 ? e : fblk1 + 1;
		uint64_t pblk = ext[i].pblk + (a - s);
		uint32_t n = (uint32_t)(b - a);
		if (pblk + n > c->sb.n_blocks) {
			rc = ARF_ETAG;
			goto out;
		}
		size_t bi = (size_t)(a - fblk0);
		ops[nops++] = (struct arf_net_read_op){ .region = ARF_REGION_DATA,
							.len = n * ARF_BLOCK_SIZE,
							.off = arf_meta_block_off((uint32_t)pblk),
							.dst = blocks + bi * ARF_BLOCK_SIZE };
		ops[nops++] = (struct arf_net_read_op){ .region = ARF_REGION_META,
							.len = n * (uint32_t)sizeof(*tags),
							.off = arf_meta_tag_off(&c->sb, (uint32_t)pblk),
							.dst = tags + bi };
		memset(mapped + bi, 1, n);
	}
	if (nops && (rc = arf_cl_read(c, ops, nops)))
		goto out;
	for (size_t bi = 0; bi < nblk; bi++) {
		if (!mapped[bi]) {
			memset(blocks + bi * ARF_BLOCK_SIZE, 0, ARF_BLOCK_SIZE); /* a hole */
			continue;
		}
		if ((rc = arf_meta_obj_validate(&tags[bi], sizeof(tags[bi]))))
			goto out;
		rc = arf_meta_tag_check(&tags[bi], in->ino, in->gen, fblk0 + bi,
					blocks + bi * ARF_BLOCK_SIZE);
		if (rc)
			goto out;
	}
	memcpy(buf, blocks + (off & (ARF_BLOCK_SIZE - 1)), len);
	rc = 0;
out:
	free(ext);
	free(blocks);
	free(tags);
	free(mapped);
	free(ops);
	return rc ? rc : (ssize_t)len;
}

/*
 * The listing.  Every byte of it is untrusted: a page may be torn, stale
 * (freed and reused while we walk) or, from a hostile server or a damaged
 * region, anything at all with a valid checksum.  So each page is checked
 * before any of its fields is used (arf_os_dir_page_check), the walk
 * follows strictly increasing ordinals and at most dir_pages + 1 pages (a
 * cycle, or a chain longer than the inode says, ends it), and whatever
 * fails counts as torn: ARF_ERETRY, after which api.c reads the inode
 * again, retries, and then asks the server (READDIR).
 */
int arf_os_dir_page_check(const struct arf_meta_page *pg, const struct arf_meta_inode *dir)
{
	if (pg->kind != ARF_META_PAGE_DIR || pg->owner != dir->ino || pg->owner_gen != dir->gen ||
	    pg->count > ARF_META_DIR_SLOTS)
		return ARF_ERETRY;
	return 0;
}

/* Read page pidx of the listing into pg, validated and checked.  0 or ARF_ERETRY
 * (or a transport error). */
static int listing_page(struct arf_os_src *src, const struct arf_meta_inode *dir,
			uint32_t pidx, struct arf_meta_page *pg)
{
	struct arf_net_read_op op = { .region = ARF_REGION_META, .len = sizeof(*pg),
				      .off = 0, .dst = pg };

	if (pidx >= src->sb->n_pages)
		return ARF_ERETRY; /* a link we cannot trust */
	op.off = arf_meta_page_off(src->sb, pidx);
	for (uint32_t attempt = 0;; attempt++) {
		int rc = src->read(src->ctx, &op, 1);
		if (rc)
			return rc;
		if (!arf_meta_obj_validate(pg, sizeof(*pg)))
			return arf_os_dir_page_check(pg, dir);
		if (attempt >= src->retries)
			return ARF_ERETRY;
		src->retried++;
	}
}

int arf_os_listing(struct arf_os_src *src, const struct arf_meta_inode *dir, uint64_t cookie,
		   struct arf_dirent *ents, size_t max, size_t *n, int *eof)
{
	struct arf_meta_page *pg = malloc(sizeof(*pg));
	struct arf_meta_dirent *des = NULL;
	struct arf_net_read_op *ops = NULL;
	uint64_t want_ord = cookie / ARF_META_DIR_SLOTS;
	uint32_t slot = (uint32_t)(cookie % ARF_META_DIR_SLOTS);
	uint32_t pidx = dir->dir_first;
	/* pages the walk may visit: the inode's count, one more appended since */
	uint64_t hops_left = (uint64_t)dir->dir_pages + 1, last_ord = 0;
	int rc = 0, first = 1;

	*n = 0;
	*eof = 0;
	if (!pg)
		return -ENOMEM;
	/* walk the listing pages to the one holding the cookie's position */
	for (;;) {
		if (pidx == ARF_META_NONE) {
			*eof = 1;
			goto out;
		}
		if (!hops_left--) {
			rc = ARF_ERETRY; /* longer than the inode says, or a cycle */
			goto out;
		}
		if ((rc = listing_page(src, dir, pidx, pg)))
			goto out;
		if (!first && pg->ordinal <= last_ord) {
			rc = ARF_ERETRY; /* ordinals only grow along the chain */
			goto out;
		}
		first = 0;
		last_ord = pg->ordinal;
		if (pg->ordinal >= want_ord)
			break;
		pidx = pg->next;
	}
	if (pg->ordinal > want_ord)
		slot = 0;
	des = malloc(max * sizeof(*des));
	ops = malloc(max * sizeof(*ops));
	if (!des || !ops) {
		rc = -ENOMEM;
		goto out;
	}
	while (*n < max) {
		size_t k = 0;
		for (uint32_t s = slot; s < pg->count && *n + k < max; s++) {
			uint32_t ei = pg->u.slot[s];
			if (ei == ARF_META_NONE)
				continue;
			if (ei >= src->sb->n_entries) {
				rc = ARF_ERETRY;
				goto out;
			}
			ops[k] = (struct arf_net_read_op){ .region = ARF_REGION_META,
							   .len = sizeof(*des),
							   .off = arf_meta_entry_off(src->sb, ei),
							   .dst = &des[k] };
			k++;
			slot = s + 1;
		}
		if (k && (rc = src->read(src->ctx, ops, k)))
			goto out;
		for (size_t i = 0; i < k; i++) {
			struct arf_meta_dirent *e = &des[i];
			if (arf_meta_obj_validate(e, sizeof(*e)) || e->parent != dir->ino ||
			    e->namelen == 0) {
				src->retried++;
				rc = ARF_ERETRY;
				goto out;
			}
			struct arf_dirent *d = &ents[(*n)++];
			d->ino = e->child;
			d->gen = e->child_gen;
			d->type = e->type;
			d->cookie = e->cookie;
			memcpy(d->name, e->name, e->namelen);
			d->name[e->namelen] = 0;
		}
		if (*n >= max)
			break;
		/* this page is exhausted: on to the next */
		if (pg->next == ARF_META_NONE) {
			*eof = 1;
			break;
		}
		pidx = pg->next;
		if (!hops_left--) {
			rc = ARF_ERETRY;
			goto out;
		}
		if ((rc = listing_page(src, dir, pidx, pg)))
			goto out;
		if (pg->ordinal <= last_ord) {
			rc = ARF_ERETRY;
			goto out;
		}
		last_ord = pg->ordinal;
		slot = 0;
	}
	/* exactly at the end of the last page counts as eof too */
	if (!*eof && slot >= pg->count && pg->next == ARF_META_NONE)
		*eof = 1;
out:
	free(pg);
	free(des);
	free(ops);
	return rc;
}

static int read_round(void *ctx, struct arf_net_read_op *ops, size_t n)
{
	return arf_cl_read(ctx, ops, n);
}

int arf_os_readdir(arf_client *c, const struct arf_meta_inode *dir, uint64_t cookie,
		   struct arf_dirent *ents, size_t max, size_t *n, int *eof)
{
	struct arf_os_src src = { .read = read_round, .ctx = c, .sb = &c->sb,
				  .retries = c->opts.retries };
	int rc = arf_os_listing(&src, dir, cookie, ents, max, n, eof);

	if (src.retried)
		ARF_CTR_ADD(c, retries, src.retried);
	return rc;
}
