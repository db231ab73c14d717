/* SPDX-License-Identifier: MIT */
/*
 * Chain lookup: one name in one directory, walking the bucket's hash chain
 * next to the data (one execution however long the chain).  Context:
 * struct arf_prog_lookup_arg; output: struct arf_prog_lookup_out, then with
 * ARF_PROG_LK_ATTRS the child's struct arf_prog_attr (when its inode
 * validates and is the entry's generation).  r0 = 0, -ENOENT, or
 * ARF_ETORN/ARF_ECSUM (entries kept changing).
 */
#include "prog.h"

long arf_prog_lookup(struct arf_prog_lookup_arg *a, uint64_t len)
{
	struct arf_meta_dirent *e = (struct arf_meta_dirent *)ARF_PROG_SCRATCH;
	struct arf_meta_inode *in = (struct arf_meta_inode *)(ARF_PROG_SCRATCH + 512);
	struct arf_prog_lookup_out out;
	struct arf_prog_attr attr;
	long rc;

	if (len < sizeof(*a) || a->namelen == 0 || a->namelen > ARF_NAME_MAX)
		return -EINVAL_;
	rc = prog_chain_lookup(a->dir, a->name, a->namelen, e, &out);
	if (rc)
		return rc;
	arf_emit(&out, sizeof(out));
	/* the inode is next to the data too: reading it here saves the client
	 * its own round trip after the run.  A child that will not validate is
	 * left to the client, which retries and falls back as for any inode. */
	if ((a->flags & ARF_PROG_LK_ATTRS) && out.child && out.child <= SB->n_inodes &&
	    arf_obj_read(in, sizeof(*in), prog_inode_addr(out.child)) == 0 &&
	    in->ino == out.child && in->gen == out.gen) {
		prog_attr(in, &attr);
		arf_emit(&attr, sizeof(attr));
	}
	return 0;
}
