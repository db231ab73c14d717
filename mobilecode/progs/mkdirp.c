/* SPDX-License-Identifier: MIT */
/*
 * mkdir -p in one round trip: makes every missing directory of a path
 * with the mkdir hook (the request's credentials and permission checks;
 * each one persisted as a MKDIR request is), and finds the ones that exist
 * with the lookup helper (the same credentials, the search permission a
 * LOOKUP request checks) -- not by walking the directory's chains itself,
 * since a run for anyone but root proven on a connection with region keys
 * sees no regions to walk.  Context: struct arf_prog_mkdirp_arg followed by
 * the path; output: the struct arf_prog_attr of the last directory.
 * r0 = 0, or -errno from a hook (EACCES, ENOTDIR, ...) or a lookup.
 */
#include "prog.h"

static long (*arf_mkdir)(struct arf_prog_attr *attr, uint64_t attr_len, const void *name,
			 uint64_t len, uint64_t mode) = (void *)ARF_PH_MKDIR;
static long (*arf_lookup)(struct arf_prog_attr *attr, uint64_t attr_len, const void *name,
			  uint64_t len) = (void *)ARF_PH_LOOKUP;

#define EEXIST_ 17

long arf_prog_mkdirp(struct arf_prog_mkdirp_arg *a, uint64_t len)
{
	const char *p = (const char *)(a + 1);
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
			/* there already: go on into it, if it is a directory */
			rc = arf_lookup(&attr, sizeof(attr), p + s, cl);
			if (rc)
				return rc;
			if ((attr.mode & S_IFMT_) != S_IFDIR_)
				return -ENOTDIR_;
			continue;
		}
		if (rc)
			return rc;
	}
	arf_emit(&attr, sizeof(attr));
	return 0;
}
