/* SPDX-License-Identifier: MIT */
/*
 * arfd/xattr — extended attributes: user.*, trusted.* and the POSIX ACLs
 * (system.posix_acl_access, system.posix_acl_default).
 *
 * Where they live.  Not in the exported regions: an inode record has no
 * room left, a variable-sized block per file would need an allocator of
 * its own in META, and no one-sided reader needs the values -- the kernel
 * asks for an ACL once per file and caches it.  They are kept in arfd's
 * memory (a table by inode) and in the store, one key per attribute
 * ('X' + ino + gen + name -> value), written in the same RocksDB batch as
 * the transaction that changes the inode's ctime, so a crash keeps both or
 * neither.  What the regions do carry is three inode flag bits
 * (ARF_META_INO_XATTR, _ACL, _DACL: arf_meta.h), so that a one-sided reader
 * learns that a file has no attributes without a request, and ops/ knows
 * when a permission check must consult the ACL (registered here as ops/'s
 * ACL source).  A freed inode's attributes go with the transaction that
 * freed it (arfd_xattr_txn); those of a file that vanished in a crash are
 * dropped at start.  A reused slot has a new generation, so it never sees
 * its predecessor's attributes.
 *
 * Names and rules, as Linux's:
 *  - user.*: regular files and directories only (ENODATA to read, EPERM to
 *    write elsewhere); reading needs read permission, writing write
 *    permission, and in a sticky directory ownership (EPERM).
 *  - trusted.*: root proven on its host only (ENODATA to read, EPERM to
 *    write, unlisted otherwise).
 *  - system.posix_acl_access / _default: anyone may read them; the owner or
 *    root may set or remove them (EPERM); the value must be a valid ACL
 *    (EINVAL); a default ACL only on a directory (EACCES).  Setting an
 *    access ACL sets the mode's rwx bits (and clears S_ISGID when the
 *    caller is neither root nor in the file's group); one that says no more
 *    than the mode is not kept.
 *  - security.* and any other system.* name: EOPNOTSUPP.  ARF serves no
 *    security module's labels over the network, and arf-fuse answers the
 *    kernel's security.capability probe on every write locally.
 * Limits: a name of 1 to 255 bytes with its prefix (ERANGE past it, EINVAL
 * when only the prefix), a value up to 64 KiB (E2BIG), 256 KiB of names
 * and values per file and 64 KiB of names (ENOSPC), [export] xattr_mib in
 * all (ENOSPC).  XATTR_CREATE on an existing name: EEXIST; XATTR_REPLACE
 * or remove of a missing one: ENODATA; a GET or LIST whose buffer is too
 * small: ERANGE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arf_proto.h"
#include "arfd.h"
#include "log.h"
#include "xattr.h"

#define ACL_ACCESS  "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"
#define ENT_OVERHEAD 32u /* what an attribute costs beyond its bytes, for xattr_mib */

struct xa_ent {
	struct xa_ent *next;     /* sorted by name */
	uint32_t nlen, vlen;
	uint8_t data[];          /* name, then value */
};

struct xa_inode {
	struct xa_inode *next;   /* hash chain */
	uint64_t ino;
	uint32_t gen;
	struct xa_ent *ents;
	uint32_t bytes;          /* names and values */
	uint32_t listlen;        /* names with their NULs */
};

struct arfd_xattrs {
	struct xa_inode **tab;
	size_t nb;
	uint64_t bytes;          /* every attribute, with ENT_OVERHEAD each */
};

enum ns { NS_USER, NS_TRUSTED, NS_ACL_ACCESS, NS_ACL_DEFAULT, NS_UNSUPPORTED };

static enum ns ns_of(const char *name, size_t n)
{
	if (n >= 5 && !memcmp(name, "user.", 5))
		return NS_USER;
	if (n >= 8 && !memcmp(name, "trusted.", 8))
		return NS_TRUSTED;
	if (n == sizeof(ACL_ACCESS) - 1 && !memcmp(name, ACL_ACCESS, n))
		return NS_ACL_ACCESS;
	if (n == sizeof(ACL_DEFAULT) - 1 && !memcmp(name, ACL_DEFAULT, n))
		return NS_ACL_DEFAULT;
	return NS_UNSUPPORTED;
}

/* 0, -ERANGE (too long), -EINVAL (empty, a NUL, a prefix alone). */
static int name_check(const char *name, uint32_t n)
{
	if (n > ARF_XATTR_NAME_MAX)
		return -ERANGE;
	if (!n || memchr(name, 0, n))
		return -EINVAL;
	if ((n == 5 && !memcmp(name, "user.", 5)) || (n == 8 && !memcmp(name, "trusted.", 8)))
		return -EINVAL;
	return 0;
}

static size_t bucket(const struct arfd_xattrs *xs, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (xs->nb - 1);
}

static struct xa_inode *xi_find(struct arfd_xattrs *xs, uint64_t ino, uint32_t gen)
{
	struct xa_inode *xi = xs->tab[bucket(xs, ino)];
	while (xi && (xi->ino != ino || xi->gen != gen))
		xi = xi->next;
	return xi;
}

static struct xa_inode *xi_get(struct arfd_xattrs *xs, uint64_t ino, uint32_t gen)
{
	struct xa_inode *xi = xi_find(xs, ino, gen);
	if (xi || !(xi = calloc(1, sizeof(*xi))))
		return xi;
	xi->ino = ino;
	xi->gen = gen;
	size_t b = bucket(xs, ino);
	xi->next = xs->tab[b];
	xs->tab[b] = xi;
	return xi;
}

static void xi_unlink(struct arfd_xattrs *xs, struct xa_inode *xi)
{
	struct xa_inode **pp = &xs->tab[bucket(xs, xi->ino)];
	while (*pp != xi)
		pp = &(*pp)->next;
	*pp = xi->next;
	free(xi);
}

static struct xa_ent **ent_find(struct xa_inode *xi, const char *name, uint32_t n)
{
	struct xa_ent **pp = &xi->ents;
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->nlen == n && !memcmp((*pp)->data, name, n))
			return pp;
	return NULL;
}

/* 'X' + ino + gen + name. */
static size_t make_key(uint8_t *k, uint64_t ino, uint32_t gen, const void *name, uint32_t n)
{
	k[0] = 'X';
	for (int i = 0; i < 8; i++)
		k[1 + i] = (uint8_t)(ino >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		k[9 + i] = (uint8_t)(gen >> (24 - 8 * i));
	memcpy(k + 13, name, n);
	return 13 + n;
}

static void stage(struct arfd *d, const struct xa_inode *xi, const void *name, uint32_t n,
		  const void *val, uint32_t vlen)
{
	uint8_t k[13 + ARF_XATTR_NAME_MAX];
	size_t kl = make_key(k, xi->ino, xi->gen, name, n);

	/* only -ENOMEM; then the change is in memory and not in the store
	 * until the attribute is written again: said, not hidden */
	if (arfd_store_queue(d->store, k, kl, val, val ? vlen : 0))
		arfd_log_limited(ARFD_LOG_WARN, "extended attribute of inode %llu not stored: out "
				 "of memory", (unsigned long long)xi->ino);
}

/* Insert or replace name's value (ent allocated by the caller). */
static void ent_put(struct arfd *d, struct xa_inode *xi, struct xa_ent *e)
{
	struct xa_ent **pp = ent_find(xi, (const char *)e->data, e->nlen);

	if (pp) {
		struct xa_ent *old = *pp;
		xi->bytes -= old->nlen + old->vlen;
		xi->listlen -= old->nlen + 1;
		d->xattrs->bytes -= old->nlen + old->vlen + ENT_OVERHEAD;
		e->next = old->next;
		*pp = e;
		free(old);
	} else {
		for (pp = &xi->ents; *pp; pp = &(*pp)->next) {
			struct xa_ent *o = *pp;
			uint32_t m = o->nlen < e->nlen ? o->nlen : e->nlen;
			int c = memcmp(o->data, e->data, m);
			if (c > 0 || (!c && o->nlen > e->nlen))
				break;
		}
		e->next = *pp;
		*pp = e;
	}
	xi->bytes += e->nlen + e->vlen;
	xi->listlen += e->nlen + 1;
	d->xattrs->bytes += e->nlen + e->vlen + ENT_OVERHEAD;
	stage(d, xi, e->data, e->nlen, e->data + e->nlen, e->vlen);
}

static void ent_del(struct arfd *d, struct xa_inode *xi, struct xa_ent **pp)
{
	struct xa_ent *e = *pp;

	stage(d, xi, e->data, e->nlen, NULL, 0);
	xi->bytes -= e->nlen + e->vlen;
	xi->listlen -= e->nlen + 1;
	d->xattrs->bytes -= e->nlen + e->vlen + ENT_OVERHEAD;
	*pp = e->next;
	free(e);
}

static struct xa_ent *ent_new(const void *name, uint32_t n, const void *val, uint32_t vlen)
{
	struct xa_ent *e = malloc(sizeof(*e) + n + vlen);
	if (!e)
		return NULL;
	e->next = NULL;
	e->nlen = n;
	e->vlen = vlen;
	memcpy(e->data, name, n);
	if (vlen)
		memcpy(e->data + n, val, vlen);
	return e;
}

static const struct xa_ent *ent_get(struct arfd *d, uint64_t ino, uint32_t gen, const char *name)
{
	struct xa_inode *xi = xi_find(d->xattrs, ino, gen);
	struct xa_ent **pp = xi ? ent_find(xi, name, (uint32_t)strlen(name)) : NULL;
	return pp ? *pp : NULL;
}

/* The live inode of a handle, or NULL. */
static struct arf_meta_inode *live(struct arfd *d, uint64_t ino, uint32_t gen)
{
	if (!ino || ino > d->fs.sb->n_inodes)
		return NULL;
	struct arf_meta_inode *in = arf_meta_inode_ptr(&d->fs, ino);
	return in->ino == ino && in->gen == gen ? in : NULL;
}

/* The flag bits that say what the inode has. */
static uint32_t flags_of(struct arfd *d, const struct arf_meta_inode *in)
{
	struct xa_inode *xi = xi_find(d->xattrs, in->ino, in->gen);
	uint32_t f = in->flags & ~(ARF_META_INO_XATTR | ARF_META_INO_ACL | ARF_META_INO_DACL);

	if (xi && xi->ents)
		f |= ARF_META_INO_XATTR;
	if (xi && ent_find(xi, ACL_ACCESS, sizeof(ACL_ACCESS) - 1))
		f |= ARF_META_INO_ACL;
	if (xi && ent_find(xi, ACL_DEFAULT, sizeof(ACL_DEFAULT) - 1))
		f |= ARF_META_INO_DACL;
	return f;
}

/* Touch the inode (room reserved by the caller): flags as the table says,
 * ctime now, the mode when mode is not NULL. */
static struct arf_meta_inode *touch(struct arfd *d, uint64_t ino, const uint32_t *mode)
{
	struct arf_meta_inode *in = arf_meta_inode_touch(&d->fs, ino);
	struct timespec ts;

	in->flags = flags_of(d, in);
	if (mode)
		in->mode = *mode;
	clock_gettime(CLOCK_REALTIME, &ts);
	in->ctime_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	return in;
}

static void reply_inode(struct arf_proto_wr *w, const struct arf_meta_inode *in)
{
	struct arf_proto_attr p;
	ARF_META_ATTR_FROM_INODE(&p, in);
	arf_proto_put_attr(w, &p);
}

static int proven_root(const struct arfd_req *q)
{
	return q->cr->uid == 0 && q->ac && q->ac->trust == ARFD_TRUST_ROOT;
}

static int owner_or_root(const struct arf_meta_inode *in, const struct arf_cred *cr)
{
	return cr->uid == 0 || cr->uid == in->uid;
}

/* May q read (write = 0) or change (write = 1) name's namespace on in? */
static int may(const struct arfd_req *q, const struct arf_meta_inode *in, enum ns ns, int write)
{
	switch (ns) {
	case NS_USER:
		if (!S_ISREG(in->mode) && !S_ISDIR(in->mode))
			return write ? -EPERM : -ENODATA;
		if (write && S_ISDIR(in->mode) && (in->mode & S_ISVTX) && !owner_or_root(in, q->cr))
			return -EPERM;
		return arf_ops_permitted(in, q->cr, write ? W_OK : R_OK);
	case NS_TRUSTED:
		return proven_root(q) ? 0 : write ? -EPERM : -ENODATA;
	case NS_ACL_ACCESS:
	case NS_ACL_DEFAULT:
		if (S_ISLNK(in->mode))
			return -EOPNOTSUPP;
		return !write || owner_or_root(in, q->cr) ? 0 : -EPERM;
	default:
		return -EOPNOTSUPP;
	}
}

/* ---- procedures ---- */

int arfd_p_xattr_get(struct arfd_req *q)
{
	struct arf_proto_fh fh;
	uint32_t n = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &n);
	uint32_t size = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	struct arf_meta_inode *in = live(q->d, fh.ino, fh.gen);
	if (!in)
		return -ESTALE;
	if ((rc = name_check(name, n)) || (rc = may(q, in, ns_of(name, n), 0)))
		return rc;
	struct xa_inode *xi = xi_find(q->d->xattrs, fh.ino, fh.gen);
	struct xa_ent **pp = xi ? ent_find(xi, name, n) : NULL;
	if (!pp)
		return -ENODATA;
	if (size && size < (*pp)->vlen)
		return -ERANGE;
	arf_proto_put_u32(q->w, (*pp)->vlen);
	if (size)
		arf_proto_put_bytes(q->w, (*pp)->data + (*pp)->nlen, (*pp)->vlen);
	return 0;
}

int arfd_p_xattr_list(struct arfd_req *q)
{
	struct arf_proto_fh fh;

	arf_proto_get_fh(q->r, &fh);
	uint32_t size = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	struct arf_meta_inode *in = live(q->d, fh.ino, fh.gen);
	if (!in)
		return -ESTALE;
	struct xa_inode *xi = xi_find(q->d->xattrs, fh.ino, fh.gen);
	uint32_t len = 0;
	int root = proven_root(q);
	for (struct xa_ent *e = xi ? xi->ents : NULL; e; e = e->next)
		if (root || ns_of((const char *)e->data, e->nlen) != NS_TRUSTED)
			len += e->nlen + 1;
	if (size && size < len)
		return -ERANGE;
	arf_proto_put_u32(q->w, len);
	if (!size)
		return 0;
	arf_proto_put_u32(q->w, len);
	for (struct xa_ent *e = xi ? xi->ents : NULL; e; e = e->next)
		if (root || ns_of((const char *)e->data, e->nlen) != NS_TRUSTED) {
			arf_proto_put(q->w, e->data, e->nlen);
			arf_proto_put(q->w, "", 1);
		}
	return 0;
}

/* Setting an access ACL: the mode follows it; one that is just the mode is
 * dropped (*keep = 0). */
static void acl_access_mode(const struct arfd_req *q, const struct arf_meta_inode *in,
			    const void *acl, size_t len, uint32_t *mode, int *keep)
{
	*mode = in->mode;
	*keep = arf_ops_acl_to_mode(acl, len, mode);
	if (q->cr->uid != 0 && q->cr->gid != in->gid) {
		int in_group = 0;
		for (uint32_t i = 0; i < q->cr->ngroups && i < ARF_OPS_NGROUPS; i++)
			in_group |= q->cr->groups[i] == in->gid;
		if (!in_group)
			*mode &= ~(uint32_t)S_ISGID;
	}
}

int arfd_p_xattr_set(struct arfd_req *q)
{
	struct arfd *d = q->d;
	struct arfd_xattrs *xs = d->xattrs;
	struct arf_proto_fh fh;
	uint32_t n = 0, vlen = 0, mode;
	int rc, keep = 1;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &n);
	const uint8_t *val = arf_proto_get_bytes(q->r, UINT32_MAX, &vlen);
	uint32_t flags = arf_proto_get_u32(q->r);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	struct arf_meta_inode *in = live(d, fh.ino, fh.gen);
	if (!in)
		return -ESTALE;
	enum ns ns = ns_of(name, n);
	if ((rc = name_check(name, n)) || (rc = may(q, in, ns, 1)))
		return rc;
	if ((flags & ~(ARF_XATTR_CREATE | ARF_XATTR_REPLACE)) ||
	    (flags == (ARF_XATTR_CREATE | ARF_XATTR_REPLACE)))
		return -EINVAL;
	if (vlen > ARF_XATTR_VALUE_MAX)
		return -E2BIG;
	if (ns == NS_ACL_ACCESS || ns == NS_ACL_DEFAULT) {
		if (arf_ops_acl_valid(val, vlen))
			return -EINVAL;
		if (ns == NS_ACL_DEFAULT && !S_ISDIR(in->mode))
			return -EACCES;
	}
	struct xa_inode *xi = xi_find(xs, fh.ino, fh.gen);
	struct xa_ent **pp = xi ? ent_find(xi, name, n) : NULL;
	const struct xa_ent *old = pp ? *pp : NULL;
	if ((flags & ARF_XATTR_CREATE) && old)
		return -EEXIST;
	if ((flags & ARF_XATTR_REPLACE) && !old)
		return -ENODATA;
	if (ns == NS_ACL_ACCESS)
		acl_access_mode(q, in, val, vlen, &mode, &keep);
	int64_t grow = (int64_t)n + vlen - (old ? (int64_t)old->nlen + old->vlen : 0);
	if (keep && ((int64_t)(xi ? xi->bytes : 0) + grow > ARFD_XATTR_INODE_MAX ||
		     (xi ? xi->listlen : 0) + (old ? 0 : n + 1) > ARF_XATTR_LIST_MAX ||
		     (int64_t)xs->bytes + grow + ENT_OVERHEAD > d->cfg.xattr_mib << 20))
		return -ENOSPC;
	struct xa_ent *e = keep ? ent_new(name, n, val, vlen) : NULL;
	if (keep && !e)
		return -ENOMEM;
	if ((rc = arf_meta_txn_reserve(&d->fs, 1)) || (keep && !(xi = xi_get(xs, fh.ino, fh.gen)))) {
		free(e);
		return rc ? rc : -ENOMEM;
	}
	if (keep)
		ent_put(d, xi, e);
	else if (pp)
		ent_del(d, xi, pp);
	in = touch(d, fh.ino, ns == NS_ACL_ACCESS ? &mode : NULL);
	if (xi && !xi->ents)
		xi_unlink(xs, xi);
	reply_inode(q->w, in);
	return 0;
}

int arfd_p_xattr_remove(struct arfd_req *q)
{
	struct arfd *d = q->d;
	struct arf_proto_fh fh;
	uint32_t n = 0;
	int rc;

	arf_proto_get_fh(q->r, &fh);
	const char *name = arf_proto_get_name(q->r, &n);
	if (!arf_proto_rd_done(q->r))
		return ARF_EPROTO;
	struct arf_meta_inode *in = live(d, fh.ino, fh.gen);
	if (!in)
		return -ESTALE;
	if ((rc = name_check(name, n)) || (rc = may(q, in, ns_of(name, n), 1)))
		return rc;
	struct xa_inode *xi = xi_find(d->xattrs, fh.ino, fh.gen);
	struct xa_ent **pp = xi ? ent_find(xi, name, n) : NULL;
	if (!pp)
		return -ENODATA;
	if ((rc = arf_meta_txn_reserve(&d->fs, 1)))
		return rc;
	ent_del(d, xi, pp);
	in = touch(d, fh.ino, NULL); /* the mode stays what the ACL made it, as on Linux */
	if (!xi->ents)
		xi_unlink(d->xattrs, xi);
	reply_inode(q->w, in);
	return 0;
}

/* ---- hooks in other mutations ---- */

static void xi_drop(struct arfd *d, struct xa_inode *xi)
{
	while (xi->ents)
		ent_del(d, xi, &xi->ents);
	xi_unlink(d->xattrs, xi);
}

void arfd_xattr_txn(struct arfd *d, const struct arf_meta_dirty *list, size_t n)
{
	struct arfd_xattrs *xs = d->xattrs;
	const struct arf_meta_super *sb = d->fs.sb;
	uint64_t lo = sb->off_inodes, hi = lo + (uint64_t)sb->n_inodes * sizeof(struct arf_meta_inode);

	if (!xs || !xs->bytes)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct arf_meta_dirty *o = &list[i];
		if (o->region != ARF_REGION_META || o->off < lo || o->off >= hi ||
		    o->len != sizeof(struct arf_meta_inode))
			continue;
		uint64_t ino = (o->off - lo) / sizeof(struct arf_meta_inode) + 1;
		const struct arf_meta_inode *in = arf_meta_inode_ptr(&d->fs, ino);
		for (struct xa_inode *xi = xs->tab[bucket(xs, ino)], *nx; xi; xi = nx) {
			nx = xi->next;
			if (xi->ino == ino && (in->ino != ino || in->gen != xi->gen))
				xi_drop(d, xi); /* the file is gone */
		}
	}
}

void arfd_xattr_chmod(struct arfd *d, uint64_t ino, uint32_t gen, uint32_t mode)
{
	struct xa_inode *xi = d->xattrs ? xi_find(d->xattrs, ino, gen) : NULL;
	struct xa_ent **pp = xi ? ent_find(xi, ACL_ACCESS, sizeof(ACL_ACCESS) - 1) : NULL;

	if (!pp)
		return;
	arf_ops_acl_chmod((*pp)->data + (*pp)->nlen, (*pp)->vlen, mode);
	stage(d, xi, (*pp)->data, (*pp)->nlen, (*pp)->data + (*pp)->nlen, (*pp)->vlen);
}

void arfd_xattr_inherit_begin(struct arfd *d, uint64_t dir, uint32_t dgen, const char *name,
			      size_t nlen, uint32_t *mode, int has_umask, uint32_t umask,
			      struct arfd_xattr_inherit *ih)
{
	const struct arf_meta_inode *pin = live(d, dir, dgen);
	const struct xa_ent *def = pin && (pin->flags & ARF_META_INO_DACL)
					   ? ent_get(d, dir, dgen, ACL_DEFAULT) : NULL;
	uint32_t idx;

	ih->acl = NULL;
	ih->len = 0;
	if (def && arf_meta_dir_find(&d->fs, dir, name, nlen, &idx) == -ENOENT &&
	    (ih->acl = malloc(2 * (size_t)def->vlen))) {
		/* two copies: the access ACL to be, and a directory's default */
		memcpy(ih->acl, def->data + def->nlen, def->vlen);
		memcpy(ih->acl + def->vlen, def->data + def->nlen, def->vlen);
		ih->len = def->vlen;
		return; /* no umask under a default ACL */
	}
	if (has_umask)
		*mode &= ~(umask & 0777u);
}

void arfd_xattr_inherit_end(struct arfd *d, struct arfd_xattr_inherit *ih, struct arf_ops_attr *a)
{
	struct arf_meta_inode *in;
	struct xa_inode *xi;

	if (!ih->acl)
		return;
	if (a && (in = live(d, a->ino, a->gen)) && !S_ISLNK(in->mode) &&
	    (xi = xi_get(d->xattrs, a->ino, a->gen))) {
		uint32_t mode = in->mode;
		int keep = arf_ops_acl_create(ih->acl, ih->len, &mode);
		struct xa_ent *acc = keep ? ent_new(ACL_ACCESS, sizeof(ACL_ACCESS) - 1, ih->acl,
						    (uint32_t)ih->len) : NULL;
		struct xa_ent *def = S_ISDIR(in->mode) ? ent_new(ACL_DEFAULT, sizeof(ACL_DEFAULT) - 1,
								 ih->acl + ih->len,
								 (uint32_t)ih->len) : NULL;
		if (acc)
			ent_put(d, xi, acc);
		if (def)
			ent_put(d, xi, def);
		in = touch(d, a->ino, &mode); /* touched by the create: room is there */
		if (!xi->ents)
			xi_unlink(d->xattrs, xi);
		a->mode = in->mode;
		a->ctime_ns = in->ctime_ns;
	}
	free(ih->acl);
	ih->acl = NULL;
}

/* ---- start and stop ---- */

static int acl_source(void *ctx, uint64_t ino, uint32_t gen, const void **acl, size_t *len)
{
	const struct xa_ent *e = ent_get(ctx, ino, gen, ACL_ACCESS);

	if (!e)
		return -ENODATA;
	*acl = e->data + e->nlen;
	*len = e->vlen;
	return 0;
}

struct load_ctx {
	struct arfd *d;
	uint64_t kept, dropped;
};

static int load_one(void *ctx, const uint8_t *k, size_t klen, const uint8_t *val, size_t vlen)
{
	struct load_ctx *lc = ctx;
	struct arfd *d = lc->d;
	uint64_t ino = 0;
	uint32_t gen = 0, n = (uint32_t)(klen - 13);
	char err[256];

	if (klen < 14 || klen > 13 + ARF_XATTR_NAME_MAX || vlen > ARF_XATTR_VALUE_MAX)
		return 0;
	for (int i = 0; i < 8; i++)
		ino = ino << 8 | k[1 + i];
	for (int i = 0; i < 4; i++)
		gen = gen << 8 | k[9 + i];
	struct xa_inode *xi;
	struct xa_ent *e;
	if (!live(d, ino, gen)) { /* its file went in a crash: the attribute goes too */
		lc->dropped++;
		return arfd_store_put(d->store, k, klen, NULL, 0, 0, err, sizeof(err)) ? -EIO : 0;
	}
	if (!(xi = xi_get(d->xattrs, ino, gen)) || !(e = ent_new(k + 13, n, val, (uint32_t)vlen)))
		return -ENOMEM;
	e->next = NULL;
	/* keys come sorted by name within a file: append */
	struct xa_ent **pp = &xi->ents;
	while (*pp)
		pp = &(*pp)->next;
	*pp = e;
	xi->bytes += n + (uint32_t)vlen;
	xi->listlen += n + 1;
	d->xattrs->bytes += n + vlen + ENT_OVERHEAD;
	lc->kept++;
	return 0;
}

int arfd_xattr_start(struct arfd *d, char *err, size_t errlen)
{
	struct arfd_xattrs *xs = calloc(1, sizeof(*xs));
	struct load_ctx lc = { d, 0, 0 };
	int rc;

	if (!xs || !(xs->tab = calloc(xs->nb = 4096, sizeof(*xs->tab)))) {
		free(xs);
		snprintf(err, errlen, "extended attributes: out of memory");
		return -ENOMEM;
	}
	d->xattrs = xs;
	if ((rc = arfd_store_scan(d->store, "X", 1, load_one, &lc, err, errlen))) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "extended attributes: out of memory");
		return rc;
	}
	if (lc.kept || lc.dropped)
		arfd_log(ARFD_LOG_INFO, "extended attributes: %llu loaded, %llu of vanished files "
			 "dropped", (unsigned long long)lc.kept, (unsigned long long)lc.dropped);
	arf_ops_set_acl_source(acl_source, d);
	return 0;
}

void arfd_xattr_stop(struct arfd *d)
{
	struct arfd_xattrs *xs = d->xattrs;

	if (!xs)
		return;
	arf_ops_set_acl_source(NULL, NULL);
	for (size_t b = 0; b < xs->nb; b++)
		while (xs->tab[b]) {
			struct xa_inode *xi = xs->tab[b];
			while (xi->ents) {
				struct xa_ent *e = xi->ents;
				xi->ents = e->next;
				free(e);
			}
			xs->tab[b] = xi->next;
			free(xi);
		}
	free(xs->tab);
	free(xs);
	d->xattrs = NULL;
}
