/* SPDX-License-Identifier: MIT */
/*
 * arfctl — the ARF command-line client: file commands on arf:// URLs
 * (ls, stat, cat, put, mkdir, rm, mv, exec) and the server summary
 * (status), with --json output and the client's counters (--stats); the
 * management commands (admin.c) through arfd's control socket.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "arf.h"
#include "arf_mc.h"
#include "arf_progs.h"

static int opt_json, opt_stats, opt_raw;
static size_t opt_out_max = 1u << 20;
static struct arf_client_opts copts;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: arfctl [OPTIONS] COMMAND ARGS\n"
		"\n"
		"Commands (URL = arf://HOST[:PORT]/PATH or arf+shm:///PATH[?socket=SOCK]):\n"
		"  ls URL               list a directory (or name a file)\n"
		"  stat URL             attributes of a file (symbolic links are not followed)\n"
		"  cat URL              write a file's bytes to standard output\n"
		"  put LOCALFILE URL    copy a local file (\"-\" = standard input) to URL\n"
		"                       (into it, if URL is a directory)\n"
		"  mkdir [-p] URL       make a directory (-p: with its parents, no error if it exists)\n"
		"  rm URL               remove a file, or an empty directory\n"
		"  mv URL URL           rename within one server\n"
		"  status URL, stats URL  the server's summary and counters, over the data connection\n"
		"  exec PROGRAM URL [ARG...]  load PROGRAM into the server, run it once with the\n"
		"                       ARGs as its context, print r0, the instructions executed\n"
		"                       and the output as a hex dump (raw bytes with --raw).\n"
		"                       PROGRAM: FILE.o (ELF from clang -target bpf), FILE.s\n"
		"                       (arf-asm text), other files raw bytecode, or @lookup,\n"
		"                       @resolve, @readdir, @mkdirp (libarf's standard\n"
		"                       programs, mobilecode/progs/arf_prog_abi.h).  ARG:\n"
		"                       u8:N u16:N u32:N u64:N (little-endian), str:TEXT,\n"
		"                       strz:TEXT (with a NUL), hex:HEXDIGITS, zero:N (N zero\n"
		"                       bytes), align:N (zeros to a multiple of N), ino and gen\n"
		"                       (u64 inode and u32 generation of URL's path)\n"
		"\n"
		"Management (through arfd's control socket: root or its control group):\n"
		"  status               the server's summary: incarnation, uptime, regions, clients\n"
		"  stats [--prometheus] the server's counters (JSON, or the Prometheus text format)\n"
		"  clients              the connected clients, their transport and counters\n"
		"  exports              the export: path, options, transports\n"
		"  progs list           the cached programs, most recently used first, one a line:\n"
		"                       hash, size (instructions/bytes), loads, runs, instructions\n"
		"                       executed, last use (--json: an array of objects)\n"
		"  progs show HASH      one cached program's details and counters\n"
		"  progs disasm HASH    its disassembly (arf-asm syntax, assembles back)\n"
		"  progs unload HASH    drop it from the cache (clients load it again on next use)\n"
		"                       HASH: its hex digits, or a unique prefix of them\n"
		"  fsck                 check the live filesystem and compare it with RocksDB\n"
		"  fsck --data-dir DIR  check a stopped server's data directory\n"
		"  checkpoint           sync and compact RocksDB\n"
		"  config check FILE    check an arfd.conf without starting anything\n"
		"  (fsck exits 1 when it finds damage, listing each problem)\n"
		"\n"
		"Options:\n"
		"  --json               print one JSON object on standard output\n"
		"  --stats              add the client's counters (under \"stats\" with --json;\n"
		"                       on standard error for cat)\n"
		"  --requests-only      no one-sided reads: every read is a request\n"
		"  --no-resvport        tcp: never connect from a reserved port (which proves\n"
		"                       root to an export with one_sided = root)\n"
		"  --max-hops N         one-sided hash-chain hops before shipping the lookup\n"
		"                       (default: by transport, 11 over tcp and rdma, 256 over shm)\n"
		"  --spin-us N          poll this long for a reply before sleeping (default 50)\n"
		"  --timeout-ms N       connect and reply timeout (default 30000)\n"
		"  --control PATH       arfd's control socket (default /run/arf/arfd.ctl)\n"
		"  --secret-file FILE   prove the export's shared secret (arfd.conf secret_file)\n"
		"  --reconnect-ms N     wait this long for a restarted server (default 30000)\n"
		"  --uid N, --gid N     identity claimed in requests (AUTH_SYS; default: yours;\n"
		"                       root squashing and shm peer credentials still apply)\n"
		"  --prometheus         stats in the Prometheus text format\n"
		"  --raw                exec: write the output bytes alone, unformatted\n"
		"  --out-max N          exec: output bytes to accept (default 1048576)\n"
		"  -h, --help           show this help\n"
		"  -V, --version        show the version\n"
		"\n"
		"Exit status: 0 on success, 1 on failure (with a one-line message), 2 on bad usage.\n");
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void print_stats_json(FILE *f, arf_client *c)
{
	struct arf_client_stats s;
	arf_stats(c, &s);
	fprintf(f,
		"{\"one_sided_reads\":%" PRIu64 ",\"one_sided_bytes\":%" PRIu64 ",\"rounds\":%" PRIu64
		",\"requests\":%" PRIu64 ",\"execs\":%" PRIu64 ",\"retries\":%" PRIu64
		",\"fallbacks\":%" PRIu64 ",\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64
		",\"cache_hits\":%" PRIu64 ",\"cache_misses\":%" PRIu64 ",\"requests_by_kind\":{",
		s.one_sided_reads, s.one_sided_bytes, s.rounds, s.requests, s.execs, s.retries,
		s.fallbacks, s.bytes_sent, s.bytes_received, s.cache_hits, s.cache_misses);
	int first = 1;
	for (int i = 0; i < ARF_NKINDS; i++) {
		if (!s.requests_by_kind[i])
			continue;
		fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", arf_request_kind_name(i),
			s.requests_by_kind[i]);
		first = 0;
	}
	fprintf(f, "},\"fallbacks_by_reason\":{");
	for (int i = 0; i < ARF_FALLBACK_NREASONS; i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", arf_fallback_reason_name(i),
			s.fallbacks_by_reason[i]);
	fprintf(f, "},\"prog_loads\":%" PRIu64 ",\"exec_insns\":%" PRIu64 ",\"execs_by_reason\":{",
		s.prog_loads, s.exec_insns);
	for (int i = 0; i < ARF_EXEC_NREASONS; i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", arf_exec_reason_name(i),
			s.execs_by_reason[i]);
	/* the thresholds behind those decisions, as set for this transport */
	struct arf_client_policy p;
	arf_client_policy(c, &p);
	fprintf(f, "},\"policy\":{\"max_hops\":%u,\"resolve_exec_depth\":%u,"
		"\"readdir_exec_min\":%u,\"readdirplus_exec_min\":%u,\"readdir_req_min\":%u}}",
		p.max_hops, p.resolve_exec_depth, p.readdir_exec_min, p.readdirplus_exec_min,
		p.readdir_req_min);
}

static void print_stats_text(FILE *f, arf_client *c)
{
	struct arf_client_stats s;
	arf_stats(c, &s);
	fprintf(f,
		"one_sided_reads %" PRIu64 "\none_sided_bytes %" PRIu64 "\nrounds %" PRIu64
		"\nrequests %" PRIu64 "\nexecs %" PRIu64 "\nretries %" PRIu64 "\nfallbacks %" PRIu64
		"\nbytes_sent %" PRIu64 "\nbytes_received %" PRIu64 "\n",
		s.one_sided_reads, s.one_sided_bytes, s.rounds, s.requests, s.execs, s.retries,
		s.fallbacks, s.bytes_sent, s.bytes_received);
	for (int i = 0; i < ARF_NKINDS; i++)
		if (s.requests_by_kind[i])
			fprintf(f, "requests.%s %" PRIu64 "\n", arf_request_kind_name(i),
				s.requests_by_kind[i]);
	for (int i = 0; i < ARF_FALLBACK_NREASONS; i++)
		if (s.fallbacks_by_reason[i])
			fprintf(f, "fallbacks.%s %" PRIu64 "\n", arf_fallback_reason_name(i),
				s.fallbacks_by_reason[i]);
	fprintf(f, "prog_loads %" PRIu64 "\nexec_insns %" PRIu64 "\n", s.prog_loads, s.exec_insns);
	for (int i = 0; i < ARF_EXEC_NREASONS; i++)
		if (s.execs_by_reason[i])
			fprintf(f, "execs.%s %" PRIu64 "\n", arf_exec_reason_name(i), s.execs_by_reason[i]);
	struct arf_client_policy p;
	arf_client_policy(c, &p);
	fprintf(f, "policy.max_hops %u\npolicy.resolve_exec_depth %u\npolicy.readdir_exec_min %u\n"
		"policy.readdirplus_exec_min %u\npolicy.readdir_req_min %u\n", p.max_hops,
		p.resolve_exec_depth, p.readdir_exec_min, p.readdirplus_exec_min, p.readdir_req_min);
}

/* Close a JSON object that the command opened on stdout, adding stats. */
static void json_end(arf_client *c)
{
	if (opt_stats) {
		printf(",\"stats\":");
		print_stats_json(stdout, c);
	}
	printf("}\n");
}

static int fail(const char *cmd, const char *what, int err)
{
	fprintf(stderr, "arfctl: %s %s: %s\n", cmd, what, arf_strerror(err));
	return 1;
}

static int open_url(const char *url, arf_client **c, struct arf_url *u)
{
	char err[512];
	if (arf_url_parse(url, u, err, sizeof(err))) {
		fprintf(stderr, "arfctl: %s\n", err);
		return 2;
	}
	if (arf_connect(url, &copts, c, err, sizeof(err))) {
		fprintf(stderr, "arfctl: %s\n", err);
		return 1;
	}
	return 0;
}

/* Split "/a/b/c" into parent "/a/b" and name "c". */
static int split_path(const char *path, char *parent, size_t plen, const char **name)
{
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *end = path + n;
	const char *slash = end;
	while (slash > path && slash[-1] != '/')
		slash--;
	if (slash == end || (size_t)(slash - path) >= plen)
		return -EINVAL; /* the root has no parent */
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = 0;
	if (!parent[0])
		strcpy(parent, "/");
	static char namebuf[4096];
	memcpy(namebuf, slash, (size_t)(end - slash));
	namebuf[end - slash] = 0;
	*name = namebuf;
	return 0;
}

static const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "char";
	case S_IFBLK: return "block";
	default: return "unknown";
	}
}

static void print_time(const char *label, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char buf[64];
	localtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s: %s.%09lld\n", label, buf, (long long)(ns % 1000000000));
}

static int cmd_stat(arf_client *c, const struct arf_url *u)
{
	struct arf_stat st;
	int rc = arf_resolve(c, u->path, &st);
	if (rc)
		return fail("stat", u->path, rc);
	if (opt_json) {
		printf("{\"path\":");
		json_str(stdout, u->path);
		printf(",\"type\":\"%s\",\"ino\":%" PRIu64 ",\"gen\":%u,\"mode\":%u,\"nlink\":%u,"
		       "\"uid\":%u,\"gid\":%u,\"size\":%" PRIu64 ",\"blocks\":%" PRIu64
		       ",\"atime_ns\":%lld,\"mtime_ns\":%lld,\"ctime_ns\":%lld",
		       type_name(st.mode), st.ino, st.gen, st.mode & 07777, st.nlink, st.uid, st.gid,
		       st.size, st.blocks, (long long)st.atime_ns, (long long)st.mtime_ns,
		       (long long)st.ctime_ns);
		json_end(c);
		return 0;
	}
	printf("  Path: %s\n  Type: %s\n  Size: %" PRIu64 "\tBlocks: %" PRIu64 "\n Inode: %" PRIu64
	       "\tGeneration: %u\tLinks: %u\nAccess: %04o\tUid: %u\tGid: %u\n",
	       u->path, type_name(st.mode), st.size, st.blocks, st.ino, st.gen, st.nlink,
	       st.mode & 07777, st.uid, st.gid);
	print_time("Access", st.atime_ns);
	print_time("Modify", st.mtime_ns);
	print_time("Change", st.ctime_ns);
	if (opt_stats)
		print_stats_text(stdout, c);
	return 0;
}

static int cmd_ls(arf_client *c, const struct arf_url *u)
{
	struct arf_stat st;
	int rc = arf_resolve(c, u->path, &st);
	if (rc)
		return fail("ls", u->path, rc);
	if (opt_json)
		printf("{\"path\":");
	if (opt_json) {
		json_str(stdout, u->path);
		printf(",\"entries\":[");
	}
	if (!S_ISDIR(st.mode)) {
		const char *slash = strrchr(u->path, '/');
		const char *name = slash ? slash + 1 : u->path;
		if (opt_json) {
			printf("{\"name\":");
			json_str(stdout, name);
			printf(",\"ino\":%" PRIu64 ",\"type\":\"%s\"}]", st.ino, type_name(st.mode));
			json_end(c);
		} else {
			printf("%s\n", name);
		}
		return 0;
	}
	struct arf_dirent *ents = malloc(1024 * sizeof(*ents));
	uint64_t cookie = 0;
	int eof = 0, first = 1;
	if (!ents)
		return fail("ls", u->path, -ENOMEM);
	while (!eof) {
		size_t n = 0;
		rc = arf_readdir(c, st.ino, st.gen, cookie, ents, 1024, &n, &eof);
		if (rc) {
			free(ents);
			if (opt_json)
				printf("]}\n");
			return fail("ls", u->path, rc);
		}
		for (size_t i = 0; i < n; i++) {
			static const char *const dt[] = { [DT_REG] = "file", [DT_DIR] = "directory",
							  [DT_LNK] = "symlink", [DT_FIFO] = "fifo",
							  [DT_SOCK] = "socket", [DT_CHR] = "char",
							  [DT_BLK] = "block" };
			const char *t = ents[i].type < sizeof(dt) / sizeof(dt[0]) && dt[ents[i].type]
						? dt[ents[i].type] : "unknown";
			if (opt_json) {
				printf("%s{\"name\":", first ? "" : ",");
				json_str(stdout, ents[i].name);
				printf(",\"ino\":%" PRIu64 ",\"type\":\"%s\"}", ents[i].ino, t);
			} else {
				printf("%s\n", ents[i].name);
			}
			first = 0;
			cookie = ents[i].cookie;
		}
		if (n == 0)
			break;
	}
	free(ents);
	if (opt_json) {
		printf("]");
		json_end(c);
	} else if (opt_stats) {
		print_stats_text(stdout, c);
	}
	return 0;
}

static int cmd_cat(arf_client *c, const struct arf_url *u)
{
	struct arf_stat st;
	int rc = arf_resolve(c, u->path, &st);
	if (rc)
		return fail("cat", u->path, rc);
	if (S_ISDIR(st.mode))
		return fail("cat", u->path, -EISDIR);
	size_t bufsz = 4u << 20;
	char *buf = malloc(bufsz);
	uint64_t off = 0;
	if (!buf)
		return fail("cat", u->path, -ENOMEM);
	for (;;) {
		ssize_t n = arf_read(c, st.ino, st.gen, off, buf, bufsz);
		if (n < 0) {
			free(buf);
			return fail("cat", u->path, (int)n);
		}
		if (n == 0)
			break;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
			free(buf);
			return fail("cat", "standard output", -errno);
		}
		off += (uint64_t)n;
		if ((size_t)n < bufsz && off >= st.size)
			break;
	}
	free(buf);
	fflush(stdout);
	if (opt_stats) {
		if (opt_json) {
			fprintf(stderr, "{\"path\":");
			json_str(stderr, u->path);
			fprintf(stderr, ",\"bytes\":%" PRIu64 ",\"stats\":", off);
			print_stats_json(stderr, c);
			fprintf(stderr, "}\n");
		} else {
			print_stats_text(stderr, c);
		}
	}
	return 0;
}

static int cmd_put(arf_client *c, const char *local, const struct arf_url *u)
{
	char parent[4096];
	const char *name;
	struct arf_stat dir, st;
	char path[4096];
	int fd = strcmp(local, "-") ? open(local, O_RDONLY) : 0;
	int rc;

	if (fd < 0)
		return fail("put", local, -errno);
	snprintf(path, sizeof(path), "%s", u->path);
	/* into a directory: keep the local base name */
	if (arf_resolve(c, path, &st) == 0 && S_ISDIR(st.mode)) {
		const char *base = strrchr(local, '/');
		base = base ? base + 1 : local;
		if (!strcmp(local, "-")) {
			close(fd);
			return fail("put", u->path, -EISDIR);
		}
		size_t pl = strlen(path);
		snprintf(path + pl, sizeof(path) - pl, "%s%s", pl && path[pl - 1] == '/' ? "" : "/", base);
	}
	if (split_path(path, parent, sizeof(parent), &name)) {
		close(fd);
		return fail("put", path, -EINVAL);
	}
	if ((rc = arf_resolve(c, parent, &dir)) ||
	    (rc = arf_create(c, dir.ino, dir.gen, name, 0644, 0, &st))) {
		if (fd)
			close(fd);
		return fail("put", path, rc);
	}
	if (st.size) {
		struct arf_setattr sa = { .valid = ARF_SET_SIZE, .size = 0 };
		if ((rc = arf_setattr(c, st.ino, st.gen, &sa, &st))) {
			if (fd)
				close(fd);
			return fail("put", path, rc);
		}
	}
	size_t bufsz = 1u << 20;
	char *buf = malloc(bufsz);
	uint64_t off = 0;
	if (!buf)
		return fail("put", path, -ENOMEM);
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		ssize_t w = arf_write(c, st.ino, st.gen, off, buf, (size_t)n);
		if (w < 0) {
			rc = (int)w;
			break;
		}
		if (w != n) {
			rc = -ENOSPC;
			break;
		}
		off += (uint64_t)n;
	}
	free(buf);
	if (fd)
		close(fd);
	if (rc)
		return fail("put", path, rc);
	if (opt_json) {
		printf("{\"path\":");
		json_str(stdout, path);
		printf(",\"bytes\":%" PRIu64 ",\"ino\":%" PRIu64, off, st.ino);
		json_end(c);
	} else if (opt_stats) {
		print_stats_text(stdout, c);
	}
	return 0;
}

static int mkdir_one(arf_client *c, const char *path, int parents)
{
	char parent[4096];
	const char *name;
	struct arf_stat dir, st;
	int rc;

	if (split_path(path, parent, sizeof(parent), &name))
		return parents ? 0 : -EEXIST; /* the root exists */
	char namecopy[4096];
	snprintf(namecopy, sizeof(namecopy), "%s", name);
	rc = arf_resolve(c, parent, &dir);
	if (rc == -ENOENT && parents) {
		if ((rc = mkdir_one(c, parent, 1)))
			return rc;
		rc = arf_resolve(c, parent, &dir);
	}
	if (rc)
		return rc;
	rc = arf_mkdir(c, dir.ino, dir.gen, namecopy, 0755, &st);
	if (rc == -EEXIST && parents) {
		if (arf_lookup(c, dir.ino, dir.gen, namecopy, &st) == 0 && S_ISDIR(st.mode))
			return 0;
	}
	return rc;
}

static int cmd_mkdir(arf_client *c, const struct arf_url *u, int parents)
{
	int rc = mkdir_one(c, u->path, parents);
	if (rc)
		return fail("mkdir", u->path, rc);
	if (opt_json) {
		printf("{\"path\":");
		json_str(stdout, u->path);
		json_end(c);
	} else if (opt_stats) {
		print_stats_text(stdout, c);
	}
	return 0;
}

static int cmd_rm(arf_client *c, const struct arf_url *u)
{
	char parent[4096];
	const char *name;
	struct arf_stat dir, st;
	int rc;

	if (split_path(u->path, parent, sizeof(parent), &name))
		return fail("rm", u->path, -EBUSY);
	if ((rc = arf_resolve(c, u->path, &st)) || (rc = arf_resolve(c, parent, &dir)))
		return fail("rm", u->path, rc);
	rc = S_ISDIR(st.mode) ? arf_rmdir(c, dir.ino, dir.gen, name)
			      : arf_unlink(c, dir.ino, dir.gen, name);
	if (rc)
		return fail("rm", u->path, rc);
	if (opt_json) {
		printf("{\"path\":");
		json_str(stdout, u->path);
		json_end(c);
	} else if (opt_stats) {
		print_stats_text(stdout, c);
	}
	return 0;
}

static int cmd_mv(arf_client *c, const struct arf_url *from, const char *to_url)
{
	struct arf_url to;
	char err[512], op[4096], np[4096], oname[4096];
	const char *name;
	struct arf_stat od, nd, st;
	int rc;

	if (arf_url_parse(to_url, &to, err, sizeof(err))) {
		fprintf(stderr, "arfctl: %s\n", err);
		return 2;
	}
	if (strcmp(from->transport, to.transport) || strcmp(from->host, to.host) ||
	    from->port != to.port || strcmp(from->socket, to.socket))
		return fail("mv", to_url, -EXDEV);
	char target[sizeof(to.path) + 1 + sizeof(from->path)];
	memcpy(target, to.path, strlen(to.path) + 1);
	if (arf_resolve(c, target, &st) == 0 && S_ISDIR(st.mode)) {
		const char *base = strrchr(from->path, '/');
		size_t tl = strlen(target);
		if (!tl || target[tl - 1] != '/')
			target[tl++] = '/';
		base = base ? base + 1 : from->path;
		memcpy(target + tl, base, strlen(base) + 1);
	}
	if (split_path(from->path, op, sizeof(op), &name))
		return fail("mv", from->path, -EBUSY);
	snprintf(oname, sizeof(oname), "%s", name);
	if (split_path(target, np, sizeof(np), &name))
		return fail("mv", target, -EBUSY);
	if ((rc = arf_resolve(c, op, &od)) || (rc = arf_resolve(c, np, &nd)))
		return fail("mv", from->path, rc);
	if ((rc = arf_rename(c, od.ino, od.gen, oname, nd.ino, nd.gen, name, 0)))
		return fail("mv", from->path, rc);
	if (opt_json) {
		printf("{\"from\":");
		json_str(stdout, from->path);
		printf(",\"to\":");
		json_str(stdout, target);
		json_end(c);
	} else if (opt_stats) {
		print_stats_text(stdout, c);
	}
	return 0;
}

/* ---- exec ---- */

/* The program's bytes: a standard program, an ELF object, arf-asm text
 * (assembled here) or raw bytecode.  *bytes is malloc'd.  0, or 1/2 with a
 * message printed. */
static int load_program(const char *spec, uint8_t **bytes, size_t *len)
{
	if (spec[0] == '@') {
		for (int i = 0; i < ARF_STD_PROG_COUNT; i++)
			if (!strcmp(spec + 1, arf_std_progs[i].name)) {
				*len = arf_std_progs[i].len;
				*bytes = malloc(*len);
				if (!*bytes)
					return 1;
				memcpy(*bytes, arf_std_progs[i].elf, *len);
				return 0;
			}
		fprintf(stderr, "arfctl: exec: no standard program '%s' (@lookup, @resolve, @readdir, @mkdirp)\n",
			spec);
		return 2;
	}
	FILE *f = fopen(spec, "rb");
	if (!f) {
		fprintf(stderr, "arfctl: exec: %s: %s\n", spec, strerror(errno));
		return 1;
	}
	size_t cap = 1 << 16, n = 0, got;
	uint8_t *buf = malloc(cap + 1);
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, (cap *= 2) + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return 1;
	size_t sl = strlen(spec);
	if (sl > 2 && !strcmp(spec + sl - 2, ".s")) {
		struct arf_mc_insn *insns;
		size_t ni;
		char err[256];
		buf[n] = 0;
		if (arf_mc_asm((const char *)buf, &insns, &ni, err, sizeof(err))) {
			fprintf(stderr, "arfctl: exec: %s: %s\n", spec, err);
			free(buf);
			return 1;
		}
		free(buf);
		*bytes = (uint8_t *)insns;
		*len = ni * sizeof(*insns);
		return 0;
	}
	*bytes = buf;
	*len = n;
	return 0;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Append one ARG's bytes to the context. */
static int put_arg(uint8_t **ctx, size_t *len, const char *a, const struct arf_stat *st)
{
	uint8_t tmp[8];
	const uint8_t *src = tmp;
	size_t n = 0, grow;
	char *end;

	if (!strcmp(a, "ino")) {
		memcpy(tmp, &st->ino, 8);
		n = 8;
	} else if (!strcmp(a, "gen")) {
		memcpy(tmp, &st->gen, 4);
		n = 4;
	} else if (!strncmp(a, "u8:", 3) || !strncmp(a, "u16:", 4) || !strncmp(a, "u32:", 4) ||
		   !strncmp(a, "u64:", 4)) {
		const char *v = strchr(a, ':') + 1;
		errno = 0;
		uint64_t x = *v == '-' ? (uint64_t)strtoll(v, &end, 0) : strtoull(v, &end, 0);
		if (errno || end == v || *end)
			goto bad;
		n = a[1] == '8' ? 1 : a[1] == '1' ? 2 : a[1] == '3' ? 4 : 8;
		memcpy(tmp, &x, n);
	} else if (!strncmp(a, "str:", 4) || !strncmp(a, "strz:", 5)) {
		src = (const uint8_t *)strchr(a, ':') + 1;
		n = strlen((const char *)src) + (a[3] == 'z');
	} else if (!strncmp(a, "zero:", 5) || !strncmp(a, "align:", 6)) {
		const char *v = strchr(a, ':') + 1;
		unsigned long long k = strtoull(v, &end, 0);
		if (end == v || *end || k > (1u << 20) || (a[0] == 'a' && k == 0))
			goto bad;
		n = a[0] == 'z' ? (size_t)k : (size_t)((k - *len % k) % k);
		grow = *len + n;
		uint8_t *nb = realloc(*ctx, grow ? grow : 1);
		if (!nb)
			return 1;
		memset(nb + *len, 0, n);
		*ctx = nb;
		*len = grow;
		return 0;
	} else if (!strncmp(a, "hex:", 4)) {
		const char *h = a + 4;
		size_t hl = strlen(h);
		if (hl % 2)
			goto bad;
		uint8_t *nb = realloc(*ctx, *len + hl / 2 + 1);
		if (!nb)
			return 1;
		*ctx = nb;
		for (size_t i = 0; i < hl; i += 2) {
			int hi = hexval(h[i]), lo = hexval(h[i + 1]);
			if (hi < 0 || lo < 0)
				goto bad;
			nb[(*len)++] = (uint8_t)(hi << 4 | lo);
		}
		return 0;
	} else {
		goto bad;
	}
	uint8_t *nb = realloc(*ctx, *len + n + 1);
	if (!nb)
		return 1;
	memcpy(nb + *len, src, n);
	*ctx = nb;
	*len += n;
	return 0;
bad:
	fprintf(stderr, "arfctl: exec: bad argument '%s' (see arfctl --help)\n", a);
	return 2;
}

static int cmd_exec(arf_client *c, const struct arf_url *u, const char *spec, int nargs,
		    char **args)
{
	uint8_t *prog = NULL, *ctx = NULL, *out = NULL;
	size_t plen = 0, clen = 0;
	struct arf_exec_result res;
	struct arf_stat st = { 0 };
	int rc, need_st = 0;

	for (int i = 0; i < nargs; i++)
		need_st |= !strcmp(args[i], "ino") || !strcmp(args[i], "gen");
	if (need_st && (rc = arf_resolve(c, u->path, &st)))
		return fail("exec", u->path, rc);
	if ((rc = load_program(spec, &prog, &plen)))
		return rc;
	for (int i = 0; i < nargs; i++)
		if ((rc = put_arg(&ctx, &clen, args[i], &st)))
			goto out;
	out = malloc(opt_out_max ? opt_out_max : 1);
	if (!out) {
		rc = 1;
		goto out;
	}
	rc = arf_exec(c, prog, plen, ctx, clen, out, opt_out_max, &res);
	if (rc) {
		fprintf(stderr, "arfctl: exec %s: %s (%s)\n", spec, res.msg, arf_strerror(rc));
		if (opt_json) {
			printf("{\"error\":");
			json_str(stdout, res.msg);
			printf(",\"code\":");
			json_str(stdout, arf_strerror(rc));
			printf(",\"pc\":%u,\"insns\":%" PRIu64, res.pc, res.insns);
			json_end(c);
		}
		rc = 1;
		goto out;
	}
	if (opt_json) {
		printf("{\"r0\":%" PRId64 ",\"insns\":%" PRIu64 ",\"output_len\":%zu,\"output_hex\":\"",
		       res.r0, res.insns, res.out_len);
		for (size_t i = 0; i < res.out_len; i++)
			printf("%02x", out[i]);
		printf("\"");
		json_end(c);
	} else if (opt_raw) {
		fwrite(out, 1, res.out_len, stdout);
	} else {
		printf("r0 %" PRId64 "\ninsns %" PRIu64 "\noutput %zu bytes\n", res.r0, res.insns,
		       res.out_len);
		for (size_t i = 0; i < res.out_len; i += 16) {
			printf("%08zx ", i);
			for (size_t k = i; k < i + 16 && k < res.out_len; k++)
				printf(" %02x", out[k]);
			printf("\n");
		}
		if (opt_stats)
			print_stats_text(stdout, c);
	}
	rc = 0;
out:
	free(prog);
	free(ctx);
	free(out);
	return rc;
}

static int cmd_status(arf_client *c, const struct arf_url *u)
{
	char *json = NULL;
	int rc = arf_server_status(c, &json);
	if (rc)
		return fail("status", u->path, rc);
	if (opt_json) {
		printf("{\"transport\":\"%s\",\"server\":%s", arf_transport(c), json);
		json_end(c);
	} else {
		printf("transport: %s\nserver: %s\n", arf_transport(c), json);
		if (opt_stats)
			print_stats_text(stdout, c);
	}
	free(json);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, 0, 'j' },
		{ "stats", no_argument, 0, 's' },
		{ "requests-only", no_argument, 0, 'r' },
		{ "no-resvport", no_argument, 0, 'N' },
		{ "max-hops", required_argument, 0, 'H' },
		{ "spin-us", required_argument, 0, 'S' },
		{ "timeout-ms", required_argument, 0, 'T' },
		{ "control", required_argument, 0, 'C' },
		{ "secret-file", required_argument, 0, 'K' },
		{ "reconnect-ms", required_argument, 0, 'R' },
		{ "uid", required_argument, 0, 'u' },
		{ "gid", required_argument, 0, 'g' },
		{ "prometheus", no_argument, 0, 'P' },
		{ "raw", no_argument, 0, 'W' },
		{ "out-max", required_argument, 0, 'O' },
		{ "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	int opt;
	struct arfctl_admin adm = { .control = "/run/arf/arfd.ctl" };
	struct arf_cred claim = { .uid = (uint32_t)geteuid(), .gid = (uint32_t)getegid() };
	int claimed = 0;

	arf_client_opts_init(&copts);
	/* options come before the command; stop at the first non-option */
	while ((opt = getopt_long(argc, argv, "+hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': opt_json = 1; break;
		case 's': opt_stats = 1; break;
		case 'r': copts.one_sided = 0; break;
		case 'N': copts.resvport = 0; break;
		case 'H': copts.max_hops = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'S': copts.spin_us = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'T': copts.timeout_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'C': adm.control = optarg; break;
		case 'K': copts.secret_file = optarg; break;
		case 'R': copts.reconnect_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'u': claim.uid = (uint32_t)strtoul(optarg, NULL, 10); claimed = 1; break;
		case 'g': claim.gid = (uint32_t)strtoul(optarg, NULL, 10); claimed = 1; break;
		case 'P': adm.prometheus = 1; break;
		case 'W': opt_raw = 1; break;
		case 'O': opt_out_max = (size_t)strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("arfctl %s\n", ARF_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind++];
	int parents = 0;
	if (claimed)
		arf_set_thread_cred(&claim); /* AUTH_SYS: the server decides whether to believe it */
	/* management commands (status without a URL goes to the control socket) */
	int by_url = (!strcmp(cmd, "status") || !strcmp(cmd, "stats")) && argc - optind == 1;
	if (by_url && adm.prometheus) {
		fprintf(stderr, "arfctl: --prometheus needs the control socket (stats without a URL)\n");
		return 2;
	}
	if (!by_url) {
		adm.json = opt_json;
		int arc = arfctl_admin(&adm, cmd, argc - optind, argv + optind);
		if (arc >= 0)
			return arc;
	}
	if (!strcmp(cmd, "exec")) {
		if (argc - optind < 2) {
			fprintf(stderr, "arfctl: exec takes PROGRAM URL [ARG...] (see arfctl --help)\n");
			return 2;
		}
		arf_client *c = NULL;
		struct arf_url u;
		int rc = open_url(argv[optind + 1], &c, &u);
		if (rc)
			return rc;
		rc = cmd_exec(c, &u, argv[optind], argc - optind - 2, argv + optind + 2);
		arf_close(c);
		return rc;
	}
	if (!strcmp(cmd, "mkdir") && optind < argc && !strcmp(argv[optind], "-p")) {
		parents = 1;
		optind++;
	}
	int nargs = argc - optind;
	int want = !strcmp(cmd, "put") || !strcmp(cmd, "mv") ? 2 : 1;
	static const char *const known[] = { "ls", "stat", "cat", "put", "mkdir", "rm", "mv", "status",
					     "stats" };
	int ok = 0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		ok |= !strcmp(cmd, known[i]);
	if (!ok) {
		fprintf(stderr, "arfctl: unknown command '%s' (see arfctl --help)\n", cmd);
		return 2;
	}
	if (nargs != want) {
		fprintf(stderr, "arfctl: %s takes %d argument%s (see arfctl --help)\n", cmd, want,
			want > 1 ? "s" : "");
		return 2;
	}
	const char *url = !strcmp(cmd, "put") ? argv[optind + 1] : argv[optind];
	arf_client *c = NULL;
	struct arf_url u;
	int rc = open_url(url, &c, &u);
	if (rc)
		return rc;
	if (!strcmp(cmd, "stat"))
		rc = cmd_stat(c, &u);
	else if (!strcmp(cmd, "ls"))
		rc = cmd_ls(c, &u);
	else if (!strcmp(cmd, "cat"))
		rc = cmd_cat(c, &u);
	else if (!strcmp(cmd, "put"))
		rc = cmd_put(c, argv[optind], &u);
	else if (!strcmp(cmd, "mkdir"))
		rc = cmd_mkdir(c, &u, parents);
	else if (!strcmp(cmd, "rm"))
		rc = cmd_rm(c, &u);
	else if (!strcmp(cmd, "mv"))
		rc = cmd_mv(c, &u, argv[optind + 1]);
	else
		rc = cmd_status(c, &u);
	arf_close(c);
	return rc;
}
