/* SPDX-License-Identifier: MIT */
/*
 * arf-itest — workloads for the integration tests, driven by libarf
 * against a real arfd (started and stopped by the Python tests in tests/integration).
 *
 *   arf-itest tree URL NFILES [DIR]    build nested dirs + files under /DIR (default
 *                                      "tree"), list back, verify
 *   arf-itest ranges URL SEED OPS      random writes/reads vs a local reference copy
 *   arf-itest torn URL SECONDS READERS writer rewrites a file while readers read it;
 *                                      every block read must be one whole version
 *                                      that was written
 *   arf-itest setattr URL MODE UID GID chmod (octal) and chown URL's path, as root
 *   arf-itest acked URL N [fsync]      write N files, print "acked I" after each
 *                                      (fsync: in /synced, arf_fsync after each)
 *   arf-itest verify URL N [fsync]     check files 0..N-1 written by "acked" (in
 *                                      /synced: by "acked ... fsync")
 *   arf-itest behind URL MIB WAIT      with unstable_max_mib 8, write MIB MiB to
 *                                      /behind in 1 MiB writes, then print
 *                                      "kept BYTES commits N" each time they
 *                                      change, until 0.3 s after a COMMIT was
 *                                      counted or WAIT s; then fsync, read back
 *   arf-itest holder URL TOKEN PATH    one client, connected with the credential
 *                                      token TOKEN (hex, "-": none), reads PATH
 *                                      for each line on stdin: "ok TEXT" or
 *                                      "err ERRNO MESSAGE" (a client that holds
 *                                      its connection through a volume's move)
 *
 * Each prints what it checked and exits 0, or prints "FAIL: reason" and
 * exits 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arf.h"

#define FAIL(...)                                   \
	do {                                        \
		fprintf(stdout, "FAIL: " __VA_ARGS__); \
		fprintf(stdout, "\n");              \
		exit(1);                            \
	} while (0)

static arf_client *connect_with(const char *url, int one_sided, uint32_t attr_timeout_ms)
{
	struct arf_client_opts o;
	char err[512];
	arf_client *c;

	arf_client_opts_init(&o);
	o.one_sided = one_sided;
	o.attr_timeout_ms = attr_timeout_ms;
	o.spin_us = 0;
	if (arf_connect(url, &o, &c, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	return c;
}

static arf_client *connect_or_die(const char *url, int one_sided)
{
	return connect_with(url, one_sided, 1000);
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void print_stats(const char *label, arf_client *c)
{
	struct arf_client_stats s;
	arf_stats(c, &s);
	printf("%s: one_sided_reads=%" PRIu64 " rounds=%" PRIu64 " requests=%" PRIu64
	       " retries=%" PRIu64 " fallbacks=%" PRIu64 "\n",
	       label, s.one_sided_reads, s.rounds, s.requests, s.retries, s.fallbacks);
}

/* ---- tree ---- */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_all(arf_client *c, uint64_t ino, uint32_t gen, char ***names, size_t *n)
{
	struct arf_dirent ents[512];
	uint64_t cookie = 0;
	int eof = 0;
	size_t cap = 64;
	*names = malloc(cap * sizeof(char *));
	*n = 0;
	while (!eof) {
		size_t got = 0;
		int rc = arf_readdir(c, ino, gen, cookie, ents, 512, &got, &eof);
		if (rc)
			FAIL("readdir %" PRIu64 ": %s", ino, arf_strerror(rc));
		for (size_t i = 0; i < got; i++) {
			if (*n == cap)
				*names = realloc(*names, (cap *= 2) * sizeof(char *));
			(*names)[(*n)++] = strdup(ents[i].name);
			cookie = ents[i].cookie;
		}
		if (!got)
			break;
	}
	qsort(*names, *n, sizeof(char *), cmp_str);
}

static int cmd_tree(const char *url, int nfiles, const char *top_name)
{
	arf_client *c = connect_or_die(url, 1);
	struct arf_stat root, d1, d2, f;
	int per_dir = 100, fanout = 10;
	int ndirs = (nfiles + per_dir - 1) / per_dir;
	char name[64];
	int rc;

	if ((rc = arf_root(c, &root)))
		FAIL("root: %s", arf_strerror(rc));
	if ((rc = arf_mkdir(c, root.ino, root.gen, top_name, 0755, &d1)))
		FAIL("mkdir %s: %s", top_name, arf_strerror(rc));
	int made = 0;
	for (int a = 0; a * fanout < ndirs; a++) {
		struct arf_stat top;
		snprintf(name, sizeof(name), "d%03d", a);
		if ((rc = arf_mkdir(c, d1.ino, d1.gen, name, 0755, &top)))
			FAIL("mkdir %s: %s", name, arf_strerror(rc));
		for (int b = 0; b < fanout && a * fanout + b < ndirs; b++) {
			snprintf(name, sizeof(name), "e%03d", b);
			if ((rc = arf_mkdir(c, top.ino, top.gen, name, 0755, &d2)))
				FAIL("mkdir %s: %s", name, arf_strerror(rc));
			for (int i = 0; i < per_dir && made < nfiles; i++, made++) {
				snprintf(name, sizeof(name), "file-%05d", made);
				if ((rc = arf_create(c, d2.ino, d2.gen, name, 0644, 1, &f)))
					FAIL("create %s: %s", name, arf_strerror(rc));
				char body[64];
				int bl = snprintf(body, sizeof(body), "file %d\n", made);
				if (arf_write(c, f.ino, f.gen, 0, body, (size_t)bl) != bl)
					FAIL("write %s", name);
			}
		}
	}
	arf_close(c);

	/* list it back with a fresh client: one-sided readdir */
	c = connect_or_die(url, 1);
	struct arf_stat t;
	char top_path[256];
	snprintf(top_path, sizeof(top_path), "/%s", top_name);
	if ((rc = arf_resolve(c, top_path, &t)))
		FAIL("resolve %s: %s", top_path, arf_strerror(rc));
	char **tops;
	size_t ntops, seen = 0;
	list_all(c, t.ino, t.gen, &tops, &ntops);
	for (size_t a = 0; a < ntops; a++) {
		struct arf_stat top;
		if ((rc = arf_lookup(c, t.ino, t.gen, tops[a], &top)))
			FAIL("lookup %s: %s", tops[a], arf_strerror(rc));
		char **subs;
		size_t nsubs;
		list_all(c, top.ino, top.gen, &subs, &nsubs);
		for (size_t b = 0; b < nsubs; b++) {
			struct arf_stat sub;
			if ((rc = arf_lookup(c, top.ino, top.gen, subs[b], &sub)))
				FAIL("lookup %s: %s", subs[b], arf_strerror(rc));
			char **files;
			size_t nf;
			list_all(c, sub.ino, sub.gen, &files, &nf);
			for (size_t i = 0; i < nf; i++) {
				int num;
				if (sscanf(files[i], "file-%d", &num) != 1)
					FAIL("unexpected name %s", files[i]);
				/* verify one in 37 by content */
				if (num % 37 == 0) {
					char path[1024], buf[64], want[64];
					if (snprintf(path, sizeof(path), "%s/%s/%s/%s", top_path, tops[a],
						     subs[b], files[i]) >= (int)sizeof(path))
						FAIL("path too long under %s", top_path);
					if ((rc = arf_resolve(c, path, &f)))
						FAIL("resolve %s: %s", path, arf_strerror(rc));
					ssize_t n = arf_read(c, f.ino, f.gen, 0, buf, sizeof(buf) - 1);
					int wl = snprintf(want, sizeof(want), "file %d\n", num);
					if (n != wl || memcmp(buf, want, (size_t)wl))
						FAIL("content of %s", path);
				}
				free(files[i]);
			}
			seen += nf;
			free(files);
			free(subs[b]);
		}
		free(subs);
		free(tops[a]);
	}
	free(tops);
	if (seen != (size_t)nfiles)
		FAIL("listed %zu files, created %d", seen, nfiles);
	printf("tree: created and listed %d files in %d directories under %s\n", nfiles, ndirs,
	       top_path);
	print_stats("tree-list", c);
	struct arf_client_stats s;
	arf_stats(c, &s);
	if (s.one_sided_reads == 0)
		FAIL("listing made no one-sided reads");
	arf_close(c);
	return 0;
}

/* ---- ranges ---- */
static int cmd_ranges(const char *url, uint64_t seed, int ops)
{
	arf_client *c = connect_or_die(url, 1);
	/* The reader revalidates every time, as an open does (close-to-open):
	 * no attribute caching, so each read uses the file's current map. */
	arf_client *reader = connect_with(url, 1, 0);
	struct arf_stat root, f;
	size_t max = 8u << 20;
	uint8_t *ref = calloc(1, max), *buf = malloc(max);
	uint64_t size = 0;
	char name[64];
	int rc;

	rng_state = seed | 1;
	snprintf(name, sizeof(name), "ranges-%" PRIu64, seed);
	if ((rc = arf_root(c, &root)) || (rc = arf_create(c, root.ino, root.gen, name, 0644, 1, &f)))
		FAIL("create: %s", arf_strerror(rc));
	for (int i = 0; i < ops; i++) {
		uint64_t off = rnd() % max;
		size_t len = (size_t)(rnd() % (i % 10 == 0 ? (1u << 20) : 20000)) + 1;
		if (off + len > max)
			len = (size_t)(max - off);
		if (rnd() % 3) {
			for (size_t k = 0; k < len; k++)
				buf[k] = (uint8_t)rnd();
			ssize_t n = arf_write(c, f.ino, f.gen, off, buf, len);
			if (n != (ssize_t)len)
				FAIL("write %zu at %" PRIu64 ": %zd", len, off, n);
			memcpy(ref + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (rnd() % 8 == 0) {
			/* truncate down or up */
			struct arf_setattr sa = { .valid = ARF_SET_SIZE, .size = rnd() % max };
			if ((rc = arf_setattr(c, f.ino, f.gen, &sa, NULL)))
				FAIL("truncate: %s", arf_strerror(rc));
			if (sa.size < size)
				memset(ref + sa.size, 0, (size_t)(size - sa.size));
			size = sa.size;
		}
		/* read back a random range through the other client */
		uint64_t roff = rnd() % max;
		size_t rlen = (size_t)(rnd() % 300000) + 1;
		if (roff + rlen > max)
			rlen = (size_t)(max - roff);
		usleep(0);
		struct arf_stat st;
		/* the reader revalidates attributes (close-to-open) */
		if ((rc = arf_getattr(reader, f.ino, f.gen, &st)))
			FAIL("getattr: %s", arf_strerror(rc));
		/* every write and truncate above was acknowledged before this
		 * getattr: a revalidating reader sees their size, and reads exactly
		 * the bytes below it (a short or long read is a failure) */
		if (st.size != size)
			FAIL("getattr after acknowledged changes: size %" PRIu64 ", want %" PRIu64,
			     st.size, size);
		ssize_t n = arf_read(reader, f.ino, f.gen, roff, buf, rlen);
		size_t want = roff >= size ? 0 : (size_t)(size - roff < rlen ? size - roff : rlen);
		if (n < 0)
			FAIL("read %zu at %" PRIu64 ": %s", rlen, roff, arf_strerror((int)n));
		if ((size_t)n != want)
			FAIL("read %zu at %" PRIu64 ": got %zd bytes, want %zu (size %" PRIu64 ")", rlen,
			     roff, n, want, size);
		if (n > 0 && memcmp(buf, ref + roff, (size_t)n))
			FAIL("bytes differ in read %zu at %" PRIu64, rlen, roff);
	}
	/* whole file, fresh client */
	arf_close(reader);
	reader = connect_or_die(url, 1);
	ssize_t n = arf_read(reader, f.ino, f.gen, 0, buf, max);
	if (n != (ssize_t)size || memcmp(buf, ref, size))
		FAIL("whole-file compare (got %zd, size %" PRIu64 ")", n, size);
	printf("ranges: %d operations, final size %" PRIu64 ", byte-identical\n", ops, size);
	print_stats("ranges-reader", reader);
	struct arf_client_stats s;
	arf_stats(reader, &s);
	if (s.one_sided_reads == 0 || s.requests_by_kind[3] /* read */ != 0)
		FAIL("whole-file read was not one-sided");
	arf_close(reader);
	arf_close(c);
	free(ref);
	free(buf);
	return 0;
}

/* ---- torn ----
 * The writer rewrites the whole file again and again, each time as a new
 * version: 1, 2, 3, ..., never repeating.  Word k (8 bytes) of block b of
 * version v holds torn_word(v, b, k), so every word says which version,
 * block and place it belongs to.  A reader accepts a block only if all its
 * words name one version, this block and their own places, and that version
 * had been begun by the time the read returned: at most torn_latest + 1,
 * torn_latest being the last version whose write was acknowledged.  Zeros,
 * another file's or block's bytes, a mix of two versions inside a block (a
 * torn block), or bytes nobody wrote yet all fail. */
#define TORN_SIZE (64u * 4096u)
#define TORN_WORDS (4096u / 8u)
#define TORN_MAGIC 0xa7f0ull
static int torn_stop;           /* atomic */
static uint64_t torn_latest;    /* atomic: last acknowledged version */
static const char *torn_url;
static uint64_t torn_ino;
static uint32_t torn_gen;

static uint64_t torn_word(uint64_t v, size_t b, size_t k)
{
	return TORN_MAGIC << 48 | (v & 0xffffffffu) << 16 | (uint64_t)(b * TORN_WORDS + k);
}

static void torn_fill(uint8_t *buf, uint64_t v)
{
	for (size_t b = 0; b < TORN_SIZE / 4096; b++)
		for (size_t k = 0; k < TORN_WORDS; k++) {
			uint64_t w = torn_word(v, b, k);
			memcpy(buf + b * 4096 + k * 8, &w, 8);
		}
}

struct reader_res {
	uint64_t reads, one_sided, retries, fallbacks;
	uint64_t versions;  /* distinct versions this reader saw, in increasing order */
	uint64_t mixed;     /* reads whose blocks came from more than one version */
	char fail[256];
};

/* The version block b of buf holds, or 0 with the reason in why. */
static uint64_t torn_block_version(const uint8_t *buf, size_t b, char *why, size_t whylen)
{
	uint64_t w0;
	memcpy(&w0, buf + b * 4096, 8);
	uint64_t v = (w0 >> 16) & 0xffffffffu;
	if (w0 >> 48 != TORN_MAGIC || v == 0) {
		snprintf(why, whylen, "block %zu starts with %#" PRIx64 ", which no version wrote", b,
			 w0);
		return 0;
	}
	for (size_t k = 0; k < TORN_WORDS; k++) {
		uint64_t w;
		memcpy(&w, buf + b * 4096 + k * 8, 8);
		if (w != torn_word(v, b, k)) {
			snprintf(why, whylen,
				 "block %zu word %zu holds %#" PRIx64 ", not version %" PRIu64
				 "'s %#" PRIx64 " (a torn or foreign block)",
				 b, k, w, v, torn_word(v, b, k));
			return 0;
		}
	}
	return v;
}

static void *torn_reader(void *arg)
{
	struct reader_res *res = arg;
	arf_client *c = connect_or_die(torn_url, 1);
	uint8_t *buf = malloc(TORN_SIZE);
	uint64_t last_max = 0;
	while (!__atomic_load_n(&torn_stop, __ATOMIC_ACQUIRE) && !res->fail[0]) {
		ssize_t n = arf_read(c, torn_ino, torn_gen, 0, buf, TORN_SIZE);
		uint64_t latest = __atomic_load_n(&torn_latest, __ATOMIC_ACQUIRE);
		if (n != TORN_SIZE) {
			snprintf(res->fail, sizeof(res->fail), "read returned %zd", n);
			break;
		}
		uint64_t vmin = UINT64_MAX, vmax = 0;
		for (size_t b = 0; b < TORN_SIZE / 4096; b++) {
			uint64_t v = torn_block_version(buf, b, res->fail, sizeof(res->fail));
			if (!v)
				goto out;
			if (v > latest + 1) {
				snprintf(res->fail, sizeof(res->fail),
					 "block %zu holds version %" PRIu64 ", but only %" PRIu64
					 " had been written (one more may have begun)", b, v, latest);
				goto out;
			}
			vmin = v < vmin ? v : vmin;
			vmax = v > vmax ? v : vmax;
		}
		if (vmin != vmax)
			res->mixed++;
		if (vmax > last_max) {
			res->versions++;
			last_max = vmax;
		}
		res->reads++;
	}
out:;
	struct arf_client_stats s;
	arf_stats(c, &s);
	res->one_sided = s.one_sided_reads;
	res->retries = s.retries;
	res->fallbacks = s.fallbacks;
	arf_close(c);
	free(buf);
	return NULL;
}

static int cmd_torn(const char *url, int seconds, int nreaders)
{
	arf_client *c = connect_or_die(url, 1);
	struct arf_stat root, f;
	uint8_t *buf = malloc(TORN_SIZE);
	int rc;

	if ((rc = arf_root(c, &root)) || (rc = arf_create(c, root.ino, root.gen, "torn", 0644, 1, &f)))
		FAIL("create: %s", arf_strerror(rc));
	uint64_t v = 1;
	torn_fill(buf, v);
	if (arf_write(c, f.ino, f.gen, 0, buf, TORN_SIZE) != TORN_SIZE)
		FAIL("initial write");
	__atomic_store_n(&torn_latest, v, __ATOMIC_RELEASE);
	torn_url = url;
	torn_ino = f.ino;
	torn_gen = f.gen;
	pthread_t th[16];
	struct reader_res res[16];
	memset(res, 0, sizeof(res));
	if (nreaders > 16)
		nreaders = 16;
	for (int i = 0; i < nreaders; i++)
		if (pthread_create(&th[i], NULL, torn_reader, &res[i]))
			FAIL("pthread_create");
	time_t end = time(NULL) + seconds;
	while (time(NULL) < end) {
		v++;
		torn_fill(buf, v);
		if (arf_write(c, f.ino, f.gen, 0, buf, TORN_SIZE) != TORN_SIZE)
			FAIL("rewrite %" PRIu64, v);
		__atomic_store_n(&torn_latest, v, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&torn_stop, 1, __ATOMIC_RELEASE);
	uint64_t reads = 0, os = 0, retries = 0, fb = 0, versions = 0, mixed = 0;
	for (int i = 0; i < nreaders; i++) {
		pthread_join(th[i], NULL);
		if (res[i].fail[0])
			FAIL("reader %d: %s", i, res[i].fail);
		reads += res[i].reads;
		os += res[i].one_sided;
		retries += res[i].retries;
		fb += res[i].fallbacks;
		versions += res[i].versions;
		mixed += res[i].mixed;
	}
	printf("torn: %" PRIu64 " versions written, %" PRIu64 " whole-file reads by %d readers saw "
	       "%" PRIu64 " distinct versions (%" PRIu64 " reads spanned two or more), every block "
	       "whole and written; one_sided_reads=%" PRIu64 " retries=%" PRIu64
	       " fallbacks=%" PRIu64 "\n",
	       v, reads, nreaders, versions, mixed, os, retries, fb);
	if (os == 0)
		FAIL("readers made no one-sided reads");
	if (retries == 0)
		FAIL("readers never met a torn or changing object");
	if (reads == 0)
		FAIL("no read completed");
	if (versions < 2)
		FAIL("readers saw %" PRIu64 " version(s): nothing raced", versions);
	arf_close(c);
	free(buf);
	return 0;
}

/* ---- setattr ---- */
static int cmd_setattr(const char *url, const char *mode, const char *uid, const char *gid)
{
	struct arf_url u;
	struct arf_stat st;
	char err[512], *end;
	int rc;

	if (arf_url_parse(url, &u, err, sizeof(err)))
		FAIL("%s: %s", url, err);
	struct arf_setattr sa = { .valid = ARF_SET_MODE | ARF_SET_UID | ARF_SET_GID };
	unsigned long m = strtoul(mode, &end, 8);
	if (*end || m > 07777)
		FAIL("mode %s: not octal permission bits", mode);
	sa.mode = (uint32_t)m;
	sa.uid = (uint32_t)strtoul(uid, &end, 10);
	if (*end)
		FAIL("uid %s: not a number", uid);
	sa.gid = (uint32_t)strtoul(gid, &end, 10);
	if (*end)
		FAIL("gid %s: not a number", gid);
	arf_client *c = connect_or_die(url, 1);
	if ((rc = arf_resolve(c, u.path, &st)))
		FAIL("%s: %s", u.path, arf_strerror(rc));
	if ((rc = arf_setattr(c, st.ino, st.gen, &sa, &st)))
		FAIL("setattr %s: %s", u.path, arf_strerror(rc));
	printf("setattr %s: mode %o uid %u gid %u\n", u.path, st.mode & 07777, st.uid, st.gid);
	arf_close(c);
	return 0;
}

/* ---- acked / verify ---- */
static void acked_body(int i, char *buf, size_t *len)
{
	*len = (size_t)(1000 + (i * 7919) % 9000);
	for (size_t k = 0; k < *len; k++)
		buf[k] = (char)('a' + (i + k) % 26);
}

/* Create and write n files in /acked (or, with do_fsync, in /synced,
 * calling arf_fsync after each write), printing "acked I" after each. */
static int cmd_acked(const char *url, int n, int do_fsync)
{
	arf_client *c = connect_or_die(url, 1);
	struct arf_stat root, d, f;
	char buf[16384], name[64];
	size_t len;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((rc = arf_root(c, &root)))
		FAIL("root: %s", arf_strerror(rc));
	const char *dir = do_fsync ? "synced" : "acked";
	rc = arf_mkdir(c, root.ino, root.gen, dir, 0755, &d);
	if (rc == -EEXIST)
		rc = arf_lookup(c, root.ino, root.gen, dir, &d);
	if (rc)
		FAIL("mkdir: %s", arf_strerror(rc));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%06d", i);
		acked_body(i, buf, &len);
		if ((rc = arf_create(c, d.ino, d.gen, name, 0644, 0, &f)))
			FAIL("create %s: %s", name, arf_strerror(rc));
		if (arf_write(c, f.ino, f.gen, 0, buf, len) != (ssize_t)len)
			FAIL("write %s", name);
		if (do_fsync && (rc = arf_fsync(c, f.ino, f.gen)))
			FAIL("fsync %s: %s", name, arf_strerror(rc));
		printf("acked %d\n", i);
	}
	arf_close(c);
	return 0;
}

static int cmd_verify(const char *url, int n, const char *dir)
{
	arf_client *c = connect_or_die(url, 1);
	char buf[16384], got[16384], path[128];
	size_t len;
	struct arf_stat f;
	int rc;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/%s/f%06d", dir, i);
		acked_body(i, buf, &len);
		if ((rc = arf_resolve(c, path, &f)))
			FAIL("%s: %s", path, arf_strerror(rc));
		ssize_t r = arf_read(c, f.ino, f.gen, 0, got, sizeof(got));
		if (r != (ssize_t)len || memcmp(buf, got, len))
			FAIL("%s: content differs (%zd bytes, want %zu)", path, r, len);
	}
	printf("verify: %d acknowledged files intact\n", n);
	arf_close(c);
	return 0;
}

static int cmd_holder(const char *url, const char *hex, const char *path)
{
	struct arf_client_opts o;
	uint8_t tok[ARF_TOKEN_SIZE];
	char err[512], line[64], buf[4096];
	arf_client *c;
	int rc;

	arf_client_opts_init(&o);
	o.spin_us = 0;
	o.attr_timeout_ms = 0;
	if (strcmp(hex, "-")) {
		if (strlen(hex) != 2 * ARF_TOKEN_SIZE)
			FAIL("token: %zu hex digits, want %u", strlen(hex), 2 * ARF_TOKEN_SIZE);
		for (size_t i = 0; i < ARF_TOKEN_SIZE; i++)
			if (sscanf(hex + 2 * i, "%2hhx", &tok[i]) != 1)
				FAIL("token: not hex");
		o.cred_token = tok;
	}
	if ((rc = arf_connect(url, &o, &c, err, sizeof(err)))) {
		printf("err %d %s\n", -rc, err);
		return 1;
	}
	printf("connected\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		struct arf_stat st;
		ssize_t n = -ENOENT;
		if (!(rc = arf_resolve(c, path, &st)))
			n = arf_read(c, st.ino, st.gen, 0, buf, sizeof(buf) - 1);
		else
			n = rc;
		if (n < 0) {
			printf("err %d %s\n", (int)-n, arf_strerror((int)n));
		} else {
			buf[n] = 0;
			buf[strcspn(buf, "\n")] = 0;
			printf("ok %s\n", buf);
		}
		fflush(stdout);
	}
	arf_close(c);
	return 0;
}

/* Writes below the bound of kept bytes, and what the client keeps while
 * nobody commits: a COMMIT behind the writes (behind.c) once half the
 * bound is kept, none below it. */
static int cmd_behind(const char *url, int mib, int wait_s)
{
	struct arf_client_opts o;
	struct arf_client_stats st;
	struct arf_stat root, f;
	char err[512];
	arf_client *c;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	arf_client_opts_init(&o);
	o.unstable_max_mib = 8;
	if (mib < 1 || mib > 7)
		FAIL("MIB: 1 to 7 (below the bound of 8)");
	if (arf_connect(url, &o, &c, err, sizeof(err)))
		FAIL("connect %s: %s", url, err);
	if ((rc = arf_root(c, &root)) ||
	    (rc = arf_create(c, root.ino, root.gen, "behind", 0644, 0, &f)))
		FAIL("create /behind: %s", arf_strerror(rc));
	uint8_t *buf = malloc(1u << 20), *got = malloc(1u << 20);
	if (!buf || !got)
		FAIL("out of memory");
	for (int i = 0; i < mib; i++) {
		memset(buf, 'a' + i, 1u << 20);
		if (arf_write(c, f.ino, f.gen, (uint64_t)i << 20, buf, 1u << 20) != 1 << 20)
			FAIL("write %d", i);
	}
	uint64_t kept = UINT64_MAX, commits = UINT64_MAX;
	int after = -1; /* ticks of 10 ms since a COMMIT was first counted */
	for (int t = 0; t < wait_s * 100 && after < 30; t++) {
		arf_stats(c, &st);
		if (st.unstable_bytes != kept || st.commits != commits)
			printf("kept %" PRIu64 " commits %" PRIu64 "\n", st.unstable_bytes, st.commits);
		kept = st.unstable_bytes;
		commits = st.commits;
		if (commits || after >= 0)
			after++;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if ((rc = arf_fsync(c, f.ino, f.gen)))
		FAIL("fsync: %s", arf_strerror(rc));
	for (int i = 0; i < mib; i++) {
		memset(buf, 'a' + i, 1u << 20);
		if (arf_read(c, f.ino, f.gen, (uint64_t)i << 20, got, 1u << 20) != 1 << 20 ||
		    memcmp(buf, got, 1u << 20))
			FAIL("read back MiB %d", i);
	}
	printf("read back %d MiB\n", mib);
	free(buf);
	free(got);
	arf_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: arf-itest tree|ranges|torn|acked|verify|setattr|behind|holder URL ARGS\n");
		return 2;
	}
	const char *cmd = argv[1], *url = argv[2];
	if (!strcmp(cmd, "tree") && (argc == 4 || argc == 5))
		return cmd_tree(url, atoi(argv[3]), argc == 5 ? argv[4] : "tree");
	if (!strcmp(cmd, "ranges") && argc == 5)
		return cmd_ranges(url, strtoull(argv[3], NULL, 0), atoi(argv[4]));
	if (!strcmp(cmd, "torn") && argc == 5)
		return cmd_torn(url, atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(cmd, "acked") && argc == 4)
		return cmd_acked(url, atoi(argv[3]), 0);
	if (!strcmp(cmd, "acked") && argc == 5 && !strcmp(argv[4], "fsync"))
		return cmd_acked(url, atoi(argv[3]), 1);
	if (!strcmp(cmd, "verify") && argc == 4)
		return cmd_verify(url, atoi(argv[3]), "acked");
	if (!strcmp(cmd, "verify") && argc == 5 && !strcmp(argv[4], "fsync"))
		return cmd_verify(url, atoi(argv[3]), "synced");
	if (!strcmp(cmd, "setattr") && argc == 6)
		return cmd_setattr(url, argv[3], argv[4], argv[5]);
	if (!strcmp(cmd, "behind") && argc == 5)
		return cmd_behind(url, atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(cmd, "holder") && argc == 5)
		return cmd_holder(url, argv[3], argv[4]);
	fprintf(stderr, "arf-itest: bad command line\n");
	return 2;
}
