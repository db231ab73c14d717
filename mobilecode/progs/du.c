/* SPDX-License-Identifier: MIT */
/*
 * du's walk, one batch of directories per run (arf-du): each directory is
 * listed with ARF_PH_DIR_READ -- the run's credentials, so a directory the
 * caller may not read fails as opendir would, and children come without
 * attributes where it may not search -- and its non-directory children
 * with one link are summed here; directories, files with more links
 * (the client counts each (dev, ino) once), children without attributes
 * (the client reports them), symbolic links of a mode other than 0777 (a
 * volume's mount point, which the client crosses: docs/volumes.md) and,
 * with ARF_DU_ALL, every child come back as records.  The run stops before its output could pass out_max or after
 * max_entries entries, leaving a cursor in its last ARF_DU_END.  Context:
 * struct arf_du_arg and its directories; output and r0:
 * arf_prog_dusum.h.
 */
#include "prog.h"
#include "arf_prog_dusum.h"

static long (*arf_dir_read)(void *rd, uint64_t rd_len, void *buf, uint64_t len) =
	(void *)ARF_PH_DIR_READ;

#define RD      ((struct arf_prog_dir_read *)ARF_PROG_SCRATCH)
#define BUF     (ARF_PROG_SCRATCH + 256)
#define BUF_LEN (ARF_PROG_SCRATCH_SIZE - 256)

long arf_prog_du(struct arf_du_arg *a, uint64_t len)
{
	struct arf_du_dir_ref *dirs = (struct arf_du_dir_ref *)(a + 1);
	struct arf_prog_dir_read *rd = RD;
	uint64_t out = 0, seen = 0, calls = 0;
	uint32_t nd, flags;

	if (len < sizeof(*a))
		return -EINVAL_;
	nd = a->ndirs;
	flags = a->flags;
	if (nd == 0 || nd > ARF_DU_MAX_DIRS ||
	    len < sizeof(*a) + (uint64_t)nd * sizeof(struct arf_du_dir_ref))
		return -EINVAL_;
	for (uint32_t i = 0; i < nd; i++) {
		struct arf_du_end end;

		end.kind = ARF_DU_END;
		end.done = 0;
		end.pad0 = 0;
		end.err = 0;
		end.blocks = end.bytes = end.count = 0;
		rd->dir = dirs[i].ino;
		rd->dgen = dirs[i].gen;
		rd->flags = ARF_PROG_DR_ATTRS;
		rd->cookie = i == 0 ? a->cookie : 0;
		/* a run allowed fewer entries than a batch asks for them alone */
		rd->max = a->max_entries && a->max_entries < ARF_PROG_DR_BATCH ? (uint32_t)a->max_entries
									      : 0;
		rd->n = rd->eof = rd->pad0 = 0;
		for (;;) {
			uint64_t p = 0;
			long n;

			if (calls && (out + ARF_DU_BATCH_WORST > a->out_max ||
				      (a->max_entries && seen >= a->max_entries))) {
				end.cookie = rd->cookie;
				arf_emit(&end, sizeof(end));
				return i + 1;
			}
			n = arf_dir_read(rd, sizeof(*rd), (void *)BUF, BUF_LEN);
			calls++;
			if (n < 0) {
				end.err = (int32_t)n;
				end.done = 1;
				break;
			}
			for (uint32_t k = 0; k < rd->n && p + sizeof(struct arf_prog_dirent) <= (uint64_t)n;
			     k++) {
				const struct arf_prog_dirent *d = (const void *)(BUF + p);
				const struct arf_prog_attr *at = (const void *)(BUF + p + sizeof(*d));
				uint64_t nl = d->namelen, pad = (nl + 7) & ~(uint64_t)7;
				uint64_t name = p + sizeof(*d) + (d->has_attr ? sizeof(*at) : 0);
				struct arf_du_rec r;
				uint32_t mp;

				p = name + pad;
				if (d->has_link) {
					const uint32_t *ll = (const void *)(BUF + p);

					p += 8 + (((uint64_t)*ll + 7) & ~(uint64_t)7);
				}
				seen++;
				mp = d->has_attr && (at->mode & S_IFMT_) == S_IFLNK_ &&
				     (at->mode & 0777u) != 0777u;
				if (d->has_attr && (at->mode & S_IFMT_) != S_IFDIR_ &&
				    !(flags & ARF_DU_ALL) && at->nlink <= 1 && !mp) {
					end.blocks += at->blocks;
					end.bytes += at->size;
					end.count++;
					continue;
				}
				r.kind = ARF_DU_CHILD;
				r.has_attr = d->has_attr;
				r.ino = d->ino;
				r.gen = d->gen;
				r.mode = d->has_attr ? at->mode : 0;
				r.nlink = d->has_attr ? at->nlink : 0;
				r.blocks = d->has_attr ? at->blocks : 0;
				r.size = d->has_attr ? at->size : 0;
				r.namelen = (uint16_t)nl;
				if (d->has_attr && (at->mode & S_IFMT_) != S_IFDIR_ &&
				    !(flags & ARF_DU_NAMES) && !mp)
					r.namelen = 0;
				arf_emit(&r, sizeof(r));
				out += sizeof(r);
				if (r.namelen) {
					arf_emit((const void *)(BUF + name), pad);
					out += pad;
				}
			}
			if (rd->eof) {
				end.done = 1;
				break;
			}
		}
		end.cookie = rd->cookie;
		arf_emit(&end, sizeof(end));
		out += sizeof(end);
	}
	return nd;
}
