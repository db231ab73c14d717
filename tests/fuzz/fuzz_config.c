/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arfd's configuration parser (arfd/config.c on libinih)
 * over arbitrary files.  The input is written to a memfd and loaded by its
 * /proc path, as arfd loads /etc/arf/arfd.conf.  A file it accepts must
 * give a configuration whose dump (arfd --dump-config) loads back to the
 * same configuration; a file it refuses must say where.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

static int in_fd = -1, dump_fd = -1;
static char in_path[64], dump_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	in_fd = memfd_create("fuzz-arfd.conf", MFD_CLOEXEC);
	dump_fd = memfd_create("fuzz-dump.conf", MFD_CLOEXEC);
	if (in_fd < 0 || dump_fd < 0)
		abort();
	snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	snprintf(dump_path, sizeof(dump_path), "/proc/self/fd/%d", dump_fd);
	return 0;
}

static void put(int fd, const void *p, size_t n)
{
	if (ftruncate(fd, 0) || (n && pwrite(fd, p, n, 0) != (ssize_t)n))
		abort();
}

static char *dump(const struct arfd_config *cfg, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		abort();
	arfd_config_dump(cfg, f);
	fclose(f);
	return buf;
}

/*
 * The one thing the dump cannot carry: a value with a ';' in it, which inih
 * reads back as the start of a comment ("key = ;x" or "key = a ;b"; a value
 * can hold one when it came from a continuation line or began with ';').
 */
static int semicolon_value(const char *buf, size_t len)
{
	for (const char *line = buf, *end = buf + len; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		if (n && line[0] != '#' && memchr(line, ';', n))
			return 1;
		line += n + 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arfd_config cfg, again;
	char err[512] = "";

	put(in_fd, data, size);
	arfd_config_defaults(&cfg);
	if (arfd_config_load(&cfg, in_path, err, sizeof(err))) {
		if (!strstr(err, in_path))
			abort(); /* a refusal names the file (and the line) */
		return 0;
	}

	/* dump and load again: the same configuration (compared by its dump,
	 * which covers every key and ignores bytes past a string's end) */
	size_t len = 0, len2 = 0;
	char *buf = dump(&cfg, &len), *buf2;
	put(dump_fd, buf, len);
	arfd_config_defaults(&again);
	if (arfd_config_load(&again, dump_path, err, sizeof(err)))
		abort(); /* the dump of an accepted file does not load */
	buf2 = dump(&again, &len2);
	if ((len != len2 || memcmp(buf, buf2, len)) && !semicolon_value(buf, len))
		abort(); /* ... or loads as another configuration */
	free(buf);
	free(buf2);
	return 0;
}
