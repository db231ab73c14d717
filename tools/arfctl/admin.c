/* SPDX-License-Identifier: MIT */
/*
 * arfctl's management commands: status, stats, clients, exports, fsck and
 * checkpoint through arfd's control socket (root or the control group only;
 * see arfd/control.c), fsck --data-dir on a stopped server's RocksDB, and
 * config check.  The control socket answers one JSON object (or Prometheus
 * text) per command; arfctl prints it as it is, except fsck, which reads as
 * a report unless --json.
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
