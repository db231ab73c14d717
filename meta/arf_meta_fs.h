/* SPDX-License-Identifier: MIT */
/*
 * meta/ server side: the live filesystem state behind the exported regions.
 *
 * arfd owns one struct arf_meta_fs per export.  It holds pointers to the
 * region memory, the in-server allocators (rebuilt by scanning the regions at
 * attach time, never exported) and the current transaction: the list of
 * objects a mutation changed, which arfd persists to RocksDB and then seals.
 *
 * Locking: the caller (arfd) serialises all calls on one fs with its own
 * lock; nothing here locks.  One-sided readers never take that lock: they
 * rely on the version/checksum protocol of arf_meta.h.
 *
 * Sealing: with fs->defer_seal == 0 every touched object is sealed at
 * arf_meta_txn_end().  With defer_seal != 0 (sync exports) touched objects
 * stay odd (invisible to one-sided readers) until the caller has made the
 * transaction durable and calls arf_meta_obj_seal() on them.
 */
#ifndef ARF_META_FS_H
#define ARF_META_FS_H

#include "arf_meta.h"

/* One object changed by a transaction. */
struct arf_meta_dirty {
	uint8_t  region; /* ARF_REGION_META or ARF_REGION_DATA */
	uint32_t len;    /* object size (a data block: ARF_BLOCK_SIZE) */
	uint64_t off;    /* offset in the region */
};

struct arf_meta_fs {
	uint8_t *meta;           /* META region base */
	uint64_t meta_size;
	uint8_t *data;           /* DATA region base */
	uint64_t data_size;
	struct arf_meta_super *sb; /* == (void *)meta */
	int defer_seal;          /* see above */

	/* allocators: server memory only */
	uint64_t *ino_map;       /* bitmap, 1 = in use; bit i = slot i (ino i+1) */
	uint64_t *ent_map;       /* bitmap over overflow entry slots [n_buckets, n_entries) */
	uint64_t *page_map;      /* bitmap over pages */
	uint64_t *blk_map;       /* bitmap over data blocks */
	uint32_t free_inodes, free_entries, free_pages, free_blocks;
	uint32_t ino_hint, ent_hint, page_hint, blk_hint; /* next-fit cursors */

	/* current transaction */
	int in_txn;
	int txn_err;             /* 0, or -ENOMEM: a touch could not be recorded */
	struct arf_meta_dirty *dirty;
	size_t ndirty, dirty_cap;
	uint64_t *dirty_set;     /* open-addressing set of (region<<63|off) to dedupe */
	size_t dirty_set_cap;
};

/* Format an empty filesystem into zeroed regions: superblock (geometry from
 * `geo`, see arf_meta_super_layout) and the root directory (mode 0755 | S_IFDIR,
 * owner uid/gid).  Runs as one transaction: the objects written are in
 * fs->dirty afterwards (sealed), for the caller to persist.
 * Returns 0, -EINVAL (regions too small for the geometry) or -ENOMEM. */
int arf_meta_fs_format(struct arf_meta_fs *fs, void *meta, uint64_t meta_size,
		       void *data, uint64_t data_size, const struct arf_meta_super *geo,
		       uint32_t uid, uint32_t gid);

/* Attach to regions that already hold a filesystem (loaded from RocksDB):
 * checks the superblock and rebuilds the allocators by scanning.
 * Returns 0, ARF_EVERSION or -EINVAL (message in errbuf), or -ENOMEM. */
int arf_meta_fs_attach(struct arf_meta_fs *fs, void *meta, uint64_t meta_size,
		       void *data, uint64_t data_size, char *errbuf, size_t errlen);

/* Free the allocators and the transaction buffers (not the regions).  NULL ok. */
void arf_meta_fs_detach(struct arf_meta_fs *fs);

/* Transactions: every object changed between begin and end is recorded. */
void arf_meta_txn_begin(struct arf_meta_fs *fs);
/* Mark the object at (region, off, len) as about to change: makes its version
 * odd and records it (once) in the transaction.  Returns the live object. */
void *arf_meta_touch(struct arf_meta_fs *fs, int region, uint64_t off, uint32_t len);
/* End the transaction: seals every touched object unless fs->defer_seal or
 * the transaction is broken (arf_meta_txn_error).  *list points into fs
 * (valid until the next txn_begin).  Returns the count. */
size_t arf_meta_txn_end(struct arf_meta_fs *fs, const struct arf_meta_dirty **list);
/* After txn_end: 0, or -ENOMEM when a touch could not be recorded -- the
 * regions hold a change that the list lacks (its object is left odd and
 * nothing of the transaction is sealed); the embedder must not serve on as
 * if the list were the whole change.  Reset by txn_begin. */
int arf_meta_txn_error(const struct arf_meta_fs *fs);

/* Live (server-side, unvalidated) pointers.  Read-only use unless touched. */
struct arf_meta_inode *arf_meta_inode_ptr(struct arf_meta_fs *fs, uint64_t ino);
struct arf_meta_dirent *arf_meta_entry_ptr(struct arf_meta_fs *fs, uint32_t idx);
struct arf_meta_page *arf_meta_page_ptr(struct arf_meta_fs *fs, uint32_t idx);
struct arf_meta_tag *arf_meta_tag_ptr(struct arf_meta_fs *fs, uint32_t pblk);
uint8_t *arf_meta_block_ptr(struct arf_meta_fs *fs, uint32_t pblk);

/* Touching accessors: arf_meta_touch() for the object, typed. */
struct arf_meta_inode *arf_meta_inode_touch(struct arf_meta_fs *fs, uint64_t ino);
struct arf_meta_dirent *arf_meta_entry_touch(struct arf_meta_fs *fs, uint32_t idx);
struct arf_meta_page *arf_meta_page_touch(struct arf_meta_fs *fs, uint32_t idx);
struct arf_meta_tag *arf_meta_tag_touch(struct arf_meta_fs *fs, uint32_t pblk);
uint8_t *arf_meta_block_touch(struct arf_meta_fs *fs, uint32_t pblk);

/* Allocators.  Each returns 0 or -ENOSPC.  Allocation only reserves the
 * slot in the server's map; the caller initialises (touches) the object. */
int arf_meta_inode_alloc(struct arf_meta_fs *fs, uint64_t *ino);
void arf_meta_inode_free(struct arf_meta_fs *fs, uint64_t ino);
int arf_meta_entry_alloc(struct arf_meta_fs *fs, uint32_t *idx);   /* overflow slots */
void arf_meta_entry_free(struct arf_meta_fs *fs, uint32_t idx);
int arf_meta_page_alloc(struct arf_meta_fs *fs, uint32_t *idx);
void arf_meta_page_free(struct arf_meta_fs *fs, uint32_t idx);
/* Allocate up to `want` contiguous blocks, preferably starting at `goal`;
 * *got >= 1 on success. */
int arf_meta_blocks_alloc(struct arf_meta_fs *fs, uint32_t goal, uint32_t want,
			  uint32_t *pblk, uint32_t *got);
void arf_meta_blocks_free(struct arf_meta_fs *fs, uint32_t pblk, uint32_t n);

/* ---- additions by the meta/ implementation ---- */

/* Freeing (the *_free above) touches the object and zeroes it in the current
 * transaction, then releases the slot.  Two fields survive on purpose: an
 * inode's gen (the next file in the slot gets gen + 1) and an overflow
 * entry's next (a reader holding a stale chain can still walk on).
 * *_unreserve releases a slot that was allocated but never touched: the
 * undo of an allocation when a later precondition fails. */
void arf_meta_inode_unreserve(struct arf_meta_fs *fs, uint64_t ino);
void arf_meta_entry_unreserve(struct arf_meta_fs *fs, uint32_t idx);
void arf_meta_page_unreserve(struct arf_meta_fs *fs, uint32_t idx);
void arf_meta_blocks_unreserve(struct arf_meta_fs *fs, uint32_t pblk, uint32_t n);

/* Make room in the transaction for n more touched objects, so a mutation can
 * fail with -ENOMEM before its first change: every mutation reserves what it
 * will touch before touching anything.  arf_meta_touch() grows the list
 * itself past the reservation; if it cannot, the transaction is broken (see
 * arf_meta_txn_error), never silently short.  0 or -ENOMEM. */
int arf_meta_txn_reserve(struct arf_meta_fs *fs, size_t n);

/* ---- directories: hash chains + listing pages (meta/dir.c) ---- */

/* Resources for one insertion, reserved before the caller's first touch. */
struct arf_meta_dir_res {
	uint32_t hash;  /* arf_meta_name_hash(dir, name) */
	uint32_t head;  /* bucket head slot of the name */
	uint32_t ent;   /* reserved overflow entry; ARF_META_NONE = the head slot is free */
	uint32_t page;  /* reserved listing page; ARF_META_NONE = the last page has room */
};

/* Iterator over a directory's listing (see arf_meta_dir_seek). */
struct arf_meta_dir_iter {
	uint32_t page;  /* current listing page, ARF_META_NONE at the end */
	uint32_t slot;  /* next slot to look at in it */
};

/* Find (parent, name): 0 with *idx = its entry slot, or -ENOENT.  Costs one
 * entry per chain hop. */
int arf_meta_dir_find(struct arf_meta_fs *fs, uint64_t parent, const char *name, size_t len,
		      uint32_t *idx);
/* Reserve what inserting name into dir needs (an overflow entry when the
 * bucket head is taken, a listing page when the last one is full).  Nothing
 * is touched.  0 or -ENOSPC. */
int arf_meta_dir_reserve(struct arf_meta_fs *fs, const struct arf_meta_inode *dir,
			 const char *name, size_t len, struct arf_meta_dir_res *res);
/* Give back an unused reservation. */
void arf_meta_dir_unreserve(struct arf_meta_fs *fs, struct arf_meta_dir_res *res);
/* Insert a new entry (the name must not exist) using the reservation; touches
 * the directory inode (listing fields only: size, nlink and times are the
 * caller's), the entry, the bucket head and the listing page(s).  Returns the
 * entry slot; the reservation is consumed. */
uint32_t arf_meta_dir_insert(struct arf_meta_fs *fs, struct arf_meta_dir_res *res,
			     uint64_t parent, const char *name, size_t len, uint64_t child,
			     uint32_t child_gen, uint8_t type);
/* Remove the entry in slot idx from its chain and its listing (O(1) in the
 * listing, O(chain) to find the predecessor); frees an overflow slot. */
void arf_meta_dir_remove(struct arf_meta_fs *fs, uint32_t idx);
/* Point an existing entry at another inode (rename over a target). */
void arf_meta_dir_retarget(struct arf_meta_fs *fs, uint32_t idx, uint64_t child,
			   uint32_t child_gen, uint8_t type);
/* Free every listing page of a directory (when it is removed). */
void arf_meta_dir_free_pages(struct arf_meta_fs *fs, uint64_t dir);
/* Position an iterator at readdir cookie `cookie` (0 = the start); entry
 * cookies are ordinal * ARF_META_DIR_SLOTS + slot + 1, so resuming at an
 * entry's cookie continues right after it.  Walks the listing pages once. */
void arf_meta_dir_seek(struct arf_meta_fs *fs, const struct arf_meta_inode *dir, uint64_t cookie,
		       struct arf_meta_dir_iter *it);
/* Next live entry: 1 with *idx set, 0 at the end of the listing. */
int arf_meta_dir_next(struct arf_meta_fs *fs, struct arf_meta_dir_iter *it, uint32_t *idx);

/* ---- extent maps (meta/extent.c) ---- */

#define ARF_META_MAX_EXTENTS (ARF_META_EXT_PAGES * ARF_META_PAGE_EXTS) /* 2024 */

/* Copy a file's extents, sorted by fblk, into a malloc'd array (*out, freed
 * by the caller; never NULL on success).  0 or -ENOMEM. */
int arf_meta_ext_load(struct arf_meta_fs *fs, const struct arf_meta_inode *in,
		      struct arf_meta_extent **out, uint32_t *n);
/* Extent pages a map of n extents needs (0 while it fits inline). */
uint32_t arf_meta_ext_pages_needed(uint32_t n);
/* Can the inode's map become n extents?  0, or -ENOSPC (more than
 * ARF_META_MAX_EXTENTS, or not enough free pages).  Touches nothing. */
int arf_meta_ext_fits(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint32_t n);
/* Index of the first extent that ends after fblk (== n if none). */
uint32_t arf_meta_ext_find(const struct arf_meta_extent *ext, uint32_t n, uint64_t fblk);
/* Replace the map of `in` (already touched) by ext[0..n), allocating or
 * freeing extent pages and touching only pages whose bytes change.  Sets
 * nextents.  0, or -ENOSPC if arf_meta_ext_fits() would have said so. */
int arf_meta_ext_store(struct arf_meta_fs *fs, struct arf_meta_inode *in,
		       const struct arf_meta_extent *ext, uint32_t n);
/* Free every data block (clearing its tag) and every extent page of `in`
 * (already touched) and empty its map.  Allocates nothing. */
void arf_meta_ext_release(struct arf_meta_fs *fs, struct arf_meta_inode *in);

/* ---- consistency check (meta/fsck.c) ---- */

/* What arf_meta_fsck() found and counted. */
struct arf_meta_fsck {
	uint64_t problems;                 /* findings reported */
	uint64_t inodes, dirs, files;      /* live inodes checked */
	uint64_t entries, blocks;          /* names and mapped blocks checked */
	/* One call per finding: kind is a short tag ("dangling-entry",
	 * "link-count", "leaked-block", ...: the list is atop meta/fsck.c),
	 * msg a one-line description.  May be NULL. */
	void (*report)(void *ctx, const char *kind, const char *msg);
	void *ctx;
};

/* Check the filesystem in fs's regions without changing them: objects,
 * entries and chains, link counts, block and page ownership, tags and
 * checksums, and fs's allocation maps when it has them.  Every object must
 * be sealed (run it when no change is in flight).  Returns the number of
 * problems (0 = clean) or -ENOMEM. */
int arf_meta_fsck(struct arf_meta_fs *fs, struct arf_meta_fsck *r);

#endif /* ARF_META_FS_H */
