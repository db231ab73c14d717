/* SPDX-License-Identifier: MIT */
/*
 * What the standard programs share: the helpers as C functions (the usual
 * eBPF idiom: a function pointer whose value is the helper id, which clang
 * turns into `call id`), the exported layout (arf_meta.h), and the little
 * pieces every program needs: bucket arithmetic, reading an entry or an
 * inode consistently, converting an inode to attributes.  Restricted C for
 * clang -O2 -target bpf -mcpu=v3 -ffreestanding: no system headers, no
 * globals, stack frames under 512 bytes (big copies go to the scratch
 * region).
 */
#ifndef ARF_PROG_H
#define ARF_PROG_H

#include "arf_meta.h"
#include "arf_prog_abi.h"

#define EPERM_        1
#define ENOENT_       2
#define EINVAL_       22
#define ENOTDIR_      20
#define ENAMETOOLONG_ 36
#define ESTALE_       116

#define DT_DIR_ 4
#define DT_LNK_ 10

#define S_IFMT_  0170000u
#define S_IFDIR_ 0040000u
#define S_IFLNK_ 0120000u

#define SEC(s) __attribute__((section(s), used))
#define HOT static __attribute__((always_inline)) inline

static long (*arf_emit)(const void *p, uint64_t len) = (void *)ARF_PH_EMIT;
static long (*arf_memcmp)(const void *a, const void *b, uint64_t len) = (void *)ARF_PH_MEMCMP;
static uint64_t (*arf_name_hash)(uint64_t parent, const void *name, uint64_t len) =
	(void *)ARF_PH_NAME_HASH;
static long (*arf_obj_read)(void *dst, uint64_t len, uint64_t src) = (void *)ARF_PH_OBJ_READ;

#define SB ((const struct arf_meta_super *)ARF_PROG_META)

HOT uint32_t prog_bucket(uint32_t hash)
{
	uint32_t mask = SB->hash_mask, nb = SB->n_buckets;
	uint32_t h = mask ? hash & mask : hash;

	return nb ? h % nb : 0;
}

HOT uint64_t prog_entry_addr(uint32_t idx)
{
	return ARF_PROG_META + SB->off_entries + (uint64_t)idx * sizeof(struct arf_meta_dirent);
}

HOT uint64_t prog_inode_addr(uint64_t ino)
{
	return ARF_PROG_META + SB->off_inodes + (ino - 1) * sizeof(struct arf_meta_inode);
}

HOT void prog_attr(const struct arf_meta_inode *in, struct arf_prog_attr *a)
{
	ARF_META_ATTR_FROM_INODE(a, in); /* the list arfd and libarf copy too */
	a->pad0 = 0;
}

/*
 * Walks the hash chain of (dir, name) hop by hop, each entry copied to e
 * (in the scratch region) and validated.  0 with *out filled, -ENOENT,
 * or ARF_ETORN/ARF_ECSUM when an entry would not validate.
 */
static __attribute__((noinline, unused)) long prog_chain_lookup(uint64_t dir, const char *name,
							 uint64_t len, struct arf_meta_dirent *e,
							 struct arf_prog_lookup_out *out)
{
	uint32_t h = (uint32_t)arf_name_hash(dir, name, len);
	uint32_t idx = prog_bucket(h);
	uint32_t nent = SB->n_entries;
	uint32_t hops = 0;
	long rc;

	for (;;) {
		if (idx >= nent)
			return ARF_ECSUM; /* a link that cannot be right */
		rc = arf_obj_read(e, sizeof(*e), prog_entry_addr(idx));
		if (rc)
			return rc;
		hops++;
		if (e->parent == dir && e->hash == h && e->namelen == len &&
		    arf_memcmp(e->name, name, len) == 0) {
			out->child = e->child;
			out->gen = e->child_gen;
			out->type = e->type;
			out->hops = hops;
			out->pad0 = 0;
			return 0;
		}
		if (e->next == ARF_META_NONE)
			return -ENOENT_;
		idx = e->next;
	}
}

#endif /* ARF_PROG_H */
