/* SPDX-License-Identifier: MIT */
/*
 * arf-grep: grep that ships a matcher generated for its pattern.
 *
 * The command line is GNU grep's (the subset listed in usage[]); options it
 * does not support are refused with exit status 2, never ignored.  Every
 * file is searched with the same compiled matcher: files in an ARF mount and
 * arf:// URLs through arfd (remote.c), any other file here (search.c), with
 * output identical to GNU grep 3.8 under LC_ALL=C.  Exit status: 0 a line
 * was selected, 1 none, 2 an error (0 with -q once a line is selected).
 * `--explain` prints the generated eBPF program instead of searching.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grep_int.h"

#ifndef ARF_VERSION
#define ARF_VERSION "unknown"
#endif

static const char usage[] =
	"Usage: arf-grep [OPTION]... PATTERNS [FILE|arf://URL]...\n"
	"Search for PATTERNS in each FILE, as GNU grep does; files in an ARF mount and\n"
	"arf:// URLs are searched by a program generated for PATTERNS and run by arfd.\n"
	"\n"
	"  -E, --extended-regexp     PATTERNS are extended regular expressions\n"
	"  -F, --fixed-strings       PATTERNS are strings\n"
	"  -G, --basic-regexp        PATTERNS are basic regular expressions (default)\n"
	"  -e, --regexp=PATTERNS     use PATTERNS for matching\n"
	"  -f, --file=FILE           take PATTERNS from FILE\n"
	"  -i, -y, --ignore-case     ignore case distinctions (--no-ignore-case undoes)\n"
	"  -w, --word-regexp         match only whole words\n"
	"  -x, --line-regexp         match only whole lines\n"
	"  -v, --invert-match        select non-matching lines\n"
	"  -m, --max-count=NUM       stop after NUM selected lines\n"
	"  -b, --byte-offset         print the byte offset with output lines\n"
	"  -n, --line-number         print line number with output lines\n"
	"  -H, --with-filename       print file name with output lines\n"
	"  -h, --no-filename         suppress the file name prefix on output\n"
	"  -o, --only-matching       show only nonempty parts of lines that match\n"
	"  -q, --quiet, --silent     suppress all normal output\n"
	"  -s, --no-messages         suppress error messages\n"
	"  -a, --text                process a binary file as if it were text\n"
	"  -r, --recursive           search directories, skipping symbolic links found there\n"
	"  -R, --dereference-recursive  likewise, following all symbolic links\n"
	"  -c, --count               print only a count of selected lines per FILE\n"
	"  -l, --files-with-matches  print only names of FILEs with selected lines\n"
	"  -L, --files-without-match print only names of FILEs with no selected lines\n"
	"      --explain             print the generated eBPF program and exit\n"
	"      --engine=native|mc|jit  match local files natively (default) or by running\n"
	"                            the generated program in the mobilecode interpreter\n"
	"                            (mc) or as native code from its JIT (jit)\n"
	"      --no-remote           search ARF files here (read through the mount)\n"
	"      --stats               print the ARF client's counters to standard error\n"
	"      --help, -V/--version\n"
	"\n"
	"Matching follows the C locale.  Back-references and the options of GNU grep\n"
	"not listed here are refused.\n";

enum {
	OPT_NO_ICASE = 256, OPT_EXPLAIN, OPT_ENGINE, OPT_NO_REMOTE, OPT_STATS, OPT_HELP, OPT_UNSUPPORTED,
};

static const struct option longopts[] = {
	{ "regexp", required_argument, 0, 'e' },
	{ "file", required_argument, 0, 'f' },
	{ "ignore-case", no_argument, 0, 'i' },
	{ "no-ignore-case", no_argument, 0, OPT_NO_ICASE },
	{ "invert-match", no_argument, 0, 'v' },
	{ "line-number", no_argument, 0, 'n' },
	{ "byte-offset", no_argument, 0, 'b' },
	{ "count", no_argument, 0, 'c' },
	{ "files-with-matches", no_argument, 0, 'l' },
	{ "files-without-match", no_argument, 0, 'L' },
	{ "word-regexp", no_argument, 0, 'w' },
	{ "line-regexp", no_argument, 0, 'x' },
	{ "only-matching", no_argument, 0, 'o' },
	{ "quiet", no_argument, 0, 'q' },
	{ "silent", no_argument, 0, 'q' },
	{ "no-messages", no_argument, 0, 's' },
	{ "max-count", required_argument, 0, 'm' },
	{ "with-filename", no_argument, 0, 'H' },
	{ "no-filename", no_argument, 0, 'h' },
	{ "recursive", no_argument, 0, 'r' },
	{ "dereference-recursive", no_argument, 0, 'R' },
	{ "fixed-strings", no_argument, 0, 'F' },
	{ "basic-regexp", no_argument, 0, 'G' },
	{ "extended-regexp", no_argument, 0, 'E' },
	{ "text", no_argument, 0, 'a' },
	{ "explain", no_argument, 0, OPT_EXPLAIN },
	{ "engine", required_argument, 0, OPT_ENGINE },
	{ "no-remote", no_argument, 0, OPT_NO_REMOTE },
	{ "stats", no_argument, 0, OPT_STATS },
	{ "help", no_argument, 0, OPT_HELP },
	{ "version", no_argument, 0, 'V' },
	/* GNU grep options arf-grep does not implement: refused by name */
	{ "after-context", required_argument, 0, OPT_UNSUPPORTED },
	{ "before-context", required_argument, 0, OPT_UNSUPPORTED },
	{ "context", optional_argument, 0, OPT_UNSUPPORTED },
	{ "color", optional_argument, 0, OPT_UNSUPPORTED },
	{ "colour", optional_argument, 0, OPT_UNSUPPORTED },
	{ "include", required_argument, 0, OPT_UNSUPPORTED },
	{ "exclude", required_argument, 0, OPT_UNSUPPORTED },
	{ "exclude-from", required_argument, 0, OPT_UNSUPPORTED },
	{ "exclude-dir", required_argument, 0, OPT_UNSUPPORTED },
	{ "null", no_argument, 0, OPT_UNSUPPORTED },
	{ "null-data", no_argument, 0, OPT_UNSUPPORTED },
	{ "label", required_argument, 0, OPT_UNSUPPORTED },
	{ "line-buffered", no_argument, 0, OPT_UNSUPPORTED },
	{ "binary-files", required_argument, 0, OPT_UNSUPPORTED },
	{ "binary", no_argument, 0, OPT_UNSUPPORTED },
	{ "devices", required_argument, 0, OPT_UNSUPPORTED },
	{ "directories", required_argument, 0, OPT_UNSUPPORTED },
	{ "perl-regexp", no_argument, 0, OPT_UNSUPPORTED },
	{ "initial-tab", no_argument, 0, OPT_UNSUPPORTED },
	{ "no-ignore-case-xx", no_argument, 0, OPT_UNSUPPORTED },
	{ 0, 0, 0, 0 },
};

/* Accepted by getopt so that they can be refused by name. */
static const char shortopts[] = "e:f:iyvnbclLwxoqsm:HhrRFGEaVA:B:C:PzZTUIuD:d:0123456789";

static void die_usage(void)
{
	fputs("Usage: grep [OPTION]... PATTERNS [FILE]...\n"
	      "Try 'arf-grep --help' for more information.\n", stderr);
	exit(2);
}

static void warn_cb(const char *msg)
{
	fprintf(stderr, "grep: warning: %s\n", msg);
}

/* The pattern list: every -e and -f, joined by newlines. */
struct patlist {
	char *text;
	size_t len;
	int count; /* patterns so far (an empty -f file adds none) */
	int given; /* -e or -f was used */
};

static void pat_add(struct patlist *pl, const char *p, size_t n)
{
	char *t = realloc(pl->text, pl->len + n + 2);

	if (!t) {
		fputs("grep: memory exhausted\n", stderr);
		exit(2);
	}
	pl->text = t;
	if (pl->count++)
		pl->text[pl->len++] = '\n';
	memcpy(pl->text + pl->len, p, n);
	pl->len += n;
	pl->text[pl->len] = 0;
}

static void pat_file(struct patlist *pl, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char *buf = NULL;
	size_t len = 0, cap = 0, k;

	if (!f) {
		fprintf(stderr, "grep: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	for (;;) {
		if (len + 65536 > cap) {
			char *b = realloc(buf, cap = cap * 2 + 65536);

			if (!b) {
				fputs("grep: memory exhausted\n", stderr);
				exit(2);
			}
			buf = b;
		}
		k = fread(buf + len, 1, 65536, f);
		len += k;
		if (k < 65536)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "grep: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (f != stdin)
		fclose(f);
	if (len) {
		if (buf[len - 1] == '\n')
			len--;
		pat_add(pl, buf, len);
	}
	free(buf);
}

/* ---- files -------------------------------------------------------------- */

static ssize_t fd_read(void *arg, void *buf, size_t len)
{
	ssize_t n = read(*(int *)arg, buf, len);

	return n < 0 ? -errno : n;
}

static void search_fd(struct grep_run *run, int fd, const char *name, const struct stat *st)
{
	struct grep_src src = { fd_read, &fd, S_ISREG(st->st_mode) ? (int64_t)st->st_size : -1 };
	grep_report(run, name, grep_file(run, &src, name));
}

static void search_path(struct grep_run *run, const char *path, const char *name, int cmdline);

static void search_dir(struct grep_run *run, const char *path, const char *name)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d) {
		grep_error(run, name, -errno);
		return;
	}
	if (run->out_file < 0)
		run->out_file = 1;
	while ((e = readdir(d)) != NULL) {
		size_t pl = strlen(path), nl = strlen(name);
		char *cp, *cn;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		cp = malloc(pl + strlen(e->d_name) + 2);
		cn = malloc(nl + strlen(e->d_name) + 2);
		if (!cp || !cn) {
			fputs("grep: memory exhausted\n", stderr);
			exit(2);
		}
		sprintf(cp, "%s%s%s", path, pl && path[pl - 1] == '/' ? "" : "/", e->d_name);
		if (nl)
			sprintf(cn, "%s%s%s", name, name[nl - 1] == '/' ? "" : "/", e->d_name);
		else
			strcpy(cn, e->d_name); /* the implicit "." of `grep -r` */
		search_path(run, cp, cn, 0);
		free(cp);
		free(cn);
	}
	closedir(d);
}

static void search_path(struct grep_run *run, const char *path, const char *name, int cmdline)
{
	struct stat st;
	int fd;

	if (!cmdline && run->o.recursive == 1) {
		if (lstat(path, &st) < 0) {
			grep_error(run, name, -errno);
			return;
		}
		if (S_ISLNK(st.st_mode))
			return; /* -r skips symbolic links below the command line */
	} else if (stat(path, &st) < 0) {
		grep_error(run, name, -errno);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (run->o.recursive) {
			if (grep_remote_dir_path(run, path, name))
				return;
			search_dir(run, path, name);
			return;
		}
		grep_error(run, name, -EISDIR);
		return;
	}
	if (!cmdline && !S_ISREG(st.st_mode))
		return; /* devices, FIFOs and sockets are read only when named */
	if (!run->o.local_only && S_ISREG(st.st_mode)) {
		/* a file in an ARF mount is searched on the server behind it */
		long long n;

		if (grep_remote_path(run, path, name, &n))
			return;
	}
	fd = open(path, O_RDONLY | O_NOCTTY);
	if (fd < 0) {
		grep_error(run, name, -errno);
		return;
	}
	search_fd(run, fd, name, &st);
	close(fd);
}

static int stdout_is_dev_null(void)
{
	struct stat a, b;

	return fstat(STDOUT_FILENO, &a) == 0 && S_ISCHR(a.st_mode) && stat("/dev/null", &b) == 0 &&
	       a.st_rdev == b.st_rdev && a.st_ino == b.st_ino;
}

static int explain(struct grep_run *run)
{
	char err[256], *text = NULL;
	int r;

	struct grep_gen_opts g = { run->o.invert, run->o.text ? GREP_NUL_BYTE : GREP_NUL_STOP,
				   run->o.line_numbers, 0 };

	r = grep_codegen(&run->m, &g, &run->prog, err, sizeof(err));
	if (r) {
		fprintf(stderr, "arf-grep: %s\n", err);
		return 2;
	}
	r = arf_mc_disasm(run->prog.insns, run->prog.n, &text, err, sizeof(err));
	if (r) {
		fprintf(stderr, "arf-grep: disassembly failed: %s\n", err);
		return 2;
	}
	printf("# arf-grep program: %s, %zu instructions, %zu bytes of read-only data\n",
	       run->prog.kind == 1 ? "fixed-string skip loop"
	       : run->prog.kind == 2 ? "skip loop for the required bytes, then the DFA table"
				     : "DFA table walker",
	       run->prog.n, run->prog.rodata_len);
	if (run->prog.kind != 1)
		printf("# DFA: %d states\n", run->prog.nstates);
	if (run->prog.kind == 0 && run->prog.skip_tests >= 0)
		printf("# start-state skip: %d tests of a word\n", run->prog.skip_tests);
	else if (run->prog.kind == 0)
		printf("# no start-state skip: too many ways out of the first state\n");
	fputs(text, stdout);
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	static struct grep_run run;
	struct patlist pl = { 0 };
	int c, want_explain = 0, nops;
	char err[256];
	static char outbuf[1 << 16];

	run.o.max_count = -1;
	run.o.with_filename = -1;
	run.o.rx.syntax = GREP_BRE;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'e': pat_add(&pl, optarg, strlen(optarg)); pl.given = 1; break;
		case 'f': pat_file(&pl, optarg); pl.given = 1; break;
		case 'i': case 'y': run.o.rx.icase = 1; break;
		case OPT_NO_ICASE: run.o.rx.icase = 0; break;
		case 'v': run.o.invert = 1; break;
		case 'n': run.o.line_numbers = 1; break;
		case 'b': run.o.byte_offset = 1; break;
		case 'c': run.o.count = 1; break;
		case 'l': run.o.list = 1; break;
		case 'L': run.o.list = 2; break;
		case 'w': run.o.rx.words = 1; break;
		case 'x': run.o.rx.lines = 1; break;
		case 'o': run.o.only = 1; break;
		case 'q': run.o.quiet = 1; break;
		case 's': run.o.no_messages = 1; break;
		case 'm': {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (end == optarg || *end || errno) {
				if (errno == ERANGE && end != optarg && !*end) {
					v = v < 0 ? -1 : -1; /* huge: no limit, as GNU grep */
				} else {
					fprintf(stderr, "grep: invalid max count\n");
					return 2;
				}
			}
			run.o.max_count = v < 0 ? -1 : v;
			break;
		}
		case 'H': run.o.with_filename = 1; break;
		case 'h': run.o.with_filename = 0; break;
		case 'r': run.o.recursive = 1; break;
		case 'R': run.o.recursive = 2; break;
		case 'F': run.o.rx.syntax = GREP_FIXED; break;
		case 'G': run.o.rx.syntax = GREP_BRE; break;
		case 'E': run.o.rx.syntax = GREP_ERE; break;
		case 'a': run.o.text = 1; break;
		case OPT_EXPLAIN: want_explain = 1; break;
		case OPT_ENGINE:
			if (!strcmp(optarg, "native"))
				run.o.engine = ENGINE_NATIVE;
			else if (!strcmp(optarg, "mc"))
				run.o.engine = ENGINE_MC;
			else if (!strcmp(optarg, "jit"))
				run.o.engine = ENGINE_JIT;
			else {
				fprintf(stderr, "arf-grep: --engine: expected native, mc or jit\n");
				return 2;
			}
			break;
		case OPT_NO_REMOTE: run.o.local_only = 1; break;
		case OPT_STATS: run.stats = 1; break;
		case OPT_HELP: fputs(usage, stdout); return 0;
		case 'V': printf("arf-grep (ARF) %s\n", ARF_VERSION); return 0;
		case OPT_UNSUPPORTED:
		case 'A': case 'B': case 'C': case 'P': case 'z': case 'Z': case 'T': case 'U':
		case 'I': case 'u': case 'D': case 'd':
		case '0': case '1': case '2': case '3': case '4':
		case '5': case '6': case '7': case '8': case '9':
			if (c == OPT_UNSUPPORTED)
				fprintf(stderr, "arf-grep: option '%s' is not supported\n",
					argv[optind - 1]);
			else
				fprintf(stderr, "arf-grep: option '-%c' is not supported\n", c);
			return 2;
		default:
			die_usage();
		}
	}
	if (!pl.given) {
		if (optind >= argc)
			die_usage();
		pat_add(&pl, argv[optind], strlen(argv[optind]));
		optind++;
	}
	if (stdout_is_dev_null())
		run.o.quiet = 1;
	if (run.o.quiet)
		run.o.list = 0;
	if (run.o.quiet || run.o.list)
		run.o.count = 0;

	err[0] = 0;
	c = matcher_compile(&run.m, pl.count ? pl.text : NULL, pl.len, &run.o.rx, err, sizeof(err),
			    warn_cb);
	if (c) {
		fprintf(stderr, "grep: %s\n", err[0] ? err : strerror(-c));
		free(pl.text);
		return 2;
	}
	if (want_explain)
		return explain(&run);
	/* GNU grep: nothing can be selected, so no file is even opened */
	if ((run.o.max_count == 0 || (run.m.empty && !run.o.invert)) && run.o.list != 2)
		return 1;
	if (run.o.engine == ENGINE_MC || run.o.engine == ENGINE_JIT) {
		/* NULs reach the program already replaced (search.c) */
		struct grep_gen_opts g = { run.o.invert, GREP_NUL_BYTE, 1, 0 };

		c = grep_codegen(&run.m, &g, &run.prog, err, sizeof(err));
		if (!c)
			c = grep_mc_create(&run.prog, run.o.engine == ENGINE_JIT, &run.mc, err,
					   sizeof(err));
		if (c) {
			fprintf(stderr, "arf-grep: --engine=%s: %s\n",
				run.o.engine == ENGINE_JIT ? "jit" : "mc", err);
			return 2;
		}
		run.prog_ready = 1;
	}
	run.out = stdout;
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));

	nops = argc - optind;
	if (run.o.with_filename >= 0)
		run.out_file = run.o.with_filename;
	else
		run.out_file = nops > 1 ? 1 : (run.o.recursive ? -1 : 0);

	if (nops == 0) {
		if (run.o.recursive) {
			search_dir(&run, ".", "");
		} else {
			struct stat st;

			if (fstat(STDIN_FILENO, &st) < 0)
				memset(&st, 0, sizeof(st));
			search_fd(&run, STDIN_FILENO, "(standard input)", &st);
		}
	}
	for (int k = optind; k < argc; k++) {
		const char *a = argv[k];

		if (!strcmp(a, "-")) {
			struct stat st;

			if (fstat(STDIN_FILENO, &st) < 0)
				memset(&st, 0, sizeof(st));
			search_fd(&run, STDIN_FILENO, "(standard input)", &st);
		} else if (!strncmp(a, "arf://", 6) || !strncmp(a, "arf+", 4)) {
			grep_remote(&run, a, a);
		} else {
			search_path(&run, a, a, 1);
		}
	}
	fflush(stdout);
	grep_remote_finish(&run);
	if (ferror(stdout)) {
		fprintf(stderr, "grep: write error: %s\n", strerror(errno));
		return 2;
	}
	grep_mc_destroy(run.mc);
	if (run.prog_ready)
		grep_prog_free(&run.prog);
	matcher_free(&run.m);
	free(pl.text);
	if (run.errseen && !(run.o.quiet && run.matched))
		return 2;
	return run.matched ? 0 : 1;
}
