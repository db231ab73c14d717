/* SPDX-License-Identifier: MIT */
/*
 * arfd/helpers — what programs may call besides the engine's own emit,
 * memcmp and memmem: the directory's name hash, a consistent read of a
 * self-verifying object (copied and validated, retried), emitting a word,
 * and the ops/ hooks mkdir and create.
 *
 * None of them resolves a name, walks a chain, lists a directory or matches
 * a pattern: programs do that work, and pay for it in instructions.
 *
 * The hooks run exactly as a request's would: the request's credentials
 * (squashed as the export says), the same ops/ functions with their
 * permission checks, under the filesystem lock, inside a transaction that
 * arfd_txn_commit writes to RocksDB and, on a sync export, hands to the
 * group commit; the run's reply then waits for that commit.  A hook's
 * failure is the program's to handle: r0 = -errno, the run goes on.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "arf_meta.h"
#include "arf_prog_abi.h"
#include "arfd.h"
#include "helpers.h"

#define OBJ_READ_TRIES 64 /* copies of a changing object before giving up */

static int h_name_hash(struct arf_mc_call *c, uint64_t *ret)
{
	*ret = arf_meta_name_hash(c->arg[0], c->ptr[1], c->arg[2]);
	return 0;
}

static int h_obj_read(struct arf_mc_call *c, uint64_t *ret)
{
	uint64_t len = c->arg[1];
	const uint8_t *src = arf_mc_vm_translate(c->vm, c->arg[2], len, 0);
	int rc = 0;

	if (!src) {
		c->why = "source is not readable memory of that length";
		return ARF_EFAULT;
	}
	if (len < sizeof(struct arf_meta_hdr)) {
		c->why = "shorter than an object header";
		return -EINVAL;
	}
	for (int i = 0; i < OBJ_READ_TRIES; i++) {
		/* a deliberate race with writers, as a one-sided read is: the
		 * version and checksum say whether the copy is whole */
		memmove(c->ptr[0], src, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		rc = arf_meta_obj_validate(c->ptr[0], len);
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
	p->ino = a->ino;
	p->gen = a->gen;
	p->mode = a->mode;
	p->nlink = a->nlink;
	p->uid = a->uid;
	p->gid = a->gid;
	p->size = a->size;
	p->blocks = a->blocks;
	p->atime_ns = a->atime_ns;
	p->mtime_ns = a->mtime_ns;
	p->ctime_ns = a->ctime_ns;
	p->rdev = a->rdev;
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
	pthread_mutex_lock(&d->fs_lock);
	if (d->cfg.read_only) {
		rc = -EROFS;
	} else {
		arf_meta_txn_begin(&d->fs);
		if ((uintptr_t)c->ctx == ARF_PH_MKDIR)
			rc = arf_ops_mkdir(&d->fs, &ex->cr, pa->ino, pa->gen, name, nlen, mode, &a);
		else
			rc = arf_ops_create(&d->fs, &ex->cr, pa->ino, pa->gen, name, nlen, mode, excl,
					    &a);
		uint64_t seq = arfd_txn_commit(d, &rc);
		if (seq)
			ex->seq = seq;
	}
	pthread_mutex_unlock(&d->fs_lock);
	if (!rc)
		to_prog_attr(&a, pa);
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
	};

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		int rc = arf_mc_helpers_add(h, &defs[i], err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}
