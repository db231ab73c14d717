/* SPDX-License-Identifier: MIT */
/*
 * scalebench — requests per second arfd's workers serve, and a check that
 * readers never see half a write while they serve them side by side.
 *
 *   scalebench URL THREADS SECONDS KIND [--file PATH] [--writers N] [--block BYTES]
 *
 * URL names the server (arf://HOST:PORT/, arf+shm:///...).  Each of
 * THREADS threads has its own connection, made requests-only (one_sided 0,
 * attribute and name caches off, as bench/statprobe.c), so that every
 * operation is a request a worker serves, and loops for SECONDS:
 *
 *   getattr  GETATTR of the file
 *   lookup   LOOKUP of the file's name in the root
 *   read     READ of one of the file's 64 blocks (--block bytes, default 4096)
 *   write    WRITE (unstable) of one of the file's blocks
 *   mixed    --writers N of the threads write, the others read: every
 *            block written is one byte value from end to end, and every
 *            read must find its block so (a READ served beside a WRITE
 *            that saw part of it would not); THREADS - N readers
 *
 * setup makes the file (--file, default /scalebench) with 64 uniform
 * blocks first.  Prints one JSON object: kind, threads, seconds, ops,
 * ops_per_s, errors, torn (reads that saw two byte values in one block),
 * and with --server-pid the server's CPU seconds over the run.  Exits 1
 * when any operation failed or any read was torn.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arf.h>

#define BLOCKS 64u

static size_t blk = 4096; /* bytes a block (--block) */

static const char *url, *path = "/scalebench", *kind;
static int nthreads, nwriters, secs, server_pid;
static struct arf_stat root, file;
static int stop; /* atomic */

struct worker {
	pthread_t t;
	int writer, rc;
	uint64_t ops, errors, torn;
	char err[256];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static arf_client *conn(char *err, size_t errlen)
{
	struct arf_client_opts o;
	arf_client *c = NULL;

	arf_client_opts_init(&o);
	o.one_sided = 0; /* every operation a request a worker serves */
	o.attr_timeout_ms = 0;
	o.entry_timeout_ms = 0;
	o.readahead = 0;
	if (arf_connect(url, &o, &c, err, errlen) < 0)
		return NULL;
	return c;
}

static const char *base_name(void)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint8_t *buf = malloc(blk);
	arf_client *c = buf ? conn(w->err, sizeof(w->err)) : NULL;
	unsigned seed = (unsigned)(uintptr_t)w;

	if (!c) {
		w->rc = -1;
		free(buf);
		return NULL;
	}
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned b = (unsigned)rand_r(&seed) % BLOCKS;
		struct arf_stat st;
		int rc = 0;

		if (!strcmp(kind, "getattr")) {
			rc = arf_getattr(c, file.ino, file.gen, &st);
		} else if (!strcmp(kind, "lookup")) {
			rc = arf_lookup(c, root.ino, root.gen, base_name(), &st);
		} else if (!strcmp(kind, "write") || w->writer) {
			memset(buf, (int)(rand_r(&seed) & 0xff), blk);
			ssize_t n = arf_write(c, file.ino, file.gen, (uint64_t)b * blk, buf, blk);
			rc = n == (ssize_t)blk ? 0 : n < 0 ? (int)n : -EIO;
		} else {
			ssize_t n = arf_read(c, file.ino, file.gen, (uint64_t)b * blk, buf, blk);
			rc = n == (ssize_t)blk ? 0 : n < 0 ? (int)n : -EIO;
			for (size_t i = 1; !rc && i < blk; i++)
				if (buf[i] != buf[0]) {
					w->torn++;
					break;
				}
		}
		if (rc < 0 && w->errors++ == 0)
			snprintf(w->err, sizeof(w->err), "%s", arf_strerror(rc));
		w->ops++;
	}
	arf_close(c);
	free(buf);
	return NULL;
}

static double server_cpu(void)
{
	char p[64], line[1024];
	unsigned long ut = 0, st = 0;
	FILE *f;

	if (!server_pid)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/stat", server_pid);
	if (!(f = fopen(p, "r")))
		return 0;
	if (fgets(line, sizeof(line), f)) {
		char *s = strrchr(line, ')');
		if (s)
			sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
	}
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int setup(void)
{
	char err[256];
	uint8_t *buf = malloc(blk);
	arf_client *c = buf ? conn(err, sizeof(err)) : NULL;
	int rc;

	if (!c) {
		free(buf);
		fprintf(stderr, "scalebench: %s: %s\n", url, err);
		return -1;
	}
	if ((rc = arf_root(c, &root)) < 0 ||
	    ((rc = arf_lookup(c, root.ino, root.gen, base_name(), &file)) == -ENOENT &&
	     (rc = arf_create(c, root.ino, root.gen, base_name(), 0644, 0, &file)) < 0) || rc < 0) {
		fprintf(stderr, "scalebench: %s: %s\n", path, arf_strerror(rc));
		arf_close(c);
		free(buf);
		return -1;
	}
	for (unsigned b = 0; b < BLOCKS; b++) {
		memset(buf, (int)b, blk);
		if (arf_write(c, file.ino, file.gen, (uint64_t)b * blk, buf, blk) != (ssize_t)blk) {
			fprintf(stderr, "scalebench: writing %s failed\n", path);
			arf_close(c);
			free(buf);
			return -1;
		}
	}
	rc = arf_fsync(c, file.ino, file.gen);
	arf_close(c);
	free(buf);
	return rc < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: scalebench URL THREADS SECONDS getattr|lookup|read|write|mixed "
				"[--file PATH] [--writers N] [--block BYTES] [--server-pid PID]\n");
		return 2;
	}
	url = argv[1];
	nthreads = atoi(argv[2]);
	secs = atoi(argv[3]);
	kind = argv[4];
	for (int i = 5; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--file"))
			path = argv[i + 1];
		else if (!strcmp(argv[i], "--writers"))
			nwriters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--block"))
			blk = (size_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--server-pid"))
			server_pid = atoi(argv[i + 1]);
		else {
			fprintf(stderr, "scalebench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 256 || secs < 1 || path[0] != '/' || !path[1] ||
	    strchr(path + 1, '/') || blk < 1 || blk > (1u << 20) || nwriters < 0 || nwriters > nthreads ||
	    (strcmp(kind, "getattr") && strcmp(kind, "lookup") && strcmp(kind, "read") &&
	     strcmp(kind, "write") && strcmp(kind, "mixed"))) {
		fprintf(stderr, "scalebench: bad arguments (THREADS 1-256, SECONDS >= 1, --file /NAME "
				"in the root, --block 1..1048576, --writers <= THREADS)\n");
		return 2;
	}
	if (setup())
		return 1;
	struct worker *w = calloc((size_t)nthreads, sizeof(*w));
	if (!w)
		return 1;
	double cpu0 = server_cpu(), t0 = now_s();
	for (int i = 0; i < nthreads; i++) {
		w[i].writer = !strcmp(kind, "mixed") && i < nwriters;
		if (pthread_create(&w[i].t, NULL, run, &w[i])) {
			fprintf(stderr, "scalebench: no thread\n");
			return 1;
		}
	}
	sleep((unsigned)secs);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	uint64_t ops = 0, errors = 0, torn = 0;
	const char *err = NULL;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].t, NULL);
		ops += w[i].ops;
		errors += w[i].errors + (w[i].rc ? 1 : 0);
		torn += w[i].torn;
		if (!err && (w[i].rc || w[i].errors))
			err = w[i].err;
	}
	double el = now_s() - t0, cpu = server_cpu() - cpu0;
	printf("{\"kind\": \"%s\", \"threads\": %d, \"writers\": %d, \"seconds\": %.3f, "
	       "\"ops\": %" PRIu64 ", \"ops_per_s\": %.1f, \"errors\": %" PRIu64
	       ", \"torn\": %" PRIu64 ", \"server_cpu_s\": %.3f",
	       kind, nthreads, nwriters, el, ops, (double)ops / el, errors, torn, cpu);
	if (err) {
		printf(", \"error\": \"");
		for (const char *p = err; *p; p++)
			printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
		printf("\"");
	}
	printf("}\n");
	free(w);
	return errors || torn ? 1 : 0;
}
