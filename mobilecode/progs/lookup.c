/* SPDX-License-Identifier: MIT */
/*
 * Chain lookup: one name in one directory, walking the bucket's hash chain
 * next to the data (one execution however long the chain).  Context:
 * struct arf_prog_lookup_arg; output: struct arf_prog_lookup_out.  r0 = 0,
 * -ENOENT, or ARF_ETORN/ARF_ECSUM (entries kept changing).
 */
#include "prog.h"

long arf_prog_lookup(struct arf_prog_lookup_arg *a, uint64_t len)
{
	struct arf_meta_dirent *e = (struct arf_meta_dirent *)ARF_PROG_SCRATCH;
	struct arf_prog_lookup_out out;
	long rc;

	if (len < sizeof(*a) || a->namelen == 0 || a->namelen > ARF_NAME_MAX)
		return -EINVAL_;
	rc = prog_chain_lookup(a->dir, a->name, a->namelen, e, &out);
	if (rc)
		return rc;
	arf_emit(&out, sizeof(out));
	return 0;
}
