/* SPDX-License-Identifier: MIT */
/*
 * arfd/xattr — extended attributes and POSIX ACLs: kept in arfd's memory
 * and in the store, served by requests (xattr.c says why not in the
 * regions, and which names and limits apply).
 *
 * Everything here runs with fs_lock held (procedures, the commit, the
 * permission checks of ops/).
 */
#ifndef ARFD_XATTR_H
#define ARFD_XATTR_H

#include <stddef.h>
#include <stdint.h>

#include "arf_meta_fs.h"
#include "arf_ops.h"

struct arfd;
struct arfd_req;

#define ARFD_XATTR_INODE_MAX (256u << 10) /* names and values of one file together */

/* After the regions are rebuilt: read the stored attributes (dropping
 * those of files that are gone) and register the ACL source of ops/.
 * 0, or -errno with err. */
int arfd_xattr_start(struct arfd *d, char *err, size_t errlen);
void arfd_xattr_stop(struct arfd *d);

/* The procedures of ARF_OP_XATTR_GET, _SET, _LIST and _REMOVE. */
int arfd_p_xattr_get(struct arfd_req *q);
int arfd_p_xattr_set(struct arfd_req *q);
int arfd_p_xattr_list(struct arfd_req *q);
int arfd_p_xattr_remove(struct arfd_req *q);

/* In a transaction's commit, before its objects are written: attributes of
 * inodes the transaction freed go, in the same batch. */
void arfd_xattr_txn(struct arfd *d, const struct arf_meta_dirty *list, size_t n);

/* chmod of an inode with an access ACL (after arf_ops_setattr, in its
 * transaction): the ACL's owner, mask and other entries follow the mode. */
void arfd_xattr_chmod(struct arfd *d, uint64_t ino, uint32_t gen, uint32_t mode);

/*
 * Creating a file (create, mkdir, mknod), around the ops/ hook, in its
 * transaction.  begin: when the directory has a default ACL and the name
 * is new, the file will inherit it (the mode goes to the hook unmasked);
 * otherwise the umask, if the request carried one, is applied to *mode.
 * end, after the hook succeeded: the inherited ACL becomes the file's
 * access ACL (and a directory's default ACL) and its mode bits follow;
 * *a is updated.  end frees what begin kept, also when not called after a
 * failure: call it with a NULL attr then.
 */
struct arfd_xattr_inherit {
	uint8_t *acl;      /* a copy of the directory's default ACL; NULL: nothing to inherit */
	size_t len;
};
void arfd_xattr_inherit_begin(struct arfd *d, uint64_t dir, uint32_t dgen, const char *name,
			      size_t nlen, uint32_t *mode, int has_umask, uint32_t umask,
			      struct arfd_xattr_inherit *ih);
void arfd_xattr_inherit_end(struct arfd *d, struct arfd_xattr_inherit *ih, struct arf_ops_attr *a);

#endif
