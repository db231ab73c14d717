/* SPDX-License-Identifier: MIT */
/*
 * arfctl's file commands over libarf: ls, stat, cat, put, mkdir, rm, mv,
 * cp (copied by the server), chmod, chown, ln, and the server summary through the data connection
 * (status/stats URL).  Each takes a connected client and the parsed URL,
 * prints text or one JSON object (output.c), and returns the exit status.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arfctl_int.h"

int arfctl_open_url(const char *url, arf_client **c, struct arf_url *u)
{
	char err[512];
	if (arf_url_parse(url, u, err, sizeof(err))) {
		fprintf(stderr, "arfctl: %s\n", err);
		return 2;
	}
	if (arf_connect(url, &arfctl_opt.client, c, err, sizeof(err))) {
		fprintf(stderr, "arfctl: %s\n", err);
		return 1;
	}
	return 0;
}

/* Split "/a/b/c" into parent "/a/b" and name "c". */
int arfctl_split_path(const char *path, char *parent, size_t plen, const char **name)
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

int arfctl_cmd_stat(arf_client *c, const struct arf_url *u)
{
	struct arf_stat st;
	int rc = arf_resolve(c, u->path, &st);
	if (rc)
		return arfctl_fail("stat", u->path, rc);
	if (arfctl_opt.json) {
		printf("{\"path\":");
		arfctl_json_str(stdout, u->path);
		printf(",\"type\":\"%s\",\"ino\":%" PRIu64 ",\"gen\":%u,\"mode\":%u,\"nlink\":%u,"
		       "\"uid\":%u,\"gid\":%u,\"size\":%" PRIu64 ",\"blocks\":%" PRIu64
		       ",\"atime_ns\":%lld,\"mtime_ns\":%lld,\"ctime_ns\":%lld",
		       arfctl_type_name(st.mode), st.ino, st.gen, st.mode & 07777, st.nlink, st.uid, st.gid,
		       st.size, st.blocks, (long long)st.atime_ns, (long long)st.mtime_ns,
		       (long long)st.ctime_ns);
		arfctl_json_end(c);
		return 0;
	}
	printf("  Path: %s\n  Type: %s\n  Size: %" PRIu64 "\tBlocks: %" PRIu64 "\n Inode: %" PRIu64
	       "\tGeneration: %u\tLinks: %u\nAccess: %04o\tUid: %u\tGid: %u\n",
	       u->path, arfctl_type_name(st.mode), st.size, st.blocks, st.ino, st.gen, st.nlink,
	       st.mode & 07777, st.uid, st.gid);
	arfctl_print_time("Access", st.atime_ns);
	arfctl_print_time("Modify", st.mtime_ns);
	arfctl_print_time("Change", st.ctime_ns);
	arfctl_text_end(c);
	return 0;
}

/* One line of ls: the name, or with --json an entry object (after a comma
 * unless first). */
static void ls_entry(const char *name, uint64_t ino, uint32_t mode, int first)
{
	if (arfctl_opt.json) {
		printf("%s{\"name\":", first ? "" : ",");
		arfctl_json_str(stdout, name);
		printf(",\"ino\":%" PRIu64 ",\"type\":\"%s\"}", ino, arfctl_type_name(mode));
	} else {
		printf("%s\n", name);
	}
}

int arfctl_cmd_ls(arf_client *c, const struct arf_url *u)
{
	struct arf_stat st;
	int rc = arf_resolve(c, u->path, &st);
	if (rc)
		return arfctl_fail("ls", u->path, rc);
	if (arfctl_opt.json)
		printf("{\"path\":");
	if (arfctl_opt.json) {
		arfctl_json_str(stdout, u->path);
		printf(",\"entries\":[");
	}
	if (!S_ISDIR(st.mode)) {
		const char *slash = strrchr(u->path, '/');
		ls_entry(slash ? slash + 1 : u->path, st.ino, st.mode, 1);
		if (arfctl_opt.json) {
			printf("]");
			arfctl_json_end(c);
		}
		return 0;
	}
	struct arf_dirent *ents = malloc(1024 * sizeof(*ents));
	uint64_t cookie = 0;
	int eof = 0, first = 1;
	if (!ents)
		return arfctl_fail("ls", u->path, -ENOMEM);
	while (!eof) {
		size_t n = 0;
		rc = arf_readdir(c, st.ino, st.gen, cookie, ents, 1024, &n, &eof);
		if (rc) {
			free(ents);
			if (arfctl_opt.json)
				printf("]}\n");
			return arfctl_fail("ls", u->path, rc);
		}
		for (size_t i = 0; i < n; i++) {
			ls_entry(ents[i].name, ents[i].ino, DTTOIF(ents[i].type), first);
			first = 0;
			cookie = ents[i].cookie;
		}
		if (n == 0)
			break;
	}
	free(ents);
	if (arfctl_opt.json) {
		printf("]");
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

int arfctl_cmd_cat(arf_client *c, const struct arf_url *u)
{
	struct arf_stat st;
	int rc = arf_resolve(c, u->path, &st);
	if (rc)
		return arfctl_fail("cat", u->path, rc);
	if (S_ISDIR(st.mode))
		return arfctl_fail("cat", u->path, -EISDIR);
	size_t bufsz = 4u << 20;
	char *buf = malloc(bufsz);
	uint64_t off = 0;
	if (!buf)
		return arfctl_fail("cat", u->path, -ENOMEM);
	for (;;) {
		ssize_t n = arf_read(c, st.ino, st.gen, off, buf, bufsz);
		if (n < 0) {
			free(buf);
			return arfctl_fail("cat", u->path, (int)n);
		}
		if (n == 0)
			break;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
			free(buf);
			return arfctl_fail("cat", "standard output", -errno);
		}
		off += (uint64_t)n;
		if ((size_t)n < bufsz && off >= st.size)
			break;
	}
	free(buf);
	if (fflush(stdout))
		return arfctl_fail("cat", "standard output", -errno);
	if (arfctl_opt.stats) {
		if (arfctl_opt.json) {
			fprintf(stderr, "{\"path\":");
			arfctl_json_str(stderr, u->path);
			fprintf(stderr, ",\"bytes\":%" PRIu64 ",\"stats\":", off);
			arfctl_stats_json(stderr, c);
			fprintf(stderr, "}\n");
		} else {
			arfctl_stats_text(stderr, c);
		}
	}
	return 0;
}

int arfctl_cmd_put(arf_client *c, const char *local, const struct arf_url *u)
{
	char parent[4096];
	const char *name;
	struct arf_stat dir, st;
	char path[4096];
	int fd = strcmp(local, "-") ? open(local, O_RDONLY) : 0;
	int rc;

	if (fd < 0)
		return arfctl_fail("put", local, -errno);
	snprintf(path, sizeof(path), "%s", u->path);
	/* into a directory: keep the local base name */
	if (arf_resolve(c, path, &st) == 0 && S_ISDIR(st.mode)) {
		const char *base = strrchr(local, '/');
		base = base ? base + 1 : local;
		if (!strcmp(local, "-")) {
			close(fd);
			return arfctl_fail("put", u->path, -EISDIR);
		}
		size_t pl = strlen(path);
		snprintf(path + pl, sizeof(path) - pl, "%s%s", pl && path[pl - 1] == '/' ? "" : "/", base);
	}
	if (arfctl_split_path(path, parent, sizeof(parent), &name)) {
		close(fd);
		return arfctl_fail("put", path, -EINVAL);
	}
	if ((rc = arf_resolve(c, parent, &dir)) ||
	    (rc = arf_create(c, dir.ino, dir.gen, name, 0644, 0, &st))) {
		if (fd)
			close(fd);
		return arfctl_fail("put", path, rc);
	}
	if (st.size) {
		struct arf_setattr sa = { .valid = ARF_SET_SIZE, .size = 0 };
		if ((rc = arf_setattr(c, st.ino, st.gen, &sa, &st))) {
			if (fd)
				close(fd);
			return arfctl_fail("put", path, rc);
		}
	}
	size_t bufsz = 1u << 20;
	char *buf = malloc(bufsz);
	uint64_t off = 0;
	if (!buf)
		return arfctl_fail("put", path, -ENOMEM);
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
		return arfctl_fail("put", path, rc);
	if (arfctl_opt.json) {
		printf("{\"path\":");
		arfctl_json_str(stdout, path);
		printf(",\"bytes\":%" PRIu64 ",\"ino\":%" PRIu64, off, st.ino);
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

static int mkdir_one(arf_client *c, const char *path, int parents)
{
	char parent[4096];
	const char *name;
	struct arf_stat dir, st;
	int rc;

	if (arfctl_split_path(path, parent, sizeof(parent), &name))
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

/* A command that changed path succeeded: {"path": ...} with --json. */
static int path_done(arf_client *c, const char *path)
{
	if (arfctl_opt.json) {
		printf("{\"path\":");
		arfctl_json_str(stdout, path);
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

int arfctl_cmd_mkdir(arf_client *c, const struct arf_url *u, int parents)
{
	int rc = mkdir_one(c, u->path, parents);
	if (rc)
		return arfctl_fail("mkdir", u->path, rc);
	return path_done(c, u->path);
}

int arfctl_cmd_rm(arf_client *c, const struct arf_url *u)
{
	char parent[4096];
	const char *name;
	struct arf_stat dir, st;
	int rc;

	if (arfctl_split_path(u->path, parent, sizeof(parent), &name))
		return arfctl_fail("rm", u->path, -EBUSY);
	if ((rc = arf_resolve(c, u->path, &st)) || (rc = arf_resolve(c, parent, &dir)))
		return arfctl_fail("rm", u->path, rc);
	rc = S_ISDIR(st.mode) ? arf_rmdir(c, dir.ino, dir.gen, name)
			      : arf_unlink(c, dir.ino, dir.gen, name);
	if (rc)
		return arfctl_fail("rm", u->path, rc);
	return path_done(c, u->path);
}

/* The path the second URL of mv or ln names, in target: on the server of
 * from (else EXDEV), and into it, keeping from's base name, when it is a
 * directory.  0, or the exit status with a message printed. */
static int second_path(arf_client *c, const char *cmd, const struct arf_url *from,
		       const char *to_url, char *target, size_t cap)
{
	struct arf_url to;
	struct arf_stat st;
	char err[512];

	if (arf_url_parse(to_url, &to, err, sizeof(err))) {
		fprintf(stderr, "arfctl: %s\n", err);
		return 2;
	}
	if (strcmp(from->transport, to.transport) || strcmp(from->host, to.host) ||
	    from->port != to.port || strcmp(from->socket, to.socket))
		return arfctl_fail(cmd, to_url, -EXDEV);
	snprintf(target, cap, "%s", to.path);
	if (arf_resolve(c, target, &st) == 0 && S_ISDIR(st.mode)) {
		const char *base = strrchr(from->path, '/');
		size_t tl = strlen(target);
		base = base ? base + 1 : from->path;
		snprintf(target + tl, cap - tl, "%s%s", tl && target[tl - 1] == '/' ? "" : "/", base);
	}
	return 0;
}

/* Room for second_path's answer: a URL's path, a slash, another's name. */
#define TARGET_MAX (2 * sizeof(((struct arf_url *)0)->path) + 1)

int arfctl_cmd_mv(arf_client *c, const struct arf_url *from, const char *to_url)
{
	char op[4096], np[4096], oname[4096], target[TARGET_MAX];
	const char *name;
	struct arf_stat od, nd;
	int rc;

	if ((rc = second_path(c, "mv", from, to_url, target, sizeof(target))))
		return rc;
	if (arfctl_split_path(from->path, op, sizeof(op), &name))
		return arfctl_fail("mv", from->path, -EBUSY);
	snprintf(oname, sizeof(oname), "%s", name);
	if (arfctl_split_path(target, np, sizeof(np), &name))
		return arfctl_fail("mv", target, -EBUSY);
	if ((rc = arf_resolve(c, op, &od)) || (rc = arf_resolve(c, np, &nd)))
		return arfctl_fail("mv", from->path, rc);
	if ((rc = arf_rename(c, od.ino, od.gen, oname, nd.ino, nd.gen, name, 0)))
		return arfctl_fail("mv", from->path, rc);
	if (arfctl_opt.json) {
		printf("{\"from\":");
		arfctl_json_str(stdout, from->path);
		printf(",\"to\":");
		arfctl_json_str(stdout, target);
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

/* A copy of from's file at the second URL (into it if a directory), made by
 * the server (COPY): the bytes never come here.  An existing file there is
 * overwritten, as cp(1) does; a new file gets mode 0644, as put's. */
int arfctl_cmd_cp(arf_client *c, const struct arf_url *from, const char *to_url)
{
	char np[4096], target[TARGET_MAX];
	const char *name;
	struct arf_stat src, nd, dst;
	int rc;

	if ((rc = second_path(c, "cp", from, to_url, target, sizeof(target))))
		return rc;
	if ((rc = arf_resolve(c, from->path, &src)))
		return arfctl_fail("cp", from->path, rc);
	if (S_ISDIR(src.mode))
		return arfctl_fail("cp", from->path, -EISDIR);
	if (arfctl_split_path(target, np, sizeof(np), &name))
		return arfctl_fail("cp", target, -EISDIR); /* the root */
	if ((rc = arf_resolve(c, np, &nd)) ||
	    (rc = arf_create(c, nd.ino, nd.gen, name, 0644, 0, &dst)))
		return arfctl_fail("cp", target, rc);
	if (dst.ino == src.ino)
		return arfctl_fail("cp", target, -EINVAL); /* the same file */
	if (dst.size) {
		struct arf_setattr sa = { .valid = ARF_SET_SIZE, .size = 0 };
		if ((rc = arf_setattr(c, dst.ino, dst.gen, &sa, &dst)))
			return arfctl_fail("cp", target, rc);
	}
	uint64_t done = 0;
	while (done < src.size) {
		ssize_t n = arf_copy(c, src.ino, src.gen, done, dst.ino, dst.gen, done,
				     (size_t)(src.size - done), 0, &dst);
		if (n < 0)
			return arfctl_fail("cp", target, (int)n);
		if (n == 0)
			break; /* the source shrank meanwhile */
		done += (uint64_t)n;
	}
	if (arfctl_opt.json) {
		printf("{\"from\":");
		arfctl_json_str(stdout, from->path);
		printf(",\"to\":");
		arfctl_json_str(stdout, target);
		printf(",\"bytes\":%" PRIu64, done);
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

/* A hard link to from's file at the second URL (into it if a directory). */
int arfctl_cmd_ln(arf_client *c, const struct arf_url *from, const char *link_url)
{
	char np[4096], target[TARGET_MAX];
	const char *name;
	struct arf_stat st, nd, out;
	int rc;

	if ((rc = second_path(c, "ln", from, link_url, target, sizeof(target))))
		return rc;
	if (arfctl_split_path(target, np, sizeof(np), &name))
		return arfctl_fail("ln", target, -EEXIST); /* the root */
	if ((rc = arf_resolve(c, from->path, &st)))
		return arfctl_fail("ln", from->path, rc);
	if ((rc = arf_resolve(c, np, &nd)) ||
	    (rc = arf_link(c, st.ino, st.gen, nd.ino, nd.gen, name, &out)))
		return arfctl_fail("ln", target, rc);
	if (arfctl_opt.json) {
		printf("{\"target\":");
		arfctl_json_str(stdout, from->path);
		printf(",\"link\":");
		arfctl_json_str(stdout, target);
		printf(",\"ino\":%" PRIu64 ",\"nlink\":%u", out.ino, out.nlink);
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

/* A number of at most max in base (0: C's prefixes), the whole of s. */
static int whole_number(const char *s, int base, unsigned long long max, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, base);
	if (errno || end == s || *end || *s == '-' || *s == '+' || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int arfctl_setattr_arg(const char *cmd, const char *arg, struct arf_setattr *sa)
{
	memset(sa, 0, sizeof(*sa));
	if (!strcmp(cmd, "chmod")) {
		if (whole_number(arg, 8, 07777, &sa->mode)) {
			fprintf(stderr, "arfctl: chmod: '%s' is not an octal mode (0 to 7777)\n", arg);
			return 2;
		}
		sa->valid = ARF_SET_MODE;
		return 0;
	}
	/* chown UID, UID:GID or :GID; (uint32_t)-1 means "unchanged" to chown(2) */
	const char *colon = strchr(arg, ':');
	char uid[16];
	size_t ul = colon ? (size_t)(colon - arg) : strlen(arg);
	if (ul >= sizeof(uid) || (colon && !colon[1]) || (!ul && !colon))
		goto bad;
	memcpy(uid, arg, ul);
	uid[ul] = 0;
	if (ul) {
		if (whole_number(uid, 10, UINT32_MAX - 1, &sa->uid))
			goto bad;
		sa->valid |= ARF_SET_UID;
	}
	if (colon) {
		if (whole_number(colon + 1, 10, UINT32_MAX - 1, &sa->gid))
			goto bad;
		sa->valid |= ARF_SET_GID;
	}
	return 0;
bad:
	fprintf(stderr, "arfctl: chown: '%s' is not UID, UID:GID or :GID (numbers)\n", arg);
	return 2;
}

int arfctl_cmd_setattr(arf_client *c, const struct arf_url *u, const char *cmd,
		       const struct arf_setattr *sa)
{
	struct arf_stat st;
	int rc;

	if ((rc = arf_resolve(c, u->path, &st)) || (rc = arf_setattr(c, st.ino, st.gen, sa, &st)))
		return arfctl_fail(cmd, u->path, rc);
	if (arfctl_opt.json) {
		printf("{\"path\":");
		arfctl_json_str(stdout, u->path);
		printf(",\"mode\":%u,\"uid\":%u,\"gid\":%u", st.mode & 07777, st.uid, st.gid);
		arfctl_json_end(c);
	} else {
		arfctl_text_end(c);
	}
	return 0;
}

int arfctl_cmd_status(arf_client *c, const struct arf_url *u)
{
	char *json = NULL;
	int rc = arf_server_status(c, &json);
	if (rc)
		return arfctl_fail("status", u->path, rc);
	if (arfctl_opt.json) {
		printf("{\"transport\":\"%s\",\"server\":%s", arf_transport(c), json);
		arfctl_json_end(c);
	} else {
		printf("transport: %s\nserver: %s\n", arf_transport(c), json);
		arfctl_text_end(c);
	}
	free(json);
	return 0;
}

