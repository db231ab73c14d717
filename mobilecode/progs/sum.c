/* SPDX-License-Identifier: MIT */
/*
 * Checksums next to the data (arf-sum): the digest of each regular file of
 * a batch, computed by ARF_PH_FILE_DIGEST with the run's credentials; a
 * file that changed while it was hashed (-EAGAIN) is hashed again, up to
 * `tries` times, and then answered with -EAGAIN.  Only the digests
 * cross.  Context: struct arf_sum_arg and its files; output: one struct
 * arf_sum_out per file (arf_prog_dusum.h).
 */
#include "prog.h"
#include "arf_prog_dusum.h"

#define EAGAIN_ 11

static long (*arf_file_digest)(void *dg, uint64_t dg_len) = (void *)ARF_PH_FILE_DIGEST;

#define DG ((struct arf_prog_file_digest *)ARF_PROG_SCRATCH)

long arf_prog_sum(struct arf_sum_arg *a, uint64_t len)
{
	struct arf_sum_ref *f = (struct arf_sum_ref *)(a + 1);
	struct arf_prog_file_digest *dg = DG;
	struct arf_sum_out *o = (struct arf_sum_out *)(ARF_PROG_SCRATCH + 512);
	uint32_t n, tries;

	if (len < sizeof(*a))
		return -EINVAL_;
	n = a->n;
	tries = a->tries ? a->tries : 1;
	if (n == 0 || n > ARF_SUM_MAX_FILES ||
	    len < sizeof(*a) + (uint64_t)n * sizeof(struct arf_sum_ref))
		return -EINVAL_;
	for (uint32_t i = 0; i < n; i++) {
		long rc = -EAGAIN_;

		for (uint32_t t = 0; t < tries && rc == -EAGAIN_; t++) {
			dg->ino = f[i].ino;
			dg->gen = f[i].gen;
			dg->alg = a->alg;
			dg->off = 0;
			dg->len = 0;
			dg->size = 0;
			dg->dlen = 0;
			rc = arf_file_digest(dg, sizeof(*dg));
		}
		o->err = (int32_t)rc;
		o->dlen = rc == 0 && dg->dlen <= 64 ? dg->dlen : 0;
		o->size = dg->size;
		for (uint32_t k = 0; k < 64; k++)
			o->digest[k] = k < o->dlen ? dg->digest[k] : 0;
		arf_emit(o, sizeof(*o));
	}
	return n;
}
