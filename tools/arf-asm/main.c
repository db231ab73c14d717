/* SPDX-License-Identifier: MIT */
/*
 * arf-asm: the command-line face of mobilecode/.  `asm` turns text into raw
 * bytecode, `disasm` turns raw bytecode or a clang-compiled ELF object back
 * into text, and `test` runs conformance cases (the eBPF suite's `.data`
 * files) through the very engine arfd runs, printing PASS or FAIL per case.
 * Exit status: 0 all well, 1 a case failed or the input was rejected,
 * 2 usage or I/O error.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arf_mc.h"
#include "case.h"

#ifndef ARF_VERSION
#define ARF_VERSION "unknown"
#endif

static const char usage[] =
	"usage: arf-asm asm FILE.s [-o OUT.bin]     assemble text to raw bytecode\n"
	"       arf-asm disasm FILE.bin|FILE.o       disassemble bytecode or an ELF object\n"
	"       arf-asm test [--negative] [--jit] [-v] CASE.data|DIR...\n"
	"                                            run conformance cases (a DIR: its *.data)\n"
	"       arf-asm --help | --version\n"
	"\n"
	"FILE may be - for standard input.  test prints `PASS name` or `FAIL name: reason`\n"
	"per case and exits 1 if any fails; with --negative a case passes when it is\n"
	"rejected (assembler or verifier) or does not return its -- result.  Cases run in\n"
	"the interpreter, or with --jit as native code from the JIT (a case it cannot\n"
	"compile fails).\n";

static char *slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f) {
		fprintf(stderr, "arf-asm: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	do {
		if (n + 65536 + 1 > cap) {
			char *p = realloc(buf, cap = cap ? cap * 2 : 131072);

			if (!p) {
				fprintf(stderr, "arf-asm: out of memory\n");
				free(buf);
				buf = NULL;
				goto out;
			}
			buf = p;
		}
		k = fread(buf + n, 1, 65536, f);
		n += k;
	} while (k == 65536);
	if (ferror(f)) {
		fprintf(stderr, "arf-asm: %s: read error\n", path);
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
	*len = n;
out:
	if (f != stdin)
		fclose(f);
	return buf;
}

static int cmd_asm(int argc, char **argv)
{
	const char *in = NULL, *outp = NULL;
	struct arf_mc_insn *code = NULL;
	char err[256], *text;
	size_t n = 0, len;
	FILE *out;
	int rc;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			outp = argv[++i];
		else if (!in && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
			in = argv[i];
		else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!in) {
		fputs(usage, stderr);
		return 2;
	}
	if (!outp && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "arf-asm: not writing bytecode to a terminal; use -o OUT.bin\n");
		return 2;
	}
	text = slurp(in, &len);
	if (!text)
		return 2;
	if (strlen(text) != len) {
		fprintf(stderr, "arf-asm: %s: not a text file\n", in);
		free(text);
		return 1;
	}
	rc = arf_mc_asm(text, &code, &n, err, sizeof(err));
	free(text);
	if (rc) {
		if (!strncmp(err, "line ", 5))
			fprintf(stderr, "arf-asm: %s:%s\n", in, err + 5);
		else
			fprintf(stderr, "arf-asm: %s: %s\n", in, err);
		return 1;
	}
	out = outp ? fopen(outp, "wb") : stdout;
	if (!out) {
		fprintf(stderr, "arf-asm: %s: %s\n", outp, strerror(errno));
		free(code);
		return 2;
	}
	rc = fwrite(code, sizeof(*code), n, out) == n ? 0 : 2;
	if ((out != stdout ? fclose(out) : fflush(out)) != 0)
		rc = 2;
	if (rc)
		fprintf(stderr, "arf-asm: %s: write error\n", outp ? outp : "stdout");
	free(code);
	return rc;
}

static int cmd_disasm(int argc, char **argv)
{
	struct arf_mc_image img = { 0 };
	char err[256], *text = NULL, *bytes;
	size_t len;
	int rc = 1;

	if (argc != 1) {
		fputs(usage, stderr);
		return 2;
	}
	bytes = slurp(argv[0], &len);
	if (!bytes)
		return 2;
	if (len >= 4 && !memcmp(bytes, "\x7f" "ELF", 4)) {
		if (arf_mc_elf_read(bytes, len, NULL, &img, err, sizeof(err))) {
			fprintf(stderr, "arf-asm: %s: %s\n", argv[0], err);
			goto out;
		}
	} else {
		if (len % sizeof(struct arf_mc_insn)) {
			fprintf(stderr, "arf-asm: %s: %zu bytes is not a whole number of instructions\n",
				argv[0], len);
			goto out;
		}
		img.n = len / sizeof(struct arf_mc_insn);
		img.insns = malloc(len ? len : 1);
		if (!img.insns) {
			fprintf(stderr, "arf-asm: out of memory\n");
			goto out;
		}
		memcpy(img.insns, bytes, len);
	}
	if (arf_mc_disasm(img.insns, img.n, &text, err, sizeof(err))) {
		fprintf(stderr, "arf-asm: %s: %s\n", argv[0], err);
		goto out;
	}
	if (img.entry)
		printf("# entry: instruction %zu\n", img.entry);
	fputs(text, stdout);
	if (img.rodata_len) {
		printf("# read-only data, %zu bytes at 0x%" PRIx64 ":\n", img.rodata_len,
		       (uint64_t)ARF_MC_ADDR(ARF_MC_REGION_RODATA, 0));
		for (size_t i = 0; i < img.rodata_len; i += 16) {
			printf("#   %04zx ", i);
			for (size_t k = i; k < i + 16 && k < img.rodata_len; k++)
				printf(" %02x", img.rodata[k]);
			putchar('\n');
		}
	}
	rc = fflush(stdout) ? 2 : 0;
out:
	free(text);
	arf_mc_image_release(&img);
	free(bytes);
	return rc;
}

static int has_suffix(const char *s, const char *sfx)
{
	size_t a = strlen(s), b = strlen(sfx);

	return a >= b && !strcmp(s + a - b, sfx);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends path, or the *.data files of directory path (sorted), to *list. */
static int collect(const char *path, char ***list, size_t *n)
{
	struct stat st;
	char **more = NULL;
	size_t nmore = 0;
	DIR *d;
	struct dirent *e;

	if (stat(path, &st)) {
		fprintf(stderr, "arf-asm: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		char **p = realloc(*list, (*n + 1) * sizeof(char *));

		if (!p || !(p[*n] = strdup(path))) {
			if (p)
				*list = p;
			return -1;
		}
		*list = p;
		(*n)++;
		return 0;
	}
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "arf-asm: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		char **p;

		if (!has_suffix(e->d_name, ".data"))
			continue;
		p = realloc(more, (nmore + 1) * sizeof(char *));
		if (!p)
			break;
		more = p;
		if (asprintf(&more[nmore], "%s/%s", path, e->d_name) < 0)
			break;
		nmore++;
	}
	closedir(d);
	if (nmore == 0)
		fprintf(stderr, "arf-asm: %s: no .data cases in this directory\n", path);
	qsort(more, nmore, sizeof(char *), by_name);
	for (size_t i = 0; i < nmore; i++) {
		char **p = realloc(*list, (*n + 1) * sizeof(char *));

		if (!p) {
			for (; i < nmore; i++)
				free(more[i]);
			free(more);
			return -1;
		}
		*list = p;
		(*list)[(*n)++] = more[i];
	}
	free(more);
	return nmore ? 0 : -1;
}

static int cmd_test(int argc, char **argv)
{
	struct arf_mc_helpers *h = NULL;
	char **paths = NULL;
	size_t npaths = 0, npass = 0, nfail = 0;
	int negative = 0, jit = 0, verbose = 0, bad = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--negative"))
			negative = 1;
		else if (!strcmp(argv[i], "--jit"))
			jit = 1;
		else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			verbose = 1;
		else if (argv[i][0] == '-') {
			fputs(usage, stderr);
			return 2;
		} else if (collect(argv[i], &paths, &npaths))
			bad = 1;
	}
	if (npaths == 0 && !bad) {
		fputs(usage, stderr);
		return 2;
	}
	if (arf_mc_helpers_create(&h) || arf_mc_helpers_add_std(h)) {
		fprintf(stderr, "arf-asm: out of memory\n");
		bad = 1;
		goto out;
	}
	for (size_t i = 0; i < npaths; i++) {
		struct asm_case c;
		char err[256], why[512];
		int pass;

		if (asm_case_parse(paths[i], &c, err, sizeof(err))) {
			printf("FAIL %s: cannot read the case: %s\n", paths[i], err);
			nfail++;
			continue;
		}
		pass = asm_case_run(&c, negative, jit, h, why, sizeof(why));
		if (pass && verbose)
			printf("PASS %s: %s\n", c.name, why);
		else if (pass)
			printf("PASS %s\n", c.name);
		else
			printf("FAIL %s: %s\n", c.name, why);
		pass ? npass++ : nfail++;
		asm_case_free(&c);
	}
	printf("# %zu %scases%s: %zu passed, %zu failed\n", npaths, negative ? "negative " : "",
	       jit ? " (JIT)" : "", npass, nfail);
out:
	arf_mc_helpers_destroy(h);
	for (size_t i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
	if (fflush(stdout))
		return 2;
	return bad ? 2 : nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("arf-asm (ARF) %s\n", ARF_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "asm"))
		return cmd_asm(argc - 2, argv + 2);
	if (!strcmp(argv[1], "disasm"))
		return cmd_disasm(argc - 2, argv + 2);
	if (!strcmp(argv[1], "test"))
		return cmd_test(argc - 2, argv + 2);
	fprintf(stderr, "arf-asm: unknown command '%s'\n%s", argv[1], usage);
	return 2;
}
