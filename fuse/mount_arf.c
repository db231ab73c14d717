/* SPDX-License-Identifier: MIT */
/*
 * mount.arf: the helper mount(8) runs for `mount -t arf` and fstab lines
 * of type arf:
 *
 *   mount.arf SPEC DIR [-sfnv] [-o OPTS]
 *
 * SPEC is HOST[:PORT]:/PATH as for NFS.  The options are checked here (an
 * unknown ARF option is an error unless -s), then arf-fuse is executed with
 * the URL and the options; it returns once the mount is up.  -f checks
 * everything and mounts nothing; -v prints the arf-fuse command; -n is
 * accepted (there is no mtab to skip).  arf-fuse is looked for beside this
 * program (after symbolic links), then in the configured bindir.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arf_fuse.h"

#ifndef ARF_FUSE_PATH
#define ARF_FUSE_PATH "/usr/local/bin/arf-fuse"
#endif

static void usage(void)
{
	fprintf(stderr, "usage: mount.arf HOST[:PORT]:/PATH DIR [-sfnv] [-o OPTS]\n"
			"       (options: arf-fuse --help)\n");
}

/* Check each option alone, keeping those arf-fuse understands. */
static int filter_opts(const char *in, int sloppy, char *out, size_t cap, struct arf_fuse_opts *o)
{
	char *copy = strdup(in), *save = NULL, err[512];
	size_t len = strlen(out);
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		if (arf_fuse_opts_parse(o, opt, err, sizeof(err))) {
			if (sloppy) {
				fprintf(stderr, "mount.arf: ignoring %s\n", err);
				continue;
			}
			fprintf(stderr, "mount.arf: %s\n", err);
			rc = -EINVAL;
			break;
		}
		if (len + strlen(opt) + 2 > cap) {
			fprintf(stderr, "mount.arf: options too long\n");
			rc = -EINVAL;
			break;
		}
		len += (size_t)sprintf(out + len, "%s%s", len ? "," : "", opt);
	}
	free(copy);
	return rc;
}

static const char *find_arf_fuse(char *buf, size_t cap)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, cap, "%s/arf-fuse", self);
			if (!access(buf, X_OK))
				return buf;
		}
	}
	if (!access(ARF_FUSE_PATH, X_OK))
		return ARF_FUSE_PATH;
	return "arf-fuse"; /* from PATH */
}

int main(int argc, char **argv)
{
	static char optbuf[8192], url[4352], exe[PATH_MAX + 16];
	static struct arf_fuse_opts opts; /* large: not on the stack */
	struct arf_fuse_opts *o = &opts;
	const char *spec = NULL, *dir = NULL;
	char err[512], *raw[64];
	int nraw = 0, sloppy = 0, fake = 0, verbose = 0;

	arf_fuse_opts_init(o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || !a[1]) {
			if (!spec)
				spec = a;
			else if (!dir)
				dir = a;
			else {
				usage();
				return 1;
			}
			continue;
		}
		if (!strcmp(a, "-o") || !strcmp(a, "-t")) {
			if (++i >= argc) {
				usage();
				return 1;
			}
			if (a[1] == 'o' && nraw < 64)
				raw[nraw++] = argv[i];
			continue;
		}
		if (!strncmp(a, "-o", 2)) {
			if (nraw < 64)
				raw[nraw++] = (char *)a + 2;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			return 0;
		}
		for (const char *f = a + 1; *f; f++) {
			switch (*f) {
			case 's': sloppy = 1; break;
			case 'f': fake = 1; break;
			case 'n': break;
			case 'v': verbose = 1; break;
			default:
				fprintf(stderr, "mount.arf: unknown flag -%c\n", *f);
				usage();
				return 1;
			}
		}
	}
	if (!spec || !dir) {
		usage();
		return 1;
	}
	if (arf_fuse_spec_to_url(spec, url, sizeof(url), err, sizeof(err))) {
		fprintf(stderr, "mount.arf: %s\n", err);
		return 1;
	}
	for (int i = 0; i < nraw; i++)
		if (filter_opts(raw[i], sloppy, optbuf, sizeof(optbuf) - 4400, o))
			return 1;
	/* the URL with port=, transport= and socket= applied, as arf-fuse will */
	snprintf(o->url, sizeof(o->url), "%s", url);
	if (arf_fuse_opts_finish(o, err, sizeof(err))) {
		fprintf(stderr, "mount.arf: %s\n", err);
		return 1;
	}
	if (!o->fsname[0]) {
		size_t len = strlen(optbuf);
		snprintf(optbuf + len, sizeof(optbuf) - len, "%sfsname=%s", len ? "," : "", spec);
	}
	const char *prog = find_arf_fuse(exe, sizeof(exe));
	char *args[] = { (char *)prog, url, (char *)dir, "-o", optbuf, NULL };
	if (!optbuf[0])
		args[3] = NULL;
	if (verbose)
		fprintf(stderr, "mount.arf: %s %s %s%s%s\n", prog, url, dir, optbuf[0] ? " -o " : "",
			optbuf);
	if (fake)
		return 0;
	execvp(prog, args);
	fprintf(stderr, "mount.arf: cannot run %s: %s\n", prog, strerror(errno));
	return 1;
}
