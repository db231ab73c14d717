/* SPDX-License-Identifier: MIT */
/*
 * Checksums next to the data (arf-sum): the digest of each regular file of
 * a batch, computed by ARF_PH_FILE_DIGEST with the run's credentials; a
 * file that changed while it was hashed (-EAGAIN) is hashed again, up to
 * `tries` times, and then answered with -EAGAIN.  Only the digests
 * cross.  A file named by a path (arf-sum by URL) is resolved here too,
 * one component at a time with ARF_PH_LOOKUP -- the run's credentials and
 * the search permission a LOOKUP request checks, so a run for anyone but
 * root walks no chains itself -- and a path through a symbolic link or
 * ".." is sent back to the client (ARF_SUM_HERE), which resolves it as it
 * always has.  Context: struct arf_sum_arg and its files; output: one
 * struct arf_sum_out per file answered (arf_prog_dusum.h).
 */
#include "prog.h"
#include "arf_prog_dusum.h"

#define EAGAIN_ 11
#define EISDIR_ 21

static long (*arf_file_digest)(void *dg, uint64_t dg_len) = (void *)ARF_PH_FILE_DIGEST;
static long (*arf_lookup)(struct arf_prog_attr *attr, uint64_t attr_len, const void *name,
			  uint64_t len) = (void *)ARF_PH_LOOKUP;

#define DG ((struct arf_prog_file_digest *)ARF_PROG_SCRATCH)

/*
 * Resolves path p (n bytes) from the directory in attr, as the client's
 * arf_resolve would but asking the server's lookup at each step: 0 with
 * the last component's attributes in attr (unchanged for a path of
 * slashes and dots alone: the starting directory), ARF_SUM_HERE for
 * a symbolic link or "..", or the lookup's -errno (-ENOENT, -EACCES,
 * -ENOTDIR, -ESTALE), -ENOTDIR (a component after a non-directory),
 * -ENAMETOOLONG.
 */
static __attribute__((noinline)) long sum_resolve(struct arf_prog_attr *attr, const char *p,
						  uint64_t n)
{
	uint64_t i = 0;
	int dir = 1;
	long rc;

	for (;;) {
		uint64_t s, cl;

		while (i < n && p[i] == '/')
			i++;
		if (i >= n)
			return 0;
		s = i;
		while (i < n && p[i] != '/')
			i++;
		cl = i - s;
		if (!dir)
			return -ENOTDIR_;
		if (cl > ARF_NAME_MAX)
			return -ENAMETOOLONG_;
		if (cl == 1 && p[s] == '.')
			continue;
		if (cl == 2 && p[s] == '.' && p[s + 1] == '.')
			return ARF_SUM_HERE;
		rc = arf_lookup(attr, sizeof(*attr), p + s, cl);
		if (rc)
			return rc;
		if ((attr->mode & S_IFMT_) == S_IFLNK_)
			return ARF_SUM_HERE;
		dir = (attr->mode & S_IFMT_) == S_IFDIR_;
	}
}

long arf_prog_sum(struct arf_sum_arg *a, uint64_t len)
{
	const uint8_t *base = (const uint8_t *)a;
	struct arf_prog_file_digest *dg = DG;
	struct arf_sum_out *o = (struct arf_sum_out *)(ARF_PROG_SCRATCH + 512);
	struct arf_prog_attr attr;
	uint64_t at = sizeof(*a), hashed = 0;
	uint32_t n, tries;

	if (len < sizeof(*a))
		return -EINVAL_;
	n = a->n;
	tries = a->tries ? a->tries : 1;
	if (n == 0 || n > ARF_SUM_MAX_FILES)
		return -EINVAL_;
	for (uint32_t i = 0; i < n; i++) {
		const struct arf_sum_ref *f = (const struct arf_sum_ref *)(base + at);
		uint64_t pl;
		long rc = -EAGAIN_;

		if (len - at < sizeof(*f))
			return -EINVAL_;
		at += sizeof(*f);
		pl = f->pathlen;
		if (pl > ARF_PATH_MAX || len - at < ((pl + 7) & ~7ull))
			return -EINVAL_;
		attr.ino = f->ino;
		attr.gen = f->gen;
		attr.mode = S_IFDIR_;
		attr.size = 0;
		if (pl) {
			rc = sum_resolve(&attr, (const char *)(base + at), pl);
			at += (pl + 7) & ~7ull;
			if (rc == 0 && (attr.mode & S_IFMT_) == S_IFDIR_)
				rc = -EISDIR_;
			/* a run that would hash past max_bytes stops before the
			 * file: the client runs again from it */
			if (rc == 0 && i && a->max_bytes && hashed + attr.size > a->max_bytes)
				return i;
			if (rc == 0)
				rc = -EAGAIN_;
		}
		for (uint32_t t = 0; t < tries && rc == -EAGAIN_; t++) {
			dg->ino = attr.ino;
			dg->gen = attr.gen;
			dg->alg = a->alg;
			dg->off = 0;
			dg->len = 0;
			dg->size = 0;
			dg->dlen = 0;
			rc = arf_file_digest(dg, sizeof(*dg));
		}
		o->err = (int32_t)rc;
		o->dlen = rc == 0 && dg->dlen <= 64 ? dg->dlen : 0;
		o->size = rc == 0 ? dg->size : 0;
		for (uint32_t k = 0; k < 64; k++)
			o->digest[k] = k < o->dlen ? dg->digest[k] : 0;
		arf_emit(o, sizeof(*o));
		hashed += o->size;
	}
	return n;
}
