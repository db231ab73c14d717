/* SPDX-License-Identifier: MIT */
/*
 * The contract between arfd and the programs it runs: where the exported
 * regions appear in a program's address space, the helpers arfd lends
 * (ids, arguments, results), and the argument and output layouts of the
 * standard programs in this folder.  Included by the programs themselves
 * (clang -target bpf), by arfd (which registers the helpers) and by libarf
 * (which builds the arguments and reads the outputs), so it holds only
 * fixed-size, little-endian, pointer-free layouts.
 *
 * Addresses are those of mobilecode (arf_mc.h): region number in the top
 * 16 bits.  arfd adds, in this order, META (read-only), DATA (read-only)
 * and a scratch region (read-write, zeroed before every run), so their
 * numbers are fixed.  A program reads a self-verifying object with
 * arf_obj_read(), which copies it and validates version and checksum; a
 * direct load of a live object may see it half-written.
 *
 * Helpers do not walk chains, list directories or match patterns: the
 * programs do, so their cost shows in the instructions they execute.  But
 * a program reads META and DATA only when it runs for root proven on a
 * connection that holds the region keys; for anyone else arfd lends them
 * empty (a program must not read what its user may not), and such a
 * program resolves a name with ARF_PH_LOOKUP, which asks arf_ops_lookup
 * with the run's credentials -- the permission check a LOOKUP request
 * makes -- and charges the run for it like every helper charges for its
 * work (copying, hashing, the filesystem lock).
 */
#ifndef ARF_PROG_ABI_H
#define ARF_PROG_ABI_H

#include <stdint.h>

/* ---- regions -------------------------------------------------------- */

#define ARF_PROG_REGION(k)   ((uint64_t)(k) << 48)
#define ARF_PROG_META        ARF_PROG_REGION(5) /* META region, offset 0: the superblock */
#define ARF_PROG_DATA        ARF_PROG_REGION(6) /* DATA region */
#define ARF_PROG_SCRATCH     ARF_PROG_REGION(7) /* per-run scratch, read-write */
#define ARF_PROG_SCRATCH_SIZE 16384u
#define ARF_PROG_OUT         ARF_PROG_REGION(3) /* the output buffer (arf_mc.h) */

/* ---- helpers (call id) ------------------------------------------------ */

enum arf_prog_helper {
	/* the engine's own (arf_mc.h) */
	ARF_PH_EMIT      = 1,  /* emit(ptr, len) -> 0; run fails with ARF_EOUTPUT past the limit */
	ARF_PH_MEMCMP    = 2,  /* memcmp(a, b, len) -> -1, 0, 1 */
	ARF_PH_MEMMEM    = 3,  /* memmem(hay, hlen, needle, nlen) -> offset or -1 */
	/* arfd's */
	ARF_PH_NAME_HASH = 16, /* name_hash(parent, name, len) -> arf_meta_name_hash();
				* len over 255 fails the run */
	ARF_PH_OBJ_READ  = 17, /* obj_read(dst, len, src) -> 0, ARF_ETORN or ARF_ECSUM (after
				* retries): copies len bytes at address src (any readable
				* region) to dst and validates them as a self-verifying object */
	ARF_PH_EMIT_U64  = 18, /* emit_u64(v) -> 0: appends 8 bytes */
	ARF_PH_MKDIR     = 20, /* mkdir(attr, attr_len, name, len, mode) -> 0 or -errno */
	ARF_PH_CREATE    = 21, /* create(attr, attr_len, name, len, mode | ARF_PROG_EXCL) */
	ARF_PH_FILE_VIEW = 22, /* file_view(view, view_len) -> 0 or -errno: struct
				* arf_prog_file_view; once per run */
	ARF_PH_LOOKUP    = 23, /* lookup(attr, attr_len, name, len) -> 0 or -errno: attr's
				* ino and gen name the directory on the way in, the child's
				* struct arf_prog_attr comes back in it; -ENOENT, -EACCES
				* (no search permission), -ENOTDIR, -ESTALE, as LOOKUP */
	ARF_PH_DIR_READ  = 24, /* dir_read(rd, rd_len, buf, buf_len) -> bytes of records
				* written to buf, or -errno: struct arf_prog_dir_read */
	ARF_PH_FILE_DIGEST = 25, /* file_digest(dg, dg_len) -> 0 or -errno: struct
				* arf_prog_file_digest */
};

/* ARF_PH_OBJ_READ: the longest object it copies (larger fails the run). */
#define ARF_PROG_OBJ_MAX (1u << 20)

/* ARF_PH_CREATE: fail with -EEXIST when the name exists (O_EXCL). */
#define ARF_PROG_EXCL ((uint64_t)1 << 32)

/*
 * Attributes as the ops hooks and the standard programs give them.  For
 * ARF_PH_MKDIR and ARF_PH_CREATE, ino and gen name the parent directory on
 * the way in; the new (or existing) child's attributes come back in the
 * same buffer.  The hooks run with the credentials of the request that
 * started the program, with the same permission checks as requests, and
 * each change is persisted as a request's is.
 */
struct arf_prog_attr {
	uint64_t ino;
	uint32_t gen, mode, nlink, uid, gid, pad0;
	uint64_t size, blocks;      /* blocks: 512-byte units */
	int64_t  atime_ns, mtime_ns, ctime_ns;
	uint64_t rdev;
};

/*
 * ARF_PH_FILE_VIEW: bytes [off, off + len) of regular file (ino, gen), read
 * as a READ request would read them -- the request's credentials, the same
 * read-permission check, under the filesystem lock, so the copy is one
 * consistent state of the file -- into a buffer of the server's that the
 * helper lends the run as a new read-only region at addr.  len is cut to
 * ARF_PROG_VIEW_MAX; got < len at the end of the file; size is the file's
 * size when it was read.  The views of one run share one region of
 * ARF_PROG_VIEW_MAX bytes, each placed after the last (8-byte aligned; the
 * rest of the region reads as zeros): -EBUSY when a later view would go past
 * its end.  -ESTALE, -EISDIR, -EINVAL (not a regular file), -EACCES.  The
 * helper only copies: what
 * the bytes mean is the program's business (arf-grep scans them).
 */
struct arf_prog_file_view {
	uint64_t ino;
	uint32_t gen, pad0;
	uint64_t off, len;          /* in */
	uint64_t addr, got, size;   /* out */
};
#define ARF_PROG_VIEW_MAX (16u << 20)

/*
 * ARF_PH_DIR_READ: a batch of directory (dir, dgen)'s entries after cookie,
 * listed as a READDIR request lists them -- the run's credentials, read
 * permission on the directory, under the filesystem lock -- for runs that
 * may not read the regions (tree walks: arf-find, arf-du).  Each entry is a
 * record in buf: struct arf_prog_dirent; then, when has_attr, the child's
 * struct arf_prog_attr (given only with ARF_PROG_DR_ATTRS and search
 * permission on the directory, as stat(2) of the child would need; without
 * search permission gen is 0 too, so that the entry names no handle); then
 * namelen bytes of name padded to a multiple of 8; then, when has_link, a
 * u32 length, a u32 pad and the symbolic link's target, padded to 8
 * (ARF_PROG_DR_LINKS).  Entries that do not fit in buf wait for the next
 * call (at least one must fit: -ENOSPC).  On the way out cookie is the last
 * entry's (pass it back to go on), n the records written, eof 1 when the
 * listing ended.  "." and ".." are not listed.  -EACCES, -ENOTDIR, -ESTALE,
 * -EINVAL (a short struct).  r0 is the bytes written.
 */
struct arf_prog_dir_read {
	uint64_t dir;
	uint32_t dgen;
	uint32_t flags;             /* in: ARF_PROG_DR_* */
	uint64_t cookie;            /* in: resume after this entry (0 = start); out: last entry's */
	uint32_t max;               /* in: records at most (0 = as many as fit, up to 256) */
	uint32_t n;                 /* out: records written */
	uint32_t eof;               /* out: 1 when the listing ended */
	uint32_t pad0;
};
#define ARF_PROG_DR_ATTRS 1u    /* the children's attributes */
#define ARF_PROG_DR_LINKS 2u    /* and symbolic links' targets (with ATTRS) */
#define ARF_PROG_DR_BATCH 256u  /* records per call at most */

/*
 * ARF_PH_FILE_DIGEST: the digest of bytes [off, off + len) of regular file
 * (ino, gen) (len 0: to the end), computed where the bytes are, read as a
 * READ request reads them (the run's credentials, read permission).  The
 * file is read a MiB at a time, each under the filesystem lock, and its
 * size, mtime and ctime are compared before each piece with those at the
 * start: a file that changes while it is hashed gives -EAGAIN (try again),
 * never a digest of a mix of two states.  The run pays for each byte
 * hashed, and a range over ARF_PROG_DIGEST_MAX bytes gives -EFBIG (hash it
 * in the client).  -EACCES, -EISDIR, -EINVAL (not a regular file, unknown
 * alg), -ESTALE.  size, mtime_ns and ctime_ns are the state hashed.
 */
struct arf_prog_file_digest {
	uint64_t ino;
	uint32_t gen;
	uint32_t alg;               /* in: ARF_PROG_DG_* */
	uint64_t off, len;          /* in */
	uint64_t size;              /* out: the file's size */
	int64_t  mtime_ns, ctime_ns;/* out */
	uint32_t dlen;              /* out: digest bytes */
	uint32_t pad0;
	uint8_t  digest[64];        /* out */
};
enum arf_prog_digest_alg {
	ARF_PROG_DG_MD5 = 1,
	ARF_PROG_DG_SHA1 = 2,
	ARF_PROG_DG_SHA224 = 3,
	ARF_PROG_DG_SHA256 = 4,
	ARF_PROG_DG_SHA384 = 5,
	ARF_PROG_DG_SHA512 = 6,
	ARF_PROG_DG_BLAKE2B512 = 7,
};
#define ARF_PROG_DIGEST_MAX (1ull << 30)

/* ---- chain lookup: one name in one directory ---------------------------- */

struct arf_prog_lookup_arg {
	uint64_t dir;               /* directory inode */
	uint32_t namelen;           /* 1 .. 255 */
	uint32_t flags;             /* ARF_PROG_LK_ATTRS; 0 = the entry alone */
	char     name[256];
};
/* Also emit the child's struct arf_prog_attr after struct
 * arf_prog_lookup_out, when its inode validates and matches the entry's
 * generation (otherwise the output is the entry alone, and the client reads
 * the inode itself): the lookup then needs no round trip after the run. */
#define ARF_PROG_LK_ATTRS 1u
/* Output on r0 == 0; r0 = -ENOENT when absent, ARF_ETORN/ARF_ECSUM when an
 * entry kept changing (the client asks the server instead). */
struct arf_prog_lookup_out {
	uint64_t child;
	uint32_t gen;
	uint32_t type;              /* DT_* */
	uint32_t hops;              /* chain entries read */
	uint32_t pad0;
};

/* ---- whole-path resolution ---------------------------------------------- */

/* Followed in the context by len bytes of path (relative to dir; '/'
 * separated, empty components skipped). */
struct arf_prog_resolve_arg {
	uint64_t dir;
	uint32_t dgen;
	uint32_t len;
};
/* One per component resolved, in order ("." gives the directory itself). */
struct arf_prog_ent {
	uint64_t ino;
	uint32_t gen;
	uint32_t type;
};
/* r0: 0 = every component resolved: the entries, then the final struct
 * arf_prog_attr; < 0: -errno (ENOENT, ENOTDIR, ENAMETOOLONG, ESTALE) or
 * ARF_ETORN/ARF_ECSUM; > 0: stopped early for the client to go on by itself
 * (the entries resolved so far are the output), with the reason: */
#define ARF_PROG_STOP_SYMLINK 1 /* the next component is a symbolic link */
#define ARF_PROG_STOP_DOTDOT  2 /* the next component is ".." */

/* ---- mkdir -p ------------------------------------------------------------ */

/* Followed in the context by len bytes of path (relative to dir). */
struct arf_prog_mkdirp_arg {
	uint64_t dir;
	uint32_t dgen;
	uint32_t len;
	uint32_t mode;              /* of each directory made */
	uint32_t pad0;
};

/* ---- batched readdir with attributes ------------------------------------ */

struct arf_prog_readdir_arg {
	uint64_t dir;
	uint32_t dgen;
	uint32_t max;               /* entries at most */
	uint64_t cookie;            /* resume after this entry (0 = start) */
	uint32_t flags;             /* ARF_PROG_RD_ATTRS */
	uint32_t pad0;
};
#define ARF_PROG_RD_ATTRS 1u    /* include each child's attributes */
/* Each record: this header, then struct arf_prog_attr when has_attr, then
 * namelen bytes of name padded to a multiple of 8.  r0: 1 = end of the
 * directory reached, 0 = more, < 0 = error. */
struct arf_prog_dirent {
	uint64_t ino;
	uint64_t cookie;
	uint32_t gen;
	uint8_t  type;
	uint8_t  namelen;
	uint8_t  has_attr;          /* the child's inode validated and matched */
	uint8_t  has_link;          /* dir_read: a symbolic link's target follows */
};

#ifndef __bpf__
_Static_assert(sizeof(struct arf_prog_attr) == 80, "arf_prog_attr");
_Static_assert(sizeof(struct arf_prog_lookup_arg) == 272, "arf_prog_lookup_arg");
_Static_assert(sizeof(struct arf_prog_lookup_out) == 24, "arf_prog_lookup_out");
_Static_assert(sizeof(struct arf_prog_resolve_arg) == 16, "arf_prog_resolve_arg");
_Static_assert(sizeof(struct arf_prog_ent) == 16, "arf_prog_ent");
_Static_assert(sizeof(struct arf_prog_readdir_arg) == 32, "arf_prog_readdir_arg");
_Static_assert(sizeof(struct arf_prog_dirent) == 24, "arf_prog_dirent");
_Static_assert(sizeof(struct arf_prog_mkdirp_arg) == 24, "arf_prog_mkdirp_arg");
_Static_assert(sizeof(struct arf_prog_file_view) == 56, "arf_prog_file_view");
_Static_assert(sizeof(struct arf_prog_dir_read) == 40, "arf_prog_dir_read");
_Static_assert(sizeof(struct arf_prog_file_digest) == 128, "arf_prog_file_digest");
#endif

#endif /* ARF_PROG_ABI_H */
