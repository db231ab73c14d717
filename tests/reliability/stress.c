/* SPDX-License-Identifier: MIT */
/*
 * arf-stress — the reliability drivers over libarf, run by
 * tests/reliability/test_reliability.py against real arfd processes:
 *
 *   arf-stress load URL[,URL...] CLIENTS SECONDS
 *       CLIENTS threads, each with its own connection (the URLs taken in
 *       turn, so tcp and shm mix), each doing mixed metadata and data
 *       operations in its own directory for SECONDS, keeping a model of
 *       what it wrote; then every directory is verified by a fresh
 *       client against the models.  Prints operations, errors and latency
 *       percentiles per kind.
 *   arf-stress crash URL FIRST_ID [commit]
 *       Creates, writes, renames and unlinks files of /crash numbered from
 *       FIRST_ID until killed, printing a line after each acknowledged step
 *       ("S id" before starting one, then "C", "W", "R", "U", "D").  With
 *       commit, a write is acknowledged ("W") once a COMMIT (arf_fsync) has
 *       made it durable; without, once arfd answered it (unstable, on an
 *       export without [export] sync).
 *   arf-stress check URL [--uncommitted] < LOG
 *       Checks /crash against every acknowledged step of LOG: nothing
 *       acknowledged is missing or wrong; an unacknowledged step may or may
 *       not have happened, but nothing else is there.  --uncommitted (the
 *       writes were acknowledged unstable, and arfd lost power): every
 *       other step holds as acknowledged (metadata is durable before its
 *       reply), but a written file may have lost its bytes (empty, or
 *       zeros where RocksDB kept the size and the data log lost the
 *       bytes); it never holds other bytes.
 *
 * Each exits 0, or prints "FAIL: reason" and exits 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arf.h"

static void fail(const char *fmt, ...)
{
	va_list ap;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* reconnect_ms: how long an operation waits for a restarted arfd (the
 * crash writer gives up at once: the test restarts arfd only after it). */
static arf_client *connect_or_die(const char *url, uint32_t reconnect_ms)
{
	struct arf_client_opts o;
	char err[512];
	arf_client *c;

	arf_client_opts_init(&o);
	o.spin_us = 0;
	o.attr_timeout_ms = 0; /* each client sees its own and others' changes at once */
	o.entry_timeout_ms = 0;
	o.reconnect_ms = reconnect_ms;
	if (arf_connect(url, &o, &c, err, sizeof(err)))
		fail("connect %s: %s", url, err);
	return c;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The bytes of a file are a function of (seed, size): checkable later. */
static void content(uint64_t seed, uint8_t *buf, size_t len)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull | 1;
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(xs(&s) >> 24);
}

/* ------------------------------------------------------------------ load */

enum { K_CREATE, K_WRITE, K_READ, K_RENAME, K_UNLINK, K_STAT, K_READDIR, K_MKDIR, K_NKINDS };
static const char *const kind_names[K_NKINDS] = { "create", "write", "read", "rename",
						  "unlink", "stat", "readdir", "mkdir" };

#define SLOTS 48
#define MAXF  (64u << 10)
#define SAMPLES 4096

struct slot {
	int exists;
	uint32_t ver;     /* name: f<slot>-<ver> */
	uint64_t seed;
	size_t size;
};

struct worker {
	int id;
	const char *url;
	double seconds;
	struct slot slots[SLOTS];
	int dirs[8];              /* subdirectory d<k> exists */
	uint64_t ops[K_NKINDS];
	uint64_t lat[K_NKINDS][SAMPLES]; /* reservoir of latencies (ns) */
	uint64_t seen[K_NKINDS];
	uint64_t rng;
	char fail[256];
};

static void record(struct worker *w, int k, uint64_t ns)
{
	uint64_t n = w->seen[k]++;
	if (n < SAMPLES)
		w->lat[k][n] = ns;
	else {
		uint64_t j = xs(&w->rng) % (n + 1);
		if (j < SAMPLES)
			w->lat[k][j] = ns;
	}
	w->ops[k]++;
}

static void slot_name(const struct worker *w, int s, char *buf, size_t cap)
{
	snprintf(buf, cap, "f%d-%u", s, w->slots[s].ver);
}

#define WFAIL(...)                                                  \
	do {                                                        \
		snprintf(w->fail, sizeof(w->fail), __VA_ARGS__);    \
		goto out;                                           \
	} while (0)

static void *load_worker(void *arg)
{
	struct worker *w = arg;
	arf_client *c = connect_or_die(w->url, 30000);
	struct arf_stat root, dir, st;
	uint8_t *buf = malloc(MAXF), *rbuf = malloc(MAXF);
	char name[64], path[64];
	int rc;

	w->rng = (uint64_t)w->id * 7919 + 17;
	snprintf(path, sizeof(path), "/load/c%d", w->id);
	if ((rc = arf_resolve(c, "/load", &root)) ||
	    (rc = arf_mkdir(c, root.ino, root.gen, path + 6, 0755, &dir)))
		WFAIL("mkdir %s: %s", path, arf_strerror(rc));
	uint64_t end = now_ns() + (uint64_t)(w->seconds * 1e9);
	while (now_ns() < end) {
		int s = (int)(xs(&w->rng) % SLOTS);
		struct slot *sl = &w->slots[s];
		unsigned r = (unsigned)(xs(&w->rng) % 100);
		uint64_t t0 = now_ns();
		slot_name(w, s, name, sizeof(name));
		if (r < 30) { /* write a whole new content (create when missing) */
			int k = K_WRITE;
			if (!sl->exists) {
				sl->ver++;
				slot_name(w, s, name, sizeof(name));
				if ((rc = arf_create(c, dir.ino, dir.gen, name, 0644, 1, &st)))
					WFAIL("create %s/%s: %s", path, name, arf_strerror(rc));
				record(w, K_CREATE, now_ns() - t0);
				t0 = now_ns();
				sl->exists = 1;
				sl->size = 0;
			} else if ((rc = arf_lookup(c, dir.ino, dir.gen, name, &st))) {
				WFAIL("lookup %s/%s: %s", path, name, arf_strerror(rc));
			}
			size_t len = (size_t)(xs(&w->rng) % MAXF) + 1;
			uint64_t seed = xs(&w->rng);
			content(seed, buf, len);
			ssize_t n = arf_write(c, st.ino, st.gen, 0, buf, len);
			if (n != (ssize_t)len)
				WFAIL("write %s/%s: %zd", path, name, n);
			if (len < sl->size) {
				struct arf_setattr sa = { .valid = ARF_SET_SIZE, .size = len };
				if ((rc = arf_setattr(c, st.ino, st.gen, &sa, NULL)))
					WFAIL("truncate %s/%s: %s", path, name, arf_strerror(rc));
			}
			sl->seed = seed;
			sl->size = len;
			record(w, k, now_ns() - t0);
		} else if (r < 50) { /* read back and compare */
			if (!sl->exists)
				continue;
			if ((rc = arf_lookup(c, dir.ino, dir.gen, name, &st)))
				WFAIL("lookup %s/%s: %s", path, name, arf_strerror(rc));
			ssize_t n = arf_read(c, st.ino, st.gen, 0, rbuf, MAXF);
			if (n != (ssize_t)sl->size)
				WFAIL("read %s/%s: %zd bytes, want %zu", path, name, n, sl->size);
			content(sl->seed, buf, sl->size);
			if (memcmp(buf, rbuf, sl->size)) {
				size_t at = 0;
				while (buf[at] == rbuf[at])
					at++;
				WFAIL("read %s/%s: bytes differ from offset %zu of %zu (%02x, want %02x)",
				      path, name, at, sl->size, rbuf[at], buf[at]);
			}
			record(w, K_READ, now_ns() - t0);
		} else if (r < 60) {
			if (!sl->exists)
				continue;
			char nn[64];
			snprintf(nn, sizeof(nn), "f%d-%u", s, sl->ver + 1);
			if ((rc = arf_rename(c, dir.ino, dir.gen, name, dir.ino, dir.gen, nn, 0)))
				WFAIL("rename %s -> %s: %s", name, nn, arf_strerror(rc));
			sl->ver++;
			record(w, K_RENAME, now_ns() - t0);
		} else if (r < 70) {
			if (!sl->exists)
				continue;
			if ((rc = arf_unlink(c, dir.ino, dir.gen, name)))
				WFAIL("unlink %s/%s: %s", path, name, arf_strerror(rc));
			sl->exists = 0;
			record(w, K_UNLINK, now_ns() - t0);
		} else if (r < 82) {
			rc = arf_lookup(c, dir.ino, dir.gen, name, &st);
			if (sl->exists ? rc != 0 || st.size != sl->size : rc != -ENOENT)
				WFAIL("stat %s/%s: %s (exists %d, size %" PRIu64 ", want %zu)", path, name,
				      arf_strerror(rc), sl->exists, rc ? 0 : st.size, sl->size);
			record(w, K_STAT, now_ns() - t0);
		} else if (r < 92) {
			struct arf_dirent ents[128];
			size_t n, total = 0, want = 0;
			int eof = 0;
			uint64_t cookie = 0;
			for (int k = 0; k < SLOTS; k++)
				want += w->slots[k].exists;
			for (int k = 0; k < 8; k++)
				want += w->dirs[k];
			while (!eof) {
				if ((rc = arf_readdir(c, dir.ino, dir.gen, cookie, ents, 128, &n, &eof)))
					WFAIL("readdir %s: %s", path, arf_strerror(rc));
				total += n;
				if (n)
					cookie = ents[n - 1].cookie;
			}
			if (total != want)
				WFAIL("readdir %s: %zu entries, want %zu", path, total, want);
			record(w, K_READDIR, now_ns() - t0);
		} else {
			int k = (int)(xs(&w->rng) % 8);
			snprintf(name, sizeof(name), "d%d", k);
			if (w->dirs[k])
				rc = arf_rmdir(c, dir.ino, dir.gen, name);
			else
				rc = arf_mkdir(c, dir.ino, dir.gen, name, 0755, &st);
			if (rc)
				WFAIL("%s %s/%s: %s", w->dirs[k] ? "rmdir" : "mkdir", path, name,
				      arf_strerror(rc));
			w->dirs[k] = !w->dirs[k];
			record(w, K_MKDIR, now_ns() - t0);
		}
	}
out:
	arf_close(c);
	free(buf);
	free(rbuf);
	return NULL;
}

/* A fresh client checks one worker's directory against its model. */
static void verify_worker(const char *url, const struct worker *w, uint64_t *files)
{
	arf_client *c = connect_or_die(url, 30000);
	struct arf_stat dir, st;
	char path[64], name[64];
	uint8_t *buf = malloc(MAXF), *rbuf = malloc(MAXF);
	int rc;

	snprintf(path, sizeof(path), "/load/c%d", w->id);
	if ((rc = arf_resolve(c, path, &dir)))
		fail("verify: %s: %s", path, arf_strerror(rc));
	for (int s = 0; s < SLOTS; s++) {
		const struct slot *sl = &w->slots[s];
		if (!sl->ver)
			continue;
		slot_name(w, s, name, sizeof(name));
		rc = arf_lookup(c, dir.ino, dir.gen, name, &st);
		if (!sl->exists) {
			if (rc != -ENOENT)
				fail("verify: %s/%s exists after its unlink", path, name);
			continue;
		}
		if (rc)
			fail("verify: %s/%s: %s", path, name, arf_strerror(rc));
		ssize_t n = arf_read(c, st.ino, st.gen, 0, rbuf, MAXF);
		content(sl->seed, buf, sl->size);
		if (n != (ssize_t)sl->size || memcmp(buf, rbuf, sl->size))
			fail("verify: %s/%s: content differs (%zd bytes, want %zu)", path, name, n,
			     sl->size);
		(*files)++;
	}
	for (int k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "d%d", k);
		rc = arf_lookup(c, dir.ino, dir.gen, name, &st);
		if (w->dirs[k] ? rc != 0 : rc != -ENOENT)
			fail("verify: %s/%s: %s, want %s", path, name, arf_strerror(rc),
			     w->dirs[k] ? "a directory" : "absent");
	}
	free(buf);
	free(rbuf);
	arf_close(c);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmd_load(const char *urls, int nclients, double seconds)
{
	char *list = strdup(urls), *save = NULL;
	const char *u[8];
	int nu = 0;
	for (char *t = strtok_r(list, ",", &save); t && nu < 8; t = strtok_r(NULL, ",", &save))
		u[nu++] = t;
	if (!nu || nclients < 1)
		fail("usage: arf-stress load URL[,URL...] CLIENTS SECONDS");

	arf_client *c = connect_or_die(u[0], 30000);
	struct arf_stat root, st;
	int rc;
	if ((rc = arf_root(c, &root)) || (rc = arf_mkdir(c, root.ino, root.gen, "load", 0755, &st)))
		fail("mkdir /load: %s", arf_strerror(rc));
	arf_close(c);

	struct worker *w = calloc((size_t)nclients, sizeof(*w));
	pthread_t *th = calloc((size_t)nclients, sizeof(*th));
	for (int i = 0; i < nclients; i++) {
		w[i].id = i;
		w[i].url = u[i % nu];
		w[i].seconds = seconds;
		pthread_create(&th[i], NULL, load_worker, &w[i]);
	}
	uint64_t total = 0, tk[K_NKINDS] = { 0 };
	int failed = 0;
	for (int i = 0; i < nclients; i++) {
		pthread_join(th[i], NULL);
		if (w[i].fail[0]) {
			printf("client %d (%s): %s\n", i, w[i].url, w[i].fail);
			failed++;
		}
		for (int k = 0; k < K_NKINDS; k++) {
			tk[k] += w[i].ops[k];
			total += w[i].ops[k];
		}
	}
	printf("load: %d clients over %d URL(s) for %.0f s: %" PRIu64 " operations (%.0f ops/s), "
	       "%d clients failed\n", nclients, nu, seconds, total, (double)total / seconds, failed);
	for (int k = 0; k < K_NKINDS; k++) {
		size_t n = 0;
		for (int i = 0; i < nclients; i++)
			n += w[i].seen[k] < SAMPLES ? w[i].seen[k] : SAMPLES;
		if (!n)
			continue;
		uint64_t *all = malloc(n * sizeof(*all));
		size_t j = 0;
		for (int i = 0; i < nclients; i++) {
			size_t m = w[i].seen[k] < SAMPLES ? w[i].seen[k] : SAMPLES;
			memcpy(all + j, w[i].lat[k], m * sizeof(*all));
			j += m;
		}
		qsort(all, n, sizeof(*all), cmp_u64);
		printf("  %-8s %8" PRIu64 " ops  p50 %7.1f us  p99 %8.1f us  p99.9 %8.1f us  max %8.1f us\n",
		       kind_names[k], tk[k], all[n / 2] / 1e3, all[n * 99 / 100] / 1e3,
		       all[n * 999 / 1000] / 1e3, all[n - 1] / 1e3);
		free(all);
	}
	if (failed)
		fail("%d of %d clients failed", failed, nclients);
	uint64_t files = 0;
	for (int i = 0; i < nclients; i++)
		verify_worker(u[i % nu], &w[i], &files);
	printf("verified: %d directories, %" PRIu64 " files byte-identical to the models, "
	       "nothing lost\n", nclients, files);
	free(w);
	free(th);
	free(list);
	return 0;
}

/* ----------------------------------------------------------------- crash */

static size_t crash_size(uint64_t id)
{
	return (size_t)(id * 7919u % 20000u) + 1;
}

static void say(const char *what, uint64_t id)
{
	printf("%s %" PRIu64 "\n", what, id);
	fflush(stdout);
}

static __attribute__((noreturn)) void cmd_crash(const char *url, uint64_t first, int commit)
{
	arf_client *c = connect_or_die(url, 0);
	struct arf_stat root, dir, st;
	uint8_t *buf = malloc(20001);
	char name[64], nn[64];
	int rc;

	if ((rc = arf_root(c, &root)))
		fail("root: %s", arf_strerror(rc));
	rc = arf_mkdir(c, root.ino, root.gen, "crash", 0755, &dir);
	if (rc == -EEXIST)
		rc = arf_lookup(c, root.ino, root.gen, "crash", &dir);
	if (rc)
		fail("/crash: %s", arf_strerror(rc));
	for (uint64_t id = first;; id++) {
		say("S", id);
		snprintf(name, sizeof(name), "n%" PRIu64, id);
		if ((rc = arf_create(c, dir.ino, dir.gen, name, 0644, 1, &st)))
			fail("create %s: %s", name, arf_strerror(rc));
		say("C", id);
		size_t len = crash_size(id);
		content(id, buf, len);
		if (arf_write(c, st.ino, st.gen, 0, buf, len) != (ssize_t)len)
			fail("write %s", name);
		if (commit && (rc = arf_fsync(c, st.ino, st.gen)))
			fail("commit %s: %s", name, arf_strerror(rc));
		say("W", id);
		if (id % 3 == 0) {
			snprintf(nn, sizeof(nn), "r%" PRIu64, id);
			if ((rc = arf_rename(c, dir.ino, dir.gen, name, dir.ino, dir.gen, nn, 0)))
				fail("rename %s: %s", name, arf_strerror(rc));
			say("R", id);
			memcpy(name, nn, sizeof(nn));
		}
		if (id % 5 == 0) {
			if ((rc = arf_unlink(c, dir.ino, dir.gen, name)))
				fail("unlink %s: %s", name, arf_strerror(rc));
			say("U", id);
		}
		if (id % 10 == 0) {
			snprintf(nn, sizeof(nn), "d%" PRIu64, id);
			if ((rc = arf_mkdir(c, dir.ino, dir.gen, nn, 0755, &st)))
				fail("mkdir %s: %s", nn, arf_strerror(rc));
			say("D", id);
		}
	}
}

#define MAXID 1000000u
enum { F_S = 1, F_C = 2, F_W = 4, F_R = 8, F_U = 16, F_D = 32 };

/* Is name present in /crash with the content id's writes gave it?
 * Returns 1 present and right, 0 absent; fails on wrong content.
 * allow_empty: the write may not have happened (size 0 accepted, or the
 * right size in zeros: a lost unstable write whose size RocksDB kept). */
static uint64_t bytes_lost; /* files present without their bytes (allow_empty) */

static int present(arf_client *c, const struct arf_stat *dir, const char *name, uint64_t id,
		   int allow_empty, uint8_t *buf, uint8_t *want)
{
	struct arf_stat st;
	int rc = arf_lookup(c, dir->ino, dir->gen, name, &st);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		fail("check: lookup %s: %s", name, arf_strerror(rc));
	size_t len = crash_size(id);
	ssize_t n = arf_read(c, st.ino, st.gen, 0, buf, 20001);
	if (n == 0 && allow_empty) {
		bytes_lost++;
		return 1;
	}
	if (allow_empty && n == (ssize_t)len) {
		size_t z = 0;
		while (z < len && !buf[z])
			z++;
		if (z == len) {
			bytes_lost++;
			return 1;
		}
	}
	content(id, want, len);
	if (n != (ssize_t)len || memcmp(buf, want, len))
		fail("check: %s has %zd bytes that are not what was written (want %zu)", name, n, len);
	return 1;
}

static int cmd_check(const char *url, int uncommitted)
{
	uint8_t *flags = calloc(MAXID, 1), *buf = malloc(20001), *want = malloc(20001);
	char line[128], name[64];
	uint64_t maxid = 0, nacked = 0;

	while (fgets(line, sizeof(line), stdin)) {
		char k;
		uint64_t id;
		if (sscanf(line, "%c %" SCNu64, &k, &id) != 2 || id >= MAXID)
			continue;
		const char *ks = "SCWRUD";
		const char *p = strchr(ks, k);
		if (!p)
			continue;
		flags[id] |= (uint8_t)(1u << (p - ks));
		nacked += k != 'S';
		if (id > maxid)
			maxid = id;
	}
	arf_client *c = connect_or_die(url, 30000);
	struct arf_stat dir;
	int rc = arf_resolve(c, "/crash", &dir);
	if (rc == -ENOENT && maxid == 0) {
		printf("check: nothing was written\n");
		arf_close(c);
		free(flags), free(buf), free(want);
		return 0;
	}
	if (rc)
		fail("check: /crash: %s", arf_strerror(rc));
	uint64_t files = 0, inflight = 0;
	for (uint64_t id = 0; id <= maxid; id++) {
		uint8_t f = flags[id];
		if (!f)
			continue;
		char n1[32], n2[32];
		snprintf(n1, sizeof(n1), "n%" PRIu64, id);
		snprintf(n2, sizeof(n2), "r%" PRIu64, id);
		int a = present(c, &dir, n1, id, uncommitted || !(f & F_W), buf, want);
		int b = present(c, &dir, n2, id, uncommitted, buf, want);
		if (a && b)
			fail("check: both %s and %s exist", n1, n2);
		if (f & F_U) {
			if (a || b)
				fail("check: %s exists after its acknowledged unlink", a ? n1 : n2);
		} else if (f & F_R) {
			/* gone only if the unlink that followed was in flight */
			if (!b && id % 5 != 0)
				fail("check: %s missing after its acknowledged rename", n2);
			if (a)
				fail("check: %s exists after its acknowledged rename", n1);
			inflight += !b;
		} else if (f & F_W) {
			/* the rename or unlink that followed may have happened */
			int may_go = id % 3 == 0 || id % 5 == 0;
			if (!a && !b && !may_go)
				fail("check: %s missing after its acknowledged write", n1);
			if (b && id % 3 != 0)
				fail("check: %s exists but was never renamed", n2);
			inflight += !(a && !b);
		} else if (f & F_C) {
			if (!a)
				fail("check: %s missing after its acknowledged create", n1);
			if (b)
				fail("check: %s exists before its write was acknowledged", n2);
			inflight++;
		} else { /* started, nothing acknowledged */
			if (b)
				fail("check: %s exists though its create was never acknowledged", n2);
			inflight++;
		}
		files += a || b;
		snprintf(name, sizeof(name), "d%" PRIu64, id);
		struct arf_stat st;
		rc = arf_lookup(c, dir.ino, dir.gen, name, &st);
		if ((f & F_D) && rc)
			fail("check: %s missing after its acknowledged mkdir", name);
		if (!rc && id % 10 != 0)
			fail("check: %s exists but was never made", name);
	}
	/* nothing else is there */
	struct arf_dirent ents[256];
	size_t n;
	int eof = 0;
	uint64_t cookie = 0, listed = 0;
	while (!eof) {
		if ((rc = arf_readdir(c, dir.ino, dir.gen, cookie, ents, 256, &n, &eof)))
			fail("check: readdir: %s", arf_strerror(rc));
		for (size_t i = 0; i < n; i++) {
			uint64_t id;
			char k;
			if (sscanf(ents[i].name, "%c%" SCNu64, &k, &id) != 2 || id > maxid || !flags[id] ||
			    !strchr("nrd", k))
				fail("check: unexpected entry %s", ents[i].name);
			listed++;
		}
		if (n)
			cookie = ents[n - 1].cookie;
	}
	printf("check: %" PRIu64 " acknowledged steps over %" PRIu64 " ids, all present; %" PRIu64
	       " files (%" PRIu64 " without their bytes), %" PRIu64 " entries listed, %" PRIu64
	       " steps in flight at kills\n", nacked, maxid + 1, files, bytes_lost, listed, inflight);
	arf_close(c);
	free(flags), free(buf), free(want);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "load"))
		return cmd_load(argv[2], atoi(argv[3]), atof(argv[4]));
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "commit"))) && !strcmp(argv[1], "crash"))
		cmd_crash(argv[2], strtoull(argv[3], NULL, 10), argc == 5);
	if (argc == 3 && !strcmp(argv[1], "check"))
		return cmd_check(argv[2], 0);
	if (argc == 4 && !strcmp(argv[1], "check") && !strcmp(argv[3], "--uncommitted"))
		return cmd_check(argv[2], 1);
	fprintf(stderr, "usage: arf-stress load URL[,URL...] CLIENTS SECONDS\n"
			"       arf-stress crash URL FIRST_ID [commit]\n"
			"       arf-stress check URL [--uncommitted] < LOG\n");
	return 2;
}
