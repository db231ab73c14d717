/* SPDX-License-Identifier: MIT */
/*
 * arfctl's management commands: status, stats, clients, exports, progs,
 * fsck and checkpoint through arfd's control socket (root or the control
 * group only; see arfd/control.c), fsck --data-dir on a stopped server's
 * RocksDB, and config check.  The control socket answers one JSON object (or
 * Prometheus text) per command; arfctl prints it as it is, except fsck and
 * progs, which read as text unless --json.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "arf_meta_fs.h"
#include "config.h"
#include "store.h"

/* One command over the control socket; the whole answer in *out (malloc'd). */
static int control_call(const char *path, const char *line, char **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, rc = 0;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "arfctl: control socket path too long: %s\n", path);
		return 1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "arfctl: control socket %s: %s%s\n", path, strerror(errno),
			errno == ENOENT || errno == ECONNREFUSED ? " (is arfd running? --control PATH)"
			: errno == EACCES ? " (root or the control group only)" : "");
		if (fd >= 0)
			close(fd);
		return 1;
	}
	size_t ll = strlen(line);
	if (write(fd, line, ll) != (ssize_t)ll || write(fd, "\n", 1) != 1) {
		fprintf(stderr, "arfctl: control socket %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap);
			if (!nb) {
				rc = 1;
				break;
			}
			buf = nb;
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc || !buf) {
		free(buf);
		fprintf(stderr, "arfctl: control socket %s: no answer\n", path);
		return 1;
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

/* The answer is an error object: say so and fail. */
static int answer_error(const char *cmd, const char *ans)
{
	const char *e = strstr(ans, "\"error\":\"");
	if (!e || strncmp(ans, "{\"error\"", 8))
		return 0;
	e += 9;
	const char *end = strchr(e, '"');
	fprintf(stderr, "arfctl: %s: %.*s\n", cmd, end ? (int)(end - e) : (int)strlen(e), e);
	return 1;
}

static int simple(const struct arfctl_admin *a, const char *cmd, const char *line)
{
	char *ans = NULL;
	if (control_call(a->control, line, &ans))
		return 1;
	int bad = answer_error(cmd, ans);
	if (!bad)
		fputs(ans, stdout);
	free(ans);
	return bad;
}

/* ---- fsck ---------------------------------------------------------------- */

struct report_ctx {
	int json;
	int n;
};

static void print_problem(void *ctx, const char *kind, const char *msg)
{
	struct report_ctx *r = ctx;
	if (r->json) {
		printf("%s{\"kind\":\"%s\",\"what\":\"", r->n ? "," : "", kind);
		for (const char *p = msg; *p; p++)
			if (*p == '"' || *p == '\\')
				printf("\\%c", *p);
			else
				putchar(*p);
		printf("\"}");
	} else {
		printf("%s: %s\n", kind, msg);
	}
	r->n++;
}

/* Offline: rebuild the regions from a stopped server's RocksDB in private
 * memory and check them. */
static int fsck_offline(const struct arfctl_admin *a, const char *dir)
{
	struct arfd_store *st = NULL;
	struct arf_meta_super sb;
	struct arf_meta_fs fs;
	char err[512];
	uint8_t *meta = MAP_FAILED, *data = MAP_FAILED;
	uint64_t nobj = 0;
	int rc = 1;
	struct stat dst;

	memset(&fs, 0, sizeof(fs));
	if (stat(dir, &dst) < 0 || !S_ISDIR(dst.st_mode)) {
		fprintf(stderr, "arfctl: fsck: %s: not a directory\n", dir);
		return 1;
	}
	if (arfd_store_open(dir, &st, err, sizeof(err))) {
		fprintf(stderr, "arfctl: fsck: %s%s\n", err,
			strstr(err, "lock") ? " (a running arfd holds it: use 'arfctl fsck' over its "
					      "control socket)" : "");
		return 1;
	}
	int found = arfd_store_super(st, &sb, err, sizeof(err));
	if (found <= 0) {
		fprintf(stderr, "arfctl: fsck: %s: %s\n", dir, found < 0 ? err : "no ARF filesystem here");
		goto out;
	}
	if (arf_meta_super_check(&sb, err, sizeof(err))) {
		fprintf(stderr, "arfctl: fsck: %s: superblock: %s\n", dir, err);
		goto out;
	}
	meta = mmap(NULL, sb.meta_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	data = mmap(NULL, sb.data_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (meta == MAP_FAILED || data == MAP_FAILED) {
		fprintf(stderr, "arfctl: fsck: cannot map %llu + %llu bytes: %s\n",
			(unsigned long long)sb.meta_size, (unsigned long long)sb.data_size, strerror(errno));
		goto out;
	}
	if (arfd_store_load(st, meta, sb.meta_size, data, sb.data_size, &nobj, err, sizeof(err)) ||
	    arf_meta_fs_attach(&fs, meta, sb.meta_size, data, sb.data_size, err, sizeof(err))) {
		fprintf(stderr, "arfctl: fsck: %s: %s\n", dir, err);
		goto out;
	}
	struct report_ctx rc_ctx = { a->json, 0 };
	struct arf_meta_fsck r = { .report = print_problem, .ctx = &rc_ctx };
	if (a->json)
		printf("{\"data_dir\":\"%s\",\"problems\":[", dir);
	int n = arf_meta_fsck(&fs, &r);
	if (n < 0) {
		fprintf(stderr, "arfctl: fsck: %s\n", strerror(-n));
		goto out;
	}
	if (a->json)
		printf("],\"count\":%llu,\"objects\":%llu,\"inodes\":%llu,\"directories\":%llu,"
		       "\"files\":%llu,\"entries\":%llu,\"blocks\":%llu}\n",
		       (unsigned long long)r.problems, (unsigned long long)nobj,
		       (unsigned long long)r.inodes, (unsigned long long)r.dirs,
		       (unsigned long long)r.files, (unsigned long long)r.entries,
		       (unsigned long long)r.blocks);
	else
		printf("fsck %s: %llu objects, %llu inodes (%llu directories, %llu files), %llu names, "
		       "%llu blocks: %llu problem%s\n", dir, (unsigned long long)nobj,
		       (unsigned long long)r.inodes, (unsigned long long)r.dirs,
		       (unsigned long long)r.files, (unsigned long long)r.entries,
		       (unsigned long long)r.blocks, (unsigned long long)r.problems,
		       r.problems == 1 ? "" : "s");
	rc = r.problems ? 1 : 0;
out:
	arf_meta_fs_detach(&fs);
	if (meta != MAP_FAILED)
		munmap(meta, sb.meta_size);
	if (data != MAP_FAILED)
		munmap(data, sb.data_size);
	arfd_store_close(st);
	return rc;
}

/* Online: arfd checks its live regions and compares them with RocksDB. */
static int fsck_online(const struct arfctl_admin *a)
{
	char *ans = NULL;
	if (control_call(a->control, "fsck", &ans))
		return 1;
	if (answer_error("fsck", ans)) {
		free(ans);
		return 1;
	}
	const char *cnt = strstr(ans, "\"count\":");
	long long problems = cnt ? atoll(cnt + 8) : -1;
	if (a->json) {
		fputs(ans, stdout);
	} else {
		/* one line per problem, then the summary */
		const char *p = ans;
		while ((p = strstr(p, "{\"kind\":\""))) {
			p += 9;
			const char *ke = strchr(p, '"');
			const char *w = strstr(p, "\"what\":\"");
			if (!ke || !w)
				break;
			w += 8;
			printf("%.*s: ", (int)(ke - p), p);
			for (; *w && *w != '"'; w++) {
				if (*w == '\\' && w[1])
					w++;
				putchar(*w);
			}
			putchar('\n');
			p = w;
		}
		printf("fsck (live, via %s): %lld problem%s\n", a->control, problems,
		       problems == 1 ? "" : "s");
	}
	free(ans);
	if (problems < 0) {
		fprintf(stderr, "arfctl: fsck: malformed answer from arfd\n");
		return 1;
	}
	return problems ? 1 : 0;
}

/* ---- progs ----------------------------------------------------------------- */

/* Where the value of "key" starts in the flat JSON object [obj, end), or
 * NULL.  arfd's objects here hold no nested objects and no quoted keys in
 * their strings, so the first match is the field. */
static const char *json_field(const char *obj, const char *end, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = obj; p < end; p++) {
		p = memchr(p, '"', (size_t)(end - p));
		if (!p || (size_t)(end - p) < kl + 3)
			return NULL;
		if (!strncmp(p + 1, key, kl) && p[kl + 1] == '"' && p[kl + 2] == ':')
			return p + kl + 3;
	}
	return NULL;
}

static unsigned long long json_u64(const char *obj, const char *end, const char *key)
{
	const char *v = json_field(obj, end, key);
	return v ? strtoull(v, NULL, 10) : 0;
}

/* The string value of "key", unescaped, into buf (truncated to cap - 1);
 * "" when missing. */
static const char *json_text(const char *obj, const char *end, const char *key, char *buf,
			     size_t cap)
{
	const char *v = json_field(obj, end, key);
	size_t n = 0;

	buf[0] = 0;
	if (!v || *v != '"')
		return buf;
	for (v++; v < end && *v && *v != '"' && n + 4 < cap; v++) {
		unsigned c = (unsigned char)*v;
		if (c == '\\' && v[1]) {
			c = (unsigned char)*++v;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'r')
				c = '\r';
			else if (c == 'u' && v + 4 < end) {
				char hex[5] = { v[1], v[2], v[3], v[4], 0 };
				c = (unsigned)strtoul(hex, NULL, 16);
				v += 4;
			}
		}
		if (c < 0x80) { /* what arfd escapes is ASCII; the rest as UTF-8 */
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | c >> 6);
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = (char)(0xe0 | c >> 12);
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[n] = 0;
	return buf;
}

static const char *when(const char *obj, const char *end, const char *key, char *buf, size_t cap)
{
	time_t t = (time_t)json_u64(obj, end, key);
	struct tm tm;

	if (!t || !localtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, cap, "never");
	return buf;
}

/* One program object [p, end) of "progs list" as one line. */
static void prog_line(const char *p, const char *end)
{
	char hash[80], used[32], engine[32];

	printf("%s  %llu insns/%llu bytes  %s  loads %llu  runs %llu  insns executed %llu  "
	       "last used %s\n", json_text(p, end, "hash", hash, sizeof(hash)),
	       json_u64(p, end, "insns"), json_u64(p, end, "bytes"),
	       json_text(p, end, "engine", engine, sizeof(engine)), json_u64(p, end, "loads"),
	       json_u64(p, end, "runs"), json_u64(p, end, "insns_executed"),
	       when(p, end, "last_used", used, sizeof(used)));
}

/* "progs show": the program object [p, end) as labelled lines. */
static void prog_details(const char *p, const char *end)
{
	char hash[80], format[32], loaded[32], used[32], engine[32];

	printf("hash: %s\nformat: %s\nengine: %s (%llu bytes of native code)\n"
	       "size: %llu instructions, %llu bytes\n"
	       "entry: instruction %llu\nread-only data: %llu bytes\nloads: %llu\n"
	       "runs: %llu (%llu failed, %llu running now)\ninstructions executed: %llu\n"
	       "loaded: %s\nlast used: %s\n", json_text(p, end, "hash", hash, sizeof(hash)),
	       json_text(p, end, "format", format, sizeof(format)),
	       json_text(p, end, "engine", engine, sizeof(engine)),
	       json_u64(p, end, "native_bytes"), json_u64(p, end, "insns"),
	       json_u64(p, end, "bytes"), json_u64(p, end, "entry"),
	       json_u64(p, end, "rodata_bytes"), json_u64(p, end, "loads"),
	       json_u64(p, end, "runs"), json_u64(p, end, "failures"),
	       json_u64(p, end, "running"), json_u64(p, end, "insns_executed"),
	       when(p, end, "loaded_at", loaded, sizeof(loaded)),
	       when(p, end, "last_used", used, sizeof(used)));
}

static int progs_usage(void)
{
	fprintf(stderr, "arfctl: usage: progs list | progs show|disasm|unload HASH\n");
	return 2;
}

/* progs list | show HASH | disasm HASH | unload HASH, where HASH may be a
 * unique prefix (arfd resolves it under its cache lock). */
static int progs(const struct arfctl_admin *a, int argc, char **argv)
{
	char line[128], what[32], *ans = NULL;
	const char *sub = argc ? argv[0] : "";
	int rc = 0;

	if (!strcmp(sub, "list")) {
		if (argc != 1)
			return progs_usage();
		snprintf(line, sizeof(line), "progs list");
	} else if (!strcmp(sub, "show") || !strcmp(sub, "disasm") || !strcmp(sub, "unload")) {
		if (argc != 2)
			return progs_usage();
		size_t n = strlen(argv[1]);
		if (!n || n > 64 || strspn(argv[1], "0123456789abcdefABCDEF") != n) {
			fprintf(stderr, "arfctl: progs %s: '%s' is not a program hash: 1 to 64 hex "
				"digits (a unique prefix will do; see arfctl progs list)\n", sub, argv[1]);
			return 2;
		}
		snprintf(line, sizeof(line), "progs %s %s", sub, argv[1]);
	} else {
		return progs_usage();
	}
	snprintf(what, sizeof(what), "progs %s", sub);
	if (control_call(a->control, line, &ans))
		return 1;
	if (answer_error(what, ans)) {
		free(ans);
		return 1;
	}
	const char *end = ans + strlen(ans);
	const char *obj = strchr(ans + 1, '{'); /* the program object inside the answer */
	const char *oend = obj ? strchr(obj, '}') : NULL;
	if (!strcmp(sub, "list")) {
		const char *arr = strstr(ans, "\"programs\":[");
		const char *aend = arr ? strchr(arr, ']') : NULL;
		if (!aend) {
			rc = 1;
		} else if (a->json) {
			arr += 11;
			printf("%.*s\n", (int)(aend + 1 - arr), arr);
		} else {
			for (const char *p = arr; (p = strchr(p, '{')) && p < aend; p = oend) {
				if (!(oend = strchr(p, '}')))
					break;
				prog_line(p, oend);
			}
		}
	} else if (!oend) {
		rc = 1;
	} else if (a->json) {
		fputs(ans, stdout);
	} else if (!strcmp(sub, "show")) {
		prog_details(obj, oend);
	} else if (!strcmp(sub, "unload")) {
		char hash[80];
		printf("unloaded %s (%llu runs, %llu insns executed)\n",
		       json_text(obj, oend, "hash", hash, sizeof(hash)), json_u64(obj, oend, "runs"),
		       json_u64(obj, oend, "insns_executed"));
	} else {
		/* disasm: a comment header, then text that arf-asm assembles back */
		char hash[80], format[32];
		size_t cap = (size_t)(end - ans) + 1;
		char *text = malloc(cap);
		if (!text) {
			rc = 1;
		} else {
			printf("# program %s: %s, %llu instructions, %llu bytes\n",
			       json_text(obj, oend, "hash", hash, sizeof(hash)),
			       json_text(obj, oend, "format", format, sizeof(format)),
			       json_u64(obj, oend, "insns"), json_u64(obj, oend, "bytes"));
			if (json_u64(obj, oend, "entry"))
				printf("# runs start at instruction %llu\n", json_u64(obj, oend, "entry"));
			if (json_u64(obj, oend, "rodata_bytes"))
				printf("# read-only data: %llu bytes (not shown)\n",
				       json_u64(obj, oend, "rodata_bytes"));
			fputs(json_text(oend, end, "disassembly", text, cap), stdout);
			free(text);
		}
	}
	if (rc)
		fprintf(stderr, "arfctl: %s: malformed answer from arfd\n", what);
	free(ans);
	return rc;
}

static int config_check(const char *file)
{
	struct arfd_config cfg;
	char err[512];

	arfd_config_defaults(&cfg);
	if (arfd_config_load(&cfg, file, err, sizeof(err))) {
		fprintf(stderr, "arfctl: config check: %s\n", err);
		return 1;
	}
	printf("%s: valid\n", file);
	return 0;
}

int arfctl_admin(const struct arfctl_admin *a, const char *cmd, int argc, char **argv)
{
	if (!strcmp(cmd, "stats")) {
		if (argc != 0) {
			fprintf(stderr, "arfctl: stats takes a URL or nothing\n");
			return 2;
		}
		return simple(a, cmd, a->prometheus ? "stats prometheus" : "stats");
	}
	if (!strcmp(cmd, "status") || !strcmp(cmd, "clients") || !strcmp(cmd, "exports") ||
	    !strcmp(cmd, "checkpoint")) {
		if (argc != 0) {
			fprintf(stderr, "arfctl: %s takes no argument\n", cmd);
			return 2;
		}
		return simple(a, cmd, cmd);
	}
	if (!strcmp(cmd, "progs"))
		return progs(a, argc, argv);
	if (!strcmp(cmd, "fsck")) {
		if (argc == 0)
			return fsck_online(a);
		if (argc == 2 && !strcmp(argv[0], "--data-dir"))
			return fsck_offline(a, argv[1]);
		if (argc == 1 && !strncmp(argv[0], "--data-dir=", 11))
			return fsck_offline(a, argv[0] + 11);
		fprintf(stderr, "arfctl: usage: fsck [--data-dir DIR]\n");
		return 2;
	}
	if (!strcmp(cmd, "config")) {
		if (argc != 2 || strcmp(argv[0], "check")) {
			fprintf(stderr, "arfctl: usage: config check FILE\n");
			return 2;
		}
		return config_check(argv[1]);
	}
	if (!strcmp(cmd, "scribble")) { /* test hook: arfd refuses it unless test_hooks */
		if (argc != 2)
			return 2;
		char line[128];
		snprintf(line, sizeof(line), "scribble %s %s", argv[0], argv[1]);
		return simple(a, cmd, line);
	}
	return -1;
}
