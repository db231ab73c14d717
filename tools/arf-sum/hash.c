/* SPDX-License-Identifier: MIT */
/*
 * Hashing a batch of files.  A file on an ARF mount (ARF_IOC_CRED on the
 * open file: the server, the file's handle, a credential token for the
 * user the kernel says runs us) or at an arf:// URL is hashed on its
 * server by the sum program (mobilecode/progs/sum.c), many files to a
 * run, so that only the digests cross; the run hashes with the caller's
 * rights, and a file written while it is hashed is hashed again (in the
 * run, then once more alone here) and else reported, never answered with
 * a digest of a mix.  A URL's path goes to the run as it is, which
 * resolves it with the same rights (a lookup per component on the
 * server, no round trip here); one through a symbolic link or ".." comes
 * back, is resolved here (arf_resolve) and asked again by handle.  A run
 * stops before it would hash more than run_bytes of files named by path
 * (their sizes are known only there), and the next goes on from the file
 * it stopped at.  A run the server stops for its budget is split in
 * two (one file alone: hashed here); a file over the server's limit
 * (-EFBIG), a file not on ARF, standard input, and every file of a server
 * that cannot run the program are hashed here with libcrypto, from the
 * open file (or, by URL, from arf_read).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "arf.h"
#include "arf_common.h"
#include "arf_prog_abi.h"
#include "arf_prog_dusum.h"
#include "arf_progs.h"
#include "arf_tool.h"
#include "sum_int.h"

#define SUM_RUN_BYTES0 (64ull << 20) /* bytes hashed per run before a run ran out */
#define SUM_TRIES      3u            /* file_digest calls per file in a run on -EAGAIN */
#define SUM_ARG_MAX    (64u << 10)   /* a run's argument at most (arf_exec's limit) */

#define PAD8(n) (((n) + 7u) & ~(size_t)7u)

struct sum_conn {
	struct arf_tool_conn k;        /* first: the cache's entry (url, c) */
	int broken;
	uint64_t run_bytes;
	size_t run_files;              /* files sent in a run at most: about twice what a run
				        * stopped by run_bytes answered, so that paths are not
				        * sent again and again */
	uint64_t root_ino;             /* where paths start: the export's root */
	uint32_t root_gen;
	int have_root;
};

static void conn_init(struct arf_tool_conn *base)
{
	((struct sum_conn *)base)->run_bytes = SUM_RUN_BYTES0;
	((struct sum_conn *)base)->run_files = ARF_SUM_MAX_FILES;
}

static const struct arf_tool_conn_type conn_type = {
	sizeof(struct sum_conn), 0, conn_init, NULL,
};
static struct arf_tool_conns conns = { &conn_type, NULL, 0 };

/* The connection to url's server, or NULL: a server not reached (now or
 * before) has its files hashed here. */
static struct sum_conn *conn_get(const char *url, const uint8_t *token)
{
	struct arf_tool_conn *k;
	char err[256];

	return arf_tool_conn_get(&conns, url, token, &k, err, sizeof(err)) == 0
		       ? (struct sum_conn *)k : NULL;
}

static const EVP_MD *evp_md(unsigned alg)
{
	switch (alg) {
	case ARF_PROG_DG_MD5: return EVP_md5();
	case ARF_PROG_DG_SHA1: return EVP_sha1();
	case ARF_PROG_DG_SHA224: return EVP_sha224();
	case ARF_PROG_DG_SHA256: return EVP_sha256();
	case ARF_PROG_DG_SHA384: return EVP_sha384();
	case ARF_PROG_DG_SHA512: return EVP_sha512();
	case ARF_PROG_DG_BLAKE2B512: return EVP_blake2b512();
	default: return NULL;
	}
}

/* Resolves by-URL job j's path here, as arf-sum did before its runs
 * resolved paths: 0 with j's handle and size (path freed), or -errno in
 * j->err (j->missing for -ENOENT).  A final symbolic link to an absolute
 * path is followed once; to a relative one it gives -ENOENT. */
static int resolve_here(struct sum_job *j)
{
	arf_client *c = j->conn->k.c;
	struct arf_stat as;
	int r = arf_resolve(c, j->path, &as);

	if (r == 0 && S_ISLNK(as.mode)) {
		char target[4096];

		r = arf_readlink(c, as.ino, as.gen, target, sizeof(target));
		if (r >= 0 && target[0] == '/')
			r = arf_resolve(c, target, &as);
		else if (r >= 0)
			r = -ENOENT;
	}
	if (r == 0 && S_ISDIR(as.mode))
		r = -EISDIR;
	if (r == 0) {
		char vurl[4352];
		r = arf_tool_volume_url(c, &as.ino, vurl, sizeof(vurl));
		if (r > 0) { /* behind a mount point: that volume's own connection */
			struct sum_conn *v = conn_get(vurl, NULL);
			r = v ? 0 : -ECONNREFUSED;
			if (v)
				j->conn = v;
		}
	}
	if (r < 0) {
		j->err = r;
		j->missing = r == -ENOENT;
		return r;
	}
	free(j->path);
	j->path = NULL;
	j->ino = as.ino;
	j->gen = as.gen;
	j->size = as.size;
	return 0;
}

/* Hashes j here: from j->fd, or by arf_read from its server.  BLAKE2b
 * of another length than 512 bits (b2sum -l, or a line of b2sum -c) is
 * libsodium's generichash, which is BLAKE2b with the output length as a
 * parameter, as b2sum's. */
static void hash_local(const struct sum_opts *o, struct sum_job *j)
{
	int b2 = o->alg == ARF_PROG_DG_BLAKE2B512 && j->bytes && j->bytes != 64;
	EVP_MD_CTX *ctx = b2 ? NULL : EVP_MD_CTX_new();
	crypto_generichash_state b2s;
	size_t cap = 1 << 20;
	unsigned char *buf = malloc(cap);
	uint64_t off = 0;
	unsigned dl = 0;

	if (j->path && resolve_here(j) < 0)
		goto out;
	if (b2 && sodium_init() < 0)
		b2 = -1;
	if (!buf || b2 < 0 || (b2 ? crypto_generichash_init(&b2s, NULL, 0, j->bytes) != 0
			: !ctx || !EVP_DigestInit_ex(ctx, evp_md(o->alg), NULL))) {
		j->err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (j->fd >= 0)
			n = read(j->fd, buf, cap);
		else if (j->conn)
			n = arf_read(j->conn->k.c, j->ino, j->gen, off, buf, cap);
		else
			n = -EBADF;
		if (n < 0) {
			j->err = j->fd >= 0 ? -errno : (int)n;
			goto out;
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
		if (b2)
			crypto_generichash_update(&b2s, buf, (size_t)n);
		else
			EVP_DigestUpdate(ctx, buf, (size_t)n);
	}
	if (b2)
		crypto_generichash_final(&b2s, j->digest, j->bytes);
	else
		EVP_DigestFinal_ex(ctx, j->digest, &dl);
	j->err = 0;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
}

/* The bytes job j takes in a run's argument. */
static size_t ref_len(const struct sum_job *j)
{
	return sizeof(struct arf_sum_ref) + (j->path ? PAD8(strlen(j->path)) : 0);
}

static int run_once(const struct sum_opts *o, struct sum_conn *k, struct sum_job **b, size_t nb,
		    size_t *done);

/* Job j, whose path the run sent back (a symbolic link or ".." on it):
 * resolved here, then hashed by handle in a run of its own (here when the
 * run fails). */
static void run_resolved(const struct sum_opts *o, struct sum_conn *k, struct sum_job *j)
{
	size_t done;

	(void)k;
	/* j->conn: behind a mount point, resolve_here changed it to that volume's */
	if (resolve_here(j) == 0 && run_once(o, j->conn, &j, 1, &done) < 0)
		hash_local(o, j);
}

/* One run for jobs b[0..nb) on k: 0 with the first *done of them answered
 * (or sent back to the local path), or ARF_EBUDGET / another failure of
 * the run (*done 0). */
static int run_once(const struct sum_opts *o, struct sum_conn *k, struct sum_job **b, size_t nb,
		    size_t *done)
{
	const struct arf_std_prog_image *img = &arf_std_progs[ARF_STD_PROG_SUM];
	size_t alen = sizeof(struct arf_sum_arg), at = sizeof(struct arf_sum_arg), m = 0;
	uint8_t *arg = NULL;
	struct arf_sum_out *out = calloc(nb, sizeof(*out));
	struct arf_exec_result res;
	struct arf_sum_arg a = { (uint32_t)nb, o->alg, SUM_TRIES, 0, k->run_bytes };
	int r;

	*done = 0;
	for (size_t i = 0; i < nb; i++)
		alen += ref_len(b[i]);
	if (!img->len) {
		r = -ENOSYS;
		goto done;
	}
	if (!out || !(arg = calloc(1, alen))) {
		r = -ENOMEM;
		goto done;
	}
	memcpy(arg, &a, sizeof(a));
	for (size_t i = 0; i < nb; i++) {
		size_t pl = b[i]->path ? strlen(b[i]->path) : 0;
		struct arf_sum_ref f = { b[i]->ino, b[i]->gen, (uint32_t)pl };

		if (pl)
			f.ino = k->root_ino, f.gen = k->root_gen;
		memcpy(arg + at, &f, sizeof(f));
		memcpy(arg + at + sizeof(f), b[i]->path ? b[i]->path : "", pl);
		at += ref_len(b[i]);
	}
	r = arf_exec(k->k.c, img->elf, img->len, arg, alen, out, nb * sizeof(*out), &res);
	if (r == 0 && res.r0 < 0)
		r = (int)res.r0;
	if (r == 0 && (res.r0 == 0 || (uint64_t)res.r0 > nb ||
		       res.out_len != (size_t)res.r0 * sizeof(*out)))
		r = -EPROTO;
	if (r < 0)
		goto done;
	m = (size_t)res.r0;
	for (size_t i = 0; i < m; i++) {
		struct sum_job *j = b[i];

		if (out[i].err == 0 && out[i].dlen == o->bytes) {
			memcpy(j->digest, out[i].digest, o->bytes);
			j->err = 0;
		} else if (out[i].err == 0) {
			j->err = -EPROTO;
		} else if (out[i].err == ARF_SUM_HERE && j->path) {
			run_resolved(o, k, j);
		} else if (out[i].err == -EFBIG) {
			hash_local(o, j);
		} else {
			j->err = out[i].err < 0 ? out[i].err : -EPROTO;
			j->missing = j->path && j->err == -ENOENT;
		}
	}
	*done = m;
done:
	free(arg);
	free(out);
	return r;
}

/* Jobs b[0..nb) of one server, split until each run fits its budget and
 * its argument arf_exec's limit. */
static void run_jobs(const struct sum_opts *o, struct sum_conn *k, struct sum_job **b, size_t nb)
{
	size_t i = 0;

	while (i < nb) {
		size_t n = 0, done = 0, alen = sizeof(struct arf_sum_arg);
		uint64_t bytes = 0;

		while (i + n < nb && n < k->run_files && alen + ref_len(b[i + n]) <= SUM_ARG_MAX &&
		       (n == 0 || bytes + b[i + n]->size <= k->run_bytes)) {
			alen += ref_len(b[i + n]);
			bytes += b[i + n++]->size;
		}
		int r = k->broken ? -ENOSYS : run_once(o, k, b + i, n, &done);

		if (r == ARF_EBUDGET && n > 1) {
			/* files by path have no size here: fewer files as well */
			uint64_t base = bytes && bytes < k->run_bytes ? bytes : k->run_bytes;

			k->run_bytes = base / 2 > 4096 ? base / 2 : 4096;
			k->run_files = n / 2;
			continue;
		}
		if (r == 0 && done < n)
			k->run_files = 2 * done;
		else if (r == 0 && n == k->run_files)
			k->run_files = 2 * n < ARF_SUM_MAX_FILES ? 2 * n : ARF_SUM_MAX_FILES;
		if (r < 0 && r != ARF_EBUDGET)
			k->broken = 1; /* the server cannot run it: everything here */
		if (r < 0)
			done = n;
		for (size_t m = 0; m < done; m++) {
			struct sum_job *j = b[i + m];
			size_t one;

			if (r < 0)
				hash_local(o, j);
			else if (j->err == -EAGAIN && run_once(o, k, &b[i + m], 1, &one) < 0)
				j->err = -EAGAIN;
		}
		i += done;
	}
}

/* Where job j lies: its server, or this host (j->fd). */
static void place(const struct sum_opts *o, struct sum_job *j)
{
	const char *name = j->name;
	struct stat st;

	j->fd = -1;
	j->conn = NULL;
	j->path = NULL;
	if (!strncmp(name, "arf://", 6) || !strncmp(name, "arf+", 4)) {
		struct arf_url u;
		char err[256];
		int r;

		if (arf_url_parse(name, &u, err, sizeof(err)) < 0) {
			j->err = -EINVAL;
			return;
		}
		j->conn = conn_get(name, NULL);
		if (!j->conn) {
			j->err = -ECONNREFUSED;
			return;
		}
		if (!j->conn->have_root) {
			struct arf_stat root;

			if ((r = arf_root(j->conn->k.c, &root)) < 0) {
				j->err = r;
				j->conn = NULL;
				return;
			}
			j->conn->root_ino = root.ino;
			j->conn->root_gen = root.gen;
			j->conn->have_root = 1;
		}
		/* the run resolves it (run_once), or hash_local here */
		if (!(j->path = strdup(u.path))) {
			j->err = -ENOMEM;
			j->conn = NULL;
			return;
		}
		j->by_url = 1;
		j->size = 0;
		return;
	}
	j->fd = strcmp(name, "-") ? open(name, O_RDONLY | O_CLOEXEC | O_NOCTTY) : dup(0);
	if (j->fd < 0) {
		j->err = -errno;
		j->missing = errno == ENOENT;
		return;
	}
	if (fstat(j->fd, &st) < 0 || !S_ISREG(st.st_mode) || o->local_only || !strcmp(name, "-"))
		return; /* read here: a directory gives EISDIR as it does to GNU */
	struct arf_tool_conn *k;
	uint64_t ino;
	uint32_t gen;
	char err[256];

	if (arf_tool_conn_fd(&conns, j->fd, &k, &ino, &gen, err, sizeof(err)) == 0) {
		j->conn = (struct sum_conn *)k;
		j->ino = ino;
		j->gen = gen;
		j->size = (uint64_t)st.st_size;
	}
}

void sum_hash(const struct sum_opts *o, struct sum_job *jobs, size_t n)
{
	struct sum_job **b = calloc(n ? n : 1, sizeof(*b));

	for (size_t i = 0; i < n; i++) {
		jobs[i].err = 0;
		jobs[i].missing = 0;
		jobs[i].done = 0;
		place(o, &jobs[i]);
	}
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].err || jobs[i].done)
			continue;
		if (!jobs[i].conn || (jobs[i].bytes && jobs[i].bytes != o->bytes)) {
			hash_local(o, &jobs[i]); /* the server's helper has 512-bit BLAKE2b only */
			jobs[i].done = 1;
			continue;
		}
		/* every job of this server, in order, in as few runs as fit */
		size_t nb = 0;
		struct sum_conn *k = jobs[i].conn;

		if (!b) {
			hash_local(o, &jobs[i]);
			continue;
		}
		for (size_t m = i; m < n; m++)
			if (!jobs[m].err && jobs[m].conn == k) {
				b[nb++] = &jobs[m];
				jobs[m].conn = NULL; /* taken */
			}
		for (size_t m = 0; m < nb; m++)
			b[m]->conn = k;
		run_jobs(o, k, b, nb);
		for (size_t m = 0; m < nb; m++) {
			b[m]->conn = NULL;
			b[m]->done = 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].fd >= 0) {
			close(jobs[i].fd);
			jobs[i].fd = -1;
		}
		free(jobs[i].path);
		jobs[i].path = NULL;
	}
	free(b);
}

void sum_finish(const struct sum_opts *o, const char *prog)
{
	arf_tool_conns_close(&conns, prog, o->stats);
}
