/* SPDX-License-Identifier: MIT */
/*
 * arfd/helpers — what programs may call besides the engine's own emit,
 * memcmp and memmem: the directory's name hash, a consistent read of a
 * self-verifying object (copied and validated, retried), emitting a word,
 * the ops/ hooks mkdir and create, a permission-checked lookup of one name,
 * and a view of a file's bytes (dir_read and file_digest, for tree walks,
 * are in helpers_walk.c).
 *
 * Programs resolve names, walk chains, list directories and match patterns
 * themselves, and pay for it in instructions -- when they may read the
 * exported regions, which only a run for root proven on a connection with
 * region keys may (arfd_identity_sees_regions).  Every other run sees
 * empty regions, so `lookup` resolves one name for it, through
 * arf_ops_lookup with the run's credentials, as a LOOKUP request would.
 *
 * Every helper pays for its work in instructions (arf_mc_call_charge):
 * bytes hashed, copied and validated, a fixed price for what takes the
 * filesystem lock; the ones that loop (obj_read's retries, file_view's
 * copy) charge each round and stop when the charge says the budget or the
 * deadline is spent, and the ones that take the lock look at the clock
 * after it.  So a program made of helper calls is bounded like any other:
 * by max_insns, and within milliseconds of max_wall_ms.
 *
 * The hooks run exactly as a request's would: the request's credentials
 * (squashed as the export says), the same ops/ functions with their
 * permission checks, under the filesystem lock, inside a transaction that
 * arfd_txn_commit writes to the store and hands to the group commit;
 * the run's reply then waits for that commit (metadata is durable before
 * its reply on every export).  A hook's
 * failure is the program's to handle: r0 = -errno, the run goes on.
 *
 * file_view reads a range of a regular file as a READ request does (the
 * request's credentials, arf_ops_read's permission check, under the lock,
 * so the bytes are one state of the file) into a buffer owned by the
 * worker thread, lent to the run as a read-only region: arf-grep's
 * generated matchers scan it there, so only what they emit crosses the
 * network.  A run may take several views (arf-grep's batch of small
 * files): they share one region of ARF_PROG_VIEW_MAX bytes, each placed
 * after the last, so a run costs the vm one region however many files it
 * reads; a view that would go past the region's end is -EBUSY.  Bytes of
 * the region past the views are zeros, never an earlier run's file.  The
 * buffer is reused by the thread's next run (which clears the region table
 * first) and freed when it exits.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arf_meta.h"
#include "arf_prog_abi.h"
#include "arfd.h"
#include "xattr.h"
#include "helpers.h"

#define OBJ_READ_TRIES 64 /* copies of a changing object before giving up */

/*
 * Prices, in instructions, of what is not a matter of bytes: a hook (the
 * lock, a transaction, a RocksDB write) and a lookup (the lock, a chain
 * walk in C: about what a program pays to read one chain entry itself).
 */
#define COST_HOOK   4096u
#define COST_LOOKUP 128u

static int h_name_hash(struct arf_mc_call *c, uint64_t *ret)
{
	if (c->arg[2] > ARF_NAME_MAX) {
		c->why = "a name is at most 255 bytes";
		return -ENAMETOOLONG;
	}
	*ret = arf_meta_name_hash(c->arg[0], c->ptr[1], c->arg[2]);
	return arf_mc_call_charge_bytes(c, c->arg[2]);
}

static int h_obj_read(struct arf_mc_call *c, uint64_t *ret)
{
	uint64_t len = c->arg[1];
	const uint8_t *src = arf_mc_vm_translate(c->vm, c->arg[2], len, 0);
	int rc = 0, stop;

	if (!src) {
		c->why = "source is not readable memory of that length";
		return ARF_EFAULT;
	}
	if (len < sizeof(struct arf_meta_hdr)) {
		c->why = "shorter than an object header";
		return -EINVAL;
	}
	if (len > ARF_PROG_OBJ_MAX) {
		c->why = "longer than any object (ARF_PROG_OBJ_MAX, 1 MiB)";
		return -EINVAL;
	}
	for (int i = 0; i < OBJ_READ_TRIES; i++) {
		/* a deliberate race with writers, as a one-sided read is: the
		 * version and checksum say whether the copy is whole */
		memmove(c->ptr[0], src, len);
		rc = arf_meta_obj_validate(c->ptr[0], len); /* of the copy: no fence needed */
		/* the copy, the checksum and (for a never-written object) the
		 * zero check: each try pays for its three passes */
		if ((stop = arf_mc_call_charge_bytes(c, 3 * len)))
			return stop;
		if (!rc)
			break;
		if (i > 8)
			sched_yield();
	}
	*ret = (uint64_t)(int64_t)rc;
	return 0;
}

static int h_emit_u64(struct arf_mc_call *c, uint64_t *ret)
{
	uint64_t v = c->arg[0];

	*ret = 0;
	return arf_mc_vm_emit(c->vm, &v, sizeof(v));
}

static void to_prog_attr(const struct arf_ops_attr *a, struct arf_prog_attr *p)
{
	memset(p, 0, sizeof(*p));
	ARF_META_ATTR_COPY(p, a);
}

/* mkdir and create: (attr: parent in, child out; name; mode). */
static int h_make(struct arf_mc_call *c, uint64_t *ret)
{
	struct arfd_exec *ex = c->user;
	struct arfd *d = ex->d;
	struct arf_prog_attr *pa = c->ptr[0];
	const char *name = c->ptr[2];
	size_t nlen = c->arg[3];
	uint32_t mode = (uint32_t)c->arg[4];
	int excl = (c->arg[4] & ARF_PROG_EXCL) != 0, rc;
	struct arf_ops_attr a;

	if (c->arg[1] < sizeof(*pa)) {
		*ret = (uint64_t)(int64_t)-EINVAL;
		return 0;
	}
	if ((rc = arf_mc_call_charge(c, COST_HOOK + nlen / ARF_MC_BYTES_PER_INSN)))
		return rc;
	arfd_fs_lock(d);
	if (d->cfg.read_only) {
		rc = -EROFS;
	} else if (!(rc = arfd_txn_begin(d))) { /* -EIO once the export failed */
		struct arfd_xattr_inherit ih; /* a default ACL of the directory */
		arfd_xattr_inherit_begin(d, pa->ino, pa->gen, name, nlen, &mode, 0, 0, &ih);
		if ((uintptr_t)c->ctx == ARF_PH_MKDIR)
			rc = arf_ops_mkdir(&d->fs, &ex->cr, pa->ino, pa->gen, name, nlen, mode, &a);
		else
			rc = arf_ops_create(&d->fs, &ex->cr, pa->ino, pa->gen, name, nlen, mode, excl,
					    &a);
		arfd_xattr_inherit_end(d, &ih, rc ? NULL : &a);
		uint64_t seq = arfd_txn_commit(d, 0, &rc);
		if (seq)
			ex->seq = seq;
	}
	arfd_fs_unlock(d);
	if (!rc)
		to_prog_attr(&a, pa);
	*ret = (uint64_t)(int64_t)rc;
	return arf_mc_call_check(c); /* the lock and RocksDB may have taken a while */
}

/* lookup: (attr: directory in, child out; name; len), as a LOOKUP request. */
static int h_lookup(struct arf_mc_call *c, uint64_t *ret)
{
	struct arfd_exec *ex = c->user;
	struct arfd *d = ex->d;
	struct arf_prog_attr *pa = c->ptr[0];
	size_t nlen = c->arg[3];
	struct arf_ops_attr a;
	int rc;

	if (c->arg[1] < sizeof(*pa)) {
		*ret = (uint64_t)(int64_t)-EINVAL;
		return 0;
	}
	if ((rc = arf_mc_call_charge(c, COST_LOOKUP + nlen / ARF_MC_BYTES_PER_INSN)))
		return rc;
	arfd_fs_rdlock(d);
	rc = arfd_failed(d) ? -EIO /* commit.c */
			    : arf_ops_lookup(&d->fs, &ex->cr, pa->ino, pa->gen, c->ptr[2], nlen, &a);
	arfd_fs_rdunlock(d);
	if (!rc)
		to_prog_attr(&a, pa);
	*ret = (uint64_t)(int64_t)rc;
	return arf_mc_call_check(c);
}

struct view_buf {
	uint8_t *p;       /* ARF_PROG_VIEW_MAX bytes once used: the region */
	size_t dirty;     /* bytes from p that may be non-zero */
	size_t used;      /* bytes of p given to this run's views */
	uint64_t addr;    /* the region's address in this run */
};

static pthread_key_t view_key;
static pthread_once_t view_once = PTHREAD_ONCE_INIT;
static int view_key_rc;

static void view_buf_free(void *a)
{
	struct view_buf *b = a;

	if (b) {
		free(b->p);
		free(b);
	}
}

static void view_key_make(void)
{
	view_key_rc = pthread_key_create(&view_key, view_buf_free);
}

/* The calling thread's view buffer (NULL: no memory).  Its pages are
 * touched only as views fill them: calloc'd, and zeroed again only as far
 * as an earlier run wrote. */
static struct view_buf *view_buf(void)
{
	struct view_buf *b;

	pthread_once(&view_once, view_key_make);
	if (view_key_rc)
		return NULL;
	b = pthread_getspecific(view_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(view_key, b)) {
			free(b);
			return NULL;
		}
	}
	if (!b->p && !(b->p = calloc(1, ARF_PROG_VIEW_MAX)))
		return NULL;
	return b;
}

/* A view's fixed price: the lock and a getattr, however few bytes. */
#define COST_VIEW COST_LOOKUP

static int h_file_view(struct arf_mc_call *c, uint64_t *ret)
{
	struct arfd_exec *ex = c->user;
	struct arfd *d = ex->d;
	struct arf_prog_file_view *v = c->ptr[0];
	struct arf_ops_attr a;
	struct view_buf *b;
	size_t len, got = 0, stale = 0;
	uint8_t *at;
	int rc, stop = 0, first = !ex->views;

	if (c->arg[1] < sizeof(*v)) {
		*ret = (uint64_t)(int64_t)-EINVAL;
		return 0;
	}
	if ((rc = arf_mc_call_charge(c, COST_VIEW)))
		return rc;
	b = view_buf();
	if (!b) {
		*ret = (uint64_t)(int64_t)-ENOMEM;
		return 0;
	}
	if (first) {
		/* the run's first view: the region is lent once, with no
		 * byte of an earlier run's views left in it; the copy below
		 * overwrites them, and the ones past it are zeroed once it is
		 * in (the program waits in this call meanwhile): one pass over
		 * the bytes, not two */
		stale = b->dirty;
		b->used = 0;
		rc = arf_mc_vm_add_region(c->vm, b->p, ARF_PROG_VIEW_MAX, 0, &b->addr);
		if (rc) {
			*ret = (uint64_t)(int64_t)rc;
			return 0;
		}
		len = v->len > ARF_PROG_VIEW_MAX ? ARF_PROG_VIEW_MAX : (size_t)v->len;
	} else if (v->len > ARF_PROG_VIEW_MAX - b->used) {
		*ret = (uint64_t)(int64_t)-EBUSY; /* the region is full */
		return 0;
	} else {
		len = (size_t)v->len;
	}
	ex->views++;
	at = b->p + b->used;
	/* One state of the file: the whole copy under one hold of the lock,
	 * a MiB at a time, paying for each and stopping at the deadline. */
	arfd_fs_rdlock(d);
	rc = arfd_failed(d) ? -EIO /* commit.c */ : arf_ops_getattr(&d->fs, v->ino, v->gen, &a);
	if (!rc) {
		do { /* at least once: an empty view is permission-checked too */
			size_t n = len - got < ARF_MC_CHUNK ? len - got : ARF_MC_CHUNK, g = 0;

			rc = arf_ops_read(&d->fs, &ex->cr, v->ino, v->gen, v->off + got, at + got,
					  n, &g);
			got += g;
			if (rc || (stop = arf_mc_call_charge_bytes(c, n)) || g < n)
				break; /* failed, out of time or budget, or the end of the file */
		} while (got < len);
	}
	arfd_fs_rdunlock(d);
	if (first) {
		if (stale > got)
			memset(b->p + got, 0, stale - got);
		b->dirty = got;
	} else if (b->used + got > b->dirty) {
		b->dirty = b->used + got;
	}
	if (stop)
		return stop;
	if (rc) {
		/* what a failed read copied is no view: zeros again */
		memset(at, 0, got);
	} else {
		v->addr = b->addr + b->used;
		v->got = got;
		v->size = a.size;
		b->used += (got + 7) & ~(size_t)7; /* the next view starts aligned */
		if (b->used > ARF_PROG_VIEW_MAX)
			b->used = ARF_PROG_VIEW_MAX;
	}
	*ret = (uint64_t)(int64_t)rc;
	return 0;
}

int arfd_helpers_register(struct arf_mc_helpers *h, char *err, size_t errlen)
{
	const struct arf_mc_helper_def defs[] = {
		{ ARF_PH_NAME_HASH, "name_hash",
		  { ARF_MC_ARG_ANY, ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE }, h_name_hash, NULL },
		{ ARF_PH_OBJ_READ, "obj_read",
		  { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE, ARF_MC_ARG_ANY }, h_obj_read, NULL },
		{ ARF_PH_EMIT_U64, "emit_u64", { ARF_MC_ARG_ANY }, h_emit_u64, NULL },
		{ ARF_PH_MKDIR, "mkdir",
		  { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE, ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE,
		    ARF_MC_ARG_ANY }, h_make, (void *)(uintptr_t)ARF_PH_MKDIR },
		{ ARF_PH_CREATE, "create",
		  { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE, ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE,
		    ARF_MC_ARG_ANY }, h_make, (void *)(uintptr_t)ARF_PH_CREATE },
		{ ARF_PH_FILE_VIEW, "file_view", { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE },
		  h_file_view, NULL },
		{ ARF_PH_LOOKUP, "lookup",
		  { ARF_MC_ARG_PTR_RW, ARF_MC_ARG_SIZE, ARF_MC_ARG_PTR_RO, ARF_MC_ARG_SIZE },
		  h_lookup, NULL },
	};

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		int rc = arf_mc_helpers_add(h, &defs[i], err, errlen);
		if (rc)
			return rc;
	}
	return arfd_helpers_walk_register(h, err, errlen);
}
