/* SPDX-License-Identifier: MIT */
/*
 * arf-sum: sha256sum, md5sum, b2sum, sha1sum, sha224sum, sha384sum and
 * sha512sum in one program (the algorithm from --algo or from the name it
 * is run as), with GNU coreutils 9.1's output -- names with a backslash,
 * newline or carriage return escaped behind a leading backslash, --tag's
 * BSD lines, -z -- and its -c checking, messages and exit status
 * (--quiet --status --warn --strict --ignore-missing).  The digests of
 * files on ARF are computed on their server (hash.c).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arf_prog_abi.h"
#include "arf_tool.h"
#include "sum_int.h"

static const struct sum_algo algos[] = {
	{ "md5", "MD5", ARF_PROG_DG_MD5, 16 },
	{ "sha1", "SHA1", ARF_PROG_DG_SHA1, 20 },
	{ "sha224", "SHA224", ARF_PROG_DG_SHA224, 28 },
	{ "sha256", "SHA256", ARF_PROG_DG_SHA256, 32 },
	{ "sha384", "SHA384", ARF_PROG_DG_SHA384, 48 },
	{ "sha512", "SHA512", ARF_PROG_DG_SHA512, 64 },
	{ "blake2b", "BLAKE2b", ARF_PROG_DG_BLAKE2B512, 64 },
};

static const char *prog = "arf-sum";
static const struct sum_algo *algo;
static struct sum_opts so;
static int binary_mode = -1, tag, zero, quiet, status_only, warn, strict, ignore_missing;
static unsigned dbytes;             /* digest bytes printed: the algorithm's, or b2sum -l's */

#define BATCH 256 /* files hashed together (one run or a few per server) */

/* ---- messages ---------------------------------------------------------------- */

static void err_name(const char *name, int err)
{
	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	arf_tool_quote(stderr, name, ARF_TOOL_QUOTE_COLON);
	fprintf(stderr, ": %s\n", strerror(-err));
}

static void print_filename(const char *s, int escape)
{
	if (!escape) {
		fputs(s, stdout);
		return;
	}
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", stdout);
		else if (*s == '\\')
			fputs("\\\\", stdout);
		else if (*s == '\r')
			fputs("\\r", stdout);
		else
			putchar(*s);
	}
}

/* ---- computing ------------------------------------------------------------------ */

static void print_sum(const struct sum_job *j)
{
	int esc = !zero && strpbrk(j->name, "\\\n\r") != NULL;

	if (tag) {
		if (esc)
			putchar('\\');
		fputs(algo->tag, stdout);
		if (dbytes != algo->bytes)
			printf("-%u", dbytes * 8);
		fputs(" (", stdout);
		print_filename(j->name, esc);
		fputs(") = ", stdout);
	} else if (esc) {
		putchar('\\');
	}
	for (unsigned i = 0; i < dbytes; i++)
		printf("%02x", j->digest[i]);
	if (!tag) {
		putchar(' ');
		putchar(binary_mode > 0 ? '*' : ' ');
		print_filename(j->name, esc);
	}
	putchar(zero ? '\0' : '\n');
}

static int compute(char **names, size_t n)
{
	struct sum_job *jobs = calloc(BATCH, sizeof(*jobs));
	int ok = 1;

	if (!jobs)
		return 0;
	for (size_t i = 0; i < n; i += BATCH) {
		size_t m = n - i < BATCH ? n - i : BATCH;

		memset(jobs, 0, m * sizeof(*jobs));
		for (size_t k = 0; k < m; k++) {
			jobs[k].name = names[i + k];
			jobs[k].bytes = dbytes;
		}
		sum_hash(&so, jobs, m);
		for (size_t k = 0; k < m; k++) {
			if (jobs[k].err) {
				err_name(jobs[k].name, jobs[k].err);
				ok = 0;
			} else {
				print_sum(&jobs[k]);
			}
		}
	}
	free(jobs);
	return ok;
}

/* ---- checking -------------------------------------------------------------------- */

static int iswhite(char c)
{
	return c == ' ' || c == '\t';
}

/* GNU's filename_unescape: \\, \n and \r; anything else fails. */
static char *unescape(char *s, size_t len)
{
	char *d = s;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\') {
			if (i == len - 1)
				return NULL;
			i++;
			if (s[i] == 'n')
				*d++ = '\n';
			else if (s[i] == '\\')
				*d++ = '\\';
			else if (s[i] == 'r')
				*d++ = '\r';
			else
				return NULL;
		} else if (s[i] == 0) {
			return NULL;
		} else {
			*d++ = s[i];
		}
	}
	if (d < s + len)
		*d = 0;
	return s;
}

static int hex_digits(const char *s, unsigned bytes)
{
	for (unsigned i = 0; i < 2 * bytes; i++, s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return *s == 0;
}

static int bsd_reversed = -1;

static int is_b2(void)
{
	return algo->prog_alg == ARF_PROG_DG_BLAKE2B512;
}

/* GNU's split_3 (and bsd_split_3): *nbytes gets the digest's length, which
 * b2sum reads from the line (BLAKE2b-N, or the hex digits' count). */
static int split_3(char *s, size_t len, char **hex, int *bin, char **file, unsigned *nbytes)
{
	int escaped = 0;
	size_t i = 0, al = strlen(algo->tag);

	while (iswhite(s[i]))
		i++;
	if (s[i] == '\\') {
		i++;
		escaped = 1;
	}
	*nbytes = algo->bytes;
	if (!strncmp(s + i, algo->tag, al)) {
		i += al;
		if (is_b2() && s[i] == '-') {
			char *end;
			unsigned long bits = strtoul(s + i + 1, &end, 10);

			if (end == s + i + 1 || bits == 0 || bits > 512 || bits % 8)
				return 0;
			*nbytes = (unsigned)(bits / 8);
			i = (size_t)(end - s);
		}
		if (s[i] == ' ')
			i++;
		if (s[i] != '(')
			return 0;
		i++;
		*bin = 0;
		char *b = s + i;
		size_t bl = len - i, k;

		if (bl == 0)
			return 0;
		k = bl - 1;
		while (k && b[k] != ')')
			k--;
		if (b[k] != ')')
			return 0;
		*file = b;
		if (escaped && !unescape(b, k))
			return 0;
		b[k++] = 0;
		while (iswhite(b[k]))
			k++;
		if (b[k] != '=')
			return 0;
		k++;
		while (iswhite(b[k]))
			k++;
		*hex = b + k;
		return hex_digits(*hex, *nbytes);
	}
	if (!is_b2() && len - i < 2 * algo->bytes + 2 + (s[i] == '\\'))
		return 0;
	*hex = s + i;
	if (is_b2()) { /* b2sum: the length is the hex digits' */
		size_t n = 0;

		while (isxdigit((unsigned char)s[i + n]))
			n++;
		if (n < 2 || n % 2 || n > 128)
			return 0;
		*nbytes = (unsigned)(n / 2);
	}
	i += 2 * *nbytes;
	if (!iswhite(s[i]))
		return 0;
	s[i++] = 0;
	if (!hex_digits(*hex, *nbytes))
		return 0;
	if (len - i == 1 || (s[i] != ' ' && s[i] != '*')) {
		if (bsd_reversed == 0)
			return 0;
		bsd_reversed = 1;
	} else if (bsd_reversed != 1) {
		bsd_reversed = 0;
		*bin = s[i++] == '*';
	}
	*file = s + i;
	if (escaped)
		return unescape(s + i, len - i) != NULL;
	return 1;
}

struct line {
	char *file;
	char *hex;
};

static unsigned char hexval(char c)
{
	return (unsigned char)(isdigit((unsigned char)c) ? c - '0' : tolower((unsigned char)c) - 'a' + 10);
}

struct check {
	unsigned long long misformatted, failures, mismatched;
	int properly, matched;
};

static void check_batch(struct line *ls, struct sum_job *jobs, size_t m, struct check *ck)
{
	sum_hash(&so, jobs, m);
	for (size_t k = 0; k < m; k++) {
		struct sum_job *j = &jobs[k];
		int esc = !status_only && strchr(j->name, '\n') != NULL;

		if (j->err && !(ignore_missing && j->missing)) {
			err_name(j->name, j->err);
			ck->failures++;
			if (!status_only) {
				if (esc)
					putchar('\\');
				print_filename(j->name, esc);
				printf(": FAILED open or read\n");
			}
			continue;
		}
		if (j->err)
			continue; /* --ignore-missing */
		int same = 1;

		for (unsigned i = 0; i < j->bytes; i++)
			if (((hexval(ls[k].hex[2 * i]) << 4) | hexval(ls[k].hex[2 * i + 1])) != j->digest[i])
				same = 0;
		if (same)
			ck->matched = 1;
		else
			ck->mismatched++;
		if (!status_only) {
			if (!same || !quiet) {
				if (esc)
					putchar('\\');
				print_filename(j->name, esc);
			}
			if (!same)
				printf(": FAILED\n");
			else if (!quiet)
				printf(": OK\n");
		}
	}
	for (size_t k = 0; k < m; k++)
		free(ls[k].file); /* the line it points into */
}

static int check_file(const char *cf)
{
	FILE *f;
	int is_stdin = !strcmp(cf, "-");
	const char *shown = is_stdin ? "standard input" : cf;
	char *line = NULL;
	size_t cap = 0, m = 0;
	unsigned long long lineno = 0;
	struct check ck = { 0, 0, 0, 0, 0 };
	struct line *ls = calloc(BATCH, sizeof(*ls));
	struct sum_job *jobs = calloc(BATCH, sizeof(*jobs));

	if (!ls || !jobs)
		return 0;
	f = is_stdin ? stdin : fopen(cf, "r");
	if (!f) {
		err_name(cf, -errno);
		free(ls);
		free(jobs);
		return 0;
	}
	for (;;) {
		ssize_t len = getline(&line, &cap, f);
		char *hex, *file;
		int bin = 0;
		unsigned nb = 0;

		if (len <= 0)
			break;
		lineno++;
		if (line[0] == '#')
			continue;
		len -= line[len - 1] == '\n';
		len -= line[len - (0 < len)] == '\r';
		if (len == 0)
			continue;
		line[len] = 0;
		if (!(split_3(line, (size_t)len, &hex, &bin, &file, &nb) && !(is_stdin && !strcmp(file, "-")))) {
			ck.misformatted++;
			if (warn) {
				if (m) { /* the lines before it first, as GNU goes line by line */
					check_batch(ls, jobs, m, &ck);
					m = 0;
				}
				fflush(stdout);
				fprintf(stderr, "%s: ", prog);
				arf_tool_quote(stderr, shown, ARF_TOOL_QUOTE_COLON);
				fprintf(stderr, ": %llu: improperly formatted %s checksum line\n", lineno,
					algo->tag);
			}
			continue;
		}
		ck.properly = 1;
		/* the job keeps the line: a fresh buffer for the next */
		ls[m].file = line;
		ls[m].hex = hex;
		memset(&jobs[m], 0, sizeof(jobs[m]));
		jobs[m].name = file;
		jobs[m].bytes = nb;
		m++;
		line = NULL;
		cap = 0;
		if (m == BATCH) {
			check_batch(ls, jobs, m, &ck);
			m = 0;
		}
	}
	if (m)
		check_batch(ls, jobs, m, &ck);
	free(line);
	free(ls);
	free(jobs);
	int rerr = ferror(f);

	if (!is_stdin)
		fclose(f);
	if (rerr) {
		fflush(stdout);
		fprintf(stderr, "%s: ", prog);
		arf_tool_quote(stderr, shown, ARF_TOOL_QUOTE_COLON);
		fprintf(stderr, ": read error\n");
		return 0;
	}
	fflush(stdout);
	if (!ck.properly) {
		fprintf(stderr, "%s: ", prog);
		arf_tool_quote(stderr, shown, ARF_TOOL_QUOTE_COLON);
		fprintf(stderr, ": no properly formatted checksum lines found\n");
	} else if (!status_only) {
		if (ck.misformatted)
			fprintf(stderr, "%s: WARNING: %llu line%s improperly formatted\n", prog,
				ck.misformatted, ck.misformatted == 1 ? " is" : "s are");
		if (ck.failures)
			fprintf(stderr, "%s: WARNING: %llu listed file%s could not be read\n", prog,
				ck.failures, ck.failures == 1 ? "" : "s");
		if (ck.mismatched)
			fprintf(stderr, "%s: WARNING: %llu computed checksum%s did NOT match\n", prog,
				ck.mismatched, ck.mismatched == 1 ? "" : "s");
		if (ignore_missing && !ck.matched) {
			fprintf(stderr, "%s: ", prog);
			arf_tool_quote(stderr, shown, ARF_TOOL_QUOTE_COLON);
			fprintf(stderr, ": no file was verified\n");
		}
	}
	return ck.properly && ck.matched && !ck.mismatched && !ck.failures &&
	       (!strict || !ck.misformatted);
}

/* ---- command line ------------------------------------------------------------------ */

static void usage(int status)
{
	if (status) {
		fprintf(stderr, "Try '%s --help' for more information.\n", prog);
		exit(status);
	}
	printf("Usage: %s [OPTION]... [FILE]...\n"
	       "Print or check %s checksums; files on an ARF mount or at an arf:// URL\n"
	       "are hashed on their server.\n\n"
	       "  -a, --algo=NAME   md5, sha1, sha224, sha256 (arf-sum's default), sha384,\n"
	       "                    sha512, blake2b (default: from the program's name)\n"
	       "  -b, --binary      read in binary mode\n"
	       "  -c, --check       read checksums from the FILEs and check them\n"
	       "      --tag         create a BSD-style checksum\n"
	       "  -t, --text        read in text mode (default)\n"
	       "  -z, --zero        end each output line with NUL, not newline,\n"
	       "                    and disable file name escaping\n\n"
	       "The following five options are useful only when verifying checksums:\n"
	       "      --ignore-missing  don't fail or report status for missing files\n"
	       "      --quiet          don't print OK for each successfully verified file\n"
	       "      --status         don't output anything, status code shows success\n"
	       "      --strict         exit non-zero for improperly formatted checksum lines\n"
	       "  -w, --warn           warn about improperly formatted checksum lines\n\n"
	       "      --stats          print the client's counters to stderr at the end\n"
	       "      --no-remote      hash every file here\n"
	       "      --help           display this help and exit\n"
	       "      --version        output version information and exit\n",
	       prog, algo->tag);
	exit(0);
}

enum { OPT_TAG = 256, OPT_IGNORE_MISSING, OPT_QUIET, OPT_STATUS, OPT_STRICT, OPT_STATS,
       OPT_NO_REMOTE, OPT_HELP, OPT_VERSION };

static const struct sum_algo *algo_named(const char *s)
{
	for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++)
		if (!strcmp(s, algos[i].name) || (!strcmp(algos[i].name, "blake2b") && !strcmp(s, "b2")))
			return &algos[i];
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "algo", required_argument, NULL, 'a' },
		{ "length", required_argument, NULL, 'l' },
		{ "binary", no_argument, NULL, 'b' },
		{ "check", no_argument, NULL, 'c' },
		{ "ignore-missing", no_argument, NULL, OPT_IGNORE_MISSING },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "status", no_argument, NULL, OPT_STATUS },
		{ "text", no_argument, NULL, 't' },
		{ "warn", no_argument, NULL, 'w' },
		{ "strict", no_argument, NULL, OPT_STRICT },
		{ "tag", no_argument, NULL, OPT_TAG },
		{ "zero", no_argument, NULL, 'z' },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "no-remote", no_argument, NULL, OPT_NO_REMOTE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int c, check = 0, ok = 1;
	unsigned long bits = 0;
	static char dash[] = "-";
	static char *stdin_only[] = { dash };

	if (argv[0] && *argv[0]) {
		const char *s = strrchr(argv[0], '/');

		prog = s ? s + 1 : argv[0];
	}
	/* the name it runs as: md5sum, sha1sum, ..., b2sum (arf- prefix allowed) */
	algo = &algos[3];
	for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		char nm[32];

		snprintf(nm, sizeof(nm), "%ssum", strcmp(algos[i].name, "blake2b") ? algos[i].name : "b2");
		size_t pl = strlen(prog), nl = strlen(nm);

		if (pl >= nl && !strcmp(prog + pl - nl, nm) && (pl == nl || prog[pl - nl - 1] == '-'))
			algo = &algos[i];
	}
	while ((c = getopt_long(argc, argv, "a:bctwzl:", longs, NULL)) != -1) {
		switch (c) {
		case 'a':
			algo = algo_named(optarg);
			if (!algo) {
				fprintf(stderr, "%s: invalid argument ", prog);
				arf_tool_quote(stderr, optarg, ARF_TOOL_QUOTE_ALWAYS);
				fprintf(stderr, " for '--algo'\n");
				usage(1);
			}
			break;
		case 'l': {
			char *end;

			errno = 0;
			bits = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || bits > 512) {
				fprintf(stderr, "%s: invalid length: ", prog);
				arf_tool_quote(stderr, optarg, ARF_TOOL_QUOTE_ALWAYS);
				fprintf(stderr, "\n%s: maximum digest length for 'BLAKE2b' is 512 bits\n",
					prog);
				exit(1);
			}
			if (bits % 8) {
				fprintf(stderr, "%s: invalid length: ", prog);
				arf_tool_quote(stderr, optarg, ARF_TOOL_QUOTE_ALWAYS);
				fprintf(stderr, "\n%s: length is not a multiple of 8\n", prog);
				exit(1);
			}
			break;
		}
		case 'b': binary_mode = 1; break;
		case 't': binary_mode = 0; break;
		case 'c': check = 1; break;
		case 'w': warn = 1; quiet = 0; status_only = 0; break;
		case 'z': zero = 1; break;
		case OPT_TAG: tag = 1; binary_mode = 1; break;
		case OPT_IGNORE_MISSING: ignore_missing = 1; break;
		case OPT_QUIET: quiet = 1; status_only = 0; warn = 0; break;
		case OPT_STATUS: status_only = 1; quiet = 0; warn = 0; break;
		case OPT_STRICT: strict = 1; break;
		case OPT_STATS: so.stats = 1; break;
		case OPT_NO_REMOTE: so.local_only = 1; break;
		case OPT_HELP: usage(0); break;
		case OPT_VERSION:
			printf("%s (ARF) %s\n", prog, ARF_VERSION);
			return 0;
		default:
			usage(1);
		}
	}
	so.alg = algo->prog_alg;
	so.bytes = algo->bytes;
	if (bits && !is_b2()) {
		fprintf(stderr, "%s: invalid option -- 'l'\n", prog);
		usage(1);
	}
	dbytes = bits ? (unsigned)(bits / 8) : algo->bytes;
	if (tag && binary_mode == 0) {
		fprintf(stderr, "%s: --tag does not support --text mode\n", prog);
		usage(1);
	}
	if (zero && check) {
		fprintf(stderr, "%s: the --zero option is not supported when verifying checksums\n",
			prog);
		usage(1);
	}
	if (tag && check) {
		fprintf(stderr, "%s: the --tag option is meaningless when verifying checksums\n", prog);
		usage(1);
	}
	if (binary_mode >= 0 && check && !tag) {
		fprintf(stderr, "%s: the --binary and --text options are meaningless when verifying "
			"checksums\n", prog);
		usage(1);
	}
	static const struct { int *flag; const char *name; } only_check[] = {
		{ &ignore_missing, "--ignore-missing" }, { &status_only, "--status" },
		{ &warn, "--warn" }, { &quiet, "--quiet" }, { &strict, "--strict" },
	};
	for (size_t i = 0; i < sizeof(only_check) / sizeof(only_check[0]); i++)
		if (*only_check[i].flag && !check) {
			fprintf(stderr, "%s: the %s option is meaningful only when verifying checksums\n",
				prog, only_check[i].name);
			usage(1);
		}
	char **names = optind < argc ? argv + optind : stdin_only;
	size_t n = optind < argc ? (size_t)(argc - optind) : 1;

	if (check) {
		for (size_t i = 0; i < n; i++)
			ok &= check_file(names[i]);
	} else {
		ok = compute(names, n);
	}
	sum_finish(&so, prog);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error\n", prog);
		return 1;
	}
	return ok ? 0 : 1;
}
