/* SPDX-License-Identifier: MIT */
/*
 * mkdir -p in one round trip: makes every missing directory of a path
 * with the mkdir hook (the request's credentials and permission checks;
 * each one persisted as a MKDIR request is), looking existing components
 * up itself.  Context: struct arf_prog_mkdirp_arg followed by the path;
 * output: the struct arf_prog_attr of the last directory.  r0 = 0, or
 * -errno from a hook (EACCES, ENOTDIR, ...) or a lookup.
 */
#include "prog.h"

static long (*arf_mkdir)(struct arf_prog_attr *attr, uint64_t attr_len, const void *name,
			 uint64_t len, uint64_t mode) = (void *)ARF_PH_MKDIR;

#define EEXIST_ 17

long arf_prog_mkdirp(struct arf_prog_mkdirp_arg *a, uint64_t len)
{
	struct arf_meta_dirent *e = (struct arf_meta_dirent *)ARF_PROG_SCRATCH;
	const char *p = (const char *)(a + 1);
	struct arf_prog_lookup_out lo;
	struct arf_prog_attr attr;
	uint64_t n, i = 0;
	long rc;

	if (len < sizeof(*a) || a->len > len - sizeof(*a))
		return -EINVAL_;
	n = a->len;
	attr.ino = a->dir;
	attr.gen = a->dgen;
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
		if (cl > ARF_NAME_MAX)
			return -ENAMETOOLONG_;
		rc = arf_mkdir(&attr, sizeof(attr), p + s, cl, a->mode);
		if (rc == -EEXIST_) {
			rc = prog_chain_lookup(attr.ino, p + s, cl, e, &lo);
			if (rc)
				return rc;
			if (lo.type != DT_DIR_)
				return -ENOTDIR_;
			attr.ino = lo.child;
			attr.gen = lo.gen;
			continue;
		}
		if (rc)
			return rc;
	}
	arf_emit(&attr, sizeof(attr));
	return 0;
}
