/* SPDX-License-Identifier: MIT */
/*
 * ARF files: recognising them, and searching them.
 *
 * A path is an ARF file when the mount it lies in has type fuse.arf in
 * /proc/self/mountinfo, or when it carries the user.arf.server extended
 * attribute that arf-fuse provides (the URL of the server behind the mount).
 *
 * The design: ship the generated program (codegen.c) to arfd with PROG_LOAD,
 * run it with PROG_EXEC against the file's blocks in slices resumed by the
 * cursor in struct grep_ctx, and receive only the records and bytes of the
 * selected lines.  arfd's program load/exec API does not exist yet, so:
 *
 *   STOPGAP (does NOT meet issue 5's requirement that only matching lines
 *   cross the network): an arf:// URL is read with arf_read() and matched
 *   here with the same matcher; a path in an ARF mount is read through the
 *   mount.  grep_remote() is where PROG_EXEC replaces arf_read().
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "arf.h"
#include "grep_int.h"

/* Unescapes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] && r[3]) {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
}

/* The fstype of the mount holding realpath rp (longest mount point prefix). */
static int mount_is_arf(const char *rp)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[8192];
	size_t best = 0;
	int arf = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *fields[12], *save = NULL, *tok;
		int n = 0, dash = -1;

		for (tok = strtok_r(line, " \n", &save); tok && n < 12; tok = strtok_r(NULL, " \n", &save)) {
			if (!strcmp(tok, "-") && dash < 0)
				dash = n;
			fields[n++] = tok;
		}
		if (n < 5 || dash < 0 || dash + 1 >= n)
			continue;
		unescape(fields[4]);
		size_t l = strlen(fields[4]);

		if (strncmp(rp, fields[4], l) || (rp[l] && rp[l] != '/' && l > 1))
			continue;
		if (l >= best) {
			best = l;
			arf = !strcmp(fields[dash + 1], "fuse.arf");
		}
	}
	fclose(f);
	return arf;
}

int grep_path_is_arf(const char *path, char *url, size_t urlcap)
{
	char rp[PATH_MAX], buf[4096];
	ssize_t n = getxattr(path, "user.arf.server", buf, sizeof(buf) - 1);

	if (n > 0) {
		buf[n] = 0;
		if (url && urlcap)
			snprintf(url, urlcap, "%s", buf);
		return 1;
	}
	if (!realpath(path, rp))
		return 0;
	return mount_is_arf(rp);
}

/* ---- the stopgap: read the file with arf_read and match here ------------ */

struct arf_src {
	arf_client *c;
	uint64_t ino, off;
	uint32_t gen;
};

static ssize_t arf_src_read(void *arg, void *buf, size_t len)
{
	struct arf_src *s = arg;
	ssize_t n = arf_read(s->c, s->ino, s->gen, s->off, buf, len);

	if (n > 0)
		s->off += (uint64_t)n;
	return n;
}

static void report(struct grep_run *run, const char *name, long long n)
{
	if (n < 0)
		return;
	if (run->o.count) {
		if (run->out_file)
			fprintf(run->out, "%s:", name);
		fprintf(run->out, "%lld\n", n);
	}
	if ((run->o.list == 1 && n > 0) || (run->o.list == 2 && n == 0))
		fprintf(run->out, "%s\n", name);
}

static long long remote_file(struct grep_run *run, arf_client *c, const struct arf_stat *st,
			     const char *name)
{
	struct arf_src s = { c, st->ino, 0, st->gen };
	struct grep_src src = { arf_src_read, &s, (int64_t)st->size };
	long long n = grep_file(run, &src, name);

	report(run, name, n);
	return n;
}

static long long remote_dir(struct grep_run *run, arf_client *c, const struct arf_stat *dir,
			    const char *name)
{
	struct arf_dirent ents[64];
	uint64_t cookie = 0;
	int eof = 0;
	long long total = 0;

	if (run->out_file < 0)
		run->out_file = 1;
	while (!eof) {
		size_t n = 0;
		int r = arf_readdir(c, dir->ino, dir->gen, cookie, ents, 64, &n, &eof);

		if (r < 0) {
			grep_error(run, name, r);
			return r;
		}
		for (size_t i = 0; i < n; i++) {
			struct arf_stat st;
			char *child;

			cookie = ents[i].cookie;
			if (asprintf(&child, "%s%s%s", name, name[strlen(name) - 1] == '/' ? "" : "/",
				     ents[i].name) < 0)
				return -ENOMEM;
			r = arf_lookup(c, dir->ino, dir->gen, ents[i].name, &st);
			if (r < 0) {
				grep_error(run, child, r);
			} else if (S_ISDIR(st.mode)) {
				remote_dir(run, c, &st, child);
			} else if (S_ISREG(st.mode)) {
				long long k = remote_file(run, c, &st, child);

				if (k > 0)
					total += k;
			} else if (S_ISLNK(st.mode) && run->o.recursive == 2) {
				/* -R: follow it */
				struct arf_stat t;
				char target[4096];

				if (arf_readlink(c, st.ino, st.gen, target, sizeof(target)) >= 0 &&
				    arf_lookup(c, dir->ino, dir->gen, ents[i].name, &t) == 0 &&
				    S_ISREG(t.mode))
					remote_file(run, c, &t, child);
			}
			free(child);
		}
	}
	return total;
}

long long grep_remote(struct grep_run *run, const char *url, const char *name)
{
	struct arf_url u;
	struct arf_stat st;
	arf_client *c = NULL;
	char err[256];
	long long n;
	int r;

	r = arf_url_parse(url, &u, err, sizeof(err));
	if (r < 0) {
		run->errseen = 1;
		if (!run->o.no_messages)
			fprintf(stderr, "grep: %s: %s\n", name, err);
		return r;
	}
	r = arf_connect(url, NULL, &c, err, sizeof(err));
	if (r < 0) {
		run->errseen = 1;
		if (!run->o.no_messages)
			fprintf(stderr, "grep: %s: %s\n", name, err);
		return r;
	}
	r = arf_resolve(c, u.path, &st);
	if (r == 0 && S_ISLNK(st.mode)) {
		/* a final symbolic link on the command line is followed */
		char target[4096];
		int k = arf_readlink(c, st.ino, st.gen, target, sizeof(target));

		if (k >= 0 && target[0] == '/')
			r = arf_resolve(c, target, &st);
	}
	if (r < 0) {
		grep_error(run, name, r);
		arf_close(c);
		return r;
	}
	if (S_ISDIR(st.mode)) {
		if (!run->o.recursive) {
			grep_error(run, name, -EISDIR);
			n = -EISDIR;
		} else {
			n = remote_dir(run, c, &st, name);
		}
	} else {
		n = remote_file(run, c, &st, name);
	}
	arf_close(c);
	return n;
}
