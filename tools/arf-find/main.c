/* SPDX-License-Identifier: MIT */
/*
 * arf-find: GNU find whose walk runs on the server.
 *
 * The command line is GNU find 4.9's.  When every starting point is on an
 * ARF mount or an arf:// URL and every primary of the expression is one
 * arf-find ships (parse.c), the subtrees are listed by a walker that runs
 * in arfd beside the directories, with the caller's permissions, and sends
 * back only the entries that may be printed (walk.c, filter.c); they are
 * evaluated here with the whole expression (eval.c).  Anything else --
 * -exec, -delete, -ls, -fprint, -L, a starting point elsewhere -- goes
 * whole to GNU find (/usr/bin/find, or $ARF_FIND_GNU), through the mount:
 * the same answer, at the mount's speed.  Exit status as GNU find's.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "find_int.h"

#ifndef ARF_VERSION
#define ARF_VERSION "unknown"
#endif

static const char usage[] =
	"Usage: arf-find [--stats] [-P] [starting-point|arf://URL...] [expression]\n"
	"GNU find, with the walk run by arfd beside the data for starting points on an\n"
	"ARF mount or arf:// URLs.  Shipped: -name -iname -path -ipath -regex -iregex\n"
	"-regextype -type -size -mtime -mmin -atime -amin -ctime -cmin -newer -anewer\n"
	"-cnewer -user -group -uid -gid -perm -empty -links -inum -maxdepth -mindepth\n"
	"-depth -prune -print -print0 -printf -true -false ( ) ! -not -a -o ,\n"
	"Anything else runs whole in GNU find, through the mount.\n"
	"  --stats    print the ARF client's counters to standard error\n";

static void gnu_find(char **argv)
{
	const char *gnu = getenv("ARF_FIND_GNU");

	if (!gnu || !*gnu)
		gnu = "/usr/bin/find";
	fflush(stdout);
	argv[0] = (char *)"find";
	execv(gnu, argv);
	fprintf(stderr, "arf-find: cannot run %s: %m\n", gnu);
	exit(1);
}

int main(int argc, char **argv)
{
	struct find_run run;
	struct timespec now;
	int sbeg, send, k = 1;
	char *dot[] = { (char *)".", NULL };

	setlocale(LC_ALL, "");
	memset(&run, 0, sizeof(run));
	run.prog = "arf-find";
	if (argc > 1 && !strcmp(argv[1], "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("arf-find (ARF) %s\n", ARF_VERSION);
		return 0;
	}
	/* our options come first and are not GNU find's */
	while (k < argc && !strcmp(argv[k], "--stats")) {
		run.o.stats = 1;
		k++;
	}
	if (k > 1) {
		memmove(argv + 1, argv + k, (size_t)(argc - k + 1) * sizeof(*argv));
		argc -= k - 1;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	run.o.now_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
	if (find_parse(&run, argc, argv, &sbeg, &send))
		gnu_find(argv);
	run.o.names_only = !find_needs_stat(run.expr);
	if (find_walk(&run, send > sbeg ? argv + sbeg : dot, send > sbeg ? send - sbeg : 1) == 1)
		gnu_find(argv);
	find_free(run.expr);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "arf-find: standard output: %m\n");
		run.status = 1;
	}
	return run.status;
}
