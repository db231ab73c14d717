/* SPDX-License-Identifier: MIT */
/*
 * The argument and output layouts of the two programs behind arf-du and
 * arf-sum (du.c, sum.c in this folder).  Kept apart from arf_prog_abi.h
 * only while three tools grow at once; the same rules hold: fixed-size,
 * little-endian, pointer-free, included by the programs (clang -target
 * bpf) and by the tools that ship them.
 *
 * du: the walk of a batch of directories with the run's credentials
 * (ARF_PH_DIR_READ).  Each directory's non-directory children that the
 * client does not need to see one by one -- one link, no error, no -a --
 * are summed on the server; everything else comes back as a record.
 *
 * sum: the digests of a batch of regular files (ARF_PH_FILE_DIGEST), named
 * by handle or by path (resolved with ARF_PH_LOOKUP), one 80-byte answer
 * per file, so that ~100 bytes and a path a file cross.
 */
#ifndef ARF_PROG_DUSUM_H
#define ARF_PROG_DUSUM_H

#include <stdint.h>

/* ---- du ------------------------------------------------------------------ */

#define ARF_DU_MAX_DIRS 1024u     /* directories in one run's argument */

/* Context: this, then ndirs struct arf_du_dir_ref. */
struct arf_du_arg {
	uint32_t ndirs;               /* 1 .. ARF_DU_MAX_DIRS */
	uint32_t flags;               /* ARF_DU_* */
	uint64_t cookie;              /* dirs[0]: resume after this entry (0 = start) */
	uint64_t out_max;             /* stop before a batch could take the output past this */
	uint64_t max_entries;         /* stop once this many entries were read (0 = no limit) */
};
struct arf_du_dir_ref {
	uint64_t ino;
	uint32_t gen, pad0;
};
#define ARF_DU_ALL     1u         /* a record for every child (-a, or every inode hashed) */
#define ARF_DU_NAMES   2u         /* every record carries its name (not only directories'
				   * and those without attributes) */

/* Output: for each directory of the argument, in order, its records
 * (kind ARF_DU_CHILD, each followed by namelen bytes of name padded to 8),
 * then one ARF_DU_END.  A run that stops early ends with an ARF_DU_END
 * whose done is 0: the client runs again from that directory at cookie,
 * and adds what comes to what it has.  r0: the directories begun, or
 * -EINVAL (a malformed argument). */
enum { ARF_DU_CHILD = 1, ARF_DU_END = 2 };

struct arf_du_rec {               /* a child the client sees one by one */
	uint8_t  kind;                /* ARF_DU_CHILD */
	uint8_t  has_attr;            /* 0: no attributes (no search permission) */
	uint16_t namelen;             /* 0 when the name was not asked for */
	uint32_t mode;
	uint64_t ino;
	uint32_t gen, nlink;
	uint64_t blocks, size;        /* blocks: 512-byte units */
};

struct arf_du_end {               /* a directory's (part of a) listing ends */
	uint8_t  kind;                /* ARF_DU_END */
	uint8_t  done;                /* 1: the listing ended (or failed: err) */
	uint16_t pad0;
	int32_t  err;                 /* 0, or dir_read's -errno */
	uint64_t cookie;              /* done 0: go on after this entry */
	uint64_t blocks, bytes, count;/* the children summed here, not in records */
};

/* The most one dir_read batch can add to the output. */
#define ARF_DU_BATCH_WORST (256u * (sizeof(struct arf_du_rec) + 256u))

/* ---- sum ----------------------------------------------------------------- */

#define ARF_SUM_MAX_FILES 1024u

/* Context: this, then n files, each a struct arf_sum_ref followed by its
 * pathlen bytes of path padded to a multiple of 8. */
struct arf_sum_arg {
	uint32_t n;                   /* 1 .. ARF_SUM_MAX_FILES */
	uint32_t alg;                 /* ARF_PROG_DG_* */
	uint32_t tries;               /* file_digest calls per file while it says -EAGAIN (>= 1) */
	uint32_t pad0;
	uint64_t max_bytes;           /* stop before a file named by path whose size would take
				       * the bytes hashed past this, unless it is the first
				       * (0 = no limit) */
};
struct arf_sum_ref {
	uint64_t ino;                 /* the file; with a path, the directory it starts from */
	uint32_t gen;
	uint32_t pathlen;             /* 0: (ino, gen) is the file; else 1 .. 4096 bytes of path
				       * follow, resolved with the run's credentials */
};
/* Output: one per file answered, in order.  r0: the files answered (the
 * first r0 of the argument: fewer than n when max_bytes stopped the run;
 * the client runs again from the next), or -EINVAL. */
struct arf_sum_out {
	int32_t  err;                 /* 0, file_digest's or the path's lookup's -errno (the
				       * last try's), or ARF_SUM_HERE */
	uint32_t dlen;                /* digest bytes */
	uint64_t size;                /* the size hashed */
	uint8_t  digest[64];
};
/* err: the path goes through a symbolic link or "..": the client resolves
 * it (arf_resolve) and asks again by (ino, gen). */
#define ARF_SUM_HERE 1

#ifndef __bpf__
_Static_assert(sizeof(struct arf_du_arg) == 32, "arf_du_arg");
_Static_assert(sizeof(struct arf_du_dir_ref) == 16, "arf_du_dir_ref");
_Static_assert(sizeof(struct arf_du_rec) == 40, "arf_du_rec");
_Static_assert(sizeof(struct arf_du_end) == 40, "arf_du_end");
_Static_assert(sizeof(struct arf_sum_arg) == 24, "arf_sum_arg");
_Static_assert(sizeof(struct arf_sum_ref) == 16, "arf_sum_ref");
_Static_assert(sizeof(struct arf_sum_out) == 80, "arf_sum_out");
#endif

#endif /* ARF_PROG_DUSUM_H */
