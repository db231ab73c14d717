/* SPDX-License-Identifier: MIT */
/*
 * ops/ internals shared by the hook files: resolving (ino, gen) to a live
 * inode, name and credential checks, attribute filling, the shared steps of
 * creating and releasing inodes, and the file data engine (data.c).
 * Nothing here is visible outside ops/.
 */
#ifndef ARF_OPS_INT_H
#define ARF_OPS_INT_H

#include <sys/stat.h>
#include <unistd.h>

#include "arf_ops.h"

/* Most links an inode may have (a directory: 2 + subdirectories). */
#define OPS_LINK_MAX 65000u

/* Objects a mutation touches besides data blocks and their tags: inodes,
 * entries, listing pages and extent pages, generously counted. */
#define OPS_TXN_BASE 64u

/* The live inode for (ino, gen), or NULL when the slot is free, out of range
 * or holds another generation (the hooks answer -ESTALE). */
struct arf_meta_inode *ops_inode(struct arf_meta_fs *fs, uint64_t ino, uint32_t gen);

/* Attributes of a live inode as the hooks return them. */
void ops_attr(const struct arf_meta_inode *in, struct arf_ops_attr *out);

/* A name for a new or existing entry: 0, -EINVAL ("" or containing '/' or
 * NUL) or -ENAMETOOLONG (more than ARF_NAME_MAX bytes). */
int ops_name_check(const char *name, size_t len);

/* 1 for ".", 2 for "..", 0 otherwise. */
int ops_dot(const char *name, size_t len);

/* True if the caller's primary or supplementary groups include gid. */
int ops_in_group(const struct arf_cred *cr, uint32_t gid);

/* May the caller remove or replace `child` in sticky directory `dir`?
 * 0 or -EPERM. */
int ops_sticky_ok(const struct arf_meta_inode *dir, const struct arf_meta_inode *child,
		  const struct arf_cred *cr);

/* The usual first steps of a hook on a name in a directory: resolve the
 * directory (-ESTALE), require a directory (-ENOTDIR), a valid name and
 * search permission (-EACCES). */
int ops_dir_begin(struct arf_meta_fs *fs, const struct arf_cred *cr, uint64_t dir, uint32_t dgen,
		  const char *name, size_t len, struct arf_meta_inode **d);

int64_t ops_now(void);

/* The access ACL's verdict for a non-root caller (acl.c): 0, -EACCES, or 1
 * when the inode has no ACL and the mode bits decide. */
int ops_acl_check(const struct arf_meta_inode *in, const struct arf_cred *cr, int mask);

/* Remove a setuid bit (and setgid when group-executable), as a write by an
 * unprivileged caller does.  in must be touched. */
void ops_kill_suid(struct arf_meta_inode *in);

/* Free everything an inode whose last link went away holds: its data blocks
 * and extent pages, or its listing pages, then the slot. */
void ops_release(struct arf_meta_fs *fs, uint64_t ino);

/* ---- file data (data.c) ---- */

/* Write into regular file `ino` (live, not yet touched): reserves blocks,
 * extent pages and transaction room before the first touch.  On -ENOSPC
 * before anything fits, nothing changes; when only a prefix fits, that is
 * written and *written says how much.  Updates size, blocks, mtime, ctime. */
int ops_data_write(struct arf_meta_fs *fs, uint64_t ino, uint64_t off, const void *buf,
		   size_t len, size_t *written, int64_t now);
/* Give every hole of [off, off + len) of regular file `ino` (live, not yet
 * touched) a zeroed block: all of them, or -ENOSPC (or -ENOMEM) with
 * nothing changed.  Mapped blocks, size and times are left alone. */
int ops_data_alloc(struct arf_meta_fs *fs, uint64_t ino, uint64_t off, uint64_t len);
/* Read from a file's map; holes read as zeros; stops at EOF. */
int ops_data_read(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint64_t off,
		  void *buf, size_t len, size_t *nread);
/* Check that a truncate of `in` to size can be done: 0 or -ENOMEM.  Then
 * ops_data_truncate cannot fail. */
int ops_data_truncate_prepare(struct arf_meta_fs *fs, const struct arf_meta_inode *in, uint64_t size,
			      struct arf_meta_extent **ext, uint32_t *n);
/* Set the size: frees blocks past the end, zeroes the tail of the last
 * partial block; takes ownership of ext from the prepare step.  in is touched. */
void ops_data_truncate(struct arf_meta_fs *fs, struct arf_meta_inode *in, uint64_t size,
		       struct arf_meta_extent *ext, uint32_t n);

#endif /* ARF_OPS_INT_H */
