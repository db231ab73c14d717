/* SPDX-License-Identifier: MIT */
/*
 * metabench — one metadata benchmark, the same logic over three back ends:
 *
 *   arf    libarf (arfclient/arf.h), tcp or shm, by URL
 *   nfs    libnfs's synchronous path API (nfs_creat, nfs_stat64, nfs_opendir,
 *          nfs_unlink, ...), which keeps no lookup or attribute cache: every
 *          call walks its path with one LOOKUP per component (NFSv3), or
 *          sends the walk in one COMPOUND (NFSv4)
 *   posix  plain system calls on a directory (an arf-fuse mount, tmpfs)
 *
 * Every operation names a path from the root of the export, as an
 * application would; libarf resolves it with its own caches (which the
 * options below switch off for the "uncached" rows).
 *
 *   metabench BACKEND TARGET PHASE [options]
 *
 * PHASE: setup (make /B, /B/files, the depth-10 path /B/p1/../p8/leaf and
 * /B/big with --big entries), create, stat (cold: a fresh client; --warm:
 * a first untimed pass, then the timed one), lookup (the depth-10 path,
 * --secs long), readdir (all of /B/big, --secs long; --changed: the
 * directory's times set to now before each listing, timed, so that no
 * client may answer from a listing it kept), unlink, teardown.
 *
 * Prints one JSON object: ops, seconds, ops_per_s, mean_us, and for arf the
 * client's counters over the timed part (one_sided_reads, rounds, requests,
 * execs, fallbacks, retries); with --server-pid, the server's CPU seconds
 * (utime+stime from /proc/PID/stat) over the timed part.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <arf.h>
#include <nfsc/libnfs.h>

#define DEPTH 10

enum backend { B_ARF, B_NFS, B_POSIX };

static enum backend be;
static const char *target;
static const char *base = "/mb";
static long nfiles = 1000, nbig = 10000;
static double secs = 2.0;
static int warm, server_pid;
static const char *strategy = "hybrid";
static int nocache;
static int changed; /* readdir: the directory's times set before each listing */
static long spin_us = -1;

static arf_client *ac;
static struct nfs_context *nfs;

static void die(const char *what, const char *path, const char *why)
{
	fprintf(stderr, "metabench: %s %s: %s\n", what, path ? path : "", why);
	exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double proc_cpu(int pid)
{
	char path[64], buf[2048];
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long ut = 0, st = 0;
	/* fields after the name: state(3) ... utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- the three back ends, path-based ---- */

static void connect_be(void)
{
	char err[256] = "";
	if (be == B_ARF) {
		struct arf_client_opts o;
		arf_client_opts_init(&o);
		if (!strcmp(strategy, "onesided")) {
			/* one-sided reads only: no hop limit, no shipped programs */
			o.one_sided = 1;
			o.max_hops = 1u << 20;
#ifdef ARF_HAVE_EXEC_OPTS
			o.shipped_lookup = 0;
			o.resolve_exec_depth = 0;
			o.readdir_exec_min = 0;
			o.readdir_req_min = 0; /* large listings one-sided too */
#endif
		} else if (!strcmp(strategy, "requests")) {
			/* plain requests only */
			o.one_sided = 0;
#ifdef ARF_HAVE_EXEC_OPTS
			o.shipped_lookup = 0;
			o.resolve_exec_depth = 0;
			o.readdir_exec_min = 0;
#endif
		} else if (!strcmp(strategy, "shipped")) {
#ifdef ARF_HAVE_EXEC_OPTS
			/* shipped programs wherever libarf has one */
			o.resolve_exec_depth = 1;
			o.readdir_exec_min = 1;
#else
			die("strategy", strategy, "this libarf has no shipped-program options");
#endif
		} else if (strcmp(strategy, "hybrid")) {
			die("strategy", strategy, "want hybrid, onesided, requests or shipped");
		}
		if (nocache) {
			o.attr_timeout_ms = 0;
			o.entry_timeout_ms = 0;
		} else {
			/* long enough that a warm pass over every file stays warm */
			o.attr_timeout_ms = 600000;
			o.entry_timeout_ms = 600000;
		}
		if (spin_us >= 0)
			o.spin_us = (uint32_t)spin_us;
		o.reconnect_ms = 0;
		int rc = arf_connect(target, &o, &ac, err, sizeof(err));
		if (rc)
			die("connect", target, err[0] ? err : arf_strerror(rc));
	} else if (be == B_NFS) {
		nfs = nfs_init_context();
		if (!nfs)
			die("nfs_init_context", NULL, "failed");
		struct nfs_url *u = nfs_parse_url_dir(nfs, target);
		if (!u)
			die("nfs url", target, nfs_get_error(nfs));
		if (nfs_mount(nfs, u->server, u->path))
			die("nfs_mount", target, nfs_get_error(nfs));
		nfs_destroy_url(u);
	}
}

static void disconnect_be(void)
{
	if (ac)
		arf_close(ac);
	if (nfs) {
		nfs_umount(nfs);
		nfs_destroy_context(nfs);
	}
	ac = NULL;
	nfs = NULL;
}

static char *full(const char *p)
{
	static char buf[8192];
	if (be == B_POSIX)
		snprintf(buf, sizeof(buf), "%s%s", target, p);
	else
		snprintf(buf, sizeof(buf), "%s", p);
	return buf;
}

/* split "/a/b/c" into parent "/a/b" (resolved) and name "c" */
static int arf_parent(const char *path, struct arf_stat *dir, const char **name)
{
	char buf[4096];
	const char *slash = strrchr(path, '/');
	size_t len = (size_t)(slash - path);
	memcpy(buf, path, len);
	buf[len] = 0;
	*name = slash + 1;
	return arf_resolve(ac, len ? buf : "/", dir);
}

static int do_mkdir(const char *p)
{
	if (be == B_ARF) {
		struct arf_stat d, st;
		const char *name;
		int rc = arf_parent(p, &d, &name);
		return rc ? rc : arf_mkdir(ac, d.ino, d.gen, name, 0755, &st);
	}
	if (be == B_NFS)
		return nfs_mkdir(nfs, p);
	return mkdir(full(p), 0755) ? -errno : 0;
}

static int do_create(const char *p)
{
	if (be == B_ARF) {
		struct arf_stat d, st;
		const char *name;
		int rc = arf_parent(p, &d, &name);
		return rc ? rc : arf_create(ac, d.ino, d.gen, name, 0644, 1, &st);
	}
	if (be == B_NFS) {
		struct nfsfh *fh;
		int rc = nfs_creat(nfs, p, 0644, &fh);
		if (!rc)
			nfs_close(nfs, fh);
		return rc;
	}
	int fd = open(full(p), O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int do_stat(const char *p, uint64_t *size)
{
	if (be == B_ARF) {
		struct arf_stat st;
		int rc = arf_resolve(ac, p, &st);
		*size = st.size;
		return rc;
	}
	if (be == B_NFS) {
		struct nfs_stat_64 st;
		int rc = nfs_stat64(nfs, p, &st);
		*size = st.nfs_size;
		return rc;
	}
	struct stat st;
	if (stat(full(p), &st))
		return -errno;
	*size = (uint64_t)st.st_size;
	return 0;
}

static int do_unlink(const char *p)
{
	if (be == B_ARF) {
		struct arf_stat d;
		const char *name;
		int rc = arf_parent(p, &d, &name);
		return rc ? rc : arf_unlink(ac, d.ino, d.gen, name);
	}
	if (be == B_NFS)
		return nfs_unlink(nfs, p);
	return unlink(full(p)) ? -errno : 0;
}

static int do_rmdir(const char *p)
{
	if (be == B_ARF) {
		struct arf_stat d;
		const char *name;
		int rc = arf_parent(p, &d, &name);
		return rc ? rc : arf_rmdir(ac, d.ino, d.gen, name);
	}
	if (be == B_NFS)
		return nfs_rmdir(nfs, p);
	return rmdir(full(p)) ? -errno : 0;
}

/* set a directory's times to now (a change its cached listings must not
 * survive): posix and nfs; libarf keeps no listing, so --changed is refused
 * there */
static int do_touch(const char *p)
{
	if (be == B_NFS) {
		struct timeval tv[2];
		gettimeofday(&tv[0], NULL);
		tv[1] = tv[0];
		return nfs_utimes(nfs, p, tv);
	}
	return utimensat(AT_FDCWD, full(p), NULL, 0) ? -errno : 0;
}

/* list a whole directory; returns the entry count ("." and ".." not counted) */
static long do_listdir(const char *p)
{
	long count = 0;
	if (be == B_ARF) {
		static struct arf_dirent ents[1024];
		struct arf_stat d;
		int rc = arf_resolve(ac, p, &d);
		if (rc)
			return rc;
		uint64_t cookie = 0;
		int eof = 0;
		while (!eof) {
			size_t n = 0;
			rc = arf_readdir(ac, d.ino, d.gen, cookie, ents, 1024, &n, &eof);
			if (rc)
				return rc;
			count += (long)n;
			if (n)
				cookie = ents[n - 1].cookie;
			else if (!eof)
				return -EIO;
		}
		return count;
	}
	if (be == B_NFS) {
		struct nfsdir *dir;
		int rc = nfs_opendir(nfs, p, &dir);
		if (rc)
			return rc;
		struct nfsdirent *e;
		while ((e = nfs_readdir(nfs, dir)))
			if (strcmp(e->name, ".") && strcmp(e->name, ".."))
				count++;
		nfs_closedir(nfs, dir);
		return count;
	}
	DIR *d = opendir(full(p));
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			count++;
	closedir(d);
	return count;
}

static const char *errtext(int rc)
{
	if (be == B_ARF)
		return arf_strerror(rc);
	if (be == B_NFS)
		return nfs_get_error(nfs);
	return strerror(-rc);
}

#define CHECK(what, path, expr)                                   \
	do {                                                      \
		int rc_ = (expr);                                 \
		if (rc_ < 0)                                      \
			die(what, path, errtext(rc_));            \
	} while (0)

static void file_path(char *buf, size_t cap, long i)
{
	snprintf(buf, cap, "%s/files/f%07ld", base, i);
}

static void deep_path(char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s", base);
	for (int i = 1; i <= DEPTH - 2; i++)
		n += snprintf(buf + n, cap - (size_t)n, "/p%d", i);
	snprintf(buf + n, cap - (size_t)n, "/leaf");
}

/* ---- measurement ---- */

/* room for a library whose struct grew since this file was compiled */
union stats {
	struct arf_client_stats s;
	char pad[sizeof(struct arf_client_stats) + 4096];
};
static union stats s0u;
#define s0 (s0u.s)
static double t0, cpu0;

static void start(void)
{
	if (ac)
		arf_stats(ac, &s0u.s);
	cpu0 = proc_cpu(server_pid);
	t0 = now();
}

static void report(const char *phase, long ops, long items)
{
	double dt = now() - t0;
	double cpu = proc_cpu(server_pid) - cpu0;
	printf("{\"phase\":\"%s\",\"ops\":%ld,\"items\":%ld,\"seconds\":%.6f,\"ops_per_s\":%.3f,"
	       "\"mean_us\":%.3f",
	       phase, ops, items, dt, ops / dt, dt * 1e6 / (double)ops);
	if (server_pid > 0)
		printf(",\"server_cpu_s\":%.4f", cpu);
	if (ac) {
		static union stats su;
		arf_stats(ac, &su.s);
		struct arf_client_stats s = su.s;
		printf(",\"one_sided_reads\":%" PRIu64 ",\"rounds\":%" PRIu64 ",\"requests\":%" PRIu64
		       ",\"execs\":%" PRIu64 ",\"fallbacks\":%" PRIu64 ",\"retries\":%" PRIu64
		       ",\"cache_hits\":%" PRIu64 ",\"cache_misses\":%" PRIu64,
		       s.one_sided_reads - s0.one_sided_reads, s.rounds - s0.rounds,
		       s.requests - s0.requests, s.execs - s0.execs, s.fallbacks - s0.fallbacks,
		       s.retries - s0.retries, s.cache_hits - s0.cache_hits,
		       s.cache_misses - s0.cache_misses);
#ifdef ARF_HAVE_EXEC_OPTS
		printf(",\"prog_loads\":%" PRIu64 ",\"exec_insns\":%" PRIu64,
		       s.prog_loads - s0.prog_loads, s.exec_insns - s0.exec_insns);
#endif
		printf(",\"transport\":\"%s\"", arf_transport(ac));
	}
	printf("}\n");
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: metabench arf|nfs|posix TARGET setup|create|stat|lookup|readdir|unlink|teardown\n"
		"  [--base /mb] [--files N] [--big N] [--secs S] [--warm] [--strategy hybrid|onesided|requests]\n"
		"  [--nocache] [--changed] [--spin-us N] [--server-pid PID]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "base", 1, 0, 'b' },       { "files", 1, 0, 'n' },    { "big", 1, 0, 'B' },
		{ "secs", 1, 0, 't' },       { "warm", 0, 0, 'w' },     { "strategy", 1, 0, 's' },
		{ "nocache", 0, 0, 'C' },    { "changed", 0, 0, 'c' },    { "spin-us", 1, 0, 'S' },  { "server-pid", 1, 0, 'p' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b': base = optarg; break;
		case 'n': nfiles = atol(optarg); break;
		case 'B': nbig = atol(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'w': warm = 1; break;
		case 's': strategy = optarg; break;
		case 'C': nocache = 1; break;
		case 'c': changed = 1; break;
		case 'S': spin_us = atol(optarg); break;
		case 'p': server_pid = atoi(optarg); break;
		default: usage();
		}
	}
	if (argc - optind != 3)
		usage();
	const char *bn = argv[optind], *phase = argv[optind + 2];
	target = argv[optind + 1];
	if (!strcmp(bn, "arf"))
		be = B_ARF;
	else if (!strcmp(bn, "nfs"))
		be = B_NFS;
	else if (!strcmp(bn, "posix"))
		be = B_POSIX;
	else
		usage();
	if (nfiles < 1 || nbig < 1 || secs <= 0)
		usage();
	if (changed && be == B_ARF) {
		fprintf(stderr, "metabench: --changed: libarf keeps no listing (posix and nfs only)\n");
		return 2;
	}
	connect_be();

	char path[4096], deep[4096];
	deep_path(deep, sizeof(deep));
	uint64_t size;

	if (!strcmp(phase, "setup")) {
		start();
		CHECK("mkdir", base, do_mkdir(base));
		snprintf(path, sizeof(path), "%s/files", base);
		CHECK("mkdir", path, do_mkdir(path));
		int n = snprintf(path, sizeof(path), "%s", base);
		for (int i = 1; i <= DEPTH - 2; i++) {
			n += snprintf(path + n, sizeof(path) - (size_t)n, "/p%d", i);
			CHECK("mkdir", path, do_mkdir(path));
		}
		CHECK("create", deep, do_create(deep));
		snprintf(path, sizeof(path), "%s/big", base);
		CHECK("mkdir", path, do_mkdir(path));
		for (long i = 0; i < nbig; i++) {
			snprintf(path, sizeof(path), "%s/big/e%06ld", base, i);
			CHECK("create", path, do_create(path));
		}
		report("setup", nbig + DEPTH, nbig + DEPTH);
	} else if (!strcmp(phase, "create")) {
		start();
		for (long i = 0; i < nfiles; i++) {
			file_path(path, sizeof(path), i);
			CHECK("create", path, do_create(path));
		}
		report("create", nfiles, nfiles);
	} else if (!strcmp(phase, "stat")) {
		if (warm)
			for (long i = 0; i < nfiles; i++) {
				file_path(path, sizeof(path), i);
				CHECK("stat", path, do_stat(path, &size));
			}
		start();
		for (long i = 0; i < nfiles; i++) {
			file_path(path, sizeof(path), i);
			CHECK("stat", path, do_stat(path, &size));
		}
		report(warm ? "stat_warm" : "stat_cold", nfiles, nfiles);
	} else if (!strcmp(phase, "lookup")) {
		CHECK("stat", deep, do_stat(deep, &size)); /* warm-up, untimed */
		long ops = 0;
		start();
		double end = t0 + secs;
		do {
			for (int k = 0; k < 16; k++, ops++)
				CHECK("stat", deep, do_stat(deep, &size));
		} while (now() < end);
		report("lookup", ops, ops * DEPTH);
	} else if (!strcmp(phase, "readdir")) {
		snprintf(path, sizeof(path), "%s/big", base);
		long n = do_listdir(path); /* warm-up, untimed */
		if (n < 0)
			die("readdir", path, errtext((int)n));
		if (n != nbig) {
			fprintf(stderr, "metabench: %s has %ld entries, expected %ld\n", path, n, nbig);
			return 1;
		}
		long ops = 0, items = 0;
		start();
		double end = t0 + secs;
		do {
			if (changed) /* timed: ~0.1 ms beside a listing's milliseconds */
				CHECK("utimes", path, do_touch(path));
			n = do_listdir(path);
			if (n < 0)
				die("readdir", path, errtext((int)n));
			ops++;
			items += n;
		} while (now() < end);
		report(changed ? "readdir_changed" : "readdir", ops, items);
	} else if (!strcmp(phase, "unlink")) {
		start();
		for (long i = 0; i < nfiles; i++) {
			file_path(path, sizeof(path), i);
			CHECK("unlink", path, do_unlink(path));
		}
		report("unlink", nfiles, nfiles);
	} else if (!strcmp(phase, "teardown")) {
		start();
		for (long i = 0; i < nbig; i++) {
			snprintf(path, sizeof(path), "%s/big/e%06ld", base, i);
			CHECK("unlink", path, do_unlink(path));
		}
		snprintf(path, sizeof(path), "%s/big", base);
		CHECK("rmdir", path, do_rmdir(path));
		CHECK("unlink", deep, do_unlink(deep));
		for (int i = DEPTH - 2; i >= 1; i--) {
			char *slash = strrchr(deep, '/');
			*slash = 0;
			CHECK("rmdir", deep, do_rmdir(deep));
		}
		snprintf(path, sizeof(path), "%s/files", base);
		CHECK("rmdir", path, do_rmdir(path));
		CHECK("rmdir", base, do_rmdir(base));
		report("teardown", nbig, nbig);
	} else {
		usage();
	}
	disconnect_be();
	return 0;
}
