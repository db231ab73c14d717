/* SPDX-License-Identifier: MIT */
/*
 * arfctl's management commands: status, stats, clients, exports, progs,
 * fsck and checkpoint through arfd's control socket (root or the control
 * group only; see arfd/control.c), fsck --data-dir on a stopped server's
 * RocksDB, and config check.  The control socket answers one JSON object (or
 * Prometheus text) per command, which arfctl reads with json-c (as arfd
 * writes it with json-c: arfd/control.c holds the schema); an object with
 * "error" is a failure.  arfctl prints the answer as it is, except fsck and
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

#include <json-c/json.h>

#include "admin.h"
#include "cell.h"
#include "arf_meta_fs.h"
#include "config.h"
#include "store.h"

/* One command over the control socket; the whole answer in *out (malloc'd). */
int arfctl_control_call(const char *path, const char *line, char **out)
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

/* The answer as JSON: the object, or NULL after a message (malformed, or
 * an error object arfd sent, which names what failed). */
json_object *arfctl_parse_answer(const char *cmd, const char *ans)
{
	enum json_tokener_error jerr;
	json_object *o = json_tokener_parse_verbose(ans, &jerr), *e;

	if (!o || !json_object_is_type(o, json_type_object)) {
		fprintf(stderr, "arfctl: %s: malformed answer from arfd (%s)\n", cmd,
			o ? "not an object" : json_tokener_error_desc(jerr));
		json_object_put(o);
		return NULL;
	}
	if (json_object_object_get_ex(o, "error", &e)) {
		fprintf(stderr, "arfctl: %s: %s\n", cmd, json_object_get_string(e));
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* The unsigned number under key ("" and 0 when missing). */
static unsigned long long ju64(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) ? (unsigned long long)json_object_get_uint64(v)
						     : 0;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	const char *s = json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
	return s ? s : "";
}

/* One JSON value on standard output, as arfctl prints every object. */
static void print_json(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* A command whose answer arfctl prints as it is: JSON, or Prometheus text
 * (which arfd answers with an error object only). */
static int simple(const struct arfctl_admin *a, const char *cmd, const char *line)
{
	char *ans = NULL;
	json_object *o = NULL;

	if (arfctl_control_call(a->control, line, &ans))
		return 1;
	int text = a->prometheus && !strcmp(cmd, "stats") && ans[0] != '{';
	if (!text && !(o = arfctl_parse_answer(cmd, ans))) {
		free(ans);
		return 1;
	}
	fputs(ans, stdout);
	json_object_put(o);
	free(ans);
	return 0;
}

/* ---- fsck ---------------------------------------------------------------- */

/* v under key in o (o owns v after; v freed on failure): 0, or -1 when
 * out of memory. */
static int jset(json_object *o, const char *key, json_object *v)
{
	if (o && v && !json_object_object_add(o, key, v))
		return 0;
	json_object_put(v);
	return -1;
}

struct report_ctx {
	json_object *problems; /* --json: the problems as objects; else printed at once */
	int oom;
};

static void print_problem(void *ctx, const char *kind, const char *msg)
{
	struct report_ctx *r = ctx;
	if (!r->problems) {
		printf("%s: %s\n", kind, msg);
		return;
	}
	json_object *p = json_object_new_object();
	r->oom |= jset(p, "kind", json_object_new_string(kind)) |
		  jset(p, "what", json_object_new_string(msg));
	if (!p || json_object_array_add(r->problems, p)) {
		json_object_put(p);
		r->oom = 1;
	}
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
	if (arfd_store_open(dir, 0, &st, err, sizeof(err))) {
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
	json_object *o = a->json ? json_object_new_object() : NULL;
	struct report_ctx rc_ctx = { a->json ? json_object_new_array() : NULL, 0 };
	struct arf_meta_fsck r = { .report = print_problem, .ctx = &rc_ctx };
	rc_ctx.oom = a->json && (jset(o, "data_dir", json_object_new_string(dir)) ||
				 jset(o, "problems", json_object_get(rc_ctx.problems)));
	int n = arf_meta_fsck(&fs, &r);
	if (n < 0) {
		fprintf(stderr, "arfctl: fsck: %s\n", strerror(-n));
		json_object_put(rc_ctx.problems);
		json_object_put(o);
		goto out;
	}
	if (a->json) {
		rc_ctx.oom |= jset(o, "count", json_object_new_uint64(r.problems)) |
			      jset(o, "objects", json_object_new_uint64(nobj)) |
			      jset(o, "inodes", json_object_new_uint64(r.inodes)) |
			      jset(o, "directories", json_object_new_uint64(r.dirs)) |
			      jset(o, "files", json_object_new_uint64(r.files)) |
			      jset(o, "entries", json_object_new_uint64(r.entries)) |
			      jset(o, "blocks", json_object_new_uint64(r.blocks));
		if (!rc_ctx.oom)
			print_json(o);
		json_object_put(rc_ctx.problems);
		json_object_put(o);
		if (rc_ctx.oom) {
			fprintf(stderr, "arfctl: fsck: out of memory\n");
			goto out;
		}
	} else {
		printf("fsck %s: %llu objects, %llu inodes (%llu directories, %llu files), %llu names, "
		       "%llu blocks: %llu problem%s\n", dir, (unsigned long long)nobj,
		       (unsigned long long)r.inodes, (unsigned long long)r.dirs,
		       (unsigned long long)r.files, (unsigned long long)r.entries,
		       (unsigned long long)r.blocks, (unsigned long long)r.problems,
		       r.problems == 1 ? "" : "s");
	}
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
static int fsck_online(const struct arfctl_admin *a, const char *vol)
{
	char *ans = NULL, line[96];
	json_object *o, *list, *count;

	snprintf(line, sizeof(line), "fsck%s%s", vol ? " " : "", vol ? vol : "");
	if (arfctl_control_call(a->control, line, &ans))
		return 1;
	if (!(o = arfctl_parse_answer("fsck", ans))) {
		free(ans);
		return 1;
	}
	if (!json_object_object_get_ex(o, "count", &count) ||
	    !json_object_object_get_ex(o, "problems", &list) ||
	    !json_object_is_type(list, json_type_array)) {
		fprintf(stderr, "arfctl: fsck: malformed answer from arfd\n");
		json_object_put(o);
		free(ans);
		return 1;
	}
	unsigned long long problems = (unsigned long long)json_object_get_uint64(count);
	if (a->json) {
		fputs(ans, stdout);
	} else {
		/* one line per problem, then the summary */
		for (size_t i = 0; i < json_object_array_length(list); i++) {
			json_object *p = json_object_array_get_idx(list, i);
			printf("%s: %s\n", jstr(p, "kind"), jstr(p, "what"));
		}
		printf("fsck (live, via %s%s%s): %llu problem%s\n", a->control,
		       vol ? ", volume " : "", vol ? vol : "", problems, problems == 1 ? "" : "s");
	}
	json_object_put(o);
	free(ans);
	return problems ? 1 : 0;
}

/* ---- progs ----------------------------------------------------------------- */

static const char *when(json_object *o, const char *key, char *buf, size_t cap)
{
	time_t t = (time_t)ju64(o, key);
	struct tm tm;

	if (!t || !localtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, cap, "never");
	return buf;
}

/* One program object of "progs list" as one line. */
static void prog_line(json_object *p)
{
	char used[32];

	printf("%s  %llu insns/%llu bytes  %s  loads %llu  runs %llu  insns executed %llu  "
	       "last used %s\n", jstr(p, "hash"), ju64(p, "insns"), ju64(p, "bytes"),
	       jstr(p, "engine"), ju64(p, "loads"), ju64(p, "runs"), ju64(p, "insns_executed"),
	       when(p, "last_used", used, sizeof(used)));
}

/* "progs show": the program object as labelled lines. */
static void prog_details(json_object *p)
{
	char loaded[32], used[32];

	printf("hash: %s\nformat: %s\nengine: %s (%llu bytes of native code)\n"
	       "size: %llu instructions, %llu bytes\n"
	       "entry: instruction %llu\nread-only data: %llu bytes\nloads: %llu\n"
	       "runs: %llu (%llu failed, %llu running now)\ninstructions executed: %llu\n"
	       "loaded: %s\nlast used: %s\n", jstr(p, "hash"), jstr(p, "format"),
	       jstr(p, "engine"), ju64(p, "native_bytes"), ju64(p, "insns"), ju64(p, "bytes"),
	       ju64(p, "entry"), ju64(p, "rodata_bytes"), ju64(p, "loads"), ju64(p, "runs"),
	       ju64(p, "failures"), ju64(p, "running"), ju64(p, "insns_executed"),
	       when(p, "loaded_at", loaded, sizeof(loaded)), when(p, "last_used", used, sizeof(used)));
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
	if (arfctl_control_call(a->control, line, &ans))
		return 1;
	json_object *o = arfctl_parse_answer(what, ans), *prog = NULL, *list = NULL;
	if (!o) {
		free(ans);
		return 1;
	}
	int found = !strcmp(sub, "list")
		? json_object_object_get_ex(o, "programs", &list) &&
		  json_object_is_type(list, json_type_array)
		: json_object_object_get_ex(o, !strcmp(sub, "unload") ? "unloaded" : "program", &prog);
	if (!found) {
		rc = 1;
	} else if (list && a->json) {
		print_json(list);
	} else if (list) {
		for (size_t i = 0; i < json_object_array_length(list); i++)
			prog_line(json_object_array_get_idx(list, i));
	} else if (a->json) {
		fputs(ans, stdout);
	} else if (!strcmp(sub, "show")) {
		prog_details(prog);
	} else if (!strcmp(sub, "unload")) {
		printf("unloaded %s (%llu runs, %llu insns executed)\n", jstr(prog, "hash"),
		       ju64(prog, "runs"), ju64(prog, "insns_executed"));
	} else {
		/* disasm: a comment header, then text that arf-asm assembles back */
		printf("# program %s: %s, %llu instructions, %llu bytes\n", jstr(prog, "hash"),
		       jstr(prog, "format"), ju64(prog, "insns"), ju64(prog, "bytes"));
		if (ju64(prog, "entry"))
			printf("# runs start at instruction %llu\n", ju64(prog, "entry"));
		if (ju64(prog, "rodata_bytes"))
			printf("# read-only data: %llu bytes (not shown)\n", ju64(prog, "rodata_bytes"));
		fputs(jstr(o, "disassembly"), stdout);
	}
	if (rc)
		fprintf(stderr, "arfctl: %s: malformed answer from arfd\n", what);
	json_object_put(o);
	free(ans);
	return rc;
}

static int config_check(const char *file)
{
	struct arfd_config cfg;
	char err[512];

	arfd_config_defaults(&cfg);
	/* what arfd checks at its start: each key, then how they go together */
	if (arfd_config_load(&cfg, file, err, sizeof(err)) ||
	    arfd_config_check(&cfg, err, sizeof(err))) {
		fprintf(stderr, "arfctl: config check: %s\n", err);
		return 1;
	}
	printf("%s: valid\n", file);
	return 0;
}

/* A volume's name as a control command's argument: 1 or, after a message, 0. */
static int vol_name_ok(const char *name)
{
	if (arf_cell_name_ok(name))
		return 1;
	fprintf(stderr, "arfctl: --volume %s: a volume's name is 1-63 letters, digits, '.', '_' "
		"or '-'\n", name);
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
	if (!strcmp(cmd, "checkpoint") && argc == 2 && !strcmp(argv[0], "--volume")) {
		char line[96];
		if (!vol_name_ok(argv[1]))
			return 2;
		snprintf(line, sizeof(line), "checkpoint %s", argv[1]);
		return simple(a, cmd, line);
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
	if (!strcmp(cmd, "vol"))
		return arfctl_vol(a, argc, argv);
	if (!strcmp(cmd, "fsck")) {
		if (argc == 0)
			return fsck_online(a, NULL);
		if (argc == 2 && !strcmp(argv[0], "--volume"))
			return vol_name_ok(argv[1]) ? fsck_online(a, argv[1]) : 2;
		if (argc == 2 && !strcmp(argv[0], "--data-dir"))
			return fsck_offline(a, argv[1]);
		if (argc == 1 && !strncmp(argv[0], "--data-dir=", 11))
			return fsck_offline(a, argv[0] + 11);
		fprintf(stderr, "arfctl: usage: fsck [--volume NAME | --data-dir DIR]\n");
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
