/* SPDX-License-Identifier: MIT */
/*
 * ops/ — filesystem semantics as server-side hooks.
 *
 * Each function performs one POSIX operation on a struct arf_meta_fs, with
 * the permission checks of a local filesystem for the caller's credentials,
 * and returns 0 or a negative errno (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR,
 * EISDIR, ENAMETOOLONG, ENOSPC, EACCES, EPERM, EINVAL, ESTALE, EFBIG, ...).
 *
 * Mutating hooks must be called inside arf_meta_txn_begin()/txn_end(): they
 * change objects only through arf_meta_*_touch(), so the transaction lists
 * everything to persist.  They check every precondition and reserve every
 * resource before the first change, so a failing call changes nothing (a
 * write that runs out of space part-way returns what it wrote).
 *
 * Inodes are named by (ino, gen): a generation that does not match the slot
 * gives -ESTALE.  The caller serialises calls on one fs (see arf_meta_fs.h).
 */
#ifndef ARF_OPS_H
#define ARF_OPS_H

#include <stdint.h>
#include <stddef.h>
#include "arf_meta_fs.h"

#define ARF_OPS_NGROUPS 16
#define ARF_OPS_MAX_FILE_SIZE (1ull << 44) /* 16 TiB: larger sizes give -EFBIG */

/* AUTH_SYS-like credentials of the caller (after squashing). */
struct arf_cred {
	uint32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[ARF_OPS_NGROUPS];
};

struct arf_ops_attr {
	uint64_t ino;
	uint32_t gen;
	uint32_t mode;
	uint32_t nlink, uid, gid;
	uint32_t pad;
	uint64_t size, blocks;      /* blocks in 512-byte units, as stat(2) */
	int64_t  atime_ns, mtime_ns, ctime_ns;
	uint64_t rdev;
};

/* setattr: which fields to set */
#define ARF_OPS_SET_MODE      0x01u
#define ARF_OPS_SET_UID       0x02u
#define ARF_OPS_SET_GID       0x04u
#define ARF_OPS_SET_SIZE      0x08u
#define ARF_OPS_SET_ATIME     0x10u
#define ARF_OPS_SET_MTIME     0x20u
#define ARF_OPS_SET_ATIME_NOW 0x40u
#define ARF_OPS_SET_MTIME_NOW 0x80u

struct arf_ops_setattr {
	uint32_t valid;    /* ARF_OPS_SET_* */
	uint32_t mode;     /* permission bits only (07777) */
	uint32_t uid, gid;
	uint64_t size;
	int64_t  atime_ns, mtime_ns;
};

struct arf_ops_dirent {
	uint64_t ino;
	uint32_t gen;
	uint8_t  type;     /* DT_* */
	uint8_t  namelen;
	uint64_t cookie;   /* pass back to resume after this entry */
	char     name[ARF_NAME_MAX + 1]; /* NUL-terminated */
};

struct arf_ops_statfs {
	uint64_t bsize, blocks, bfree;
	uint64_t files, ffree;
	uint64_t namemax;
};

/* rename flags (same values as Linux) */
#define ARF_OPS_RENAME_NOREPLACE 0x1u
#define ARF_OPS_RENAME_EXCHANGE  0x2u /* implemented: swaps what the two names point at */

/* ---- reads (no transaction needed) ---- */
int arf_ops_getattr(struct arf_meta_fs *fs, uint64_t ino, uint32_t gen, struct arf_ops_attr *out);
int arf_ops_lookup(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		   const char *name, size_t len, struct arf_ops_attr *out);
/* Return up to max entries after `cookie` (0 = from the start); *eof set when
 * the listing is exhausted.  "." and ".." are not included. */
int arf_ops_readdir(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		    uint64_t cookie, struct arf_ops_dirent *out, size_t max, size_t *n, int *eof);
/* readdir with each child's attributes (NFSv3 READDIRPLUS): attrs[i]
 * for out[i], attrs[i].ino == 0 when the child is gone. */
int arf_ops_readdirplus(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir,
			uint32_t dgen, uint64_t cookie, struct arf_ops_dirent *out,
			struct arf_ops_attr *attrs, size_t max, size_t *n, int *eof);
/* Read up to len bytes at off; holes read as zeros; *nread < len at EOF. */
int arf_ops_read(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		 uint64_t off, void *buf, size_t len, size_t *nread);
int arf_ops_readlink(struct arf_meta_fs *fs, uint64_t ino, uint32_t gen, char *buf, size_t cap, size_t *len);
int arf_ops_statfs(struct arf_meta_fs *fs, struct arf_ops_statfs *out);
/* access(2)-style check: mask of R_OK|W_OK|X_OK. */
int arf_ops_access(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen, int mask);

/* ---- mutations (inside a transaction) ---- */
/* exclusive != 0: EEXIST if the name exists; otherwise an existing regular
 * file is returned as is (open(O_CREAT) without O_EXCL). */
int arf_ops_create(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		   const char *name, size_t len, uint32_t mode, int exclusive, struct arf_ops_attr *out);
int arf_ops_mknod(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len, uint32_t mode, uint64_t rdev, struct arf_ops_attr *out);
int arf_ops_mkdir(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len, uint32_t mode, struct arf_ops_attr *out);
int arf_ops_unlink(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		   const char *name, size_t len);
int arf_ops_rmdir(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len);
int arf_ops_rename(struct arf_meta_fs *fs, const struct arf_cred *cr,
		   uint64_t odir, uint32_t ogen, const char *oname, size_t olen,
		   uint64_t ndir, uint32_t ngen, const char *nname, size_t nlen, uint32_t flags);
int arf_ops_link(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		 uint64_t dir, uint32_t dgen, const char *name, size_t len, struct arf_ops_attr *out);
int arf_ops_symlink(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		    const char *name, size_t len, const char *target, size_t tlen, struct arf_ops_attr *out);
int arf_ops_setattr(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		    const struct arf_ops_setattr *sa, struct arf_ops_attr *out);
/* Write len bytes at off (any offset; the gap becomes a hole).  *written is
 * what was written (less than len only on ENOSPC part-way, then 0 returned).
 * -EFBIG at or past ARF_OPS_MAX_FILE_SIZE (a write reaching past it is cut
 * there); -ENOSPC with nothing written when no block is free for the first
 * hole, or when the file's map would need more extents than the inode and
 * its ARF_META_EXT_PAGES extent pages hold (ARF_META_MAX_EXTENTS) or a free
 * meta page that is not there.  The owner may write without write
 * permission (as an NFS server: permission was checked at open). */
int arf_ops_write(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		  uint64_t off, const void *buf, size_t len, size_t *written);

/* A new regular file holding len bytes, with sa's attributes applied after
 * the write (mode, uid, gid, atime, mtime and their _NOW forms; a size is
 * -EINVAL): open(O_CREAT|O_EXCL), write, fchown, fchmod, futimens and close
 * in one call, as tar, rsync and git do for each small file.  -EEXIST when
 * the name exists; create's, write's and setattr's errors otherwise.  A
 * failure after the file was made (-ENOSPC part-way, -EPERM from sa) removes
 * it again and puts the directory's times back: a failing call leaves no
 * name behind.  out: the file's attributes at the end. */
int arf_ops_create_write(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir,
			 uint32_t dgen, const char *name, size_t nlen, uint32_t mode,
			 const void *data, size_t len, const struct arf_ops_setattr *sa,
			 struct arf_ops_attr *out);

/* Copy up to len bytes of regular file src at soff into regular file dst at
 * doff, block by block inside the server, as copy_file_range(2): *copied is
 * what was copied, 0 at or past src's end; at most ARF_OPS_COPY_MAX a call
 * (callers loop).  Read permission on src and write permission on dst (the
 * owner may, as for read and write); -EINVAL when src and dst are one file
 * and the ranges overlap, or not regular files (-EISDIR for a directory);
 * -EFBIG at or past ARF_OPS_MAX_FILE_SIZE; -ENOSPC with nothing copied.
 * Blocks are copied, never shared (a block's tag names one owner); a range
 * that is a hole in src stays a hole in dst unless dst had data there. */
#define ARF_OPS_COPY_MAX (8ull << 20)
int arf_ops_copy(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t src, uint32_t sgen,
		 uint64_t soff, uint64_t dst, uint32_t dgen, uint64_t doff, uint64_t len,
		 uint64_t *copied);
/* Write len bytes at the end of file as it is now (O_APPEND); *off gets
 * where they went.  Errors as arf_ops_write. */
int arf_ops_append(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		   const void *buf, size_t len, uint64_t *off, size_t *written);

/* fallocate(2) modes (Linux's values); others give -EOPNOTSUPP. */
#define ARF_OPS_FALLOC_KEEP_SIZE  0x01u
#define ARF_OPS_FALLOC_PUNCH_HOLE 0x02u /* only with KEEP_SIZE */
/* Preallocate (mode 0: and extend the size; KEEP_SIZE: not) or punch a
 * hole in [off, off + len) of a regular file, all or nothing (ops/space.c).
 * -EINVAL (len 0), -EFBIG, -ENOSPC (blocks, or a map that would not fit
 * the inode), -EOPNOTSUPP, -ESTALE, -EISDIR, -EACCES. */
int arf_ops_fallocate(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino,
		      uint32_t gen, uint32_t mode, uint64_t off, uint64_t len,
		      struct arf_ops_attr *out);

/* lseek(2) whences (Linux's values). */
#define ARF_OPS_SEEK_DATA 3u
#define ARF_OPS_SEEK_HOLE 4u
/* The first data (SEEK_DATA) or hole (SEEK_HOLE; the end of file is one)
 * at or after off.  -ENXIO when off is at or past the end of file, or no
 * data follows it; -EINVAL (another whence, not a regular file). */
int arf_ops_seek(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t ino, uint32_t gen,
		 uint64_t off, uint32_t whence, uint64_t *result);

/* Permission check used by the hooks and by mobile-code helpers: the mode
 * bits, or the access ACL of an inode flagged ARF_META_INO_ACL (acl.c). */
int arf_ops_permitted(const struct arf_meta_inode *in, const struct arf_cred *cr, int mask);

/* ---- POSIX ACLs (acl.c): Linux's xattr form of system.posix_acl_* ---- */
#define ARF_OPS_ACL_MAX 1024u /* entries in one ACL */
/* 0, or -EINVAL unless acl is a well-formed, sorted ACL (version 2). */
int arf_ops_acl_valid(const void *acl, size_t len);
/* Set the rwx bits of *mode from a valid access ACL; returns 1 when the ACL
 * says more than those bits (it must be kept), 0 when it is just the mode. */
int arf_ops_acl_to_mode(const void *acl, size_t len, uint32_t *mode);
/* chmod: the owner, mask (or owning group) and other entries from mode. */
void arf_ops_acl_chmod(void *acl, size_t len, uint32_t mode);
/* A file created with *mode under a default ACL: acl (a copy of that
 * default) is masked by *mode and becomes the new file's access ACL, *mode
 * its rwx bits.  Returns as arf_ops_acl_to_mode. */
int arf_ops_acl_create(void *acl, size_t len, uint32_t *mode);
/* May cr do mask (R_OK|W_OK|X_OK) to in under this valid access ACL?
 * 0 or -EACCES (root is the caller's business). */
int arf_ops_acl_permitted(const struct arf_meta_inode *in, const void *acl, size_t len,
			  const struct arf_cred *cr, int mask);
/* Where the access ACL of an inode flagged ARF_META_INO_ACL is found: fn
 * returns 0 with *acl (valid until the next change under the caller's
 * lock) and *len, or non-zero when there is none.  arfd registers it once
 * at start; without one, permissions come from the mode bits alone. */
typedef int (*arf_ops_acl_fn)(void *ctx, uint64_t ino, uint32_t gen, const void **acl,
			      size_t *len);
void arf_ops_set_acl_source(arf_ops_acl_fn fn, void *ctx);

#endif /* ARF_OPS_H */
