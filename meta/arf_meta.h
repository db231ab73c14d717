/* SPDX-License-Identifier: MIT */
/*
 * meta/ — the exported memory layout of an ARF filesystem.
 *
 * Everything a client may read one-sidedly lives in two regions that arfd
 * exports: META (superblock, inode table, directory entries, pages, block
 * tags) and DATA (4 KiB data blocks).  Everything is addressed by offset, so
 * the same bytes mean the same thing on every client and after a restart.
 *
 * Every object a client reads one-sidedly starts with a struct arf_meta_hdr:
 * a version and a checksum.  A writer makes the version odd, changes the
 * object, recomputes the checksum and makes the version even again
 * (arf_meta_obj_begin / arf_meta_obj_seal).  A reader copies the object and
 * accepts it only if arf_meta_obj_validate() says so; otherwise it retries a
 * bounded number of times and then falls back to a request.  A never-written
 * slot is all zero bytes (version 0, checksum 0) and validates as "empty".
 *
 * This header is shared by arfd (writes), arfclient (reads) and mobilecode
 * (reads): it holds the layout, the address arithmetic and validation.  The
 * server-side state (allocators, transactions) is in arf_meta_fs.h.
 */
#ifndef ARF_META_H
#define ARF_META_H

#include <stddef.h>
#include <stdint.h>
#include "arf_common.h"

#define ARF_META_MAGIC          0x31465241u /* "ARF1" little-endian */
#define ARF_META_FORMAT_VERSION 1u          /* bump on any layout change */
#define ARF_BLOCK_SIZE          4096u
#define ARF_BLOCK_SHIFT         12
#define ARF_NAME_MAX            255u
#define ARF_PATH_MAX            4096u
#define ARF_ROOT_INO            1u
#define ARF_META_NONE           UINT32_MAX /* "no index" in chain/page links */

/* Region ids: fixed, so a program or a client can name them without a lookup. */
enum arf_meta_region {
	ARF_REGION_META    = 0, /* superblock, inodes, entries, pages, tags; read-only to clients */
	ARF_REGION_DATA    = 1, /* data blocks; read-only to clients */
	ARF_REGION_SCRATCH = 2, /* writable scratch (one-sided WRITE/CAS/FAA) */
	ARF_REGION_COUNT   = 3,
};


/* Header of every self-verifying object. */
struct arf_meta_hdr {
	uint64_t ver;  /* even = stable, odd = being written */
	uint64_t csum; /* XXH3-64 of the bytes after the header, seeded by ver */
};

/* The superblock: geometry of the regions.  Stored at offset 0 of META and
 * in RocksDB; the geometry of an existing filesystem never changes. */
struct arf_meta_super {
	struct arf_meta_hdr h;
	uint32_t magic;        /* ARF_META_MAGIC */
	uint32_t format;       /* ARF_META_FORMAT_VERSION */
	uint32_t block_size;   /* ARF_BLOCK_SIZE */
	uint32_t hash_mask;    /* 0, or a test-only mask applied to name hashes to force long chains */
	uint32_t n_inodes;     /* inode slots; inode number = slot + 1 */
	uint32_t n_buckets;    /* directory hash buckets = entry slots [0, n_buckets) */
	uint32_t n_entries;    /* all entry slots: buckets + overflow */
	uint32_t n_pages;      /* 4 KiB meta pages (directory listings, extent maps) */
	uint32_t n_blocks;     /* data blocks in DATA */
	uint32_t pad0;
	uint64_t off_inodes;   /* offsets in META */
	uint64_t off_entries;
	uint64_t off_pages;
	uint64_t off_tags;
	uint64_t meta_size;    /* size of META in bytes */
	uint64_t data_size;    /* size of DATA in bytes = n_blocks * ARF_BLOCK_SIZE */
	uint8_t  uuid[16];     /* filesystem identity */
	int64_t  created_ns;   /* creation time, ns since the epoch */
	uint8_t  reserved[4096 - 16 - 40 - 48 - 16 - 8];
};

/* One extent: file blocks [fblk, fblk+len) live in data blocks [pblk, pblk+len). */
struct arf_meta_extent {
	uint64_t fblk;
	uint32_t pblk;
	uint32_t len;  /* 0 = unused slot */
};

#define ARF_META_INLINE_EXTENTS 8
#define ARF_META_EXT_PAGES      8

/* Inode flags. */
#define ARF_META_INO_EXTPAGES 0x1u /* extents live in pages (ext_pages), not inline */
/* Extended attributes live in arfd's store, not in the regions (arfd/xattr.c);
 * these bits say whether there are any, so that a one-sided reader knows a
 * file has none without asking, and permission checks know when to look
 * for an ACL. */
#define ARF_META_INO_ACL      0x2u /* has an access ACL (system.posix_acl_access) */
#define ARF_META_INO_XATTR    0x4u /* has at least one stored extended attribute */
#define ARF_META_INO_DACL     0x8u /* a directory with a default ACL (system.posix_acl_default) */

/* A fixed-size inode record.  Slot i (0-based) holds inode number i + 1.
 * ino == 0 means the slot is free; gen tells a reused slot from the old file. */
struct arf_meta_inode {
	struct arf_meta_hdr h;
	uint64_t ino;        /* 0 = free slot */
	uint32_t gen;        /* bumped each time the slot is reused */
	uint32_t mode;       /* S_IFMT | permission bits */
	uint32_t uid, gid;
	uint32_t nlink;
	uint32_t flags;      /* ARF_META_INO_* */
	uint64_t size;       /* bytes; for a directory, number of entries */
	uint64_t blocks;     /* data blocks allocated */
	int64_t  atime_ns, mtime_ns, ctime_ns, btime_ns;
	uint64_t rdev;
	uint32_t nextents;   /* extents in use (inline or across ext pages) */
	uint32_t dir_first;  /* directories: first listing page, ARF_META_NONE if none */
	uint32_t dir_last;   /* directories: last listing page (where appends go) */
	uint32_t dir_pages;  /* directories: number of listing pages */
	union {
		struct arf_meta_extent ext[ARF_META_INLINE_EXTENTS]; /* sorted by fblk */
		struct {
			uint32_t page[ARF_META_EXT_PAGES];   /* ARF_META_NONE = unused */
			uint64_t first_fblk[ARF_META_EXT_PAGES]; /* first fblk each page covers */
		} xp;
	} u;
	uint64_t parent;     /* directories: parent directory inode (root: itself) */
};

/*
 * The twelve attributes stat(2) shows, copied between two records that
 * name them as the inode record does: the server's (struct arf_ops_attr),
 * the wire's (struct arf_proto_attr), the programs' (struct arf_prog_attr)
 * and libarf's (struct arf_stat).  The list is written once, here, so each
 * conversion is one line and a field added to the forms is copied by all
 * of them; the wire codec (net/proto.c) writes it field by field as it
 * must.  ARF_META_ATTR_FROM_INODE reads an inode record, whose blocks
 * count data blocks, into a form that counts 512-byte units as stat(2)
 * does.  Macros, not functions: the forms are distinct types that share
 * field names, and the compiler checks every field of every pair.
 */
#define ARF_META_ATTR_COPY(dst, src) do { \
		(dst)->ino = (src)->ino;           \
		(dst)->gen = (src)->gen;           \
		(dst)->mode = (src)->mode;         \
		(dst)->nlink = (src)->nlink;       \
		(dst)->uid = (src)->uid;           \
		(dst)->gid = (src)->gid;           \
		(dst)->size = (src)->size;         \
		(dst)->blocks = (src)->blocks;     \
		(dst)->atime_ns = (src)->atime_ns; \
		(dst)->mtime_ns = (src)->mtime_ns; \
		(dst)->ctime_ns = (src)->ctime_ns; \
		(dst)->rdev = (src)->rdev;         \
	} while (0)
#define ARF_META_ATTR_FROM_INODE(dst, in) do {                          \
		ARF_META_ATTR_COPY(dst, in);                             \
		(dst)->blocks = (in)->blocks * (ARF_BLOCK_SIZE / 512);   \
	} while (0)

/* A directory entry slot.  Slots [0, n_buckets) are the hash buckets' heads;
 * the rest are overflow entries linked through next.  A head slot may be
 * empty (parent == 0) while still carrying a chain in next.  */
struct arf_meta_dirent {
	struct arf_meta_hdr h;
	uint64_t parent;     /* directory inode; 0 = no entry in this slot */
	uint64_t child;      /* inode number the name resolves to */
	uint32_t child_gen;  /* generation of that inode */
	uint32_t hash;       /* arf_meta_name_hash(parent, name) */
	uint32_t next;       /* next entry in the chain, ARF_META_NONE at the end */
	uint32_t page;       /* listing page holding this entry's slot */
	uint16_t slot;       /* slot within that page */
	uint8_t  type;       /* DT_* of the child */
	uint8_t  namelen;    /* 1..255 */
	uint32_t pad0;
	uint64_t cookie;     /* stable readdir cookie: (page ordinal * slots + slot) + 1 */
	char     name[256];  /* zero padded after namelen bytes */
};

/* A 4 KiB meta page: a directory listing page or an extent page. */
enum arf_meta_page_kind {
	ARF_META_PAGE_FREE = 0,
	ARF_META_PAGE_DIR  = 1, /* slots[] = entry indices in insertion order */
	ARF_META_PAGE_EXT  = 2, /* ext[] = extents sorted by fblk */
};

#define ARF_META_DIR_SLOTS  1012u
#define ARF_META_PAGE_EXTS  253u

struct arf_meta_page {
	struct arf_meta_hdr h;
	uint32_t kind;       /* enum arf_meta_page_kind */
	uint32_t owner_gen;  /* generation of the owning inode */
	uint64_t owner;      /* owning inode */
	uint32_t next;       /* directories: next listing page, ARF_META_NONE at the end */
	uint32_t count;      /* slots used (dir: appended so far, holes included; ext: extents) */
	uint32_t ordinal;    /* directories: position of this page in the listing, from 0 */
	uint32_t pad0;
	union {
		uint32_t slot[ARF_META_DIR_SLOTS]; /* entry index, ARF_META_NONE = removed */
		struct arf_meta_extent ext[ARF_META_PAGE_EXTS];
	} u;
};

/* The tag of a data block: who owns it, and a checksum of its bytes, so a
 * client holding a stale map never returns another file's bytes. */
struct arf_meta_tag {
	struct arf_meta_hdr h;
	uint64_t ino;        /* 0 = block free */
	uint32_t gen;
	uint32_t pad0;
	uint64_t fblk;       /* file block index */
	uint64_t data_csum;  /* XXH3-64 of the block's 4096 bytes */
};

_Static_assert(sizeof(struct arf_meta_hdr) == 16, "hdr");
_Static_assert(sizeof(struct arf_meta_super) == 4096, "super");
_Static_assert(sizeof(struct arf_meta_extent) == 16, "extent");
_Static_assert(sizeof(struct arf_meta_inode) == 256, "inode");
_Static_assert(sizeof(struct arf_meta_dirent) == 320, "dirent");
_Static_assert(sizeof(struct arf_meta_page) == 4096, "page");
_Static_assert(sizeof(struct arf_meta_tag) == 48, "tag");

/* The on-wire/exported encoding is little-endian; ARF runs on little-endian hosts only. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ARF needs a little-endian host");

/* ---- address arithmetic (all offsets in META unless said otherwise) ---- */

static inline uint64_t arf_meta_inode_off(const struct arf_meta_super *sb, uint64_t ino)
{
	return sb->off_inodes + (ino - 1) * sizeof(struct arf_meta_inode);
}
static inline uint64_t arf_meta_entry_off(const struct arf_meta_super *sb, uint32_t idx)
{
	return sb->off_entries + (uint64_t)idx * sizeof(struct arf_meta_dirent);
}
static inline uint64_t arf_meta_page_off(const struct arf_meta_super *sb, uint32_t idx)
{
	return sb->off_pages + (uint64_t)idx * sizeof(struct arf_meta_page);
}
static inline uint64_t arf_meta_tag_off(const struct arf_meta_super *sb, uint32_t pblk)
{
	return sb->off_tags + (uint64_t)pblk * sizeof(struct arf_meta_tag);
}
/* offset in DATA */
static inline uint64_t arf_meta_block_off(uint32_t pblk)
{
	return (uint64_t)pblk * ARF_BLOCK_SIZE;
}

/* The directory's name hash (also exposed to mobile code as a helper). */
uint32_t arf_meta_name_hash(uint64_t parent, const char *name, size_t len);
/* Bucket index of a hash, applying the superblock's test-only mask. */
uint32_t arf_meta_bucket(const struct arf_meta_super *sb, uint32_t hash);

/* Checksum of a data block. */
uint64_t arf_meta_block_csum(const void *block);

/* ---- self-verifying objects ---- */

/* Validate a private copy of an object of len bytes.
 * Returns 0 (stable; includes the all-zero never-written slot), ARF_ETORN
 * (odd version) or ARF_ECSUM (checksum mismatch). */
int arf_meta_obj_validate(const void *obj, size_t len);

/* Writer side, on the live object: make the version odd (idempotent when it
 * already is).  Uses release ordering so readers see the odd version before
 * any change. */
void arf_meta_obj_begin(void *obj, size_t len);
/* Writer side: recompute the checksum and make the version even again. */
void arf_meta_obj_seal(void *obj, size_t len);

/* Check a validated tag against the expected owner and a copy of the block.
 * Returns 0, ARF_ETAG (wrong owner) or ARF_ECSUM (block bytes torn). */
int arf_meta_tag_check(const struct arf_meta_tag *tag, uint64_t ino, uint32_t gen,
		       uint64_t fblk, const void *block);

/* Validate a superblock copy: magic, format version, geometry that fits in
 * meta_size.  Returns 0, ARF_EVERSION (format mismatch) or -EINVAL; errbuf
 * gets a one-line reason. */
int arf_meta_super_check(const struct arf_meta_super *sb, char *errbuf, size_t errlen);

/* Compute a geometry: fills sb (without sealing it) for the given counts. */
void arf_meta_super_layout(struct arf_meta_super *sb, uint32_t n_inodes, uint32_t n_buckets,
			   uint32_t n_overflow, uint32_t n_pages, uint32_t n_blocks,
			   uint32_t hash_mask);

/* The DT_* type for a mode. */
uint8_t arf_meta_dtype(uint32_t mode);

#endif /* ARF_META_H */
