/* SPDX-License-Identifier: MIT */
/*
 * ops/ POSIX ACLs, in the form Linux gives them to a filesystem: the value
 * of the extended attributes system.posix_acl_access and
 * system.posix_acl_default (a little-endian u32 version 2, then entries of
 * u16 tag, u16 perm, u32 id).  The bytes are kept by arfd (arfd/xattr.c);
 * here is what they mean, as fs/posix_acl.c has it:
 *
 *  - valid: entries sorted by tag, then by id; exactly one owner, owning
 *    group and other entry; a mask exactly when there are named users or
 *    groups; no permission beyond rwx.
 *  - an access ACL decides the mode's rwx bits (the group bits are the
 *    mask's when there is a mask); one with only the three base entries
 *    says nothing the mode does not, and is not kept.
 *  - chmod rewrites the owner, mask (or owning group) and other entries.
 *  - a file made in a directory with a default ACL gets that ACL, masked
 *    by the mode it was created with, as its access ACL (a directory also
 *    keeps it as its own default), and the umask is not applied.
 *  - permission: the owner by the owner entry, a named user by its entry
 *    and the mask, groups by any matching group entry that grants all (and
 *    the mask) -- a matching group that does not grant denies -- else
 *    other.
 *
 * arf_ops_permitted asks for the access ACL of an inode flagged
 * ARF_META_INO_ACL through the source arfd registers, under the lock that
 * serialises every hook.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops_int.h"

#define ACL_VERSION 2u
#define T_USER_OBJ  0x01u
#define T_USER      0x02u
#define T_GROUP_OBJ 0x04u
#define T_GROUP     0x08u
#define T_MASK      0x10u
#define T_OTHER     0x20u
#define HDR         4u
#define ENT         8u

static arf_ops_acl_fn acl_source;
static void *acl_ctx;

void arf_ops_set_acl_source(arf_ops_acl_fn fn, void *ctx)
{
	acl_source = fn;
	acl_ctx = ctx;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static size_t count(size_t len)
{
	return (len - HDR) / ENT;
}

int arf_ops_acl_valid(const void *acl, size_t len)
{
	const uint8_t *p = acl;
	unsigned state = T_USER_OBJ, nuser_obj = 0, ngroup_obj = 0, nother = 0, nmask = 0, named = 0;
	uint32_t last_id = 0;
	int have_id = 0;

	if (len < HDR || (len - HDR) % ENT || rd32(p) != ACL_VERSION || count(len) > ARF_OPS_ACL_MAX)
		return -EINVAL;
	for (size_t i = 0; i < count(len); i++) {
		const uint8_t *e = p + HDR + i * ENT;
		unsigned tag = rd16(e), perm = rd16(e + 2);
		uint32_t id = rd32(e + 4);

		if (perm & ~7u)
			return -EINVAL;
		if (tag < state) /* out of order */
			return -EINVAL;
		if (tag != state)
			have_id = 0;
		state = tag;
		switch (tag) {
		case T_USER_OBJ:
			nuser_obj++;
			break;
		case T_GROUP_OBJ:
			ngroup_obj++;
			break;
		case T_OTHER:
			nother++;
			break;
		case T_MASK:
			nmask++;
			break;
		case T_USER:
		case T_GROUP:
			if (have_id && id <= last_id)
				return -EINVAL; /* sorted, each id once */
			last_id = id;
			have_id = 1;
			named++;
			break;
		default:
			return -EINVAL;
		}
	}
	if (nuser_obj != 1 || ngroup_obj != 1 || nother != 1 || nmask > 1 || (named && !nmask))
		return -EINVAL;
	return 0;
}

/* The perm of the first entry with tag, or -1. */
static int perm_of(const uint8_t *p, size_t len, unsigned tag)
{
	for (size_t i = 0; i < count(len); i++)
		if (rd16(p + HDR + i * ENT) == tag)
			return rd16(p + HDR + i * ENT + 2);
	return -1;
}

int arf_ops_acl_to_mode(const void *acl, size_t len, uint32_t *mode)
{
	const uint8_t *p = acl;
	int u = perm_of(p, len, T_USER_OBJ), g = perm_of(p, len, T_GROUP_OBJ);
	int o = perm_of(p, len, T_OTHER), m = perm_of(p, len, T_MASK);

	*mode = (*mode & ~0777u) | (uint32_t)u << 6 | (uint32_t)(m >= 0 ? m : g) << 3 | (uint32_t)o;
	return count(len) > 3;
}

void arf_ops_acl_chmod(void *acl, size_t len, uint32_t mode)
{
	uint8_t *p = acl;
	int has_mask = perm_of(p, len, T_MASK) >= 0;

	for (size_t i = 0; i < count(len); i++) {
		uint8_t *e = p + HDR + i * ENT;
		switch (rd16(e)) {
		case T_USER_OBJ:
			wr16(e + 2, (uint16_t)((mode >> 6) & 7));
			break;
		case T_GROUP_OBJ:
			if (!has_mask)
				wr16(e + 2, (uint16_t)((mode >> 3) & 7));
			break;
		case T_MASK:
			wr16(e + 2, (uint16_t)((mode >> 3) & 7));
			break;
		case T_OTHER:
			wr16(e + 2, (uint16_t)(mode & 7));
			break;
		}
	}
}

int arf_ops_acl_create(void *acl, size_t len, uint32_t *mode)
{
	uint8_t *p = acl;
	int has_mask = perm_of(p, len, T_MASK) >= 0;
	uint32_t m = *mode;

	/* posix_acl_create_masq: each base entry keeps what the mode allows */
	for (size_t i = 0; i < count(len); i++) {
		uint8_t *e = p + HDR + i * ENT;
		uint16_t perm = rd16(e + 2);
		switch (rd16(e)) {
		case T_USER_OBJ:
			wr16(e + 2, (uint16_t)(perm & ((m >> 6) & 7)));
			break;
		case T_GROUP_OBJ:
			if (!has_mask)
				wr16(e + 2, (uint16_t)(perm & ((m >> 3) & 7)));
			break;
		case T_MASK:
			wr16(e + 2, (uint16_t)(perm & ((m >> 3) & 7)));
			break;
		case T_OTHER:
			wr16(e + 2, (uint16_t)(perm & (m & 7)));
			break;
		}
	}
	return arf_ops_acl_to_mode(acl, len, mode);
}

int arf_ops_acl_permitted(const struct arf_meta_inode *in, const void *acl, size_t len,
			  const struct arf_cred *cr, int mask)
{
	const uint8_t *p = acl;
	unsigned want = (unsigned)mask & 7u;
	int found = 0, mperm = perm_of(p, len, T_MASK);

	for (size_t i = 0; i < count(len); i++) {
		const uint8_t *e = p + HDR + i * ENT;
		unsigned perm = rd16(e + 2);
		uint32_t id = rd32(e + 4);

		switch (rd16(e)) {
		case T_USER_OBJ:
			if (cr->uid == in->uid)
				return (perm & want) == want ? 0 : -EACCES;
			break;
		case T_USER:
			if (cr->uid == id)
				goto masked;
			break;
		case T_GROUP_OBJ:
			id = in->gid;
			/* fall through */
		case T_GROUP:
			if (ops_in_group(cr, id)) {
				found = 1;
				if ((perm & want) == want)
					goto masked;
			}
			break;
		case T_OTHER:
			if (found)
				return -EACCES;
			return (perm & want) == want ? 0 : -EACCES;
		}
		continue;
masked:
		if (mperm >= 0)
			perm &= (unsigned)mperm;
		return (perm & want) == want ? 0 : -EACCES;
	}
	return -EACCES; /* a valid ACL always has an other entry */
}

int ops_acl_check(const struct arf_meta_inode *in, const struct arf_cred *cr, int mask)
{
	const void *acl;
	size_t len;

	if (!(in->flags & ARF_META_INO_ACL) || !acl_source ||
	    acl_source(acl_ctx, in->ino, in->gen, &acl, &len) || arf_ops_acl_valid(acl, len))
		return 1; /* no ACL: the mode decides */
	return arf_ops_acl_permitted(in, acl, len, cr, mask);
}
