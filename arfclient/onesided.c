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

/*
 * File data.  A read of [off, off+len) takes at most two rounds: the
 * extent pages covering it (none when the extents are inline in the
 * inode), then every extent piece's blocks and their tags together.  The
 * blocks land straight in the caller's buffer wherever a whole block falls
 * inside it (one read per run of contiguous blocks, however long); only a
 * partial first or last block goes to a bounce block.  Each block is then
 * accepted only if its tag, read in the same round, names this inode,
 * generation and file block and its checksum matches the bytes read
 * (arf_meta_tag_check): so a stale map or a torn block is caught in place,
 * and the caller's buffer is zeroed before any failure is returned, so
 * that no other file's bytes are ever left for a caller who ignores the
 * error.
 */
static size_t clip(const struct arf_meta_inode *in, uint64_t off, size_t len)
{
	if (off >= in->size)
		return 0;
	return len > in->size - off ? (size_t)(in->size - off) : len;
}

int arf_os_ext_begin(arf_client *c, const struct arf_meta_inode *in, uint64_t off, size_t len,
		     struct arf_os_ext *x)
{
	memset(x, 0, sizeof(*x));
	len = clip(in, off, len);
	if (!len)
		return 0;
	if (!(in->flags & ARF_META_INO_EXTPAGES)) {
		x->ext = malloc(sizeof(in->u.ext));
		if (!x->ext)
			return -ENOMEM;
		for (int i = 0; i < ARF_META_INLINE_EXTENTS; i++)
			if (in->u.ext[i].len)
				x->ext[x->next++] = in->u.ext[i];
		return 0;
	}
	uint64_t fblk0 = off >> ARF_BLOCK_SHIFT, fblk1 = (off + len - 1) >> ARF_BLOCK_SHIFT;
	/* pages whose range may intersect [fblk0, fblk1] */
	x->pages = malloc(ARF_META_EXT_PAGES * sizeof(*x->pages));
	if (!x->pages)
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
		x->ops[x->np] = (struct arf_net_read_op){ .region = ARF_REGION_META,
							  .len = sizeof(struct arf_meta_page),
							  .off = arf_meta_page_off(&c->sb, in->u.xp.page[i]),
							  .dst = &x->pages[x->np] };
		x->np++;
	}
	return 0;
}

int arf_os_ext_end(const struct arf_meta_inode *in, struct arf_os_ext *x)
{
	int rc;

	if (!x->pages)
		return 0; /* inline, or nothing to read */
	x->ext = malloc((size_t)(x->np ? x->np : 1) * ARF_META_PAGE_EXTS * sizeof(*x->ext));
	if (!x->ext)
		return -ENOMEM;
	for (int i = 0; i < x->np; i++) {
		const struct arf_meta_page *pg = &x->pages[i];
		if ((rc = arf_meta_obj_validate(pg, sizeof(*pg))))
			return rc;
		if (pg->kind != ARF_META_PAGE_EXT || pg->owner != in->ino ||
		    pg->owner_gen != in->gen || pg->count > ARF_META_PAGE_EXTS)
			return ARF_ETAG;
		for (uint32_t k = 0; k < pg->count; k++)
			if (pg->u.ext[k].len)
				x->ext[x->next++] = pg->u.ext[k];
	}
	return 0;
}

void arf_os_ext_free(struct arf_os_ext *x)
{
	free(x->ext);
	free(x->pages);
	x->ext = NULL;
	x->pages = NULL;
}

/* Where block bi of the read lands: in the caller's buffer when the whole
 * block is wanted, else in a bounce block (first: edge, last: edge + 1). */
static uint8_t *block_dst(const struct arf_os_rd *rd, size_t bi)
{
	uint64_t bs = (rd->fblk0 + bi) << ARF_BLOCK_SHIFT;
	if (bs >= rd->off && bs + ARF_BLOCK_SIZE <= rd->off + rd->len)
		return rd->buf + (bs - rd->off);
	return rd->edge + (bi == 0 ? 0 : ARF_BLOCK_SIZE);
}

int arf_os_rd_begin(arf_client *c, const struct arf_meta_inode *in, const struct arf_os_ext *x,
		    uint64_t off, void *buf, size_t len, struct arf_os_rd *rd)
{
	memset(rd, 0, sizeof(*rd));
	rd->ino = in->ino;
	rd->gen = in->gen;
	rd->off = off;
	rd->buf = buf;
	rd->len = clip(in, off, len);
	if (!rd->len)
		return 0;
	uint64_t fblk0 = off >> ARF_BLOCK_SHIFT, fblk1 = (off + rd->len - 1) >> ARF_BLOCK_SHIFT;
	rd->fblk0 = fblk0;
	rd->nblk = (size_t)(fblk1 - fblk0 + 1);
	if ((off & (ARF_BLOCK_SIZE - 1)) || ((off + rd->len) & (ARF_BLOCK_SIZE - 1)) ||
	    rd->len < ARF_BLOCK_SIZE) {
		rd->edge = malloc(2 * ARF_BLOCK_SIZE);
		if (!rd->edge)
			return -ENOMEM;
	}
	rd->tags = malloc(rd->nblk * sizeof(*rd->tags));
	rd->mapped = calloc(rd->nblk, 1);
	rd->ops = malloc(4 * (x->next + 1) * sizeof(*rd->ops));
	if (!rd->tags || !rd->mapped || !rd->ops)
		return -ENOMEM;
	/* per extent piece: its blocks (a read per run contiguous in memory:
	 * at most a bounce block, the middle, a bounce block) and its tags */
	for (size_t i = 0; i < x->next; i++) {
		uint64_t s = x->ext[i].fblk, e = x->ext[i].fblk + x->ext[i].len; /* [s, e) */
		if (e <= fblk0 || s > fblk1)
			continue;
		uint64_t a = s > fblk0 ? s : fblk0, b = e < fblk1 + 1 ? e : fblk1 + 1;
		uint64_t pblk = x->ext[i].pblk + (a - s);
		uint32_t n = (uint32_t)(b - a);
		if (pblk + n > c->sb.n_blocks)
			return ARF_ETAG;
		size_t bi = (size_t)(a - fblk0);
		for (uint32_t k = 0; k < n;) {
			uint8_t *dst = block_dst(rd, bi + k);
			uint32_t run = 1;
			while (k + run < n && block_dst(rd, bi + k + run) == dst + (size_t)run * ARF_BLOCK_SIZE)
				run++;
			rd->ops[rd->nops++] = (struct arf_net_read_op){
				.region = ARF_REGION_DATA, .len = run * ARF_BLOCK_SIZE,
				.off = arf_meta_block_off((uint32_t)(pblk + k)), .dst = dst };
			k += run;
		}
		rd->ops[rd->nops++] = (struct arf_net_read_op){ .region = ARF_REGION_META,
								.len = n * (uint32_t)sizeof(*rd->tags),
								.off = arf_meta_tag_off(&c->sb, (uint32_t)pblk),
								.dst = rd->tags + bi };
		memset(rd->mapped + bi, 1, n);
	}
	return 0;
}

void arf_os_rd_fail(struct arf_os_rd *rd)
{
	if (rd->buf && rd->len)
		memset(rd->buf, 0, rd->len);
}

ssize_t arf_os_rd_end(struct arf_os_rd *rd)
{
	int rc;

	for (size_t bi = 0; bi < rd->nblk; bi++) {
		uint8_t *blk = block_dst(rd, bi);
		if (!rd->mapped[bi]) {
			memset(blk, 0, ARF_BLOCK_SIZE); /* a hole */
			continue;
		}
		if ((rc = arf_meta_obj_validate(&rd->tags[bi], sizeof(rd->tags[bi]))) ||
		    (rc = arf_meta_tag_check(&rd->tags[bi], rd->ino, rd->gen, rd->fblk0 + bi, blk))) {
			arf_os_rd_fail(rd);
			return rc;
		}
	}
	/* the wanted part of a partial first and last block */
	for (size_t bi = 0; rd->edge && bi < rd->nblk; bi += rd->nblk > 1 ? rd->nblk - 1 : 1) {
		uint64_t bs = (rd->fblk0 + bi) << ARF_BLOCK_SHIFT, be = bs + ARF_BLOCK_SIZE;
		if (bs >= rd->off && be <= rd->off + rd->len)
			continue; /* whole, in place */
		uint8_t *blk = block_dst(rd, bi);
		uint64_t from = bs > rd->off ? bs : rd->off;
		uint64_t to = be < rd->off + rd->len ? be : rd->off + rd->len;
		memcpy(rd->buf + (from - rd->off), blk + (from - bs), (size_t)(to - from));
	}
	return (ssize_t)rd->len;
}

void arf_os_rd_free(struct arf_os_rd *rd)
{
	free(rd->edge);
	free(rd->tags);
	free(rd->mapped);
	free(rd->ops);
	rd->edge = NULL;
	rd->tags = NULL;
	rd->mapped = NULL;
	rd->ops = NULL;
}

ssize_t arf_os_read(arf_client *c, const struct arf_meta_inode *in, uint64_t off, void *buf,
		    size_t len)
{
	struct arf_os_ext x;
	struct arf_os_rd rd;
	ssize_t rc;

	memset(&rd, 0, sizeof(rd));
	if (off >= in->size || len == 0)
		return 0;
	if ((rc = arf_os_ext_begin(c, in, off, len, &x)))
		goto out;
	if (x.np && (rc = arf_cl_read(c, x.ops, (size_t)x.np)))
		goto out;
	if ((rc = arf_os_ext_end(in, &x)))
		goto out;
	if ((rc = arf_os_rd_begin(c, in, &x, off, buf, len, &rd)))
		goto out;
	if (rd.nops && (rc = arf_cl_read(c, rd.ops, rd.nops))) {
		arf_os_rd_fail(&rd);
		goto out;
	}
	rc = arf_os_rd_end(&rd);
out:
	arf_os_ext_free(&x);
	arf_os_rd_free(&rd);
	return rc;
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
