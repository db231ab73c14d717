/* SPDX-License-Identifier: MIT */
/*
 * arf-sum's parts: the command line, output and -c checking (main.c) and
 * the hashing of a batch of files (hash.c): on their ARF server by the
 * sum program where it can, here with libcrypto where it cannot.
 */
#ifndef ARF_SUM_INT_H
#define ARF_SUM_INT_H

#include <stddef.h>
#include <stdint.h>

struct sum_algo {
	const char *name;            /* --algo's name */
	const char *tag;             /* --tag's */
	unsigned prog_alg;           /* ARF_PROG_DG_* */
	unsigned bytes;              /* digest length */
};

/* One file to hash. */
struct sum_job {
	const char *name;            /* as given (not owned) */
	int missing;                 /* out: ENOENT (for --ignore-missing) */
	int err;                     /* out: 0 or -errno */
	unsigned char digest[64];    /* out */
	/* hash.c's */
	int fd;                      /* open file here, or -1 */
	struct sum_conn *conn;       /* on an ARF server, or NULL */
	char *path;                  /* by URL, until resolved here: the path inside the
				      * export, which the sum program resolves (owned) */
	uint64_t ino, size;          /* size: 0 while path is set (not known yet) */
	uint32_t gen;
	int by_url;
	int done;
	unsigned bytes;              /* in: digest length wanted (0: the algorithm's) */
};

struct sum_opts {
	unsigned alg;                /* ARF_PROG_DG_* */
	unsigned bytes;
	int stats, local_only;
};

/* Hashes jobs[0..n): each gets err or digest (never both).  Returns
 * nothing: errors are the jobs'. */
void sum_hash(const struct sum_opts *o, struct sum_job *jobs, size_t n);
/* --stats to stderr; closes the connections. */
void sum_finish(const struct sum_opts *o, const char *prog);

#endif
