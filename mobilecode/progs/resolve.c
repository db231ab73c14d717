/* SPDX-License-Identifier: MIT */
/*
 * Whole-path resolution: every component of a path, from a starting
 * directory, in one execution, then the final attributes.  Context: struct
 * arf_prog_resolve_arg followed by the path; output: one struct
 * arf_prog_ent per component, then (r0 == 0) the struct arf_prog_attr of
 * the last one.  A symbolic link in the middle of the path, or "..",
 * stops the walk with r0 = ARF_PROG_STOP_*: the client goes on from the
 * entries it got.  A final symbolic link is not followed (lstat).
 */
#include "prog.h"

long arf_prog_resolve(struct arf_prog_resolve_arg *a, uint64_t len)
{
	struct arf_meta_dirent *e = (struct arf_meta_dirent *)ARF_PROG_SCRATCH;
	struct arf_meta_inode *in = (struct arf_meta_inode *)(ARF_PROG_SCRATCH + 512);
	const char *p = (const char *)(a + 1);
	struct arf_prog_lookup_out lo;
	struct arf_prog_ent ent;
	struct arf_prog_attr attr;
	uint64_t dir, n, i = 0;
	uint32_t dgen, dtype = DT_DIR_;
	long rc;

	if (len < sizeof(*a) || a->len > len - sizeof(*a))
		return -EINVAL_;
	dir = a->dir;
	dgen = a->dgen;
	n = a->len;
	for (;;) {
		uint64_t s, cl;

		while (i < n && p[i] == '/')
			i++;
		if (i >= n)
			break;
		s = i;
		while (i < n && p[i] != '/')
			i++;
		cl = i - s;
		if (dtype != DT_DIR_)
			return -ENOTDIR_;
		if (cl > ARF_NAME_MAX)
			return -ENAMETOOLONG_;
		if (cl == 1 && p[s] == '.') {
			ent.ino = dir;
			ent.gen = dgen;
			ent.type = DT_DIR_;
			arf_emit(&ent, sizeof(ent));
			continue;
		}
		if (cl == 2 && p[s] == '.' && p[s + 1] == '.')
			return ARF_PROG_STOP_DOTDOT;
		rc = prog_chain_lookup(dir, p + s, cl, e, &lo);
		if (rc)
			return rc;
		if (lo.type == DT_LNK_) {
			uint64_t k = i;

			while (k < n && p[k] == '/')
				k++;
			if (k < n)
				return ARF_PROG_STOP_SYMLINK;
		}
		ent.ino = lo.child;
		ent.gen = lo.gen;
		ent.type = lo.type;
		arf_emit(&ent, sizeof(ent));
		dir = lo.child;
		dgen = lo.gen;
		dtype = lo.type;
	}
	if (dir == 0 || dir > SB->n_inodes)
		return -ESTALE_;
	rc = arf_obj_read(in, sizeof(*in), prog_inode_addr(dir));
	if (rc)
		return rc;
	if (in->ino != dir || in->gen != dgen)
		return -ESTALE_;
	prog_attr(in, &attr);
	arf_emit(&attr, sizeof(attr));
	return 0;
}
